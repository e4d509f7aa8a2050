//! The report's reads of the kept metric facts use an index, on both backends,
//! in every scope and in one tenant's: each is a sum over the small table of
//! counts per (tenant, kind), or a walk of one kind's rows by the
//! `(kind, operation)` key that stops at its `LIMIT`, or a range of the
//! partial `(kind, n)` index (its condition repeated in the read). (Over every
//! tenant the sums read the whole table of counts, a row per tenant and kind,
//! however many operations.) Each statement is the one the store runs (built by
//! `holdfast::store::metric_sql` behind an `EXPLAIN` prefix); the assertion is
//! on the plan's shape, never on time. PostgreSQL plans with sequential scans
//! priced out (`enable_seqscan = off`), so a small test table cannot hide a
//! missing index; it may still sort a tiny table's few rows found by an index,
//! so the walk in key order is asserted on SQLite only.

use crate::support;

use holdfast::store::{Scope, metric_sql};
use sqlx::{Postgres, QueryBuilder, Sqlite};
use support::review::{loaded, now};
use support::stores::{Fresh, Kind};

/// One read: its name, and whether it may sort what an index range gave it
/// (the overdue listing: a range of the held operations' next observations,
/// put in operation order).
struct Read {
    name: String,
    sorts_a_range: bool,
    /// A read by `n`, within the partial `(kind, n)` index.
    by_n: bool,
}

fn reads<'a, DB>(prefix: &str) -> Vec<(Read, QueryBuilder<DB>)>
where
    DB: sqlx::Database,
    String: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    i64: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
{
    let at = now().timestamp_millis();
    let mut out = Vec::new();
    for (label, scope) in [
        ("every tenant", Scope::Every),
        ("one tenant", Scope::Tenants(vec!["pinehaven".into()])),
    ] {
        let read = |name: &str, sorts_a_range| Read {
            name: format!("{name} ({label})"),
            sorts_a_range,
            // The other reads by `n` repeat the index's condition too, but the
            // planner may walk the key instead: in operation order for the
            // first overdue observations (no sort), every row of the cause
            // kinds for the repeated errors' groups, and by the key for a
            // group's newest, whose `reason` the index does not hold (as it
            // did with the whole index).
            by_n: ["the most requests", "the count of overdue"]
                .iter()
                .any(|by_n| name.starts_with(by_n)),
        };
        out.push((read("the sums", false), metric_sql::sums(prefix, &scope)));
        out.push((
            read("the most requests at a layer", false),
            metric_sql::most(prefix, &scope, "requests:sdk"),
        ));
        out.push((
            read("the first rows of a verdict", false),
            metric_sql::first_rows(
                prefix,
                &scope,
                "outcome_classification_completeness:counted",
                None,
                Some(100),
            ),
        ));
        out.push((
            read("every unknown age", false),
            metric_sql::first_rows(prefix, &scope, "unknown_since", None, None),
        ));
        out.push((
            read("the count of overdue observations", false),
            metric_sql::count_at_most(prefix, &scope, "next_observation", at),
        ));
        out.push((
            read("the first overdue observations", true),
            metric_sql::first_rows(prefix, &scope, "next_observation", Some(at), Some(100)),
        ));
        let kinds = holdfast::core::metrics::cause_kinds();
        let day = at - holdfast::core::metrics::DAY_MS;
        let week = at - holdfast::core::metrics::WEEK_MS;
        out.push((
            read("the repeated errors' groups", false),
            metric_sql::repeated_groups(prefix, &scope, &kinds, day, week),
        ));
        let reason = holdfast::core::metrics::cause_reason("integrations", "T03");
        out.push((
            read("a group's newest at its instant", true),
            metric_sql::repeated_newest(prefix, &scope, &kinds[0], &reason, Some(at), 1),
        ));
        out.push((
            read("a group's newest past the rows judged anew", true),
            metric_sql::repeated_newest(prefix, &scope, &kinds[0], &reason, None, 3),
        ));
    }
    out
}

