//! Redaction at ingest, on both backends: the planted secrets of every kind, in
//! every free-text field, never reach a table of the store (every text column is
//! read back, and on SQLite the file's bytes); the store keeps per redacted value
//! the SHA-256 of what was received, which the export reports; the chain verifies;
//! ingesting the same file, or its redacted form, again changes nothing; the
//! rejects file holds no secret; ids, UUIDs and hashes stay as they were. And a
//! reviewer decision a file makes on an operation it creates passes the rules of
//! `review` like one on a stored operation.

use crate::support;

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use holdfast::core::audit::ChainStatus;
use holdfast::core::export;
use holdfast::core::ids::{OperationId, Sha256};
use holdfast::core::rules::actor::Actor;
use holdfast::ingest::{IngestOutcome, Source, ingest_source, redacted_line};
use holdfast::store::Scope;
use holdfast::store::copy::{Cell, TABLES};
use holdfast::store::{Ingester, Store};
use support::cli::Cli;
use support::planted::{PAYLOAD, Planted, TRACE, no_raw, packet, planted};
use support::stores::{Fresh, Kind};

/// An attempt of an operation nobody has, whose excerpt holds a Stripe key: refused.
const REFUSED: &str = r#"{"type":"attempt","id":"SAX","operation":"NOPE","seq":1,"kind":"request","started_at":"2026-09-05T10:00:01Z","phase":"request_sent","outcome":"timeout","error_type":"invalid_api_key 9fQ2xLm7Pz4KdR8sVb1NcT6yHw3JeA5gUo0iZqXv","response_excerpt":"charge failed for sk_live_51H8xYzAbCdEfGhIjKlMnOp, password: hunter2"}"#;

fn now() -> DateTime<Utc> {
    "2026-09-05T10:05:00Z".parse().unwrap()
}

async fn ingest(
    store: &dyn Store,
    path: &std::path::Path,
    rejects: &std::path::Path,
) -> IngestOutcome {
    ingest_source(
        store,
        Source::Path(path.to_owned()),
        Some(rejects),
        &Ingester::anyone("loader"),
        now(),
    )
    .await
    .unwrap()
}

/// Every text value of every table, as `table.column` and value.
async fn every_text(store: &dyn Store) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for table in TABLES {
        let mut after: Option<Vec<Cell>> = None;
        loop {
            let rows = store
                .table_rows(table, after.as_deref(), 500)
                .await
                .unwrap();
            for row in &rows {
                for ((column, _), cell) in table.columns.iter().zip(row) {
                    if let Cell::Text(Some(text)) = cell {
                        out.push((format!("{}.{column}", table.name), text.clone()));
                    }
                }
            }
            after = rows.last().map(|row| table.key_of(row));
            if rows.len() < 500 {
                break;
            }
        }
    }
    out
}

/// The values of one column of the store.
fn column<'a>(texts: &'a [(String, String)], name: &str) -> Vec<&'a str> {
    texts
        .iter()
        .filter(|(c, _)| c == name)
        .map(|(_, v)| v.as_str())
        .collect()
}

/// Panics when any raw secret is in `bytes`.
fn no_raw_bytes(surface: &str, bytes: &[u8], secrets: &[Planted]) {
    for p in secrets {
        for raw in &p.raws {
            assert!(
                !bytes.windows(raw.len()).any(|w| w == raw.as_bytes()),
                "{surface}: raw {} secret {raw} stored",
                p.kind
            );
        }
    }
}

