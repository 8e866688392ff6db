--
-- time_range: windows and timers at the two ends of the range of
-- timestamptz (4714-11-24 00:00:00+00 BC to 294276-12-31 23:59:59.999999+00),
-- windows aligned to the Unix epoch over all of it, and a window whose end
-- plus its allowed lateness passes the range (Flink's
-- WindowOperatorTest.testCleanupTimeOverflow): kept, fired once, gone at
-- the last watermark, 'infinity'.
-- Runs with the default backend of the pass (memory, rocksdb, lmdb).
-- Firing is asynchronous: wait_for() polls until what the worker does is
-- seen (never longer than a minute), so nothing here depends on timing.
--
SET timezone = 'UTC';
SET datestyle = 'ISO, YMD';
CREATE TABLE tr_emitted (id bigserial, name text, k text, ws timestamptz, we timestamptz, r bigint);
CREATE FUNCTION tr_emit(k text, ws timestamptz, we timestamptz, r bigint) RETURNS void
    LANGUAGE sql AS $$ INSERT INTO tr_emitted (k, ws, we, r) VALUES (k, ws, we, r) $$;

-- Flink's testCleanupTimeOverflow: windows of a second with two seconds of
-- lateness; the value's window ends a second before the end of the range,
-- so the instant its state goes (end + lateness) is past it.  The value is
-- kept; a watermark before the window's end neither fires nor cleans it; the
-- watermark at its end fires it once; it stays (fired) through the last
-- finite watermark, takes a value within its lateness and fires again, and
-- goes at 'infinity' without firing a third time
SELECT state.create_state('tr_over', 'window', 'text', 'bigint', assigner => 'tumbling',
                          size => '1 second', allowed_lateness => '2 seconds', reducer => 'sum',
                          emit => 'tr_emit(text,timestamptz,timestamptz,bigint)');
SELECT state.window_add('tr_over', 'key2', '294276-12-31 23:59:58.25+00', 1::bigint);
SELECT * FROM state.windows('tr_over', ''::text);
SELECT state.advance_watermark('tr_over', '294276-12-31 23:59:58.5+00');
SELECT wait_for($$SELECT next_due = '294276-12-31 23:59:59+00' FROM state.timer_status WHERE name = 'tr_over'$$);
SELECT count(*) AS not_fired_yet FROM tr_emitted;
SELECT window_start, window_end, fired FROM state.windows('tr_over', ''::text);
SELECT state.advance_watermark('tr_over', '294276-12-31 23:59:59+00');
SELECT wait_for($$SELECT count(*) = 1 FROM tr_emitted$$);
SELECT wait_for($$SELECT bool_and(fired) FROM state.windows('tr_over', ''::text)$$);
SELECT k, ws, we, r FROM tr_emitted ORDER BY id;
-- the window goes when the watermark reaches its end plus the lateness,
-- past the range: at 'infinity', not at the last finite instant
SELECT wait_for($$SELECT next_due = 'infinity' FROM state.timer_status WHERE name = 'tr_over'$$);
SELECT state.advance_watermark('tr_over', '294276-12-31 23:59:59.999999+00');
SELECT state.window_add('tr_over', 'key2', '294276-12-31 23:59:58.75+00', 2::bigint);
SELECT wait_for($$SELECT count(*) = 2 FROM tr_emitted$$);
SELECT k, ws, we, r FROM tr_emitted ORDER BY id;
SELECT window_start, window_end FROM state.windows('tr_over', ''::text);
SELECT name, late FROM state.stats WHERE name = 'tr_over';
SELECT expect_error($$SELECT state.advance_watermark('tr_over', '-infinity')$$);
SELECT state.advance_watermark('tr_over', 'infinity');
SELECT state.watermark('tr_over');
SELECT wait_for($$SELECT count(*) = 0 FROM state.windows('tr_over', ''::text)$$);
SELECT wait_for($$SELECT pending = 0 FROM state.timer_status WHERE name = 'tr_over'$$);
SELECT count(*) AS emitted_twice_only FROM tr_emitted;
-- after the last watermark every value is late
SELECT state.window_add('tr_over', 'key2', '294276-12-31 23:59:59.5+00', 4::bigint);
SELECT name, late FROM state.stats WHERE name = 'tr_over';
SELECT expect_error($$SELECT state.advance_watermark('tr_over', '2026-01-01 00:00:00+00')$$);
TRUNCATE tr_emitted;

