//! Verified incidents become drill cases (`holdfast drill case-from`), and
//! protected cases are reported by pass or fail only (DESIGN §9.3).

use crate::support;

use holdfast::core::ids::OperationId;
use holdfast::drill::incident::{NotACase, case_from};
use holdfast::sim::parse_cases;
use holdfast::store::Scope;
use serde_json::Value;
use support::cli::Cli;
use support::stores::{self, Kind};

const DEMO: &str = include_str!("../assets/demo/tc094.jsonl");

/// Three demo operations of different shapes: a timeout whose request turned
/// out not applied (reconciled, then retried), a PARTIAL batch resumed by its
/// owner, and an UNKNOWN truncated answer that turned out committed.
const SHAPES: [&str; 3] = ["F10", "F21", "F29"];

async fn demo_store(kind: Kind) -> stores::Fresh {
    let fresh = stores::fresh(kind).await;
    support::console::ingest(fresh.store.as_ref(), DEMO).await;
    fresh
}

async fn written(fresh: &stores::Fresh, id: &str) -> Result<Value, NotACase> {
    let detail = fresh
        .store
        .detail(&Scope::Every, &OperationId::parse(id).unwrap())
        .await
        .unwrap();
    case_from(&detail, false).map(|line| serde_json::from_str(&line).unwrap())
}

async fn cases_from_three_demo_operations_pass(kind: Kind) {
    let fresh = demo_store(kind).await;
    let mut lines = Vec::new();
    for id in SHAPES {
        lines.push(written(&fresh, id).await.unwrap());
    }
    // What each resolution proved is the expectation.
    let [f10, f21, f29] = &lines[..] else {
        unreachable!()
    };
    assert_eq!(f10["expect"]["state"], "SUCCEEDED");
    assert_eq!(f10["expect"]["effects"], 1);
    assert_eq!(
        f10["provider"][0],
        serde_json::json!({"on": "request", "n": 1, "commit": false, "respond": "hang"}),
        "the first request timed out before the provider applied it"
    );
    assert_eq!(f10["operation"]["target"], "ticket-queue:3");
    assert_eq!(f21["operation"]["items"], 5);
    assert_eq!(f21["operation"]["recovery"], "resume");
    assert_eq!(f21["expect"]["effects"], 5);
    assert_eq!(f21["expect"]["max_item_effects"], 1);
    assert_eq!(f21["expect"]["recovery_state"], "SUCCEEDED");
    assert_eq!(f29["expect"]["effects"], 1);
    assert_eq!(f29["provider"][0]["commit"], true);
    assert!(
        f29["expect"].get("state").is_none(),
        "a person resolved it: {f29}"
    );

    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let cases = parse_cases(&text).unwrap();
    let drill_store = stores::sqlite().await;
    let outcome = holdfast::drill::run(drill_store.store.as_ref(), &cases)
        .await
        .unwrap();
    for case in &outcome.cases {
        assert!(
            case.pass,
            "{}: expected {:?}, observed {:?}",
            case.id, case.expected, case.observed
        );
    }
    assert_eq!(outcome.cases.len(), 3);

    // The script is what makes it pass: the truncated answer not applied is
    // a case that fails.
    let mut broken = f29.clone();
    broken["id"] = "I-F29x".into();
    broken["provider"][0]["commit"] = false.into();
    let cases = parse_cases(&broken.to_string()).unwrap();
    let other = stores::sqlite().await;
    let outcome = holdfast::drill::run(other.store.as_ref(), &cases)
        .await
        .unwrap();
    assert!(!outcome.cases[0].pass);
    assert_eq!(outcome.cases[0].failed[0].expectation, "effects");
}

