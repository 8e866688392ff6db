# A transactional commit of rocksdb states that a crash cut short before
# its commit record is never applied, even when a transaction after the
# crash gets its xid.
#
# The staged writes of a commit wait in RocksDB as an intent record named by
# the transaction's xid (backend/rocksdb/rocks_stage.c); a start after a
# crash applies an intent whose transaction committed and removes the rest.
# A transaction that wrote no WAL before its commit record had its xid only
# in memory: after a crash the server handed the same xid to the next
# transaction, and once that one committed, the start applied the dead
# transaction's writes as if they were its own.  Here the session is killed
# just before its commit record, the state worker's start pauses at its
# recovery of intents (fault point apply.rocksdb_stage_recover, sleep), and
# transactions run meanwhile: the state must not get the dead commit's keys.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $node = new_state_node('rocks_stage_xid', conf => "restart_after_crash = on\n");
ok(defined wait_for_worker($node), 'state worker running');
$node->safe_psql('postgres',
	q{SELECT state.create_state('rs', 'value', 'int', 'int', backend => 'rocksdb', transactional => true)});

# The next start pauses at its recovery of the intent (armed before the
# crash: the processes after it inherit the postmaster's settings).
$node->append_conf('postgresql.conf', "state_backend.fault_points = 'apply.rocksdb_stage_recover:sleep:4000'\n");
$node->reload;
my $offset = -s $node->logfile;

# The dead transaction's xid, read in the transaction itself.
my ($ret, $out, $err) = $node->psql('postgres', q{
SET state_backend.fault_points = 'commit.before_commit_record:crash';
BEGIN;
SELECT txid_current();
SELECT count(state.value_set('rs', i, i)) FROM generate_series(1, 50) i;
COMMIT;});
my ($dead) = $out =~ /^(\d+)$/m;
ok(defined $dead, "the transaction's xid is $dead");
like($err, qr/server closed the connection|terminated/, 'its session is killed before its commit record');

my @xids;
my $deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
while (time() < $deadline && !@xids)
{
	my ($r, $o) = $node->psql('postgres', 'SELECT txid_current()');
	push @xids, $o if $r == 0;
	usleep(20_000) unless @xids;
}
# Transactions that commit while the worker pauses.
for (1 .. 5)
{
	my ($r, $o) = $node->psql('postgres', 'SELECT txid_current()');
	push @xids, $o if $r == 0;
}
ok(@xids >= 2, 'transactions commit after the crash');
cmp_ok($xids[0], '>', $dead, 'the first transaction after the crash gets a later xid');
$node->wait_for_log(qr/fault point "apply.rocksdb_stage_recover" reached: sleep/, $offset);
$node->append_conf('postgresql.conf', "state_backend.fault_points = ''\n");
$node->reload;
ok(defined wait_for_worker($node), 'the state worker runs');
# The worker is through its recovery once it serves.
my $keys;
$deadline = time() + $PostgreSQL::Test::Utils::timeout_default;
while (time() < $deadline)
{
	my ($r, $o) = $node->psql('postgres', q{SELECT count(*) FROM state.keys('rs', 0)});
	if ($r == 0) { $keys = $o; last; }
	usleep(200_000);
}
is($keys, '0', 'none of the dead transaction\'s keys is in the state');
ok(slurp_file($node->logfile, $offset) !~ /applied the writes to rocksdb states of transaction $dead\b/,
	'its intent is not applied');

$node->stop;
done_testing();
