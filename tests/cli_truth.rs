//! What the command line tells a reviewer is true: guards that stop a second
//! repair, refusals that name only allowed actions, why a hold is held, times
//! and names read as a tired reviewer types them.

use crate::support;

use holdfast::core::rules::{allowed_in_words, remaining_in_words};
use support::cli::{Cli, Run};
use support::provider::{Provider, lookup, run_with_token, store_with_holds};

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
        // clap prints a flag's help beside it, or on the next line when any
        // option of the command has a long help.
        let mut lines = help
            .stdout
            .lines()
            .skip_while(|l| !l.trim_start().starts_with("--json"));
        let flag = lines.next().unwrap_or_default().trim_start();
        let text = match flag.len() > "--json".len() + 4 {
            true => flag["--json".len()..].trim(),
            false => lines.next().unwrap_or_default().trim(),
        };
        assert!(
            text.len() > 4 && !text.starts_with('-'),
            "{command:?} --json has no help text: {flag:?} / {text:?}"
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
        &[
            "--found",
            "--source",
            "downstream",
            "--match",
            "all",
            "--effect-count",
            "1",
        ],
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

/// The labels of the allowed actions that move `id` (change its state, create
/// a child or open a proposal), as `show --json` lists them.
fn moves_allowed(shown: &serde_json::Value) -> Vec<String> {
    shown["actions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter(|a| a["allowed"] == true && a["effect"] != "no state change")
        .filter_map(|a| a["label"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn refusals_name_exactly_the_moves_the_rules_allow_after_a_downstream_reconcile() {
    let cli = Cli::demo();
    cli.run_at(
        DEMO_LATE,
        "ana",
        &[
            "review",
            "F23",
            "reconcile",
            "--found",
            "--source",
            "downstream",
            "--match",
            "all",
            "--effect-count",
            "1",
            "--reference",
            "INC-5120",
            "--rationale",
            "the downstream ledger shows the reversal",
        ],
    )
    .expect_code(0);
    let shown = cli
        .run_at(DEMO_LATE, "ana", &["show", "F23", "--json"])
        .expect_code(0)
        .json();
    let open = moves_allowed(&shown);
    assert!(open.contains(&"mark-compensated".to_owned()), "{open:?}");
    let refused = cli
        .run_at(
            DEMO_LATE,
            "ana",
            &["review", "F23", "approve-resume", "--dry-run"],
        )
        .refused("G5");
    let words = remaining_in_words(&open);
    assert!(
        refused.stderr.contains(&words),
        "{words}\n{}",
        refused.stderr
    );
    let reason = shown["actions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .find(|a| a["label"] == "approve-resume")
        .map(|a| a["reason"].as_str().unwrap_or_default().to_owned())
        .unwrap_or_default();
    assert!(reason.ends_with(&words), "{reason}");
}

/// The outcome-classification figure's counted and listed operations.
fn classified(cli: &Cli) -> (Vec<String>, u64) {
    // The gate's disposition sets the exit code; the figures are in the JSON.
    let report = cli.run("ana", &["report", "--json"]).json();
    let metric = report["metrics"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .find(|m| m["id"] == "outcome_classification_completeness")
        .unwrap_or_default();
    let ids = metric["numerator_ids"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    (ids, metric["denominator"].as_u64().unwrap_or_default())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lookup_that_settles_the_question_keeps_the_hold_classified() {
    let p = Provider::start("").await;
    let settling = ["match", "missing", "tenant", "dup"];
    let cli = store_with_holds(&p, &settling);
    let (before, total) = classified(&cli);
    assert_eq!(
        before.len() as u64,
        total,
        "every hold is classified: {before:?}"
    );
    for scenario in settling {
        let run = lookup(&cli, &format!("L-{scenario}")).expect_code(0);
        assert!(
            run.stdout.contains("no further scheduled lookups"),
            "{scenario} settles the question:\n{}",
            run.stdout
        );
    }
    let (after, total) = classified(&cli);
    assert_eq!(
        after.len() as u64,
        total,
        "a settled lookup is a classification, not a gap: {after:?}"
    );
    let verified = cli.run("auditor", &["audit", "verify", "--json"]);
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_lookup_answer_says_what_it_allows_as_the_rules_do() {
    let p = Provider::start("").await;
    let scenarios = [
        "match",
        "missing",
        "tenant",
        "dup",
        "throttle-secs",
        "hang",
        "html",
        "redirect",
    ];
    let cli = store_with_holds(&p, &scenarios);
    for scenario in scenarios {
        let id = format!("L-{scenario}");
        let run: Run = lookup(&cli, &id).expect_code(0);
        assert!(
            !run.stdout.contains("resolve afterwards"),
            "{id}:\n{}",
            run.stdout
        );
        let shown = run_with_token(&cli, "maya", &["show", &id, "--json"])
            .expect_code(0)
            .json();
        let open = moves_allowed(&shown);
        let words = allowed_in_words(&open);
        assert!(run.stdout.contains(&words), "{id}: {words}\n{}", run.stdout);
        let succeeded = open.contains(&"resolve --to SUCCEEDED".to_owned());
        assert_eq!(succeeded, scenario == "match", "{id}: {open:?}");
        let failed = open.contains(&"resolve --to FAILED".to_owned());
        assert_eq!(failed, scenario == "missing", "{id}: {open:?}");
    }
}

#[test]
fn a_found_reconcile_needs_every_field_or_names_the_unknown_ones() {
    let cli = Cli::demo();
    let before = evidence_complete(&cli);
    assert!(before.contains(&"F09".to_owned()), "{before:?}");
    let blank = cli
        .review(
            "ana",
            "F09",
            "reconcile",
            &["--found", "--reference", "INC-7"],
        )
        .expect_code(2);
    for needle in [
        "target, payload_hash, owner, version, effect_count",
        "--unknown",
    ] {
        assert!(blank.stderr.contains(needle), "{needle}: {}", blank.stderr);
    }
    assert_eq!(evidence_complete(&cli), before, "nothing was recorded");
    let declared = [
        "--found",
        "--match",
        "target,payload_hash",
        "--unknown",
        "owner,version,effect_count",
        "--reference",
        "INC-7",
    ];
    let mut preview: Vec<&str> = declared.to_vec();
    preview.push("--dry-run");
    let shown = cli
        .review("ana", "F09", "reconcile", &preview)
        .expect_code(0);
    assert!(
        shown.stdout.contains(
            "records owner, version, effect_count as unknown: a found answer without them is incomplete evidence, so attempt-evidence completeness counts F09 short"
        ),
        "{}",
        shown.stdout
    );
    cli.review("ana", "F09", "reconcile", &declared)
        .expect_code(0);
    assert!(
        !evidence_complete(&cli).contains(&"F09".to_owned()),
        "what the preview said"
    );
    let given = cli
        .review(
            "ana",
            "F27",
            "reconcile",
            &[
                "--found",
                "--match",
                "all",
                "--effect-count",
                "1",
                "--unknown",
                "version",
            ],
        )
        .expect_code(2);
    assert!(
        given.stderr.contains("--unknown version"),
        "{}",
        given.stderr
    );
}

/// `list` says a deadline behind the clock has passed, as the console's queue
/// does, rather than a negative duration; one ahead of it is the time left.
#[test]
fn list_says_a_passed_deadline_has_passed_as_the_console_does() {
    let cli = Cli::demo();
    let column = |now: &str, id: &str| {
        let out = cli.run_at(now, "ana", &["list"]).expect_code(0).stdout;
        let header = out
            .lines()
            .find(|l| l.starts_with("STATE"))
            .unwrap()
            .to_owned();
        let at = header.find("LEFT").unwrap();
        let row = out
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(id))
            .unwrap()
            .to_owned();
        row[at..].trim().to_owned()
    };
    // F09's deadline is 2026-09-05T10:15:00Z.
    assert_eq!(column("2026-09-05T11:40:00Z", "F09"), "passed");
    assert_eq!(column("2026-09-05T10:00:00Z", "F09"), "15m00s");
}
