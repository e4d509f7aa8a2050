//! `holdfast tools` and `holdfast tools show TOOL` (DESIGN §5 "The inventory
//! fields"): one row per tool read from the store, and one tool's whole
//! inventory with each missing field flagged and what it limits; the rows read
//! the same on both backends.

use crate::support;

use std::sync::Arc;

use holdfast::autonomy::{record_drill, record_lookup_check};
use holdfast::core::autonomy::{DrillResult, LookupCheck, lookup_fingerprint};
use holdfast::core::inventory::{NO_COMPENSATION, NO_STATUS_LOOKUP};
use holdfast::core::ladder::Level;
use holdfast::core::model::FailureMode;
use holdfast::store::{IngestMode, Session, Store};
use support::cli::Cli;
use support::review::{loaded, local, now, records, resolve_f09};
use support::stores::Kind;

/// A contract that fills every inventory field, with hostile text in one.
const FULL: &str = r#"{"type":"contract","tool":"T09","version":"IC10","action":"refund.issue","method":"POST","idempotency":{"supported":true,"scope":"account","retention_hours":24},"status_lookup":{"method":"GET","url":"http://127.0.0.1:9/v2/refunds/{business_key}","timeout_ms":2000,"lag_seconds":0,"fields":{"target":"/target"}},"retryable":["http_503"],"compensation":"refund.reverse","owner":"payments","max_attempts":3,"budget_seconds":900,"path":"/v2/refunds","tenant":"pinehaven","schema":"https://schemas.example/refund.json","business_rules":["at most the captured amount\u202e"],"side_effects":["emails the customer"],"downstream":["ledger.post"],"rate_limits":[{"scope":"account","limit":100,"per_seconds":60}]}
"#;

fn with_full() -> Cli {
    let cli = Cli::demo();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("full.jsonl");
    std::fs::write(&path, FULL).unwrap();
    cli.run("loader", &["ingest", path.to_str().unwrap()])
        .expect_code(0);
    cli
}

fn entry<'a>(show: &'a serde_json::Value, field: &str) -> &'a serde_json::Value {
    show["inventory"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["field"] == field)
        .unwrap_or_else(|| panic!("{field} not in {show}"))
}

#[test]
fn the_list_has_one_row_per_tool_from_the_store() {
    let cli = with_full();
    let rows = cli
        .run("auditor", &["tools", "--json"])
        .expect_code(0)
        .json();
    let rows = rows.as_array().unwrap();
    let tools: Vec<&str> = rows.iter().map(|r| r["tool"].as_str().unwrap()).collect();
    assert_eq!(
        tools,
        [
            "T01", "T02", "T03", "T04", "T05", "T06", "T07", "T08", "T09"
        ]
    );
    let t01 = &rows[0];
    assert_eq!(t01["version"], "IC07");
    assert_eq!(t01["autonomy"], "manual");
    assert_eq!(t01["lookup"], "none");
    assert_eq!(t01["drill"], serde_json::Value::Null);
    // T01 lacks all seven descriptive fields, its lookup and its compensation;
    // T09 lacks nothing.
    assert_eq!(t01["missing"], 9, "{t01}");
    assert_eq!(rows[8]["missing"], 0, "{}", rows[8]);
    assert_eq!(rows[8]["lookup"], "http");
    // Each tool's holds are its operations in the held queue `list` shows.
    let held = cli
        .run("auditor", &["list", "--json", "--limit", "10000"])
        .expect_code(0)
        .json();
    let held = held.as_array().unwrap();
    for row in rows {
        let of_tool: Vec<&serde_json::Value> =
            held.iter().filter(|o| o["tool"] == row["tool"]).collect();
        let unknown = of_tool.iter().filter(|o| o["state"] == "UNKNOWN").count();
        assert_eq!(row["holds"], of_tool.len(), "{row}");
        assert_eq!(row["unknowns"], unknown, "{row}");
        // `list --tool` narrows to the same operations.
        let tool = row["tool"].as_str().unwrap();
        let narrowed = cli
            .run(
                "auditor",
                &["list", "--json", "--limit", "10000", "--tool", tool],
            )
            .expect_code(0)
            .json();
        let ids = |rows: &[&serde_json::Value]| -> Vec<String> {
            rows.iter().map(|o| o["id"].to_string()).collect()
        };
        let narrowed: Vec<&serde_json::Value> = narrowed.as_array().unwrap().iter().collect();
        assert_eq!(ids(&narrowed), ids(&of_tool), "{tool}");
    }
    assert!(
        rows.iter().any(|r| r["unknowns"].as_u64() > Some(0)),
        "the demo holds UNKNOWN operations"
    );
    let text = cli.run("auditor", &["tools"]).expect_code(0).stdout;
    assert!(text.starts_with("TOOL"), "{text}");
    let header = text.lines().next().unwrap();
    assert!(
        header.contains("HOLDS") && header.contains("UNKNOWN"),
        "{header}"
    );
    assert_eq!(text.lines().count(), 10, "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("T04 ") && l.contains("by hand")),
        "{text}"
    );
}

