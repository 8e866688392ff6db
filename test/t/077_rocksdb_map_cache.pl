# A rocksdb map state's entries are kept in the shared entry cache one by
# one (a key's image, or an entry of its map, by the hash of its key), so
# that map_get of a hot entry is read in shared memory; and nothing there
# outlives a change of the entry or of its whole key.
#
# - After a restart (the cache empty), a session reads 200 keys' entries in
#   its view: values, a NULL value and an entry that is not there.  Another
#   session that never reads in a view reads the same with the worker
#   stopped (SIGSTOP): from the cache.  What the worker reads is kept too.
# - After a map_put and a map_remove of an entry, a clear of the whole key,
#   and the commit of a transactional map's clear of a key and put of one
#   of its entries, each made once the entries were cached, a session reads what the state
#   holds now.
# - A map with a TTL, whose expired entries compactions drop, is not read
#   from the cache, and its entries take no room there.
# - A session that read an entry in its view and waits before it stores it
#   (the fault point write.rocksdb_cache_fill) while another writes the
#   entry stores nothing.
# - Two writers put random entries and record each acknowledged number in a
#   table, two readers read an entry's recorded number, then the entry:
#   never less; checkpoints flush the memtables all the while, so that
#   views read entries, and the cache holds a few hundred entries, so that
#   they come and go.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $node = new_state_node('mapcache', conf => <<'EOF');
state_backend.backend = 'rocksdb'
state_backend.rocksdb_session_reads_after = 0
EOF

sub elsewhere
{
	my ($sql) = @_;
	return $node->safe_psql('postgres', "SET state_backend.rocksdb_session_reads = off; $sql");
}

# Every key's entries: a and b summed, n (NULL) counted, zz (absent) summed.
my $all_sql = q{SELECT sum(state.map_get('m', k, 'a', 0::bigint) + state.map_get('m', k, 'b', 0::bigint)),
	count(*) FILTER (WHERE state.map_get('m', k, 'n', -1::bigint) IS NULL),
	sum(state.map_get('m', k, 'zz', -5::bigint))
	FROM generate_series(1, 200) k};
my $all_want = (201 * 100 * 11) . '|200|-1000';

$node->safe_psql('postgres', q{
SELECT state.create_state('m', 'map', 'int', 'bigint', map_key_type => 'text');
SELECT count(state.map_put_all('m', k, ARRAY['a', 'b', 'n'], ARRAY[k, k * 10, NULL]::bigint[]))
	FROM generate_series(1, 200) k;
});
$node->restart;
my $before = cache_fills($node);
is($node->safe_psql('postgres', $all_sql), $all_want, 'a session reads the entries in its view');
cmp_ok(cache_fills($node) - $before, '>=', 800, 'what it read went into the shared cache (' . (cache_fills($node) - $before) . ')');
my ($ret, $out, $err) = with_worker_stopped($node, $all_sql);
is($out, $all_want, 'another session reads them, the NULL and the absent entry too, with the worker stopped')
  or diag $err;
isnt((with_worker_stopped($node, q{SELECT state.map_get('m', 300, 'a', 0::bigint)}))[0], 0,
	'an entry nobody read is not in the cache: asking the stopped worker fails');

# What the worker reads for a session is kept as well.
is(elsewhere(q{SELECT state.map_get('m', 1, 'c', 7::bigint)}), '7', 'read through the worker');
is((with_worker_stopped($node, q{SELECT state.map_get('m', 1, 'c', 7::bigint)}))[1], '7',
	'and then read from the cache');

# ---------------------------------------------------------------- changes
$node->safe_psql('postgres', q{SELECT state.map_put('m', 7, 'a', 1000)});
$node->safe_psql('postgres', q{SELECT state.map_remove('m', 8, 'a')});
$node->safe_psql('postgres', q{SELECT state.clear('m', 9)});
is(elsewhere(q{SELECT state.map_get('m', 7, 'a', 0::bigint), state.map_get('m', 7, 'b', 0::bigint),
	state.map_get('m', 8, 'a', -1::bigint), state.map_get('m', 8, 'b', 0::bigint),
	state.map_get('m', 9, 'a', -1::bigint), state.map_get('m', 9, 'b', -1::bigint),
	state.map_get('m', 9, 'n', -1::bigint)}),
	'1000|70|-1|80|-1|-1|-1',
	'after a put and a remove of an entry and a clear of a key the cache held: what RocksDB holds');
($ret, $out, $err) = with_worker_stopped($node, 
	q{SELECT state.map_get('m', 7, 'a', 0::bigint), state.map_get('m', 8, 'a', -1::bigint)});
is($out, '1000|-1', 'the written entries are back in the cache once their batch is in') or diag $err;

# A transactional map's commit that clears a key and puts an entry: every
# entry of the key the cache held leaves it.
$node->safe_psql('postgres', q{
SELECT state.create_state('mt', 'map', 'int', 'bigint', map_key_type => 'text', transactional => true);
SELECT count(state.map_put_all('mt', k, ARRAY['a', 'b'], ARRAY[k, k * 10]::bigint[]))
	FROM generate_series(1, 50) k;
});
$node->restart;
is($node->safe_psql('postgres',
		q{SELECT sum(state.map_get('mt', k, 'a', 0::bigint) + state.map_get('mt', k, 'b', 0::bigint)) FROM generate_series(1, 50) k}),
	51 * 25 * 11, 'a transactional map, read in a view');
