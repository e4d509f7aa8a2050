//! How the command line behaves toward the program reading its output.

mod support;

use std::process::Stdio;

use support::cli::Cli;

/// Runs `holdfast ARGS` with its stdout a pipe whose reading end is already
/// closed, as `holdfast show F09 | head -1` leaves it once `head` has its line.
fn run_into_closed_pipe(cli: &Cli, args: &[&str]) -> (i32, String) {
    let mut child = cli
        .command("ana", args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run holdfast");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("wait for holdfast");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_reader_that_stops_early_ends_the_program_quietly() {
    let cli = Cli::with("review.jsonl");
    for args in [
        &["show", "U1"][..],
        &["timeline", "U1"],
        &["list", "--state", "all"],
        &["export", "U1"],
        &["completions", "bash"],
    ] {
        let (code, stderr) = run_into_closed_pipe(&cli, args);
        assert_eq!(code, 0, "{args:?} exited {code}: {stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("failed printing"),
            "{args:?} said: {stderr}"
        );
    }
}

#[test]
fn list_with_limit_zero_prints_only_the_count() {
    let cli = Cli::with("review.jsonl");
    let held = cli.run("ana", &["list"]).expect_code(0);
    let shown = held
        .stdout
        .lines()
        .find_map(|l| {
            l.contains(" shown")
                .then(|| l.split(" of ").nth(1))
                .flatten()
        })
        .and_then(|rest| rest.split_whitespace().next())
        .expect("an `N of M shown` line")
        .to_owned();
    let run = cli.run("ana", &["list", "--limit", "0"]).expect_code(0);
    assert_eq!(run.stdout, format!("{shown}\n"), "only the count");
}

#[test]
fn the_report_says_none_when_nothing_is_unknown_instead_of_dashes() {
    // Nothing measured: the report's exit code is the release gate's business.
    let cli = Cli::with("tool_t06.jsonl");
    let run = cli.run("ana", &["report"]);
    let line = run
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("unknown age"))
        .expect("an unknown age line");
    assert_eq!(line.trim_end(), "  unknown age   none", "{}", run.stdout);
    let demo = Cli::demo();
    let run = demo.run_at("2026-09-05T11:40:00Z", "ana", &["report"]);
    assert!(
        run.stdout
            .contains("unknown age   2 unknown; oldest F27 (2h38m); median 2h08m"),
        "{}",
        run.stdout
    );
}

#[test]
fn people_never_read_nanoseconds_from_the_system_clock() {
    // A clock with nanoseconds, as the system clock has them.
    let cli = Cli::with("review.jsonl");
    let now = "2026-09-05T10:10:00.123456789Z";
    let mut seen = String::new();
    for args in [
        &[
            "review",
            "U1",
            "comment",
            "--rationale",
            "paged the owner by phone",
        ][..],
        &[
            "review",
            "U1",
            "schedule",
            "--at",
            "+30m",
            "--rationale",
            "look again later",
        ],
        &["show", "U1"],
        &["timeline", "U1"],
        &["report"],
        &["export", "U1", "--format", "markdown"],
    ] {
        let run = cli.run_at(now, "ana", args);
        seen.push_str(&run.stdout);
        seen.push_str(&run.stderr);
    }
    assert!(seen.contains("2026-09-05T10:10:00.123Z"), "{seen}");
    assert!(!seen.contains("123456789"), "{seen}");
    assert!(
        seen.contains("2026-09-05T10:40:00Z"),
        "+30m lands on a whole second: {seen}"
    );
}
