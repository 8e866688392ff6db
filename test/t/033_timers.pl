# Timers are state: 100,000 event-time timers over 10 minutes of event time,
# in two logged transactional timers states (memory and rocksdb), fired by
# advancing the watermark step by step, each step after one of: a native
# snapshot and its restore, a clean restart, a crash, a canonical snapshot
# restored into the other backend, and a rescale onto 2 parts merged back.
# Each handler call inserts (state, key, at) into a table; in the end every
# timer has fired exactly once: no row missing, none twice.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $timers = 100_000;
my $per_state = $timers / 2;
my $base = '2026-06-01 00:00:00+00';
my $root = PostgreSQL::Test::Utils::tempdir();
my $node = new_state_node(
	'timers',
	init => { allows_streaming => 1 },
	conf => "state_backend.checkpoint_dir = '$root/checkpoints'\n"
	  . "state_backend.memory_limit = '256MB'\n");
ok(defined wait_for_worker($node), 'state worker running');

# Timer i of a state is due at $base + i * 12 ms (10 minutes for 50,000).
$node->safe_psql(
	'postgres', qq{
CREATE TABLE fired (st text, k int, at timestamptz);
CREATE FUNCTION on_mem(k int, at timestamptz) RETURNS void LANGUAGE sql
    AS \$\$ INSERT INTO fired VALUES ('mem', k, at) \$\$;
CREATE FUNCTION on_rocks(k int, at timestamptz) RETURNS void LANGUAGE sql
    AS \$\$ INSERT INTO fired VALUES ('rocks', k, at) \$\$;
SELECT state.create_state('t_mem', 'timers', 'int', handler => 'on_mem(int,timestamptz)',
                          time_domain => 'event', backend => 'memory', logged => true,
                          transactional => true);
SELECT state.create_state('t_rocks', 'timers', 'int', handler => 'on_rocks(int,timestamptz)',
                          time_domain => 'event', backend => 'rocksdb', logged => true,
                          transactional => true);
SELECT count(state.timer_register('t_mem', i % 1000, '$base'::timestamptz + i * interval '12 ms'))
     + count(state.timer_register('t_rocks', i % 1000, '$base'::timestamptz + i * interval '12 ms'))
  FROM generate_series(0, $per_state - 1) i;
});

sub pending
{
	return $node->safe_psql('postgres',
		q{SELECT (SELECT count(*) FROM state.timers('t_mem', 0)) + (SELECT count(*) FROM state.timers('t_rocks', 0))});
}

sub due_by
{
	my ($minutes) = @_;
	# Timers at or before $base + $minutes, in both states.
	my $due = int($minutes * 60_000 / 12) + 1;
	$due = $per_state if $due > $per_state;
	return 2 * $due;
}

# Advance both watermarks to $base + $minutes and wait until what is due fired.
sub fire_to
{
	my ($minutes, $what) = @_;
	my $want = due_by($minutes);
	$node->safe_psql('postgres', qq{
SELECT state.advance_watermark('t_mem', '$base'::timestamptz + interval '$minutes min');
SELECT state.advance_watermark('t_rocks', '$base'::timestamptz + interval '$minutes min');});
	ok($node->poll_query_until('postgres', "SELECT count(*) >= $want FROM fired"),
		"$what: the timers due by minute $minutes fired");
	is($node->safe_psql('postgres', 'SELECT count(*) FROM fired'), $want,
		"$what: no timer fired early, none twice");
	ok($node->poll_query_until('postgres', "SELECT " . pending() . " = $timers - $want"),
		"$what: the fired timers left their states");
}

is(pending(), $timers, '100,000 timers registered');

# 1. A native snapshot, restored: every timer is still there.
my $snap = "$root/native";
$node->safe_psql('postgres', qq{SELECT state.wait_snapshot(state.snapshot('$snap'))});
$node->safe_psql('postgres', qq{SELECT state.restore('$snap')});
is(pending(), $timers, 'native snapshot and restore keep every timer');
fire_to(1, 'after a native restore');

# 2. A clean restart: logged timers come back (the watermark starts again).
$node->restart;
wait_for_worker($node);
fire_to(2, 'after a clean restart');

# 3. A crash: the WAL of logged timers brings them back.
$node->stop('immediate');
$node->start;
wait_for_worker($node);
is(pending(), $timers - due_by(2), 'a crash loses no timer');
fire_to(4, 'after a crash');

# 4. A canonical snapshot restored into the other backend.
my $canon = "$root/canonical";
$node->safe_psql('postgres', qq{SELECT state.wait_snapshot(state.snapshot('$canon', 'canonical'))});
$node->safe_psql('postgres', qq{SELECT state.restore('$canon', backend => 'rocksdb')});
is($node->safe_psql('postgres', q{SELECT string_agg(name || ':' || backend, ',' ORDER BY name) FROM state.states}),
	't_mem:rocksdb,t_rocks:rocksdb', 'the canonical snapshot went into rocksdb');
is(pending(), $timers - due_by(4), 'canonical restore into another backend keeps every timer');
fire_to(6, 'after a canonical restore into another backend');

# 5. A rescale onto 2 parts, each restored alone, then merged back.
my $whole = "$root/whole";
$node->safe_psql('postgres', qq{SELECT state.wait_snapshot(state.snapshot('$whole'))});
my @parts;
for my $p (0, 1)
{
	$node->safe_psql('postgres',
		qq{SELECT state.restore('$whole', parallelism => 2, part => $p)});
	push @parts, pending();
	$node->safe_psql('postgres',
		qq{SELECT state.wait_snapshot(state.snapshot('$root/part$p'))});
}
ok($parts[0] > 0 && $parts[1] > 0, 'each part holds some of the timers');
is($parts[0] + $parts[1], $timers - due_by(6), 'the two parts hold every timer once');
$node->safe_psql('postgres',
	qq{SELECT state.restore(ARRAY['$root/part0', '$root/part1'])});
is(pending(), $timers - due_by(6), 'merged back, every timer is there');
fire_to(11, 'after a rescale and a merge');

is($node->safe_psql('postgres',
		q{SELECT count(*) FROM (SELECT DISTINCT st, k, at FROM fired) d}),
	$timers, 'every timer fired exactly once');
is($node->safe_psql('postgres', 'SELECT count(*) FROM state.timer_failures'), 0,
	'no timer failed');
my @crashes = log_crashes($node);
is(scalar(@crashes), 0, 'no process died (the immediate stop is a shutdown)') or diag(join("\n", @crashes));

$node->stop;
done_testing();
