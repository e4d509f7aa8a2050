//! Operations per second the reference executor sustains against the simulated
//! provider on this machine: N plain writes (no faults), each a real HTTP exchange
//! on loopback, first without a store, then with every run's records ingested into
//! a SQLite store, with C executions in flight at once.
//!
//! ```text
//! cargo run --release --example executor_bench -- 2000 8
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use holdfast::core::ids::{OperationId, Sha256};
use holdfast::core::model::{Approval, Layer, Operation, Risk, State};
use holdfast::drill;
use holdfast::executor::transport::{LiteralResolver, Transport};
use holdfast::executor::{Context, Credential, ExecClock, Executor, Job, Settings};
use holdfast::sim::{Provider, parse_cases, serve};
use holdfast::store::Store;
use holdfast::store::sqlite::SqliteStore;
use holdfast::wire::Record;

const CASE: &str = r#"{"type":"case","id":"BENCH","mode":"transient_error","name":"plain writes","contract":{"tool":"BENCH","version":"IC07","action":"ticket.create","method":"POST","idempotency":{"supported":true,"scope":"account","retention_hours":24},"status_lookup":false,"retryable":["http_503"],"compensation":null,"owner":"integrations","max_attempts":3,"budget_seconds":900},"operation":{"items":0},"provider":[],"expect":{"state":"SUCCEEDED","requests":0,"status_queries":0,"effects":0}}"#;

fn job(n: usize, base: &str, case: &holdfast::sim::Case, clock: &ExecClock) -> Job {
    let now = clock.now();
    let payload = serde_json::json!({"n": n});
    let hash = Sha256::of(payload.to_string().as_bytes());
    let id = OperationId::parse(&format!("B{n}")).expect("id");
    Job {
        operation: Operation {
            id,
            tenant: "pinehaven".into(),
            actor: "svc:bench".into(),
            tool: "BENCH".into(),
            action: "ticket.create".into(),
            target: format!("ticket:{n}"),
            payload_hash: hash.clone(),
            intent_hash: None,
            risk: Risk::Low,
            approval: Some(Approval {
                by: "rev:bench".into(),
                policy: "RP03".into(),
                at: Some(now),
                payload_hash: Some(hash),
                expires_at: Some(now + chrono::Duration::hours(1)),
            }),
            idempotency_key: Some(format!("k-{n}")),
            business_key: Some(format!("b-{n}")),
            correlation_id: None,
            owner: "integrations".into(),
            max_attempts: None,
            deadline: None,
            failure_mode: None,
            state: State::Planned,
            next_observation_at: None,
            depends_on: vec![],
            parent: None,
            relation: None,
            created_at: now,
        },
        contract: case.contract.clone(),
        lookup: None,
        endpoint: base.to_owned(),
        payload,
        items: vec![],
        required: vec![],
        version: 1,
        credential: Credential {
            identity: "I05".into(),
            generation: 1,
        },
        layer: Layer::Orchestrator,
        inverse_of: None,
        context: Context::default(),
    }
}

async fn round(
    label: &str,
    count: usize,
    concurrency: usize,
    store: Option<&dyn Store>,
) -> anyhow::Result<()> {
    let case = parse_cases(CASE)
        .map_err(|e| anyhow::anyhow!("{e:?}"))?
        .remove(0);
    let provider = Provider::new();
    let clock = ExecClock::simulated(drill::epoch());
    provider.add_case(case.clone(), clock.clone());
    let running = serve(provider.clone(), SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let base = running.case_url("BENCH");
    let transport = Transport::new(Arc::new(LiteralResolver), std::time::Duration::from_secs(2));
    let executor = Executor::new(transport, clock.clone(), Settings::default());
    if let Some(store) = store {
        drill::record(
            store,
            "BENCH",
            &[Record::Contract(case.contract.clone())],
            clock.now(),
        )
        .await?;
    }
    let started = Instant::now();
    let mut next = 0usize;
    while next < count {
        let batch: Vec<Job> = (next..(next + concurrency).min(count))
            .map(|n| job(n, &base, &case, &clock))
            .collect();
        next += batch.len();
        let runs = futures_util::future::join_all(batch.iter().map(|j| executor.execute(j))).await;
        if let Some(store) = store {
            let records: Vec<Record> = runs.iter().flat_map(|r| r.records()).collect();
            drill::record(store, "BENCH", &records, clock.now()).await?;
        }
    }
    let elapsed = started.elapsed();
    let counters = provider.counters("BENCH").unwrap_or_default();
    running.stop().await;
    println!(
        "{label:<28} {count} operations, {concurrency} in flight: {:.2} s, {:.0} ops/s (provider saw {} requests, {} effects)",
        elapsed.as_secs_f64(),
        count as f64 / elapsed.as_secs_f64(),
        counters.requests,
        counters.effects
    );
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let count: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(2000);
    let concurrency: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(8);
    round("executor only", count, 1, None).await?;
    round("executor only", count, concurrency, None).await?;
    let dir = tempfile::tempdir()?;
    let store = SqliteStore::open(&dir.path().join("bench.db")).await?;
    round("executor + SQLite store", count, concurrency, Some(&store)).await?;
    Ok(())
}
