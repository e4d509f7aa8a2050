//! Spans to wire records (DESIGN §10.1), pure: no store, no clock of its own. An
//! `execute_tool` span is an operation; the HTTP client spans beneath it (at any
//! depth) are its attempts in start order; the phase each attempt reached, never
//! the span status alone, decides the operation's state. What the store already
//! holds comes in as [`Stored`]: an operation a late span belongs to gets only its
//! new attempts, and a new tool span repeating an UNKNOWN operation's call adds
//! its attempts to that operation, where the reconcile-before-repeat rule judges
//! them. HTTP spans whose tool span has not arrived wait ([`Mapped::waiting`])
//! until it does or until their window ends, when they become an operation of
//! tool `unknown`.

use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use serde_json::Value;

use super::settings::OtlpSettings;
use super::span::SpanFact;
use crate::core::contract::Contract;
use crate::core::ids::{OperationId, Sha256};
use crate::core::model::{
    Attempt, AttemptKind, FailureMode, Layer, Operation, Outcome, Phase, Risk, Role, State,
    TransitionRecord,
};
use crate::core::redact::redact;
use crate::wire::Record;

/// The tool of operations made from HTTP spans whose tool span never came.
pub const UNKNOWN_TOOL: &str = "unknown";

/// What the store holds that spans may attach to.
#[derive(Debug, Clone, Default)]
pub struct Stored {
    /// Operations by id, with the ids of their attempts.
    pub operations: HashMap<String, Vec<String>>,
    /// UNKNOWN operations, for repeats: id, tool, payload hash, business key.
    pub unknown: Vec<(OperationId, String, Sha256, Option<String>)>,
    /// Contracts by tool.
    pub contracts: HashMap<String, Contract>,
}

/// A span that waits for its tool span, since when.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    pub span: SpanFact,
    pub since: DateTime<Utc>,
}

/// What a set of spans maps to.
#[derive(Debug, Clone, Default)]
pub struct Mapped {
    /// Contracts declared in the config that the store lacks, then per operation
    /// its operation record, attempts and transition; each with the line of the
    /// span it came from.
    pub records: Vec<(usize, Record)>,
    /// Spans still waiting for their tool span (new and old alike).
    pub waiting: Vec<Waiting>,
    /// Keys of spans that waited and no longer do.
    pub released: Vec<(String, String)>,
    /// Spans of operations the store holds that it already has.
    pub already: u64,
    /// Values the new operations are found by besides their fields: their tool
    /// call's id (`gen_ai.tool.call.id`), by operation id.
    pub terms: Vec<(String, String)>,
}

/// A span's trace and span id.
type SpanKey = (String, String);

/// An HTTP span with the spans between it and the ancestor it reached.
type Reach<'a> = (&'a SpanFact, Vec<&'a SpanFact>);

/// Stable ids: an operation from its tool span, an attempt from its span.
pub fn operation_id(trace: &str, span: &str) -> String {
    format!("otel-{trace}-{span}")
}

fn attempt_id(span: &SpanFact) -> String {
    format!("otel-a-{}-{}", span.trace_id, span.span_id)
}

/// SHA-256 of the canonical JSON (keys sorted, no blanks) of `arguments`, a JSON
/// text or any other value; `None` when absent.
pub fn payload_hash(arguments: Option<&Value>) -> Option<Sha256> {
    Some(hash_arguments(&arguments_value(arguments?)))
}

/// Arguments as a JSON value: a JSON text is parsed, any other value kept.
fn arguments_value(arguments: &Value) -> Value {
    match arguments {
        Value::String(text) => serde_json::from_str(text).unwrap_or(Value::String(text.clone())),
        other => other.clone(),
    }
}

/// SHA-256 of the canonical JSON of a tool call's arguments: an operation's
/// payload hash, whichever door the call came through.
pub fn hash_arguments(arguments: &Value) -> Sha256 {
    Sha256::of(canonical(arguments).as_bytes())
}

