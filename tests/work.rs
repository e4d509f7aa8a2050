//! The work protocol (DESIGN §9.2) on both backends: sixteen claimers at once,
//! each with its own connections, hand out every piece once; a worker that stops
//! heartbeating loses its lease, the work is reclaimed and executed once, and
//! the late worker's heartbeat and completion are refused (G8); a completion is
//! checked as ingest checks it; tenants and the worker role bound who claims;
//! every step is audited and `audit verify` compares the leases with the chain.

use crate::support;

use std::collections::BTreeSet;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use holdfast::core::access::{GrantOp, GrantRequest, decide_grant};
use holdfast::core::audit::ChainStatus;
use holdfast::core::ladder::Level;
use holdfast::core::model::{Role, State};
use holdfast::core::refusal::Rule;
use holdfast::core::rules::{Actor, Rationale};
use holdfast::store::Scope;
use holdfast::store::{IngestMode, Session, Store};
use holdfast::work::{self, Holder, LeaseStatus, WorkError};
use support::review::{SMALL, id, now, put_at_level, records};
use support::stores::{self, Fresh, Kind};
use tokio::sync::Barrier;

/// The fixture's contract line.
fn contract() -> &'static str {
    SMALL.lines().next().unwrap()
}

/// An operation waiting in APPROVED: work for a worker.
fn approved(op: &str, tenant: &str) -> String {
    format!(
        r#"{{"type":"operation","id":"{op}","tenant":"{tenant}","actor":"svc:relay-desk","tool":"T03","action":"ticket.create","target":"ticket-queue:{op}","payload_hash":"sha256:2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6","risk":"low","owner":"integrations","state":"APPROVED","depends_on":[],"created_at":"2026-09-05T10:00:30Z"}}"#
    )
}

fn fixture(ops: &[(&str, &str)]) -> String {
    let mut lines = vec![contract().to_owned()];
    lines.extend(ops.iter().map(|(op, tenant)| approved(op, tenant)));
    lines.join("\n")
}

