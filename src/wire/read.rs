//! The strict reader of one wire line: JSON tree first, then every field of the
//! record extracted by hand, so that each refusal names its field path and rule.

use chrono::{DateTime, Utc};
use std::borrow::Cow;

use super::tree::{self, MAX_DEPTH, Node, TreeError};
use super::{LineError, Record};
use crate::core::clock::parse_instant;
use crate::core::contract::{
    CircuitConfig, Contract, DomainReview, IdempotencyContract, Inventory, Owners, RateLimit,
    RateScope, Schema,
};
use crate::core::ids::{OperationId, Sha256};
use crate::core::lookup::{
    JsonPointer, LookupAuth, LookupFields, LookupSpec, PathTemplate, ResponseShape, StatusLookup,
    UrlTemplate,
};
use crate::core::model::{
    Approval, Attempt, AttemptKind, Expectation, FailureMode, Item, ItemState, Layer, Matches,
    Observation, ObservationSource, Operation, Outcome, Phase, Relation, Risk, Role, State,
    TransitionRecord,
};

/// The longest line accepted, in bytes (1 MiB).
pub const MAX_LINE_BYTES: usize = 1_048_576;
/// The longest free-text field, in bytes (64 KiB).
pub const MAX_TEXT_BYTES: usize = 65_536;
/// The longest id or key, in characters.
pub const MAX_KEY_CHARS: usize = 128;
/// At most this many errors are listed for one line; a last one says how many more.
pub(super) const MAX_ERRORS_PER_LINE: usize = 32;

/// The largest value of the integer fields (they are stored as `u32`).
const U32_MAX: u64 = u32::MAX as u64;

/// The record types, in the order DESIGN §5 lists them.
pub const TYPES: &[&str] = &[
    "contract",
    "operation",
    "attempt",
    "item",
    "observation",
    "transition",
    "expectation",
];

const CONTRACT_FIELDS: &[&str] = &[
    "type",
    "tool",
    "version",
    "action",
    "method",
    "idempotency",
    "status_lookup",
    "retryable",
    "compensation",
    "owner",
    "max_attempts",
    "budget_seconds",
    "path",
    "response",
    "tenant",
    "schema",
    "business_rules",
    "side_effects",
    "downstream",
    "rate_limits",
    "owners",
    "domain_review",
    "circuit",
];
const RATE_LIMIT_FIELDS: &[&str] = &["scope", "limit", "per_seconds"];
const OWNERS_FIELDS: &[&str] = &["integration", "security", "business", "incident"];
const CIRCUIT_FIELDS: &[&str] = &["failures", "window_seconds", "probe_after_seconds"];
const RESPONSE_FIELDS: &[&str] = &[
    "record_id",
    "target",
    "tenant",
    "payload_hash",
    "version",
    "items",
];
const IDEMPOTENCY_FIELDS: &[&str] = &["supported", "scope", "retention_hours"];
const LOOKUP_FIELDS: &[&str] = &[
    "method",
    "url",
    "provider",
    "auth",
    "timeout_ms",
    "lag_seconds",
    "not_found_status",
    "fields",
];
const LOOKUP_AUTH_FIELDS: &[&str] = &["header", "prefix", "env"];
const LOOKUP_POINTER_FIELDS: &[&str] = &[
    "target",
    "payload_hash",
    "tenant",
    "version",
    "effect_count",
    "provider_request_id",
];
const OPERATION_FIELDS: &[&str] = &[
    "type",
    "id",
    "tenant",
    "actor",
    "tool",
    "action",
    "target",
    "payload_hash",
    "intent_hash",
    "risk",
    "approval",
    "idempotency_key",
    "business_key",
    "correlation_id",
    "owner",
    "max_attempts",
    "deadline",
    "failure_mode",
    "state",
    "next_observation_at",
    "depends_on",
    "parent",
    "relation",
    "created_at",
];
const APPROVAL_FIELDS: &[&str] = &["by", "policy", "at", "payload_hash", "expires_at"];
const ATTEMPT_FIELDS: &[&str] = &[
    "type",
    "id",
    "operation",
    "seq",
    "kind",
    "layer",
    "started_at",
    "ended_at",
    "phase",
    "outcome",
    "http_status",
    "error_type",
    "retry_after",
    "provider_request_id",
    "request_hash",
    "response_hash",
    "resend_count",
    "replayed",
    "trace_id",
    "response_excerpt",
];
const ITEM_FIELDS: &[&str] = &[
    "type",
    "operation",
    "index",
    "label",
    "state",
    "authoritative_id",
];
const OBSERVATION_FIELDS: &[&str] = &[
    "type",
    "id",
    "operation",
    "observed_at",
    "source",
    "found",
    "matches",
    "effect_count",
    "raw_hash",
    "note",
];
const MATCHES_FIELDS: &[&str] = &["target", "payload_hash", "owner", "version"];
const TRANSITION_FIELDS: &[&str] = &[
    "type",
    "operation",
    "from",
    "to",
    "by",
    "role",
    "at",
    "reason",
    "evidence",
];
const EXPECTATION_FIELDS: &[&str] = &[
    "type",
    "operation",
    "expected_state",
    "requires_reconciliation",
    "duplicate_risk",
    "prohibited",
    "veto",
];

