-- Each audit row names the canonical encoding its hash is over: 1 for the rows
-- written before encoding 2 (which hashes evidence lists unambiguously), 2 for
-- every row since. The verifier refuses a row older in encoding than the one
-- before it.
ALTER TABLE audit ADD COLUMN encoding INTEGER NOT NULL DEFAULT 1;

-- The chain starts at seq 1: a row below it would sit outside every walk.
CREATE TRIGGER audit_seq_positive BEFORE INSERT ON audit WHEN NEW.seq <= 0
BEGIN
    SELECT RAISE(ABORT, 'the audit chain starts at seq 1');
END;
