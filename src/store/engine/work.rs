//! The store's side of the work protocol (DESIGN §9.2): claims, heartbeats,
//! completions and releases, each one write transaction that reads the chain
//! head first and appends the step's audit row. Claims are handed out once: the
//! chain head is every writer's first lock, so two claims take turns, and on
//! PostgreSQL the candidates are selected `FOR UPDATE SKIP LOCKED` besides.

use chrono::Duration;
use sqlx::{QueryBuilder, Row, Transaction};

use super::{Head, db};
use crate::core::audit::{AuditRow, seal};
use crate::core::ids::OperationId;
use crate::core::work::{self, Lease, LeaseStatus, check_holder};
use crate::store::plan::codec::{self, from_ms, ms};
use crate::store::plan::work as work_plan;
use crate::store::sql::{push_in, push_tenants};
use crate::store::{Completion, IngestMode, Ingester, Scope, StoreError, WorkClaim, WorkStep};
use crate::wire::Numbered;

/// The columns of a lease joined with its operation.
const LEASE_COLUMNS: &str = "l.operation, l.worker, l.claimed_by, l.generation, l.claimed_ms, \
     l.expires_ms, l.status, o.tenant, o.tool";

shared! {
    impl {
        fn lease_of(row: &DB::Row) -> Result<Lease, StoreError> {
            let status = Self::text(row, "status")?;
            Ok(Lease {
                operation: codec::parse_id(&Self::text(row, "operation")?)?,
                tenant: Self::text(row, "tenant")?,
                tool: Self::text(row, "tool")?,
                worker: Self::text(row, "worker")?,
                claimed_by: Self::text(row, "claimed_by")?,
                generation: row.try_get("generation").map_err(db::<DB>)?,
                claimed_at: from_ms(row.try_get("claimed_ms").map_err(db::<DB>)?)?,
                expires_at: from_ms(row.try_get("expires_ms").map_err(db::<DB>)?)?,
                status: LeaseStatus::parse(&status)
                    .ok_or_else(|| codec::corrupt(format!("unknown lease status {status:?}")))?,
            })
        }

        /// The lease on `id` in `scope`; `lock` locks it for the transaction.
        pub(super) async fn read_lease(
            conn: &mut DB::Connection,
            scope: &Scope,
            id: &OperationId,
            lock: bool,
        ) -> Result<Option<Lease>, StoreError> {
            let mut qb: QueryBuilder<DB> = QueryBuilder::new(format!(
                "SELECT {LEASE_COLUMNS} FROM work_leases l JOIN operations o ON o.id = l.operation \
                 WHERE l.operation = "
            ));
            qb.push_bind(id.as_str().to_owned());
            push_tenants(&mut qb, "o.tenant", scope);
            if lock {
                qb.push(DB::FOR_UPDATE);
            }
            let row = qb
                .build()
                .fetch_optional(&mut *conn)
                .await
                .map_err(db::<DB>)?;
            row.as_ref().map(Self::lease_of).transpose()
        }

        /// Every lease, for `audit verify` (one whose operation is gone too).
        pub(super) async fn read_all_leases(
            conn: &mut DB::Connection,
        ) -> Result<Vec<Lease>, StoreError> {
            let rows = sqlx::query(
                "SELECT l.operation, l.worker, l.claimed_by, l.generation, l.claimed_ms, l.expires_ms, l.status, \
                 COALESCE(o.tenant, '') AS tenant, COALESCE(o.tool, '') AS tool \
                 FROM work_leases l LEFT JOIN operations o ON o.id = l.operation \
                 ORDER BY l.operation",
            )
            .fetch_all(&mut *conn)
            .await
            .map_err(db::<DB>)?;
            rows.iter().map(Self::lease_of).collect()
        }

        pub(super) async fn read_lease_in(
            &self,
            scope: &Scope,
            id: &OperationId,
        ) -> Result<Option<Lease>, StoreError> {
            let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
            Self::read_lease(&mut conn, scope, id, false).await
        }

        pub(super) async fn write_claim_work(
            &self,
            claim: &WorkClaim,
        ) -> Result<Vec<Lease>, StoreError> {
            let (mut tx, head) = self.begin_write().await?;
            let mut qb: QueryBuilder<DB> = QueryBuilder::new(
                "SELECT o.id, o.tenant, o.tool FROM operations o WHERE o.state = ",
            );
            qb.push_bind(work::WORK_STATE.as_str().to_owned());
            qb.push(
                " AND NOT EXISTS (SELECT 1 FROM work_leases l WHERE l.operation = o.id \
                 AND l.status = 'held' AND l.expires_ms > ",
            );
            qb.push_bind(ms(claim.now));
            qb.push(")");
            push_tenants(&mut qb, "o.tenant", &claim.tenants);
            match &claim.tools {
                None => {}
                Some(tools) if tools.is_empty() => {
                    qb.push(" AND 1 = 0");
                }
                Some(tools) => push_in(&mut qb, "o.tool", tools.iter().cloned()),
            }
            if !claim.held.is_empty() {
                qb.push(" AND o.tool NOT IN (");
                let mut list = qb.separated(", ");
                for tool in &claim.held {
                    list.push_bind(tool.clone());
                }
                list.push_unseparated(")");
            }
            if let Some(level) = claim.at_least {
                qb.push(" AND o.tool IN (SELECT tool FROM autonomy WHERE level_rank >= ");
                qb.push_bind(level.rank());
                qb.push(")");
            }
            qb.push(" ORDER BY o.state_since_ms, o.id LIMIT ");
            qb.push_bind(i64::try_from(claim.limit).unwrap_or(i64::MAX));
            qb.push(DB::SKIP_LOCKED);
            let rows = qb.build().fetch_all(&mut *tx).await.map_err(db::<DB>)?;
            let mut leases = Vec::with_capacity(rows.len());
            for row in &rows {
                let id = Self::text(row, "id")?;
                let generation: i64 = sqlx::query(
                    "INSERT INTO work_leases \
                     (operation, worker, claimed_by, generation, claimed_ms, expires_ms, length_ms, \
                     status) \
                     VALUES ($1, $2, $3, 1, $4, $5, $6, 'held') \
                     ON CONFLICT (operation) DO UPDATE SET worker = excluded.worker, \
                     claimed_by = excluded.claimed_by, \
                     generation = work_leases.generation + 1, claimed_ms = excluded.claimed_ms, \
                     expires_ms = excluded.expires_ms, length_ms = excluded.length_ms, \
                     status = excluded.status \
                     RETURNING generation",
                )
                .bind(&id)
                .bind(&claim.worker)
                .bind(&claim.signer.by)
                .bind(ms(claim.now))
                .bind(ms(claim.until))
                .bind(ms(claim.until) - ms(claim.now))
                .fetch_one(&mut *tx)
                .await
                .map_err(db::<DB>)?
                .try_get("generation")
                .map_err(db::<DB>)?;
                leases.push(Lease {
                    operation: codec::parse_id(&id)?,
                    tenant: Self::text(row, "tenant")?,
                    tool: Self::text(row, "tool")?,
                    worker: claim.worker.clone(),
                    claimed_by: claim.signer.by.clone(),
                    generation,
                    claimed_at: claim.now,
                    expires_at: claim.until,
                    status: LeaseStatus::Held,
                });
            }
            if leases.is_empty() {
                tx.rollback().await.map_err(db::<DB>)?;
                return Ok(leases);
            }
            let mut sealed: Vec<AuditRow> = Vec::with_capacity(leases.len());
            for lease in &leases {
                let draft = work::draft(&claim.signer, work::CLAIM, lease, claim.now, Vec::new());
                let row = match sealed.last() {
                    Some(last) => seal(&last.hash, last.seq + 1, draft),
                    None => seal(&head.hash, head.seq + 1, draft),
                };
                sealed.push(row);
            }
            Self::insert_audit(&mut tx, &sealed).await?;
            tx.commit().await.map_err(db::<DB>)?;
            Ok(leases)
        }

        /// Opens a write transaction and checks that the step's worker still
        /// holds its lease; a refusal ends the transaction.
        async fn held(
            &self,
            step: &WorkStep,
        ) -> Result<(Transaction<'static, DB>, Head, Lease), StoreError> {
            let (mut tx, head) = self.begin_write().await?;
            let id = &step.holder.operation;
            let lease = Self::read_lease(&mut tx, &step.tenants, id, true).await?;
            if let Err(refusal) = check_holder(lease.as_ref(), &step.holder, &step.signer.by, step.now) {
                tx.rollback().await.map_err(db::<DB>)?;
                return Err(refusal.into());
            }
            let lease = lease.ok_or_else(|| StoreError::NotFound(id.clone()))?;
            Ok((tx, head, lease))
        }

        /// Writes `lease` as it now stands and its audit row after `head`.
        async fn settle(
            mut tx: Transaction<'static, DB>,
            head: &Head,
            step: &WorkStep,
            action: &str,
            lease: &Lease,
            extra: Vec<String>,
        ) -> Result<AuditRow, StoreError> {
            sqlx::query(
                "UPDATE work_leases SET expires_ms = $1, length_ms = $2, status = $3 \
                 WHERE operation = $4",
            )
                .bind(ms(lease.expires_at))
                .bind(ms(lease.expires_at) - ms(step.now).min(ms(lease.expires_at)))
                .bind(lease.status.as_str())
                .bind(lease.operation.as_str())
                .execute(&mut *tx)
                .await
                .map_err(db::<DB>)?;
            let draft = work::draft(&step.signer, action, lease, step.now, extra);
            let row = seal(&head.hash, head.seq + 1, draft);
            Self::insert_audit(&mut tx, std::slice::from_ref(&row)).await?;
            tx.commit().await.map_err(db::<DB>)?;
            Ok(row)
        }

        pub(super) async fn write_renew_work(
            &self,
            step: &WorkStep,
            length: Option<Duration>,
        ) -> Result<Lease, StoreError> {
            let (mut tx, head, mut lease) = self.held(step).await?;
            let length = match length {
                Some(length) => length,
                None => {
                    let row = sqlx::query("SELECT length_ms FROM work_leases WHERE operation = $1")
                        .bind(lease.operation.as_str())
                        .fetch_one(&mut *tx)
                        .await
                        .map_err(db::<DB>)?;
                    Duration::milliseconds(row.try_get("length_ms").map_err(db::<DB>)?)
                }
            };
            lease.expires_at = step.now + length;
            Self::settle(tx, &head, step, work::HEARTBEAT, &lease, Vec::new()).await?;
            Ok(lease)
        }

        pub(super) async fn write_release_work(&self, step: &WorkStep) -> Result<Lease, StoreError> {
            let (tx, head, mut lease) = self.held(step).await?;
            lease.status = LeaseStatus::Released;
            Self::settle(tx, &head, step, work::RELEASE, &lease, Vec::new()).await?;
            Ok(lease)
        }

        pub(super) async fn write_complete_work(
            &self,
            step: &WorkStep,
            records: Vec<Numbered>,
        ) -> Result<Completion, StoreError> {
            let (mut tx, head, mut lease) = self.held(step).await?;
            let (records, foreign) = work_plan::split(records, &lease.operation);
            // Lines for another operation, or of another kind, refuse the whole
            // completion; the others are still judged, so every problem shows.
            let mode = if foreign.is_empty() {
                IngestMode::Strict
            } else {
                IngestMode::DryRun
            };
            let ingester = Ingester {
                by: step.signer.by.clone(),
                tenants: Some(vec![lease.tenant.clone()]),
                decider: None,
                contracts_optional: false,
            };
            let (mut report, after) = self
                .ingest_in(
                    &mut tx,
                    &head,
                    crate::store::plan::redaction::redact(records),
                    mode,
                    &ingester,
                    step.now,
                )
                .await?;
            report.rejected.extend(foreign);
            report.rejected.sort_by_key(|e| e.line);
            let Some(after) = after.filter(|_| report.rejected.is_empty()) else {
                tx.rollback().await.map_err(db::<DB>)?;
                report.committed.clear();
                return Ok(Completion {
                    report,
                    lease: None,
                    audit: None,
                });
            };
            lease.status = LeaseStatus::Completed;
            let taken: u64 = report.committed.iter().map(|(_, n)| n).sum();
            let extra = vec![format!("records:{taken}"), format!("unchanged:{}", report.unchanged)];
            let row = Self::settle(tx, &after, step, work::COMPLETE, &lease, extra).await?;
            Ok(Completion {
                report,
                lease: Some(lease),
                audit: Some(row),
            })
        }
    }
}
