//! What one lookup did, as plain data: the attempt it always is, and the answer
//! when one came back. Built by the HTTP side, recorded by the review service.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::core::ids::Sha256;
use crate::core::model::{Matches, Outcome, Phase};

/// One lookup: always a `status_query` attempt; an observation only with an answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LookupCall {
    /// The URL asked, with query values that name secrets redacted.
    pub url: String,
    pub started_at: DateTime<Utc>,
    pub ended_at: DateTime<Utc>,
    pub phase: Phase,
    pub outcome: Outcome,
    pub http_status: Option<u16>,
    /// Why the call gave no usable answer (`timeout`, `invalid_json`, …).
    pub error_type: Option<String>,
    /// The instant a 429 or 503 asked the client to wait until.
    pub retry_after: Option<DateTime<Utc>>,
    /// sha256 of the raw body, when a body was read whole.
    pub response_hash: Option<Sha256>,
    /// A bounded excerpt of the body: untrusted data, sanitized on display.
    pub excerpt: Option<String>,
    pub answer: Option<LookupAnswer>,
    /// The operator's shortest wait before this hold is looked up again, in
    /// seconds (`[lookup] min_interval_seconds`): no schedule comes sooner.
    pub min_interval_seconds: u32,
}

impl LookupCall {
    /// How long the call took, in milliseconds.
    pub fn duration_ms(&self) -> i64 {
        (self.ended_at - self.started_at).num_milliseconds()
    }

    /// The result field by field, as (label, value) rows for a screen or a
    /// terminal; values from the provider are untrusted and must be sanitized
    /// where they are drawn.
    pub fn rows(&self) -> Vec<(&'static str, String)> {
        let status = self
            .http_status
            .map_or_else(|| "no answer".to_owned(), |s| format!("HTTP {s}"));
        let mut rows = vec![
            ("lookup", format!("GET {}", self.url)),
            (
                "answer",
                format!("{status}, {} ({})", self.outcome, self.phase),
            ),
            ("took", format!("{} ms", self.duration_ms())),
        ];
        if let Some(e) = &self.error_type {
            rows.push(("error", e.clone()));
        }
        let Some(a) = &self.answer else {
            return rows;
        };
        let compared = |m: Option<bool>, differs: &str| match m {
            Some(true) => "match".to_owned(),
            Some(false) => differs.to_owned(),
            None => "not compared".to_owned(),
        };
        rows.push(("found", if a.found { "yes" } else { "no" }.to_owned()));
        if a.found {
            rows.push(("target", compared(a.matches.target, "MISMATCH")));
            rows.push(("payload hash", compared(a.matches.payload_hash, "MISMATCH")));
            rows.push(("tenant", compared(a.matches.owner, "ANOTHER TENANT")));
        }
        rows.push((
            "effect count",
            a.effect_count
                .map_or_else(|| "-".to_owned(), |n| n.to_string()),
        ));
        rows.push((
            "provider request",
            a.provider_request_id
                .clone()
                .unwrap_or_else(|| "-".to_owned()),
        ));
        rows.push(("raw hash", a.raw_hash.to_string()));
        rows
    }
}

/// What the provider said about the operation, compared field by field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LookupAnswer {
    pub found: bool,
    /// `target` and `payload_hash` as named; `owner` holds the tenant comparison
    /// (the record's owning tenant); `version` is not compared by a lookup.
    pub matches: Matches,
    pub effect_count: Option<u32>,
    pub provider_request_id: Option<String>,
    /// The record's version as the provider gave it, for the note.
    pub version: Option<String>,
    /// sha256 of the raw body.
    pub raw_hash: Sha256,
}

/// What a lookup, or the end of lookups, brings to a reconcile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "lookup", rename_all = "snake_case")]
pub enum LookupInput {
    /// One lookup was made.
    Call(Box<LookupCall>),
    /// The deadline leaves no lookup: route the hold to its owner.
    Exhausted,
}
