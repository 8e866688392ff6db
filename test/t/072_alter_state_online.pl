# state.alter_state while clients write: nothing written during a change is
# lost or applied twice, and no client fails because of it.
#
# Four pgbench clients, each transaction: a reduce (sum) of a random amount
# into a reducing state (key: the client), a list_add of a unique number (a
# sequence's) into a list state, and a row in table "acked" of both, all
# committed together; a fifth client reads both states all along.
# Meanwhile both states move memory -> lmdb -> rocksdb -> memory, become
# logged, then transactional, then take another value type (numeric).
# Afterwards:
# - no client had an error (pgbench exits 0 with every client done);
# - the writers went on between every two changes (rows of "acked" grew);
# - each client's sum is the sum of its acknowledged amounts;
# - the lists hold every acknowledged number exactly once, and nothing else;
# - the states show the last backend, logged, transactional, numeric, and a
#   version of 1 + the number of changes.
# Last, a change waits for a transaction that wrote to the (now
# transactional) state: with lock_timeout it fails (55P03) and changes
# nothing; once that transaction commits, the change goes through and keeps
# its write.  So for a state that is not transactional.  Two changes of one
# state at once go one after the other.  Snapshots cut
# while the changes ran completed, hold each state once and read back.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $dir = PostgreSQL::Test::Utils::tempdir();
my $node = new_state_node(
	'alter_online',
	lmdb => 1,
	init => { allows_streaming => 1 },
	conf => "state_backend.checkpoint_dir = '$dir/checkpoints'\n");
ok(defined wait_for_worker($node), 'state worker running');

$node->safe_psql('postgres', q{
SELECT state.create_state('on_r', 'reducing', 'int', 'bigint', reducer => 'sum', backend => 'memory');
SELECT state.create_state('on_l', 'list', 'int', 'bigint', backend => 'memory');
CREATE SEQUENCE elem_seq;
CREATE TABLE acked (client int NOT NULL, e bigint NOT NULL, v bigint NOT NULL);
});

my $writer = q{
\set v random(1, 1000)
BEGIN;
SELECT nextval('elem_seq') AS e \gset
SELECT state.reduce('on_r', :client_id, :v::bigint);
SELECT state.list_add('on_l', (:e % 8)::int, :e::bigint);
INSERT INTO acked (client, e, v) VALUES (:client_id, :e, :v);
COMMIT;
};
my $reader = q{
\set k random(0, 7)
SELECT state.value_get('on_r', :k % 4, NULL::text), state.list_length('on_l', :k);
};

my $DURATION = 45;
my $w = start_pgbench($node, "-n -c 4 -j 2 -T $DURATION", { 'writer.sql' => $writer },
	timeout => $DURATION + 120);
my $r = start_pgbench($node, "-n -c 1 -T $DURATION", { 'reader.sql' => $reader },
	timeout => $DURATION + 120);

sub acked_rows { return $node->safe_psql('postgres', 'SELECT count(*) FROM acked'); }

# Writers under way.
my $deadline = time() + 30;
usleep(100_000) while acked_rows() < 100 && time() < $deadline;
cmp_ok(acked_rows(), '>=', 100, 'the writers are writing');

my @STEPS = (
	[ 'to lmdb', q{backend => 'lmdb'} ],
	[ 'to rocksdb', q{backend => 'rocksdb'} ],
	[ 'back to memory', q{backend => 'memory'} ],
	[ 'logged', q{logged => true} ],
	[ 'transactional', q{transactional => true} ],
	[ 'numeric values', q{value_type => 'numeric'} ],
);
my $started = time();
my @snaps;
for my $step (@STEPS)
{
	my ($what, $args) = @$step;
	for my $s (qw(on_r on_l))
	{
		# A snapshot cut while the change runs (its id comes at once).
		my $snap = "$dir/snap_" . scalar(@snaps);
		my ($sret, $sid) = $node->psql('postgres', "SELECT state.snapshot('$snap')");
		push @snaps, [ $snap, "$s $what", $sid ] if $sret == 0 && $sid =~ /^\d+$/;
		my $before = acked_rows();
		my $t0 = time();
		my ($ret, $out, $err) = $node->psql('postgres', "SELECT state.alter_state('$s', $args)",
			timeout => 120);
		is($ret, 0, "$s $what: the change went through while clients wrote")
		  or diag($err);
		note(sprintf('%s %s: %s entries in %.2f s', $s, $what, $out, time() - $t0));
		# The writers go on between two changes.
		my $d = time() + 20;
		usleep(50_000) while acked_rows() < $before + 50 && time() < $d;
		cmp_ok(acked_rows(), '>=', $before + 50, "$s $what: the writers went on after it");
	}
}
ok(time() - $started < $DURATION - 2, 'every change was made while the clients ran')
  or diag('the changes took ' . (time() - $started) . " s, the clients ran $DURATION s");

