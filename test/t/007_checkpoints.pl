# Periodic checkpoints under state_backend.checkpoint_dir.
#
# - checkpoint_interval (turned on by a reload) makes the worker write
#   chk-<id> directories with increasing ids; checkpoints_retained = 2 keeps
#   the two newest complete ones and deletes the older ones.
# - A directory chk-<id> without MANIFEST (an interrupted checkpoint, made
#   here by hand) older than a newly completed checkpoint is deleted; other
#   entries of the directory are left alone.
# - state.restore(<checkpoint root>) restores the newest complete
#   checkpoint, not a newer incomplete directory.
# - After a restart, checkpoint ids continue beyond every chk-<id> on disk.
# - Lowering checkpoints_retained by a reload takes effect.
# - With snapshot_cpu_percent low, a snapshot rests between key groups: it
#   stays running while sessions' rocksdb calls are answered, and a cancel
#   ends it.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep time);
use File::Path qw(make_path);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $TIMEOUT = $PostgreSQL::Test::Utils::timeout_default;
my $chkroot = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';

my $node = new_state_node(
	'checkpoints',
	conf => "state_backend.checkpoint_dir = '$chkroot'\n"
	  . "state_backend.checkpoints_retained = 2\n");
ok(defined wait_for_worker($node), 'state worker running');
my $log_offset = -s $node->logfile;

$node->safe_psql(
	'postgres', q{
SELECT state.create_state('g', 'value', 'text', 'bigint');
SELECT state.value_set('g', 'gen', 0::bigint);
SELECT state.create_state('fill', 'value', 'integer', 'text');
SELECT count(state.value_set('fill', i, repeat('x', 100))) FROM generate_series(1, 20000) i;
});

is_deeply(checkpoint_dirs($chkroot), {}, 'no checkpoint while checkpoint_interval is 0');

# Turn periodic checkpoints on with a reload.
$node->safe_psql('postgres', q{ALTER SYSTEM SET state_backend.checkpoint_interval = 1});
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');

############################################################ periodic checkpoints

# Watch the directory until at least 5 checkpoints have been written and
# retention has removed the oldest.  Record every id seen and when it was
# first seen, complete.
my %first_seen;          # id -> order in which it was first seen complete
my $seen = 0;
my $max_complete = 0;
my $deadline = time() + $TIMEOUT;
while (time() < $deadline)
{
	my $d = checkpoint_dirs($chkroot);
	my @complete = sort { $a <=> $b } grep { $d->{$_} } keys %$d;
	$max_complete = @complete if @complete > $max_complete;
	$first_seen{$_} //= ++$seen for @complete;
	last if keys(%first_seen) >= 5 && !exists $d->{ (sort { $a <=> $b } keys %first_seen)[0] };
	usleep(50_000);
}
my @ids = sort { $a <=> $b } keys %first_seen;
cmp_ok(scalar @ids, '>=', 5, 'the worker wrote checkpoints every second') or diag "ids: @ids";
is_deeply([ sort { $first_seen{$a} <=> $first_seen{$b} } @ids ], \@ids,
	'checkpoint ids increase with time');
ok(!-e "$chkroot/chk-$ids[0]", "the oldest checkpoint chk-$ids[0] was deleted");
# A new checkpoint completes (MANIFEST renamed into place) an instant before
# the oldest is deleted, so a look at the directory can catch 3.
cmp_ok($max_complete, '<=', 3, 'never more than 2 complete checkpoints (3 for an instant)');
like( $node->safe_psql('postgres',
		qq{SELECT string_agg(DISTINCT status || ':' || (path LIKE '$chkroot/chk-%'), ',') FROM state.snapshots WHERE id <= $ids[-1]}),
	qr/^completed:true$/,
	'state.snapshots lists them as completed checkpoints under checkpoint_dir');

############################################################ incomplete directories

