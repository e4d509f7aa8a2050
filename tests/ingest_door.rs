//! Ingest is a door like any other (G7): once a store has grants, ingesting takes
//! the `ingest` role on every tenant a file touches; a decision a file reports
//! (a move out of a held state) is judged as the identity really ingesting, which
//! needs the role that decision needs; and the audit rows name that identity,
//! with the line's `by` and `role` only as what the source claims. The issue's
//! reproduction on SQLite; PostgreSQL's is in `team_mode`.

use crate::support;

use holdfast::core::audit::ChainStatus;
use holdfast::store::Scope;
use holdfast::store::{IngestMode, Store};
use support::cli::Cli;
use support::review::{id, now, records};
use support::stores::{self, Kind};

/// A viewer's resolution of F09, claimed to be the owner's.
const FORGED: &str = r#"{"type":"transition","operation":"F09","from":"UNKNOWN","to":"SUCCEEDED","by":"admin","role":"reviewer","at":"2026-09-05T10:02:40Z","reason":"resolved by the owner","evidence":["O05"]}"#;

/// `admin` grants `who` the `role` on `tenant`.
fn grant(cli: &Cli, who: &str, role: &str, tenant: &str) {
    cli.run("admin", &["grant", who, "--role", role, "--tenant", tenant])
        .expect_code(0);
}

/// The small fixture with `admin` owning pinehaven and `viewer1` viewing it.
fn granted() -> Cli {
    let cli = Cli::with("small.jsonl");
    grant(&cli, "admin", "owner", "pinehaven");
    grant(&cli, "viewer1", "viewer", "pinehaven");
    cli
}

fn file(cli: &Cli, name: &str, text: &str) -> String {
    let path = cli.dir.path().join(name);
    std::fs::write(&path, format!("{text}\n")).unwrap();
    path.to_string_lossy().into_owned()
}

#[test]
fn a_viewer_cannot_resolve_by_ingest_and_nothing_is_written() {
    let cli = granted();
    let head = cli.head();
    let path = file(&cli, "forged.jsonl", FORGED);
    let run = cli.run("viewer1", &["ingest", &path]).expect_code(2);
    assert!(
        run.stderr
            .contains("line 1: operation: G7: viewer1 may not ingest into tenant pinehaven"),
        "{}",
        run.stderr
    );
    assert_eq!(cli.state("admin", "F09"), "UNKNOWN");
    assert_eq!(cli.head(), head, "nothing committed");
}

#[test]
fn an_ingester_of_another_tenant_is_refused_line_by_line() {
    let cli = granted();
    grant(&cli, "feeder", "ingest", "harborline");
    let path = file(&cli, "forged.jsonl", FORGED);
    let rejects = cli.dir.path().join("rejects.jsonl");
    let run = cli.ingest_rejecting("feeder", &path, &rejects);
    assert!(
        run.stderr
            .contains("feeder may not ingest into tenant pinehaven"),
        "{}",
        run.stderr
    );
    assert_eq!(std::fs::read_to_string(&rejects).unwrap().trim(), FORGED);
    assert_eq!(cli.state("admin", "F09"), "UNKNOWN");
}

/// The newest audit row of the store behind `cli`.
fn last_row(cli: &Cli) -> holdfast::core::audit::AuditRow {
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        use holdfast::store::Store;
        let store = holdfast::store::sqlite::SqliteStore::open(&cli.db)
            .await
            .unwrap();
        let head = store.head_seq().await.unwrap();
        store.audit(head, 1).await.unwrap().remove(0)
    })
}

#[test]
fn the_ingest_role_alone_imports_no_decision_whatever_the_line_claims() {
    let cli = granted();
    grant(&cli, "feeder", "ingest", "pinehaven");
    let head = cli.head();
    let path = file(&cli, "forged.jsonl", FORGED);
    let run = cli.run("feeder", &["ingest", &path]).expect_code(2);
    assert!(
        run.stderr.contains("line 1: to: G6:")
            && run
                .stderr
                .contains("feeder holds ingest on pinehaven, which may not resolve"),
        "{}",
        run.stderr
    );
    assert_eq!(cli.state("admin", "F09"), "UNKNOWN");
    assert_eq!(cli.head(), head, "nothing committed");
}

