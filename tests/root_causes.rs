//! Root causes through the real binary: the layer every failed or held operation
//! of the demo packet derives from its evidence (pinned), and `classify`, the
//! reviewer's audited setting of it: role-checked, refused where no root cause
//! applies, replayed by `audit verify`, and shown by `show` and the export.

use crate::support;

use support::cli::Cli;

/// Every failed or held operation of `cli`'s store with its root cause as
/// `show --json` gives it: (id, layer, source).
fn causes(cli: &Cli, identity: &str) -> Vec<(String, String, String)> {
    let listed = cli
        .run(
            identity,
            &[
                "list", "--state", "held", "--state", "FAILED", "--sort", "id", "--limit", "500",
                "--json",
            ],
        )
        .expect_code(0)
        .json();
    let rows = listed.as_array().expect("a list").clone();
    assert!(!rows.is_empty(), "{listed}");
    rows.iter()
        .map(|row| {
            let id = row["id"].as_str().expect("id").to_owned();
            let shown = cli
                .run(identity, &["show", &id, "--json"])
                .expect_code(0)
                .json();
            let cause = &shown["root_cause"];
            let layer = match cause["source"].as_str() {
                Some("unclassified") => "unclassified".to_owned(),
                Some("derived") => cause["layer"].as_str().expect("layer").to_owned(),
                Some("classified") => cause["layer"].as_str().expect("layer").to_owned(),
                other => panic!("{id}: no root cause ({other:?}) in {shown}"),
            };
            (id, layer, cause["source"].as_str().unwrap().to_owned())
        })
        .collect()
}

#[test]
fn the_demo_packet_s_failed_and_held_operations_derive_their_root_cause_from_evidence() {
    let cli = Cli::demo();
    let found: Vec<(String, String)> = causes(&cli, "auditor")
        .into_iter()
        .map(|(id, layer, _)| (id, layer))
        .collect();
    let pinned: Vec<(String, String)> = PINNED
        .iter()
        .map(|(id, layer)| ((*id).to_owned(), (*layer).to_owned()))
        .collect();
    assert_eq!(found, pinned);
    // `show` prints the layer and the evidence that decides it.
    let shown = cli.run("auditor", &["show", "F14"]).expect_code(0);
    assert!(
        shown
            .stdout
            .contains("provider, derived: attempt #2 answered HTTP 429"),
        "{}",
        shown.stdout
    );
}

/// The demo packet's failed and held operations and the layer their evidence
/// decides (`unclassified` where it decides none).
const PINNED: &[(&str, &str)] = &[
    ("F01", "authorization"),       // attempt #1 answered HTTP 403
    ("F02", "authorization"),       // attempt #1 answered HTTP 403
    ("F05", "argument_generation"), // validation_failed, nothing sent
    ("F06", "argument_generation"), // validation_failed, nothing sent
    ("F07", "unclassified"),        // HTTP 412 (a stale version) decides nothing
    ("F08", "argument_generation"), // validation_failed, nothing sent
    ("F09", "unclassified"),        // a timeout alone
    ("F14", "provider"),            // attempt #2 answered HTTP 429
    ("F15", "provider"),            // attempt #2 answered HTTP 429
    ("F23", "unclassified"),        // a partial write
    ("F26", "argument_generation"), // HTTP 422: the key reused with other arguments
    ("F27", "integration"),         // failure mode duplicate_replay
    ("F28", "integration"),         // failure mode duplicate_replay
    ("F30", "unclassified"),        // unsafe output
    ("F32", "unclassified"),        // unsafe output
];

#[test]
fn held_beside_other_states_stands_for_the_held_ones_and_all_stands_alone() {
    let cli = Cli::demo();
    let ids = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["list", "--sort", "id", "--limit", "500", "--json"];
        all.extend_from_slice(args);
        let listed = cli.run("auditor", &all).expect_code(0).json();
        listed
            .as_array()
            .expect("a list")
            .iter()
            .map(|r| r["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut named = ids(&[
        "--state", "UNKNOWN", "--state", "PARTIAL", "--state", "BLOCKED", "--state", "failed",
    ]);
    named.sort();
    let mut held = ids(&["--state", "held", "--state", "failed"]);
    held.sort();
    assert_eq!(held, named);
    let all = cli.run("auditor", &["list", "--state", "all", "--state", "FAILED"]);
    assert_eq!(all.code, 2);
    assert!(
        all.stderr.contains("--state all: all states already"),
        "{}",
        all.stderr
    );
}