# A checkpoint interrupted long ago: older than the current ones, no MANIFEST.
my $small = $ids[0];
make_path("$chkroot/chk-$small/db-1");
append_to_file("$chkroot/chk-$small/db-1/1.kg", 'partial');
make_path("$chkroot/not-a-checkpoint");
append_to_file("$chkroot/chk-junk", 'a file, not a checkpoint');
ok( poll_until(sub { !-e "$chkroot/chk-$small" }),
	"the hand-made incomplete chk-$small is deleted once a newer checkpoint completes");
ok(-d "$chkroot/not-a-checkpoint" && -f "$chkroot/chk-junk",
	'entries that are not chk-<id> directories are left alone');

############################################################ quiesce

# Periodic checkpoints off; wait until the newest checkpoint stays the same
# for 3 seconds with none running.
$node->safe_psql('postgres', q{ALTER SYSTEM SET state_backend.checkpoint_interval = 0});
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
my $newest_sql = q{SELECT coalesce(max(id), 0) || ',' || count(*) FILTER (WHERE status = 'running') FROM state.snapshots};
my ($last, $since) = ('', time());
ok( poll_until(
		sub {
			my $now = $node->safe_psql('postgres', $newest_sql);
			($last, $since) = ($now, time()) if $now ne $last;
			return $now =~ /,0$/ && time() - $since >= 3;
		}),
	'periodic checkpoints stop when checkpoint_interval is set to 0');
my @complete = complete_checkpoints($chkroot);
my @newest2 = split /,/, $node->safe_psql('postgres',
	q{SELECT string_agg(id::text, ',' ORDER BY id) FROM (SELECT id FROM state.snapshots WHERE status = 'completed' ORDER BY id DESC LIMIT 2) s});
is_deeply(\@complete, \@newest2,
	'exactly the 2 newest checkpoints remain (checkpoints_retained = 2)');

############################################################ restore from the root

$node->safe_psql('postgres', q{SELECT state.value_set('g', 'gen', 1::bigint)});
my $c1 = $node->safe_psql('postgres', 'SELECT state.snapshot()');
is(wait_snapshot_status($node, $c1), 'completed', "checkpoint $c1 (gen 1) completed");
$node->safe_psql('postgres', q{SELECT state.value_set('g', 'gen', 2::bigint)});
my $c2 = $node->safe_psql('postgres', 'SELECT state.snapshot()');
is(wait_snapshot_status($node, $c2), 'completed', "checkpoint $c2 (gen 2) completed");
ok(-d "$chkroot/chk-$c2" && -d "$chkroot/chk-$c1", "chk-$c1 and chk-$c2 are there");
is_deeply([ complete_checkpoints($chkroot) ], [ $c1, $c2 ],
	'the two newest complete checkpoints remain');
$node->safe_psql('postgres', q{SELECT state.value_set('g', 'gen', 3::bigint); SELECT state.truncate('fill');});

# A newer directory without MANIFEST must not be taken for the newest.
my $big_id = $c2 + 1000;
make_path("$chkroot/chk-$big_id/db-1");
is( $node->safe_psql('postgres', qq{SELECT state.restore('$chkroot')}),
	'20001', "restore from the checkpoint root loads 20001 entries");
is( $node->safe_psql('postgres',
		q{SELECT state.value_get('g', 'gen', -1::bigint) || ',' || (SELECT entries FROM state.states WHERE name = 'fill')}),
	'2,20000',
	"... from the newest complete checkpoint chk-$c2 (not the incomplete chk-$big_id)");
my $err = sql_error($node, qq{SELECT state.restore('$chkroot/chk-$big_id')});
isnt($err->{ret}, 0, 'restore of a directory without MANIFEST fails')
  or diag $err->{stdout};
is($node->safe_psql('postgres', q{SELECT state.value_get('g', 'gen', -1::bigint)}),
	'2', '... and changes nothing');

############################################################ restart

$log_offset = -s $node->logfile;
$node->restart;
is($node->safe_psql('postgres', q{SELECT state.value_get('g', 'gen', -1::bigint)}),
	'2', 'the state is as it was at the shutdown');
