//! Reviewer actions through the real binary: each action's allowed path, each
//! guard's refusal (exit 3, `refused: Gn: …` on stderr), four eyes, tenant scope,
//! bulk triage and a race of thirty-two processes on one SQLite file.

use crate::support;

use support::cli::{Cli, Run};

const FIXTURE: &str = "review.jsonl";

fn applied(run: Run, action: &str, id: &str) -> Run {
    let run = run.expect_code(0);
    assert!(
        run.stdout
            .starts_with(&format!("applied: {action} on {id}\n")),
        "{}",
        run.stdout
    );
    run
}

fn refused(run: Run, rule: &str) -> Run {
    run.refused(rule)
}

#[test]
fn every_action_has_an_allowed_path() {
    let cli = Cli::with(FIXTURE);
    let me = "maya";
    let start = cli.head();

    let run = applied(
        cli.review(
            me,
            "U4",
            "reconcile",
            &["--not-found", "--reference", "INC-1"],
        ),
        "reconcile",
        "U4",
    );
    assert!(
        run.stdout
            .contains("records status query U4-Q2 and observation U4-O1")
    );
    assert_eq!(cli.state(me, "U4"), "UNKNOWN");
    let run = applied(
        cli.review(me, "U4", "authorize-retry", &[]),
        "authorize-retry",
        "U4",
    );
    assert!(
        run.stdout.contains("state      UNKNOWN → APPROVED"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("evidence   U4-O1"),
        "the reconcile is the proof"
    );

    let steps: &[(&str, &str, &[&str], &str)] = &[
        ("U1", "resolve", &["--to", "SUCCEEDED"], "SUCCEEDED"),
        ("U5", "resolve", &["--to", "failed"], "FAILED"),
        ("P2", "mark-compensated", &[], "COMPENSATED"),
        ("P3", "mark-resumed", &[], "SUCCEEDED"),
        ("B1", "revalidate", &[], "VALIDATED"),
        ("U6", "accept", &["--repair-ref", "INC-7"], "ACCEPTED"),
        ("U7", "block", &[], "BLOCKED"),
    ];
    for (id, action, extra, to) in steps {
        let run = applied(cli.review(me, id, action, extra), action, id);
        assert!(run.stdout.contains(&format!("→ {to}")), "{}", run.stdout);
        assert_eq!(&cli.state(me, id), to, "{action} on {id}");
    }

    let run = applied(
        cli.review(me, "P1", "approve-compensation", &[]),
        "approve-compensation",
        "P1",
    );
    assert!(
        run.stdout
            .contains("creates    P1-C1 (invoice.void, compensation_of) in APPROVED"),
        "{}",
        run.stdout
    );
    let run = applied(
        cli.review(me, "P1", "approve-resume", &[]),
        "approve-resume",
        "P1",
    );
    assert!(
        run.stdout.contains("covering only items 2, 3"),
        "{}",
        run.stdout
    );
    assert_eq!(cli.state(me, "P1"), "PARTIAL");
    assert_eq!(cli.state(me, "P1-C1"), "APPROVED");
    assert_eq!(cli.state(me, "P1-R1"), "APPROVED");

    applied(
        cli.review(me, "X1", "assign", &["--owner", "billing"]),
        "assign",
        "X1",
    );
    applied(
        cli.review(me, "X1", "schedule", &["--at", "2026-09-05T10:30:00Z"]),
        "schedule",
        "X1",
    );
    applied(cli.review(me, "X1", "comment", &[]), "comment", "X1");
    let shown = cli.run(me, &["show", "X1", "--json"]).expect_code(0).json();
    assert_eq!(shown["owner"], "billing");
    assert_eq!(shown["next_observation_at"], "2026-09-05T10:30:00Z");

    let run = cli.review(me, "U3", "authorize-retry", &[]).expect_code(0);
    assert!(
        run.stdout
            .starts_with("proposal opened: authorize-retry on U3"),
        "{}",
        run.stdout
    );
    applied(cli.review("ana", "U3", "confirm", &[]), "confirm", "U3");
    assert_eq!(cli.state(me, "U3"), "APPROVED");
    let run = cli.review(me, "U8", "authorize-retry", &[]).expect_code(0);
    assert!(run.stdout.starts_with("proposal opened"), "{}", run.stdout);
    applied(cli.review("ana", "U8", "reject", &[]), "reject", "U8");
    assert_eq!(cli.state(me, "U8"), "UNKNOWN");

    // 18 actions, two of them creating a child each: one audit row per change.
    assert_eq!(cli.head() - start, 20);
    cli.run(me, &["audit", "verify"]).expect_code(0);
}

#[test]
fn a_dry_run_shows_the_exact_effect_and_writes_nothing() {
    let cli = Cli::with(FIXTURE);
    let head = cli.head();
    let run = cli
        .run(
            "maya",
            &["review", "U1", "resolve", "--to", "SUCCEEDED", "--dry-run"],
        )
        .expect_code(0);
    assert!(
        run.stdout
            .starts_with("dry run, nothing written — would apply: resolve on U1")
    );
    assert!(
        run.stdout
            .contains("audit      would write resolve by maya in role local")
    );
    assert!(run.stdout.contains("evidence   O-U1-1"));
    let json = cli
        .run(
            "maya",
            &[
                "review",
                "U1",
                "resolve",
                "--to",
                "SUCCEEDED",
                "--dry-run",
                "--json",
            ],
        )
        .expect_code(0)
        .json();
    assert_eq!(json["effect"]["to"], "SUCCEEDED");
    assert_eq!(json["effect"]["commit"]["audit"]["by"], "maya");
    assert_eq!(cli.head(), head);
    assert_eq!(cli.state("maya", "U1"), "UNKNOWN");
}

#[test]
fn each_guard_refuses_through_the_cli() {
    let cli = Cli::with(FIXTURE);
    let me = "maya";
    let head = cli.head();
    refused(
        cli.review(me, "B1", "resolve", &["--to", "SUCCEEDED"]),
        "G1",
    );
    refused(cli.review(me, "U4", "authorize-retry", &[]), "G2");
    refused(cli.review(me, "B2", "revalidate", &[]), "G3");
    refused(cli.review(me, "P1", "mark-compensated", &[]), "G4");
    refused(cli.review(me, "U5", "authorize-retry", &[]), "G5");
    cli.review(me, "U3", "authorize-retry", &[]).expect_code(0);
    refused(cli.review(me, "U3", "confirm", &[]), "G6");
    refused(
        cli.review(me, "D1", "resolve", &["--to", "SUCCEEDED"]),
        "G9",
    );
    refused(cli.review(me, "U6", "authorize-retry", &[]), "G11");
    refused(cli.review(me, "U7", "authorize-retry", &[]), "G12");
    let run = refused(
        cli.review(me, "U1", "comment", &["--expected-version", "0"]),
        "G8",
    );
    assert!(
        run.stderr
            .contains("U1 was changed by loader at 2026-09-05T10:00:00Z (version 0 → 1)"),
        "{}",
        run.stderr
    );
    let json = cli
        .run(
            me,
            &[
                "review",
                "U4",
                "authorize-retry",
                "--rationale",
                "no reconcile yet, try",
                "--json",
            ],
        )
        .expect_code(3)
        .json();
    assert_eq!(json["refused"]["rule"], "G2");
    assert_eq!(cli.head(), head + 1, "only the proposal was written");
}

#[test]
fn g10_tool_output_reaches_no_output_raw() {
    let cli = Cli::with(FIXTURE);
    for args in [
        &["show", "X1"][..],
        &["timeline", "X1"],
        &["export", "X1", "--format", "markdown"],
        &["export", "X1"],
    ] {
        let run = cli.run("maya", args).expect_code(0);
        for bad in ['\u{1b}', '\u{7}', '\u{202e}'] {
            assert!(!run.stdout.contains(bad), "{args:?} printed {bad:?} raw");
        }
    }
    let timeline = cli.run("maya", &["timeline", "X1"]).expect_code(0);
    assert!(
        timeline.stdout.contains("ignore previous instructions"),
        "shown as data"
    );
    let show = cli.run("maya", &["show", "X1"]).expect_code(0);
    assert!(
        show.stdout
            .contains("acting on tool output: it is quarantined data")
    );
}

#[test]
fn bad_input_is_exit_2_and_names_the_problem() {
    let cli = Cli::with(FIXTURE);
    for (args, needle) in [
        (
            &["review", "U1", "resolve", "--to", "SUCCEEDED"][..],
            "--rationale TEXT is required",
        ),
        (
            &[
                "review",
                "U1",
                "resolve",
                "--to",
                "FAILED",
                "--rationale",
                "short",
            ],
            "at least 10",
        ),
        (
            &["review", "U1", "resolve", "--rationale", "long enough text"],
            "needs --to STATE",
        ),
        (
            &["review", "U1", "fly", "--rationale", "long enough text"],
            "unknown action",
        ),
        (
            &[
                "review",
                "U1",
                "block",
                "--owner",
                "x",
                "--rationale",
                "long enough text",
            ],
            "--owner belongs to `assign`",
        ),
        (
            &[
                "review",
                "U1",
                "reconcile",
                "--rationale",
                "long enough text",
            ],
            "--found or --not-found",
        ),
        (
            &[
                "review",
                "U1",
                "reconcile",
                "--found",
                "--match",
                "colour",
                "--rationale",
                "long enough text",
            ],
            "fields are",
        ),
        (
            &[
                "review",
                "--filter",
                "state:UNKNOWN",
                "reconcile",
                "--rationale",
                "long enough text",
            ],
            "one lookup of one operation",
        ),
        (
            &["review", "--filter", "colour:red", "block", "--dry-run"],
            "unknown field",
        ),
        (&["export"], "name the operations"),
    ] {
        let run = cli.run("maya", args).expect_code(2);
        assert!(run.stderr.contains(needle), "{args:?}: {}", run.stderr);
    }
    let run = cli.review("maya", "NOPE", "comment", &[]).expect_code(1);
    assert!(run.stderr.contains("no operation NOPE"), "{}", run.stderr);
}

#[test]
fn reconcile_takes_flags_or_a_wire_format_observation_file() {
    let cli = Cli::with(FIXTURE);
    let run = applied(
        cli.review(
            "maya",
            "U4",
            "reconcile",
            &[
                "--found",
                "--match",
                "all",
                "--effect-count",
                "1",
                "--provider-request-id",
                "req_81",
            ],
        ),
        "reconcile",
        "U4",
    );
    assert!(
        run.stdout.contains("provider_status, found"),
        "{}",
        run.stdout
    );
    applied(
        cli.review("maya", "U4", "resolve", &["--to", "SUCCEEDED"]),
        "resolve",
        "U4",
    );

    let file = cli.dir.path().join("obs.jsonl");
    std::fs::write(
        &file,
        "{\"type\":\"observation\",\"id\":\"O-X1-9\",\"operation\":\"X1\",\"observed_at\":\"2026-09-05T10:08:00Z\",\"source\":\"provider_status\",\"found\":false,\"note\":\"no ticket\"}\n",
    )
    .unwrap();
    let path = file.to_str().unwrap();
    let run = applied(
        cli.review("maya", "X1", "reconcile", &["--observation", path]),
        "reconcile",
        "X1",
    );
    assert!(run.stdout.contains("observation O-X1-9"), "{}", run.stdout);
    let timeline = cli
        .run("maya", &["timeline", "X1", "--json"])
        .expect_code(0)
        .json();
    let query = &timeline.as_array().unwrap()[1];
    assert_eq!(query["kind"], "status_query");
    assert_eq!(query["started_at"], "2026-09-05T10:08:00Z");
    applied(
        cli.review("maya", "X1", "resolve", &["--to", "FAILED"]),
        "resolve",
        "X1",
    );
    refused(
        cli.review("maya", "X1", "reconcile", &["--observation", path]),
        "G1",
    );
    let run = cli
        .review("maya", "U2", "reconcile", &["--observation", path])
        .expect_code(2);
    assert!(
        run.stderr
            .contains("names X1, not the operation under review"),
        "{}",
        run.stderr
    );
}

/// maya owns pinehaven; ana and bo approve there, rev reviews, vi views.
fn granted() -> Cli {
    let cli = Cli::with(FIXTURE);
    cli.run(
        "maya",
        &["grant", "maya", "--role", "owner", "--tenant", "pinehaven"],
    )
    .expect_code(0);
    for (who, role) in [
        ("ana", "approver"),
        ("bo", "approver"),
        ("rev", "reviewer"),
        ("vi", "viewer"),
    ] {
        cli.run(
            "maya",
            &["grant", who, "--role", role, "--tenant", "pinehaven"],
        )
        .expect_code(0);
    }
    cli
}

#[test]
fn four_eyes_same_identity_refused_different_approver_applies_reject_changes_nothing() {
    let cli = granted();
    let run = cli
        .review("ana", "U3", "authorize-retry", &[])
        .expect_code(0);
    assert!(
        run.stdout
            .starts_with("proposal opened: authorize-retry on U3"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("by ana in role approver"),
        "{}",
        run.stdout
    );
    let list = cli.run("ana", &["list"]).expect_code(0);
    assert!(list.stdout.contains("UNKNOWN+   U3"), "{}", list.stdout);
    assert!(list.stdout.contains("+ proposal pending a second approver"));

    refused(cli.review("ana", "U3", "confirm", &[]), "G6");
    refused(cli.review("rev", "U3", "confirm", &[]), "G6");
    refused(cli.review("bo", "U3", "authorize-retry", &[]), "G6");
    let run = applied(cli.review("bo", "U3", "confirm", &[]), "confirm", "U3");
    assert!(run.stdout.contains("confirms proposal"), "{}", run.stdout);
    assert!(run.stdout.contains("UNKNOWN → APPROVED"));
    assert_eq!(cli.state("bo", "U3"), "APPROVED");

    cli.review("rev", "U8", "authorize-retry", &[])
        .expect_code(0);
    applied(cli.review("bo", "U8", "reject", &[]), "reject", "U8");
    assert_eq!(cli.state("bo", "U8"), "UNKNOWN");
    let shown = cli
        .run("bo", &["show", "U8", "--json"])
        .expect_code(0)
        .json();
    assert!(shown["pending_proposal"].is_null());
    refused(cli.review("bo", "U8", "confirm", &[]), "G6");

    let export = cli.run("bo", &["export", "U3"]).expect_code(0).json();
    let rows: Vec<(String, String, String)> = export["bundles"][0]["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or("-").to_owned();
            (s("action"), s("by"), s("role"))
        })
        .collect();
    assert!(rows.contains(&("authorize-retry".into(), "ana".into(), "approver".into())));
    assert!(rows.contains(&("confirm".into(), "bo".into(), "approver".into())));
}

#[test]
fn roles_allow_exactly_their_actions() {
    let cli = granted();
    refused(cli.review("vi", "U1", "comment", &[]), "G6");
    refused(
        cli.review("rev", "U6", "accept", &["--repair-ref", "INC-1"]),
        "G6",
    );
    refused(cli.review("maya", "U1", "comment", &[]), "G6");
    applied(
        cli.review("maya", "U6", "accept", &["--repair-ref", "INC-1"]),
        "accept",
        "U6",
    );
    applied(
        cli.review("maya", "X1", "assign", &["--owner", "billing"]),
        "assign",
        "X1",
    );
    applied(
        cli.review("rev", "U1", "resolve", &["--to", "SUCCEEDED"]),
        "resolve",
        "U1",
    );
    let run = cli
        .review("rev", "U2", "authorize-retry", &[])
        .expect_code(0);
    assert!(
        run.stdout.starts_with("proposal opened"),
        "a reviewer proposes: {}",
        run.stdout
    );
    applied(cli.review("ana", "U2", "confirm", &[]), "confirm", "U2");
    let run = cli.run("vi", &["show", "U1"]).expect_code(0);
    assert!(
        run.stdout.starts_with("acting as vi — viewer on pinehaven"),
        "{}",
        run.stdout
    );
}

#[test]
fn tenant_scope_hides_and_refuses_other_tenants() {
    let cli = granted();
    let all = cli
        .run("ana", &["list", "--state", "all", "--json"])
        .expect_code(0)
        .json();
    let ids: Vec<&str> = all
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["id"].as_str())
        .collect();
    assert!(!ids.contains(&"H1") && ids.contains(&"U1"), "{ids:?}");
    for args in [
        &["show", "H1"][..],
        &["timeline", "H1"],
        &["export", "H1"],
        &[
            "review",
            "H1",
            "comment",
            "--rationale",
            "looking at it anyway",
        ],
    ] {
        let run = refused(cli.run("ana", args), "G7");
        assert!(
            !run.stderr.contains("harborline"),
            "nothing leaks: {}",
            run.stderr
        );
    }
    let missing = refused(cli.run("ana", &["show", "NOPE"]), "G7");
    assert_eq!(
        missing.stderr.replace("NOPE", "H1"),
        refused(cli.run("ana", &["show", "H1"]), "G7").stderr,
        "a hidden operation reads exactly like a missing one"
    );
    let dry = cli
        .run(
            "ana",
            &[
                "review",
                "--filter",
                "tenant:harborline",
                "comment",
                "--dry-run",
            ],
        )
        .expect_code(0);
    assert!(dry.stdout.contains("on 0 operations"), "{}", dry.stdout);
    let export = cli
        .run("ana", &["export", "--filter", "state:UNKNOWN"])
        .expect_code(0)
        .json();
    let exported: Vec<&str> = export["bundles"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|b| b["bundle"]["id"].as_str())
        .collect();
    assert!(
        !exported.contains(&"H1") && exported.contains(&"U1"),
        "{exported:?}"
    );

    // No expectation in the fixture: the gate evaluated nothing (exit 5).
    let report = cli.run("ana", &["report", "--json"]).expect_code(5);
    assert!(
        report.stdout.contains("\"U1\"") && !report.stdout.contains("\"H1\""),
        "{}",
        report.stdout
    );

    let stranger = cli.run("zed", &["list", "--state", "all"]).expect_code(0);
    assert!(
        stranger.stdout.starts_with("acting as zed — no grants"),
        "{}",
        stranger.stdout
    );
    assert!(
        stranger.stdout.contains("0 of 0 shown"),
        "{}",
        stranger.stdout
    );
    refused(cli.review("zed", "U1", "comment", &[]), "G7");
}

