# Scaling out through PL/Proxy: a proxy database routes every state call to
# the server that holds its key (state.create_proxy).
#
# Three state servers hold parts 0, 1 and 2 of 3; a fourth server holds the
# proxy database.  100,000 keys written and read through the proxy equal
# the same calls made on one server; keys and entries through the proxy
# list every key once, each on the server that part_for names.  Then the
# cluster is rescaled live, 3 -> 2 -> 3 (state.rescale_proxy), while
# clients keep calling through the proxy with untyped bind parameters: no
# acknowledged write is lost, none is refused or sent to the wrong server,
# and a server asked for a key it does not hold refuses it (22023).
#
# The gate of the proxy's internal functions is not for PUBLIC and is held
# only while a call runs: sessions that called the proxy, read its views or
# tried the gate in transactions still open hold nothing a rescale waits
# for.  A rescale pauses the timers of every part from before its snapshots
# to after its restores: timers firing all through one (widened by a fault
# point's sleep) each fire once, and every state write of their handler is
# kept with its table row.  A rescale failing at a step (a fault point) keeps
# the old parts and resumes their timers.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use IO::Handle;
use POSIX ();
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

if (!-e '/usr/lib/postgresql/15/lib/plproxy.so')
{
	plan skip_all => 'PL/Proxy (postgresql-15-plproxy) is not installed';
}

my $dir = PostgreSQL::Test::Utils::tempdir();
my $nkeys = 100_000;
my $key = "state_backend.signing_key_file = '$dir/deployment.key'\n";
my @servers = map { new_state_node("server$_", conf => $key) } 0 .. 2;
my $proxy = new_state_node('proxy', conf => $key);
ok(defined wait_for_worker($_), $_->name . ': state worker running') for @servers, $proxy;

sub connstr
{
	my ($node) = @_;
	return 'host=' . $node->host . ' port=' . $node->port . ' dbname=postgres';
}

sub parts_array
{
	return 'ARRAY[' . join(', ', map { "'" . connstr($_) . "'" } @_) . ']';
}

my $states = q{
SELECT state.create_state('v', 'value', 'int', 'bigint');
SELECT state.create_state('r', 'reducing', 'int', 'bigint', reducer => 'sum', backend => 'rocksdb');
SELECT state.create_state('m', 'map', 'text', 'int', map_key_type => 'int');
SELECT state.create_state('l', 'list', 'int', 'text');
SELECT state.create_state('d', 'value', 'date', 'timestamptz');
};

# The parts: server 0's empty states, split three ways.
$servers[0]->safe_psql('postgres', $states);
$servers[0]->safe_psql('postgres',
	"SELECT state.wait_snapshot(state.snapshot('$dir/empty'))");
for my $i (0 .. 2)
{
	$servers[$i]->safe_psql('postgres',
		"SELECT state.restore('$dir/empty', parallelism => 3, part => $i)");
}

# The proxy, and the same states in the proxy database itself: the single
# server that the cluster must equal.
$proxy->safe_psql('postgres', 'CREATE EXTENSION plproxy');
$proxy->safe_psql('postgres', $states);
$proxy->safe_psql('postgres',
	"SELECT state.create_proxy('sc', " . parts_array(@servers) . ')');
is( $proxy->safe_psql('postgres',
		"SELECT cluster, schema, cardinality(parts) FROM state.proxies"),
	'sc|state_proxy|3',
	'create_proxy: a cluster of three parts, in schema state_proxy');

# The same writes on both sides: through the proxy, and on one server.
sub writes
{
	my ($schema) = @_;
	return qq{
SELECT count($schema.value_set('v', i, i * 7::bigint)) FROM generate_series(1, $nkeys) i;
SELECT count($schema.reduce('r', i % 5000, i::bigint)) FROM generate_series(1, 20000) i;
SELECT count($schema.map_put('m', 'u' || i % 1000, i % 7, i)) FROM generate_series(1, 5000) i;
SELECT count($schema.list_add('l', i % 2000, 'e' || i)) FROM generate_series(1, 6000) i;
};
}
$proxy->safe_psql('postgres', writes('state_proxy'));
$proxy->safe_psql('postgres', writes('state'));

