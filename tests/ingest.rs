//! Ingest end to end: a file with one kind of bad line at a time goes through the
//! reader, the parser, the planner and the store. Strict ingest reports the line and
//! field and commits nothing; with a rejects file exactly the good lines commit and
//! exactly the bad lines are written, verbatim. Each test runs on both backends.

use crate::support;

use chrono::{DateTime, Utc};
use holdfast::core::clock::parse_instant;
use holdfast::ingest::{IngestOutcome, Source, ingest_source};
use support::stores::{self, Kind};

const SMALL: &str = include_str!("fixtures/small.jsonl");

fn now() -> DateTime<Utc> {
    parse_instant("2026-09-05T10:03:00Z").unwrap()
}

struct Run {
    outcome: IngestOutcome,
    head: i64,
    rejects: Option<Vec<u8>>,
}

/// Ingests `bytes` (with or without a rejects file) into a store that already
/// holds `before`.
async fn run(kind: Kind, before: Option<&str>, bytes: &[u8], quarantine: bool) -> Run {
    let fresh = stores::fresh(kind).await;
    let dir = tempfile::tempdir().unwrap();
    if let Some(before) = before {
        let path = dir.path().join("before.jsonl");
        std::fs::write(&path, before).unwrap();
        let first = ingest_source(
            fresh.store.as_ref(),
            Source::Path(path),
            None,
            &holdfast::store::Ingester::anyone("test"),
            now(),
        )
        .await
        .unwrap();
        assert!(!first.refused(), "{:?}", first.rejected);
    }
    let start = fresh.store.head_seq().await.unwrap();
    let path = dir.path().join("input.jsonl");
    std::fs::write(&path, bytes).unwrap();
    let rejects_path = dir.path().join("rejects.jsonl");
    let outcome = ingest_source(
        fresh.store.as_ref(),
        Source::Path(path),
        quarantine.then_some(rejects_path.as_path()),
        &holdfast::store::Ingester::anyone("test"),
        now(),
    )
    .await
    .unwrap();
    Run {
        outcome,
        head: fresh.store.head_seq().await.unwrap() - start,
        rejects: quarantine.then(|| std::fs::read(&rejects_path).unwrap()),
    }
}

/// The small fixture with line `n` (1-based) replaced by `bad`.
fn with_line(n: usize, bad: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, line) in SMALL.lines().enumerate() {
        if i + 1 == n {
            out.extend_from_slice(bad);
        } else {
            out.extend_from_slice(line.as_bytes());
        }
        out.push(b'\n');
    }
    out
}

fn line(n: usize) -> &'static str {
    SMALL.lines().nth(n - 1).unwrap()
}

async fn refused_strictly(kind: Kind, bytes: &[u8], line_no: usize, field: &str) {
    let strict = run(kind, None, bytes, false).await;
    assert!(
        strict
            .outcome
            .rejected
            .examples
            .iter()
            .any(|e| e.line == line_no && e.field == field),
        "expected line {line_no} field {field}: {:?}",
        strict.outcome.rejected
    );
    assert!(!strict.outcome.committed_any);
    assert_eq!(strict.head, 0, "nothing committed");
}

async fn each_kind_of_bad_line_is_reported_by_line_and_field_and_nothing_commits(kind: Kind) {
    let observation = line(5);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            observation
                .replace("\"note\"", "\"colour\":1,\"note\"")
                .into_bytes(),
            "colour",
        ),
        (
            observation
                .replace("\"found\":true", "\"found\":true,\"found\":false")
                .into_bytes(),
            "found",
        ),
        (
            observation
                .replace("provider_status", "provider_status\",\"effect_count\":\"x")
                .into_bytes(),
            "effect_count",
        ),
        (
            observation
                .replace("2026-09-05T10:01:00Z", "2026-09-05 10:01")
                .into_bytes(),
            "observed_at",
        ),
        (
            observation
                .replace("\"raw_hash\":\"sha256:", "\"raw_hash\":\"md5:")
                .into_bytes(),
            "raw_hash",
        ),
        (
            observation.replace("\"found\":true,", "").into_bytes(),
            "found",
        ),
        (
            observation
                .replace("\"operation\":\"F09\"", "\"operation\":\"F404\"")
                .into_bytes(),
            "operation",
        ),
    ];
    for (bad, field) in cases {
        refused_strictly(kind, &with_line(5, &bad), 5, field).await;
    }
    let enum_bad = line(4).replace("request_sent", "halfway");
    refused_strictly(kind, &with_line(4, enum_bad.as_bytes()), 4, "phase").await;
}

