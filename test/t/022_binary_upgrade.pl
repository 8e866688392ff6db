# Upgrading a running installation from the 1.0 release: states kept by the
# 1.0 library come back under this one, and survive ALTER EXTENSION UPDATE.
#
# - A private copy of the PostgreSQL installation (PostgreSQL finds its
#   library and share directories relative to its binaries) gets the 1.0
#   release, built from the source in STATE_BACKEND_OLD_SOURCE
#   (scripts/test.sh exports it from the repository's history; without it
#   the test is skipped).
# - A server on it makes heap and rocksdb states of every 1.0 kind and
#   stops: its final checkpoint and RocksDB keep them.
# - This build's library and scripts replace 1.0's, as a package upgrade
#   does, and the server starts again: every entry is back under the 1.0
#   SQL definitions, ALTER EXTENSION UPDATE keeps them, the new calls work
#   on them, and a further restart keeps them.

use strict;
use warnings;

use File::Copy qw(copy);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $old_source = $ENV{STATE_BACKEND_OLD_SOURCE};
plan skip_all => 'STATE_BACKEND_OLD_SOURCE (the 1.0 release source) is not set'
  unless defined $old_source && -f "$old_source/Makefile";

my ($root, $bindir, @current) = install_release($old_source, 'v1.0');
ok(scalar(grep { /--1\.0--1\.1\.sql$/ } @current), 'this build installs the update script');

my $dir = PostgreSQL::Test::Utils::tempdir();
my $node = PostgreSQL::Test::Cluster->new('upgrade',
	install_path => "$root$bindir/..");
$node->init;
$node->append_conf('postgresql.conf', qq{
shared_preload_libraries = 'state_backend'
state_backend.checkpoint_dir = '$dir/checkpoints'
state_backend.rocksdb_dir = '$dir/rocksdb'
});
$node->start;
$node->safe_psql('postgres', 'CREATE EXTENSION state_backend');
is($node->safe_psql('postgres',
		q{SELECT extversion FROM pg_extension WHERE extname = 'state_backend'}),
	'1.0', 'the 1.0 release is installed');

$node->safe_psql('postgres', q{
SELECT state.create_state('h_value', 'value', 'text', 'bigint', backend => 'memory');
SELECT state.create_state('h_list', 'list', 'int', 'text', backend => 'memory');
SELECT state.create_state('h_map', 'map', 'int', 'int', backend => 'memory', map_key_type => 'text');
SELECT state.create_state('h_sum', 'reducing', 'int', 'bigint', backend => 'memory', reducer => 'sum');
SELECT state.create_state('r_value', 'value', 'text', 'bigint', backend => 'rocksdb');
SELECT state.create_state('r_list', 'list', 'int', 'text', backend => 'rocksdb');
SELECT state.create_state('r_map', 'map', 'int', 'int', backend => 'rocksdb', map_key_type => 'text');
SELECT state.create_state('r_sum', 'reducing', 'int', 'bigint', backend => 'rocksdb', reducer => 'sum');
SELECT count(state.value_set(b || '_value', 'k' || i, i::bigint)),
       count(state.list_add(b || '_list', i % 10, 'v' || i)),
       count(state.map_put(b || '_map', i % 10, 'm' || i, i)),
       count(state.reduce(b || '_sum', i % 10, i::bigint))
  FROM generate_series(1, 1000) i, unnest(ARRAY['h', 'r']) b;
});

# What a user would check: per state, its entries and a digest of them.
my $digest = q{
SELECT b,
       (SELECT sum(state.value_get(b || '_value', 'k' || i, 0::bigint)) FROM generate_series(1, 1000) i),
       (SELECT sum(array_length(state.list_get(b || '_list', i, NULL::text[]), 1)) FROM generate_series(0, 9) i),
       (SELECT sum(state.map_size(b || '_map', i)) FROM generate_series(0, 9) i),
       (SELECT sum(state.map_get(b || '_map', 3, 'm' || i, 0)) FROM generate_series(1, 1000) i),
       (SELECT sum(state.value_get(b || '_sum', i, 0::bigint)) FROM generate_series(0, 9) i)
  FROM unnest(ARRAY['h', 'r']) b ORDER BY b};
my $states = q{SELECT name || ' ' || kind || ' ' || backend || ' ' || entries FROM state.states ORDER BY name};
my $before = $node->safe_psql('postgres', $digest);
my $before_states = $node->safe_psql('postgres', $states);
is($before, "h|500500|1000|1000|49800|500500\nr|500500|1000|1000|49800|500500",
	'the 1.0 states hold what was stored');
$node->stop('fast');

# The upgrade: this build's library and scripts replace 1.0's.
for my $f (@current)
{
	copy($f, "$root$f") or die "copy of $f failed: $!";
}
$node->start;
is($node->safe_psql('postgres',
		q{SELECT extversion FROM pg_extension WHERE extname = 'state_backend'}),
	'1.0', 'the extension is still at 1.0 before the update');
is($node->safe_psql('postgres', $states), $before_states,
	'every state is back under the new library');
is($node->safe_psql('postgres', $digest), $before, 'with every entry');

$node->safe_psql('postgres', 'ALTER EXTENSION state_backend UPDATE');
is($node->safe_psql('postgres',
		q{SELECT extversion FROM pg_extension WHERE extname = 'state_backend'}),
	'1.7', 'ALTER EXTENSION UPDATE reaches 1.7');
is($node->safe_psql('postgres', $digest), $before, 'the update keeps every entry');
is($node->safe_psql('postgres', q{
SELECT count(*) || ' ' || sum(value) FROM state.entries('r_value', NULL::text, NULL::bigint)}),
	'1000 500500', 'the new calls read the old states');
$node->safe_psql('postgres', q{
SELECT state.reduce('h_sum', 0, 1::bigint), state.reduce('r_sum', 0, 1::bigint)});
ok($node->safe_psql('postgres',
		q{SELECT writes FROM state.stats WHERE name = 'r_sum'}) >= 1,
	'state.stats counts the writes to an old state');

$node->restart(mode => 'fast');
$before =~ s/500500$/500501/mg;
is($node->safe_psql('postgres', $digest), $before,
	'a restart after the update keeps every entry, and the writes made since');
is_deeply([ log_crashes($node) ], [], 'no process crashed');
$node->stop;

done_testing();
