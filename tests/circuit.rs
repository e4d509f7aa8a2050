//! A circuit per tool (DESIGN §9.5) on both backends, at the gateway's gate: it
//! opens when the tool's failures within the window reach the threshold (not
//! before), an open circuit holds a new write BLOCKED "circuit open" without
//! forwarding it, a half-open probe's success closes it and its failure
//! reopens it, an owner closes it by hand (audited, role-checked), and `audit
//! verify` stays intact and finds a circuit changed behind the chain's back.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use chrono::{DateTime, Duration};
use holdfast::core::access::{GrantOp, GrantRequest};
use holdfast::core::audit::ChainStatus;
use holdfast::core::circuit::{CIRCUIT_ACTION, CIRCUIT_LEDGER, CIRCUIT_OPEN, Position};
use holdfast::core::model::State;
use holdfast::core::refusal::Rule;
use holdfast::core::rules::{Actor, Rationale};
use holdfast::gateway::gate::{Admission, Call, Ending, Gate, Ticket};
use holdfast::gateway::settings::GatewaySettings;
use holdfast::otlp::map::hash_arguments;
use holdfast::review::ReviewError;
use holdfast::store::{IngestMode, Ingester, Scope, Session, Store};
use serde_json::{Value, json};
use support::review::{now, records};
use support::stores::{self, Fresh, Kind};

const TOOL: &str = "srv/pay";

const CONTRACT: &str = r#"{"type":"contract","tool":"srv/pay","version":"1","action":"pay.create","method":"POST","idempotency":{"supported":false},"status_lookup":false,"owner":"payments","max_attempts":1,"budget_seconds":60,"circuit":{"failures":3,"window_seconds":60,"probe_after_seconds":30}}"#;

/// A gate on a fresh store holding the contract, with a clock the test moves,
/// and how many calls it forwarded.
struct Rig {
    fresh: Fresh,
    gate: Gate,
    clock: Arc<AtomicI64>,
    sent: usize,
    n: u32,
}

impl Rig {
    async fn new(kind: Kind) -> Rig {
        let fresh = stores::fresh(kind).await;
        let report = fresh
            .store
            .ingest(records(CONTRACT), IngestMode::Strict, "test", now())
            .await
            .unwrap();
        assert!(report.rejected.is_empty(), "{:?}", report.rejected);
        let clock = Arc::new(AtomicI64::new(now().timestamp_millis()));
        let read = Arc::clone(&clock);
        let mut ingester = Ingester::of(&Actor::local("svc:gateway", None));
        ingester.contracts_optional = true;
        let gate = Gate::open(
            Arc::clone(&fresh.store),
            ingester,
            GatewaySettings::default(),
            "srv",
            Arc::new(move || DateTime::from_timestamp_millis(read.load(Ordering::SeqCst)).unwrap()),
        )
        .await
        .unwrap();
        Rig {
            fresh,
            gate,
            clock,
            sent: 0,
            n: 0,
        }
    }

    fn store(&self) -> &dyn Store {
        self.fresh.store.as_ref()
    }

    fn advance(&self, seconds: i64) {
        self.clock.fetch_add(
            Duration::seconds(seconds).num_milliseconds(),
            Ordering::SeqCst,
        );
    }

    /// A new write call (arguments never used before).
    fn next(&mut self) -> Value {
        self.n += 1;
        json!({"order": format!("O{}", self.n)})
    }

    async fn admit(&mut self, arguments: &Value) -> Admission {
        let Value::Object(map) = arguments.clone() else {
            unreachable!()
        };
        let admission = self
            .gate
            .admit(&Call {
                name: "pay".into(),
                arguments: Some(map),
                read_only_hint: None,
            })
            .await
            .unwrap();
        if matches!(admission, Admission::Forward(_)) {
            self.sent += 1;
        }
        admission
    }

    /// A new call forwarded and ended by `ending`.
    async fn sent_and(&mut self, ending: Ending) -> Ticket {
        let arguments = self.next();
        let Admission::Forward(ticket) = self.admit(&arguments).await else {
            panic!("forwarded")
        };
        self.gate.finish(&ticket, &ending).await.unwrap();
        self.gate.settle().await;
        ticket
    }

    async fn position(&self) -> Position {
        self.store()
            .circuit(TOOL)
            .await
            .unwrap()
            .map_or(Position::Closed, |c| c.position)
    }

    /// A new write call, which must be held "circuit open" and not forwarded.
    async fn held(&mut self) {
        let sent = self.sent;
        let arguments = self.next();
        let Admission::Refuse(text) = self.admit(&arguments).await else {
            panic!("held")
        };
        assert!(text.contains(CIRCUIT_OPEN), "{text}");
        assert_eq!(self.sent, sent, "not forwarded");
        let same = self
            .store()
            .same_calls(TOOL, &hash_arguments(&arguments), None)
            .await
            .unwrap();
        assert_eq!(same.len(), 1);
        assert_eq!(same[0].state, State::Blocked);
        let detail = self
            .store()
            .detail(&Scope::Every, &same[0].id)
            .await
            .unwrap();
        let hold = detail
            .audit
            .iter()
            .find(|r| r.draft.to == Some(State::Blocked))
            .expect("the move into the hold is audited");
        assert!(
            hold.draft
                .rationale
                .as_deref()
                .unwrap_or_default()
                .starts_with(CIRCUIT_OPEN),
            "{hold:?}"
        );
        assert!(
            detail
                .attempts
                .iter()
                .all(|a| a.error_type.as_deref() == Some("circuit_open"))
        );
    }

