//! Writes a large synthetic wire-format v1 file for benchmarks: N operations across
//! every state group, tenant, risk and failure mode, each with a request attempt and
//! a transition history, so that the queue, its counts and search have real work.
//!
//! `cargo run --release --example synth -- COUNT [FIRST] > part.jsonl` writes
//! operations FIRST..FIRST+COUNT, so a large store can be built from several files.

use std::io::{self, BufWriter, Write};

use holdfast::core::ids::Sha256;

const MODES: [&str; 8] = [
    "auth_denied",
    "validation_failed",
    "timeout_unknown",
    "rate_limited",
    "transient_error",
    "partial_write",
    "duplicate_replay",
    "unsafe_output",
];
const RISKS: [&str; 4] = ["low", "medium", "high", "critical"];

fn main() -> io::Result<()> {
    let count: u64 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let first: u64 = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let out = io::stdout();
    let mut out = BufWriter::new(out.lock());
    writeln!(
        out,
        r#"{{"type":"contract","tool":"S01","version":"IC01","action":"record.write","method":"POST","idempotency":{{"supported":true,"scope":"tenant","retention_hours":24}},"status_lookup":true,"retryable":["http_503"],"compensation":"record.delete","owner":"integrations","max_attempts":3,"budget_seconds":600}}"#
    )?;
    let base = 1_788_000_000_i64;
    for n in first..first + count {
        let id = format!("S{n:07}");
        let payload = Sha256::of(id.as_bytes());
        let created = base + (n as i64) * 3;
        let at = |s: i64| {
            chrono::DateTime::from_timestamp(created + s, 0)
                .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
                .unwrap_or_default()
        };
        let (state, end) = match n % 10 {
            0..=3 => ("UNKNOWN", "UNKNOWN"),
            4 => ("PARTIAL", "PARTIAL"),
            5 => ("BLOCKED", "BLOCKED"),
            6 | 7 => ("SUCCEEDED", "SUCCEEDED"),
            _ => ("FAILED", "FAILED"),
        };
        let mode = MODES[(n % 8) as usize];
        let risk = RISKS[(n / 3 % 4) as usize];
        writeln!(
            out,
            r#"{{"type":"operation","id":"{id}","tenant":"tenant-{}","actor":"svc:synth","tool":"S01","action":"record.write","target":"record:{n}.invalid","payload_hash":"{payload}","risk":"{risk}","idempotency_key":"k-{id}","business_key":"b-{n}","correlation_id":"c-{n}","owner":"team-{}","max_attempts":3,"deadline":"{}","failure_mode":"{mode}","state":"{state}","next_observation_at":"{}","created_at":"{}"}}"#,
            n % 7,
            n % 5,
            at(600),
            at(120 + (n % 900) as i64),
            at(0)
        )?;
        writeln!(
            out,
            r#"{{"type":"attempt","id":"A-{id}","operation":"{id}","seq":1,"kind":"request","layer":"sdk","started_at":"{}","ended_at":"{}","phase":"request_sent","outcome":"timeout","provider_request_id":"prq-{n}","request_hash":"{payload}"}}"#,
            at(1),
            at(31)
        )?;
        writeln!(
            out,
            r#"{{"type":"transition","operation":"{id}","from":"SENT","to":"{end}","by":"svc:orchestrator","role":"system","at":"{}","reason":"synthetic","evidence":["A-{id}"]}}"#,
            at(31)
        )?;
    }
    out.flush()
}