async fn oversized_deep_and_non_utf8_lines_are_refused_whole(kind: Kind) {
    let long = format!(
        "{{\"type\":\"comment\",\"x\":\"{}\"}}",
        "a".repeat(1_100_000)
    );
    refused_strictly(kind, &with_line(5, long.as_bytes()), 5, "-").await;
    let deep = format!("{}{}", "[".repeat(70), "]".repeat(70));
    refused_strictly(kind, &with_line(5, deep.as_bytes()), 5, "-").await;
    let mut invalid = line(5).as_bytes().to_vec();
    invalid[40] = 0xff;
    refused_strictly(kind, &with_line(5, &invalid), 5, "-").await;
}

async fn a_conflicting_reingest_is_refused_and_the_stored_record_stays(kind: Kind) {
    let changed = line(4).replace("\"resend_count\":0", "\"resend_count\":2");
    let again = with_line(4, changed.as_bytes());
    let strict = run(kind, Some(SMALL), &again, false).await;
    let errors: Vec<_> = strict
        .outcome
        .rejected
        .examples
        .iter()
        .map(|e| (e.line, e.field.as_str()))
        .collect();
    assert_eq!(errors, [(4, "id")]);
    assert!(
        strict.outcome.rejected.examples[0]
            .reason
            .contains("attempt A017")
    );
    assert_eq!(strict.head, 0);
    assert_eq!(strict.outcome.unchanged, 7);
}

async fn quarantine_commits_exactly_the_good_lines_and_writes_exactly_the_bad_ones(kind: Kind) {
    let bad_parse = line(6).replace("\"SENT\"", "\"LOST\"");
    let bad_reference = line(5).replace("\"operation\":\"F09\"", "\"operation\":\"F404\"");
    let mut bytes = with_line(6, bad_parse.as_bytes());
    let text = String::from_utf8(bytes.clone()).unwrap();
    bytes = text.replace(line(5), &bad_reference).into_bytes();
    let kept = run(kind, None, &bytes, true).await;
    let rejects = String::from_utf8(kept.rejects.unwrap()).unwrap();
    // The refused transition takes F09's whole history with it (a committed F09
    // must not lack a step of its history), F10 goes for depending on it, and the
    // observation of the unknown F404 on its own: only the contract stands.
    let expected: String = (2..=8)
        .map(|n| match n {
            5 => format!("{bad_reference}\n"),
            6 => format!("{bad_parse}\n"),
            n => format!("{}\n", line(n)),
        })
        .collect();
    assert_eq!(rejects, expected);
    let refused: std::collections::BTreeSet<usize> = kept
        .outcome
        .rejected
        .examples
        .iter()
        .map(|e| e.line)
        .collect();
    assert_eq!(refused, (2..=8).collect());
    let committed: u64 = kept.outcome.committed.iter().map(|(_, n)| n).sum();
    assert_eq!(committed, 1);
    assert!(kept.outcome.committed_any);
}

