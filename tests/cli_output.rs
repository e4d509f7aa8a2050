//! How the command line behaves toward the program reading its output.

use crate::support;

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

#[test]
fn bulk_triage_files_each_hold_under_its_own_state() {
    let cli = Cli::demo();
    let run = cli
        .run_at(
            "2026-09-05T11:40:00Z",
            "ana",
            &[
                "review",
                "--filter",
                "risk:high",
                "block",
                "--dry-run",
                "--json",
            ],
        )
        .expect_code(0)
        .json();
    let lines = run["lines"].as_array().unwrap();
    assert!(lines.iter().any(|l| l["state"] == "UNKNOWN"), "{run}");
    for l in lines {
        let expected = match l["state"].as_str().unwrap() {
            "UNKNOWN" => "needs_reconciliation",
            "PARTIAL" => "needs_compensation",
            _ => "blocked",
        };
        assert_eq!(l["bucket"], expected, "{l}");
    }
}

#[test]
fn near_misses_in_filters_and_resolve_targets_name_what_was_meant() {
    let cli = Cli::with("review.jsonl");
    let run = cli
        .run(
            "ana",
            &["review", "--filter", "stat:unknown", "block", "--dry-run"],
        )
        .expect_code(2);
    assert!(
        run.stderr.contains("did you mean `state`?"),
        "{}",
        run.stderr
    );
    let run = cli
        .run("ana", &["export", "--filter", "state:unknwon"])
        .expect_code(2);
    assert!(
        run.stderr.contains("did you mean `UNKNOWN`?"),
        "{}",
        run.stderr
    );
    let run = cli
        .review("ana", "U1", "resolve", &["--to", "ACCEPTED"])
        .expect_code(2);
    assert!(
        run.stderr
            .contains("resolve moves a hold to SUCCEEDED, FAILED, PARTIAL"),
        "{}",
        run.stderr
    );
    let run = cli
        .review("ana", "U1", "resolve", &["--to", "faild"])
        .expect_code(2);
    assert!(
        run.stderr.contains("did you mean FAILED?"),
        "{}",
        run.stderr
    );
}

#[test]
fn export_filter_state_all_selects_every_state_as_list_does() {
    let cli = Cli::with("review.jsonl");
    let listed = cli
        .run("ana", &["list", "--state", "all", "--limit", "0"])
        .expect_code(0);
    let all: usize = listed.stdout.trim().parse().unwrap();
    let held: usize = cli
        .run("ana", &["list", "--limit", "0"])
        .expect_code(0)
        .stdout
        .trim()
        .parse()
        .unwrap();
    assert!(all > held, "the fixture has settled operations too");
    let export = cli
        .run("ana", &["export", "--filter", "state:all"])
        .expect_code(0)
        .json();
    assert_eq!(export["bundles"].as_array().unwrap().len(), all, "{export}");
}

#[test]
fn commands_on_the_demo_store_read_the_demo_clock_unless_now_says_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_holdfast"))
            .env_remove("HOLDFAST_DB")
            .env_remove("HOLDFAST_NOW")
            .env_remove("HOLDFAST_DATABASE_URL")
            .env("HOLDFAST_DATA_DIR", dir.path())
            .env("HOLDFAST_CONFIG", dir.path().join("no-config.toml"))
            .env("NO_COLOR", "1")
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (printed, _) = run(&["demo", "--print"]);
    let demo = dir.path().join("demo.db");
    let demo = demo.to_str().unwrap();
    // The F09 row as the demo's console shows it: held 1h38m at the packet's instant.
    let row = |text: &str| text.lines().find(|l| l.contains("F09")).unwrap().to_owned();
    let (listed, note) = run(&["--db", demo, "list"]);
    assert_eq!(row(&listed), row(&printed), "{listed}");
    assert!(note.contains("frozen at 2026-09-05T11:40:00Z"), "{note}");
    let (later, _) = run(&["--db", demo, "--now", "2026-09-05T12:40:00Z", "list"]);
    assert!(row(&later).contains("2h38m"), "--now wins: {later}");
}

/// The demo packet's path.
fn demo_packet() -> String {
    format!("{}/assets/demo/tc094.jsonl", env!("CARGO_MANIFEST_DIR"))
}

