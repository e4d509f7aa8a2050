-- The check that a change has its audit row (`change_audited`, deferred to the
-- commit, once per row a login of the application group writes) ran as the
-- login, so row-level security (`tenant_rows`) applied to its lookup of the
-- transaction's audit rows: every row it found asked the policy's functions
-- for the login's tenants again. An ingest of 20,000 operations by such a login
-- spent 15.8 of its 35.3 s there (`track_functions`). Run as the owner, the
-- lookup reads the audit table's index alone: 20.0 s. What it checks is the
-- same: an audit row of the operation appended in this transaction, which only
-- this transaction can have written, and which the policy's `WITH CHECK` let
-- in when it was written. `session_user` is still the login, so
-- `holdfast_trusted()` answers as before. The function is a trigger's alone.

ALTER FUNCTION change_audited() SECURITY DEFINER;
REVOKE ALL ON FUNCTION change_audited() FROM PUBLIC;
