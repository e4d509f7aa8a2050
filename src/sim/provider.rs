//! The simulated provider: an HTTP server on a loopback address that keeps the
//! authoritative records of every case, plays each case's scripted faults, and
//! counts what really happened (requests, status queries, applied effects).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use chrono::{DateTime, Duration, Utc};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};
use tower::ServiceExt as _;

use super::case::{Answer, Case, On, Respond, Rule, Word};
use crate::core::lookup::{JsonPointer, LookupFields, Placeholder, ResponseShape};
use crate::executor::clock::ExecClock;

/// How long a `hang` answer waits before it is sent (past any client timeout the
/// drill uses).
pub const HANG_FOR: std::time::Duration = std::time::Duration::from_secs(3);

/// The largest request body the provider reads.
const MAX_BODY: usize = 1 << 20;

/// What the provider really saw and did for one case.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counters {
    /// Requests that reached the provider (dropped ones included).
    pub requests: u32,
    pub status_queries: u32,
    /// Applied effects (records created, batch items applied, compensations).
    pub effects: u32,
    /// Name lookups that failed before a request left the client.
    pub dns_failures: u32,
    /// Connections closed without an answer.
    pub dropped: u32,
    /// Requests at a method and path the case has no route for (answered 404).
    pub unrouted: u32,
    /// Requests answered with the original result of their idempotency key.
    pub replays: u32,
    /// Requests refused because their key carried another payload.
    pub conflicts: u32,
    /// Distinct identities on credentials.
    pub identities: BTreeSet<String>,
    pub requests_by_operation: BTreeMap<String, u32>,
    pub effects_by_operation: BTreeMap<String, u32>,
    /// Times each batch item was applied, by `operation#index`.
    pub item_effects: BTreeMap<String, u32>,
}

/// One authoritative record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredRecord {
    pub id: String,
    pub operation: String,
    pub tenant: String,
    pub target: String,
    pub business_key: Option<String>,
    pub payload_hash: String,
    pub version: u64,
    pub request_id: String,
    pub committed_at: DateTime<Utc>,
    /// Whether a compensation reversed it.
    pub reversed: bool,
}

#[derive(Debug, Clone)]
struct KeyEntry {
    payload_hash: String,
    created_at: DateTime<Utc>,
    status: u16,
    body: Value,
    request_id: String,
}

struct CaseState {
    case: Case,
    clock: ExecClock,
    counters: Counters,
    records: Vec<StoredRecord>,
    keys: HashMap<String, KeyEntry>,
    /// Request attempts numbered so far (failed name lookups included).
    request_n: u32,
    status_n: u32,
}

impl CaseState {
    fn rule(&self, on: On, n: u32) -> Option<Rule> {
        self.case
            .provider
            .iter()
            .find(|r| r.on == on && r.n == n)
            .cloned()
    }

    fn item_rule(&self, index: u32, request: u32) -> Option<Rule> {
        self.case
            .provider
            .iter()
            .find(|r| r.on == On::Item && r.n == index && r.request.is_none_or(|m| m == request))
            .cloned()
    }

    fn key_expired(&self, entry: &KeyEntry) -> bool {
        match self.case.contract.idempotency.retention_hours {
            Some(hours) => self.clock.now() >= entry.created_at + Duration::hours(i64::from(hours)),
            None => false,
        }
    }

    fn count_with(&self, business_key: Option<&str>, operation: &str) -> usize {
        self.records
            .iter()
            .filter(|r| !r.reversed)
            .filter(|r| match business_key {
                Some(key) => r.business_key.as_deref() == Some(key),
                None => r.operation == operation,
            })
            .count()
    }
}

/// The simulated provider's state, shared by its server and the drill.
#[derive(Clone, Default)]
pub struct Provider {
    cases: Arc<Mutex<HashMap<String, CaseState>>>,
}

/// The part of the path every case's endpoints live under.
pub fn case_path(case: &str) -> String {
    format!("/cases/{case}")
}