/// Parses one line (without its newline) into a record, or reports every error
/// found on it, each with its field path and the rule it breaks.
pub fn parse_line(bytes: &[u8], line: usize) -> Result<Record, Vec<LineError>> {
    let whole = |reason: String| {
        vec![LineError {
            line,
            field: "-".into(),
            reason,
        }]
    };
    if bytes.len() > MAX_LINE_BYTES {
        return Err(whole(too_long_reason(bytes.len() as u64)));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| {
        whole(format!(
            "invalid UTF-8 at byte offset {}; lines must be UTF-8 text",
            e.valid_up_to()
        ))
    })?;
    let root = tree::parse(text).map_err(|e| match e {
        TreeError::Syntax { column, message } => {
            whole(format!("not valid JSON at column {column}: {message}"))
        }
        TreeError::TooDeep => whole(format!(
            "arrays and objects are nested deeper than {MAX_DEPTH} levels"
        )),
        TreeError::DuplicateKey { path } => vec![LineError {
            line,
            field: path,
            reason: "duplicate key; each key may appear once per object".into(),
        }],
    })?;
    let Node::Object(entries) = &root else {
        return Err(whole(format!(
            "each line must be one JSON object, not {}",
            root.kind()
        )));
    };
    let mut sink = Sink {
        line,
        errors: Vec::new(),
    };
    let record = read_record(entries, &mut sink);
    match record {
        Some(record) if sink.errors.is_empty() => Ok(record),
        _ => Err(sink.finish()),
    }
}

/// The reason given for a line longer than [`MAX_LINE_BYTES`].
pub(super) fn too_long_reason(len: u64) -> String {
    format!("line is {len} bytes long; at most {MAX_LINE_BYTES} bytes (1 MiB) are allowed")
}

type Entries<'a> = [(Cow<'a, str>, Node<'a>)];

fn read_record(entries: &Entries<'_>, sink: &mut Sink) -> Option<Record> {
    let top = Obj {
        entries,
        prefix: "",
        what: "",
        allowed: &[],
    };
    if entries.first().is_some_and(|(k, _)| k != "type") && top.present("type") {
        sink.push("type", "must be the first field of the line");
    }
    let kind = top.req(sink, "type", |n| {
        let s = string(n)?;
        TYPES
            .iter()
            .position(|t| *t == s)
            .ok_or_else(|| format!("must be one of: {}", TYPES.join(", ")))
    })?;
    match kind {
        0 => read_contract(top.named("a contract", CONTRACT_FIELDS), sink).map(Record::Contract),
        1 => {
            read_operation(top.named("an operation", OPERATION_FIELDS), sink).map(Record::Operation)
        }
        2 => read_attempt(top.named("an attempt", ATTEMPT_FIELDS), sink).map(Record::Attempt),
        3 => read_item(top.named("an item", ITEM_FIELDS), sink).map(Record::Item),
        4 => read_observation(top.named("an observation", OBSERVATION_FIELDS), sink)
            .map(Record::Observation),
        5 => read_transition(top.named("a transition", TRANSITION_FIELDS), sink)
            .map(Record::Transition),
        _ => read_expectation(top.named("an expectation", EXPECTATION_FIELDS), sink)
            .map(Record::Expectation),
    }
}

