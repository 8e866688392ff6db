# What sessions read of rocksdb states in their own views goes into the
# shared entry cache (rocks_cache_fill), so that the next read of the key,
# by any session, is served from shared memory; and nothing a session put
# there outlives a change of the key.
#
# - After a restart (the cache empty), one session reads 1,000 keys in its
#   view: state.worker counts them in rocksdb_session_cache_fills, and a
#   session that reads through the worker only (rocksdb_session_reads =
#   off) reads all of them with the worker stopped (SIGSTOP): from the
#   cache.
# - After a write of a key, a truncate, a restore, and a drop and create
#   of the state under the same name, each made once a view read filled
#   the cache, such a session reads what the state holds now.
# - A list with a TTL, which compactions rewrite, is not read from the
#   cache.
# - Lists are cached too: after an append (a merge), and a replace and an
#   append in one write batch, a session reads what RocksDB holds; so it
#   does after a small value and one too large for the cache in one batch.
# - A session that read a key in its view and waits before it stores it
#   (the fault point write.rocksdb_cache_fill) while another writes the
#   key stores nothing: the written value is what every session reads.
# - Two writers write random keys and record each acknowledged number in a
#   table, while checkpoints flush the memtables every half second so that
#   views read the keys written before, and two readers read a key's
#   recorded number, then the key: never less than the number.  The cache
#   holds a few hundred entries then, so that readers store keys in it all
#   the time while writers change them.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $node = new_state_node('fills', conf => <<'EOF');
state_backend.backend = 'rocksdb'
state_backend.rocksdb_session_reads_after = 0
EOF
my $snaps = $node->basedir . '/snaps';
mkdir $snaps or die "mkdir $snaps: $!";

my $sum_sql = q{SELECT sum(state.value_get('v', i, 0::bigint)) FROM generate_series(1, 1000) i};

# Reads the 1,000 keys in this session's view (views open at once here).
sub read_in_view
{
	return $node->safe_psql('postgres', $sum_sql);
}

# Reads the 1,000 keys from the cache alone.
sub read_from_cache
{
	my ($ret, $out, $err) = with_worker_stopped($node, $sum_sql);
	return $ret == 0 ? $out : "failed: $err";
}

# Reads the 1,000 keys through the cache or the worker, not in a view.
sub read_elsewhere
{
	return $node->safe_psql('postgres', "SET state_backend.rocksdb_session_reads = off; $sum_sql");
}

# restart_and_fill: the cache emptied by a restart (opening the instance
# flushes what its log held), then filled by a session reading in its view.
sub restart_and_fill
{
	my ($want, $what) = @_;
	$node->restart;
	my $before = cache_fills($node);
	is(read_in_view(), $want, "$what: a session reads the keys in its view");
	cmp_ok(cache_fills($node) - $before, '>=', 1000, "$what: what it read went into the shared cache");
}

$node->safe_psql('postgres', q{
SELECT state.create_state('v', 'value', 'int', 'bigint');
SELECT count(state.value_set('v', i, i * 10)) FROM generate_series(1, 1000) i;
});
my $before;
restart_and_fill('5005000', 'at first');
is(read_from_cache(), '5005000',
	'another session reads them with the worker stopped: from the cache');
isnt((with_worker_stopped($node, q{SELECT state.value_get('v', 5000, 0::bigint)}))[0], 0,
	'a key nobody read is not in the cache: asking the stopped worker fails');

# ---------------------------------------------------------------- a write
$node->safe_psql('postgres', q{SELECT state.value_set('v', 7, -1)});
is(read_elsewhere(), 5005000 - 70 - 1, 'after a write of a key the cache held: the new value');

# ---------------------------------------------------------------- a truncate
restart_and_fill(5005000 - 70 - 1, 'before a truncate');
is($node->safe_psql('postgres', q{SELECT state.truncate('v')}), '1000', 'truncated');
is(read_elsewhere(), '0', 'after a truncate: no key has a state');

# ---------------------------------------------------------------- a restore
$node->safe_psql('postgres', qq{
SELECT count(state.value_set('v', i, i * 10)) FROM generate_series(1, 1000) i;
SELECT state.wait_snapshot(state.snapshot('$snaps/a'));
SELECT count(state.value_set('v', i, i * 20)) FROM generate_series(1, 1000) i;
});
restart_and_fill('10010000', 'before a restore');
$node->safe_psql('postgres', "SELECT state.restore('$snaps/a')");
is(read_elsewhere(), '5005000', "after a restore: the snapshot's values");

# ---------------------------------------------------------------- drop and create
restart_and_fill('5005000', 'before a drop');
$node->safe_psql('postgres', q{
SELECT state.drop_state('v');
SELECT state.create_state('v', 'value', 'int', 'bigint');
SELECT state.value_set('v', 1, 3);
});
is(read_elsewhere(), '3', 'after a drop and a create under the same name: the new state');

# ---------------------------------------------------------------- lists
# A list's image is cached as a value's is; an element appended (a merge,
# whose image only RocksDB makes) takes the key out, also of what an
# earlier write in the same batch would have stored.
$node->safe_psql('postgres', q{
SELECT state.create_state('l', 'list', 'int', 'bigint');
SELECT count(state.list_add_all('l', k, ARRAY[k, k + 1]::bigint[])) FROM generate_series(1, 200) k;});
$node->restart;
$before = cache_fills($node);
is($node->safe_psql('postgres',
		q{SELECT sum(x) FROM generate_series(1, 200) k, unnest(state.list_get('l', k, '{}'::bigint[])) x}),
	'40400', 'lists: a session reads them in its view');
