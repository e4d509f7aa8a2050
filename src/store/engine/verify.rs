//! Verification: the walk over the audit chain, then the comparison of what is
//! stored — each operation's state, owner and version, every record against its
//! `record_hash`, the grants, the autonomy levels and drill results — with what the chain says, so that an edit made
//! behind the store's back is found wherever it was made.

use std::collections::HashSet;

use futures_util::TryStreamExt;
use sqlx::{AssertSqlSafe, Row};

use super::{AUDIT_COLUMNS, db};
use crate::core::audit::{ChainStatus, ChainVerifier, ENCODING, hashes_to};
use crate::core::ids::Sha256;
use crate::core::ledger::{Divergence, Ledger, Stored};
use crate::store::StoreError;
use crate::store::plan::codec;

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
            if let Err(broken) = self.walk(1, &mut verifier, Some(&mut ledger)).await? {
                return Ok(broken);
            }
            Ok(match self.compare(&ledger).await? {
                Ok(()) => verifier.finish(),
                Err(Divergence { seq, reason }) => ChainStatus::Broken { seq, reason },
            })
        }

        /// Walks the chain after a saved digest: row `seq` must still hash to
        /// `hash`, from its stored `prev_hash` and its content; the rows after it
        /// are walked as [`Self::read_verify`] walks them. The rows before it and
        /// the store comparison are not checked.
        pub(super) async fn read_verify_from(
            &self,
            seq: i64,
            hash: &Sha256,
        ) -> Result<ChainStatus, StoreError> {
            let row = sqlx::query(AssertSqlSafe(format!(
                "SELECT {AUDIT_COLUMNS} FROM audit WHERE seq = $1"
            )))
            .bind(seq)
            .fetch_optional(&self.pool)
            .await
            .map_err(db::<DB>)?;
            let broken = |reason: String| Ok(ChainStatus::Broken { seq, reason });
            let Some(row) = row else {
                return broken(format!(
                    "the saved digest names seq {seq}, which the chain no longer has (rows were removed)"
                ));
            };
            let columns = match Self::audit_columns::<&str>(&row) {
                Ok(columns) => columns,
                Err(e) => return broken(format!("the row cannot be read: {e}")),
            };
            let checked = match columns.check() {
                Ok(checked) => checked,
                Err(e) => return broken(format!("the row cannot be read: {e}")),
            };
            if columns.hash != hash.as_str() {
                return broken(format!(
                    "the saved digest does not match: seq {seq} now has another hash (the chain was rewritten)"
                ));
            }
            let view = columns.view(&checked);
            if !(1..=ENCODING).contains(&view.encoding)
                || !hashes_to(&mut String::new(), columns.prev_hash, &view, hash.as_str())
            {
                return broken(
                    "hash does not match the row's content (the row was changed)".into(),
                );
            }
            let mut verifier = ChainVerifier::after(seq, hash, view.encoding);
            Ok(match self.walk(seq + 1, &mut verifier, None).await? {
                Ok(()) => verifier.finish(),
                Err(broken) => broken,
            })
        }

        /// Feeds every row from `seq` on, in one streamed statement, to
        /// `verifier` and `ledger`; the first row that does not check ends it.
        /// A row is read as borrowed text and checked in place: nothing but the
        /// evidence list and a non-canonical instant is copied.
        async fn walk(
            &self,
            from: i64,
            verifier: &mut ChainVerifier,
            mut ledger: Option<&mut Ledger>,
        ) -> Result<Result<(), ChainStatus>, StoreError> {
            let mut rows = sqlx::query(AssertSqlSafe(format!(
                "SELECT {AUDIT_COLUMNS} FROM audit WHERE seq >= $1 ORDER BY seq"
            )))
            .bind(from)
            .fetch(&self.pool);
            while let Some(row) = rows.try_next().await.map_err(db::<DB>)? {
                let seq: i64 = row.try_get("seq").map_err(db::<DB>)?;
                let unreadable = |e: StoreError| {
                    Ok(Err(ChainStatus::Broken {
                        seq,
                        reason: format!("the row cannot be read: {e}"),
                    }))
                };
                let columns = match Self::audit_columns::<&str>(&row) {
                    Ok(columns) => columns,
                    Err(e) => return unreadable(e),
                };
                let checked = match columns.check() {
                    Ok(checked) => checked,
                    Err(e) => return unreadable(e),
                };
                let view = columns.view(&checked);
                if let Err(broken) = verifier.push_view(&view, columns.prev_hash, columns.hash) {
                    return Ok(Err(broken));
                }
                if let Some(ledger) = ledger.as_deref_mut() {
                    ledger.push_view(&view);
                }
            }
            Ok(Ok(()))
        }

        /// Compares the stored operations, records and grants with `ledger`.
        async fn compare(&self, ledger: &Ledger) -> Result<Result<(), Divergence>, StoreError> {
            // Every stored operation that checks is one the chain made, and ids
            // are unique: when as many check as the chain made, none is missing.
            let mut checked = 0;
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
                    checked += 1;
                }
            }
            if checked != ledger.operations() {
                let mut ids = sqlx::query("SELECT id FROM operations").fetch(&self.pool);
                let mut seen: HashSet<String> = HashSet::new();
                while let Some(row) = ids.try_next().await.map_err(db::<DB>)? {
                    seen.insert(Self::text(&row, "id")?);
                }
                if let Err(divergence) = ledger.check_none_missing(|id| seen.contains(id)) {
                    return Ok(Err(divergence));
                }
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
            if let Err(divergence) = ledger.check_grants(&Self::all_grants(&mut conn).await?) {
                return Ok(Err(divergence));
            }
            if let Err(divergence) = ledger.check_levels(&Self::all_levels(&mut conn).await?) {
                return Ok(Err(divergence));
            }
            Ok(ledger.check_drills(&self.read_drills(None).await?))
        }
    }
}
