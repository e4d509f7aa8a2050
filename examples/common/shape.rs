//! The one seeded shape of a synthetic store, shared by every benchmark: wire-format
//! v1 lines with the shape a fleet of agents leaves (about 5 % held, about 2.3
//! attempts per operation, items for every partial operation, observations on
//! some). Operation `n`'s lines depend only on `n` and the seed, so a large file
//! can be written in parts and every run writes the same records.

// Each benchmark uses the part it needs: the store bench the lines, the file
// writers the whole stream.
#![allow(dead_code)]

use std::io::{self, Write};

use chrono::{DateTime, Duration, Utc};
use holdfast::core::ids::Sha256;

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

/// The wire lines of operation `n` under `seed` (its contract is [`CONTRACT`]).
pub fn operation_lines(n: u64, seed: u64, out: &mut Vec<String>) {
    let mut rng = Rng(seed ^ n.wrapping_mul(0xD1B5_4A32_D192_ED03));
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

/// The one contract every generated operation names; written once, first.
pub const CONTRACT: &str = r#"{"type":"contract","tool":"S01","version":"IC01","action":"record.write","method":"POST","idempotency":{"supported":true,"scope":"tenant","retention_hours":24},"status_lookup":true,"retryable":["http_503"],"compensation":"record.delete","owner":"integrations","max_attempts":3,"budget_seconds":600}"#;

/// Writes the contract and operations `first..first + count` under `seed` to
/// `out`; returns the number of lines written.
pub fn write_lines(out: &mut impl Write, first: u64, count: u64, seed: u64) -> io::Result<u64> {
    writeln!(out, "{CONTRACT}")?;
    let mut written = 1;
    let mut lines = Vec::new();
    for n in first..first + count {
        lines.clear();
        operation_lines(n, seed, &mut lines);
        for line in &lines {
            writeln!(out, "{line}")?;
        }
        written += lines.len() as u64;
    }
    Ok(written)
}
