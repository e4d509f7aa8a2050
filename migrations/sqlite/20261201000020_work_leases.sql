-- Leases on approved work (DESIGN §9.2): one row per operation a worker has
-- claimed. A claim takes an operation in APPROVED whose lease is not held, or
-- held past `expires_ms`; each claim of the same operation counts one more
-- `generation`. Every change of a row commits with its audit row (`work-claim`,
-- `work-heartbeat`, `work-complete`, `work-release`), and `audit verify` compares
-- the rows with what those audit rows say.
CREATE TABLE work_leases (
    operation   TEXT PRIMARY KEY NOT NULL,
    worker      TEXT NOT NULL,
    generation  INTEGER NOT NULL,
    claimed_ms  INTEGER NOT NULL,
    expires_ms  INTEGER NOT NULL,
    -- The length the claim asked for: a heartbeat without one extends by it.
    length_ms   INTEGER NOT NULL,
    status      TEXT NOT NULL
);

-- Claimable work: approved operations, oldest first.
CREATE INDEX operations_work ON operations (state, state_since_ms, id);
