-- HTTP client spans (and the spans between them and their tool span) that
-- arrived before their `execute_tool` span (DESIGN §10.1): kept, redacted, until
-- the tool span comes or their window ends, when they become an operation of
-- tool `unknown`. A span is kept once (trace and span id), so the same spans
-- delivered twice change nothing.
CREATE TABLE otlp_pending (
    trace_id  TEXT NOT NULL,
    span_id   TEXT NOT NULL,
    since_ms  INTEGER NOT NULL,
    span      TEXT NOT NULL,
    PRIMARY KEY (trace_id, span_id)
);

CREATE INDEX otlp_pending_since ON otlp_pending (since_ms);
