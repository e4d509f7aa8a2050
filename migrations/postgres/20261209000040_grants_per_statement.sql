-- The check that an audit row stays within the grants of the login that
-- appends it (`audit_within_grants`, G6/G7) ran before each row: four or five
-- lookups of `grants`, `role_actions` and `operations` per row, each a query
-- of its own. An ingest of 20,000 operations by a login of the application
-- group appends 40,000 audit rows, and spent 4.3 of its 17 s there
-- (`track_functions`). It now runs once per statement, after it, over the
-- statement's rows (a transition table): the login's grants and the
-- role-action pairs are read once, the operations' tenants in one join, and
-- each row is checked in memory in `seq` order. It refuses the same rows with
-- the same words, the first such row's, and the statement with it; only a
-- login of the application group reaches it (the trigger's WHEN), as before.
-- A row of an operation the login cannot see would be refused by row-level
-- security before any statement-level check runs, in the policy's words: a
-- check before each row (one lookup) finds those and checks them at once.
-- A row another check refuses too (written in another's name, or a recovery
-- without the domain's review) is now refused by that check first, as those
-- still run before each row.

-- The check of `rows`, in `seq` order: raises on the first row out of
-- bounds, in its words.
CREATE FUNCTION holdfast_audit_within_grants(rows public.audit[]) RETURNS void
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_login TEXT := session_user::text;
    -- What the login holds: each role on each tenant, and each role anywhere.
    v_held TEXT[];
    v_roles TEXT[];
    -- Each role with each action it takes.
    v_takes TEXT[];
    v_person TEXT;
    v_role TEXT;
    v_found BOOLEAN;
    r RECORD;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM public.grants) THEN
        RETURN;
    END IF;
    SELECT coalesce(array_agg(jsonb_build_array(g.role, g.tenant)::text), '{}'),
           coalesce(array_agg(DISTINCT g.role), '{}')
      INTO v_held, v_roles
      FROM public.grants g WHERE g.identity = v_login;
    SELECT coalesce(array_agg(jsonb_build_array(ra.role, ra.action)::text), '{}')
      INTO v_takes FROM public.role_actions ra;
    FOR r IN
        SELECT n.seq, n.operation, n.action, n.role, n.on_behalf_of, n.evidence, o.tenant
          FROM unnest(rows) n LEFT JOIN public.operations o ON o.id = n.operation
         ORDER BY n.seq
    LOOP
        v_person := coalesce(r.on_behalf_of, v_login);
        IF r.operation LIKE 'holdfast:%' THEN
            IF r.role = 'system' AND r.on_behalf_of IS NULL
                AND ((r.operation = 'holdfast:circuits' AND r.action = 'circuit')
                  OR (r.operation = 'holdfast:drills' AND r.action = 'contract-version')
                  OR (r.operation = 'holdfast:autonomy' AND r.action = 'autonomy-set'
                      AND r.evidence::jsonb ? 'level:manual'))
                AND v_roles && ARRAY['ingest', 'worker', 'owner'] THEN
                CONTINUE;
            END IF;
            IF r.role <> 'owner' OR r.on_behalf_of IS NOT NULL
                OR NOT (jsonb_build_array('owner', r.action)::text = ANY (v_takes))
                OR NOT ('owner' = ANY (v_roles)) THEN
                RAISE EXCEPTION 'audit rows stay within the writer''s grants (G6): % may not write a % row as % on %; its rows are an owner''s, in the owner''s own name',
                    v_login, r.action, r.role, r.operation
                    USING ERRCODE = 'insufficient_privilege';
            END IF;
            CONTINUE;
        END IF;
        IF r.tenant IS NULL THEN
            RAISE EXCEPTION 'audit rows stay within the writer''s grants (G7): % names operation %, which the store does not hold',
                v_login, r.operation
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF jsonb_build_array('ingest', r.action)::text = ANY (v_takes) THEN
            v_found := false;
            FOREACH v_role IN ARRAY v_roles LOOP
                IF jsonb_build_array(v_role, r.action)::text = ANY (v_takes)
                    AND jsonb_build_array(v_role, r.tenant)::text = ANY (v_held) THEN
                    v_found := true;
                    EXIT;
                END IF;
            END LOOP;
            IF NOT v_found THEN
                RAISE EXCEPTION 'audit rows stay within the writer''s grants (G7): % holds no role that writes % rows on tenant % (operation %)',
                    v_login, r.action, r.tenant, r.operation
                    USING ERRCODE = 'insufficient_privilege';
            END IF;
            CONTINUE;
        END IF;
        IF NOT (jsonb_build_array(r.role, r.action)::text = ANY (v_takes)) THEN
            RAISE EXCEPTION 'audit rows stay within the writer''s grants (G6): the role % may not take % (operation %)',
                r.role, r.action, r.operation
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF v_person <> v_login
            AND NOT (jsonb_build_array('delegate', r.tenant)::text = ANY (v_held)) THEN
            RAISE EXCEPTION 'audit rows stay within the writer''s grants (G6): % holds no delegate role on tenant % to act for % (operation %)',
                v_login, r.tenant, v_person, r.operation
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF v_person = v_login THEN
            v_found := jsonb_build_array(r.role, r.tenant)::text = ANY (v_held);
        ELSE
            v_found := EXISTS (
                SELECT 1 FROM public.grants g
                WHERE g.identity = v_person AND g.role = r.role AND g.tenant = r.tenant
            );
        END IF;
        IF NOT v_found THEN
            RAISE EXCEPTION 'audit rows stay within the writer''s grants (G7): % does not hold % on tenant % (operation %)',
                v_person, r.role, r.tenant, r.operation
                USING ERRCODE = 'insufficient_privilege';
        END IF;
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION holdfast_audit_within_grants(public.audit[]) FROM PUBLIC;

-- After a statement: its rows, together.
CREATE OR REPLACE FUNCTION audit_within_grants() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    PERFORM public.holdfast_audit_within_grants(
        (SELECT array_agg(ROW(n.*)::public.audit ORDER BY n.seq) FROM new_rows n));
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION audit_within_grants() FROM PUBLIC;

-- Before a row the table's row-level security would refuse (an operation of
-- a tenant the login holds nothing on, or none at all): the same check of that
-- row alone, so that the refusal names the rule the row breaks rather than
-- the policy. The operation is looked for among the tenants the login holds
-- a grant on, as the policy looks for it (`holdfast_tenants()`).
CREATE FUNCTION audit_seen_by_login() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
SET plan_cache_mode = auto
AS $$
BEGIN
    IF NEW.operation NOT LIKE 'holdfast:%' AND NOT EXISTS (
        SELECT 1 FROM public.operations o JOIN public.grants g ON g.tenant = o.tenant
        WHERE o.id = NEW.operation AND g.identity = session_user::text
    ) THEN
        PERFORM public.holdfast_audit_within_grants(ARRAY[NEW]);
    END IF;
    RETURN NEW;
