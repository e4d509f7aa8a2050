//! The store's side of the chain checks ([`crate::core::chain`]): the recorded
//! breaks and checkpoint, the walk from the checkpoint to the head, and the
//! owner's acknowledgement of a break.

use chrono::{DateTime, Utc};
use sqlx::{Row, Transaction};

use super::db;
use crate::core::audit::{AuditDraft, AuditRow, ChainStatus, ChainVerifier, seal};
use crate::core::chain::{BY_VERIFY, ChainBreak, ChainMarks};
use crate::core::ids::Sha256;
use crate::store::StoreError;
use crate::store::plan::codec::{self, ms};

const BREAK_COLUMNS: &str = "seq, reason, found_by, found_ms, acknowledged_seq";

shared! {
    impl {
        fn chain_break(row: &DB::Row) -> Result<ChainBreak, StoreError> {
            Ok(ChainBreak {
                seq: row.try_get("seq").map_err(db::<DB>)?,
                reason: Self::text(row, "reason")?,
                found_by: Self::text(row, "found_by")?,
                found_at: codec::from_ms(row.try_get("found_ms").map_err(db::<DB>)?)?,
                acknowledged_seq: row.try_get("acknowledged_seq").map_err(db::<DB>)?,
            })
        }

        /// The first recorded break neither acknowledged nor cleared.
        pub(super) async fn refusing_break(
            tx: &mut Transaction<'static, DB>,
        ) -> Result<Option<ChainBreak>, StoreError> {
            let row = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {BREAK_COLUMNS} FROM chain_breaks \
                 WHERE cleared_ms IS NULL AND acknowledged_seq IS NULL ORDER BY seq LIMIT 1"
            )))
            .fetch_optional(&mut **tx)
            .await
            .map_err(db::<DB>)?;
            row.as_ref().map(Self::chain_break).transpose()
        }

        pub(super) async fn read_chain_marks(&self) -> Result<ChainMarks, StoreError> {
            let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {BREAK_COLUMNS} FROM chain_breaks WHERE cleared_ms IS NULL ORDER BY seq"
            )))
            .fetch_all(&self.pool)
            .await
            .map_err(db::<DB>)?;
            let breaks = rows.iter().map(Self::chain_break).collect::<Result<Vec<_>, _>>()?;
            let checkpoint = sqlx::query("SELECT seq, hash FROM chain_checkpoint WHERE id = 1")
                .fetch_optional(&self.pool)
                .await
                .map_err(db::<DB>)?;
            let checkpoint = match checkpoint {
                None => None,
                Some(row) => {
                    let hash = Self::text(&row, "hash")?;
                    Some((
                        row.try_get("seq").map_err(db::<DB>)?,
                        Sha256::parse(&hash)
                            .map_err(|_| codec::corrupt("the chain checkpoint's hash".into()))?,
                    ))
                }
            };
            Ok(ChainMarks { checkpoint, breaks })
        }

        /// The walk of a write door: from the checkpoint's row (which must still
        /// have its hash) or the genesis, every row's link and hash to the head.
        pub(super) async fn read_link_check(
            &self,
            from: Option<&(i64, Sha256)>,
        ) -> Result<ChainStatus, StoreError> {
            let Some((seq, hash)) = from else {
                let mut verifier = ChainVerifier::default();
                return Ok(match self.walk(1, &mut verifier, None).await? {
                    Ok(()) => verifier.finish(),
                    Err(broken) => broken,
                });
            };
            self.walk_after(*seq, hash, "the chain checkpoint").await
        }

        pub(super) async fn write_chain_outcome(
            &self,
            status: &ChainStatus,
            found_by: &str,
            now: DateTime<Utc>,
        ) -> Result<(), StoreError> {
            let mut tx = self.pool.begin().await.map_err(db::<DB>)?;
            match status {
                ChainStatus::Intact { head, .. } => {
                    if found_by == BY_VERIFY {
                        sqlx::query("UPDATE chain_breaks SET cleared_ms = $1 WHERE cleared_ms IS NULL")
                            .bind(ms(now))
                            .execute(&mut *tx)
                            .await
                            .map_err(db::<DB>)?;
                    }
                    if let Some((seq, hash)) = head {
                        Self::move_checkpoint(&mut tx, *seq, hash, found_by, now).await?;
                    }
                }
                ChainStatus::Broken { seq, reason } => {
                    // The same break found again keeps its acknowledgement; another
                    // reason at that seq asks for one anew.
                    sqlx::query(
                        "INSERT INTO chain_breaks (seq, reason, found_by, found_ms) VALUES ($1, $2, $3, $4) \
                         ON CONFLICT (seq) DO UPDATE SET found_by = excluded.found_by, found_ms = excluded.found_ms, \
                         cleared_ms = NULL, \
                         acknowledged_seq = CASE WHEN chain_breaks.reason = excluded.reason \
                             AND chain_breaks.cleared_ms IS NULL THEN chain_breaks.acknowledged_seq END, \
                         reason = excluded.reason",
                    )
                    .bind(*seq)
                    .bind(reason.as_str())
                    .bind(found_by)
                    .bind(ms(now))
                    .execute(&mut *tx)
                    .await
                    .map_err(db::<DB>)?;
                }
            }
            tx.commit().await.map_err(db::<DB>)
        }

        /// Moves the checkpoint to `seq` unless it is already there or further.
        async fn move_checkpoint(
            tx: &mut Transaction<'static, DB>,
            seq: i64,
            hash: &Sha256,
            by: &str,
            now: DateTime<Utc>,
        ) -> Result<(), StoreError> {
            sqlx::query(
                "INSERT INTO chain_checkpoint (id, seq, hash, checked_by, checked_ms) VALUES (1, $1, $2, $3, $4) \
                 ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, \
                 checked_by = excluded.checked_by, checked_ms = excluded.checked_ms \
                 WHERE chain_checkpoint.seq < excluded.seq",
            )
            .bind(seq)
            .bind(hash.as_str())
            .bind(by)
            .bind(ms(now))
            .execute(&mut **tx)
            .await
            .map_err(db::<DB>)?;
            Ok(())
        }

        pub(super) async fn write_acknowledgement(
            &self,
            seq: i64,
            draft: AuditDraft,
        ) -> Result<AuditRow, StoreError> {
            let (mut tx, head) = self.begin_write_on_any_chain().await?;
            let open = sqlx::query(
                "SELECT acknowledged_seq FROM chain_breaks WHERE seq = $1 AND cleared_ms IS NULL",
            )
            .bind(seq)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db::<DB>)?;
            match open {
                None => {
                    return Err(StoreError::Other(format!(
                        "no break is recorded at seq {seq}: `holdfast audit verify` names the break there is"
                    )));
                }
                Some(row) => {
                    let acknowledged: Option<i64> = row.try_get("acknowledged_seq").map_err(db::<DB>)?;
                    if let Some(at) = acknowledged {
                        return Err(StoreError::Other(format!(
                            "the break at seq {seq} was acknowledged already (audit row {at})"
                        )));
                    }
                }
            }
            let at = draft.at;
            let row = seal(&head.hash, head.seq + 1, draft);
            Self::insert_audit(&mut tx, std::slice::from_ref(&row)).await?;
            sqlx::query("UPDATE chain_breaks SET acknowledged_seq = $1 WHERE seq = $2")
                .bind(row.seq)
                .bind(seq)
                .execute(&mut *tx)
                .await
                .map_err(db::<DB>)?;
            Self::move_checkpoint(&mut tx, row.seq, &row.hash, crate::core::chain::ACKNOWLEDGE_ACTION, at)
                .await?;
            tx.commit().await.map_err(db::<DB>)?;
            Ok(row)
        }
    }
}
