//! Planted secrets, every kind in every free-text field, against every surface:
//! `show`, `timeline`, `list`, `report`, `export json|markdown` (text and JSON), the
//! console's screens and the log file. Not one raw secret may appear; ids and
//! hashes stay as they are.

use crate::support;

use crossterm::event::KeyCode;
use support::cli::Cli;
use support::console::Harness;
use support::planted::{PAYLOAD, TRACE, no_raw, packet, planted};

#[test]
fn no_planted_secret_reaches_the_command_line_surfaces_or_the_log() {
    let secrets = planted();
    let cli = Cli::empty();
    let input = cli.dir.path().join("secrets.jsonl");
    std::fs::write(&input, packet(&secrets)).expect("write packet");
    cli.run("loader", &["ingest", &input.to_string_lossy()])
        .expect_code(0);
    let with_url = "checked https://ops:Hunter2Secret@console.internal/x by hand";
    let run = cli
        .run(
            "maya",
            &["review", "S0", "comment", "--rationale", with_url],
        )
        .expect_code(0);
    no_raw("review", &run.stdout, &secrets);
    assert!(
        run.stdout.contains("‹redacted:url_password›"),
        "{}",
        run.stdout
    );

    let mut seen_markers = 0;
    let ids: Vec<String> = (0..secrets.len()).map(|i| format!("S{i}")).collect();
    for id in &ids {
        for args in [
            vec!["show", id],
            vec!["show", id, "--json"],
            vec!["timeline", id],
            vec!["timeline", id, "--json"],
        ] {
            let run = cli.run("maya", &args).expect_code(0);
            no_raw(&args.join(" "), &run.stdout, &secrets);
            no_raw(&args.join(" "), &run.stderr, &secrets);
            seen_markers += run.stdout.matches("‹redacted:").count();
        }
    }
    let mut export_json = vec!["export", "--format", "json"];
    export_json.extend(ids.iter().map(String::as_str));
    let mut export_md = vec!["export", "--format", "markdown"];
    export_md.extend(ids.iter().map(String::as_str));
    for args in [
        export_json.clone(),
        export_md,
        vec!["list", "--state", "all"],
        vec!["list", "--state", "all", "--json"],
        vec!["report"],
        vec!["report", "--json"],
    ] {
        // The fixture holds no expectation: `report` says NOT_EVALUATED (exit 5).
        let code = if args[0] == "report" { 5 } else { 0 };
        let run = cli.run("maya", &args).expect_code(code);
        no_raw(&args.join(" "), &run.stdout, &secrets);
        no_raw(&args.join(" "), &run.stderr, &secrets);
    }
    assert!(seen_markers > secrets.len() * 4, "{seen_markers} markers");

    let export = cli.run("maya", &export_json).expect_code(0).json();
    let redactions = export["redactions"].as_array().expect("redactions");
    let first = &secrets[0];
    let original = holdfast::core::ids::Sha256::of(first.text.as_bytes()).to_string();
    assert!(
        redactions
            .iter()
            .any(|r| r["original_sha256"] == original.as_str()
                && r["path"] == "bundles[0].attempts[0].response_excerpt"),
        "{redactions:#?}"
    );
    let text = export.to_string();
    assert!(text.contains(PAYLOAD) && text.contains(TRACE) && text.contains("SA0"));
    let value: serde_json::Value = export.clone();
    assert_eq!(
        holdfast::core::export::content_hash(&value).to_string(),
        value["content_hash"].as_str().unwrap_or_default()
    );

    let log = std::fs::read_to_string(cli.dir.path().join("holdfast.log")).expect("log file");
    assert!(log.contains("start"), "{log}");
    no_raw("log", &log, &secrets);
    assert!(
        !log.contains("console.internal"),
        "the rationale was logged: {log}"
    );
}

#[tokio::test]
async fn no_planted_secret_reaches_the_console() {
    let secrets = planted();
    let mut h = Harness::new(&packet(&secrets), 200, 50).await;
    let queue = h.screen();
    no_raw("queue", &queue, &secrets);
    assert!(queue.contains("‹redacted:"), "{queue}");
    for i in 0..secrets.len() {
        h.select_id(&format!("S{i}")).await;
        h.key(KeyCode::Enter).await;
        for pane in 0..4 {
            let screen = h.screen();
            no_raw(&format!("S{i} pane {pane}"), &screen, &secrets);
            h.key(KeyCode::Tab).await;
        }
        h.key(KeyCode::Esc).await;
    }
}

/// What a reviewer types — a reconcile's `--reference`, an accept's
/// `--repair-ref`, an assign's `--owner`, the rationale — is redacted before it
/// is stored, by the redactor ingest uses: no surface and no byte of the store
/// holds it.
#[test]
fn what_a_reviewer_types_is_redacted_before_it_is_stored() {
    let cli = Cli::with("review.jsonl");
    let shapeless = "9fQ2xLm7Pz4KdR8sVb1NcT6yHw3JeA5gUo0iZqXv";
    let stripe = "sk_live_51H8xYzAbCdEfGhIjKlMnOp";
    let password = "hunter2x";
    let raws = [shapeless, stripe, password];
    let rationale = format!("looked it up, login password: {password} for the console");
    let mut runs = Vec::new();
    for (id, action, flag, text) in [
        (
            "U4",
            "reconcile",
            "--reference",
            format!("INC-1 api_key {shapeless}"),
        ),
        ("U6", "accept", "--repair-ref", format!("INC-7 {stripe}")),
        ("X1", "assign", "--owner", format!("billing-{stripe}")),
    ] {
        let mut args = vec!["review", id, action, flag, &text, "--rationale", &rationale];
        if action == "reconcile" {
            args.push("--not-found");
        }
        let run = cli.run("maya", &args).expect_code(0);
        runs.push(run.stdout);
    }
    let mut surfaces = runs;
    for id in ["U4", "U6", "X1"] {
        for args in [
            vec!["show", id, "--json"],
            vec!["show", id],
            vec!["timeline", id, "--json"],
            vec!["export", id, "--format", "json"],
            vec!["export", id, "--format", "markdown"],
        ] {
            surfaces.push(cli.run("maya", &args).expect_code(0).stdout);
        }
    }
    let all = surfaces.join("\n");
    for raw in raws {
        assert!(!all.contains(raw), "{raw} shown:\n{all}");
    }
    for kind in ["credential", "stripe_key", "password"] {
        assert!(
            all.contains(&format!("‹redacted:{kind}›")),
            "{kind}:\n{all}"
        );
    }
    for file in [cli.db.clone(), cli.db.with_extension("db-wal")] {
        if let Ok(bytes) = std::fs::read(&file) {
            for raw in raws {
                assert!(
                    !bytes.windows(raw.len()).any(|w| w == raw.as_bytes()),
                    "{raw} stored in {}",
                    file.display()
                );
            }
        }
    }
}
