//! `kill -9` in the middle of an ingest and of a review, on both backends, tens
//! of times (sized for CI): afterwards the chain verifies — which now also holds
//! every operation's state and version to its rows — and each killed ingest
//! committed all of its file or none of it.

mod support;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use holdfast::core::audit::ChainStatus;
use holdfast::store::Store;
use support::review::{SMALL, loaded};
use support::stores::{Fresh, Kind};

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

fn holdfast(fresh: &Fresh, home: &std::path::Path, args: &[&str]) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_holdfast"));
    command
        .env("HOLDFAST_DATA_DIR", home.join("data"))
        .env("HOLDFAST_CONFIG", home.join("no-config.toml"))
        .env("HOLDFAST_NOW", "2026-09-05T10:03:00Z")
        .env_remove("HOLDFAST_DATABASE_URL")
        .env_remove("HOLDFAST_DB")
        .env_remove("HOLDFAST_AS")
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    match fresh.kind {
        Kind::Sqlite => command
            .arg("--db")
            .arg(fresh.url.trim_start_matches("sqlite:")),
        Kind::Postgres => command.arg("--database-url").arg(&fresh.url),
    };
    command.args(args).spawn().expect("run holdfast")
}

/// Waits `ms`, then kills `child` with SIGKILL (if it is still running).
async fn kill_after(mut child: Child, ms: u64) {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    let _ = child.kill();
    let _ = child.wait();
}

async fn operations_like(store: &dyn Store, round: u64) -> usize {
    let dataset = store.dataset().await.unwrap();
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

holdfast_on_both_backends!(
    a_killed_ingest_commits_all_or_nothing_and_damages_nothing,
    a_killed_review_leaves_the_chain_and_the_operation_in_step,
);
