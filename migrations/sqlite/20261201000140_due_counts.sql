-- The header's overdue count without walking every held operation: how many
-- queued operations each tenant has due on each day (UTC, by
-- `next_observation_ms`), kept by triggers in the same transaction as every
-- write that inserts, moves or deletes an operation. The count of those due
-- before `now` is then the kept days before today plus the part of today
-- that has passed, one short range of the due index. Rows that fall to zero
-- stay (a read skips them). The day is the floor of the milliseconds over a
-- day, also before 1970.
CREATE TABLE due_counts (
    tenant  TEXT NOT NULL,
    due_day BIGINT NOT NULL,
    n       BIGINT NOT NULL,
    PRIMARY KEY (tenant, due_day)
);

INSERT INTO due_counts (tenant, due_day, n)
    SELECT tenant,
           (next_observation_ms - ((next_observation_ms % 86400000) + 86400000) % 86400000) / 86400000,
           count(*)
    FROM operations
    WHERE queued = 1 AND next_observation_ms IS NOT NULL
    GROUP BY 1, 2;

CREATE TRIGGER due_counts_insert AFTER INSERT ON operations
    WHEN NEW.queued = 1 AND NEW.next_observation_ms IS NOT NULL
BEGIN
    INSERT INTO due_counts (tenant, due_day, n)
        VALUES (NEW.tenant,
                (NEW.next_observation_ms - ((NEW.next_observation_ms % 86400000) + 86400000) % 86400000) / 86400000,
                1)
        ON CONFLICT (tenant, due_day) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER due_counts_update AFTER UPDATE OF tenant, queued, next_observation_ms ON operations
    WHEN OLD.tenant IS NOT NEW.tenant OR OLD.queued IS NOT NEW.queued
        OR OLD.next_observation_ms IS NOT NEW.next_observation_ms
BEGIN
    UPDATE due_counts SET n = n - 1
        WHERE OLD.queued = 1 AND OLD.next_observation_ms IS NOT NULL
          AND tenant = OLD.tenant
          AND due_day = (OLD.next_observation_ms - ((OLD.next_observation_ms % 86400000) + 86400000) % 86400000) / 86400000;
    INSERT INTO due_counts (tenant, due_day, n)
        SELECT NEW.tenant,
               (NEW.next_observation_ms - ((NEW.next_observation_ms % 86400000) + 86400000) % 86400000) / 86400000,
               1
        WHERE NEW.queued = 1 AND NEW.next_observation_ms IS NOT NULL
        ON CONFLICT (tenant, due_day) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER due_counts_delete AFTER DELETE ON operations
    WHEN OLD.queued = 1 AND OLD.next_observation_ms IS NOT NULL
BEGIN
    UPDATE due_counts SET n = n - 1
        WHERE tenant = OLD.tenant
          AND due_day = (OLD.next_observation_ms - ((OLD.next_observation_ms % 86400000) + 86400000) % 86400000) / 86400000;
END;
