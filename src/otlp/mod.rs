//! OpenTelemetry intake (DESIGN §10.1): traces of agents instrumented with the
//! GenAI and HTTP client semantic conventions become operations and attempts,
//! through the same ingest as wire records — roles at ingest, the one decision
//! judge, redaction, chunked commits. [`span`] reads OTLP messages (the
//! `opentelemetry-proto` types), [`map`] turns spans into wire records without
//! touching the store, [`read`] takes OTLP/JSON files apart, and [`door`] runs a
//! set of requests through the store, keeping the spans that wait for their tool
//! span.

pub mod door;
pub mod file;
pub mod map;
pub mod read;
pub mod receiver;
pub mod settings;
pub mod span;

pub use settings::{OtlpSettings, ToolSettings};

/// What a redacted part of a URL reads as.
const REDACTED: &str = "REDACTED";

/// `url.full` with its userinfo and every query value replaced by `REDACTED`
/// (query names stay: they say what was asked, not with what). Text that is not
/// a URL is kept only up to its query.
pub fn redact_url(full: &str) -> String {
    match url::Url::parse(full) {
        Ok(mut url) => {
            if !url.username().is_empty() {
                let _ = url.set_username(REDACTED);
            }
            if url.password().is_some() {
                let _ = url.set_password(Some(REDACTED));
            }
            if url.query().is_some() {
                let names: Vec<String> = url.query_pairs().map(|(k, _)| k.into_owned()).collect();
                url.query_pairs_mut()
                    .clear()
                    .extend_pairs(names.iter().map(|k| (k.as_str(), REDACTED)));
            }
            url.set_fragment(None);
            url.to_string()
        }
        Err(_) => full.split(['?', '#']).next().unwrap_or_default().to_owned(),
    }
}

#[cfg(test)]
mod tests;
