//! One span as the mapping reads it: the OTLP message flattened to the fields the
//! GenAI and HTTP client conventions give meaning to, with hex ids, times as
//! instants and attribute values as JSON. A span that cannot be read (an id of the
//! wrong length, no start time) is refused with the path of the field at fault.
//! The same shape is what the store keeps for a span still waiting for its tool
//! span, so it is serializable.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One span, read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpanFact {
    /// 32 lowercase hex digits.
    pub trace_id: String,
    /// 16 lowercase hex digits.
    pub span_id: String,
    /// The parent's span id, when the span has one.
    pub parent: Option<String>,
    pub name: String,
    pub start: DateTime<Utc>,
    pub end: Option<DateTime<Utc>>,
    /// The span's status is `ERROR`.
    pub error: bool,
    /// The status message, when there is one.
    pub status_message: Option<String>,
    /// The span's attributes, then its resource's under the same names where the
    /// span has none (`service.name` is read from here).
    pub attributes: BTreeMap<String, Value>,
    /// Event names with their attributes (an `exception` event's type and message).
    pub events: Vec<(String, BTreeMap<String, Value>)>,
    /// The input line (file) or request (receiver) the span came in, for
    /// messages; 0 for a span that waited in the store.
    #[serde(skip)]
    pub line: usize,
}

impl SpanFact {
    pub fn key(&self) -> (String, String) {
        (self.trace_id.clone(), self.span_id.clone())
    }

    /// A text attribute (the first element of an array of texts, as headers are
    /// captured).
    pub fn text(&self, name: &str) -> Option<&str> {
        match self.attributes.get(name)? {
            Value::String(s) => Some(s.as_str()),
            Value::Array(items) => items.first().and_then(Value::as_str),
            _ => None,
        }
    }

    /// An integer attribute (also given as a text of digits).
    pub fn integer(&self, name: &str) -> Option<i64> {
        match self.attributes.get(name)? {
            Value::Number(n) => n.as_i64(),
            Value::String(s) => s.trim().parse().ok(),
            _ => None,
        }
    }

    /// Whether this is a GenAI tool execution (an operation).
    pub fn is_tool(&self) -> bool {
        self.text("gen_ai.operation.name") == Some("execute_tool")
    }

    /// Whether this is an HTTP client span (an attempt).
    pub fn is_http(&self) -> bool {
        !self.is_tool() && self.attributes.contains_key("http.request.method")
    }
}

/// A span refused as read: where it is in the request and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpanError {
    /// `resource_spans[0].scope_spans[1].spans[2].trace_id`.
    pub field: String,
    pub reason: String,
}

/// Every span of a request, each read or refused.
pub fn read_request(request: &ExportTraceServiceRequest) -> Vec<Result<SpanFact, SpanError>> {
    let mut out = Vec::new();
    for (r, resource_spans) in request.resource_spans.iter().enumerate() {
        let resource: BTreeMap<String, Value> = resource_spans
            .resource
            .as_ref()
            .map(|res| attributes(&res.attributes))
            .unwrap_or_default();
        for (s, scope_spans) in resource_spans.scope_spans.iter().enumerate() {
            for (i, span) in scope_spans.spans.iter().enumerate() {
                let path = format!("resource_spans[{r}].scope_spans[{s}].spans[{i}]");
                out.push(read_span(span, &resource, &path));
            }
        }
    }
    out
}

/// The number of spans in a request, read or not.
pub fn span_count(request: &ExportTraceServiceRequest) -> usize {
    request
        .resource_spans
        .iter()
        .flat_map(|r| &r.scope_spans)
        .map(|s| s.spans.len())
        .sum()
}

fn read_span(
    span: &opentelemetry_proto::tonic::trace::v1::Span,
    resource: &BTreeMap<String, Value>,
    path: &str,
) -> Result<SpanFact, SpanError> {
    let refuse = |field: &str, reason: String| SpanError {
        field: format!("{path}.{field}"),
        reason,
    };
    let id = |bytes: &[u8], len: usize, field: &str| {
        if bytes.len() != len || bytes.iter().all(|b| *b == 0) {
            Err(refuse(
                field,
                format!(
                    "must be {len} bytes ({} hex digits), not all zero; got {} bytes",
                    len * 2,
                    bytes.len()
                ),
            ))
        } else {
            Ok(hex::encode(bytes))
        }
    };
    let trace_id = id(&span.trace_id, 16, "trace_id")?;
    let span_id = id(&span.span_id, 8, "span_id")?;
    let parent = if span.parent_span_id.is_empty() {
        None
    } else {
        Some(id(&span.parent_span_id, 8, "parent_span_id")?)
    };
    let start = instant(span.start_time_unix_nano).ok_or_else(|| {
        refuse(
            "start_time_unix_nano",
            "must be set (nanoseconds since 1970)".into(),
        )
    })?;
    let end = instant(span.end_time_unix_nano);
    if end.is_some_and(|end| end < start) {
        return Err(refuse(
            "end_time_unix_nano",
            "is before start_time_unix_nano".into(),
        ));
    }
    let mut attrs = attributes(&span.attributes);
    for (key, value) in resource {
        attrs.entry(key.clone()).or_insert_with(|| value.clone());
    }
    // Status code 2 is ERROR in every OTLP version.
    let status = span.status.as_ref();
    Ok(SpanFact {
        trace_id,
        span_id,
        parent,
        name: span.name.clone(),
        start,
        end,
        error: status.is_some_and(|s| s.code == 2),
        status_message: status.map(|s| s.message.clone()).filter(|m| !m.is_empty()),
        attributes: attrs,
        events: span
            .events
            .iter()
            .map(|e| (e.name.clone(), attributes(&e.attributes)))
            .collect(),
        line: 0,
    })
}

fn instant(nanos: u64) -> Option<DateTime<Utc>> {
    if nanos == 0 {
        return None;
    }
    let nanos = i64::try_from(nanos).ok()?;
    Some(DateTime::from_timestamp_nanos(nanos))
}

fn attributes(list: &[KeyValue]) -> BTreeMap<String, Value> {
    list.iter()
        .filter_map(|kv| Some((kv.key.clone(), any_value(kv.value.as_ref()?)?)))
        .collect()
}

fn any_value(value: &AnyValue) -> Option<Value> {
    Some(match value.value.as_ref()? {
        any_value::Value::StringValue(s) => Value::String(s.clone()),
        any_value::Value::BoolValue(b) => Value::Bool(*b),
        any_value::Value::IntValue(i) => Value::from(*i),
        any_value::Value::DoubleValue(d) => serde_json::Number::from_f64(*d)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        any_value::Value::ArrayValue(a) => {
            Value::Array(a.values.iter().filter_map(any_value).collect())
        }
        any_value::Value::KvlistValue(kv) => Value::Object(
            kv.values
                .iter()
                .filter_map(|kv| Some((kv.key.clone(), any_value(kv.value.as_ref()?)?)))
                .collect(),
        ),
        any_value::Value::BytesValue(b) => Value::String(hex::encode(b)),
        #[allow(unreachable_patterns, reason = "newer OTLP versions add value kinds")]
        _ => return None,
    })
}
