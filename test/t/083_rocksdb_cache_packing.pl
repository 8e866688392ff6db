# The shared entry cache of rocksdb states packs its entries: a set holds
# as many as fit its bytes, each taking the room its images need, so that
# state_backend.rocksdb_shared_cache_size holds several times more small
# entries than slots of the largest size would.
#
# - Capacity: 150,000 keys of a bigint value state written through the
#   state worker go into an 8 MB cache as they are committed, and a session
#   that never reads in a view (rocksdb_session_reads = off) then reads all
#   of them asking the worker for fewer than 10% (state.worker's requests).
#   Slots of 128 bytes held about 61,000 entries in 8 MB: more than half of
#   the reads went to the worker.
# - Churn: in a 1 MB cache (1,024 sets), 30,000 random operations on 3,000
#   keys of a text value state, a map state and a list state (values from
#   empty to longer than an entry may be, so entries change size, leave,
#   evict others and move down within their set), each read back at once
#   and checked against a table written beside it, then every key read
#   back twice, the second time from the cache, and checked again: a read
#   answered by the cache is always what the state holds.
# - A reader walking a set that moves under it: in a cache of one set, a
#   writer cycles 27 keys (each new entry evicts one, and those after it
#   move down), one of them with a value that holds a forged entry header
#   for the reader's key (its state, the hash of its key, the key, a size
#   of 512 and a value of 480 bytes), while a session reads that key for
#   5 s.  A walk that landed on the forged header copied 480 bytes into a
#   buffer of 112 and killed the session, and with it every other; now the
#   reader reads the key's own value every time.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $node = new_state_node('packing', conf => <<'EOF');
state_backend.backend = 'rocksdb'
state_backend.rocksdb_shared_cache_size = '8MB'
state_backend.rocksdb_session_reads = off
EOF

sub requests
{
	return $node->safe_psql('postgres',
		"SELECT value FROM state.worker WHERE name = 'requests'");
}

# ---------------------------------------------------------------- capacity
$node->safe_psql('postgres', q{
SELECT state.create_state('v', 'value', 'bigint', 'bigint');
SELECT count(state.value_set('v', i, i * 3)) FROM generate_series(1::bigint, 150000) i;
});
my $before = requests();
is($node->safe_psql('postgres',
		q{SELECT sum(state.value_get('v', i, 0::bigint)) FROM generate_series(1::bigint, 150000) i}),
	3 * 150000 * 150001 / 2, 'every key of the value state reads back');
my $asked = requests() - $before;
cmp_ok($asked, '<', 15000,
	"an 8 MB cache answers at least 90% of 150,000 bigint keys (the worker was asked $asked times)");

# ---------------------------------------------------------------- churn
$node->append_conf('postgresql.conf', "state_backend.rocksdb_shared_cache_size = '1MB'\n");
$node->restart;
$node->safe_psql('postgres', q{
SELECT state.create_state('tv', 'value', key_type => 'int', value_type => 'text');
SELECT state.create_state('tm', 'map', key_type => 'int', map_key_type => 'int', value_type => 'text');
SELECT state.create_state('tl', 'list', key_type => 'int', value_type => 'text');
CREATE TABLE shadow_v (k int PRIMARY KEY, v text);
CREATE TABLE shadow_m (k int, mk int, v text, PRIMARY KEY (k, mk));
CREATE TABLE shadow_l (k int, seq serial, v text);
});

# A value from empty to 130 bytes: entries of every size, and some too
# large for an entry (those stay out of the cache).
my $churn = <<'EOF';
DO $$
DECLARE
	_k int;
	_mk int;
	_v text;
	_op int;
	_got text;
	_want text;
BEGIN
	PERFORM setseed(0.083);
	FOR i IN 1..30000 LOOP
		_k := 1 + floor(random() * 3000)::int;
		_mk := 1 + floor(random() * 6)::int;
		_v := repeat(chr(97 + i % 26), floor(random() * 131)::int) || i;
		_op := floor(random() * 10)::int;
		IF _op < 3 THEN
			PERFORM state.value_set('tv', _k, _v);
			INSERT INTO shadow_v VALUES (_k, _v) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v;
		ELSIF _op = 3 THEN
			PERFORM state.clear('tv', _k);
			DELETE FROM shadow_v WHERE shadow_v.k = _k;
		ELSIF _op < 6 THEN
			PERFORM state.map_put('tm', _k, _mk, _v);
			INSERT INTO shadow_m VALUES (_k, _mk, _v) ON CONFLICT (k, mk) DO UPDATE SET v = EXCLUDED.v;
		ELSIF _op = 6 THEN
			PERFORM state.map_remove('tm', _k, _mk);
			DELETE FROM shadow_m WHERE shadow_m.k = _k AND shadow_m.mk = _mk;
		ELSIF _op = 7 THEN
			PERFORM state.clear('tm', _k);
			DELETE FROM shadow_m WHERE shadow_m.k = _k;
		ELSIF _op = 8 THEN
			PERFORM state.list_add('tl', _k, left(_v, 20));
			INSERT INTO shadow_l (k, v) VALUES (_k, left(_v, 20));
		ELSE
			PERFORM state.list_update('tl', _k, ARRAY[left(_v, 10)]);
			DELETE FROM shadow_l WHERE shadow_l.k = _k;
			INSERT INTO shadow_l (k, v) VALUES (_k, left(_v, 10));
		END IF;
		_got := state.value_get('tv', _k, '<none>'::text);
		_want := coalesce((SELECT s.v FROM shadow_v s WHERE s.k = _k), '<none>');
		IF _got IS DISTINCT FROM _want THEN
			RAISE EXCEPTION 'operation %: value of % reads %, not %', i, _k, _got, _want;
		END IF;
		_got := state.map_get('tm', _k, _mk, '<none>'::text);
		_want := coalesce((SELECT s.v FROM shadow_m s WHERE s.k = _k AND s.mk = _mk), '<none>');
		IF _got IS DISTINCT FROM _want THEN
			RAISE EXCEPTION 'operation %: map entry %/% reads %, not %', i, _k, _mk, _got, _want;
		END IF;
		_got := state.list_get('tl', _k, '{}'::text[])::text;
		_want := coalesce((SELECT array_agg(s.v ORDER BY s.seq) FROM shadow_l s WHERE s.k = _k), '{}')::text;
		IF _got IS DISTINCT FROM _want THEN
			RAISE EXCEPTION 'operation %: list of % reads %, not %', i, _k, _got, _want;
		END IF;
	END LOOP;
