//! Measures how many status lookups per second the observer sustains (what
//! `observe --watch` runs round after round) against a local provider on
//! 127.0.0.1, with N due holds in a fresh store, and the process's peak memory.
//!
//! ```text
//! cargo run --release --example lookup_bench -- sqlite:/tmp/lookups.db 1000 4
//! cargo run --release --example lookup_bench -- postgres://postgres@127.0.0.1/bench 1000 4
//! ```
//! The store must be new (or empty): the holds are ingested first.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::routing::get;
use holdfast::core::audit::AuditDraft;
use holdfast::core::autonomy::{AUTONOMY_LEDGER, LevelChange, SET_ACTION, ToolLevel};
use holdfast::core::clock::{Clock, parse_instant};
use holdfast::core::ids::ledger_id;
use holdfast::core::ladder::{Capability, Level};
use holdfast::core::model::Role;
use holdfast::core::rules::{Actor, Rationale};
use holdfast::lookup::{
    EnvSecrets, Looker, LookupSettings, ObserveOptions, Observer, RateLimiter, SessionObserver,
};
use holdfast::store::{IngestMode, Location, Session};
use holdfast::wire::parse_stream;

const HASH: &str = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

fn packet(base: &str, n: usize) -> String {
    let mut out = format!(
        r#"{{"type":"contract","tool":"B01","version":"IC01","action":"record.write","method":"POST","idempotency":{{"supported":true}},"status_lookup":{{"method":"GET","url":"{base}/r?business_key={{business_key}}","timeout_ms":2000,"fields":{{"target":"/target","payload_hash":"/payload_hash","tenant":"/tenant","effect_count":"/count"}}}},"owner":"integrations","max_attempts":3,"budget_seconds":86400}}"#
    );
    out.push('\n');
    for i in 0..n {
        out.push_str(&format!(
            r#"{{"type":"operation","id":"B{i:06}","tenant":"pinehaven","actor":"svc:agent","tool":"B01","action":"record.write","target":"queue:7","payload_hash":"{HASH}","risk":"low","business_key":"b-{i}","owner":"integrations","deadline":"2026-09-05T11:00:00Z","failure_mode":"timeout_unknown","state":"UNKNOWN","next_observation_at":"2026-09-05T10:02:00Z","created_at":"2026-09-05T10:00:00Z"}}
{{"type":"attempt","id":"B{i:06}-A1","operation":"B{i:06}","seq":1,"kind":"request","started_at":"2026-09-05T10:00:01Z","ended_at":"2026-09-05T10:00:31Z","phase":"request_sent","outcome":"timeout"}}
{{"type":"transition","operation":"B{i:06}","from":"APPROVED","to":"SENT","by":"svc:orchestrator","at":"2026-09-05T10:00:01Z"}}
{{"type":"transition","operation":"B{i:06}","from":"SENT","to":"UNKNOWN","by":"svc:orchestrator","at":"2026-09-05T10:00:31Z"}}
"#
        ));
    }
    out
}

/// The process's peak resident memory, from /proc (Linux).
fn peak_memory() -> String {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l.trim_start_matches("VmHWM:").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let url = args
        .get(1)
        .map_or("sqlite:/tmp/lookup_bench.db", String::as_str);
    let n: usize = args.get(2).map_or(Ok(1000), |a| a.parse())?;
    let concurrency: usize = args.get(3).map_or(Ok(4), |a| a.parse())?;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let base = format!("http://{}", listener.local_addr()?);
    let body =
        format!(r#"{{"target":"queue:7","payload_hash":"{HASH}","tenant":"pinehaven","count":1}}"#);
    let app = Router::new().route("/r", get(move || async move { body.clone() }));
    tokio::spawn(async move { axum::serve(listener, app).await });

    let now = parse_instant("2026-09-05T10:10:00Z")?;
    let store = Location::parse(url)?.open().await?;
    let parsed = parse_stream(packet(&base, n).as_bytes(), &mut |_| {})?;
    store
        .ingest(parsed.records, IngestMode::Strict, "bench", now)
        .await?;
    // `observe --watch` looks up only tools at `native` or above. The bench puts
    // B01 there through the store as a fixture (the gates of a raise are tested
    // elsewhere), so the rounds below ask exactly what `--watch` asks.
    let level = Level::Native;
    store
        .set_autonomy(LevelChange {
            from: Level::Manual,
            to: ToolLevel {
                tool: "B01".into(),
                level,
                set_by: "bench".into(),
                set_at: now,
                rationale: "benchmark fixture".into(),
            },
            consequences: Vec::new(),
            audit: AuditDraft {
                operation: ledger_id(AUTONOMY_LEDGER),
                action: SET_ACTION.into(),
                from: None,
                to: None,
                by: "bench".into(),
                role: Role::Local,
                policy: None,
                on_behalf_of: None,
                rationale: Some("benchmark fixture".into()),
                evidence: vec![
                    "tool:B01".into(),
                    "from:manual".into(),
                    "level:native".into(),
                ],
                at: now,
            },
        })
        .await?;
    // The operator's binding of the local provider; pacing as fast as it goes.
    let mut settings = LookupSettings {
        rate_per_second: Some(1e9),
        ..LookupSettings::default()
    };
    settings.bindings.insert(
        "bench".into(),
        holdfast::lookup::Binding {
            origin: base.clone(),
            env: None,
            header: None,
            prefix: None,
            allow_private: true,
            not_found: None,
        },
    );
    let observer = Observer {
        store: Arc::new(SessionObserver {
            session: Session::new(store, Actor::local("svc:observer", None)),
            rationale: Rationale::parse("scheduled lookup, benchmark")
                .map_err(anyhow::Error::msg)?,
            clock: Clock::Frozen(now),
            at_least: Some(Capability::ScheduledLookup.needs()),
        }),
        looker: Looker::new(settings.client())?,
        limiter: RateLimiter::new(settings.clone()),
        secrets: Arc::new(EnvSecrets),
        clock: Clock::Frozen(now),
        options: ObserveOptions {
            concurrency,
            ..ObserveOptions::default()
        },
    };
    let started = Instant::now();
    let mut total = 0;
    loop {
        let acted = observer.round(&|_| {}).await?;
        if acted == 0 {
            break;
        }
        total += acted;
    }
    let elapsed = started.elapsed();
    println!(
        "{url}: {total} lookups of {n} due holds in {:.2} s = {:.0} lookups/s (concurrency {concurrency}); peak memory {}",
        elapsed.as_secs_f64(),
        total as f64 / elapsed.as_secs_f64(),
        peak_memory()
    );
    Ok(())
}
