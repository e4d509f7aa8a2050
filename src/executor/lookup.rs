//! The executor's status lookup (DESIGN §9.1): build the URL from the operation's
//! stable identity, ask once, and turn the answer into a `status_query` attempt and,
//! when it proves something, an observation. Kept behind [`look_up`] so one shared
//! lookup implementation can take its place.

use chrono::{DateTime, Utc};
use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use super::transport::{Exchange, HttpRequest, Transport, Url};
use crate::core::ids::Sha256;
use crate::core::model::{AttemptKind, Matches, Operation, Outcome};

/// A contract's status lookup, as far as the executor needs it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LookupSpec {
    #[serde(default = "get")]
    pub method: String,
    pub url: String,
    #[serde(default)]
    pub auth: Option<Value>,
    #[serde(default = "default_timeout_ms")]
    pub timeout_ms: u64,
    #[serde(default)]
    pub lag_seconds: u64,
    #[serde(default = "default_not_found")]
    pub not_found_status: Vec<u16>,
    #[serde(default)]
    pub fields: BTreeMap<String, String>,
}

fn get() -> String {
    "GET".to_owned()
}

fn default_timeout_ms() -> u64 {
    2000
}

fn default_not_found() -> Vec<u16> {
    vec![404]
}

/// What one lookup showed.
#[derive(Debug, Clone, PartialEq)]
pub struct Looked {
    pub exchange: Exchange,
    /// The URL asked (no secrets: the drill's lookups carry none).
    pub url: String,
    pub answer: Answer,
}

/// The meaning of a lookup's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// No usable answer (timeout, refused, a status outside the contract).
    Nothing(String),
    /// Not found, but the lag window has not passed: proves nothing yet.
    NotYetVisible,
    /// Not found after the lag window: non-application.
    NotFound,
    Found {
        matches: Matches,
        effect_count: Option<u32>,
        provider_request_id: Option<String>,
        tenant: Option<String>,
    },
    /// An answer the fields cannot be read from.
    Unreadable(String),
}

/// Percent-encodes a placeholder value (RFC 3986 unreserved characters pass).
pub fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Fills the URL template from the operation; a placeholder the operation lacks
/// makes the lookup impossible.
pub fn build_url(
    template: &str,
    op: &Operation,
    provider_request_id: Option<&str>,
) -> Result<String, String> {
    let values: [(&str, Option<&str>); 6] = [
        ("provider_request_id", provider_request_id),
        ("idempotency_key", op.idempotency_key.as_deref()),
        ("business_key", op.business_key.as_deref()),
        ("target", Some(op.target.as_str())),
        ("operation", Some(op.id.as_str())),
        ("tenant", Some(op.tenant.as_str())),
    ];
    fill(template, &values)
        .map_err(|name| format!("the lookup needs {name}, which operation {} lacks", op.id))
}

/// Fills every `{name}` of `template` with its value in `values`, percent-encoded;
/// the name of the first placeholder without a value is the error. The simulated
/// provider fills a contract's template the same way to know what was asked.
pub fn fill<'a>(template: &str, values: &[(&'a str, Option<&str>)]) -> Result<String, &'a str> {
    let mut url = template.to_owned();
    for (name, value) in values {
        let placeholder = format!("{{{name}}}");
        if url.contains(&placeholder) {
            let value = value.ok_or(*name)?;
            url = url.replace(&placeholder, &encode(value));
        }
    }
    Ok(url)
}

fn pointer<'a>(body: &'a Value, spec: &LookupSpec, field: &str) -> Option<&'a Value> {
    spec.fields.get(field).and_then(|p| body.pointer(p))
}

fn text(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// One lookup of `op`. `lag_passed` says whether the contract's observation window
/// since the last request is over; `version` is the record version expected.
pub async fn look_up(
    transport: &Transport,
    spec: &LookupSpec,
    op: &Operation,
    provider_request_id: Option<&str>,
    lag_passed: bool,
    version: u64,
) -> Result<Looked, String> {
    let url = build_url(&spec.url, op, provider_request_id)?;
    let parsed = Url::parse(&url)?;
    let exchange = transport
        .send(&HttpRequest {
            method: "GET".into(),
            url: parsed,
            headers: vec![("Accept".into(), "application/json".into())],
            body: None,
            kind: AttemptKind::StatusQuery,
        })
        .await;
    let answer = interpret(&exchange, spec, op, lag_passed, version);
    Ok(Looked {
        exchange,
        url,
        answer,
    })
}

fn interpret(
    exchange: &Exchange,
    spec: &LookupSpec,
    op: &Operation,
    lag_passed: bool,
    version: u64,
) -> Answer {
    let Some(status) = exchange.status else {
        return Answer::Nothing(
            exchange
                .error_type
                .clone()
                .unwrap_or_else(|| "no answer".to_owned()),
        );
    };
    if exchange.phase != crate::core::model::Phase::ResponseReceived {
        return Answer::Nothing(exchange.error_type.clone().unwrap_or_default());
    }
    let not_found = |lag_passed| {
        if lag_passed {
            Answer::NotFound
        } else {
            Answer::NotYetVisible
        }
    };
    if spec.not_found_status.contains(&status) {
        return not_found(lag_passed);
    }
    if exchange.outcome != Outcome::Ok {
        return Answer::Nothing(format!("http_{status}"));
    }
    let body: Value = match serde_json::from_slice(&exchange.body) {
        Ok(body) => body,
        Err(e) => return Answer::Unreadable(format!("invalid JSON: {e}")),
    };
    let count = pointer(&body, spec, "effect_count")
        .and_then(Value::as_u64)
        .and_then(|n| u32::try_from(n).ok());
    if count == Some(0) {
        return not_found(lag_passed);
    }
    let tenant = text(pointer(&body, spec, "tenant"));
    let same = |field: &str, expected: &str| {
        spec.fields
            .contains_key(field)
            .then(|| text(pointer(&body, spec, field)).as_deref() == Some(expected))
    };
    let observed_version = pointer(&body, spec, "version").and_then(Value::as_u64);
    Answer::Found {
        matches: Matches {
            target: same("target", &op.target),
            payload_hash: same("payload_hash", op.payload_hash.as_str()),
            owner: same("tenant", &op.tenant),
            version: spec
                .fields
                .contains_key("version")
                .then(|| observed_version == Some(version)),
        },
        effect_count: count,
        provider_request_id: text(pointer(&body, spec, "provider_request_id")),
        tenant,
    }
}

/// The hash of an answer's raw body.
pub fn raw_hash(exchange: &Exchange) -> Option<Sha256> {
    exchange.status.map(|_| Sha256::of(&exchange.body))
}

/// Whether the observation window after `last_request` has passed at `now`.
pub fn lag_passed(spec: &LookupSpec, last_request: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    now >= last_request
        + chrono::Duration::seconds(i64::try_from(spec.lag_seconds).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_encoded_and_a_missing_one_refuses_the_lookup() {
        let text = include_str!("../../assets/demo/tc094.jsonl");
        let op = text
            .lines()
            .find_map(|l| match crate::wire::parse_line(l.as_bytes(), 1) {
                Ok(crate::wire::Record::Operation(o)) => Some(o),
                _ => None,
            })
            .unwrap();
        let url = build_url("http://h/r?t={target}&o={operation}", &op, None).unwrap();
        assert!(url.contains("t=account%3Apinehaven-1187"), "{url}");
        assert!(build_url("http://h/r/{provider_request_id}", &op, None).is_err());
    }
}
