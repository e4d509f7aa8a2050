//! Moving a store from one backend to another: every table, row for row, with
//! every value as stored. The audit chain is copied verbatim (its hashes cover the
//! stored text), so `audit verify` passes on the copy exactly when it passed on the
//! original. The tables and columns below are the schema both migrations create.

use serde::Serialize;

/// How a column is stored on both backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// `INTEGER` on SQLite, `BIGINT` on PostgreSQL.
    Int,
    Text,
}

/// One stored value, moved as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    Int(Option<i64>),
    Text(Option<String>),
}

/// One table of the schema.
#[derive(Debug)]
pub struct Table {
    pub name: &'static str,
    /// A total order over the rows (the primary key), for paging.
    pub order: &'static str,
    pub columns: &'static [(&'static str, ColumnKind)],
}

impl Table {
    /// The column names, comma-separated.
    pub fn column_list(&self) -> String {
        let names: Vec<&str> = self.columns.iter().map(|(name, _)| *name).collect();
        names.join(", ")
    }
}

use ColumnKind::{Int, Text};

/// Every table, in the order a copy writes them; the audit log in `seq` order, so
/// each row extends the chain the previous one left.
pub const TABLES: &[Table] = &[
    Table {
        name: "contracts",
        order: "tool",
        columns: &[
            ("tool", Text),
            ("max_attempts", Int),
            ("wire", Text),
            ("record_hash", Text),
        ],
    },
    Table {
        name: "operations",
        order: "id",
        columns: &[
            ("id", Text),
            ("tenant", Text),
            ("tool", Text),
            ("owner", Text),
            ("state", Text),
            ("risk_rank", Int),
            ("failure_mode", Text),
            ("target", Text),
            ("payload_hash", Text),
            ("idempotency_key", Text),
            ("business_key", Text),
            ("correlation_id", Text),
            ("parent", Text),
            ("max_attempts", Int),
            ("deadline_ms", Int),
            ("created_ms", Int),
            ("state_since_ms", Int),
            ("next_observation_ms", Int),
            ("observe_order", Int),
            ("queued", Int),
            ("version", Int),
            ("wire", Text),
            ("record_hash", Text),
        ],
    },
    Table {
        name: "dependencies",
        order: "operation, depends_on",
        columns: &[("operation", Text), ("depends_on", Text)],
    },
    Table {
        name: "search_terms",
        order: "term, operation",
        columns: &[("term", Text), ("operation", Text)],
    },
    Table {
        name: "attempts",
        order: "id",
        columns: &[
            ("id", Text),
            ("operation", Text),
            ("seq", Int),
            ("kind", Text),
            ("provider_request_id", Text),
            ("wire", Text),
            ("record_hash", Text),
        ],
    },
    Table {
        name: "items",
        order: "operation, idx",
        columns: &[
            ("operation", Text),
            ("idx", Int),
            ("wire", Text),
            ("record_hash", Text),
        ],
    },
    Table {
        name: "observations",
        order: "id",
        columns: &[
            ("id", Text),
            ("operation", Text),
            ("observed_ms", Int),
            ("wire", Text),
            ("record_hash", Text),
        ],
    },
    Table {
        name: "expectations",
        order: "operation",
        columns: &[("operation", Text), ("wire", Text), ("record_hash", Text)],
    },
    Table {
        name: "wire_transitions",
        order: "operation, from_state, to_state, at_ms",
        columns: &[
            ("operation", Text),
            ("from_state", Text),
            ("to_state", Text),
            ("at_ms", Int),
            ("record_hash", Text),
        ],
    },
    Table {
        name: "proposals",
        order: "id",
        columns: &[
            ("id", Int),
            ("operation", Text),
            ("action", Text),
            ("proposed_by", Text),
            ("proposed_at", Text),
            ("rationale", Text),
            ("status", Text),
        ],
    },
    Table {
        name: "grants",
        order: "identity, role, tenant",
        columns: &[
            ("identity", Text),
            ("role", Text),
            ("tenant", Text),
            ("granted_by", Text),
            ("granted_at", Text),
        ],
    },
    Table {
        name: "lookup_claims",
        order: "operation, slot_ms",
        columns: &[
            ("operation", Text),
            ("slot_ms", Int),
            ("claimed_by", Text),
            ("claimed_ms", Int),
            ("expires_ms", Int),
        ],
    },
    Table {
        name: "work_leases",
        order: "operation",
        columns: &[
            ("operation", Text),
            ("worker", Text),
            ("generation", Int),
            ("claimed_ms", Int),
            ("expires_ms", Int),
            ("length_ms", Int),
            ("status", Text),
        ],
    },
    Table {
        name: "audit",
        order: "seq",
        columns: &[
            ("seq", Int),
            ("operation", Text),
            ("action", Text),
            ("from_state", Text),
            ("to_state", Text),
            ("by_identity", Text),
            ("role", Text),
            ("policy", Text),
            ("on_behalf_of", Text),
            ("rationale", Text),
            ("evidence", Text),
            ("at", Text),
            ("encoding", Int),
            ("prev_hash", Text),
            ("hash", Text),
        ],
    },
];

/// What a copy moved: rows per table, in copy order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CopyReport {
    pub tables: Vec<(&'static str, u64)>,
}
