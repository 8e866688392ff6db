# The first logged state comes after the newest checkpoint, and by then
# PostgreSQL has removed the WAL from that checkpoint's cut: a crash must
# still bring back every acknowledged write.  The checkpoint holds no
# logged state, so recovery replays from the slot the first logged state
# made, not from the checkpoint's cut.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $chkroot = PostgreSQL::Test::Utils::tempdir() . '/checkpoints';
my $node = new_state_node(
	'late_slot',
	conf => "state_backend.checkpoint_dir = '$chkroot'\nmin_wal_size = 32MB\nmax_wal_size = 64MB\n",
	init => { allows_streaming => 1 });
ok(defined wait_for_worker($node), 'state worker running');

# A checkpoint with an unlogged state only.
$node->safe_psql('postgres', q{
SELECT state.create_state('plain', 'value', 'int', 'int');
SELECT state.value_set('plain', 1, 1);
SELECT state.wait_snapshot(state.snapshot());
});
my $cut_segment = $node->safe_psql('postgres', 'SELECT pg_walfile_name(pg_current_wal_lsn())');

# Enough WAL, and checkpoints, for PostgreSQL to remove that segment.
$node->safe_psql('postgres', q{
CREATE TABLE filler AS SELECT i, repeat('x', 200) AS pad FROM generate_series(1, 300000) i;
CHECKPOINT;
SELECT pg_switch_wal();
CREATE TABLE filler2 AS SELECT * FROM filler;
CHECKPOINT;
SELECT pg_switch_wal();
CHECKPOINT;
});
ok(!-f $node->data_dir . "/pg_wal/$cut_segment", "WAL segment $cut_segment of the checkpoint's cut is gone");

# The first logged state, and writes acknowledged before a crash.
$node->safe_psql('postgres', q{
SELECT state.create_state('lg', 'value', 'int', 'int', logged => true);
SELECT count(state.value_set('lg', i, i * 2)) FROM generate_series(1, 1000) i;
});
my $offset = -s $node->logfile;
$node->stop('immediate');
$node->start;
ok(defined wait_for_worker($node), 'the server came back');
is($node->safe_psql('postgres', q{
	SELECT count(*), sum(state.value_get('lg', k, 0)) FROM state.keys('lg', NULL::int) k}),
	'1000|1001000', 'every acknowledged write of the logged state is back');
my $log = slurp_file($node->logfile, $offset);
unlike($log, qr/could not replay the WAL of logged states/, 'the replay found its WAL');
like($log, qr/replayed \d+ WAL records of logged states/, 'the worker replayed the logged records');

is(log_crashes($node), 0, 'no crash in the log');
$node->stop;
done_testing();