fn read_contract(o: Obj<'_, '_>, sink: &mut Sink) -> Option<Contract> {
    let tool = o.req(sink, "tool", key);
    let version = o.req(sink, "version", key);
    let action = o.req(sink, "action", key);
    let method = o.req(sink, "method", key);
    let idempotency = o.req(sink, "idempotency", object).and_then(|entries| {
        let n = o.nested(entries, "idempotency.", "idempotency", IDEMPOTENCY_FIELDS);
        let supported = n.req(sink, "supported", boolean);
        let scope = n.opt(sink, "scope", key);
        let retention_hours = n.opt(sink, "retention_hours", int(0, U32_MAX));
        n.refuse_unknown(sink);
        Some(IdempotencyContract {
            supported: supported?,
            scope,
            retention_hours,
        })
    });
    let status_lookup = match o.get("status_lookup") {
        Some(Node::Object(entries)) => read_lookup(o, entries, sink),
        _ => o.req(sink, "status_lookup", |n| match n {
            Node::Bool(b) => Ok(StatusLookup::from(*b)),
            other => Err(wrong("a boolean or a lookup object", other)),
        }),
    };
    let retryable = o.list(sink, "retryable", key);
    let compensation = o.opt(sink, "compensation", key);
    let owner = o.req(sink, "owner", key);
    let max_attempts = o.req(sink, "max_attempts", int(1, U32_MAX));
    let budget_seconds = o.req(sink, "budget_seconds", int(1, U32_MAX));
    let path = o.opt(sink, "path", |n| PathTemplate::parse(string(n)?));
    let response = o.opt(sink, "response", object).map(|fields| {
        let f = o.nested(fields, "response.", "response", RESPONSE_FIELDS);
        let mut pointer = |name: &str| f.opt(sink, name, |node| JsonPointer::parse(string(node)?));
        let out = ResponseShape {
            record_id: pointer("record_id"),
            target: pointer("target"),
            tenant: pointer("tenant"),
            payload_hash: pointer("payload_hash"),
            version: pointer("version"),
            items: pointer("items"),
        };
        f.refuse_unknown(sink);
        out
    });
    let inventory = read_inventory(o, sink);
    let owners = o.opt(sink, "owners", object).map(|fields| {
        let f = o.nested(fields, "owners.", "owners", OWNERS_FIELDS);
        let out = Owners {
            integration: f.opt(sink, "integration", key),
            security: f.opt(sink, "security", key),
            business: f.opt(sink, "business", key),
            incident: f.opt(sink, "incident", key),
        };
        f.refuse_unknown(sink);
        out
    });
    let domain_review = o.opt(sink, "domain_review", choice::<DomainReview>);
    let circuit = o.opt(sink, "circuit", object).and_then(|fields| {
        let c = o.nested(fields, "circuit.", "circuit", CIRCUIT_FIELDS);
        let failures = c.req(sink, "failures", int(1, U32_MAX));
        let window_seconds = c.req(sink, "window_seconds", int(1, U32_MAX));
        let probe_after_seconds = c.req(sink, "probe_after_seconds", int(1, U32_MAX));
        c.refuse_unknown(sink);
        Some(CircuitConfig {
            failures: failures?,
            window_seconds: window_seconds?,
            probe_after_seconds: probe_after_seconds?,
        })
    });
    o.refuse_unknown(sink);
    Some(Contract {
        tool: tool?,
        version: version?,
        action: action?,
        method: method?,
        idempotency: idempotency?,
        status_lookup: status_lookup?,
        retryable,
        compensation,
        owner: owner?,
        max_attempts: max_attempts?,
        budget_seconds: budget_seconds?,
        path,
        response,
        inventory,
        owners,
        domain_review,
        circuit,
    })
}

/// The inventory fields of a contract (DESIGN §5), every one optional.
fn read_inventory(o: Obj<'_, '_>, sink: &mut Sink) -> Inventory {
    let tenant = o.opt(sink, "tenant", key);
    let schema = o.opt(sink, "schema", |n| match n {
        Node::Str(_) => text(n).and_then(|s| {
            if s.trim().is_empty() {
                Err("must not be empty".into())
            } else {
                Ok(Schema::Reference(s))
            }
        }),
        Node::Object(_) => Ok(Schema::Inline(json_value(n))),
        other => Err(wrong("a string (a reference) or an object", other)),
    });
    let business_rules = o.list(sink, "business_rules", text);
    let side_effects = o.list(sink, "side_effects", text);
    let downstream = o.list(sink, "downstream", key);
    let rate_limits = match o.get("rate_limits") {
        None | Some(Node::Null) => Vec::new(),
        Some(Node::Array(items)) => items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| read_rate_limit(o, i, item, sink))
            .collect(),
        Some(other) => {
            sink.push_owned(
                o.path("rate_limits"),
                wrong("an array of rate-limit objects", other),
            );
            Vec::new()
        }
    };
    Inventory {
        tenant,
        schema,
        business_rules,
        side_effects,
        downstream,
        rate_limits,
    }
}

/// One entry of `rate_limits`, its errors named `rate_limits[i].field`.
fn read_rate_limit(
    o: Obj<'_, '_>,
    i: usize,
    item: &Node<'_>,
    sink: &mut Sink,
) -> Option<RateLimit> {
    let Node::Object(entries) = item else {
        sink.push_owned(format!("rate_limits[{i}]"), wrong("an object", item));
        return None;
    };
    let before = sink.errors.len();
    let n = o.nested(entries, "", "a rate limit", RATE_LIMIT_FIELDS);
    let scope = n.req(sink, "scope", choice::<RateScope>);
    let limit = n.req(sink, "limit", int(1, U32_MAX));
    let per_seconds = n.req(sink, "per_seconds", int(1, U32_MAX));
    n.refuse_unknown(sink);
    for e in &mut sink.errors[before..] {
        e.field = format!("rate_limits[{i}].{}", e.field);
    }
    Some(RateLimit {
        scope: scope?,
        limit: limit?,
        per_seconds: per_seconds?,
    })
}