#[test]
fn classify_is_audited_role_checked_and_replayed() {
    let cli = Cli::demo();
    let (id, before, source) = causes(&cli, "maya")
        .into_iter()
        .find(|(_, _, source)| source == "unclassified")
        .expect("an unclassified hold in the demo");
    assert_eq!(
        (before.as_str(), source.as_str()),
        ("unclassified", "unclassified")
    );

    let preview = cli
        .run(
            "maya",
            &[
                "review",
                &id,
                "classify",
                "--layer",
                "provider",
                "--dry-run",
            ],
        )
        .expect_code(0);
    assert!(
        preview
            .stdout
            .contains("root cause unclassified → provider"),
        "{}",
        preview.stdout
    );
    // A layer that is not one names the accepted ones.
    let bad = cli.review("maya", &id, "classify", &["--layer", "provder"]);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("did you mean provider"),
        "{}",
        bad.stderr
    );
    let missing = cli.review("maya", &id, "classify", &[]);
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(
        missing.stderr.contains("--layer LAYER"),
        "{}",
        missing.stderr
    );

    let head = cli.head();
    let run = cli
        .review("maya", &id, "classify", &["--layer", "provider"])
        .expect_code(0);
    assert!(
        run.stdout
            .starts_with(&format!("applied: classify on {id}\n")),
        "{}",
        run.stdout
    );
    assert_eq!(cli.head(), head + 1, "one audit row");
    let shown = cli
        .run("maya", &["show", &id, "--json"])
        .expect_code(0)
        .json();
    assert_eq!(shown["root_cause"]["source"], "classified");
    assert_eq!(shown["root_cause"]["layer"], "provider");
    assert_eq!(shown["root_cause"]["by"], "maya");
    let text = cli.run("maya", &["show", &id]).expect_code(0);
    assert!(
        text.stdout
            .contains("provider, classified by maya (audit #"),
        "{}",
        text.stdout
    );
    assert!(
        run.stdout.contains("evidence   root-cause:provider"),
        "the audit row carries the layer:\n{}",
        run.stdout
    );
    // The same layer again changes nothing and is refused; another replaces it.
    cli.review("maya", &id, "classify", &["--layer", "provider"])
        .refused("G1");
    cli.review("maya", &id, "classify", &["--layer", "reviewer"])
        .expect_code(0);
    assert_eq!(
        cli.run("maya", &["show", &id, "--json"])
            .expect_code(0)
            .json()["root_cause"]["layer"],
        "reviewer"
    );
    // `audit verify` replays the classifications through the rules.
    cli.run("auditor", &["audit", "verify"]).expect_code(0);

    // The state does not move.
    assert_eq!(cli.state("maya", &id), shown["state"].as_str().unwrap());
}

#[test]
fn classify_takes_a_failed_operation_but_no_settled_success_and_no_viewer() {
    let cli = Cli::demo();
    let failed = causes(&cli, "maya")
        .into_iter()
        .find(|(id, _, _)| cli.state("maya", id) == "FAILED")
        .map(|(id, _, _)| id)
        .expect("a FAILED operation in the demo");
    cli.review("maya", &failed, "classify", &["--layer", "model_selection"])
        .expect_code(0);
    let listed = cli
        .run(
            "maya",
            &["list", "--state", "SUCCEEDED", "--limit", "1", "--json"],
        )
        .expect_code(0)
        .json();
    let succeeded = listed[0]["id"]
        .as_str()
        .expect("a SUCCEEDED one")
        .to_owned();
    let refused = cli.review("maya", &succeeded, "classify", &["--layer", "provider"]);
    refused.refused("G1");

    // With grants: a viewer may not classify, a reviewer may.
    let tenant = cli
        .run("maya", &["show", &failed, "--json"])
        .expect_code(0)
        .json()["tenant"]
        .as_str()
        .unwrap()
        .to_owned();
    cli.run(
        "maya",
        &["grant", "maya", "--role", "owner", "--tenant", &tenant],
    )
    .expect_code(0);
    for (who, role) in [("rev", "reviewer"), ("vi", "viewer")] {
        cli.run("maya", &["grant", who, "--role", role, "--tenant", &tenant])
            .expect_code(0);
    }
    cli.review("vi", &failed, "classify", &["--layer", "parser"])
        .refused("G6");
    cli.review("rev", &failed, "classify", &["--layer", "parser"])
        .expect_code(0);
    cli.run("auditor", &["audit", "verify"]).expect_code(0);
}
