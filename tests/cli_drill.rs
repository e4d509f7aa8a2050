//! `holdfast drill` and `holdfast sim-provider` as a user runs them: the table and
//! `--json`, extra cases, bad case files, the store left for the console, and the
//! provider's refusal of non-loopback addresses.

use crate::support;

use support::cli::Cli;

fn extra() -> String {
    format!("{}/assets/drill/extra.jsonl", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_drill_prints_every_case_the_metrics_and_the_gate_and_exits_zero() {
    let cli = Cli::empty();
    let run = cli.run("drill-runner", &["drill"]).expect_code(0);
    for id in [
        "D1", "D2", "V1", "V2", "T1", "T2", "R1", "R2", "E1", "E2", "P1", "P2", "K1", "K2", "U1",
        "U2",
    ] {
        assert!(
            run.stdout
                .lines()
                .any(|l| l.starts_with(id) && l.ends_with("pass")),
            "{id}:\n{}",
            run.stdout
        );
    }
    assert!(run.stdout.contains("16 of 16 cases pass"));
    assert!(run.stdout.contains("Contract pass rate"));
    assert!(run.stdout.contains("RELEASE:"));
    // The drill's store is an ordinary store: it lists, verifies and reports.
    let held = cli
        .run("reviewer", &["list", "--json"])
        .expect_code(0)
        .json();
    let ids: Vec<&str> = held
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["id"].as_str())
        .collect();
    assert!(ids.contains(&"P2") && ids.contains(&"U2"), "{ids:?}");
    cli.run("auditor", &["audit", "verify"]).expect_code(0);
    let shown = cli
        .run("reviewer", &["show", "T2", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(shown["state"], "SUCCEEDED");
}

#[test]
fn json_output_has_the_design_shape_and_extra_cases_run_after_the_built_in_ones() {
    let cli = Cli::empty();
    let path = extra();
    let run = cli
        .run("drill-runner", &["drill", "--json", "--cases", &path])
        .expect_code(0);
    let json = run.json();
    let cases = json["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 20);
    assert_eq!(cases[16]["id"], "X1");
    for case in cases {
        for key in ["id", "mode", "name", "pass", "expected", "observed"] {
            assert!(case.get(key).is_some(), "{key} in {case}");
        }
    }
    assert_eq!(json["metrics"].as_array().unwrap().len(), 7);
    assert!(json["release"]["disposition"].is_string());
}

#[test]
fn a_failing_case_makes_the_exit_code_non_zero() {
    let cli = Cli::empty();
    let text = std::fs::read_to_string(extra()).unwrap();
    let first = text
        .lines()
        .next()
        .unwrap()
        .replace("\"status_queries\": 2", "\"status_queries\": 1");
    let path = cli.dir.path().join("wrong.jsonl");
    std::fs::write(&path, first).unwrap();
    let run = cli
        .run(
            "drill-runner",
            &["drill", "--cases", path.to_str().unwrap()],
        )
        .expect_code(1);
    assert!(run.stdout.contains("FAIL"), "{}", run.stdout);
    assert!(run.stdout.contains("16 of 17 cases pass"), "{}", run.stdout);
}

#[test]
fn a_bad_case_file_is_refused_line_by_line_before_anything_runs() {
    let cli = Cli::empty();
    let path = cli.dir.path().join("bad.jsonl");
    std::fs::write(&path, "{\"type\":\"case\"}\nnot json\n").unwrap();
    let run = cli
        .run(
            "drill-runner",
            &["drill", "--cases", path.to_str().unwrap()],
        )
        .expect_code(2);
    assert!(run.stderr.contains("line 1:"), "{}", run.stderr);
    assert!(run.stderr.contains("line 2:"), "{}", run.stderr);
    assert!(!cli.db.exists(), "nothing ran");
}

#[test]
fn the_simulated_provider_alone_refuses_a_non_loopback_address() {
    let cli = Cli::empty();
    let path = extra();
    let run = cli
        .run(
            "sim",
            &["sim-provider", "--listen", "0.0.0.0:8710", "--cases", &path],
        )
        .expect_code(2);
    assert!(
        run.stderr.contains("not a loopback address"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_second_drill_into_the_same_store_is_refused_and_runs_are_deterministic() {
    let cli = Cli::empty();
    cli.run("drill-runner", &["drill"]).expect_code(0);
    let again = cli.run("drill-runner", &["drill"]).expect_code(1);
    assert!(again.stderr.contains("fresh store"), "{}", again.stderr);
    let other = Cli::empty();
    other.run("drill-runner", &["drill"]).expect_code(0);
    for id in ["T2", "K2-K2", "R1", "P1-R"] {
        let a = cli
            .run("reviewer", &["timeline", id, "--json"])
            .expect_code(0)
            .stdout;
        let b = other
            .run("reviewer", &["timeline", id, "--json"])
            .expect_code(0)
            .stdout;
        assert_eq!(a, b, "{id} differs between two drills");
    }
}

#[test]
fn a_failed_case_names_each_missed_expectation_and_what_was_observed() {
    let cli = Cli::empty();
    let text = std::fs::read_to_string(extra()).unwrap();
    // X1 ends SUCCEEDED with one effect: FAILED with five can never be met.
    let first = text
        .lines()
        .next()
        .unwrap()
        .replace("\"state\": \"SUCCEEDED\"", "\"state\": \"FAILED\"")
        .replace("\"effects\": 1", "\"effects\": 5");
    let path = cli.dir.path().join("unmeetable.jsonl");
    std::fs::write(&path, &first).unwrap();
    let run = cli
        .run(
            "drill-runner",
            &["drill", "--cases", path.to_str().unwrap()],
        )
        .expect_code(1);
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("X1 failed:"))
        .unwrap_or_else(|| panic!("no reason line for X1:\n{}", run.stdout));
    assert_eq!(
        line,
        "X1 failed: state: expected FAILED, observed SUCCEEDED; effects: expected 5, observed 1",
        "{}",
        run.stdout
    );
    // Passing cases get no reason line.
    assert!(!run.stdout.contains("T2 failed"), "{}", run.stdout);

    let cli = Cli::empty();
    let path = cli.dir.path().join("unmeetable.jsonl");
    std::fs::write(&path, &first).unwrap();
    let json = cli
        .run(
            "drill-runner",
            &["drill", "--json", "--cases", path.to_str().unwrap()],
        )
        .expect_code(1)
        .json();
    let cases = json["cases"].as_array().unwrap();
    let x1 = cases.iter().find(|c| c["id"] == "X1").unwrap();
    assert_eq!(x1["pass"], false);
    let failed = x1["failed"].as_array().unwrap();
    assert_eq!(failed.len(), 2, "{x1}");
    assert_eq!(failed[0]["expectation"], "state");
    assert_eq!(failed[0]["expected"], "FAILED");
    assert_eq!(failed[0]["observed"], "SUCCEEDED");
    assert_eq!(failed[1]["expectation"], "effects");
    assert_eq!(failed[1]["expected"], 5);
    assert_eq!(failed[1]["observed"], 1);
    assert_eq!(failed[1]["words"], "effects: expected 5, observed 1");
    for case in cases.iter().filter(|c| c["pass"] == true) {
        assert_eq!(case["failed"], serde_json::json!([]), "{case}");
    }
}

/// `holdfast drill` without a named store runs into a fresh drill store in the
/// data dir and names it on stdout (and in `--json`).
#[test]
fn by_default_the_drill_runs_into_a_fresh_store_in_the_data_dir_and_names_it() {
    let cli = Cli::empty();
    let bare = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_holdfast"))
            .env_remove("HOLDFAST_DB")
            .env_remove("HOLDFAST_DATABASE_URL")
            .env_remove("HOLDFAST_NOW")
            .env("HOLDFAST_DATA_DIR", cli.dir.path())
            .env("HOLDFAST_CONFIG", cli.dir.path().join("no-config.toml"))
            .env("NO_COLOR", "1")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let text = bare(&["drill"]);
    let named = text
        .lines()
        .find_map(|l| l.strip_prefix("drill operations in "))
        .unwrap_or_else(|| panic!("{text}"));
    let path = std::path::Path::new(named);
    assert!(path.starts_with(cli.dir.path()) && path.exists(), "{named}");
    assert!(!cli.db.exists(), "the configured store is never touched");
    let json: serde_json::Value = serde_json::from_str(&bare(&["drill", "--json"])).unwrap();
    let store = json["store"].as_str().unwrap();
    assert!(
        store.contains("drill-") && !store.contains(named),
        "{store}"
    );
    assert_eq!(json["tenant"], serde_json::Value::Null);
}

/// A drill pointed at a store that holds an operation no drill wrote is
/// refused with what to do instead, exit 3, and the store is left exactly as it
/// was: not one record or audit row more.
#[test]
fn a_drill_pointed_at_a_store_with_a_real_operation_refuses_and_writes_nothing() {
    let cli = Cli::with("small.jsonl");
    let seen = || {
        (
            cli.run("auditor", &["audit", "verify"])
                .expect_code(0)
                .stdout,
            cli.run("reviewer", &["list", "--state", "all", "--json"])
                .expect_code(0)
                .stdout,
        )
    };
    let before = seen();
    let refused = cli.run("drill-runner", &["drill"]).expect_code(3);
    assert!(
        refused.stderr.contains("holds operations no drill wrote")
            && refused.stderr.contains("--into-existing")
            && refused.stderr.contains("holdfast drill --tool TOOL"),
        "{}",
        refused.stderr
    );
    assert!(refused.stdout.is_empty(), "{}", refused.stdout);
    assert_eq!(seen(), before, "the refused drill wrote into the store");
    let with_cases = cli
        .run("drill-runner", &["drill", "--cases", &extra()])
        .expect_code(3);
    assert!(with_cases.stderr.contains("no drill wrote"));
    assert_eq!(seen(), before);
    // A store of contracts alone is a real store being set up, not a drill's.
    let contracts = Cli::with("tool_t06.jsonl");
    let head = || {
        contracts
            .run("auditor", &["audit", "verify"])
            .expect_code(0)
            .stdout
    };
    let before = head();
    let refused = contracts.run("drill-runner", &["drill"]).expect_code(3);
    assert!(
        refused.stderr.contains("holds the contract of tool T06")
            && refused.stderr.contains("holdfast drill --tool T06"),
        "{}",
        refused.stderr
    );
    assert_eq!(head(), before);
}

/// `--into-existing` puts the drill's operations in a tenant of its own, and the
/// report and release gate of the store's real tenants read exactly as before.
#[test]
fn into_existing_keeps_drill_operations_out_of_the_real_tenants_gate_figures() {
    let cli = Cli::demo();
    let report = || cli.run("reviewer", &["report", "--json"]).json();
    let before = report();
    let run = cli
        .run("drill-runner", &["drill", "--into-existing", "--json"])
        .expect_code(0);
    let drilled = run.json();
    assert_eq!(drilled["tenant"], "drill");
    assert_eq!(drilled["cases"].as_array().unwrap().len(), 16);
    // The drill's own gate is computed over its tenant alone.
    assert_eq!(
        drilled["metrics"][0]["denominator"], 16,
        "{}",
        drilled["metrics"][0]
    );
    let after = report();
    assert_eq!(after, before, "the drill moved the real tenants' figures");
    let listed = cli
        .run(
            "reviewer",
            &["list", "--tenant", "drill", "--state", "all", "--json"],
        )
        .expect_code(0)
        .json();
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|o| o["id"].as_str())
        .collect();
    assert!(ids.contains(&"D1") && ids.contains(&"U2"), "{ids:?}");
    assert!(
        listed
            .as_array()
            .unwrap()
            .iter()
            .all(|o| o["tenant"] == "drill"),
        "{listed}"
    );
    cli.run("auditor", &["audit", "verify"]).expect_code(0);
    // A second drill into it is refused before writing: its ids are taken.
    let again = cli
        .run("drill-runner", &["drill", "--into-existing"])
        .expect_code(1);
    assert!(
        again.stderr.contains("from an earlier drill"),
        "{}",
        again.stderr
    );
}