async fn loaded(kind: Kind, ops: &[(&str, &str)]) -> Fresh {
    let fresh = stores::fresh(kind).await;
    let report = fresh
        .store
        .ingest(records(&fixture(ops)), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    // Workers claim only work of tools at `automation` (DESIGN §9.4).
    put_at_level(fresh.store.as_ref(), "T03", Level::Automation).await;
    fresh
}

fn at(seconds: i64) -> DateTime<Utc> {
    now() + Duration::seconds(seconds)
}

fn worker_session(store: Arc<dyn Store>) -> Session {
    Session::new(store, Actor::local("svc:worker", Some("RP03".into())))
}

fn holder(op: &str, worker: &str) -> Holder {
    Holder {
        operation: id(op),
        worker: worker.into(),
        generation: None,
    }
}

/// What executing `op` did: one request answered 200, APPROVED → SENT →
/// SUCCEEDED.
fn executed(op: &str, first_line: usize) -> Vec<holdfast::wire::Numbered> {
    let t = "2026-09-05T10:04:00Z";
    let text = format!(
        r#"{{"type":"attempt","id":"{op}-A1","operation":"{op}","seq":1,"kind":"request","layer":"queue","started_at":"{t}","ended_at":"{t}","phase":"response_received","outcome":"ok","http_status":200,"provider_request_id":"req-{op}"}}
{{"type":"transition","operation":"{op}","from":"APPROVED","to":"SENT","by":"svc:executor","role":"system","at":"{t}","reason":"request sent","evidence":["{op}-A1"]}}
{{"type":"transition","operation":"{op}","from":"SENT","to":"SUCCEEDED","by":"svc:executor","role":"system","at":"{t}","reason":"provider answered 200 with the record","evidence":["{op}-A1"]}}"#
    );
    let mut lines = records(&text);
    for (n, line) in lines.iter_mut().enumerate() {
        line.line = first_line + n;
    }
    lines
}

async fn audit_actions(store: &dyn Store, op: &str) -> Vec<String> {
    store
        .audit(1, 100_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.draft.operation.as_str() == op && r.draft.action.starts_with("work-"))
        .map(|r| r.draft.action)
        .collect()
}

async fn intact(store: &dyn Store) {
    let status = store.verify().await.unwrap();
    assert!(matches!(status, ChainStatus::Intact { .. }), "{status:?}");
}

fn refused_with(result: Result<impl std::fmt::Debug, WorkError>, rule: Rule) {
    match result {
        Err(WorkError::Refused(refusal)) => assert_eq!(refusal.rule, rule, "{refusal}"),
        Err(WorkError::NoOperation(hidden)) => assert_eq!(hidden.rule(), Some(rule), "{hidden}"),
        other => panic!("expected a refusal by {rule}, got {other:?}"),
    }
}

async fn sixteen_claimers_hand_out_every_piece_once(kind: Kind) {
    let names: Vec<String> = (1..=48).map(|n| format!("W{n:02}")).collect();
    let ops: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "pinehaven")).collect();
    let fresh = loaded(kind, &ops).await;
    let barrier = Arc::new(Barrier::new(16));
    let mut tasks = Vec::new();
    for n in 0..16 {
        // Each claimer opens the store anew: its own pool and connections.
        let store = fresh.reopen().await.unwrap();
        let barrier = Arc::clone(&barrier);
        tasks.push(tokio::spawn(async move {
            let session = worker_session(store);
            let worker = format!("w{n}");
            barrier.wait().await;
            let mut mine = Vec::new();
            loop {
                let got = work::claim(&session, &worker, Duration::seconds(60), 2, now())
                    .await
                    .unwrap();
                if got.is_empty() {
                    return mine;
                }
                for lease in got {
                    assert_eq!(lease.worker, worker);
                    assert_eq!(lease.generation, 1);
                    mine.push(lease.operation.to_string());
                }
            }
        }));
    }
    let mut handed = Vec::new();
    for task in tasks {
        handed.extend(task.await.unwrap());
    }
    let distinct: BTreeSet<&String> = handed.iter().collect();
    assert_eq!(
        handed.len(),
        names.len(),
        "every piece handed out exactly once"
    );
    assert_eq!(distinct.len(), names.len());
    let claims = fresh
        .store
        .audit(1, 100_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.draft.action == "work-claim")
        .count();
    assert_eq!(claims, names.len(), "one audited claim per piece");
    intact(fresh.store.as_ref()).await;
}

async fn a_lost_lease_is_reclaimed_executed_once_and_the_late_worker_refused(kind: Kind) {
    let fresh = loaded(kind, &[("W01", "pinehaven")]).await;
    let session = worker_session(Arc::clone(&fresh.store));
    let lease = Duration::seconds(30);

    let first = work::claim(&session, "w1", lease, 5, at(0)).await.unwrap();
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].expires_at, at(30));
    let renewed = work::heartbeat(&session, &holder("W01", "w1"), None, at(10))
        .await
        .unwrap();
    assert_eq!(
        renewed.expires_at,
        at(40),
        "a heartbeat extends by the lease's length"
    );
    // w1 stops heartbeating. While its lease lives, nobody else gets the work.
    assert!(
        work::claim(&session, "w2", lease, 5, at(39))
            .await
            .unwrap()
            .is_empty()
    );

    let second = work::claim(&session, "w2", lease, 5, at(41)).await.unwrap();
    assert_eq!(
        second.len(),
        1,
        "the expired lease makes the work claimable"
    );
    assert_eq!((second[0].worker.as_str(), second[0].generation), ("w2", 2));

    refused_with(
        work::heartbeat(&session, &holder("W01", "w1"), None, at(42)).await,
        Rule::G8,
    );
    refused_with(
        work::complete(&session, &holder("W01", "w1"), executed("W01", 1), at(42)).await,
        Rule::G8,
    );
    let detail = fresh.store.detail(&Scope::Every, &id("W01")).await.unwrap();
    assert!(
        detail.attempts.is_empty(),
        "the late worker's records are not taken"
    );
    assert_eq!(detail.row.operation.state, State::Approved);

    // A worker restarted under w2's name cannot act on an older generation.
    let stale = Holder {
        generation: Some(1),
        ..holder("W01", "w2")
    };
    refused_with(work::release(&session, &stale, at(43)).await, Rule::G8);

    let done = work::complete(&session, &holder("W01", "w2"), executed("W01", 1), at(44))
        .await
        .unwrap();
    assert!(
        done.report.rejected.is_empty(),
        "{:?}",
        done.report.rejected
    );
    assert_eq!(
        done.lease.as_ref().map(|l| l.status),
        Some(LeaseStatus::Completed)
    );
    let detail = fresh.store.detail(&Scope::Every, &id("W01")).await.unwrap();
    assert_eq!(detail.row.operation.state, State::Succeeded);
    assert_eq!(detail.attempts.len(), 1, "executed once");

    refused_with(
        work::complete(&session, &holder("W01", "w2"), executed("W01", 1), at(45)).await,
        Rule::G8,
    );
    assert!(
        work::claim(&session, "w3", lease, 5, at(500))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        audit_actions(fresh.store.as_ref(), "W01").await,
        [
            "work-claim",
            "work-heartbeat",
            "work-claim",
            "work-complete"
        ]
    );
    intact(fresh.store.as_ref()).await;
}

