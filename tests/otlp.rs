//! OpenTelemetry intake end to end: spans made by the OpenTelemetry SDK itself
//! (its in-memory exporter, turned into OTLP messages by `opentelemetry-proto`)
//! go through the mapping and the store, on both backends. Each test builds the
//! trace an instrumented agent would export and checks the operation, its
//! attempts and its state as the store holds them.

use crate::support;

use std::time::{Duration, SystemTime};

use chrono::{DateTime, Utc};
use holdfast::core::detail::OperationDetail;
use holdfast::core::model::{FailureMode, Phase, State};
use holdfast::otlp::door::{OtlpOutcome, Strictness, intake};
use holdfast::otlp::{OtlpSettings, ToolSettings};
use holdfast::store::Scope;
use holdfast::store::{Ingester, Store};
use opentelemetry::trace::{Span, SpanKind, Status, TraceContextExt, Tracer, TracerProvider};
use opentelemetry::{Context, KeyValue};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracer, SdkTracerProvider};
use support::stores::{self, Kind};

/// An agent instrumented with the SDK, exporting to memory.
struct Agent {
    exporter: InMemorySpanExporter,
    provider: SdkTracerProvider,
    tracer: SdkTracer,
    resource: Resource,
}

/// The instant `secs` seconds into the test's trace.
fn at(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_788_000_000 + secs)
}

fn now() -> DateTime<Utc> {
    DateTime::<Utc>::from(at(3600))
}

impl Agent {
    fn new() -> Agent {
        let exporter = InMemorySpanExporter::default();
        let resource = Resource::builder().with_service_name("relay-desk").build();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .with_resource(resource.clone())
            .build();
        let tracer = provider.tracer("agent");
        Agent {
            exporter,
            provider,
            tracer,
            resource,
        }
    }

    /// Starts an `execute_tool` span (ended by [`Agent::end`]).
    fn tool(&self, name: &str, arguments: Option<&str>, start: u64) -> Context {
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "execute_tool"),
            KeyValue::new("gen_ai.tool.name", name.to_owned()),
            KeyValue::new("gen_ai.tool.call.id", format!("call-{name}-{start}")),
            KeyValue::new("holdfast.tenant", "pinehaven"),
        ];
        if let Some(arguments) = arguments {
            attributes.push(KeyValue::new(
                "gen_ai.tool.call.arguments",
                arguments.to_owned(),
            ));
        }
        let span = self
            .tracer
            .span_builder(format!("execute_tool {name}"))
            .with_kind(SpanKind::Internal)
            .with_start_time(at(start))
            .with_attributes(attributes)
            .start(&self.tracer);
        Context::current_with_span(span)
    }

    /// One HTTP client span under `parent`, ended at `end`.
    #[allow(clippy::too_many_arguments)]
    fn http(
        &self,
        parent: &Context,
        method: &str,
        status: Option<i64>,
        error: Option<&str>,
        resend: Option<i64>,
        start: u64,
        end: u64,
    ) {
        let mut attributes = vec![
            KeyValue::new("http.request.method", method.to_owned()),
            KeyValue::new(
                "url.full",
                "https://ops:hunter2@tickets.example/v1/tickets?api_key=sk_live_abcdefghijklmnop1234&q=7",
            ),
            KeyValue::new("server.address", "tickets.example"),
        ];
        if let Some(status) = status {
            attributes.push(KeyValue::new("http.response.status_code", status));
        }
        if let Some(error) = error {
            attributes.push(KeyValue::new("error.type", error.to_owned()));
        }
        if let Some(resend) = resend {
            attributes.push(KeyValue::new("http.request.resend_count", resend));
        }
        let mut span = self
            .tracer
            .span_builder(method.to_owned())
            .with_kind(SpanKind::Client)
            .with_start_time(at(start))
            .with_attributes(attributes)
            .start_with_context(&self.tracer, parent);
        if error.is_some() || status.is_some_and(|s| s >= 500) {
            span.set_status(Status::error(error.unwrap_or("server error").to_owned()));
        }
        span.end_with_timestamp(at(end));
    }

    fn end(&self, cx: &Context, end: u64, failed: bool) {
        let span = cx.span();
        if failed {
            span.set_status(Status::error(""));
        }
        span.end_with_timestamp(at(end));
    }

    /// What the SDK has exported since the last call, as one OTLP request.
    fn request(&self) -> ExportTraceServiceRequest {
        let _ = self.provider.force_flush();
        let spans = self.exporter.get_finished_spans().expect("finished spans");
        self.exporter.reset();
        let resource = ResourceAttributesWithSchema::from(&self.resource);
        ExportTraceServiceRequest {
            resource_spans: group_spans_by_resource_and_scope(spans, &resource),
        }
    }
}

fn settings() -> OtlpSettings {
    OtlpSettings {
        tool: vec![ToolSettings {
            name: "create_ticket".into(),
            method: "POST".into(),
            owner: "integrations".into(),
            action: Some("ticket.create".into()),
            version: None,
            idempotency: true,
            max_attempts: Some(3),
            budget_seconds: Some(120),
            retryable: vec!["http_503".into()],
            tenant: None,
            risk: None,
            business_key: None,
            errors_may_commit: false,
        }],
        ..OtlpSettings::default()
    }
}

async fn send(
    store: &dyn Store,
    request: ExportTraceServiceRequest,
    settings: &OtlpSettings,
) -> OtlpOutcome {
    send_at(store, request, settings, now()).await
}

async fn send_at(
    store: &dyn Store,
    request: ExportTraceServiceRequest,
    settings: &OtlpSettings,
    now: DateTime<Utc>,
) -> OtlpOutcome {
    let outcome = intake(
        store,
        "test",
        vec![Ok((1, request))],
        settings,
        &otlp_ingester(),
        Strictness::Strict,
        now,
    )
    .await
    .expect("intake");
    assert!(!outcome.refused(), "{:?}", outcome.rejected);
    outcome
}

fn otlp_ingester() -> Ingester {
    let mut ingester = Ingester::anyone("svc:otlp");
    ingester.contracts_optional = true;
    ingester
}

/// The one operation the store holds with the given tool.
async fn only(store: &dyn Store, tool: &str) -> OperationDetail {
    let data = store.dataset(&Scope::Every).await.unwrap();
    let ops: Vec<_> = data.operations.iter().filter(|o| o.tool == tool).collect();
    assert_eq!(ops.len(), 1, "{:?}", data.operations);
    store.detail(&Scope::Every, &ops[0].id).await.unwrap()
}