impl Provider {
    pub fn new() -> Self {
        Provider::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, CaseState>> {
        self.cases.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds (or replaces) a case, with the clock its key retention runs on.
    pub fn add_case(&self, case: Case, clock: ExecClock) {
        self.lock().insert(
            case.id.clone(),
            CaseState {
                case,
                clock,
                counters: Counters::default(),
                records: Vec::new(),
                keys: HashMap::new(),
                request_n: 0,
                status_n: 0,
            },
        );
    }

    /// What the provider saw for `case`.
    pub fn counters(&self, case: &str) -> Option<Counters> {
        self.lock().get(case).map(|c| c.counters.clone())
    }

    /// The authoritative records of `case`.
    pub fn records(&self, case: &str) -> Vec<StoredRecord> {
        self.lock()
            .get(case)
            .map(|c| c.records.clone())
            .unwrap_or_default()
    }

    /// The name lookup of the next request or status query of `case`: fails when
    /// the script says so, and that attempt then never reaches the provider.
    pub fn resolve(&self, case: &str, on: On) -> Result<(), String> {
        let mut cases = self.lock();
        let Some(state) = cases.get_mut(case) else {
            return Ok(());
        };
        let n = match on {
            On::Status => state.status_n + 1,
            _ => state.request_n + 1,
        };
        let fails = state
            .rule(on, n)
            .is_some_and(|r| r.respond == Respond::Word(Word::DnsFailure));
        if fails {
            match on {
                On::Status => state.status_n = n,
                _ => state.request_n = n,
            }
            state.counters.dns_failures += 1;
            return Err(format!("simulated name lookup failure ({on:?} {n})"));
        }
        Ok(())
    }

    /// The router of the provider's endpoints: every request under
    /// `/cases/ID` is routed by the case itself ([`Provider::route`]).
    pub fn router(&self) -> Router {
        Router::new().fallback(dispatch).with_state(self.clone())
    }

    /// Where a request for `case` at `method` and `asked` (path and query under
    /// the case's base URL) goes: the tool's call at its contract's method and
    /// path (`/ops` when the contract names none), the status lookup at its
    /// lookup object's method and URL (the provider's own `GET /records?…` when
    /// the case has no lookup object), `GET /counters`; anything else is
    /// unrouted. `None` when there is no such case.
    pub fn route(&self, case: &str, method: &str, asked: &str) -> Option<SimRoute> {
        let cases = self.lock();
        let state = cases.get(case)?;
        let contract = &state.case.contract;
        let path_only = asked.split('?').next().unwrap_or_default();
        let call = method.eq_ignore_ascii_case(&contract.method)
            && match &contract.path {
                Some(path) => path.matches(asked),
                None => path_only == crate::executor::run::DEFAULT_PATH,
            };
        if call {
            return Some(SimRoute::Call);
        }
        let lookup = match state.case.lookup_spec(EMULATED_BASE) {
            Ok(Some(spec)) => {
                method.eq_ignore_ascii_case(&spec.method)
                    && spec.url.matches(&format!("{EMULATED_BASE}{asked}"))
            }
            _ => method == "GET" && path_only == STANDARD_LOOKUP,
        };
        if lookup {
            return Some(SimRoute::Lookup);
        }
        if method == "GET" && asked == "/counters" {
            return Some(SimRoute::Counters);
        }
        Some(SimRoute::Unrouted)
    }

    /// Counts a request the provider had no route for.
    fn unrouted(&self, case: &str) {
        if let Some(state) = self.lock().get_mut(case) {
            state.counters.unrouted += 1;
        }
    }
}

/// The path of the provider's own status lookup, for a case without a lookup
/// object: `GET /records?business_key=…` (or `operation=`, `idempotency_key=`).
pub const STANDARD_LOOKUP: &str = "/records";

/// Where the provider sends one request of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimRoute {
    /// The tool's call: the contract's method and path.
    Call,
    /// A status lookup: the lookup object's method and URL.
    Lookup,
    /// What the provider counted.
    Counters,
    /// No route: answered 404 and counted.
    Unrouted,
}

/// Routes one request: `/cases/ID…` by the case's own routes; anything else,
/// and a case the provider does not hold, is 404.
async fn dispatch(
    State(provider): State<Provider>,
    Extension(killer): Extension<Killer>,
    request: Request,
) -> Response {
    let asked = request
        .uri()
        .path_and_query()
        .map_or("/", |p| p.as_str())
        .to_owned();
    let Some(rest) = asked.strip_prefix("/cases/") else {
        return not_found();
    };
    let split = rest.find(['/', '?']).unwrap_or(rest.len());
    let (case, under) = (rest[..split].to_owned(), rest[split..].to_owned());
    let method = request.method().as_str().to_owned();
    match provider.route(&case, &method, &under) {
        None => not_found(),
        Some(SimRoute::Call) => call(provider, case, killer, request).await,
        Some(SimRoute::Lookup) => lookup(provider, case, killer, under).await,
        Some(SimRoute::Counters) => counters(&provider, &case),
        Some(SimRoute::Unrouted) => {
            provider.unrouted(&case);
            not_found()
        }
    }
}

/// Closes the connection a request came on, without an answer.
#[derive(Clone)]
struct Killer(Arc<Notify>);

/// A running provider.
pub struct Running {
    pub addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<()>,
}

impl Running {
    /// The base URL of `case` on this server.
    pub fn case_url(&self, case: &str) -> String {
        format!("http://{}{}", self.addr, case_path(case))
    }