#[test]
fn grants_are_audited_and_guard_against_lock_out() {
    let cli = Cli::with(FIXTURE);
    let list = cli.run("maya", &["list"]).expect_code(0);
    assert!(
        list.stdout.starts_with("acting as maya — single-user mode"),
        "{}",
        list.stdout
    );
    let head = cli.head();
    refused(
        cli.run(
            "maya",
            &["grant", "bo", "--role", "approver", "--tenant", "pinehaven"],
        ),
        "G6",
    );
    let run = cli
        .run(
            "maya",
            &["grant", "maya", "--role", "owner", "--tenant", "pinehaven"],
        )
        .expect_code(0);
    assert!(
        run.stdout.contains("single-user mode ends"),
        "{}",
        run.stdout
    );
    let again = cli
        .run(
            "maya",
            &["grant", "maya", "--role", "owner", "--tenant", "pinehaven"],
        )
        .expect_code(0);
    assert!(
        again.stdout.starts_with("nothing to change"),
        "{}",
        again.stdout
    );
    refused(
        cli.run(
            "bo",
            &["grant", "bo", "--role", "owner", "--tenant", "pinehaven"],
        ),
        "G6",
    );
    cli.run(
        "maya",
        &["grant", "bo", "--role", "approver", "--tenant", "pinehaven"],
    )
    .expect_code(0);
    cli.run(
        "maya",
        &["grant", "kai", "--role", "owner", "--tenant", "harborline"],
    )
    .expect_code(0);
    refused(
        cli.run(
            "maya",
            &["revoke", "maya", "--role", "owner", "--tenant", "pinehaven"],
        ),
        "G6",
    );
    cli.run(
        "maya",
        &[
            "revoke",
            "bo",
            "--role",
            "approver",
            "--tenant",
            "pinehaven",
        ],
    )
    .expect_code(0);
    assert_eq!(cli.head(), head + 4);
    cli.run("maya", &["audit", "verify"]).expect_code(0);
    let grants = cli.run("maya", &["grants", "--json"]).expect_code(0).json();
    let rows: Vec<(&str, &str, &str)> = grants
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            (
                g["identity"].as_str().unwrap(),
                g["role"].as_str().unwrap(),
                g["tenant"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [("maya", "owner", "pinehaven")],
        "kai's tenant is not maya's to see"
    );
    let bad = cli.run(
        "maya",
        &["grant", "bo", "--role", "local", "--tenant", "pinehaven"],
    );
    assert_eq!(bad.code, 2, "{}", bad.stderr);
}

#[test]
fn bulk_triage_splits_first_and_then_applies_one_audited_transition_each() {
    let cli = Cli::with(FIXTURE);
    let head = cli.head();
    let filter = "state:UNKNOWN mode:timeout_unknown tenant:pinehaven";
    let dry = cli
        .run(
            "maya",
            &["review", "--filter", filter, "authorize-retry", "--dry-run"],
        )
        .expect_code(0);
    let text = &dry.stdout;
    assert!(
        text.starts_with("dry run, nothing written: authorize-retry on 10 operations"),
        "{text}"
    );
    let section = |title: &str| -> String {
        let start = text
            .find(&format!("\n{title} ("))
            .unwrap_or_else(|| panic!("{title}: {text}"));
        let rest = &text[start + 1..];
        let end = rest[1..].find("\n\n").map_or(rest.len(), |e| e + 1);
        rest[..end].to_owned()
    };
    let retry = section("retry eligible");
    assert!(
        retry.contains("U2 ") && retry.contains("would apply: UNKNOWN → APPROVED"),
        "{retry}"
    );
    assert!(
        retry.contains("U3 ") && retry.contains("would open a proposal"),
        "{retry}"
    );
    let reconcile = section("needs reconciliation");
    assert!(
        reconcile.contains("U4 ") && reconcile.contains("refused: G2"),
        "{reconcile}"
    );
    // U5's budget is spent and the owner decides, but it is still UNKNOWN: it
    // is filed under its own state's need, not among the BLOCKED holds.
    assert!(
        reconcile.contains("U5 ") && reconcile.contains("refused: G5"),
        "{reconcile}"
    );
    assert!(text.contains("blocked (0)"), "{text}");
    assert!(text.contains("needs compensation (0)"), "{text}");
    assert_eq!(cli.head(), head, "a dry run writes nothing");

    let run = authorize_retries(&cli, filter, &[]).expect_code(3);
    let applied: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.contains(" applied  "))
        .collect();
    assert_eq!(
        applied.len(),
        3,
        "U2, U3 (proposal) and U8 (proposal): {}",
        run.stdout
    );
    assert!(
        run.stdout.contains("3 applied, 7 not applied"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l.contains("U4") && l.contains("refused: G2"))
    );
    assert_eq!(cli.head(), head + 3, "one audit row per applied operation");
    assert_eq!(cli.state("maya", "U2"), "APPROVED");

    let json = cli
        .run(
            "maya",
            &[
                "review",
                "--filter",
                "state:PARTIAL",
                "approve-resume",
                "--dry-run",
                "--json",
            ],
        )
        .expect_code(0)
        .json();
    let lines = json["lines"].as_array().unwrap();
    assert!(
        lines.iter().all(|l| l["bucket"] == "needs_compensation"),
        "{json}"
    );
}

