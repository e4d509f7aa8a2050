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

CREATE TRIGGER metric_stale_operation_insert AFTER INSERT ON operations
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (NEW.id, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_operation_update AFTER UPDATE ON operations
    WHEN OLD.wire IS NOT NEW.wire OR OLD.state IS NOT NEW.state OR OLD.owner IS NOT NEW.owner
        OR OLD.next_observation_ms IS NOT NEW.next_observation_ms OR OLD.tenant IS NOT NEW.tenant
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (NEW.id, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_operation_delete AFTER DELETE ON operations
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (OLD.id, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_attempts_insert AFTER INSERT ON attempts
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (NEW.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_attempts_update AFTER UPDATE ON attempts
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (NEW.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_attempts_delete AFTER DELETE ON attempts
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (OLD.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_observations_insert AFTER INSERT ON observations
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (NEW.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_observations_update AFTER UPDATE ON observations
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (NEW.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_observations_delete AFTER DELETE ON observations
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (OLD.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_items_insert AFTER INSERT ON items
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (NEW.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_items_update AFTER UPDATE ON items
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (NEW.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_items_delete AFTER DELETE ON items
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (OLD.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_audit_insert AFTER INSERT ON audit
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (NEW.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_expectations_insert AFTER INSERT ON expectations
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (NEW.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_expectations_update AFTER UPDATE ON expectations
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (NEW.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_expectations_delete AFTER DELETE ON expectations
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (OLD.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_proposals_insert AFTER INSERT ON proposals
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (NEW.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_proposals_update AFTER UPDATE ON proposals
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (NEW.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_proposals_delete AFTER DELETE ON proposals
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (OLD.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_dependencies_insert AFTER INSERT ON dependencies
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (NEW.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
    INSERT INTO metric_stale (operation, mark) VALUES (NEW.depends_on, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_dependencies_update AFTER UPDATE ON dependencies
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (NEW.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
    INSERT INTO metric_stale (operation, mark) VALUES (NEW.depends_on, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_dependencies_delete AFTER DELETE ON dependencies
BEGIN
    INSERT INTO metric_stale (operation, mark) VALUES (OLD.operation, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
    INSERT INTO metric_stale (operation, mark) VALUES (OLD.depends_on, 1)
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

-- A contract is read by the rules over every operation of its tool.
CREATE TRIGGER metric_stale_contracts_insert AFTER INSERT ON contracts
BEGIN
    INSERT INTO metric_stale (operation, mark) SELECT id, 1 FROM operations WHERE tool = NEW.tool
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;

CREATE TRIGGER metric_stale_contracts_update AFTER UPDATE ON contracts
BEGIN
    INSERT INTO metric_stale (operation, mark) SELECT id, 1 FROM operations WHERE tool = NEW.tool
        ON CONFLICT (operation) DO UPDATE SET mark = mark + 1;
END;
