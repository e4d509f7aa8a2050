-- Search by the start of a word of an id, target, key or provider request id, as
-- one index range however large the store: each value is stored lower-cased
-- (ASCII), whole and from after each separator (`:` `/` `-` `.` `@` `_` space).
CREATE TABLE search_terms (
    term      TEXT COLLATE "C" NOT NULL,
    operation TEXT NOT NULL,
    PRIMARY KEY (term, operation)
);

INSERT INTO search_terms (term, operation) SELECT lower(id), id FROM operations
    ON CONFLICT DO NOTHING;
INSERT INTO search_terms (term, operation) SELECT lower(target), id FROM operations
    ON CONFLICT DO NOTHING;
INSERT INTO search_terms (term, operation)
    SELECT lower(idempotency_key), id FROM operations WHERE idempotency_key IS NOT NULL
    ON CONFLICT DO NOTHING;
INSERT INTO search_terms (term, operation)
    SELECT lower(business_key), id FROM operations WHERE business_key IS NOT NULL
    ON CONFLICT DO NOTHING;
INSERT INTO search_terms (term, operation)
    SELECT lower(correlation_id), id FROM operations WHERE correlation_id IS NOT NULL
    ON CONFLICT DO NOTHING;
INSERT INTO search_terms (term, operation)
    SELECT lower(provider_request_id), operation FROM attempts WHERE provider_request_id IS NOT NULL
    ON CONFLICT DO NOTHING;

-- The other listing orders, each one index walk.
CREATE INDEX operations_age ON operations (state_since_ms, id);
CREATE INDEX operations_deadline ON operations (deadline_ms, id);