END
$$;
REVOKE ALL ON FUNCTION audit_seen_by_login() FROM PUBLIC;
CREATE TRIGGER audit_seen_by_login BEFORE INSERT ON audit
    FOR EACH ROW WHEN (NOT public.holdfast_trusted()) EXECUTE FUNCTION audit_seen_by_login();

DROP TRIGGER audit_within_grants ON audit;
CREATE TRIGGER audit_within_grants AFTER INSERT ON audit
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT WHEN (NOT public.holdfast_trusted())
    EXECUTE FUNCTION audit_within_grants();

-- An ingest batch plans each of its own statements for the values it binds
-- (`SET LOCAL plan_cache_mode = force_custom_plan`, `Backend::BATCH_PLANS`),
-- and the setting held inside the triggers too: each query of a row-level
-- check was planned anew for every row. `audit_seen_by_login` took 89 us a
-- row for its one lookup, which runs in 6 us with its plan kept; 20,000
-- operations by an application-group login took 16.3-18.3 s, and 10.0-10.1 s
-- with the checks below keeping their plans. A check's queries look up one
-- key, whatever its value, so one plan serves them all.
ALTER FUNCTION change_audited() SET plan_cache_mode = auto;
ALTER FUNCTION audit_domain_review() SET plan_cache_mode = auto;