async fn sqlite_plans(fresh: &Fresh) {
    let plans = fresh
        .sqlite_plans(reads::<Sqlite>("EXPLAIN QUERY PLAN "))
        .await;
    for (read, plan) in plans {
        let shown = plan.join("\n  ");
        assert!(
            !plan.iter().any(|l| l.starts_with("SCAN metric_rows")),
            "{}: scans the fact rows:\n  {shown}",
            read.name
        );
        assert!(
            plan.iter()
                .any(|l| l.starts_with("SEARCH metric_rows") || l.contains("metric_counts")),
            "{}: does not search the fact rows by an index:\n  {shown}",
            read.name
        );
        if read.by_n {
            assert!(
                plan.iter().any(|l| l.contains("INDEX metric_rows_by_n")),
                "{}: does not read by the partial (kind, n) index:\n  {shown}",
                read.name
            );
        }
        if !read.sorts_a_range {
            assert!(
                !plan
                    .iter()
                    .any(|l| l.contains("USE TEMP B-TREE FOR ORDER BY")),
                "{}: sorts instead of walking an index:\n  {shown}",
                read.name
            );
        }
    }
}

async fn postgres_plans(fresh: &Fresh) {
    let plans = fresh.postgres_plans(reads::<Postgres>("EXPLAIN ")).await;
    for (read, plan) in plans {
        let shown = plan.join("\n  ");
        // Over every tenant the sums read the whole table of counts: a row per
        // (tenant, kind), however many operations there are.
        let every_count = read.name == "the sums (every tenant)";
        for table in ["metric_rows", "metric_counts"] {
            if every_count && table == "metric_counts" {
                continue;
            }
            assert!(
                !plan
                    .iter()
                    .any(|l| l.contains(&format!("Seq Scan on {table}"))),
                "{}: scans {table} sequentially:\n  {shown}",
                read.name
            );
        }
    }
}

/// The small fixture, reported once so its facts are kept, then each read
/// explained.
async fn kept_reads_use_an_index(kind: Kind) {
    let fresh = loaded(kind).await;
    let judged = fresh
        .store
        .refresh_facts(now(), &Default::default())
        .await
        .unwrap();
    assert!(judged > 0, "the fixture's operations were judged");
    match kind {
        Kind::Sqlite => sqlite_plans(&fresh).await,
        Kind::Postgres => postgres_plans(&fresh).await,
    }
}

/// Clearing a page's judged marks searches `metric_stale` by its key on both
/// backends: a scan for every page would make the judging of a million
/// operations quadratic in the store (SQLite 3.40 scans this statement: 0.14 s
/// per 1,000 marks at a million rows).
async fn clearing_marks_searches_the_key(kind: Kind) {
    let fresh = loaded(kind).await;
    let marks = [("op_a".to_owned(), 1_i64), ("op_b".to_owned(), 7)];
    let marks: Vec<&(String, i64)> = marks.iter().collect();
    let plan = match kind {
        Kind::Sqlite => {
            let explain = metric_sql::clear_marks::<Sqlite>("EXPLAIN QUERY PLAN ", &marks);
            fresh.sqlite_plans(vec![((), explain)]).await
        }
        Kind::Postgres => {
            let explain = metric_sql::clear_marks::<Postgres>("EXPLAIN ", &marks);
            fresh.postgres_plans(vec![((), explain)]).await
        }
    };
    let plan = &plan[0].1;
    let shown = plan.join("\n  ");
    assert!(
        !plan
            .iter()
            .any(|l| l.starts_with("SCAN metric_stale") || l.contains("Seq Scan on metric_stale")),
        "clearing the marks scans metric_stale:\n  {shown}"
    );
    assert!(
        plan.iter().any(|l| l.starts_with("SEARCH metric_stale")
            || l.contains("Index Scan using metric_stale_pkey")
            || l.contains("Index Cond: (operation")),
        "clearing the marks does not search metric_stale by its key:\n  {shown}"
    );
}

holdfast_on_both_backends!(kept_reads_use_an_index, clearing_marks_searches_the_key);

/// The reads by `n` repeat the partial index's condition word for word, or
/// neither planner would see they are within it.
#[test]
fn the_partial_index_states_the_condition_the_reads_repeat() {
    for migration in [
        include_str!("../migrations/sqlite/20261210000010_metric_rows_by_n_partial.sql"),
        include_str!("../migrations/postgres/20261210000010_metric_rows_by_n_partial.sql"),
    ] {
        assert!(
            migration.contains(&format!("WHERE {}", metric_sql::BY_N)),
            "{migration}"
        );
    }
}