/// Ids are read by one rule: a padded id, or a padded reference to one, is
/// refused where it is read, naming the line and the field.
async fn padded_ids_and_references_are_refused_by_line_and_field(kind: Kind) {
    let cases: Vec<(usize, String, &str)> = vec![
        (
            4,
            line(4).replace("\"id\":\"A017\"", "\"id\":\"A017 \""),
            "id",
        ),
        (
            4,
            line(4).replace("\"operation\":\"F09\"", "\"operation\":\"F09 \""),
            "operation",
        ),
        (
            5,
            line(5).replace("\"id\":\"O05\"", "\"id\":\"\\tO05\""),
            "id",
        ),
        (
            6,
            line(6).replace("[\"A017\"]", "[\" A017\"]"),
            "evidence[0]",
        ),
    ];
    for (n, bad, field) in cases {
        let strict = run(kind, None, &with_line(n, bad.as_bytes()), false).await;
        let error = strict
            .outcome
            .rejected
            .examples
            .iter()
            .find(|e| e.line == n && e.field == field)
            .unwrap_or_else(|| panic!("line {n} {field}: {:?}", strict.outcome.rejected));
        assert!(error.reason.contains("whitespace"), "{}", error.reason);
        assert_eq!(strict.head, 0, "nothing committed");
    }
}

/// Strictly, a transition that cites an attempt nobody has is refused.
async fn a_transition_citing_evidence_that_does_not_exist_is_refused(kind: Kind) {
    let bad = line(6).replace("[\"A017\"]", "[\"A999\"]");
    refused_strictly(kind, &with_line(6, bad.as_bytes()), 6, "evidence").await;
    // Stored evidence counts: the transitions cite the attempt stored before.
    let approved = line(2).replace("\"state\":\"UNKNOWN\"", "\"state\":\"APPROVED\"");
    let before = format!("{}\n{approved}\n{}\n", line(1), line(4));
    let after = format!("{}\n{}\n", line(6), line(7));
    let later = run(kind, Some(&before), after.as_bytes(), false).await;
    assert!(!later.outcome.refused(), "{:?}", later.outcome.rejected);
}

/// With a rejects file, a transition whose cited attempt was refused is refused
/// with it, and so is the rest of its operation: nothing committed cites a
/// refused record. Today's break: the attempt's `operation` had a trailing space,
/// the attempt went to the rejects file and the transitions citing it committed.
async fn quarantine_refuses_what_cites_a_refused_record(kind: Kind) {
    let padded = line(4).replace("\"operation\":\"F09\"", "\"operation\":\"F09 \"");
    let kept = run(kind, None, &with_line(4, padded.as_bytes()), true).await;
    let refused: std::collections::BTreeSet<usize> = kept
        .outcome
        .rejected
        .examples
        .iter()
        .map(|e| e.line)
        .collect();
    for n in [4, 6, 7] {
        assert!(
            refused.contains(&n),
            "line {n}: {:?}",
            kept.outcome.rejected
        );
    }
    let rejects = String::from_utf8(kept.rejects.unwrap()).unwrap();
    assert!(
        rejects.contains(line(6)) && rejects.contains(line(7)),
        "{rejects}"
    );

    // The cited attempt belongs to another operation, refused by the planner (its
    // operation is unknown): the transition citing it goes too, with its reason.
    let foreign = line(4)
        .replace("\"id\":\"A017\"", "\"id\":\"A050\"")
        .replace("\"operation\":\"F09\"", "\"operation\":\"F404\"");
    let cites = r#"{"type":"transition","operation":"F10","from":"APPROVED","to":"SENT","by":"svc:orchestrator","role":"system","at":"2026-09-05T10:00:40Z","evidence":["A050"]}"#;
    let mut bytes = SMALL
        .lines()
        .take(2)
        .map(|l| format!("{l}\n"))
        .collect::<String>();
    bytes.push_str(&format!(
        "{}\n",
        line(3).replace("\"state\":\"APPROVED\"", "\"state\":\"SENT\"")
    ));
    bytes.push_str(&format!("{foreign}\n{cites}\n"));
    let kept = run(kind, None, bytes.as_bytes(), true).await;
    let on = |n: usize| -> Vec<&holdfast::wire::LineError> {
        kept.outcome
            .rejected
            .examples
            .iter()
            .filter(|e| e.line == n)
            .collect()
    };
    assert!(!on(4).is_empty(), "{:?}", kept.outcome.rejected);
    assert!(
        on(5)
            .iter()
            .any(|e| e.field == "evidence" && e.reason.contains("A050")),
        "{:?}",
        kept.outcome.rejected
    );
    // F10's own record goes with its refused transition.
    assert!(!on(3).is_empty(), "{:?}", kept.outcome.rejected);
}