async fn a_completion_is_checked_as_ingest_checks_it(kind: Kind) {
    let fresh = loaded(kind, &[("W01", "pinehaven"), ("W02", "pinehaven")]).await;
    let session = worker_session(Arc::clone(&fresh.store));
    work::claim(&session, "w1", Duration::seconds(60), 1, at(0))
        .await
        .unwrap();
    let mut lines = executed("W01", 1);
    lines.extend(executed("W02", 4));
    lines.extend(records(contract()).into_iter().map(|mut n| {
        n.line = 7;
        n
    }));
    let done = work::complete(&session, &holder("W01", "w1"), lines, at(1))
        .await
        .unwrap();
    assert!(done.lease.is_none(), "nothing is taken");
    let refused: Vec<(usize, &str)> = done
        .report
        .rejected
        .iter()
        .map(|e| (e.line, e.field.as_str()))
        .collect();
    assert_eq!(
        refused,
        [
            (4, "operation"),
            (5, "operation"),
            (6, "operation"),
            (7, "type")
        ]
    );
    assert!(
        done.report
            .rejected
            .iter()
            .all(|e| e.reason.starts_with("G8:"))
    );
    // A bad transition is refused by the state machine, as ingest refuses it.
    let mut skipping = executed("W01", 1);
    skipping.remove(1);
    let done = work::complete(&session, &holder("W01", "w1"), skipping, at(2))
        .await
        .unwrap();
    assert!(done.lease.is_none());
    assert!(!done.report.rejected.is_empty());
    let detail = fresh.store.detail(&Scope::Every, &id("W01")).await.unwrap();
    assert!(detail.attempts.is_empty());
    // The lease is still held: the worker completes properly.
    let done = work::complete(&session, &holder("W01", "w1"), executed("W01", 1), at(3))
        .await
        .unwrap();
    assert!(done.lease.is_some(), "{:?}", done.report.rejected);
    intact(fresh.store.as_ref()).await;
}

async fn a_release_makes_work_claimable_at_once(kind: Kind) {
    let fresh = loaded(kind, &[("W01", "pinehaven")]).await;
    let session = worker_session(Arc::clone(&fresh.store));
    work::claim(&session, "w1", Duration::seconds(600), 1, at(0))
        .await
        .unwrap();
    let released = work::release(&session, &holder("W01", "w1"), at(1))
        .await
        .unwrap();
    assert_eq!(released.status, LeaseStatus::Released);
    let again = work::claim(&session, "w2", Duration::seconds(600), 1, at(2))
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].generation, 2);
    refused_with(
        work::heartbeat(&session, &holder("W01", "w1"), None, at(3)).await,
        Rule::G8,
    );
    assert_eq!(
        audit_actions(fresh.store.as_ref(), "W01").await,
        ["work-claim", "work-release", "work-claim"]
    );
    intact(fresh.store.as_ref()).await;
}

