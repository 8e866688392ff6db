/* state_backend--1.6--1.7.sql: ALTER EXTENSION state_backend UPDATE TO '1.7'. */

\echo Use "ALTER EXTENSION state_backend UPDATE TO '1.7'" to load this file. \quit

-- 1.7 hardens what runs for a state's owner and what only the extension's
-- own functions may call; a fresh install of 1.7 (state_backend--1.7.sql)
-- and 1.6 updated by this file end with the same objects and privileges
-- (sql/upgrade.sql compares them).
