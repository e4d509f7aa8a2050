-- A hold goes to the owner its unresolved state calls for (ARCHITECTURE,
-- "Owners by the unresolved state"): the queue's OWNER column and `owner:`
-- filter read it at any size of store, so what decides it is kept beside each
-- operation, written by the database itself whenever that evidence arrives:
--
-- - `operations.route`: `assigned` once a reviewer assigned the owner, else the
--   role the evidence asks for: `security` (auth_denied, or a lookup that found
--   the record in another tenant), `integration` (validation_failed), `business`
--   (a lookup after the last request found the record, but not as expected);
--   NULL when the evidence asks for none. The incident route depends on the
--   clock (a partial or ambiguous effect past its observation window) and is
--   decided by the reading query against its own `now`.
-- - `contract_owners`: the owner a tool's contract names per role.
--
-- Both are derived from records the audit chain covers, by functions that run
-- as the owner: the application group may read them and write neither, so no
-- login can send a hold to an owner its evidence does not call for.

ALTER TABLE operations ADD COLUMN route TEXT;

-- A stored record line as jsonb for the few fields read here. jsonb refuses
-- the escape of NUL that a record's text may carry (it is evidence, kept
-- byte-exact); none of the fields read here can hold one, so it is read as
-- U+FFFD instead of failing the write that brought the record.
CREATE FUNCTION holdfast_wire(w TEXT) RETURNS jsonb
LANGUAGE sql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT replace(w, '\u0000', '\ufffd')::jsonb
$$;

CREATE TABLE contract_owners (
    tool  TEXT NOT NULL,
    role  TEXT NOT NULL,
    owner TEXT NOT NULL,
    PRIMARY KEY (tool, role)
);

CREATE FUNCTION holdfast_contract_owners(t TEXT) RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    DELETE FROM public.contract_owners WHERE tool = t;
    INSERT INTO public.contract_owners (tool, role, owner)
        SELECT c.tool, r.role, public.holdfast_wire(c.wire) -> 'owners' ->> r.role
        FROM public.contracts c
        CROSS JOIN (VALUES ('integration'), ('security'), ('business'), ('incident')) AS r (role)
        WHERE c.tool = t AND jsonb_typeof(public.holdfast_wire(c.wire) -> 'owners' -> r.role) = 'string';
$$;
REVOKE ALL ON FUNCTION holdfast_contract_owners(TEXT) FROM PUBLIC;

CREATE FUNCTION contract_owners_kept() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    PERFORM public.holdfast_contract_owners(NEW.tool);
    RETURN NULL;
END
$$;

CREATE TRIGGER contract_owners_kept AFTER INSERT OR UPDATE OF wire ON contracts
    FOR EACH ROW EXECUTE FUNCTION contract_owners_kept();

SELECT holdfast_contract_owners(tool) FROM contracts;

-- The evidence-decided route of every operation, by the rules `core::routing`
-- applies to an operation's detail. An observation's finding is read from its
-- record as `core::lookup::judge` reads it: found (and not a count of zero
-- effects), then another tenant's record, else a different target or payload
-- or more than one effect. Only the newest observation after the last
-- request's last instant (its end, else its start) counts.
CREATE VIEW operation_routes AS
    SELECT o.id AS id, CASE
        WHEN EXISTS (SELECT 1 FROM audit a WHERE a.operation = o.id AND a.action = 'assign')
            THEN 'assigned'
        WHEN o.failure_mode = 'auth_denied' THEN 'security'
        WHEN o.failure_mode = 'validation_failed' THEN 'integration'
        ELSE (SELECT CASE
                WHEN (w.j -> 'found') IS DISTINCT FROM 'true'::jsonb
                    OR (w.j -> 'effect_count') = '0'::jsonb THEN NULL
                WHEN (w.j -> 'matches' -> 'owner') = 'false'::jsonb THEN 'security'
                WHEN (w.j -> 'matches' -> 'target') = 'false'::jsonb
                    OR (w.j -> 'matches' -> 'payload_hash') = 'false'::jsonb
                    OR (jsonb_typeof(w.j -> 'effect_count') = 'number'
                        AND (w.j ->> 'effect_count')::numeric > 1) THEN 'business'
              END
              FROM observations ob CROSS JOIN LATERAL (SELECT holdfast_wire(ob.wire) AS j) w
              WHERE ob.operation = o.id AND ob.observed_ms > COALESCE(
                  (SELECT max(floor(extract(epoch FROM (COALESCE(holdfast_wire(at.wire) ->> 'ended_at',
                       holdfast_wire(at.wire) ->> 'started_at'))::timestamptz) * 1000)::bigint)
                   FROM attempts at WHERE at.operation = o.id AND at.kind = 'request'),
                  -9223372036854775807)
              ORDER BY ob.observed_ms DESC, ob.id DESC LIMIT 1)
    END AS route
    FROM operations o;

