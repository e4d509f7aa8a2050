//! Which commands may create a store: only `ingest`, `db migrate`, `demo` and
//! `db copy --to`. Every other command, pointed at a store that is not there (a
//! mistyped `--db`, a database without holdfast's schema), says so and exits 1
//! without creating anything, so that an empty answer is never read as "nothing
//! held". A PostgreSQL server that cannot be reached, or a database that is not
//! there, is reported in words within seconds.

use crate::support;

use std::time::{Duration, Instant};

use sqlx::{Connection, PgConnection};
use support::cli::Cli;
use support::stores;

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
    // operation of the copy stale, and the copy judges them anew before it
    // ends, telling how far it has got on stderr.
    let original = Cli::demo();
    let report = original.run("maya", &["report", "--json"]).expect_code(0);
    let copy = Cli {
        dir: tempfile::tempdir().expect("temp dir"),
        db: original.dir.path().join("copy.db"),
    };
    let from = format!("sqlite:{}", original.db.display());
    let to = format!("sqlite:{}", copy.db.display());
    let copying = original
        .run("maya", &["db", "copy", "--from", &from, "--to", &to])
        .expect_code(0);
    assert!(
        copying
            .stderr
            .contains("Judging the operations the store has not judged yet: "),
        "{}",
        copying.stderr
    );
    let copied = copy.run("maya", &["report", "--json"]).expect_code(0);
    assert_eq!(copied.stderr, "", "the copy was judged when it ended");
    assert_eq!(copied.json(), report.json());
    let again = copy.run("maya", &["report", "--json"]).expect_code(0);
    assert_eq!(again.json(), report.json());
}

/// The commands that read or change a store without creating one, each run on a
/// store that is not a holdfast store.
const NOT_CREATING: [&[&str]; 7] = [
    &["list"],
    &["report"],
    &["audit", "verify"],
    &["grants"],
    &[
        "review",
        "U1",
        "comment",
        "--rationale",
        "looked at it by hand",
    ],
    &["observe"],
    &["work", "claim", "--worker", "w1", "--lease", "60"],
];

/// Relations in the database's `public` schema: tables, sequences, views.
async fn relations(url: &str) -> i64 {
    let mut conn = PgConnection::connect(url).await.expect("connect as admin");
    let n = sqlx::query_scalar(
        "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = 'public'",
    )
    .fetch_one(&mut conn)
    .await
    .expect("count relations");
    let _ = conn.close().await;
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_without_holdfasts_schema_is_refused_and_left_untouched() {
    skip_without_postgres!();
    let database = stores::Database::create().await;
    let cli = Cli::empty();
    for args in NOT_CREATING {
        let mut full = vec!["--database-url", database.url.as_str()];
        full.extend_from_slice(args);
        let run = cli.run("maya", &full).expect_code(1);
        assert!(
            run.stderr.contains("no holdfast store at postgres://")
                && run.stderr.contains(&database.name),
            "{args:?}: {}",
            run.stderr
        );
        assert!(
            run.stderr.contains("run `holdfast db migrate` first"),
            "{args:?}: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "{args:?}: {}", run.stdout);
        assert_eq!(
            relations(&database.url).await,
            0,
            "{args:?} wrote into a database without a store"
        );
    }
    // The documented way to create one still does, and then the same command reads it.
    // (On PostgreSQL the database login acts: the admin login of the tests.)
    cli.run(
        "postgres",
        &["--database-url", &database.url, "db", "migrate"],
    )
    .expect_code(0);
    let run = cli
        .run("postgres", &["--database-url", &database.url, "list"])
        .expect_code(0);
    assert!(run.stdout.contains("0 of 0"), "{}", run.stdout);
}

#[test]
fn a_sqlite_file_without_holdfasts_schema_is_refused_and_left_untouched() {
    let cli = Cli::empty();
    std::fs::write(&cli.db, b"").expect("an empty file");
    for args in NOT_CREATING {
        let run = cli.run("maya", args).expect_code(1);
        assert!(
            run.stderr
                .contains(&format!("no holdfast store at {}", cli.db.display()))
                && run.stderr.contains("run `holdfast db migrate` first"),
            "{args:?}: {}",
            run.stderr
        );
        assert_eq!(
            std::fs::metadata(&cli.db).expect("the file").len(),
            0,
            "{args:?} wrote into a file without a store"
        );
    }
}

#[test]
fn a_closed_port_is_refused_in_words_within_seconds() {
    // A port nobody listens on: taken from the system, then given back.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let url = format!("postgres://maya:s3cret-pw@127.0.0.1:{port}/holdfast_x");
    let cli = Cli::empty();
    let started = Instant::now();
    let run = cli.run("maya", &["--database-url", &url, "list"]);
    let took = started.elapsed();
    let run = run.expect_code(1);
    assert!(
        run.stderr.contains(&format!(
            "could not reach PostgreSQL at 127.0.0.1:{port} (connection refused"
        )),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("database holdfast_x") && run.stderr.contains("login maya"),
        "what was tried: {}",
        run.stderr
    );
    assert!(!run.stderr.contains("s3cret"), "{}", run.stderr);
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

#[test]
fn a_server_that_never_answers_is_given_up_on_within_seconds() {
    // Accepts connections (the kernel does, from the backlog) and never says a word.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let port = silent.local_addr().expect("its address").port();
    let url = format!("postgres://maya@127.0.0.1:{port}/holdfast_x");
    let cli = Cli::empty();
    let started = Instant::now();
    let run = cli.run("maya", &["--database-url", &url, "report"]);
    let took = started.elapsed();
    let run = run.expect_code(1);
    assert!(
        run.stderr.contains(&format!(
            "could not reach PostgreSQL at 127.0.0.1:{port} (no answer within 5 s"
        )),
        "{}",
        run.stderr
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    drop(silent);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_database_is_named_in_words() {
    skip_without_postgres!();
    let database = stores::Database::create().await;
    let missing = format!("{}_absent", database.name);
    let url = database.url.replace(&database.name, &missing);
    let cli = Cli::empty();
    for args in [&["list"][..], &["db", "migrate"], &["ingest", "-"]] {
        let mut full = vec!["--database-url", url.as_str()];
        full.extend_from_slice(args);
        let run = cli.run("maya", &full).expect_code(1);
        assert!(
            run.stderr
                .contains(&format!("database {missing} does not exist on ")),
            "{args:?}: {}",
            run.stderr
        );
    }
}