#[test]
fn the_importer_is_the_author_under_its_own_role_and_the_line_only_a_claim() {
    let cli = granted();
    grant(&cli, "feeder", "ingest", "pinehaven");
    grant(&cli, "feeder", "reviewer", "pinehaven");
    let path = file(&cli, "forged.jsonl", FORGED);
    cli.run("feeder", &["ingest", &path]).expect_code(0);
    assert_eq!(cli.state("admin", "F09"), "SUCCEEDED");
    let last = last_row(&cli);
    let d = &last.draft;
    assert_eq!(
        (
            d.by.as_str(),
            d.role.as_str(),
            d.on_behalf_of.as_deref(),
            d.action.as_str()
        ),
        ("feeder", "reviewer", None, "resolve")
    );
    assert_eq!(
        d.rationale.as_deref(),
        Some("resolved by the owner (the source reports admin as reviewer)")
    );
    // `show` names who acted; the line's `by` appears only as the source's claim.
    let show = cli.run("admin", &["show", "F09"]).expect_code(0);
    let headline = show
        .stdout
        .lines()
        .find(|l| l.contains("why held") || l.contains("why SUCCEEDED"))
        .unwrap_or_default()
        .to_owned();
    assert!(
        headline.contains("by feeder (reviewer)") && !headline.contains("by admin"),
        "{headline}"
    );
    cli.run("admin", &["audit", "verify"]).expect_code(0);
}

