//! Trust at the edges, through the real binary: instants a store cannot keep are
//! refused at every door, unreadable rows never take a store down, JSON output is
//! safe for a terminal, quarantine never splits an operation's history, and no
//! planted secret reaches any surface.

mod support;

use support::cli::{Cli, Run};

const SMALL: &str = include_str!("fixtures/small.jsonl");

/// A store holding `text` as its ingested JSON Lines.
fn store_with(text: &str) -> Cli {
    let cli = Cli::empty();
    let path = cli.dir.path().join("input.jsonl");
    std::fs::write(&path, text).expect("write input");
    ingest(&cli, &path).expect_code(0);
    cli
}

fn ingest(cli: &Cli, path: &std::path::Path) -> Run {
    cli.run("loader", &["ingest", &path.to_string_lossy()])
}

/// The small fixture with `from` replaced by `to` (which must occur).
fn small_with(from: &str, to: &str) -> String {
    assert!(SMALL.contains(from), "{from}");
    SMALL.replacen(from, to, 1)
}

#[test]
fn timeline_json_escapes_c1_controls() {
    let cli = store_with(&small_with(
        r#""trace_id":"tr-1","response_excerpt":null"#,
        r#""trace_id":"tr-1","response_excerpt":"csi \u009b2J osc \u009d0;x\u009c del \u007f""#,
    ));
    let run = cli
        .run("maya", &["timeline", "F09", "--json"])
        .expect_code(0);
    assert!(
        !run.stdout
            .chars()
            .any(|c| ('\u{7f}'..='\u{9f}').contains(&c)),
        "{:?}",
        run.stdout
    );
    assert!(run.stdout.contains(r"\u009b2J"), "{}", run.stdout);
    assert_eq!(
        run.json()[0]["response_excerpt"],
        "csi \u{9b}2J osc \u{9d}0;x\u{9c} del \u{7f}"
    );
}
