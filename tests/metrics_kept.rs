//! The report from the facts the store keeps per operation (the metrics tab and
//! `holdfast report`) equals the rules over the whole dataset — the reference
//! `tests/metrics.rs` pins rule by rule and `tests/metrics_paged.rs` checks the
//! paged report against — on the demo packet and on generated stores, in every
//! scope, at several instants, and after writes through every door: ingest, a
//! reviewer's transition, and plain SQL behind holdfast's back. The triggers
//! mark what a write touched; nothing else tells the report.

use crate::support;

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use holdfast::core::clock::parse_instant;
use holdfast::core::ids::OperationId;
use holdfast::core::metrics::{Disposition, MetricId, Report, report};
use holdfast::core::model::State;
use holdfast::core::rules::{Action, Rationale, decide};
use holdfast::store::{Commit, IngestMode, Scope, Store};
use holdfast::wire::Numbered;
use sqlx::Connection;
use support::packets::{TENANTS, cut, generate, renamed_demo};
use support::stores::{self, Fresh, Kind, application_grants};

fn instant(text: &str) -> DateTime<Utc> {
    parse_instant(text).expect("a test instant")
}

/// The instant the stores are ingested at.
fn ingested() -> DateTime<Utc> {
    instant("2026-09-05T12:00:00Z")
}

fn scopes() -> [Scope; 3] {
    [
        Scope::Every,
        Scope::Tenants(vec![TENANTS[0].to_owned()]),
        Scope::Tenants(vec![TENANTS[1].to_owned()]),
    ]
}

/// The kept report over `scope` at `now`, checked against the rules over the
/// whole dataset.
async fn kept_agrees(
    store: &Arc<dyn Store>,
    scope: &Scope,
    now: DateTime<Utc>,
    what: &str,
) -> Report {
    let kept =
        holdfast::report::compute_kept(&stores::session_in(store, scope), now, &Default::default())
            .await
            .expect("kept report");
    let data = store.dataset(scope).await.expect("dataset");
    let whole = cut(report(&data, now));
    assert_eq!(
        kept, whole,
        "{what}, {scope:?}, at {now}: the kept report differs"
    );
    kept
}

/// Whether the store gave the report from its kept facts (not page by page).
async fn from_kept_facts(store: &dyn Store, scope: &Scope, now: DateTime<Utc>) -> bool {
    store
        .kept_report(scope, now, &Default::default())
        .await
        .expect("kept report")
        .is_some()
}

/// Every scope at instants moving forward (a time in the records is reached
/// in between), each twice: once judging what is stale, once reading only.
async fn agrees_everywhere(store: &Arc<dyn Store>, what: &str) {
    for now in [
        ingested(),
        ingested() + Duration::minutes(3),
        ingested() + Duration::hours(30),
        ingested() - Duration::hours(2),
    ] {
        for scope in &scopes() {
            kept_agrees(store, scope, now, what).await;
            kept_agrees(store, scope, now, what).await;
        }
        assert!(
            from_kept_facts(store.as_ref(), &Scope::Every, now).await,
            "{what}: the report over every tenant at {now} was judged page by page"
        );
    }
}

async fn store_of(kind: Kind, records: Vec<Numbered>) -> Fresh {
    let fresh = stores::fresh(kind).await;
    fresh
        .store
        .ingest(records, IngestMode::Quarantine, "test", ingested())
        .await
        .expect("ingest");
    fresh
}

async fn generated(kind: Kind, seed: u64) {
    let fresh = store_of(kind, generate(seed)).await;
    agrees_everywhere(&fresh.store, &format!("seed {seed}")).await;
}

/// A reviewer's move of the first demo operation the rules let be blocked.
async fn blocked(store: &dyn Store) -> Commit {
    let reason =
        Rationale::parse("held for the owner: the target is being migrated").expect("a rationale");
    for n in 1..=32 {
        let id = OperationId::parse(&format!("F{n:02}")).expect("a demo id");
        let detail = store
            .detail(&Scope::Every, &id)
            .await
            .expect("a demo operation");
        let version = detail.row.version;
        let actor = support::review::local();
        if let Ok(decision) = decide(
            &detail,
            &Action::Block,
            &actor,
            &reason,
            version,
            ingested(),
        ) && decision.commit.new_state == Some(State::Blocked)
        {
            return decision.commit;
        }
    }
    panic!("no demo operation may be blocked");
}

