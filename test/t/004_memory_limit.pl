# state_backend.memory_limit bounds heap states: past it a write fails
# with 54000 naming the setting, nothing stored before is lost, and memory
# freed by truncate/clear can be written again.  Server and worker live on.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $LIMIT = 8 * 1024 * 1024;
my $node = new_state_node('memory_limit',
	conf => "state_backend.memory_limit = '8MB'\n");
my $wpid = wait_for_worker($node);
ok(defined $wpid, 'state worker running');
my $log_offset = -s $node->logfile;

is($node->safe_psql('postgres', 'SHOW state_backend.memory_limit'),
	'8MB', 'memory_limit is 8MB');

# val(i): 1 kB of incompressible text, a function of i.
$node->safe_psql(
	'postgres', q{
CREATE FUNCTION val(i bigint, kb int DEFAULT 1) RETURNS text LANGUAGE sql IMMUTABLE
  AS $$ SELECT string_agg(md5(i || ':' || g), '') FROM generate_series(1, 32 * kb) g $$;
CREATE TABLE fill(phase text, n bigint, sqlstate text, msg text, detail text, hint text);
SELECT state.create_state('m', 'value', 'bigint', 'text');
SELECT state.create_state('ml', 'list', 'integer', 'text');
SELECT state.create_state('mr', 'reducing', 'integer', 'bigint', reducer => 'sum');
SELECT state.list_add('ml', 1, val(g)) FROM generate_series(1, 100) g;
SELECT state.reduce('mr', 1, 5::bigint);
});

sub limit_error_ok
{
	my ($sqlstate, $text, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	is($sqlstate, '54000', "$name: SQLSTATE 54000 (program_limit_exceeded)");
	like($text, qr/out of state memory/, "$name: message 'out of state memory'");
	like($text, qr/state_backend\.memory_limit/, "$name: names state_backend.memory_limit");
	like($text, qr/8\s*MB|8192\s*kB|8388608/, "$name: gives its value");
}

############################################################ one value larger than the limit

my $err = sql_error($node,
	q{SELECT state.value_set('m', 0::bigint, val(0, 10 * 1024));});
limit_error_ok($err->{sqlstate}, $err->{stderr}, 'a 10 MB value');
is($node->safe_psql('postgres', q{SELECT state.value_get('m', 0::bigint, 'absent'::text)}),
	'absent', 'the refused value was not stored');

############################################################ fill up with 1 kB values

# The loop stops at the first error; any error but 54000 fails the test.
sub fill
{
	my ($phase, $from) = @_;
	$node->safe_psql(
		'postgres', qq{
DO \$\$
DECLARE i bigint := $from - 1; st text; m text; d text; h text;
BEGIN
  LOOP
    i := i + 1;
    IF i > $from + 100000 THEN
      RAISE EXCEPTION 'memory limit not reached after % values of 1 kB', i - $from;
    END IF;
    PERFORM state.value_set('m', i, val(i));
  END LOOP;
EXCEPTION WHEN program_limit_exceeded THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, m = MESSAGE_TEXT,
                          d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
  INSERT INTO fill VALUES ('$phase', i, st, m, d, h);
END \$\$;
});
	my ($n, $st, $text) = split /\|/,
	  $node->safe_psql('postgres',
		"SELECT n, sqlstate, concat_ws(' ', msg, detail, hint) FROM fill WHERE phase = '$phase'"),
	  3;
	return ($n, $st, $text);
}

my ($n, $st, $text) = fill('first', 1);
my $stored = $n - 1;
note "first fill: $stored values of 1 kB stored, then: $text";
limit_error_ok($st, $text, 'filling with 1 kB values');
cmp_ok($stored * 1024, '<=', $LIMIT, 'the payload stored does not exceed the limit');
cmp_ok($stored * 1024, '>=', $LIMIT * 0.4,
	'at least 40% of the limit holds payload (the limit is really what is available)');

sub check_values
{
	my ($from, $to, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $cnt = $to - $from + 1;
	is( $node->safe_psql(
			'postgres',
			qq{SELECT count(*) FILTER (WHERE state.value_get('m', i, ''::text) = val(i))
			   FROM generate_series($from, $to) i}),
		$cnt,
		$name);
}

check_values(1, $stored, "every one of the $stored values stored before the error reads back");
is($node->safe_psql('postgres', qq{SELECT state.value_get('m', ${n}::bigint, NULL::text) IS NULL}),
	't', 'the value whose write failed is absent (nothing half-written)');
is($node->safe_psql('postgres', q{SELECT entries FROM state.states WHERE name = 'm'}),
	$stored, 'state.states counts exactly the stored entries');

# Replacing a stored value with a larger one fails and keeps the old one.
$err = sql_error($node, q{SELECT state.value_set('m', 1::bigint, val(1, 100));});
is($err->{sqlstate}, '54000', 'replacing a value with a 100 kB one fails with 54000')
  or diag $err->{stderr};
is($node->safe_psql('postgres', q{SELECT state.value_get('m', 1::bigint, ''::text) = val(1)}),
	't', 'the old value of that key is kept');

# Appending to a list until the limit: fails with 54000, the list stays whole.
$node->safe_psql(
	'postgres', q{
DO $$
DECLARE j int := 0; st text; m text; d text; h text;
BEGIN
  LOOP
    j := j + 1;
    IF j > 100000 THEN RAISE EXCEPTION 'memory limit not reached by list_add'; END IF;
    PERFORM state.list_add('ml', 1, val(100 + j));
  END LOOP;
EXCEPTION WHEN program_limit_exceeded THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, m = MESSAGE_TEXT,
                          d = PG_EXCEPTION_DETAIL, h = PG_EXCEPTION_HINT;
  INSERT INTO fill VALUES ('list', 100 + j, st, m, d, h);
END $$;
});
my ($ln, $lst, $ltext) = split /\|/,
  $node->safe_psql('postgres',
	"SELECT n, sqlstate, concat_ws(' ', msg, detail, hint) FROM fill WHERE phase = 'list'"), 3;
limit_error_ok($lst, $ltext, 'list_add past the limit');
my $llen = $ln - 1;
is($node->safe_psql('postgres', q{SELECT state.list_length('ml', 1)}),
	$llen, "the list keeps every element appended before the error ($llen)");
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FILTER (WHERE e = val(o)) || '/' || count(*)
		  FROM unnest(state.list_get('ml', 1, NULL::text[])) WITH ORDINALITY AS u(e, o)}),
	"$llen/$llen",
	'every list element reads back in order');