/// A JSON tree as a `serde_json` value, for an inline schema kept as given.
fn json_value(node: &Node<'_>) -> serde_json::Value {
    use serde_json::Value;
    match node {
        Node::Null => Value::Null,
        Node::Bool(b) => Value::Bool(*b),
        Node::UInt(v) => Value::from(*v),
        Node::Int(v) => Value::from(*v),
        Node::Float(v) => serde_json::Number::from_f64(*v).map_or(Value::Null, Value::Number),
        Node::Str(s) => Value::String(s.to_string()),
        Node::Array(items) => Value::Array(items.iter().map(json_value).collect()),
        Node::Object(entries) => Value::Object(
            entries
                .iter()
                .map(|(k, v)| (k.to_string(), json_value(v)))
                .collect(),
        ),
    }
}

/// The object form of `status_lookup` (DESIGN §9.1), checked so that a lookup that
/// could never be made is refused at ingest.
fn read_lookup<'t, 'a>(
    o: Obj<'t, 'a>,
    entries: &'t Entries<'a>,
    sink: &mut Sink,
) -> Option<StatusLookup> {
    let n = o.nested(entries, "status_lookup.", "status_lookup", LOOKUP_FIELDS);
    let method = n.req(sink, "method", |node| {
        let m = string(node)?;
        if m == "GET" {
            Ok(m.to_owned())
        } else {
            Err(format!(
                "{m:?} is not allowed: a status lookup only reads, with GET"
            ))
        }
    });
    let url = n.req(sink, "url", |node| UrlTemplate::parse(string(node)?));
    let provider = n.opt(sink, "provider", binding_name);
    let auth = n.opt(sink, "auth", object).and_then(|auth| {
        let a = n.nested(
            auth,
            "status_lookup.auth.",
            "status_lookup.auth",
            LOOKUP_AUTH_FIELDS,
        );
        let header = a.req(sink, "header", header_name);
        let prefix = a.opt(sink, "prefix", text);
        let env = a.req(sink, "env", env_name);
        a.refuse_unknown(sink);
        Some(LookupAuth {
            header: header?,
            prefix,
            env: env?,
        })
    });
    let timeout_ms = n.opt(
        sink,
        "timeout_ms",
        int(1, u64::from(LookupSpec::MAX_TIMEOUT_MS)),
    );
    let lag_seconds = n.opt(sink, "lag_seconds", int(0, U32_MAX));
    let not_found_status = match n.get("not_found_status") {
        None | Some(Node::Null) => None,
        Some(Node::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match int(200, 599)(item) {
                    Ok(status) => out.push(status),
                    Err(reason) => {
                        sink.push_owned(format!("status_lookup.not_found_status[{i}]"), reason)
                    }
                }
            }
            Some(out)
        }
        Some(other) => {
            sink.push_owned(
                "status_lookup.not_found_status".into(),
                wrong("an array of HTTP statuses", other),
            );
            None
        }
    };
    let fields = n.opt(sink, "fields", object).map(|fields| {
        let f = n.nested(
            fields,
            "status_lookup.fields.",
            "status_lookup.fields",
            LOOKUP_POINTER_FIELDS,
        );
        let mut pointer = |name: &str| f.opt(sink, name, |node| JsonPointer::parse(string(node)?));
        let out = LookupFields {
            target: pointer("target"),
            payload_hash: pointer("payload_hash"),
            tenant: pointer("tenant"),
            version: pointer("version"),
            effect_count: pointer("effect_count"),
            provider_request_id: pointer("provider_request_id"),
        };
        f.refuse_unknown(sink);
        out
    });
    n.refuse_unknown(sink);
    Some(StatusLookup::Http(Box::new(LookupSpec {
        method: method?,
        url: url?,
        provider,
        auth,
        timeout_ms,
        lag_seconds,
        not_found_status,
        fields: fields.unwrap_or_default(),
    })))
}

/// The name of an operator's lookup binding: 1 to 64 of `a-z`, `0-9`, `_`, `-`.
fn binding_name(node: &Node<'_>) -> Result<String, String> {
    let s = string(node)?;
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-';
    if s.is_empty() || s.len() > 64 || !s.chars().all(ok) {
        return Err(format!(
            "{s:?} is not a binding name: 1 to 64 of a-z, 0-9, `_` and `-`"
        ));
    }
    Ok(s.to_owned())
}

