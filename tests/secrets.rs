//! Planted secrets, every kind in every free-text field, against every surface:
//! `show`, `timeline`, `list`, `report`, `export json|markdown` (text and JSON), the
//! console's screens and the log file. Not one raw secret may appear; ids and
//! hashes stay as they are.

mod support;

use crossterm::event::KeyCode;
use holdfast::wire::MAX_KEY_CHARS;
use support::cli::Cli;
use support::console::Harness;

const PLANTED: &str = include_str!("fixtures/planted_secrets.tsv");
const CONTRACT: &str = r#"{"type":"contract","tool":"T03","version":"IC07","action":"ticket.create","method":"POST","idempotency":{"supported":true,"scope":"account","retention_hours":24},"status_lookup":true,"retryable":["connection_reset"],"compensation":"ticket.delete","owner":"integrations","max_attempts":3,"budget_seconds":120}"#;
const PAYLOAD: &str = "sha256:ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb";
const TRACE: &str = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";

struct Planted {
    kind: &'static str,
    text: String,
    raws: Vec<&'static str>,
}

fn planted() -> Vec<Planted> {
    PLANTED
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let mut parts = l.split('\t');
            let kind = parts.next().expect("kind");
            let text = parts.next().expect("text").replace('⏎', "\n");
            Planted {
                kind,
                text,
                raws: parts.collect(),
            }
        })
        .collect()
}

/// The key form of a planted text: itself when it fits a key (every planted text
/// but the longest PEM and token ones), else none.
fn as_key(text: &str) -> Option<&str> {
    (text.chars().count() <= MAX_KEY_CHARS).then_some(text)
}

/// One held operation per planted text, with the text in its target and business
/// key, an attempt's excerpt, error type and provider request id, and an
/// observation's note.
fn packet(secrets: &[Planted]) -> String {
    let mut lines = vec![CONTRACT.to_owned()];
    for (i, p) in secrets.iter().enumerate() {
        let id = format!("S{i}");
        let key = as_key(&p.text);
        lines.push(
            serde_json::json!({
                "type": "operation", "id": id, "tenant": "pinehaven", "actor": "svc:relay-desk",
                "tool": "T03", "action": "ticket.create", "target": p.text,
                "payload_hash": PAYLOAD, "risk": "high", "business_key": key,
                "owner": "integrations", "state": "UNKNOWN",
                "failure_mode": "timeout_unknown", "created_at": "2026-09-05T10:00:00Z"
            })
            .to_string(),
        );
        lines.push(
            serde_json::json!({
                "type": "attempt", "id": format!("SA{i}"), "operation": id, "seq": 1,
                "kind": "request", "started_at": "2026-09-05T10:00:01Z",
                "phase": "request_sent", "outcome": "timeout", "error_type": key,
                "provider_request_id": key, "trace_id": TRACE, "response_excerpt": p.text
            })
            .to_string(),
        );
        lines.push(
            serde_json::json!({
                "type": "observation", "id": format!("SO{i}"), "operation": id,
                "observed_at": "2026-09-05T10:01:00Z", "source": "provider_status",
                "found": false, "note": p.text
            })
            .to_string(),
        );
    }
    lines.join("\n") + "\n"
}

/// Panics naming the surface when any raw secret appears in `text`.
fn no_raw(surface: &str, text: &str, secrets: &[Planted]) {
    for p in secrets {
        for raw in &p.raws {
            assert!(
                !text.contains(raw),
                "{surface}: raw {} secret {raw} shown",
                p.kind
            );
        }
    }
}

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
