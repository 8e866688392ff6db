# A running snapshot shows where it is in state.snapshots: its phase, and
# the key groups written of all.  Paced to 1% of a core, a snapshot of
# 500,000 entries runs for seconds, long enough to be seen at work.

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
my $node = new_state_node('progress', conf => "state_backend.snapshot_cpu_percent = 1\n");
ok(defined wait_for_worker($node), 'state worker running');

$node->safe_psql('postgres', q{
SELECT state.create_state('p', 'value', 'int', 'bigint');
SELECT count(state.value_set('p', i, i::bigint)) FROM generate_series(1, 500000) i;
});
my $id = $node->safe_psql('postgres', "SELECT state.snapshot('$tmp/s', 'native')");

# Poll until the snapshot is seen between its first and last key group.
my $seen = '';
my $deadline = time() + 60;
while (time() < $deadline)
{
	my $row = $node->safe_psql('postgres',
		"SELECT status, phase, key_groups_done, key_groups_total FROM state.snapshots WHERE id = $id");
	my ($status, $phase, $done, $total) = split /\|/, $row;
	last if $status ne 'running';
	if ($phase eq 'key groups' && $done > 0 && $done < $total)
	{
		$seen = $row;
		last;
	}
	usleep(20_000);
}
like($seen, qr/^running\|key groups\|\d+\|128$/, "a running snapshot shows its phase and key groups done of all ($seen)");

is(wait_snapshot_status($node, $id), 'completed', 'the snapshot completes');
is( $node->safe_psql('postgres',
		"SELECT coalesce(phase, '-') || ' ' || key_groups_done || '/' || key_groups_total FROM state.snapshots WHERE id = $id"),
	'- 128/128', 'a completed snapshot has no phase, and wrote every key group');

$node->stop;
done_testing();