/// An HTTP header name: a token of RFC 9110.
fn header_name(node: &Node<'_>) -> Result<String, String> {
    let s = string(node)?;
    let tchar = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    if s.is_empty() || s.len() > MAX_KEY_CHARS || !s.chars().all(tchar) {
        return Err(format!("{s:?} is not an HTTP header name"));
    }
    Ok(s.to_owned())
}

/// The name of an environment variable: letters, digits and `_`, not starting
/// with a digit.
fn env_name(node: &Node<'_>) -> Result<String, String> {
    let s = string(node)?;
    let ok = s.len() <= MAX_KEY_CHARS
        && s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ok {
        return Err(format!(
            "{s:?} is not an environment variable name (letters, digits and _, not starting with a digit)"
        ));
    }
    Ok(s.to_owned())
}

fn read_operation(o: Obj<'_, '_>, sink: &mut Sink) -> Option<Operation> {
    let id = o.req(sink, "id", operation_id);
    let tenant = o.req(sink, "tenant", key);
    let actor = o.req(sink, "actor", key);
    let tool = o.req(sink, "tool", key);
    let action = o.req(sink, "action", key);
    let target = o.req(sink, "target", untrusted);
    let payload_hash = o.req(sink, "payload_hash", hash);
    let intent_hash = o.opt(sink, "intent_hash", hash);
    let risk = o.req(sink, "risk", choice::<Risk>);
    let approval = o.opt(sink, "approval", object).and_then(|entries| {
        let n = o.nested(entries, "approval.", "approval", APPROVAL_FIELDS);
        let by = n.req(sink, "by", key);
        let policy = n.req(sink, "policy", key);
        let at = n.opt(sink, "at", time);
        let payload_hash = n.opt(sink, "payload_hash", hash);
        let expires_at = n.opt(sink, "expires_at", time);
        if let (Some(at), Some(expires_at)) = (at, expires_at)
            && expires_at <= at
        {
            sink.push(
                "approval.expires_at",
                "must be after approval.at (an approval that expires when it is given is none)",
            );
        }
        n.refuse_unknown(sink);
        Some(Approval {
            by: by?,
            policy: policy?,
            at,
            payload_hash,
            expires_at,
        })
    });
    let idempotency_key = o.opt(sink, "idempotency_key", key);
    let business_key = o.opt(sink, "business_key", evidence_key);
    let correlation_id = o.opt(sink, "correlation_id", key);
    let owner = o.req(sink, "owner", key);
    let max_attempts = o.opt(sink, "max_attempts", int(1, U32_MAX));
    let deadline = o.opt(sink, "deadline", time);
    let failure_mode = o.opt(sink, "failure_mode", choice::<FailureMode>);
    let state = o.req(sink, "state", choice::<State>);
    let next_observation_at = o.opt(sink, "next_observation_at", time);
    let depends_on = o.list(sink, "depends_on", operation_id);
    let parent = o.opt(sink, "parent", operation_id);
    let relation = o.opt(sink, "relation", choice::<Relation>);
    let created_at = o.req(sink, "created_at", time);
    if o.present("parent") != o.present("relation") {
        sink.push(
            if o.present("parent") {
                "relation"
            } else {
                "parent"
            },
            "parent and relation must both be set or both be null",
        );
    }
    if let Some(id) = &id
        && let Some(i) = depends_on.iter().position(|d| d == id)
    {
        sink.push_owned(
            format!("depends_on[{i}]"),
            "an operation may not depend on itself".into(),
        );
    }
    o.refuse_unknown(sink);
    Some(Operation {
        id: id?,
        tenant: tenant?,
        actor: actor?,
        tool: tool?,
        action: action?,
        target: target?,
        payload_hash: payload_hash?,
        intent_hash,
        risk: risk?,
        approval,
        idempotency_key,
        business_key,
        correlation_id,
        owner: owner?,
        max_attempts,
        deadline,
        failure_mode,
        state: state?,
        next_observation_at,
        depends_on,
        parent,
        relation,
        created_at: created_at?,
    })
}