    async fn intact(&self) {
        let status = self.store().verify().await.unwrap();
        assert!(matches!(status, ChainStatus::Intact { .. }), "{status:?}");
    }

    /// Three failures: the circuit opens.
    async fn opened(&mut self) {
        self.sent_and(Ending::Dropped("gone".into())).await;
        self.sent_and(Ending::Error {
            code: -32603,
            message: "internal".into(),
        })
        .await;
        assert_eq!(self.position().await, Position::Closed, "not before");
        self.sent_and(Ending::Cancelled).await;
        assert_eq!(self.position().await, Position::Open);
    }
}

fn dropped() -> Ending {
    Ending::Dropped("the server went away".into())
}

fn ok() -> Ending {
    Ending::Result {
        is_error: false,
        text: "{\"done\":true}".into(),
    }
}

async fn opens_at_the_threshold_and_a_probe_closes_it(kind: Kind) {
    let mut rig = Rig::new(kind).await;
    // Successes and refusals by the server are not the tool failing.
    rig.sent_and(ok()).await;
    rig.sent_and(Ending::Result {
        is_error: true,
        text: "no such order".into(),
    })
    .await;
    rig.sent_and(dropped()).await;
    rig.sent_and(dropped()).await;
    assert_eq!(
        rig.position().await,
        Position::Closed,
        "two failures: closed"
    );
    rig.sent_and(dropped()).await;
    let open = rig.store().circuit(TOOL).await.unwrap().unwrap();
    assert_eq!(open.position, Position::Open);
    assert_eq!(open.failures, 3);
    assert!(open.reason.contains("unknown 3"), "{}", open.reason);
    let sent = rig.sent;
    rig.held().await;
    rig.advance(29);
    rig.held().await;
    // Probe time: one call goes through, the next waits for its outcome.
    rig.advance(1);
    let arguments = rig.next();
    let Admission::Forward(probe) = rig.admit(&arguments).await else {
        panic!("the probe is forwarded")
    };
    let half = rig.store().circuit(TOOL).await.unwrap().unwrap();
    assert_eq!(half.position, Position::HalfOpen);
    assert_eq!(half.probe.as_deref(), Some(probe.operation.as_str()));
    rig.held().await;
    assert_eq!(rig.sent, sent + 1, "only the probe was sent");
    rig.gate.finish(&probe, &ok()).await.unwrap();
    rig.gate.settle().await;
    assert_eq!(rig.position().await, Position::Closed);
    rig.sent_and(ok()).await;
    let rows: Vec<_> = rig
        .store()
        .audit(0, 10_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.draft.operation.as_str() == CIRCUIT_LEDGER)
        .collect();
    let moves: Vec<String> = rows
        .iter()
        .map(|r| {
            assert_eq!(r.draft.action, CIRCUIT_ACTION);
            r.draft
                .evidence
                .iter()
                .find_map(|e| e.strip_prefix("position:"))
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(moves, ["open", "half-open", "closed"], "every move audited");
    rig.intact().await;
}

async fn failures_outside_the_window_do_not_count_and_a_failed_probe_reopens(kind: Kind) {
    let mut rig = Rig::new(kind).await;
    rig.sent_and(dropped()).await;
    rig.sent_and(dropped()).await;
    rig.advance(61);
    rig.sent_and(dropped()).await;
    assert_eq!(
        rig.position().await,
        Position::Closed,
        "the first two left the window"
    );
    rig.sent_and(Ending::Cancelled).await;
    rig.sent_and(dropped()).await;
    assert_eq!(rig.position().await, Position::Open);
    rig.advance(30);
    let arguments = rig.next();
    let Admission::Forward(probe) = rig.admit(&arguments).await else {
        panic!("the probe is forwarded")
    };
    rig.gate.finish(&probe, &dropped()).await.unwrap();
    let reopened = rig.store().circuit(TOOL).await.unwrap().unwrap();
    assert_eq!(reopened.position, Position::Open);
    assert!(reopened.reason.contains("probe"), "{}", reopened.reason);
    // Open again from the probe's failure: the next probe waits its time again.
    rig.held().await;
    rig.intact().await;
}

async fn an_owner_closes_it_by_hand_audited(kind: Kind) {
    let mut rig = Rig::new(kind).await;
    rig.opened().await;
    let store = Arc::clone(&rig.fresh.store);
    let rationale = Rationale::parse("the provider says the outage is over").unwrap();
    let maya = Actor::local("maya", None);
    let session = Session::new(Arc::clone(&store), maya.clone());
    for (who, role) in [
        ("maya", holdfast::core::model::Role::Owner),
        ("bo", holdfast::core::model::Role::Approver),
    ] {
        let request = GrantRequest {
            op: GrantOp::Grant,
            identity: who.into(),
            role,
            tenant: "default".into(),
        };
        holdfast::review::change_grant(&session, "maya", None, &request, None, now())
            .await
            .unwrap();
    }
    let grants = store.grants().await.unwrap();
    let as_ = |who: &str| Session::new(Arc::clone(&store), Actor::from_grants(who, None, &grants));
    let refused = holdfast::circuit::close(&as_("bo"), TOOL, &rationale, now()).await;
    assert!(
        matches!(&refused, Err(ReviewError::Refused(r)) if r.rule == Rule::G6),
        "{refused:?}"
    );
    assert_eq!(rig.position().await, Position::Open);
    let (change, row) = holdfast::circuit::close(&as_("maya"), TOOL, &rationale, now())
        .await
        .unwrap()
        .expect("closed");
    assert_eq!(change.from, Position::Open);
    assert_eq!(row.draft.by, "maya");
    assert_eq!(row.draft.rationale.as_deref(), Some(rationale.as_str()));
    assert_eq!(rig.position().await, Position::Closed);
    assert!(
        holdfast::circuit::close(&as_("maya"), TOOL, &rationale, now())
            .await
            .unwrap()
            .is_none(),
        "closed already: nothing written"
    );
    // Closed by hand, it counts afresh and sends again.
    rig.sent_and(dropped()).await;
    assert_eq!(rig.position().await, Position::Closed);
    rig.intact().await;
}

async fn verify_finds_a_circuit_moved_behind_the_chain(kind: Kind) {
    let mut rig = Rig::new(kind).await;
    rig.opened().await;
    rig.intact().await;
    rig.fresh
        .execute("UPDATE circuits SET position = 'closed'")
        .await
        .unwrap();
    let ChainStatus::Broken { reason, .. } = rig.store().verify().await.unwrap() else {
        panic!("a circuit closed behind the chain's back is found")
    };
    assert!(reason.contains("circuit"), "{reason}");
}

/// The MCP gateway end to end: with the tool's circuit open, a `tools/call`
/// write reaches no server (the fixture applied nothing), is held BLOCKED
/// "circuit open", and `holdfast circuits` lists it until its owner closes it.
#[tokio::test]
async fn an_open_circuit_stops_a_tools_call_write_at_the_mcp_gateway() {
    use holdfast::core::circuit::{Ended, Failure, Failures, after_attempt};
    use holdfast::core::contract::CircuitConfig;
    use support::gateway::{PATIENT, call, same, text};

    let fresh = stores::sqlite().await;
    let store = fresh.store.as_ref();
    let contract = CONTRACT.replace("srv/pay", "pay/refund").replace(
        "\"probe_after_seconds\":30",
        "\"probe_after_seconds\":4000000000",
    );
    let report = store
        .ingest(records(&contract), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    let config = CircuitConfig {
        failures: 3,
        window_seconds: 60,
        probe_after_seconds: 4_000_000_000,
    };
    let ended = Ended {
        operation: "earlier",
        failed: Some(Failure::Unknown),
        recent: Failures {
            unknowns: 3,
            ..Failures::default()
        },
    };
    let open = after_attempt(&config, "pay/refund", None, ended, "svc:gateway", now()).unwrap();
    store.move_circuit(open).await.unwrap();

    let rig = support::gateway::Rig::new(&fresh.url);
    let (client, _) = rig.connect().await;
    let _ = client.list_all_tools().await.unwrap();
    let args = json!({"order": "C1", "amount": 5});
    let result = call(&client, "refund", args.clone(), PATIENT)
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true), "{}", text(&result));
    assert!(text(&result).contains(CIRCUIT_OPEN), "{}", text(&result));
    assert_eq!(rig.applied(), 0, "nothing reached the server");
    let held = same(store, "refund", &args).await;
    assert_eq!(held.len(), 1);
    assert_eq!(held[0].1, State::Blocked);
    client.cancel().await.unwrap();

    let listed = support::gateway::holdfast(&rig, &["circuits"]);
    let said = String::from_utf8_lossy(&listed.stdout).into_owned();
    assert!(listed.status.success(), "{listed:?}");
    assert!(said.contains("pay/refund  open"), "{said}");
    let closed = support::gateway::holdfast(
        &rig,
        &[
            "circuits",
            "pay/refund",
            "--close",
            "--rationale",
            "the provider recovered",
        ],
    );
    assert!(closed.status.success(), "{closed:?}");
    let listed = support::gateway::holdfast(&rig, &["circuits"]);
    assert!(
        String::from_utf8_lossy(&listed.stdout).contains("no circuit is open"),
        "{listed:?}"
    );
    let status = store.verify().await.unwrap();
    assert!(matches!(status, ChainStatus::Intact { .. }), "{status:?}");
}

holdfast_on_both_backends!(
    opens_at_the_threshold_and_a_probe_closes_it,
    failures_outside_the_window_do_not_count_and_a_failed_probe_reopens,
    an_owner_closes_it_by_hand_audited,
    verify_finds_a_circuit_moved_behind_the_chain,
);