async fn only_a_verified_outcome_is_a_case(kind: Kind) {
    let fresh = demo_store(kind).await;
    for (id, state) in [
        ("F09", "UNKNOWN"),
        ("F03", "ACCEPTED"),
        ("F13", "ACKNOWLEDGED"),
    ] {
        let refused = written(&fresh, id).await.unwrap_err();
        assert!(matches!(refused, NotACase::Unresolved { .. }), "{refused}");
        let words = refused.to_string();
        assert!(
            words.contains("only a verified outcome is a case") && words.contains(state),
            "{words}"
        );
    }
    // F05 was refused locally: nothing reached the provider.
    let refused = written(&fresh, "F05").await.unwrap_err();
    assert!(
        matches!(refused, NotACase::Unreproducible { .. })
            && refused.to_string().contains("nothing reached the provider"),
        "{refused}"
    );
    // An operation outside the session's tenants is not found for it.
    let session = stores::session_in(&fresh.store, &Scope::Tenants(vec!["northwind".into()]));
    let hidden = holdfast::review::load(&session, &OperationId::parse("F10").unwrap()).await;
    assert!(
        matches!(hidden, Err(holdfast::review::ReviewError::NotFound { .. })),
        "{hidden:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_text_is_kept_exactly_and_the_line_is_safe_to_print() {
    let fresh = demo_store(Kind::Sqlite).await;
    let mut detail = fresh
        .store
        .detail(&Scope::Every, &OperationId::parse("F10").unwrap())
        .await
        .unwrap();
    let hostile = "ticket-queue:3\u{202e}\u{9b}31m";
    detail.row.operation.target = hostile.into();
    let line = case_from(&detail, false).unwrap();
    assert!(
        !line.contains('\u{202e}') && !line.contains('\u{9b}'),
        "{line}"
    );
    let case: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(case["operation"]["target"], hostile);
}

holdfast_on_both_backends!(
    cases_from_three_demo_operations_pass,
    only_a_verified_outcome_is_a_case,
);

#[test]
fn case_from_writes_cases_the_drill_runs_and_refuses_the_unresolved() {
    let cli = Cli::demo();
    let mut file = String::new();
    for id in SHAPES {
        let run = cli
            .run("reviewer", &["drill", "case-from", id])
            .expect_code(0);
        file.push_str(&run.stdout);
    }
    let path = cli.dir.path().join("incidents.jsonl");
    std::fs::write(&path, &file).unwrap();
    let other = Cli::empty();
    let run = other
        .run(
            "drill-runner",
            &["drill", "--cases", path.to_str().unwrap()],
        )
        .expect_code(0);
    for id in SHAPES {
        assert!(
            run.stdout
                .lines()
                .any(|l| l.starts_with(&format!("I-{id} ")) && l.ends_with("pass")),
            "{id}:\n{}",
            run.stdout
        );
    }
    assert!(run.stdout.contains("19 of 19 cases pass"), "{}", run.stdout);

    let out = cli.dir.path().join("one.jsonl");
    cli.run(
        "reviewer",
        &["drill", "case-from", "F10", "--out", out.to_str().unwrap()],
    )
    .expect_code(0);
    assert_eq!(std::fs::read_to_string(&out).unwrap(), {
        let mut first = file.lines().next().unwrap().to_owned();
        first.push('\n');
        first
    });
    // An existing file is never overwritten.
    cli.run(
        "reviewer",
        &["drill", "case-from", "F21", "--out", out.to_str().unwrap()],
    )
    .expect_code(2);

    let refused = cli
        .run("reviewer", &["drill", "case-from", "F09"])
        .expect_code(3);
    assert!(
        refused.stderr.contains("only a verified outcome is a case"),
        "{}",
        refused.stderr
    );
    assert!(refused.stdout.is_empty());
    let missing = cli.run("reviewer", &["drill", "case-from", "F99"]);
    assert_ne!(missing.code, 0);
    assert!(missing.stdout.is_empty());
}

/// A marker no output may ever show.
const MARKER: &str = "ZEBRA-HOLDOUT-7F3A";

/// The demo's F02 as a protected case, its script, name and note carrying the
/// marker; `fail` makes its expectation one the run cannot meet.
fn protected_case(cli: &Cli, id: &str, fail: bool) -> String {
    let run = cli
        .run("reviewer", &["drill", "case-from", "F02", "--protected"])
        .expect_code(0);
    let mut case: Value = serde_json::from_str(run.stdout.trim()).unwrap();
    assert_eq!(case["protected"], true);
    case["id"] = id.into();
    case["name"] = format!("{MARKER} name").into();
    case["note"] = format!("{MARKER} note").into();
    case["provider"][0]["respond"]["body"]["error"] = MARKER.into();
    if fail {
        case["expect"]["effects"] = 7.into();
    }
    format!("{case}\n")
}

/// Every byte a run left: its output, its log and every file in its data
/// directory (the stores it wrote).
fn everything(run: &support::cli::Run, dir: &std::path::Path) -> Vec<u8> {
    let mut all = Vec::new();
    all.extend_from_slice(run.stdout.as_bytes());
    all.extend_from_slice(run.stderr.as_bytes());
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            all.extend(std::fs::read(&path).unwrap());
        }
    }
    all
}