fn read_attempt(o: Obj<'_, '_>, sink: &mut Sink) -> Option<Attempt> {
    let id = o.req(sink, "id", key);
    let operation = o.req(sink, "operation", operation_id);
    let seq = o.req(sink, "seq", int(1, U32_MAX));
    let kind = o.req(sink, "kind", choice::<AttemptKind>);
    let layer = o.opt(sink, "layer", choice::<Layer>);
    let started_at = o.req(sink, "started_at", time);
    let ended_at = o.opt(sink, "ended_at", time);
    if let (Some(started), Some(ended)) = (started_at, ended_at)
        && ended < started
    {
        sink.push("ended_at", "must not be before started_at");
    }
    let phase = o.req(sink, "phase", choice::<Phase>);
    let outcome = o.req(sink, "outcome", choice::<Outcome>);
    let http_status = o.opt(sink, "http_status", int(100, 599));
    let error_type = o.opt(sink, "error_type", evidence_key);
    let retry_after = o.opt(sink, "retry_after", time);
    let provider_request_id = o.opt(sink, "provider_request_id", evidence_key);
    let request_hash = o.opt(sink, "request_hash", hash);
    let response_hash = o.opt(sink, "response_hash", hash);
    let resend_count = o.opt(sink, "resend_count", int(0, U32_MAX));
    let replayed = o.opt(sink, "replayed", boolean);
    let trace_id = o.opt(sink, "trace_id", key);
    let response_excerpt = o.opt(sink, "response_excerpt", untrusted);
    o.refuse_unknown(sink);
    Some(Attempt {
        id: id?,
        operation: operation?,
        seq: seq?,
        kind: kind?,
        layer,
        started_at: started_at?,
        ended_at,
        phase: phase?,
        outcome: outcome?,
        http_status,
        error_type,
        retry_after,
        provider_request_id,
        request_hash,
        response_hash,
        resend_count,
        replayed,
        trace_id,
        response_excerpt,
        url: None,
    })
}

fn read_item(o: Obj<'_, '_>, sink: &mut Sink) -> Option<Item> {
    let operation = o.req(sink, "operation", operation_id);
    let index = o.req(sink, "index", int(0, U32_MAX));
    let label = o.opt(sink, "label", text);
    let state = o.req(sink, "state", choice::<ItemState>);
    let authoritative_id = o.opt(sink, "authoritative_id", key);
    o.refuse_unknown(sink);
    Some(Item {
        operation: operation?,
        index: index?,
        label,
        state: state?,
        authoritative_id,
    })
}

fn read_observation(o: Obj<'_, '_>, sink: &mut Sink) -> Option<Observation> {
    let id = o.req(sink, "id", key);
    let operation = o.req(sink, "operation", operation_id);
    let observed_at = o.req(sink, "observed_at", time);
    let source = o.req(sink, "source", choice::<ObservationSource>);
    let found = o.req(sink, "found", boolean);
    let matches = o.opt(sink, "matches", object).map(|entries| {
        let n = o.nested(entries, "matches.", "matches", MATCHES_FIELDS);
        let m = Matches {
            target: n.opt(sink, "target", boolean),
            payload_hash: n.opt(sink, "payload_hash", boolean),
            owner: n.opt(sink, "owner", boolean),
            version: n.opt(sink, "version", boolean),
        };
        n.refuse_unknown(sink);
        m
    });
    let effect_count = o.opt(sink, "effect_count", int(0, U32_MAX));
    let raw_hash = o.opt(sink, "raw_hash", hash);
    let note = o.opt(sink, "note", untrusted);
    o.refuse_unknown(sink);
    Some(Observation {
        id: id?,
        operation: operation?,
        observed_at: observed_at?,
        source: source?,
        found: found?,
        matches,
        effect_count,
        raw_hash,
        note,
    })
}

fn read_transition(o: Obj<'_, '_>, sink: &mut Sink) -> Option<TransitionRecord> {
    let operation = o.req(sink, "operation", operation_id);
    let from = o.req(sink, "from", choice::<State>);
    let to = o.req(sink, "to", choice::<State>);
    if from.is_some() && from == to {
        sink.push(
            "to",
            "must differ from `from`; a transition changes the state",
        );
    }
    let by = o.req(sink, "by", key);
    let role = o.opt(sink, "role", acting_role);
    let at = o.req(sink, "at", time);
    let reason = o.opt(sink, "reason", text);
    let evidence = o.list(sink, "evidence", key);
    o.refuse_unknown(sink);
    Some(TransitionRecord {
        operation: operation?,
        from: from?,
        to: to?,
        by: by?,
        role,
        at: at?,
        reason,
        evidence,
    })
}

fn read_expectation(o: Obj<'_, '_>, sink: &mut Sink) -> Option<Expectation> {
    let operation = o.req(sink, "operation", operation_id);
    let expected_state = o.req(sink, "expected_state", choice::<State>);
    let requires_reconciliation = o.opt(sink, "requires_reconciliation", boolean);
    let duplicate_risk = o.opt(sink, "duplicate_risk", boolean);
    let prohibited = o.list(sink, "prohibited", key);
    let veto = o.opt(sink, "veto", boolean);
    o.refuse_unknown(sink);
    Some(Expectation {
        operation: operation?,
        expected_state: expected_state?,
        requires_reconciliation,
        duplicate_risk,
        prohibited,
        veto,
    })
}

/// Collects the errors of one line.
struct Sink {
    line: usize,
    errors: Vec<LineError>,
}

