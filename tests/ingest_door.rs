//! Ingest is a door like any other (G7): once a store has grants, ingesting takes
//! the `ingest` role on every tenant a file touches, and the audit rows name the
//! identity that ingested, with the line's `by` and `role` only as what the source
//! reported. The issue's reproduction on SQLite; PostgreSQL's is in `team_mode`.

mod support;

use support::cli::Cli;

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

#[test]
fn the_ingester_is_the_author_and_the_line_only_says_who_reported() {
    let cli = granted();
    grant(&cli, "feeder", "ingest", "pinehaven");
    let path = file(&cli, "forged.jsonl", FORGED);
    cli.run("feeder", &["ingest", &path]).expect_code(0);
    assert_eq!(cli.state("admin", "F09"), "SUCCEEDED");
    let last = tokio::runtime::Runtime::new().unwrap().block_on(async {
        use holdfast::store::Store;
        let store = holdfast::store::sqlite::SqliteStore::open(&cli.db)
            .await
            .unwrap();
        let head = store.head_seq().await.unwrap();
        store.audit(head, 1).await.unwrap().remove(0)
    });
    let d = &last.draft;
    assert_eq!(
        (d.by.as_str(), d.on_behalf_of.as_deref(), d.action.as_str()),
        ("feeder", Some("admin"), "transition")
    );
    cli.run("admin", &["audit", "verify"]).expect_code(0);
}

#[test]
fn an_ingested_decision_passes_the_rules_of_review_or_is_refused_with_the_rule() {
    let cli = granted();
    grant(&cli, "feeder", "ingest", "pinehaven");
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
