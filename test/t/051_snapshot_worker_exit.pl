# A state worker that exits while it writes a snapshot (FATAL: the
# postmaster starts it again on the same shared memory) leaves no snapshot
# "running" for ever: the worker started after it fails that snapshot with
# an error that says why and removes what it had written, or completes it
# when its files were already complete and durable; the next snapshot, the
# next checkpoint and the final checkpoint at shutdown run.  A session that
# asked for a snapshot and was terminated while it waited leaves the
# snapshot to the worker, which finishes it.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $tmp = PostgreSQL::Test::Utils::tempdir;
my $chk = "$tmp/checkpoints";
my $node = new_state_node('worker_exit',
	init => { allows_streaming => 1 },
	conf => "state_backend.checkpoint_dir = '$chk'\n"
	  . "state_backend.checkpoints_retained = 2\n");
ok(defined wait_for_worker($node), 'state worker running');

$node->safe_psql('postgres', q{
SELECT state.create_state('h', 'value', 'int', 'bigint');
SELECT state.create_state('r', 'list', 'int', 'int', backend => 'rocksdb', logged => true);
SELECT count(state.value_set('h', i, i::bigint)) FROM generate_series(1, 1000) i;
SELECT count(state.list_add('r', i % 7, i)) FROM generate_series(1, 1000) i;
});

# Arm a fault point (or none) in every process.
sub arm
{
	my ($spec) = @_;
	$node->safe_psql('postgres',
		"ALTER SYSTEM SET state_backend.fault_points = '$spec'");
	reload_worker($node) or die "the worker did not apply '$spec'";
}

# The snapshot asked for with $sql, while the worker exits at $point: its
# id, and the worker started after it.
sub snapshot_while_exiting
{
	my ($point, $sql) = @_;
	my $old = worker_pid($node);
	arm("$point:exit:1");
	my $id = $node->safe_psql('postgres', $sql);
	my $new = wait_for_worker($node, not => $old, timeout => 60);
	arm('');
	ok(defined $new, "$point: the worker exited and was started again");
	return $id;
}

# 1. A snapshot to a path: the worker exits while writing its key groups.
my $id = snapshot_while_exiting('checkpoint.key_groups', "SELECT state.snapshot('$tmp/s1')");
my $r = sql_error($node, "SELECT state.wait_snapshot($id, '60 s')");
is($r->{sqlstate}, '57000', 'waiting for it raises its failure') or diag($r->{stderr});
like($r->{message}, qr/snapshot $id failed: the state worker exited while it wrote the snapshot/,
	'the failure says the worker exited');
is($node->safe_psql('postgres', "SELECT status FROM state.snapshots WHERE id = $id"),
	'failed', 'state.snapshots shows it failed');
ok(!-e "$tmp/s1", 'its partial directory is removed');
is($node->safe_psql('postgres', "SELECT state.wait_snapshot(state.snapshot('$tmp/s2'), '60 s')"),
	'completed', 'the next snapshot runs and completes');
ok(-f "$tmp/s2/MANIFEST", 'the next snapshot is on disk');

# 2. A checkpoint: the same, and the partial chk- directory goes.
$id = snapshot_while_exiting('checkpoint.key_groups', 'SELECT state.snapshot()');
$r = sql_error($node, "SELECT state.wait_snapshot($id, '60 s')");
is($r->{sqlstate}, '57000', 'a checkpoint the worker was writing fails');
ok(!-e "$chk/chk-$id", 'its partial checkpoint directory is removed');

# 3. The worker exits after the snapshot's files are complete: completed.
$id = snapshot_while_exiting('checkpoint.after_manifest', 'SELECT state.snapshot()');
is($node->safe_psql('postgres', "SELECT state.wait_snapshot($id, '60 s')"),
	'completed', 'a snapshot whose files were durable when the worker exited is completed');
ok(-f "$chk/chk-$id/MANIFEST", 'and it stays on disk');

