# A window state's key that changes while it fires: the timer worker folds
# what it fired into the image it read, and stores that only if the key
# still holds it.  Values that came between the firing's commit and that
# fold are kept: a late value makes the window fire again, a new window of
# a key whose only window went keeps the key.  The worker is held between
# the two at the fault point timer.batch_after_commit (a sleep).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(usleep);

my $node = new_state_node('fire_changes',
	conf => "timezone = 'UTC'\nstate_backend.fault_points = 'timer.batch_after_commit:sleep:4000'\n");
$node->safe_psql('postgres', q{
CREATE TABLE out (k text, ws timestamptz, we timestamptz, n bigint);
SELECT state.create_state('late', 'window', 'text', 'bigint', assigner => 'tumbling',
                          size => '1 minute', reducer => 'sum', allowed_lateness => '1 hour',
                          emit_table => 'out');
SELECT state.create_state('gone', 'window', 'text', 'bigint', assigner => 'tumbling',
                          size => '1 minute', reducer => 'sum', emit_table => 'out');
});

# A first window: the worker sleeps at the point after its commit.
my $log_at = -s $node->logfile;
$node->safe_psql('postgres', q{
SELECT state.window_add('gone', 'warm', '2026-01-01 00:00:10', 1::bigint);
SELECT state.advance_watermark('gone', '2026-01-01 00:01:00');});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM out WHERE k = 'warm'}),
	'a first window fired');
my $armed = 0;
for (1 .. 20 * $PostgreSQL::Test::Utils::timeout_default)
{
	last if ($armed = slurp_file($node->logfile, $log_at) =~ /fault point "timer.batch_after_commit" reached: sleep/);
	usleep(50_000);
}
ok($armed, 'the timer worker waits between the commit of a firing and its fold');
ok($node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM state.windows('gone', NULL::text)}),
	'then the window left its key');

# fire_then($state, $key, $at, $watermark, $then, $name): a value of 1 for
# $key at $at, the watermark to $watermark, and once the window is in the
# table (the worker then sleeps before its fold), the statement $then.
sub fire_then
{
	my ($state, $key, $at, $watermark, $then, $name) = @_;

	$node->safe_psql('postgres', qq{
SELECT state.window_add('$state', '$key', '$at', 1::bigint);
SELECT state.advance_watermark('$state', '$watermark');});
	ok($node->poll_query_until('postgres', qq{SELECT count(*) = 1 FROM out WHERE k = '$key'}),
		$name);
	$node->safe_psql('postgres', $then);
}

# A late value while the window fires: it fires again with it.
fire_then('late', 'a', '2026-01-01 00:00:10', '2026-01-01 00:01:00',
	q{SELECT state.window_add('late', 'a', '2026-01-01 00:00:20', 2::bigint)}, 'the window fired');
ok($node->poll_query_until('postgres', q{SELECT count(*) = 2 FROM out WHERE k = 'a'}),
	'the window with the value that came while it fired fired again');
is($node->safe_psql('postgres', q{SELECT string_agg(n::text, ',' ORDER BY n) FROM out WHERE k = 'a'}),
	'1,3', 'first its one value, then both');
ok($node->poll_query_until('postgres', q{SELECT fired FROM state.windows('late', NULL::text)}),
	'the window stays, fired, for its lateness');

# A new window of a key whose only window fired: the key stays, with it.
fire_then('gone', 'b', '2026-01-01 00:01:10', '2026-01-01 00:02:00',
	q{SELECT state.window_add('gone', 'b', '2026-01-01 00:02:30', 5::bigint)},
	'the only window of the key fired');
# The fold comes after the sleep: until then the key has both windows.
ok($node->poll_query_until('postgres',
		q{SELECT count(*) = 1 FROM state.windows('gone', NULL::text) WHERE key = 'b'}),
	'the fired window left the key');
is($node->safe_psql('postgres',
		q{SELECT string_agg(window_start::text || ' ' || fired, ',') FROM state.windows('gone', NULL::text) WHERE key = 'b'}),
	'2026-01-01 00:02:00+00 false', 'the key kept the window that came while the other fired');
$node->safe_psql('postgres', q{SELECT state.advance_watermark('gone', 'infinity')});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 2 FROM out WHERE k = 'b'}),
	'and it fires');
is($node->safe_psql('postgres', q{SELECT n FROM out WHERE k = 'b' ORDER BY ws DESC LIMIT 1}), '5',
	'with its value');

$node->stop;
done_testing();
