-- The queue header's counts without a scan of the operations: how many
-- operations each (tenant, state, queued) holds, kept by triggers in the same
-- transaction as every write that inserts, moves or deletes an operation.
-- Rows that fall to zero stay (a read skips them).
CREATE TABLE operation_counts (
    tenant TEXT NOT NULL,
    state  TEXT NOT NULL,
    queued INTEGER NOT NULL,
    n      BIGINT NOT NULL,
    PRIMARY KEY (tenant, state, queued)
);

INSERT INTO operation_counts (tenant, state, queued, n)
    SELECT tenant, state, queued, count(*) FROM operations GROUP BY tenant, state, queued;

CREATE TRIGGER operation_counts_insert AFTER INSERT ON operations
BEGIN
    INSERT INTO operation_counts (tenant, state, queued, n)
        VALUES (NEW.tenant, NEW.state, NEW.queued, 1)
        ON CONFLICT (tenant, state, queued) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER operation_counts_update AFTER UPDATE OF tenant, state, queued ON operations
    WHEN OLD.tenant IS NOT NEW.tenant OR OLD.state IS NOT NEW.state OR OLD.queued IS NOT NEW.queued
BEGIN
    UPDATE operation_counts SET n = n - 1
        WHERE tenant = OLD.tenant AND state = OLD.state AND queued = OLD.queued;
    INSERT INTO operation_counts (tenant, state, queued, n)
        VALUES (NEW.tenant, NEW.state, NEW.queued, 1)
        ON CONFLICT (tenant, state, queued) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER operation_counts_delete AFTER DELETE ON operations
BEGIN
    UPDATE operation_counts SET n = n - 1
        WHERE tenant = OLD.tenant AND state = OLD.state AND queued = OLD.queued;
END;

-- Pending proposals by status first, for the header's count.
CREATE INDEX IF NOT EXISTS proposals_pending ON proposals (status, operation);