-- The same in a transactional state: what fired is marked, and what is
-- past its lateness goes, in the commits of the timer worker's batches
SELECT state.create_state('tr_over_tx', 'window', 'text', 'bigint', assigner => 'tumbling',
                          size => '1 second', allowed_lateness => '2 seconds', reducer => 'sum',
                          transactional => true,
                          emit => 'tr_emit(text,timestamptz,timestamptz,bigint)');
BEGIN;
SELECT state.window_add('tr_over_tx', 'a', '294276-12-31 23:59:58.25+00', 1::bigint);
SELECT state.window_add('tr_over_tx', 'b', '294276-12-31 23:59:59.25+00', 2::bigint);
COMMIT;
SELECT state.advance_watermark('tr_over_tx', '294276-12-31 23:59:59+00');
SELECT wait_for($$SELECT count(*) = 1 FROM tr_emitted$$);
SELECT wait_for($$SELECT count(*) FILTER (WHERE fired) = 1 FROM state.windows('tr_over_tx', ''::text)$$);
SELECT key, window_start, window_end, fired FROM state.windows('tr_over_tx', ''::text) ORDER BY key;
SELECT state.advance_watermark('tr_over_tx', 'infinity');
SELECT wait_for($$SELECT count(*) = 2 FROM tr_emitted$$);
SELECT wait_for($$SELECT count(*) = 0 FROM state.windows('tr_over_tx', ''::text)$$);
SELECT k, ws, we, r FROM tr_emitted ORDER BY k;
TRUNCATE tr_emitted;

-- Tumbling windows of an hour at both ends of the range: the first instant
-- starts the first hour; the last instant's window is aligned (the hour
-- before the end), its end, past the range, is 'infinity'; a value some
-- years before the end (where the alignment to the epoch overflowed) is in
-- its hour.  Every finite start is a whole number of hours from the Unix
-- epoch, and holds its value
SELECT state.create_state('tr_hour', 'window', 'text', 'bigint', assigner => 'tumbling',
                          size => '1 hour', reducer => 'sum',
                          emit => 'tr_emit(text,timestamptz,timestamptz,bigint)');
CREATE TABLE tr_values (k text, t timestamptz);
INSERT INTO tr_values VALUES ('first', '4714-11-24 00:00:00+00 BC'),
    ('first', '4714-11-24 00:59:59.999999+00 BC'),
    ('late_years', '294270-06-01 12:34:56.789+00'),
    ('last', '294276-12-31 23:00:00+00'),
    ('last', '294276-12-31 23:59:59.999999+00');
SELECT state.window_add('tr_hour', k, t, 1::bigint) FROM tr_values;
SELECT key, window_start, window_end, fired FROM state.windows('tr_hour', ''::text) ORDER BY window_start;
SELECT v.k, v.t, extract(epoch FROM w.window_start) % 3600 = 0 AS aligned,
       v.t >= w.window_start AND v.t < w.window_end AS holds
  FROM tr_values v JOIN state.windows('tr_hour', ''::text) w ON w.key = v.k ORDER BY v.t;
SELECT state.window_get('tr_hour', 'last', '294276-12-31 23:00:00+00', 0::bigint) AS last_hour,
       state.window_get('tr_hour', 'first', '4714-11-24 00:00:00+00 BC', 0::bigint) AS first_hour;
-- the first hour fires when the watermark reaches its end, the last only
-- at 'infinity', with 'infinity' as its end
SELECT state.advance_watermark('tr_hour', '4714-11-24 01:00:00+00 BC');
SELECT wait_for($$SELECT count(*) = 1 FROM tr_emitted$$);
SELECT state.advance_watermark('tr_hour', '294276-12-31 23:59:59.999999+00');
SELECT wait_for($$SELECT count(*) = 2 FROM tr_emitted$$);
SELECT wait_for($$SELECT count(*) = 1 FROM state.windows('tr_hour', ''::text)$$);
SELECT key, window_start, window_end FROM state.windows('tr_hour', ''::text);
SELECT state.advance_watermark('tr_hour', 'infinity');
SELECT wait_for($$SELECT count(*) = 3 FROM tr_emitted$$);
SELECT wait_for($$SELECT count(*) = 0 FROM state.windows('tr_hour', ''::text)$$);
SELECT k, ws, we, r FROM tr_emitted ORDER BY id;
TRUNCATE tr_emitted;