    /// Stops accepting connections and waits for the accept loop to end.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = (&mut self.task).await;
    }

    /// Runs until the accept loop ends (for `holdfast sim-provider`).
    pub async fn wait(self) {
        let _ = self.task.await;
    }
}

/// Why the provider refuses to listen.
#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(
        "{0} is not a loopback address: the simulated provider listens on 127.0.0.0/8 or [::1] only"
    )]
    NotLoopback(SocketAddr),
    #[error("cannot listen on {addr}: {error}")]
    Bind {
        addr: SocketAddr,
        error: std::io::Error,
    },
}

/// Serves `provider` on `listen` (port 0: a free port), loopback only.
pub async fn serve(provider: Provider, listen: SocketAddr) -> Result<Running, ServeError> {
    if !listen.ip().is_loopback() {
        return Err(ServeError::NotLoopback(listen));
    }
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|error| ServeError::Bind {
            addr: listen,
            error,
        })?;
    let addr = listener.local_addr().map_err(|error| ServeError::Bind {
        addr: listen,
        error,
    })?;
    let router = provider.router();
    let (stop, mut stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    tokio::spawn(connection(router.clone(), stream));
                }
                _ = &mut stopped => break,
            }
        }
    });
    Ok(Running {
        addr,
        stop: Some(stop),
        task,
    })
}

/// Serves one connection until it ends or a handler asks to drop it.
async fn connection(router: Router, stream: tokio::net::TcpStream) {
    let kill = Arc::new(Notify::new());
    let killer = Killer(kill.clone());
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(killer.clone());
        router.clone().oneshot(request.map(Body::new))
    });
    let served =
        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        _ = served => {}
        _ = kill.notified() => {}
    }
}

/// What a client sends to apply an operation.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WriteRequest {
    pub operation: String,
    pub tenant: String,
    pub target: String,
    #[serde(default)]
    pub business_key: Option<String>,
    pub payload_hash: String,
    pub payload: Value,
    /// Batch items or workflow steps, by 1-based index.
    #[serde(default)]
    pub items: Vec<u32>,
    /// The operation this one compensates.
    #[serde(default)]
    pub inverse_of: Option<String>,
}

