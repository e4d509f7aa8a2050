//! The report's reads of the kept facts (`metric_*` tables), and the clearing of
//! the marks a judging has judged, each built behind a `prefix` so that
//! `tests/metric_plans.rs` can `EXPLAIN` exactly the statement the store runs:
//! each read is a sum over the scope's counters or a walk of one kind's rows in
//! operation order that stops at its `LIMIT`, and the clearing a search of the
//! marks' key.

use sqlx::{Database, Encode, QueryBuilder, Type};

use super::Scope;
use super::sql::push_tenants;

/// The condition of the partial `(kind, n)` index, word for word as migration
/// `20261210000010_metric_rows_by_n_partial` states it: the kinds a report
/// reads by `n` — the requests at each layer (their largest), the next
/// observations (those due by an instant) and the root causes (their
/// instants, for the repeated errors). Most fact rows are verdicts and states,
/// read by operation through the key. Patterns, not a list of the kinds: an
/// `IN` list in an index's condition is evaluated for every row written, and
/// cost more than the whole index saved.
pub const BY_N: &str =
    "(kind LIKE 'cause:%' OR kind = 'next_observation' OR kind LIKE 'requests:%')";

/// Whether a row of `kind` is in the partial `(kind, n)` index ([`BY_N`]).
fn held_by_n(kind: &str) -> bool {
    kind.starts_with("cause:") || kind == "next_observation" || kind.starts_with("requests:")
}

/// Repeats [`BY_N`] in a read of `kinds` by `n`, so that both planners see the
/// read is within the partial index (neither proves it from `kind = ?`). A
/// kind the index does not hold gets no condition: its read stays whole, by
/// the key.
fn within_by_n<DB: Database>(qb: &mut QueryBuilder<DB>, kinds: &[&str]) {
    if kinds.iter().all(|k| held_by_n(k)) {
        qb.push(format!(" AND {BY_N}"));
    }
}

/// The rows and sums of every kind over the scope's tenants.
pub fn sums<'a, DB>(prefix: &str, scope: &Scope) -> QueryBuilder<DB>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
{
    let mut qb: QueryBuilder<DB> = QueryBuilder::new(format!(
        "{prefix}SELECT kind, CAST(SUM(row_count) AS BIGINT) AS row_count, \
         CAST(SUM(n_sum) AS BIGINT) AS n_sum FROM metric_counts WHERE 1 = 1"
    ));
    push_tenants(&mut qb, "tenant", scope);
    qb.push(" GROUP BY kind");
    qb
}

/// `SELECT columns FROM metric_rows WHERE kind = ?` behind `prefix`: the start
/// of every read of one kind's rows.
fn of_kind<'a, DB>(prefix: &str, columns: &str, kind: &str) -> QueryBuilder<DB>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
{
    let mut qb: QueryBuilder<DB> = QueryBuilder::new(format!(
        "{prefix}SELECT {columns} FROM metric_rows WHERE kind = "
    ));
    qb.push_bind(kind.to_owned());
    qb
}

/// The largest `n` of `kind` in scope (`most`).
pub fn most<'a, DB>(prefix: &str, scope: &Scope, kind: &str) -> QueryBuilder<DB>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
{
    let mut qb = of_kind::<DB>(prefix, "MAX(n) AS most", kind);
    within_by_n(&mut qb, &[kind]);
    push_tenants(&mut qb, "tenant", scope);
    qb
}

/// The `limit` rows of `kind` in scope with the largest `n`, largest first
/// (`operation`, `n`): the most past a few rows a report reads past.
pub fn largest<'a, DB>(prefix: &str, scope: &Scope, kind: &str, limit: i64) -> QueryBuilder<DB>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut qb = of_kind::<DB>(prefix, "operation, n", kind);
    within_by_n(&mut qb, &[kind]);
    push_tenants(&mut qb, "tenant", scope);
    qb.push(" ORDER BY n DESC LIMIT ");
    qb.push_bind(limit);
    qb
}

/// The rows of `kind` in scope in operation order (the first `limit` when
/// given), with `n` at most `at_most` when given.
pub fn first_rows<'a, DB>(
    prefix: &str,
    scope: &Scope,
    kind: &str,
    at_most: Option<i64>,
    limit: Option<i64>,
) -> QueryBuilder<DB>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut qb = of_kind::<DB>(prefix, "operation, n, reason", kind);
    if let Some(at_most) = at_most {
        qb.push(" AND n <= ");
        qb.push_bind(at_most);
        within_by_n(&mut qb, &[kind]);
    }
    push_tenants(&mut qb, "tenant", scope);
    qb.push(" ORDER BY operation");
    if let Some(limit) = limit {
        qb.push(" LIMIT ");
        qb.push_bind(limit);
    }
    qb
}

