//! What the command line tells a reviewer is true: guards that stop a second
//! repair, refusals that name only allowed actions, why a hold is held, times
//! and names read as a tired reviewer types them.

mod support;

use support::cli::{Cli, Run};

/// The demo instant the compensation walk-through uses.
const DEMO_LATE: &str = "2026-09-05T11:40:00Z";

fn refused(run: Run, rule: &str) -> Run {
    let run = run.expect_code(3);
    assert!(
        run.stderr.starts_with(&format!("refused: {rule}: ")),
        "expected a {rule} refusal:\n{}",
        run.stderr
    );
    run
}

#[test]
fn no_second_compensation_after_one_succeeded() {
    let cli = Cli::demo();
    let run = refused(
        cli.run_at(
            DEMO_LATE,
            "ana",
            &[
                "review",
                "F23",
                "approve-compensation",
                "--rationale",
                "revert the committed lines",
            ],
        ),
        "G4",
    );
    assert!(run.stderr.contains("F20"), "{}", run.stderr);
    let shown = cli
        .run_at(DEMO_LATE, "ana", &["show", "F23", "--json"])
        .expect_code(0)
        .json();
    let children = shown["children"].as_array().cloned().unwrap_or_default();
    assert_eq!(children.len(), 1, "{children:?}");
}

#[test]
fn terminal_states_recommend_nothing() {
    let cli = Cli::demo();
    let listed = cli
        .run_at(DEMO_LATE, "ana", &["list", "--state", "all", "--json"])
        .expect_code(0)
        .json();
    let terminal = ["SUCCEEDED", "FAILED", "COMPENSATED", "ACCEPTED"];
    let mut seen = 0;
    for row in listed.as_array().cloned().unwrap_or_default() {
        let state = row["state"].as_str().unwrap_or_default();
        if !terminal.contains(&state) {
            continue;
        }
        seen += 1;
        let id = row["id"].as_str().unwrap_or_default();
        let shown = cli
            .run_at(DEMO_LATE, "ana", &["show", id, "--json"])
            .expect_code(0)
            .json();
        let rec = &shown["recommendation"];
        assert_ne!(rec["decision"], "hold_for_owner", "{id}: {rec}");
        let reason = rec["reason"].as_str().unwrap_or_default();
        assert!(
            reason.contains("terminal") && !reason.contains("accept"),
            "{id}: {reason}"
        );
    }
    assert!(seen >= 10, "the demo has terminal operations ({seen})");
}