ok( $node->wait_for_log(
		qr/state_backend restored 20001 entries of database "postgres" from "\Q$chkroot\E\/chk-\d+"/,
		$log_offset),
	'at the restart the worker restored the final checkpoint');
my $max_on_disk = (sort { $a <=> $b } keys %{ checkpoint_dirs($chkroot) })[-1];
my $c3 = $node->safe_psql('postgres', 'SELECT state.snapshot()');
cmp_ok($c3, '>', $max_on_disk,
	"after the restart the next checkpoint id ($c3) is beyond every chk-<id> on disk ($max_on_disk)");
is(wait_snapshot_status($node, $c3), 'completed', "checkpoint $c3 completed");
ok(!-e "$chkroot/chk-$big_id", "the incomplete chk-$big_id is deleted once chk-$c3 completes");
is(scalar(my @c = complete_checkpoints($chkroot)), 2, 'two complete checkpoints remain');

############################################################ retained = 1 by reload

$node->safe_psql('postgres', q{ALTER SYSTEM SET state_backend.checkpoints_retained = 1});
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
# The worker applies the reload asynchronously: take checkpoints until one
# finds it applied (bounded).
my $one = 0;
for my $try (1 .. 20)
{
	my $id = $node->safe_psql('postgres', 'SELECT state.snapshot()');
	last unless wait_snapshot_status($node, $id) eq 'completed';
	if (join(',', complete_checkpoints($chkroot)) eq "$id")
	{
		$one = 1;
		last;
	}
	usleep(200_000);
}
ok($one, 'after checkpoints_retained is lowered to 1 by a reload, one checkpoint remains');

############################################################ paced snapshots

$node->safe_psql(
	'postgres', q{
SELECT state.create_state('paced', 'value', 'integer', 'text');
SELECT count(state.value_set('paced', i, repeat('y', 200))) FROM generate_series(1, 200000) i;
SELECT state.create_state('rq', 'value', 'integer', 'text', backend => 'rocksdb');
SELECT state.value_set('rq', 1, 'answered');
ALTER SYSTEM SET state_backend.snapshot_cpu_percent = 1;
SELECT pg_reload_conf();
});
# The worker applies the reload asynchronously: take snapshots until one
# runs paced, still running a while after it started (bounded).
my ($paced, $running);
for my $try (1 .. 20)
{
	$paced = $node->safe_psql('postgres', 'SELECT state.snapshot()');
	usleep(300_000);
	$running = $node->safe_psql('postgres', qq{SELECT status FROM state.snapshots WHERE id = $paced});
	last if $running eq 'running';
	wait_snapshot_status($node, $paced);
}
is($running, 'running', 'a paced snapshot is still running');
is($node->safe_psql('postgres', q{SELECT state.value_get('rq', 1, ''::text)}),
	'answered', 'the worker answers rocksdb calls while it rests');
is($node->safe_psql('postgres', qq{SELECT state.cancel_snapshot($paced)}), 't',
	'a paced snapshot can be cancelled');
is(wait_snapshot_status($node, $paced), 'cancelled', 'and it ends cancelled');
$node->safe_psql('postgres',
	q{ALTER SYSTEM RESET state_backend.snapshot_cpu_percent; SELECT pg_reload_conf()});
is(wait_snapshot_status($node, $node->safe_psql('postgres', 'SELECT state.snapshot()')),
	'completed', 'the next snapshot completes');

is_deeply([ log_crashes($node, $log_offset) ], [], 'no process crashed');
$node->stop('fast');

done_testing();

# poll_until(sub): calls it every 100 ms until it returns true (true) or the
# test timeout passes (false).
sub poll_until
{
	my ($cond) = @_;
	my $end = time() + $TIMEOUT;
	while (time() < $end)
	{
		return 1 if $cond->();
		usleep(100_000);
	}
	return 0;
}
