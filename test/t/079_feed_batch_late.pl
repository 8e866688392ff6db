# A statement trigger's feed folds its rows into a window state in
# batches: judged late or on time row by row, then merged key by key.  A
# window that another session's watermark closed between the two (the
# timer worker fired it and cleaned it out of its key) takes nothing from
# the batch, as it would take nothing from a row: the row is late, and
# reaches the late function with its value.  The feed is held before its
# merge at the fault point window.feed_merge (a sleep).
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_state_node('feed_batch_late', conf => "timezone = 'UTC'\n");
$node->safe_psql('postgres', q{
CREATE TABLE out (k text, ws timestamptz, we timestamptz, n bigint);
CREATE TABLE late (k text, t timestamptz, v bigint);
CREATE FUNCTION on_late(k text, t timestamptz, v bigint) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO late VALUES (k, t, v) $$;
SELECT state.create_state('w', 'window', 'text', 'bigint', time_domain => 'event',
                          assigner => 'tumbling', size => '1 minute', reducer => 'sum',
                          emit_table => 'out', late => 'on_late(text,timestamptz,bigint)');
CREATE TABLE ev (k text, t timestamptz, v bigint);
CREATE TRIGGER feed AFTER INSERT ON ev REFERENCING NEW TABLE AS n
    FOR EACH STATEMENT EXECUTE FUNCTION state.feed('w', 'k', 't', 'v');
-- key k: a window at 00:00 and one at 00:02
INSERT INTO ev VALUES ('k', '2026-01-01 00:00:10', 1), ('k', '2026-01-01 00:02:30', 8);
});

# A statement on time for k's first window, and for a new key j, held
# before its merges.
my $held = held_at_fault_point($node, 'window.feed_merge', q{
SET state_backend.fault_points = 'window.feed_merge:sleep:6000';
INSERT INTO ev VALUES ('k', '2026-01-01 00:00:20', 2), ('j', '2026-01-01 00:00:30', 4);
SELECT 'inserted';});

# Meanwhile the watermark passes 00:01: k's first window fires with what
# it held and leaves the key, whose other window stays.
$node->safe_psql('postgres', q{SELECT state.advance_watermark('w', '2026-01-01 00:02:00')});
ok($node->poll_query_until('postgres', q{
SELECT count(*) = 1 AND min(n) = 1 FROM out WHERE k = 'k' AND ws = '2026-01-01 00:00:00'}),
	"k's first window fired with the value it held");
ok($node->poll_query_until('postgres', q{
SELECT array_agg(window_start ORDER BY window_start) = ARRAY['2026-01-01 00:02:00'::timestamptz]
  FROM state.windows('w', NULL::text) WHERE key = 'k'}),
	'and left the key, which keeps its later window');

my ($out, $err) = finish_held($held);
is($out, 'inserted', 'the held statement ends') or diag($err);

# The row for the closed window is late: handed to the late function and
# counted; it is not emitted again.
is($node->safe_psql('postgres', q{SELECT string_agg(format('%s %s %s', k, t, v), ', ') FROM late}),
	'k 2026-01-01 00:00:20+00 2', 'the row whose window closed meanwhile reached the late function');
is($node->safe_psql('postgres', q{SELECT late FROM state.stats WHERE name = 'w'}), '1',
	'and state.stats counts it late');
# j had no window: its row made one, which fires (its end is behind the
# watermark).
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 AND min(n) = 4 FROM out WHERE k = 'j'}),
	"the new key's window fired with its value");
is($node->safe_psql('postgres', q{SELECT count(*) FROM out WHERE k = 'k' AND ws = '2026-01-01 00:00:00'}),
	'1', "k's first window fired once");
# Every value is in a window emitted, in a window still open, or late.
$node->safe_psql('postgres', q{SELECT state.advance_watermark('w', 'infinity')});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 0 FROM state.windows('w', NULL::text)}),
	'every window fired at the last watermark');
is($node->safe_psql('postgres', q{SELECT (SELECT sum(n) FROM out) + (SELECT sum(v) FROM late) = (SELECT sum(v) FROM ev)}),
	't', 'every value fed was emitted or handed to the late function');

$node->stop;
done_testing();
