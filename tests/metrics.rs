//! Metrics and the release gate: the TC094 demo packet ingested into a fresh store
//! reproduces the seed's seven figures and two vetoes; one change to one operation
//! moves each figure as its rule says; the gate opens on a clean run and closes on
//! each kind of veto.

use chrono::{DateTime, Duration, Utc};
use holdfast::core::clock::parse_instant;
use holdfast::core::ids::{OperationId, Sha256};
use holdfast::core::metrics::{Disposition, MetricId, Report, VetoKind, report};
use holdfast::core::model::*;
use holdfast::store::IngestMode;
use holdfast::store::Scope;
use holdfast::wire::{Numbered, Record, parse_stream};

use crate::support;

const PACKET: &str = include_str!("../assets/demo/tc094.jsonl");

fn records() -> Vec<Numbered> {
    let parsed = parse_stream(PACKET.as_bytes(), &mut |_| {}).expect("read the packet");
    assert!(
        parsed.is_clean(),
        "packet lines refused: {:?}",
        parsed.errors
    );
    parsed.records
}

fn at(text: &str) -> DateTime<Utc> {
    parse_instant(text).expect("a test instant")
}

/// The latest instant the packet's records name: the demo's frozen clock.
fn frozen_now(records: &[Numbered]) -> DateTime<Utc> {
    records
        .iter()
        .flat_map(|n| match &n.record {
            Record::Operation(o) => {
                vec![Some(o.created_at), o.approval.as_ref().and_then(|a| a.at)]
            }
            Record::Attempt(a) => vec![Some(a.started_at), a.ended_at],
            Record::Observation(o) => vec![Some(o.observed_at)],
            Record::Transition(t) => vec![Some(t.at)],
            _ => vec![],
        })
        .flatten()
        .max()
        .expect("the packet names instants")
}

/// Ingests `records` strictly into a fresh SQLite store and reports at `now`.
async fn report_at(records: Vec<Numbered>, now: DateTime<Utc>) -> Report {
    let fresh = support::stores::sqlite().await;
    let outcome = fresh
        .store
        .ingest(records, IngestMode::Strict, "test", now)
        .await
        .expect("ingest");
    assert!(
        outcome.rejected.is_empty(),
        "refused: {:?}",
        outcome.rejected
    );
    let data = fresh.store.dataset(&Scope::Every).await.expect("dataset");
    report(&data, now)
}

/// The demo packet, changed by `change`, reported at the demo's frozen clock.
async fn demo_with(change: impl FnOnce(&mut Vec<Numbered>)) -> Report {
    let mut records = records();
    let now = frozen_now(&records);
    change(&mut records);
    report_at(records, now).await
}

fn id(text: &str) -> OperationId {
    OperationId::parse(text).expect("an operation id")
}

fn ids(list: &[&str]) -> Vec<OperationId> {
    list.iter().map(|s| id(s)).collect()
}

fn figure(report: &Report, metric: MetricId) -> (u32, u32) {
    let m = report.metric(metric).expect("every metric is reported");
    (m.numerator, m.denominator)
}

/// Changes the demo by `change` and checks one figure against `expected`.
async fn assert_figure(
    metric: MetricId,
    expected: (u32, u32),
    why: &str,
    change: impl FnOnce(&mut Vec<Numbered>),
) {
    let r = demo_with(change).await;
    let m = r.metric(metric).expect("every metric is reported");
    assert_eq!(
        (m.numerator, m.denominator),
        expected,
        "{metric}: {why}; {:?}",
        m.shortfalls
    );
}

fn denominator(report: &Report, metric: MetricId) -> Vec<OperationId> {
    report
        .metric(metric)
        .expect("every metric is reported")
        .denominator_ids
        .clone()
}

fn push(records: &mut Vec<Numbered>, record: Record) {
    let line = records.iter().map(|n| n.line).max().unwrap_or(0) + 1;
    records.push(Numbered {
        line,
        record,
        line_sha256: None,
    });
}

