//! The report's facts kept per operation (`metric_*` tables, migration
//! `20261201000110_metric_facts`): judging the operations the triggers marked
//! stale, and reading a report back from the sums and the first rows.
//!
//! Only this file writes the `metric_rows`, `metric_facts` and `metric_counts`
//! tables, always in one transaction per page of judged operations that also
//! moves the counts by the difference between the old rows and the new, so the
//! counts are the sums of the rows. The triggers only ever add to
//! `metric_stale`; a mark is cleared only when no write came after the one
//! judged. A login that may only read these tables (PostgreSQL's application
//! group) judges the stale operations for each report in memory and reads the
//! kept rows past theirs ([`Overlay`]), writing nothing.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, QueryBuilder, Row};

use super::db;
use crate::core::contract::Contract;
use crate::core::detail::Dataset;
use crate::core::ids::OperationId;
use crate::core::metrics::{
    self, DAY_MS, Facts, Judged, LISTED, MetricId, OperationalFacts, RepeatedError, Report, Stored,
    WEEK_MS, cause_kinds, figure_kinds, instant_ms, is_cause_kind, repeated_group, windows,
};
use crate::store::plan::codec;
use crate::store::sql::{Covering, push_in, push_tenants};
use crate::store::{Progress, Scope, StoreError, metric_sql};

/// Stale operations judged per page. 2,000 judged 100,000 freshly ingested
/// operations at 6,200/s in at most 145 MiB, against 5,000/s at 500 a page
/// (each page's queries and its transaction cost the same whatever its size).
const JUDGE_PAGE: i64 = 2_000;

/// The operations whose kept facts no longer hold at `$1` (past the earliest
/// time in their records after the instant they were judged at, or before the
/// latest at or before it), the first `$2` of each kind.
const DUE: [&str; 2] = [
    "SELECT operation FROM metric_facts WHERE stale_ms IS NOT NULL \
     AND stale_ms <= $1 ORDER BY stale_ms LIMIT $2",
    "SELECT operation FROM metric_facts WHERE valid_ms IS NOT NULL \
     AND valid_ms > $1 ORDER BY valid_ms LIMIT $2",
];

/// Operations named per `IN` list of a relatives query (five lists a query).
const RELATED_CHUNK: usize = 1000;

/// The most operations a report judges without keeping their facts (for a
/// login that may only read them); past this many, judging the store page by
/// page costs no more.
const OVERLAY_MOST: usize = 20_000;

/// One kept row as a report reads it: the operation, `n` and the reason.
type KeptRow = (OperationId, i64, Option<String>);

/// The facts of the operations one report judged anew and did not write (a
/// login that may only read the kept facts): the report reads past the kept
/// rows of these operations and takes these instead. Empty for a login that
/// keeps the facts, which judges and writes them before reading.
#[derive(Default)]
struct Overlay {
    /// Every operation judged anew, in every tenant.
    judged: BTreeSet<OperationId>,
    /// Per kind, the kept rows of judged operations in scope: how many, and
    /// the sum of their `n`.
    old: BTreeMap<String, (i64, i64)>,
    /// How many kept `next_observation` rows of judged operations in scope
    /// are due at the report's instant.
    old_overdue: i64,
    /// Per kind, the rows of the judged operations in scope, in operation
    /// order.
    new: BTreeMap<String, Vec<KeptRow>>,
    /// A judged operation in scope has a relative in another tenant.
    foreign: bool,
    /// The kept root-cause rows of judged operations in scope: (kind, reason,
    /// `n`), for taking them out of their repeated-errors groups.
    old_causes: Vec<(String, String, i64)>,
}

impl Overlay {
    /// How many kept rows of `kind` in scope belong to judged operations.
    fn replaced(&self, kind: &str) -> i64 {
        self.old.get(kind).map_or(0, |(rows, _)| *rows)
    }

