//! The integration tests, one crate: each file of `tests/` is a module of it, so
//! the suite links once instead of once per file (`autotests = false` in
//! Cargo.toml; a file not declared here would never run, which the last test
//! below refuses). Shared fixtures are in `support/`.

#[macro_use]
mod support;

mod autonomy;
mod chain_doors;
mod circuit;
mod cli_autonomy;
mod cli_drill;
mod cli_lookup;
mod cli_output;
mod cli_review;
mod cli_store;
mod cli_tools;
mod cli_truth;
mod cli_work;
mod core_rules;
mod crash;
mod drill;
mod drill_cases;
mod gateway;
mod ingest;
mod ingest_door;
mod ingest_plans;
mod judging_progress;
mod lookup_http;
mod lookup_store;
mod metric_plans;
mod metrics;
mod metrics_kept;
mod metrics_paged;
mod naughty;
mod observe_processes;
mod otlp;
mod owner_routing;
mod query_plans;
mod races;
mod redaction;
mod repeated_errors;
mod rerun;
mod root_causes;
mod scale_reads;
mod secrets;
mod session_scope;
mod sim_provider;
mod store_conformance;
mod tamper;
mod team_mode;
mod trust;
mod tui_bulk;
mod tui_console;
mod tui_gateway;
mod tui_hostile;
mod tui_lookup;
mod tui_review;
mod tui_tabs;
mod tui_truth;
mod verify_pages;
mod work;
mod write_scale;

/// Every test file of `tests/` is a module of this crate: with `autotests` off,
/// a file left out would silently never run.
#[test]
fn every_test_file_is_a_module_of_the_suite() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests");
    let declared = include_str!("suite.rs");
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(dir).expect("tests/ is readable") {
        let path = entry.expect("a directory entry").path();
        let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        let Some(module) = name.strip_suffix(".rs") else {
            continue;
        };
        if module != "suite" && !declared.contains(&format!("\nmod {module};\n")) {
            missing.push(name.to_owned());
        }
    }
    assert!(
        missing.is_empty(),
        "declare these in tests/suite.rs: {missing:?}"
    );
}