fn canonical(value: &Value) -> String {
    match value {
        Value::Object(map) => {
            let sorted: BTreeMap<&String, &Value> = map.iter().collect();
            let fields: Vec<String> = sorted
                .into_iter()
                .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), canonical(v)))
                .collect();
            format!("{{{}}}", fields.join(","))
        }
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

/// The payload hash of an operation whose tool span carried no arguments: a
/// fixed digest the evidence shows as "payload unknown", never a guess.
pub fn unknown_payload() -> Sha256 {
    Sha256::of(b"holdfast:otlp:payload-unknown")
}

/// How far one attempt got, from its span.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reached {
    pub phase: Phase,
    pub outcome: Outcome,
    pub status: Option<u16>,
    pub error_type: Option<String>,
}

/// The phase and outcome a span shows (DESIGN §10.1's table).
pub fn reached(span: &SpanFact) -> Reached {
    let status = span
        .integer("http.response.status_code")
        .and_then(|s| u16::try_from(s).ok());
    let error_type = span
        .text("error.type")
        .map(str::to_owned)
        .or_else(|| {
            span.events
                .iter()
                .find(|(name, _)| name == "exception")
                .and_then(|(_, attrs)| attrs.get("exception.type")?.as_str().map(str::to_owned))
        })
        .filter(|e| !e.is_empty());
    let (phase, outcome) = match (status, error_type.as_deref()) {
        (Some(code), _) => (
            Phase::ResponseReceived,
            if code < 400 {
                Outcome::Ok
            } else {
                Outcome::HttpError
            },
        ),
        (None, Some(error)) => by_error(error),
        // Ended in error with no cause: it may have been applied.
        (None, None) if span.error => (Phase::RequestSent, Outcome::InvalidResponse),
        // A tool span that ended well answered; an HTTP span with no status did not.
        (None, None) if !span.is_http() => (Phase::ResponseReceived, Outcome::Ok),
        (None, None) => (Phase::RequestSent, Outcome::InvalidResponse),
    };
    Reached {
        phase,
        outcome,
        status,
        error_type,
    }
}

/// The phase an `error.type` without a response status shows.
fn by_error(error: &str) -> (Phase, Outcome) {
    let word: String = error
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    let squeezed = word.replace('_', "");
    let has = |needles: &[&str]| needles.iter().any(|n| squeezed.contains(n));
    if has(&["dns", "resolve", "nameresolution", "nodename", "nxdomain"]) {
        (Phase::Dns, Outcome::DnsFailure)
    } else if has(&[
        "connecttimeout",
        "connectionrefused",
        "econnrefused",
        "connecterror",
        "connectfailed",
        "failedtoconnect",
        "unreachable",
        "tls",
        "ssl",
        "handshake",
        "certificate",
    ]) {
        (Phase::NotSent, Outcome::ConnectionReset)
    } else if has(&["timeout", "timedout", "deadline"]) {
        (Phase::RequestSent, Outcome::Timeout)
    } else {
        (Phase::RequestSent, Outcome::ConnectionReset)
    }
}

/// Where an operation's fields come from besides its spans.
pub struct Context<'a> {
    pub settings: &'a OtlpSettings,
    pub stored: &'a Stored,
    /// The identity the door writes as (`by` of the transitions).
    pub by: &'a str,
    pub now: DateTime<Utc>,
}

