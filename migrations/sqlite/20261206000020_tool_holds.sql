-- The tools tab and `holdfast tools` count each tool's holds, and the UNKNOWN
-- ones of them, in the reader's tenants. The index on (tool, tenant) leaves
-- the planner a walk of the whole held queue filtered by tool; this one, like
-- the queue's own indexes, holds only the queued operations, and finds one
-- tool's in a tenant scope (and their states) in the index alone, at any size
-- of store.
CREATE INDEX operations_tool_queue ON operations (tool, tenant, state) WHERE queued = 1;
