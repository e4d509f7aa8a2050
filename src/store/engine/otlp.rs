//! What the OpenTelemetry door keeps between requests (DESIGN §10.1): spans that
//! wait for their tool span, and the operations late spans attach to.

use chrono::{DateTime, Utc};
use sqlx::Row;

use super::db;
use crate::core::ids::{OperationId, Sha256};
use crate::core::model::State;
use crate::store::plan::codec::{from_ms, ms};
use crate::store::plan::redaction::Redacted;
use crate::store::plan::rows::search_terms;
use crate::store::{
    IngestMode, IngestReport, Ingester, OtlpCalls, OtlpKeeping, SameCall, StoreError, WaitingRow,
};

shared! {
    impl {
        /// [`Store::otlp_ingest`](crate::store::Store::otlp_ingest): a batch
        /// with no records is only what the door keeps, in a transaction of its
        /// own (a write all the same: a recorded break refuses it).
        pub(super) async fn write_otlp_ingest(
            &self,
            batch: Redacted,
            mode: IngestMode,
            ingester: &Ingester,
            now: DateTime<Utc>,
            keeping: &OtlpKeeping,
        ) -> Result<IngestReport, StoreError> {
            if !batch.records.is_empty() || !batch.refused.is_empty() {
                return self.write_ingest(batch, mode, ingester, now, Some(keeping)).await;
            }
            if mode != IngestMode::DryRun && !keeping.is_empty() {
                let (mut tx, _) = self.begin_write().await?;
                Self::write_keeping(&mut tx, keeping).await?;
                tx.commit().await.map_err(db::<DB>)?;
            }
            Ok(IngestReport {
                committed: Vec::new(),
                unchanged: 0,
                rejected: Vec::new(),
            })
        }

        /// What the door keeps between requests, inside the caller's transaction.
        pub(super) async fn write_keeping(
            conn: &mut DB::Connection,
            keeping: &OtlpKeeping,
        ) -> Result<(), StoreError> {
            if !keeping.keep.is_empty() {
                Self::insert_many_then(
                    &mut *conn,
                    "INSERT INTO otlp_pending (trace_id, span_id, since_ms, span) ",
                    " ON CONFLICT (trace_id, span_id) DO NOTHING",
                    4,
                    &keeping.keep,
                    |b, row| {
                        b.push_bind(row.trace_id.clone())
                            .push_bind(row.span_id.clone())
                            .push_bind(ms(row.since))
                            .push_bind(row.span.clone());
                    },
                )
                .await?;
            }
            for (trace, span) in &keeping.release {
                sqlx::query("DELETE FROM otlp_pending WHERE trace_id = $1 AND span_id = $2")
                    .bind(trace.clone())
                    .bind(span.clone())
                    .execute(&mut *conn)
                    .await
                    .map_err(db::<DB>)?;
            }
            if !keeping.terms.is_empty() {
                let ids: Vec<String> = keeping.terms.iter().map(|(op, _)| op.clone()).collect();
                let mut stored = std::collections::HashSet::new();
                for row in Self::select_in(&mut *conn, "SELECT id FROM operations WHERE id IN", &ids).await? {
                    stored.insert(Self::text(&row, "id")?);
                }
                let terms: Vec<(String, String)> = keeping
                    .terms
                    .iter()
                    .filter(|(op, _)| stored.contains(op))
                    .flat_map(|(op, value)| search_terms(op, [value.as_str()]))
                    .collect();
                Self::insert_terms(&mut *conn, &terms).await?;
            }
            Ok(())
        }

        pub(super) async fn read_waiting(
            &self,
            traces: &[String],
            since_before: DateTime<Utc>,
        ) -> Result<Vec<WaitingRow>, StoreError> {
            let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
            let mut rows = Self::select_in(
                &mut conn,
                "SELECT trace_id, span_id, since_ms, span FROM otlp_pending WHERE trace_id IN",
                traces,
            )
            .await?;
            rows.extend(
                sqlx::query("SELECT trace_id, span_id, since_ms, span FROM otlp_pending WHERE since_ms <= $1")
                    .bind(ms(since_before))
                    .fetch_all(&mut *conn)
                    .await
                    .map_err(db::<DB>)?,
            );
            let mut out: Vec<WaitingRow> = Vec::with_capacity(rows.len());
            for row in &rows {
                let since: i64 = row.try_get("since_ms").map_err(db::<DB>)?;
                out.push(WaitingRow {
                    trace_id: Self::text(row, "trace_id")?,
                    span_id: Self::text(row, "span_id")?,
                    since: from_ms(since)?,
                    span: Self::text(row, "span")?,
                });
            }
            out.sort_by(|a, b| (&a.trace_id, &a.span_id).cmp(&(&b.trace_id, &b.span_id)));
            out.dedup_by(|a, b| a.trace_id == b.trace_id && a.span_id == b.span_id);
            Ok(out)
        }

        pub(super) async fn count_waiting(&self) -> Result<u64, StoreError> {
            let n: i64 = sqlx::query("SELECT COUNT(*) AS n FROM otlp_pending")
                .fetch_one(&self.pool)
                .await
                .map_err(db::<DB>)?
                .try_get("n")
                .map_err(db::<DB>)?;
            Ok(u64::try_from(n).unwrap_or(0))
        }

        pub(super) async fn read_calls(
            &self,
            ids: &[String],
            payloads: &[String],
        ) -> Result<OtlpCalls, StoreError> {
            let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
            let mut out = OtlpCalls::default();
            for row in Self::select_in(&mut conn, "SELECT id FROM operations WHERE id IN", ids).await? {
                out.attempts.entry(Self::text(&row, "id")?).or_default();
            }
            let rows = Self::select_in(
                &mut conn,
                "SELECT id, operation FROM attempts WHERE operation IN",
                ids,
            )
            .await?;
            for row in rows {
                let op = Self::text(&row, "operation")?;
                let id = Self::text(&row, "id")?;
                out.attempts.entry(op).or_default().push(id);
            }
            let rows = Self::select_in(
                &mut conn,
                "SELECT id, tool, payload_hash, business_key FROM operations \
                 WHERE state = 'UNKNOWN' AND payload_hash IN",
                payloads,
            )
            .await?;
            for row in rows {
                let hash = Sha256::parse(&Self::text(&row, "payload_hash")?)
                    .map_err(|e| StoreError::Other(e.to_string()))?;
                let id = OperationId::parse(&Self::text(&row, "id")?)
                    .map_err(|e| StoreError::Other(e.to_string()))?;
                let key: Option<String> = row.try_get("business_key").map_err(db::<DB>)?;
                out.unknown.push((id, Self::text(&row, "tool")?, hash, key));
            }
            out.unknown.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
            out.unknown.dedup_by(|a, b| a.0 == b.0);
            Ok(out)
        }

        pub(super) async fn read_sent_calls(
            &self,
            correlation_prefix: &str,
        ) -> Result<Vec<(OperationId, String, DateTime<Utc>)>, StoreError> {
            let pattern = format!(
                "{}%",
                correlation_prefix.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_")
            );
            let rows = sqlx::query(
                "SELECT id, correlation_id, created_ms FROM operations \
                 WHERE state = 'SENT' AND correlation_id LIKE $1 ESCAPE '\\' ORDER BY id",
            )
            .bind(pattern)
            .fetch_all(&self.pool)
            .await
            .map_err(db::<DB>)?;
            let mut out = Vec::with_capacity(rows.len());
            for row in &rows {
                let created: i64 = row.try_get("created_ms").map_err(db::<DB>)?;
                out.push((
                    OperationId::parse(&Self::text(row, "id")?)
                        .map_err(|e| StoreError::Other(e.to_string()))?,
                    Self::text(row, "correlation_id")?,
                    from_ms(created)?,
                ));
            }
            Ok(out)
        }

        pub(super) async fn read_same_calls(
            &self,
            tool: &str,
            payload_hash: &Sha256,
            business_key: Option<&str>,
        ) -> Result<Vec<SameCall>, StoreError> {
            let mut qb: sqlx::QueryBuilder<DB> =
                crate::store::sql::same_calls("", tool, payload_hash.as_str(), business_key);
            let rows = qb
                .build()
                .fetch_all(&self.pool)
            .await
            .map_err(db::<DB>)?;
            let mut out = Vec::with_capacity(rows.len());
            for row in &rows {
                let state = Self::text(row, "state")?;
                let created: i64 = row.try_get("created_ms").map_err(db::<DB>)?;
                out.push(SameCall {
                    id: OperationId::parse(&Self::text(row, "id")?)
                        .map_err(|e| StoreError::Other(e.to_string()))?,
                    state: State::parse(&state)
                        .ok_or_else(|| StoreError::Other(format!("stored state {state:?} is not a state")))?,
                    payload_hash: Sha256::parse(&Self::text(row, "payload_hash")?)
                        .map_err(|e| StoreError::Other(e.to_string()))?,
                    created: from_ms(created)?,
                });
            }
            Ok(out)
        }
    }
}