sub contents
{
	my ($schema) = @_;
	return $proxy->safe_psql(
		'postgres', qq{
SELECT 'v', count(*), sum(value) FROM $schema.entries('v', NULL::int, NULL::bigint)
UNION ALL SELECT 'r', count(*), sum(value) FROM $schema.entries('r', NULL::int, NULL::bigint)
UNION ALL SELECT 'm', count(*), sum(v) FROM $schema.keys('m', NULL::text) k,
	LATERAL $schema.map_entries('m', k, NULL::int, NULL::int) AS e(mk, v)
UNION ALL SELECT 'l', count(*), sum($schema.list_length('l', k)) FROM $schema.keys('l', NULL::int) k
UNION ALL SELECT 'get', count(*), sum($schema.value_get('v', i, 0::bigint)) FROM generate_series(1, $nkeys) i
UNION ALL SELECT 'list', count(*), sum(length(array_to_string($schema.list_get('l', i, NULL::text[]), ','))) FROM generate_series(0, 1999) i
ORDER BY 1});
}
my $single = contents('state');
is(contents('state_proxy'), $single,
	'through the proxy: the same keys and values as one server');
is( $proxy->safe_psql('postgres',
		"SELECT count(*), count(DISTINCT k) FROM state_proxy.keys('v', NULL::int) k"),
	"$nkeys|$nkeys", 'keys through the proxy: every key once');

