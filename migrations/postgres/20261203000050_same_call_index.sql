-- The gateway looks up a call's identical ones before each call (DESIGN
-- §10.2): one tool's operations with the same payload hash, and those with the
-- same business key. Without these indexes each lookup read every operation of
-- the tool; with them each half of the lookup reads only the rows that match,
-- at any size of store. Most operations carry no business key: that index
-- keeps only those that do.
CREATE INDEX operations_payload ON operations (tool, payload_hash);
CREATE INDEX operations_business_key ON operations (tool, business_key)
    WHERE business_key IS NOT NULL;