async fn planted_secrets_never_reach_the_store(kind: Kind) {
    let secrets = planted();
    let fresh: Fresh = support::stores::fresh(kind).await;
    let store = fresh.store.as_ref();
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("secrets.jsonl");
    let text = packet(&secrets);
    std::fs::write(&input, format!("{text}{REFUSED}\n")).unwrap();
    let rejects = dir.path().join("rejects.jsonl");

    let first = ingest(store, &input, &rejects).await;
    assert!(first.committed_any, "{first:?}");
    let refused: BTreeSet<usize> = first.rejected.examples.iter().map(|e| e.line).collect();
    assert_eq!(
        refused.len(),
        1,
        "only the attempt of NOPE: {:?}",
        first.rejected
    );

    // No table holds a raw secret, on any text column.
    let texts = every_text(store).await;
    for (column, value) in &texts {
        no_raw(column, value, &secrets);
    }
    // Ids, UUIDs and hashes are as received.
    let wires = column(&texts, "attempts.wire").join("\n");
    assert!(
        wires.contains(TRACE) && wires.contains("\"id\":\"SA0\""),
        "{wires}"
    );
    assert!(column(&texts, "operations.payload_hash").contains(&PAYLOAD));
    assert!(
        wires.contains("‹redacted:"),
        "the markers are stored: {wires}"
    );

    // Each planted text was redacted, and the store kept the hash of it as sent.
    let received: BTreeSet<&str> = column(&texts, "redactions.value_sha256")
        .into_iter()
        .collect();
    let sent: Vec<Sha256> = secrets
        .iter()
        .map(|p| Sha256::of(p.text.as_bytes()))
        .collect();
    for (p, hash) in secrets.iter().zip(&sent) {
        assert!(
            received.contains(hash.as_str()),
            "{}: {} not kept",
            p.kind,
            p.text
        );
    }
    for sample in column(&texts, "redactions.sample") {
        no_raw("redactions.sample", sample, &secrets);
    }
    let lines: BTreeSet<String> = text
        .lines()
        .map(|l| Sha256::of(l.as_bytes()).as_str().to_owned())
        .collect();
    let kept_lines = column(&texts, "redactions.line_sha256");
    assert!(!kept_lines.is_empty());
    assert!(
        kept_lines.iter().all(|l| lines.contains(*l)),
        "{kept_lines:?}"
    );
    assert!(matches!(
        store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));

    // The rejects file holds the refused line, redacted.
    let rejected = std::fs::read_to_string(&rejects).unwrap();
    no_raw("rejects file", &rejected, &secrets);
    assert!(rejected.contains("‹redacted:stripe_key›"), "{rejected}");
    // Secrets of no known shape go through the same redactor there.
    assert!(rejected.contains("‹redacted:credential›"), "{rejected}");
    assert!(rejected.contains("‹redacted:password›"), "{rejected}");
    assert!(rejected.contains("\"operation\":\"NOPE\""), "{rejected}");

    // The export reports the hashes of the values as received.
    let mut details = Vec::new();
    for i in 0..secrets.len() {
        let id = OperationId::parse(&format!("S{i}")).unwrap();
        details.push(store.detail(&Scope::Every, &id).await.unwrap());
    }
    let exported = export::build(&details, &Actor::local("maya", None), now());
    let reported: BTreeSet<&str> = exported
        .redactions
        .iter()
        .map(|r| r.original_sha256.as_str())
        .collect();
    for (p, hash) in secrets.iter().zip(&sent) {
        assert!(
            reported.contains(hash.as_str()),
            "{}: export lacks {hash}",
            p.kind
        );
    }

    // The same file again, and its redacted form, change nothing.
    let head = store.head_seq().await.unwrap();
    let again = ingest(store, &input, &rejects).await;
    assert!(!again.committed_any, "{:?}", again.committed);
    let redacted: Vec<u8> = text
        .lines()
        .flat_map(|l| {
            let mut line = redacted_line(l.as_bytes());
            line.push(b'\n');
            line
        })
        .collect();
    no_raw_bytes("the redacted packet", &redacted, &secrets);
    let marked = dir.path().join("redacted.jsonl");
    std::fs::write(&marked, redacted).unwrap();
    let marked_again = ingest(store, &marked, &rejects).await;
    assert!(
        !marked_again.committed_any && !marked_again.refused(),
        "{:?} {:?}",
        marked_again.committed,
        marked_again.rejected
    );
    assert_eq!(store.head_seq().await.unwrap(), head);

    // `db copy` takes the redaction rows along, as they are.
    let copy = support::stores::fresh(Kind::Sqlite).await;
    let report = copy.store.load_from(store).await.unwrap();
    let copied = report
        .tables
        .iter()
        .find(|(name, _)| *name == "redactions")
        .map(|(_, n)| *n);
    let rows = column(&texts, "redactions.value_sha256").len() as u64;
    assert_eq!(copied, Some(rows), "{report:?}");
    let copied_texts = every_text(copy.store.as_ref()).await;
    assert_eq!(
        column(&copied_texts, "redactions.value_sha256"),
        column(&texts, "redactions.value_sha256")
    );
    assert!(matches!(
        copy.store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));

    // On SQLite, not one byte of a secret is in the files.
    if let Some(sqlite) = &fresh.sqlite {
        fresh.close().await;
        let path = sqlite.path().to_owned();
        let wal = std::path::PathBuf::from(format!("{}-wal", path.display()));
        for file in [path, wal] {
            if let Ok(bytes) = std::fs::read(&file) {
                no_raw_bytes(&file.display().to_string(), &bytes, &secrets);
            }
        }
    }
}

