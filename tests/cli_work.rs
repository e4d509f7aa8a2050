//! `holdfast work` and `holdfast drill --work` as a user runs them: a claim with
//! what to execute, a foreign line refused with its line, field and rule, a late
//! worker refused with G8, and a compensation approved on a drill's store executed
//! by the drill's executor, its evidence back in the store and the chain intact.

use crate::support;

use std::io::Write;

use support::cli::Cli;

/// Puts `tool` at `automation` in the CLI's store (a fixture: raising it for
/// real is what `tests/cli_autonomy.rs` covers). The fixture settles F09's
/// open veto first (its veto expectation fails while it is UNKNOWN), as gate
/// A3 asks and `audit verify` checks again.
fn at_automation(cli: &Cli, tool: &str) {
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let store = holdfast::store::sqlite::SqliteStore::open(&cli.db)
            .await
            .unwrap();
        support::review::put_at_level(&store, tool, holdfast::core::ladder::Level::Automation)
            .await;
    });
}

/// What executing F10 did, with `extra` lines after it.
fn completion(cli: &Cli, extra: &[&str]) -> String {
    let t = "2026-09-05T10:10:00Z";
    let mut lines = vec![
        format!(
            r#"{{"type":"attempt","id":"F10-A1","operation":"F10","seq":1,"kind":"request","layer":"queue","started_at":"{t}","ended_at":"{t}","phase":"response_received","outcome":"ok","http_status":200,"provider_request_id":"req-F10"}}"#
        ),
        format!(
            r#"{{"type":"transition","operation":"F10","from":"APPROVED","to":"SENT","by":"svc:executor","role":"system","at":"{t}","reason":"request sent","evidence":["F10-A1"]}}"#
        ),
    ];
    lines.extend(extra.iter().map(|l| (*l).to_owned()));
    let path = cli.dir.path().join(format!("done-{}.jsonl", extra.len()));
    let mut file = std::fs::File::create(&path).unwrap();
    file.write_all(lines.join("\n").as_bytes()).unwrap();
    path.display().to_string()
}

