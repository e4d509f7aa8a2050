-- Each login of the application group reaches only the tenants its grants name,
-- and a lease belongs to the login that claimed it.
--
-- Row-level security on every table that holds a tenant's data: a login sees,
-- inserts and updates only rows of operations in a tenant where it holds any
-- role (`viewer` … `owner`, `ingest`, `worker`, `delegate`); a login with no grant
-- sees none. The table owner (who migrates, copies, verifies and keeps the
-- metric facts) bypasses row-level security, as PostgreSQL always lets it unless
-- FORCE is set, which it is not: the owner and superusers are trusted with the
-- whole store. Members of the owner role (`holdfast_trusted()`) see every row
-- too. A store without grants is single-user mode (the rules let anyone act
-- anywhere there), and so is the database: every login sees every row.
--
-- Left open on purpose: the chain head (its seq and hash only, which every
-- writer extends), the rows of the reserved ledgers (`holdfast:grants`,
-- `holdfast:autonomy`, `holdfast:drills`), the grants (who may act is read by
-- every login to decide who it is), contracts, autonomy levels and drill
-- results, which are per tool and belong to no tenant.
--
-- Where holdfast itself must read across tenants, it does so through functions
-- that run as the owner and return no tenant's content: the G9 queue flag
-- (`holdfast_requeue`: an operation held by a held dependency in another tenant
-- stays queued) and the tenants of a tool's operations, which the autonomy gate
-- needs (`holdfast_tool_tenants`: a raise needs an owner of every one of them).

-- Whether the login sees every row: trusted with the tables, or the store has
-- no grants yet.
CREATE FUNCTION holdfast_sees_all() RETURNS boolean
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT public.holdfast_trusted() OR NOT EXISTS (SELECT 1 FROM public.grants)
$$;

-- The tenants where the login holds any role.
CREATE FUNCTION holdfast_tenants() RETURNS text[]
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT coalesce(array_agg(DISTINCT g.tenant), '{}'::text[])
    FROM public.grants g WHERE g.identity = session_user::text
$$;

-- The policies call each function once per statement (a scalar subquery is
-- an init plan), not once per row.
ALTER TABLE operations ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON operations
    USING ((SELECT holdfast_sees_all()) OR tenant = ANY ((SELECT holdfast_tenants())::text[]));

-- The tables whose rows hang off an operation through `operation`: a row is
-- seen and written with its operation (whose own policy applies inside). A
-- dependency is the dependent's: it names the operation it waits on, which may
-- be in a tenant the login does not see, and is not seen from that side.
DO $$
DECLARE
    t TEXT;
BEGIN
    FOREACH t IN ARRAY ARRAY['attempts', 'items', 'observations', 'expectations',
        'wire_transitions', 'proposals', 'dependencies', 'work_leases', 'lookup_claims',
        'search_terms', 'metric_stale']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_rows ON %I USING ((SELECT holdfast_sees_all()) '
            'OR EXISTS (SELECT 1 FROM operations o WHERE o.id = %I.operation))', t, t);
    END LOOP;
END
$$;

-- Per tenant: the kept counts and facts.
DO $$
DECLARE
    t TEXT;
BEGIN
    FOREACH t IN ARRAY ARRAY['operation_counts', 'due_counts', 'metric_facts', 'metric_rows',
        'metric_counts']
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format(
            'CREATE POLICY tenant_rows ON %I USING ((SELECT holdfast_sees_all()) '
            'OR tenant = ANY ((SELECT holdfast_tenants())::text[]))', t);
    END LOOP;
END
$$;

-- A redaction of a contract belongs to no operation and is seen like the
-- contract; one of an operation, with it.
ALTER TABLE redactions ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON redactions
    USING ((SELECT holdfast_sees_all()) OR operation IS NULL
        OR EXISTS (SELECT 1 FROM operations o WHERE o.id = redactions.operation));

-- An audit row is seen with its operation; the reserved ledgers' rows by every
-- login. Appending needs only the head, which `holdfast_lock_head()` returns
-- as the owner; what a login may append is the audit triggers' to decide.
ALTER TABLE audit ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_rows ON audit
    USING ((SELECT holdfast_sees_all()) OR operation LIKE 'holdfast:%'
        OR EXISTS (SELECT 1 FROM operations o WHERE o.id = audit.operation));

-- The states that hold an operation in the queue (the Rust `State::HELD`; a
-- test holds the two equal).
CREATE FUNCTION holdfast_held_states() RETURNS text[]
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT ARRAY['UNKNOWN', 'PARTIAL', 'BLOCKED']::text[]
$$;

