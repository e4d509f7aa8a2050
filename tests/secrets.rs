//! Planted secrets, every kind in every free-text field, against every surface:
//! `show`, `timeline`, `list`, `report`, `export json|markdown` (text and JSON), the
//! console's screens and the log file. Not one raw secret may appear; ids and
//! hashes stay as they are.

mod support;

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
        let run = cli.run("maya", &args).expect_code(0);
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
