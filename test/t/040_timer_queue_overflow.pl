# Timers and windows registered faster than the timer worker reads them:
# the ring of new timers (state_backend.timer_queue_size, here its least,
# 64 kB) overflows over and over, also while the worker reads the states
# whole because of an earlier overflow.  Each round registers 300,000 keys
# in one statement into a window state and a timers state, then moves the
# watermark past them all: every window and every timer fires, once.
# (A worker that let an overflow during its reading go unnoticed kept
# thousands of keys for ever from the second round on.)

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
is($node->safe_psql('postgres', 'SELECT count(*) FROM state.timer_failures'),
	0, 'no timer failed');
is_deeply([ log_crashes($node) ], [], 'no process crashed');

$node->stop;
done_testing();