fn identity(headers: &HeaderMap) -> Option<String> {
    let value = headers.get("authorization")?.to_str().ok()?;
    let token = value.strip_prefix("Bearer ")?;
    Some(
        token
            .rsplit_once('.')
            .map_or(token, |(identity, _)| identity)
            .to_owned(),
    )
}

fn json_response(status: u16, request_id: &str, body: &Value, replayed: bool) -> Response {
    let mut response = (
        StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        body.to_string(),
    )
        .into_response();
    let headers = response.headers_mut();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    if let Ok(id) = HeaderValue::from_str(request_id) {
        headers.insert("x-request-id", id);
    }
    if replayed {
        headers.insert("idempotent-replayed", HeaderValue::from_static("true"));
    }
    response
}

/// The scripted answer: its status, headers and body; a record override is applied
/// to `record`.
fn scripted(
    answer: &Answer,
    request_id: &str,
    record: Option<&Value>,
    shaped: &dyn Fn(Value) -> Value,
) -> Response {
    let body = match (&answer.record, record, &answer.body) {
        (Some(overrides), Some(Value::Object(base)), _) => {
            let mut merged = base.clone();
            if let Some(Value::Object(inner)) = merged.get_mut("record") {
                for (k, v) in overrides {
                    inner.insert(k.clone(), v.clone());
                }
            }
            shaped(Value::Object(merged)).to_string()
        }
        (_, _, Some(Value::String(raw))) => raw.clone(),
        (_, _, Some(other)) => other.to_string(),
        // A scripted 404 without a body is the provider's own "no such record".
        (_, _, None) if answer.status == 404 => json!({"error": RECORD_NOT_FOUND}).to_string(),
        (_, _, None) => json!({"error": format!("http_{}", answer.status)}).to_string(),
    };
    let mut response = (
        StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        body,
    )
        .into_response();
    let headers = response.headers_mut();
    headers.insert("content-type", HeaderValue::from_static("application/json"));
    if let Ok(id) = HeaderValue::from_str(request_id) {
        headers.insert("x-request-id", id);
    }
    for (name, value) in &answer.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.insert(name, value);
        }
    }
    response
}

fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        json!({"error": "not_found"}).to_string(),
    )
        .into_response()
}

/// The value at `/error` of the simulator's answer to a status query that finds
/// no record: what its lookup binding recognizes as "no such record" (a 404
/// for an unknown path or case says `not_found` and proves nothing).
pub const RECORD_NOT_FOUND: &str = "record_not_found";

/// The simulator's binding's description of its own not-found body.
pub fn not_found_body() -> crate::lookup::NotFoundBody {
    crate::lookup::NotFoundBody {
        pointer: "/error".to_owned(),
        equals: RECORD_NOT_FOUND.to_owned(),
    }
}

/// The answer to a status query that finds no record.
fn record_not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        [("content-type", "application/json")],
        json!({"error": RECORD_NOT_FOUND}).to_string(),
    )
        .into_response()
}

/// Counts the drop, closes the connection and never answers.
async fn drop_connection(provider: &Provider, case: &str, killer: &Killer) -> Response {
    if let Some(state) = provider.lock().get_mut(case) {
        state.counters.dropped += 1;
    }
    killer.0.notify_one();
    std::future::pending::<Response>().await
}

/// The outcome of processing one write.
struct Processed {
    status: u16,
    body: Value,
    request_id: String,
    replayed: bool,
}

/// The record a read tool's call answers with: the case's own operation as the
/// provider holds it.
fn read_record(case: &Case, request_id: &str) -> Value {
    let o = &case.operation;
    json!({"record": {
        "id": format!("res-{}", case.id),
        "operation": case.id,
        "tenant": o.tenant,
        "target": o.target.clone().unwrap_or_else(|| format!("record:{}", case.id)),
        "version": o.version,
        "request_id": request_id,
    }, "count": 1})
}

