//! How far the store's judging has got ([`Progress`]), on both backends: a
//! report after ingests tells a total counted before the first page (every
//! operation marked stale), a count that only grows as pages are judged and
//! ends at that total, and nothing at all once nothing is left to judge; the
//! report judged page by page counts every operation in scope the same way,
//! and a login that may only read the kept facts counts what it judges.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use holdfast::core::clock::parse_instant;
use holdfast::store::judging::telling;
use holdfast::store::{IngestMode, Judging, OperationFilter, Progress, Scope, Store};
use support::packets::{PACKET, parse, renamed_demo};
use support::stores::{self, Fresh, Kind};

fn now() -> DateTime<Utc> {
    parse_instant("2026-09-05T12:00:00Z").expect("a test instant")
}

/// The count `sql` reads, as the owner.
async fn counted(fresh: &Fresh, sql: &str) -> u64 {
    let sql = sqlx::AssertSqlSafe(sql.to_owned());
    let n: i64 = match (&fresh.sqlite, &fresh.postgres) {
        (Some(s), _) => sqlx::query_scalar(sql).fetch_one(s.pool()).await,
        (_, Some(p)) => sqlx::query_scalar(sql).fetch_one(p.pool()).await,
        (None, None) => unreachable!("a fresh store has one backend"),
    }
    .expect("a count");
    u64::try_from(n).expect("a count")
}

/// How many operations the triggers marked stale.
async fn stale_marks(fresh: &Fresh) -> u64 {
    counted(fresh, "SELECT count(*) FROM metric_stale").await
}

/// How many kept facts no longer hold at `at`.
async fn due_facts(fresh: &Fresh, at: DateTime<Utc>) -> u64 {
    let ms = at.timestamp_millis();
    counted(
        fresh,
        &format!(
            "SELECT count(*) FROM metric_facts WHERE (stale_ms IS NOT NULL AND stale_ms <= {ms}) \
             OR (valid_ms IS NOT NULL AND valid_ms > {ms})"
        ),
    )
    .await
}

/// Every count `judge` tells its progress, as the surfaces hear it
/// ([`telling`]) with no pause asked between two.
async fn told_by<F: Future>(judge: impl FnOnce(Progress) -> F) -> Vec<Judging> {
    let mut told = Vec::new();
    telling(Duration::ZERO, |judging| told.push(judging), judge).await;
    told
}

/// The kept report at `now`, with every count it told.
async fn report_telling(fresh: &Fresh) -> Vec<Judging> {
    report_at(fresh, now()).await
}

/// The kept report at `at`, with every count it told.
async fn report_at(fresh: &Fresh, at: DateTime<Utc>) -> Vec<Judging> {
    told_by(|progress| async move {
        let report = fresh
            .store
            .kept_report(&Scope::Every, at, &progress)
            .await
            .expect("the kept report");
        assert!(report.is_some(), "the report comes from the kept facts");
    })
    .await
}

/// `told` starts short of `total`, only grows, and ends at it.
fn counts_up_to(told: &[Judging], total: u64) {
    let first = told.first().expect("judging tells how far it has got");
    let last = told.last().expect("a last count");
    assert_eq!(first.total, total, "the total is counted first");
    assert!(first.judged < total, "told before the last page: {told:?}");
    assert_eq!((last.judged, last.total), (total, total), "{told:?}");
    assert!(
        told.windows(2)
            .all(|w| w[0].judged <= w[1].judged && w[1].total == total),
        "the count only grows, the total stays: {told:?}"
    );
}

async fn judging_counts_up_to_every_stale_operation(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    fresh
        .store
        .ingest(parse(PACKET), IngestMode::Quarantine, "test", now())
        .await
        .expect("ingest the demo");
    // More than a page of stale operations (a page judges 500).
    for copy in 0..20 {
        fresh
            .store
            .ingest(
                renamed_demo(&format!("J{copy:02}-")),
                IngestMode::Quarantine,
                "test",
                now(),
            )
            .await
            .expect("ingest a copy");
    }
    let stale = stale_marks(&fresh).await;
    assert!(stale > 500, "{stale} stale operations");

    counts_up_to(&report_telling(&fresh).await, stale);
    assert_eq!(stale_marks(&fresh).await, 0, "every mark cleared");

    let again = report_telling(&fresh).await;
    assert!(
        again.is_empty(),
        "nothing to judge tells nothing: {again:?}"
    );

    // A day and more later, the facts a time in their records ends are due.
    let later = now() + chrono::Duration::hours(30);
    let due = due_facts(&fresh, later).await;
    assert!(due > 0, "no fact is due a day later");
    counts_up_to(&report_at(&fresh, later).await, due);

    // Judged page by page (where the kept facts cannot give the report), the
    // count is of every operation in scope.
    let session = stores::session_in(&fresh.store, &Scope::Every);
    let operations = session
        .count(&OperationFilter::default())
        .await
        .expect("count the operations");
    let paged = told_by(|progress| async move {
        holdfast::report::compute_paged(&session, now(), 100, &progress)
            .await
            .expect("the paged report");
    })
    .await;
    counts_up_to(&paged, operations);
}

holdfast_on_both_backends!(judging_counts_up_to_every_stale_operation);

/// A login that may only read the kept facts judges what is stale for its
/// report alone: it tells the count of the operations it names (every stale
/// one among them), up to that total, and leaves every mark for the owner.
#[tokio::test]
async fn a_read_only_login_tells_its_count_of_the_operations_it_judges() {
    if stores::postgres_skipped().await {
        return;
    }
    let role = stores::LoginRole::create("hf_judging").await;
    let fresh = stores::fresh(Kind::Postgres).await;
    fresh
        .store
        .ingest(parse(PACKET), IngestMode::Quarantine, "test", now())
        .await
        .expect("ingest the demo");
    assert!(
        !report_telling(&fresh).await.is_empty(),
        "kept by the owner"
    );
    let database = fresh.database_name().expect("a database").to_owned();
    fresh
        .execute(&stores::application_grants(&role.name, &database))
        .await
        .expect("the application grants");
    let url = stores::url_for_login(&fresh.url, &role.name);
    let login: Arc<dyn Store> = Arc::new(
        holdfast::store::postgres::PgStore::connect(&url)
            .await
            .expect("connect as the login"),
    );
    for copy in 0..20 {
        login
            .ingest(
                renamed_demo(&format!("R{copy:02}-")),
                IngestMode::Quarantine,
                &role.name,
                now(),
            )
            .await
            .expect("ingest a copy as the login");
    }
    let stale = stale_marks(&fresh).await;
    assert!(stale > 500, "{stale} stale operations");
    let told = told_by(|progress| async move {
        let report = login
            .kept_report(&Scope::Every, now(), &progress)
            .await
            .expect("the login's report");
        assert!(
            report.is_some(),
            "the login's report comes from the kept facts"
        );
    })
    .await;
    let total = told.first().map_or(0, |j| j.total);
    assert!(total >= stale, "{total} named, {stale} stale");
    counts_up_to(&told, total);
    assert_eq!(stale_marks(&fresh).await, stale, "the login wrote no fact");
}