is((with_worker_stopped($node, q{SELECT state.map_get('mt', 3, 'a', 0::bigint)}))[1], '3',
	'its entries are in the cache');
$node->safe_psql('postgres', q{
BEGIN;
SELECT state.clear('mt', 3);
SELECT state.map_put('mt', 3, 'b', 42);
COMMIT;
});
is(elsewhere(q{SELECT state.map_get('mt', 3, 'a', -1::bigint), state.map_get('mt', 3, 'b', 0::bigint)}),
	'-1|42', 'after a commit of a transactional map: what it holds');

# ---------------------------------------------------------------- a TTL
$node->safe_psql('postgres', q{
SELECT state.create_state('mttl', 'map', 'int', 'text', ttl => '1 hour');
SELECT state.map_put('mttl', 1, 'a', 'x');});
is(elsewhere(q{SELECT state.map_get('mttl', 1, 'a', '')}), 'x', 'a map with a TTL, read through the worker');
isnt((with_worker_stopped($node, q{SELECT state.map_get('mttl', 1, 'a', '')}))[0], 0,
	'a map with a TTL is not read from the cache: asking the stopped worker fails');

# ---------------------------------------------------------------- a write during the store
$node->safe_psql('postgres', q{
SELECT state.create_state('race', 'map', 'int', 'bigint', map_key_type => 'text');
SELECT state.map_put('race', 42, 'other', 1);
SELECT state.wait_snapshot(state.snapshot());});
my $held = held_at_fault_point($node, 'write.rocksdb_cache_fill',
	q{SET state_backend.rocksdb_session_reads_after = 0;
SET state_backend.fault_points = 'write.rocksdb_cache_fill:sleep:3000';
SELECT 'read', state.map_get('race', 42, 'e', 0::bigint);});
$node->safe_psql('postgres', q{SELECT state.map_put('race', 42, 'e', 99)});
my ($rout, $rerr) = finish_held($held);
is($rout, "read|0", 'the read that began before the write: no entry') or diag $rerr;
is(elsewhere(q{SELECT state.map_get('race', 42, 'e', 0::bigint)}), '99',
	'after it: the written entry, not what the read stored');

# ---------------------------------------------------------------- concurrently
$node->safe_psql('postgres', q{
SELECT state.create_state('c', 'map', 'int', 'bigint', map_key_type => 'int');
SELECT count(state.map_put_all('c', k, ARRAY[0, 1, 2, 3], ARRAY[0, 0, 0, 0]::bigint[]))
	FROM generate_series(0, 499) k;
CREATE TABLE ack (k int, e int, n bigint NOT NULL, PRIMARY KEY (k, e));
INSERT INTO ack SELECT k, e, 0 FROM generate_series(0, 499) k, generate_series(0, 3) e;
CREATE SEQUENCE s;
});
# Each writer owns the entries of its parity; a key's entries are written
# by both, so that a write of one entry meets reads of its neighbours.
my $writer = <<'EOF';
\set k random(0, 499)
\set e random(0, 1) * 2 + :client_id
SELECT nextval('s') AS n \gset
SELECT state.map_put('c', :k, :e, :n);
UPDATE ack SET n = :n WHERE k = :k AND e = :e;
EOF
my $reader = <<'EOF';
\set k random(0, 499)
\set e random(0, 3)
SELECT n AS a FROM ack WHERE k = :k AND e = :e \gset
SELECT 1 / (state.map_get('c', :k, :e, 0::bigint) >= :a)::int AS value_ok;
EOF
$node->append_conf('postgresql.conf', "state_backend.rocksdb_shared_cache_size = '64kB'");
$node->restart;
my $filled = cache_race($node, $writer, $reader);
cmp_ok($filled, '>', 0, "readers filled the cache meanwhile ($filled)");
is(elsewhere(q{SELECT count(*) FROM ack WHERE state.map_get('c', k, e, 0::bigint) <> n}),
	'0', 'every entry holds its last acknowledged number');

# ---------------------------------------------------------------- room
# The worker stores nothing of a map with a TTL, which sessions do not read
# in the cache: in a cache of one set (2kB, 8 slots), a value written once
# stays while eight entries of such a map are written and read.
$node->append_conf('postgresql.conf', "state_backend.rocksdb_shared_cache_size = '2kB'");
$node->restart;
$node->safe_psql('postgres', q{
SELECT state.create_state('one', 'value', 'int', 'bigint');
SELECT state.value_set('one', 1, 5);});
is(elsewhere(q{SELECT count(state.map_put('mttl', k, 'a', 'y')) FROM generate_series(1, 8) k;
	SELECT string_agg(state.map_get('mttl', k, 'a', ''), '') FROM generate_series(1, 8) k}),
	"8\nyyyyyyyy", "a TTL map's entries, written and read through the worker");
is((with_worker_stopped($node, q{SELECT state.value_get('one', 1, 0::bigint)}))[1], '5',
	'the value is still in the cache: they took no slot');

done_testing();