fn operation<'a>(records: &'a mut [Numbered], op: &str) -> &'a mut Operation {
    records
        .iter_mut()
        .find_map(|n| match &mut n.record {
            Record::Operation(o) if o.id.as_str() == op => Some(o),
            _ => None,
        })
        .expect("the operation is in the packet")
}

fn attempt<'a>(records: &'a mut [Numbered], op: &str, seq: u32) -> &'a mut Attempt {
    records
        .iter_mut()
        .find_map(|n| match &mut n.record {
            Record::Attempt(a) if a.operation.as_str() == op && a.seq == seq => Some(a),
            _ => None,
        })
        .expect("the attempt is in the packet")
}

fn expectation<'a>(records: &'a mut [Numbered], op: &str) -> &'a mut Expectation {
    records
        .iter_mut()
        .find_map(|n| match &mut n.record {
            Record::Expectation(e) if e.operation.as_str() == op => Some(e),
            _ => None,
        })
        .expect("the expectation is in the packet")
}

/// Drops every record of the given operations.
fn without(records: &mut Vec<Numbered>, ops: &[&str]) {
    let gone = |o: &OperationId| ops.contains(&o.as_str());
    records.retain(|n| match &n.record {
        Record::Contract(_) => true,
        Record::Operation(o) => !gone(&o.id),
        Record::Attempt(a) => !gone(&a.operation),
        Record::Item(i) => !gone(&i.operation),
        Record::Observation(o) => !gone(&o.operation),
        Record::Transition(t) => !gone(&t.operation),
        Record::Expectation(e) => !gone(&e.operation),
    });
}

/// A copy of an operation under a new id, with no parent, dependency or key.
fn clone_operation(records: &mut [Numbered], from: &str, to: &str) -> Operation {
    let mut op = operation(records, from).clone();
    op.id = id(to);
    op.idempotency_key = None;
    op.depends_on = Vec::new();
    op.parent = None;
    op.relation = None;
    op
}

fn observation(op: &str, n: u32, when: &str, found: bool, effects: Option<u32>) -> Record {
    Record::Observation(Observation {
        id: format!("O-{op}-x{n}"),
        operation: id(op),
        observed_at: at(when),
        source: ObservationSource::TargetRecord,
        found,
        matches: found.then_some(Matches {
            target: Some(true),
            payload_hash: Some(true),
            owner: Some(true),
            version: Some(true),
        }),
        effect_count: effects,
        raw_hash: Some(Sha256::of(format!("raw:{op}:{n}").as_bytes())),
        note: None,
    })
}

// ------------------------------------------------------------------ the demo

#[test]
fn demo_packet_has_the_shape_of_the_run() {
    let records = records();
    let count = |name: &str| {
        records
            .iter()
            .filter(|n| n.record.type_name() == name)
            .count()
    };
    assert_eq!(count("contract"), 8);
    assert_eq!(count("operation"), 32);
    assert_eq!(count("attempt"), 47);
    assert_eq!(count("expectation"), 32);
    let mut per_mode = std::collections::BTreeMap::new();
    for n in &records {
        if let Record::Operation(o) = &n.record {
            *per_mode.entry(o.failure_mode).or_insert(0) += 1;
        }
    }
    assert_eq!(per_mode.len(), 8);
    assert!(per_mode.values().all(|n| *n == 4), "{per_mode:?}");
}

