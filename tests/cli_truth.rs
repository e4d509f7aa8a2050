//! What the command line tells a reviewer is true: guards that stop a second
//! repair, refusals that name only allowed actions, why a hold is held, times
//! and names read as a tired reviewer types them.

mod support;

use support::cli::Cli;

/// The demo instant the issue's compensation walk-through uses.
const DEMO_LATE: &str = "2026-09-05T11:40:00Z";

#[test]
fn no_second_compensation_after_one_succeeded() {
    let cli = Cli::demo();
    let run = cli
        .run_at(
            DEMO_LATE,
            "ana",
            &[
                "review",
                "F23",
                "approve-compensation",
                "--rationale",
                "revert the committed lines",
            ],
        )
        .refused("G4");
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

/// The ids of every operation in the store, as `identity` sees them at `now`.
fn all_ids(cli: &Cli, now: &str) -> Vec<(String, String)> {
    let listed = cli
        .run_at(
            now,
            "ana",
            &["list", "--state", "all", "--limit", "500", "--json"],
        )
        .expect_code(0)
        .json();
    listed
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap_or_default().to_owned(),
                r["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The actions an `only A, B or C remain(s)` clause names, as command labels.
fn named_alternatives(text: &str) -> Vec<String> {
    let Some(start) = text.find("only ") else {
        return Vec::new();
    };
    let rest = &text[start + "only ".len()..];
    let Some(end) = rest.find(" remain") else {
        return Vec::new();
    };
    rest[..end]
        .split(", ")
        .flat_map(|part| part.split(" or "))
        .map(|name| name.trim().replace("resolve to ", "resolve --to "))
        .collect()
}

#[test]
fn refusals_and_previews_name_only_allowed_actions() {
    let cli = Cli::demo();
    let mut checked = 0;
    for now in [support::cli::NOW, DEMO_LATE] {
        for (id, state) in all_ids(&cli, now) {
            let shown = cli
                .run_at(now, "ana", &["show", &id, "--json"])
                .expect_code(0)
                .json();
            let actions = shown["actions"].as_array().cloned().unwrap_or_default();
            let allowed: Vec<&str> = actions
                .iter()
                .filter(|a| a["allowed"] == true)
                .filter_map(|a| a["label"].as_str())
                .collect();
            let mut texts: Vec<String> = actions
                .iter()
                .filter_map(|a| a["reason"].as_str().map(str::to_owned))
                .collect();
            texts.extend(
                shown["recommendation"]["reason"]
                    .as_str()
                    .map(str::to_owned),
            );
            for text in &texts {
                assert!(!text.contains("accept, fail or block"), "{id}: {text}");
                for name in named_alternatives(text) {
                    checked += 1;
                    assert!(
                        allowed.contains(&name.as_str()),
                        "{id} at {now}: `{text}` names {name}, which is not allowed ({allowed:?})"
                    );
                }
                if text.contains("approve one first") {
                    assert!(allowed.contains(&"approve-compensation"), "{id}: {text}");
                }
            }
            if now == DEMO_LATE && allowed.contains(&"reconcile") {
                let preview = cli
                    .run_at(
                        now,
                        "ana",
                        &[
                            "review",
                            &id,
                            "reconcile",
                            "--not-found",
                            "--dry-run",
                            "--rationale",
                            "looked at the provider",
                        ],
                    )
                    .expect_code(0);
                if preview.stdout.contains("resolve") {
                    assert!(
                        state == "UNKNOWN" || state == "BLOCKED",
                        "{id} is {state}, where resolve has no row:\n{}",
                        preview.stdout
                    );
                }
            }
        }
    }
    assert!(checked > 0, "some refusal names what remains");
}

#[test]
fn states_in_any_case_and_near_misses_name_what_was_meant() {
    let cli = Cli::demo();
    let lower = cli
        .run("ana", &["list", "--state", "unknown", "--json"])
        .expect_code(0)
        .json();
    let upper = cli
        .run("ana", &["list", "--state", "UNKNOWN", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(lower, upper);
    assert!(!lower.as_array().cloned().unwrap_or_default().is_empty());
    cli.run("ana", &["list", "--state", "Held"]).expect_code(0);

    let run = cli.run("ana", &["show", "f09"]).expect_code(1);
    assert!(run.stderr.contains("did you mean F09?"), "{}", run.stderr);

    let run = cli
        .run(
            "ana",
            &[
                "review",
                "F09",
                "authorise-retry",
                "--rationale",
                "retry it once more",
            ],
        )
        .expect_code(2);
    assert!(
        run.stderr.contains("did you mean `authorize-retry`?"),
        "{}",
        run.stderr
    );
    let run = cli
        .run("ana", &["list", "--state", "unknwn"])
        .expect_code(2);
    assert!(
        run.stderr.contains("did you mean UNKNOWN?"),
        "{}",
        run.stderr
    );
}

#[test]
fn times_read_relative_to_now_and_words_are_refused_clearly() {
    let cli = Cli::demo();
    let run = cli.run_at("yesterday", "ana", &["list"]).expect_code(2);
    assert!(
        run.stderr.contains("\"yesterday\" is not a time") && run.stderr.contains("+30m"),
        "{}",
        run.stderr
    );
    cli.run_at("-2h", "ana", &["list"]).expect_code(0);

    let run = cli
        .run(
            "ana",
            &[
                "review",
                "F09",
                "schedule",
                "--at",
                "+30m",
                "--rationale",
                "look again in half an hour",
            ],
        )
        .expect_code(0);
    assert!(
        run.stdout
            .contains("next observation at 2026-09-05T10:40:00Z"),
        "{}",
        run.stdout
    );
    let shown = cli.run_at("2026-09-05T10:43:00Z", "ana", &["show", "F09"]);
    let line = shown
        .expect_code(0)
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("next observation"))
        .map(str::to_owned)
        .unwrap_or_default();
    assert!(line.contains("(3m00s ago, OVERDUE)"), "{line}");
    assert!(!line.contains("in 0s"), "{line}");
}

#[test]
fn counts_digests_roles_and_help_say_what_they_mean() {
    let cli = Cli::demo();
    let none = cli
        .run("ana", &["list", "--limit", "0", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(none, serde_json::json!([]));
    let text = cli.run("ana", &["list", "--limit", "0"]).expect_code(0);
    assert_eq!(text.stdout, "12\n", "only the count");

    let one_line = cli.dir.path().join("one.jsonl");
    let demo = std::fs::read_to_string(format!(
        "{}/assets/demo/tc094.jsonl",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("demo packet");
    std::fs::write(&one_line, demo.lines().next().unwrap_or_default()).expect("write");
    let path = one_line.to_string_lossy().into_owned();
    let run = cli.run("loader", &["ingest", &path]).expect_code(0);
    assert!(
        run.stderr.contains(": 1 line;") && run.stderr.contains("rejected 0 lines"),
        "{}",
        run.stderr
    );

    let run = cli
        .review("ana", "F09", "reconcile", &["--not-found"])
        .expect_code(0);
    assert!(
        run.stdout.contains("by ana in role local"),
        "{}",
        run.stdout
    );
    assert!(!run.stdout.contains(" as local"), "{}", run.stdout);
    let queried_once = all_ids(&cli, support::cli::NOW)
        .into_iter()
        .map(|(id, _)| id)
        .find(|id| {
            let shown = cli
                .run("ana", &["show", id, "--json"])
                .expect_code(0)
                .json();
            shown["budget"]["status_queries"] == 1
        })
        .unwrap_or_default();
    let shown = cli.run("ana", &["show", &queried_once]).expect_code(0);
    assert!(
        shown.stdout.contains("1 status query") && !shown.stdout.contains("1 status queries"),
        "{}",
        shown.stdout
    );

    let digest = cli.run("auditor", &["audit", "digest"]).expect_code(0);
    let saved = cli.dir.path().join("digest.txt");
    std::fs::write(&saved, &digest.stdout).expect("write digest");
    let saved = saved.to_string_lossy().into_owned();
    let run = cli
        .run("auditor", &["audit", "verify", "--digest", &saved])
        .expect_code(0);
    assert!(
        run.stdout.contains("matches the saved digest"),
        "{}",
        run.stdout
    );

    for command in [
        &["list"][..],
        &["show"],
        &["timeline"],
        &["review"],
        &["grant"],
        &["grants"],
        &["report"],
        &["ingest"],
        &["audit", "verify"],
        &["audit", "digest"],
        &["db", "copy"],
    ] {
        let mut args = command.to_vec();
        args.push("--help");
        let help = cli.run("ana", &args).expect_code(0);
        let line = help
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with("--json"))
            .unwrap_or_default();
        assert!(
            line.trim_start().len() > "--json".len() + 4,
            "{command:?} --json has no help text: {line:?}"
        );
    }
}

#[test]
fn show_puts_why_held_first_with_reason_and_evidence() {
    let cli = Cli::demo();
    let text = cli.run("ana", &["show", "F32"]).expect_code(0).stdout;
    let fields: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("    "))
        .collect();
    assert!(fields[0].trim_start().starts_with("operation"), "{text}");
    assert!(
        fields[1].trim_start().starts_with("why held")
            && fields[1].contains("VALIDATED → BLOCKED")
            && fields[1].contains("quarantined tool output"),
        "{text}"
    );
    assert!(
        text.contains("evidence             A047 (request"),
        "{text}"
    );

    let json = cli
        .run("ana", &["show", "F32", "--json"])
        .expect_code(0)
        .json();
    let why = &json["why_held"];
    assert_eq!(why["to"], "BLOCKED");
    // Who acted is who ingested; the line's `by` is the source's claim, kept as one.
    assert_eq!(why["by"], "loader");
    assert!(
        why["reason"]
            .as_str()
            .is_some_and(|r| r.contains("no approval binds this payload")
                && r.ends_with("(the source reports svc:policy-gate as system)")),
        "{why}"
    );
    assert_eq!(why["evidence"][0]["id"], "A047");
}

#[test]
fn reconcile_source_takes_only_its_values_at_every_door() {
    let cli = Cli::demo();
    let run = cli
        .review(
            "ana",
            "F23",
            "reconcile",
            &["--found", "--source", "downstrem"],
        )
        .expect_code(2);
    assert!(
        run.stderr.contains("did you mean downstream?"),
        "{}",
        run.stderr
    );
    cli.review(
        "ana",
        "F23",
        "reconcile",
        &["--found", "--source", "downstream"],
    )
    .expect_code(0);

    let line = r#"{"type":"observation","id":"O-typo","operation":"F23","observed_at":"2026-09-05T10:05:00Z","source":"downstrem","found":true}"#;
    let file = cli.dir.path().join("typo.jsonl");
    std::fs::write(&file, format!("{line}\n")).expect("write");
    let path = file.to_string_lossy().into_owned();
    let run = cli.run("loader", &["ingest", &path]).expect_code(2);
    assert!(
        run.stderr
            .contains("line 1: source: must be one of: provider_status"),
        "{}",
        run.stderr
    );
    let run = cli
        .review("ana", "F23", "reconcile", &["--observation", &path])
        .expect_code(2);
    assert!(run.stderr.contains("source"), "{}", run.stderr);
}

/// The attempt-evidence completeness figure's counted operations.
fn evidence_complete(cli: &Cli) -> Vec<String> {
    let report = cli.run("ana", &["report", "--json"]).expect_code(0).json();
    let metric = report["metrics"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .find(|m| m["id"] == "attempt_evidence_completeness")
        .unwrap_or_default();
    metric["numerator_ids"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect()
}

#[test]
fn the_readme_reconcile_example_keeps_attempt_evidence_complete() {
    let cli = Cli::demo();
    let before = evidence_complete(&cli);
    assert!(before.contains(&"F09".to_owned()), "{before:?}");
    cli.review(
        "ana",
        "F09",
        "reconcile",
        &["--not-found", "--reference", "INC-4411"],
    )
    .expect_code(0);
    assert_eq!(evidence_complete(&cli), before);

    let held = all_ids(&cli, support::cli::NOW);
    let other = held
        .iter()
        .map(|(id, _)| id)
        .find(|id| {
            *id != "F09" && before.contains(id) && {
                let shown = cli
                    .run("ana", &["show", id, "--json"])
                    .expect_code(0)
                    .json();
                shown["state"] == "UNKNOWN" || shown["state"] == "BLOCKED"
            }
        })
        .cloned()
        .unwrap_or_default();
    cli.review("ana", &other, "reconcile", &["--not-found"])
        .expect_code(0);
    assert!(
        !evidence_complete(&cli).contains(&other),
        "a lookup with neither a raw hash nor a reference is not complete evidence ({other})"
    );
}
