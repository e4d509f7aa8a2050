-- HTTP client spans (and the spans between them and their tool span) that
-- arrived before their `execute_tool` span (DESIGN §10.1): kept, redacted, until
-- the tool span comes or their window ends, when they become an operation of
-- tool `unknown`. A span is kept once (trace and span id), so the same spans
-- delivered twice change nothing.
CREATE TABLE otlp_pending (
    trace_id  TEXT NOT NULL,
    span_id   TEXT NOT NULL,
    since_ms  BIGINT NOT NULL,
    span      TEXT NOT NULL,
    PRIMARY KEY (trace_id, span_id)
);

CREATE INDEX otlp_pending_since ON otlp_pending (since_ms);

-- The application group (whoever may lock the chain head) keeps and releases
-- waiting spans as the receiver and `ingest --format otlp` run.
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
        EXECUTE format('GRANT SELECT, INSERT, DELETE ON otlp_pending TO %I', grantee_name);
    END LOOP;
END
$$;