#[tokio::test]
async fn demo_reproduces_the_seven_figures() {
    let r = demo_with(|_| {}).await;
    let expected = [
        (MetricId::ContractPassRate, 26, 32, 81.25),
        (MetricId::OutcomeClassificationCompleteness, 29, 32, 90.63),
        (MetricId::SafeRetryPrecision, 11, 12, 91.67),
        (MetricId::ReconcileBeforeRepeatRate, 7, 8, 87.5),
        (MetricId::DuplicateEffectContainment, 5, 6, 83.33),
        (MetricId::PartialRecoveryCompleteness, 4, 5, 80.0),
        (MetricId::AttemptEvidenceCompleteness, 30, 32, 93.75),
    ];
    for (metric, numerator, denominator, percent) in expected {
        let m = r.metric(metric).expect("reported");
        assert_eq!(
            (m.numerator, m.denominator, m.percent),
            (numerator, denominator, Some(percent)),
            "{metric}: {:?}",
            m.shortfalls
        );
        assert_eq!(m.numerator_ids.len(), numerator as usize);
        assert_eq!(m.denominator_ids.len(), denominator as usize);
        assert!(
            m.numerator_ids
                .iter()
                .all(|i| m.denominator_ids.contains(i))
        );
    }
    assert_eq!(
        denominator(&r, MetricId::ReconcileBeforeRepeatRate),
        ids(&["F09", "F10", "F18", "F23", "F24", "F27", "F28", "F29"])
    );
    assert_eq!(
        denominator(&r, MetricId::DuplicateEffectContainment),
        ids(&["F10", "F18", "F25", "F26", "F27", "F28"])
    );
    assert_eq!(
        denominator(&r, MetricId::PartialRecoveryCompleteness),
        ids(&["F04", "F21", "F22", "F23", "F24"])
    );
}

#[tokio::test]
async fn demo_is_not_deployed_for_exactly_the_seeds_two_vetoes() {
    let r = demo_with(|_| {}).await;
    assert_eq!(r.release.disposition, Disposition::NotDeployed);
    let vetoes: Vec<(&str, &[VetoKind])> = r
        .release
        .vetoes
        .iter()
        .map(|v| (v.operation.as_str(), v.kinds.as_slice()))
        .collect();
    assert_eq!(
        vetoes,
        vec![
            (
                "F28",
                &[
                    VetoKind::ExpectationFailed,
                    VetoKind::RetryBeforeReconcile,
                    VetoKind::DuplicatePrimaryEffect
                ][..]
            ),
            (
                "F31",
                &[VetoKind::ExpectationFailed, VetoKind::HostileOutputToAction][..]
            ),
        ]
    );
    let mut records = records();
    let redelivery = attempt(&mut records, "F28", 2).id.clone();
    let hostile = attempt(&mut records, "F31", 1).id.clone();
    let retry = &r.release.vetoes[0].evidence;
    assert!(retry.contains(&redelivery), "{retry:?}");
    assert!(retry.contains(&"O-F28-1".to_owned()), "{retry:?}");
    let output = &r.release.vetoes[1].evidence;
    assert_eq!(output, &vec![hostile, "F32".to_owned()]);
}

#[tokio::test]
async fn demo_operational_figures() {
    let r = demo_with(|_| {}).await;
    let o = &r.operational;
    assert_eq!(o.logical_operations, 32);
    let held: Vec<(State, u32)> = o
        .by_state
        .iter()
        .copied()
        .filter(|(s, _)| s.is_held())
        .collect();
    assert_eq!(
        held,
        vec![
            (State::Unknown, 2),
            (State::Partial, 1),
            (State::Blocked, 9)
        ]
    );
    assert_eq!(o.held, 12);
    assert_eq!(o.unknown_age.count, 2);
    assert_eq!(o.unknown_age.oldest, Some(id("F27")));
    // F27 has been UNKNOWN since 09:01:31, F09 since 10:01:31; the clock is 11:40:00.
    assert_eq!(o.unknown_age.oldest_seconds, Some(9509));
    assert_eq!(o.unknown_age.median_seconds, Some((9509 + 5909) / 2));
    assert_eq!(o.unknown_age.overdue, ids(&["F09", "F23", "F27"]));
    let bars: u32 = o.unknown_age.histogram.iter().map(|b| b.count).sum();
    assert_eq!(bars, 2);
    assert_eq!(o.amplification.physical_attempts, 47);
    assert_eq!(o.amplification.requests, 44);
    assert_eq!(o.amplification.status_queries, 3);
    assert_eq!(o.amplification.per_logical, Some(1.47));
    let queue = o
        .amplification
        .by_layer
        .iter()
        .find(|l| l.layer == "queue")
        .expect("the queue layer made a call");
    assert_eq!((queue.requests, queue.operations), (1, 1));
    assert_eq!(o.throttled.throttled, 6);
    assert_eq!(o.throttled.requests, 44);
    assert_eq!(o.partial_in_progress.len(), 1);
    assert_eq!(o.partial_in_progress[0].operation, id("F23"));
    assert!(o.partial_in_progress[0].waiting_for.contains("downstream"));
    assert!(o.pending_proposals.is_empty());
}

