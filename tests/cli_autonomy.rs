//! `holdfast drill --tool` and `holdfast autonomy` as a user runs them: the seed's
//! injections under a tool's own contract (its lookup's URL and field pointers
//! emulated by the simulated provider), the result recorded for the tool, and the
//! gates of a raise reading it.

use crate::support;

use support::cli::Cli;

const RATIONALE: &str = "the drill passed and the lookup is in place";

fn tools() -> Cli {
    Cli::with("tool_t06.jsonl")
}

fn standing(cli: &Cli, tool: &str) -> serde_json::Value {
    let list = cli
        .run("owner", &["autonomy", "list", "--json"])
        .expect_code(0)
        .json();
    list.as_array()
        .unwrap()
        .iter()
        .find(|t| t["tool"] == tool)
        .unwrap_or_else(|| panic!("{tool} not listed: {list}"))
        .clone()
}

#[test]
fn a_drill_under_the_tools_contract_passes_and_opens_the_raise() {
    let cli = tools();
    cli.run(
        "owner",
        &["autonomy", "set", "T06", "native", "--rationale", RATIONALE],
    )
    .refused("A1");
    let run = cli.run("owner", &["drill", "--tool", "T06"]).expect_code(0);
    assert!(run.stdout.contains("16 of 16 cases pass"), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("tool T06: 16 of 16 cases passed, 8 of 8 failure modes covered"),
        "{}",
        run.stdout
    );
    let t06 = standing(&cli, "T06");
    assert_eq!(t06["drill"]["passed"], 16);
    assert_eq!(t06["drill"]["modes"].as_array().unwrap().len(), 8);
    assert_eq!(t06["level"], "manual");
    // The drill's operations went to a store of their own, not the tool's store.
    let listed = cli
        .run("owner", &["list", "--state", "all", "--json"])
        .expect_code(0)
        .json();
    assert!(listed.as_array().unwrap().is_empty(), "{listed}");
    // The drill opens A2; the lookup was never proven to find a known record
    // (`holdfast lookup check`, tests/cli_lookup.rs), so A1 still refuses.
    let refused = cli
        .run(
            "owner",
            &["autonomy", "set", "T06", "native", "--rationale", RATIONALE],
        )
        .refused("A1");
    assert!(
        refused
            .stderr
            .contains("holdfast lookup check T06 --known ID"),
        "{}",
        refused.stderr
    );
    assert!(
        standing(&cli, "T06")["unchecked"]
            .as_str()
            .is_some_and(|w| w.contains("never proven")),
        "flagged"
    );
    assert_eq!(standing(&cli, "T06")["level"], "manual");
    cli.run("auditor", &["audit", "verify"]).expect_code(0);
}

#[test]
fn a_contract_that_does_not_retry_a_failed_name_lookup_fails_its_drill_and_stays_manual() {
    let cli = tools();
    let run = cli
        .run("owner", &["drill", "--tool", "T07", "--json"])
        .expect_code(1);
    let out = run.json();
    let failed: Vec<&str> = out["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["pass"] == false)
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(failed, ["E1"], "dns_failure is not retryable for T07");
    assert_eq!(
        out["tool"]["result"]["failed"].as_array().unwrap().len(),
        failed.len()
    );
    cli.run(
        "owner",
        &["autonomy", "set", "T07", "native", "--rationale", RATIONALE],
    )
    .refused("A1");
    let gates = &standing(&cli, "T07")["gates"];
    assert!(
        gates["drill"]
            .as_str()
            .is_some_and(|w| w.contains("passed 15 of 16")),
        "the failed drill refuses it too: {gates}"
    );
}

#[test]
fn a_tool_without_a_lookup_object_has_no_drill_and_no_raise() {
    let cli = tools();
    let run = cli.run("owner", &["drill", "--tool", "T08"]).expect_code(1);
    assert!(
        run.stderr.contains("no status lookup object"),
        "{}",
        run.stderr
    );
    cli.run(
        "owner",
        &["autonomy", "set", "T08", "native", "--rationale", RATIONALE],
    )
    .refused("A1");
    // Lowering (here: setting the level it already has) is never refused.
    let run = cli
        .run(
            "owner",
            &["autonomy", "set", "T08", "manual", "--rationale", RATIONALE],
        )
        .expect_code(0);
    assert!(run.stdout.contains("already at manual"), "{}", run.stdout);
}
