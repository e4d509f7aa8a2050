-- Claims on scheduled lookups (DESIGN §9.1): before an observer looks a hold up
-- for the slot its next observation names, it inserts (operation, slot). The
-- primary key lets exactly one observer win a slot, on one store or across many
-- processes; a claim whose lease ran out (its observer died) may be taken over.
CREATE TABLE lookup_claims (
    operation  TEXT NOT NULL,
    slot_ms    BIGINT NOT NULL,
    claimed_by TEXT NOT NULL,
    claimed_ms BIGINT NOT NULL,
    expires_ms BIGINT NOT NULL,
    PRIMARY KEY (operation, slot_ms)
);

-- Due lookups: held operations in next-observation order.
CREATE INDEX operations_due ON operations (queued, next_observation_ms);
