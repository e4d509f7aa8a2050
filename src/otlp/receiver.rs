//! The OTLP/HTTP receiver (`holdfast serve`): `POST /v1/traces`, protobuf or
//! JSON, gzip or not, answered as the OTLP specification says. A request is one
//! intake ([`super::door::intake`]) in keep-the-good-spans mode: 200 with an
//! `ExportTraceServiceResponse` whose `partial_success` counts the refused
//! spans, 400 for a body that does not decode, 413 over the size limit, 401
//! without the configured bearer token, 503 with `Retry-After` when the store
//! does not take the request in time (its transaction rolled back: nothing of it
//! is committed, and the same request sent again changes nothing that is).
//!
//! It holds the store for the door ([`super::door`]), which writes as the
//! receiver's identity; it reads nothing itself.

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use chrono::{DateTime, Utc};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use prost::Message;

use super::door::{Strictness, take};
use super::settings::OtlpSettings;
use crate::store::{Ingester, Store, StoreError};

/// How long a request may wait for the store before it is answered 503.
pub const DEFAULT_BUSY_MS: u64 = 5_000;

/// What the receiver needs.
pub struct Receiver {
    pub store: Arc<dyn Store>,
    pub settings: OtlpSettings,
    /// Who the records are written as (`svc:otlp` by default).
    pub ingester: Ingester,
    /// The bearer token a request must carry, when one is configured.
    pub token: Option<String>,
    /// The clock (frozen in tests).
    pub now: Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>,
    /// Requests commit one group at a time, so that a busy store answers 503
    /// rather than piling up writers: whoever holds the gate takes every
    /// request waiting in `queue` into one intake (one transaction), and
    /// answers each with its own refusals.
    gate: tokio::sync::Mutex<()>,
    queue: std::sync::Mutex<Vec<Job>>,
}

/// A decoded request waiting for its turn, with where its answer goes.
struct Job {
    request: ExportTraceServiceRequest,
    reply: tokio::sync::oneshot::Sender<Result<Taken, StoreError>>,
}

/// What became of one request of a group.
#[derive(Debug, Clone)]
struct Taken {
    /// Why its refused spans (or their records) were refused.
    rejected: Vec<crate::wire::LineError>,
    /// Its spans refused, each counted once.
    rejected_spans: usize,
}

impl Receiver {
    pub fn new(
        store: Arc<dyn Store>,
        settings: OtlpSettings,
        ingester: Ingester,
        token: Option<String>,
        now: Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>,
    ) -> Receiver {
        Receiver {
            store,
            settings,
            ingester,
            token,
            now,
            gate: tokio::sync::Mutex::new(()),
            queue: std::sync::Mutex::new(Vec::new()),
        }
    }

    /// Takes one request into the store, with whatever other requests wait
    /// beside it when its turn comes.
    async fn take(&self, request: ExportTraceServiceRequest) -> Result<Taken, StoreError> {
        let (reply, mut answer) = tokio::sync::oneshot::channel();
        self.lock_queue().push(Job { request, reply });
        loop {
            tokio::select! {
                biased;
                answered = &mut answer => {
                    // A group dropped before it answered (its leader timed out)
                    // committed nothing.
                    return answered.unwrap_or(Err(StoreError::Busy));
                }
                turn = self.gate.lock() => {
                    let jobs = std::mem::take(&mut *self.lock_queue());
                    if !jobs.is_empty() {
                        self.run_group(jobs).await;
                    }
                    drop(turn);
                }
            }
        }
    }

    fn lock_queue(&self) -> std::sync::MutexGuard<'_, Vec<Job>> {
        self.queue
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// One intake of a group of requests, each numbered by its place (the
    /// line its refusals name), and each answered.
    async fn run_group(&self, jobs: Vec<Job>) {
        let (requests, replies): (Vec<_>, Vec<_>) = jobs
            .into_iter()
            .enumerate()
            .map(|(i, job)| (Ok((i + 1, job.request)), job.reply))
            .unzip();
        let result = take(
            self.store.as_ref(),
            requests,
            &self.settings,
            &self.ingester,
            Strictness::KeepGood,
            (self.now)(),
        )
        .await;
        tracing::info!(
            requests = replies.len(),
            spans = result.as_ref().map_or(0, |o| o.spans),
            waiting = result.as_ref().map_or(0, |o| o.waiting),
            "otlp: requests taken"
        );
        for (i, reply) in replies.into_iter().enumerate() {
            let answer = match &result {
                Ok(outcome) => Ok(Taken {
                    rejected: outcome
                        .rejected
                        .iter()
                        .filter(|e| e.line == i + 1)
                        .cloned()
                        .collect(),
                    rejected_spans: outcome.refused_spans.get(&(i + 1)).copied().unwrap_or(0),
                }),
                Err(StoreError::Busy) => Err(StoreError::Busy),
                Err(StoreError::Unavailable(why)) => Err(StoreError::Unavailable(why.clone())),
                Err(e) => Err(StoreError::Other(e.to_string())),
            };
            let _ = reply.send(answer);
        }
    }

