//! The console's hot reads use an index, on both backends: the pages of the
//! queue (first, last, and on each side of a key, every leg of a keyset page),
//! a search of the queue, the header counts, the keyset pages of a bulk
//! selection, mark-all's ids, the sort key a page starts from and an audit page,
//! each in every scope and in one tenant's scope. Each statement is the one the store runs (built by
//! `holdfast::store::sql` behind an `EXPLAIN` prefix), and the assertion is on
//! the plan's shape, never on time: SQLite's `EXPLAIN QUERY PLAN` must search
//! the operations by an index rather than scan them, and PostgreSQL's `EXPLAIN`,
//! with sequential scans priced out (`enable_seqscan = off`, so a small test
//! table cannot hide a missing index), must not fall back to one.

use crate::support;

use chrono::{DateTime, Utc};
use holdfast::core::model::State;
use holdfast::store::sql;
use holdfast::store::{OperationFilter, Scope, SortOrder};
use sqlx::{Postgres, QueryBuilder, Sqlite};
use support::review::{loaded, now};
use support::stores::{Fresh, Kind};

/// One hot read: its name, whether it may walk the audit log in `seq` order
/// (the audit page does: it stops at its `LIMIT`), whether it is a keyset
/// page's leg in its key's band, which must seek the index to the key rather
/// than read from the top of the order and filter up to it, and whether it is
/// the gateway's lookup of a call's identical ones, which must find them by
/// the tool and the hash or key (and may sort the few it finds), or a count of
/// one tool's operations (the Tools tab's holds), which must find them by the
/// index on the tool.
struct Read {
    name: String,
    walks_audit: bool,
    seeks_key: bool,
    same_call: bool,
    by_tool: bool,
}

fn scopes() -> Vec<(&'static str, Scope)> {
    vec![
        ("every tenant", Scope::Every),
        ("one tenant", Scope::Tenants(vec!["pinehaven".into()])),
    ]
}

fn filter(scope: &Scope, queue: bool) -> OperationFilter {
    OperationFilter {
        queue,
        scope: scope.clone(),
        ..OperationFilter::default()
    }
}

const AUDIT_COLUMNS: &str = "seq, operation, action, hash";

