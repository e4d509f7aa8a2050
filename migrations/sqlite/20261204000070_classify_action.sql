-- `classify` is a row of the audit chain alone on SQLite (no permission table
-- there); this migration keeps the two backends' numbering in step.
SELECT 1;
