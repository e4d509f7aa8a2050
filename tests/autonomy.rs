//! Autonomy per tool (DESIGN §9.4) on both backends: a raise refused without a
//! status lookup (A1), without a full passing drill (A2) and with an open veto
//! (A3), allowed once all three hold; lowering always allowed; owners only once
//! grants exist; every change audited and `audit verify` comparing the stored
//! levels and drill results with the chain. Then what the level bounds: the due
//! lookups `observe --watch` asks for, and an agent identity's proposals.

use crate::support;

use std::sync::Arc;

use holdfast::autonomy::{Snapshot, record_drill, record_lookup_check, set_level};
use holdfast::core::access::{GrantOp, GrantRequest};
use holdfast::core::audit::ChainStatus;
use holdfast::core::autonomy::{DrillResult, LevelRequest, LookupCheck, lookup_fingerprint};
use holdfast::core::ladder::Level;
use holdfast::core::model::{FailureMode, Role};
use holdfast::core::refusal::Rule;
use holdfast::core::rules::{Action, Actor, Rationale, decide};
use holdfast::review::ReviewError;
use holdfast::store::{IngestMode, Scope, Session, Store};
use support::review::{id, loaded, local, now, records};
use support::stores::{Fresh, Kind};

/// T06: a contract with a §9.1 lookup; F60 held with a failing veto expectation
/// (an open veto), F62 held and due for a lookup, without one.
const T06: &str = r#"{"type":"contract","tool":"T06","version":"IC09","action":"refund.issue","method":"POST","idempotency":{"supported":true,"scope":"account","retention_hours":24},"status_lookup":{"method":"GET","url":"http://127.0.0.1:9/v2/refunds/{business_key}","timeout_ms":2000,"lag_seconds":0,"fields":{"target":"/target","effect_count":"/count"}},"retryable":["http_503"],"compensation":null,"owner":"payments","max_attempts":3,"budget_seconds":900}
{"type":"operation","id":"F60","tenant":"pinehaven","actor":"svc:relay-desk","tool":"T06","action":"refund.issue","target":"refund:60","payload_hash":"sha256:ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb","risk":"low","business_key":"b-60","owner":"payments","state":"UNKNOWN","failure_mode":"timeout_unknown","next_observation_at":"2026-09-05T10:02:00Z","deadline":"2026-09-05T11:00:00Z","created_at":"2026-09-05T10:00:00Z"}
{"type":"expectation","operation":"F60","expected_state":"SUCCEEDED","requires_reconciliation":true,"duplicate_risk":false,"prohibited":["retry_before_reconcile"],"veto":true}
{"type":"operation","id":"F62","tenant":"pinehaven","actor":"svc:relay-desk","tool":"T06","action":"refund.issue","target":"refund:62","payload_hash":"sha256:2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6","risk":"low","business_key":"b-62","owner":"payments","state":"UNKNOWN","failure_mode":"timeout_unknown","next_observation_at":"2026-09-05T10:02:00Z","deadline":"2026-09-05T11:00:00Z","created_at":"2026-09-05T10:00:00Z"}
"#;

