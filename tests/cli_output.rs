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