/// The demo, judged and kept, then written through each door in turn: every
/// write shows in the next kept report exactly as in the rules over the whole
/// dataset.
async fn doors(kind: Kind) {
    let fresh = store_of(kind, generate(0)).await;
    let store = &fresh.store;
    let now = ingested();
    let demo = kept_agrees(store, &Scope::Every, now, "the demo").await;
    assert_eq!(demo.release.disposition, Disposition::NotDeployed);

    store
        .ingest(renamed_demo("N-"), IngestMode::Quarantine, "test", now)
        .await
        .expect("ingest again");
    let twice = kept_agrees(store, &Scope::Every, now, "after a second ingest").await;
    let figure = |r: &Report, id| r.metric(id).map(|m| (m.numerator, m.denominator));
    let classified = MetricId::OutcomeClassificationCompleteness;
    assert_ne!(figure(&twice, classified), figure(&demo, classified));

    let before = kept_agrees(store, &Scope::Every, now, "before a transition").await;
    store
        .commit(blocked(store.as_ref()).await)
        .await
        .expect("the transition commits");
    let after = kept_agrees(store, &Scope::Every, now, "after a transition").await;
    assert_ne!(
        before, after,
        "the transition changed nothing the report shows"
    );

    fresh
        .execute(
            "INSERT INTO observations (id, operation, observed_ms, wire, record_hash) \
             SELECT 'O-F04-9', operation, observed_ms + 60000, \
             replace(replace(wire, 'O-F04-1', 'O-F04-9'), '\"effect_count\":1', '\"effect_count\":2'), \
             record_hash FROM observations WHERE id = 'O-F04-1'",
        )
        .await
        .expect("an observation written behind holdfast's back");
    let observed = kept_agrees(store, &Scope::Every, now, "after a plain SQL insert").await;
    assert_ne!(after, observed, "the inserted observation changed nothing");

    fresh
        .execute("UPDATE operations SET state = 'FAILED' WHERE id = 'N-F04'")
        .await
        .expect("a state written behind holdfast's back");
    let updated = kept_agrees(store, &Scope::Every, now, "after a plain SQL update").await;
    assert_ne!(observed, updated, "the updated state changed nothing");
    agrees_everywhere(store, "the demo after every door").await;
}

#[tokio::test]
async fn the_kept_report_agrees_with_the_rules_on_generated_sqlite_stores() {
    for seed in 0..12 {
        generated(Kind::Sqlite, seed).await;
    }
}

#[tokio::test]
async fn the_kept_report_agrees_with_the_rules_on_generated_postgres_stores() {
    if stores::postgres_skipped().await {
        return;
    }
    for seed in [0, 3, 7] {
        generated(Kind::Postgres, seed).await;
    }
}

#[tokio::test]
async fn every_door_reaches_the_kept_report_on_sqlite() {
    doors(Kind::Sqlite).await;
}

#[tokio::test]
async fn every_door_reaches_the_kept_report_on_postgres() {
    if stores::postgres_skipped().await {
        return;
    }
    doors(Kind::Postgres).await;
}

/// Asked for an instant before the facts were judged at, the report judges
/// again the operations with a time in their records in between, and still
/// agrees.
#[tokio::test]
async fn an_earlier_instant_is_judged_afresh() {
    let fresh = store_of(Kind::Sqlite, generate(5)).await;
    let store = &fresh.store;
    let later = ingested() + Duration::hours(30);
    kept_agrees(store, &Scope::Every, later, "judged late").await;
    assert!(from_kept_facts(store.as_ref(), &Scope::Every, later).await);
    for earlier in [ingested(), ingested() - Duration::hours(3)] {
        kept_agrees(store, &Scope::Every, earlier, "asked earlier").await;
        assert!(from_kept_facts(store.as_ref(), &Scope::Every, earlier).await);
    }
    kept_agrees(store, &Scope::Every, later, "asked late again").await;
}

