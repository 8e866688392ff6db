# The pause of a database's timer firing (state._pause_timers, which a
# proxy's rescale takes on every part).  While a session holds it no timer
# fires; it returns only once the batch the timer worker was firing is
# committed; it ends when the session resumes, or when the session exits
# (a proxy that dies mid-rescale leaves no part paused); a pause of one
# database does not hold another's; and it is not for PUBLIC.

use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;

my $node = new_state_node('pause');
ok(defined wait_for_worker($node), 'state worker running');

my $setup = q{
CREATE TABLE fired (k int, at timestamptz, done timestamptz DEFAULT clock_timestamp());
CREATE FUNCTION on_tick(k int, at timestamptz) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	-- Key 0 is a slow handler: its batch lasts two seconds.
	IF k = 0 THEN
		PERFORM pg_sleep(2);
	END IF;
	INSERT INTO fired (k, at) VALUES (k, at);
END
$$;
SELECT state.create_state('tick', 'timers', 'int', handler => 'on_tick(int,timestamptz)');
};
$node->safe_psql('postgres', 'CREATE DATABASE other');
$node->safe_psql('other', 'CREATE EXTENSION state_backend');
$node->safe_psql($_, $setup) for 'postgres', 'other';

sub fired
{
	my ($db, $where) = @_;
	return $node->safe_psql($db, "SELECT count(*) FROM fired WHERE $where");
}

# wait_rows($db, $where, $n): until $n rows match (at most the test's timeout).
sub wait_rows
{
	my ($db, $where, $n) = @_;
	my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
	while (time < $deadline)
	{
		return 1 if fired($db, $where) >= $n;
		usleep(100_000);
	}
	return 0;
}

sub register
{
	my ($db, $from, $to) = @_;
	$node->safe_psql($db,
		"SELECT count(state.timer_register('tick', i, clock_timestamp())) FROM generate_series($from, $to) i");
}

# Not for PUBLIC.
$node->safe_psql('postgres', 'CREATE ROLE regress_plain');
my $e = sql_error($node, 'SET ROLE regress_plain; SELECT state._pause_timers(true)');
is($e->{sqlstate}, '42501', 'state._pause_timers: not for PUBLIC');

# The pause waits for the batch being fired: the slow handler's timer falls
# due, the pause is asked for while it sleeps, and returns only after its
# row is committed.
register('postgres', 0, 0);
my $pauser = $node->background_psql('postgres', on_error_stop => 0);
my $sleeping = 0;
my $deadline = time + $PostgreSQL::Test::Utils::timeout_default;
while (!$sleeping && time < $deadline)
{
	$sleeping = $node->safe_psql('postgres',
		"SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'state_backend timers' AND wait_event = 'PgSleep'"
	);
	usleep(50_000) unless $sleeping;
}
ok($sleeping, 'the slow handler runs');
$pauser->query_safe('SELECT state._pause_timers(true)');
is(fired('postgres', 'k = 0'), '1',
	'the pause returned once the batch being fired was committed');

# While paused, nothing fires in this database; the other fires.
register('postgres', 1, 100);
register('other', 1, 100);
ok(wait_rows('other', 'k BETWEEN 1 AND 100', 100), 'another database fires meanwhile');
usleep(1_500_000);
is(fired('postgres', 'k BETWEEN 1 AND 100'), '0', 'nothing fires in the paused database');
is($node->safe_psql('postgres', "SELECT count(*) FROM state.timers('tick', 0)"),
	'100', 'its timers wait in the state');

# Resumed by the session: they fire.
$pauser->query_safe('SELECT state._pause_timers(false)');
ok(wait_rows('postgres', 'k BETWEEN 1 AND 100', 100), 'resumed: the timers fire');

# Two pauses of the same session are one; a session that exits gives its
# pause back.
$pauser->query_safe('SELECT state._pause_timers(true); SELECT state._pause_timers(true)');
register('postgres', 101, 200);
usleep(1_500_000);
is(fired('postgres', 'k BETWEEN 101 AND 200'), '0', 'paused again');
$pauser->quit;
ok(wait_rows('postgres', 'k BETWEEN 101 AND 200', 100),
	'the pausing session exits: the timers fire');
is(fired('postgres', 'true'), '201', 'every timer fired once');

done_testing();