async fn grant(store: &dyn Store, by: &str, identity: &str, role: Role, tenant: &str) {
    let request = GrantRequest {
        op: GrantOp::Grant,
        identity: identity.into(),
        role,
        tenant: tenant.into(),
    };
    let rationale = Rationale::parse("granted for the work protocol tests").unwrap();
    let change = decide_grant(
        &store.grants().await.unwrap(),
        by,
        None,
        &request,
        Some(&rationale),
        now(),
    )
    .unwrap()
    .unwrap();
    store.change_grant(change).await.unwrap();
}

async fn claims_need_the_worker_role_and_stay_in_its_tenants(kind: Kind) {
    let fresh = loaded(kind, &[("W01", "pinehaven"), ("W02", "harborline")]).await;
    let store = fresh.store.as_ref();
    grant(store, "maya", "maya", Role::Owner, "pinehaven").await;
    grant(store, "maya", "maya", Role::Owner, "harborline").await;
    grant(store, "maya", "bot", Role::Worker, "pinehaven").await;
    grant(store, "maya", "lee", Role::Reviewer, "harborline").await;
    let grants = store.grants().await.unwrap();
    let bot = Session::new(
        Arc::clone(&fresh.store),
        Actor::from_grants("bot", None, &grants),
    );
    let lee = Session::new(
        Arc::clone(&fresh.store),
        Actor::from_grants("lee", None, &grants),
    );

    refused_with(
        work::claim(&lee, "w-lee", Duration::seconds(60), 5, at(0)).await,
        Rule::G6,
    );
    let got = work::claim(&bot, "w-bot", Duration::seconds(60), 5, at(0))
        .await
        .unwrap();
    let ops: Vec<&str> = got.iter().map(|l| l.operation.as_str()).collect();
    assert_eq!(ops, ["W01"], "harborline's work is outside bot's tenants");
    let rows = store.audit(1, 100).await.unwrap();
    let claim = rows
        .iter()
        .find(|r| r.draft.action == "work-claim")
        .unwrap();
    assert_eq!(
        (claim.draft.by.as_str(), claim.draft.role),
        ("bot", Role::Worker)
    );
    // A lease outside the worker's tenants reads as absent: its operation is
    // hidden (G7), worded as a missing one is, with no hint of the other tenant.
    let hidden = work::heartbeat(&bot, &holder("W02", "w-bot"), None, at(1)).await;
    let text = format!(
        "{:?}",
        hidden.as_ref().map(|_| ()).map_err(ToString::to_string)
    );
    assert!(
        text.contains("no operation W02 in the tenants granted to you (pinehaven)"),
        "{text}"
    );
    refused_with(hidden, Rule::G7);
    intact(store).await;
}

async fn verify_finds_a_lease_changed_behind_the_chain(kind: Kind) {
    let fresh = loaded(kind, &[("W01", "pinehaven")]).await;
    let session = worker_session(Arc::clone(&fresh.store));
    work::claim(&session, "w1", Duration::seconds(60), 1, at(0))
        .await
        .unwrap();
    intact(fresh.store.as_ref()).await;
    fresh
        .execute("UPDATE work_leases SET worker = 'mallory', expires_ms = expires_ms + 3600000")
        .await
        .unwrap();
    match fresh.store.verify().await.unwrap() {
        ChainStatus::Broken { reason, .. } => {
            assert!(reason.contains("lease on W01"), "{reason}")
        }
        other => panic!("the changed lease went unnoticed: {other:?}"),
    }
}

