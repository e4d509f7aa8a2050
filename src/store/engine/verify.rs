//! Verification: the walk over the audit chain, then the comparison of what is
//! stored — each operation's state, owner and version, every record against its
//! `record_hash`, the grants — with what the chain says, so that an edit made
//! behind the store's back is found wherever it was made.

use std::collections::HashSet;

use futures_util::TryStreamExt;
use sqlx::{AssertSqlSafe, Row};

use super::{AUDIT_COLUMNS, db};
use crate::core::audit::{ChainStatus, ChainVerifier};
use crate::core::ids::Sha256;
use crate::core::ledger::{Divergence, Ledger, Stored};
use crate::store::StoreError;
use crate::store::plan::codec;

/// Rows read per query of the chain walk.
const CHUNK: i64 = 10_000;

/// The stored records that carry a `record_hash` of their `wire`: the table, the
/// key named in a report, and the operation it belongs to (`NULL` for none).
const RECORD_TABLES: &[(&str, &str, &str)] = &[
    ("contracts", "tool", "NULL"),
    ("attempts", "id", "operation"),
    ("observations", "id", "operation"),
    (
        "items",
        "operation || '#' || CAST(idx AS TEXT)",
        "operation",
    ),
    ("expectations", "operation", "operation"),
];

/// Whether `wire` still hashes to `record_hash`.
fn matches(wire: &str, record_hash: &str) -> bool {
    Sha256::of(wire.as_bytes()).as_str() == record_hash
}

shared! {
    impl {
        /// Walks the chain, then compares the store with it. The first row that
        /// does not check, or the first stored value the chain does not account
        /// for, is named with the `seq` of the row it disagrees with.
        pub(super) async fn read_verify(&self) -> Result<ChainStatus, StoreError> {
            let lowest: Option<i64> = sqlx::query("SELECT MIN(seq) AS lowest FROM audit")
                .fetch_one(&self.pool)
                .await
                .map_err(db::<DB>)?
                .try_get("lowest")
                .map_err(db::<DB>)?;
            if let Some(seq) = lowest.filter(|s| *s < 1) {
                return Ok(ChainStatus::Broken {
                    seq,
                    reason: "a row below seq 1 is outside the chain (inserted behind the store's back)"
                        .into(),
                });
            }
            let mut verifier = ChainVerifier::default();
            let mut ledger = Ledger::default();
            let mut next = 1;
            loop {
                let rows = sqlx::query(AssertSqlSafe(format!(
                    "SELECT {AUDIT_COLUMNS} FROM audit WHERE seq >= $1 ORDER BY seq LIMIT $2"
                )))
                .bind(next)
                .bind(CHUNK)
                .fetch_all(&self.pool)
                .await
                .map_err(db::<DB>)?;
                if rows.is_empty() {
                    break;
                }
                for row in &rows {
                    let seq: i64 = row.try_get("seq").map_err(db::<DB>)?;
                    let decoded = match Self::audit_row(row) {
                        Ok(decoded) => decoded,
                        Err(e) => {
                            return Ok(ChainStatus::Broken {
                                seq,
                                reason: format!("the row cannot be read: {e}"),
                            });
                        }
                    };
                    if let Err(broken) = verifier.push(&decoded) {
                        return Ok(broken);
                    }
                    ledger.push(&decoded);
                    next = seq + 1;
                }
            }
            Ok(match self.compare(&ledger).await? {
                Ok(()) => verifier.finish(),
                Err(Divergence { seq, reason }) => ChainStatus::Broken { seq, reason },
            })
        }

        /// Compares the stored operations, records and grants with `ledger`.
        async fn compare(&self, ledger: &Ledger) -> Result<Result<(), Divergence>, StoreError> {
            let mut seen: HashSet<String> = HashSet::new();
            {
                let mut rows = sqlx::query(
                    "SELECT id, state, owner, version, wire, record_hash FROM operations ORDER BY id",
                )
                .fetch(&self.pool);
                while let Some(row) = rows.try_next().await.map_err(db::<DB>)? {
                    let id = Self::text(&row, "id")?;
                    let wire = Self::text(&row, "wire")?;
                    let record_hash: Option<String> =
                        row.try_get("record_hash").map_err(db::<DB>)?;
                    let at = ledger.last_seq_of(&id);
                    let diverged = |reason: String| Ok(Err(Divergence { seq: at, reason }));
                    if record_hash.is_some_and(|h| !matches(&wire, &h)) {
                        return diverged(format!(
                            "operation {id}: its stored record no longer matches its record_hash"
                        ));
                    }
                    let Ok(created) = codec::operation(&wire) else {
                        return diverged(format!("operation {id}: its stored record does not parse"));
                    };
                    let state = Self::text(&row, "state")?;
                    let Ok(state) = codec::parse_state(&state) else {
                        return diverged(format!("operation {id}: unknown stored state {state:?}"));
                    };
                    let owner = Self::text(&row, "owner")?;
                    let stored = Stored {
                        id: &id,
                        state,
                        owner: &owner,
                        created_owner: &created.owner,
                        version: row.try_get("version").map_err(db::<DB>)?,
                    };
                    if let Err(divergence) = ledger.check(&stored) {
                        return Ok(Err(divergence));
                    }
                    seen.insert(id);
                }
            }
            if let Err(divergence) = ledger.check_none_missing(|id| seen.contains(id)) {
                return Ok(Err(divergence));
            }
            for (table, key, operation) in RECORD_TABLES {
                let mut rows = sqlx::query(AssertSqlSafe(format!(
                    "SELECT {key} AS record_key, {operation} AS operation, wire, record_hash \
                     FROM {table}"
                )))
                .fetch(&self.pool);
                while let Some(row) = rows.try_next().await.map_err(db::<DB>)? {
                    let wire = Self::text(&row, "wire")?;
                    if !matches(&wire, &Self::text(&row, "record_hash")?) {
                        let operation: Option<String> =
                            row.try_get("operation").map_err(db::<DB>)?;
                        let key = Self::text(&row, "record_key")?;
                        return Ok(Err(Divergence {
                            seq: ledger.last_seq_of(operation.as_deref().unwrap_or_default()),
                            reason: format!(
                                "{table} {key}: its stored record no longer matches its record_hash"
                            ),
                        }));
                    }
                }
            }
            let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
            if let Err(divergence) = ledger.check_leases(&Self::read_all_leases(&mut conn).await?) {
                return Ok(Err(divergence));
            }
            Ok(ledger.check_grants(&Self::all_grants(&mut conn).await?))
        }
    }
}