# 4. The worker exits before its files are written, at the end of the
# native files: failed, removed.
$id = snapshot_while_exiting('checkpoint.before_manifest', 'SELECT state.snapshot()');
$r = sql_error($node, "SELECT state.wait_snapshot($id, '60 s')");
is($r->{sqlstate}, '57000', 'a snapshot whose MANIFEST was not written fails');
ok(!-e "$chk/chk-$id", 'and its directory is removed');

# 5. A session that asked for a snapshot is terminated while it waits: the
# worker finishes the snapshot, and the next one runs.
arm('checkpoint.key_groups:sleep:1500');
my $bg = $node->background_psql('postgres', on_error_stop => 0);
$bg->query_until(qr/started/, q{
\echo started
SELECT state.wait_snapshot(state.snapshot('} . $tmp . q{/s3'), '60 s');
});
my $waiter;
for (1 .. 100)
{
	$waiter = $node->safe_psql('postgres',
		q{SELECT pid FROM pg_stat_activity WHERE query LIKE '%wait_snapshot(state.snapshot(%' AND pid <> pg_backend_pid()});
	last if $waiter ne '';
	usleep(50_000);
}
ok($waiter ne '', 'a session waits for its snapshot');
my $sid = $node->safe_psql('postgres', "SELECT max(id) FROM state.snapshots");
$node->safe_psql('postgres', "SELECT pg_terminate_backend($waiter)");
eval { $bg->quit; };
arm('');
is($node->safe_psql('postgres', "SELECT state.wait_snapshot($sid, '60 s')"),
	'completed', 'the snapshot of a terminated session completes');
is($node->safe_psql('postgres', 'SELECT state.wait_snapshot(state.snapshot(), \'60 s\')'),
	'completed', 'and the next one runs');

# 6. A session that asks the worker for something while none runs (the
# one that exited is gone, the next not yet started) is answered by the
# next one, not told that the worker restarted while serving it.  The
# look at pg_stat_activity and the call are in one statement, microseconds
# apart, well inside the second the postmaster waits before it starts the
# next worker.
arm('checkpoint.key_groups:exit:1');
my $before = worker_pid($node);
# PL/pgSQL: until pg_stat_activity shows no state worker (gone: whether it
# did), for up to 30 s.
my $until_no_worker = q{
  FOR i IN 1 .. 3000 LOOP
    PERFORM pg_stat_clear_snapshot();
    gone := NOT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'state_backend worker');
    EXIT WHEN gone;
    PERFORM pg_sleep(0.01);
  END LOOP;};
my ($ret, $out, $err) = $node->psql('postgres', qq{
SELECT state.snapshot() > 0;
DO \$\$
DECLARE
  gone boolean := false;
BEGIN $until_no_worker
  RAISE NOTICE 'no worker: %, answer: %', gone, cardinality(state.list_get('r', 3, '{}'::int[]));
END \$\$;
}, timeout => 120);
is($ret, 0, 'a request sent while no worker runs does not fail') or diag($err);
like($err, qr/NOTICE:  no worker: t, answer: 143$/m,
	'it was sent while none ran, and the next worker answered it');
ok(defined wait_for_worker($node, not => $before, timeout => 60), 'the next worker runs');

# The same with a request_timeout shorter than the wait: the call fails
# saying that nothing was sent.  (The timeout is set after the snapshot is
# asked for, which may take the worker longer: under Valgrind it did.)
$before = worker_pid($node);
my $r6 = sql_error($node, qq{
SELECT state.snapshot() > 0;
SET state_backend.request_timeout = '200ms';
DO \$\$
DECLARE
  gone boolean := false;
BEGIN $until_no_worker
  IF NOT gone THEN
    RAISE EXCEPTION 'the state worker did not exit at the snapshot''s step';
  END IF;
  PERFORM state.list_get('r', 3, '{}'::int[]);
END \$\$;
}, timeout => 120);
is($r6->{sqlstate}, '08006', 'a call no worker took up within request_timeout fails with 08006');
like($r6->{stderr}, qr/no state worker has served within 200 ms.*\n.*the request was not sent/,
	'saying that the request was not sent') or diag($r6->{stderr});
ok(defined wait_for_worker($node, not => $before, timeout => 60), 'the next worker runs');
arm('');