    /// The kept rows `kept` of `kind` (in operation order) with those of the
    /// judged operations replaced by their new rows of `n` at most `at_most`,
    /// the first `limit` when given.
    fn over(
        &self,
        kept: Vec<KeptRow>,
        kind: &str,
        at_most: Option<i64>,
        limit: Option<i64>,
    ) -> Vec<KeptRow> {
        let mut rows: Vec<KeptRow> = kept
            .into_iter()
            .filter(|(op, _, _)| !self.judged.contains(op))
            .collect();
        if let Some(new) = self.new.get(kind) {
            rows.extend(
                new.iter()
                    .filter(|(_, n, _)| at_most.is_none_or(|most| *n <= most))
                    .cloned(),
            );
            rows.sort_by(|a, b| a.0.cmp(&b.0));
        }
        if let Some(limit) = limit {
            rows.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        }
        rows
    }
}

/// Whether `tenant` is in `scope`.
fn in_scope(scope: &Scope, tenant: &str) -> bool {
    scope
        .tenants()
        .is_none_or(|tenants| tenants.iter().any(|t| t == tenant))
}

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
        /// time in its records may have changed by `now`, with its relatives,
        /// telling `progress` how many of them are judged as each page is;
        /// returns how many operations were judged (relatives included).
        pub(super) async fn refresh_metric_facts(
            &self,
            now: DateTime<Utc>,
            progress: &Progress,
        ) -> Result<u64, StoreError> {
            let contracts = self
                .all_wires("contracts", None, "tool", codec::contract)
                .await?;
            let mut meter = progress.start(self.count_to_judge(now).await?);
            let mut judged = 0;
            let mut after = String::new();
            // Each page's facts are written on a task of their own while the
            // next page is read and judged (the reads need no write lock), one
            // write at a time and in page order: 100,000 operations judged anew
            // in 16.9 s and 187 MiB, against 22.2 s and 141 MiB one after the
            // other (BENCHMARKS.md). Reading the next page on a task of its own
            // too, while this one is judged, made it slower (100,000: 7.9-9.0 s
            // against 6.4-6.8 s): three busy threads on two cores.
            let mut writing: Option<tokio::task::JoinHandle<Result<(), StoreError>>> = None;
            loop {
                let marks = self.stale_page(&after).await?;
                let Some((last, _)) = marks.last() else { break };
                after = last.clone();
                let (ids, facts) = self.judge_page(&marks, contracts.clone(), now).await?;
                judged += u64::try_from(facts.len()).unwrap_or(u64::MAX);
                Self::written(writing.take()).await?;
                meter.add(u64::try_from(marks.len()).unwrap_or(u64::MAX));
                let store = self.clone();
                writing = Some(tokio::spawn(async move {
                    store.write_facts(&ids, facts, &marks).await
                }));
            }
            Self::written(writing.take()).await?;
            // Facts hold between the latest time in their records at or
            // before the instant they were judged at and the earliest after it.
            for due in DUE {
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
                    meter.add(u64::try_from(due.len()).unwrap_or(u64::MAX));
                }
            }
            meter.finish();
            Ok(judged)
        }

        /// How many operations [`Self::refresh_metric_facts`] walks at `now`,
        /// counted before it starts: those marked stale, and the others whose
        /// facts no longer hold at `now` ([`DUE`]). A due one judged earlier
        /// as a stale one's relative is not walked again; the walk's end
        /// counts it judged ([`crate::store::judging`]).
        async fn count_to_judge(&self, now: DateTime<Utc>) -> Result<u64, StoreError> {
            let unmarked = "NOT EXISTS (SELECT 1 FROM metric_stale s \
                            WHERE s.operation = metric_facts.operation)";
            let row = sqlx::query(AssertSqlSafe(format!(
                "SELECT (SELECT count(*) FROM metric_stale) AS stale, \
                 (SELECT count(*) FROM metric_facts WHERE stale_ms IS NOT NULL \
                    AND stale_ms <= $1 AND {unmarked}) AS past, \
                 (SELECT count(*) FROM metric_facts WHERE valid_ms IS NOT NULL \
                    AND valid_ms > $1 AND {unmarked}) AS early"
            )))
            .bind(now.timestamp_millis())
            .fetch_one(&self.pool)
            .await
            .map_err(db::<DB>)?;
            let mut total: u64 = 0;
            for column in ["stale", "past", "early"] {
                let n: i64 = row.try_get(column).map_err(db::<DB>)?;
                total = total.saturating_add(u64::try_from(n).unwrap_or(0));
            }
            Ok(total)
        }

        /// The next [`JUDGE_PAGE`] operations marked stale after `after`, in
        /// id order, each with its mark: the one way both the owner's judging
        /// and a read-only login's overlay page through `metric_stale`.
        async fn stale_page(&self, after: &str) -> Result<Vec<(String, i64)>, StoreError> {
            sqlx::query(
                "SELECT operation, mark FROM metric_stale WHERE operation > $1 \
                 ORDER BY operation LIMIT $2",
            )
            .bind(after)
            .bind(JUDGE_PAGE)
            .fetch_all(&self.pool)
            .await
            .map_err(db::<DB>)?
            .iter()
            .map(|row| Ok((Self::text(row, "operation")?, row.try_get("mark").map_err(db::<DB>)?)))
            .collect()
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

        /// `judged` (the operations `named` with their relatives, as
        /// [`Self::with_relatives`] gave them) with the relatives' own
        /// relatives, in id order: what judging `judged` reads. Those of
        /// `named` are in `judged` already, so only the operations the first
        /// walk added are asked about (a million operations judged: one walk
        /// of about 7.5 s fewer).
        async fn around_judged(
            &self,
            judged: &[String],
            named: &[String],
        ) -> Result<Vec<String>, StoreError> {
            let named: BTreeSet<&String> = named.iter().collect();
            let added: Vec<String> = judged
                .iter()
                .filter(|id| !named.contains(id))
                .cloned()
                .collect();
            let mut all = judged.to_vec();
            all.extend(self.with_relatives(&added).await?);
            all.sort();
            all.dedup();
            Ok(all)
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
            let (judged, facts) = self.judge_page(marks, contracts, now).await?;
            let count = u64::try_from(facts.len()).unwrap_or(u64::MAX);
            self.write_facts(&judged, facts, marks).await?;
            Ok(count)
        }

        /// The operations `marks` names with their relatives, and their facts
        /// judged at `now`, to write.
        async fn judge_page(
            &self,
            marks: &[(String, i64)],
            contracts: Vec<Contract>,
            now: DateTime<Utc>,
        ) -> Result<(Vec<String>, Vec<Judged>), StoreError> {
            let named: Vec<String> = marks.iter().map(|(id, _)| id.clone()).collect();
            let judged = self.with_relatives(&named).await?;
            let covered = self.around_judged(&judged, &named).await?;
            let data = self
                .read_records(&Covering::Ids(&covered), contracts)
                .await?;
            let facts = metrics::judge(&data, parse_ids(&judged), now);
            Ok((judged, facts))
        }

        /// Waits for the write of a page's facts handed to a task, if any.
        async fn written(
            writing: Option<tokio::task::JoinHandle<Result<(), StoreError>>>,
        ) -> Result<(), StoreError> {
            match writing {
                None => Ok(()),
                Some(handle) => crate::store::joined(handle.await),
            }
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
            // In the table's key order: each kind's rows of the page go in
            // one after the other instead of a jump between kinds per row.
            rows.sort_unstable_by(|a, b| (&a.kind, &a.operation).cmp(&(&b.kind, &b.operation)));
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
                metric_sql::clear_marks::<DB>("", part)
                    .build()
                    .execute(&mut *tx)
                    .await
                    .map_err(db::<DB>)?;
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
            progress: &Progress,
        ) -> Result<Option<Report>, StoreError> {
            let overlay = if self.may_keep_facts().await? {
                self.refresh_metric_facts(now, progress).await?;
                Overlay::default()
            } else {
                match self.judge_unkept(scope, now, progress).await? {
                    Some(overlay) => overlay,
                    None => return Ok(None),
                }
            };
            if !self.kept_facts_whole(&overlay).await? {
                return Ok(None);
            }
            if scope.tenants().is_some() {
                if overlay.foreign {
                    return Ok(None);
                }
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
            let mut sums_of: BTreeMap<String, (i64, i64)> = BTreeMap::new();
            let mut sums: QueryBuilder<DB> = metric_sql::sums("", scope);
            for row in sums.build().fetch_all(&self.pool).await.map_err(db::<DB>)? {
                let rows: i64 = row.try_get("row_count").map_err(db::<DB>)?;
                let sum: i64 = row.try_get("n_sum").map_err(db::<DB>)?;
                sums_of.insert(Self::text(&row, "kind")?, (rows, sum));
            }
            for (kind, (rows, sum)) in &overlay.old {
                let entry = sums_of.entry(kind.clone()).or_default();
                entry.0 -= rows;
                entry.1 -= sum;
            }
            for (kind, new) in &overlay.new {
                let entry = sums_of.entry(kind.clone()).or_default();
                entry.0 += i64::try_from(new.len()).unwrap_or(i64::MAX);
                entry.1 += new.iter().map(|(_, n, _)| n).sum::<i64>();
            }
            for (kind, (rows, sum)) in sums_of {
                if rows > 0 {
                    stored.sums.insert(kind, (u64::try_from(rows).unwrap_or(0), sum));
                }
            }
            let kinds: Vec<String> = stored.sums.keys().cloned().collect();
            for kind in &kinds {
                if let Some(layer) = kind.strip_prefix("requests:") {
                    let kept = self.most_kept(scope, kind, &overlay).await?;
                    let new = overlay
                        .new
                        .get(kind)
                        .and_then(|rows| rows.iter().map(|(_, n, _)| *n).max());
                    stored
                        .max_requests
                        .insert(layer.to_owned(), kept.max(new).unwrap_or(0));
                }
            }
            for id in MetricId::ALL {
                for kind in figure_kinds(*id) {
                    if stored.sums.contains_key(&kind) {
                        let first = self.first_rows(scope, &kind, None, &overlay).await?;
                        let first = first
                            .into_iter()
                            .map(|(op, _, reason)| (op, reason))
                            .collect();
                        stored.verdicts.insert(kind, first);
                    }
                }
            }
            stored.unknown_since = self
                .rows_of(scope, "unknown_since", None, None, &overlay)
                .await?
                .into_iter()
                .map(|(op, n, _)| (op, instant_ms(n)))
                .collect();
            let now_ms = now.timestamp_millis();
            let mut overdue: QueryBuilder<DB> =
                metric_sql::count_at_most("", scope, "next_observation", now_ms);
            let total: i64 = overdue
                .build()
                .fetch_one(&self.pool)
                .await
                .map_err(db::<DB>)?
                .try_get("matching")
                .map_err(db::<DB>)?;
            let new_overdue = overlay.new.get("next_observation").map_or(0, |rows| {
                rows.iter().filter(|(_, n, _)| *n <= now_ms).count()
            });
            let total = total - overlay.old_overdue + i64::try_from(new_overdue).unwrap_or(0);
            stored.overdue_total = u64::try_from(total).unwrap_or(0);
            stored.overdue = self
                .first_rows(scope, "next_observation", Some(now_ms), &overlay)
                .await?
                .into_iter()
                .map(|(op, _, _)| op)
                .collect();
            stored.listed = self.listed_facts(scope, now, &overlay).await?;
            stored.repeated = self.repeated_groups(scope, now, &overlay).await?;
            Ok(Some(stored.report(now)))
        }

        /// The repeated errors' groups in scope at `now` from the kept root-cause
        /// rows, through `overlay`: the kept rows of operations judged for this
        /// report alone are taken out of their groups (and a group's newest
        /// found again past them), and their new rows added as groups of one.
        async fn repeated_groups(
            &self,
            scope: &Scope,
            now: DateTime<Utc>,
            overlay: &Overlay,
        ) -> Result<Vec<RepeatedError>, StoreError> {
            let now_ms = now.timestamp_millis();
            let (day, week) = (now_ms - DAY_MS, now_ms - WEEK_MS);
            let mut taken: BTreeMap<(String, String), (u64, u64, u64)> = BTreeMap::new();
            for (kind, reason, n) in &overlay.old_causes {
                let (in_day, in_week) = windows(*n, now_ms);
                let t = taken.entry((kind.clone(), reason.clone())).or_default();
                t.0 += u64::from(in_day);
                t.1 += u64::from(in_week);
                t.2 += 1;
            }
            let mut select: QueryBuilder<DB> =
                metric_sql::repeated_groups("", scope, &cause_kinds(), day, week);
            let rows = select.build().fetch_all(&self.pool).await.map_err(db::<DB>)?;
            let mut groups = Vec::with_capacity(rows.len());
            for row in rows {
                let kind = Self::text(&row, "kind")?;
                let reason: Option<String> = row.try_get("reason").map_err(db::<DB>)?;
                let reason = reason.unwrap_or_default();
                let count = |column: &str| -> Result<u64, StoreError> {
                    let n: i64 = row.try_get(column).map_err(db::<DB>)?;
                    Ok(u64::try_from(n).unwrap_or(0))
                };
                let (old_day, old_week, old_total) = taken
                    .get(&(kind.clone(), reason.clone()))
                    .copied()
                    .unwrap_or_default();
                let counts = (
                    count("last_day")?.saturating_sub(old_day),
                    count("last_week")?.saturating_sub(old_week),
                    count("total")?.saturating_sub(old_total),
                );
                if counts.2 == 0 {
                    continue;
                }
                let limit = i64::try_from(old_total + 1).unwrap_or(i64::MAX);
                let newest_ms: i64 = row.try_get("newest").map_err(db::<DB>)?;
                let at = (old_total == 0).then_some(newest_ms);
                let mut newest: QueryBuilder<DB> =
                    metric_sql::repeated_newest("", scope, &kind, &reason, at, limit);
                let mut found = None;
                for candidate in newest.build().fetch_all(&self.pool).await.map_err(db::<DB>)? {
                    let id = codec::parse_id(&Self::text(&candidate, "operation")?)?;
                    if !overlay.judged.contains(&id) {
                        found = Some((id, candidate.try_get("n").map_err(db::<DB>)?));
                        break;
                    }
                }
                if let Some((id, n)) = found {
                    groups.extend(repeated_group(&kind, &reason, counts, id, n));
                }
            }
            for (kind, rows) in &overlay.new {
                if !is_cause_kind(kind) {
                    continue;
                }
                for (id, n, reason) in rows {
                    let (in_day, in_week) = windows(*n, now_ms);
                    let counts = (u64::from(in_day), u64::from(in_week), 1);
                    let reason = reason.as_deref().unwrap_or_default();
                    groups.extend(repeated_group(kind, reason, counts, id.clone(), *n));
                }
            }
            Ok(groups)
        }

        /// The open vetoes on `tool`'s operations at `now` from the kept facts
        /// (see [`crate::store::Store::open_vetoes`]): the `veto` rows of the
        /// tool's operations that are not terminal, counted, and the first
        /// `named` judged again for their kinds.
        pub(super) async fn read_open_vetoes(
            &self,
            tool: &str,
            now: DateTime<Utc>,
            named: u64,
        ) -> Result<Option<crate::core::autonomy::OpenVetoes>, StoreError> {
            if !self.may_keep_facts().await? {
                return Ok(None);
            }
            self.refresh_metric_facts(now, &Progress::default()).await?;
            let terminal: Vec<String> = crate::core::model::State::ALL
                .iter()
                .filter(|s| s.is_terminal())
                .map(|s| format!("'{}'", s.as_str()))
                .collect();
            let open = format!(
                "FROM metric_rows r JOIN operations o ON o.id = r.operation \
                 WHERE r.kind = 'veto' AND o.tool = $1 AND o.state NOT IN ({})",
                terminal.join(", ")
            );
            let total: i64 = sqlx::query(AssertSqlSafe(format!("SELECT count(*) AS n {open}")))
                .bind(tool)
                .fetch_one(&self.pool)
                .await
                .map_err(db::<DB>)?
                .try_get("n")
                .map_err(db::<DB>)?;
            let rows = sqlx::query(AssertSqlSafe(format!(
                "SELECT r.operation AS operation, o.state AS state {open} \
                 ORDER BY r.operation LIMIT $2"
            )))
            .bind(tool)
            .bind(i64::try_from(named).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(db::<DB>)?;
            let mut first = Vec::with_capacity(rows.len());
            for row in &rows {
                first.push((
                    Self::text(row, "operation")?,
                    codec::parse_state(&Self::text(row, "state")?)?,
                ));
            }
            let ids: Vec<String> = first.iter().map(|(id, _)| id.clone()).collect();
            let kinds = if ids.is_empty() {
                BTreeMap::new()
            } else {
                let contracts = self
                    .all_wires("contracts", None, "tool", codec::contract)
                    .await?;
                let data = self.records_around(&ids, contracts).await?;
                let facts = metrics::page_facts(&data, parse_ids(&ids), now);
                metrics::assemble(facts, now)
                    .release
                    .vetoes
                    .into_iter()
                    .map(|v| {
                        let kinds: Vec<String> =
                            v.kinds.iter().map(|k| k.as_str().to_owned()).collect();
                        (v.operation.to_string(), kinds)
                    })
                    .collect()
            };
            let first = first
                .into_iter()
                .map(|(id, state)| {
                    Ok(crate::core::autonomy::OpenVeto {
                        kinds: kinds.get(&id).cloned().unwrap_or_default(),
                        operation: codec::parse_id(&id)?,
                        state,
                    })
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
            Ok(Some(crate::core::autonomy::OpenVetoes {
                total: u64::try_from(total).unwrap_or(0),
                first,
            }))
        }

        /// How far the kept facts reach: how many operations have a
        /// `metric_facts` row, how many others are marked for judging, and how
        /// many operations' state rows the kept counts sum to.
        pub(super) async fn kept_coverage(&self) -> Result<(u64, u64, u64), StoreError> {
            let row = sqlx::query(
                "SELECT (SELECT count(*) FROM metric_facts) AS facts, \
                 (SELECT count(*) FROM metric_stale s WHERE NOT EXISTS \
                    (SELECT 1 FROM metric_facts f WHERE f.operation = s.operation) \
                    AND EXISTS (SELECT 1 FROM operations o WHERE o.id = s.operation)) AS unjudged, \
                 (SELECT CAST(COALESCE(sum(row_count), 0) AS BIGINT) FROM metric_counts \
                    WHERE kind LIKE 'state:%') AS states",
            )
            .fetch_one(&self.pool)
            .await
            .map_err(db::<DB>)?;
            let count = |column: &str| -> Result<u64, StoreError> {
                let n: i64 = row.try_get(column).map_err(db::<DB>)?;
                Ok(u64::try_from(n).unwrap_or(0))
            };
            Ok((count("facts")?, count("unjudged")?, count("states")?))
        }

        /// Whether the kept facts may be trusted for a report: every
        /// operation has its facts or is judged anew (marked stale, or in the
        /// `overlay` a read-only login judged), and the kept counts hold one
        /// state row per operation with facts. Facts emptied or deleted behind
        /// the store's back fail this, and the report is then judged page by
        /// page from the records, never from what is missing.
        async fn kept_facts_whole(&self, overlay: &Overlay) -> Result<bool, StoreError> {
            let (facts, unjudged, states) = self.kept_coverage().await?;
            let operations: i64 = sqlx::query("SELECT count(*) AS n FROM operations")
                .fetch_one(&self.pool)
                .await
                .map_err(db::<DB>)?
                .try_get("n")
                .map_err(db::<DB>)?;
            let operations = u64::try_from(operations).unwrap_or(u64::MAX);
            let judged = u64::try_from(overlay.judged.len()).unwrap_or(u64::MAX);
            Ok(states == facts && facts + unjudged.max(judged.min(operations)) >= operations)
        }

        /// Whether this login may write the kept facts; a login that may only
        /// read them judges what is stale for each report without writing it.
        pub(super) async fn may_keep_facts(&self) -> Result<bool, StoreError> {
            let Some(sql) = DB::MAY_KEEP_FACTS else {
                return Ok(true);
            };
            sqlx::query(sql)
                .fetch_one(&self.pool)
                .await
                .map_err(db::<DB>)?
                .try_get("may")
                .map_err(db::<DB>)
        }

        /// Judges at `now`, without writing, what [`Self::refresh_metric_facts`]
        /// would judge and write: the operations marked stale, those whose
        /// facts do not hold at `now`, and their relatives. `None` past
        /// [`OVERLAY_MOST`] operations. Tells `progress` how many of those
        /// named (counted once all are read) are judged as each page is.
        async fn judge_unkept(
            &self,
            scope: &Scope,
            now: DateTime<Utc>,
            progress: &Progress,
        ) -> Result<Option<Overlay>, StoreError> {
            let most = i64::try_from(OVERLAY_MOST).unwrap_or(i64::MAX);
            let mut named: BTreeSet<String> = BTreeSet::new();
            let mut after = String::new();
            loop {
                let marks = self.stale_page(&after).await?;
                let Some((last, _)) = marks.last() else { break };
                after = last.clone();
                named.extend(marks.into_iter().map(|(operation, _)| operation));
                if named.len() > OVERLAY_MOST {
                    return Ok(None);
                }
            }
            for due in DUE {
                let rows = sqlx::query(due)
                    .bind(now.timestamp_millis())
                    .bind(most + 1)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(db::<DB>)?;
                for row in &rows {
                    named.insert(Self::text(row, "operation")?);
                }
                if named.len() > OVERLAY_MOST {
                    return Ok(None);
                }
            }
            let contracts = self
                .all_wires("contracts", None, "tool", codec::contract)
                .await?;
            let named: Vec<String> = named.into_iter().collect();
            let now_ms = now.timestamp_millis();
            let mut overlay = Overlay::default();
            let mut meter = progress.start(u64::try_from(named.len()).unwrap_or(u64::MAX));
            for part in named.chunks(usize::try_from(JUDGE_PAGE).unwrap_or(1)) {
                let named_here = u64::try_from(part.len()).unwrap_or(u64::MAX);
                let judged: Vec<String> = self
                    .with_relatives(part)
                    .await?
                    .into_iter()
                    .filter(|id| {
                        codec::parse_id(id).is_ok_and(|id| !overlay.judged.contains(&id))
                    })
                    .collect();
                if judged.is_empty() {
                    // Every one judged already, as a relative of one before.
                    meter.add(named_here);
                    continue;
                }
                let data = self.records_around(&judged, contracts.clone()).await?;
                let ids = parse_ids(&judged);
                for j in metrics::judge(&data, ids.clone(), now) {
                    if !in_scope(scope, &j.tenant) {
                        continue;
                    }
                    overlay.foreign |= j.foreign;
                    for r in j.rows {
                        overlay
                            .new
                            .entry(r.kind)
                            .or_default()
                            .push((j.operation.clone(), r.n, r.reason));
                    }
                }
                for chunk in judged.chunks(RELATED_CHUNK) {
                    let mut old: QueryBuilder<DB> = QueryBuilder::new(
                        "SELECT kind, tenant, n, reason FROM metric_rows WHERE 1 = 1",
                    );
                    push_in(&mut old, "operation", chunk.iter().cloned());
                    push_tenants(&mut old, "tenant", scope);
                    for row in old.build().fetch_all(&self.pool).await.map_err(db::<DB>)? {
                        let kind = Self::text(&row, "kind")?;
                        let n: i64 = row.try_get("n").map_err(db::<DB>)?;
                        if kind == "next_observation" && n <= now_ms {
                            overlay.old_overdue += 1;
                        }
                        if is_cause_kind(&kind) {
                            let reason: Option<String> =
                                row.try_get("reason").map_err(db::<DB>)?;
                            overlay
                                .old_causes
                                .push((kind.clone(), reason.unwrap_or_default(), n));
                        }
                        let entry = overlay.old.entry(kind).or_default();
                        entry.0 += 1;
                        entry.1 += n;
                    }
                }
                overlay.judged.extend(ids);
                meter.add(named_here);
            }
            meter.finish();
            for rows in overlay.new.values_mut() {
                rows.sort_by(|a, b| a.0.cmp(&b.0));
            }
            Ok(Some(overlay))
        }

        /// The largest kept `n` of `kind` in scope, past the rows of the
        /// operations `overlay` judged anew.
        async fn most_kept(
            &self,
            scope: &Scope,
            kind: &str,
            overlay: &Overlay,
        ) -> Result<Option<i64>, StoreError> {
            let replaced = overlay.replaced(kind);
            if replaced == 0 {
                let mut max: QueryBuilder<DB> = metric_sql::most("", scope, kind);
                return max
                    .build()
                    .fetch_one(&self.pool)
                    .await
                    .map_err(db::<DB>)?
                    .try_get("most")
                    .map_err(db::<DB>);
            }
            let mut largest: QueryBuilder<DB> =
                metric_sql::largest("", scope, kind, replaced + 1);
            for row in largest.build().fetch_all(&self.pool).await.map_err(db::<DB>)? {
                let op = codec::parse_id(&Self::text(&row, "operation")?)?;
                if !overlay.judged.contains(&op) {
                    return row.try_get("n").map(Some).map_err(db::<DB>);
                }
            }
            Ok(None)
        }

        /// The first [`LISTED`] rows of `kind` in scope in operation order,
        /// with `n` at most `at_most` when given, through `overlay`.
        async fn first_rows(
            &self,
            scope: &Scope,
            kind: &str,
            at_most: Option<i64>,
            overlay: &Overlay,
        ) -> Result<Vec<KeptRow>, StoreError> {
            let limit = i64::try_from(LISTED).unwrap_or(i64::MAX);
            self.rows_of(scope, kind, at_most, Some(limit), overlay).await
        }

        /// The rows of `kind` in scope in operation order (the first `limit`
        /// when given), with `n` at most `at_most` when given, through
        /// `overlay`: the kept rows read are as many more as it replaces.
        async fn rows_of(
            &self,
            scope: &Scope,
            kind: &str,
            at_most: Option<i64>,
            limit: Option<i64>,
            overlay: &Overlay,
        ) -> Result<Vec<KeptRow>, StoreError> {
            let read = limit.map(|limit| limit.saturating_add(overlay.replaced(kind)));
            let mut select: QueryBuilder<DB> =
                metric_sql::first_rows("", scope, kind, at_most, read);
            let kept = select
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
                .collect::<Result<Vec<KeptRow>, StoreError>>()?;
            Ok(overlay.over(kept, kind, at_most, limit))
        }

        /// The facts behind the report's lists of records: the first vetoed,
        /// partial, throttled and pending operations in scope, judged again at
        /// `now` (each list from its own operations).
        async fn listed_facts(
            &self,
            scope: &Scope,
            now: DateTime<Utc>,
            overlay: &Overlay,
        ) -> Result<Facts, StoreError> {
            let mut lists: Vec<BTreeSet<OperationId>> = Vec::new();
            for kind in ["veto", "partial", "throttled", "pending"] {
                let mut ops = BTreeSet::new();
                let mut listed: i64 = 0;
                for (op, n, _) in self.first_rows(scope, kind, None, overlay).await? {
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