/// `ingest` judges what it wrote before it ends, telling how far on stderr:
/// the first report after it has nothing left to judge. With
/// `--defer-judging` it ends without, and its first report judges instead;
/// both stores report the same.
#[test]
fn ingest_leaves_the_store_judged_for_the_metrics_unless_told_to_defer() {
    let prefix = "Judging the operations the store has not judged yet: ";
    let judged = Cli::empty();
    let ingest = judged
        .run("loader", &["ingest", &demo_packet()])
        .expect_code(0);
    let last = ingest
        .stderr
        .lines()
        .rfind(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no judging told: {}", ingest.stderr));
    assert!(last.contains("(100.0%)"), "{last}");
    assert!(!ingest.stdout.contains("Judging"), "{}", ingest.stdout);
    let first = judged.run("ana", &["report"]);
    assert_eq!(first.stderr, "", "nothing left to judge after the ingest");

    let deferred = Cli::empty();
    let ingest = deferred
        .run("loader", &["ingest", "--defer-judging", &demo_packet()])
        .expect_code(0);
    assert!(!ingest.stderr.contains(prefix), "{}", ingest.stderr);
    let judging = deferred.run("ana", &["report"]);
    assert!(judging.stderr.starts_with(prefix), "{}", judging.stderr);
    assert_eq!(judging.stdout, first.stdout);
    assert_eq!(judging.code, first.code);
}

/// `tools` and `autonomy list` read the open vetoes from the kept facts: on
/// a store not judged yet they judge it first and say how far on stderr, as
/// `report` does, and print what they print once nothing is left to judge.
#[test]
fn tools_and_autonomy_list_tell_the_judging_they_wait_for() {
    let prefix = "Judging the operations the store has not judged yet: ";
    for args in [&["tools"][..], &["autonomy", "list"]] {
        let deferred = Cli::empty();
        deferred
            .run("loader", &["ingest", "--defer-judging", &demo_packet()])
            .expect_code(0);
        let judging = deferred.run("ana", args).expect_code(0);
        let last = judging
            .stderr
            .lines()
            .next_back()
            .unwrap_or_else(|| panic!("{args:?}: no judging told"));
        assert!(
            last.starts_with(prefix) && last.contains("(100.0%)"),
            "{args:?}: {}",
            judging.stderr
        );
        let judged = deferred.run("ana", args).expect_code(0);
        assert_eq!(judged.stderr, "", "{args:?}: nothing left to judge");
        assert_eq!(judging.stdout, judged.stdout, "{args:?}");
    }
}

/// `report` on a store with operations it has not judged yet says how far
/// judging has got on stderr (plain lines, stderr being no terminal here),
/// from the first count to the last; stdout holds the report alone, the same
/// as once nothing is left to judge, when stderr says nothing.
#[test]
fn report_tells_how_far_judging_has_got_on_stderr_only() {
    for args in [&["report"][..], &["report", "--json"]] {
        let demo = Cli::empty();
        demo.run("loader", &["ingest", "--defer-judging", &demo_packet()])
            .expect_code(0);
        let judging = demo.run_at("2026-09-05T11:40:00Z", "ana", args);
        let lines: Vec<&str> = judging.stderr.lines().collect();
        let prefix = "Judging the operations the store has not judged yet: ";
        assert!(
            !lines.is_empty() && lines.iter().all(|l| l.starts_with(prefix)),
            "{}",
            judging.stderr
        );
        assert!(
            lines[0].starts_with(&format!("{prefix}0 of ")),
            "{}",
            judging.stderr
        );
        let last = lines[lines.len() - 1].trim_start_matches(prefix);
        let (judged, rest) = last.split_once(" of ").expect("judged of total");
        let total = rest.split_whitespace().next().expect("a total");
        assert_eq!(judged, total, "{last}");
        assert!(rest.contains("(100.0%)"), "{last}");
        assert!(!judging.stdout.contains("Judging"), "{}", judging.stdout);

        let judged_already = demo.run_at("2026-09-05T11:40:00Z", "ana", args);
        assert_eq!(judged_already.stderr, "", "nothing left to judge");
        assert_eq!(judging.stdout, judged_already.stdout, "{args:?}");
        assert_eq!(judging.code, judged_already.code);
    }
}