/// The tool's call: a write is applied under the provider's idempotency rules;
/// a read (GET, HEAD, OPTIONS) applies nothing and answers with the record
/// read. The case's script decides the answer either way.
async fn call(provider: Provider, case: String, killer: Killer, request: Request) -> Response {
    let (n, rule, contract, read) = {
        let mut cases = provider.lock();
        let Some(state) = cases.get_mut(&case) else {
            return not_found();
        };
        state.request_n += 1;
        state.counters.requests += 1;
        if let Some(who) = identity(request.headers()) {
            state.counters.identities.insert(who);
        }
        let n = state.request_n;
        let read = (!state.case.contract.is_write()).then(|| state.case.clone());
        (
            n,
            state.rule(On::Request, n),
            state.case.contract.clone(),
            read,
        )
    };
    let request_id = format!("req-{case}-{n}");
    let reshaped = |body: Value| match &contract.response {
        Some(shape) => shape_response(body, shape),
        None => body,
    };
    let commit = rule.as_ref().is_none_or(|r| r.commit);
    if let Some(rule) = &rule
        && !rule.commit
        && rule.respond == Respond::Word(Word::Drop)
    {
        // Dropped before the request was read: it never reached the provider's
        // logic, so nothing can have been applied.
        return drop_connection(&provider, &case, &killer).await;
    }
    if let Some(read_case) = read {
        if let Some(state) = provider.lock().get_mut(&case) {
            *state
                .counters
                .requests_by_operation
                .entry(case.clone())
                .or_default() += 1;
        }
        let body = reshaped(read_record(&read_case, &request_id));
        return match rule.map(|r| r.respond) {
            Some(Respond::Word(Word::Drop)) => drop_connection(&provider, &case, &killer).await,
            Some(Respond::Word(Word::Hang)) => {
                tokio::time::sleep(HANG_FOR).await;
                json_response(200, &request_id, &body, false)
            }
            Some(Respond::Answer(scripted_answer)) => {
                scripted(&scripted_answer, &request_id, Some(&body), &reshaped)
            }
            Some(Respond::Word(Word::Record | Word::DnsFailure)) | None => {
                json_response(200, &request_id, &body, false)
            }
        };
    }
    let key = request
        .headers()
        .get("idempotency-key")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = match axum::body::to_bytes(request.into_body(), MAX_BODY).await {
        Ok(bytes) => bytes,
        Err(_) => return (StatusCode::BAD_REQUEST, "body too large").into_response(),
    };
    let body: WriteRequest = match serde_json::from_slice(&bytes) {
        Ok(body) => body,
        Err(e) => {
            return json_response(
                400,
                &request_id,
                &json!({"error": "bad_request", "detail": e.to_string()}),
                false,
            );
        }
    };
    if let Some(who) = provider.lock().get_mut(&case) {
        *who.counters
            .requests_by_operation
            .entry(body.operation.clone())
            .or_default() += 1;
    }
    let processed = if commit {
        process(&provider, &case, n, &request_id, key.as_deref(), &body)
    } else {
        None
    };
    let answer = |processed: Option<Processed>| match processed {
        Some(p) => json_response(p.status, &p.request_id, &reshaped(p.body), p.replayed),
        None => json_response(503, &request_id, &json!({"error": "not_processed"}), false),
    };
    match rule.map(|r| r.respond) {
        Some(Respond::Word(Word::Drop)) => drop_connection(&provider, &case, &killer).await,
        Some(Respond::Word(Word::Hang)) => {
            tokio::time::sleep(HANG_FOR).await;
            answer(processed)
        }
        Some(Respond::Answer(scripted_answer)) => {
            // A conflict or a replay is the provider's own answer, whatever the
            // script would have said.
            match &processed {
                Some(p) if p.replayed || p.status == 409 => answer(processed),
                _ => scripted(
                    &scripted_answer,
                    &request_id,
                    processed.as_ref().map(|p| &p.body),
                    &reshaped,
                ),
            }
        }
        Some(Respond::Word(Word::Record | Word::DnsFailure)) | None => answer(processed),
    }
}

