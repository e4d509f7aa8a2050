-- A lookup check (`holdfast lookup check TOOL --known ID`) is an owner's audited
-- act, a `lookup-check` row of the autonomy ledger like `autonomy-set` and
-- `drill`: the pair joins the permission table `audit_within_grants` reads.
-- Generated from `holdfast::core::access::role_actions`; a test holds the
-- migrations' pairs equal to it.

INSERT INTO role_actions (role, action) VALUES
    ('owner', 'lookup-check');
