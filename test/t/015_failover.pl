# Logged states follow a failover through PostgreSQL's own replication.
#
# A primary and a synchronous standby made with pg_basebackup share a
# checkpoint directory.  Writes go to logged and unlogged states, heap and
# rocksdb, before and after a checkpoint; then the primary dies (-m
# immediate) and the standby is promoted.  Logged states hold every
# acknowledged write; unlogged states hold the newest checkpoint; nothing
# comes from the rocksdb directory the base backup copied.  Before the
# promotion the standby serves its logged states, applied as it replays
# their WAL, and keeps the WAL a restart would replay with a slot of its
# own; the promotion applies only what was left.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $chkroot = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
my $primary = new_state_node(
	'primary',
	conf => "state_backend.checkpoint_dir = '$chkroot'\nsynchronous_commit = on\n",
	init => { allows_streaming => 1 });
ok(defined wait_for_worker($primary), 'primary: state worker running');

$primary->safe_psql(
	'postgres', q{
SELECT state.create_state('lh', 'reducing', 'int', 'bigint', reducer => 'sum', logged => true);
SELECT state.create_state('lr', 'list', 'int', 'int', backend => 'rocksdb', logged => true);
SELECT state.create_state('lm', 'map', 'int', 'text', logged => true);
SELECT state.create_state('uh', 'value', 'int', 'text');
SELECT state.create_state('ur', 'value', 'int', 'text', backend => 'rocksdb');
SELECT state.value_set('uh', 1, 'at backup'), state.value_set('ur', 1, 'at backup');
SELECT state.reduce('lh', 0, 1000000::bigint);
});
$primary->backup('b');
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;
$primary->safe_psql('postgres',
	q{ALTER SYSTEM SET synchronous_standby_names = '*'; SELECT pg_reload_conf()});
$primary->wait_for_catchup($standby);

sub workload
{
	my ($n, $tag) = @_;
	my $r = run_pgbench(
		$primary,
		"-n -c 2 -j 2 -t $n",
		{
			"w_$tag" => qq{
SELECT state.reduce('lh', :client_id, 1::bigint);
SELECT state.list_add('lr', :client_id, 1);
SELECT state.map_put('lm', :client_id, '$tag' || :client_id, '$tag');
}
		},
		timeout => 300);
	is($r->{ret}, 0, "pgbench: $n transactions per client ($tag)") or diag $r->{stderr};
}

my $probe = q{
SELECT state.value_get('lh', 0, 0::bigint) + state.value_get('lh', 1, 0::bigint) || ' ' ||
       coalesce(state.list_length('lr', 0), 0) + coalesce(state.list_length('lr', 1), 0) || ' ' ||
       coalesce(state.map_size('lm', 0), 0) + coalesce(state.map_size('lm', 1), 0) || ' ' ||
       state.value_get('uh', 1, ''::text) || ' ' || state.value_get('ur', 1, ''::text)
};

workload(1000, 'before');
$primary->safe_psql(
	'postgres', q{
SELECT state.value_set('uh', 1, 'checkpointed'), state.value_set('ur', 1, 'checkpointed');
SELECT state.wait_snapshot(state.snapshot());
});
workload(1000, 'after');
$primary->safe_psql('postgres',
	q{SELECT state.value_set('uh', 1, 'lost'), state.value_set('ur', 1, 'lost')});
is($primary->safe_psql('postgres', $probe), '1004000 4000 4 lost lost',
	'primary: every write made');

# The standby serves its logged states as it replays their WAL, none of
# its unlogged ones, and keeps WAL from the checkpoint's cut.
my $logged_probe = q{
SELECT state.value_get('lh', 0, 0::bigint) + state.value_get('lh', 1, 0::bigint) || ' ' ||
       coalesce(state.list_length('lr', 0), 0) + coalesce(state.list_length('lr', 1), 0) || ' ' ||
       coalesce(state.map_size('lm', 0), 0) + coalesce(state.map_size('lm', 1), 0)
};
ok( $standby->poll_query_until('postgres', $logged_probe, '1004000 4000 4'),
	'standby: its logged states hold every write, read where they were replayed');
is(sql_error($standby, q{SELECT state.value_get('uh', 1, ''::text)})->{sqlstate}, '25006',
	'standby: a call on an unlogged state fails with 25006');
my ($newest) = sort { $b <=> $a } map { /chk-(\d+)/ ? $1 : () } glob("$chkroot/chk-*");
my ($cut) = slurp_file("$chkroot/chk-$newest/MANIFEST") =~ /^wal_position (\S+)$/m;
ok(defined $cut, 'the checkpoint records its cut\'s WAL position');
my $kept = '';
# The standby looks at the checkpoint directory once a second: wait as long
# as any other wait of the suite.
for (1 .. 10 * $PostgreSQL::Test::Utils::timeout_default)
{
	$kept = $standby->safe_psql('postgres',
		q{SELECT restart_lsn FROM pg_replication_slots WHERE slot_name = 'state_backend'});
	last if $kept eq $cut;
	usleep(100_000);
}
is($kept, $cut, 'standby: its own slot keeps WAL from the newest checkpoint\'s cut');

# Failover.
$primary->stop('immediate');
my $log_offset = -s $standby->logfile;
$standby->promote;
ok(defined wait_for_worker($standby), 'promoted: state worker running');
is($standby->safe_psql('postgres', $probe), '1004000 4000 4 checkpointed checkpointed',
	'promoted: logged states hold every acknowledged write, unlogged ones the checkpoint, none the backup\'s copy');
my $promotion_log = slurp_file($standby->logfile, $log_offset);
like($promotion_log, qr/continues on the promoted server/,
	'promoted: the worker went on from the WAL it had applied');
unlike($promotion_log, qr/replays the WAL of logged states from/,
	'promoted: no replay from the checkpoint\'s cut');

# The new primary goes on logging, and a crash of it keeps that too.
$standby->safe_psql('postgres', q{SELECT state.reduce('lh', 0, 1::bigint)});
$standby->stop('immediate');
$standby->start;
ok(defined wait_for_worker($standby), 'new primary restarted');
like($standby->safe_psql('postgres', $probe), qr/^1004001 4000 4 /,
	'new primary: its logged writes survive its own crash');
is(join("\n", log_crashes($standby, 0)), '', 'no process crashed');
$standby->stop;
done_testing();