/// How many operations are marked stale, and the kept counts' total, read by
/// the owner.
async fn kept_state(fresh: &Fresh) -> (i64, i64) {
    let mut owner = sqlx::PgConnection::connect(&fresh.url).await.unwrap();
    sqlx::query_as(
        "SELECT (SELECT count(*) FROM metric_stale), \
         (SELECT COALESCE(CAST(SUM(row_count + n_sum) AS BIGINT), 0) FROM metric_counts)",
    )
    .fetch_one(&mut owner)
    .await
    .unwrap()
}

/// A login of the README's application group may only read the kept facts.
/// After writes, its report judges what they touched without writing a fact,
/// comes from the kept facts, and equals the paged report and the rules over
/// the whole dataset; the login cannot write a fact itself.
#[tokio::test]
async fn a_login_that_may_only_read_the_kept_facts_gets_the_same_report_and_writes_none() {
    if stores::postgres_skipped().await {
        return;
    }
    let role = stores::LoginRole::create("hf_reader").await;
    let fresh = store_of(Kind::Postgres, generate(0)).await;
    let now = ingested();
    kept_agrees(&fresh.store, &Scope::Every, now, "kept by the owner").await;
    let database = fresh.database_name().unwrap().to_owned();
    fresh
        .execute(&application_grants(&role.name, &database))
        .await
        .unwrap();
    let url = stores::url_for_login(&fresh.url, &role.name);
    let login: Arc<dyn Store> = Arc::new(
        holdfast::store::postgres::PgStore::connect(&url)
            .await
            .unwrap(),
    );

    let report = login
        .ingest(renamed_demo("N-"), IngestMode::Quarantine, &role.name, now)
        .await
        .unwrap();
    assert!(!report.committed.is_empty(), "{report:?}");
    fresh
        .execute("UPDATE operations SET state = 'FAILED' WHERE id = 'F04'")
        .await
        .expect("a state written behind holdfast's back");
    let unkept = kept_state(&fresh).await;
    assert!(unkept.0 > 0, "the writes marked operations stale");

    for now in [ingested(), ingested() + Duration::hours(30)] {
        assert!(
            from_kept_facts(login.as_ref(), &Scope::Every, now).await,
            "the login's report at {now} was judged page by page"
        );
        for scope in &scopes() {
            let kept = kept_agrees(&login, scope, now, "read by the login").await;
            let paged = holdfast::report::compute_in(
                &stores::session_in(&login, scope),
                now,
                holdfast::report::PAGE,
            )
            .await
            .unwrap();
            assert_eq!(kept, paged, "{scope:?} at {now}: the paged report differs");
        }
    }
    assert_eq!(
        kept_state(&fresh).await,
        unkept,
        "the login's reports wrote no fact and cleared no mark"
    );

    let mut raw = sqlx::PgConnection::connect(&url).await.unwrap();
    for forged in [
        "INSERT INTO metric_rows (kind, operation, tenant, n) VALUES ('veto', 'F01', 'pinehaven', 1)",
        "UPDATE metric_counts SET row_count = 0",
        "DELETE FROM metric_rows",
        "INSERT INTO metric_facts (operation, tenant, foreign_relatives) VALUES ('F01', 'pinehaven', 0)",
        "DELETE FROM metric_stale",
        "INSERT INTO metric_stale (operation, mark) VALUES ('F01', 1)",
    ] {
        let refused = sqlx::raw_sql(sqlx::AssertSqlSafe(forged.to_owned()))
            .execute(&mut raw)
            .await;
        let code = refused
            .as_ref()
            .err()
            .and_then(|e| e.as_database_error())
            .and_then(|e| e.code())
            .map(|c| c.into_owned());
        assert_eq!(code.as_deref(), Some("42501"), "{forged}: {refused:?}");
    }
    raw.close().await.unwrap();

    // The owner's next report keeps what the login's judged; the login's
    // report still agrees.
    kept_agrees(&fresh.store, &Scope::Every, now, "kept again").await;
    assert_eq!(kept_state(&fresh).await.0, 0);
    kept_agrees(&login, &Scope::Every, now, "read after keeping").await;
}
