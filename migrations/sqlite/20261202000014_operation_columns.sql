-- PostgreSQL narrows its application group's UPDATE on operations to the
-- columns decisions move; SQLite has no logins. This keeps the two backends'
-- numbering in step.
SELECT 1;
