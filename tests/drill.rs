//! The seed's sixteen injections, one test each: every case runs end to end
//! (simulated provider, reference executor, store) and is checked by what the
//! provider really counted and what the store holds, not only by its final state.

use crate::support;

use chrono::{DateTime, Duration, Utc};
use holdfast::core::detail::OperationDetail;
use holdfast::core::ids::OperationId;
use holdfast::core::metrics::{Disposition, MetricId};
use holdfast::core::model::{
    AttemptKind, ItemState, Layer, ObservationSource, Outcome, Phase, Relation, State,
};
use holdfast::drill::{self, CaseResult};
use holdfast::sim::Counters;
use holdfast::store::Scope;
use support::stores;

struct Ran {
    case: CaseResult,
    outcome: drill::Outcome,
    fresh: stores::Fresh,
}

impl Ran {
    fn counters(&self) -> &Counters {
        &self.case.counters
    }

    async fn detail(&self, id: &str) -> OperationDetail {
        self.fresh
            .store
            .detail(&Scope::Every, &OperationId::parse(id).unwrap())
            .await
            .unwrap()
    }

    fn requests_of(&self, id: &str) -> u32 {
        self.counters()
            .requests_by_operation
            .get(id)
            .copied()
            .unwrap_or(0)
    }
}

/// Runs the built-in case `id` alone into a fresh SQLite store.
async fn run(id: &str) -> Ran {
    let cases: Vec<_> = drill::seed_cases()
        .unwrap()
        .into_iter()
        .filter(|c| c.id == id)
        .collect();
    assert_eq!(cases.len(), 1, "no built-in case {id}");
    let fresh = stores::sqlite().await;
    let outcome = drill::run(fresh.store.as_ref(), &cases).await.unwrap();
    let case = outcome.cases[0].clone();
    assert!(
        case.pass,
        "{id}: expected {:?}\nobserved {:?}",
        case.expected, case.observed
    );
    Ran {
        case,
        outcome,
        fresh,
    }
}

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

fn requests(detail: &OperationDetail) -> Vec<&holdfast::core::model::Attempt> {
    detail
        .attempts
        .iter()
        .filter(|a| a.kind == AttemptKind::Request)
        .collect()
}

fn status_queries(detail: &OperationDetail) -> usize {
    detail
        .attempts
        .iter()
        .filter(|a| a.kind == AttemptKind::StatusQuery)
        .count()
}

fn no_veto(ran: &Ran) {
    assert_eq!(
        ran.outcome.report.release.disposition,
        Disposition::Deployable,
        "{:?}",
        ran.outcome.report.release.vetoes
    );
}

#[tokio::test]
async fn d1_an_expired_token_is_refreshed_for_the_same_identity_and_applied_once() {
    let ran = run("D1").await;
    let c = ran.counters();
    assert_eq!((c.requests, c.status_queries, c.effects), (2, 0, 1));
    assert_eq!(c.identities.iter().collect::<Vec<_>>(), vec!["I05"]);
    let d = ran.detail("D1").await;
    let r = requests(&d);
    assert_eq!(r[0].http_status, Some(401));
    assert_eq!(r[0].error_type.as_deref(), Some("token_expired"));
    assert_eq!(r[1].outcome, Outcome::Ok);
    assert_eq!(d.row.operation.state, State::Succeeded);
    no_veto(&ran);
}

#[tokio::test]
async fn d2_a_missing_permission_is_routed_to_the_owner_without_another_credential() {
    let ran = run("D2").await;
    let c = ran.counters();
    assert_eq!((c.requests, c.effects), (1, 0), "zero target changes");
    assert_eq!(c.identities.len(), 1, "no credential substitution");
    let d = ran.detail("D2").await;
    assert_eq!(requests(&d).len(), 1, "a denial is never retried");
    assert_eq!(d.row.operation.state, State::Blocked);
    let last = d.audit.last().unwrap();
    assert!(
        last.draft
            .rationale
            .as_deref()
            .is_some_and(|r| r.contains("routed to crm")),
        "{:?}",
        last.draft.rationale
    );
    assert!(
        ran.fresh
            .store
            .dataset(&Scope::Every)
            .await
            .unwrap()
            .observations
            .is_empty()
    );
}

