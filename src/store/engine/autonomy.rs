//! Autonomy per tool and the drill results its gate reads: the stored levels, a
//! level change with its audit row, and a drill result with its audit row, each
//! in one write transaction. Lookup checks are audit rows of the autonomy ledger
//! alone: the chain is their only record, read back from it.

use sqlx::Row;

use sqlx::AssertSqlSafe;

use super::{AUDIT_COLUMNS, db};
use crate::core::audit::{AuditDraft, AuditRow, seal};
use crate::core::autonomy::{
    AUTONOMY_LEDGER, DRILL_LEDGER, DrillResult, LOOKUP_CHECK_ACTION, LevelChange, LookupCheck,
    ToolLevel,
};
use crate::core::clock::{format_instant, parse_instant};
use crate::core::ladder::Level;
use crate::core::model::FailureMode;
use crate::core::rerun::{RecordedChange, TOOL_CHANGED_ACTION};
use crate::store::StoreError;
use crate::store::plan::codec;

/// Splits a stored comma list; empty text is an empty list.
fn list(text: &str) -> Vec<String> {
    text.split(',')
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

shared! {
    impl {
        /// Every stored level, by tool.
        pub(super) async fn all_levels(conn: &mut DB::Connection) -> Result<Vec<ToolLevel>, StoreError> {
            let rows = sqlx::query(
                "SELECT tool, level, set_by, set_at, rationale FROM autonomy ORDER BY tool",
            )
            .fetch_all(&mut *conn)
            .await
            .map_err(db::<DB>)?;
            rows.iter()
                .map(|row| {
                    let level = Self::text(row, "level")?;
                    let at = Self::text(row, "set_at")?;
                    Ok(ToolLevel {
                        tool: Self::text(row, "tool")?,
                        level: Level::parse(&level)
                            .ok_or_else(|| codec::corrupt(format!("autonomy level {level:?}")))?,
                        set_by: Self::text(row, "set_by")?,
                        set_at: parse_instant(&at)
                            .map_err(|_| codec::corrupt(format!("autonomy time {at:?}")))?,
                        rationale: Self::text(row, "rationale")?,
                    })
                })
                .collect()
        }

        /// Every recorded drill result with the seq of the row that recorded it,
        /// oldest first; only `tool`'s when one is named.
        pub(super) async fn read_drills(
            &self,
            tool: Option<&str>,
        ) -> Result<Vec<(i64, DrillResult)>, StoreError> {
            let rows = match tool {
                Some(tool) => sqlx::query(
                    "SELECT seq, tool, run_at, cases, passed, modes, failed, drill_store, recorded_by, \
                     contract_version FROM drill_runs WHERE tool = $1 ORDER BY seq",
                )
                .bind(tool)
                .fetch_all(&self.pool)
                .await,
                None => sqlx::query(
                    "SELECT seq, tool, run_at, cases, passed, modes, failed, drill_store, recorded_by, \
                     contract_version FROM drill_runs ORDER BY seq",
                )
                .fetch_all(&self.pool)
                .await,
            }
            .map_err(db::<DB>)?;
            rows.iter()
                .map(|row| {
                    let at = Self::text(row, "run_at")?;
                    let count = |column: &str| -> Result<u32, StoreError> {
                        let n: i64 = row.try_get(column).map_err(db::<DB>)?;
                        u32::try_from(n).map_err(|_| codec::corrupt(format!("drill {column} {n}")))
                    };
                    let modes = list(&Self::text(row, "modes")?)
                        .iter()
                        .map(|m| {
                            FailureMode::parse(m)
                                .ok_or_else(|| codec::corrupt(format!("drill mode {m:?}")))
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    let seq: i64 = row.try_get("seq").map_err(db::<DB>)?;
                    Ok((
                        seq,
                        DrillResult {
                            tool: Self::text(row, "tool")?,
                            at: parse_instant(&at)
                                .map_err(|_| codec::corrupt(format!("drill time {at:?}")))?,
                            cases: count("cases")?,
                            passed: count("passed")?,
                            modes,
                            failed: list(&Self::text(row, "failed")?),
                            drill_store: Self::text(row, "drill_store")?,
                            by: Self::text(row, "recorded_by")?,
                            contract_version: row
                                .try_get::<Option<String>, _>("contract_version")
                                .map_err(db::<DB>)?,
                        },
                    ))
                })
                .collect()
        }

        /// Writes a level change and its audit row; refused with
        /// [`StoreError::AutonomyChanged`] when the level moved since the decision.
        pub(super) async fn write_level(&self, change: LevelChange) -> Result<AuditRow, StoreError> {
            let (mut tx, head) = self.begin_write().await?;
            if !Self::apply_level(&mut tx, &change).await? {
                let now = Self::all_levels(&mut tx)
                    .await?
                    .into_iter()
                    .find(|l| l.tool == change.to.tool)
                    .map_or(Level::Manual, |l| l.level);
                tx.rollback().await.map_err(db::<DB>)?;
                return Err(StoreError::AutonomyChanged {
                    tool: change.to.tool.clone(),
                    now: now.as_str().to_owned(),
                });
            }
            let row = seal(&head.hash, head.seq + 1, change.audit);
            Self::insert_audit(&mut tx, std::slice::from_ref(&row)).await?;
            tx.commit().await.map_err(db::<DB>)?;
            Ok(row)
        }

        /// Writes a drill result under the seq of its audit row.
        pub(super) async fn write_drill(
            &self,
            result: DrillResult,
            draft: AuditDraft,
        ) -> Result<AuditRow, StoreError> {
            let (mut tx, head) = self.begin_write().await?;
            let row = seal(&head.hash, head.seq + 1, draft);
            let modes: Vec<&str> = result.modes.iter().map(|m| m.as_str()).collect();
            sqlx::query(
                "INSERT INTO drill_runs (seq, tool, run_at, cases, passed, modes, failed, \
                 drill_store, recorded_by, contract_version) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            )
            .bind(row.seq)
            .bind(result.tool.as_str())
            .bind(format_instant(result.at))
            .bind(i64::from(result.cases))
            .bind(i64::from(result.passed))
            .bind(modes.join(","))
            .bind(result.failed.join(","))
            .bind(result.drill_store.as_str())
            .bind(result.by.as_str())
            .bind(result.contract_version.as_deref())
            .execute(&mut *tx)
            .await
            .map_err(db::<DB>)?;
            Self::insert_audit(&mut tx, std::slice::from_ref(&row)).await?;
            tx.commit().await.map_err(db::<DB>)?;
            Ok(row)
        }

        /// Every row of the drill ledger (drills, contract versions, recorded
        /// changes), oldest first: what `core::rerun::last_drill` reads.
        pub(super) async fn read_drill_ledger(&self) -> Result<Vec<AuditRow>, StoreError> {
            let rows = sqlx::query(AssertSqlSafe(format!(
                "SELECT {AUDIT_COLUMNS} FROM audit WHERE operation = $1 ORDER BY seq"
            )))
            .bind(DRILL_LEDGER)
            .fetch_all(&self.pool)
            .await
            .map_err(db::<DB>)?;
            Ok(self.audit_rows(&rows))
        }

        /// Writes a tool's new stored level as `change` decided (an owner's
        /// change or the system's drop), inside a transaction, when the level
        /// it was decided on is still the stored one; returns whether it wrote.
        pub(super) async fn apply_level(
            conn: &mut DB::Connection,
            drop: &LevelChange,
        ) -> Result<bool, StoreError> {
            let current = Self::all_levels(&mut *conn)
                .await?
                .into_iter()
                .find(|l| l.tool == drop.to.tool)
                .map_or(Level::Manual, |l| l.level);
            if current != drop.from {
                return Ok(false);
            }
            let to = &drop.to;
            sqlx::query("DELETE FROM autonomy WHERE tool = $1")
                .bind(to.tool.as_str())
                .execute(&mut *conn)
                .await
                .map_err(db::<DB>)?;
            sqlx::query(
                "INSERT INTO autonomy (tool, level, level_rank, set_by, set_at, rationale) \
                 VALUES ($1, $2, $3, $4, $5, $6)",
            )
            .bind(to.tool.as_str())
            .bind(to.level.as_str())
            .bind(to.level.rank())
            .bind(to.set_by.as_str())
            .bind(format_instant(to.set_at))
            .bind(to.rationale.as_str())
            .execute(&mut *conn)
            .await
            .map_err(db::<DB>)?;
            Ok(true)
        }

        /// Records a material change outside a tool's contract with its audit
        /// row and, when the tool stood above the stale floor, the system's
        /// drop of its level (`core::rerun::stale_drop`), in one transaction.
        /// Returns the rows written, the change's first.
        pub(super) async fn write_tool_change(
            &self,
            change: RecordedChange,
            draft: AuditDraft,
        ) -> Result<Vec<AuditRow>, StoreError> {
            if draft.operation.as_str() != DRILL_LEDGER || draft.action != TOOL_CHANGED_ACTION {
                return Err(StoreError::Other(format!(
                    "a recorded change is a {TOOL_CHANGED_ACTION} row of {DRILL_LEDGER}, not {} of {}",
                    draft.action, draft.operation
                )));
            }
            let (mut tx, head) = self.begin_write().await?;
            let by = draft.by.clone();
            let mut rows = vec![seal(&head.hash, head.seq + 1, draft)];
            let current = Self::all_levels(&mut tx)
                .await?
                .into_iter()
                .find(|l| l.tool == change.tool)
                .map_or(Level::Manual, |l| l.level);
            if let Some(drop) = crate::core::rerun::stale_drop(&change.tool, current, &change.words(), &by, change.at)
                && Self::apply_level(&mut tx, &drop).await?
            {
                let prev = rows[0].hash.clone();
                rows.push(seal(&prev, head.seq + 2, drop.audit));
            }
            Self::insert_audit(&mut tx, &rows).await?;
            tx.commit().await.map_err(db::<DB>)?;
            Ok(rows)
        }

        /// Every lookup check, oldest first, read from the audit rows that
        /// recorded them.
        pub(super) async fn read_lookup_checks(&self) -> Result<Vec<LookupCheck>, StoreError> {
            let rows = sqlx::query(AssertSqlSafe(format!(
                "SELECT {AUDIT_COLUMNS} FROM audit WHERE operation = $1 AND action = $2 ORDER BY seq"
            )))
            .bind(AUTONOMY_LEDGER)
            .bind(LOOKUP_CHECK_ACTION)
            .fetch_all(&self.pool)
            .await
            .map_err(db::<DB>)?;
            Ok(self
                .audit_rows(&rows)
                .iter()
                .filter_map(LookupCheck::from_row)
                .collect())
        }

        /// Appends the audit row of one lookup check.
        pub(super) async fn write_lookup_check(&self, draft: AuditDraft) -> Result<AuditRow, StoreError> {
            if draft.operation.as_str() != AUTONOMY_LEDGER || draft.action != LOOKUP_CHECK_ACTION {
                return Err(StoreError::Other(format!(
                    "a lookup check is a {LOOKUP_CHECK_ACTION} row of {AUTONOMY_LEDGER}, not {} of {}",
                    draft.action, draft.operation
                )));
            }
            let (mut tx, head) = self.begin_write().await?;
            let row = seal(&head.hash, head.seq + 1, draft);
            Self::insert_audit(&mut tx, std::slice::from_ref(&row)).await?;
            tx.commit().await.map_err(db::<DB>)?;
            Ok(row)
        }
    }
}
