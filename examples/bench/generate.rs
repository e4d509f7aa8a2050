//! The seeded store: wire-format v1 lines with the shape a fleet of agents leaves
//! (about 5 % held, about 2.3 attempts per operation, items for every partial
//! operation, observations on some), committed through `Store::ingest` in batches
//! so the rows are exactly what `holdfast ingest` would write.

use std::time::Instant;

use chrono::{DateTime, Duration, Utc};
use holdfast::core::ids::Sha256;
use holdfast::store::{IngestMode, Store};
use holdfast::wire::Numbered;
use holdfast::wire::parse_line;

/// Operations committed per `Store::ingest` call.
const BATCH: u64 = 10_000;

const RISKS: [&str; 4] = ["low", "medium", "high", "critical"];
const MODES: [&str; 6] = [
    "timeout_unknown",
    "rate_limited",
    "transient_error",
    "partial_write",
    "validation_failed",
    "duplicate_replay",
];
const LAYERS: [&str; 3] = ["sdk", "gateway", "orchestrator"];

/// splitmix64: a small, seeded, reproducible stream.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn instant(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The wire lines of operation `n` (its contract is written once, first).
fn operation_lines(n: u64, rng: &mut Rng, out: &mut Vec<String>) {
    let Some(base) = DateTime::from_timestamp(1_788_000_000, 0) else {
        return;
    };
    let id = format!("B{n:07}");
    let payload = Sha256::of(id.as_bytes());
    let created = base + Duration::seconds(i64::try_from(n * 5).unwrap_or(0));
    let at = |s: i64| instant(created + Duration::seconds(s));
    let roll = rng.below(1000);
    let state = match roll {
        0..30 => "UNKNOWN",
        30..40 => "PARTIAL",
        40..50 => "BLOCKED",
        50..900 => "SUCCEEDED",
        _ => "FAILED",
    };
    let risk = RISKS[usize::try_from(rng.below(4)).unwrap_or(0)];
    let mode = MODES[usize::try_from(rng.below(6)).unwrap_or(0)];
    let next_obs = at(600 + i64::try_from(rng.below(120 * 86_400)).unwrap_or(0));
    out.push(format!(
        r#"{{"type":"operation","id":"{id}","tenant":"tenant-{}","actor":"agent:{}","tool":"S01","action":"record.write","target":"record:{n}.invalid","payload_hash":"{payload}","risk":"{risk}","idempotency_key":"k-{id}","business_key":"b-{n}","correlation_id":"c-{n}","owner":"team-{}","max_attempts":3,"deadline":"{}","failure_mode":"{mode}","state":"{state}","next_observation_at":"{next_obs}","created_at":"{}"}}"#,
        n % 7,
        n % 40,
        n % 5,
        at(3600),
        at(0)
    ));
    // 1 (30 %), 2 (25 %), 3 (30 %) or 4 (15 %) attempts: 2.3 on average; the
    // fourth is a status query, never a fourth request (max_attempts is 3).
    let attempts = match rng.below(100) {
        0..30 => 1,
        30..55 => 2,
        55..85 => 3,
        _ => 4,
    };
    let mut evidence = Vec::new();
    for seq in 1..=attempts {
        let aid = format!("A-{id}-{seq}");
        let start = i64::from(seq) * 40;
        let layer = LAYERS[usize::try_from(rng.below(3)).unwrap_or(0)];
        let last_request = seq == attempts.min(3);
        let (kind, phase, outcome, status, error) = if seq == 4 {
            ("status_query", "response_received", "ok", "200", "null")
        } else if last_request && state == "SUCCEEDED" {
            ("request", "response_received", "ok", "200", "null")
        } else if last_request && state == "FAILED" {
            (
                "request",
                "response_received",
                "http_error",
                "422",
                r#""validation_failed""#,
            )
        } else if rng.below(4) == 0 {
            (
                "request",
                "response_received",
                "http_error",
                "429",
                r#""rate_limited""#,
            )
        } else {
            (
                "request",
                "request_sent",
                "timeout",
                "null",
                r#""read_timeout""#,
            )
        };
        out.push(format!(
            r#"{{"type":"attempt","id":"{aid}","operation":"{id}","seq":{seq},"kind":"{kind}","layer":"{layer}","started_at":"{}","ended_at":"{}","phase":"{phase}","outcome":"{outcome}","http_status":{status},"error_type":{error},"provider_request_id":"prq-{n}-{seq}","request_hash":"{payload}","resend_count":0,"trace_id":"tr-{n}"}}"#,
            at(start),
            at(start + 30)
        ));
        evidence.push(format!("\"{aid}\""));
    }
    if state == "PARTIAL" {
        for (index, item) in ["succeeded", "failed", "not_attempted"].iter().enumerate() {
            let authoritative = if *item == "succeeded" {
                format!("\"inv-{id}-{index}\"")
            } else {
                "null".to_owned()
            };
            out.push(format!(
                r#"{{"type":"item","operation":"{id}","index":{},"label":"line {}","state":"{item}","authoritative_id":{authoritative}}}"#,
                index + 1,
                index + 1
            ));
        }
    }
    if (state == "UNKNOWN" && rng.below(2) == 0) || (state == "SUCCEEDED" && rng.below(10) == 0) {
        let found = state == "SUCCEEDED";
        let matches = if found {
            r#","matches":{"target":true,"payload_hash":true,"owner":true,"version":true},"effect_count":1"#
        } else {
            ""
        };
        out.push(format!(
            r#"{{"type":"observation","id":"O-{id}","operation":"{id}","observed_at":"{}","source":"provider_status","found":{found}{matches}}}"#,
            at(400)
        ));
        evidence.push(format!("\"O-{id}\""));
    }
    out.push(format!(
        r#"{{"type":"transition","operation":"{id}","from":"SENT","to":"{state}","by":"svc:orchestrator","role":"system","at":"{}","reason":"generated","evidence":[{}]}}"#,
        at(i64::from(attempts) * 40 + 30),
        evidence.join(",")
    ));
}

