-- A drill result names the version of the tool's contract it ran under
-- (DESIGN §9.4, rerun after material change). Rows recorded before have none:
-- their drill reads as run under an unknown version, which is stale.
ALTER TABLE drill_runs ADD COLUMN contract_version TEXT;