-- Recomputes whether `op`, and every operation that depends on `dependents_of`,
-- is in the queue (G9), over every tenant: a dependency in a tenant the login
-- does not see still holds its dependents. Only the derived `queued` flag moves
-- (which the audit triggers let pass without an audit row), to what the stored
-- states make it.
CREATE FUNCTION holdfast_requeue(op TEXT, dependents_of TEXT) RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    UPDATE public.operations SET queued = CASE
        WHEN state = ANY (public.holdfast_held_states()) OR EXISTS (
            SELECT 1 FROM public.dependencies d JOIN public.operations p ON p.id = d.depends_on
            WHERE d.operation = operations.id AND p.state = ANY (public.holdfast_held_states()))
        THEN 1 ELSE 0 END
    WHERE id = op OR id IN (SELECT operation FROM public.dependencies WHERE depends_on = dependents_of)
$$;
REVOKE ALL ON FUNCTION holdfast_requeue(TEXT, TEXT) FROM PUBLIC;

-- The tenants of a tool's operations, all of them: a change of the tool's
-- autonomy touches each, so it needs an owner of each (the gate's rule).
CREATE FUNCTION holdfast_tool_tenants(t TEXT) RETURNS TABLE (tenant TEXT)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT DISTINCT o.tenant FROM public.operations o WHERE o.tool = t
$$;
REVOKE ALL ON FUNCTION holdfast_tool_tenants(TEXT) FROM PUBLIC;

-- A lease is held by the login that claimed it (`claimed_by`; on SQLite the
-- identity the command acted as). Leases claimed before this migration belong to
-- the author of their latest claim row.
ALTER TABLE work_leases ADD COLUMN claimed_by TEXT NOT NULL DEFAULT '';
UPDATE work_leases SET claimed_by = coalesce((
    SELECT a.by_identity FROM audit a
    WHERE a.operation = work_leases.operation AND a.action = 'work-claim'
    ORDER BY a.seq DESC LIMIT 1), '');

-- For a login of the application group, the database holds the lease to its
-- login: a lease is written only in the login's own name, and another login's
-- lease changes only by a new claim once it is no longer live (released,
-- completed, or run out at the instant the new claim names, which may not be
-- later than the server's clock and a minute of skew). So no other login
-- heartbeats, completes or releases it, and live work is not handed out twice.
CREATE FUNCTION work_lease_holder() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    v_login TEXT := session_user::text;
    v_clock BIGINT := (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT;
BEGIN
    IF holdfast_trusted() THEN
        RETURN NEW;
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.claimed_by IS DISTINCT FROM v_login
        AND OLD.status = 'held' AND OLD.expires_ms > NEW.claimed_ms THEN
        RAISE EXCEPTION 'the lease on % is held by the login % (lease %) until % ms: only that login heartbeats, completes or releases it (G8)',
            OLD.operation, OLD.claimed_by, OLD.generation, OLD.expires_ms
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF NEW.claimed_by IS DISTINCT FROM v_login THEN
        RAISE EXCEPTION 'a lease is held in the login''s own name: % may not write the lease on % as %''s',
            v_login, NEW.operation, NEW.claimed_by
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.claimed_by IS DISTINCT FROM v_login THEN
        IF NEW.status <> 'held' OR NEW.generation <> OLD.generation + 1
            OR NEW.claimed_ms < OLD.claimed_ms THEN
            RAISE EXCEPTION 'the lease on % is the login %''s (lease %): % may only claim it anew (G8)',
                OLD.operation, OLD.claimed_by, OLD.generation, v_login
                USING ERRCODE = 'insufficient_privilege';
        END IF;
        IF NEW.claimed_ms > v_clock + 60000 THEN
            RAISE EXCEPTION 'a claim of % at % ms is later than the database''s clock (% ms): a lease is taken over only once it ran out (G8)',
                NEW.operation, NEW.claimed_ms, v_clock
                USING ERRCODE = 'insufficient_privilege';
        END IF;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER work_leases_held_by_login BEFORE INSERT OR UPDATE ON work_leases
    FOR EACH ROW EXECUTE FUNCTION work_lease_holder();

-- A store whose application group was granted its privileges before this
-- migration: whoever may lock the head (the recipe's group) may call the two
-- functions holdfast reads across tenants with, and may claim lookup slots,
-- which the recipe had left out (so `observe` failed for such a login).
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
        EXECUTE format('GRANT EXECUTE ON FUNCTION holdfast_requeue(TEXT, TEXT) TO %I', grantee_name);
        EXECUTE format('GRANT EXECUTE ON FUNCTION holdfast_tool_tenants(TEXT) TO %I', grantee_name);
        EXECUTE format('GRANT SELECT, INSERT, UPDATE ON lookup_claims TO %I', grantee_name);
    END LOOP;
END
$$;
