-- Autonomy per tool (DESIGN §9.4). A tool without a row is at `manual`. `level_rank`
-- orders the levels (manual 0, native 1, automation 2, agent 3) so a query can ask
-- for "native or above". Every row is written with an `autonomy-set` audit row in
-- the same transaction; `audit verify` compares the table with the chain.
CREATE TABLE autonomy (
    tool      TEXT PRIMARY KEY NOT NULL,
    level     TEXT NOT NULL,
    level_rank INTEGER NOT NULL,
    set_by    TEXT NOT NULL,
    set_at    TEXT NOT NULL,
    rationale TEXT NOT NULL
);

-- Drill results recorded for a tool (`holdfast drill --tool`): what the autonomy
-- gate A2 reads. `seq` is the audit row that recorded it.
CREATE TABLE drill_runs (
    seq         BIGINT PRIMARY KEY NOT NULL,
    tool        TEXT NOT NULL,
    run_at      TEXT NOT NULL,
    cases       INTEGER NOT NULL,
    passed      INTEGER NOT NULL,
    modes       TEXT NOT NULL,
    failed      TEXT NOT NULL,
    drill_store TEXT NOT NULL,
    recorded_by TEXT NOT NULL
);

CREATE INDEX drill_runs_tool ON drill_runs (tool, seq);