async fn with_t06(kind: Kind) -> Fresh {
    let fresh = loaded(kind).await;
    let report = fresh
        .store
        .ingest(records(T06), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    fresh
}

fn rationale() -> Rationale {
    Rationale::parse("the gates hold; the owner decides").unwrap()
}

/// `actor`'s session on `store`.
fn as_session(store: &Arc<dyn Store>, actor: &Actor) -> Session {
    Session::new(Arc::clone(store), actor.clone())
}

async fn set(
    store: &Arc<dyn Store>,
    actor: &Actor,
    tool: &str,
    level: Level,
) -> Result<bool, Rule> {
    let request = LevelRequest {
        tool: tool.into(),
        level,
    };
    match set_level(&as_session(store, actor), &request, &rationale(), now()).await {
        Ok(changed) => Ok(changed.is_some()),
        Err(ReviewError::Refused(r)) => Err(r.rule),
        Err(other) => panic!("not a refusal: {other}"),
    }
}

fn drill(tool: &str, passed: u32, modes: &[FailureMode]) -> DrillResult {
    DrillResult {
        tool: tool.into(),
        at: now(),
        cases: 16,
        passed,
        modes: modes.to_vec(),
        failed: (passed..16).map(|n| format!("C{n}")).collect(),
        drill_store: "sqlite:/tmp/drill.db".into(),
        by: String::new(),
        contract_version: None,
    }
}

/// Records `result` as `actor`, who may.
async fn recorded(store: &Arc<dyn Store>, actor: &Actor, mut result: DrillResult) {
    // Run under the tool's contract as stored, as `drill --tool` runs.
    result.contract_version = store
        .contracts()
        .await
        .unwrap()
        .into_iter()
        .find(|c| c.tool == result.tool)
        .map(|c| c.version);
    record_drill(&as_session(store, actor), result, now())
        .await
        .unwrap();
}

/// Records a check of `tool`'s current lookup that `found` (or not) F62's
/// record, as `actor`.
async fn check(store: &Arc<dyn Store>, actor: &Actor, tool: &str, found: bool) {
    let contracts = store.contracts().await.unwrap();
    let spec = contracts
        .iter()
        .find(|c| c.tool == tool)
        .and_then(|c| c.status_lookup.spec())
        .expect("a lookup object");
    let result = LookupCheck {
        tool: tool.into(),
        known: "F62".into(),
        found,
        lookup: lookup_fingerprint(spec),
        answer: if found {
            "HTTP 200, found"
        } else {
            "HTTP 404, unclear_not_found"
        }
        .into(),
        by: String::new(),
        at: now(),
    };
    record_lookup_check(&as_session(store, actor), result, now())
        .await
        .unwrap();
}

/// F60's owner accepts it with a manual repair: its veto is no longer open.
async fn settle_f60(store: &dyn Store, owner: &Actor) {
    let detail = store.detail(&Scope::Every, &id("F60")).await.unwrap();
    let accept = Action::Accept {
        repair_ref: "INC-4411".into(),
    };
    let effect = decide(
        &detail,
        &accept,
        owner,
        &rationale(),
        detail.row.version,
        now(),
    )
    .unwrap();
    store.commit(effect.commit).await.unwrap();
}

async fn intact(store: &dyn Store) {
    let status = store.verify().await.unwrap();
    assert!(matches!(status, ChainStatus::Intact { .. }), "{status:?}");
}

async fn raising_passes_three_gates_and_lowering_none(kind: Kind) {
    let fresh = with_t06(kind).await;
    let store = &fresh.store;
    let maya = local();
    // T03's lookup is done by hand: no raise (A1).
    assert_eq!(set(store, &maya, "T03", Level::Native).await, Err(Rule::A1));
    assert_eq!(
        set(store, &maya, "NOPE", Level::Native).await,
        Err(Rule::A1)
    );
    // T06 has a lookup, never proven to find a known record (A1), then one
    // that did not find it (A1), then one that did.
    assert_eq!(set(store, &maya, "T06", Level::Native).await, Err(Rule::A1));
    check(store, &maya, "T06", false).await;
    assert_eq!(set(store, &maya, "T06", Level::Native).await, Err(Rule::A1));
    check(store, &maya, "T06", true).await;
    // No drill, then drills that do not count (A2).
    assert_eq!(set(store, &maya, "T06", Level::Native).await, Err(Rule::A2));
    recorded(store, &maya, drill("T06", 15, FailureMode::ALL)).await;
    assert_eq!(set(store, &maya, "T06", Level::Native).await, Err(Rule::A2));
    recorded(store, &maya, drill("T06", 16, &FailureMode::ALL[..7])).await;
    assert_eq!(set(store, &maya, "T06", Level::Agent).await, Err(Rule::A2));
    // A full passing drill of another tool does not count for T06.
    recorded(store, &maya, drill("T03", 16, FailureMode::ALL)).await;
    assert_eq!(set(store, &maya, "T06", Level::Native).await, Err(Rule::A2));
    recorded(store, &maya, drill("T06", 16, FailureMode::ALL)).await;
    // F60's veto expectation fails while it is held: an open veto (A3).
    let snapshot = Snapshot::read(&as_session(store, &local()), now())
        .await
        .unwrap();
    let vetoes = snapshot.open_vetoes("T06");
    assert_eq!(vetoes.total, 1, "{vetoes:?}");
    assert_eq!(vetoes.first.len(), 1, "{vetoes:?}");
    assert_eq!(vetoes.first[0].operation, id("F60"));
    assert_eq!(set(store, &maya, "T06", Level::Native).await, Err(Rule::A3));
    // The owner settles F60 (accepted with a manual repair): the veto closes.
    settle_f60(store.as_ref(), &maya).await;
    assert_eq!(set(store, &maya, "T06", Level::Native).await, Ok(true));
    assert_eq!(set(store, &maya, "T06", Level::Native).await, Ok(false));
    assert_eq!(set(store, &maya, "T06", Level::Agent).await, Ok(true));
    // Lowering is allowed whatever the gates say: a failing drill now.
    recorded(store, &maya, drill("T06", 3, FailureMode::ALL)).await;
    assert_eq!(set(store, &maya, "T06", Level::Native).await, Ok(true));
    assert_eq!(
        set(store, &maya, "T06", Level::Automation).await,
        Err(Rule::A2)
    );
    assert_eq!(set(store, &maya, "T06", Level::Manual).await, Ok(true));
    let levels = store.autonomy_levels().await.unwrap();
    assert_eq!(levels.len(), 1);
    assert_eq!(
        (levels[0].tool.as_str(), levels[0].level),
        ("T06", Level::Manual)
    );
    assert_eq!(levels[0].set_by, "maya");
    // Every change and every drill is a row of the chain, and verify agrees.
    let audit = store.audit(1, 1000).await.unwrap();
    let sets: Vec<String> = audit
        .iter()
        .filter(|r| r.draft.action == "autonomy-set")
        .map(|r| r.draft.evidence.join(" "))
        .collect();
    assert_eq!(
        sets,
        [
            "tool:T06 from:manual level:native",
            "tool:T06 from:native level:agent",
            "tool:T06 from:agent level:native",
            "tool:T06 from:native level:manual",
        ]
    );
    assert_eq!(
        audit.iter().filter(|r| r.draft.action == "drill").count(),
        5
    );
    intact(store.as_ref()).await;
}

async fn verify_finds_a_level_or_drill_changed_behind_the_chain(kind: Kind) {
    let fresh = with_t06(kind).await;
    let store = &fresh.store;
    let maya = local();
    recorded(store, &maya, drill("T06", 16, FailureMode::ALL)).await;
    let snapshot = Snapshot::read(&as_session(store, &local()), now())
        .await
        .unwrap();
    assert_eq!(snapshot.open_vetoes("T06").total, 1);
    fresh
        .execute("UPDATE drill_runs SET passed = 15")
        .await
        .unwrap();
    assert!(matches!(
        store.verify().await.unwrap(),
        ChainStatus::Broken { .. }
    ));
    fresh
        .execute("UPDATE drill_runs SET passed = 16")
        .await
        .unwrap();
    intact(store.as_ref()).await;
    fresh
        .execute(
            "INSERT INTO autonomy (tool, level, level_rank, set_by, set_at, rationale) \
             VALUES ('T06', 'agent', 3, 'mallory', '2026-09-05T10:00:00Z', 'nobody asked')",
        )
        .await
        .unwrap();
    let ChainStatus::Broken { reason, .. } = store.verify().await.unwrap() else {
        panic!("a level set behind the chain went unnoticed");
    };
    assert!(reason.contains("autonomy"), "{reason}");
}

async fn once_grants_exist_only_owners_of_the_tools_tenants_decide(kind: Kind) {
    let fresh = with_t06(kind).await;
    let store = &fresh.store;
    let maya = local();
    let session = as_session(store, &maya);
    for (who, role) in [
        ("maya", Role::Owner),
        ("bo", Role::Approver),
        ("kai", Role::Owner),
    ] {
        let tenant = if who == "kai" { "harbor" } else { "pinehaven" };
        let request = GrantRequest {
            op: GrantOp::Grant,
            identity: who.into(),
            role,
            tenant: tenant.into(),
        };
        holdfast::review::change_grant(&session, "maya", None, &request, None, now())
            .await
            .unwrap();
    }
    let grants = store.grants().await.unwrap();
    let as_ = |who: &str| Actor::from_grants(who, None, &grants);
    // bo approves but owns nothing; kai owns another tenant than T06's.
    assert_eq!(
        set(store, &as_("bo"), "T06", Level::Manual).await,
        Err(Rule::G6)
    );
    assert_eq!(
        set(store, &as_("kai"), "T06", Level::Manual).await,
        Err(Rule::G6)
    );
    let refused = record_drill(
        &as_session(store, &as_("bo")),
        drill("T06", 16, FailureMode::ALL),
        now(),
    )
    .await;
    assert!(matches!(refused, Err(ReviewError::Refused(r)) if r.rule == Rule::G6));
    check(store, &as_("maya"), "T06", true).await;
    recorded(store, &as_("maya"), drill("T06", 16, FailureMode::ALL)).await;
    // maya owns pinehaven, the only tenant of T06's operations: her refusal is
    // the gate's, not the role's.
    assert_eq!(
        set(store, &as_("maya"), "T06", Level::Native).await,
        Err(Rule::A3)
    );
    intact(store.as_ref()).await;
}

async fn scheduled_lookups_skip_tools_below_native(kind: Kind) {
    let fresh = with_t06(kind).await;
    let store = &fresh.store;
    let every = Scope::Every;
    let due = store.due_lookups(&every, now(), None, 10).await.unwrap();
    assert_eq!(due, [id("F60"), id("F62")], "a person's one-shot observe");
    let watched = store
        .due_lookups(&every, now(), Some(Level::Native), 10)
        .await
        .unwrap();
    assert!(watched.is_empty(), "T06 is manual: {watched:?}");
    // Raise T06 (lookup checked, drill recorded, F60's veto settled by its owner).
    let maya = local();
    check(store, &maya, "T06", true).await;
    recorded(store, &maya, drill("T06", 16, FailureMode::ALL)).await;
    settle_f60(store.as_ref(), &maya).await;
    assert_eq!(set(store, &maya, "T06", Level::Native).await, Ok(true));
    let watched = store
        .due_lookups(&every, now(), Some(Level::Native), 10)
        .await
        .unwrap();
    assert_eq!(watched, [id("F62")]);
    assert!(
        store
            .due_lookups(&every, now(), Some(Level::Automation), 10)
            .await
            .unwrap()
            .is_empty()
    );
    // The level shows in the evidence bundle.
    let detail = store.detail(&Scope::Every, &id("F62")).await.unwrap();
    assert_eq!(detail.autonomy, Level::Native);
    let bundle = holdfast::core::evidence::bundle(&detail, &maya, now());
    assert!(
        bundle
            .autonomy
            .describe()
            .starts_with("native: scheduled lookups")
    );
}

async fn an_agent_only_proposes_and_only_at_agent(kind: Kind) {
    let fresh = with_t06(kind).await;
    let store = &fresh.store;
    let agent = Actor::local("agent:refunds", None);
    let decide_as = |detail: &holdfast::core::detail::OperationDetail, action: &Action| {
        decide(
            detail,
            action,
            &agent,
            &rationale(),
            detail.row.version,
            now(),
        )
        .map(|e| e.commit.open_proposal.is_some())
        .map_err(|r| r.rule)
    };
    let mut detail = store.detail(&Scope::Every, &id("F62")).await.unwrap();
    assert_eq!(detail.autonomy, Level::Manual);
    assert_eq!(decide_as(&detail, &Action::AuthorizeRetry), Err(Rule::A4));
    assert_eq!(decide_as(&detail, &Action::Comment), Err(Rule::A4));
    detail.autonomy = Level::Automation;
    assert_eq!(decide_as(&detail, &Action::AuthorizeRetry), Err(Rule::A4));
    // At agent the gate lets the proposal through to the ordinary guards (F62
    // carries no approval, so G11 refuses the retry itself).
    detail.autonomy = Level::Agent;
    assert_eq!(decide_as(&detail, &Action::AuthorizeRetry), Err(Rule::G11));
    assert_eq!(decide_as(&detail, &Action::Comment), Err(Rule::A4));
}

/// A lookup check flips the flag and the cap: unchecked, the tool stands at
/// manual whatever its level and what runs by itself skips it; a failing check
/// caps it again, audited, and `audit verify` still passes.
async fn an_unchecked_lookup_caps_the_tool_at_manual(kind: Kind) {
    use holdfast::lookup::{ObserveStore, SessionObserver};
    let fresh = with_t06(kind).await;
    let store = &fresh.store;
    let maya = local();
    recorded(store, &maya, drill("T06", 16, FailureMode::ALL)).await;
    settle_f60(store.as_ref(), &maya).await;
    let standing = |s: &Snapshot| s.standings().into_iter().find(|t| t.tool == "T06").unwrap();
    let before = standing(
        &Snapshot::read(&as_session(store, &local()), now())
            .await
            .unwrap(),
    );
    assert!(
        before
            .unchecked
            .as_deref()
            .is_some_and(|w| w.contains("holdfast lookup check T06 --known")),
        "{:?}",
        before.unchecked
    );
    assert_eq!(set(store, &maya, "T06", Level::Native).await, Err(Rule::A1));
    check(store, &maya, "T06", true).await;
    let after = standing(
        &Snapshot::read(&as_session(store, &local()), now())
            .await
            .unwrap(),
    );
    assert_eq!(after.unchecked, None, "checked");
    assert_eq!(set(store, &maya, "T06", Level::Native).await, Ok(true));
    let observer = SessionObserver {
        session: Session::new(fresh.store.clone(), Actor::local("svc:observer", None)),
        rationale: rationale(),
        clock: holdfast::core::clock::Clock::Frozen(now()),
        at_least: Some(Level::Native),
    };
    let due: Vec<String> = observer
        .due(now(), 10)
        .await
        .unwrap()
        .iter()
        .map(|d| d.operation.id.to_string())
        .collect();
    assert_eq!(due, ["F62"], "checked and native: looked up by itself");
    // The lookup no longer finds the known record: capped at manual again.
    check(store, &maya, "T06", false).await;
    let capped = standing(
        &Snapshot::read(&as_session(store, &local()), now())
            .await
            .unwrap(),
    );
    assert_eq!(capped.level, Level::Native);
    assert_eq!(capped.effective, Level::Manual);
    // The evidence bundle flags it, and its level is the capped one.
    let detail = store.detail(&Scope::Every, &id("F62")).await.unwrap();
    assert_eq!(detail.autonomy, Level::Manual);
    let bundle = holdfast::core::evidence::bundle(&detail, &maya, now());
    assert!(
        bundle.autonomy.describe().contains(
            "LOOKUP UNCHECKED, capped at manual: tool T06's status lookup did not find F62"
        ),
        "{}",
        bundle.autonomy.describe()
    );
    assert!(observer.due(now(), 10).await.unwrap().is_empty(), "skipped");
    assert_eq!(
        set(store, &maya, "T06", Level::Automation).await,
        Err(Rule::A1),
        "raising is refused with the reason"
    );
    let rows = store.lookup_checks().await.unwrap();
    assert_eq!(
        rows.iter().filter(|c| c.tool == "T06").count(),
        2,
        "audited"
    );
    intact(store.as_ref()).await;
}

holdfast_on_both_backends!(
    an_unchecked_lookup_caps_the_tool_at_manual,
    raising_passes_three_gates_and_lowering_none,
    verify_finds_a_level_or_drill_changed_behind_the_chain,
    once_grants_exist_only_owners_of_the_tools_tenants_decide,
    scheduled_lookups_skip_tools_below_native,
    an_agent_only_proposes_and_only_at_agent,
);