async fn a_read_that_succeeded_is_succeeded_with_its_attempt(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let agent = Agent::new();
    let cx = agent.tool("lookup_customer", Some(r#"{"id": 7}"#), 0);
    agent.http(&cx, "GET", Some(200), None, None, 1, 2);
    agent.end(&cx, 3, false);
    send(fresh.store.as_ref(), agent.request(), &settings()).await;
    let detail = only(fresh.store.as_ref(), "lookup_customer").await;
    let op = &detail.row.operation;
    assert_eq!(op.state, State::Succeeded);
    assert_eq!(op.tenant, "pinehaven");
    assert_eq!(op.actor, "svc:relay-desk");
    assert_eq!(op.target, "tickets.example");
    assert!(detail.contract.is_none());
    assert_eq!(
        op.payload_hash,
        holdfast::otlp::map::payload_hash(Some(&serde_json::json!({"id": 7}))).unwrap()
    );
    assert_eq!(detail.attempts.len(), 1);
    assert_eq!(detail.attempts[0].http_status, Some(200));
    assert_eq!(detail.attempts[0].phase, Phase::ResponseReceived);
    // The transition says what it came from, the URL's secrets redacted.
    let reason = detail
        .audit
        .iter()
        .filter_map(|r| r.draft.rationale.clone())
        .collect::<String>();
    assert!(
        !reason.contains("hunter2") && !reason.contains("sk_live"),
        "{reason}"
    );
}

async fn a_write_that_timed_out_with_no_response_is_unknown(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let agent = Agent::new();
    let cx = agent.tool("create_ticket", Some(r#"{"title":"printer"}"#), 0);
    agent.http(&cx, "POST", None, Some("timeout"), None, 1, 31);
    agent.end(&cx, 31, true);
    send(fresh.store.as_ref(), agent.request(), &settings()).await;
    let detail = only(fresh.store.as_ref(), "create_ticket").await;
    let op = &detail.row.operation;
    assert_eq!(op.state, State::Unknown);
    assert_eq!(op.failure_mode, Some(FailureMode::TimeoutUnknown));
    assert_eq!(op.action, "ticket.create");
    assert_eq!(op.owner, "integrations");
    assert!(
        detail.contract.is_some(),
        "the [[otlp.tool]] table is its contract"
    );
    assert_eq!(detail.attempts[0].phase, Phase::RequestSent);
    assert_eq!(detail.attempts[0].http_status, None);
}

async fn a_503_then_a_200_resent_is_succeeded_with_two_attempts(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let agent = Agent::new();
    let cx = agent.tool("create_ticket", Some(r#"{"title":"printer"}"#), 0);
    agent.http(&cx, "POST", Some(503), None, None, 1, 2);
    agent.http(&cx, "POST", Some(200), None, Some(1), 4, 5);
    agent.end(&cx, 5, false);
    send(fresh.store.as_ref(), agent.request(), &settings()).await;
    let detail = only(fresh.store.as_ref(), "create_ticket").await;
    assert_eq!(detail.row.operation.state, State::Succeeded);
    let seen: Vec<_> = detail
        .attempts
        .iter()
        .map(|a| (a.seq, a.http_status, a.resend_count))
        .collect();
    assert_eq!(seen, vec![(1, Some(503), None), (2, Some(200), Some(1))]);
}

async fn a_connect_failure_was_not_sent(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let agent = Agent::new();
    let cx = agent.tool("create_ticket", Some(r#"{"title":"printer"}"#), 0);
    agent.http(&cx, "POST", None, Some("connection_refused"), None, 1, 2);
    agent.end(&cx, 2, true);
    send(fresh.store.as_ref(), agent.request(), &settings()).await;
    let detail = only(fresh.store.as_ref(), "create_ticket").await;
    assert_eq!(detail.row.operation.state, State::Failed);
    assert_eq!(detail.attempts[0].phase, Phase::NotSent);
}

async fn a_409_is_held(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let agent = Agent::new();
    let cx = agent.tool("create_ticket", Some(r#"{"title":"printer"}"#), 0);
    agent.http(&cx, "POST", Some(409), None, None, 1, 2);
    agent.end(&cx, 2, true);
    send(fresh.store.as_ref(), agent.request(), &settings()).await;
    let detail = only(fresh.store.as_ref(), "create_ticket").await;
    assert_eq!(detail.row.operation.state, State::Unknown);
    assert_eq!(
        detail.row.operation.failure_mode,
        Some(FailureMode::DuplicateReplay)
    );
}

async fn a_tool_span_without_children_is_its_own_attempt_and_payload_unknown(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let agent = Agent::new();
    let cx = agent.tool("send_email", None, 0);
    agent.end(&cx, 4, true);
    send(fresh.store.as_ref(), agent.request(), &settings()).await;
    let detail = only(fresh.store.as_ref(), "send_email").await;
    let op = &detail.row.operation;
    // No contract, no method, ended in error with no cause: it may have written.
    assert_eq!(op.state, State::Unknown);
    assert!(detail.contract.is_none());
    assert_eq!(op.payload_hash, holdfast::otlp::map::unknown_payload());
    assert_eq!(detail.attempts.len(), 1);
    let reason = detail
        .audit
        .iter()
        .filter_map(|r| r.draft.rationale.clone())
        .collect::<String>();
    assert!(
        reason.contains("no contract") && reason.contains("payload unknown"),
        "{reason}"
    );
    // Its creating row says the tool had no contract, so verify asks none of it
    // (a chain broken here would stop every write of the store).
    let status = fresh.store.verify().await.unwrap();
    assert!(
        matches!(status, holdfast::core::audit::ChainStatus::Intact { .. }),
        "{status:?}"
    );
}

async fn children_before_their_parent_wait_then_join_it(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let store = fresh.store.as_ref();
    let agent = Agent::new();
    let cx = agent.tool("create_ticket", Some(r#"{"title":"printer"}"#), 0);
    agent.http(&cx, "POST", None, Some("timeout"), None, 1, 31);
    let first = send(store, agent.request(), &settings()).await;
    assert_eq!(first.waiting, 1);
    assert!(
        store
            .dataset(&Scope::Every)
            .await
            .unwrap()
            .operations
            .is_empty()
    );
    agent.end(&cx, 32, true);
    let second = send(store, agent.request(), &settings()).await;
    assert_eq!(second.waiting, 0);
    let detail = only(store, "create_ticket").await;
    assert_eq!(detail.row.operation.state, State::Unknown);
    assert_eq!(detail.attempts.len(), 1);
}

async fn orphans_past_their_window_become_an_unknown_tool_operation(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let store = fresh.store.as_ref();
    let agent = Agent::new();
    let cx = agent.tool("create_ticket", Some(r#"{"title":"printer"}"#), 0);
    agent.http(&cx, "POST", None, Some("timeout"), None, 1, 31);
    send(store, agent.request(), &settings()).await;
    let later = now() + chrono::Duration::seconds(301);
    let swept = send_at(
        store,
        ExportTraceServiceRequest::default(),
        &settings(),
        later,
    )
    .await;
    assert_eq!(swept.waiting, 0);
    let detail = only(store, "unknown").await;
    assert_eq!(detail.row.operation.state, State::Unknown);
    // The tool span arriving late adds nothing twice: its operation is that one.
    agent.end(&cx, 32, true);
    let late = send_at(store, agent.request(), &settings(), later).await;
    assert!(late.committed.is_empty(), "{:?}", late.committed);
}

/// A `create_ticket` call whose one POST timed out, as one request.
fn timed_out_write(agent: &Agent) -> ExportTraceServiceRequest {
    let cx = agent.tool("create_ticket", Some(r#"{"title":"printer"}"#), 0);
    agent.http(&cx, "POST", None, Some("timeout"), None, 1, 31);
    agent.end(&cx, 31, true);
    agent.request()
}

async fn the_same_request_twice_changes_nothing(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let store = fresh.store.as_ref();
    let request = timed_out_write(&Agent::new());
    send(store, request.clone(), &settings()).await;
    let head = store.head_seq().await.unwrap();
    let again = send(store, request, &settings()).await;
    assert!(again.committed.is_empty(), "{:?}", again.committed);
    assert!(again.unchanged > 0, "{again:?}");
    assert_eq!(store.head_seq().await.unwrap(), head);
}

async fn a_new_call_repeating_an_unknown_one_is_a_repeat_on_it(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let store = fresh.store.as_ref();
    let agent = Agent::new();
    let cx = agent.tool("create_ticket", Some(r#"{"title":"printer"}"#), 0);
    agent.http(&cx, "POST", None, Some("timeout"), None, 1, 31);
    agent.end(&cx, 31, true);
    send(store, agent.request(), &settings()).await;
    // The agent tries again, same arguments (keys in another order), new span.
    let again = agent.tool("create_ticket", Some(r#"{ "title" : "printer" }"#), 40);
    agent.http(&again, "POST", Some(201), None, None, 41, 42);
    agent.end(&again, 42, false);
    send(store, agent.request(), &settings()).await;
    let detail = only(store, "create_ticket").await;
    assert_eq!(
        detail.row.operation.state,
        State::Unknown,
        "a repeat moves no state"
    );
    assert_eq!(detail.attempts.len(), 2);
    // The reconcile-before-repeat rule sees the repeat for what it is.
    let data = store.dataset(&Scope::Every).await.unwrap();
    let report = holdfast::core::metrics::report(&data, now());
    let text = format!("{report:?}");
    assert!(
        text.contains("repeated the write before reconciliation"),
        "{text}"
    );
}

/// A business key holding a secret is stored redacted; a repeat of the call
/// with the same key still finds the UNKNOWN operation (a repeat must match
/// both the payload and the key).
async fn a_repeat_is_found_by_a_business_key_holding_a_secret(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let store = fresh.store.as_ref();
    let key = "order-sk_live_51H8xYzAbCdEfGhIjKlMnOp";
    let agent = Agent::new();
    let cx = agent.tool("create_ticket", Some(r#"{"title":"printer"}"#), 0);
    agent.http(&cx, "POST", None, Some("timeout"), None, 1, 31);
    agent.end(&cx, 31, true);
    let mut first = agent.request();
    set_attribute(&mut first, "holdfast.business_key", key);
    send(store, first, &settings()).await;
    let again = agent.tool("create_ticket", Some(r#"{"title":"printer"}"#), 40);
    agent.http(&again, "POST", Some(201), None, None, 41, 42);
    agent.end(&again, 42, false);
    let mut second = agent.request();
    set_attribute(&mut second, "holdfast.business_key", key);
    send(store, second, &settings()).await;
    let detail = only(store, "create_ticket").await;
    let stored = detail
        .row
        .operation
        .business_key
        .clone()
        .unwrap_or_default();
    assert!(!stored.contains("sk_live"), "{stored}");
    assert_eq!(detail.attempts.len(), 2, "the repeat joined the held call");
}

/// Sets `key` to `value` on every span of `request` that has it, else on
/// every tool span.
fn set_attribute(request: &mut ExportTraceServiceRequest, key: &str, value: &str) {
    use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue as Kv, any_value};
    let text = Some(AnyValue {
        value: Some(any_value::Value::StringValue(value.to_owned())),
    });
    for span in &mut request.resource_spans[0].scope_spans[0].spans {
        match span.attributes.iter_mut().find(|kv| kv.key == key) {
            Some(kv) => kv.value = text.clone(),
            None if span.name.starts_with("execute_tool") => span.attributes.push(Kv {
                key: key.to_owned(),
                value: text.clone(),
                ..Kv::default()
            }),
            None => {}
        }
    }
}

async fn a_tool_call_id_is_searchable_beside_a_conversation_id(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let store = fresh.store.as_ref();
    let mut request = timed_out_write(&Agent::new());
    set_attribute(&mut request, "gen_ai.conversation.id", "conv-77");
    send(store, request, &settings()).await;
    let detail = only(store, "create_ticket").await;
    assert_eq!(
        detail.row.operation.correlation_id.as_deref(),
        Some("conv-77")
    );
    for term in ["conv-77", "call-create_ticket-0", "CREATE_TICKET-0"] {
        let filter = holdfast::store::OperationFilter {
            search: Some(term.into()),
            ..Default::default()
        };
        assert_eq!(store.count(&filter).await.unwrap(), 1, "{term}");
    }
}

/// The file door over an input given as bytes, `chunk_spans` spans at a time.
async fn file_intake(
    store: &dyn Store,
    bytes: Vec<u8>,
    chunk_spans: usize,
    rejects: Option<&mut Vec<u8>>,
) -> (OtlpOutcome, Vec<String>) {
    use holdfast::otlp::file::{FileIntake, intake_file};
    let settings = settings();
    let ingester = otlp_ingester();
    let door = FileIntake {
        store,
        source: "traces.jsonl",
        settings: &settings,
        ingester: &ingester,
        now: now(),
        chunk_spans,
        size: 0,
    };
    let open = move || -> std::io::Result<Box<dyn std::io::BufRead + Send>> {
        Ok(Box::new(std::io::Cursor::new(bytes.clone())))
    };
    let mut printed = Vec::new();
    let path = std::path::Path::new("rejects.jsonl");
    let outcome = intake_file(
        &door,
        &open,
        rejects.map(|r| (path, r as &mut dyn std::io::Write)),
        &mut |e| printed.push(e.to_string()),
    )
    .await
    .expect("file intake");
    (outcome, printed)
}

async fn a_file_is_taken_a_chunk_at_a_time_and_children_join_across_chunks(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let store = fresh.store.as_ref();
    let mut lines = Vec::new();
    for n in 0..3u64 {
        let agent = Agent::new();
        let cx = agent.tool("create_ticket", Some(&format!("{{\"n\":{n}}}")), n * 100);
        agent.http(&cx, "POST", Some(503), None, None, n * 100 + 1, n * 100 + 2);
        agent.http(
            &cx,
            "POST",
            None,
            Some("timeout"),
            Some(1),
            n * 100 + 3,
            n * 100 + 33,
        );
        // The children on one line, their tool span on the next.
        lines.push(serde_json::to_string(&agent.request()).unwrap());
        agent.end(&cx, n * 100 + 34, true);
        lines.push(serde_json::to_string(&agent.request()).unwrap());
    }
    let bytes = (lines.join("\n") + "\n").into_bytes();
    // One span at a time: every request its own chunk, each child waiting in
    // the store for its tool span.
    let (outcome, printed) = file_intake(store, bytes, 1, None).await;
    assert!(printed.is_empty(), "{printed:?}");
    assert_eq!(outcome.chunks, 6, "{outcome:?}");
    assert_eq!((outcome.requests, outcome.spans), (6, 9));
    assert_eq!(outcome.waiting, 0);
    let data = store.dataset(&Scope::Every).await.unwrap();
    assert_eq!(data.operations.len(), 3, "{:?}", data.operations);
    for op in &data.operations {
        assert_eq!(op.state, State::Unknown);
        assert_eq!(
            store
                .detail(&Scope::Every, &op.id)
                .await
                .unwrap()
                .attempts
                .len(),
            2
        );
    }
}

async fn a_file_s_refusals_are_counted_and_only_the_first_kept(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let store = fresh.store.as_ref();
    let agent = Agent::new();
    let cx = agent.tool("create_ticket", Some(r#"{"title":"printer"}"#), 0);
    agent.http(&cx, "POST", None, Some("timeout"), None, 1, 31);
    agent.end(&cx, 32, true);
    let good = serde_json::to_string(&agent.request()).unwrap();
    let mut lines = vec![good];
    lines.extend((0..150).map(|_| "{\"resourceSpans\": 7}".to_owned()));
    let bytes = lines.join("\n").into_bytes();
    let mut rejects = Vec::new();
    let (outcome, printed) = file_intake(store, bytes, 10, Some(&mut rejects)).await;
    // Every refusal handed out as found, only the first hundred kept.
    assert_eq!(printed.len(), 150);
    assert_eq!(outcome.rejected.lines, 150);
    assert_eq!(outcome.rejected.examples.len(), 100);
    assert_eq!(outcome.rejected.more, 50);
    assert_eq!(outcome.rejected.by_rule[0].count, 150);
    assert_eq!(String::from_utf8(rejects).unwrap().lines().count(), 150);
    assert_eq!(
        states(store).await,
        vec![State::Unknown],
        "the good line is committed"
    );
}

async fn states(store: &dyn Store) -> Vec<State> {
    store
        .dataset(&Scope::Every)
        .await
        .unwrap()
        .operations
        .iter()
        .map(|o| o.state)
        .collect()
}

holdfast_on_both_backends!(
    a_tool_call_id_is_searchable_beside_a_conversation_id,
    a_file_is_taken_a_chunk_at_a_time_and_children_join_across_chunks,
    a_file_s_refusals_are_counted_and_only_the_first_kept,
    a_read_that_succeeded_is_succeeded_with_its_attempt,
    a_write_that_timed_out_with_no_response_is_unknown,
    a_503_then_a_200_resent_is_succeeded_with_two_attempts,
    a_connect_failure_was_not_sent,
    a_409_is_held,
    a_tool_span_without_children_is_its_own_attempt_and_payload_unknown,
    children_before_their_parent_wait_then_join_it,
    orphans_past_their_window_become_an_unknown_tool_operation,
    the_same_request_twice_changes_nothing,
    a_new_call_repeating_an_unknown_one_is_a_repeat_on_it,
    a_repeat_is_found_by_a_business_key_holding_a_secret,
);

/// `holdfast ingest --format otlp` on files the Collector's `file` exporter
/// would write: JSON Lines of requests, gzip or not.
mod file {
    use super::support::cli::Cli;
    use super::*;

    const CONFIG: &str = "[otlp]\ntenant = \"pinehaven\"\n\n[[otlp.tool]]\nname = \"create_ticket\"\nmethod = \"POST\"\nowner = \"integrations\"\n";

    /// Two lines: the HTTP span first, its tool span on the next line.
    pub(super) fn lines() -> Vec<String> {
        let agent = Agent::new();
        let cx = agent.tool("create_ticket", Some(r#"{"title":"printer"}"#), 0);
        agent.http(&cx, "POST", None, Some("timeout"), None, 1, 31);
        let first = serde_json::to_string(&agent.request()).unwrap();
        agent.end(&cx, 32, true);
        let second = serde_json::to_string(&agent.request()).unwrap();
        vec![first, second]
    }

    fn cli() -> Cli {
        let cli = Cli::empty();
        std::fs::write(cli.dir.path().join("no-config.toml"), CONFIG).unwrap();
        cli
    }

    /// `ingest --format otlp PATH` as maya, which must succeed.
    fn taken(cli: &Cli, path: &std::path::Path) -> super::support::cli::Run {
        cli.run(
            "maya",
            &["ingest", "--format", "otlp", path.to_str().unwrap()],
        )
        .expect_code(0)
    }

    async fn held(cli: &Cli) -> Vec<holdfast::core::model::Operation> {
        let store = holdfast::store::sqlite::SqliteStore::open(&cli.db)
            .await
            .unwrap();
        store.dataset(&Scope::Every).await.unwrap().operations
    }

    #[tokio::test]
    async fn json_lines_gzip_or_not_join_across_lines_and_hold_the_timeout() {
        for gzip in [false, true] {
            let cli = cli();
            let text = lines().join("\n") + "\n";
            let path = cli.dir.path().join("traces.jsonl");
            let bytes = if gzip {
                use std::io::Write;
                let mut enc =
                    flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
                enc.write_all(text.as_bytes()).unwrap();
                enc.finish().unwrap()
            } else {
                text.into_bytes()
            };
            std::fs::write(&path, bytes).unwrap();
            let run = taken(&cli, &path);
            assert!(
                run.stderr.contains("waiting for their tool span 0"),
                "{}",
                run.stderr
            );
            let ops = held(&cli).await;
            assert_eq!(ops.len(), 1, "{ops:?}");
            assert_eq!(ops[0].state, State::Unknown);
            assert_eq!(ops[0].tenant, "pinehaven");
        }
    }

    #[tokio::test]
    async fn an_edited_tool_table_is_named_and_the_stored_contract_goes_on_deciding() {
        let cli = cli();
        let first = cli.dir.path().join("first.jsonl");
        std::fs::write(&first, lines().join("\n")).unwrap();
        let run = taken(&cli, &first);
        assert!(!run.stderr.contains("warning:"), "{}", run.stderr);

        // The owner edited after the contract was stored: said, not applied.
        let edited = CONFIG.replace("owner = \"integrations\"", "owner = \"payments\"");
        std::fs::write(cli.dir.path().join("no-config.toml"), edited).unwrap();
        let second = cli.dir.path().join("second.jsonl");
        let agent = Agent::new();
        let cx = agent.tool("create_ticket", Some(r#"{"title":"scanner"}"#), 100);
        agent.http(&cx, "POST", None, Some("timeout"), None, 101, 131);
        agent.end(&cx, 132, true);
        std::fs::write(&second, serde_json::to_string(&agent.request()).unwrap()).unwrap();
        let run = taken(&cli, &second);
        assert!(
            run.stderr.contains(
                "warning: [[otlp.tool]] create_ticket: differs from the stored contract in owner; the stored contract is the one used"
            ),
            "{}",
            run.stderr
        );
        let ops = held(&cli).await;
        assert_eq!(ops.len(), 2, "{ops:?}");
        for op in &ops {
            assert_eq!(op.state, State::Unknown);
            assert_eq!(op.owner, "integrations", "{op:?}");
        }
    }

    #[tokio::test]
    async fn an_attempt_keeps_its_redacted_url_shown_and_copied() {
        let cli = cli();
        let path = cli.dir.path().join("traces.jsonl");
        std::fs::write(&path, lines().join("\n")).unwrap();
        taken(&cli, &path);
        let id = held(&cli).await[0].id.as_str().to_owned();
        // The userinfo and query values redacted, no secret of them left.
        let url = "url https://REDACTED:‹redacted:url_password›@tickets.example/v1/tickets?api_key=‹redacted:query_secret›&q=REDACTED";
        let shown = cli.run("maya", &["timeline", &id]).expect_code(0);
        assert!(shown.stdout.contains(url), "{}", shown.stdout);
        for secret in ["hunter2", "sk_live"] {
            assert!(!shown.stdout.contains(secret), "{}", shown.stdout);
        }
        // `timeline --json` is wire v1, which has no such field.
        let json = cli.run("maya", &["timeline", &id, "--json"]).expect_code(0);
        assert!(!json.stdout.contains("\"url\""), "{}", json.stdout);

        let copy = Cli {
            dir: tempfile::tempdir().unwrap(),
            db: cli.dir.path().join("copy.db"),
        };
        let from = format!("sqlite:{}", cli.db.display());
        let to = format!("sqlite:{}", copy.db.display());
        cli.run("maya", &["db", "copy", "--from", &from, "--to", &to])
            .expect_code(0);
        let shown = copy.run("maya", &["timeline", &id]).expect_code(0);
        assert!(shown.stdout.contains(url), "{}", shown.stdout);
    }

    #[tokio::test]
    async fn a_bad_line_is_named_with_its_field_and_nothing_commits_unless_rejected() {
        let cli = cli();
        let mut lines = lines();
        // The tool span's trace id cut short.
        let bad = lines[1].replacen("\"traceId\":\"", "\"traceId\":\"ab", 1);
        lines.insert(1, bad.replacen("\"spanId\":\"", "\"spanId\":\"00", 1));
        lines.insert(2, "{\"resourceSpans\": 7}".to_owned());
        let path = cli.dir.path().join("traces.jsonl");
        std::fs::write(&path, lines.join("\n")).unwrap();
        let run = cli
            .run(
                "maya",
                &["ingest", "--format", "otlp", path.to_str().unwrap()],
            )
            .expect_code(2);
        assert!(
            run.stderr
                .contains("line 2: resource_spans[0].scope_spans[0].spans[0]."),
            "{}",
            run.stderr
        );
        assert!(
            run.stderr.contains("line 3: -: not an OTLP/JSON"),
            "{}",
            run.stderr
        );
        assert!(run.stderr.contains("nothing committed"), "{}", run.stderr);
        assert!(held(&cli).await.is_empty());

        let rejects = cli.dir.path().join("rejects.jsonl");
        cli.run(
            "maya",
            &[
                "ingest",
                "--format",
                "otlp",
                path.to_str().unwrap(),
                "--rejects",
                rejects.to_str().unwrap(),
            ],
        )
        .expect_code(0);
        assert_eq!(held(&cli).await.len(), 1);
        assert_eq!(
            std::fs::read_to_string(&rejects).unwrap().lines().count(),
            2
        );
    }
}

/// The receiver on 127.0.0.1, fed by the real OTLP/HTTP exporter.
mod receiver {
    use super::*;
    use holdfast::otlp::receiver::{Receiver, serve};
    use opentelemetry_otlp::{Compression, Protocol, WithExportConfig, WithHttpConfig};
    use opentelemetry_sdk::trace::{SpanData, SpanExporter as _};
    use prost::Message;
    use std::collections::HashMap;
    use std::net::SocketAddr;
    use std::sync::Arc;

    struct Running {
        fresh: stores::Fresh,
        addr: SocketAddr,
        task: tokio::task::JoinHandle<()>,
    }

    impl Drop for Running {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    async fn start(kind: Kind, settings: OtlpSettings, token: Option<&str>) -> Running {
        start_as(kind, settings, token, otlp_ingester()).await
    }

    async fn start_as(
        kind: Kind,
        settings: OtlpSettings,
        token: Option<&str>,
        ingester: Ingester,
    ) -> Running {
        let fresh = stores::fresh(kind).await;
        let receiver = Arc::new(Receiver::new(
            fresh.store.clone(),
            settings,
            ingester,
            token.map(str::to_owned),
            Arc::new(now),
        ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let _ = serve(listener, receiver).await;
        });
        Running { fresh, addr, task }
    }

    fn exporter(
        addr: SocketAddr,
        protocol: Protocol,
        gzip: bool,
        token: Option<&str>,
    ) -> opentelemetry_otlp::SpanExporter {
        let mut builder = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(format!("http://{addr}/v1/traces"))
            .with_protocol(protocol);
        if gzip {
            builder = builder.with_compression(Compression::Gzip);
        }
        if let Some(token) = token {
            builder = builder.with_headers(HashMap::from([(
                "authorization".to_owned(),
                format!("Bearer {token}"),
            )]));
        }
        builder.build().expect("exporter")
    }

    impl Agent {
        fn finished(&self) -> Vec<SpanData> {
            let _ = self.provider.force_flush();
            let spans = self.exporter.get_finished_spans().unwrap();
            self.exporter.reset();
            spans
        }
    }

    /// A write that timed out, as the SDK finished it.
    fn timed_out(agent: &Agent) -> Vec<SpanData> {
        let cx = agent.tool("create_ticket", Some(r#"{"title":"printer"}"#), 0);
        agent.http(&cx, "POST", None, Some("timeout"), None, 1, 31);
        agent.end(&cx, 31, true);
        agent.finished()
    }

    async fn the_real_exporter_is_heard_in_protobuf_json_and_gzip(kind: Kind) {
        for (protocol, gzip) in [
            (Protocol::HttpBinary, false),
            (Protocol::HttpJson, false),
            (Protocol::HttpBinary, true),
        ] {
            let running = start(kind, settings(), None).await;
            let agent = Agent::new();
            let mut exporter = exporter(running.addr, protocol, gzip, None);
            exporter.set_resource(&agent.resource);
            exporter.export(timed_out(&agent)).await.expect("exported");
            let store = running.fresh.store.as_ref();
            assert_eq!(
                states(store).await,
                vec![State::Unknown],
                "{protocol:?} gzip {gzip}"
            );
            let op = &store.dataset(&Scope::Every).await.unwrap().operations[0];
            assert_eq!(op.actor, "svc:relay-desk");
            // The receiver writes as itself.
            let audit = store.audit(0, 100).await.unwrap();
            assert!(audit.iter().any(|r| r.draft.by == "svc:otlp"), "{audit:?}");
        }
    }

    async fn the_token_is_required_when_configured(kind: Kind) {
        let running = start(kind, settings(), Some("t0ken")).await;
        let agent = Agent::new();
        let spans = timed_out(&agent);
        let refused = exporter(running.addr, Protocol::HttpBinary, false, None)
            .export(spans.clone())
            .await;
        assert!(refused.is_err());
        let wrong = exporter(running.addr, Protocol::HttpBinary, false, Some("guess"))
            .export(spans.clone())
            .await;
        assert!(wrong.is_err());
        assert!(states(running.fresh.store.as_ref()).await.is_empty());
        exporter(running.addr, Protocol::HttpBinary, false, Some("t0ken"))
            .export(spans)
            .await
            .expect("with the token");
        assert_eq!(
            states(running.fresh.store.as_ref()).await,
            vec![State::Unknown]
        );
    }

    fn post(
        addr: SocketAddr,
        content_type: &str,
        body: Vec<u8>,
        gzip: bool,
    ) -> reqwest::RequestBuilder {
        let mut request = reqwest::Client::new()
            .post(format!("http://{addr}/v1/traces"))
            .header("content-type", content_type)
            .body(body);
        if gzip {
            request = request.header("content-encoding", "gzip");
        }
        request
    }

    fn gzipped(bytes: &[u8]) -> Vec<u8> {
        use std::io::Write;
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all(bytes).unwrap();
        enc.finish().unwrap()
    }

    async fn oversized_garbage_and_partly_bad_bodies_get_their_status(kind: Kind) {
        let mut small = settings();
        small.max_body_bytes = Some(4096);
        let running = start(kind, small, None).await;
        let addr = running.addr;
        let big = vec![b' '; 8192];
        let status = |content_type: &'static str, body: Vec<u8>, gzip: bool| async move {
            let r = post(addr, content_type, body, gzip).send().await.unwrap();
            r.status().as_u16()
        };
        assert_eq!(status("application/json", big.clone(), false).await, 413);
        // Small on the wire, too large once inflated.
        assert_eq!(status("application/json", gzipped(&big), true).await, 413);
        let garbage = b"\xff\xff\xff garbage".to_vec();
        assert_eq!(status("application/x-protobuf", garbage, false).await, 400);
        let wrong = b"{\"resourceSpans\": 7}".to_vec();
        assert_eq!(status("application/json", wrong, false).await, 400);
        assert_eq!(status("text/plain", b"{}".to_vec(), false).await, 415);
        assert!(states(running.fresh.store.as_ref()).await.is_empty());

        // One span refused, the others taken: 200 with partial success.
        let agent = Agent::new();
        let cx = agent.tool("create_ticket", Some(r#"{"title":"printer"}"#), 0);
        agent.http(&cx, "POST", None, Some("timeout"), None, 1, 31);
        agent.end(&cx, 31, true);
        let mut request = agent.request();
        let mut bad = request.resource_spans[0].scope_spans[0].spans[0].clone();
        bad.trace_id = vec![1, 2, 3];
        request.resource_spans[0].scope_spans[0].spans.push(bad);
        let partial = partial_success(addr, gzipped(&request.encode_to_vec()), true).await;
        assert_eq!(partial.rejected_spans, 1);
        assert!(
            partial.error_message.contains("trace_id"),
            "{}",
            partial.error_message
        );
        assert_eq!(
            states(running.fresh.store.as_ref()).await,
            vec![State::Unknown]
        );
    }

    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceResponse as ExportTraceServiceResponseDecoded;

    /// The partial success a protobuf body is answered 200 with.
    async fn partial_success(
        addr: SocketAddr,
        body: Vec<u8>,
        gzip: bool,
    ) -> opentelemetry_proto::tonic::collector::trace::v1::ExportTracePartialSuccess {
        let r = post(addr, "application/x-protobuf", body, gzip)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let answer =
            ExportTraceServiceResponseDecoded::decode(r.bytes().await.unwrap().as_ref()).unwrap();
        answer.partial_success.expect("partial success")
    }

    async fn a_busy_store_is_answered_503_and_nothing_is_half_committed(kind: Kind) {
        // A short wait for the store, so that the 503 comes soon; the other
        // tests wait the default, time enough on a loaded machine.
        let mut impatient = settings();
        impatient.busy_ms = Some(500);
        let running = start(kind, impatient, None).await;
        let agent = Agent::new();
        let cx = agent.tool("create_ticket", Some(r#"{"title":"printer"}"#), 0);
        agent.http(&cx, "POST", None, Some("timeout"), None, 1, 31);
        agent.end(&cx, 31, true);
        let body = agent.request().encode_to_vec();
        let head = running.fresh.store.head_seq().await.unwrap();
        {
            // Another writer holds the store's write lock.
            let (sqlite, postgres) = (&running.fresh.sqlite, &running.fresh.postgres);
            let hold = match (sqlite, postgres) {
                (Some(s), _) => {
                    let mut conn = s.pool().acquire().await.unwrap();
                    sqlx::raw_sql("BEGIN IMMEDIATE")
                        .execute(&mut *conn)
                        .await
                        .unwrap();
                    Holder::Sqlite(conn)
                }
                (_, Some(p)) => {
                    let mut tx = p.pool().begin().await.unwrap();
                    sqlx::raw_sql("SELECT seq FROM holdfast_lock_head()")
                        .execute(&mut *tx)
                        .await
                        .unwrap();
                    Holder::Postgres(tx)
                }
                _ => unreachable!(),
            };
            let r = post(running.addr, "application/x-protobuf", body.clone(), false)
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 503);
            assert_eq!(r.headers().get("retry-after").unwrap(), "1");
            match hold {
                Holder::Sqlite(mut conn) => {
                    sqlx::raw_sql("ROLLBACK").execute(&mut *conn).await.unwrap();
                }
                Holder::Postgres(tx) => tx.rollback().await.unwrap(),
            }
        }
        assert!(states(running.fresh.store.as_ref()).await.is_empty());
        assert_eq!(running.fresh.store.head_seq().await.unwrap(), head);
        let r = post(running.addr, "application/x-protobuf", body, false)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(
            states(running.fresh.store.as_ref()).await,
            vec![State::Unknown]
        );
    }

    enum Holder {
        Sqlite(sqlx::pool::PoolConnection<sqlx::Sqlite>),
        Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
    }

    async fn concurrent_requests_are_each_answered_with_their_own_refusals(kind: Kind) {
        let running = start(kind, settings(), None).await;
        let mut sends = Vec::new();
        for i in 0..8u64 {
            let agent = Agent::new();
            let cx = agent.tool("create_ticket", Some(&format!("{{\"n\":{i}}}")), i);
            agent.http(&cx, "POST", None, Some("timeout"), None, i + 1, i + 31);
            agent.end(&cx, i + 31, true);
            let mut request = agent.request();
            if i == 5 {
                let mut bad = request.resource_spans[0].scope_spans[0].spans[0].clone();
                bad.span_id = vec![9];
                request.resource_spans[0].scope_spans[0].spans.push(bad);
            }
            let body = request.encode_to_vec();
            let addr = running.addr;
            sends.push(tokio::spawn(async move {
                let r = post(addr, "application/x-protobuf", body, false)
                    .send()
                    .await
                    .unwrap();
                let status = r.status();
                let body = r.bytes().await.unwrap();
                assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
                let answer = ExportTraceServiceResponseDecoded::decode(body.as_ref()).unwrap();
                (i, answer.partial_success.map(|p| p.rejected_spans))
            }));
        }
        for send in sends {
            let (i, rejected) = send.await.unwrap();
            assert_eq!(rejected, (i == 5).then_some(1), "request {i}");
        }
        assert_eq!(
            states(running.fresh.store.as_ref()).await,
            vec![State::Unknown; 8]
        );
    }

    async fn partial_success_counts_the_spans_the_store_refused(kind: Kind) {
        // The receiver may write into pinehaven only.
        let mut ingester = otlp_ingester();
        ingester.tenants = Some(vec!["pinehaven".into()]);
        let running = start_as(kind, settings(), None, ingester).await;
        let agent = Agent::new();
        let cx = agent.tool("create_ticket", Some(r#"{"title":"printer"}"#), 0);
        agent.http(&cx, "POST", Some(503), None, None, 1, 2);
        agent.http(&cx, "POST", None, Some("timeout"), Some(1), 3, 33);
        agent.end(&cx, 34, true);
        let mut request = agent.request();
        // The call names another tenant: its operation, two attempts and
        // transition are refused — three spans.
        set_attribute(&mut request, "holdfast.tenant", "elsewhere");
        let partial = partial_success(running.addr, request.encode_to_vec(), false).await;
        assert_eq!(partial.rejected_spans, 3, "{}", partial.error_message);
        assert!(states(running.fresh.store.as_ref()).await.is_empty());
    }

    holdfast_on_both_backends!(
        partial_success_counts_the_spans_the_store_refused,
        concurrent_requests_are_each_answered_with_their_own_refusals,
        the_real_exporter_is_heard_in_protobuf_json_and_gzip,
        the_token_is_required_when_configured,
        oversized_garbage_and_partly_bad_bodies_get_their_status,
        a_busy_store_is_answered_503_and_nothing_is_half_committed,
    );
}

/// `holdfast serve` itself, as an operator starts it.
mod binary {
    use super::support::cli::Cli;
    use super::*;
    use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
    use opentelemetry_sdk::trace::SpanExporter as _;
    use std::io::{BufRead, BufReader};

    /// A loopback address no one listens on yet.
    fn free_address() -> String {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        format!("127.0.0.1:{port}")
    }

    /// `serve` started, with the first line it printed (once it listens).
    fn started(serve: &mut std::process::Command) -> (std::process::Child, String) {
        let mut child = serve.stderr(std::process::Stdio::piped()).spawn().unwrap();
        let mut first = String::new();
        BufReader::new(child.stderr.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        (child, first)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn holdfast_serve_takes_an_exporter_and_asks_for_its_token() {
        let cli = Cli::empty();
        std::fs::write(
            cli.dir.path().join("no-config.toml"),
            "[otlp]\ntoken_env = \"T30_OTLP_TOKEN\"\n",
        )
        .unwrap();
        let listen = free_address();
        let mut serve = cli.command("maya", &["serve", "--listen", &listen]);
        let (mut child, first) = started(serve.env("T30_OTLP_TOKEN", "s3cret"));
        assert!(
            first.contains(&format!("http://{listen}/v1/traces")),
            "{first}"
        );
        assert!(
            first.contains("as maya") && first.contains("token required"),
            "{first}"
        );

        let agent = Agent::new();
        let cx = agent.tool("create_ticket", Some(r#"{"title":"printer"}"#), 0);
        agent.http(&cx, "POST", None, Some("timeout"), None, 1, 31);
        agent.end(&cx, 31, true);
        let _ = agent.provider.force_flush();
        let spans = agent.exporter.get_finished_spans().unwrap();
        let export = |token: &str| {
            opentelemetry_otlp::SpanExporter::builder()
                .with_http()
                .with_endpoint(format!("http://{listen}/v1/traces"))
                .with_protocol(Protocol::HttpJson)
                .with_headers(std::collections::HashMap::from([(
                    "authorization".to_owned(),
                    format!("Bearer {token}"),
                )]))
                .build()
                .unwrap()
        };
        assert!(export("wrong").export(spans.clone()).await.is_err());
        export("s3cret").export(spans).await.expect("exported");
        let _ = child.kill();
        let _ = child.wait();
        let store = holdfast::store::sqlite::SqliteStore::open(&cli.db)
            .await
            .unwrap();
        let ops = store.dataset(&Scope::Every).await.unwrap().operations;
        assert_eq!(ops.len(), 1, "{ops:?}");
        assert_eq!(ops[0].state, State::Unknown);
        // Nothing is stored without a contract for this tool here, but it is held.
        assert!(store.contracts().await.unwrap().is_empty());
    }

    /// `holdfast --database-url URL ARGS` as whoever the URL logs in as, with its
    /// own config and data dirs under `home`: exit code, stdout and stderr.
    fn on_postgres(home: &std::path::Path, url: &str, args: &[&str]) -> std::process::Command {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_holdfast"));
        command
            .env_remove("HOLDFAST_DB")
            .env_remove("HOLDFAST_DATABASE_URL")
            .env_remove("HOLDFAST_AS")
            .env("HOLDFAST_DATA_DIR", home.join("data"))
            .env("HOLDFAST_CONFIG", home.join("config.toml"))
            .env("HOLDFAST_NOW", super::support::cli::NOW)
            .args(["--database-url", url])
            .args(args);
        command
    }

    fn ran(mut command: std::process::Command) -> (i32, String) {
        let out = command.output().expect("run holdfast");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.code().unwrap_or(-1), text)
    }

    /// Both doors as a login of the application group (docs/operations.md's
    /// grants), the way a team runs them: refused without an ingest grant on the
    /// tenant; with one, a file's spans (a child a line before its tool span) and
    /// an exporter's spans become holds written in the login's own name, the
    /// spans that waited are released, and the owner's `audit verify` holds.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_login_of_the_application_group_feeds_both_doors_in_its_own_name() {
        crate::skip_without_postgres!();
        let team = stores::ApplicationLogin::new("hf_otlp").await;
        let (fresh, feeder, owner) = (&team.fresh, &team.login, &team.owner);
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.toml"),
            "[otlp]\ntenant = \"pinehaven\"\n",
        )
        .unwrap();
        let as_owner = fresh.url.clone();
        let as_feeder = team.url();
        let grant = |who: &str, role: &str| {
            let (code, out) = ran(on_postgres(
                home.path(),
                &as_owner,
                &["grant", who, "--role", role, "--tenant", "pinehaven"],
            ));
            assert_eq!(code, 0, "{out}");
        };
        grant(owner, "owner");

        let file = home.path().join("traces.jsonl");
        std::fs::write(&file, super::file::lines().join("\n")).unwrap();
        let ingest = ["ingest", "--format", "otlp", file.to_str().unwrap()];

        let (code, out) = ran(on_postgres(home.path(), &as_feeder, &ingest));
        assert_eq!(code, 2, "{out}");
        assert!(
            out.contains(&format!(
                "{} may not ingest into tenant pinehaven",
                feeder.name
            )),
            "{out}"
        );
        assert!(
            fresh
                .store
                .dataset(&Scope::Every)
                .await
                .unwrap()
                .operations
                .is_empty()
        );

        grant(&feeder.name, "ingest");
        let (code, out) = ran(on_postgres(home.path(), &as_feeder, &ingest));
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("waiting for their tool span 0"), "{out}");

        let listen = free_address();
        let (mut child, line) = started(&mut on_postgres(
            home.path(),
            &as_feeder,
            &["serve", "--listen", &listen],
        ));
        assert!(line.contains(&format!("as {}", feeder.name)), "{line}");
        let agent = Agent::new();
        let cx = agent.tool("create_ticket", Some(r#"{"title":"scanner"}"#), 100);
        agent.http(&cx, "POST", None, Some("timeout"), None, 101, 131);
        agent.end(&cx, 132, true);
        let _ = agent.provider.force_flush();
        let exported = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_endpoint(format!("http://{listen}/v1/traces"))
            .with_protocol(Protocol::HttpBinary)
            .build()
            .unwrap()
            .export(agent.exporter.get_finished_spans().unwrap())
            .await;
        let _ = child.kill();
        let _ = child.wait();
        exported.expect("exported");

        let ops = fresh.store.dataset(&Scope::Every).await.unwrap().operations;
        assert_eq!(ops.len(), 2, "{ops:?}");
        assert!(
            ops.iter()
                .all(|o| o.state == State::Unknown && o.tenant == "pinehaven")
        );
        let rows = fresh.store.audit(1, 500).await.unwrap();
        assert!(!rows.is_empty());
        for row in rows
            .iter()
            .filter(|r| ops.iter().any(|o| o.id == r.draft.operation))
        {
            assert_eq!(row.draft.by, feeder.name, "{row:?}");
        }
        assert_eq!(fresh.store.otlp_waiting_count().await.unwrap(), 0);
        let (code, out) = ran(on_postgres(home.path(), &as_owner, &["audit", "verify"]));
        assert_eq!(code, 0, "{out}");
        fresh.close().await;
    }
}
