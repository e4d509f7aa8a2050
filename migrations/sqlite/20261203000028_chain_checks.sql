-- What the checks of the audit chain found (README, Security): a break (the first
-- seq `audit verify` or a write door's link check found broken, and why), until an
-- owner acknowledges it (`holdfast audit acknowledge SEQ`, itself an audit row) or a
-- full `audit verify` passes again; and the checkpoint, the newest row up to which
-- the chain was found to link, from which a write door's check walks to the head.
CREATE TABLE chain_breaks (
    seq              BIGINT PRIMARY KEY,
    reason           TEXT NOT NULL,
    found_by         TEXT NOT NULL,
    found_ms         BIGINT NOT NULL,
    acknowledged_seq BIGINT,
    cleared_ms       BIGINT
);

CREATE TABLE chain_checkpoint (
    id         INTEGER PRIMARY KEY CHECK (id = 1),
    seq        BIGINT NOT NULL,
    hash       TEXT NOT NULL,
    checked_by TEXT NOT NULL,
    checked_ms BIGINT NOT NULL
);
