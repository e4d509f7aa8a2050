-- `classify` is a reviewer action: it sets the root-cause layer of a failed or
-- held operation (its audit row carries `root-cause:LAYER`) and moves no state.
-- Reviewers and approvers take it. The pairs join the permission table
-- `audit_within_grants` reads. Generated from
-- `holdfast::core::access::role_actions`; a test holds the migrations' pairs
-- equal to it.

INSERT INTO role_actions (role, action) VALUES
    ('reviewer', 'classify'),
    ('approver', 'classify');