#[test]
fn a_worker_claims_completes_and_a_late_or_foreign_report_is_refused() {
    let cli = Cli::with("small.jsonl");
    // A manual tool's work is held back, and the CLI says why nothing came.
    let held = cli.run(
        "relay",
        &["work", "claim", "--worker", "w0", "--lease", "60"],
    );
    assert!(held.stdout.contains("no work to claim"), "{}", held.stdout);
    at_automation(&cli, "T03");
    let claimed = cli
        .run(
            "relay",
            &["work", "claim", "--worker", "w1", "--lease", "60", "--json"],
        )
        .expect_code(0)
        .json();
    let claimed = claimed["claimed"].as_array().unwrap().clone();
    assert_eq!(claimed.len(), 1, "{claimed:?}");
    assert_eq!(claimed[0]["operation"], "F10");
    assert_eq!(claimed[0]["generation"], 1);
    assert_eq!(claimed[0]["kind"], "retry");
    assert_eq!(
        claimed[0]["record"]["payload_hash"]
            .as_str()
            .map(|h| h.starts_with("sha256:")),
        Some(true)
    );
    let none = cli
        .run(
            "relay",
            &["work", "claim", "--worker", "w2", "--lease", "60"],
        )
        .expect_code(0);
    assert!(none.stdout.contains("no work to claim"), "{}", none.stdout);

    let good = completion(&cli, &[]);
    cli.run(
        "relay",
        &["work", "complete", "F10", "--worker", "w2", &good],
    )
    .refused("G8");
    let foreign = completion(
        &cli,
        &[r#"{"type":"expectation","operation":"F09","expected_state":"SUCCEEDED"}"#],
    );
    let run = cli
        .run(
            "relay",
            &["work", "complete", "F10", "--worker", "w1", &foreign],
        )
        .expect_code(2);
    assert!(run.stderr.contains("line 3: type: G8:"), "{}", run.stderr);
    assert!(
        run.stderr.contains("the lease is still held"),
        "{}",
        run.stderr
    );

    // A completion whose transition cites an attempt nobody reported is refused
    // by the same rule as ingest, and so is a padded reference.
    let t = "2026-09-05T10:10:00Z";
    let uncited = completion(
        &cli,
        &[&format!(
            r#"{{"type":"transition","operation":"F10","from":"SENT","to":"UNKNOWN","by":"svc:executor","role":"system","at":"{t}","reason":"timed out","evidence":["F10-A9"]}}"#
        )],
    );
    let run = cli
        .run(
            "relay",
            &["work", "complete", "F10", "--worker", "w1", &uncited],
        )
        .expect_code(2);
    assert!(
        run.stderr.contains("line 3: evidence: cites F10-A9"),
        "{}",
        run.stderr
    );
    let padded = completion(
        &cli,
        &[&format!(
            r#"{{"type":"transition","operation":"F10","from":"SENT","to":"UNKNOWN","by":"svc:executor","role":"system","at":"{t}","reason":"timed out","evidence":["F10-A1 "]}}"#
        )],
    );
    let run = cli
        .run(
            "relay",
            &["work", "complete", "F10", "--worker", "w1", &padded],
        )
        .expect_code(2);
    assert!(
        run.stderr
            .contains("line 3: evidence[0]: begins or ends with whitespace"),
        "{}",
        run.stderr
    );

    // After the lease ran out, w1 is late.
    cli.run_at(
        "2026-09-05T10:11:01Z",
        "relay",
        &["work", "heartbeat", "F10", "--worker", "w1"],
    )
    .refused("G8");
    let done = cli
        .run(
            "relay",
            &["work", "complete", "F10", "--worker", "w1", &good],
        )
        .expect_code(0);
    // The lease line already says `completed`: the headline does not repeat it,
    // and a count takes its noun in the right number.
    assert_eq!(
        done.stdout.matches("completed").count(),
        1,
        "{}",
        done.stdout
    );
    assert!(
        done.stdout.starts_with("F10 completed ("),
        "{}",
        done.stdout
    );
    assert!(!done.stdout.contains("1 records"), "{}", done.stdout);
    assert_eq!(cli.state("relay", "F10"), "SENT");
    cli.run("auditor", &["audit", "verify"]).expect_code(0);
}

#[test]
fn a_compensation_approved_on_a_drill_store_is_executed_by_drill_work() {
    let cli = Cli::empty();
    cli.run("drill-runner", &["drill"]).expect_code(0);
    assert_eq!(cli.state("maya", "P2"), "PARTIAL");
    // The drill's own compensation was refused before execution: settled as
    // FAILED first, since one compensation is open at a time (G4).
    cli.review("maya", "P2-C", "resolve", &["--to", "FAILED"])
        .expect_code(0);
    // P2 is high risk: one approver proposes, another confirms (G6).
    cli.review("maya", "P2", "approve-compensation", &[])
        .expect_code(0);
    cli.review("lee", "P2", "confirm", &[]).expect_code(0);
    let served = cli
        .run("drill-runner", &["drill", "--work", "--json"])
        .expect_code(0)
        .json();
    let served = served["served"].as_array().unwrap().clone();
    assert_eq!(served.len(), 1, "{served:?}");
    let child = served[0]["operation"].as_str().unwrap().to_owned();
    assert!(child.starts_with("P2-C"), "{child}");
    assert_eq!(served[0]["case"], "P2");
    assert_eq!(served[0]["state"], "SUCCEEDED");
    assert_eq!(
        (
            served[0]["requests"].as_u64(),
            served[0]["effects"].as_u64()
        ),
        (Some(1), Some(1))
    );

    let shown = cli
        .run("maya", &["show", &child, "--json"])
        .expect_code(0)
        .json();
    assert_eq!(shown["state"], "SUCCEEDED");
    let timeline = cli
        .run("maya", &["timeline", &child, "--json"])
        .expect_code(0)
        .stdout;
    assert!(timeline.contains("request"), "{timeline}");
    // Nothing is left to serve, and the chain holds the claim and the completion.
    let again = cli.run("drill-runner", &["drill", "--work"]).expect_code(0);
    assert!(
        again.stdout.contains("no approved work"),
        "{}",
        again.stdout
    );
    cli.run("auditor", &["audit", "verify"]).expect_code(0);
}

#[test]
fn a_step_on_no_such_operation_or_a_generation_never_claimed_says_so() {
    let cli = Cli::with("small.jsonl");
    at_automation(&cli, "T03");
    cli.run(
        "relay",
        &["work", "claim", "--worker", "w1", "--lease", "60"],
    )
    .expect_code(0);
    // No operation F100: not "never claimed", and the nearest id is offered.
    for step in ["heartbeat", "release"] {
        let run = cli.run("relay", &["work", step, "F100", "--worker", "w1"]);
        assert_ne!(run.code, 0, "{step}: {}", run.stdout);
        assert!(
            run.stderr.contains("no operation F100"),
            "{step}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("did you mean F10?"),
            "{step}: {}",
            run.stderr
        );
        assert!(
            !run.stderr.contains("never claimed"),
            "{step}: {}",
            run.stderr
        );
    }
    let good = completion(&cli, &[]);
    let run = cli.run(
        "relay",
        &["work", "complete", "F100", "--worker", "w1", &good],
    );
    assert!(run.stderr.contains("no operation F100"), "{}", run.stderr);
    // An operation that exists but was never claimed still says that.
    let run = cli
        .run("relay", &["work", "heartbeat", "F09", "--worker", "w1"])
        .refused("G8");
    assert!(
        run.stderr.contains("F09 was never claimed"),
        "{}",
        run.stderr
    );
    // Lease 7 of F10 never existed (only lease 1 does): not "replaced".
    let run = cli
        .run(
            "relay",
            &[
                "work",
                "heartbeat",
                "F10",
                "--worker",
                "w1",
                "--lease-generation",
                "7",
            ],
        )
        .refused("G8");
    assert!(
        run.stderr.contains("lease 7 on F10 never existed"),
        "{}",
        run.stderr
    );
    assert!(!run.stderr.contains("replaced"), "{}", run.stderr);
    // The live lease itself is untouched by the refused steps.
    cli.run(
        "relay",
        &[
            "work",
            "heartbeat",
            "F10",
            "--worker",
            "w1",
            "--lease-generation",
            "1",
        ],
    )
    .expect_code(0);
}