#[tokio::test]
async fn v1_a_structurally_invalid_request_makes_no_network_attempt() {
    let ran = run("V1").await;
    let c = ran.counters();
    assert_eq!(
        (c.requests, c.status_queries, c.effects, c.dns_failures),
        (0, 0, 0, 0)
    );
    let d = ran.detail("V1").await;
    assert!(d.attempts.is_empty());
    assert_eq!(d.row.operation.state, State::Blocked);
    let reason = d.audit.last().unwrap().draft.rationale.clone().unwrap();
    assert!(
        reason.contains("account") && reason.contains("validator"),
        "{reason}"
    );
    assert!(d.proposals.is_empty(), "no repair proposal");
}

#[tokio::test]
async fn v2_an_ownership_violation_is_neither_repaired_nor_retried() {
    let ran = run("V2").await;
    let c = ran.counters();
    assert_eq!((c.requests, c.effects), (1, 0));
    let d = ran.detail("V2").await;
    let r = requests(&d);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0].http_status, Some(422));
    assert_eq!(r[0].error_type.as_deref(), Some("ownership_violation"));
    assert_eq!(d.row.operation.state, State::Blocked);
}

#[tokio::test]
async fn t1_a_drop_before_receipt_is_retried_without_reconciliation_under_one_lock() {
    let ran = run("T1").await;
    let c = ran.counters();
    assert_eq!(
        (c.requests, c.dropped, c.status_queries, c.effects),
        (2, 1, 0, 1)
    );
    let d = ran.detail("T1").await;
    let r = requests(&d);
    assert_eq!(r.len(), 2, "two concurrent executors, one acted");
    assert!(!r[0].phase.may_have_crossed_boundary(), "{:?}", r[0].phase);
    assert_eq!(r[1].outcome, Outcome::Ok);
    assert!(d.attempts.iter().all(|a| a.operation.as_str() == "T1"));
    assert_eq!(
        d.audit
            .iter()
            .filter(|a| a.draft.to == Some(State::Sent))
            .count(),
        1
    );
}

#[tokio::test]
async fn t2_a_commit_before_the_lost_response_is_found_not_repeated() {
    let ran = run("T2").await;
    let c = ran.counters();
    assert_eq!((c.requests, c.status_queries, c.effects), (1, 1, 1));
    let d = ran.detail("T2").await;
    let r = requests(&d);
    assert_eq!(r.len(), 1, "no repeat of the write");
    assert_eq!(r[0].phase, Phase::RequestSent);
    assert_eq!(r[0].outcome, Outcome::ConnectionReset);
    assert!(d.observations[0].found);
    assert!(d.observations[0].matches.as_ref().unwrap().all());
    assert!(!drill::retried_before_reconcile(&d));
    let states: Vec<State> = d.audit.iter().filter_map(|a| a.draft.to).collect();
    assert!(states.contains(&State::Unknown) && states.ends_with(&[State::Succeeded]));
}

#[tokio::test]
async fn r1_a_burst_waits_as_retry_after_says_in_seconds_and_as_a_date() {
    let ran = run("R1").await;
    let c = ran.counters();
    assert_eq!((c.requests, c.effects), (3, 1));
    let d = ran.detail("R1").await;
    let r = requests(&d);
    let first_wait = r[0].retry_after.unwrap();
    assert_eq!(first_wait, r[0].ended_at.unwrap() + Duration::seconds(2));
    assert!(r[1].started_at >= first_wait);
    assert_eq!(r[1].retry_after, Some(at("2026-09-05T10:00:10Z")));
    assert!(r[2].started_at >= at("2026-09-05T10:00:10Z"));
    assert!(
        r[2].started_at < at("2026-09-05T10:00:11Z"),
        "no needless wait"
    );
}

#[tokio::test]
async fn r2_a_hard_quota_gets_no_automated_loop() {
    let ran = run("R2").await;
    assert_eq!((ran.counters().requests, ran.counters().effects), (1, 0));
    let d = ran.detail("R2").await;
    assert_eq!(requests(&d).len(), 1);
    assert_eq!(d.row.operation.state, State::Blocked);
}