/// Bulk triage as maya: `authorize-retry` on every operation `filter` matches,
/// with the incident's rationale and `extra` arguments.
fn authorize_retries(cli: &Cli, filter: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "review",
        "--filter",
        filter,
        "authorize-retry",
        "--rationale",
        "triage after the incident call",
    ];
    args.extend_from_slice(extra);
    cli.run("maya", &args)
}

/// Bulk triage applied with `--json` is written one result at a time and is still
/// one compact JSON document: the filter, the action, then every operation's
/// result in the dry run's order, each applied once.
#[test]
fn bulk_triage_applied_as_json_is_one_document_of_every_result() {
    let cli = Cli::with(FIXTURE);
    let head = cli.head();
    let filter = "state:UNKNOWN mode:timeout_unknown tenant:pinehaven";
    let dry = cli
        .run(
            "maya",
            &[
                "review",
                "--filter",
                filter,
                "authorize-retry",
                "--dry-run",
                "--json",
            ],
        )
        .expect_code(0)
        .json();
    let planned: Vec<&serde_json::Value> = dry["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| &l["id"])
        .collect();
    let run = authorize_retries(&cli, filter, &["--json"]).expect_code(3);
    let json = run.json();
    assert_eq!(
        json["action"], "authorize_retry",
        "snake_case like the rest"
    );
    assert_eq!(
        format!("{json}\n"),
        run.stdout,
        "compact, as one document would print"
    );
    assert_eq!(json["filter"], dry["filter"]);
    assert_eq!(json["action"], dry["action"], "{json}");
    let results = json["results"].as_array().unwrap();
    let ids: Vec<&serde_json::Value> = results.iter().map(|r| &r["id"]).collect();
    assert_eq!(ids, planned, "every planned operation once, in order");
    let applied = results.iter().filter(|r| r["applied"] == true).count();
    assert_eq!(applied, 3, "{json}");
    assert_eq!(cli.head(), head + 3, "one audit row per applied operation");
}

#[test]
fn export_writes_hashed_bundles_in_json_and_markdown() {
    let cli = Cli::with(FIXTURE);
    cli.review("maya", "U1", "resolve", &["--to", "SUCCEEDED"])
        .expect_code(0);
    let out = cli.dir.path().join("export.json");
    let run = cli
        .run(
            "maya",
            &["export", "U1", "P1", "--out", out.to_str().unwrap()],
        )
        .expect_code(0);
    let text = std::fs::read_to_string(&out).unwrap();
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let hash = holdfast::core::export::content_hash(&doc);
    assert_eq!(doc["content_hash"], hash.as_str());
    assert!(run.stderr.contains(hash.as_str()), "{}", run.stderr);
    for bundle in doc["bundles"].as_array().unwrap() {
        assert_eq!(
            bundle["content_hash"],
            holdfast::core::export::content_hash(bundle).as_str()
        );
    }
    let u1 = &doc["bundles"][0];
    assert_eq!(u1["bundle"]["state"], "SUCCEEDED");
    assert_eq!(u1["attempts"][0]["id"], "A-U1-1");
    assert_eq!(u1["observations"][0]["id"], "O-U1-1");
    let actions: Vec<&str> = u1["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["action"].as_str())
        .collect();
    assert_eq!(actions, ["ingest", "resolve"]);
    assert_eq!(doc["bundles"][1]["items"].as_array().unwrap().len(), 3);

    let mut tampered = doc.clone();
    tampered["bundles"][0]["bundle"]["state"] = "FAILED".into();
    assert_ne!(holdfast::core::export::content_hash(&tampered), hash);

    let md = cli
        .run("maya", &["export", "U1", "--format", "markdown"])
        .expect_code(0);
    assert!(
        md.stdout
            .starts_with("# Evidence export (holdfast-evidence-v1)")
    );
    assert!(md.stdout.contains("## U1 — SUCCEEDED"));
    assert!(md.stdout.contains("### Attempts") && md.stdout.contains("### Observations"));
    assert!(
        md.stdout
            .contains("| 2026-09-05T10:10:00Z | resolve | UNKNOWN → SUCCEEDED | maya | local |"),
        "{}",
        md.stdout
    );
}

#[test]
fn thirty_two_processes_resolving_one_operation_make_exactly_one_transition() {
    let cli = Cli::with(FIXTURE);
    let head = cli.head();
    let children: Vec<_> = (0..32)
        .map(|n| {
            let who = format!("rev{n}");
            cli.command(
                &who,
                &[
                    "review",
                    "U1",
                    "resolve",
                    "--to",
                    "SUCCEEDED",
                    "--rationale",
                    "provider shows the ticket once",
                ],
            )
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn")
        })
        .collect();
    let runs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("wait"))
        .collect();
    let mut won = 0;
    for out in &runs {
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        for text in [&stdout, &stderr] {
            assert!(!text.contains("database is locked"), "{text}");
            assert!(
                !text.to_lowercase().contains("sqlite"),
                "no raw driver text: {text}"
            );
        }
        match out.status.code() {
            Some(0) => won += 1,
            Some(3) => assert!(
                stderr.starts_with("refused: G8: U1 was changed by rev")
                    || stderr.starts_with("refused: G1: U1 is SUCCEEDED"),
                "{stderr}"
            ),
            other => panic!("exit {other:?}: {stdout}{stderr}"),
        }
    }
    assert_eq!(won, 1, "exactly one process wins");
    assert_eq!(cli.head(), head + 1, "audit rows = transitions");
    cli.run("maya", &["audit", "verify"]).expect_code(0);
    let export = cli.run("maya", &["export", "U1"]).expect_code(0).json();
    let resolves = export["bundles"][0]["transitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["action"] == "resolve")
        .count();
    assert_eq!(resolves, 1);
}

/// `holdfast list --after ID` pages by key: the pages of two, each after the
/// last id of the one before, are the listing read whole, in every order; the
/// text output names the next page's `--after`.
#[test]
fn list_pages_after_the_last_id_of_the_page_before() {
    let cli = Cli::with(FIXTURE);
    let ids = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["list", "--state", "all", "--json"];
        all.extend_from_slice(args);
        cli.run("maya", &all)
            .expect_code(0)
            .json()
            .as_array()
            .unwrap()
            .iter()
            .map(|op| op["id"].as_str().unwrap().to_owned())
            .collect()
    };
    for sort in ["urgency", "age", "id", "deadline"] {
        let whole = ids(&["--sort", sort]);
        assert!(whole.len() > 4, "{sort}: several pages");
        let mut paged: Vec<String> = Vec::new();
        loop {
            let mut args = vec!["--sort", sort, "--limit", "2"];
            let last = paged.last().cloned();
            if let Some(last) = &last {
                args.extend(["--after", last.as_str()]);
            }
            let page = ids(&args);
            if page.is_empty() {
                break;
            }
            paged.extend(page);
        }
        assert_eq!(paged, whole, "{sort}");
    }
    let text = cli.run(
        "maya",
        &["list", "--state", "all", "--sort", "id", "--limit", "2"],
    );
    let text = text.expect_code(0);
    let first_two = ids(&["--sort", "id", "--limit", "2"]);
    assert!(
        text.stdout.contains(&format!(
            "the next page: the same command with --after {}",
            first_two[1]
        )),
        "{}",
        text.stdout
    );
}

/// A time past the last instant a store keeps is refused, never stored: `--now`
/// leaves headroom for every instant computed from it (the break: `--now
/// 9999-12-31T23:59:59Z … schedule --at +1d` stored a year-10000 instant that
/// export printed), and an instant beyond year 9999 is not read at all.
#[test]
fn instants_past_year_9999_are_refused_not_stored() {
    let cli = Cli::with(FIXTURE);
    let start = cli.head();
    let schedule = |now: &str, at: &str| {
        cli.run_at(
            now,
            "maya",
            &[
                "review",
                "X1",
                "schedule",
                "--at",
                at,
                "--rationale",
                "the provider asked to wait",
            ],
        )
    };
    let run = schedule("9999-12-31T23:59:59Z", "+1d").expect_code(2);
    assert!(
        run.stderr
            .contains("9999-12-31T23:59:59Z is later than 9989-01-01T00:00:00Z"),
        "{}",
        run.stderr
    );
    let run = schedule(support::cli::NOW, "9999-12-31T23:59:59-01:00").expect_code(2);
    assert!(
        run.stderr.contains("outside the years 0001 to 9999"),
        "{}",
        run.stderr
    );
    assert_eq!(cli.head(), start, "nothing stored");
    // The longest offset from the latest `now` still lands in year 9999.
    applied(schedule("9989-01-01T00:00:00Z", "+3660d"), "schedule", "X1");
    let export = cli
        .run("maya", &["export", "X1", "--format", "json"])
        .expect_code(0);
    assert!(export.stdout.contains("\"9999-01-"), "{}", export.stdout);
    assert!(!export.stdout.contains("10000-"), "{}", export.stdout);
}
