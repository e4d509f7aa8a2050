-- The header's overdue count without walking every held operation: how many
-- queued operations each tenant has due on each day (UTC, by
-- `next_observation_ms`), kept by a trigger in the same transaction as every
-- write that inserts, moves or deletes an operation. The count of those due
-- before `now` is then the kept days before today plus the part of today
-- that has passed, one short range of the due index. Rows that fall to zero
-- stay (a read skips them). The trigger runs as the owner, so a
-- least-privilege login needs only SELECT on the table.
CREATE TABLE due_counts (
    tenant  TEXT NOT NULL,
    due_day BIGINT NOT NULL,
    n       BIGINT NOT NULL,
    PRIMARY KEY (tenant, due_day)
);

INSERT INTO due_counts (tenant, due_day, n)
    SELECT tenant, (next_observation_ms - ((next_observation_ms % 86400000) + 86400000) % 86400000) / 86400000, count(*)
    FROM operations
    WHERE queued = 1 AND next_observation_ms IS NOT NULL
    GROUP BY 1, 2;

CREATE FUNCTION due_counts_keep() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    IF TG_OP = 'UPDATE' AND OLD.tenant = NEW.tenant AND OLD.queued = NEW.queued
        AND OLD.next_observation_ms IS NOT DISTINCT FROM NEW.next_observation_ms THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.queued = 1
        AND OLD.next_observation_ms IS NOT NULL THEN
        UPDATE public.due_counts SET n = n - 1
            WHERE tenant = OLD.tenant
              AND due_day = (OLD.next_observation_ms - ((OLD.next_observation_ms % 86400000) + 86400000) % 86400000) / 86400000;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.queued = 1
        AND NEW.next_observation_ms IS NOT NULL THEN
        INSERT INTO public.due_counts (tenant, due_day, n)
            VALUES (NEW.tenant, (NEW.next_observation_ms - ((NEW.next_observation_ms % 86400000) + 86400000) % 86400000) / 86400000, 1)
            ON CONFLICT (tenant, due_day) DO UPDATE SET n = public.due_counts.n + 1;
    END IF;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION due_counts_keep() FROM PUBLIC;

CREATE TRIGGER due_counts_kept
    AFTER INSERT OR UPDATE OF tenant, queued, next_observation_ms OR DELETE
    ON operations FOR EACH ROW EXECUTE FUNCTION due_counts_keep();

-- A store whose application group was granted its reads before this table
-- existed: whoever may read the operation counts may read the due counts, so
-- the header keeps working for every login after the upgrade.
DO $$
DECLARE
    grantee_name TEXT;
BEGIN
    FOR grantee_name IN
        SELECT DISTINCT grantee FROM information_schema.role_table_grants
        WHERE table_schema = current_schema() AND table_name = 'operation_counts'
          AND privilege_type = 'SELECT' AND grantee <> current_user
    LOOP
        IF grantee_name = 'PUBLIC' THEN
            GRANT SELECT ON due_counts TO PUBLIC;
        ELSE
            EXECUTE format('GRANT SELECT ON due_counts TO %I', grantee_name);
        END IF;
    END LOOP;
END
$$;