/// Maps `fresh` spans (just received, read without error) together with the
/// spans that were waiting.
pub fn map(fresh: Vec<SpanFact>, waiting: Vec<Waiting>, cx: &Context<'_>) -> Mapped {
    let mut since: HashMap<(String, String), DateTime<Utc>> = HashMap::new();
    let mut spans: HashMap<(String, String), SpanFact> = HashMap::new();
    let was_waiting: HashSet<(String, String)> = waiting.iter().map(|w| w.span.key()).collect();
    for w in waiting {
        since.insert(w.span.key(), w.since);
        spans.insert(w.span.key(), w.span);
    }
    for span in fresh {
        since.entry(span.key()).or_insert(cx.now);
        spans.entry(span.key()).or_insert(span);
    }

    // Each HTTP span finds its nearest tool ancestor, or the first ancestor that
    // has not arrived (with the spans on the way, which wait with it).
    let mut under_tool: HashMap<SpanKey, Vec<Reach<'_>>> = HashMap::new();
    let mut orphans: BTreeMap<SpanKey, Vec<Reach<'_>>> = BTreeMap::new();
    for span in spans.values().filter(|s| s.is_http()) {
        let mut path: Vec<&SpanFact> = Vec::new();
        let mut at = span;
        let mut hops = 0;
        loop {
            hops += 1;
            let Some(parent) = at.parent.as_ref() else {
                // A root with no tool span above it: nothing will ever arrive.
                orphans
                    .entry((span.trace_id.clone(), span.span_id.clone()))
                    .or_default()
                    .push((span, path));
                break;
            };
            let key = (at.trace_id.clone(), parent.clone());
            match spans.get(&key) {
                Some(p) if p.is_tool() => {
                    under_tool.entry(key).or_default().push((span, path));
                    break;
                }
                Some(p) if hops < crate::wire::MAX_DEPTH.max(64) => {
                    path.push(p);
                    at = p;
                }
                _ => {
                    orphans.entry(key).or_default().push((span, path));
                    break;
                }
            }
        }
    }

    let mut out = Mapped::default();
    let mut declared: HashSet<String> = HashSet::new();
    let mut tools: Vec<&SpanFact> = spans.values().filter(|s| s.is_tool()).collect();
    tools.sort_by(|a, b| (a.start, &a.span_id).cmp(&(b.start, &b.span_id)));
    for tool in tools {
        let key = tool.key();
        let joined = under_tool.remove(&key).unwrap_or_default();
        for (span, path) in &joined {
            for s in std::iter::once(*span).chain(path.iter().copied()) {
                if was_waiting.contains(&s.key()) {
                    out.released.push(s.key());
                }
            }
        }
        let mut children: Vec<&SpanFact> = joined.iter().map(|(s, _)| *s).collect();
        sort_by_start(&mut children);
        let attempts = if children.is_empty() {
            vec![tool]
        } else {
            children
        };
        let call = Call {
            id: operation_id(&tool.trace_id, &tool.span_id),
            tool: Some(tool),
            name: tool.text("gen_ai.tool.name").unwrap_or(UNKNOWN_TOOL),
            attempts,
        };
        emit(&call, cx, &mut declared, &mut out);
        if was_waiting.contains(&key) {
            out.released.push(key);
        }
    }
    for (missing, group) in orphans {
        let expired = group.iter().all(|(span, _)| {
            since
                .get(&span.key())
                .is_some_and(|t| *t + cx.settings.pending_window() <= cx.now)
        });
        let id = operation_id(&missing.0, &missing.1);
        let stored = cx.stored.operations.contains_key(&id);
        let root = group.iter().all(|(span, _)| span.parent.is_none());
        if stored || expired || root {
            let mut attempts: Vec<&SpanFact> = group.iter().map(|(s, _)| *s).collect();
            sort_by_start(&mut attempts);
            let call = Call {
                id,
                tool: None,
                name: UNKNOWN_TOOL,
                attempts,
            };
            emit(&call, cx, &mut declared, &mut out);
            for (span, path) in &group {
                for s in std::iter::once(*span).chain(path.iter().copied()) {
                    if was_waiting.contains(&s.key()) {
                        out.released.push(s.key());
                    }
                }
            }
        } else {
            for (span, path) in group {
                for s in std::iter::once(span).chain(path) {
                    let since = since.get(&s.key()).copied().unwrap_or(cx.now);
                    if !out.waiting.iter().any(|w| w.span.key() == s.key()) {
                        out.waiting.push(Waiting {
                            span: s.clone(),
                            since,
                        });
                    }
                }
            }
        }
    }
    out.released.sort();
    out.released.dedup();
    out
}