cmp_ok(cache_fills($node) - $before, '>=', 200, 'lists: what it read went into the shared cache');
is((with_worker_stopped($node, q{SELECT state.list_get('l', 7, '{}'::bigint[])}))[1], '{7,8}',
	'lists: another session reads one with the worker stopped: from the cache');
$node->safe_psql('postgres', q{SELECT state.list_add('l', 7, 99)});
$node->safe_psql('postgres', q{SELECT state.list_update('l', 8, ARRAY[1, 2]::bigint[]), state.list_add('l', 8, 3)});
is($node->safe_psql('postgres',
		"SET state_backend.rocksdb_session_reads = off; SELECT state.list_get('l', 7, '{}'::bigint[]), state.list_get('l', 8, '{}'::bigint[])"),
	'{7,8,99}|{1,2,3}', 'lists: after an append, and a replace and an append in one batch: what RocksDB holds');

# A list with a TTL is not read from the cache: a compaction rewrites it
# without its expired elements (on RocksDB's threads), which the cache
# would not see.  Read once (the worker keeps what it read), it is asked of
# the worker again: with the worker stopped, the read fails.
$node->safe_psql('postgres', q{
SELECT state.create_state('lt', 'list', 'int', 'text', ttl => '1 hour');
SELECT state.list_add('lt', 1, 'a');});
is($node->safe_psql('postgres',
		"SET state_backend.rocksdb_session_reads = off; SELECT state.list_get('lt', 1, '{}'::text[])"),
	'{a}', 'a list with a TTL, read through the worker');
isnt((with_worker_stopped($node, q{SELECT state.list_get('lt', 1, '{}'::text[])}))[0], 0,
	'a list with a TTL is not read from the cache: asking the stopped worker fails');

# A value replaced, in one batch, by one too large for a slot: the first
# value's pending store must not be made.
$node->safe_psql('postgres', q{
SELECT state.create_state('t', 'value', 'int', 'text');
SELECT state.value_set('t', 1, 'small'), state.value_set('t', 1, repeat('x', 500));});
is($node->safe_psql('postgres',
		"SET state_backend.rocksdb_session_reads = off; SELECT length(state.value_get('t', 1, ''))"),
	'500', 'a value too large for the cache, written after a small one in the same batch: the large one');

# ---------------------------------------------------------------- a write during the store
# A session reads a key in its view (nobody wrote it) and waits, at the
# fault point between its read and its store into the cache, while another
# session writes the key: the store sees the write's mark and keeps out,
# and a session without a view reads the written value, not "no state".
$node->safe_psql('postgres', q{
SELECT state.create_state('race', 'value', 'int', 'bigint');
SELECT state.wait_snapshot(state.snapshot());});
my $held = held_at_fault_point($node, 'write.rocksdb_cache_fill',
	q{SET state_backend.rocksdb_session_reads_after = 0;
SET state_backend.fault_points = 'write.rocksdb_cache_fill:sleep:3000';
SELECT 'read', state.value_get('race', 42, 0::bigint);});
$node->safe_psql('postgres', q{SELECT state.value_set('race', 42, 99)});
my ($rout, $rerr) = finish_held($held);
is($rout, "read|0", 'the read that began before the write: no state') or diag $rerr;
is($node->safe_psql('postgres',
		"SET state_backend.rocksdb_session_reads = off; SELECT state.value_get('race', 42, 0::bigint)"),
	'99', 'after it: the written value, not what the read stored');

# ---------------------------------------------------------------- concurrently
$node->safe_psql('postgres', q{
SELECT state.create_state('c', 'value', 'int', 'bigint');
SELECT count(state.value_set('c', k, 0)) FROM generate_series(0, 1999) k;
CREATE TABLE ack (k int PRIMARY KEY, n bigint NOT NULL);
INSERT INTO ack SELECT k, 0 FROM generate_series(0, 1999) k;
CREATE SEQUENCE s;
});
my $writer = <<'EOF';
\set k random(0, 999) * 2 + :client_id
SELECT nextval('s') AS n \gset
SELECT state.value_set('c', :k, :n);
UPDATE ack SET n = :n WHERE k = :k;
EOF
my $reader = <<'EOF';
\set k random(0, 1999)
SELECT n AS a FROM ack WHERE k = :k \gset
SELECT 1 / (state.value_get('c', :k, 0::bigint) >= :a)::int AS value_ok;
EOF
# A cache of a few hundred entries for 2,000 keys: entries come and go all
# the time, so that readers store keys while writers change them.
$node->append_conf('postgresql.conf', "state_backend.rocksdb_shared_cache_size = '64kB'");
$node->restart;
my $filled = cache_race($node, $writer, $reader);
cmp_ok($filled, '>', 0, "readers filled the cache meanwhile ($filled)");
is($node->safe_psql('postgres',
		"SET state_backend.rocksdb_session_reads = off; SELECT count(*) FROM ack WHERE state.value_get('c', k, 0::bigint) <> n"),
	'0', 'every key holds its last acknowledged number');

done_testing();
