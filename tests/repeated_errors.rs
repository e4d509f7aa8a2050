//! Repeated errors (the report's and the metrics tab's review of failed and held
//! operations by owner × root-cause layer × tool) on both backends: the demo
//! packet's groups pinned, the kept facts equal to the report judged page by
//! page, the windows moving with the clock, and a reviewer's `classify` moving
//! an operation from one group to another.

use crate::support;

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use holdfast::core::cause::RootCause;
use holdfast::core::clock::parse_instant;
use holdfast::core::ids::OperationId;
use holdfast::core::metrics::Report;
use holdfast::core::model::State;
use holdfast::core::rules::{Action, Rationale, decide};
use holdfast::store::{IngestMode, Scope, Store};
use support::cli::Cli;
use support::packets::{PACKET, parse};
use support::stores::{self, Kind};

fn ingested() -> DateTime<Utc> {
    parse_instant("2026-09-05T12:00:00Z").expect("a test instant")
}

type Row = (String, String, String, u32, u32, u32, String);

/// The groups as (owner, layer, tool, last day, last week, all, newest).
fn groups(report: &Report) -> Vec<Row> {
    report
        .operational
        .repeated
        .groups
        .iter()
        .map(|g| {
            (
                g.owner.clone(),
                g.layer.clone(),
                g.tool.clone(),
                g.last_day,
                g.last_week,
                g.total,
                g.newest.as_str().to_owned(),
            )
        })
        .collect()
}

fn rows(pinned: &[(&str, &str, &str, u32, u32, u32, &str)]) -> Vec<Row> {
    pinned
        .iter()
        .map(|(o, l, t, d, w, a, n)| {
            (
                (*o).into(),
                (*l).into(),
                (*t).into(),
                *d,
                *w,
                *a,
                (*n).into(),
            )
        })
        .collect()
}

/// The demo packet's failed and held operations at the instant it is ingested
/// at, most frequent first (the layers are `tests/root_causes.rs`'s).
const DEMO: &[(&str, &str, &str, u32, u32, u32, &str)] = &[
    ("integrations", "argument_generation", "T03", 2, 2, 2, "F26"),
    ("fulfilment", "unclassified", "T05", 1, 1, 1, "F23"),
    ("integrations", "integration", "T03", 1, 1, 1, "F28"),
    ("comms", "unclassified", "T04", 1, 1, 1, "F32"),
    ("crm", "unclassified", "T01", 1, 1, 1, "F30"),
    ("integrations", "unclassified", "T03", 1, 1, 1, "F09"),
    ("billing", "provider", "T06", 1, 1, 1, "F15"),
    ("comms", "provider", "T04", 1, 1, 1, "F14"),
    ("billing", "argument_generation", "T06", 1, 1, 1, "F08"),
    ("crm", "authorization", "T02", 1, 1, 1, "F02"),
    ("crm", "unclassified", "T02", 1, 1, 1, "F07"),
    ("crm", "argument_generation", "T02", 1, 1, 1, "F06"),
    ("identity", "authorization", "T02", 1, 1, 1, "F01"),
    ("billing", "integration", "T06", 1, 1, 1, "F27"),
];

/// The report from the kept facts at `now`, checked against the report judged
/// page by page (three operations a page, so groups fold across pages).
async fn report_at(store: &Arc<dyn Store>, now: DateTime<Utc>) -> Report {
    let session = stores::session_in(store, &Scope::Every);
    let kept = holdfast::report::compute_kept(&session, now, &Default::default())
        .await
        .expect("kept report");
    let paged = holdfast::report::compute_in(&session, now, 3)
        .await
        .expect("paged report");
    assert_eq!(
        kept.operational.repeated, paged.operational.repeated,
        "at {now}: the kept groups differ from the paged ones"
    );
    assert_eq!(kept, paged, "at {now}: the kept report differs");
    kept
}