fn shows_marker(bytes: &[u8]) -> bool {
    bytes.windows(MARKER.len()).any(|w| w == MARKER.as_bytes())
}

#[test]
fn a_protected_case_is_reported_by_pass_or_fail_only() {
    let source = Cli::demo();
    let cases = tempfile::tempdir().unwrap();
    let path = cases.path().join("holdout.jsonl");
    let text = protected_case(&source, "H1", false) + &protected_case(&source, "H2", true);
    assert!(shows_marker(text.as_bytes()), "the marker is in the script");
    std::fs::write(&path, &text).unwrap();

    let cli = Cli::empty();
    let path = path.to_str().unwrap();
    let table = cli
        .run("drill-runner", &["drill", "--cases", path])
        .expect_code(1);
    let bytes = everything(&table, cli.dir.path());
    assert!(!shows_marker(&bytes), "table run:\n{}", table.stdout);
    let h1: Vec<&str> = table
        .stdout
        .lines()
        .filter(|l| l.starts_with("H1 "))
        .collect();
    let h2: Vec<&str> = table
        .stdout
        .lines()
        .filter(|l| l.starts_with("H2"))
        .collect();
    assert_eq!(h1.len(), 1, "{}", table.stdout);
    assert!(h1[0].ends_with("pass"), "{}", h1[0]);
    // The failing protected case fails the drill and says only that.
    assert_eq!(h2.len(), 2, "{}", table.stdout);
    assert!(h2[0].ends_with("FAIL"), "{}", h2[0]);
    assert_eq!(
        h2[0].split_whitespace().collect::<Vec<_>>(),
        ["H2", "protected", "-", "-", "FAIL"]
    );
    assert_eq!(h2[1], "H2 failed");
    assert!(
        !table.stdout.contains("effects: expected"),
        "{}",
        table.stdout
    );

    let json = Cli::empty();
    let run = json
        .run("drill-runner", &["drill", "--json", "--cases", path])
        .expect_code(1);
    assert!(!shows_marker(&everything(&run, json.dir.path())));
    let shown = run.json();
    let listed = shown["cases"].as_array().unwrap();
    assert_eq!(
        listed[listed.len() - 2],
        serde_json::json!({"id": "H1", "protected": true, "pass": true})
    );
    assert_eq!(
        listed[listed.len() - 1],
        serde_json::json!({"id": "H2", "protected": true, "pass": false})
    );

    // The simulated provider alone names a protected case and nothing more.
    let mut provider = std::process::Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(["sim-provider", "--listen", "127.0.0.1:0", "--cases", path])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines =
        std::io::BufRead::lines(std::io::BufReader::new(provider.stdout.take().unwrap()));
    let mut stdout = String::new();
    for _ in 0..3 {
        match lines.next() {
            Some(Ok(line)) => {
                stdout.push_str(&line);
                stdout.push('\n');
            }
            _ => break,
        }
    }
    provider.kill().unwrap();
    let output = provider.wait_with_output().unwrap();
    assert!(
        stdout.contains("H1") && stdout.contains("protected"),
        "{stdout}"
    );
    assert!(!shows_marker(stdout.as_bytes()) && !shows_marker(&output.stderr));
    assert!(!stdout.contains("/cases/H1"), "{stdout}");
}