# 7. A worker that exits while a session writes a request larger than the
# ring: the next worker drops what the ring held, and the rest of that
# request, which the session goes on writing, is no request either.  The
# value is zeros, which read as request headers would be thousands of
# requests; the worker sleeps at checkpoint.manifest_write, taking nothing,
# then exits at checkpoint.manifest_rename.
$node->safe_psql('postgres',
	q{SELECT state.create_state('bb', 'value', 'int', 'bytea', backend => 'rocksdb')});
my $requests_q = q{SELECT value FROM state.worker WHERE name = 'requests'};
my $requests_before = $node->safe_psql('postgres', $requests_q);
$before = worker_pid($node);
my $log_offset = -s $node->logfile;
arm('checkpoint.manifest_write:sleep:4000,checkpoint.manifest_rename:exit:1');
$node->safe_psql('postgres', 'SELECT state.snapshot()');
$node->wait_for_log(qr/fault point "checkpoint\.manifest_write" reached: sleep/, $log_offset);
($ret, $out, $err) = $node->psql('postgres',
	q{SELECT state.value_set('bb', 1, decode(repeat('00', 200000), 'hex'))}, timeout => 120);
isnt($ret, 0, 'the request cut by the exit fails');
like($err, qr/the state worker restarted while serving this session/, 'saying the worker restarted')
  or diag($err);
ok(defined wait_for_worker($node, not => $before, timeout => 60), 'the next worker runs');
arm('');
my $requests_after = $node->safe_psql('postgres', $requests_q);
cmp_ok($requests_after - $requests_before, '<', 100,
	'the rest of the cut request was not read as requests');
is($node->safe_psql('postgres', q{SELECT state.value_get('bb', 1, NULL::bytea) IS NULL}),
	't', 'nothing of it was stored');

# 8. A write posted to a worker that exits before taking it is lost with
# its ring: the session's next call fails before it is sent, so that it is
# not carried out by the next worker only to be reported as failed.  The
# three calls are one statement (a statement's end waits for its posted
# writes).
$before = worker_pid($node);
$log_offset = -s $node->logfile;
arm('checkpoint.manifest_write:sleep:4000,checkpoint.manifest_rename:exit:1');
$node->safe_psql('postgres', 'SELECT state.snapshot()');
$node->wait_for_log(qr/fault point "checkpoint\.manifest_write" reached: sleep/, $log_offset);
($ret, $out, $err) = $node->psql('postgres', q{
SELECT state.value_set('bb', 2, '\x02'::bytea), pg_sleep(8), state.value_set('bb', 3, '\x03'::bytea)},
	timeout => 120);
like($err, qr/the state worker restarted while serving this session/,
	'a call after a post the exited worker never took fails') or diag($err);
ok(defined wait_for_worker($node, not => $before, timeout => 60), 'the next worker runs');
arm('');
is( $node->safe_psql('postgres',
		q{SELECT coalesce(state.value_get('bb', 3, NULL::bytea)::text, 'none')}),
	'none', 'and was not carried out');

# 9. The final checkpoint at shutdown runs after a snapshot the worker
# left, and the states come back from it whole.
$id = snapshot_while_exiting('checkpoint.key_groups', 'SELECT state.snapshot()');
my $offset = -s $node->logfile;
$node->stop('fast');
my $log = slurp_file($node->logfile, $offset);
unlike($log, qr/could not write its final checkpoint/, 'the final checkpoint at shutdown is written');
$node->start;
ok(defined wait_for_worker($node), 'the server starts again');
is( $node->safe_psql('postgres', q{
SELECT (SELECT count(*) FROM state.entries('h', NULL::int, NULL::bigint)) || ' ' ||
       (SELECT count(*) FROM generate_series(0, 6) k, unnest(state.list_get('r', k, '{}'::int[])))}),
	'1000 1000', 'every state comes back whole');
unlike(slurp_file($node->logfile, $offset), qr/final checkpoint at the last shutdown failed/,
	'the start finds no failed final checkpoint');

$node->stop;
done_testing();