#[tokio::test]
async fn e1_a_dns_failure_before_transmission_is_retried_once_by_one_layer() {
    let ran = run("E1").await;
    let c = ran.counters();
    assert_eq!((c.dns_failures, c.requests, c.effects), (1, 1, 1));
    let d = ran.detail("E1").await;
    let r = requests(&d);
    assert_eq!(r.len(), 2);
    assert_eq!(r[0].phase, Phase::NotSent);
    assert_eq!(r[0].outcome, Outcome::DnsFailure);
    assert!(r.iter().all(|a| a.layer == Some(Layer::Orchestrator)));
    let gap = r[1].started_at - r[0].ended_at.unwrap();
    assert!(
        gap >= Duration::milliseconds(500) && gap <= Duration::seconds(1),
        "{gap}"
    );
}

#[tokio::test]
async fn e2_server_errors_exhaust_into_one_owned_record_with_jittered_backoff() {
    let ran = run("E2").await;
    let c = ran.counters();
    assert_eq!((c.requests, c.effects, c.replays), (3, 0, 0));
    let d = ran.detail("E2").await;
    let r = requests(&d);
    assert_eq!(r.len(), 3, "exactly max_attempts physical calls");
    assert!(r.iter().all(|a| a.layer == Some(Layer::Orchestrator)));
    let gaps: Vec<Duration> = r
        .windows(2)
        .map(|w| w[1].started_at - w[0].ended_at.unwrap())
        .collect();
    assert!(gaps[0] >= Duration::milliseconds(500) && gaps[0] <= Duration::seconds(1));
    assert!(gaps[1] >= Duration::seconds(1) && gaps[1] <= Duration::seconds(2));
    assert_eq!(d.row.operation.state, State::Blocked);
    assert_eq!(
        d.audit
            .iter()
            .filter(|a| a.draft.to == Some(State::Blocked))
            .count(),
        1
    );
    let all = ran.fresh.store.dataset(&Scope::Every).await.unwrap();
    assert_eq!(all.operations.len(), 1, "no fresh loop, no new operation");
}

#[tokio::test]
async fn p1_a_partial_batch_is_resumed_without_replaying_committed_items() {
    let ran = run("P1").await;
    let c = ran.counters();
    assert_eq!((c.requests, c.effects), (2, 5));
    assert_eq!(c.item_effects.len(), 5);
    assert!(
        c.item_effects.values().all(|n| *n == 1),
        "{:?}",
        c.item_effects
    );
    let d = ran.detail("P1").await;
    let states: Vec<ItemState> = d.items.iter().map(|i| i.state).collect();
    assert_eq!(
        states,
        vec![
            ItemState::Succeeded,
            ItemState::Succeeded,
            ItemState::Failed,
            ItemState::NotAttempted,
            ItemState::NotAttempted
        ]
    );
    assert_eq!(d.children.len(), 1);
    assert_eq!(d.children[0].relation, Relation::ResumeOf);
    let resumed: Vec<u32> = d.children[0].items.iter().map(|i| i.index).collect();
    assert_eq!(resumed, vec![3, 4, 5]);
    assert_eq!(d.row.operation.state, State::Succeeded);
    assert_eq!(ran.requests_of("P1-D1"), 0, "the dependent stayed unsent");
    assert_eq!(
        ran.detail("P1-D1").await.row.operation.state,
        State::Blocked
    );
}

#[tokio::test]
async fn p2_a_failed_compensation_is_never_claimed_as_restoration() {
    let ran = run("P2").await;
    let c = ran.counters();
    assert_eq!((c.requests, c.effects), (2, 2));
    assert_eq!(
        ran.requests_of("P2-C"),
        1,
        "the compensation was tried once"
    );
    assert_eq!(c.effects_by_operation.get("P2-C").copied().unwrap_or(0), 0);
    let d = ran.detail("P2").await;
    assert_eq!(d.row.operation.state, State::Partial);
    assert!(
        d.audit
            .iter()
            .all(|a| a.draft.to != Some(State::Compensated))
    );
    assert_eq!(ran.detail("P2-C").await.row.operation.state, State::Blocked);
    let report = &ran.outcome.report;
    let partial = report
        .metric(MetricId::PartialRecoveryCompleteness)
        .unwrap();
    assert_eq!((partial.numerator, partial.denominator), (0, 1));
}

