-- The autonomy gates read the tenants and the open vetoes of one tool's
-- operations: an index on the tool finds them without reading every operation.
CREATE INDEX operations_tool ON operations (tool, tenant);
