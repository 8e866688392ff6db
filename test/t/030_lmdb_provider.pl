# A backend from another library: contrib/lmdb's "lmdb", registered through
# the provider API by state_backend_lmdb in shared_preload_libraries.
#
# - Every kind of state in lmdb, with TTL, logged, and keys too long for an
#   LMDB key; more data than state_backend.memory_limit.
# - A clean restart brings them back from the final checkpoint; a crash
#   restart brings back what logged states acknowledged.
# - Snapshots (native and canonical) restore into memory and rocksdb, and
#   back into lmdb, with the same contents.
# - A full LMDB map gives 54000 and keeps everything stored before.
# - Without the library: LOAD refuses, a snapshot of lmdb states is refused
#   (0A000) unless restored into another backend, and a server whose newest
#   checkpoint holds lmdb states serves nothing and takes no checkpoint,
#   until the library is loaded again: nothing stored is lost.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $tmp = PostgreSQL::Test::Utils::tempdir();
my $chkroot = "$tmp/checkpoints";
my $with_lmdb = "shared_preload_libraries = 'state_backend,state_backend_lmdb'\n";

my $node = new_state_node(
	'lmdb',
	conf => $with_lmdb
	  . "state_backend.checkpoint_dir = '$chkroot'\n"
	  . "state_backend.checkpoint_interval = 0\n"
	  . "state_backend.memory_limit = '8MB'\n"
	  . "restart_after_crash = on\n",
	init => { allows_streaming => 1 });
ok(defined wait_for_worker($node), 'state worker running with the lmdb provider');

# fp(): every state of the database, its backend, entries and a digest.
$node->safe_psql('postgres', q{
CREATE FUNCTION fp(with_backend boolean DEFAULT true) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
  r record;
  c text;
  res text := '';
BEGIN
  FOR r IN SELECT name, kind, backend, entries FROM state.states ORDER BY name LOOP
    IF r.kind IN ('value', 'reducing') THEN
      SELECT md5(coalesce(string_agg(k || '=' || state.value_get(r.name, k, ''::text), ',' ORDER BY k), ''))
        INTO c FROM state.keys(r.name, ''::text) k;
    ELSIF r.kind = 'list' THEN
      SELECT md5(coalesce(string_agg(k || '=' || array_to_string(state.list_get(r.name, k, '{}'::text[]), '/'), ',' ORDER BY k), ''))
        INTO c FROM state.keys(r.name, ''::text) k;
    ELSE
      SELECT md5(coalesce(string_agg(k || '=' || (SELECT string_agg(e.map_key || ':' || coalesce(e.value, 'NULL'), '/' ORDER BY e.map_key)
                                                   FROM state.map_entries(r.name, k, ''::text, ''::text) e), ',' ORDER BY k), ''))
        INTO c FROM state.keys(r.name, ''::text) k;
    END IF;
    res := res || r.name || ':' || r.kind || ':' || CASE WHEN with_backend THEN r.backend ELSE '' END
           || ':' || r.entries || ':' || c || ' ';
  END LOOP;
  RETURN res;
END $$;
});

