//! The executor's status lookups (DESIGN §9.1) through the shared lookup code:
//! the contract's [`LookupSpec`] fills its URL from the operation's stable
//! identity ([`crate::core::lookup::UrlTemplate::render`]), the executor's own
//! phase-aware [`Transport`] makes the one exchange (so the drill can fail its
//! name lookup like any other attempt), and [`crate::lookup::read`] reads the
//! answer exactly as `holdfast observe` and `review --lookup` read theirs. What
//! is left here is only the executor's view of that reading.

use chrono::{DateTime, Utc};

use super::transport::{Exchange, HttpRequest, Transport, Url};
use crate::core::ids::Sha256;
use crate::core::lookup::LookupSpec;
use crate::core::model::{AttemptKind, Matches, Operation, Outcome, Phase};
use crate::lookup::{NotFoundBody, Reading, Response, read};

/// What one lookup showed.
#[derive(Debug, Clone, PartialEq)]
pub struct Looked {
    pub exchange: Exchange,
    /// The URL asked (no secrets: the executor's lookups carry none).
    pub url: String,
    pub answer: Answer,
}

/// The meaning of a lookup's answer for the executor.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// No usable answer (timeout, refused, a status outside the contract).
    Nothing(String),
    /// Not found, but the lag window has not passed: proves nothing yet.
    NotYetVisible,
    /// Not found after the lag window: non-application.
    NotFound,
    Found {
        /// `version` compared with the version the write must produce, when the
        /// contract names a pointer for it.
        matches: Matches,
        effect_count: Option<u32>,
        provider_request_id: Option<String>,
    },
    /// An answer the fields cannot be read from.
    Unreadable(String),
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
    not_found: Option<&NotFoundBody>,
) -> Result<Looked, String> {
    let url = spec
        .url
        .render(op, provider_request_id)
        .map_err(|why| format!("the lookup of operation {} is impossible: {why}", op.id))?;
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
    let answer = interpret(&exchange, spec, op, lag_passed, version, not_found);
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
    not_found: Option<&NotFoundBody>,
) -> Answer {
    let Some(status) = exchange
        .status
        .filter(|_| exchange.phase == Phase::ResponseReceived)
    else {
        return Answer::Nothing(
            exchange
                .error_type
                .clone()
                .unwrap_or_else(|| "no answer".to_owned()),
        );
    };
    let response = Response {
        status,
        content_type: exchange.header("content-type"),
        location: exchange.header("location"),
        body: &exchange.body,
    };
    match read(spec, op, not_found, &response) {
        Reading::Answer(answer) if !answer.found => {
            if lag_passed {
                Answer::NotFound
            } else {
                Answer::NotYetVisible
            }
        }
        Reading::Answer(answer) => Answer::Found {
            matches: Matches {
                version: spec
                    .fields
                    .version
                    .as_ref()
                    .map(|_| answer.version.as_deref() == Some(version.to_string().as_str())),
                ..answer.matches
            },
            effect_count: answer.effect_count,
            provider_request_id: answer.provider_request_id,
        },
        Reading::Bad {
            outcome: Outcome::HttpError,
            error_type,
            ..
        } => Answer::Nothing(error_type),
        Reading::Bad {
            error_type, detail, ..
        } => Answer::Unreadable(format!("{error_type}: {detail}")),
    }
}

/// The hash of an answer's raw body.
pub fn raw_hash(exchange: &Exchange) -> Option<Sha256> {
    exchange.status.map(|_| Sha256::of(&exchange.body))
}

/// Whether the observation window after `last_request` has passed at `now`.
pub fn lag_passed(spec: &LookupSpec, last_request: DateTime<Utc>, now: DateTime<Utc>) -> bool {
    now >= last_request + chrono::Duration::seconds(i64::from(spec.lag_seconds()))
}
