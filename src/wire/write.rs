//! The writer of wire format v1: `"type"` first, then every field in the model's
//! order, absent optionals as `null`, times in RFC 3339 UTC with `Z`.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::Record;
use crate::core::clock::format_instant;
use crate::core::lookup::{JsonPointer, StatusLookup};
use crate::core::model::{
    Approval, Attempt, Contract, Expectation, Item, Matches, Observation, Operation,
    TransitionRecord,
};

/// One record as a JSON line (no trailing newline); `parse_line` reads it back
/// to the same record.
pub fn write_line(record: &Record) -> String {
    to_value(record).to_string()
}

/// One record as a JSON object with `"type"` first and the fields in wire order,
/// for `--json` outputs.
pub fn to_value(record: &Record) -> Value {
    match record {
        Record::Contract(c) => contract(c),
        Record::Operation(o) => operation(o),
        Record::Attempt(a) => attempt(a),
        Record::Item(i) => item(i),
        Record::Observation(o) => observation(o),
        Record::Transition(t) => transition(t),
        Record::Expectation(e) => expectation(e),
    }
}

fn time(at: DateTime<Utc>) -> Value {
    Value::String(format_instant(at))
}

fn opt_time(at: Option<DateTime<Utc>>) -> Value {
    at.map_or(Value::Null, time)
}

fn opt_str(text: Option<&str>) -> Value {
    text.map_or(Value::Null, |t| Value::String(t.to_owned()))
}

fn contract(c: &Contract) -> Value {
    json!({
        "type": "contract",
        "tool": c.tool,
        "version": c.version,
        "action": c.action,
        "method": c.method,
        "idempotency": {
            "supported": c.idempotency.supported,
            "scope": c.idempotency.scope,
            "retention_hours": c.idempotency.retention_hours,
        },
        "status_lookup": status_lookup(&c.status_lookup),
        "retryable": c.retryable,
        "compensation": c.compensation,
        "owner": c.owner,
        "max_attempts": c.max_attempts,
        "budget_seconds": c.budget_seconds,
    })
}

fn status_lookup(l: &StatusLookup) -> Value {
    let Some(spec) = l.spec() else {
        return Value::Bool(l.exists());
    };
    let pointer = |p: Option<&JsonPointer>| opt_str(p.map(JsonPointer::as_str));
    let f = &spec.fields;
    json!({
        "method": spec.method,
        "url": spec.url.as_str(),
        "auth": spec.auth.as_ref().map_or(Value::Null, |a| json!({
            "header": a.header,
            "prefix": a.prefix,
            "env": a.env,
        })),
        "timeout_ms": spec.timeout_ms,
        "lag_seconds": spec.lag_seconds,
        "not_found_status": spec.not_found_status,
        "fields": {
            "target": pointer(f.target.as_ref()),
            "payload_hash": pointer(f.payload_hash.as_ref()),
            "tenant": pointer(f.tenant.as_ref()),
            "version": pointer(f.version.as_ref()),
            "effect_count": pointer(f.effect_count.as_ref()),
            "provider_request_id": pointer(f.provider_request_id.as_ref()),
        },
    })
}

fn approval(a: &Approval) -> Value {
    json!({
        "by": a.by,
        "policy": a.policy,
        "at": opt_time(a.at),
        "payload_hash": a.payload_hash,
        "expires_at": opt_time(a.expires_at),
    })
}

fn operation(o: &Operation) -> Value {
    json!({
        "type": "operation",
        "id": o.id,
        "tenant": o.tenant,
        "actor": o.actor,
        "tool": o.tool,
        "action": o.action,
        "target": o.target,
        "payload_hash": o.payload_hash,
        "intent_hash": o.intent_hash,
        "risk": o.risk.as_str(),
        "approval": o.approval.as_ref().map_or(Value::Null, approval),
        "idempotency_key": o.idempotency_key,
        "business_key": o.business_key,
        "correlation_id": o.correlation_id,
        "owner": o.owner,
        "max_attempts": o.max_attempts,
        "deadline": opt_time(o.deadline),
        "failure_mode": opt_str(o.failure_mode.map(|m| m.as_str())),
        "state": o.state.as_str(),
        "next_observation_at": opt_time(o.next_observation_at),
        "depends_on": o.depends_on,
        "parent": o.parent,
        "relation": opt_str(o.relation.map(|r| r.as_str())),
        "created_at": time(o.created_at),
    })
}

fn attempt(a: &Attempt) -> Value {
    json!({
        "type": "attempt",
        "id": a.id,
        "operation": a.operation,
        "seq": a.seq,
        "kind": a.kind.as_str(),
        "layer": opt_str(a.layer.map(|l| l.as_str())),
        "started_at": time(a.started_at),
        "ended_at": opt_time(a.ended_at),
        "phase": a.phase.as_str(),
        "outcome": a.outcome.as_str(),
        "http_status": a.http_status,
        "error_type": a.error_type,
        "retry_after": opt_time(a.retry_after),
        "provider_request_id": a.provider_request_id,
        "request_hash": a.request_hash,
        "response_hash": a.response_hash,
        "resend_count": a.resend_count,
        "replayed": a.replayed,
        "trace_id": a.trace_id,
        "response_excerpt": a.response_excerpt,
    })
}

fn item(i: &Item) -> Value {
    json!({
        "type": "item",
        "operation": i.operation,
        "index": i.index,
        "label": i.label,
        "state": i.state.as_str(),
        "authoritative_id": i.authoritative_id,
    })
}

fn matches(m: &Matches) -> Value {
    json!({
        "target": m.target,
        "payload_hash": m.payload_hash,
        "owner": m.owner,
        "version": m.version,
    })
}

fn observation(o: &Observation) -> Value {
    json!({
        "type": "observation",
        "id": o.id,
        "operation": o.operation,
        "observed_at": time(o.observed_at),
        "source": o.source,
        "found": o.found,
        "matches": o.matches.as_ref().map_or(Value::Null, matches),
        "effect_count": o.effect_count,
        "raw_hash": o.raw_hash,
        "note": o.note,
    })
}

fn transition(t: &TransitionRecord) -> Value {
    json!({
        "type": "transition",
        "operation": t.operation,
        "from": t.from.as_str(),
        "to": t.to.as_str(),
        "by": t.by,
        "role": opt_str(t.role.map(|r| r.as_str())),
        "at": time(t.at),
        "reason": t.reason,
        "evidence": t.evidence,
    })
}

fn expectation(e: &Expectation) -> Value {
    json!({
        "type": "expectation",
        "operation": e.operation,
        "expected_state": e.expected_state.as_str(),
        "requires_reconciliation": e.requires_reconciliation,
        "duplicate_risk": e.duplicate_risk,
        "prohibited": e.prohibited,
        "veto": e.veto,
    })
}
