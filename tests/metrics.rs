//! Metrics and the release gate over the TC094 demo packet and small changes to it.

use chrono::{DateTime, Utc};
use holdfast::core::audit::{AuditDraft, AuditRow, genesis, seal};
use holdfast::core::metrics::{Disposition, MetricId, Report, VetoKind, report};
use holdfast::core::model::{Dataset, Role, State};
use holdfast::core::rules::transition_allowed;
use holdfast::wire::{Numbered, Record, parse_stream};

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

/// Builds the dataset an ingest would store, checking each history against the
/// state machine on the way.
fn dataset(records: &[Numbered]) -> Dataset {
    let mut data = Dataset::default();
    let mut transitions = Vec::new();
    for n in records {
        match &n.record {
            Record::Contract(c) => data.contracts.push(c.clone()),
            Record::Operation(o) => data.operations.push(o.clone()),
            Record::Attempt(a) => data.attempts.push(a.clone()),
            Record::Item(i) => data.items.push(i.clone()),
            Record::Observation(o) => data.observations.push(o.clone()),
            Record::Transition(t) => transitions.push(t.clone()),
            Record::Expectation(e) => data.expectations.push(e.clone()),
        }
    }
    let mut prev = genesis();
    let mut seq = 0;
    let mut push = |draft: AuditDraft, audit: &mut Vec<AuditRow>| {
        seq += 1;
        let row = seal(&prev, seq, draft);
        prev = row.hash.clone();
        audit.push(row);
    };
    for op in &data.operations {
        let mut steps: Vec<_> = transitions
            .iter()
            .filter(|t| t.operation == op.id)
            .collect();
        steps.sort_by_key(|t| t.at);
        let mut state = steps.first().map_or(op.state, |t| t.from);
        push(
            AuditDraft {
                operation: op.id.clone(),
                action: "ingest".into(),
                from: None,
                to: Some(state),
                by: "test".into(),
                role: Role::System,
                policy: None,
                on_behalf_of: None,
                rationale: None,
                evidence: Vec::new(),
                at: op.created_at,
            },
            &mut data.audit,
        );
        for t in steps {
            assert_eq!(t.from, state, "{}: history does not chain", op.id);
            assert!(
                transition_allowed(t.from, t.to),
                "{}: {} -> {}",
                op.id,
                t.from,
                t.to
            );
            state = t.to;
            push(
                AuditDraft {
                    operation: op.id.clone(),
                    action: "transition".into(),
                    from: Some(t.from),
                    to: Some(t.to),
                    by: t.by.clone(),
                    role: t.role.unwrap_or(Role::System),
                    policy: None,
                    on_behalf_of: None,
                    rationale: t.reason.clone(),
                    evidence: t.evidence.clone(),
                    at: t.at,
                },
                &mut data.audit,
            );
        }
        assert_eq!(state, op.state, "{}: history ends elsewhere", op.id);
    }
    data
}

fn demo() -> (Dataset, DateTime<Utc>) {
    let records = records();
    (dataset(&records), frozen_now(&records))
}

fn fraction(report: &Report, id: MetricId) -> (u32, u32, Option<f64>) {
    let m = report.metric(id).expect("every metric is reported");
    (m.numerator, m.denominator, m.percent)
}

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

#[test]
fn demo_reproduces_the_seven_figures_and_the_two_vetoes() {
    let (data, now) = demo();
    let r = report(&data, now);
    for m in &r.metrics {
        eprintln!("{} {} {:?}", m.id, m.fraction(), m.shortfalls);
    }
    assert_eq!(
        fraction(&r, MetricId::ContractPassRate),
        (26, 32, Some(81.25))
    );
    assert_eq!(
        fraction(&r, MetricId::OutcomeClassificationCompleteness),
        (29, 32, Some(90.63))
    );
    assert_eq!(
        fraction(&r, MetricId::SafeRetryPrecision),
        (11, 12, Some(91.67))
    );
    assert_eq!(
        fraction(&r, MetricId::ReconcileBeforeRepeatRate),
        (7, 8, Some(87.5))
    );
    assert_eq!(
        fraction(&r, MetricId::DuplicateEffectContainment),
        (5, 6, Some(83.33))
    );
    assert_eq!(
        fraction(&r, MetricId::PartialRecoveryCompleteness),
        (4, 5, Some(80.0))
    );
    assert_eq!(
        fraction(&r, MetricId::AttemptEvidenceCompleteness),
        (30, 32, Some(93.75))
    );
    assert_eq!(r.release.disposition, Disposition::NotDeployed);
    eprintln!("{:#?}", r.release);
    assert_eq!(r.release.vetoes.len(), 2);
    let retry = &r.release.vetoes[0];
    assert!(retry.kinds.contains(&VetoKind::RetryBeforeReconcile));
    assert!(retry.kinds.contains(&VetoKind::DuplicatePrimaryEffect));
    let hostile = &r.release.vetoes[1];
    assert!(hostile.kinds.contains(&VetoKind::HostileOutputToAction));
    let _ = State::Unknown;
}