// ------------------------------------------------------------------ one change each

#[tokio::test]
async fn contract_pass_rate_moves_with_one_case_and_ignores_unexpected_operations() {
    assert_figure(
        MetricId::ContractPassRate,
        (25, 32),
        "a case that expected another state fails",
        |rec| expectation(rec, "F06").expected_state = State::Failed,
    )
    .await;
    assert_figure(
        MetricId::ContractPassRate,
        (25, 32),
        "a prohibition nobody can check fails the case",
        |rec| {
            let e = expectation(rec, "F01");
            e.prohibited.push("guess_the_outcome".into());
        },
    )
    .await;
    assert_figure(
        MetricId::ContractPassRate,
        (26, 32),
        "an operation without an expectation is no case",
        |rec| {
            let op = clone_operation(rec, "F06", "F40");
            push(rec, Record::Operation(op));
        },
    )
    .await;
}

#[tokio::test]
async fn classification_needs_the_evidence_of_the_state() {
    assert_figure(
        MetricId::OutcomeClassificationCompleteness,
        (28, 32),
        "UNKNOWN without a next observation, and nothing observed since, is not a plan",
        |rec| {
            operation(rec, "F09").next_observation_at = None;
            rec.retain(
                |n| !matches!(&n.record, Record::Observation(o) if o.operation.as_str() == "F09"),
            );
        },
    )
    .await;
    assert_figure(
        MetricId::OutcomeClassificationCompleteness,
        (29, 32),
        "an observation since the last request that settles it is the classification",
        |rec| {
            operation(rec, "F09").next_observation_at = None;
            push(
                rec,
                observation("F09", 2, "2026-09-05T11:30:00Z", true, Some(1)),
            );
        },
    )
    .await;
    assert_figure(
        MetricId::OutcomeClassificationCompleteness,
        (30, 32),
        "an observation of the target verifies the success",
        |rec| {
            push(
                rec,
                observation("F31", 1, "2026-09-05T10:30:00Z", true, Some(1)),
            )
        },
    )
    .await;
    assert_figure(
        MetricId::OutcomeClassificationCompleteness,
        (29, 33),
        "every operation counts; one never classified adds to the denominator only",
        |rec| {
            let mut op = clone_operation(rec, "F06", "F40");
            op.state = State::Planned;
            push(rec, Record::Operation(op));
        },
    )
    .await;
}

#[tokio::test]
async fn safe_retry_precision_judges_each_retry_when_it_was_made() {
    assert_figure(
        MetricId::SafeRetryPrecision,
        (10, 12),
        "a retry before Retry-After is not what the matrix allowed",
        |rec| {
            let early = at("2026-09-05T09:37:20Z");
            let retry = attempt(rec, "F13", 2);
            retry.started_at = early;
            retry.ended_at = Some(early + Duration::seconds(1));
        },
    )
    .await;
    assert_figure(
        MetricId::SafeRetryPrecision,
        (11, 12),
        "status queries and deliveries stopped before sending are no retries",
        |rec| {
            let mut query = attempt(rec, "F09", 2).clone();
            query.id = "A900".into();
            query.seq = 3;
            query.started_at = at("2026-09-05T10:30:00Z");
            query.ended_at = Some(at("2026-09-05T10:30:01Z"));
            push(rec, Record::Attempt(query));
            let mut suppressed = attempt(rec, "F25", 1).clone();
            suppressed.id = "A901".into();
            suppressed.seq = 2;
            suppressed.phase = Phase::NotSent;
            suppressed.outcome = Outcome::Rejected;
            suppressed.error_type = Some("duplicate_suppressed".into());
            suppressed.started_at = at("2026-09-05T09:58:00Z");
            suppressed.ended_at = Some(at("2026-09-05T09:58:00Z"));
            push(rec, Record::Attempt(suppressed));
        },
    )
    .await;
}

