--
-- views: every view of the extension is a security barrier, so that a
-- condition of the caller's (a cheap function that prints its argument)
-- never sees a row the view keeps from the caller: here another role's
-- failed timers, their keys and errors.
--
SELECT c.oid::regclass AS view_without_barrier
  FROM pg_class c
 WHERE c.relnamespace = 'state'::regnamespace AND c.relkind = 'v'
   AND NOT coalesce('security_barrier=true' = ANY (c.reloptions), false);
SELECT count(*) AS views FROM pg_class
 WHERE relnamespace = 'state'::regnamespace AND relkind = 'v';

CREATE ROLE regress_sb_view_a;
CREATE ROLE regress_sb_view_b;
-- Two failed timers, one of each role's (as the timer worker writes them).
INSERT INTO state._failed_timers (name, state_id, owner, key, at, attempts, error, failed_at)
VALUES ('v_timers_a', 1, 'regress_sb_view_a'::regrole, 'key of a', '2024-01-01', 3, 'error of a', '2024-01-01'),
       ('v_timers_b', 2, 'regress_sb_view_b'::regrole, 'key of b', '2024-01-01', 3, 'error of b', '2024-01-01');

SET ROLE regress_sb_view_a;
-- Cheaper than the view's own condition: without a barrier it would run first.
CREATE FUNCTION pg_temp.leak(text) RETURNS boolean LANGUAGE plpgsql COST 0.0000001 AS $$
BEGIN
    RAISE NOTICE 'the caller saw %', $1;
    RETURN true;
END
$$;
SELECT name, key FROM state.timer_failures WHERE pg_temp.leak(key) AND pg_temp.leak(error);
SELECT name FROM state.timer_failures WHERE pg_temp.leak(name) ORDER BY name;
DROP FUNCTION pg_temp.leak(text);
RESET ROLE;

DELETE FROM state._failed_timers WHERE name IN ('v_timers_a', 'v_timers_b');
DROP ROLE regress_sb_view_a;
DROP ROLE regress_sb_view_b;