# Reads still work while the memory is full.
is($node->safe_psql('postgres', q{SELECT state.value_get('mr', 1, 0::bigint)}),
	'5', 'a reducing state reads while memory is full');
is($node->safe_psql('postgres', q{SELECT count(*) FROM state.keys('m', 0::bigint)}),
	$stored, 'state.keys lists every stored key while memory is full');
check_values(1, $stored, 'the values are all still there after the failed writes');

############################################################ truncate frees, writes succeed again

is($node->safe_psql('postgres', q{SELECT state.truncate('m')}),
	$stored, "truncate removes the $stored keys");
is($node->safe_psql('postgres', q{SELECT entries FROM state.states WHERE name = 'm'}),
	'0', 'the truncated state has 0 entries');

my ($n2, $st2, $text2) = fill('second', 1);
my $stored2 = $n2 - 1;
note "second fill: $stored2 values";
is($st2, '54000', 'the refill stops at the limit again');
cmp_ok($stored2, '>=', int($stored * 0.9),
	"after truncate, writes succeed again (refilled $stored2 of $stored values)");
check_values(1, $stored2, 'the refilled values read back');

############################################################ clear frees, writes succeed again

is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FILTER (WHERE state.clear('m', i)) FROM generate_series(1, 200) i}),
	'200',
	'clear removes 200 keys (true for each)');
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FROM generate_series(1, 200) i WHERE state.value_get('m', i, NULL::text) IS NOT NULL}),
	'0',
	'the cleared keys are gone');
my $ret = $node->psql('postgres',
	q{SELECT state.value_set('m', i, val(i)) FROM generate_series(1, 200) i});
is($ret, 0, 'the 200 cleared keys can be written again after clear');
check_values(1, $stored2, 'all values read back after clear and rewrite');

# The list: clear it and appends succeed again.  Memory is full here (the
# refill above stopped at the limit), so every append below lives in
# memory the clear gave back.  A list grows by doubling its chunk, so
# rebuilding it needs transient room: require a third of what was freed.
is($node->safe_psql('postgres', q{SELECT state.clear('ml', 1)}), 't', 'clear the full list');
$node->safe_psql(
	'postgres', q{
DO $$
DECLARE j int := 0;
BEGIN
  LOOP
    j := j + 1;
    IF j > 100000 THEN RAISE EXCEPTION 'memory limit not reached by list_add'; END IF;
    PERFORM state.list_add('ml', 1, val(j));
  END LOOP;
EXCEPTION WHEN program_limit_exceeded THEN
  INSERT INTO fill VALUES ('list after clear', j);
END $$;
});
my $relist = $node->safe_psql('postgres', q{SELECT n - 1 FROM fill WHERE phase = 'list after clear'});
note "appended $relist elements after clear (the list held $llen before)";
cmp_ok($relist, '>=', int($llen / 3),
	"appending to the cleared list succeeds again ($relist elements, $llen freed)");
is( $node->safe_psql(
		'postgres',
		q{SELECT count(*) FILTER (WHERE e = val(o)) || '/' || state.list_length('ml', 1)
		  FROM unnest(state.list_get('ml', 1, NULL::text[])) WITH ORDINALITY AS u(e, o)}),
	"$relist/$relist",
	'the list holds exactly the new elements, in order');

############################################################ raising the limit at reload

# The error's hint tells users to raise the limit and reload: that must
# let writes go on without a restart.
$node->safe_psql('postgres', q{ALTER SYSTEM SET state_backend.memory_limit = '16MB'});
$node->safe_psql('postgres', 'SELECT pg_reload_conf()');
ok( $node->poll_query_until(
		'postgres',
		q{SELECT count(*) FROM (SELECT state.value_set('m', 1000000::bigint, val(1000000))) s},
		'1'),
	'after raising memory_limit and reloading, a write that failed succeeds');
my ($n3, $st3, $text3) = fill('raised', 1000001);
my $stored3 = $n3 - 1000001;
note "after raising the limit to 16MB: $stored3 more values, then: $text3";
is($st3, '54000', 'the raised limit is enforced too');
like($text3, qr/16\s*MB|16384\s*kB|16777216/, 'the error names the new value');
cmp_ok($stored3 * 1024, '>=', $LIMIT * 0.4,
	'the 8 MB added by the reload hold payload');
cmp_ok($stored3 * 1024, '<=', $LIMIT, 'but not more than 8 MB of it');
check_values(1, $stored2, 'the values stored under the old limit are intact');

############################################################ the server

is($node->safe_psql('postgres', 'SELECT 1'), '1', 'the server keeps answering');
is(worker_pid($node), $wpid, 'the worker kept running (same process)');
is_deeply([ log_crashes($node, $log_offset) ], [], 'no process crashed');

$node->stop;
done_testing();