#[test]
fn show_flags_each_missing_field_with_what_it_limits() {
    let cli = with_full();
    let t01 = cli
        .run("auditor", &["tools", "show", "T01", "--json"])
        .expect_code(0)
        .json();
    let lookup = entry(&t01, "status lookup");
    assert_eq!(lookup["value"], serde_json::Value::Null);
    assert_eq!(lookup["limit"], NO_STATUS_LOOKUP);
    assert_eq!(entry(&t01, "compensation")["limit"], NO_COMPENSATION);
    assert_eq!(entry(&t01, "owner")["value"], "crm");
    assert_eq!(entry(&t01, "owner")["limit"], serde_json::Value::Null);
    let text = cli
        .run("auditor", &["tools", "show", "T01"])
        .expect_code(0)
        .stdout;
    assert!(
        text.contains("status lookup         MISSING (status_lookup)"),
        "{text}"
    );
    assert!(text.contains("autonomy is capped at manual"), "{text}");
    assert!(text.contains("9 of 14 inventory fields missing"), "{text}");
    // A full contract: every field present, outside text neutralized.
    let t09 = cli
        .run("auditor", &["tools", "show", "T09"])
        .expect_code(0)
        .stdout;
    assert!(t09.contains("0 of 14 inventory fields missing"), "{t09}");
    assert!(t09.contains("100 per 60 s per account"), "{t09}");
    assert!(t09.contains("/v2/refunds"), "{t09}");
    assert!(
        !t09.contains('\u{202e}'),
        "a bidi override reached the terminal"
    );
    assert!(t09.contains("⟨U+202E⟩"), "{t09}");
    assert!(!t09.contains("MISSING"), "{t09}");
}

#[test]
fn an_unknown_tool_is_an_error_naming_it() {
    let cli = Cli::demo();
    let run = cli.run("auditor", &["tools", "show", "T99"]).expect_code(1);
    assert!(
        run.stderr
            .contains("the store holds no contract for tool T99"),
        "{}",
        run.stderr
    );
    let empty = Cli::empty();
    empty.run("loader", &["db", "migrate"]).expect_code(0);
    let run = empty.run("auditor", &["tools"]).expect_code(0);
    assert!(run.stdout.contains("no tools"), "{}", run.stdout);
}