fn sort_by_start(spans: &mut [&SpanFact]) {
    spans.sort_by(|a, b| (a.start, &a.span_id).cmp(&(b.start, &b.span_id)));
}

/// One tool call: its operation id, its tool span when it has one, its attempts.
struct Call<'a> {
    id: String,
    tool: Option<&'a SpanFact>,
    name: &'a str,
    attempts: Vec<&'a SpanFact>,
}

impl Call<'_> {
    /// A text attribute of the tool span, else of the first attempt that has it.
    fn text(&self, name: &str) -> Option<&str> {
        self.tool
            .and_then(|t| t.text(name))
            .or_else(|| self.attempts.iter().find_map(|a| a.text(name)))
    }
}

fn emit(call: &Call<'_>, cx: &Context<'_>, declared: &mut HashSet<String>, out: &mut Mapped) {
    let line = call
        .tool
        .map(|t| t.line)
        .filter(|l| *l > 0)
        .or_else(|| call.attempts.iter().map(|a| a.line).find(|l| *l > 0))
        .unwrap_or(0);
    let payload = payload_hash(
        call.tool
            .and_then(|t| t.attributes.get("gen_ai.tool.call.arguments")),
    );
    let tool_settings = cx.settings.tool(call.name);
    let business_key = call
        .text("holdfast.business_key")
        .map(str::to_owned)
        .or_else(|| {
            let arguments = call
                .tool
                .and_then(|t| t.attributes.get("gen_ai.tool.call.arguments"))
                .map(arguments_value);
            tool_settings?.business_key(arguments.as_ref())
        })
        // As the store keeps it, so that it finds the stored key it repeats.
        .map(|key| crate::core::redact::redact(&key).into_owned());
    let stored_attempts = cx.stored.operations.get(&call.id);
    // A new call with the same tool, arguments and business key as an UNKNOWN
    // operation repeats it: its attempts join that operation.
    let repeat_of = match (stored_attempts, &payload) {
        (None, Some(hash)) => cx
            .stored
            .unknown
            .iter()
            .find(|(_, tool, h, key)| tool == call.name && h == hash && *key == business_key)
            .map(|(id, ..)| id.as_str().to_owned()),
        _ => None,
    };
    let into = repeat_of.as_deref().unwrap_or(&call.id);
    let Ok(op_id) = OperationId::parse(into) else {
        return;
    };
    if let Some(known) = repeat_of
        .as_ref()
        .and_then(|id| cx.stored.operations.get(id))
        .or(stored_attempts)
    {
        // Only what the store lacks, numbered after what it holds. A tool span
        // with no HTTP spans is an attempt only of an operation it creates.
        let mut seq = u32::try_from(known.len()).unwrap_or(u32::MAX);
        for span in &call.attempts {
            let id = attempt_id(span);
            if known.contains(&id) || (span.is_tool() && stored_attempts.is_some()) {
                out.already += 1;
                continue;
            }
            seq = seq.saturating_add(1);
            let record = Record::Attempt(attempt(span, &op_id, seq, &id, call.tool.is_none()));
            out.records.push((line, record));
        }
        return;
    }

    let contract = cx.stored.contracts.get(call.name).cloned().or_else(|| {
        let declared_here = cx.settings.tool(call.name)?.contract();
        if declared.insert(declared_here.tool.clone()) {
            out.records
                .push((line, Record::Contract(declared_here.clone())));
        }
        Some(declared_here)
    });
    let attempts: Vec<Attempt> = call
        .attempts
        .iter()
        .enumerate()
        .map(|(i, span)| {
            let seq = u32::try_from(i + 1).unwrap_or(u32::MAX);
            attempt(span, &op_id, seq, &attempt_id(span), call.tool.is_none())
        })
        .collect();
    let write = match &contract {
        Some(c) => c.is_write(),
        None => {
            let methods: Vec<&str> = call
                .attempts
                .iter()
                .filter_map(|a| a.text("http.request.method"))
                .collect();
            // No method anywhere: whether it writes is unknown, so it counts as one.
            methods.is_empty()
                || methods
                    .iter()
                    .any(|m| !matches!(m.to_ascii_uppercase().as_str(), "GET" | "HEAD" | "OPTIONS"))
        }
    };
    let (state, mode, deciding) = outcome(&attempts, write, contract.as_ref());
    let first = call.attempts.first().copied();
    let started = call
        .tool
        .map_or_else(|| first.map_or(cx.now, |s| s.start), |t| t.start);
    let ended = call
        .attempts
        .iter()
        .filter_map(|a| a.end)
        .chain(call.tool.and_then(|t| t.end))
        .max()
        .unwrap_or(started);
    let tenant = call
        .text("holdfast.tenant")
        .map(str::to_owned)
        .or_else(|| tool_settings.and_then(|t| t.tenant.clone()))
        .or_else(|| cx.settings.tenant.clone())
        .unwrap_or_else(|| "default".into());
    let actor = call
        .text("gen_ai.agent.name")
        .map(|a| format!("agent:{a}"))
        .or_else(|| call.text("service.name").map(|s| format!("svc:{s}")))
        .unwrap_or_else(|| "agent:unknown".into());
    let target = call
        .text("holdfast.target")
        .or_else(|| call.text("server.address"))
        .map_or_else(|| format!("tool:{}", call.name), str::to_owned);
    let owner = contract
        .as_ref()
        .map(|c| c.owner.clone())
        .or_else(|| cx.settings.owner.clone())
        .unwrap_or_else(|| "unassigned".into());
    let risk = tool_settings
        .and_then(|t| t.risk)
        .or(cx.settings.risk)
        .unwrap_or(Risk::Medium);
    let operation = Operation {
        id: op_id.clone(),
        tenant,
        actor,
        tool: call.name.to_owned(),
        action: contract
            .as_ref()
            .map_or_else(|| call.name.to_owned(), |c| c.action.clone()),
        target,
        payload_hash: payload.unwrap_or_else(unknown_payload),
        intent_hash: None,
        risk,
        approval: None,
        idempotency_key: call
            .text("http.request.header.idempotency-key")
            .map(str::to_owned),
        business_key,
        correlation_id: call
            .text("gen_ai.conversation.id")
            .or_else(|| call.text("gen_ai.tool.call.id"))
            .map(str::to_owned),
        owner,
        max_attempts: contract.as_ref().map(|c| c.max_attempts),
        deadline: None,
        failure_mode: mode,
        state,
        next_observation_at: None,
        depends_on: Vec::new(),
        parent: None,
        relation: None,
        created_at: started,
    };
    let reason = deciding.map(|i| {
        let span = call.attempts[i];
        let mut words = format!("attempt {} of {}", i + 1, attempts.len());
        if let Some(method) = span.text("http.request.method") {
            words.push_str(&format!(" {method}"));
        }
        if let Some(url) = span.text("url.full") {
            words.push_str(&format!(" {}", super::redact_url(url)));
        }
        let a = &attempts[i];
        words.push_str(&format!(": {}, {}", a.phase, a.outcome));
        if let Some(status) = a.http_status {
            words.push_str(&format!(" {status}"));
        }
        if let Some(error) = &a.error_type {
            words.push_str(&format!(" ({error})"));
        }
        if contract.is_none() {
            words.push_str("; no contract for the tool");
        }
        if operation.payload_hash == unknown_payload() {
            words.push_str("; payload unknown (no gen_ai.tool.call.arguments)");
        }
        words
    });
    let evidence = deciding
        .map(|i| vec![attempts[i].id.clone()])
        .unwrap_or_default();
    if let Some(call_id) = call.text("gen_ai.tool.call.id") {
        out.terms
            .push((op_id.as_str().to_owned(), redact(call_id).into_owned()));
    }
    out.records.push((line, Record::Operation(operation)));
    out.records
        .extend(attempts.into_iter().map(|a| (line, Record::Attempt(a))));
    if state != State::Sent {
        out.records.push((
            line,
            Record::Transition(TransitionRecord {
                operation: op_id,
                from: State::Sent,
                to: state,
                by: cx.by.to_owned(),
                role: Some(Role::System),
                at: ended,
                reason,
                evidence,
            }),
        ));
    }
}