holdfast_on_both_backends!(planted_secrets_never_reach_the_store);

/// The small fixture's contract and F09 history, then a decision on F09 in the
/// same file: `to` (declared as F09's state) at 10:02:40.
fn created_and_decided(to: &str) -> String {
    let fixture = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/small.jsonl"),
    )
    .unwrap();
    let mut lines: Vec<String> = fixture
        .lines()
        .filter(|l| l.contains("\"type\":\"contract\"") || l.contains("\"F09\""))
        .filter(|l| !l.contains("\"id\":\"F10\""))
        .map(|l| {
            if l.contains("\"id\":\"F09\"") {
                l.replace("\"state\":\"UNKNOWN\"", &format!("\"state\":\"{to}\""))
            } else {
                l.to_owned()
            }
        })
        .collect();
    lines.push(format!(
        r#"{{"type":"transition","operation":"F09","from":"UNKNOWN","to":"{to}","by":"admin","role":"reviewer","at":"2026-09-05T10:02:40Z","reason":"decided by the source","evidence":["O05"]}}"#
    ));
    lines.join("\n") + "\n"
}

#[test]
fn a_decision_on_an_operation_the_same_file_creates_passes_the_rules_of_review() {
    let cli = Cli::empty();
    // O05 found the ticket: FAILED is what review refuses.
    let path = cli.dir.path().join("failed.jsonl");
    std::fs::write(&path, created_and_decided("FAILED")).unwrap();
    let path = path.to_string_lossy().into_owned();
    let run = cli.run("feeder", &["ingest", &path]).expect_code(2);
    assert!(
        run.stderr.contains(": to: G") && run.stderr.contains("holdfast review"),
        "{}",
        run.stderr
    );
    assert_eq!(cli.head(), 0, "nothing committed");
    let rejects = cli.dir.path().join("rejects.jsonl");
    let run = cli.ingest_rejecting("feeder", &path, &rejects);
    assert!(run.stderr.contains(": to: G"), "{}", run.stderr);
    assert_ne!(
        cli.run("admin", &["show", "F09"]).code,
        0,
        "F09 was refused whole"
    );

    // The same file, once the store holds F09 in UNKNOWN: review refuses it too,
    // with the same rule.
    let held = cli.dir.path().join("held.jsonl");
    let text = created_and_decided("FAILED");
    let (history, _decision) = text.trim_end().rsplit_once('\n').unwrap();
    std::fs::write(
        &held,
        history.replace("\"state\":\"FAILED\"", "\"state\":\"UNKNOWN\"") + "\n",
    )
    .unwrap();
    cli.run("feeder", &["ingest", &held.to_string_lossy()])
        .expect_code(0);
    let review = cli.review("rev1", "F09", "resolve", &["--to", "FAILED"]);
    assert_eq!(review.code, 3, "{}", review.stderr);
    assert_eq!(
        run.first_rule(),
        review.first_rule(),
        "{}\n{}",
        run.stderr,
        review.stderr
    );

    // SUCCEEDED is what review allows: the same file with it is committed.
    let other = Cli::empty();
    let path = other.dir.path().join("succeeded.jsonl");
    std::fs::write(&path, created_and_decided("SUCCEEDED")).unwrap();
    other
        .run("feeder", &["ingest", &path.to_string_lossy()])
        .expect_code(0);
    assert_eq!(other.state("admin", "F09"), "SUCCEEDED");
}

#[test]
fn show_says_which_values_were_redacted_at_ingest_with_the_hash_as_received() {
    let cli = Cli::empty();
    let secret = "read_timeout behind Bearer 9f8e7d6c5b4a39281706abcdefXYZ";
    let fixture = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/small.jsonl"),
    )
    .unwrap();
    let path = cli.dir.path().join("small.jsonl");
    std::fs::write(
        &path,
        fixture.replace("\"read_timeout\"", &format!("\"{secret}\"")),
    )
    .unwrap();
    cli.run("loader", &["ingest", &path.to_string_lossy()])
        .expect_code(0);
    let run = cli.run("maya", &["show", "F09"]).expect_code(0);
    assert!(
        !run.stdout.contains("9f8e7d6c5b4a39281706abcdefXYZ"),
        "{}",
        run.stdout
    );
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("attempt A017 error_type"))
        .unwrap_or_else(|| panic!("no redaction line: {}", run.stdout));
    assert!(line.contains("bearer"), "{line}");
    assert!(line.contains("bearer:…(29 chars)"), "{line}");
    assert!(
        line.contains(Sha256::of(secret.as_bytes()).as_str()),
        "{line}"
    );
}
