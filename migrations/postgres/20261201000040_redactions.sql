-- What ingest redacted: one row per text value of a stored record that held a
-- secret. The record itself is stored with `‹redacted:KIND›` markers in place of
-- the secrets (its `record_hash` covers it as stored); this row keeps the SHA-256
-- of the value as received (`value_sha256`) and as stored (`stored_sha256`), the
-- kinds found, a protected sample (each secret's kind, the public prefix of its
-- format such as `sk_live_` or `AKIA`, and its length, never any of its secret
-- characters) and the SHA-256 of the line the record came from, when it came from
-- a file. Written with the record, in the same transaction; never changed.
CREATE TABLE redactions (
    record        TEXT NOT NULL,
    record_key    TEXT NOT NULL,
    path          TEXT NOT NULL,
    operation     TEXT,
    kinds         TEXT NOT NULL,
    value_sha256  TEXT NOT NULL,
    stored_sha256 TEXT NOT NULL,
    sample        TEXT NOT NULL,
    line_sha256   TEXT,
    PRIMARY KEY (record, record_key, path)
);

CREATE INDEX redactions_operation ON redactions (operation);

-- As for the operation's other records: a redaction row of an operation is
-- written only in a transaction that appends an audit row of that operation (see
-- the least-privilege migration). A contract's rows belong to no operation and,
-- like contracts, are left to the grants.
CREATE CONSTRAINT TRIGGER redactions_are_audited AFTER INSERT OR UPDATE ON redactions
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW
    WHEN (NEW.operation IS NOT NULL)
    EXECUTE FUNCTION change_audited('operation');
