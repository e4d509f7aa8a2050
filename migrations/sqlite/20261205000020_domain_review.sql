-- Domain review (G13) is enforced by the rules on SQLite (no logins and no
-- permission table there); on PostgreSQL a trigger makes the database refuse a
-- recovery row without the domain grant. This migration keeps the two
-- backends' numbering in step.
SELECT 1;
