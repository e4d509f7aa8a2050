//! How far the store's judging has got ([`Progress`]), on both backends: a
//! report after ingests tells a total counted before the first page (every
//! operation marked stale), a count that only grows as pages are judged and
//! ends at that total, and nothing at all once nothing is left to judge.

use crate::support;

use chrono::{DateTime, Utc};
use holdfast::core::clock::parse_instant;
use holdfast::store::{IngestMode, Judging, Progress, Scope};
use support::packets::{PACKET, parse, renamed_demo};
use support::stores::{self, Fresh, Kind};

fn now() -> DateTime<Utc> {
    parse_instant("2026-09-05T12:00:00Z").expect("a test instant")
}

/// How many operations the triggers marked stale.
async fn stale_marks(fresh: &Fresh) -> u64 {
    let sql = "SELECT count(*) FROM metric_stale";
    let n: i64 = match (&fresh.sqlite, &fresh.postgres) {
        (Some(s), _) => sqlx::query_scalar(sql).fetch_one(s.pool()).await,
        (_, Some(p)) => sqlx::query_scalar(sql).fetch_one(p.pool()).await,
        (None, None) => unreachable!("a fresh store has one backend"),
    }
    .expect("count the stale marks");
    u64::try_from(n).expect("a count")
}

/// The kept report at `now`, with every count it told (as a watcher running
/// beside it saw them).
async fn report_telling(fresh: &Fresh) -> Vec<Judging> {
    let progress = Progress::default();
    let mut seen = progress.subscribe();
    let watcher = tokio::spawn(async move {
        let mut told = Vec::new();
        while seen.changed().await.is_ok() {
            told.extend(*seen.borrow_and_update());
        }
        told
    });
    let report = fresh
        .store
        .kept_report(&Scope::Every, now(), &progress)
        .await
        .expect("the kept report");
    assert!(report.is_some(), "the report comes from the kept facts");
    drop(progress);
    watcher.await.expect("the watcher ends with the report")
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

    let told = report_telling(&fresh).await;
    let first = told.first().expect("judging tells how far it has got");
    let last = told.last().expect("a last count");
    assert_eq!(first.total, stale, "the total is every stale operation");
    assert!(first.judged < stale, "told before the last page: {told:?}");
    assert_eq!((last.judged, last.total), (stale, stale), "{told:?}");
    assert!(
        told.windows(2)
            .all(|w| w[0].judged <= w[1].judged && w[1].total == stale),
        "the count only grows, the total stays: {told:?}"
    );
    assert_eq!(stale_marks(&fresh).await, 0, "every mark cleared");

    let again = report_telling(&fresh).await;
    assert!(
        again.is_empty(),
        "nothing to judge tells nothing: {again:?}"
    );
}

holdfast_on_both_backends!(judging_counts_up_to_every_stale_operation);
