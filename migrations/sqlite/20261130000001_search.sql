-- Search by the start of a word of an id, target, key or provider request id, as
-- one index range however large the store: each value is stored lower-cased
-- (ASCII), whole and from after each separator (`:` `/` `-` `.` `@` `_` space).
CREATE TABLE search_terms (
    term      TEXT NOT NULL,
    operation TEXT NOT NULL,
    PRIMARY KEY (term, operation)
) WITHOUT ROWID;

INSERT OR IGNORE INTO search_terms (term, operation) SELECT lower(id), id FROM operations;
INSERT OR IGNORE INTO search_terms (term, operation) SELECT lower(target), id FROM operations;
INSERT OR IGNORE INTO search_terms (term, operation)
    SELECT lower(idempotency_key), id FROM operations WHERE idempotency_key IS NOT NULL;
INSERT OR IGNORE INTO search_terms (term, operation)
    SELECT lower(business_key), id FROM operations WHERE business_key IS NOT NULL;
INSERT OR IGNORE INTO search_terms (term, operation)
    SELECT lower(correlation_id), id FROM operations WHERE correlation_id IS NOT NULL;
INSERT OR IGNORE INTO search_terms (term, operation)
    SELECT lower(provider_request_id), operation FROM attempts WHERE provider_request_id IS NOT NULL;

-- The other listing orders, each one index walk.
CREATE INDEX operations_age ON operations (state_since_ms, id);
CREATE INDEX operations_deadline ON operations (deadline_ms, id);