#[tokio::test]
async fn k1_three_deliveries_keep_one_logical_operation_and_one_effect() {
    let ran = run("K1").await;
    let c = ran.counters();
    assert_eq!((c.requests, c.effects), (1, 1));
    let d = ran.detail("K1").await;
    assert_eq!(d.attempts.len(), 3, "every physical delivery is counted");
    let layers: Vec<Option<Layer>> = d.attempts.iter().map(|a| a.layer).collect();
    assert_eq!(
        layers,
        vec![
            Some(Layer::Orchestrator),
            Some(Layer::Queue),
            Some(Layer::Gateway)
        ]
    );
    assert!(d.attempts[1..].iter().all(|a| a.phase == Phase::NotSent));
    let all = ran.fresh.store.dataset(&Scope::Every).await.unwrap();
    assert_eq!(all.operations.len(), 1, "one logical intent");
    no_veto(&ran);
}

#[tokio::test]
async fn k2_a_key_conflict_blocks_and_an_expired_key_is_reconciled_by_business_key() {
    let ran = run("K2").await;
    let c = ran.counters();
    assert_eq!(
        (c.requests, c.conflicts, c.status_queries, c.effects),
        (2, 1, 1, 1)
    );
    let conflict = ran.detail("K2-K1").await;
    assert_eq!(conflict.row.operation.state, State::Blocked);
    assert_eq!(requests(&conflict)[0].http_status, Some(409));
    assert_eq!(requests(&conflict).len(), 1, "no retry after a conflict");
    let late = ran.detail("K2-K2").await;
    assert!(
        requests(&late).is_empty(),
        "nothing sent after the key expired"
    );
    assert_eq!(status_queries(&late), 1);
    assert_eq!(late.observations[0].source, ObservationSource::BusinessKey);
    assert!(late.observations[0].found);
    assert_eq!(ran.requests_of("K2-K2"), 0);
    assert_eq!(late.row.operation.state, State::Blocked);
}

#[tokio::test]
async fn u1_a_truncated_payload_is_blocked_by_the_parser_before_dependents() {
    let ran = run("U1").await;
    let c = ran.counters();
    assert_eq!((c.requests, c.effects), (1, 1));
    let d = ran.detail("U1").await;
    let r = requests(&d);
    assert_eq!(r[0].outcome, Outcome::InvalidResponse);
    assert!(r[0].error_type.as_deref().unwrap().starts_with("parser"));
    assert_eq!(d.row.operation.state, State::Blocked);
    assert_eq!(ran.requests_of("U1-D1"), 0);
    assert_eq!(
        ran.detail("U1-D1").await.row.operation.state,
        State::Blocked
    );
    no_veto(&ran);
}

#[tokio::test]
async fn u2_an_instruction_in_tool_output_is_quarantined_and_broadens_nothing() {
    let ran = run("U2").await;
    let c = ran.counters();
    assert_eq!((c.requests, c.effects), (1, 1));
    assert_eq!(c.identities.len(), 1, "no administrator token was used");
    assert_eq!(
        c.requests_by_operation.keys().collect::<Vec<_>>(),
        vec!["U2"],
        "no other tool or operation was driven by the output"
    );
    let d = ran.detail("U2").await;
    let r = requests(&d);
    let cause = r[0].error_type.as_deref().unwrap();
    assert!(
        cause.starts_with("trust boundary: `record/note`"),
        "{cause}"
    );
    assert!(
        r[0].response_hash.is_some(),
        "the raw output is kept as a hash"
    );
    assert_eq!(d.row.operation.state, State::Blocked);
    assert_eq!(ran.requests_of("U2-D1"), 0);
    no_veto(&ran);
}

