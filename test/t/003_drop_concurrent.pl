# States dropped and re-created in one session while other sessions write
# and read them: no session crashes, the server keeps answering, a
# re-created state starts empty, and dropped states give their memory back.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $node = new_state_node('drop_concurrent',
	conf => "state_backend.memory_limit = '16MB'\n");
my $wpid = wait_for_worker($node);
ok(defined $wpid, 'state worker running');
my $log_offset = -s $node->logfile;

my $create_all = q{
SELECT state.create_state('dl', 'list', 'bigint', 'bigint');
SELECT state.create_state('dv', 'value', 'bigint', 'text');
SELECT state.create_state('dm', 'map', 'bigint', 'text', map_key_type => 'bigint');
SELECT state.create_state('dr', 'reducing', 'bigint', 'bigint', reducer => 'sum');
SELECT state.create_state('dk', 'list', 'bigint', 'bigint');
};
$node->safe_psql('postgres', $create_all);

############################################################ stale descriptors, step by step

# Session a uses a state; session b drops it and creates another state of
# the same name with another kind and types; session a must see the new
# one (or an error), never the old one's data or a crash.
my $sa = $node->background_psql('postgres', on_error_stop => 0);
my $sb = $node->background_psql('postgres', on_error_stop => 0);
$sa->query_safe(q{SELECT state.create_state('x', 'list', 'bigint', 'bigint')});
$sa->query_safe(q{SELECT state.list_add('x', 1::bigint, 42::bigint)});
is($sa->query_safe(q{SELECT state.list_length('x', 1::bigint)}), '1', 'a: list x has one element');

$sb->query_safe(q{SELECT state.drop_state('x')});
my ($code, $stderr) = bg_error($sa, q{SELECT state.list_length('x', 1::bigint)});
is($code, '42704', 'a: a state dropped by another session does not exist any more (42704)')
  or diag $stderr;
$sb->query_safe(q{SELECT state.create_state('x', 'value', 'bigint', 'text')});
($code, $stderr) = bg_error($sa, q{SELECT state.list_length('x', 1::bigint)});
is($code, '42809', 'a: the re-created state of another kind refuses a list operation (42809)')
  or diag $stderr;
($code, $stderr) = bg_error($sa, q{SELECT state.list_add('x', 1::bigint, 42::bigint)});
like($code, qr/^(42809|42804)$/,
	'a: list_add with the old kind and value type is refused (42809 or 42804)')
  or diag $stderr;
is($sa->query_safe(q{SELECT state.value_get('x', 1::bigint, 'none'::text)}),
	'none', 'a: the re-created state is empty');
$sa->query_safe(q{SELECT state.value_set('x', 1::bigint, 'from a'::text)});
is($sb->query_safe(q{SELECT state.value_get('x', 1::bigint, ''::text)}),
	'from a', 'b: reads what a wrote into the re-created state');
is($sb->query_safe(q{SELECT entries FROM state.states WHERE name = 'x'}),
	'1', 'state.states counts only the new entry');
$sb->query_safe(q{SELECT state.drop_state('x')});
$sb->query_safe(q{SELECT state.create_state('x', 'list', 'bigint', 'bigint')});
is($sa->query_safe(q{SELECT state.list_length('x', 1::bigint)}), '0',
	'a: a list re-created with the same kind and types starts empty');
is($sa->query_safe(q{SELECT entries FROM state.states WHERE name = 'x'}),
	'0', 'state.states shows 0 entries for it');
$sb->query_safe(q{SELECT state.drop_state('x')});
$sa->quit;
$sb->quit;

############################################################ drop/create under load

