-- 1 for a try a gateway stopped before it left (phase `not_sent` at layer
-- `gateway`, such as a repeat of a held call that `holdfast gateway` refused),
-- else 0. Such a try is evidence of how often the caller tried, never a request
-- the provider saw: the queue's attempt count (G5's budget) leaves it out. Not a
-- field of the wire record; derived from it and kept beside it.
ALTER TABLE attempts ADD COLUMN refused INTEGER NOT NULL DEFAULT 0;

-- The tries already stored: the canonical wire line writes each key once,
-- unescaped, so these two fields are matched as written.
UPDATE attempts SET refused = 1
WHERE kind = 'request'
  AND wire LIKE '%"phase":"not_sent"%'
  AND wire LIKE '%"layer":"gateway"%';