/// The row's drill and lookup checks are the ones the ledgers hold, and the
/// autonomy is the level in force, on either backend.
async fn a_row_reads_the_ledgers(kind: Kind) {
    let fresh = support::stores::fresh(kind).await;
    let store: &Arc<dyn Store> = &fresh.store;
    let report = store
        .ingest(records(FULL), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    let session = Session::new(Arc::clone(store), local());
    let rows = holdfast::tools::rows(&session, now()).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].drill, None);
    assert_eq!(rows[0].checks.answered + rows[0].checks.failed, 0);
    let drill = DrillResult {
        tool: "T09".into(),
        at: now(),
        cases: 16,
        passed: 15,
        modes: FailureMode::ALL.to_vec(),
        failed: vec!["C07".into()],
        drill_store: "drill.db".into(),
        by: String::new(),
        contract_version: Some("IC10".into()),
    };
    record_drill(&session, drill, now()).await.unwrap();
    let spec = store.contracts().await.unwrap()[0]
        .status_lookup
        .spec()
        .cloned()
        .unwrap();
    for found in [true, false, true] {
        let check = LookupCheck {
            tool: "T09".into(),
            known: "F01".into(),
            found,
            lookup: lookup_fingerprint(&spec),
            answer: "HTTP 200".into(),
            by: String::new(),
            at: now(),
        };
        record_lookup_check(&session, check, now()).await.unwrap();
    }
    let rows = holdfast::tools::rows(&session, now()).await.unwrap();
    let row = &rows[0];
    let drill = row.drill.as_ref().expect("a drill");
    assert_eq!((drill.passed, drill.cases, drill.pass), (15, 16, false));
    assert_eq!(drill.version.as_deref(), Some("IC10"));
    assert!(drill.current && drill.stale.is_none(), "{drill:?}");
    assert_eq!((row.holds, row.unknowns), (0, 0), "no operation of T09");
    assert_eq!((row.checks.answered, row.checks.failed), (2, 1));
    assert_eq!(row.checks.last_at, Some(now()));
    // The newest check is a pass, but the level stays manual until raised.
    assert_eq!(row.autonomy, Level::Manual);
    assert_eq!(row.version.as_deref(), Some("IC10"));
    assert_eq!(row.missing, 0);
}

/// A tool's holds and UNKNOWN ones are the store's counts of its operations
/// in the held queue: they move when one of its operations changes state.
async fn the_holds_of_a_tool_follow_its_operations(kind: Kind) {
    let fresh = loaded(kind).await;
    let store: &Arc<dyn Store> = &fresh.store;
    let session = Session::new(Arc::clone(store), local());
    let t03 = |rows: &[holdfast::tools::ToolRow]| {
        let row = rows.iter().find(|r| r.tool == "T03").expect("T03");
        (row.holds, row.unknowns)
    };
    // F09 is UNKNOWN; F10 waits on it (held by a dependency).
    let before = holdfast::tools::rows(&session, now()).await.unwrap();
    assert_eq!(t03(&before), (2, 1));
    store
        .commit(resolve_f09(store.as_ref(), "maya").await)
        .await
        .unwrap();
    let after = holdfast::tools::rows(&session, now()).await.unwrap();
    assert_eq!(t03(&after), (0, 0), "F09 resolved, F10 no longer waits");
}

/// A tool's row says where its circuit stands: `None` without `circuit` in its
/// contract, closed until failures open it, open after.
async fn a_row_says_where_the_tool_s_circuit_stands(kind: Kind) {
    use holdfast::core::circuit::Position;
    let fresh = support::stores::fresh(kind).await;
    let store: &Arc<dyn Store> = &fresh.store;
    let with_circuit = FULL.trim_end().trim_end_matches('}').to_owned()
        + r#","circuit":{"failures":3,"window_seconds":60,"probe_after_seconds":30}}"#;
    let report = store
        .ingest(records(&with_circuit), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    let session = Session::new(Arc::clone(store), local());
    let circuit = |rows: Vec<holdfast::tools::ToolRow>| rows[0].circuit;
    let rows = holdfast::tools::rows(&session, now()).await.unwrap();
    assert_eq!(circuit(rows), Some(Position::Closed));
    support::review::open_circuit(store.as_ref(), "T09", "svc:gateway", now()).await;
    let rows = holdfast::tools::rows(&session, now()).await.unwrap();
    assert_eq!(holdfast::tools::circuit_words(&rows[0]), "open");
    assert_eq!(circuit(rows), Some(Position::Open));
    let bare = support::stores::fresh(kind).await;
    bare.store
        .ingest(records(FULL), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    let session = Session::new(Arc::clone(&bare.store), local());
    let rows = holdfast::tools::rows(&session, now()).await.unwrap();
    assert_eq!(circuit(rows), None);
}

holdfast_on_both_backends!(
    a_row_says_where_the_tool_s_circuit_stands,
    a_row_reads_the_ledgers,
    the_holds_of_a_tool_follow_its_operations
);
