-- The (kind, n) index holds only the rows a report reads by n: the requests
-- at each layer (their largest), the next observations (those due by an
-- instant) and the root causes (their instants, for the repeated errors).
-- Every other kind is read by operation, through the key; most fact rows are
-- verdicts and states whose n is 1, and each was one more index entry for
-- every row a judging writes. Judging a freshly ingested 1 M store (ten
-- million fact rows) took 81-88 s with the whole index and 70-71 s without
-- it. The condition is patterns, not a list of the kinds: an IN list is
-- evaluated for every row written and cost more than the whole index. The
-- reads by n repeat it word for word (src/store/metric_sql.rs, `BY_N`,
-- tested to match this text), so the planner sees each is within the index.
DROP INDEX metric_rows_by_n;
CREATE INDEX metric_rows_by_n ON metric_rows (kind, n)
    WHERE (kind LIKE 'cause:%' OR kind = 'next_observation' OR kind LIKE 'requests:%');
