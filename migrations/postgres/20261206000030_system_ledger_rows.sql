-- The system's own rows of the reserved ledgers, written by whoever brought
-- them about (DESIGN §9.4, §9.5). A login of the application group writes audit
-- rows only in its own name, and until now a reserved ledger's row only as an
-- owner: so a gateway login could not move its tool's circuit, an ingest login
-- could not ingest a tool's new contract version, and neither could write the
-- drop of a tool whose drill that made stale. Those three rows are the system's
-- act (role `system`, no person on whose behalf) and are taken from a login that
-- holds `ingest`, `worker` or `owner` on some tenant:
--
-- * a `circuit` row of `holdfast:circuits` (the failures or the probe a sender
--   saw; `audit verify` compares the stored circuits with these rows);
-- * a `contract-version` row of `holdfast:drills` (the version an ingest took);
-- * an `autonomy-set` row of `holdfast:autonomy` that sets a tool to `manual`
--   (the stale drop: a level only ever goes down this way; `audit verify`
--   refuses a `system` level row to any other level).
--
-- Everything else is as before.
CREATE OR REPLACE FUNCTION audit_within_grants() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_login TEXT := session_user::text;
    v_person TEXT := coalesce(NEW.on_behalf_of, session_user::text);
    v_tenant TEXT;
BEGIN
    IF holdfast_trusted() OR NOT EXISTS (SELECT 1 FROM public.grants) THEN
        RETURN NEW;
    END IF;
    IF NEW.operation LIKE 'holdfast:%' THEN
        IF NEW.role = 'system' AND NEW.on_behalf_of IS NULL
            AND ((NEW.operation = 'holdfast:circuits' AND NEW.action = 'circuit')
              OR (NEW.operation = 'holdfast:drills' AND NEW.action = 'contract-version')
              OR (NEW.operation = 'holdfast:autonomy' AND NEW.action = 'autonomy-set'
                  AND NEW.evidence::jsonb ? 'level:manual'))
            AND EXISTS (SELECT 1 FROM public.grants g
                        WHERE g.identity = v_login AND g.role IN ('ingest', 'worker', 'owner')) THEN
            RETURN NEW;
        END IF;
        IF NEW.role <> 'owner' OR NEW.on_behalf_of IS NOT NULL
            OR NOT EXISTS (SELECT 1 FROM public.role_actions r
                           WHERE r.role = 'owner' AND r.action = NEW.action)
            OR NOT EXISTS (SELECT 1 FROM public.grants g
                           WHERE g.identity = v_login AND g.role = 'owner') THEN
            RAISE EXCEPTION 'audit rows stay within the writer''s grants (G6): % may not write a % row as % on %; its rows are an owner''s, in the owner''s own name',
                v_login, NEW.action, NEW.role, NEW.operation
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        RETURN NEW;
    END IF;
    SELECT o.tenant INTO v_tenant FROM public.operations o WHERE o.id = NEW.operation;
    IF v_tenant IS NULL THEN
        RAISE EXCEPTION 'audit rows stay within the writer''s grants (G7): % names operation %, which the store does not hold',
            v_login, NEW.operation
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF EXISTS (SELECT 1 FROM public.role_actions r
               WHERE r.role = 'ingest' AND r.action = NEW.action) THEN
        IF NOT EXISTS (SELECT 1 FROM public.role_actions r
                       JOIN public.grants g ON g.role = r.role
                       WHERE r.action = NEW.action AND g.identity = v_login
                         AND g.tenant = v_tenant) THEN
            RAISE EXCEPTION 'audit rows stay within the writer''s grants (G7): % holds no role that writes % rows on tenant % (operation %)',
                v_login, NEW.action, v_tenant, NEW.operation
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        RETURN NEW;
    END IF;
    IF NOT EXISTS (SELECT 1 FROM public.role_actions r
                   WHERE r.role = NEW.role AND r.action = NEW.action) THEN
        RAISE EXCEPTION 'audit rows stay within the writer''s grants (G6): the role % may not take % (operation %)',
            NEW.role, NEW.action, NEW.operation
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF v_person <> v_login AND NOT EXISTS (
        SELECT 1 FROM public.grants g
        WHERE g.identity = v_login AND g.role = 'delegate' AND g.tenant = v_tenant
    ) THEN
        RAISE EXCEPTION 'audit rows stay within the writer''s grants (G6): % holds no delegate role on tenant % to act for % (operation %)',
            v_login, v_tenant, v_person, NEW.operation
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM public.grants g
        WHERE g.identity = v_person AND g.role = NEW.role AND g.tenant = v_tenant
    ) THEN
        RAISE EXCEPTION 'audit rows stay within the writer''s grants (G7): % does not hold % on tenant % (operation %)',
            v_person, NEW.role, v_tenant, NEW.operation
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;
-- A tool's new contract version replaces its stored contract: a login of the
-- application group may update a contract's row only in the transaction that
-- appends that tool's `contract-version` row (checked at commit), so no contract
-- changes unrecorded.
CREATE FUNCTION contract_change_versioned() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    IF holdfast_trusted() THEN
        RETURN NULL;
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM public.audit a
        WHERE a.operation = 'holdfast:drills' AND a.action = 'contract-version'
          AND a.evidence::jsonb ? ('tool:' || NEW.tool)
          AND a.xmin = pg_current_xact_id()::xid
    ) THEN
        RAISE EXCEPTION 'a change to the contract of tool % has no contract-version audit row: every change is audited (G8)',
            NEW.tool
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER contracts_are_versioned AFTER UPDATE ON contracts
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION contract_change_versioned();

-- The application group (whoever may lock the chain head) updates a contract's
-- row when it ingests the tool's new version.
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
        EXECUTE format('GRANT UPDATE (max_attempts, wire, record_hash) ON contracts TO %I', grantee_name);
    END LOOP;
END
$$;
