-- The report's facts kept per operation (src/core/metrics/stored.rs), so the
-- metrics tab and `holdfast report` read sums and short listings instead of
-- judging every record each time.
--
-- `metric_stale` names the operations whose facts may be out of date: every
-- write to an operation or a record hanging off it marks the operation here,
-- from a trigger, whichever door wrote it (ingest, the console, the command
-- line, a worker or plain SQL). `mark` grows with each write, so the report
-- clears a mark only if no write came after the one it judged. A report judges
-- the marked operations and their relatives, then reads the facts.
CREATE TABLE metric_stale (
    operation TEXT PRIMARY KEY NOT NULL,
    mark      BIGINT NOT NULL
);

-- One row per judged operation: the instants between which its facts hold
-- (the latest time in its records at or before the instant it was judged at,
-- `valid_ms`, and the earliest after, `stale_ms`; a report at an instant
-- outside judges it again), and whether a relative is in another tenant (a
-- scoped report judges it anew).
CREATE TABLE metric_facts (
    operation         TEXT PRIMARY KEY NOT NULL,
    tenant            TEXT NOT NULL,
    valid_ms          BIGINT,
    stale_ms          BIGINT,
    foreign_relatives INTEGER NOT NULL
);
CREATE INDEX metric_facts_stale ON metric_facts (stale_ms) WHERE stale_ms IS NOT NULL;
CREATE INDEX metric_facts_valid ON metric_facts (valid_ms) WHERE valid_ms IS NOT NULL;
CREATE INDEX metric_facts_foreign ON metric_facts (tenant) WHERE foreign_relatives = 1;

-- The facts themselves, one row per (kind, operation); the kinds are listed in
-- src/core/metrics/stored.rs. Listings read a kind in operation order.
CREATE TABLE metric_rows (
    kind      TEXT NOT NULL,
    operation TEXT NOT NULL,
    tenant    TEXT NOT NULL,
    n         BIGINT NOT NULL,
    reason    TEXT,
    PRIMARY KEY (kind, operation)
);
CREATE INDEX metric_rows_of ON metric_rows (operation);
CREATE INDEX metric_rows_by_n ON metric_rows (kind, n);

-- Per (tenant, kind): how many rows and the sum of their `n`, kept in the same
-- transaction that writes the rows, so a figure is a sum over the scope's
-- tenants.
CREATE TABLE metric_counts (
    tenant    TEXT NOT NULL,
    kind      TEXT NOT NULL,
    row_count BIGINT NOT NULL,
    n_sum     BIGINT NOT NULL,
    PRIMARY KEY (tenant, kind)
);

-- A store that was never judged is stale throughout.
INSERT INTO metric_stale (operation, mark) SELECT id, 1 FROM operations;

-- The triggers run as the owner, so a login needs no grant on `metric_stale`
-- to write records.
CREATE FUNCTION metric_mark(op TEXT) RETURNS void
LANGUAGE sql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
    INSERT INTO public.metric_stale (operation, mark) VALUES (op, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = public.metric_stale.mark + 1
$$;
REVOKE ALL ON FUNCTION metric_mark(TEXT) FROM PUBLIC;

CREATE FUNCTION metric_mark_operation() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.wire IS NOT DISTINCT FROM NEW.wire
        AND OLD.state IS NOT DISTINCT FROM NEW.state AND OLD.owner IS NOT DISTINCT FROM NEW.owner
        AND OLD.next_observation_ms IS NOT DISTINCT FROM NEW.next_observation_ms
        AND OLD.tenant IS NOT DISTINCT FROM NEW.tenant THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'DELETE' THEN
        PERFORM public.metric_mark(OLD.id);
    ELSE
        PERFORM public.metric_mark(NEW.id);
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION metric_mark_operation() FROM PUBLIC;

CREATE TRIGGER metric_stale_operations AFTER INSERT OR UPDATE OR DELETE ON operations
    FOR EACH ROW EXECUTE FUNCTION metric_mark_operation();

-- For the tables whose rows hang off an operation through `operation`.
CREATE FUNCTION metric_mark_record() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM public.metric_mark(OLD.operation);
    ELSE
        PERFORM public.metric_mark(NEW.operation);
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION metric_mark_record() FROM PUBLIC;

-- A dependency changes the facts of both its ends.
CREATE FUNCTION metric_mark_dependency() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM public.metric_mark(OLD.operation);
        PERFORM public.metric_mark(OLD.depends_on);
    ELSE
        PERFORM public.metric_mark(NEW.operation);
        PERFORM public.metric_mark(NEW.depends_on);
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION metric_mark_dependency() FROM PUBLIC;

CREATE TRIGGER metric_stale_dependencies AFTER INSERT OR UPDATE OR DELETE ON dependencies
    FOR EACH ROW EXECUTE FUNCTION metric_mark_dependency();
CREATE TRIGGER metric_stale_attempts AFTER INSERT OR UPDATE OR DELETE ON attempts
    FOR EACH ROW EXECUTE FUNCTION metric_mark_record();
CREATE TRIGGER metric_stale_observations AFTER INSERT OR UPDATE OR DELETE ON observations
    FOR EACH ROW EXECUTE FUNCTION metric_mark_record();
CREATE TRIGGER metric_stale_items AFTER INSERT OR UPDATE OR DELETE ON items
    FOR EACH ROW EXECUTE FUNCTION metric_mark_record();
CREATE TRIGGER metric_stale_expectations AFTER INSERT OR UPDATE OR DELETE ON expectations
    FOR EACH ROW EXECUTE FUNCTION metric_mark_record();
CREATE TRIGGER metric_stale_proposals AFTER INSERT OR UPDATE OR DELETE ON proposals
    FOR EACH ROW EXECUTE FUNCTION metric_mark_record();
CREATE TRIGGER metric_stale_audit AFTER INSERT ON audit
    FOR EACH ROW EXECUTE FUNCTION metric_mark_record();

-- A contract is read by the rules over every operation of its tool.
CREATE FUNCTION metric_mark_contract() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    INSERT INTO public.metric_stale (operation, mark)
        SELECT id, 1 FROM public.operations WHERE tool = NEW.tool
        ON CONFLICT (operation) DO UPDATE SET mark = public.metric_stale.mark + 1;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION metric_mark_contract() FROM PUBLIC;

CREATE TRIGGER metric_stale_contracts AFTER INSERT OR UPDATE ON contracts
    FOR EACH ROW EXECUTE FUNCTION metric_mark_contract();
