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
    /// A total order over the rows (the primary key, plain column names), for
    /// keyset paging.
    pub order: &'static str,
    pub columns: &'static [(&'static str, ColumnKind)],
}

impl Table {
    /// The columns of the table's order (its primary key), in order.
    pub fn key_columns(&self) -> Vec<&'static str> {
        self.order.split(',').map(str::trim).collect()
    }

    /// The key cells of one of its rows (as [`Store::table_rows`] returns them),
    /// to page on after it.
    ///
    /// [`Store::table_rows`]: crate::store::Store::table_rows
    pub fn key_of(&self, row: &[Cell]) -> Vec<Cell> {
        self.key_columns()
            .into_iter()
            .filter_map(|key| self.columns.iter().position(|(name, _)| *name == key))
            .filter_map(|index| row.get(index).cloned())
            .collect()
    }

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
            ("route", Text),
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
            ("url", Text),
            ("refused", Int),
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
        name: "redactions",
        order: "record, record_key, path",
        columns: &[
            ("record", Text),
            ("record_key", Text),
            ("path", Text),
            ("operation", Text),
            ("kinds", Text),
            ("value_sha256", Text),
            ("stored_sha256", Text),
            ("sample", Text),
            ("line_sha256", Text),
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
            ("claimed_by", Text),
            ("generation", Int),
            ("claimed_ms", Int),
            ("expires_ms", Int),
            ("length_ms", Int),
            ("status", Text),
        ],
    },
    Table {
        name: "otlp_pending",
        order: "trace_id, span_id",
        columns: &[
            ("trace_id", Text),
            ("span_id", Text),
            ("since_ms", Int),
            ("span", Text),
        ],
    },
    Table {
        name: "autonomy",
        order: "tool",
        columns: &[
            ("tool", Text),
            ("level", Text),
            ("level_rank", Int),
            ("set_by", Text),
            ("set_at", Text),
            ("rationale", Text),
        ],
    },
    Table {
        name: "drill_runs",
        order: "seq",
        columns: &[
            ("seq", Int),
            ("tool", Text),
            ("run_at", Text),
            ("cases", Int),
            ("passed", Int),
            ("modes", Text),
            ("failed", Text),
            ("drill_store", Text),
            ("recorded_by", Text),
            ("contract_version", Text),
        ],
    },
    Table {
        name: "circuits",
        order: "tool",
        columns: &[
            ("tool", Text),
            ("position", Text),
            ("since", Text),
            ("reason", Text),
            ("failures", Int),
            ("probe", Text),
            ("set_by", Text),
        ],
    },
    Table {
        name: "circuit_failures",
        order: "tool, attempt",
        columns: &[
            ("tool", Text),
            ("attempt", Text),
            ("at_ms", Int),
            ("kind", Text),
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
    // What the chain checks found: a copy of a store with a break not
    // acknowledged refuses writes as the original does.
    Table {
        name: "chain_breaks",
        order: "seq",
        columns: &[
            ("seq", Int),
            ("reason", Text),
            ("found_by", Text),
            ("found_ms", Int),
            ("acknowledged_seq", Int),
            ("cleared_ms", Int),
        ],
    },
    Table {
        name: "chain_checkpoint",
        order: "id",
        columns: &[
            ("id", Int),
            ("seq", Int),
            ("hash", Text),
            ("checked_by", Text),
            ("checked_ms", Int),
        ],
    },
];

/// What a copy moved: rows per table, in copy order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CopyReport {
    pub tables: Vec<(&'static str, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_pages_on_key_columns_it_has() {
        for table in TABLES {
            let keys = table.key_columns();
            assert!(!keys.is_empty(), "{}", table.name);
            for key in &keys {
                assert!(
                    table.columns.iter().any(|(name, _)| name == key),
                    "{}: order column {key} is not a copied column",
                    table.name
                );
            }
            let row: Vec<Cell> = (0..table.columns.len())
                .map(|i| Cell::Int(Some(i as i64)))
                .collect();
            assert_eq!(table.key_of(&row).len(), keys.len(), "{}", table.name);
        }
    }
}
