//! The writer of wire format v1: `"type"` first, then every field in the model's
//! order, absent optionals as `null`, times in RFC 3339 UTC with `Z`.

use chrono::{DateTime, Utc};
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::Value;

use super::Record;
use crate::core::clock::format_instant;
use crate::core::contract::{CircuitConfig, Contract, IdempotencyContract, Inventory};
use crate::core::lookup::{
    JsonPointer, LookupAuth, LookupFields, LookupSpec, ResponseShape, StatusLookup,
};
use crate::core::model::{
    Approval, Attempt, Expectation, Item, Matches, Observation, Operation, TransitionRecord,
};

/// One record as a JSON line (no trailing newline); `parse_line` reads it back
/// to the same record. Written straight from the record, with no JSON value in
/// between: the same bytes as [`to_value`]'s compact form, as both come from one
/// serialization ([`W`]).
pub fn write_line(record: &Record) -> String {
    // Serializing fails only for a value JSON cannot hold, which no record
    // field is; the fallback keeps the two forms equal regardless.
    serde_json::to_string(&W(record)).unwrap_or_else(|_| to_value(record).to_string())
}

/// One record as a JSON object with `"type"` first and the fields in wire order,
/// for `--json` outputs.
pub fn to_value(record: &Record) -> Value {
    serde_json::to_value(W(record)).unwrap_or(Value::Null)
}

/// A part of a record in wire form: `"type"` first, then every field in the
/// model's order, absent optionals as `null`. The one definition of the wire
/// layout, serialized to a line by [`write_line`] and to a value by [`to_value`].
struct W<'a, T>(&'a T);

/// An instant as the wire writes it: RFC 3339 UTC with `Z`.
struct At(DateTime<Utc>);

impl Serialize for At {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_instant(self.0))
    }
}

/// The wire form of `$ty` as a JSON object of the given entries, in order, with
/// `$x` the value being written.
macro_rules! wire_object {
    ($ty:ty, $x:ident; $($key:literal => $value:expr),* $(,)?) => {
        impl Serialize for W<'_, $ty> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let $x = self.0;
                let mut map = s.serialize_map(None)?;
                $(map.serialize_entry($key, &$value)?;)*
                map.end()
            }
        }
    };
}

impl Serialize for W<'_, Record> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Record::Contract(c) => W(c).serialize(s),
            Record::Operation(o) => W(o).serialize(s),
            Record::Attempt(a) => W(a).serialize(s),
            Record::Item(i) => W(i).serialize(s),
            Record::Observation(o) => W(o).serialize(s),
            Record::Transition(t) => W(t).serialize(s),
            Record::Expectation(e) => W(e).serialize(s),
        }
    }
}

/// A contract in wire order; `path`, `response`, `owners` and `domain_review`
/// are written only when set, so
/// a contract without them keeps the bytes, and the hash, it always had.
impl Serialize for W<'_, Contract> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let c = self.0;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("type", "contract")?;
        map.serialize_entry("tool", &c.tool)?;
        map.serialize_entry("version", &c.version)?;
        map.serialize_entry("action", &c.action)?;
        map.serialize_entry("method", &c.method)?;
        map.serialize_entry("idempotency", &W(&c.idempotency))?;
        map.serialize_entry("status_lookup", &W(&c.status_lookup))?;
        map.serialize_entry("retryable", &c.retryable)?;
        map.serialize_entry("compensation", &c.compensation)?;
        map.serialize_entry("owner", &c.owner)?;
        map.serialize_entry("max_attempts", &c.max_attempts)?;
        map.serialize_entry("budget_seconds", &c.budget_seconds)?;
        if let Some(path) = &c.path {
            map.serialize_entry("path", path.as_str())?;
        }
        if let Some(response) = &c.response {
            map.serialize_entry("response", &W(response))?;
        }
        inventory(&mut map, &c.inventory)?;
        if let Some(owners) = &c.owners {
            map.serialize_entry("owners", owners)?;
        }
        if let Some(domain) = c.domain_review {
            map.serialize_entry("domain_review", domain.as_str())?;
        }
        if let Some(circuit) = &c.circuit {
            map.serialize_entry("circuit", &W(circuit))?;
        }
        map.end()
    }
}

/// The inventory fields of a contract, each written only when set (so a contract
/// without them keeps its bytes and hash).
fn inventory<M: SerializeMap>(map: &mut M, i: &Inventory) -> Result<(), M::Error> {
    if let Some(tenant) = &i.tenant {
        map.serialize_entry("tenant", tenant)?;
    }
    if let Some(schema) = &i.schema {
        map.serialize_entry("schema", schema)?;
    }
    for (name, list) in [
        ("business_rules", &i.business_rules),
        ("side_effects", &i.side_effects),
        ("downstream", &i.downstream),
    ] {
        if !list.is_empty() {
            map.serialize_entry(name, list)?;
        }
    }
    if !i.rate_limits.is_empty() {
        map.serialize_entry("rate_limits", &i.rate_limits)?;
    }
    Ok(())
}

wire_object!(ResponseShape, r;
        "record_id" => pointer(&r.record_id),
        "target" => pointer(&r.target),
        "tenant" => pointer(&r.tenant),
        "payload_hash" => pointer(&r.payload_hash),
        "version" => pointer(&r.version),
        "items" => pointer(&r.items),
);

wire_object!(CircuitConfig, c;
        "failures" => c.failures,
        "window_seconds" => c.window_seconds,
        "probe_after_seconds" => c.probe_after_seconds,
);