$node->safe_psql('postgres', q{
SELECT state.create_state('lv', 'value', 'text', 'text', backend => 'lmdb');
SELECT state.create_state('ll', 'list', 'text', 'text', backend => 'lmdb');
SELECT state.create_state('lm', 'map', 'text', 'text', map_key_type => 'text', backend => 'lmdb');
SELECT state.create_state('lr', 'reducing', 'text', 'bigint', reducer => 'sum', backend => 'lmdb');
SELECT state.create_state('lt', 'value', 'text', 'text', backend => 'lmdb', ttl => '1 hour');
SELECT state.create_state('lg', 'value', 'text', 'text', backend => 'lmdb', logged => true);
SELECT count(state.value_set('lv', 'k' || i, repeat('v', 1000) || i)) FROM generate_series(1, 20000) i;
SELECT count(state.value_set('lv', repeat('long', 300) || i, 'long key ' || i)) FROM generate_series(1, 50) i;
SELECT count(state.list_add('ll', 'k' || (i % 100), 'e' || i)) FROM generate_series(1, 2000) i;
SELECT count(state.map_put('lm', 'k' || (i % 50), 'm' || i, CASE WHEN i % 7 = 0 THEN NULL ELSE 'x' || i END)) FROM generate_series(1, 1000) i;
SELECT count(state.reduce('lr', 'k' || (i % 10), i::bigint)) FROM generate_series(1, 5000) i;
SELECT count(state.value_set('lt', 'k' || i, 't' || i)) FROM generate_series(1, 100) i;
SELECT count(state.value_set('lg', 'k' || i, 'g' || i)) FROM generate_series(1, 100) i;
SELECT state.map_remove('lm', 'k1', 'm1'), state.clear('lv', 'k20000');
});
is($node->safe_psql('postgres',
		"SELECT string_agg(name || '=' || entries, ',' ORDER BY name) FROM state.states"),
	'lg=100,ll=100,lm=50,lr=10,lt=100,lv=20049',
	'every kind in lmdb, long keys included');
is($node->safe_psql('postgres',
		"SELECT state.value_get('lr', 'k3', 0::bigint), state.value_get('lv', repeat('long', 300) || 7, ''::text),"
		  . " state.map_get('lm', 'k1', 'm51', ''::text), state.map_contains('lm', 'k1', 'm1'),"
		  . " state.list_length('ll', 'k5')"),
	'1249000|long key 7|x51|f|20', 'reads of every kind');
ok($node->safe_psql('postgres', "SELECT bytes > 8 * 1024 * 1024 FROM state.states WHERE name = 'lv'") eq 't',
	'more data than state_backend.memory_limit');

my $before = $node->safe_psql('postgres', 'SELECT fp()');

# ---------------------------------------------------------------- restarts
$node->restart;
wait_for_worker($node);
is($node->safe_psql('postgres', 'SELECT fp()'), $before, 'a clean restart keeps every lmdb state');

# A crash after a checkpoint: logged states keep what they acknowledged.
my $id = $node->safe_psql('postgres', 'SELECT state.snapshot()');
like(wait_snapshot_status($node, $id), qr/completed/, 'a checkpoint of lmdb states');
$node->safe_psql('postgres', q{SELECT count(state.value_set('lg', 'after' || i, 'a')) FROM generate_series(1, 10) i});
my $offset = -s $node->logfile;
kill 'KILL', worker_pid($node);
ok(defined wait_for_crash_restart($node, $offset), 'crash restart');
is($node->safe_psql('postgres', "SELECT entries FROM state.states WHERE name = 'lg'"),
	'110', 'a logged lmdb state keeps its writes across a crash');
$node->safe_psql('postgres', q{SELECT count(state.clear('lg', 'after' || i)) FROM generate_series(1, 10) i});
is($node->safe_psql('postgres', 'SELECT fp()'), $before, 'and the rest is the checkpoint');

# ---------------------------------------------------------------- snapshots
my $nat = "$tmp/nat";
my $can = "$tmp/can";
$id = $node->safe_psql('postgres', "SELECT state.snapshot('$nat')");
like(wait_snapshot_status($node, $id), qr/completed/, 'native snapshot');
$id = $node->safe_psql('postgres', "SELECT state.snapshot('$can', format => 'canonical')");
like(wait_snapshot_status($node, $id), qr/completed/, 'canonical snapshot');
my $plain = $node->safe_psql('postgres', 'SELECT fp(false)');
my $r = sql_error($node, "SELECT state.restore('$nat', backend => 'memory')");
is($r->{sqlstate}, '54000', 'lmdb states larger than memory_limit do not fit in memory');
is($node->safe_psql('postgres', 'SELECT fp()'), $before, 'and the failed restore changed nothing');
$node->safe_psql('postgres', "ALTER SYSTEM SET state_backend.memory_limit = '256MB'");
$node->reload;
$node->poll_query_until('postgres', "SELECT current_setting('state_backend.memory_limit') = '256MB'")
  or die 'memory_limit not reloaded';