/// Drops one observation and every transition's reference to it.
fn drop_observation(records: &mut Vec<Numbered>, observation: &str) {
    records.retain(|n| !matches!(&n.record, Record::Observation(o) if o.id == observation));
    for n in records.iter_mut() {
        if let Record::Transition(t) = &mut n.record {
            t.evidence.retain(|e| e != observation);
        }
    }
}

#[tokio::test]
async fn reconcile_before_repeat_counts_only_writes_whose_outcome_was_in_doubt() {
    assert_figure(
        MetricId::ReconcileBeforeRepeatRate,
        (6, 8),
        "without an observation of the target nothing was reconciled",
        |rec| drop_observation(rec, "O-F24-1"),
    )
    .await;
    assert_figure(
        MetricId::ReconcileBeforeRepeatRate,
        (7, 9),
        "a timeout after the request was sent needs reconciliation before the retry",
        |rec| attempt(rec, "F11", 1).phase = Phase::RequestSent,
    )
    .await;
    let r = demo_with(|rec| {
        let mut op = clone_operation(rec, "F05", "F40");
        op.state = State::Blocked;
        push(rec, Record::Operation(op));
        let mut local = attempt(rec, "F05", 1).clone();
        local.id = "A900".into();
        local.operation = id("F40");
        push(rec, Record::Attempt(local));
    })
    .await;
    assert_eq!(figure(&r, MetricId::ReconcileBeforeRepeatRate), (7, 8));
    let outside = denominator(&r, MetricId::ReconcileBeforeRepeatRate);
    for excluded in ["F05", "F11", "F19", "F40"] {
        assert!(
            !outside.contains(&id(excluded)),
            "{excluded}: validation failures and known no-send failures are outside"
        );
    }
}

#[tokio::test]
async fn duplicate_containment_counts_replays_and_repeated_deliveries() {
    assert_figure(
        MetricId::DuplicateEffectContainment,
        (4, 6),
        "a second effect of a replayed intent is not contained",
        |rec| {
            push(
                rec,
                observation("F25", 2, "2026-09-05T11:20:00Z", true, Some(2)),
            )
        },
    )
    .await;
    assert_figure(
        MetricId::DuplicateEffectContainment,
        (5, 7),
        "two deliveries that may both have applied put a write at duplicate risk; \
         with no observation of it, its containment is unverified",
        |rec| attempt(rec, "F11", 1).phase = Phase::RequestSent,
    )
    .await;
    assert_figure(
        MetricId::DuplicateEffectContainment,
        (5, 6),
        "a read repeated after a reset is not a duplicate-risk operation",
        |rec| {
            push(
                rec,
                observation("F17", 1, "2026-09-05T10:30:00Z", true, Some(2)),
            )
        },
    )
    .await;
}

#[tokio::test]
async fn duplicate_containment_is_unverified_without_an_observation() {
    let r = demo_with(|rec| drop_observation(rec, "O-F25-1")).await;
    let m = r
        .metric(MetricId::DuplicateEffectContainment)
        .expect("every metric is reported");
    assert_eq!(
        (m.numerator, m.denominator),
        (4, 6),
        "an at-risk operation nobody observed is not shown contained; {:?}",
        m.shortfalls
    );
    assert!(m.denominator_ids.contains(&id("F25")));
    assert!(!m.numerator_ids.contains(&id("F25")));
    assert_eq!(m.unverified_ids, ids(&["F25"]));
    let why = m
        .shortfalls
        .iter()
        .find(|(op, _)| op == &id("F25"))
        .map(|(_, why)| why.as_str());
    assert!(
        why.is_some_and(|w| w.starts_with("unverified")),
        "{:?}",
        m.shortfalls
    );

    let json = serde_json::to_value(&r).expect("a report serializes");
    let listed: Vec<&str> = json["metrics"][4]["unverified_ids"]
        .as_array()
        .expect("the containment figure lists its unverified operations")
        .iter()
        .filter_map(|v| v.as_str())
        .collect();
    assert_eq!(listed, ["F25"]);

    let demo = demo_with(|_| {}).await;
    let m = demo
        .metric(MetricId::DuplicateEffectContainment)
        .expect("every metric is reported");
    assert!(m.unverified_ids.is_empty(), "{:?}", m.unverified_ids);
}

