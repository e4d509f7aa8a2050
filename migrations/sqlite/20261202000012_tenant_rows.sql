-- A lease belongs to the identity that claimed it (`claimed_by`): on
-- PostgreSQL the database login, here the identity the command acted as. Only
-- that identity heartbeats, completes or releases it. (The PostgreSQL migration
-- of the same number also holds each login to its tenants' rows; a file has no
-- logins, so this half is all SQLite needs.) Leases claimed before this
-- migration belong to the author of their latest claim row.
ALTER TABLE work_leases ADD COLUMN claimed_by TEXT NOT NULL DEFAULT '';
UPDATE work_leases SET claimed_by = coalesce((
    SELECT a.by_identity FROM audit a
    WHERE a.operation = work_leases.operation AND a.action = 'work-claim'
    ORDER BY a.seq DESC LIMIT 1), '');
