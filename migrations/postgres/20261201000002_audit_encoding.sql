-- Each audit row names the canonical encoding its hash is over: 1 for the rows
-- written before encoding 2 (which hashes evidence lists unambiguously), 2 for
-- every row since. The verifier refuses a row older in encoding than the one
-- before it. (Rows below seq 1 are already refused: the head trigger accepts only
-- rows that extend the head.)
ALTER TABLE audit ADD COLUMN encoding BIGINT NOT NULL DEFAULT 1;
