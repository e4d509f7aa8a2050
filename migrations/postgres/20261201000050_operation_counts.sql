-- The queue header's counts without a scan of the operations: how many
-- operations each (tenant, state, queued) holds, kept by a trigger in the same
-- transaction as every write that inserts, moves or deletes an operation.
-- Rows that fall to zero stay (a read skips them). The trigger runs as the
-- owner, so a least-privilege login needs only SELECT on the table.
CREATE TABLE operation_counts (
    tenant TEXT NOT NULL,
    state  TEXT NOT NULL,
    queued INTEGER NOT NULL,
    n      BIGINT NOT NULL,
    PRIMARY KEY (tenant, state, queued)
);

INSERT INTO operation_counts (tenant, state, queued, n)
    SELECT tenant, state, queued, count(*) FROM operations GROUP BY tenant, state, queued;

CREATE FUNCTION operation_counts_keep() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.tenant = NEW.tenant AND OLD.state = NEW.state
        AND OLD.queued = NEW.queued THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE public.operation_counts SET n = n - 1
            WHERE tenant = OLD.tenant AND state = OLD.state AND queued = OLD.queued;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO public.operation_counts (tenant, state, queued, n)
            VALUES (NEW.tenant, NEW.state, NEW.queued, 1)
            ON CONFLICT (tenant, state, queued) DO UPDATE SET n = public.operation_counts.n + 1;
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION operation_counts_keep() FROM PUBLIC;

CREATE TRIGGER operation_counts_kept AFTER INSERT OR UPDATE OF tenant, state, queued OR DELETE
    ON operations FOR EACH ROW EXECUTE FUNCTION operation_counts_keep();

-- Pending proposals by status first, for the header's count.
CREATE INDEX IF NOT EXISTS proposals_pending ON proposals (status, operation);