    fn busy_after(&self) -> Duration {
        Duration::from_millis(self.settings.busy_ms.unwrap_or(DEFAULT_BUSY_MS))
    }
}

/// The receiver's routes.
pub fn router(receiver: Arc<Receiver>) -> Router {
    let limit = receiver.settings.max_body_bytes();
    Router::new()
        .route("/v1/traces", post(traces))
        .layer(DefaultBodyLimit::max(limit))
        .with_state(receiver)
}

/// Serves until the listener fails.
pub async fn serve(
    listener: tokio::net::TcpListener,
    receiver: Arc<Receiver>,
) -> std::io::Result<()> {
    axum::serve(listener, router(receiver)).await
}

/// The encoding a request came in, and its answer goes out in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Protobuf,
    Json,
}

fn refuse(status: StatusCode, message: impl Into<String>) -> Response {
    let mut response = (status, message.into()).into_response();
    if status == StatusCode::SERVICE_UNAVAILABLE || status == StatusCode::TOO_MANY_REQUESTS {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    response
}

async fn traces(State(rx): State<Arc<Receiver>>, headers: HeaderMap, body: Bytes) -> Response {
    if let Some(token) = &rx.token {
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        if given.map(str::as_bytes) != Some(token.as_bytes()) {
            return refuse(StatusCode::UNAUTHORIZED, "a bearer token is required");
        }
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let encoding = if content_type.starts_with("application/x-protobuf") {
        Encoding::Protobuf
    } else if content_type.starts_with("application/json") {
        Encoding::Json
    } else {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/x-protobuf or application/json",
        );
    };
    let limit = rx.settings.max_body_bytes();
    let gzip = headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("gzip"));
    let body = if gzip {
        match super::read::inflate(body.to_vec(), limit as u64) {
            Ok(body) => body,
            Err(e @ super::read::InflateError::TooLarge(_)) => {
                return refuse(StatusCode::PAYLOAD_TOO_LARGE, format!("body: {e}"));
            }
            Err(e) => return refuse(StatusCode::BAD_REQUEST, format!("body: {e}")),
        }
    } else {
        body.to_vec()
    };
    let request = match encoding {
        Encoding::Protobuf => ExportTraceServiceRequest::decode(body.as_slice())
            .map_err(|e| format!("body: not an ExportTraceServiceRequest in protobuf: {e}")),
        Encoding::Json => {
            super::read::decode_json(&body, 1).map_err(|e| format!("body: {}", e.reason))
        }
    };
    let request = match request {
        Ok(request) => request,
        Err(message) => return refuse(StatusCode::BAD_REQUEST, message),
    };
    let work = rx.take(request);
    let outcome = match tokio::time::timeout(rx.busy_after(), work).await {
        Err(_) | Ok(Err(StoreError::Busy)) => {
            return refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "the store is busy; send again later",
            );
        }
        Ok(Err(StoreError::Unavailable(_))) => {
            return refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "the store cannot be reached; send again later",
            );
        }
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "otlp: a request could not be stored");
            return refuse(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the request could not be stored",
            );
        }
        Ok(Ok(outcome)) => outcome,
    };
    let partial_success = (!outcome.rejected.is_empty()).then(|| ExportTracePartialSuccess {
        rejected_spans: i64::try_from(outcome.rejected_spans).unwrap_or(i64::MAX),
        error_message: crate::core::sanitize::sanitize(
            &outcome
                .rejected
                .iter()
                .map(|e| format!("{}: {}", e.field, e.reason))
                .collect::<Vec<_>>()
                .join("; "),
        )
        .into_owned(),
    });
    let response = ExportTraceServiceResponse { partial_success };
    match encoding {
        Encoding::Protobuf => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/x-protobuf")],
            response.encode_to_vec(),
        )
            .into_response(),
        Encoding::Json => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::to_vec(&response).unwrap_or_else(|_| b"{}".to_vec()),
        )
            .into_response(),
    }
}
