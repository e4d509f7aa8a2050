//! `kill -9` in the middle of an ingest, a review, a `db migrate` and a `db
//! copy`, on both backends, tens of times (sized for CI): afterwards the chain
//! verifies — which now also holds every operation's state and version to its
//! rows — each killed ingest committed all of its file or none of it, a killed
//! migration left only whole migrations applied and a rerun finishes them, and a
//! killed copy left its target empty or complete.

use crate::support;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use std::sync::Arc;

use holdfast::core::audit::ChainStatus;
use holdfast::store::Scope;
use holdfast::store::Store;
use holdfast::store::postgres::PgStore;
use holdfast::store::sqlite::SqliteStore;
use sqlx::{Connection, PgConnection, SqliteConnection};
use support::review::{SMALL, loaded};
use support::stores::{Database, Fresh, Kind};

/// Operations per ingest file: enough for an ingest to take a while.
const PER_FILE: usize = 2_000;

/// Kills per backend and per kind of command.
const KILLS: u64 = 10;

/// A file of `PER_FILE` new operations, ids `K{round}-{n}`.
fn big_file(dir: &std::path::Path, round: u64) -> String {
    let template = SMALL
        .lines()
        .find(|l| l.contains(r#""id":"F10""#))
        .expect("F10 in the small fixture");
    let mut text = String::new();
    for n in 0..PER_FILE {
        let id = format!("K{round}-{n}");
        text.push_str(
            &template
                .replace(r#""id":"F10""#, &format!(r#""id":"{id}""#))
                .replace("ticket-queue:8", &format!("ticket-queue:{id}")),
        );
        text.push('\n');
    }
    let path = dir.join(format!("big-{round}.jsonl"));
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// The `holdfast ARGS` command, with its own data and config dirs.
fn command(home: &std::path::Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_holdfast"));
    command
        .env("HOLDFAST_DATA_DIR", home.join("data"))
        .env("HOLDFAST_CONFIG", home.join("no-config.toml"))
        .env("HOLDFAST_NOW", "2026-09-05T10:03:00Z")
        .env_remove("HOLDFAST_DATABASE_URL")
        .env_remove("HOLDFAST_DB")
        .env_remove("HOLDFAST_AS")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .args(args);
    command
}

/// Starts `holdfast ARGS` on the store at `url`.
fn spawn_on(url: &str, home: &std::path::Path, args: &[&str]) -> Child {
    let store = [&["--database-url", url][..], args].concat();
    command(home, &store).spawn().expect("run holdfast")
}

/// Runs `holdfast ARGS` to its end; whether it succeeded.
fn finishes(home: &std::path::Path, args: &[&str]) -> bool {
    command(home, args)
        .status()
        .expect("run holdfast")
        .success()
}

fn holdfast(fresh: &Fresh, home: &std::path::Path, args: &[&str]) -> Child {
    spawn_on(&fresh.url, home, args)
}

/// Waits `ms`, then kills `child` with SIGKILL (if it is still running).
async fn kill_after(mut child: Child, ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    let _ = child.kill();
    let _ = child.wait();
}

async fn operations_like(store: &dyn Store, round: u64) -> usize {
    let dataset = store.dataset(&Scope::Every).await.unwrap();
    let prefix = format!("K{round}-");
    dataset
        .operations
        .iter()
        .filter(|o| o.id.as_str().starts_with(&prefix))
        .count()
}

async fn a_killed_ingest_commits_all_or_nothing_and_damages_nothing(kind: Kind) {
    let fresh = loaded(kind).await;
    let home = tempfile::tempdir().unwrap();
    for round in 0..KILLS {
        let path = big_file(home.path(), round);
        let child = holdfast(&fresh, home.path(), &["--as", "loader", "ingest", &path]);
        // Spread the kills over the run: early, mid-parse, mid-commit.
        kill_after(child, 40 + (round * 97) % 700).await;
        let store = fresh.reopen().await.unwrap();
        let committed = operations_like(store.as_ref(), round).await;
        assert!(
            committed == 0 || committed == PER_FILE,
            "round {round}: a half batch of {committed}"
        );
        assert!(
            matches!(store.verify().await.unwrap(), ChainStatus::Intact { .. }),
            "round {round}"
        );
    }
}

async fn a_killed_review_leaves_the_chain_and_the_operation_in_step(kind: Kind) {
    let fresh = loaded(kind).await;
    let home = tempfile::tempdir().unwrap();
    for round in 0..KILLS {
        let child = holdfast(
            &fresh,
            home.path(),
            &[
                "--as",
                "maya",
                "review",
                "F09",
                "comment",
                "--rationale",
                "looked at the provider console",
            ],
        );
        kill_after(child, (round * 37) % 400).await;
        let store = fresh.reopen().await.unwrap();
        assert!(
            matches!(store.verify().await.unwrap(), ChainStatus::Intact { .. }),
            "round {round}"
        );
    }
}

/// A store location nobody has opened: a new file or an empty database (kept
/// alive by the returned guard).
async fn untouched(kind: Kind, dir: &std::path::Path, n: u64) -> (String, Option<Database>) {
    match kind {
        Kind::Sqlite => {
            let path = dir.join(format!("target-{n}.db"));
            (format!("sqlite:{}", path.display()), None)
        }
        Kind::Postgres => {
            let database = Database::create().await;
            (database.url.clone(), Some(database))
        }
    }
}

/// The migration versions applied to the store at `url`, each with whether it
/// finished, read without opening it as a store (which would migrate it); none
/// for a file that does not exist or a store without the migrations table.
async fn applied(kind: Kind, url: &str) -> Vec<(i64, bool)> {
    const SQL: &str = "SELECT version, success FROM _sqlx_migrations ORDER BY version";
    match kind {
        Kind::Sqlite => {
            let path = url.trim_start_matches("sqlite:");
            if !std::path::Path::new(path).exists() {
                return Vec::new();
            }
            let mut conn = SqliteConnection::connect(url).await.unwrap();
            let rows = sqlx::query_as(SQL).fetch_all(&mut conn).await;
            conn.close().await.unwrap();
            rows.unwrap_or_default()
        }
        Kind::Postgres => {
            let mut conn = PgConnection::connect(url).await.unwrap();
            let rows = sqlx::query_as(SQL).fetch_all(&mut conn).await;
            conn.close().await.unwrap();
            rows.unwrap_or_default()
        }
    }
}

/// The versions of the migrations this build knows, in order.
fn known(kind: Kind) -> Vec<i64> {
    let folder = match kind {
        Kind::Sqlite => "sqlite",
        Kind::Postgres => "postgres",
    };
    let dir = format!("{}/migrations/{folder}", env!("CARGO_MANIFEST_DIR"));
    let mut versions: Vec<i64> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.split('_').next().unwrap().parse().unwrap()
        })
        .collect();
    versions.sort_unstable();
    versions
}

/// How long one uninterrupted run of `args` takes here: kills are spread over it.
fn duration_of(home: &std::path::Path, args: &[&str]) -> u64 {
    let started = std::time::Instant::now();
    assert!(finishes(home, args), "{args:?} runs to its end");
    u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// `db migrate` killed twice on each new store — the second time on a store the
/// first kill may have left at an older schema — then run to its end.
async fn a_killed_migration_leaves_whole_migrations_and_a_rerun_finishes(kind: Kind) {
    let home = tempfile::tempdir().unwrap();
    let known = known(kind);
    let (url, _guard) = untouched(kind, home.path(), 999).await;
    let whole = duration_of(home.path(), &["--database-url", &url, "db", "migrate"]);
    // Most of a run is starting up: the kills go after the time an up-to-date
    // store takes to open.
    let startup = duration_of(home.path(), &["--database-url", &url, "db", "migrate"]);
    let span = whole.saturating_sub(startup).max(KILLS);
    for round in 0..KILLS / 2 {
        let (url, _guard) = untouched(kind, home.path(), round).await;
        for kill in 0..2 {
            let child = spawn_on(&url, home.path(), &["db", "migrate"]);
            kill_after(child, startup + span * (round * 2 + kill) / KILLS).await;
            let done = applied(kind, &url).await;
            let versions: Vec<i64> = done.iter().map(|(v, _)| *v).collect();
            assert_eq!(
                versions,
                known[..versions.len()],
                "round {round}: only a prefix of the migrations, in order"
            );
            assert!(
                done.iter().all(|(_, ok)| *ok),
                "round {round}: no migration half applied: {done:?}"
            );
        }
        let args = ["--database-url", url.as_str()];
        assert!(finishes(
            home.path(),
            &[&args[..], &["db", "migrate"]].concat()
        ));
        let versions: Vec<i64> = applied(kind, &url).await.iter().map(|(v, _)| *v).collect();
        assert_eq!(versions, known, "round {round}: the rerun finished them");
        assert!(finishes(
            home.path(),
            &[&args[..], &["audit", "verify"]].concat()
        ));
    }
}

/// `db copy` from a busy SQLite store killed at points spread over a whole copy:
/// the target is left empty (then a rerun copies it) or complete, and verifies.
async fn a_killed_copy_leaves_its_target_empty_or_complete(kind: Kind) {
    let source = loaded(Kind::Sqlite).await;
    let home = tempfile::tempdir().unwrap();
    let report = source
        .store
        .ingest(
            support::review::records(&std::fs::read_to_string(big_file(home.path(), 0)).unwrap()),
            holdfast::store::IngestMode::Strict,
            "loader",
            support::review::now(),
        )
        .await
        .unwrap();
    assert!(report.rejected.is_empty());
    let (head, operations) = (
        source.store.head_seq().await.unwrap(),
        source
            .store
            .dataset(&Scope::Every)
            .await
            .unwrap()
            .operations
            .len(),
    );
    let copy_to = |to: &str| ["db", "copy", "--from", &source.url, "--to", to].map(str::to_owned);
    let (scratch, _guard) = untouched(kind, home.path(), 999).await;
    let args = copy_to(&scratch);
    let whole = duration_of(home.path(), &args.each_ref().map(String::as_str));
    for round in 0..KILLS {
        let (url, _guard) = untouched(kind, home.path(), round).await;
        let args = copy_to(&url);
        let args = args.each_ref().map(String::as_str);
        let child = command(home.path(), &args).spawn().unwrap();
        kill_after(child, whole * (round + 1) / (KILLS + 1)).await;
        let target = match kind {
            Kind::Sqlite => Arc::new(
                SqliteStore::open(std::path::Path::new(url.trim_start_matches("sqlite:")))
                    .await
                    .unwrap(),
            ) as Arc<dyn Store>,
            Kind::Postgres => Arc::new(PgStore::connect(&url).await.unwrap()),
        };
        let copied = (
            target.head_seq().await.unwrap(),
            target
                .dataset(&Scope::Every)
                .await
                .unwrap()
                .operations
                .len(),
        );
        if copied == (0, 0) {
            assert!(
                finishes(home.path(), &args),
                "round {round}: a rerun copies"
            );
        } else {
            assert_eq!(copied, (head, operations), "round {round}: a half copy");
        }
        let verify = ["--database-url", url.as_str(), "audit", "verify"];
        assert!(finishes(home.path(), &verify), "round {round}");
    }
}

holdfast_on_both_backends!(
    a_killed_ingest_commits_all_or_nothing_and_damages_nothing,
    a_killed_review_leaves_the_chain_and_the_operation_in_step,
    a_killed_migration_leaves_whole_migrations_and_a_rerun_finishes,
    a_killed_copy_leaves_its_target_empty_or_complete,
);