#[test]
fn an_ingested_decision_passes_the_rules_of_review_or_is_refused_with_the_rule() {
    let cli = granted();
    grant(&cli, "feeder", "ingest", "pinehaven");
    grant(&cli, "feeder", "reviewer", "pinehaven");
    // O05 found the ticket: FAILED is exactly what review refuses here.
    let failed = FORGED.replace(r#""to":"SUCCEEDED""#, r#""to":"FAILED""#);
    let path = file(&cli, "failed.jsonl", &failed);
    grant(&cli, "rev1", "reviewer", "pinehaven");
    let head = cli.head();
    let run = cli.run("feeder", &["ingest", &path]).expect_code(2);
    assert!(
        run.stderr.contains("line 1: to: G") && run.stderr.contains("holdfast review"),
        "{}",
        run.stderr
    );
    let review = cli.review("rev1", "F09", "resolve", &["--to", "FAILED"]);
    assert_eq!(review.code, 3, "review refuses it too: {}", review.stderr);
    assert_eq!(
        run.first_rule(),
        review.first_rule(),
        "the same rule:\n{}\n{}",
        run.stderr,
        review.stderr
    );
    assert_eq!(cli.state("admin", "F09"), "UNKNOWN");
    assert_eq!(cli.head(), head);
}

/// The issue's walk: F27 (high risk, budget spent, G2 applies) to SUCCEEDED by
/// three lines with no evidence, each claiming a harmless author.
const F27_WALK: &str = r#"{"type":"transition","operation":"F27","from":"UNKNOWN","to":"APPROVED","by":"rev:ola","role":"reviewer","at":"2026-09-05T12:00:00Z","reason":"looks fine to me","evidence":[]}
{"type":"transition","operation":"F27","from":"APPROVED","to":"SENT","by":"svc:orchestrator","role":"system","at":"2026-09-05T12:00:01Z","evidence":[]}
{"type":"transition","operation":"F27","from":"SENT","to":"SUCCEEDED","by":"svc:orchestrator","role":"system","at":"2026-09-05T12:00:02Z","evidence":[]}"#;

/// A new operation that claims to have succeeded and been approved with no
/// record that shows either.
const UNPROVED: &str = r#"{"type":"operation","id":"N01","tenant":"pinehaven","actor":"svc:relay-desk","tool":"T06","action":"refund.issue","target":"refund:N01","payload_hash":"sha256:92a75130ce8ca7c41d9463a5b41e782a7e561193a6074a2bc3df3fce6cbb0456","risk":"low","owner":"payments","state":"SUCCEEDED","depends_on":[],"created_at":"2026-09-05T11:00:00Z"}
{"type":"transition","operation":"N01","from":"VALIDATED","to":"APPROVED","by":"svc:policy","role":"system","at":"2026-09-05T11:00:01Z","evidence":[]}
{"type":"transition","operation":"N01","from":"APPROVED","to":"SENT","by":"svc:orchestrator","role":"system","at":"2026-09-05T11:00:02Z","evidence":[]}
{"type":"transition","operation":"N01","from":"SENT","to":"SUCCEEDED","by":"svc:orchestrator","role":"system","at":"2026-09-05T11:00:03Z","evidence":[]}"#;

async fn demo_store(kind: Kind) -> stores::Fresh {
    let fresh = stores::fresh(kind).await;
    let report = fresh
        .store
        .ingest(
            records(holdfast::DEMO_PACKET),
            IngestMode::Strict,
            "loader",
            now(),
        )
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    fresh
}

async fn state_of(store: &dyn Store, op: &str) -> String {
    store
        .detail(&Scope::Every, &id(op))
        .await
        .unwrap()
        .row
        .operation
        .state
        .to_string()
}

async fn no_file_walks_a_hold_to_success_without_evidence(kind: Kind) {
    let fresh = demo_store(kind).await;
    let store = fresh.store.as_ref();
    let head = store.head_seq().await.unwrap();
    for mode in [IngestMode::Strict, IngestMode::Quarantine] {
        let report = store
            .ingest(records(F27_WALK), mode, "loader", now())
            .await
            .unwrap();
        let first = &report.rejected[0];
        assert_eq!((first.line, first.field.as_str()), (1, "to"), "{first:?}");
        assert!(
            first.reason.contains("is a reviewer decision") && first.reason.starts_with("G"),
            "{}",
            first.reason
        );
        let lines: std::collections::BTreeSet<usize> =
            report.rejected.iter().map(|e| e.line).collect();
        assert_eq!(lines.len(), 3, "{:?}", report.rejected);
        assert!(report.committed.is_empty(), "{:?}", report.committed);
    }
    assert_eq!(state_of(store, "F27").await, "UNKNOWN");
    assert_eq!(store.head_seq().await.unwrap(), head, "nothing written");
    // A system move that ends a call, or approves one, must be proved by the
    // records: an operation created with such a history and none is refused.
    let report = store
        .ingest(records(UNPROVED), IngestMode::Strict, "loader", now())
        .await
        .unwrap();
    let reasons: Vec<String> = report
        .rejected
        .iter()
        .map(|e| format!("{}:{}:{}", e.line, e.field, e.reason))
        .collect();
    assert!(
        reasons.iter().any(|r| r.starts_with("2:to:G11: VALIDATED → APPROVED needs the operation's approval")),
        "{reasons:#?}"
    );
    assert!(matches!(
        store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
}

async fn a_success_is_proved_by_the_attempt_that_shows_it(kind: Kind) {
    let fresh = demo_store(kind).await;
    let store = fresh.store.as_ref();
    // N01 from APPROVED on: the operation, APPROVED → SENT, SENT → SUCCEEDED.
    let starting = UNPROVED
        .lines()
        .filter(|l| !l.contains(r#""to":"APPROVED""#))
        .collect::<Vec<_>>()
        .join("\n");
    // Without an attempt: refused on the SENT → SUCCEEDED line.
    let report = store
        .ingest(records(&starting), IngestMode::Strict, "loader", now())
        .await
        .unwrap();
    assert!(
        report.rejected.iter().any(|e| e.line == 3
            && e.reason
                .contains("SENT → SUCCEEDED is a system move the records must prove")),
        "{:?}",
        report.rejected
    );
    // A timeout after the request crossed does not show it either.
    let attempt = |outcome: &str, phase: &str| {
        format!(
            r#"{{"type":"attempt","id":"N01-A1","operation":"N01","seq":1,"kind":"request","started_at":"2026-09-05T11:00:02Z","phase":"{phase}","outcome":"{outcome}"}}"#
        )
    };
    let lines: Vec<&str> = starting.lines().collect();
    let with = |attempt: &str| format!("{}\n{attempt}\n{}\n{}", lines[0], lines[1], lines[2]);
    let report = store
        .ingest(
            records(&with(&attempt("timeout", "request_sent"))),
            IngestMode::Strict,
            "loader",
            now(),
        )
        .await
        .unwrap();
    assert!(
        report
            .rejected
            .iter()
            .any(|e| e.line == 4 && e.reason.contains("does not show it")),
        "{:?}",
        report.rejected
    );
    let report = store
        .ingest(
            records(&with(&attempt("ok", "response_received"))),
            IngestMode::Strict,
            "loader",
            now(),
        )
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    assert_eq!(state_of(store, "N01").await, "SUCCEEDED");
}

holdfast_on_both_backends!(
    no_file_walks_a_hold_to_success_without_evidence,
    a_success_is_proved_by_the_attempt_that_shows_it,
);