impl Sink {
    fn push(&mut self, field: &str, reason: &str) {
        self.push_owned(field.to_owned(), reason.to_owned());
    }

    fn push_owned(&mut self, field: String, reason: String) {
        self.errors.push(LineError {
            line: self.line,
            field,
            reason,
        });
    }

    /// The errors, capped at [`MAX_ERRORS_PER_LINE`] plus one that counts the rest.
    fn finish(mut self) -> Vec<LineError> {
        if self.errors.len() > MAX_ERRORS_PER_LINE {
            let more = self.errors.len() - MAX_ERRORS_PER_LINE;
            self.errors.truncate(MAX_ERRORS_PER_LINE);
            self.push_owned(
                "-".into(),
                format!("{more} more errors on this line are not listed"),
            );
        }
        self.errors
    }
}

/// One object of the line with the fields it may have.
#[derive(Clone, Copy)]
struct Obj<'t, 'a> {
    entries: &'t Entries<'a>,
    /// Prepended to field names in error paths (`approval.`).
    prefix: &'static str,
    /// What the object is, for the unknown-field message (`an attempt`).
    what: &'static str,
    allowed: &'static [&'static str],
}

impl<'t, 'a> Obj<'t, 'a> {
    fn named(self, what: &'static str, allowed: &'static [&'static str]) -> Self {
        Obj {
            what,
            allowed,
            ..self
        }
    }

    fn nested(
        self,
        entries: &'t Entries<'a>,
        prefix: &'static str,
        what: &'static str,
        allowed: &'static [&'static str],
    ) -> Self {
        Obj {
            entries,
            prefix,
            what,
            allowed,
        }
    }

    fn get(&self, name: &str) -> Option<&'t Node<'a>> {
        self.entries
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, node)| node)
    }

    /// Whether the field is given with a value other than `null`.
    fn present(&self, name: &str) -> bool {
        !matches!(self.get(name), None | Some(Node::Null))
    }

    fn path(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    fn field<T>(
        &self,
        sink: &mut Sink,
        name: &str,
        required: bool,
        convert: impl FnOnce(&'t Node<'a>) -> Result<T, String>,
    ) -> Option<T> {
        match self.get(name) {
            None | Some(Node::Null) if required => {
                let reason = if self.get(name).is_none() {
                    "required field is missing"
                } else {
                    "required field must not be null"
                };
                sink.push_owned(self.path(name), reason.into());
                None
            }
            None | Some(Node::Null) => None,
            Some(node) => match convert(node) {
                Ok(value) => Some(value),
                Err(reason) => {
                    sink.push_owned(self.path(name), reason);
                    None
                }
            },
        }
    }

    fn req<T>(
        &self,
        sink: &mut Sink,
        name: &str,
        convert: impl FnOnce(&'t Node<'a>) -> Result<T, String>,
    ) -> Option<T> {
        self.field(sink, name, true, convert)
    }

    fn opt<T>(
        &self,
        sink: &mut Sink,
        name: &str,
        convert: impl FnOnce(&'t Node<'a>) -> Result<T, String>,
    ) -> Option<T> {
        self.field(sink, name, false, convert)
    }

    /// An array of strings; absent or `null` is empty.
    fn list<T>(
        &self,
        sink: &mut Sink,
        name: &str,
        convert: impl Fn(&'t Node<'a>) -> Result<T, String>,
    ) -> Vec<T> {
        match self.get(name) {
            None | Some(Node::Null) => Vec::new(),
            Some(Node::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match convert(item) {
                        Ok(value) => out.push(value),
                        Err(reason) => sink.push_owned(format!("{}[{i}]", self.path(name)), reason),
                    }
                }
                out
            }
            Some(other) => {
                sink.push_owned(
                    self.path(name),
                    format!("must be an array of strings, not {}", other.kind()),
                );
                Vec::new()
            }
        }
    }

    fn refuse_unknown(&self, sink: &mut Sink) {
        for (k, _) in self.entries {
            if !self.allowed.contains(&k.as_ref()) {
                // An empty key is named as written, so the error names a field.
                let name: &str = if k.as_ref().is_empty() {
                    "\"\""
                } else {
                    k.as_ref()
                };
                sink.push_owned(
                    self.path(name),
                    format!(
                        "unknown field; allowed fields of {} are: {}",
                        self.what,
                        self.allowed.join(", ")
                    ),
                );
            }
        }
    }
}

fn wrong(expected: &str, node: &Node<'_>) -> String {
    format!("must be {expected}, not {}", node.kind())
}

fn string<'t>(node: &'t Node<'_>) -> Result<&'t str, String> {
    match node {
        Node::Str(s) => Ok(s),
        other => Err(wrong("a string", other)),
    }
}