/// More refused lines than an ingest keeps reasons of: each refusal is handed
/// out as it is found, in line order, and (with a rejects file) its line
/// written there; the outcome counts every one exactly, per rule too, but keeps
/// only the first `INGEST_EXAMPLES` reasons and says how many more there were,
/// so its size does not follow the number of refused lines.
async fn refusals_past_the_examples_are_counted_not_kept(kind: Kind) {
    let limit = holdfast::bounded::INGEST_EXAMPLES;
    let refused = limit + 250;
    let first = SMALL.lines().count() + 1;
    let mut bytes = SMALL.as_bytes().to_vec();
    for i in 0..refused {
        if i == 7 {
            bytes.extend_from_slice(b"not json\n");
            continue;
        }
        bytes.extend_from_slice(
            format!(
                r#"{{"type":"transition","operation":"Z{i:07}","from":"APPROVED","to":"SENT","by":"svc:o","role":"system","at":"2026-09-05T10:00:01Z","reason":"sent","evidence":[]}}"#
            )
            .as_bytes(),
        );
        bytes.push(b'\n');
    }
    for quarantine in [false, true] {
        let fresh = stores::fresh(kind).await;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("input.jsonl");
        std::fs::write(&path, &bytes).unwrap();
        let rejects = dir.path().join("rejects.jsonl");
        let mut handed: Vec<usize> = Vec::new();
        let mut note = |e: &holdfast::wire::LineError| handed.push(e.line);
        let outcome = holdfast::ingest::ingest_streamed(
            fresh.store.as_ref(),
            Source::Path(path),
            quarantine.then_some(rejects.as_path()),
            &holdfast::store::Ingester::anyone("test"),
            now(),
            holdfast::ingest::BATCH_RECORDS,
            &mut note,
        )
        .await
        .unwrap();
        let expected: Vec<usize> = (first..first + refused).collect();
        assert_eq!(handed, expected, "every refusal, once, in line order");
        let kept = &outcome.rejected;
        assert_eq!(kept.lines, refused as u64);
        assert_eq!(kept.reasons, refused as u64);
        assert_eq!(kept.examples.len(), limit);
        assert_eq!(kept.examples_limit, limit);
        assert_eq!(kept.more, 250);
        assert_eq!(kept.examples[0].line, first);
        let by_rule: Vec<(&str, u64)> = kept
            .by_rule
            .iter()
            .map(|r| (r.rule.as_str(), r.count))
            .collect();
        assert_eq!(
            by_rule,
            [("field operation", refused as u64 - 1), ("whole line", 1)]
        );
        let summary = outcome.summary();
        assert!(
            summary.contains(&format!(
                "rejected {refused} lines (field operation {}, whole line 1)",
                refused - 1
            )),
            "{summary}"
        );
        assert_eq!(outcome.committed_any, quarantine, "{summary}");
        if quarantine {
            let written = std::fs::read_to_string(&rejects).unwrap();
            assert_eq!(written.lines().count(), refused);
            assert_eq!(written.lines().nth(7), Some("not json"));
        }
    }
}

holdfast_on_both_backends!(
    refusals_past_the_examples_are_counted_not_kept,
    padded_ids_and_references_are_refused_by_line_and_field,
    a_transition_citing_evidence_that_does_not_exist_is_refused,
    quarantine_refuses_what_cites_a_refused_record,
    each_kind_of_bad_line_is_reported_by_line_and_field_and_nothing_commits,
    oversized_deep_and_non_utf8_lines_are_refused_whole,
    a_conflicting_reingest_is_refused_and_the_stored_record_stays,
    quarantine_commits_exactly_the_good_lines_and_writes_exactly_the_bad_ones,
);