const CONTRACT: &str = r#"{"type":"contract","tool":"S01","version":"IC01","action":"record.write","method":"POST","idempotency":{"supported":true,"scope":"tenant","retention_hours":24},"status_lookup":true,"retryable":["http_503"],"compensation":"record.delete","owner":"integrations","max_attempts":3,"budget_seconds":600}"#;

/// Parses generated lines into numbered records; a generator bug is an error.
fn parse(lines: &[String], first_line: usize) -> anyhow::Result<Vec<Numbered>> {
    lines
        .iter()
        .enumerate()
        .map(|(i, text)| {
            parse_line(text.as_bytes(), first_line + i)
                .map(|record| Numbered {
                    line: first_line + i,
                    record,
                    line_sha256: None,
                })
                .map_err(|e| anyhow::anyhow!("generated line {}: {e:?}", first_line + i))
        })
        .collect()
}

/// Fills `store` with `ops` operations from `seed`, in batches; returns the
/// records committed.
pub async fn fill(store: &dyn Store, ops: u64, seed: u64) -> anyhow::Result<u64> {
    let started = Instant::now();
    let mut rng = Rng(seed);
    let mut records = 0u64;
    let mut line = 1usize;
    let mut first = 0u64;
    while first < ops {
        let last = (first + BATCH).min(ops);
        let mut lines = Vec::new();
        if first == 0 {
            lines.push(CONTRACT.to_owned());
        }
        for n in first..last {
            operation_lines(n, &mut rng, &mut lines);
        }
        let batch = parse(&lines, line)?;
        line += lines.len();
        records += u64::try_from(batch.len()).unwrap_or(0);
        let report = store
            .ingest(batch, IngestMode::Strict, "bench", Utc::now())
            .await?;
        if let Some(bad) = report.rejected.first() {
            anyhow::bail!("the generated store was refused: {bad:?}");
        }
        first = last;
        eprintln!(
            "generated {first}/{ops} operations, {records} records, {:.0} s",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(records)
}