/// Work of a tool below `automation` stays where it is: a person runs it, or an
/// owner raises the tool (rule A4).
async fn work_of_a_tool_below_automation_is_not_handed_out(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let report = fresh
        .store
        .ingest(
            records(&fixture(&[("W01", "pinehaven")])),
            IngestMode::Strict,
            "test",
            now(),
        )
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    let session = worker_session(Arc::clone(&fresh.store));
    for level in [Level::Manual, Level::Native] {
        if level != Level::Manual {
            put_at_level(fresh.store.as_ref(), "T03", level).await;
        }
        let none = work::claim(&session, "w1", Duration::seconds(60), 5, at(0))
            .await
            .unwrap();
        assert!(none.is_empty(), "claimed at {level:?}: {none:?}");
    }
    put_at_level(fresh.store.as_ref(), "T03", Level::Automation).await;
    let got = work::claim(&session, "w1", Duration::seconds(60), 5, at(1))
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    intact(fresh.store.as_ref()).await;
}

/// A completion that reports the work timed out and then, as if a reviewer had
/// authorized it, puts it back into APPROVED: the decision is refused, so the
/// work is never handed out again.
async fn a_completion_cannot_put_work_back_into_approved(kind: Kind) {
    let fresh = loaded(kind, &[("W01", "pinehaven")]).await;
    let session = worker_session(Arc::clone(&fresh.store));
    work::claim(&session, "w1", Duration::seconds(60), 1, at(0))
        .await
        .unwrap();
    let t = "2026-09-05T10:04:00Z";
    let text = format!(
        r#"{{"type":"attempt","id":"W01-A1","operation":"W01","seq":1,"kind":"request","started_at":"{t}","phase":"request_sent","outcome":"timeout"}}
{{"type":"transition","operation":"W01","from":"APPROVED","to":"SENT","by":"svc:executor","role":"system","at":"{t}","evidence":["W01-A1"]}}
{{"type":"transition","operation":"W01","from":"SENT","to":"UNKNOWN","by":"svc:executor","role":"system","at":"2026-09-05T10:04:01Z","evidence":["W01-A1"]}}
{{"type":"transition","operation":"W01","from":"UNKNOWN","to":"APPROVED","by":"rev:ola","role":"reviewer","at":"2026-09-05T10:04:02Z","reason":"retry it please","evidence":[]}}"#
    );
    let done = work::complete(&session, &holder("W01", "w1"), records(&text), at(1))
        .await
        .unwrap();
    assert!(done.lease.is_none(), "nothing is taken");
    assert!(
        done.report.rejected.iter().any(|e| e.line == 4
            && e.reason.starts_with("G6:")
            && e.reason.contains("a decision is a reviewer's")),
        "{:?}",
        done.report.rejected
    );
    // Without the decision the completion holds the work as UNKNOWN, and no
    // claim hands it out again.
    let honest: String = text.lines().take(3).collect::<Vec<_>>().join("\n");
    let done = work::complete(&session, &holder("W01", "w1"), records(&honest), at(2))
        .await
        .unwrap();
    assert!(done.lease.is_some(), "{:?}", done.report.rejected);
    let detail = fresh.store.detail(&Scope::Every, &id("W01")).await.unwrap();
    assert_eq!(detail.row.operation.state.to_string(), "UNKNOWN");
    let again = work::claim(&session, "w2", Duration::seconds(60), 1, at(3))
        .await
        .unwrap();
    assert!(again.is_empty(), "{again:?}");
    intact(fresh.store.as_ref()).await;
}

