-- An audit row a login of the application group appends stays within that
-- login's grants, as the rules holdfast applies would have kept it (G6, G7). The
-- least-privilege migration binds a row's `by` to the login; this binds what the
-- row says the login did. Once the store has grants, a row of a login that is not
-- trusted with the tables (see `holdfast_trusted()`) is refused unless:
--
-- * its role may take its action: the pair is in `role_actions`;
-- * the identity it acts for holds that role on the operation's tenant (the
--   tenant of the operation as stored, an operation created earlier in the same
--   transaction included): the login itself, or, for a row with `on_behalf_of`,
--   that person, with the login holding `delegate` on the tenant;
-- * for a row written from wire records (an action the `ingest` role takes), whose
--   role and `on_behalf_of` are only what the source reported: the login itself
--   holds a role that takes the action (`ingest`, or `worker`) on the tenant;
-- * for a row of a reserved ledger (`holdfast:grants`, `holdfast:autonomy`,
--   `holdfast:drills`, which belong to no tenant): it is written by an owner in
--   its own name, as `owner`. Grants themselves change only by a trusted login:
--   the application group may not write the `grants` table.
--
-- The function runs as the tables' owner (the group needs no SELECT on
-- `role_actions`); `session_user` is still the login that appends the row.
--
-- The pairs below are generated from the Rust permission table
-- (`holdfast::core::access::role_actions`); a test holds the two equal.

CREATE TABLE role_actions (
    role   TEXT NOT NULL,
    action TEXT NOT NULL,
    PRIMARY KEY (role, action)
);

INSERT INTO role_actions (role, action) VALUES
    ('reviewer', 'reconcile'),
    ('reviewer', 'resolve'),
    ('reviewer', 'authorize-retry'),
    ('reviewer', 'approve-compensation'),
    ('reviewer', 'approve-resume'),
    ('reviewer', 'mark-compensated'),
    ('reviewer', 'mark-resumed'),
    ('reviewer', 'revalidate'),
    ('reviewer', 'block'),
    ('reviewer', 'schedule'),
    ('reviewer', 'comment'),
    ('reviewer', 'create'),
    ('approver', 'reconcile'),
    ('approver', 'resolve'),
    ('approver', 'authorize-retry'),
    ('approver', 'approve-compensation'),
    ('approver', 'approve-resume'),
    ('approver', 'mark-compensated'),
    ('approver', 'mark-resumed'),
    ('approver', 'revalidate'),
    ('approver', 'block'),
    ('approver', 'schedule'),
    ('approver', 'comment'),
    ('approver', 'confirm'),
    ('approver', 'reject'),
    ('approver', 'create'),
    ('owner', 'accept'),
    ('owner', 'assign'),
    ('ingest', 'ingest'),
    ('ingest', 'record'),
    ('ingest', 'transition'),
    ('worker', 'ingest'),
    ('worker', 'record'),
    ('worker', 'transition'),
    ('worker', 'work-claim'),
    ('worker', 'work-heartbeat'),
    ('worker', 'work-complete'),
    ('worker', 'work-release'),
    ('owner', 'grant'),
    ('owner', 'revoke'),
    ('owner', 'autonomy-set'),
    ('owner', 'drill');

CREATE FUNCTION audit_within_grants() RETURNS trigger
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

CREATE TRIGGER audit_within_grants BEFORE INSERT ON audit
    FOR EACH ROW EXECUTE FUNCTION audit_within_grants();
