//! Trust at the edges, through the real binary: instants a store cannot keep are
//! refused at every door, unreadable rows never take a store down, JSON output is
//! safe for a terminal, quarantine never splits an operation's history, and no
//! planted secret reaches any surface.

use crate::support;

use support::cli::{Cli, Run};

const SMALL: &str = include_str!("fixtures/small.jsonl");

/// A store holding `text` as its ingested JSON Lines.
fn store_with(text: &str) -> Cli {
    let cli = Cli::empty();
    let path = cli.dir.path().join("input.jsonl");
    std::fs::write(&path, text).expect("write input");
    ingest(&cli, &path).expect_code(0);
    cli
}

fn ingest(cli: &Cli, path: &std::path::Path) -> Run {
    cli.run("loader", &["ingest", &path.to_string_lossy()])
}

/// The small fixture with `from` replaced by `to` (which must occur).
fn small_with(from: &str, to: &str) -> String {
    assert!(SMALL.contains(from), "{from}");
    SMALL.replacen(from, to, 1)
}

#[test]
fn timeline_json_escapes_c1_controls() {
    let cli = store_with(&small_with(
        r#""trace_id":"tr-1","response_excerpt":null"#,
        r#""trace_id":"tr-1","response_excerpt":"csi \u009b2J osc \u009d0;x\u009c del \u007f""#,
    ));
    let run = cli
        .run("maya", &["timeline", "F09", "--json"])
        .expect_code(0);
    assert!(
        !run.stdout
            .chars()
            .any(|c| ('\u{7f}'..='\u{9f}').contains(&c)),
        "{:?}",
        run.stdout
    );
    assert!(run.stdout.contains(r"\u009b2J"), "{}", run.stdout);
    assert_eq!(
        run.json()[0]["response_excerpt"],
        "csi \u{9b}2J osc \u{9d}0;x\u{9c} del \u{7f}"
    );
}

#[test]
fn instants_past_year_9999_in_utc_are_refused_at_ingest_and_on_the_command_line() {
    let cli = Cli::empty();
    let path = cli.dir.path().join("input.jsonl");
    let line = small_with(
        r#""created_at":"2026-09-05T10:00:30Z""#,
        r#""created_at":"9999-12-31T23:59:59-23:59""#,
    );
    std::fs::write(&path, line).expect("write input");
    let run = ingest(&cli, &path).expect_code(2);
    assert!(
        run.stderr
            .contains("line 3: created_at: is outside the years 0001 to 9999 in UTC"),
        "{}",
        run.stderr
    );
    let cli = store_with(SMALL);
    let run = cli.run(
        "maya",
        &[
            "review",
            "F09",
            "schedule",
            "--at",
            "9999-12-31T23:59:59-23:59",
            "--rationale",
            "next look at the provider",
        ],
    );
    let run = run.expect_code(2);
    assert!(run.stderr.contains("years 0001 to 9999"), "{}", run.stderr);
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .env("HOLDFAST_DATA_DIR", cli.dir.path())
        .env("HOLDFAST_CONFIG", cli.dir.path().join("no-config.toml"))
        .env("HOLDFAST_NOW", "9999-12-31T23:59:59-23:59")
        .arg("--db")
        .arg(&cli.db)
        .args(["--as", "maya", "list"])
        .output()
        .expect("run holdfast");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("years 0001 to 9999"), "{stderr}");
    cli.run("maya", &["audit", "verify"]).expect_code(0);
}

/// Runs `sql` on the SQLite store behind the binary's back.
fn tamper(cli: &Cli, sql: &str) {
    use sqlx::Connection as _;
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let options = sqlx::sqlite::SqliteConnectOptions::new().filename(&cli.db);
        let mut conn = sqlx::SqliteConnection::connect_with(&options)
            .await
            .expect("open the store file");
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(&mut conn)
            .await
            .expect("tamper");
        conn.close().await.expect("close");
    });
}

