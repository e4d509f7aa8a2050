-- holdfast operations store, schema 1 (SQLite).
-- Records keep the exact wire-format line they arrived as (`wire`) and the hash of
-- it (`record_hash`), so that a re-ingest is recognised as the same record or refused
-- as a conflicting one. Columns beside `wire` exist to be filtered, sorted and indexed.
-- Instants used for ordering are integer milliseconds since the Unix epoch.

CREATE TABLE contracts (
    tool         TEXT PRIMARY KEY NOT NULL,
    max_attempts INTEGER NOT NULL,
    wire         TEXT NOT NULL,
    record_hash  TEXT NOT NULL
);

CREATE TABLE operations (
    id                  TEXT PRIMARY KEY NOT NULL,
    tenant              TEXT NOT NULL,
    tool                TEXT NOT NULL,
    owner               TEXT NOT NULL,
    state               TEXT NOT NULL,
    risk_rank           INTEGER NOT NULL,
    failure_mode        TEXT,
    target              TEXT NOT NULL,
    payload_hash        TEXT NOT NULL,
    idempotency_key     TEXT,
    business_key        TEXT,
    correlation_id      TEXT,
    parent              TEXT,
    max_attempts        INTEGER,
    deadline_ms         INTEGER,
    created_ms          INTEGER NOT NULL,
    state_since_ms      INTEGER NOT NULL,
    next_observation_ms INTEGER,
    -- next_observation_ms, or the largest integer when none is scheduled: the
    -- urgency order puts overdue first and unscheduled last without a computed sort.
    observe_order       INTEGER NOT NULL,
    -- 1 while the operation is in the console's queue: a held state, or held by a
    -- held dependency (G9). Maintained by every write that changes a state.
    queued              INTEGER NOT NULL,
    version             INTEGER NOT NULL,
    -- The operation as ingested or created; state, owner and next observation are
    -- the columns above, which change with reviewer actions.
    wire                TEXT NOT NULL,
    record_hash         TEXT
);

-- The queue's first page in urgency order: one index walk however large the store.
CREATE INDEX operations_queue_urgency
    ON operations (queued, risk_rank DESC, observe_order, state_since_ms, id);
CREATE INDEX operations_urgency
    ON operations (risk_rank DESC, observe_order, state_since_ms, id);
CREATE INDEX operations_queue_age ON operations (queued, state_since_ms, id);
CREATE INDEX operations_queue_deadline ON operations (queued, deadline_ms, id);
CREATE INDEX operations_state ON operations (state);
CREATE INDEX operations_tenant ON operations (tenant, state);
CREATE INDEX operations_parent ON operations (parent);
CREATE INDEX operations_key ON operations (tenant, idempotency_key);

CREATE TABLE dependencies (
    operation  TEXT NOT NULL,
    depends_on TEXT NOT NULL,
    PRIMARY KEY (operation, depends_on)
) WITHOUT ROWID;
CREATE INDEX dependencies_reverse ON dependencies (depends_on, operation);

CREATE TABLE attempts (
    id                  TEXT PRIMARY KEY NOT NULL,
    operation           TEXT NOT NULL,
    seq                 INTEGER NOT NULL,
    kind                TEXT NOT NULL,
    provider_request_id TEXT,
    wire                TEXT NOT NULL,
    record_hash         TEXT NOT NULL
);
CREATE INDEX attempts_operation ON attempts (operation, seq);
CREATE INDEX attempts_provider ON attempts (provider_request_id);

CREATE TABLE items (
    operation   TEXT NOT NULL,
    idx         INTEGER NOT NULL,
    wire        TEXT NOT NULL,
    record_hash TEXT NOT NULL,
    PRIMARY KEY (operation, idx)
) WITHOUT ROWID;

CREATE TABLE observations (
    id          TEXT PRIMARY KEY NOT NULL,
    operation   TEXT NOT NULL,
    observed_ms INTEGER NOT NULL,
    wire        TEXT NOT NULL,
    record_hash TEXT NOT NULL
);
CREATE INDEX observations_operation ON observations (operation, observed_ms);

CREATE TABLE expectations (
    operation   TEXT PRIMARY KEY NOT NULL,
    wire        TEXT NOT NULL,
    record_hash TEXT NOT NULL
);

-- Transitions received on the wire, by their natural key, for idempotent re-ingest.
-- The change itself is recorded in the audit log like any other.
CREATE TABLE wire_transitions (
    operation   TEXT NOT NULL,
    from_state  TEXT NOT NULL,
    to_state    TEXT NOT NULL,
    at_ms       INTEGER NOT NULL,
    record_hash TEXT NOT NULL,
    PRIMARY KEY (operation, from_state, to_state, at_ms)
) WITHOUT ROWID;

-- Proposals waiting for a second, different approver (G6).
CREATE TABLE proposals (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    operation   TEXT NOT NULL,
    action      TEXT NOT NULL,
    proposed_by TEXT NOT NULL,
    proposed_at TEXT NOT NULL,
    rationale   TEXT NOT NULL,
    status      TEXT NOT NULL
);
CREATE INDEX proposals_operation ON proposals (operation, status);
CREATE INDEX proposals_status ON proposals (status);

-- Who may do what on which tenant (G6, G7). No rows at all: single-user mode.
CREATE TABLE grants (
    identity   TEXT NOT NULL,
    role       TEXT NOT NULL,
    tenant     TEXT NOT NULL,
    granted_by TEXT NOT NULL,
    granted_at TEXT NOT NULL,
    PRIMARY KEY (identity, role, tenant)
) WITHOUT ROWID;

-- The audit log: append-only, hash-chained from a fixed genesis value.
CREATE TABLE audit (
    seq          INTEGER PRIMARY KEY NOT NULL,
    operation    TEXT NOT NULL,
    action       TEXT NOT NULL,
    from_state   TEXT,
    to_state     TEXT,
    by_identity  TEXT NOT NULL,
    role         TEXT NOT NULL,
    policy       TEXT,
    on_behalf_of TEXT,
    rationale    TEXT,
    evidence     TEXT NOT NULL,
    at           TEXT NOT NULL,
    prev_hash    TEXT NOT NULL,
    hash         TEXT NOT NULL
);
CREATE INDEX audit_operation ON audit (operation, seq);

CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only: UPDATE refused');
END;

CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
BEGIN
    SELECT RAISE(ABORT, 'the audit log is append-only: DELETE refused');
END;