/// The state a call ended in, its failure mode, and the attempt that shows it.
fn outcome(
    attempts: &[Attempt],
    write: bool,
    contract: Option<&Contract>,
) -> (State, Option<FailureMode>, Option<usize>) {
    let Some(last) = attempts.len().checked_sub(1) else {
        return (State::Sent, None, None);
    };
    let answered_ok = |a: &Attempt| a.phase == Phase::ResponseReceived && a.outcome == Outcome::Ok;
    let uncertain = attempts.iter().enumerate().rev().find(|(i, a)| {
        a.phase.may_have_crossed_boundary()
            && crate::core::matrix::ambiguous(a.outcome)
            && !attempts[i + 1..].iter().any(answered_ok)
    });
    if let Some((i, _)) = uncertain
        && write
    {
        return (State::Unknown, Some(FailureMode::TimeoutUnknown), Some(i));
    }
    let a = &attempts[last];
    if answered_ok(a) {
        return (State::Succeeded, None, Some(last));
    }
    let state_mode = match a.http_status {
        Some(409) if write => (State::Unknown, FailureMode::DuplicateReplay),
        Some(401 | 403) => (State::Failed, FailureMode::AuthDenied),
        Some(429) => (State::Failed, FailureMode::RateLimited),
        Some(code) if code < 500 => (State::Failed, FailureMode::ValidationFailed),
        Some(code) => {
            let retryable = contract.is_some_and(|c| {
                c.retryable
                    .iter()
                    .any(|r| r == &format!("http_{code}") || r == "http_5xx")
            });
            if write && !retryable {
                (State::Unknown, FailureMode::TransientError)
            } else {
                (State::Failed, FailureMode::TransientError)
            }
        }
        None if a.phase.may_have_crossed_boundary() => (State::Failed, FailureMode::TimeoutUnknown),
        None => (State::Failed, FailureMode::TransientError),
    };
    (state_mode.0, Some(state_mode.1), Some(last))
}

