//! The report's facts kept per operation (`metric_*` tables, migration
//! `20261201000110_metric_facts`): judging the operations the triggers marked
//! stale, and reading a report back from the sums and the first rows.
//!
//! Only this file writes the `metric_rows`, `metric_facts` and `metric_counts`
//! tables, always in one transaction per page of judged operations that also
//! moves the counts by the difference between the old rows and the new, so the
//! counts are the sums of the rows. The triggers only ever add to
//! `metric_stale`; a mark is cleared only when no write came after the one
//! judged.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use sqlx::{QueryBuilder, Row};

use super::db;
use crate::core::ids::OperationId;
use crate::core::metrics::{
    self, Facts, Judged, LISTED, MetricId, OperationalFacts, Report, Stored, figure_kinds,
    instant_ms,
};
use crate::core::model::{Contract, Dataset};
use crate::store::plan::codec;
use crate::store::sql::{Covering, push_in, push_tenants};
use crate::store::{Scope, StoreError, metric_sql};

/// Stale operations judged per page.
const JUDGE_PAGE: i64 = 500;

/// Operations named per `IN` list of a relatives query (five lists a query).
const RELATED_CHUNK: usize = 1000;

/// One stored fact row.
struct RowColumns {
    kind: String,
    operation: String,
    tenant: String,
    n: i64,
    reason: Option<String>,
}

/// One `metric_facts` row.
struct FactColumns {
    operation: String,
    tenant: String,
    valid_ms: Option<i64>,
    stale_ms: Option<i64>,
    foreign: i64,
}

/// One change of `metric_counts`.
struct CountColumns {
    tenant: String,
    kind: String,
    rows: i64,
    sum: i64,
}

fn parse_ids(ids: &[String]) -> BTreeSet<OperationId> {
    ids.iter()
        .filter_map(|id| codec::parse_id(id).ok())
        .collect()
}

