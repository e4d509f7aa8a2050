//! The small fixture loaded into a store, and reviewer decisions made on it the
//! way a console makes them (through `core::rules::decide`).

use chrono::{DateTime, Utc};
use holdfast::core::clock::parse_instant;
use holdfast::core::ids::OperationId;
use holdfast::core::model::State;
use holdfast::core::rules::{Action, Actor, Rationale, decide};
use holdfast::store::Scope;
use holdfast::store::{Commit, IngestMode, Store};
use holdfast::wire::{Numbered, parse_stream};

use super::stores::{self, Fresh, Kind};

pub const SMALL: &str = include_str!("../fixtures/small.jsonl");

/// The console's clock in every store test.
pub fn now() -> DateTime<Utc> {
    parse_instant("2026-09-05T10:03:00Z").unwrap()
}

pub fn records(text: &str) -> Vec<Numbered> {
    let parsed = parse_stream(text.as_bytes(), &mut |_| {}).unwrap();
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    parsed.records
}

pub fn id(text: &str) -> OperationId {
    OperationId::parse(text).unwrap()
}

/// A fresh store of `kind` holding the small fixture.
pub async fn loaded(kind: Kind) -> Fresh {
    let fresh = stores::fresh(kind).await;
    let report = fresh
        .store
        .ingest(records(SMALL), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    fresh
}

/// The single-user reviewer.
pub fn local() -> Actor {
    reviewer("maya")
}

pub fn reviewer(identity: &str) -> Actor {
    Actor::local(identity, Some("RP03".into()))
}

/// What `actor` may commit for `action` on `op`, decided on what `store` shows now.
pub async fn decided(
    store: &dyn Store,
    op: &str,
    action: &Action,
    actor: &Actor,
    rationale: &str,
) -> Commit {
    let detail = store.detail(&Scope::Every, &id(op)).await.unwrap();
    decide(
        &detail,
        action,
        actor,
        &Rationale::parse(rationale).unwrap(),
        detail.row.version,
        now(),
    )
    .unwrap()
    .commit
}

/// A comment on `op` by the single-user reviewer.
pub async fn comment(store: &dyn Store, op: &str, text: &str) -> Commit {
    decided(store, op, &Action::Comment, &local(), text).await
}

/// F09 resolved to SUCCEEDED by `identity`.
pub async fn resolve_f09(store: &dyn Store, identity: &str) -> Commit {
    decided(
        store,
        "F09",
        &Action::Resolve {
            to: State::Succeeded,
        },
        &reviewer(identity),
        "provider status shows the ticket exactly once",
    )
    .await
}

/// Opens `tool`'s circuit at `at` through the store, as sender `by` that saw
/// three of its attempts time out would (`tests/circuit.rs` tests how a sender
/// gets there; here only that it is open matters).
pub async fn open_circuit(store: &dyn Store, tool: &str, by: &str, at: DateTime<Utc>) {
    use holdfast::core::circuit::{self, Ended, Failure, Failures};
    use holdfast::core::contract::CircuitConfig;
    let config = CircuitConfig {
        failures: 3,
        window_seconds: 60,
        probe_after_seconds: 30,
    };
    let ended = Ended {
        operation: "X01",
        failed: Some(Failure::Timeout),
        recent: Failures {
            timeouts: 3,
            ..Failures::default()
        },
    };
    let open =
        circuit::after_attempt(&config, tool, None, ended, by, at).expect("three failures open it");
    store.move_circuit(open).await.unwrap();
}

/// Puts `tool` at `level` through the store, as a fixture: the gates of a raise
/// are what `tests/autonomy.rs` tests; here only what the level bounds matters.
pub async fn put_at_level(store: &dyn Store, tool: &str, level: holdfast::core::ladder::Level) {
    use holdfast::core::autonomy::{AUTONOMY_LEDGER, LevelChange, SET_ACTION, ToolLevel};
    use holdfast::core::ids::ledger_id;
    use holdfast::core::ladder::Level;
    let from = store
        .autonomy_levels()
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.tool == tool)
        .map_or(Level::Manual, |t| t.level);
    // Set by an owner where the store has grants (verify holds a level change
    // to an owner's decision), else by the local user.
    let by = store
        .grants()
        .await
        .unwrap()
        .into_iter()
        .find(|g| g.role == holdfast::core::model::Role::Owner)
        .map_or_else(|| "fixture".to_owned(), |g| g.identity);
    if level > from {
        settle_open_vetoes(store, tool).await;
        // A raise passes gates A1 and A2 in verify's replay: its tool's latest
        // lookup check before it found the known record, and its latest drill
        // covered every mode with every case passing. The check names no lookup
        // object, so it leaves the tool's lookup as checked or unchecked as it
        // was (`put_checked` checks it).
        let check = holdfast::core::autonomy::LookupCheck {
            tool: tool.into(),
            known: "fixture".into(),
            found: true,
            lookup: "fixture".into(),
            answer: "HTTP 200, found".into(),
            by: by.clone(),
            at: now(),
        };
        let found = store
            .lookup_checks()
            .await
            .unwrap()
            .iter()
            .any(|c| c.tool == tool && c.found);
        if !found {
            store
                .append_ledger_row(check.draft(holdfast::core::model::Role::Local, None))
                .await
                .unwrap();
        }
        let drill = holdfast::core::autonomy::DrillResult {
            tool: tool.into(),
            at: now(),
            cases: 16,
            passed: 16,
            modes: holdfast::core::model::FailureMode::ALL.to_vec(),
            failed: Vec::new(),
            drill_store: "fixture".into(),
            by: by.clone(),
            contract_version: store
                .contracts()
                .await
                .unwrap()
                .into_iter()
                .find(|c| c.tool == tool)
                .map(|c| c.version),
        };
        let draft = drill.draft(holdfast::core::model::Role::Local, None);
        store.record_drill(drill, draft).await.unwrap();
    }
    let change = LevelChange {
        from,
        to: ToolLevel {
            tool: tool.into(),
            level,
            set_by: by.clone(),
            set_at: now(),
            rationale: "test fixture".into(),
        },
        consequences: Vec::new(),
        audit: holdfast::core::audit::AuditDraft {
            operation: ledger_id(AUTONOMY_LEDGER),
            action: SET_ACTION.into(),
            from: None,
            to: None,
            by,
            role: holdfast::core::model::Role::Local,
            policy: None,
            on_behalf_of: None,
            rationale: Some("test fixture".into()),
            evidence: vec![
                format!("tool:{tool}"),
                format!("from:{from}"),
                format!("level:{level}"),
            ],
            at: now(),
        },
    };
    store.set_autonomy(change).await.unwrap();
}

