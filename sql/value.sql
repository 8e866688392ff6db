--
-- value: ValueState.  value_set / value_get / clear / truncate, NULL clears,
-- the default when absent, and no transaction undoes a change.
--
SELECT state.create_state('val', 'value', 'text', 'bigint');

-- absent key: the default, in the default's type
SELECT state.value_get('val', 'a', -1::bigint) AS absent,
       state.value_get('val', 'a', NULL::bigint) IS NULL AS absent_null_default;

-- set, read, overwrite
SELECT state.value_set('val', 'a', 1::bigint);
SELECT state.value_get('val', 'a', -1::bigint);
SELECT state.value_set('val', 'a', 2::bigint);
SELECT state.value_get('val', 'a', -1::bigint);
SELECT state.value_set('val', 'b', 20::bigint);
SELECT state.value_set('val', 'c', 30::bigint);
SELECT state.value_set('val', 'zero', 0::bigint);
-- a stored 0 is not mistaken for absence
SELECT state.value_get('val', 'zero', -1::bigint) AS zero;
-- keys are independent
SELECT k, state.value_get('val', k, -1::bigint) AS v
  FROM unnest(ARRAY['a', 'b', 'c', 'd', 'zero']) AS k ORDER BY k;
SELECT entries FROM state.states WHERE name = 'val';

-- a NULL value clears the key (typed NULL and untyped NULL)
SELECT state.value_set('val', 'b', NULL::bigint);
SELECT state.value_get('val', 'b', -1::bigint) AS b_cleared;
SELECT state.value_set('val', 'c', NULL);
SELECT state.value_get('val', 'c', -1::bigint) AS c_cleared;
SELECT k FROM state.keys('val', NULL::text) AS k ORDER BY k;
-- NULL on an absent key is harmless
SELECT state.value_set('val', 'never', NULL::bigint);
SELECT state.value_get('val', 'never', -1::bigint) AS never;

-- clear: true if the key had state, false otherwise
SELECT state.clear('val', 'a') AS had_state;
SELECT state.clear('val', 'a') AS had_state_again;
SELECT state.clear('val', 'never') AS never_had_state;
SELECT state.value_get('val', 'a', -1::bigint) AS a_cleared;
-- other keys survive a clear
SELECT state.value_get('val', 'zero', -1::bigint) AS zero_kept;

-- truncate: every key goes, the count is returned
SELECT state.value_set('val', 'k' || i, i::bigint) FROM generate_series(1, 5) i;
SELECT count(*) FROM state.keys('val', NULL::text);
SELECT state.truncate('val') AS removed;
SELECT count(*) FROM state.keys('val', NULL::text);
SELECT state.value_get('val', 'k3', -1::bigint) AS k3_gone;
SELECT state.truncate('val') AS removed_from_empty;
-- the state itself remains usable after truncate
SELECT state.value_set('val', 'after', 99::bigint);
SELECT state.value_get('val', 'after', -1::bigint);

-- not transactional: ROLLBACK does not undo a change
BEGIN;
SELECT state.value_set('val', 'tx', 1::bigint);
SELECT state.value_get('val', 'tx', -1::bigint) AS inside;
ROLLBACK;
SELECT state.value_get('val', 'tx', -1::bigint) AS after_rollback;

BEGIN;
SELECT state.value_set('val', 'tx', 2::bigint);
SELECT state.clear('val', 'after');
SELECT 1 / 0;
ROLLBACK;
SELECT state.value_get('val', 'tx', -1::bigint) AS after_failed_tx,
       state.value_get('val', 'after', -1::bigint) AS cleared_in_failed_tx;

BEGIN;
SAVEPOINT sp;
SELECT state.value_set('val', 'tx', 3::bigint);
ROLLBACK TO SAVEPOINT sp;
SELECT state.value_get('val', 'tx', -1::bigint) AS after_rollback_to_savepoint;
COMMIT;

BEGIN;
SELECT state.truncate('val');
ROLLBACK;
SELECT count(*) AS keys_after_rolled_back_truncate FROM state.keys('val', NULL::text);

-- a change made by one row of a statement is seen by the following rows
SELECT i, state.value_set('val', 'seq', i::bigint),
       state.value_get('val', 'seq', -1::bigint) AS seen
  FROM generate_series(1, 3) i;
SELECT state.value_get('val', 'seq', -1::bigint);

-- big values
SELECT state.create_state('val_text', 'value', 'text', 'text');
SELECT state.value_set('val_text', 'big', repeat('0123456789', 100000));
SELECT length(state.value_get('val_text', 'big', NULL::text)),
       md5(state.value_get('val_text', 'big', NULL::text)) = md5(repeat('0123456789', 100000)) AS same;
SELECT state.value_set('val_text', 'big', 'small now');
SELECT state.value_get('val_text', 'big', NULL::text);

SELECT state.drop_state('val');
SELECT state.drop_state('val_text');