my $wr = finish_pgbench($w);
my $rr = finish_pgbench($r);
is($wr->{ret}, 0, 'no writer failed') or diag($wr->{stderr});
unlike($wr->{stderr}, qr/ERROR|aborted/, 'no error in the writers\' output') or diag($wr->{stderr});
is($rr->{ret}, 0, 'the reader did not fail') or diag($rr->{stderr});
unlike($rr->{stderr}, qr/ERROR|aborted/, 'no error in the reader\'s output') or diag($rr->{stderr});
note("writers: $wr->{processed} transactions, reader: $rr->{processed}");
is(acked_rows(), $wr->{processed}, 'every transaction of the writers left its row');

# Each client's sum: the sum of what it was acknowledged.
is( $node->safe_psql('postgres', q{
SELECT count(*) FROM (
  SELECT client, sum(v) AS acked_sum, state.value_get('on_r', client, NULL::numeric) AS state_sum
    FROM acked GROUP BY client) x
 WHERE acked_sum IS DISTINCT FROM state_sum}),
	'0', 'each client\'s sum is the sum it was acknowledged')
  or diag($node->safe_psql('postgres', q{
SELECT client, sum(v), state.value_get('on_r', client, NULL::numeric) FROM acked GROUP BY client ORDER BY client}));
is($node->safe_psql('postgres', q{SELECT count(*) FROM state.keys('on_r', NULL::int)}),
	$node->safe_psql('postgres', q{SELECT count(DISTINCT client) FROM acked}),
	'the reducing state has a key per client, no other');

# The lists: every acknowledged number once, nothing else.
$node->safe_psql('postgres', q{
CREATE TABLE in_lists AS
SELECT k, e::bigint AS e FROM state.keys('on_l', NULL::int) k,
       unnest(state.list_get('on_l', k, NULL::numeric[])) e});
is($node->safe_psql('postgres', q{SELECT count(*) FROM (SELECT e FROM in_lists GROUP BY e HAVING count(*) > 1) d}),
	'0', 'no number is twice in the lists');
is($node->safe_psql('postgres', q{SELECT count(*) FROM acked a WHERE NOT EXISTS (SELECT FROM in_lists l WHERE l.e = a.e)}),
	'0', 'every acknowledged number is in the lists');
is($node->safe_psql('postgres', q{SELECT count(*) FROM in_lists l WHERE NOT EXISTS (SELECT FROM acked a WHERE a.e = l.e)}),
	'0', 'the lists hold no number that was not acknowledged');
is($node->safe_psql('postgres', q{SELECT count(*) FROM in_lists WHERE k <> e % 8}),
	'0', 'every number is under its own key');

is( $node->safe_psql('postgres', q{
SELECT string_agg(format('%s %s %s logged=%s transactional=%s version=%s', name, backend, value_type, logged,
                         transactional, version), E'\n' ORDER BY name)
  FROM state.states}),
	"on_l memory numeric logged=t transactional=t version=7\n"
	  . "on_r memory numeric logged=t transactional=t version=7",
	'the states as the changes left them, each change counted once');

############################################################ waits for writers

# An open transaction that wrote to the state holds a change back; with
# lock_timeout the change fails (55P03) and changes nothing.
my $open = $node->background_psql('postgres', on_error_stop => 0);
$open->query_safe(q{BEGIN; SELECT state.reduce('on_r', 99, 5::bigint);});
my $t0 = time();
my $e;
$e = sql_error($node, q{SET lock_timeout = '500ms'; SELECT state.alter_state('on_r', value_type => 'bigint')},
	timeout => 60);
is($e->{sqlstate}, '55P03', 'a change waits for a transaction that wrote to the state; lock_timeout ends the wait')
  or diag($e->{stderr});
cmp_ok(time() - $t0, '<', 30, 'and it ended within the lock timeout, not later');
is($node->safe_psql('postgres', q{SELECT value_type || ' ' || version FROM state.states WHERE name = 'on_r'}),
	'numeric 7', 'the state is unchanged');
# Without a timeout it waits until that transaction commits, then goes
# through, with the transaction's write in it.
my $h = IPC::Run::start([ 'psql', '-XAtq', '-d', $node->connstr('postgres'), '-c',
		q{SELECT state.alter_state('on_r', value_type => 'bigint')} ],
	'>', \my $aout, '2>', \my $aerr, IPC::Run::timeout(120));
ok( $node->poll_query_until('postgres', q{
SELECT count(*) > 0 FROM pg_stat_activity WHERE query LIKE '%alter_state(''on_r''%' AND pid <> pg_backend_pid()
   AND state = 'active'}),
	'the change is running');
usleep(500_000);
is($node->safe_psql('postgres', q{SELECT value_type FROM state.states WHERE name = 'on_r'}),
	'numeric', 'it waits while the writing transaction is open');
