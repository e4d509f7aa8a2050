-- A circuit per tool (DESIGN §9.5). A tool without a row is closed. Every row
-- is written with a `circuit` audit row of `holdfast:circuits` in the same
-- transaction; `audit verify` compares the table with the chain.
CREATE TABLE circuits (
    tool     TEXT PRIMARY KEY NOT NULL,
    position TEXT NOT NULL,
    since    TEXT NOT NULL,
    reason   TEXT NOT NULL,
    failures INTEGER NOT NULL,
    probe    TEXT NOT NULL,
    set_by   TEXT NOT NULL
);

-- The failures a sender saw on a tool (5xx, timeout, UNKNOWN outcome), by the
-- attempt that failed: what a circuit's window counts. Rows older than the
-- window are dropped as new ones come.
CREATE TABLE circuit_failures (
    tool    TEXT NOT NULL,
    attempt TEXT NOT NULL,
    at_ms   INTEGER NOT NULL,
    kind    TEXT NOT NULL,
    PRIMARY KEY (tool, attempt)
);

CREATE INDEX circuit_failures_at ON circuit_failures (tool, at_ms);
