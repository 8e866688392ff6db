# A statement trigger's feed folds its rows into a window state in
# batches: judged late or on time row by row, then merged key by key.  A
# window that another session's watermark closed between the two (the
# timer worker fired it and cleaned it out of its key) takes nothing from
# the batch, as it would take nothing from a row: the row is late, and
# reaches the late function with its value.  The feed is held before its
# merge at the fault point window.feed_merge (a sleep).  A key whose
# windows in a batch pass what one merge takes goes in early: the rows it
# hands to the late function then leave the row that made it go in with
# its own value.  A batch's merges keep the memory of one key's at a time.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::RealBin/../perl";
use StateBackendTAP;
use PostgreSQL::Test::Utils;
use Test::More;

my $node = new_state_node('feed_batch_late', conf => "timezone = 'UTC'\n");

# fed_state($n, $size): a tumbling window state w$n of sums, text keys, of
# windows of $size, emitting into out$n, its late values into late$n, fed
# by a statement trigger on ev$n (k, t, v).
sub fed_state
{
	my ($n, $size) = @_;
	$node->safe_psql('postgres', qq{
CREATE TABLE out$n (k text, ws timestamptz, we timestamptz, n bigint);
CREATE TABLE late$n (k text, t timestamptz, v bigint);
CREATE FUNCTION on_late$n(k text, t timestamptz, v bigint) RETURNS void
    LANGUAGE sql AS 'INSERT INTO late$n VALUES (k, t, v)';
SELECT state.create_state('w$n', 'window', 'text', 'bigint', time_domain => 'event',
                          assigner => 'tumbling', size => '$size', reducer => 'sum',
                          emit_table => 'out$n', late => 'on_late$n(text,timestamptz,bigint)');
CREATE TABLE ev$n (k text, t timestamptz, v bigint);
CREATE TRIGGER feed AFTER INSERT ON ev$n REFERENCING NEW TABLE AS n
    FOR EACH STATEMENT EXECUTE FUNCTION state.feed('w$n', 'k', 't', 'v');});
}

fed_state('', '1 minute');
# key k: a window at 00:00 and one at 00:02
$node->safe_psql('postgres',
	q{INSERT INTO ev VALUES ('k', '2026-01-01 00:00:10', 1), ('k', '2026-01-01 00:02:30', 8)});

# A statement on time for k's first window, and for a new key j, held
# before its merges.
my $held = held_at_fault_point($node, 'window.feed_merge', q{
SET state_backend.fault_points = 'window.feed_merge:sleep:15000';
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

# A key of 1,001 windows in the batch goes in early when its next window
# comes; the watermark closes those windows meanwhile, so their 1,001 rows
# are late.  The row whose window made the key go in keeps its value.
fed_state(1, '1 second');
$node->safe_psql('postgres',
	q{INSERT INTO ev1 VALUES ('e', '2026-01-01 00:25:00', 100), ('e', '2026-01-01 01:30:00', 200)});
$held = held_at_fault_point($node, 'window.feed_merge', q{
SET state_backend.fault_points = 'window.feed_merge:sleep:15000';
INSERT INTO ev1 SELECT 'e', '2026-01-01 00:00:00'::timestamptz + i * interval '1 s', 1
  FROM generate_series(0, 1000) i
 UNION ALL SELECT 'e', '2026-01-01 00:50:00', 777;
SELECT 'inserted';});
$node->safe_psql('postgres', q{SELECT state.advance_watermark('w1', '2026-01-01 00:30:00')});
ok($node->poll_query_until('postgres', q{SELECT count(*) = 1 FROM out1 WHERE ws = '2026-01-01 00:25:00'}),
	'a window of the key fired while the key waited to go in early');
ok($node->poll_query_until('postgres', q{
SELECT array_agg(window_start) = ARRAY['2026-01-01 01:30:00'::timestamptz]
  FROM state.windows('w1', NULL::text)}),
	'and the key was cleaned to the watermark');
($out, $err) = finish_held($held);
is($out, 'inserted', 'the statement whose key went in early ends') or diag($err);
is($node->safe_psql('postgres', q{SELECT count(*) || ' ' || sum(v) FROM late1}), '1001 1001',
	'the rows of the closed windows reached the late function');
is($node->safe_psql('postgres', q{SELECT state.window_get('w1', 'e', '2026-01-01 00:50:00', NULL::bigint)}),
	'777', 'the row that made the key go in early kept its own value');

# Memory: one small row for each of 1,200 keys whose windows hold 64 kB
# each (a list, on rocksdb, read through the state worker): the batch's
# merges keep one key's images at a time, so the session's peak memory
# grows about as much as with a row trigger, which folds a row at a time
# (the images read pass through memory both share).
$node->safe_psql('postgres', q{
CREATE TABLE out2 (k int, ws timestamptz, we timestamptz, vs text[]);
SELECT state.create_state('big', 'window', 'int', 'text', time_domain => 'event', backend => 'rocksdb',
                          assigner => 'tumbling', size => '1 hour', collect => 'list', emit_table => 'out2');
SELECT count(state.window_add('big', k, '2026-01-01 00:00:00', repeat(md5(k::text), 2048)))
  FROM generate_series(1, 1200) k;
CREATE TABLE ev_batch (k int, t timestamptz, v text);
CREATE TRIGGER feed AFTER INSERT ON ev_batch REFERENCING NEW TABLE AS n
    FOR EACH STATEMENT EXECUTE FUNCTION state.feed('big', 'k', 't', 'v');
CREATE TABLE ev_row (k int, t timestamptz, v text);
CREATE TRIGGER feed AFTER INSERT ON ev_row FOR EACH ROW EXECUTE FUNCTION state.feed('big', 'k', 't', 'v');
});
# The growth of the peak of a new session's memory (kB) over one INSERT
# into $table of a row per key.
sub peak_growth
{
	my ($table) = @_;
	return $node->safe_psql('postgres', qq{
SET state_backend.rocksdb_session_reads_after = 2147483647;
CREATE TEMP TABLE hwm AS SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\\s+(\\d+) kB')::bigint AS kb;
INSERT INTO $table SELECT k, '2026-01-01 00:00:01', 'x' FROM generate_series(1, 1200) k;
SELECT substring(pg_read_file('/proc/self/status') from 'VmHWM:\\s+(\\d+) kB')::bigint - kb FROM hwm;});
}
my $by_row = peak_growth('ev_row');
my $by_batch = peak_growth('ev_batch');
cmp_ok($by_batch, '<', $by_row + 16 * 1024,
	"a batch's merges keep the session's peak memory within 16 MB of a row trigger's")
  or diag("statement trigger: $by_batch kB, row trigger: $by_row kB");
is($node->safe_psql('postgres', q{
SELECT count(*) FROM state.windows('big', NULL::int) w
 WHERE array_length(state.window_get('big', w.key, w.window_start, NULL::text[]), 1) = 3}),
	'1200', 'every key took both rows');

$node->stop;
done_testing();