#[tokio::test]
async fn partial_recovery_credits_only_verified_recoveries() {
    assert_figure(
        MetricId::PartialRecoveryCompleteness,
        (5, 5),
        "downstream evidence completes the compensation",
        |rec| {
            let mut check = observation("F23", 2, "2026-09-05T11:20:00Z", true, Some(1));
            if let Record::Observation(o) = &mut check {
                o.source = ObservationSource::Downstream;
            }
            push(rec, check);
            operation(rec, "F23").state = State::Compensated;
            let mark = TransitionRecord {
                operation: id("F23"),
                from: State::Partial,
                to: State::Compensated,
                by: "rev:ola".into(),
                role: Some(Role::Reviewer),
                at: at("2026-09-05T11:25:00Z"),
                reason: Some("mark compensated with downstream evidence".into()),
                evidence: vec!["F20".into(), "O-F23-x2".into()],
            };
            push(rec, Record::Transition(mark));
        },
    )
    .await;
    assert_figure(
        MetricId::PartialRecoveryCompleteness,
        (3, 5),
        "COMPENSATED whose downstream check predates the compensation is not credited as \
         restored",
        // Review takes a downstream check made after F22 was created (without one
        // the file's own decision is refused, G4); the metric credits only one made
        // after its compensation F19 (10:40).
        |rec| {
            for n in rec.iter_mut() {
                if let Record::Observation(o) = &mut n.record
                    && o.id == "O-F22-1"
                {
                    o.observed_at = at("2026-09-05T10:35:00Z");
                }
            }
        },
    )
    .await;
    assert_figure(
        MetricId::PartialRecoveryCompleteness,
        (4, 5),
        "items alone do not make an operation partial",
        |rec| {
            let item = Item {
                operation: id("F10"),
                index: 1,
                label: Some("ticket".into()),
                state: ItemState::Succeeded,
                authoritative_id: Some("TCK-90377".into()),
            };
            push(rec, Record::Item(item));
        },
    )
    .await;
}

#[tokio::test]
async fn attempt_evidence_names_every_missing_field() {
    let r = demo_with(|rec| attempt(rec, "F25", 1).provider_request_id = None).await;
    assert_eq!(figure(&r, MetricId::AttemptEvidenceCompleteness), (29, 32));
    let m = r
        .metric(MetricId::AttemptEvidenceCompleteness)
        .expect("reported");
    let why = m
        .shortfalls
        .iter()
        .find(|(op, _)| op.as_str() == "F25")
        .map(|(_, why)| why.as_str());
    assert!(
        why.is_some_and(|w| w.contains("provider_request_id")),
        "{why:?}"
    );
    assert_figure(
        MetricId::AttemptEvidenceCompleteness,
        (31, 33),
        "an operation never sent owes no attempt",
        |rec| {
            let mut op = clone_operation(rec, "F06", "F40");
            op.state = State::Planned;
            push(rec, Record::Operation(op));
        },
    )
    .await;
}

// ------------------------------------------------------------------ the gate

/// The demo run without the two vetoed cases and the action proposed from hostile
/// output.
fn clean(records: &mut Vec<Numbered>) {
    without(records, &["F28", "F31", "F32"]);
}

#[tokio::test]
async fn release_is_deployable_on_a_clean_run() {
    let r = demo_with(clean).await;
    assert_eq!(
        r.release.disposition,
        Disposition::Deployable,
        "{:?}",
        r.release
    );
    assert!(r.release.vetoes.is_empty());
    assert_eq!(figure(&r, MetricId::ContractPassRate), (26, 29));
}

/// Drops every expectation record: nothing left for the contract check to judge.
fn no_expectations(records: &mut Vec<Numbered>) {
    records.retain(|n| !matches!(n.record, Record::Expectation(_)));
}