/// Work under a live lease is reported by its worker only: a plain ingest of
/// the same execution is refused while the lease lives, so it is not done twice.
async fn leased_work_is_reported_by_its_worker_only(kind: Kind) {
    let fresh = loaded(kind, &[("W01", "pinehaven")]).await;
    let session = worker_session(Arc::clone(&fresh.store));
    work::claim(&session, "w1", Duration::seconds(60), 1, at(0))
        .await
        .unwrap();
    let report = fresh
        .store
        .ingest(executed("W01", 1), IngestMode::Strict, "feeder", at(1))
        .await
        .unwrap();
    assert!(
        report
            .rejected
            .iter()
            .any(|e| e.line == 2 && e.reason.starts_with("G8: W01 is work leased to worker w1")),
        "{:?}",
        report.rejected
    );
    let detail = fresh.store.detail(&Scope::Every, &id("W01")).await.unwrap();
    assert_eq!(detail.row.operation.state.to_string(), "APPROVED");
    let done = work::complete(&session, &holder("W01", "w1"), executed("W01", 1), at(2))
        .await
        .unwrap();
    assert!(done.lease.is_some(), "{:?}", done.report.rejected);
    intact(fresh.store.as_ref()).await;
}

/// A lease belongs to the identity that claimed it, not to the worker name: on
/// PostgreSQL the login (whose lease the database itself also holds; see
/// `team_mode`), on SQLite the identity the command acts as. Another identity
/// naming the same worker and generation is refused (G8) to heartbeat,
/// complete or release it, and a claim of its own gets nothing while the lease
/// is live: the work is handed out once.
async fn a_lease_is_the_claimers_whatever_worker_name_another_gives(kind: Kind) {
    let fresh = loaded(kind, &[("W01", "pinehaven")]).await;
    let first = worker_session(Arc::clone(&fresh.store));
    let second = Session::new(
        Arc::clone(&fresh.store),
        Actor::local("svc:other", Some("RP03".into())),
    );
    let got = work::claim(&first, "w1", Duration::seconds(600), 1, at(0))
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].claimed_by, "svc:worker");
    let named = Holder {
        generation: Some(1),
        ..holder("W01", "w1")
    };
    let another = |result: Result<(), WorkError>| match result {
        Err(WorkError::Refused(refusal)) => {
            assert_eq!(refusal.rule, Rule::G8);
            assert!(
                refusal
                    .reason
                    .contains("claimed by svc:worker, not by svc:other"),
                "{refusal:?}"
            );
        }
        other => panic!("another identity moved the lease: {other:?}"),
    };
    another(
        work::heartbeat(&second, &named, None, at(1))
            .await
            .map(drop),
    );
    another(
        work::complete(&second, &named, executed("W01", 1), at(1))
            .await
            .map(drop),
    );
    another(work::release(&second, &named, at(1)).await.map(drop));
    let none = work::claim(&second, "w1", Duration::seconds(600), 1, at(2))
        .await
        .unwrap();
    assert!(none.is_empty(), "handed out twice: {none:?}");
    assert_eq!(
        audit_actions(fresh.store.as_ref(), "W01").await,
        ["work-claim"]
    );
    let done = work::complete(&first, &named, executed("W01", 1), at(3))
        .await
        .unwrap();
    assert!(done.lease.is_some(), "{:?}", done.report.rejected);
    intact(fresh.store.as_ref()).await;
}