/// Every hot read in every scope, built for `DB` behind `prefix`.
fn reads<'a, DB>(prefix: &str, at: DateTime<Utc>) -> Vec<(Read, QueryBuilder<DB>)>
where
    DB: sqlx::Database,
    String: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    Option<String>: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    i64: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
{
    let key = sql::SortKey {
        risk_rank: 2,
        observe_order: at.timestamp_millis(),
        state_since_ms: at.timestamp_millis(),
        deadline_ms: Some(at.timestamp_millis()),
        id: "F09".into(),
    };
    let mut seeks = vec![("first", sql::Seek::First), ("last", sql::Seek::Last)];
    seeks.extend([
        ("at a key", sql::Seek::From(&key, sql::Side::At)),
        ("after a key", sql::Seek::From(&key, sql::Side::After)),
        ("before a key", sql::Seek::From(&key, sql::Side::Before)),
    ]);
    let mut out = Vec::new();
    for (label, scope) in scopes() {
        let read = |name: &str, walks_audit| Read {
            name: format!("{name} ({label})"),
            walks_audit,
            seeks_key: false,
            same_call: false,
            by_tool: false,
        };
        let band = |name: &str, seek: sql::Seek, leg: sql::Leg| Read {
            seeks_key: matches!(seek, sql::Seek::From(..)) && leg == sql::Leg::Band,
            ..read(name, false)
        };
        let queue = filter(&scope, true);
        let all = filter(&scope, false);
        let searched = OperationFilter {
            search: Some("queue".into()),
            ..queue.clone()
        };
        // The console opens on the urgency order; age is the other order an
        // index serves whole. (The deadline order puts unscheduled operations
        // last with an expression no index holds, so it sorts the held ones.)
        // Every page of them is a keyset page, one statement per leg.
        for sort in [SortOrder::Urgency, SortOrder::Age] {
            for (side, seek) in &seeks {
                for leg in seek.legs() {
                    let name = format!("queue page by {sort:?}, {side}, {leg:?} leg");
                    if let Some(qb) =
                        sql::keyset_page(prefix, sql::Columns::Rows, &queue, sort, *seek, *leg, 50)
                    {
                        out.push((band(&name, *seek, *leg), qb));
                    }
                }
            }
        }
        out.push((
            read("first page of a search of the queue", false),
            sql::keyset_page(
                prefix,
                sql::Columns::Rows,
                &searched,
                SortOrder::Urgency,
                sql::Seek::First,
                sql::Leg::Band,
                50,
            )
            .expect("a first page"),
        ));
        for (side, seek) in [&seeks[0], &seeks[3]] {
            for leg in seek.legs() {
                if let Some(qb) = sql::keyset_page(
                    prefix,
                    sql::Columns::Keys,
                    &queue,
                    SortOrder::Urgency,
                    *seek,
                    *leg,
                    500,
                ) {
                    let name = format!("keyset page of a bulk selection, {side}, {leg:?} leg");
                    out.push((band(&name, *seek, *leg), qb));
                }
            }
        }
        out.push((
            read("mark-all ids of the queue", false),
            sql::matching_ids(prefix, &queue, SortOrder::Urgency),
        ));
        out.push((
            read("the sort key a page starts from", false),
            sql::sort_key(prefix, "F09", &scope),
        ));
        out.push((
            read("header counts by state", false),
            sql::kept_counts(prefix, &scope),
        ));
        out.push((
            read("header count of overdue holds", false),
            sql::overdue_count(prefix, &all, at.timestamp_millis()),
        ));
        out.push((
            read("header count of overdue holds, kept by day", false),
            sql::kept_overdue_count(prefix, &scope, at.timestamp_millis()),
        ));
        out.push((
            read("header count of pending proposals", false),
            sql::pending_count(prefix, &all),
        ));
        // The Tools tab counts each tool's holds, and the UNKNOWN ones of them.
        for (what, states) in [("holds", vec![]), ("UNKNOWN holds", vec![State::Unknown])] {
            let of_tool = OperationFilter {
                tools: vec!["T03".into()],
                states,
                ..queue.clone()
            };
            let mut count = sql::operations_query(prefix, "count(*) AS n");
            sql::push_filter(&mut count, &of_tool);
            out.push((
                Read {
                    by_tool: true,
                    ..read(&format!("one tool's count of {what}"), false)
                },
                count,
            ));
        }
        out.push((
            read("first audit page", true),
            sql::audit_page(prefix, AUDIT_COLUMNS, &scope, None, 200),
        ));
        out.push((
            read("an older audit page", true),
            sql::audit_page(prefix, AUDIT_COLUMNS, &scope, Some(3), 200),
        ));
    }
    // Scope-free: the gateway asks every tenant's operations of its tool.
    out.push((
        Read {
            name: "a gateway's identical calls".into(),
            walks_audit: false,
            seeks_key: false,
            same_call: true,
            by_tool: false,
        },
        sql::same_calls(
            prefix,
            "pay/refund",
            "0f0e0d0c0b0a09080706050403020100f0e0d0c0b0a09080706050403020100",
            Some("order-42"),
        ),
    ));
    out
}

/// The table a SQLite plan line reads (`SCAN o`, `SEARCH t USING …`), if any.
fn sqlite_table(detail: &str) -> Option<(&str, &str)> {
    let mut words = detail.split_whitespace();
    let verb = words.next()?;
    matches!(verb, "SCAN" | "SEARCH").then_some(())?;
    Some((verb, words.next()?))
}

/// Aliases of the operations table in the store's SQL.
const OPERATIONS: &[&str] = &["operations", "o", "t", "p"];