wire_object!(IdempotencyContract, i;
        "supported" => i.supported,
        "scope" => i.scope,
        "retention_hours" => i.retention_hours,
);

impl Serialize for W<'_, StatusLookup> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0.spec() {
            Some(spec) => W(spec).serialize(s),
            None => s.serialize_bool(self.0.exists()),
        }
    }
}

/// A lookup object in wire order; `provider` (the operator's binding it names)
/// is written only when set, so a lookup without one keeps the bytes, and the
/// hash, it always had.
impl Serialize for W<'_, LookupSpec> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let spec = self.0;
        let mut map = s.serialize_map(None)?;
        map.serialize_entry("method", &spec.method)?;
        map.serialize_entry("url", spec.url.as_str())?;
        if let Some(provider) = &spec.provider {
            map.serialize_entry("provider", provider)?;
        }
        map.serialize_entry("auth", &spec.auth.as_ref().map(W))?;
        map.serialize_entry("timeout_ms", &spec.timeout_ms)?;
        map.serialize_entry("lag_seconds", &spec.lag_seconds)?;
        map.serialize_entry("not_found_status", &spec.not_found_status)?;
        map.serialize_entry("fields", &W(&spec.fields))?;
        map.end()
    }
}

wire_object!(LookupAuth, a;
        "header" => a.header,
        "prefix" => a.prefix,
        "env" => a.env,
);

/// A field's JSON pointer as its text, `null` when the field is not read.
fn pointer(p: &Option<JsonPointer>) -> Option<&str> {
    p.as_ref().map(JsonPointer::as_str)
}

wire_object!(LookupFields, f;
        "target" => pointer(&f.target),
        "payload_hash" => pointer(&f.payload_hash),
        "tenant" => pointer(&f.tenant),
        "version" => pointer(&f.version),
        "effect_count" => pointer(&f.effect_count),
        "provider_request_id" => pointer(&f.provider_request_id),
);

wire_object!(Approval, a;
        "by" => a.by,
        "policy" => a.policy,
        "at" => a.at.map(At),
        "payload_hash" => a.payload_hash,
        "expires_at" => a.expires_at.map(At),
);

wire_object!(Operation, o;
        "type" => "operation",
        "id" => o.id,
        "tenant" => o.tenant,
        "actor" => o.actor,
        "tool" => o.tool,
        "action" => o.action,
        "target" => o.target,
        "payload_hash" => o.payload_hash,
        "intent_hash" => o.intent_hash,
        "risk" => o.risk.as_str(),
        "approval" => o.approval.as_ref().map(W),
        "idempotency_key" => o.idempotency_key,
        "business_key" => o.business_key,
        "correlation_id" => o.correlation_id,
        "owner" => o.owner,
        "max_attempts" => o.max_attempts,
        "deadline" => o.deadline.map(At),
        "failure_mode" => o.failure_mode.map(|m| m.as_str()),
        "state" => o.state.as_str(),
        "next_observation_at" => o.next_observation_at.map(At),
        "depends_on" => o.depends_on,
        "parent" => o.parent,
        "relation" => o.relation.map(|r| r.as_str()),
        "created_at" => At(o.created_at),
);

wire_object!(Attempt, a;
        "type" => "attempt",
        "id" => a.id,
        "operation" => a.operation,
        "seq" => a.seq,
        "kind" => a.kind.as_str(),
        "layer" => a.layer.map(|l| l.as_str()),
        "started_at" => At(a.started_at),
        "ended_at" => a.ended_at.map(At),
        "phase" => a.phase.as_str(),
        "outcome" => a.outcome.as_str(),
        "http_status" => a.http_status,
        "error_type" => a.error_type,
        "retry_after" => a.retry_after.map(At),
        "provider_request_id" => a.provider_request_id,
        "request_hash" => a.request_hash,
        "response_hash" => a.response_hash,
        "resend_count" => a.resend_count,
        "replayed" => a.replayed,
        "trace_id" => a.trace_id,
        "response_excerpt" => a.response_excerpt,
);

wire_object!(Item, i;
        "type" => "item",
        "operation" => i.operation,
        "index" => i.index,
        "label" => i.label,
        "state" => i.state.as_str(),
        "authoritative_id" => i.authoritative_id,
);

wire_object!(Matches, m;
        "target" => m.target,
        "payload_hash" => m.payload_hash,
        "owner" => m.owner,
        "version" => m.version,
);

wire_object!(Observation, o;
        "type" => "observation",
        "id" => o.id,
        "operation" => o.operation,
        "observed_at" => At(o.observed_at),
        "source" => o.source,
        "found" => o.found,
        "matches" => o.matches.as_ref().map(W),
        "effect_count" => o.effect_count,
        "raw_hash" => o.raw_hash,
        "note" => o.note,
);

wire_object!(TransitionRecord, t;
        "type" => "transition",
        "operation" => t.operation,
        "from" => t.from.as_str(),
        "to" => t.to.as_str(),
        "by" => t.by,
        "role" => t.role.map(|r| r.as_str()),
        "at" => At(t.at),
        "reason" => t.reason,
        "evidence" => t.evidence,
);

wire_object!(Expectation, e;
        "type" => "expectation",
        "operation" => e.operation,
        "expected_state" => e.expected_state.as_str(),
        "requires_reconciliation" => e.requires_reconciliation,
        "duplicate_risk" => e.duplicate_risk,
        "prohibited" => e.prohibited,
        "veto" => e.veto,
);