$open->query_safe('COMMIT');
$h->finish;
is($h->result(0), 0, 'the change went through once the transaction committed') or diag($aerr);
is($node->safe_psql('postgres', q{SELECT value_type || ' ' || version || ' ' || state.value_get('on_r', 99, 0::bigint) FROM state.states WHERE name = 'on_r'}),
	'bigint 8 5', 'with the committed write in it');
$open->quit;

# A writer's open transaction holds a change of a state that is not
# transactional back too.
$node->safe_psql('postgres', q{SELECT state.create_state('on_nt', 'value', 'int', 'int', backend => 'memory')});
$open = $node->background_psql('postgres', on_error_stop => 0);
$open->query_safe(q{BEGIN; SELECT state.value_set('on_nt', 1, 1);});
$e = sql_error($node, q{SET lock_timeout = '500ms'; SELECT state.alter_state('on_nt', value_type => 'bigint')},
	timeout => 60);
is($e->{sqlstate}, '55P03', 'an open transaction that wrote to a state that is not transactional holds a change back too')
  or diag($e->{stderr});
$open->query_safe('COMMIT');
is($node->safe_psql('postgres', q{SELECT state.alter_state('on_nt', value_type => 'bigint')}), '1',
	'and the change goes through once it ended');
$open->quit;

# Two changes of one state at once: they go one after the other (the
# second to start may find the state renamed: 42704), and the state ends
# as the ones that succeeded left it, each counted once.
my $sum_before = $node->safe_psql('postgres', q{SELECT sum(state.value_get('on_r', k, 0::numeric)) FROM state.keys('on_r', NULL::int) k});
my $version_before = $node->safe_psql('postgres', q{SELECT version FROM state.states WHERE name = 'on_r'});
my %out;
my @runs = map {
	my ($tag, $sql) = @$_;
	$out{$tag} = { out => '', err => '' };
	[ $tag, IPC::Run::start([ 'psql', '-XAtq', '-v', 'VERBOSITY=verbose', '-d', $node->connstr('postgres'), '-c', $sql ],
		'>', \$out{$tag}{out}, '2>', \$out{$tag}{err}, IPC::Run::timeout(120)) ]
} ([ 'double', q{SELECT state.alter_state('on_r', value_type => 'numeric', value_using => 'value * 2')} ],
	[ 'rename', q{SELECT state.alter_state('on_r', rename_to => 'on_r2')} ]);
$_->[1]->finish for @runs;
my %ok = map { ($_->[0] => $_->[1]->result(0) == 0) } @runs;
for my $tag (sort keys %ok)
{
	ok($ok{$tag} || $out{$tag}{err} =~ /ERROR:\s+42704/, "concurrent changes: $tag succeeded or found the state renamed (42704)")
	  or diag($out{$tag}{err});
}
ok($ok{rename}, 'concurrent changes: the rename succeeded (nothing renames it away first)');
my $now_name = $ok{rename} ? 'on_r2' : 'on_r';
is($node->safe_psql('postgres', q{SELECT string_agg(name, ' ') FROM state.states WHERE name IN ('on_r', 'on_r2')}),
	$now_name, 'concurrent changes: the state is there once, under its last name');
is($node->safe_psql('postgres', "SELECT version FROM state.states WHERE name = '$now_name'"),
	$version_before + grep({ $_ } values %ok), 'concurrent changes: each change that succeeded counted once');
is( $node->safe_psql('postgres', "SELECT sum(state.value_get('$now_name', k, 0::numeric)) FROM state.keys('$now_name', NULL::int) k"),
	$ok{double} ? $sum_before * 2 : $sum_before,
	'concurrent changes: the entries as the changes that succeeded left them');

# The snapshots cut during the changes: each completed, holds each state
# once, with the types of one side of the change, and reads back.
cmp_ok(scalar(@snaps), '>=', 4, scalar(@snaps) . ' snapshots were cut while changes ran');
for my $sn (@snaps)
{
	my ($path, $during, $id) = @$sn;
	my $status = $node->safe_psql('postgres', "SELECT state.wait_snapshot($id, '60 s')");
	is($status, 'completed', "snapshot during the change ($during): completed");
	is( $node->safe_psql('postgres', "SELECT string_agg(name, ' ' ORDER BY name) FROM state.snapshot_states('$path') WHERE name LIKE 'on\\_%'"),
		'on_l on_r', "snapshot during the change ($during): each state once");
	my ($ret, $out, $err) = $node->psql('postgres', qq{
SELECT count(*) > 0 FROM state.snapshot_entries('$path', 'on_r', NULL::int, NULL::text)
UNION ALL
SELECT count(*) > 0 FROM state.snapshot_entries('$path', 'on_l', NULL::int, NULL::text)});
	is("$ret $out", "0 t\nt", "snapshot during the change ($during): its entries read back") or diag($err);
}

is(join("\n", log_crashes($node)), '', 'no process crashed');
$node->stop;
done_testing();
