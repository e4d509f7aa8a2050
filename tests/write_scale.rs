//! Writing at scale, on both backends. Streamed ingest: a large file is committed
//! in batches of whole operation histories (the largest batch, not the file, is
//! what memory follows), strict mode still commits nothing when one line anywhere
//! is bad, quarantine keeps exactly the good lines, an operation whose records are
//! far apart is never split, and a review made while a large ingest runs
//! succeeds. Mark-all reads ids only, in scope; a copy pages by key through
//! tables larger than a page. An ingest on PostgreSQL ends with the tables it
//! grew analyzed.

use crate::support;

use std::sync::Arc;

use chrono::{DateTime, Utc};
use holdfast::core::audit::ChainStatus;
use holdfast::core::clock::parse_instant;
use holdfast::core::ids::{OperationId, Sha256};
use holdfast::core::rules::{Action, Actor, Rationale};
use holdfast::ingest::{Source, ingest_in_batches};
use holdfast::store::Scope;
use holdfast::store::{Ingester, OperationFilter, Page, Session, SortOrder, Store};
use support::stores::{self, Kind};

fn now() -> DateTime<Utc> {
    parse_instant("2026-09-05T10:03:00Z").unwrap()
}

const CONTRACT: &str = r#"{"type":"contract","tool":"S01","version":"IC01","action":"record.write","method":"POST","idempotency":{"supported":true,"scope":"tenant","retention_hours":24},"status_lookup":true,"retryable":["http_503"],"compensation":"record.delete","owner":"integrations","max_attempts":3,"budget_seconds":600}"#;

fn operation(id: &str) -> String {
    let payload = Sha256::of(id.as_bytes());
    format!(
        r#"{{"type":"operation","id":"{id}","tenant":"tenant-a","actor":"svc:test","tool":"S01","action":"record.write","target":"record:{id}.invalid","payload_hash":"{payload}","risk":"low","idempotency_key":"k-{id}","business_key":"b-{id}","correlation_id":"c-{id}","owner":"team-a","max_attempts":3,"deadline":"2026-09-05T11:00:00Z","failure_mode":"timeout_unknown","state":"UNKNOWN","next_observation_at":"2026-09-05T10:05:00Z","created_at":"2026-09-05T10:00:00Z"}}"#
    )
}

fn attempt(id: &str) -> String {
    format!(
        r#"{{"type":"attempt","id":"A-{id}","operation":"{id}","seq":1,"kind":"request","layer":"sdk","started_at":"2026-09-05T10:00:01Z","ended_at":"2026-09-05T10:00:31Z","phase":"request_sent","outcome":"timeout","provider_request_id":"prq-{id}"}}"#
    )
}

fn transition(id: &str) -> String {
    format!(
        r#"{{"type":"transition","operation":"{id}","from":"SENT","to":"UNKNOWN","by":"svc:orchestrator","role":"system","at":"2026-09-05T10:00:31Z","reason":"the request timed out after it was sent","evidence":["A-{id}"]}}"#
    )
}

/// A contract and `ops` operations, each with an attempt and a transition.
fn file(ops: usize) -> Vec<String> {
    let mut lines = vec![CONTRACT.to_owned()];
    for n in 0..ops {
        let id = format!("S{n:06}");
        lines.extend([operation(&id), attempt(&id), transition(&id)]);
    }
    lines
}