# Every server holds exactly the keys of its part.
sub placement
{
	my ($n, @nodes) = @_;
	my $bad = 0;
	my $total = 0;
	for my $i (0 .. $#nodes)
	{
		my ($count, $wrong) = split /\|/, $nodes[$i]->safe_psql('postgres',
			"SELECT count(*), count(*) FILTER (WHERE state.part_for('v', k, $n) <> $i)
			 FROM state.keys('v', NULL::int) k");
		$total += $count;
		$bad += $wrong;
	}
	return "$total|$bad";
}
is(placement(3, @servers), "$nkeys|0", 'each server holds the keys part_for gives it');

my $e;

# A state made through the proxy is made on every part, with its range;
# batch calls split their keys by part.
$proxy->safe_psql('postgres',
	"SELECT state_proxy.create_state('b', 'value', 'int', 'bigint')");
is( $proxy->safe_psql('postgres', qq{
SELECT state_proxy.value_set_many('b', ARRAY(SELECT generate_series(1, 10000)),
                                  ARRAY(SELECT generate_series(1, 10000)::bigint * 3))}),
	'10000', 'value_set_many: one write per key, on their parts');
is( $proxy->safe_psql('postgres', qq{
SELECT count(*), sum(value), count(*) FILTER (WHERE value = key * 3)
  FROM state_proxy.value_get_many('b', ARRAY(SELECT generate_series(1, 10001)), -1::bigint)}),
	'10001|150014999|10000', 'value_get_many: every key read from its part, the default for a missing one');
is( $proxy->safe_psql('postgres', qq{
SELECT state_proxy.reduce_many('r', ARRAY[1, 2, 1], ARRAY[10, 20, 30]::bigint[]),
       state_proxy.value_get('r', 1, 0::bigint) - state.value_get('r', 1, 0::bigint)}),
	'3|40', 'reduce_many: every value folded into its key');
$proxy->safe_psql('postgres', "SELECT state.reduce('r', 1, 40::bigint), state.reduce('r', 2, 20::bigint)");
my $misplaced = 0;
for my $i (0 .. 2)
{
	$misplaced += $servers[$i]->safe_psql('postgres',
		"SELECT count(*) FROM state.keys('b', NULL::int) k WHERE state.part_for('b', k, 3) <> $i");
	is( $servers[$i]->safe_psql('postgres',
			"SELECT key_groups = state.key_group_range(3, $i) FROM state.states WHERE name = 'b'"),
		't', "server$i: the state made through the proxy holds part $i");
}
is($misplaced, 0, 'the batch wrote every key on its part');
$e = sql_error($proxy, "SELECT state_proxy.value_set_many('b', ARRAY[1, 2], ARRAY[1::bigint])");
is($e->{sqlstate}, '22023', 'a batch of more keys than values: 22023');

# The views, merged over the parts.
is( $proxy->safe_psql('postgres',
		"SELECT entries, parts FROM state_proxy.states WHERE name = 'v'"),
	"$nkeys|3", 'state_proxy.states: the entries of every part');
cmp_ok(
	$proxy->safe_psql('postgres',
		"SELECT writes FROM state_proxy.stats WHERE name = 'v'"),
	'>=', $nkeys, 'state_proxy.stats: the writes of every part');

# Keys and values mean what they mean in the caller's session, whatever its
# DateStyle and TimeZone: the key is read as a date in the caller's order
# (day first here) and sent to the part as ISO, the instant keeps its zone.
my $owner = $proxy->safe_psql('postgres',
	"SELECT state.part_for('d', '2024-02-03'::date, 3)");
$proxy->safe_psql(
	'postgres', q{
SET DateStyle = 'SQL, DMY';
SET TimeZone = 'Asia/Tokyo';
SELECT state_proxy.value_set('d', '03/02/2024', '03/02/2024 10:00'::timestamptz);
});
is( $servers[$owner]->safe_psql('postgres',
		"SELECT state.value_get('d', '2024-02-03'::date, NULL::timestamptz) = '2024-02-03 01:00+00'"),
	't', 'a date key in DMY order and a time in Tokyo reach the right part as what they meant');
is( $proxy->safe_psql(
		'postgres', q{
SET DateStyle = 'SQL, DMY';
SET TimeZone = 'Asia/Tokyo';
SELECT state_proxy.value_get('d', '03/02/2024'::date, NULL::timestamptz) = '2024-02-03 10:00+09'}),
	't', 'and read back the same in that session');

# Errors: those of the proxy's own reading, and those a part raised.
$e = sql_error($proxy, "SELECT state_proxy.value_get('v', 'x', 0::bigint)");
is($e->{sqlstate}, '22P02', 'a key the proxy cannot read as the key type: invalid_text_representation');
$e = sql_error($proxy, "SELECT state_proxy.value_set('v', 1, 'not a number')");
is($e->{sqlstate}, '22P02', "a value the part cannot read: the part's invalid_text_representation");
$e = sql_error($proxy, "SELECT state_proxy.value_set('l', 1, 2::bigint)");
is($e->{sqlstate}, '42809', "a list state called as a value state: the part's wrong_object_type");
$e = sql_error($proxy, "SELECT state.create_proxy('x2', ARRAY['host=a password=b'], 'p2')");
is($e->{sqlstate}, '22023', 'a password in a connection string: refused (22023)');
$e = sql_error($proxy, "SELECT state_proxy.value_get('nope', 1, 0::bigint)");
is($e->{sqlstate}, '42704', 'a state that does not exist: undefined_object');
$e = sql_error($proxy, "SELECT state_proxy.value_get('v', NULL::int, 0::bigint)");
is($e->{sqlstate}, '22004', 'a NULL key: null_value_not_allowed');
$e = sql_error($proxy, "SELECT state.create_proxy('sc', ARRAY['host=x'])");
is($e->{sqlstate}, '42710', 'a second proxy of a cluster: duplicate_object');

# A read-only transaction of the proxy reads through it and changes nothing
# on the parts (their sessions are not read-only): as postgres_fdw.
my $v1 = $proxy->safe_psql('postgres', "SELECT state_proxy.value_get('v', 1, 0::bigint)");
is($proxy->safe_psql('postgres',
		"BEGIN READ ONLY; SELECT state_proxy.value_get('v', 1, 0::bigint); COMMIT"),
	$v1, 'read-only: a read through the proxy');
is($proxy->safe_psql('postgres', q{
BEGIN READ ONLY;
SELECT count(*) FROM state_proxy.value_get_many('v', ARRAY[1, 2], 0::bigint);
SELECT count(*) > 0 FROM state_proxy.states;
SELECT count(*) > 0 FROM state_proxy.stats;
COMMIT}), "2\nt\nt", 'read-only: value_get_many and the states and stats views through the proxy');
for my $call ("state_proxy.value_set('v', 1, 12345::bigint)", "state_proxy.truncate('v')",
	"state_proxy.reduce_many('r', ARRAY[1], ARRAY[1::bigint])")
{
	$e = sql_error($proxy, "BEGIN READ ONLY; SELECT $call; COMMIT");
	is($e->{sqlstate}, '25006', "read-only: $call is refused (25006)");
}
is($proxy->safe_psql('postgres', "SELECT state_proxy.value_get('v', 1, 0::bigint)"),
	$v1, 'read-only: the value is unchanged');
$e = sql_error($proxy, "SELECT state.create_proxy('Bad Name', ARRAY['host=x'], 'p2')");
is($e->{sqlstate}, '22023', 'a cluster name that is not an identifier: 22023');

# A paused cluster: its calls wait until the pause ends.
my $pauser = $proxy->background_psql('postgres', on_error_stop => 0);
$pauser->query_safe("BEGIN; SELECT state.pause_proxy('sc')");
$e = sql_error($proxy, "SET statement_timeout = '1s'; SELECT state_proxy.value_get('v', 1, 0::bigint)");
is($e->{sqlstate}, '57014', 'a call while the cluster is paused waits (here until its timeout)');
$pauser->query_safe('COMMIT');
$pauser->quit;
is($proxy->safe_psql('postgres', "SELECT state_proxy.value_get('v', 1, 0::bigint)"),
	'7', 'and runs once the pause ends');

# Live rescaling under a client loop: two clients, each in a long-lived
# proxy session, add 1 to a random key of 'r' again and again, the key an
# untyped bind parameter of a prepared statement; each records every call
# acknowledged ("A") or failed ("F") in its file, until the stop file
# appears.  Each step waits for the clients to have made more calls, not
# for a time.
my $before = $proxy->safe_psql('postgres',
	"SELECT sum(value) FROM state_proxy.entries('r', NULL::int, NULL::bigint)");
my $stop = "$dir/stop_clients";
my %clients;
for my $id (1, 2)
{
	my $pid = fork() // die "fork: $!";
	if ($pid == 0)
	{
		my $ok = eval {
			open(my $log, '>>', "$dir/client_$id") or die "client $id: $!";
			$log->autoflush(1);
			my $s = $proxy->background_psql('postgres', on_error_stop => 0);
			$s->query_safe(q{PREPARE deposit(unknown) AS
				SELECT 'ok ' || state_proxy.reduce('r', $1, 1::bigint)});
			until (-e $stop)
			{
				$s->{stderr} = '';
				my $out = $s->query('EXECUTE deposit(' . (1 + int(rand(20000))) . ')');
				print $log ($out =~ /^ok \d+$/m && $s->{stderr} !~ /ERROR/ ? "A\n" : "F $s->{stderr}\n");
			}
			$s->quit;
			1;
		};
		POSIX::_exit($ok ? 0 : 1);
	}
	$clients{$id} = $pid;
}

# (acknowledged, failed) calls of the clients so far.
sub client_calls
{
	my ($a, $f) = (0, 0);
	for my $id (1, 2)
	{
		next unless -f "$dir/client_$id";
		for (split /\n/, slurp_file("$dir/client_$id"))
		{
			/^A$/ ? $a++ : $f++;
		}
	}
	return ($a, $f);
}

# more_calls($n, $what): until the clients have made $n more acknowledged
# calls (at most the test's timeout).
sub more_calls
{
	my ($n, $what) = @_;
	my ($from) = client_calls();
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $deadline)
	{
		my ($now) = client_calls();
		return 1 if $now >= $from + $n;
		usleep(100_000);
	}
	diag "the clients made no $n more calls $what";
	return 0;
}

ok(more_calls(500, 'before the rescales'), 'the clients call through the proxy');
my $restored = $proxy->safe_psql('postgres',
	"SELECT state.rescale_proxy('sc', " . parts_array(@servers[0, 1]) . ", '$dir')");
ok($restored > 0, "rescale 3 -> 2 restored $restored entries");
is(placement(2, @servers[0, 1]), "$nkeys|0", 'after 3 -> 2: each of two servers holds its part');

# A server asked for a key it does not hold refuses it.
my $foreign = $servers[0]->safe_psql('postgres',
	"SELECT min(i) FROM generate_series(1, 1000) i WHERE state.part_for('v', i, 2) = 1");
$e = sql_error($servers[0], "SELECT state.value_set('v', $foreign, 1::bigint)");
is($e->{sqlstate}, '22023', 'a key of another part: refused with 22023');
ok(more_calls(500, 'on two parts'), 'the clients call through the proxy on two parts');
$restored = $proxy->safe_psql('postgres',
	"SELECT state.rescale_proxy('sc', " . parts_array(@servers) . ", '$dir')");
ok($restored > 0, "rescale 2 -> 3 restored $restored entries");
ok(more_calls(500, 'after the second rescale'),
	'the clients were still calling through the second rescale');
append_to_file($stop, '');
for my $id (1, 2)
{
	waitpid($clients{$id}, 0);
	is($? >> 8, 0, "client $id ended cleanly");
}
my ($acked, $failed) = client_calls();
is($failed, 0, 'clients through the rescales: no call failed')
  or diag join('', grep { !/^A$/ } map { slurp_file("$dir/client_$_") } 1, 2);
cmp_ok($acked, '>', 0, "clients made $acked calls");
is( $proxy->safe_psql('postgres',
		"SELECT sum(value) FROM state_proxy.entries('r', NULL::int, NULL::bigint)"),
	$before + $acked,
	'every acknowledged write is there after 3 -> 2 -> 3');
is(placement(3, @servers), "$nkeys|0", 'after 2 -> 3: each server holds its part');
is( $proxy->safe_psql('postgres', "SELECT cardinality(parts), version FROM state.proxies"),
	'3|3', 'the cluster has three parts again, after two changes');

# The gate: state._proxy_gate is not for PUBLIC, the proxy's _gate() and
# its internal functions refuse to run outside a proxy call, and nothing of
# a call outlives it: a rescale does not wait for the transactions, still
# open, of sessions that called the proxy or read its views.
$proxy->safe_psql('postgres', 'CREATE ROLE regress_plain LOGIN');
$e = sql_error($proxy, "SET ROLE regress_plain; SELECT state._proxy_gate('sc')");
is($e->{sqlstate}, '42501', 'state._proxy_gate: not for PUBLIC');
$e = sql_error($proxy, "SET ROLE regress_plain; SELECT state_proxy._gate()");
is($e->{sqlstate}, '55000', "the proxy's gate, called alone: refused (55000)");
$e = sql_error($proxy,
	"SET ROLE regress_plain; SELECT state_proxy._value_get(0, 'v', '1', '0')");
is($e->{sqlstate}, '55000', 'an internal PL/Proxy function called alone: refused at its gate');
$e = sql_error($proxy,
	"SET ROLE regress_plain; SELECT state_proxy._pause_timers_at('" . connstr($servers[0]) . "', true)");
is($e->{sqlstate}, '42501', 'the pause of a part\'s timers: not for PUBLIC');
my $caller = $proxy->background_psql('postgres', on_error_stop => 0);
$caller->query_safe(
	"BEGIN; SELECT state_proxy.value_get('v', 1, 0::bigint); SELECT count(*) FROM state_proxy.states; SELECT count(*) FROM state_proxy.stats");
my $attacker = $proxy->background_psql('postgres', on_error_stop => 0);
$attacker->query("SET ROLE regress_plain; BEGIN; SELECT state_proxy._gate()");
$attacker->query("SET ROLE regress_plain; BEGIN; SELECT state._proxy_gate('sc')");
my ($ret, $out, $err) = $proxy->psql('postgres',
	"SET lock_timeout = '5s'; BEGIN; SELECT 'paused' FROM state.pause_proxy('sc'); COMMIT");
is($out, 'paused', 'a pause does not wait for open transactions that called the proxy or tried its gate')
  or diag $err;
$caller->query_safe('COMMIT');
$caller->quit;
$attacker->quit;

# Timers firing through a rescale.  Their handler, on every part, writes a
# row and a state: each timer must fire once, and each write be kept.  (The
# proxy has the handler too: its create_state reads the regprocedure.)
my $ntimers = 3000;
for my $node (@servers, $proxy)
{
	$node->safe_psql(
		'postgres', q{
CREATE TABLE fired (k int, at timestamptz);
CREATE FUNCTION on_tick(k int, at timestamptz) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO fired VALUES (k, at);
	PERFORM state.reduce('hits', k, 1::bigint);
END
$$;
});
}
$proxy->safe_psql(
	'postgres', q{
SELECT state_proxy.create_state('hits', 'reducing', 'int', 'bigint', reducer => 'sum');
SELECT state_proxy.create_state('tick', 'timers', 'int', handler => 'on_tick(int,timestamptz)');
});

# fired_rows: the handler's rows on every server, and the sum of its state
# writes (through the proxy).
sub fired_rows
{
	my $rows = 0;
	$rows += $_->safe_psql('postgres', 'SELECT count(*) FROM fired') for @servers;
	my $hits = $proxy->safe_psql('postgres',
		"SELECT coalesce(sum(value), 0) FROM state_proxy.entries('hits', NULL::int, NULL::bigint)");
	return ($rows, $hits);
}

# wait_fired($n): until $n rows are there and no timer is pending.
sub wait_fired
{
	my ($n) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $deadline)
	{
		my ($rows) = fired_rows();
		my $pending = $proxy->safe_psql('postgres',
			"SELECT count(*) FROM state_proxy.timers('tick', NULL::int)");
		return 1 if $rows >= $n && $pending == 0;
		usleep(200_000);
	}
	return 0;
}

