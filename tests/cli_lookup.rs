//! Status lookups through the real binary: `show` names the lookup a hold has or
//! that it has none, `review ID reconcile --lookup` asks a real provider on
//! 127.0.0.1 and records what it said, `observe` looks each due hold up once as
//! `svc:observer`, and the token reaches the provider but no file holdfast writes.

use crate::support;

use support::cli::{Cli, Run};
use support::provider::{Provider, TOKEN, holds};

use support::provider::{
    TOKEN_ENV as ENV, lookup, run_with_token as run, store_with_holds as store,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_names_the_lookup_or_its_absence() {
    let p = Provider::start("").await;
    let cli = store(&p, &["match"]);
    let shown = cli.run("maya", &["show", "L-match"]).expect_code(0);
    assert!(
        shown.stdout.contains(&format!(
            "status lookup          GET {}/v1/records?business_key={{business_key}} (timeout 500 ms, lag 60 s, secret from ${ENV})",
            p.base
        )),
        "{}",
        shown.stdout
    );
    let none = cli
        .run("maya", &["show", "L-none", "--json"])
        .expect_code(0)
        .json();
    assert!(
        none["status_lookup"]
            .as_str()
            .unwrap()
            .starts_with("none: the contract has no status path"),
        "{none}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reconcile_lookup_records_the_answer_and_what_it_allows() {
    let p = Provider::start("").await;
    let cli = store(&p, &["match", "tenant", "hang"]);
    let found = lookup(&cli, "L-match").expect_code(0);
    for expected in [
        "found                  yes",
        "payload hash           match",
        "tenant                 match",
        "effect count           1",
        "found, all fields match → the effect, once",
        "allows now: resolve --to SUCCEEDED",
        "no further scheduled lookups",
    ] {
        assert!(
            found.stdout.contains(expected),
            "{expected}:\n{}",
            found.stdout
        );
    }
    cli.review("maya", "L-match", "resolve", &["--to", "SUCCEEDED"])
        .expect_code(0);
    assert_eq!(cli.state("maya", "L-match"), "SUCCEEDED");

    let other = lookup(&cli, "L-tenant").expect_code(0);
    assert!(
        other
            .stdout
            .contains("tenant                 ANOTHER TENANT"),
        "{}",
        other.stdout
    );
    assert!(
        other.stdout.contains("wrong-tenant finding (G7)"),
        "{}",
        other.stdout
    );
    let refused = cli
        .review("maya", "L-tenant", "resolve", &["--to", "SUCCEEDED"])
        .expect_code(3);
    assert!(
        refused
            .stderr
            .starts_with("refused: G7: lookup observation L-tenant-O1"),
        "{}",
        refused.stderr
    );

    let hang = lookup(&cli, "L-hang").expect_code(0);
    assert!(
        hang.stdout.contains("error                  timeout"),
        "{}",
        hang.stdout
    );
    assert!(
        hang.stdout
            .contains("no answer: an attempt and nothing more"),
        "{}",
        hang.stdout
    );
    let timeline = cli
        .run("maya", &["timeline", "L-hang", "--json"])
        .expect_code(0)
        .json();
    let last = timeline.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["kind"], "status_query");
    assert_eq!(last["outcome"], "timeout");
    assert_eq!(cli.state("maya", "L-hang"), "UNKNOWN");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_impossible_lookup_says_why_and_records_nothing() {
    let p = Provider::start("").await;
    let cli = store(&p, &["match"]);
    let before = cli.head();
    let no_secret = cli
        .review("maya", "L-match", "reconcile", &["--lookup"])
        .expect_code(1);
    assert!(
        no_secret.stderr.contains(&format!("lookup impossible: the environment variable {ENV} that holds the lookup's secret is not set")),
        "{}",
        no_secret.stderr
    );
    let no_path = lookup(&cli, "L-none").expect_code(1);
    assert!(
        no_path
            .stderr
            .contains("lookup impossible: the contract of T08 has no status lookup"),
        "{}",
        no_path.stderr
    );
    let mixed = run(
        &cli,
        "maya",
        &[
            "review",
            "L-match",
            "reconcile",
            "--lookup",
            "--found",
            "--rationale",
            "both ways at once",
        ],
    )
    .expect_code(2);
    assert!(
        mixed
            .stderr
            .contains("--found and --lookup exclude each other"),
        "{}",
        mixed.stderr
    );
    assert_eq!(cli.head(), before, "nothing was written");
    assert!(p.auth_seen().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_looks_each_due_hold_up_once_as_the_observer_and_keeps_the_token_out() {
    let p = Provider::start("").await;
    let cli = store(&p, &["match", "missing", "echo", "unavailable"]);
    let first = run(&cli, "svc:observer", &["observe"]).expect_code(0);
    let lines: Vec<&str> = first
        .stdout
        .lines()
        .filter(|l| !l.starts_with("L-none: not looked up:"))
        .collect();
    assert_eq!(lines.len(), 4, "one line per due hold:\n{}", first.stdout);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("L-match: records status query L-match-Q2")),
        "{}",
        first.stdout
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("L-unavailable: ") && l.contains("next lookup at")),
        "{}",
        first.stdout
    );
    let shown = cli
        .run("maya", &["show", "L-missing", "--json"])
        .expect_code(0)
        .json();
    let audit = cli
        .run("maya", &["timeline", "L-missing", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(audit.as_array().unwrap().len(), 2);
    assert_eq!(shown["next_observation_at"], serde_json::Value::Null);
    let again = run(&cli, "svc:observer", &["observe"]).expect_code(0);
    assert!(
        again.stdout.ends_with(
            "no lookups are due: every overdue hold above is left for the reason given\n"
        ),
        "{}",
        again.stdout
    );
    assert_eq!(p.asked("match:1"), 1);
    assert!(
        p.auth_seen()
            .iter()
            .all(|a| a.as_deref() == Some(&format!("Bearer {TOKEN}")))
    );

    let export = cli
        .run("maya", &["export", "L-echo", "L-match", "--format", "json"])
        .expect_code(0);
    assert!(
        export.stdout.contains("[redacted]"),
        "the echoed token is kept redacted"
    );
    assert!(!export.stdout.contains(TOKEN));
    let mut files = 0;
    for entry in walk(cli.dir.path()) {
        let bytes = std::fs::read(&entry).unwrap();
        files += 1;
        assert!(
            !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
            "{} holds the token",
            entry.display()
        );
    }
    assert!(files >= 2, "the store and the log file were read");
    assert!(cli.dir.path().join("holdfast.log").exists());
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_watch_runs_until_its_duration_and_needs_a_grant_once_grants_exist() {
    let p = Provider::start("").await;
    let cli = store(&p, &["match", "missing"]);
    cli.run(
        "maya",
        &[
            "grant",
            "maya",
            "--role",
            "owner",
            "--tenant",
            "pinehaven",
            "--rationale",
            "first owner of the tenant",
        ],
    )
    .expect_code(0);
    let unseen = run(&cli, "svc:observer", &["observe"]).expect_code(0);
    assert_eq!(
        unseen.stdout, "no lookups are due\n",
        "no grant, no tenant in scope"
    );
    assert!(p.auth_seen().is_empty());
    cli.run(
        "maya",
        &[
            "grant",
            "svc:observer",
            "--role",
            "reviewer",
            "--tenant",
            "pinehaven",
            "--rationale",
            "the observer reconciles pinehaven",
        ],
    )
    .expect_code(0);
    // `--watch` acts on its own: only for a tool at `native` or above.
    let store = holdfast::store::Location::Sqlite(cli.db.clone())
        .open_existing()
        .await
        .unwrap();
    support::review::put_at_level(store.as_ref(), "T06", holdfast::core::ladder::Level::Native)
        .await;
    support::review::put_checked(store.as_ref(), "T06").await;
    let started = std::time::Instant::now();
    let watched = run(
        &cli,
        "svc:observer",
        &[
            "observe",
            "--watch",
            "--duration",
            "2",
            "--concurrency",
            "2",
            "--json",
        ],
    )
    .expect_code(0);
    assert!(started.elapsed() >= std::time::Duration::from_secs(2));
    let lines: Vec<serde_json::Value> = watched
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let lines: Vec<&serde_json::Value> = lines.iter().filter(|l| l["id"] != "L-none").collect();
    assert_eq!(lines.len(), 2, "{}", watched.stdout);
    assert!(
        lines.iter().all(|l| l["acted"] == true),
        "{}",
        watched.stdout
    );
    assert_eq!(p.asked("match:1") + p.asked("missing:1"), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contract_pointing_its_lookup_at_its_own_listener_sends_it_nothing() {
    let p = Provider::start("").await;
    let listener = Provider::start("").await;
    let cli = store(&p, &["match"]);
    // An identity that may ingest adds a tool whose lookup asks its listener,
    // naming the bound tool's token variable.
    let packet = format!(
        "{}\n{}",
        listener.contract("T66", 500, 0),
        holds("T66", &[("L-steal", "match:1")], "2026-09-05T10:02:00Z")
    );
    let path = cli.dir.path().join("steal.jsonl");
    std::fs::write(&path, packet).unwrap();
    cli.run("loader", &["ingest", path.to_str().unwrap()])
        .expect_code(0);
    let refused = lookup(&cli, "L-steal").expect_code(1);
    assert!(
        refused
            .stderr
            .contains("lookup refused for tool T66 (unbound host)"),
        "{}",
        refused.stderr
    );
    let observed = run(&cli, "svc:observer", &["observe"]);
    assert!(
        observed.stdout.contains("L-steal") && observed.stdout.contains("unbound host"),
        "{}{}",
        observed.stdout,
        observed.stderr
    );
    assert_eq!(listener.requests(), 0, "nothing reached the listener");
    assert!(listener.auth_seen().is_empty(), "the token was never sent");
    // The bound tool's hold was looked up, with its binding's token.
    assert_eq!(p.asked("match:1"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lookup_check_proves_the_lookup_finds_a_known_record_and_lifts_the_cap() {
    let p = Provider::start("").await;
    let cli = store(&p, &["match", "html404"]);
    let t06 = |cli: &Cli| {
        run(cli, "maya", &["autonomy", "list", "--json"])
            .expect_code(0)
            .json()
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["tool"] == "T06")
            .cloned()
            .unwrap()
    };
    assert!(
        t06(&cli)["unchecked"].is_string(),
        "flagged before any check"
    );
    assert_eq!(t06(&cli)["effective"], "manual");
    // A lookup whose answer is a router's page proves nothing: still unchecked.
    let failed = run(
        &cli,
        "maya",
        &["lookup", "check", "T06", "--known", "L-html404"],
    )
    .expect_code(1);
    assert!(
        failed.stdout.contains("stays unchecked") && failed.stdout.contains("unclear_not_found"),
        "{}",
        failed.stdout
    );
    assert!(
        t06(&cli)["unchecked"]
            .as_str()
            .is_some_and(|w| w.contains("did not find L-html404")),
        "{}",
        t06(&cli)
    );
    let wrong = run(
        &cli,
        "maya",
        &["lookup", "check", "T08", "--known", "L-match"],
    )
    .expect_code(2);
    assert!(
        wrong.stderr.contains("is of tool T06, not T08"),
        "{}",
        wrong.stderr
    );
    let checked = run(
        &cli,
        "maya",
        &["lookup", "check", "T06", "--known", "L-match", "--json"],
    )
    .expect_code(0)
    .json();
    assert_eq!(checked["found"], true, "{checked}");
    assert_eq!(checked["audit"]["action"], "lookup-check", "{checked}");
    assert!(t06(&cli)["unchecked"].is_null(), "{}", t06(&cli));
    let shown = run(&cli, "maya", &["show", "L-match"]).expect_code(0);
    assert!(
        !shown.stdout.contains("LOOKUP UNCHECKED"),
        "{}",
        shown.stdout
    );
    // The raise now passes A1 and stops at the drill (A2).
    run(
        &cli,
        "maya",
        &[
            "autonomy",
            "set",
            "T06",
            "native",
            "--rationale",
            "the lookup is proven now",
        ],
    )
    .refused("A2");
    assert_eq!(p.asked("match:1"), 1);
    assert!(
        !std::fs::read(&cli.db)
            .unwrap()
            .windows(TOKEN.len())
            .any(|w| w == TOKEN.as_bytes())
    );
    cli.run("auditor", &["audit", "verify"]).expect_code(0);
}

/// The `--json` lines of a run, as values.
fn json_lines(run: &Run) -> Vec<serde_json::Value> {
    run.stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The line of `id` in `lines`.
fn line_of<'a>(lines: &'a [serde_json::Value], id: &str) -> &'a serde_json::Value {
    lines
        .iter()
        .find(|l| l["id"] == id)
        .unwrap_or_else(|| panic!("no line for {id}: {lines:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_says_why_each_overdue_hold_it_leaves_is_not_looked_up() {
    let p = Provider::start("").await;
    let cli = store(&p, &["match"]);
    // `--watch` with T06 at `manual`: both holds are overdue, neither is asked.
    let watch = ["observe", "--watch", "--duration", "1", "--json"];
    let lines = json_lines(&run(&cli, "svc:observer", &watch).expect_code(0));
    let none = line_of(&lines, "L-none");
    assert_eq!(none["acted"], false);
    assert_eq!(none["reason"], "no_lookup", "{none}");
    assert!(
        none["words"]
            .as_str()
            .unwrap()
            .contains("the contract of tool T08 has no lookup object"),
        "{none}"
    );
    let manual = line_of(&lines, "L-match");
    assert_eq!(manual["reason"], "tool_level", "{manual}");
    assert!(
        manual["words"]
            .as_str()
            .unwrap()
            .contains("T06 is at `manual`"),
        "{manual}"
    );
    assert_eq!(p.asked("match:1"), 0);

    // At `native` but with its lookup unchecked: capped, and said so.
    let store = holdfast::store::Location::Sqlite(cli.db.clone())
        .open_existing()
        .await
        .unwrap();
    support::review::put_at_level(store.as_ref(), "T06", holdfast::core::ladder::Level::Native)
        .await;
    let lines = json_lines(&run(&cli, "svc:observer", &watch).expect_code(0));
    assert_eq!(line_of(&lines, "L-match")["reason"], "lookup_unchecked");
    assert_eq!(p.asked("match:1"), 0);

    // A one-shot observe asks for L-match and names L-none's reason in words.
    let once = run(&cli, "svc:observer", &["observe"]).expect_code(0);
    assert!(
        once.stdout
            .lines()
            .any(|l| l.starts_with("L-match: records")),
        "{}",
        once.stdout
    );
    assert!(
        once.stdout.lines().any(|l| l
            .starts_with("L-none: not looked up: the contract of tool T08 has no lookup object")),
        "{}",
        once.stdout
    );
    assert_eq!(p.asked("match:1"), 1);
    // Nothing due, one hold still overdue: not a bare "no lookups are due".
    let again = run(&cli, "svc:observer", &["observe"]).expect_code(0);
    assert!(
        again.stdout.starts_with("L-none: not looked up: "),
        "{}",
        again.stdout
    );
    assert!(
        again.stdout.ends_with(
            "no lookups are due: every overdue hold above is left for the reason given\n"
        ),
        "{}",
        again.stdout
    );
    let json = json_lines(&run(&cli, "svc:observer", &["observe", "--json"]).expect_code(0));
    assert_eq!(json.len(), 1, "{json:?}");
    assert_eq!(json[0]["reason"], "no_lookup");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_names_when_another_observers_claim_expires() {
    let p = Provider::start("").await;
    let cli = store(&p, &["match"]);
    // Another observer holds L-match's slot (its next observation, 10:02) until 10:14.
    let mut conn = <sqlx::SqliteConnection as sqlx::Connection>::connect(&format!(
        "sqlite:{}",
        cli.db.display()
    ))
    .await
    .unwrap();
    let slot = holdfast::core::clock::parse_instant("2026-09-05T10:02:00Z").unwrap();
    let taken = holdfast::core::clock::parse_instant("2026-09-05T10:09:00Z").unwrap();
    let until = holdfast::core::clock::parse_instant("2026-09-05T10:14:00Z").unwrap();
    sqlx::query("INSERT INTO lookup_claims VALUES ('L-match', ?, 'svc:observer-2', ?, ?)")
        .bind(slot.timestamp_millis())
        .bind(taken.timestamp_millis())
        .bind(until.timestamp_millis())
        .execute(&mut conn)
        .await
        .unwrap();
    let lines = json_lines(&run(&cli, "svc:observer", &["observe", "--json"]).expect_code(0));
    let claimed = line_of(&lines, "L-match");
    assert_eq!(claimed["acted"], false, "{claimed}");
    assert_eq!(claimed["reason"], "claimed", "{claimed}");
    assert_eq!(claimed["claimed_by"], "svc:observer-2", "{claimed}");
    assert_eq!(
        claimed["claim_expires_at"], "2026-09-05T10:14:00Z",
        "{claimed}"
    );
    assert_eq!(p.asked("match:1"), 0);
    let text = run(&cli, "svc:observer", &["observe"]).expect_code(0);
    assert!(
        text.stdout.lines().any(|l| l
            == "L-match: not looked up: svc:observer-2 claimed its slot: the claim expires at \
                2026-09-05T10:14:00Z, and it is due again then if no lookup is recorded"),
        "{}",
        text.stdout
    );
    // Once the claim has expired, this observer takes the slot and asks.
    let after = cli
        .command_at("2026-09-05T10:15:00Z", "svc:observer", &["observe"])
        .env(ENV, TOKEN)
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&after.stdout).contains("L-match: records"),
        "{}",
        String::from_utf8_lossy(&after.stdout)
    );
    assert_eq!(p.asked("match:1"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_says_budget_spent_for_an_overdue_hold_past_its_deadline() {
    let p = Provider::start("").await;
    let cli = store(&p, &["match"]);
    // Both holds' deadline is 11:00. L-none (no lookup object) is still overdue
    // past it; it is the budget, not the lookup object, that ends its lookups.
    let late = "2026-09-05T11:30:00Z";
    let output = cli
        .command_at(late, "svc:observer", &["observe", "--json"])
        .env(ENV, TOKEN)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let spent = line_of(&lines, "L-none");
    assert_eq!(spent["reason"], "budget_spent", "{spent}");
    assert_eq!(spent["deadline"], "2026-09-05T11:00:00Z", "{spent}");
    assert!(
        spent["words"]
            .as_str()
            .unwrap()
            .starts_with("budget spent: its deadline 2026-09-05T11:00:00Z has passed"),
        "{spent}"
    );
    // L-match, with a lookup, is routed to its owner instead of being asked.
    let routed = line_of(&lines, "L-match");
    assert_eq!(routed["acted"], true, "{routed}");
    assert_eq!(p.asked("match:1"), 0);
    // Before the deadline, L-none is left for its missing lookup object.
    let early = json_lines(&run(&cli, "svc:observer", &["observe", "--json"]).expect_code(0));
    assert_eq!(line_of(&early, "L-none")["reason"], "no_lookup");
}
