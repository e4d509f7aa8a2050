-- Leases on approved work (DESIGN §9.2): one row per operation a worker has
-- claimed. A claim takes an operation in APPROVED whose lease is not held, or
-- held past `expires_ms`; each claim of the same operation counts one more
-- `generation`. Every change of a row commits with its audit row (`work-claim`,
-- `work-heartbeat`, `work-complete`, `work-release`), and `audit verify` compares
-- the rows with what those audit rows say.
CREATE TABLE work_leases (
    operation   TEXT PRIMARY KEY NOT NULL,
    worker      TEXT NOT NULL,
    generation  BIGINT NOT NULL,
    claimed_ms  BIGINT NOT NULL,
    expires_ms  BIGINT NOT NULL,
    -- The length the claim asked for: a heartbeat without one extends by it.
    length_ms   BIGINT NOT NULL,
    status      TEXT NOT NULL
);

-- Claimable work: approved operations, oldest first.
CREATE INDEX operations_work ON operations (state, state_since_ms, id);

-- As for the operation's other rows: a lease changes only in a transaction that
-- appends an audit row of its operation (see the least-privilege migration).
CREATE CONSTRAINT TRIGGER work_leases_are_audited AFTER INSERT OR UPDATE ON work_leases
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION change_audited('operation');
