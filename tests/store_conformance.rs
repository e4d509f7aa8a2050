//! Store behaviour every backend must share: ingest idempotency and refusals, the
//! queue, details, optimistic commits and the audit chain.

mod support;

use chrono::{DateTime, Utc};
use holdfast::core::audit::ChainStatus;
use holdfast::core::clock::parse_instant;
use holdfast::core::ids::OperationId;
use holdfast::core::model::{Role, State};
use holdfast::core::rules::{Action, Actor, Rationale, decide};
use holdfast::store::{IngestMode, OperationFilter, Page, SortOrder, StoreError};
use holdfast::wire::{Numbered, parse_stream};

const SMALL: &str = include_str!("fixtures/small.jsonl");

fn now() -> DateTime<Utc> {
    parse_instant("2026-09-05T10:03:00Z").unwrap()
}

fn records(text: &str) -> Vec<Numbered> {
    let parsed = parse_stream(text.as_bytes(), &mut |_| {}).unwrap();
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    parsed.records
}

fn id(text: &str) -> OperationId {
    OperationId::parse(text).unwrap()
}

fn queue() -> OperationFilter {
    OperationFilter {
        queue: true,
        ..OperationFilter::default()
    }
}

async fn loaded() -> support::stores::Fresh {
    let fresh = support::stores::sqlite().await;
    let report = fresh
        .store
        .ingest(records(SMALL), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    fresh
}

fn local() -> Actor {
    Actor::local("maya", Some("RP03".into()))
}

#[tokio::test]
async fn ingest_commits_every_record_and_the_queue_shows_holds_and_their_dependents() {
    let fresh = support::stores::sqlite().await;
    let store = fresh.store.as_ref();
    let report = store
        .ingest(records(SMALL), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    let committed: u64 = report.committed.iter().map(|(_, n)| n).sum();
    assert_eq!(committed, 8);
    let (rows, total) = store
        .list(
            &queue(),
            SortOrder::Urgency,
            Page {
                offset: 0,
                limit: 50,
            },
            now(),
        )
        .await
        .unwrap();
    assert_eq!(total, 2);
    assert_eq!(rows[0].operation.id.as_str(), "F09");
    assert_eq!(rows[0].operation.state, State::Unknown);
    assert_eq!(rows[0].attempts_used, 1);
    assert_eq!(rows[0].max_attempts, Some(3));
    assert_eq!(rows[1].operation.id.as_str(), "F10");
    assert_eq!(rows[1].held_dependencies, vec![id("F09")]);

    let counts = store.counts(&queue(), now()).await.unwrap();
    assert_eq!(
        counts.overdue, 1,
        "F09's next observation 10:02 is before 10:03"
    );
    assert_eq!(counts.held_by_dependency, 1);

    let detail = store.detail(&id("F09")).await.unwrap();
    assert_eq!(detail.attempts.len(), 1);
    assert_eq!(detail.observations.len(), 1);
    assert!(detail.expectation.is_some());
    let actions: Vec<&str> = detail
        .audit
        .iter()
        .map(|r| r.draft.action.as_str())
        .collect();
    assert_eq!(actions, ["ingest", "transition", "transition"]);
    assert_eq!(detail.audit[0].draft.to, Some(State::Approved));
    assert_eq!(detail.row.version, 3);
    assert!(matches!(
        store.verify().await.unwrap(),
        ChainStatus::Intact { rows: 4, .. }
    ));
}

#[tokio::test]
async fn the_same_records_twice_are_a_no_op() {
    let fresh = loaded().await;
    let store = fresh.store.as_ref();
    let head = store.head_seq().await.unwrap();
    let report = store
        .ingest(records(SMALL), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert!(report.committed.is_empty());
    assert_eq!(report.unchanged, 8);
    assert!(report.rejected.is_empty());
    assert_eq!(store.head_seq().await.unwrap(), head);
}

#[tokio::test]
async fn the_same_id_with_other_content_is_refused_and_nothing_is_committed() {
    let fresh = loaded().await;
    let store = fresh.store.as_ref();
    let changed = SMALL.replace("ticket-queue:7", "ticket-queue:9");
    let extra = changed.replace("\"id\":\"A017\"", "\"id\":\"A099\"");
    let report = store
        .ingest(records(&extra), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert_eq!(report.rejected.len(), 1, "{:?}", report.rejected);
    assert_eq!(report.rejected[0].line, 2);
    assert_eq!(report.rejected[0].field, "id");
    assert!(report.rejected[0].reason.contains("different content"));
    assert!(report.committed.is_empty());
    assert!(store.detail(&id("F09")).await.unwrap().attempts.len() == 1);
}

#[tokio::test]
async fn unknown_references_are_refused_by_line_and_quarantine_keeps_the_good_lines() {
    let fresh = support::stores::sqlite().await;
    let store = fresh.store.as_ref();
    let text = SMALL.replace(
        "\"id\":\"O05\",\"operation\":\"F09\"",
        "\"id\":\"O05\",\"operation\":\"F99\"",
    );
    let strict = store
        .ingest(records(&text), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert_eq!(strict.rejected.len(), 1);
    assert_eq!(
        (strict.rejected[0].line, strict.rejected[0].field.as_str()),
        (5, "operation")
    );
    assert_eq!(store.head_seq().await.unwrap(), 0, "strict commits nothing");

    let kept = store
        .ingest(records(&text), IngestMode::Quarantine, "test", now())
        .await
        .unwrap();
    let committed: u64 = kept.committed.iter().map(|(_, n)| n).sum();
    assert_eq!(committed, 7);
    assert!(
        store
            .detail(&id("F09"))
            .await
            .unwrap()
            .observations
            .is_empty()
    );
}

#[tokio::test]
async fn transitions_pass_the_state_machine_and_must_end_in_the_declared_state() {
    let fresh = support::stores::sqlite().await;
    let store = fresh.store.as_ref();
    let skipped = SMALL.replace(
        "\"from\":\"SENT\",\"to\":\"UNKNOWN\"",
        "\"from\":\"SENT\",\"to\":\"PLANNED\"",
    );
    let report = store
        .ingest(records(&skipped), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    let line7: Vec<_> = report.rejected.iter().filter(|e| e.line == 7).collect();
    assert!(
        line7
            .iter()
            .any(|e| e.field == "to" && e.reason.starts_with("G1")),
        "{:?}",
        report.rejected
    );
    let cascade = report
        .rejected
        .iter()
        .any(|e| e.line == 4 && e.field == "operation");
    assert!(
        cascade,
        "the attempt of a refused operation is refused too: {:?}",
        report.rejected
    );
    assert_eq!(store.head_seq().await.unwrap(), 0);
}

#[tokio::test]
async fn a_stale_version_is_refused_with_who_changed_it() {
    let fresh = loaded().await;
    let store = fresh.store.as_ref();
    let detail = store.detail(&id("F09")).await.unwrap();
    let rationale = Rationale::parse("provider status shows the ticket exactly once").unwrap();
    let effect = decide(
        &detail,
        &Action::Resolve {
            to: State::Succeeded,
        },
        &local(),
        &rationale,
        detail.row.version,
        now(),
    )
    .unwrap();
    let row = store.commit(effect.commit.clone()).await.unwrap();
    assert_eq!(row.draft.to, Some(State::Succeeded));
    let again = store.commit(effect.commit).await.unwrap_err();
    match again {
        StoreError::Conflict {
            by,
            current,
            expected,
            ..
        } => {
            assert_eq!(by, "maya");
            assert_eq!(current, expected + 1);
        }
        other => panic!("expected a conflict, got {other}"),
    }
    let after = store.detail(&id("F09")).await.unwrap();
    assert_eq!(after.row.operation.state, State::Succeeded);
    let (rows, _) = store
        .list(
            &queue(),
            SortOrder::Urgency,
            Page {
                offset: 0,
                limit: 50,
            },
            now(),
        )
        .await
        .unwrap();
    assert!(rows.is_empty(), "F10 is no longer held by its dependency");
    assert!(matches!(
        store.verify().await.unwrap(),
        ChainStatus::Intact { rows: 5, .. }
    ));
}

#[tokio::test]
async fn search_finds_targets_keys_and_provider_ids() {
    let fresh = loaded().await;
    let store = fresh.store.as_ref();
    for (needle, expected) in [
        ("queue:8", "F10"),
        ("CASE-4411", "F09"),
        ("k-f09", "F09"),
        ("50%", ""),
    ] {
        let filter = OperationFilter {
            search: Some(needle.into()),
            ..OperationFilter::default()
        };
        let (rows, _) = store
            .list(
                &filter,
                SortOrder::Id,
                Page {
                    offset: 0,
                    limit: 10,
                },
                now(),
            )
            .await
            .unwrap();
        let ids: Vec<&str> = rows.iter().map(|r| r.operation.id.as_str()).collect();
        let want: Vec<&str> = if expected.is_empty() {
            vec![]
        } else {
            vec![expected]
        };
        assert_eq!(ids, want, "search {needle}");
    }
    let hidden = OperationFilter {
        visible_tenants: Some(vec!["other".into()]),
        ..OperationFilter::default()
    };
    let (rows, total) = store
        .list(
            &hidden,
            SortOrder::Id,
            Page {
                offset: 0,
                limit: 10,
            },
            now(),
        )
        .await
        .unwrap();
    assert!(rows.is_empty() && total == 0);
}

#[tokio::test]
async fn the_audit_log_refuses_edits_and_verify_names_a_row_changed_behind_its_back() {
    let fresh = loaded().await;
    let pool = fresh.sqlite.as_ref().unwrap().pool().clone();
    let refused = sqlx::query("UPDATE audit SET by_identity = 'mallory' WHERE seq = 2")
        .execute(&pool)
        .await;
    assert!(refused.is_err(), "the trigger refuses UPDATE");
    let refused = sqlx::query("DELETE FROM audit WHERE seq = 2")
        .execute(&pool)
        .await;
    assert!(refused.is_err(), "the trigger refuses DELETE");

    sqlx::query("DROP TRIGGER audit_no_update")
        .execute(&pool)
        .await
        .unwrap();
    sqlx::query("UPDATE audit SET rationale = 'nothing happened' WHERE seq = 3")
        .execute(&pool)
        .await
        .unwrap();
    match fresh.store.verify().await.unwrap() {
        ChainStatus::Broken { seq, .. } => assert_eq!(seq, 3),
        other => panic!("expected a break, got {other:?}"),
    }
}

#[tokio::test]
async fn a_store_from_a_newer_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    let store = holdfast::store::sqlite::SqliteStore::open(&path)
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
         VALUES (99990101000000, 'future', 1, x'00', 0)",
    )
    .execute(store.pool())
    .await
    .unwrap();
    store.pool().close().await;
    let error = holdfast::store::sqlite::SqliteStore::open(&path)
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            StoreError::TooNew {
                found: 99990101000000,
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("newer holdfast"));
}

#[tokio::test]
async fn grants_commit_with_their_audit_row_and_refuse_a_stale_basis() {
    use holdfast::core::access::{GrantOp, GrantRequest, LEDGER, decide_grant};
    let fresh = loaded().await;
    let store = fresh.store.as_ref();
    assert!(store.grants().await.unwrap().is_empty(), "single-user mode");
    let head = store.head_seq().await.unwrap();
    let request = |op, identity: &str, role| GrantRequest {
        op,
        identity: identity.into(),
        role,
        tenant: "pinehaven".into(),
    };
    let first = decide_grant(
        &[],
        "maya",
        Some("RP03".into()),
        &request(GrantOp::Grant, "maya", Role::Owner),
        None,
        now(),
    )
    .unwrap()
    .unwrap();
    let row = store.change_grant(first.clone()).await.unwrap();
    assert_eq!(row.seq, head + 1);
    assert_eq!(row.draft.operation.as_str(), LEDGER);
    assert_eq!(row.draft.action, "grant");
    assert_eq!(row.draft.role, Role::Local);
    assert_eq!(
        row.draft.evidence,
        ["identity:maya", "role:owner", "tenant:pinehaven"]
    );
    let grants = store.grants().await.unwrap();
    assert_eq!(grants.len(), 1);
    assert_eq!(
        (
            grants[0].identity.as_str(),
            grants[0].role,
            grants[0].granted_at
        ),
        ("maya", Role::Owner, now())
    );

    let stale = store.change_grant(first).await.unwrap_err();
    assert!(matches!(stale, StoreError::GrantsChanged), "{stale}");

    let second = decide_grant(
        &grants,
        "maya",
        None,
        &request(GrantOp::Grant, "bo", Role::Approver),
        None,
        now(),
    )
    .unwrap()
    .unwrap();
    store.change_grant(second).await.unwrap();
    let grants = store.grants().await.unwrap();
    let revoke = decide_grant(
        &grants,
        "maya",
        None,
        &request(GrantOp::Revoke, "bo", Role::Approver),
        None,
        now(),
    )
    .unwrap()
    .unwrap();
    let row = store.change_grant(revoke).await.unwrap();
    assert_eq!(row.draft.action, "revoke");
    assert_eq!(store.grants().await.unwrap().len(), 1);
    assert!(matches!(
        store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
    assert!(
        store.detail(&id("F09")).await.unwrap().audit.len() == 3,
        "grant rows belong to no operation"
    );
}

#[tokio::test]
async fn ingest_refuses_the_reserved_id_prefix() {
    let fresh = support::stores::sqlite().await;
    let text = SMALL.replace("\"id\":\"F10\"", "\"id\":\"holdfast:grants\"");
    let report = fresh
        .store
        .ingest(records(&text), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert!(
        report
            .rejected
            .iter()
            .any(|e| e.line == 3 && e.field == "id" && e.reason.contains("reserved")),
        "{:?}",
        report.rejected
    );
    assert_eq!(fresh.store.head_seq().await.unwrap(), 0);
}