/// How many rows of `kind` in scope have `n` at most `at_most` (`matching`).
pub fn count_at_most<'a, DB>(
    prefix: &str,
    scope: &Scope,
    kind: &str,
    at_most: i64,
) -> QueryBuilder<DB>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut qb = of_kind::<DB>(prefix, "COUNT(*) AS matching", kind);
    qb.push(" AND n <= ");
    qb.push_bind(at_most);
    within_by_n(&mut qb, &[kind]);
    push_tenants(&mut qb, "tenant", scope);
    qb
}

/// The repeated errors' groups in scope (DESIGN §6, "Repeated errors"): per
/// `cause:LAYER` kind and `reason` (owner and tool), how many rows, how many
/// with `n` (the instant the operation entered its state) at or after `day` and
/// at or after `week`, and the newest `n`. One walk of the cause kinds' rows
/// (every one is counted); the groups are few.
pub fn repeated_groups<'a, DB>(
    prefix: &str,
    scope: &Scope,
    kinds: &[String],
    day: i64,
    week: i64,
) -> QueryBuilder<DB>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut qb: QueryBuilder<DB> = QueryBuilder::new(format!(
        "{prefix}SELECT kind, reason, CAST(COUNT(*) AS BIGINT) AS total, \
         CAST(SUM(CASE WHEN n >= "
    ));
    qb.push_bind(day);
    qb.push(" THEN 1 ELSE 0 END) AS BIGINT) AS last_day, CAST(SUM(CASE WHEN n >= ");
    qb.push_bind(week);
    qb.push(
        " THEN 1 ELSE 0 END) AS BIGINT) AS last_week, MAX(n) AS newest \
         FROM metric_rows WHERE kind IN (",
    );
    let mut list = qb.separated(", ");
    for kind in kinds {
        list.push_bind(kind.clone());
    }
    qb.push(")");
    let named: Vec<&str> = kinds.iter().map(String::as_str).collect();
    within_by_n(&mut qb, &named);
    push_tenants(&mut qb, "tenant", scope);
    qb.push(" GROUP BY kind, reason");
    qb
}

/// The newest rows of one repeated-errors group (`operation`, `n`): the rows
/// of `kind` and `reason` in scope, the latest `n` first and the greatest id
/// among equals, the first `limit` (one more than the rows a report reads
/// past). With `at` (the group's newest `n`, when no row is read past) only
/// the rows at that instant.
pub fn repeated_newest<'a, DB>(
    prefix: &str,
    scope: &Scope,
    kind: &str,
    reason: &str,
    at: Option<i64>,
    limit: i64,
) -> QueryBuilder<DB>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut qb = of_kind::<DB>(prefix, "operation, n", kind);
    if let Some(at) = at {
        qb.push(" AND n = ");
        qb.push_bind(at);
    }
    qb.push(" AND reason = ");
    qb.push_bind(reason.to_owned());
    within_by_n(&mut qb, &[kind]);
    push_tenants(&mut qb, "tenant", scope);
    qb.push(" ORDER BY n DESC, operation DESC LIMIT ");
    qb.push_bind(limit);
    qb
}

/// Clears the marks of `marks` (each an operation and the mark its judging
/// read) that no later write has moved: the last statement of every page a
/// judging writes. Both backends search `metric_stale` by its key for each row
/// value (the bundled SQLite 3.51 and PostgreSQL; SQLite 3.40 scanned the table
/// instead, 0.14 s per 1,000 marks at a million rows, which would make a
/// judging walk quadratic in the store): `tests/metric_plans.rs` holds it so.
pub fn clear_marks<'a, DB>(prefix: &str, marks: &[&(String, i64)]) -> QueryBuilder<DB>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut qb: QueryBuilder<DB> = QueryBuilder::new(format!(
        "{prefix}DELETE FROM metric_stale WHERE (operation, mark) IN (VALUES "
    ));
    let mut list = qb.separated(", ");
    for (id, mark) in marks {
        list.push("(");
        list.push_bind_unseparated(id.clone());
        list.push_unseparated(", ");
        list.push_bind_unseparated(*mark);
        list.push_unseparated(")");
    }
    qb.push(")");
    qb
}