fn object<'t, 'a>(node: &'t Node<'a>) -> Result<&'t Entries<'a>, String> {
    match node {
        Node::Object(entries) => Ok(entries),
        other => Err(wrong("an object", other)),
    }
}

fn boolean(node: &Node<'_>) -> Result<bool, String> {
    match node {
        Node::Bool(b) => Ok(*b),
        other => Err(wrong("a boolean", other)),
    }
}

/// An integer in `min..=max`, converted to the field's type.
fn int<T: TryFrom<u64>>(min: u64, max: u64) -> impl Fn(&Node<'_>) -> Result<T, String> {
    move |node| {
        let out_of_range = || format!("must be an integer from {min} to {max}");
        match node {
            Node::UInt(v) if (min..=max).contains(v) => T::try_from(*v).map_err(|_| out_of_range()),
            Node::UInt(_) | Node::Int(_) => Err(out_of_range()),
            other => Err(wrong("an integer", other)),
        }
    }
}

/// An id, a key or a reference to one, read by the one rule for ids
/// ([`crate::core::ids::check_id`]): 1 to 128 characters, no control characters,
/// no whitespace at either end.
fn key(node: &Node<'_>) -> Result<String, String> {
    let s = string(node)?;
    crate::core::ids::check_id(s).map_err(|e| e.to_string())?;
    Ok(s.to_owned())
}

/// A key that a provider or the calling tool reported (an error type, a request
/// id, a business key): evidence, kept byte-exact with any control characters in
/// it (sanitized on display); 1 to 128 characters.
fn evidence_key(node: &Node<'_>) -> Result<String, String> {
    let s = string(node)?;
    if s.is_empty() {
        return Err("must not be empty".into());
    }
    let count = s.chars().count();
    if count > MAX_KEY_CHARS {
        return Err(format!(
            "is {count} characters long; at most {MAX_KEY_CHARS} are allowed"
        ));
    }
    Ok(s.to_owned())
}

/// Free text shown to people: at most 64 KiB, no control characters but tab and
/// newline.
fn text(node: &Node<'_>) -> Result<String, String> {
    let s = capped(node)?;
    if let Some(c) = s
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\t' | '\n'))
    {
        return Err(format!(
            "must not contain control characters other than tab and newline (found {c:?})"
        ));
    }
    Ok(s.to_owned())
}

/// Untrusted output stored as is (sanitized on display): at most 64 KiB.
fn untrusted(node: &Node<'_>) -> Result<String, String> {
    capped(node).map(str::to_owned)
}

fn capped<'t>(node: &'t Node<'_>) -> Result<&'t str, String> {
    let s = string(node)?;
    if s.len() > MAX_TEXT_BYTES {
        return Err(format!(
            "is {} bytes long; at most {MAX_TEXT_BYTES} bytes (64 KiB) are allowed",
            s.len()
        ));
    }
    Ok(s)
}

fn operation_id(node: &Node<'_>) -> Result<OperationId, String> {
    OperationId::parse(string(node)?).map_err(|e| format!("operation id {e}"))
}

fn hash(node: &Node<'_>) -> Result<Sha256, String> {
    Sha256::parse(string(node)?).map_err(|e| e.to_string())
}

fn time(node: &Node<'_>) -> Result<DateTime<Utc>, String> {
    parse_instant(string(node)?).map_err(|e| e.to_string())
}

/// The closed enumerations of the model, read by their stable text.
trait Choice: Sized {
    fn parse_text(text: &str) -> Option<Self>;
    fn expected_values() -> String;
}

macro_rules! choice {
    ($($t:ty),+) => {$(
        impl Choice for $t {
            fn parse_text(text: &str) -> Option<Self> {
                <$t>::parse(text)
            }
            fn expected_values() -> String {
                <$t>::expected()
            }
        }
    )+};
}

choice!(
    DomainReview,
    State,
    FailureMode,
    Risk,
    Phase,
    Outcome,
    AttemptKind,
    Layer,
    ItemState,
    Relation,
    ObservationSource,
    RateScope
);

/// A role an identity acts under: a `domain:…` grant is held besides a role,
/// never acted under, so a record naming one is refused as an unknown role.
fn acting_role(node: &Node<'_>) -> Result<Role, String> {
    let acting = |r: &Role| !r.is_domain();
    Role::parse(string(node)?).filter(acting).ok_or_else(|| {
        let names: Vec<&str> = Role::ALL
            .iter()
            .filter(|r| acting(r))
            .map(|r| r.as_str())
            .collect();
        format!("must be one of: {}", names.join(", "))
    })
}

fn choice<T: Choice>(node: &Node<'_>) -> Result<T, String> {
    T::parse_text(string(node)?).ok_or_else(|| format!("must be one of: {}", T::expected_values()))
}
