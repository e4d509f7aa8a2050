-- Autonomy per tool (DESIGN §9.4). A tool without a row is at `manual`. `level_rank`
-- orders the levels (manual 0, native 1, automation 2, agent 3) so a query can ask
-- for "native or above". Every row is written with an `autonomy-set` audit row in
-- the same transaction; `audit verify` compares the table with the chain.
CREATE TABLE autonomy (
    tool      TEXT PRIMARY KEY NOT NULL,
    level     TEXT NOT NULL,
    level_rank BIGINT NOT NULL,
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
    cases       BIGINT NOT NULL,
    passed      BIGINT NOT NULL,
    modes       TEXT NOT NULL,
    failed      TEXT NOT NULL,
    drill_store TEXT NOT NULL,
    recorded_by TEXT NOT NULL
);

CREATE INDEX drill_runs_tool ON drill_runs (tool, seq);

-- A login of the application group changes a level or records a drill only in a
-- transaction that appends the ledger's audit row (checked at commit), like every
-- other change (G8).
CREATE FUNCTION ledger_change_audited() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public, pg_temp
AS $$
BEGIN
    IF holdfast_trusted() THEN
        RETURN NULL;
    END IF;
    IF NOT EXISTS (
        SELECT 1 FROM public.audit a
        WHERE a.operation = TG_ARGV[0] AND a.xmin = pg_current_xact_id()::xid
    ) THEN
        RAISE EXCEPTION 'a change to % has no % audit row: every change is audited (G8)',
            TG_TABLE_NAME, TG_ARGV[0]
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RETURN NULL;
END
$$;

CREATE CONSTRAINT TRIGGER autonomy_is_audited AFTER INSERT OR UPDATE OR DELETE ON autonomy
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_change_audited('holdfast:autonomy');
CREATE CONSTRAINT TRIGGER drill_runs_are_audited AFTER INSERT OR UPDATE OR DELETE ON drill_runs
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION ledger_change_audited('holdfast:drills');