for my $case (["$nat", 'memory'], ["$can", 'rocksdb'], ["$nat", 'lmdb'], ["$can", 'lmdb'])
{
	my ($path, $into) = @$case;
	$node->safe_psql('postgres', "SELECT state.restore('$path', backend => '$into')");
	is($node->safe_psql('postgres', 'SELECT fp(false)'), $plain, "restore into $into from $path");
	is($node->safe_psql('postgres', "SELECT string_agg(DISTINCT backend, ',') FROM state.states"),
		$into, "every state in $into");
}
is($node->safe_psql('postgres', 'SELECT fp()'), $before, 'back in lmdb');

# ---------------------------------------------------------------- a full map
my $full = new_state_node('lmdb_full',
	conf => $with_lmdb . "state_backend_lmdb.map_size = '16MB'\n");
$full->safe_psql('postgres',
	"SELECT state.create_state('f', 'value', 'int', 'text', backend => 'lmdb')");
$r = sql_error($full, q{
DO $$
BEGIN
  FOR i IN 1..100000 LOOP
    PERFORM state.value_set('f', i, repeat('x', 1000));
  END LOOP;
END $$;
});
is($r->{sqlstate}, '54000', 'a full map: 54000');
like($r->{message}, qr/LMDB environment of lmdb states is full/, 'it says so');
my $n = $full->safe_psql('postgres', "SELECT entries FROM state.states WHERE name = 'f'");
ok($n > 1000, "$n values stored before it filled");
is($full->safe_psql('postgres',
		"SELECT count(*) FROM state.keys('f', 0) k WHERE state.value_get('f', k, ''::text) = repeat('x', 1000)"),
	$n, 'every value stored before is intact');
$r = sql_error($full, "SELECT state.value_set('f', 1, 'smaller')");
is($r->{sqlstate}, '', 'a write that fits in place still succeeds');
$full->stop;

# ---------------------------------------------------------------- without the library
$node->stop;
$node->append_conf('postgresql.conf', "shared_preload_libraries = 'state_backend'\n");
$offset = -s $node->logfile;
$node->start;
$node->wait_for_log(qr/serves no state: the newest checkpoint holds states of backend "lmdb"/,
	$offset);
pass('a checkpoint with lmdb states is not loaded without the library');
$r = sql_error($node, "LOAD 'state_backend_lmdb'");
like($r->{message}, qr/must be loaded by shared_preload_libraries/, 'LOAD of the provider refuses');
$r = sql_error($node, "SELECT state.create_state('x', 'value', backend => 'lmdb')");
ok($r->{sqlstate} ne '', 'no state is served meanwhile');
my $chk_before = join(',', sort keys %{ checkpoint_dirs($chkroot) });
$node->stop;
is(join(',', sort keys %{ checkpoint_dirs($chkroot) }), $chk_before, 'and no checkpoint replaced the one that holds them');

# A server without the library restores lmdb states only into another backend.
my $other = new_state_node('no_lmdb');
$r = sql_error($other, "SELECT state.restore('$nat')");
is($r->{sqlstate}, '0A000', 'a snapshot of lmdb states on a server without lmdb: 0A000');
like($r->{message}, qr/backend "lmdb", which is not registered on this server/, 'it names the backend');
$r = sql_error($other, "SELECT state.restore('$can', backend => 'memory')");
is($r->{sqlstate}, '', 'restored into memory instead');
is($other->safe_psql('postgres', "SELECT string_agg(name || '=' || entries, ',' ORDER BY name) FROM state.states"),
	'lg=100,ll=100,lm=50,lr=10,lt=100,lv=20049', 'with every entry');
$other->stop;

$node->append_conf('postgresql.conf', $with_lmdb);
$node->start;
wait_for_worker($node);
$node->poll_query_until('postgres', "SELECT count(*) > 0 FROM state.states")
  or die 'no states';
is($node->safe_psql('postgres', 'SELECT fp()'), $before, 'with the library again, every lmdb state is back');
$node->stop;

done_testing();
