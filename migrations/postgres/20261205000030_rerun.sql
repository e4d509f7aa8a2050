-- A drill result names the version of the tool's contract it ran under
-- (DESIGN §9.4, rerun after material change). Rows recorded before have none:
-- their drill reads as run under an unknown version, which is stale.
ALTER TABLE drill_runs ADD COLUMN contract_version TEXT;

-- A material change outside a tool's contract (`holdfast tools changed`) is an
-- owner's row of the drill ledger. Generated from
-- `holdfast::core::access::role_actions`; a test holds the migrations' pairs
-- equal to it.
INSERT INTO role_actions (role, action) VALUES
    ('owner', 'tool-changed');