#[tokio::test]
async fn the_gate_never_passes_on_no_evaluated_case() {
    let r = demo_with(|rec| {
        clean(rec);
        no_expectations(rec);
    })
    .await;
    assert_eq!(figure(&r, MetricId::ContractPassRate), (0, 0));
    assert!(r.release.vetoes.is_empty(), "{:?}", r.release.vetoes);
    assert_eq!(r.release.disposition, Disposition::NotEvaluated);
    assert_eq!(
        serde_json::to_value(r.release.disposition).unwrap(),
        "NOT_EVALUATED"
    );
    // A veto found without any expectation still stops the release.
    let r = demo_with(no_expectations).await;
    assert_eq!(figure(&r, MetricId::ContractPassRate), (0, 0));
    assert_eq!(r.release.disposition, Disposition::NotDeployed);
    // And one evaluated case is enough to be judged.
    let r = demo_with(|rec| {
        clean(rec);
        let keep = expectation(rec, "F01").clone();
        no_expectations(rec);
        push(rec, Record::Expectation(keep));
    })
    .await;
    assert_eq!(figure(&r, MetricId::ContractPassRate).1, 1);
    assert_eq!(r.release.disposition, Disposition::Deployable);
}

async fn vetoed(change: impl FnOnce(&mut Vec<Numbered>)) -> Vec<(OperationId, Vec<VetoKind>)> {
    let r = demo_with(|rec| {
        clean(rec);
        change(rec);
    })
    .await;
    assert_eq!(r.release.disposition, Disposition::NotDeployed);
    r.release
        .vetoes
        .into_iter()
        .map(|v| (v.operation, v.kinds))
        .collect()
}

#[tokio::test]
async fn a_failing_veto_expectation_closes_the_gate() {
    let vetoes = vetoed(|rec| expectation(rec, "F09").expected_state = State::Succeeded).await;
    assert_eq!(vetoes, vec![(id("F09"), vec![VetoKind::ExpectationFailed])]);
}

#[tokio::test]
async fn a_retry_before_reconciliation_closes_the_gate() {
    let vetoes = vetoed(|rec| {
        expectation(rec, "F09").veto = Some(false);
        let mut retry = attempt(rec, "F09", 1).clone();
        retry.id = "A900".into();
        retry.seq = 3;
        retry.started_at = at("2026-09-05T10:01:40Z");
        retry.ended_at = Some(at("2026-09-05T10:01:41Z"));
        push(rec, Record::Attempt(retry));
    })
    .await;
    assert_eq!(
        vetoes,
        vec![(id("F09"), vec![VetoKind::RetryBeforeReconcile])]
    );
}

#[tokio::test]
async fn a_duplicate_primary_effect_closes_the_gate() {
    let vetoes = vetoed(|rec| {
        expectation(rec, "F10").veto = Some(false);
        push(
            rec,
            observation("F10", 3, "2026-09-05T11:00:00Z", true, Some(2)),
        );
    })
    .await;
    assert_eq!(
        vetoes,
        vec![(id("F10"), vec![VetoKind::DuplicatePrimaryEffect])]
    );
}

#[tokio::test]
async fn hostile_output_reaching_a_proposed_action_closes_the_gate() {
    let vetoes = vetoed(|rec| {
        expectation(rec, "F30").veto = Some(false);
        let mut op = clone_operation(rec, "F06", "F40");
        op.depends_on = vec![id("F30")];
        op.created_at = at("2026-09-05T10:16:00Z");
        push(rec, Record::Operation(op));
    })
    .await;
    assert_eq!(
        vetoes,
        vec![(id("F30"), vec![VetoKind::HostileOutputToAction])]
    );
}

#[tokio::test]
async fn a_cross_tenant_action_closes_the_gate() {
    let vetoes = vetoed(|rec| {
        operation(rec, "F13").tenant = "harborline".into();
    })
    .await;
    assert_eq!(vetoes, vec![(id("F13"), vec![VetoKind::CrossTenantAction])]);

    let vetoes = vetoed(|rec| {
        let mut landed = observation("F11", 1, "2026-09-05T09:40:00Z", true, Some(1));
        if let Record::Observation(o) = &mut landed
            && let Some(m) = &mut o.matches
        {
            m.owner = Some(false);
        }
        push(rec, landed);
    })
    .await;
    assert_eq!(vetoes, vec![(id("F11"), vec![VetoKind::CrossTenantAction])]);
}