UPDATE operations o SET route = r.route FROM operation_routes r
    WHERE r.id = o.id AND r.route IS NOT NULL;

CREATE FUNCTION holdfast_reroute(op TEXT) RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    UPDATE public.operations o SET route = r.route FROM public.operation_routes r
    WHERE o.id = op AND r.id = op AND o.route IS DISTINCT FROM r.route
$$;
REVOKE ALL ON FUNCTION holdfast_reroute(TEXT) FROM PUBLIC;

CREATE FUNCTION operation_rerouted() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    -- A request changes the route only by hiding an observation's finding.
    IF TG_TABLE_NAME = 'attempts' AND NOT EXISTS (
        SELECT 1 FROM public.observations ob WHERE ob.operation = NEW.operation
    ) THEN
        RETURN NULL;
    END IF;
    PERFORM public.holdfast_reroute(NEW.operation);
    RETURN NULL;
END
$$;

CREATE TRIGGER operation_route_observation AFTER INSERT ON observations
    FOR EACH ROW EXECUTE FUNCTION operation_rerouted();
-- A new request hides the findings before it.
CREATE TRIGGER operation_route_request AFTER INSERT ON attempts
    FOR EACH ROW WHEN (NEW.kind = 'request') EXECUTE FUNCTION operation_rerouted();
CREATE TRIGGER operation_route_assign AFTER INSERT ON audit
    FOR EACH ROW WHEN (NEW.action = 'assign') EXECUTE FUNCTION operation_rerouted();

-- A new operation's route is its failure mode's, whatever the insert said:
-- nothing else of it is there yet.
CREATE FUNCTION operation_route_first() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    NEW.route := CASE NEW.failure_mode
        WHEN 'auth_denied' THEN 'security'
        WHEN 'validation_failed' THEN 'integration'
    END;
    RETURN NEW;
END
$$;
CREATE TRIGGER operation_route_insert BEFORE INSERT ON operations
    FOR EACH ROW
    WHEN (NEW.failure_mode IN ('auth_denied', 'validation_failed') OR NEW.route IS NOT NULL)
    EXECUTE FUNCTION operation_route_first();

-- The route, like the queue flag, is derived: its move needs no audit row of
-- its own (the record that moved it has one).
CREATE OR REPLACE FUNCTION change_audited() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    op_id TEXT := to_jsonb(NEW) ->> TG_ARGV[0];
BEGIN
    IF TG_OP = 'UPDATE'
        AND (to_jsonb(NEW) - 'queued' - 'route') = (to_jsonb(OLD) - 'queued' - 'route') THEN
        RETURN NULL;
    END IF;
    IF holdfast_trusted() THEN
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

-- Grants a privilege to the application group: every role, other than the
-- owner, that may lock the chain head (the grants docs/operations.md gives).
-- `statement` is a GRANT with `%I` where the role goes. Later migrations that
-- add a table call it instead of repeating the loop.
CREATE FUNCTION holdfast_grant_to_app(statement TEXT) RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp
AS $$
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
        EXECUTE format(statement, grantee_name);
    END LOOP;
END
$$;
REVOKE ALL ON FUNCTION holdfast_grant_to_app(TEXT) FROM PUBLIC;

-- Every login of the application group reads the contracts' owners.
SELECT holdfast_grant_to_app('GRANT SELECT ON contract_owners TO %I');