/// Applies one write under the provider's idempotency semantics: the original
/// result for a repeated key with the same payload, a conflict for another payload,
/// a fresh effect for a new or expired key. `None` when the case is unknown.
fn process(
    provider: &Provider,
    case: &str,
    n: u32,
    request_id: &str,
    key: Option<&str>,
    body: &WriteRequest,
) -> Option<Processed> {
    let mut cases = provider.lock();
    let state = cases.get_mut(case)?;
    if let Some(key) = key
        && let Some(entry) = state.keys.get(key).cloned()
        && !state.key_expired(&entry)
    {
        if entry.payload_hash == body.payload_hash {
            state.counters.replays += 1;
            return Some(Processed {
                status: entry.status,
                body: entry.body,
                request_id: entry.request_id,
                replayed: true,
            });
        }
        state.counters.conflicts += 1;
        return Some(Processed {
            status: 409,
            body: json!({"error": "idempotency_key_conflict",
                         "detail": "this key was used with another payload"}),
            request_id: request_id.to_owned(),
            replayed: false,
        });
    }
    let now = state.clock.now();
    let mut applied = 0u32;
    let mut item_results = Vec::new();
    if let Some(parent) = &body.inverse_of {
        for record in state.records.iter_mut().filter(|r| &r.operation == parent) {
            record.reversed = true;
        }
        applied += 1;
    } else if body.items.is_empty() {
        applied += 1;
    } else {
        let mut stopped = false;
        for &index in &body.items {
            if stopped {
                item_results.push(json!({"index": index, "state": "not_attempted"}));
                continue;
            }
            let failure = state.item_rule(index, n).and_then(|r| match r.respond {
                Respond::Answer(a) if a.status >= 400 => Some(
                    json!({"index": index, "state": "failed", "status": a.status,
                                "error": a.body.unwrap_or(Value::Null)}),
                ),
                Respond::Word(Word::Drop | Word::Hang) => {
                    Some(json!({"index": index, "state": "not_attempted"}))
                }
                _ => None,
            });
            match failure {
                Some(result) => {
                    item_results.push(result);
                    stopped = true;
                }
                None => {
                    *state
                        .counters
                        .item_effects
                        .entry(format!("{}#{index}", body.operation))
                        .or_default() += 1;
                    applied += 1;
                    item_results.push(json!({"index": index, "state": "succeeded",
                                             "id": format!("item-{}-{index}", body.operation)}));
                }
            }
        }
    }
    state.counters.effects += applied;
    *state
        .counters
        .effects_by_operation
        .entry(body.operation.clone())
        .or_default() += applied;
    let record = StoredRecord {
        id: format!("rec-{case}-{n}"),
        operation: body.operation.clone(),
        tenant: body.tenant.clone(),
        target: body.target.clone(),
        business_key: body.business_key.clone(),
        payload_hash: body.payload_hash.clone(),
        version: 1,
        request_id: request_id.to_owned(),
        committed_at: now,
        reversed: false,
    };
    if applied > 0 && body.inverse_of.is_none() {
        state.records.push(record.clone());
    }
    let count = state.count_with(body.business_key.as_deref(), &body.operation);
    let mut response = json!({"record": record, "count": count});
    if !item_results.is_empty() {
        response["items"] = Value::Array(item_results);
    }
    if let Some(key) = key {
        state.keys.insert(
            key.to_owned(),
            KeyEntry {
                payload_hash: body.payload_hash.clone(),
                created_at: now,
                status: 200,
                body: response.clone(),
                request_id: request_id.to_owned(),
            },
        );
    }
    Some(Processed {
        status: 200,
        body: response,
        request_id: request_id.to_owned(),
        replayed: false,
    })
}

