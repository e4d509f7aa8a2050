//! An ingest batch's statements find their rows by the table's key, on both
//! backends, however the table has grown since a connection planned them: the
//! lookups of what the store holds under a batch's keys and the move of an
//! operation to a later state, each the statement the store runs
//! (`holdfast::store::ingest_sql`). The assertion is on the plan's shape, never
//! on time.
//!
//! PostgreSQL keeps a prepared statement's generic plan per connection, made
//! for the tables as they were then: made while a fresh store was nearly
//! empty, it is a sequential scan, and without new statistics it stays one as
//! the table grows (a batch's lookup of 256 operations then read the whole
//! table, over a second each at 200,000 operations). So each statement is
//! first run here often enough on the small test store for its generic plan to
//! be kept, and then planned as a large batch's transaction plans it
//! (`Backend::BATCH_PLANS`), with sequential scans priced out
//! (`enable_seqscan = off`, as in `query_plans.rs`): the plan must read the
//! key's index.

use crate::support;

use holdfast::store::engine::Backend;
use holdfast::store::ingest_sql::{LOOKUPS, MOVE};
use sqlx::{Postgres, Row};
use support::review::loaded;
use support::stores::{Fresh, Kind};

/// Keys per lookup in the test: any short list.
const KEYS: usize = 4;

/// A lookup completed with `KEYS` placeholders, as the store completes it.
fn lookup(prefix: &str, placeholder: impl Fn(usize) -> String) -> String {
    let list: Vec<String> = (1..=KEYS).map(placeholder).collect();
    format!("{prefix} ({})", list.join(", "))
}

async fn sqlite_plans(fresh: &Fresh) {
    let store = fresh.sqlite.as_ref().expect("a SQLite store");
    let mut statements: Vec<(String, &str)> = LOOKUPS
        .iter()
        .map(|(prefix, table)| (lookup(prefix, |_| "?".to_owned()), *table))
        .collect();
    statements.push((MOVE.replace('$', "?"), "operations"));
    for (statement, table) in statements {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "EXPLAIN QUERY PLAN {statement}"
        )))
        .fetch_all(store.pool())
        .await
        .unwrap();
        let plan: Vec<String> = rows
            .iter()
            .map(|r| r.try_get::<String, _>("detail").unwrap())
            .collect();
        let shown = plan.join("\n  ");
        assert!(
            plan.iter()
                .any(|l| l.starts_with(&format!("SEARCH {table} "))),
            "{statement}: does not search {table} by its key:\n  {shown}"
        );
        assert!(
            !plan.iter().any(|l| l.starts_with("SCAN ")),
            "{statement}: scans a table:\n  {shown}"
        );
    }
}

/// `EXPLAIN EXECUTE` of the prepared `name` with `args`, inside a transaction
/// that begins with `first` (each of them run before the explain), its plan as lines.
async fn explained(
    conn: &mut sqlx::PgConnection,
    first: &[&str],
    name: &str,
    args: &str,
) -> Vec<String> {
    sqlx::raw_sql("BEGIN").execute(&mut *conn).await.unwrap();
    for statement in first {
        sqlx::raw_sql(sqlx::AssertSqlSafe(*statement))
            .execute(&mut *conn)
            .await
            .unwrap();
    }
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "EXPLAIN EXECUTE {name}({args})"
    )))
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await.unwrap();
    rows.iter()
        .map(|r| r.try_get::<String, _>(0).unwrap())
        .collect()
}

fn seq_scan(plan: &[String], table: &str) -> bool {
    plan.iter().any(|l| {
        l.contains(&format!("Seq Scan on {table} "))
            || l.trim_end().ends_with(&format!("Seq Scan on {table}"))
    })
}

async fn postgres_plans(fresh: &Fresh) {
    let store = fresh.postgres.as_ref().expect("a PostgreSQL store");
    let batch = <Postgres as Backend>::BATCH_PLANS.expect("PostgreSQL plans a large batch anew");
    let mut conn = store.pool().acquire().await.unwrap();
    let keys = ["'none'"; KEYS].join(", ");
    let mut statements: Vec<(String, String, String, &str)> = LOOKUPS
        .iter()
        .enumerate()
        .map(|(i, (prefix, table))| {
            (
                format!("lookup_{i}"),
                lookup(prefix, |n| format!("${n}")),
                keys.clone(),
                *table,
            )
        })
        .collect();
    statements.push((
        "move_on".to_owned(),
        MOVE.to_owned(),
        "'SUCCEEDED', 0, 1, 'none'".to_owned(),
        "operations",
    ));
    // The statements whose plan kept from the small store scans the table
    // even with sequential scans priced out.
    let mut kept_scans = Vec::new();
    for (name, statement, args, table) in statements {
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
            "PREPARE {name} AS {statement}"
        )))
        .execute(&mut *conn)
        .await
        .unwrap();
        // Past the first five runs the server may keep a generic plan.
        for _ in 0..6 {
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("EXECUTE {name}({args})")))
                .execute(&mut *conn)
                .await
                .unwrap();
        }
        let priced_out = "SET LOCAL enable_seqscan = off";
        let kept = explained(&mut conn, &[priced_out], &name, &args).await;
        if seq_scan(&kept, table) {
            kept_scans.push(statement.clone());
        }
        let plan = explained(&mut conn, &[batch, priced_out], &name, &args).await;
        let shown = plan.join("\n  ");
        assert!(
            !seq_scan(&plan, table),
            "{statement}: a batch scans {table} sequentially:\n  {shown}"
        );
        assert!(
            plan.iter()
                .any(|l| l.contains("Index") && l.contains(&format!(" on {table}"))),
            "{statement}: a batch does not read {table} by an index:\n  {shown}"
        );
    }
    // What a batch's own plans guard against: without them, the lookup of
    // the known operations keeps the scan it was planned with.
    let known = lookup(holdfast::store::ingest_sql::OPERATIONS, |n| format!("${n}"));
    assert!(
        kept_scans.contains(&known),
        "the plan kept from the small store no longer scans the operations, \
         so this test shows nothing; kept scans: {kept_scans:?}"
    );
}

async fn ingest_statements_find_rows_by_key(kind: Kind) {
    let fresh = loaded(kind).await;
    match kind {
        Kind::Sqlite => sqlite_plans(&fresh).await,
        Kind::Postgres => postgres_plans(&fresh).await,
    }
}

holdfast_on_both_backends!(ingest_statements_find_rows_by_key);
