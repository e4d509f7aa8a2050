-- A circuit per tool (DESIGN §9.5). A tool without a row is closed. Every row
-- is written with a `circuit` audit row of `holdfast:circuits` in the same
-- transaction; `audit verify` compares the table with the chain.
CREATE TABLE circuits (
    tool     TEXT PRIMARY KEY NOT NULL,
    position TEXT NOT NULL,
    since    TEXT NOT NULL,
    reason   TEXT NOT NULL,
    failures BIGINT NOT NULL,
    probe    TEXT NOT NULL,
    set_by   TEXT NOT NULL
);

-- The failures a sender saw on a tool (5xx, timeout, UNKNOWN outcome), by the
-- attempt that failed: what a circuit's window counts. Rows older than the
-- window are dropped as new ones come.
CREATE TABLE circuit_failures (
    tool    TEXT NOT NULL,
    attempt TEXT NOT NULL,
    at_ms   BIGINT NOT NULL,
    kind    TEXT NOT NULL,
    PRIMARY KEY (tool, attempt)
);

CREATE INDEX circuit_failures_at ON circuit_failures (tool, at_ms);

-- A login of the application group moves a circuit only in a transaction that
-- appends the ledger's audit row (checked at commit), like every other change.
CREATE CONSTRAINT TRIGGER circuits_are_audited AFTER INSERT OR UPDATE OR DELETE ON circuits
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_change_audited('holdfast:circuits');

-- The application group (whoever may lock the chain head) reads and moves
-- circuits and counts failures as the gateway and workers send.
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
        EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON circuits TO %I', grantee_name);
        EXECUTE format('GRANT SELECT, INSERT, DELETE ON circuit_failures TO %I', grantee_name);
    END LOOP;
END
$$;