/// The query of the provider's own status lookup.
#[derive(Debug, Default)]
struct StatusQuery {
    business_key: Option<String>,
    operation: Option<String>,
    idempotency_key: Option<String>,
}

/// The provider's own status lookup (`GET /records?…`), for a case without a
/// lookup object: the records whose business key, operation or idempotency
/// key the query names; a query it cannot read is a 400.
async fn standard_status(
    provider: Provider,
    case: String,
    killer: Killer,
    asked: &str,
) -> Response {
    let query = asked.split_once('?').map_or("", |(_, q)| q);
    let mut parsed = StatusQuery::default();
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        let slot = match key.as_ref() {
            "business_key" => &mut parsed.business_key,
            "operation" => &mut parsed.operation,
            "idempotency_key" => &mut parsed.idempotency_key,
            _ => {
                return (
                    StatusCode::BAD_REQUEST,
                    json!({"error": "bad_query", "detail": format!("unknown parameter {key}")})
                        .to_string(),
                )
                    .into_response();
            }
        };
        *slot = Some(value.into_owned());
    }
    let query = parsed;
    let matches = |state: &CaseState, r: &StoredRecord| {
        let key_record = query
            .idempotency_key
            .as_ref()
            .and_then(|k| state.keys.get(k))
            .map(|e| e.request_id.clone());
        query
            .business_key
            .as_ref()
            .is_some_and(|k| r.business_key.as_ref() == Some(k))
            || query.operation.as_ref().is_some_and(|o| &r.operation == o)
            || key_record.as_ref().is_some_and(|id| &r.request_id == id)
    };
    status_answer(&provider, &case, &killer, &matches, None).await
}

/// The base a case's lookup template is read with here, to route a request by
/// it and to render the URL a record would be asked at and compare it with the
/// path and query asked.
const EMULATED_BASE: &str = "http://sim.invalid";

/// The standard pointers of a status body, by the field names of DESIGN §9.1.
const STANDARD: &[(&str, &str)] = &[
    ("target", "/record/target"),
    ("payload_hash", "/record/payload_hash"),
    ("tenant", "/record/tenant"),
    ("version", "/record/version"),
    ("effect_count", "/count"),
    ("provider_request_id", "/record/request_id"),
];

/// Writes `value` at the JSON Pointer `pointer` in `root`, making objects on the
/// way (a non-object on the way is replaced).
fn set_pointer(root: &mut Value, pointer: &str, value: Value) {
    let tokens: Vec<String> = pointer
        .split('/')
        .skip(1)
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect();
    let Some((last, path)) = tokens.split_last() else {
        *root = value;
        return;
    };
    let mut at = root;
    for token in path {
        if !at.is_object() {
            *at = json!({});
        }
        let Value::Object(map) = at else { return };
        at = map.entry(token.clone()).or_insert_with(|| json!({}));
    }
    if !at.is_object() {
        *at = json!({});
    }
    if let Value::Object(map) = at {
        map.insert(last.clone(), value);
    }
}

/// Where the provider's own answer to a call keeps each field a contract's
/// `response` may declare.
const RESPONSE_STANDARD: &[(&str, &str)] = &[
    ("record_id", "/record/id"),
    ("target", "/record/target"),
    ("tenant", "/record/tenant"),
    ("payload_hash", "/record/payload_hash"),
    ("version", "/record/version"),
    ("items", "/items"),
];

/// `body` with each named field's value (read where `standard` keeps it) also
/// placed where the contract's pointer looks for it.
fn place(body: Value, standard: &[(&str, &str)], named: &[(&str, Option<&JsonPointer>)]) -> Value {
    let mut out = body.clone();
    for (name, pointer) in named {
        let (Some(pointer), Some((_, from))) = (pointer, standard.iter().find(|(n, _)| n == name))
        else {
            continue;
        };
        if let Some(value) = body.pointer(from) {
            set_pointer(&mut out, pointer.as_str(), value.clone());
        }
    }
    out
}