async fn sqlite_plans(fresh: &Fresh) {
    let plans = fresh
        .sqlite_plans(reads::<Sqlite>("EXPLAIN QUERY PLAN ", now()))
        .await;
    for (read, plan) in plans {
        let shown = plan.join("\n  ");
        for line in &plan {
            let Some((verb, table)) = sqlite_table(line) else {
                continue;
            };
            // The kept counts are a few rows per tenant (and day): read whole.
            // `SCAN CONSTANT ROW` is a SELECT of subqueries, no table at all.
            if verb == "SEARCH" || ["operation_counts", "d", "CONSTANT"].contains(&table) {
                continue;
            }
            // A walk of the log in `seq` order is the audit page's plan; it stops
            // at the page's LIMIT (no sort of the whole log, checked below).
            if read.walks_audit && table == "audit" {
                continue;
            }
            panic!("{}: scans {table}:\n  {shown}", read.name);
        }
        if read.same_call {
            for index in [
                "operations_payload (tool=? AND payload_hash=?)",
                "operations_business_key (tool=? AND business_key=?)",
            ] {
                assert!(
                    plan.iter()
                        .any(|l| l.ends_with(&format!("USING INDEX {index}"))),
                    "{}: does not search {index}:\n  {shown}",
                    read.name
                );
            }
        }
        if read.by_tool {
            assert!(
                plan.iter().any(|l| l.starts_with("SEARCH o")
                    && l.contains("INDEX operations_tool_queue (tool=?")),
                "{}: does not search the index on the tool:\n  {shown}",
                read.name
            );
        }
        assert!(
            read.same_call
                || !plan
                    .iter()
                    .any(|l| l.contains("USE TEMP B-TREE FOR ORDER BY")),
            "{}: sorts instead of walking an index:\n  {shown}",
            read.name
        );
        if read.seeks_key {
            // `SEARCH o USING … (queued=? AND risk_rank=? AND (observe_order,…)>(?,?,?))`
            assert!(
                plan.iter().any(|l| l.starts_with("SEARCH o")
                    && [")>(", ")<(", ")>=(", ")<=("].iter().any(|c| l.contains(c))),
                "{}: does not seek the index to the key:\n  {shown}",
                read.name
            );
        }
        if read.walks_audit {
            assert!(
                plan.iter()
                    .any(|l| l.starts_with("SCAN audit") || l.starts_with("SEARCH audit")),
                "{}: does not walk the audit key:\n  {shown}",
                read.name
            );
        }
        for op in OPERATIONS {
            assert!(
                !plan.iter().any(|l| l == &format!("SCAN {op}")),
                "{}: scans the operations:\n  {shown}",
                read.name
            );
        }
    }
}

async fn postgres_plans(fresh: &Fresh) {
    // A queue page on a large store costs past `jit_above_cost`: compiling it
    // would take longer than running it, so the store's connections turn JIT off.
    let store = fresh.postgres.as_ref().expect("a PostgreSQL store");
    let jit: String = sqlx::query_scalar("SHOW jit")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(jit, "off", "the store's connections compile queries");
    let plans = fresh
        .postgres_plans(reads::<Postgres>("EXPLAIN ", now()))
        .await;
    for (read, plan) in plans {
        let shown = plan.join("\n  ");
        for table in [
            "operations",
            "audit",
            "attempts",
            "proposals",
            "dependencies",
        ] {
            assert!(
                !plan
                    .iter()
                    .any(|l| l.contains(&format!("Seq Scan on {table} "))
                        || l.trim_end().ends_with(&format!("Seq Scan on {table}"))),
                "{}: scans {table} sequentially:\n  {shown}",
                read.name
            );
        }
        if read.seeks_key {
            // `Index Cond: (… AND (ROW(observe_order, state_since_ms, id) > ROW(…)))`
            assert!(
                plan.iter()
                    .any(|l| l.contains("Index Cond") && l.contains("ROW(")),
                "{}: does not seek the index to the key:\n  {shown}",
                read.name
            );
        }
        if read.same_call {
            for index in ["operations_payload", "operations_business_key"] {
                assert!(
                    plan.iter()
                        .any(|l| l.contains("Index") && l.contains(index)),
                    "{}: does not read {index}:\n  {shown}",
                    read.name
                );
            }
        }
        if read.by_tool {
            assert!(
                plan.iter()
                    .any(|l| l.contains("Index") && l.contains("operations_tool_queue")),
                "{}: does not read the index on the tool:\n  {shown}",
                read.name
            );
        }
        if read.walks_audit {
            // Any page reads the log through an index: its key, or (for a
            // tenant with few operations) the operations' rows of the log. The
            // planner may fetch a tiny test log's few rows and sort them; the
            // newest page of the whole log is always a backward walk of the key.
            assert!(
                plan.iter()
                    .any(|l| l.contains("audit_pkey") || l.contains("audit_operation")),
                "{}: does not read the audit log by an index:\n  {shown}",
                read.name
            );
        }
        if read.walks_audit && read.name == "first audit page (every tenant)" {
            assert!(
                plan.iter()
                    .any(|l| l.contains("Index Scan Backward using audit_pkey")),
                "{}: does not walk the audit key newest first:\n  {shown}",
                read.name
            );
            assert!(
                !plan
                    .iter()
                    .any(|l| l.trim_start().starts_with("->  Sort") || l.starts_with("Sort")),
                "{}: sorts the log:\n  {shown}",
                read.name
            );
        }
    }
}

async fn hot_reads_use_an_index(kind: Kind) {
    let fresh = loaded(kind).await;
    match kind {
        Kind::Sqlite => sqlite_plans(&fresh).await,
        Kind::Postgres => postgres_plans(&fresh).await,
    }
}

holdfast_on_both_backends!(hot_reads_use_an_index);