# Writers: every operation on the states, catching only "does not exist"
# (the state is between drop and create) and, for the state whose kind
# changes, "wrong kind"/"wrong type".  Any other error aborts the client
# and fails the test.
my $writer = q{
DO $$
DECLARE
  k bigint := (random() * 20)::bigint;
  n bigint;
BEGIN
  -- Now and then replace a list with 100000 elements: encoding them takes
  -- long enough for drops to land between resolving the state and writing
  -- it.  A write that slipped past a drop would leak ~1 MB each time and
  -- soon exhaust the 16 MB limit (54000 is not caught here).
  -- Keys 100..102 are only ever replaced: at most ~4 MB live.
  IF k < 3 AND random() < 0.15 THEN
    BEGIN
      PERFORM state.list_update('dl', 100 + k, (SELECT array_agg(g) FROM generate_series(1::bigint, 100000) g));
    EXCEPTION WHEN undefined_object THEN NULL;
    END;
  END IF;
  BEGIN
    PERFORM state.list_add('dl', k, k);
    PERFORM state.list_add_all('dl', k, ARRAY[k, k + 1, k + 2]);
    SELECT count(*) INTO n FROM unnest(state.list_get('dl', k, NULL::bigint[]));
    PERFORM state.list_length('dl', k);
  EXCEPTION WHEN undefined_object THEN NULL;
  END;
  BEGIN
    PERFORM state.value_set('dv', k, repeat('x', (k * 50)::int));
    PERFORM state.value_get('dv', k, ''::text);
    PERFORM state.clear('dv', k + 1);
  EXCEPTION WHEN undefined_object THEN NULL;
  END;
  BEGIN
    PERFORM state.map_put('dm', k, k * 2, 'v' || k);
    PERFORM state.map_get('dm', k, k * 2, ''::text);
    PERFORM count(*) FROM state.map_entries('dm', k, 0::bigint, ''::text);
    PERFORM state.map_remove('dm', k, k * 2 + 1);
  EXCEPTION WHEN undefined_object THEN NULL;
  END;
  BEGIN
    PERFORM state.reduce('dr', k, 1::bigint);
    PERFORM state.value_get('dr', k, 0::bigint);
  EXCEPTION WHEN undefined_object THEN NULL;
  END;
  BEGIN
    PERFORM count(*) FROM state.keys('dl', 0::bigint);
  EXCEPTION WHEN undefined_object THEN NULL;
  END;
  BEGIN
    PERFORM count(*) FROM state.keys('dv', 0::bigint);
  EXCEPTION WHEN undefined_object THEN NULL;
  END;
  BEGIN
    IF random() < 0.5 THEN
      PERFORM state.list_add('dk', k, k);
      PERFORM state.list_get('dk', k, NULL::bigint[]);
    ELSE
      PERFORM state.value_set('dk', k, 'x' || k);
      PERFORM state.value_get('dk', k, ''::text);
    END IF;
  EXCEPTION WHEN undefined_object OR wrong_object_type OR datatype_mismatch THEN NULL;
  END;
  PERFORM count(*) FROM state.states;
END $$;
};

# The dropper: drop_state without if_exists, so a state vanishing or
# coming back on its own fails it.  'dk' comes back with another kind and
# other types half of the time.
my $dropper = q{
SELECT state.drop_state('dl');
SELECT state.create_state('dl', 'list', 'bigint', 'bigint');
SELECT state.drop_state('dv');
SELECT state.create_state('dv', 'value', 'bigint', 'text');
SELECT state.drop_state('dm');
SELECT state.create_state('dm', 'map', 'bigint', 'text', map_key_type => 'bigint');
SELECT state.drop_state('dr');
SELECT state.create_state('dr', 'reducing', 'bigint', 'bigint', reducer => 'sum');
SELECT state.drop_state('dk');
\set kind random(0, 1)
\if :kind
SELECT state.create_state('dk', 'list', 'bigint', 'bigint');
\else
SELECT state.create_state('dk', 'value', 'bigint', 'text');
\endif
SELECT count(*) FROM state.states;
};

# Counts of transactions, not times: a slow machine runs them all too.
my $writers = start_pgbench($node, '-n -c 4 -j 2 -t 500', { 'writer.sql' => $writer },
	timeout => 120);
# Let the writers fill the states a little before the first drop.
sleep 1;
my $d = run_pgbench($node, '-n -c 1 -t 40', { 'dropper.sql' => $dropper }, timeout => 120);
my $w = finish_pgbench($writers);

is($d->{ret}, 0, 'dropper: pgbench exits 0 (no unexpected error)')
  or diag "stdout:\n$d->{stdout}\nstderr:\n$d->{stderr}";
is($d->{processed}, 40, 'dropper: 40 drop/create rounds ran');
is($w->{ret}, 0, 'writers: pgbench exits 0 (no unexpected error)')
  or diag "stdout:\n$w->{stdout}\nstderr:\n$w->{stderr}";
is($w->{processed}, 2000, 'writers: 2000 transactions ran');
note "dropper rounds: $d->{processed}, writer transactions: $w->{processed}";

is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server keeps answering');
is(worker_pid($node), $wpid, 'the worker kept running');
is_deeply([ log_crashes($node, $log_offset) ], [], 'no process crashed');

# The bookkeeping of every state matches its keys: a write that slipped
# past a drop would be counted in the slot's next incarnation (or leak).
is( $node->safe_psql(
		'postgres',
		q{SELECT string_agg(s.name || ':' || (s.entries = (SELECT count(*) FROM state.keys(s.name, 0::bigint))), ',' ORDER BY s.name)
		  FROM state.states s}),
	'dk:true,dl:true,dm:true,dr:true,dv:true',
	'state.states: entries equal the number of keys for every state');

# The last incarnation of 'dk' holds data of its own kind and types only:
# every key reads back with the matching getter.
my $dk_kind = $node->safe_psql('postgres', q{SELECT kind FROM state.states WHERE name = 'dk'});
my $dk_read = $dk_kind eq 'list'
  ? q{SELECT count(*) FILTER (WHERE (SELECT bool_and(e = k) FROM unnest(state.list_get('dk', k, NULL::bigint[])) e))
	 || '/' || count(*) FROM state.keys('dk', 0::bigint) k}
  : q{SELECT count(*) FILTER (WHERE state.value_get('dk', k, ''::text) = 'x' || k)
	 || '/' || count(*) FROM state.keys('dk', 0::bigint) k};
