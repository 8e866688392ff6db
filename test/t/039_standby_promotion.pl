# A hot standby's logged states are ready soon after its promotion.
#
# A primary and a streaming hot standby made with pg_basebackup share a
# checkpoint directory.  A logged heap state gets 1,000,000 entries in one
# statement and a logged rocksdb reducing state 20,000 folds; the primary
# takes a checkpoint, then writes some more.  The standby, which applies
# the logged states' WAL as it replays it, reads exactly what the primary
# holds.  Then the primary dies (-m immediate) and the standby is
# promoted: its state worker goes on from what it had applied, loading no
# checkpoint of logged states, so the first read of a state comes within
# moments (the time is reported; the bound asserted is generous, the
# machine is shared).  Unlogged states come back as of the newest
# checkpoint.  The new primary takes writes, and its logged states survive
# a crash of their own.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $timeout = $PostgreSQL::Test::Utils::timeout_default;
my $chkroot = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
my $nbig = 1_000_000;

my $primary = new_state_node(
	'primary',
	conf => "state_backend.checkpoint_dir = '$chkroot'\nsynchronous_commit = on\n",
	init => { allows_streaming => 1 });
ok(defined wait_for_worker($primary), 'primary: state worker running');

$primary->safe_psql(
	'postgres', q{
SELECT state.create_state('big', 'value', 'int', 'bigint', logged => true);
SELECT state.create_state('sums', 'reducing', 'int', 'bigint', reducer => 'sum', backend => 'rocksdb', logged => true);
SELECT state.value_set('big', 0, 0::bigint);
SELECT state.create_state('u_h', 'value', 'int', 'text');
SELECT state.create_state('u_r', 'value', 'int', 'text', backend => 'rocksdb');
});
$primary->backup('b');
# A checkpoint taken after the backup: the standby has the WAL from its cut.
$primary->safe_psql('postgres', q{SELECT state.wait_snapshot(state.snapshot())});
my $standby = PostgreSQL::Test::Cluster->new('standby');
$standby->init_from_backup($primary, 'b', has_streaming => 1);
$standby->start;

# wait_applied: until the standby has replayed the primary's WAL up to now
# and its state worker has applied it.
sub wait_applied
{
	my $target = $primary->safe_psql('postgres', q{SELECT pg_current_wal_lsn() - '0/0'::pg_lsn});
	$primary->wait_for_catchup($standby, 'replay');
	return $standby->poll_query_until('postgres',
		"SELECT value >= $target FROM state.worker WHERE name = 'standby_applied_lsn'");
}
ok(wait_applied(), 'standby: its state worker applied the primary\'s WAL');

# The load, a checkpoint, and a tail after it: 1,000 keys overwritten with
# -key, 1,000 new keys, 1,000 more folds.
my $t0 = time;
is( $primary->safe_psql('postgres',
		"SELECT count(state.value_set('big', i, i::bigint)) FROM generate_series(1, $nbig) i"),
	$nbig, "primary: $nbig entries written in one statement");
$primary->safe_psql('postgres',
	q{SELECT count(state.reduce('sums', i % 100, i::bigint)) FROM generate_series(1, 20000) i});
note sprintf('primary: the load took %.1f s', time - $t0);
$primary->safe_psql('postgres',
	q{SELECT state.value_set('u_h', 1, 'checkpointed'), state.value_set('u_r', 1, 'checkpointed')});
$primary->safe_psql('postgres', q{SELECT state.wait_snapshot(state.snapshot())});
my $t1 = time;
$primary->safe_psql(
	'postgres', qq{
SELECT count(state.value_set('big', i, -i::bigint)) FROM generate_series(1, $nbig, 1000) i;
SELECT count(state.value_set('big', i, i::bigint)) FROM generate_series($nbig + 1, $nbig + 1000) i;
SELECT count(state.reduce('sums', i % 100, 1::bigint)) FROM generate_series(1, 1000) i;
SELECT state.value_set('u_h', 1, 'after the checkpoint'), state.value_set('u_r', 1, 'after the checkpoint');
});

# What the states hold: entries and sum of big, two of its values, entries
# and sum of sums.
my ($count, $sum) = ($nbig + 1000 + 1, 0);
$sum += $_ for 1 .. $nbig + 1000;
for (my $i = 1; $i <= $nbig; $i += 1000)
{
	$sum -= 2 * $i;
}
my $expected = "$count $sum -999001 $nbig 100 " . (20000 * 20001 / 2 + 1000);
my $probe = qq{
SELECT (SELECT count(*) || ' ' || sum(value) FROM state.entries('big', NULL::int, NULL::bigint)) || ' ' ||
       state.value_get('big', 999001, 0::bigint) || ' ' || state.value_get('big', $nbig, 0::bigint) || ' ' ||
       (SELECT count(*) || ' ' || sum(value) FROM state.entries('sums', NULL::int, NULL::bigint))};
