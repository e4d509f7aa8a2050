//! A circuit per tool (DESIGN §9.5): the stored circuits, a change with its
//! audit row in one write transaction, and the failures a sender saw, counted
//! over the circuit's window.

use chrono::{DateTime, Utc};
use sqlx::Row;

use super::db;
use crate::core::audit::{AuditRow, seal};
use crate::core::circuit::{Circuit, CircuitChange, Failure, Failures, Position};
use crate::core::clock::{format_instant, parse_instant};
use crate::store::StoreError;
use crate::store::plan::codec;

const COLUMNS: &str = "tool, position, since, reason, failures, probe, set_by";

shared! {
    impl {
        fn circuit_row(row: &DB::Row) -> Result<Circuit, StoreError> {
            let position = Self::text(row, "position")?;
            let since = Self::text(row, "since")?;
            let failures: i64 = row.try_get("failures").map_err(db::<DB>)?;
            let probe = Self::text(row, "probe")?;
            Ok(Circuit {
                tool: Self::text(row, "tool")?,
                position: Position::parse(&position)
                    .ok_or_else(|| codec::corrupt(format!("circuit position {position:?}")))?,
                since: parse_instant(&since)
                    .map_err(|_| codec::corrupt(format!("circuit time {since:?}")))?,
                reason: Self::text(row, "reason")?,
                failures: u32::try_from(failures)
                    .map_err(|_| codec::corrupt(format!("circuit failures {failures}")))?,
                probe: (!probe.is_empty()).then_some(probe),
                by: Self::text(row, "set_by")?,
            })
        }

        /// Every stored circuit, by tool.
        pub(super) async fn read_circuits(&self) -> Result<Vec<Circuit>, StoreError> {
            let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM circuits ORDER BY tool"
            )))
            .fetch_all(&self.pool)
            .await
            .map_err(db::<DB>)?;
            rows.iter().map(Self::circuit_row).collect()
        }

        /// `tool`'s stored circuit, if it has one.
        pub(super) async fn read_circuit(&self, tool: &str) -> Result<Option<Circuit>, StoreError> {
            let row = sqlx::query(sqlx::AssertSqlSafe(format!(
                "SELECT {COLUMNS} FROM circuits WHERE tool = $1"
            )))
            .bind(tool)
            .fetch_optional(&self.pool)
            .await
            .map_err(db::<DB>)?;
            row.as_ref().map(Self::circuit_row).transpose()
        }

        /// Writes a circuit change and its audit row; refused with
        /// [`StoreError::CircuitChanged`] when the circuit moved since the
        /// decision.
        pub(super) async fn write_circuit(&self, change: CircuitChange) -> Result<AuditRow, StoreError> {
            let (mut tx, head) = self.begin_write().await?;
            let row = sqlx::query("SELECT position FROM circuits WHERE tool = $1")
                .bind(change.to.tool.as_str())
                .fetch_optional(&mut *tx)
                .await
                .map_err(db::<DB>)?;
            let now = match &row {
                Some(row) => Self::text(row, "position")?,
                None => Position::Closed.as_str().to_owned(),
            };
            if now != change.from.as_str() {
                tx.rollback().await.map_err(db::<DB>)?;
                return Err(StoreError::CircuitChanged {
                    tool: change.to.tool.clone(),
                    now,
                });
            }
            let to = &change.to;
            sqlx::query("DELETE FROM circuits WHERE tool = $1")
                .bind(to.tool.as_str())
                .execute(&mut *tx)
                .await
                .map_err(db::<DB>)?;
            sqlx::query(
                "INSERT INTO circuits (tool, position, since, reason, failures, probe, set_by) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            )
            .bind(to.tool.as_str())
            .bind(to.position.as_str())
            .bind(format_instant(to.since))
            .bind(to.reason.as_str())
            .bind(i64::from(to.failures))
            .bind(to.probe.clone().unwrap_or_default())
            .bind(to.by.as_str())
            .execute(&mut *tx)
            .await
            .map_err(db::<DB>)?;
            if to.position == Position::Closed {
                // A closed circuit counts afresh.
                sqlx::query("DELETE FROM circuit_failures WHERE tool = $1")
                    .bind(to.tool.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(db::<DB>)?;
            }
            let row = seal(&head.hash, head.seq + 1, change.audit);
            Self::insert_audit(&mut tx, std::slice::from_ref(&row)).await?;
            tx.commit().await.map_err(db::<DB>)?;
            Ok(row)
        }

        /// Notes that `attempt` of `tool` failed at `at`, drops the failures
        /// before `since`, and counts those left by kind.
        pub(super) async fn write_circuit_failure(
            &self,
            tool: &str,
            attempt: &str,
            kind: Failure,
            at: DateTime<Utc>,
            since: DateTime<Utc>,
        ) -> Result<Failures, StoreError> {
            let mut tx = self.pool.begin().await.map_err(db::<DB>)?;
            sqlx::query("DELETE FROM circuit_failures WHERE tool = $1 AND at_ms < $2")
                .bind(tool)
                .bind(since.timestamp_millis())
                .execute(&mut *tx)
                .await
                .map_err(db::<DB>)?;
            sqlx::query(
                "INSERT INTO circuit_failures (tool, attempt, at_ms, kind) VALUES ($1, $2, $3, $4) \
                 ON CONFLICT (tool, attempt) DO NOTHING",
            )
            .bind(tool)
            .bind(attempt)
            .bind(at.timestamp_millis())
            .bind(kind.as_str())
            .execute(&mut *tx)
            .await
            .map_err(db::<DB>)?;
            let rows = sqlx::query(
                "SELECT kind, COUNT(*) AS n FROM circuit_failures WHERE tool = $1 AND at_ms >= $2 \
                 GROUP BY kind",
            )
            .bind(tool)
            .bind(since.timestamp_millis())
            .fetch_all(&mut *tx)
            .await
            .map_err(db::<DB>)?;
            tx.commit().await.map_err(db::<DB>)?;
            let mut counts = Failures::default();
            for row in &rows {
                let n: i64 = row.try_get("n").map_err(db::<DB>)?;
                let n = u32::try_from(n).unwrap_or(u32::MAX);
                match Failure::parse(&Self::text(row, "kind")?) {
                    Some(Failure::ServerError) => counts.server_errors = n,
                    Some(Failure::Timeout) => counts.timeouts = n,
                    Some(Failure::Unknown) => counts.unknowns = n,
                    None => {}
                }
            }
            Ok(counts)
        }
    }
}
