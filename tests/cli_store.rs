//! Which commands may create a store: only `ingest`, `db migrate`, `demo` and
//! `db copy --to`. Every other command, pointed at a store that is not there (a
//! mistyped `--db`), says so and exits 1 without creating anything, so that an
//! empty answer is never read as "nothing held".

mod support;

use support::cli::Cli;

/// A store path under a directory that does not exist either.
fn mistyped() -> Cli {
    let dir = tempfile::tempdir().expect("temp dir");
    let db = dir.path().join("tpyo").join("store.db");
    Cli { dir, db }
}

#[test]
fn a_mistyped_db_is_refused_by_every_command_that_does_not_create_a_store() {
    let cli = mistyped();
    let missing = format!("sqlite:{}", cli.db.display());
    let elsewhere = format!("sqlite:{}", cli.dir.path().join("copy.db").display());
    let commands: [&[&str]; 12] = [
        &["list"],
        &["list", "--state", "all", "--json"],
        &["show", "U1"],
        &["timeline", "U1"],
        &[
            "review",
            "U1",
            "comment",
            "--rationale",
            "looked at it by hand",
        ],
        &["export", "U1"],
        &["report"],
        &["audit", "verify"],
        &["audit", "digest"],
        &["grants"],
        &["grant", "ana", "--role", "owner", "--tenant", "pinehaven"],
        &["db", "copy", "--from", &missing, "--to", &elsewhere],
    ];
    for args in commands {
        let run = cli.run("maya", args).expect_code(1);
        assert!(
            run.stderr.contains("no store at") && run.stderr.contains("tpyo"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("holdfast db migrate") && run.stderr.contains("holdfast ingest"),
            "{args:?} says how to create one: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
        assert!(
            !cli.db.parent().expect("a parent").exists(),
            "{args:?} created the store's directory"
        );
    }
    assert!(!cli.dir.path().join("copy.db").exists(), "no copy made");
}

#[test]
fn ingest_migrate_demo_and_copy_to_create_their_store() {
    let fixture = format!("{}/tests/fixtures/small.jsonl", env!("CARGO_MANIFEST_DIR"));
    let cli = mistyped();
    cli.run("maya", &["ingest", &fixture]).expect_code(0);
    assert!(cli.db.exists(), "ingest creates the store");
    cli.run("maya", &["list"]).expect_code(0);

    let copy = cli.dir.path().join("copies").join("copy.db");
    let from = format!("sqlite:{}", cli.db.display());
    let to = format!("sqlite:{}", copy.display());
    cli.run("maya", &["db", "copy", "--from", &from, "--to", &to])
        .expect_code(0);
    assert!(copy.exists(), "db copy --to creates the copy");

    let cli = mistyped();
    cli.run("maya", &["db", "migrate"]).expect_code(0);
    assert!(cli.db.exists(), "db migrate creates the store");
    let run = cli.run("maya", &["list"]).expect_code(0);
    assert!(run.stdout.contains("0 of 0"), "{}", run.stdout);

    let cli = mistyped();
    cli.run("maya", &["demo", "--print"]).expect_code(0);
    assert!(cli.db.exists(), "demo creates its store");
}

#[test]
fn a_copy_reports_what_its_original_reports() {
    // The kept metric facts are not copied: the copied records mark every
    // operation of the copy stale, and its first report judges them anew.
    let original = Cli::demo();
    let report = original.run("maya", &["report", "--json"]).expect_code(0);
    let copy = Cli {
        dir: tempfile::tempdir().expect("temp dir"),
        db: original.dir.path().join("copy.db"),
    };
    let from = format!("sqlite:{}", original.db.display());
    let to = format!("sqlite:{}", copy.db.display());
    original
        .run("maya", &["db", "copy", "--from", &from, "--to", &to])
        .expect_code(0);
    let copied = copy.run("maya", &["report", "--json"]).expect_code(0);
    assert_eq!(copied.json(), report.json());
    let again = copy.run("maya", &["report", "--json"]).expect_code(0);
    assert_eq!(again.json(), report.json());
}
