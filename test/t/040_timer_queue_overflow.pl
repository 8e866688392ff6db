# Timers and windows registered faster than the timer worker reads them:
# the ring of new timers (state_backend.timer_queue_size, here its least,
# 64 kB) overflows over and over, also while the worker reads the states
# whole because of an earlier overflow.  Each round registers 300,000 keys
# in one statement into a window state and a timers state, then moves the
# watermark past them all: every window and every timer fires, once.
# (A worker that let an overflow during its reading go unnoticed kept
# thousands of keys for ever from the second round on.)
#
# Then timers due as they are registered, into a rocksdb state, from 6
# sessions for 10 s: a session posts its rocksdb writes to the state worker
# without waiting for each, and the timer worker, which looks for a timer
# in its state when the ring names it and forgets one it does not find,
# must not hear of one before its write is applied.  Every timer fires.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $KEYS = 300_000;
my $ROUNDS = 3;
my $node = new_state_node(
	'queue',
	conf => "state_backend.timer_queue_size = '64kB'\n"
	  . "state_backend.memory_limit = '512MB'\n");
ok(defined wait_for_worker($node), 'state worker running');

$node->safe_psql(
	'postgres', q{
CREATE TABLE emitted (round int, k text, n bigint);
CREATE TABLE fired (round int, k int);
CREATE TABLE round (n int);
INSERT INTO round VALUES (0);
CREATE FUNCTION on_window(k text, ws timestamptz, we timestamptz, n bigint) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO emitted SELECT n, k, on_window.n FROM round $$;
CREATE FUNCTION on_timer(k int, at timestamptz) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO fired SELECT n, k FROM round $$;
});

# Keys with a window open, keys with a timer pending: '0 0' once all fired.
sub open_count
{
	return $node->safe_psql('postgres',
		q{SELECT string_agg(entries::text, ' ' ORDER BY name DESC) FROM state.states});
}

for my $round (1 .. $ROUNDS)
{
	my $at = "'2026-06-01 00:00:00+00'::timestamptz + interval '$round hours'";
	$node->safe_psql(
		'postgres', qq{
SELECT state.drop_state(name) FROM state.states WHERE name IN ('w', 't');
UPDATE round SET n = $round;
SELECT state.create_state('w', 'window', 'text', 'bigint', backend => 'memory',
    assigner => 'tumbling', size => '1 minute', reducer => 'sum',
    emit => 'on_window(text,timestamptz,timestamptz,bigint)');
SELECT state.create_state('t', 'timers', 'int', handler => 'on_timer(int,timestamptz)',
    time_domain => 'event', backend => 'memory');
});
	# Each key twice: a window appears at the first value only.
	$node->safe_psql(
		'postgres', qq{
SELECT count(state.window_add('w', (i % $KEYS)::text, $at, 1::bigint))
     + count(state.timer_register('t', i % $KEYS, $at))
FROM generate_series(1, 2 * $KEYS) i;
SELECT state.advance_watermark('w', $at + interval '1 day');
SELECT state.advance_watermark('t', $at + interval '1 day');
});
	# Done once nothing is left; stuck when nothing moves for 30 s.
	my ($last, $still) = ('', 0);
	while (1)
	{
		my $now = open_count();
		last if $now eq '0 0';
		$still = $now eq $last ? $still + 1 : 0;
		last if $still >= 300;
		$last = $now;
		usleep(100_000);
	}
	is(open_count(), '0 0', "round $round: no window open, no timer pending");
	is( $node->safe_psql(
			'postgres',
			"SELECT count(*), count(DISTINCT k), sum(n) FROM emitted WHERE round = $round"),
		"$KEYS|$KEYS|" . (2 * $KEYS),
		"round $round: every window emitted once with its two values");
	is( $node->safe_psql(
			'postgres', "SELECT count(*), count(DISTINCT k) FROM fired WHERE round = $round"),
		"$KEYS|$KEYS",
		"round $round: every timer fired once");
}
$node->safe_psql(
	'postgres', q{
SELECT state.drop_state(name) FROM state.states;
CREATE TABLE due_fired (k int, at timestamptz);
CREATE FUNCTION on_due(k int, at timestamptz) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO due_fired VALUES (k, at) $$;
SELECT state.create_state('due', 'timers', 'int', handler => 'on_due(int,timestamptz)',
    time_domain => 'event', backend => 'rocksdb');
SELECT state.advance_watermark('due', '2030-01-01');
});
my $r = run_pgbench(
	$node, '-n -M prepared -c 6 -j 2 -T 10',
	{
		'due.sql' => q{\set k random(1, 1000000)
SELECT state.timer_register('due', :k::int, '2026-01-01'::timestamptz + :k * interval '1 ms');
}
	},
	timeout => 120);
is($r->{ret}, 0, 'timers registered from 6 sessions') or diag $r->{stderr};
ok($r->{processed} > 0, "$r->{processed} registrations");
# Until no timer is left in the state; stuck when nothing moves for 30 s.
my ($left, $last, $still) = (-1, -2, 0);
while (1)
{
	$left = $node->safe_psql('postgres', q{SELECT count(*) FROM state.timers('due', NULL::int)});
	last if $left == 0;
	$still = $left == $last ? $still + 1 : 0;
	last if $still >= 300;
	$last = $left;
	usleep(100_000);
}
is($left, 0, 'every timer registered due has fired and left the state');
is( $node->safe_psql(
		'postgres', q{SELECT count(*) FROM due_fired WHERE at <> '2026-01-01'::timestamptz + k * interval '1 ms'}),
	0,
	'each fired with its own instant');
is($node->safe_psql('postgres', 'SELECT count(*) FROM state.timer_failures'),
	0, 'no timer failed');
is_deeply([ log_crashes($node) ], [], 'no process crashed');

$node->stop;
done_testing();