-- Windows of a week, which the two epochs (1970 and 2000, 10,957 days
-- apart) lay differently: aligned to the Unix epoch everywhere (its day, a
-- Thursday, starts every week), before 1970, before 2000, years before the
-- end; the week of the first instant starts before the range and shows
-- '-infinity', the week of the last ends after it, 'infinity'
SELECT state.create_state('tr_week', 'window', 'text', 'bigint', assigner => 'tumbling',
                          size => '7 days', reducer => 'sum',
                          emit => 'tr_emit(text,timestamptz,timestamptz,bigint)');
TRUNCATE tr_values;
INSERT INTO tr_values VALUES ('a_first', '4714-11-24 00:00:00+00 BC'),
    ('b_1969', '1969-12-31 12:00:00+00'), ('c_1999', '1999-12-31 12:00:00+00'),
    ('d_epoch', '1970-01-01 00:00:00+00'), ('e_294270', '294270-06-01 12:00:00+00'),
    ('f_last', '294276-12-31 23:59:59.999999+00');
SELECT state.window_add('tr_week', k, t, 1::bigint) FROM tr_values;
SELECT key, window_start, window_end,
       extract(isodow FROM window_start) AS dow,
       window_start = '-infinity' OR extract(epoch FROM window_start) % (7 * 86400) = 0 AS aligned
  FROM state.windows('tr_week', ''::text) ORDER BY key;
SELECT state.window_get('tr_week', 'a_first', '-infinity', 0::bigint) AS first_week;
SELECT state.advance_watermark('tr_week', '4714-11-28 00:00:00+00 BC');
SELECT wait_for($$SELECT count(*) = 1 FROM tr_emitted$$);
SELECT k, ws, we, r FROM tr_emitted;
SELECT state.advance_watermark('tr_week', 'infinity');
SELECT wait_for($$SELECT count(*) = 6 FROM tr_emitted$$);
SELECT wait_for($$SELECT count(*) = 0 FROM state.windows('tr_week', ''::text)$$);
TRUNCATE tr_emitted;

-- Sliding windows of ten days every three days: the windows of the first
-- instant that start before the range show '-infinity' (window_get finds
-- the one that ends first), those of the last instant end at 'infinity';
-- each fires once
SELECT state.create_state('tr_slide', 'window', 'text', 'bigint', assigner => 'sliding',
                          size => '10 days', slide => '3 days', reducer => 'sum',
                          emit => 'tr_emit(text,timestamptz,timestamptz,bigint)');
SELECT state.window_add('tr_slide', 'first', '4714-11-24 00:00:00+00 BC', 1::bigint);
SELECT state.window_add('tr_slide', 'first', '4714-11-26 12:00:00+00 BC', 2::bigint);
SELECT state.window_add('tr_slide', 'last', '294276-12-31 23:59:59.999999+00', 4::bigint);
SELECT key, window_start, window_end,
       window_start = '-infinity' OR extract(epoch FROM window_start) % (3 * 86400) = 0 AS aligned
  FROM state.windows('tr_slide', ''::text) ORDER BY key, window_end, window_start;
SELECT state.window_get('tr_slide', 'first', '-infinity', 0::bigint) AS ends_first,
       state.window_get('tr_slide', 'last', '294276-12-24 00:00:00+00', 0::bigint) AS last_oldest;
SELECT state.advance_watermark('tr_slide', '294276-12-31 23:59:59.999999+00');
SELECT wait_for($$SELECT count(*) = 4 FROM tr_emitted$$);
SELECT state.advance_watermark('tr_slide', 'infinity');
SELECT wait_for($$SELECT count(*) = 7 FROM tr_emitted$$);
SELECT wait_for($$SELECT count(*) = 0 FROM state.windows('tr_slide', ''::text)$$);
SELECT k, ws, we, r FROM tr_emitted ORDER BY k, we, ws;
TRUNCATE tr_emitted;

-- Session windows whose gap passes the end: the window ends at 'infinity';
-- a value within the gap of it merges into it
SELECT state.create_state('tr_ses', 'window', 'text', 'bigint', assigner => 'session',
                          gap => '1 day', reducer => 'sum', allowed_lateness => '36600 days',
                          emit => 'tr_emit(text,timestamptz,timestamptz,bigint)');
