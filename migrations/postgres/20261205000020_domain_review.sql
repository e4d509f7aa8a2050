-- Domain review (G13). A contract may name a `domain_review` (legal, financial,
-- employment, privacy, security): a recovery action on its tool's holds then
-- needs the acting person to hold `domain:DOMAIN` on the operation's tenant as
-- well as the role that takes the action. holdfast's rules refuse it before any
-- write (`core::rules`, G13); this trigger makes the database refuse the audit
-- row of such an action written by a login of the application group without the
-- grant, whatever wrote it. The recovery actions are
-- `holdfast::core::rules::catalog::RECOVERY`; a `confirm` row is judged as the
-- proposal it confirms (named `proposal:ID` in its evidence). Trusted logins and
-- a store without grants (single-user mode) are left alone, as
-- `audit_within_grants` leaves them.

CREATE FUNCTION audit_domain_review() RETURNS trigger
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
    IF holdfast_trusted() OR NOT EXISTS (SELECT 1 FROM public.grants) THEN
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

CREATE TRIGGER audit_domain_review BEFORE INSERT ON audit
    FOR EACH ROW EXECUTE FUNCTION audit_domain_review();