my $dk = $node->safe_psql('postgres', $dk_read);
like($dk, qr{^(\d+)/\1$}, "the final '$dk_kind' state 'dk' holds only its own kind of data ($dk)");

# Every key of the value state holds what some writer wrote for that key.
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM state.keys('dv', 0::bigint) k
		  WHERE state.value_get('dv', k, ''::text) <> repeat('x', (k * 50)::int)}),
	'0',
	"every key of 'dv' holds its writer's value");

# Re-created now that nobody writes: every state is empty.
$node->safe_psql('postgres',
	"SELECT state.drop_state(n) FROM unnest(ARRAY['dl','dv','dm','dr','dk']) n;\n"
	  . $create_all);
is( $node->safe_psql(
		'postgres',
		q{SELECT string_agg(name || ':' || entries, ',' ORDER BY name) FROM state.states}),
	'dk:0,dl:0,dm:0,dr:0,dv:0',
	'state.states: every re-created state has 0 entries');
is( $node->safe_psql(
		'postgres',
		q{SELECT (SELECT count(*) FROM state.keys('dl', 0::bigint))
		      + (SELECT count(*) FROM state.keys('dv', 0::bigint))
		      + (SELECT count(*) FROM state.keys('dm', 0::bigint))
		      + (SELECT count(*) FROM state.keys('dr', 0::bigint))
		      + (SELECT count(*) FROM generate_series(0, 102) k WHERE state.list_length('dl', k) > 0)}),
	'0',
	'no key of an old incarnation shows in the re-created states');

############################################################ drop/create races between sessions

# Several sessions drop (if_exists) and create the same name at once.
# drop_state(..., if_exists => true) must never fail because another
# session dropped the state first; create_state may meet 42710 only.
my $racer = q{
SET client_min_messages = warning;
DO $$
BEGIN
  PERFORM state.drop_state('c', if_exists => true);
  BEGIN
    PERFORM state.create_state('c', 'value', 'integer', 'integer');
  EXCEPTION WHEN duplicate_object THEN NULL;
  END;
  BEGIN
    PERFORM state.value_set('c', 1, 1);
  EXCEPTION WHEN undefined_object THEN NULL;
  END;
END $$;
};
my $rc = run_pgbench($node, '-n -c 4 -j 2 -T 4', { 'racer.sql' => $racer }, timeout => 120);
is($rc->{ret}, 0, 'concurrent drop_state(if_exists)/create_state of one name: no unexpected error')
  or diag "stderr:\n" . substr($rc->{stderr}, 0, 2000);
note "racer transactions: $rc->{processed}";
cmp_ok($node->safe_psql('postgres', q{SELECT count(*) FROM state.states WHERE name = 'c'}),
	'<=', 1, 'at most one state of that name exists');
$node->safe_psql('postgres', q{SELECT state.drop_state('c', if_exists => true)});

############################################################ dropped states free their memory

# 12 rounds of 4 MB in a 16 MB limit: only fits if drop_state (and
# truncate) give the memory back.
my $rounds = $node->psql(
	'postgres', q{
DO $$
BEGIN
  FOR r IN 1 .. 12 LOOP
    PERFORM state.create_state('big', 'value', 'integer', 'text');
    -- 100 kB of incompressible text per key
    PERFORM state.value_set('big', i,
      (SELECT string_agg(md5(r || ':' || i || ':' || g), '') FROM generate_series(1, 3125) g))
      FROM generate_series(1, 40) i;
    PERFORM state.drop_state('big');
  END LOOP;
END $$;
});
is($rounds, 0, 'drop_state frees memory: 12 x 4 MB written and dropped under a 16 MB limit');

$node->safe_psql('postgres', q{SELECT state.create_state('biglist', 'list', 'integer', 'bigint')});
my $lrounds = $node->psql(
	'postgres', q{
DO $$
BEGIN
  FOR r IN 1 .. 12 LOOP
    PERFORM state.list_add_all('biglist', i, (SELECT array_agg((random() * 9e18)::bigint) FROM generate_series(1, 50000) g))
      FROM generate_series(1, 10) i;
    PERFORM state.truncate('biglist');
  END LOOP;
END $$;
});
is($lrounds, 0, 'truncate frees memory: 12 x 4 MB of lists written and truncated under a 16 MB limit');

is($node->safe_psql('postgres', q{SELECT entries FROM state.states WHERE name = 'biglist'}),
	'0', 'the truncated list state has 0 entries');

is(worker_pid($node), $wpid, 'the worker is still the same process');
is_deeply([ log_crashes($node, $log_offset) ], [], 'still no process crashed');

$node->stop;
done_testing();