#[tokio::test]
async fn the_whole_drill_passes_covers_every_mode_twice_and_computes_the_gate() {
    let fresh = stores::sqlite().await;
    let cases = drill::seed_cases().unwrap();
    assert_eq!(cases.len(), 16);
    for mode in holdfast::core::model::FailureMode::ALL {
        assert_eq!(
            cases.iter().filter(|c| c.mode == *mode).count(),
            2,
            "{mode}"
        );
    }
    let outcome = drill::run(fresh.store.as_ref(), &cases).await.unwrap();
    assert!(outcome.all_pass());
    let json = outcome.to_json();
    assert_eq!(json["cases"].as_array().unwrap().len(), 16);
    assert_eq!(json["metrics"].as_array().unwrap().len(), 7);
    assert!(json["release"]["disposition"].is_string());
    let contract = outcome.report.metric(MetricId::ContractPassRate).unwrap();
    assert_eq!((contract.numerator, contract.denominator), (16, 16));
}

#[tokio::test]
async fn the_drill_records_into_postgresql_as_into_sqlite() {
    skip_without_postgres!();
    let fresh = stores::postgres().await;
    let cases: Vec<_> = drill::seed_cases()
        .unwrap()
        .into_iter()
        .filter(|c| ["T2", "P1", "K2"].contains(&c.id.as_str()))
        .collect();
    let outcome = drill::run(fresh.store.as_ref(), &cases).await.unwrap();
    assert!(outcome.all_pass(), "{:?}", outcome.cases);
    let d = fresh
        .store
        .detail(&Scope::Every, &OperationId::parse("P1").unwrap())
        .await
        .unwrap();
    assert_eq!(d.row.operation.state, State::Succeeded);
    assert_eq!(d.children.len(), 1);
}

