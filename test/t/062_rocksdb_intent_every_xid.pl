# A transactional commit of rocksdb states whose staged writes a crash left
# in RocksDB is applied at the next start, whatever its xid.
#
# The staged writes wait in RocksDB as an intent record whose key is a
# prefix and the transaction's full xid (backend/rocksdb/rocks_stage.c); a
# start reads every intent by a scan of the prefix.  The scan stopped at the
# prefix followed by one byte 0xFF, so an intent whose xid's first byte
# there was 0xFF (one transaction in 256 on a little-endian machine) was
# never found: its committed writes were lost at the crash, and a worker
# that restarted alone forgot such a stage and told its session the writes
# were applied.
#
# Here the xids are used up until a transaction gets one whose low byte is
# 255 (then 254 and 0, around it), and each such transaction's session is
# killed after its commit record, before it asks for the apply: after the
# crash each commit is whole in an unlogged and a logged rocksdb state, and
# the log says the start applied it.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $chk = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
my $node = new_state_node('rocks_intent_xid', init => { allows_streaming => 1 },
	conf => "restart_after_crash = on\nstate_backend.checkpoint_dir = '$chk'\n");
ok(defined wait_for_worker($node), 'state worker running');
$node->safe_psql('postgres', q{
SELECT state.create_state('us', 'reducing', 'int', 'bigint', reducer => 'sum',
                          backend => 'rocksdb', transactional => true);
SELECT state.create_state('ls', 'map', 'int', 'bigint', map_key_type => 'int',
                          backend => 'rocksdb', transactional => true, logged => true);
CREATE TABLE t (low int, k int, v bigint);
});

# Uses up xids until the next one's low byte is $low.
sub xid_next_low
{
	my ($low) = @_;
	my $next = $node->safe_psql('postgres', 'SELECT pg_current_xact_id()::text::bigint + 1');
	my $skip = ($low - $next % 256 + 256) % 256;
	$node->safe_psql('postgres', 'SELECT pg_current_xact_id()') for 1 .. $skip;
	return;
}

my $round = 0;
for my $low (254, 255, 0)
{
	$round++;
	xid_next_low($low);
	my $offset = -s $node->logfile;
	my ($ret, $out, $err) = $node->psql('postgres', qq{
SET state_backend.fault_points = 'apply.stage_before_ask:crash';
BEGIN;
SELECT 'xid ' || pg_current_xact_id();
SELECT count(state.reduce('us', k, ${round}::bigint)), count(state.map_put('ls', k, $round, ${round}::bigint))
  FROM generate_series(1, 5) k;
INSERT INTO t SELECT $low, k, $round FROM generate_series(1, 5) k;
COMMIT;});
	my ($xid) = $out =~ /^xid (\d+)$/m;
	is(defined $xid ? $xid % 256 : -1, $low, "round $round: the transaction's xid ends in byte $low");
	like($err, qr/server closed the connection|terminated/,
		"round $round: its session is killed after its commit record");
	$node->poll_query_until('postgres', 'SELECT count(*) > 0 FROM state.states')
	  or die 'the server did not come back';
	ok(defined wait_for_worker($node), "round $round: the state worker is back");
	is($node->safe_psql('postgres', "SELECT count(*) FROM t WHERE low = $low"), '5',
		"round $round: the commit's rows are there");
	is($node->safe_psql('postgres', q{
SELECT (SELECT string_agg(k || '=' || v, ',' ORDER BY k) FROM state.entries('us', NULL::int, NULL::bigint) e(k, v))
    || ' ' || (SELECT count(*) FROM generate_series(1, 5) k, state.map_entries('ls', k, NULL::int, NULL::bigint))}),
		join(',', map { "$_=" . ($round * ($round + 1) / 2) } 1 .. 5) . ' ' . (5 * $round),
		"round $round: every commit is whole in the unlogged and the logged state");
	ok($node->log_contains(qr/applied the writes to rocksdb states of transaction $xid, which committed before the restart/, $offset),
		"round $round: the start applied it from its intent") if defined $xid;
}
is_deeply([ grep { !/terminated by signal 9|terminating any other active server processes/ } log_crashes($node) ],
	[], 'no process crashed but the killed sessions');
$node->stop;
done_testing();
