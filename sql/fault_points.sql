-- state_backend.fault_points: only a superuser arms fault points, a
-- malformed list is refused, and an armed point acts where it stands.
SET state_backend.fault_points = 'commit.begin';
SET state_backend.fault_points = 'commit.begin:explode';
SET state_backend.fault_points = 'Commit.Begin:error';
SET state_backend.fault_points = 'commit.begin:error:0';
SET state_backend.fault_points = 'commit.begin:error, apply.end:sleep:10';
RESET state_backend.fault_points;
CREATE ROLE fault_user;
SET ROLE fault_user;
SET state_backend.fault_points = 'commit.begin:error';
RESET ROLE;
DROP ROLE fault_user;

SELECT state.create_state('fault_t', 'value', 'text', 'bigint', transactional => true);
BEGIN;
SELECT state.value_set('fault_t', 'a', 1);
COMMIT;
-- An error at the first step of a transactional commit: the commit fails
-- and nothing of the transaction stays.
SET state_backend.fault_points = 'commit.begin:error';
BEGIN;
SELECT state.value_set('fault_t', 'a', 2);
COMMIT;
RESET state_backend.fault_points;
SELECT state.value_get('fault_t', 'a', 0::bigint);
-- At its second arrival only.
SET state_backend.fault_points = 'commit.begin:error:2';
BEGIN;
SELECT state.value_set('fault_t', 'a', 3);
COMMIT;
BEGIN;
SELECT state.value_set('fault_t', 'a', 4);
COMMIT;
BEGIN;
SELECT state.value_set('fault_t', 'a', 5);
COMMIT;
RESET state_backend.fault_points;
SELECT state.value_get('fault_t', 'a', 0::bigint);
SELECT state.drop_state('fault_t');
