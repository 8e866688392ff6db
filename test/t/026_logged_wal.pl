# The WAL that logged states keep is bounded, and goes with them.
#
# - With state_backend.checkpoint_interval at its default 0 (no timed
#   checkpoints), the state worker takes a checkpoint whenever the
#   state_backend slot holds more than max_wal_size, so pg_wal does not
#   grow without end under ordinary writes.
# - Once the last logged state is dropped, the worker takes a checkpoint
#   and drops the slot; a logged state created later makes it again, and
#   a crash then loses none of its writes.

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
	'logged_wal',
	conf => "state_backend.checkpoint_dir = '$chkroot'\nmin_wal_size = 32MB\nmax_wal_size = 32MB\n",
	init => { allows_streaming => 1 });
ok(defined wait_for_worker($node), 'state worker running');

my $slot_exists = q{SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'state_backend'};
my $kept_mb = q{SELECT (pg_current_wal_lsn() - restart_lsn) / (1024 * 1024)
  FROM pg_replication_slots WHERE slot_name = 'state_backend'};

$node->safe_psql('postgres', q{
SELECT state.create_state('counts', 'reducing', 'int', 'bigint', reducer => 'sum', logged => true);
CREATE TABLE filler (i int, pad text);
});
is($node->safe_psql('postgres', $slot_exists), '1', 'the first logged state makes the slot');

# About 200 MB of WAL, with state writes among it; no timed checkpoint.
my $max_kept = 0;
for my $round (1 .. 8)
{
	$node->safe_psql('postgres', qq{
INSERT INTO filler SELECT i, repeat('x', 200) FROM generate_series(1, 100000) i;
SELECT count(state.reduce('counts', i % 100, 1::bigint)) FROM generate_series(1, 1000) i;
});
	my $kept = $node->safe_psql('postgres', $kept_mb);
	$max_kept = $kept if $kept > $max_kept;
}
# The worker looks once a second: give it the time to catch up.
ok($node->poll_query_until('postgres', "SELECT ($kept_mb) < 64"),
	'the slot keeps less than twice max_wal_size once the worker has looked');
note "the slot kept at most $max_kept MB while the WAL was written";
cmp_ok($node->safe_psql('postgres',
	q{SELECT count(*) FROM state.snapshots WHERE status = 'completed' AND path LIKE '%/chk-%'}),
	'>', 0, 'the worker took checkpoints on its own');
$node->safe_psql('postgres', 'CHECKPOINT');
cmp_ok($node->safe_psql('postgres', q{SELECT sum(size) / (1024 * 1024) FROM pg_ls_waldir()}),
	'<', 160, 'pg_wal is bounded');

# Nothing lost in a crash.
$node->stop('immediate');
$node->start;
ok(defined wait_for_worker($node), 'state worker running after the crash');
is($node->safe_psql('postgres', q{SELECT sum(state.value_get('counts', i, 0::bigint)) FROM generate_series(0, 99) i}),
	'8000', 'every logged write is there after a crash');

# The last logged state dropped: a checkpoint, then the slot goes.
$node->safe_psql('postgres', q{SELECT state.drop_state('counts')});
ok($node->poll_query_until('postgres', "SELECT ($slot_exists) = 0"),
	'the slot is dropped with the last logged state');
ok($node->log_contains('dropped replication slot "state_backend": no logged state is left'),
	'the server log says so');

# A logged state again: the slot comes back before its first record.
$node->safe_psql('postgres', q{
SELECT state.create_state('again', 'value', 'int', 'text', logged => true);
SELECT state.value_set('again', 1, 'kept');
});
is($node->safe_psql('postgres', $slot_exists), '1', 'a new logged state makes the slot again');
$node->stop('immediate');
$node->start;
ok(defined wait_for_worker($node), 'state worker running after the second crash');
is($node->safe_psql('postgres', q{SELECT state.value_get('again', 1, '')}), 'kept',
	'its write survived the crash');

is(join("\n", log_crashes($node, 0)), '', 'no process crashed');
$node->stop;
done_testing();