$proxy->safe_psql('postgres',
	"SELECT count(state_proxy.timer_register('tick', i, clock_timestamp() + interval '300 ms' + (i % 1000) * interval '5 ms')) FROM generate_series(1, $ntimers) i"
);
# The same parts again: every part's snapshot and restore, each snapshot
# followed by a sleep, while the timers fall due.  The rescaling session
# stays open (its connections to the parts too): the rescale itself must
# resume the timers.
my $rescaler = $proxy->background_psql('postgres', on_error_stop => 0);
$restored = $rescaler->query(
	"SET state_backend.fault_points = 'rescale.proxy_part_snapshot:sleep:800'; SELECT state.rescale_proxy('sc', "
	  . parts_array(@servers) . ", '$dir')");
ok($restored > 0, "a rescale while timers fire restored $restored entries")
  or diag $rescaler->{stderr};
ok(wait_fired($ntimers), 'every timer fired after the rescale, its session still open');
my ($rows, $hits) = fired_rows();
is($rows, $ntimers, 'each timer fired once (none fired twice from a snapshot taken before it fired)');
is($hits, $rows, "every handler's state write is kept with its row");
ok( $proxy->log_contains('state_backend fault point "rescale.proxy_part_snapshot" reached'),
	'the rescale slept after its snapshots');