SELECT state.window_add('tr_ses', 's', '294276-12-31 12:00:00+00', 1::bigint);
SELECT state.window_add('tr_ses', 's', '294276-12-30 13:00:00+00', 2::bigint);
SELECT state.window_add('tr_ses', 's', '4714-11-24 00:00:00+00 BC', 4::bigint);
SELECT key, window_start, window_end FROM state.windows('tr_ses', ''::text) ORDER BY window_start;
SELECT state.advance_watermark('tr_ses', 'infinity');
SELECT wait_for($$SELECT count(*) = 2 FROM tr_emitted$$);
SELECT wait_for($$SELECT count(*) = 0 FROM state.windows('tr_ses', ''::text)$$);
SELECT k, ws, we, r FROM tr_emitted ORDER BY ws;
TRUNCATE tr_emitted;

-- Intervals that do not fit: a size past what int64 microseconds hold, or
-- past a century, is 22023, as are months (no fixed length); a century is
-- the longest
SELECT expect_error($$SELECT state.create_state('tr_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '2147483647 days', reducer => 'sum', emit => 'tr_emit(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('tr_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '106751991 days 2562047788:00:54.775807', reducer => 'sum', emit => 'tr_emit(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('tr_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '36601 days', reducer => 'sum', emit => 'tr_emit(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('tr_x', 'window', 'text', 'bigint', assigner => 'session', gap => '1 year', reducer => 'sum', emit => 'tr_emit(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('tr_x', 'window', 'text', 'bigint', assigner => 'tumbling', size => '1 day', allowed_lateness => '-2147483648 days', reducer => 'sum', emit => 'tr_emit(text,timestamptz,timestamptz,bigint)')$$);
SELECT expect_error($$SELECT state.create_state('tr_x', 'value', 'text', 'bigint', ttl => '2147483647 months 2147483647 days')$$);
SELECT state.create_state('tr_century', 'window', 'text', 'bigint', assigner => 'tumbling',
                          size => '36600 days', allowed_lateness => '36600 days', reducer => 'sum',
                          emit => 'tr_emit(text,timestamptz,timestamptz,bigint)');
SELECT state.window_add('tr_century', 'c', '294276-12-31 23:59:59.999999+00', 1::bigint);
SELECT state.window_add('tr_century', 'c', '4714-11-24 00:00:00+00 BC', 1::bigint);
SELECT key, window_start, window_end FROM state.windows('tr_century', ''::text) ORDER BY window_end;
SELECT state.advance_watermark('tr_century', 'infinity');
SELECT wait_for($$SELECT count(*) = 2 FROM tr_emitted$$);
SELECT wait_for($$SELECT count(*) = 0 FROM state.windows('tr_century', ''::text)$$);
TRUNCATE tr_emitted;

-- Timers at both ends of the range fire; a timer's instant stays finite,
-- and 'infinity', the last watermark, fires every timer
CREATE TABLE tr_fired (k text, at timestamptz);
CREATE FUNCTION tr_on_timer(k text, at timestamptz) RETURNS void LANGUAGE sql
    AS $$ INSERT INTO tr_fired VALUES (k, at) $$;
SELECT state.create_state('tr_tm', 'timers', 'text', handler => 'tr_on_timer(text,timestamptz)',
                          time_domain => 'event');
SELECT state.timer_register('tr_tm', 'first'::text, '4714-11-24 00:00:00+00 BC');
SELECT state.timer_register('tr_tm', 'last'::text, '294276-12-31 23:59:59.999999+00');
SELECT expect_error($$SELECT state.timer_register('tr_tm', 'x'::text, 'infinity')$$);
SELECT state.advance_watermark('tr_tm', '4714-11-24 00:00:00+00 BC');
SELECT wait_for($$SELECT count(*) = 1 FROM tr_fired$$);
SELECT state.advance_watermark('tr_tm', 'infinity');
SELECT wait_for($$SELECT count(*) = 2 FROM tr_fired$$);
SELECT k, at FROM tr_fired ORDER BY at;

-- Cleanup
SELECT state.drop_state(name) FROM state.states WHERE name LIKE 'tr\_%' ORDER BY name;
DROP TABLE tr_emitted, tr_values, tr_fired;
DROP FUNCTION tr_emit(text, timestamptz, timestamptz, bigint);
DROP FUNCTION tr_on_timer(text, timestamptz);
