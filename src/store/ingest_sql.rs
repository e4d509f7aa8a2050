//! The statements an ingest batch runs for each of its keys, named here so
//! that `tests/ingest_plans.rs` can `EXPLAIN` exactly what the store runs: the
//! lookups of what the store already holds under a batch's keys (each a prefix
//! the store completes with ` ($1, …)`, a few hundred keys a statement) and the
//! move of an operation a batch takes to a later state. Each must find its rows
//! by the table's key, however large the table has grown since the store's
//! connections planned it.

/// An operation's state and record hash, by id.
pub const OPERATIONS: &str = "SELECT id, state, record_hash FROM operations WHERE id IN";

/// An operation's tenant, by id: what a login kept to its tenants may write.
pub const TENANTS: &str = "SELECT id, tenant FROM operations WHERE id IN";

/// A contract's record hash, by tool.
pub const CONTRACTS: &str = "SELECT tool, record_hash, wire FROM contracts WHERE tool IN";

/// An attempt's record hash, by id.
pub const ATTEMPTS: &str = "SELECT id, record_hash FROM attempts WHERE id IN";

/// An observation's record hash, by id.
pub const OBSERVATIONS: &str = "SELECT id, record_hash FROM observations WHERE id IN";

/// An operation's expectation, by operation.
pub const EXPECTATIONS: &str = "SELECT operation, record_hash FROM expectations WHERE operation IN";

/// An operation's items, by operation.
pub const ITEMS: &str = "SELECT operation, idx, record_hash FROM items WHERE operation IN";

/// An operation's recorded transitions, by operation.
pub const TRANSITIONS: &str = "SELECT operation, from_state, to_state, at_ms, record_hash \
     FROM wire_transitions WHERE operation IN";

/// Every lookup above, with the table it reads.
pub const LOOKUPS: &[(&str, &str)] = &[
    (OPERATIONS, "operations"),
    (TENANTS, "operations"),
    (CONTRACTS, "contracts"),
    (ATTEMPTS, "attempts"),
    (OBSERVATIONS, "observations"),
    (EXPECTATIONS, "expectations"),
    (ITEMS, "items"),
    (TRANSITIONS, "wire_transitions"),
];

/// An operation a batch moved to a later state: its state, since when, and
/// its version by the steps taken.
pub const MOVE: &str = "UPDATE operations SET state = $1, state_since_ms = $2, \
     version = version + $3 WHERE id = $4";