# A rescale that fails at a step keeps the old parts, and their timers
# fire again.
$rescaler->{stderr} = '';
$rescaler->query(
	"SET state_backend.fault_points = 'rescale.proxy_part_restored:error'; SELECT state.rescale_proxy('sc', "
	  . parts_array(@servers[0, 1]) . ", '$dir')");
like($rescaler->{stderr}, qr/fault point "rescale.proxy_part_restored" reached/,
	'a rescale failing after its first restore: the error');
is($proxy->safe_psql('postgres', 'SELECT cardinality(parts) FROM state.proxies'),
	'3', 'the cluster keeps its three parts');
is(placement(3, @servers), "$nkeys|0", 'each part put back as it was');
$proxy->safe_psql('postgres',
	"SELECT count(state_proxy.timer_register('tick', i, clock_timestamp())) FROM generate_series(1, 30) i");
ok(wait_fired($ntimers + 30), "the parts' timers fire again after the failed rescale");
$rescaler->quit;

# A proxy goes with its schema and cluster.
$proxy->safe_psql('postgres', "SELECT state.drop_proxy('sc')");
is( $proxy->safe_psql('postgres',
		"SELECT count(*) FROM pg_namespace WHERE nspname = 'state_proxy'")
	  . $proxy->safe_psql('postgres',
		"SELECT count(*) FROM pg_foreign_server WHERE srvname = 'sc'"),
	'00', 'drop_proxy: schema and cluster gone');

done_testing();