/// Work of a tool whose status lookup was never proven to find a known record
/// (`holdfast lookup check`) is not handed out, whatever its level: the tool is
/// capped at `manual` until a check finds one.
async fn work_of_a_tool_with_an_unchecked_lookup_is_not_handed_out(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let t09 = contract().replace(r#""tool":"T03""#, r#""tool":"T09""#).replace(
        r#""status_lookup":true"#,
        r#""status_lookup":{"method":"GET","url":"https://status.example/v1/records/{operation}","fields":{"effect_count":"/count"}}"#,
    );
    let packet = format!(
        "{t09}\n{}",
        approved("W09", "pinehaven").replace(r#""tool":"T03""#, r#""tool":"T09""#)
    );
    let report = fresh
        .store
        .ingest(records(&packet), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    put_at_level(fresh.store.as_ref(), "T09", Level::Automation).await;
    let session = worker_session(Arc::clone(&fresh.store));
    let none = work::claim(&session, "w1", Duration::seconds(60), 5, at(0))
        .await
        .unwrap();
    assert!(none.is_empty(), "claimed while unchecked: {none:?}");
    support::review::put_checked(fresh.store.as_ref(), "T09").await;
    let got = work::claim(&session, "w1", Duration::seconds(60), 5, at(1))
        .await
        .unwrap();
    assert_eq!(got.len(), 1, "checked: handed out");
    intact(fresh.store.as_ref()).await;
}

/// A system clock reads nanoseconds; a store keeps milliseconds. A claim and a
/// heartbeat at such an instant still leave a chain that verifies.
async fn work_at_a_clock_finer_than_a_millisecond_still_verifies(kind: Kind) {
    let fresh = loaded(kind, &[("W01", "pinehaven")]).await;
    let session = worker_session(Arc::clone(&fresh.store));
    let fine = at(0) + Duration::nanoseconds(123_456_789);
    let got = work::claim(&session, "w1", Duration::seconds(60), 1, fine)
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    work::heartbeat(
        &session,
        &holder("W01", "w1"),
        None,
        fine + Duration::nanoseconds(7),
    )
    .await
    .unwrap();
    intact(fresh.store.as_ref()).await;
}

/// Work of a tool whose circuit is open is not handed out (DESIGN §9.5): a
/// worker sends nothing to a failing dependency. An owner's close hands it out.
async fn work_of_a_tool_whose_circuit_is_open_is_not_handed_out(kind: Kind) {
    use holdfast::core::circuit::Position;
    let fresh = stores::fresh(kind).await;
    let with_circuit = contract().trim_end().trim_end_matches('}').to_owned()
        + r#","circuit":{"failures":3,"window_seconds":60,"probe_after_seconds":30}}"#;
    let lines = format!("{with_circuit}\n{}", approved("W01", "pinehaven"));
    let report = fresh
        .store
        .ingest(records(&lines), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    put_at_level(fresh.store.as_ref(), "T03", Level::Automation).await;
    assert!(fresh.store.contracts().await.unwrap()[0].circuit.is_some());
    support::review::open_circuit(fresh.store.as_ref(), "T03", "svc:gateway", at(0)).await;
    let session = worker_session(Arc::clone(&fresh.store));
    // Past the probe delay too: a worker is never the probe.
    for seconds in [1, 120] {
        let none = work::claim(&session, "w1", Duration::seconds(60), 5, at(seconds))
            .await
            .unwrap();
        assert!(none.is_empty(), "claimed with the circuit open: {none:?}");
    }
    let owner = Session::new(
        Arc::clone(&fresh.store),
        Actor::local("maya", Some("RP03".into())),
    );
    let rationale = Rationale::parse("the provider recovered; checked by hand").unwrap();
    holdfast::circuit::close(&owner, "T03", &rationale, at(130))
        .await
        .unwrap()
        .expect("closed");
    assert_eq!(
        fresh
            .store
            .circuit("T03")
            .await
            .unwrap()
            .map(|c| c.position),
        Some(Position::Closed)
    );
    let got = work::claim(&session, "w1", Duration::seconds(60), 5, at(131))
        .await
        .unwrap();
    assert_eq!(got.len(), 1);
    intact(fresh.store.as_ref()).await;
}

holdfast_on_both_backends!(
    work_of_a_tool_whose_circuit_is_open_is_not_handed_out,
    a_lease_is_the_claimers_whatever_worker_name_another_gives,
    work_of_a_tool_with_an_unchecked_lookup_is_not_handed_out,
    work_of_a_tool_below_automation_is_not_handed_out,
    sixteen_claimers_hand_out_every_piece_once,
    a_lost_lease_is_reclaimed_executed_once_and_the_late_worker_refused,
    a_completion_is_checked_as_ingest_checks_it,
    a_release_makes_work_claimable_at_once,
    claims_need_the_worker_role_and_stay_in_its_tenants,
    verify_finds_a_lease_changed_behind_the_chain,
    a_completion_cannot_put_work_back_into_approved,
    leased_work_is_reported_by_its_worker_only,
    work_at_a_clock_finer_than_a_millisecond_still_verifies,
);
