//! Claims per second of the work protocol with C claimers at once, each with its
//! own store handle (its own pool and connections), on a SQLite file and, when a
//! URL is given, on PostgreSQL. N approved operations are loaded first; every
//! claimer then claims one piece at a time (each claim one audited transaction)
//! until none is left. The count handed out is checked: each piece exactly once.
//!
//! ```text
//! cargo run --release --example work_bench -- 2000 16
//! cargo run --release --example work_bench -- 2000 16 postgres://postgres@127.0.0.1:5432/bench
//! ```
//! The PostgreSQL database must exist and be empty (it is migrated here).
//!
//! Measured 2026-12-01 on the shared 2-core build machine under a load average
//! of about 21, with a debug build (`target/debug/examples/work_bench 2000 16
//! postgres://…`; the release build did not finish in time): SQLite 57 claims/s,
//! PostgreSQL 7 claims/s, every piece handed out once. Each claim is one audited
//! transaction taken in turn on the chain head, and claimed work stays APPROVED
//! until completed, so a claim walks past the pieces already leased.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use chrono::Duration;
use holdfast::core::clock::parse_instant;
use holdfast::core::rules::Actor;
use holdfast::store::{IngestMode, Location, Session, Store};
use holdfast::wire::parse_stream;
use holdfast::work;

const CONTRACT: &str = r#"{"type":"contract","tool":"T03","version":"IC07","action":"ticket.create","method":"POST","idempotency":{"supported":true,"scope":"account","retention_hours":24},"status_lookup":true,"retryable":["connection_reset","http_503","http_429"],"compensation":"ticket.delete","owner":"integrations","max_attempts":3,"budget_seconds":120}"#;

fn fixture(n: usize) -> String {
    let mut lines = vec![CONTRACT.to_owned()];
    for i in 0..n {
        lines.push(format!(
            r#"{{"type":"operation","id":"W{i:06}","tenant":"pinehaven","actor":"svc:bench","tool":"T03","action":"ticket.create","target":"ticket-queue:{i}","payload_hash":"sha256:2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc6","risk":"low","owner":"integrations","state":"APPROVED","depends_on":[],"created_at":"2026-09-05T10:00:30Z"}}"#
        ));
    }
    lines.join("\n")
}

async fn bench(location: &Location, n: usize, claimers: usize) -> anyhow::Result<()> {
    let now = parse_instant("2026-09-05T10:03:00Z")?;
    let store = location.open().await?;
    let parsed = parse_stream(fixture(n).as_bytes(), &mut |_| {})?;
    let report = store
        .ingest(parsed.records, IngestMode::Strict, "bench", now)
        .await?;
    anyhow::ensure!(report.rejected.is_empty(), "fixture refused");
    let mut handles: Vec<Arc<dyn Store>> = Vec::new();
    for _ in 0..claimers {
        handles.push(location.open().await?);
    }
    let barrier = Arc::new(tokio::sync::Barrier::new(claimers));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (c, store) in handles.into_iter().enumerate() {
        let barrier = Arc::clone(&barrier);
        tasks.push(tokio::spawn(async move {
            let session = Session::new(store, Actor::local("svc:bench", None));
            barrier.wait().await;
            let mut mine = Vec::new();
            loop {
                let got =
                    work::claim(&session, &format!("w{c}"), Duration::seconds(300), 1, now).await?;
                if got.is_empty() {
                    return Ok::<_, anyhow::Error>(mine);
                }
                mine.extend(got.into_iter().map(|l| l.operation.to_string()));
            }
        }));
    }
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await??);
    }
    let elapsed = started.elapsed();
    let distinct: BTreeSet<&String> = all.iter().collect();
    anyhow::ensure!(
        all.len() == n && distinct.len() == n,
        "handed out {} ({} distinct) of {n}",
        all.len(),
        distinct.len()
    );
    println!(
        "{location}: {n} claims by {claimers} claimers in {:.2} s = {:.0} claims/s (each piece once)",
        elapsed.as_secs_f64(),
        n as f64 / elapsed.as_secs_f64()
    );
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(2000), |a| a.parse())?;
    let claimers: usize = args.next().map_or(Ok(16), |a| a.parse())?;
    let dir = tempfile::tempdir()?;
    bench(
        &Location::Sqlite(dir.path().join("work-bench.db")),
        n,
        claimers,
    )
    .await?;
    if let Some(url) = args.next() {
        bench(&Location::parse(&url)?, n, claimers).await?;
    }
    Ok(())
}