END
$$;
EOF
my ($ret, $out, $err) = psql_nodie($node, 'postgres', $churn);
is($ret, 0, '30,000 operations each read back what the state holds') or diag($err);

my $check = q{
SELECT
 (SELECT count(*) FROM generate_series(1, 3000) g(k)
   WHERE state.value_get('tv', g.k, '<none>'::text) IS DISTINCT FROM
         coalesce((SELECT s.v FROM shadow_v s WHERE s.k = g.k), '<none>'))
 + (SELECT count(*) FROM generate_series(1, 3000) g(k), generate_series(1, 6) h(mk)
   WHERE state.map_get('tm', g.k, h.mk, '<none>'::text) IS DISTINCT FROM
         coalesce((SELECT s.v FROM shadow_m s WHERE s.k = g.k AND s.mk = h.mk), '<none>'))
 + (SELECT count(*) FROM generate_series(1, 3000) g(k)
   WHERE state.list_get('tl', g.k, '{}'::text[]) IS DISTINCT FROM
         coalesce((SELECT array_agg(s.v ORDER BY s.seq) FROM shadow_l s WHERE s.k = g.k), '{}'))
};
is($node->safe_psql('postgres', $check), '0', 'every key reads what the state holds');
$before = requests();
is($node->safe_psql('postgres', $check), '0', 'and again, with the cache filled by those reads');
cmp_ok(requests() - $before, '<', 3000 * 8,
	'the second pass read some keys from the cache');

$node->stop;

# ---------------------------------------------------------------- race
# A fresh server, whose first state has id 1, and a cache of one set.
my $race = new_state_node('race', conf => <<'EOF');
state_backend.backend = 'rocksdb'
state_backend.rocksdb_shared_cache_size = '1kB'
state_backend.rocksdb_session_reads = off
EOF
$race->safe_psql('postgres', q{SELECT state.create_state('t', 'value', 'text', 'bytea')});
$race->safe_psql('postgres', q{SELECT state.value_set('t', 'KKKKKKKK', '\x1111111111111111'::bytea)});

# The forged header, little-endian: 8 bytes that align it, state id 1, the
# hash of the key, key length 8, value length 480, size 512, no map key,
# then the key.
my $forged = q{'\x000000000000000001000000'::bytea
  || (SELECT substring(h from 4 for 1) || substring(h from 3 for 1)
          || substring(h from 2 for 1) || substring(h from 1 for 1)
      FROM int4send(hashtext('KKKKKKKK')) h)
  || '\x0800e001000200004b4b4b4b4b4b4b4b'::bytea};
my $writer = qq{
DO \$\$
DECLARE t0 timestamptz := clock_timestamp();
BEGIN
	WHILE clock_timestamp() < t0 + interval '5 s' LOOP
		FOR i IN 1..25 LOOP
			PERFORM state.value_set('t', 'R' || lpad(i::text, 7, '0'), '\\x0102030405060708'::bytea);
		END LOOP;
		PERFORM state.value_set('t', 'BBBBBBBB', $forged);
		PERFORM state.value_set('t', 'KKKKKKKK', '\\x1111111111111111'::bytea);
	END LOOP;
END \$\$;
};
my $reader = q{
DO $$
DECLARE t0 timestamptz := clock_timestamp(); n int := 0; v bytea;
BEGIN
	WHILE clock_timestamp() < t0 + interval '5 s' LOOP
		v := state.value_get('t', 'KKKKKKKK', NULL::bytea);
		IF v IS DISTINCT FROM '\x1111111111111111'::bytea THEN
			RAISE EXCEPTION 'read % after % reads', v, n;
		END IF;
		n := n + 1;
	END LOOP;
	RAISE NOTICE 'reads %', n;
END $$;
};
my $log_offset = -s $race->logfile;
my ($wout, $werr, $rout, $rerr) = ('', '', '', '');
my @psql = ('psql', '-XAtq', '-v', 'ON_ERROR_STOP=1', '-d', $race->connstr('postgres'), '-c');
my $w = IPC::Run::start([ @psql, $writer ], '>', \$wout, '2>', \$werr, IPC::Run::timeout(120));
my $r = IPC::Run::start([ @psql, $reader ], '>', \$rout, '2>', \$rerr, IPC::Run::timeout(120));
$w->finish;
$r->finish;
is($w->result(0), 0, 'the writer cycled the one set for 5 s') or diag($werr);
is($r->result(0), 0, "the reader read the key's own value every time") or diag($rerr);
like($rerr, qr/reads [1-9]/, 'the reader read');
is(join("\n", log_crashes($race, $log_offset)), '', 'no process of the server crashed');
$race->stop;
done_testing();
