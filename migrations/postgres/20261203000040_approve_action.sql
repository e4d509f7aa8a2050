-- `approve` is a reviewer action (DESIGN §2, VALIDATED → APPROVED by a person:
-- the approval of one exact call, G11): a reviewer proposes it, an approver
-- applies it or confirms the proposal. The pairs join the permission table
-- `audit_within_grants` reads. Generated from
-- `holdfast::core::access::role_actions`; a test holds the migrations' pairs
-- equal to it.

INSERT INTO role_actions (role, action) VALUES
    ('reviewer', 'approve'),
    ('approver', 'approve');