is($primary->safe_psql('postgres', $probe), $expected, 'primary: every write made');

ok(wait_applied(), 'standby: applied the load and the tail');
note sprintf('standby: applied the load and the tail %.1f s after the load began', time - $t0);
is($standby->safe_psql('postgres', $probe), $expected, 'standby: reads what the primary holds');
is(join("\n", log_crashes($primary, 0)), '', 'primary: no process crashed');

# The standby's state worker, stopped and started again alone, goes on from
# where it was: a list written while it is away holds every element once,
# and one logged transactional commit's appends too.
$primary->safe_psql(
	'postgres', q{
SELECT state.create_state('lst', 'list', 'int', 'int', logged => true);
SELECT state.create_state('tl', 'list', 'int', 'int', logged => true, transactional => true);
SELECT count(state.list_add('lst', i % 10, i)) FROM generate_series(1, 20000) i;
});
ok(wait_applied(), 'standby: applied the list');
my $old_worker = wait_for_worker($standby);
$standby->safe_psql('postgres',
	"SELECT pg_terminate_backend($old_worker)");
$primary->safe_psql(
	'postgres', q{
SELECT count(state.list_add('lst', i % 10, i)) FROM generate_series(20001, 40000) i;
BEGIN;
SELECT count(state.list_add('tl', i % 10, i)) FROM generate_series(1, 1000) i;
COMMIT;
});
ok(defined wait_for_worker($standby, not => $old_worker), 'standby: its worker started again');
ok(wait_applied(), 'standby: the new worker applied what came meanwhile');
my $lists = q{SELECT sum(state.list_length('lst', k)) || ' ' || sum(state.list_length('tl', k))
  FROM generate_series(0, 9) k};
is($standby->safe_psql('postgres', $lists), '40000 1000',
	'standby: every element once after its worker started again');

# Failover.
$primary->stop('immediate');
my $log_offset = -s $standby->logfile;
$standby->promote;
my $promoted = time;
my ($first, $tries, $err) = (undef, 0, '');
while (time - $promoted < $timeout)
{
	$tries++;
	my ($ret, $out, $stderr) = $standby->psql('postgres',
		"SELECT state.value_get('big', $nbig, 0::bigint)");
	if ($ret == 0 && $out eq $nbig)
	{
		$first = time - $promoted;
		last;
	}
	$err = $stderr;
	usleep(10_000);
}
ok(defined $first, 'promoted: a state call succeeds') or diag "last error: $err";
$first //= $timeout;
diag sprintf('promoted: the first state call succeeded %.3f s after the promotion (%d attempts)',
	$first, $tries);
is($standby->safe_psql('postgres', $lists), '40000 1000', 'promoted: the lists hold every element once');
cmp_ok($first, '<', 10, 'promoted: the first state call came within 10 s of the promotion');
is($standby->safe_psql('postgres', $probe), $expected,
	'promoted: the states hold every write the standby had applied');
my $continued = eval {
	$standby->wait_for_log(qr/state_backend continues on the promoted server/, $log_offset);
	1;
};
ok($continued, 'promoted: the server log says the state worker continues');
unlike(slurp_file($standby->logfile, $log_offset), qr/restored \d+ entries of database/,
	'promoted: no checkpoint was loaded');
ok(defined wait_for_worker($standby), 'promoted: state worker running');
is($standby->safe_psql('postgres',
		q{SELECT state.value_get('u_h', 1, ''::text) || ', ' || state.value_get('u_r', 1, ''::text)}),
	'checkpointed, checkpointed', 'promoted: unlogged states are the newest checkpoint\'s');

# The new primary takes writes, and keeps them through a crash.
$standby->safe_psql(
	'postgres', qq{
SELECT state.value_set('big', $nbig, 7::bigint);
SELECT state.value_set('big', $nbig + 5000, 5::bigint);
SELECT state.reduce('sums', 0, 1000000::bigint);
});
my $after = $standby->safe_psql('postgres', $probe);
my $after_expected = ($count + 1) . ' ' . ($sum - $nbig + 7 + 5) . " -999001 7 100 "
  . (20000 * 20001 / 2 + 1000 + 1000000);
is($after, $after_expected, 'new primary: writes work');
$standby->stop('immediate');
$standby->start;
ok(defined wait_for_worker($standby), 'new primary: restarted after -m immediate');
is($standby->safe_psql('postgres', $probe), $after_expected,
	'new primary: its logged states hold everything after the crash');
is(join("\n", log_crashes($standby, 0)), '', 'no process crashed');
$standby->stop;
done_testing();
