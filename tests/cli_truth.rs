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
