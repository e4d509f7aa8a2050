-- What a login of the application group may do to the tables is only what holdfast
-- does, and only in its own name. The database owner (who migrates, copies and
-- grants) and superusers are trusted as before; everyone else:
--
-- * writes audit rows only as itself: `by_identity` must be `session_user`;
-- * changes or creates an operation only in a transaction that appends an audit
--   row for it (checked at commit, so the order of the statements does not
--   matter); a change of the `queued` flag alone (G9 upkeep) needs none;
-- * cannot move the chain head: it holds no UPDATE on `chain_head`; writers lock
--   the head through `holdfast_lock_head()`, and the head moves only inside
--   `audit_extend_head`, which runs as the owner;
-- * reaches none of these functions' tables through its own temporary objects:
--   every function here, and the head trigger, resolves names with a fixed
--   search_path that puts `pg_temp` last (and the README's recipe revokes TEMP).

-- Whether the login is trusted with the tables: the owner of the schema's tables
-- or a member of that role (a superuser is a member of every role).
CREATE FUNCTION holdfast_trusted() RETURNS boolean
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $$
    SELECT pg_has_role(session_user,
        (SELECT relowner FROM pg_class WHERE oid = 'public.audit'::regclass), 'MEMBER')
$$;

CREATE FUNCTION audit_by_login() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    IF NEW.by_identity IS DISTINCT FROM session_user::text AND NOT holdfast_trusted() THEN
        RAISE EXCEPTION 'audit rows are written in the login''s own name: % may not write a row by %',
            session_user, NEW.by_identity
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER audit_written_by_login BEFORE INSERT ON audit
    FOR EACH ROW EXECUTE FUNCTION audit_by_login();

-- An operation, and the records and proposals that hang off it, change only with
-- an audit row of that operation in the same transaction (ingest writes a `record`
-- row, a reviewer action its own row). The trigger's argument names the column
-- that holds the operation's id. Contracts, dependencies and search terms belong
-- to no decision and are left to the grants.
CREATE FUNCTION change_audited() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp
AS $$
DECLARE
    op_id TEXT := to_jsonb(NEW) ->> TG_ARGV[0];
BEGIN
    IF TG_OP = 'UPDATE' AND (to_jsonb(NEW) - 'queued') = (to_jsonb(OLD) - 'queued') THEN
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

CREATE CONSTRAINT TRIGGER operations_are_audited AFTER INSERT OR UPDATE ON operations
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION change_audited('id');
CREATE CONSTRAINT TRIGGER attempts_are_audited AFTER INSERT OR UPDATE ON attempts
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION change_audited('operation');
CREATE CONSTRAINT TRIGGER observations_are_audited AFTER INSERT OR UPDATE ON observations
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION change_audited('operation');
CREATE CONSTRAINT TRIGGER items_are_audited AFTER INSERT OR UPDATE ON items
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION change_audited('operation');
CREATE CONSTRAINT TRIGGER expectations_are_audited AFTER INSERT OR UPDATE ON expectations
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION change_audited('operation');
CREATE CONSTRAINT TRIGGER wire_transitions_are_audited AFTER INSERT OR UPDATE ON wire_transitions
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION change_audited('operation');
CREATE CONSTRAINT TRIGGER proposals_are_audited AFTER INSERT OR UPDATE ON proposals
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION change_audited('operation');

-- The head moves only here; the function runs as its owner, so the application
-- group needs no UPDATE on the head.
ALTER FUNCTION audit_extend_head() SECURITY DEFINER;
ALTER FUNCTION audit_extend_head() SET search_path = pg_catalog, public, pg_temp;
ALTER FUNCTION chain_head_guard() SET search_path = pg_catalog, public, pg_temp;
ALTER FUNCTION audit_append_only() SET search_path = pg_catalog, public, pg_temp;
ALTER FUNCTION audit_notify() SET search_path = pg_catalog, public, pg_temp;

-- The first statement of every write transaction: the head, locked until commit,
-- so writers take turns. Runs as the owner, so the caller needs no UPDATE on it.
CREATE FUNCTION holdfast_lock_head() RETURNS TABLE (seq BIGINT, hash TEXT)
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    SELECT h.seq, h.hash FROM public.chain_head h FOR UPDATE
$$;
REVOKE ALL ON FUNCTION holdfast_lock_head() FROM PUBLIC;