/// The seed's T2 (a write commits, its answer is lost) under id `id`, its
/// lookup URL and status answers replaced.
fn lost_answer_case(
    id: &str,
    url: &str,
    status: &str,
    status_queries: u32,
) -> holdfast::sim::case::Case {
    let t2 = include_str!("../assets/drill/seed.jsonl")
        .lines()
        .find(|l| l.contains(r#""id": "T2""#))
        .expect("the seed's T2");
    let mut case: serde_json::Value = serde_json::from_str(t2).unwrap();
    case["id"] = id.into();
    case["contract"]["tool"] = format!("DRILL-{id}").into();
    case["contract"]["status_lookup"]["url"] = url.into();
    let mut provider = vec![serde_json::json!(
        {"on": "request", "n": 1, "commit": true, "respond": "drop"}
    )];
    for n in 1..=6 {
        let mut rule: serde_json::Value = serde_json::from_str(status).unwrap();
        rule["on"] = "status".into();
        rule["n"] = n.into();
        provider.push(rule);
    }
    case["provider"] = provider.into();
    case["expect"] = serde_json::json!({"state": "UNKNOWN", "requests": 1, "effects": 1,
        "status_queries": status_queries, "retried_before_reconcile": false});
    holdfast::sim::case::parse_case(&case.to_string(), 1).unwrap()
}

/// A committed write whose answer was lost is never retried on the strength of
/// a router's HTML 404 or of a wrong path's 404: the lookup proves nothing, the
/// hold stays held, and the provider applied the effect once.
#[tokio::test]
async fn a_lost_answer_looked_up_through_an_html_or_wrong_path_404_is_not_applied_twice() {
    let html = lost_answer_case(
        "H404",
        "{sim}/records?business_key={business_key}",
        r#"{"respond": {"status": 404, "headers": {"Content-Type": "text/html"}, "body": "<html><body><h1>404 Not Found</h1></body></html>"}}"#,
        4,
    );
    // A router's 404 for a path it does not know: not the provider's own
    // "no such record" body.
    let typo = lost_answer_case(
        "W404",
        "{sim}/records?business_key={business_key}",
        r#"{"respond": {"status": 404, "body": {"error": "not_found"}}}"#,
        4,
    );
    for case in [html, typo] {
        let fresh = stores::sqlite().await;
        let outcome = drill::run(fresh.store.as_ref(), std::slice::from_ref(&case))
            .await
            .unwrap();
        let ran = &outcome.cases[0];
        let c = &ran.counters;
        assert_eq!(c.effects, 1, "{}: applied once", case.id);
        assert_eq!(c.requests, 1, "{}: never retried", case.id);
        let d = fresh
            .store
            .detail(&Scope::Every, &OperationId::parse(&case.id).unwrap())
            .await
            .unwrap();
        assert!(
            d.row.operation.state.is_held(),
            "{}: held, not {}",
            case.id,
            d.row.operation.state
        );
        assert!(
            d.observations.iter().all(|o| o.found),
            "{}: no observation of non-application",
            case.id
        );
        assert!(
            ran.pass,
            "{}: {:?} vs {:?}",
            case.id, ran.expected, ran.observed
        );
    }
}

/// A case file cannot point the drill's lookups anywhere but the simulator.
#[test]
fn a_case_whose_lookup_is_not_the_simulator_is_refused() {
    for url in [
        "http://169.254.169.254/latest/meta-data?k={business_key}",
        "http://127.0.0.1:8080/records?business_key={business_key}",
        "{sim}.evil.example/records?business_key={business_key}",
        "{sim}@evil.example/records?business_key={business_key}",
    ] {
        let t2 = include_str!("../assets/drill/seed.jsonl")
            .lines()
            .find(|l| l.contains(r#""id": "T2""#))
            .unwrap();
        let mut case: serde_json::Value = serde_json::from_str(t2).unwrap();
        case["contract"]["status_lookup"]["url"] = url.into();
        let errors = holdfast::sim::case::parse_case(&case.to_string(), 7).unwrap_err();
        assert!(
            errors
                .iter()
                .any(|e| e.field == "contract.status_lookup.url"
                    && e.reason.contains("calls only its simulated provider")),
            "{url}: {errors:?}"
        );
    }
}

/// The case files of `tests/fixtures/drill_paths.jsonl`: a call and a lookup at
/// paths of their own, a read-only GET tool, and a `201 {"id": …}` answer.
fn path_cases() -> Vec<holdfast::sim::case::Case> {
    holdfast::sim::parse_cases(include_str!("fixtures/drill_paths.jsonl")).unwrap()
}

/// The simulated provider serves each case's call at its contract's method and
/// path and its lookup at the lookup object's method and URL, ids put into the
/// placeholders as a real lookup puts them; a read-only tool is drilled like any
/// other, and nothing the executor asked went unrouted.
#[tokio::test]
async fn each_case_is_served_at_its_own_call_and_lookup_paths_and_a_get_tool_is_drilled() {
    let fresh = stores::sqlite().await;
    let outcome = drill::run(fresh.store.as_ref(), &path_cases())
        .await
        .unwrap();
    for case in &outcome.cases {
        assert!(case.pass, "{}: {:?}", case.id, case.failed);
        assert_eq!(case.counters.unrouted, 0, "{}", case.id);
        assert_eq!(case.observed.unrouted, Some(0), "{}", case.id);
    }
    let by_id = |id: &str| outcome.cases.iter().find(|c| c.id == id).unwrap();
    // PT1: one PUT at /v2/tickets/b-PT1, its lost answer found by one GET at
    // /v2/lookup/pinehaven/b-PT1 read through the lookup's own pointers.
    let pt1 = by_id("PT1");
    assert_eq!((pt1.counters.requests, pt1.counters.status_queries), (1, 1));
    let d = fresh
        .store
        .detail(&Scope::Every, &OperationId::parse("PT1").unwrap())
        .await
        .unwrap();
    assert_eq!(d.row.operation.state, State::Succeeded);
    assert!(d.observations.iter().any(|o| o.found));
    // GT1: a GET tool read twice (the first read dropped), nothing applied.
    let gt1 = by_id("GT1");
    assert_eq!((gt1.counters.requests, gt1.counters.effects), (2, 0));
    assert_eq!(gt1.observed.state, Some(State::Succeeded));
    let d = fresh
        .store
        .detail(&Scope::Every, &OperationId::parse("GT1").unwrap())
        .await
        .unwrap();
    assert!(
        d.attempts
            .iter()
            .all(|a| a.kind == AttemptKind::Request && a.request_hash.is_some()),
        "{:?}",
        d.attempts
    );
}

/// Every figure of `expect` is optional: a case that gives only a state is
/// judged by its state alone, one that gives nothing passes on anything, and a
/// given figure that is missed is named.
#[tokio::test]
async fn a_case_checks_only_the_figures_its_expect_gives() {
    let cr1 = path_cases().into_iter().find(|c| c.id == "CR1").unwrap();
    assert_eq!(cr1.expect.requests, None);
    let mut bare = cr1.clone();
    bare.id = "CR2".into();
    bare.contract.tool = "PATHS-CR2".into();
    bare.expect = Default::default();
    let mut wrong = cr1.clone();
    wrong.id = "CR3".into();
    wrong.contract.tool = "PATHS-CR3".into();
    wrong.expect.requests = Some(2);
    let fresh = stores::sqlite().await;
    let outcome = drill::run(fresh.store.as_ref(), &[cr1, bare, wrong])
        .await
        .unwrap();
    let [cr1, bare, wrong] = &outcome.cases[..] else {
        panic!("three cases")
    };
    assert!(cr1.pass && cr1.failed.is_empty(), "{:?}", cr1.failed);
    assert!(bare.pass, "{:?}", bare.failed);
    assert_eq!(bare.expected, drill::Figures::default());
    assert_eq!(bare.observed.requests, Some(1));
    assert!(!wrong.pass);
    let named: Vec<&str> = wrong.failed.iter().map(|m| m.expectation).collect();
    assert_eq!(named, ["requests"], "{:?}", wrong.failed);
    // A case line without any `expect` parses.
    let line = include_str!("fixtures/drill_paths.jsonl")
        .lines()
        .find(|l| l.contains(r#""id": "CR1""#))
        .unwrap();
    let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
    value.as_object_mut().unwrap().remove("expect");
    let parsed = holdfast::sim::case::parse_case(&value.to_string(), 1).unwrap();
    assert_eq!(parsed.expect, Default::default());
}

/// The executor judges a 2xx by the response shape the contract declares and
/// by nothing else: a `201 {"id": …}` succeeds under a contract declaring `/id`
/// as the record id, and without a declared shape; a declared pointer that is
/// missing, or a declared tenant that is another, takes the unsafe-output path.
#[tokio::test]
async fn a_2xx_is_judged_only_by_the_response_shape_the_contract_declares() {
    let cr1 = path_cases().into_iter().find(|c| c.id == "CR1").unwrap();
    let variant = |id: &str, response: Option<serde_json::Value>, body: serde_json::Value| {
        let mut case = cr1.clone();
        case.id = id.into();
        case.contract.tool = format!("PATHS-{id}");
        let mut contract = serde_json::json!({"type": "contract", "tool": "x", "version": "v",
            "action": "a", "method": "POST", "idempotency": {"supported": false},
            "status_lookup": true, "owner": "o", "max_attempts": 1, "budget_seconds": 60});
        if let Some(response) = response {
            contract["response"] = response;
        }
        case.contract.response =
            match holdfast::wire::parse_line(contract.to_string().as_bytes(), 1) {
                Ok(holdfast::wire::Record::Contract(c)) => c.response,
                other => panic!("{other:?}"),
            };
        case.provider[0].respond = holdfast::sim::case::Respond::Answer(
            serde_json::from_value(serde_json::json!({"status": 201, "body": body})).unwrap(),
        );
        case.expect = Default::default();
        case
    };
    let id_only = serde_json::json!({"record_id": "/id"});
    let cases = [
        variant(
            "RS1",
            Some(id_only.clone()),
            serde_json::json!({"id": "inv-1"}),
        ),
        variant("RS2", None, serde_json::json!({"id": "inv-2"})),
        variant("RS3", Some(id_only), serde_json::json!({"number": 7})),
        variant(
            "RS4",
            Some(serde_json::json!({"record_id": "/id", "tenant": "/owner/tenant"})),
            serde_json::json!({"id": "inv-4", "owner": {"tenant": "northwind"}}),
        ),
    ];
    let fresh = stores::sqlite().await;
    drill::run(fresh.store.as_ref(), &cases).await.unwrap();
    let detail = |id: &'static str| {
        let store = fresh.store.clone();
        async move {
            store
                .detail(&Scope::Every, &OperationId::parse(id).unwrap())
                .await
                .unwrap()
        }
    };
    let rs1 = detail("RS1").await;
    assert_eq!(rs1.row.operation.state, State::Succeeded);
    let reason = rs1
        .audit
        .iter()
        .filter_map(|r| r.draft.rationale.clone())
        .find(|r| r.contains("answered 201"))
        .unwrap_or_default();
    assert!(
        reason.contains("inv-1") && reason.contains("record_id"),
        "{reason:?}"
    );
    assert_eq!(detail("RS2").await.row.operation.state, State::Succeeded);
    for (id, words) in [
        ("RS3", "`/id` (record_id) is missing"),
        ("RS4", "another tenant"),
    ] {
        let d = detail(id).await;
        assert_eq!(d.row.operation.state, State::Blocked, "{id}");
        assert_eq!(
            d.row.operation.failure_mode,
            Some(holdfast::core::model::FailureMode::UnsafeOutput),
            "{id}"
        );
        let first = &d.attempts[0];
        assert_eq!(first.outcome, Outcome::InvalidResponse, "{id}");
        assert!(
            first
                .error_type
                .as_deref()
                .unwrap_or_default()
                .contains(words),
            "{id}: {:?}",
            first.error_type
        );
    }
}

/// On both backends a drill run under its own tenant beside a real one keeps
/// the report of the real tenants exactly as it was, its own figures computed
/// over its tenant alone, and the drill module tells a drill's operations from
/// others.
#[tokio::test]
async fn a_drill_in_its_own_tenant_leaves_the_real_tenants_report_unchanged_on_both_backends() {
    use holdfast::store::Scope;
    let mut kinds = vec![stores::Kind::Sqlite];
    if !stores::postgres_skipped().await {
        kinds.push(stores::Kind::Postgres);
    }
    for kind in kinds {
        let fresh = stores::fresh(kind).await;
        let store = fresh.store.as_ref();
        let demo = include_str!("../assets/demo/tc094.jsonl");
        let records: Vec<_> = demo
            .lines()
            .filter(|l| !l.trim().is_empty())
            .enumerate()
            .map(|(i, l)| holdfast::wire::parse_line(l.as_bytes(), i + 1).unwrap())
            .collect();
        drill::record(store, "demo", &records, drill::epoch())
            .await
            .unwrap();
        let now = drill::epoch() + Duration::hours(2);
        let session = holdfast::store::Session::new(
            fresh.store.clone(),
            holdfast::core::rules::Actor::local("test", None),
        );
        let before = holdfast::report::compute_kept(&session, now, &Default::default())
            .await
            .unwrap();
        let real = holdfast::report::without_drill(&session).await.unwrap();
        assert_eq!(real.scope(), &Scope::Every, "{kind:?}: no drill tenant yet");
        let (foreign, _) = drill::foreign_operation(store).await.unwrap().unwrap();
        assert_ne!(foreign.actor, drill::DRILL_AGENT);
        let outcome = drill::run_into(
            store,
            &drill::seed_cases().unwrap(),
            Some(drill::DRILL_TENANT),
        )
        .await
        .unwrap();
        assert!(outcome.all_pass(), "{kind:?}");
        assert_eq!(outcome.report.metrics[0].denominator, 16, "{kind:?}");
        let real = holdfast::report::without_drill(&session).await.unwrap();
        let scope = real.scope();
        assert!(
            matches!(scope, Scope::Tenants(t) if !t.iter().any(|t| t == drill::DRILL_TENANT) && !t.is_empty()),
            "{kind:?}: {scope:?}"
        );
        let after = holdfast::report::compute_kept(&real, now, &Default::default())
            .await
            .unwrap();
        assert_eq!(
            serde_json::to_value(&after).unwrap(),
            serde_json::to_value(&before).unwrap(),
            "{kind:?}: the drill moved the real tenants' figures"
        );
        let drilled = store
            .detail(&Scope::Every, &OperationId::parse("T2").unwrap())
            .await
            .unwrap();
        assert_eq!(drilled.row.operation.tenant, drill::DRILL_TENANT);
        assert_eq!(drilled.row.operation.actor, drill::DRILL_AGENT);
    }
}