fn attempt(span: &SpanFact, op: &OperationId, seq: u32, id: &str, orphan: bool) -> Attempt {
    let r = reached(span);
    let ended = span.end;
    let retry_after = span
        .text("http.response.header.retry-after")
        .and_then(|v| retry_after(v, ended.unwrap_or(span.start)));
    let provider_request_id = [
        "http.response.header.x-request-id",
        "http.response.header.request-id",
        "http.response.header.x-amzn-requestid",
        "http.response.header.x-ms-request-id",
    ]
    .iter()
    .find_map(|h| span.text(h))
    .map(str::to_owned);
    Attempt {
        id: id.to_owned(),
        operation: op.clone(),
        seq,
        kind: AttemptKind::Request,
        layer: Some(if span.is_http() || orphan {
            Layer::Sdk
        } else {
            Layer::Agent
        }),
        started_at: span.start,
        ended_at: ended,
        phase: r.phase,
        outcome: r.outcome,
        http_status: r.status,
        error_type: r.error_type,
        retry_after,
        provider_request_id,
        request_hash: None,
        response_hash: None,
        resend_count: span
            .integer("http.request.resend_count")
            .and_then(|n| u32::try_from(n).ok()),
        replayed: None,
        trace_id: Some(span.trace_id.clone()),
        response_excerpt: None,
        url: span
            .text("url.full")
            .map(|url| redact(&super::redact_url(url)).into_owned()),
    }
}

/// `Retry-After` as seconds or an HTTP date, as an instant.
fn retry_after(value: &str, at: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<i64>() {
        return at.checked_add_signed(Duration::seconds(secs.clamp(0, 86_400 * 366)));
    }
    DateTime::parse_from_rfc2822(value)
        .ok()
        .map(|d| d.with_timezone(&Utc))
}
