-- A hold goes to the owner its unresolved state calls for (ARCHITECTURE,
-- "Owners by the unresolved state"): the queue's OWNER column and `owner:`
-- filter read it at any size of store, so what decides it is kept beside each
-- operation, written by the store itself whenever that evidence arrives:
--
-- - `operations.route`: `assigned` once a reviewer assigned the owner, else the
--   role the evidence asks for: `security` (auth_denied, or a lookup that found
--   the record in another tenant), `integration` (validation_failed), `business`
--   (a lookup after the last request found the record, but not as expected);
--   NULL when the evidence asks for none. The incident route depends on the
--   clock (a partial or ambiguous effect past its observation window) and is
--   decided by the reading query against its own `now`.
-- - `contract_owners`: the owner a tool's contract names per role.
--
-- The rules are the ones `core::routing` applies to an operation's detail; the
-- view below is their one SQL statement, and every trigger recomputes through it.

ALTER TABLE operations ADD COLUMN route TEXT;

CREATE TABLE contract_owners (
    tool  TEXT NOT NULL,
    role  TEXT NOT NULL,
    owner TEXT NOT NULL,
    PRIMARY KEY (tool, role)
) WITHOUT ROWID;

CREATE VIEW contract_owner_rows AS
    SELECT c.tool AS tool, r.role AS role, json_extract(c.wire, '$.owners.' || r.role) AS owner
    FROM contracts c,
        (SELECT 'integration' AS role UNION ALL SELECT 'security'
         UNION ALL SELECT 'business' UNION ALL SELECT 'incident') r
    WHERE json_type(c.wire, '$.owners.' || r.role) = 'text';

INSERT INTO contract_owners (tool, role, owner) SELECT tool, role, owner FROM contract_owner_rows;

CREATE TRIGGER contract_owners_insert AFTER INSERT ON contracts
BEGIN
    DELETE FROM contract_owners WHERE tool = NEW.tool;
    INSERT INTO contract_owners (tool, role, owner)
        SELECT tool, role, owner FROM contract_owner_rows WHERE tool = NEW.tool;
END;

CREATE TRIGGER contract_owners_update AFTER UPDATE OF wire ON contracts
BEGIN
    DELETE FROM contract_owners WHERE tool = NEW.tool;
    INSERT INTO contract_owners (tool, role, owner)
        SELECT tool, role, owner FROM contract_owner_rows WHERE tool = NEW.tool;
END;

-- The evidence-decided route of every operation. An observation's finding is
-- read from its record as `core::lookup::judge` reads it: found (and not a
-- count of zero effects), then another tenant's record, else a different
-- target or payload or more than one effect. Only the newest observation after
-- the last request's last instant (its end, else its start) counts.
CREATE VIEW operation_routes AS
    SELECT o.id AS id, CASE
        WHEN EXISTS (SELECT 1 FROM audit a WHERE a.operation = o.id AND a.action = 'assign')
            THEN 'assigned'
        WHEN o.failure_mode = 'auth_denied' THEN 'security'
        WHEN o.failure_mode = 'validation_failed' THEN 'integration'
        ELSE (SELECT CASE
                WHEN json_extract(ob.wire, '$.found') IS NOT 1
                    OR json_extract(ob.wire, '$.effect_count') IS 0 THEN NULL
                WHEN json_extract(ob.wire, '$.matches.owner') IS 0 THEN 'security'
                WHEN json_extract(ob.wire, '$.matches.target') IS 0
                    OR json_extract(ob.wire, '$.matches.payload_hash') IS 0
                    OR json_extract(ob.wire, '$.effect_count') > 1 THEN 'business'
              END
              FROM observations ob
              WHERE ob.operation = o.id AND ob.observed_ms > COALESCE(
                  (SELECT max(CAST((julianday(COALESCE(json_extract(at.wire, '$.ended_at'),
                       json_extract(at.wire, '$.started_at'))) - 2440587.5) * 86400000.0 + 0.06 AS INTEGER))
                   FROM attempts at WHERE at.operation = o.id AND at.kind = 'request'),
                  -9223372036854775807)
              ORDER BY ob.observed_ms DESC, ob.id DESC LIMIT 1)
    END AS route
    FROM operations o;

UPDATE operations SET route = (SELECT r.route FROM operation_routes r WHERE r.id = operations.id);

-- A new operation's route is its failure mode's, if any: nothing else of it
-- is there yet.
CREATE TRIGGER operation_route_insert AFTER INSERT ON operations
    WHEN NEW.failure_mode IN ('auth_denied', 'validation_failed') OR NEW.route IS NOT NULL
BEGIN
    UPDATE operations SET route = (SELECT r.route FROM operation_routes r WHERE r.id = NEW.id)
        WHERE id = NEW.id;
END;

CREATE TRIGGER operation_route_observation AFTER INSERT ON observations
BEGIN
    UPDATE operations SET route = (SELECT r.route FROM operation_routes r WHERE r.id = NEW.operation)
        WHERE id = NEW.operation;
END;

-- A new request hides the findings before it: only an operation that has
-- observations can change its route by one.
CREATE TRIGGER operation_route_request AFTER INSERT ON attempts
    WHEN NEW.kind = 'request'
        AND EXISTS (SELECT 1 FROM observations ob WHERE ob.operation = NEW.operation)
BEGIN
    UPDATE operations SET route = (SELECT r.route FROM operation_routes r WHERE r.id = NEW.operation)
        WHERE id = NEW.operation;
END;

CREATE TRIGGER operation_route_assign AFTER INSERT ON audit
    WHEN NEW.action = 'assign'
BEGIN
    UPDATE operations SET route = 'assigned' WHERE id = NEW.operation;
END;
