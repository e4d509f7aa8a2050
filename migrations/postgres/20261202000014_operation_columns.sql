-- An operation's record (its wire line and record_hash), tenant, tool, risk,
-- budget, deadline and keys are written once, when it is ingested or created:
-- a login of the application group may change only the columns a decision, a
-- lookup or a worker moves (state, version, owner, next observation, queue
-- flag). Before this, the group's UPDATE on the whole table let a login
-- rewrite an operation's record together with its hash, which no other check
-- could tell from the original.
DO $$
DECLARE
    grantee_name TEXT;
BEGIN
    FOR grantee_name IN
        SELECT DISTINCT r.rolname FROM pg_proc p
        CROSS JOIN LATERAL aclexplode(p.proacl) a
        JOIN pg_roles r ON r.oid = a.grantee
        WHERE p.proname = 'holdfast_lock_head' AND a.privilege_type = 'EXECUTE'
          AND r.rolname <> current_user
    LOOP
        EXECUTE format('REVOKE UPDATE ON operations FROM %I', grantee_name);
        EXECUTE format(
            'GRANT UPDATE (state, state_since_ms, version, owner, next_observation_ms, '
            'observe_order, queued) ON operations TO %I', grantee_name);
    END LOOP;
END
$$;