/// Settles, before a raise, every open veto on `tool`'s operations the way a
/// reviewer would (resolved to SUCCEEDED on the fixture's found observation),
/// so that the raise passes gate A3 as `audit verify` replays it: an owner may
/// not raise a tool while a veto on its operations is open. Where the store
/// has grants, the reviewer is one who holds a reviewing role on the
/// operation's tenant (the test grants one); else the local user.
async fn settle_open_vetoes(store: &dyn Store, tool: &str) {
    use holdfast::core::model::Role;
    let dataset = store.dataset(&Scope::Every).await.unwrap();
    let grants = store.grants().await.unwrap();
    let open = holdfast::core::autonomy::open_vetoes(&dataset, tool, now());
    for veto in &open.first {
        let tenant = &dataset
            .operations
            .iter()
            .find(|o| o.id == veto.operation)
            .unwrap()
            .tenant;
        let by = if grants.is_empty() {
            "fixture".to_owned()
        } else {
            grants
                .iter()
                .find(|g| &g.tenant == tenant && matches!(g.role, Role::Reviewer | Role::Approver))
                .unwrap_or_else(|| {
                    panic!(
                        "{} holds an open veto on {tool}: grant a reviewer on {tenant} \
                         so the fixture can settle it before the raise",
                        veto.operation
                    )
                })
                .identity
                .clone()
        };
        let actor = Actor::from_grants(&by, Some("RP03".into()), &grants);
        let commit = decided(
            store,
            veto.operation.as_str(),
            &Action::Resolve {
                to: State::Succeeded,
            },
            &actor,
            "provider status shows the effect exactly once",
        )
        .await;
        store.commit(commit).await.unwrap();
    }
    let left = holdfast::core::autonomy::open_vetoes(
        &store.dataset(&Scope::Every).await.unwrap(),
        tool,
        now(),
    );
    assert_eq!(
        left.total, 0,
        "vetoes a fixture raise cannot settle: {left:?}"
    );
}

/// Records, as a fixture, that `tool`'s current lookup was proven to find a
/// known record (`holdfast lookup check`), so that its level is not capped.
pub async fn put_checked(store: &dyn Store, tool: &str) {
    use holdfast::core::autonomy::{LookupCheck, lookup_fingerprint};
    let contracts = store.contracts().await.unwrap();
    let spec = contracts
        .iter()
        .find(|c| c.tool == tool)
        .and_then(|c| c.status_lookup.spec())
        .expect("a lookup object");
    let check = LookupCheck {
        tool: tool.into(),
        known: "fixture".into(),
        found: true,
        lookup: lookup_fingerprint(spec),
        answer: "HTTP 200, found".into(),
        by: "fixture".into(),
        at: now(),
    };
    store
        .append_ledger_row(check.draft(holdfast::core::model::Role::Local, None))
        .await
        .unwrap();
}