#[test]
fn an_undecodable_row_is_named_and_skipped_and_the_store_still_lists() {
    let cli = store_with(SMALL);
    let head = cli.head();
    tamper(
        &cli,
        &format!(
            "UPDATE operations SET wire = replace(wire, '2026-09-05T10:00:30Z', '+10000-01-01T00:00:00Z') \
             WHERE id = 'F10'; \
             INSERT INTO audit SELECT seq + 1, 'F09', action, from_state, to_state, by_identity, role, \
             policy, on_behalf_of, rationale, evidence, '+10000-01-01T00:00:00Z', hash, hash, \
             encoding FROM audit WHERE seq = {head};"
        ),
    );
    let bad_row = head + 1;

    let run = cli.run("maya", &["list", "--state", "all"]).expect_code(0);
    assert!(run.stdout.contains("F09"), "{}", run.stdout);
    assert!(!run.stdout.contains("F10"), "{}", run.stdout);
    assert!(
        run.stderr
            .contains("warning: skipped unreadable operation F10: "),
        "{}",
        run.stderr
    );

    let run = cli.run("maya", &["report"]).expect_code(0);
    assert!(
        run.stderr.contains(&format!(
            "warning: skipped unreadable audit row {bad_row}: "
        )),
        "{}",
        run.stderr
    );
    let run = cli.run("maya", &["export", "F09"]).expect_code(0);
    assert!(run.json()["bundles"][0]["content_hash"].is_string());
    let run = cli.run("maya", &["show", "F09"]).expect_code(0);
    assert!(run.stdout.contains("F09"), "{}", run.stdout);
    assert!(
        run.stderr.contains(&format!(
            "warning: skipped unreadable audit row {bad_row}: "
        )),
        "{}",
        run.stderr
    );

    let run = cli.run("maya", &["audit", "verify"]).expect_code(4);
    assert!(
        run.stderr
            .contains(&format!("broken at seq {bad_row}: the row cannot be read")),
        "{}",
        run.stderr
    );
}

/// Ingests `text` with `--rejects`, returning the run and the rejects file's text.
fn quarantine(cli: &Cli, text: &str) -> (Run, String) {
    let input = cli.dir.path().join("input.jsonl");
    let rejects = cli.dir.path().join("rejects.jsonl");
    std::fs::write(&input, text).expect("write input");
    let run = cli.run(
        "loader",
        &[
            "ingest",
            &input.to_string_lossy(),
            "--rejects",
            &rejects.to_string_lossy(),
        ],
    );
    let refused = std::fs::read_to_string(&rejects).unwrap_or_default();
    (run.expect_code(0), refused)
}

#[test]
fn an_escape_in_provider_text_is_kept_as_evidence_and_never_drops_the_attempt() {
    let cli = Cli::empty();
    let text = small_with(
        r#""error_type":"read_timeout""#,
        r#""error_type":"read_timeout\u001b[2J\u009b31m""#,
    );
    let (run, refused) = quarantine(&cli, &text);
    assert!(refused.is_empty(), "{refused}\n{}", run.stderr);
    let shown = cli
        .run("maya", &["timeline", "F09", "--json"])
        .expect_code(0);
    assert_eq!(
        shown.json()[0]["error_type"],
        "read_timeout\u{1b}[2J\u{9b}31m"
    );
    for args in [&["show", "F09"][..], &["timeline", "F09"][..]] {
        let run = cli.run("maya", args).expect_code(0);
        assert!(
            !run.stdout.contains('\u{1b}') && !run.stdout.contains('\u{9b}'),
            "{:?}",
            run.stdout
        );
    }
    let shown = cli
        .run("maya", &["show", "F09", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(shown["budget"]["attempts_used"], 1, "{shown:#}");
}

#[test]
fn a_refused_attempt_refuses_the_rest_of_its_operations_history() {
    let cli = Cli::empty();
    let text = small_with(r#""outcome":"timeout""#, r#""outcome":"lost""#);
    let (run, refused) = quarantine(&cli, &text);
    for line in 2..=8 {
        assert!(
            run.stderr.contains(&format!("line {line}: ")),
            "line {line} should be refused:\n{}",
            run.stderr
        );
    }
    assert!(
        run.stderr
            .contains("line 6: -: part of operation F09's history, refused with line 4"),
        "{}",
        run.stderr
    );
    assert_eq!(refused.lines().count(), 7, "{refused}");
    cli.run("maya", &["show", "F09"]).expect_code(1);
    let listed = cli.run("maya", &["list", "--state", "all", "--json"]);
    assert_eq!(listed.expect_code(0).json(), serde_json::json!([]));
}

#[test]
fn ingest_errors_quoting_the_input_reach_the_terminal_neutralized() {
    let cli = Cli::empty();
    let path = cli.dir.path().join("input.jsonl");
    let line = r#"{"type":"item","operation":"F21","index":0,"state":"unknown","\u001b]52;c;QUFB\u0007":1}"#;
    std::fs::write(&path, format!("{line}\n")).expect("write input");
    let run = ingest(&cli, &path).expect_code(2);
    assert!(!run.stderr.contains('\u{1b}'), "{:?}", run.stderr);
    assert!(
        run.stderr.contains("line 1: ⟦␛]52;c;QUFB␇⟧: unknown field"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_command_error_quoting_its_input_reaches_the_terminal_neutralized() {
    let cli = Cli::empty();
    let path = cli.dir.path().join("missing\u{1b}]52;c;QUFB\u{7}.jsonl");
    let run = ingest(&cli, &path);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(!run.stderr.contains('\u{1b}'), "{:?}", run.stderr);
    assert!(
        run.stderr.contains("missing⟦␛]52;c;QUFB␇⟧.jsonl"),
        "{}",
        run.stderr
    );
}
