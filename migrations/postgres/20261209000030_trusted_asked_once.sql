-- The least-privilege checks asked `holdfast_trusted()` twice for every row a
-- login of the application group writes: once in their trigger's WHEN, which
-- `20261209000010_trigger_costs` added so that the owner's rows call no check,
-- and again inside the function (in `audit_within_grants` and
-- `audit_domain_review` in an IF that also reads a table, which PostgreSQL
-- runs as a query of its own each time). `change_audited` and
-- `audit_domain_review` are replaced here without the second asking;
-- `audit_within_grants` is replaced whole by the next migration
-- (`20261209000040_grants_per_statement`), which asks only in its trigger
-- too. An ingest of 20,000 operations (88,835 records, `--defer-judging`) by
-- such a login took 20.4-22.4 s, and 15.1-16.5 s with the three checks
-- asking once. Every trigger that runs one of them asks in its WHEN (from
-- here on `redactions_are_audited` and `work_leases_are_audited` too, which
-- did not), a trigger function cannot be called but by a trigger, and only
-- the owner can create a trigger on these tables; a test holds every trigger
-- of these functions to that WHEN. What each check refuses is unchanged.

CREATE OR REPLACE FUNCTION change_audited() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    op_id TEXT := to_jsonb(NEW) ->> TG_ARGV[0];
BEGIN
    IF TG_OP = 'UPDATE'
        AND (to_jsonb(NEW) - 'queued' - 'route') = (to_jsonb(OLD) - 'queued' - 'route') THEN
        RETURN NULL;
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM public.audit a
        WHERE a.operation = op_id AND a.xmin = pg_current_xact_id()::xid
    ) THEN
        RAISE EXCEPTION 'a change to % of operation % has no audit row: every change is audited (G8)',
            TG_TABLE_NAME, op_id
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER redactions_are_audited ON redactions;
CREATE CONSTRAINT TRIGGER redactions_are_audited AFTER INSERT OR UPDATE ON redactions
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (NEW.operation IS NOT NULL AND NOT public.holdfast_trusted())
    EXECUTE FUNCTION change_audited('operation');

DROP TRIGGER work_leases_are_audited ON work_leases;
CREATE CONSTRAINT TRIGGER work_leases_are_audited AFTER INSERT OR UPDATE ON work_leases
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NOT public.holdfast_trusted())
    EXECUTE FUNCTION change_audited('operation');

CREATE OR REPLACE FUNCTION audit_domain_review() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_person TEXT := coalesce(NEW.on_behalf_of, session_user::text);
    v_recovery TEXT[] := ARRAY['authorize-retry', 'approve-compensation',
        'mark-compensated', 'approve-resume', 'mark-resumed', 'accept'];
    v_action TEXT := NEW.action;
    v_tenant TEXT;
    v_domain TEXT;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM public.grants) THEN
        RETURN NEW;
    END IF;
    IF v_action = 'confirm' THEN
        SELECT p.action INTO v_action FROM public.proposals p
         WHERE p.operation = NEW.operation
           AND NEW.evidence::jsonb ? ('proposal:' || p.id::text)
         LIMIT 1;
    END IF;
    IF v_action IS NULL OR NOT (v_action = ANY (v_recovery)) THEN
        RETURN NEW;
    END IF;
    SELECT o.tenant, c.wire::jsonb ->> 'domain_review' INTO v_tenant, v_domain
      FROM public.operations o JOIN public.contracts c ON c.tool = o.tool
     WHERE o.id = NEW.operation;
    IF v_domain IS NULL THEN
        RETURN NEW;
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM public.grants g
        WHERE g.identity = v_person AND g.role = 'domain:' || v_domain
          AND g.tenant = v_tenant
    ) THEN
        RAISE EXCEPTION 'recovery needs the domain''s review (G13): % holds no domain:% grant on tenant %, so it may not write a % row (operation %)',
            v_person, v_domain, v_tenant, NEW.action, NEW.operation
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;