async fn ingest(
    store: &dyn Store,
    dir: &std::path::Path,
    lines: &[String],
    quarantine: bool,
    batch: usize,
) -> holdfast::ingest::IngestOutcome {
    let path = dir.join("input.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let rejects = dir.join("rejects.jsonl");
    ingest_in_batches(
        store,
        Source::Path(path),
        quarantine.then_some(rejects.as_path()),
        &Ingester::anyone("test"),
        now(),
        batch,
    )
    .await
    .unwrap()
}

async fn operations(store: &dyn Store) -> u64 {
    store.count(&OperationFilter::default()).await.unwrap()
}

async fn a_large_file_commits_in_bounded_batches_of_whole_histories(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let lines = file(1_000);
    let outcome = ingest(fresh.store.as_ref(), dir.path(), &lines, false, 300).await;
    assert!(!outcome.refused(), "{:?}", outcome.rejected);
    assert_eq!(
        outcome.committed,
        vec![
            ("contract".to_owned(), 1),
            ("operation".to_owned(), 1_000),
            ("attempt".to_owned(), 1_000),
            ("transition".to_owned(), 1_000),
        ]
    );
    // The contract alone, then batches of 300 records cut only between
    // operations (at most one operation's three records past the target).
    assert!(outcome.batches >= 10, "{} batches", outcome.batches);
    assert!(
        outcome.largest_batch <= 303,
        "largest batch {}",
        outcome.largest_batch
    );
    assert_eq!(operations(fresh.store.as_ref()).await, 1_000);
    assert!(matches!(
        fresh.store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
}

async fn one_bad_line_at_the_end_and_strict_commits_no_batch(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let mut lines = file(500);
    // A history that breaks the state machine, far past the first batches.
    lines.push(operation("S999999"));
    lines.push(attempt("S999999"));
    lines.push(
        transition("S999999")
            .replace(r#""from":"SENT""#, r#""from":"SUCCEEDED""#)
            .replace(r#""to":"UNKNOWN""#, r#""to":"SENT""#),
    );
    let bad_line = lines.len();
    let outcome = ingest(fresh.store.as_ref(), dir.path(), &lines, false, 100).await;
    assert!(!outcome.committed_any);
    assert!(
        outcome
            .rejected
            .examples
            .iter()
            .any(|e| e.line == bad_line && e.field == "to"),
        "{:?}",
        outcome.rejected
    );
    assert_eq!(fresh.store.head_seq().await.unwrap(), 0);
    assert_eq!(operations(fresh.store.as_ref()).await, 0);

    // With a rejects file the good operations commit and the broken one is
    // written back, its operation and attempt lines with it.
    let outcome = ingest(fresh.store.as_ref(), dir.path(), &lines, true, 100).await;
    assert!(outcome.committed_any);
    assert_eq!(outcome.rejected_lines(), 3, "{:?}", outcome.rejected);
    assert_eq!(operations(fresh.store.as_ref()).await, 500);
    let rejects = std::fs::read_to_string(dir.path().join("rejects.jsonl")).unwrap();
    assert_eq!(rejects.lines().count(), 3);
    assert!(rejects.lines().all(|l| l.contains("S999999")));
}

async fn an_operation_whose_records_are_far_apart_is_never_split(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let mut lines = vec![CONTRACT.to_owned(), operation("S000000")];
    for n in 1..50 {
        let id = format!("S{n:06}");
        lines.extend([operation(&id), attempt(&id), transition(&id)]);
    }
    // S000000's attempt and transition come last: a batch of one record may not
    // commit its operation without them.
    lines.extend([attempt("S000000"), transition("S000000")]);
    let outcome = ingest(fresh.store.as_ref(), dir.path(), &lines, false, 1).await;
    assert!(!outcome.refused(), "{:?}", outcome.rejected);
    assert_eq!(outcome.batches, 2, "the contract, then one batch");
    let detail = fresh
        .store
        .detail(&Scope::Every, &OperationId::parse("S000000").unwrap())
        .await
        .unwrap();
    assert_eq!(detail.attempts.len(), 1);
}

async fn a_review_while_a_large_ingest_runs_succeeds(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let dir = tempfile::tempdir().unwrap();
    // A first operation to review, then a large file ingested by another handle.
    let first = ingest(fresh.store.as_ref(), dir.path(), &file(1), false, 100).await;
    assert!(!first.refused(), "{:?}", first.rejected);
    let big: Vec<String> = file(3_000).into_iter().skip(4).collect();
    let path = dir.path().join("big.jsonl");
    std::fs::write(&path, big.join("\n") + "\n").unwrap();
    let ingesting = fresh.reopen().await.unwrap();
    let head = fresh.store.head_seq().await.unwrap();
    let task = tokio::spawn(async move {
        ingest_in_batches(
            ingesting.as_ref(),
            Source::Path(path),
            None,
            &Ingester::anyone("feed"),
            now(),
            200,
        )
        .await
    });
    // Wait for the first batch to land, then review while the rest goes in.
    while fresh.store.head_seq().await.unwrap() == head && !task.is_finished() {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let session = Session::new(Arc::clone(&fresh.store), Actor::local("maya", None));
    let applied = holdfast::review::apply(
        &session,
        &OperationId::parse("S000000").unwrap(),
        &Action::Comment,
        &Rationale::parse("checked while the feed was ingesting").unwrap(),
        None,
        now(),
    )
    .await;
    assert!(applied.is_ok(), "{:?}", applied.err());
    let outcome = task.await.unwrap().unwrap();
    assert!(!outcome.refused(), "{:?}", outcome.rejected);
    assert_eq!(operations(fresh.store.as_ref()).await, 3_000);
    assert!(matches!(
        fresh.store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
}

async fn mark_all_reads_the_matching_ids_in_scope_and_in_order(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let mut lines = file(30);
    lines.extend(
        file(30)
            .into_iter()
            .skip(1)
            .map(|l| l.replace("S0000", "T0000").replace("tenant-a", "tenant-b")),
    );
    let outcome = ingest(fresh.store.as_ref(), dir.path(), &lines, false, 1_000).await;
    assert!(!outcome.refused(), "{:?}", outcome.rejected);
    let queue = OperationFilter {
        queue: true,
        ..OperationFilter::default()
    };
    let every = Session::new(Arc::clone(&fresh.store), Actor::local("maya", None));
    let ids = every.matching_ids(&queue, SortOrder::Id).await.unwrap();
    assert_eq!(ids.len(), 60);
    assert!(ids.windows(2).all(|w| w[0] < w[1]));
    // The same as paging through the listing.
    let (rows, _) = every
        .list(&queue, SortOrder::Urgency, Page::first(1_000))
        .await
        .unwrap();
    let urgency = every
        .matching_ids(&queue, SortOrder::Urgency)
        .await
        .unwrap();
    assert_eq!(
        urgency,
        rows.iter()
            .map(|r| r.operation.id.clone())
            .collect::<Vec<_>>()
    );
    let scoped = OperationFilter {
        scope: Scope::Tenants(vec!["tenant-b".to_owned()]),
        ..queue
    };
    let ids = fresh
        .store
        .matching_ids(&scoped, SortOrder::Id)
        .await
        .unwrap();
    assert_eq!(ids.len(), 30);
    assert!(ids.iter().all(|id| id.as_str().starts_with('T')));
}

async fn a_copy_pages_by_key_through_tables_larger_than_a_page(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let outcome = ingest(fresh.store.as_ref(), dir.path(), &file(1_200), false, 5_000).await;
    assert!(!outcome.refused(), "{:?}", outcome.rejected);
    let table = holdfast::store::copy::TABLES
        .iter()
        .find(|t| t.name == "operations")
        .unwrap();
    // Page by page after the last key: every row once, in order.
    let mut after = None;
    let mut seen = Vec::new();
    loop {
        let rows = fresh
            .store
            .table_rows(table, after.as_deref(), 500)
            .await
            .unwrap();
        if rows.is_empty() {
            break;
        }
        after = rows.last().map(|row| table.key_of(row));
        seen.extend(rows.into_iter().map(|row| table.key_of(&row)));
    }
    assert_eq!(seen.len(), 1_200);
    assert!(
        seen.windows(2)
            .all(|w| format!("{:?}", w[0]) < format!("{:?}", w[1]))
    );

    let target = stores::sqlite().await;
    let report = target.store.load_from(fresh.store.as_ref()).await.unwrap();
    assert!(report.tables.contains(&("operations", 1_200)), "{report:?}");
    assert_eq!(operations(target.store.as_ref()).await, 1_200);
    assert_eq!(
        target.store.verify().await.unwrap(),
        fresh.store.verify().await.unwrap()
    );
}

async fn a_secret_in_a_late_batch_is_redacted_and_kept_with_its_line_hash(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let dir = tempfile::tempdir().unwrap();
    let mut lines = file(300);
    // The last operation's attempt holds a key: it is redacted on the thread
    // that reads the last batch, and only the pass that writes hashes lines.
    let secret = "sk_live_51H8xYzAbCdEfGhIjKlMnOp";
    let last = lines.len() - 1;
    lines[last - 1] = attempt("S000299").replace(
        r#""provider_request_id":"prq-S000299""#,
        &format!(
            r#""provider_request_id":"prq-S000299","response_excerpt":"charge failed for {secret}""#
        ),
    );
    let sent = lines[last - 1].clone();
    let outcome = ingest(fresh.store.as_ref(), dir.path(), &lines, false, 100).await;
    assert!(outcome.committed_any, "{:?}", outcome.rejected);
    assert!(outcome.batches >= 4, "{} batches", outcome.batches);
    let detail = fresh
        .store
        .detail(&Scope::Every, &OperationId::parse("S000299").unwrap())
        .await
        .unwrap();
    assert_eq!(detail.redactions.len(), 1, "{:?}", detail.redactions);
    let kept = &detail.redactions[0];
    assert_eq!(
        kept.line_sha256.as_ref().map(|h| h.as_str().to_owned()),
        Some(Sha256::of(sent.as_bytes()).as_str().to_owned())
    );
    let excerpt = detail.attempts[0]
        .response_excerpt
        .clone()
        .unwrap_or_default();
    assert!(!excerpt.contains(secret), "{excerpt}");
    assert!(excerpt.contains("‹redacted:"), "{excerpt}");
}

/// On PostgreSQL the tables an ingest grew are analyzed, so the next batch and
/// every read after it are planned for them as they are (a server with
/// autovacuum off never gathers statistics of its own).
async fn an_ingest_ends_with_the_tables_it_grew_analyzed(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let dir = tempfile::tempdir().unwrap();
    // Seven batches of 300 operations: the operations outgrow the floor of
    // 1,000 rows written (`GROWN_TABLES`) with batches to spare, as the
    // server's counts of rows written may lag a batch behind.
    let lines = file(2_000);
    let outcome = ingest(fresh.store.as_ref(), dir.path(), &lines, false, 900).await;
    assert!(!outcome.refused(), "{:?}", outcome.rejected);
    assert!(outcome.batches >= 7, "{} batches", outcome.batches);
    if let Some(store) = &fresh.postgres {
        let unanalyzed: Vec<String> = sqlx::query_scalar(
            "SELECT relname::text FROM pg_class WHERE relnamespace = 'public'::regnamespace \
             AND relname IN ('operations', 'attempts', 'audit', 'wire_transitions') \
             AND reltuples < 0 ORDER BY 1",
        )
        .fetch_all(store.pool())
        .await
        .unwrap();
        assert!(unanalyzed.is_empty(), "never analyzed: {unanalyzed:?}");
    }
}

holdfast_on_both_backends!(
    an_ingest_ends_with_the_tables_it_grew_analyzed,
    mark_all_reads_the_matching_ids_in_scope_and_in_order,
    a_copy_pages_by_key_through_tables_larger_than_a_page,
    a_large_file_commits_in_bounded_batches_of_whole_histories,
    one_bad_line_at_the_end_and_strict_commits_no_batch,
    an_operation_whose_records_are_far_apart_is_never_split,
    a_review_while_a_large_ingest_runs_succeeds,
    a_secret_in_a_late_batch_is_redacted_and_kept_with_its_line_hash,
);