// ------------------------------------------------------------------ the command

/// Runs the real binary with its own home, data and config directories.
fn holdfast(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(args)
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CONFIG_HOME", dir.join("config"))
        .env_remove("HOLDFAST_DB")
        .env_remove("HOLDFAST_NOW")
        .output()
        .expect("run holdfast")
}

#[test]
fn report_on_a_store_without_expectations_is_not_evaluated_and_exits_5() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("store.db");
    let db = db.to_str().expect("a UTF-8 temp path");
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/review.jsonl");
    assert!(
        !std::fs::read_to_string(fixture)
            .unwrap()
            .contains("\"expectation\"")
    );
    let loaded = holdfast(dir.path(), &["--db", db, "ingest", fixture]);
    assert!(loaded.status.success(), "{loaded:?}");
    let now = "2026-09-05T11:40:00Z";
    let text = holdfast(dir.path(), &["--db", db, "--now", now, "report"]);
    assert_eq!(text.status.code(), Some(5), "{text:?}");
    let shown = String::from_utf8_lossy(&text.stdout);
    assert!(
        shown.contains("RELEASE: NOT_EVALUATED (0 vetoes)"),
        "{shown}"
    );
    assert!(!shown.contains("DEPLOYABLE"), "{shown}");
    assert!(shown.contains("nothing evaluated"), "{shown}");
    let json = holdfast(dir.path(), &["--db", db, "--now", now, "report", "--json"]);
    assert_eq!(json.status.code(), Some(5), "{json:?}");
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).expect("JSON");
    assert_eq!(json["release"]["disposition"], "NOT_EVALUATED");
    assert_eq!(json["metrics"][0]["denominator"], 0);
}

#[test]
fn report_json_has_the_documented_shape() {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("demo.db");
    let db = db.to_str().expect("a UTF-8 temp path");
    let loaded = holdfast(dir.path(), &["--db", db, "demo", "--print"]);
    assert!(loaded.status.success(), "{loaded:?}");
    let out = holdfast(
        dir.path(),
        &[
            "--db",
            db,
            "--now",
            "2026-09-05T11:40:00Z",
            "report",
            "--json",
        ],
    );
    assert!(out.status.success(), "{out:?}");
    let json: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("report --json is JSON");
    let metrics = json["metrics"].as_array().expect("metrics is an array");
    let ids: Vec<&str> = metrics.iter().filter_map(|m| m["id"].as_str()).collect();
    assert_eq!(
        ids,
        [
            "contract_pass_rate",
            "outcome_classification_completeness",
            "safe_retry_precision",
            "reconcile_before_repeat_rate",
            "duplicate_effect_containment",
            "partial_recovery_completeness",
            "attempt_evidence_completeness"
        ]
    );
    for m in metrics {
        let keys: Vec<&str> = m
            .as_object()
            .expect("a metric is an object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "id",
                "numerator",
                "denominator",
                "percent",
                "numerator_ids",
                "denominator_ids"
            ]
        );
    }
    assert_eq!(metrics[2]["numerator"], 11);
    assert_eq!(metrics[2]["denominator"], 12);
    assert_eq!(metrics[2]["percent"], 91.67);
    assert_eq!(json["release"]["disposition"], "NOT_DEPLOYED");
    let vetoed: Vec<&str> = json["release"]["vetoes"]
        .as_array()
        .expect("vetoes is an array")
        .iter()
        .filter_map(|v| v["operation"].as_str())
        .collect();
    assert_eq!(vetoed, ["F28", "F31"]);

    let text = holdfast(
        dir.path(),
        &["--db", db, "--now", "2026-09-05T11:40:00Z", "report"],
    );
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("RELEASE: NOT_DEPLOYED (2 vetoes)"), "{text}");
    assert!(text.contains("Safe-retry precision"), "{text}");
}