/// A call's answer in the shape the contract's `response` declares.
fn shape_response(body: Value, shape: &ResponseShape) -> Value {
    place(body, RESPONSE_STANDARD, &shape.named())
}

/// A status query under the case's lookup object: the record whose identity,
/// put into the lookup's URL template as the lookup fills it
/// ([`crate::core::lookup::UrlTemplate::render`]), gives the URL asked, in the
/// shape the lookup's `fields` read. A case without a lookup object is asked
/// at the provider's own `GET /records?…`.
async fn lookup(provider: Provider, case: String, killer: Killer, asked: String) -> Response {
    let found = {
        let cases = provider.lock();
        cases.get(&case).map(|c| c.case.lookup_spec(EMULATED_BASE))
    };
    let spec = match found {
        Some(Ok(Some(spec))) => spec,
        Some(Ok(None)) => return standard_status(provider, case, killer, &asked).await,
        _ => return not_found(),
    };
    let matches = |state: &CaseState, r: &StoredRecord| {
        let key = state
            .keys
            .iter()
            .find(|(_, e)| e.request_id == r.request_id)
            .map(|(k, _)| k.as_str());
        let url = spec.url.render_with(|p| {
            match p {
                Placeholder::ProviderRequestId => Some(r.request_id.as_str()),
                Placeholder::IdempotencyKey => key,
                Placeholder::BusinessKey => r.business_key.as_deref(),
                Placeholder::Target => Some(r.target.as_str()),
                Placeholder::Operation => Some(r.operation.as_str()),
                Placeholder::Tenant => Some(r.tenant.as_str()),
            }
            .filter(|v| !v.is_empty())
        });
        url.is_ok_and(|url| url.strip_prefix(EMULATED_BASE) == Some(asked.as_str()))
    };
    status_answer(&provider, &case, &killer, &matches, Some(&spec.fields)).await
}

/// Answers the `n`th status query of `case`: the records `matches` picks, under
/// the case's script; `shape` puts the body in a contract's own shape.
async fn status_answer(
    provider: &Provider,
    case: &str,
    killer: &Killer,
    matches: &(dyn Fn(&CaseState, &StoredRecord) -> bool + Sync),
    fields: Option<&LookupFields>,
) -> Response {
    let (n, rule, found) = {
        let mut cases = provider.lock();
        let Some(state) = cases.get_mut(case) else {
            return not_found();
        };
        state.status_n += 1;
        state.counters.status_queries += 1;
        let n = state.status_n;
        let state = &*state;
        let matching: Vec<&StoredRecord> = state
            .records
            .iter()
            .filter(|r| !r.reversed)
            .filter(|r| matches(state, r))
            .collect();
        let found = matching
            .first()
            .map(|r| json!({"record": r, "count": matching.len()}));
        (n, state.rule(On::Status, n), found)
    };
    let request_id = format!("status-{case}-{n}");
    let shaped = |body: Value| match fields {
        Some(fields) => place(body, STANDARD, &fields.named()),
        None => body,
    };
    let normal = |found: Option<Value>| match found {
        Some(body) => json_response(200, &request_id, &shaped(body), false),
        None => record_not_found(),
    };
    match rule.map(|r| r.respond) {
        Some(Respond::Word(Word::Drop)) => drop_connection(provider, case, killer).await,
        Some(Respond::Word(Word::Hang)) => {
            tokio::time::sleep(HANG_FOR).await;
            normal(found)
        }
        Some(Respond::Answer(answer)) => scripted(&answer, &request_id, found.as_ref(), &shaped),
        Some(Respond::Word(Word::Record | Word::DnsFailure)) | None => normal(found),
    }
}

fn counters(provider: &Provider, case: &str) -> Response {
    match provider.counters(case) {
        Some(counters) => (
            StatusCode::OK,
            serde_json::to_string(&counters).unwrap_or_default(),
        )
            .into_response(),
        None => not_found(),
    }
}