shared! {
    impl {
        /// Judges every operation marked stale, and every one whose facts a
        /// time in its records may have changed by `now`, with its relatives;
        /// returns how many operations were judged.
        pub(super) async fn refresh_metric_facts(
            &self,
            now: DateTime<Utc>,
        ) -> Result<u64, StoreError> {
            let contracts = self
                .all_wires("contracts", None, "tool", codec::contract)
                .await?;
            let mut judged = 0;
            let mut after = String::new();
            loop {
                let rows = sqlx::query(
                    "SELECT operation, mark FROM metric_stale WHERE operation > $1 \
                     ORDER BY operation LIMIT $2",
                )
                .bind(after.clone())
                .bind(JUDGE_PAGE)
                .fetch_all(&self.pool)
                .await
                .map_err(db::<DB>)?;
                let marks = rows
                    .iter()
                    .map(|row| Ok((Self::text(row, "operation")?, row.try_get("mark").map_err(db::<DB>)?)))
                    .collect::<Result<Vec<(String, i64)>, StoreError>>()?;
                let Some((last, _)) = marks.last() else { break };
                after = last.clone();
                judged += self.judge_batch(&marks, contracts.clone(), now).await?;
            }
            // Facts hold between the latest time in their records at or
            // before the instant they were judged at and the earliest after it.
            for due in [
                "SELECT operation FROM metric_facts WHERE stale_ms IS NOT NULL \
                 AND stale_ms <= $1 ORDER BY stale_ms LIMIT $2",
                "SELECT operation FROM metric_facts WHERE valid_ms IS NOT NULL \
                 AND valid_ms > $1 ORDER BY valid_ms LIMIT $2",
            ] {
                loop {
                    let rows = sqlx::query(due)
                        .bind(now.timestamp_millis())
                        .bind(JUDGE_PAGE)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db::<DB>)?;
                    let due = rows
                        .iter()
                        .map(|row| Ok((Self::text(row, "operation")?, -1)))
                        .collect::<Result<Vec<(String, i64)>, StoreError>>()?;
                    if due.is_empty() {
                        break;
                    }
                    judged += self.judge_batch(&due, contracts.clone(), now).await?;
                }
            }
            Ok(judged)
        }

        /// `ids` and the operations related to them, in id order.
        async fn with_relatives(&self, ids: &[String]) -> Result<Vec<String>, StoreError> {
            let mut all: Vec<String> = ids.to_vec();
            for part in ids.chunks(RELATED_CHUNK) {
                all.extend(self.related_ids(&Scope::Every, part).await?);
            }
            all.sort();
            all.dedup();
            Ok(all)
        }

        /// The records of `judged` and of their relatives, every tenant's.
        async fn records_around(
            &self,
            judged: &[String],
            contracts: Vec<Contract>,
        ) -> Result<Dataset, StoreError> {
            let covered = self.with_relatives(judged).await?;
            self.read_records(&Covering::Ids(&covered), contracts).await
        }

        /// Judges the operations `marks` names (each with the mark read, `-1`
        /// for one due by time) and their relatives at `now`, and writes their
        /// facts; clears each mark no later write has moved.
        async fn judge_batch(
            &self,
            marks: &[(String, i64)],
            contracts: Vec<Contract>,
            now: DateTime<Utc>,
        ) -> Result<u64, StoreError> {
            let named: Vec<String> = marks.iter().map(|(id, _)| id.clone()).collect();
            let judged = self.with_relatives(&named).await?;
            let data = self.records_around(&judged, contracts).await?;
            let facts = metrics::judge(&data, parse_ids(&judged), now);
            let count = u64::try_from(facts.len()).unwrap_or(u64::MAX);
            self.write_facts(&judged, facts, marks).await?;
            Ok(count)
        }

        /// Replaces the facts of the `judged` operations by `facts` in one
        /// transaction, moving the counts by the difference.
        async fn write_facts(
            &self,
            judged: &[String],
            facts: Vec<Judged>,
            marks: &[(String, i64)],
        ) -> Result<(), StoreError> {
            let (mut tx, _) = self.begin_write().await?;
            let mut delta: BTreeMap<(String, String), (i64, i64)> = BTreeMap::new();
            for part in judged.chunks(RELATED_CHUNK) {
                let mut old: QueryBuilder<DB> = QueryBuilder::new(
                    "SELECT tenant, kind, COUNT(*) AS row_count, CAST(SUM(n) AS BIGINT) AS n_sum \
                     FROM metric_rows WHERE 1 = 1",
                );
                push_in(&mut old, "operation", part.iter().cloned());
                old.push(" GROUP BY tenant, kind");
                for row in old.build().fetch_all(&mut *tx).await.map_err(db::<DB>)? {
                    let key = (Self::text(&row, "tenant")?, Self::text(&row, "kind")?);
                    let rows: i64 = row.try_get("row_count").map_err(db::<DB>)?;
                    let sum: i64 = row.try_get("n_sum").map_err(db::<DB>)?;
                    let entry = delta.entry(key).or_default();
                    entry.0 -= rows;
                    entry.1 -= sum;
                }
                for table in ["metric_rows", "metric_facts"] {
                    let mut delete: QueryBuilder<DB> =
                        QueryBuilder::new(format!("DELETE FROM {table} WHERE 1 = 1"));
                    push_in(&mut delete, "operation", part.iter().cloned());
                    delete.build().execute(&mut *tx).await.map_err(db::<DB>)?;
                }
            }
            let mut fact_rows = Vec::with_capacity(facts.len());
            let mut rows = Vec::new();
            for j in facts {
                let operation = j.operation.to_string();
                for r in j.rows {
                    let entry = delta.entry((j.tenant.clone(), r.kind.clone())).or_default();
                    entry.0 += 1;
                    entry.1 += r.n;
                    rows.push(RowColumns {
                        kind: r.kind,
                        operation: operation.clone(),
                        tenant: j.tenant.clone(),
                        n: r.n,
                        reason: r.reason,
                    });
                }
                fact_rows.push(FactColumns {
                    operation,
                    tenant: j.tenant,
                    valid_ms: j.valid_from.map(|t| t.timestamp_millis()),
                    stale_ms: j.stale_at.map(|t| t.timestamp_millis()),
                    foreign: i64::from(j.foreign),
                });
            }
            Self::insert_many(
                &mut tx,
                "INSERT INTO metric_facts (operation, tenant, valid_ms, stale_ms, foreign_relatives) ",
                5,
                &fact_rows,
                |b, f| {
                    b.push_bind(f.operation.clone())
                        .push_bind(f.tenant.clone())
                        .push_bind(f.valid_ms)
                        .push_bind(f.stale_ms)
                        .push_bind(f.foreign);
                },
            )
            .await?;
            Self::insert_many(
                &mut tx,
                "INSERT INTO metric_rows (kind, operation, tenant, n, reason) ",
                5,
                &rows,
                |b, r| {
                    b.push_bind(r.kind.clone())
                        .push_bind(r.operation.clone())
                        .push_bind(r.tenant.clone())
                        .push_bind(r.n)
                        .push_bind(r.reason.clone());
                },
            )
            .await?;
            let counts: Vec<CountColumns> = delta
                .into_iter()
                .filter(|(_, (rows, sum))| *rows != 0 || *sum != 0)
                .map(|((tenant, kind), (rows, sum))| CountColumns { tenant, kind, rows, sum })
                .collect();
            Self::insert_many_then(
                &mut tx,
                "INSERT INTO metric_counts (tenant, kind, row_count, n_sum) ",
                " ON CONFLICT (tenant, kind) DO UPDATE SET \
                 row_count = metric_counts.row_count + excluded.row_count, \
                 n_sum = metric_counts.n_sum + excluded.n_sum",
                4,
                &counts,
                |b, c| {
                    b.push_bind(c.tenant.clone())
                        .push_bind(c.kind.clone())
                        .push_bind(c.rows)
                        .push_bind(c.sum);
                },
            )
            .await?;
            let cleared: Vec<&(String, i64)> = marks.iter().filter(|(_, mark)| *mark >= 0).collect();
            for part in cleared.chunks(RELATED_CHUNK) {
                let mut delete: QueryBuilder<DB> = QueryBuilder::new(
                    "DELETE FROM metric_stale WHERE (operation, mark) IN (VALUES ",
                );
                let mut list = delete.separated(", ");
                for (id, mark) in part {
                    list.push("(");
                    list.push_bind_unseparated(id.clone());
                    list.push_unseparated(", ");
                    list.push_bind_unseparated(*mark);
                    list.push_unseparated(")");
                }
                delete.push(")");
                delete.build().execute(&mut *tx).await.map_err(db::<DB>)?;
            }
            tx.commit().await.map_err(db::<DB>)?;
            Ok(())
        }

        /// The report over `scope` at `now` from the kept facts, after judging
        /// what is stale at `now`; `None` when an operation in a scope short of
        /// every tenant has a relative outside it (the paged report judges
        /// those as the scope sees them).
        pub(super) async fn read_metric_report(
            &self,
            scope: &Scope,
            now: DateTime<Utc>,
        ) -> Result<Option<Report>, StoreError> {
            self.refresh_metric_facts(now).await?;
            if scope.tenants().is_some() {
                let mut foreign: QueryBuilder<DB> = QueryBuilder::new(
                    "SELECT operation FROM metric_facts WHERE foreign_relatives = 1",
                );
                push_tenants(&mut foreign, "tenant", scope);
                foreign.push(" LIMIT 1");
                let any = foreign.build().fetch_optional(&self.pool).await.map_err(db::<DB>)?;
                if any.is_some() {
                    return Ok(None);
                }
            }
            let mut stored = Stored::default();
            let mut sums: QueryBuilder<DB> = metric_sql::sums("", scope);
            for row in sums.build().fetch_all(&self.pool).await.map_err(db::<DB>)? {
                let rows: i64 = row.try_get("row_count").map_err(db::<DB>)?;
                let sum: i64 = row.try_get("n_sum").map_err(db::<DB>)?;
                if rows > 0 {
                    stored.sums.insert(
                        Self::text(&row, "kind")?,
                        (u64::try_from(rows).unwrap_or(0), sum),
                    );
                }
            }
            let kinds: Vec<String> = stored.sums.keys().cloned().collect();
            for kind in &kinds {
                if let Some(layer) = kind.strip_prefix("requests:") {
                    let mut max: QueryBuilder<DB> = metric_sql::most("", scope, kind);
                    let most: Option<i64> = max
                        .build()
                        .fetch_one(&self.pool)
                        .await
                        .map_err(db::<DB>)?
                        .try_get("most")
                        .map_err(db::<DB>)?;
                    stored.max_requests.insert(layer.to_owned(), most.unwrap_or(0));
                }
            }
            for id in MetricId::ALL {
                for kind in figure_kinds(*id) {
                    if stored.sums.contains_key(&kind) {
                        let first = self.first_rows(scope, &kind, None).await?;
                        let first = first
                            .into_iter()
                            .map(|(op, _, reason)| (op, reason))
                            .collect();
                        stored.verdicts.insert(kind, first);
                    }
                }
            }
            stored.unknown_since = self
                .rows_of(scope, "unknown_since", None, None)
                .await?
                .into_iter()
                .map(|(op, n, _)| (op, instant_ms(n)))
                .collect();
            let mut overdue: QueryBuilder<DB> = metric_sql::count_at_most(
                "",
                scope,
                "next_observation",
                now.timestamp_millis(),
            );
            let total: i64 = overdue
                .build()
                .fetch_one(&self.pool)
                .await
                .map_err(db::<DB>)?
                .try_get("matching")
                .map_err(db::<DB>)?;
            stored.overdue_total = u64::try_from(total).unwrap_or(0);
            stored.overdue = self
                .first_rows(scope, "next_observation", Some(now.timestamp_millis()))
                .await?
                .into_iter()
                .map(|(op, _, _)| op)
                .collect();
            stored.listed = self.listed_facts(scope, now).await?;
            Ok(Some(stored.report(now)))
        }

        /// The first [`LISTED`] rows of `kind` in scope in operation order, with
        /// `n` at most `at_most` when given.
        async fn first_rows(
            &self,
            scope: &Scope,
            kind: &str,
            at_most: Option<i64>,
        ) -> Result<Vec<(OperationId, i64, Option<String>)>, StoreError> {
            let limit = i64::try_from(LISTED).unwrap_or(i64::MAX);
            self.rows_of(scope, kind, at_most, Some(limit)).await
        }

        /// The rows of `kind` in scope in operation order (the first `limit`
        /// when given), with `n` at most `at_most` when given.
        async fn rows_of(
            &self,
            scope: &Scope,
            kind: &str,
            at_most: Option<i64>,
            limit: Option<i64>,
        ) -> Result<Vec<(OperationId, i64, Option<String>)>, StoreError> {
            let mut select: QueryBuilder<DB> =
                metric_sql::first_rows("", scope, kind, at_most, limit);
            select
                .build()
                .fetch_all(&self.pool)
                .await
                .map_err(db::<DB>)?
                .iter()
                .map(|row| {
                    Ok((
                        codec::parse_id(&Self::text(row, "operation")?)?,
                        row.try_get("n").map_err(db::<DB>)?,
                        row.try_get("reason").map_err(db::<DB>)?,
                    ))
                })
                .collect()
        }

        /// The facts behind the report's lists of records: the first vetoed,
        /// partial, throttled and pending operations in scope, judged again at
        /// `now` (each list from its own operations).
        async fn listed_facts(&self, scope: &Scope, now: DateTime<Utc>) -> Result<Facts, StoreError> {
            let mut lists: Vec<BTreeSet<OperationId>> = Vec::new();
            for kind in ["veto", "partial", "throttled", "pending"] {
                let mut ops = BTreeSet::new();
                let mut listed: i64 = 0;
                for (op, n, _) in self.first_rows(scope, kind, None).await? {
                    if listed >= i64::try_from(LISTED).unwrap_or(i64::MAX) {
                        break;
                    }
                    listed += n.max(1);
                    ops.insert(op);
                }
                lists.push(ops);
            }
            let all: Vec<String> = lists.iter().flatten().map(ToString::to_string).collect();
            if all.is_empty() {
                return Ok(Facts::default());
            }
            let contracts = self
                .all_wires("contracts", None, "tool", codec::contract)
                .await?;
            let mut unique = all;
            unique.sort();
            unique.dedup();
            let data = self.records_around(&unique, contracts).await?;
            let mut facts = lists
                .into_iter()
                .map(|ops| metrics::page_facts(&data, ops, now));
            let vetoes = facts.next().unwrap_or_default();
            let partial = facts.next().unwrap_or_default();
            let throttled = facts.next().unwrap_or_default();
            let pending = facts.next().unwrap_or_default();
            Ok(Facts {
                figures: Vec::new(),
                findings: vetoes.findings,
                operational: OperationalFacts {
                    throttled: throttled.operational.throttled,
                    partial_in_progress: partial.operational.partial_in_progress,
                    pending_proposals: pending.operational.pending_proposals,
                    ..OperationalFacts::default()
                },
            })
        }
    }
}
