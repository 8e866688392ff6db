# Nothing is lost at the memory limit, and a lost final checkpoint is never
# silent.
#
# - Heap states filled up to state_backend.memory_limit (writes fail with
#   54000) can still be snapshotted: a snapshot's bookkeeping does not
#   compete with state for the capped area.
# - A fast restart then brings every entry back from the final checkpoint.
# - A final checkpoint that fails (an unwritable checkpoint directory) is
#   reported with a WARNING at shutdown, and again at every start until a
#   checkpoint completes; the states come back from the newest complete
#   checkpoint.

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
	'full_memory',
	conf => "state_backend.memory_limit = '8MB'\n"
	  . "state_backend.checkpoint_dir = '$chkroot'\n");
ok(defined wait_for_worker($node), 'state worker running');
my $log_offset = -s $node->logfile;

# Fill: 1 kB values until the limit refuses one.
$node->safe_psql(
	'postgres', q{
SELECT state.create_state('full', 'value', 'int', 'text');
CREATE TABLE filled(n int, sqlstate text);
DO $$
DECLARE
    i int := 0;
BEGIN
    LOOP
        i := i + 1;
        PERFORM state.value_set('full', i, repeat(md5(i::text), 32));
    END LOOP;
EXCEPTION WHEN OTHERS THEN
    INSERT INTO filled VALUES (i - 1, SQLSTATE);
END
$$;
});
my ($filled, $sqlstate) =
  split /\|/, $node->safe_psql('postgres', 'SELECT n, sqlstate FROM filled');
is($sqlstate, '54000', 'the fill stopped at the memory limit');
cmp_ok($filled, '>', 1000, "$filled entries stored");

my $count = q{SELECT count(*) FROM state.keys('full', 0)};
is($node->safe_psql('postgres',
		q{SELECT state.wait_snapshot(state.snapshot())}),
	'completed', 'a snapshot of full memory completes');

$node->restart(mode => 'fast');
ok(defined wait_for_worker($node), 'worker back after a fast restart');
is($node->safe_psql('postgres', $count), $filled,
	'every entry is back after a fast restart');
unlike(slurp_file($node->logfile, $log_offset), qr/final checkpoint/,
	'no word of a failed final checkpoint');

# A final checkpoint that cannot be written: the checkpoint directory made
# read-only.  The write after the last checkpoint is lost, and said so.
$node->safe_psql('postgres',
	q{SELECT state.wait_snapshot(state.snapshot()); SELECT state.truncate('full');
	  SELECT state.value_set('full', 1, 'after the last checkpoint')});
chmod(0500, $chkroot) or die "chmod: $!";
$log_offset = -s $node->logfile;
$node->stop('fast');
like(slurp_file($node->logfile, $log_offset),
	qr/WARNING:  state_backend could not write its final checkpoint/,
	'the failed final checkpoint is reported at shutdown');
chmod(0700, $chkroot) or die "chmod: $!";

$log_offset = -s $node->logfile;
$node->start;
ok(defined wait_for_worker($node), 'worker back');
is($node->safe_psql('postgres', $count), $filled,
	'the states come back from the newest complete checkpoint');
like(slurp_file($node->logfile, $log_offset),
	qr/WARNING:  state_backend's final checkpoint at the last shutdown failed/,
	'the next start says what was lost');

$log_offset = -s $node->logfile;
$node->restart(mode => 'fast');
ok(defined wait_for_worker($node), 'worker back');
# A state call waits until the worker has restored, and so logged its warnings.
is($node->safe_psql('postgres', $count), $filled, 'the states are back');
unlike(slurp_file($node->logfile, $log_offset), qr/final checkpoint at the last shutdown failed/,
	'once a checkpoint completes, the warning stops');

is(join("\n", log_crashes($node, 0)), '', 'no process crashed');
$node->stop;
done_testing();