async fn demo_groups(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let store = &fresh.store;
    store
        .ingest(parse(PACKET), IngestMode::Quarantine, "test", ingested())
        .await
        .expect("ingest");
    let now = ingested();
    let report = report_at(store, now).await;
    assert_eq!(groups(&report), rows(DEMO));
    let counted: u32 = report
        .operational
        .repeated
        .groups
        .iter()
        .map(|g| g.total)
        .sum();
    let failed_or_held: u32 = report
        .operational
        .by_state
        .iter()
        .filter(|(s, _)| s.is_held() || *s == State::Failed)
        .map(|(_, n)| n)
        .sum();
    assert_eq!(counted, failed_or_held);

    // Two days on, nothing entered its state in the last day; eight days on,
    // nothing in the last week either, and the order falls back to all, then
    // the newest.
    let later = report_at(store, now + Duration::days(2)).await;
    for g in &later.operational.repeated.groups {
        assert_eq!((g.last_day, g.last_week), (0, g.total), "{g:?}");
    }
    let much_later = report_at(store, now + Duration::days(8)).await;
    for g in &much_later.operational.repeated.groups {
        assert_eq!((g.last_day, g.last_week), (0, 0), "{g:?}");
    }
    assert_eq!(groups(&much_later).len(), DEMO.len());

    // A reviewer classifies F09: it leaves the unclassified group of T03 for
    // the provider's, and the kept facts follow the write.
    let id = OperationId::parse("F09").expect("an id");
    let detail = store.detail(&Scope::Every, &id).await.expect("F09");
    let decision = decide(
        &detail,
        &Action::Classify {
            layer: RootCause::Provider,
        },
        &support::review::local(),
        &Rationale::parse("the status endpoint answered 503 throughout").expect("a rationale"),
        detail.row.version,
        now,
    )
    .expect("classify is allowed on a held operation");
    store.commit(decision.commit).await.expect("commit");
    let after = groups(&report_at(store, now).await);
    let row = |owner: &str, layer: &str, tool: &str| {
        after
            .iter()
            .find(|r| (r.0.as_str(), r.1.as_str(), r.2.as_str()) == (owner, layer, tool))
            .cloned()
    };
    assert_eq!(row("integrations", "unclassified", "T03"), None);
    assert_eq!(
        row("integrations", "provider", "T03"),
        Some(rows(&[("integrations", "provider", "T03", 1, 1, 1, "F09")])[0].clone())
    );
    assert_eq!(after.len(), DEMO.len());
}

#[tokio::test]
async fn the_demo_s_repeated_errors_on_sqlite() {
    demo_groups(Kind::Sqlite).await;
}

#[tokio::test]
async fn the_demo_s_repeated_errors_on_postgres() {
    if stores::postgres_skipped().await {
        return;
    }
    demo_groups(Kind::Postgres).await;
}

#[test]
fn report_prints_the_repeated_errors_and_its_json_carries_them() {
    let cli = Cli::demo();
    let text = cli
        .run_at("2026-09-05T12:00:00Z", "auditor", &["report"])
        .expect_code(0)
        .stdout;
    let section = text
        .split("REPEATED ERRORS")
        .nth(1)
        .expect("a repeated errors section");
    let lines: Vec<&str> = section.lines().skip(1).collect();
    assert!(
        lines[0].contains("OWNER") && lines[0].contains("ROOT CAUSE") && lines[0].contains("7D"),
        "{section}"
    );
    let first: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(
        first[..7],
        [
            "integrations",
            "argument_generation",
            "T03",
            "2",
            "2",
            "2",
            "F26"
        ],
        "{section}"
    );
    assert_eq!(
        lines.iter().filter(|l| !l.trim().is_empty()).count(),
        1 + DEMO.len()
    );

    let json = cli
        .run_at("2026-09-05T12:00:00Z", "auditor", &["report", "--json"])
        .expect_code(0)
        .json();
    let listed = json["operational"]["repeated"]["groups"]
        .as_array()
        .expect("groups");
    assert_eq!(listed.len(), DEMO.len());
    assert_eq!(listed[0]["newest"], "F26");
    assert_eq!(listed[0]["layer"], "argument_generation");
}
