//! `holdfast observe` as operating-system processes: two of them started at once
//! on one PostgreSQL store with fifty due holds ask the provider about each hold
//! once (the slot claims in the store decide, not anything shared in memory); and
//! `observe --watch` leaves a tool below `native` alone while a one-shot
//! `observe`, which a person starts, looks its holds up.

use crate::support;

use std::process::{Command, Stdio};

use holdfast::core::model::AttemptKind;
use holdfast::store::Scope;
use support::provider::{Provider, TOKEN, due_holds};
use support::review::id;
use support::stores::{self, Fresh, Kind};

/// The clock every observer process runs at: past every hold's next observation.
const AT: &str = "2026-09-05T10:10:00Z";

/// `holdfast observe ARGS` on `fresh`'s store, with the provider's token in its
/// environment.
fn observe(fresh: &Fresh, dir: &std::path::Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_holdfast"));
    command
        .env_remove("HOLDFAST_DB")
        .env_remove("HOLDFAST_NOW")
        .env_remove("HOLDFAST_AS")
        .env_remove("HOLDFAST_DATABASE_URL")
        .env("HOLDFAST_DATA_DIR", dir)
        .env("HOLDFAST_CONFIG", dir.join("no-config.toml"))
        .env("HOLDFAST_TEST_STATUS_TOKEN", TOKEN)
        .env("NO_COLOR", "1")
        .arg("--database-url")
        .arg(&fresh.url)
        .arg("--now")
        .arg(AT)
        .arg("observe")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

async fn status_queries(fresh: &Fresh, op: &str) -> usize {
    fresh
        .store
        .detail(&Scope::Every, &id(op))
        .await
        .unwrap()
        .attempts
        .iter()
        .filter(|a| a.kind == AttemptKind::StatusQuery)
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_observe_processes_on_one_postgres_store_look_each_hold_up_once() {
    if stores::postgres_skipped().await {
        return;
    }
    let p = Provider::start("").await;
    let fresh = due_holds(Kind::Postgres, &p, 50).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("no-config.toml"), p.binding_toml()).unwrap();
    let a = observe(&fresh, dir.path(), &["--concurrency", "8"])
        .spawn()
        .unwrap();
    let b = observe(&fresh, dir.path(), &["--concurrency", "8"])
        .spawn()
        .unwrap();
    let (a, b) = tokio::task::spawn_blocking(move || {
        (a.wait_with_output().unwrap(), b.wait_with_output().unwrap())
    })
    .await
    .unwrap();
    let mut looked_up = 0;
    for out in [&a, &b] {
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        looked_up += stdout
            .lines()
            .filter(|l| l.contains("allows now: resolve --to SUCCEEDED"))
            .count();
    }
    assert_eq!(looked_up, 50, "each hold looked up by one of the two");
    for i in 0..50 {
        assert_eq!(
            p.asked(&format!("match:{i}")),
            1,
            "D{i:03}: the server saw one lookup"
        );
        assert_eq!(
            status_queries(&fresh, &format!("D{i:03}")).await,
            1,
            "D{i:03}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_watch_skips_a_manual_tool_and_a_one_shot_observe_does_not() {
    let p = Provider::start("").await;
    let fresh = due_holds(Kind::Sqlite, &p, 3).await;
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("no-config.toml"), p.binding_toml()).unwrap();
    let watched = observe(&fresh, dir.path(), &["--watch", "--duration", "1"])
        .output()
        .unwrap();
    assert!(watched.status.success(), "{watched:?}");
    for i in 0..3 {
        assert_eq!(p.asked(&format!("match:{i}")), 0, "T06 is manual");
        assert_eq!(status_queries(&fresh, &format!("D{i:03}")).await, 0);
    }
    let once = observe(&fresh, dir.path(), &[]).output().unwrap();
    assert!(once.status.success(), "{once:?}");
    for i in 0..3 {
        assert_eq!(p.asked(&format!("match:{i}")), 1, "a person ran it");
    }
}
