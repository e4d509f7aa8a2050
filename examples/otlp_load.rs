//! Load for the OpenTelemetry intake, to measure it (BENCHMARKS.md):
//!
//! - `otlp_load gen FILE CALLS` writes OTLP/JSON Lines: requests of 50 tool
//!   calls, each an `execute_tool` span with two HTTP client spans (a 503, then
//!   a 200 with `resend_count` 1; every tenth call's second send timed out).
//! - `otlp_load send FILE URL [CONCURRENCY]` posts every line of FILE to the
//!   receiver at URL as application/json and prints spans per second.
//! - `otlp_load e2e URL DB` posts one timed-out write and prints the time until
//!   the SQLite store DB shows it in the console's queue.

use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, Status};

fn kv(key: &str, value: any_value::Value) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue { value: Some(value) }),
        ..Default::default()
    }
}

fn text(key: &str, value: &str) -> KeyValue {
    kv(key, any_value::Value::StringValue(value.to_owned()))
}

fn int(key: &str, value: i64) -> KeyValue {
    kv(key, any_value::Value::IntValue(value))
}

/// One tool call of `n`: a tool span and two HTTP spans.
fn call(n: u64, base_ns: u64) -> Vec<Span> {
    let trace = {
        let mut t = [0u8; 16];
        t[..8].copy_from_slice(&(n + 1).to_be_bytes());
        t[8..].copy_from_slice(&0x5eed_u64.to_be_bytes());
        t.to_vec()
    };
    let id = |k: u64| ((n + 1) * 4 + k).to_be_bytes().to_vec();
    let at = |ms: u64| base_ns + n * 1_000_000_000 + ms * 1_000_000;
    let tool = Span {
        trace_id: trace.clone(),
        span_id: id(0),
        name: "execute_tool create_ticket".into(),
        kind: 1,
        start_time_unix_nano: at(0),
        end_time_unix_nano: at(900),
        attributes: vec![
            text("gen_ai.operation.name", "execute_tool"),
            text("gen_ai.tool.name", "create_ticket"),
            text("gen_ai.tool.call.id", &format!("call-{n}")),
            text(
                "gen_ai.tool.call.arguments",
                &format!("{{\"title\":\"ticket {n}\"}}"),
            ),
            text("holdfast.tenant", "pinehaven"),
        ],
        ..Default::default()
    };
    let http = |k: u64, start: u64, status: Option<i64>, error: Option<&str>, resend: i64| {
        let mut attributes = vec![
            text("http.request.method", "POST"),
            text(
                "url.full",
                "https://tickets.example/v1/tickets?api_key=sk_live_0123456789abcdef",
            ),
            text("server.address", "tickets.example"),
            int("http.request.resend_count", resend),
            text("http.request.header.idempotency-key", &format!("k-{n}")),
        ];
        if let Some(status) = status {
            attributes.push(int("http.response.status_code", status));
        }
        if let Some(error) = error {
            attributes.push(text("error.type", error));
        }
        Span {
            trace_id: trace.clone(),
            span_id: id(k),
            parent_span_id: id(0),
            name: "POST".into(),
            kind: 3,
            start_time_unix_nano: at(start),
            end_time_unix_nano: at(start + 300),
            attributes,
            status: error.map(|_| Status {
                code: 2,
                ..Default::default()
            }),
            ..Default::default()
        }
    };
    let second = if n % 10 == 9 {
        http(2, 500, None, Some("timeout"), 1)
    } else {
        http(2, 500, Some(200), None, 1)
    };
    vec![tool, http(1, 100, Some(503), None, 0), second]
}

fn request(spans: Vec<Span>) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: vec![text("service.name", "relay-desk")],
                ..Default::default()
            }),
            scope_spans: vec![ScopeSpans {
                spans,
                ..Default::default()
            }],
            ..Default::default()
        }],
    }
}

fn generate(path: &str, calls: u64) {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let base = 1_788_000_000_000_000_000;
    let mut n = 0;
    while n < calls {
        let spans: Vec<Span> = (n..(n + 50).min(calls))
            .flat_map(|i| call(i, base))
            .collect();
        n += 50;
        serde_json::to_writer(&mut out, &request(spans)).expect("write");
        out.write_all(b"\n").expect("write");
    }
    out.flush().expect("flush");
}

async fn send(path: &str, url: &str, concurrency: usize) {
    let lines: Vec<String> = std::io::BufReader::new(std::fs::File::open(path).expect("open"))
        .lines()
        .map(|l| l.expect("read"))
        .collect();
    let spans: usize = lines.iter().map(|l| l.matches("\"spanId\"").count()).sum();
    let client = reqwest::Client::new();
    let started = Instant::now();
    let queue = std::sync::Arc::new(std::sync::Mutex::new(lines.into_iter()));
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (client, queue, url) = (client.clone(), queue.clone(), url.to_owned());
        tasks.push(tokio::spawn(async move {
            loop {
                let Some(line) = queue.lock().expect("queue").next() else {
                    return;
                };
                loop {
                    let r = client
                        .post(&url)
                        .header("content-type", "application/json")
                        .body(line.clone())
                        .send()
                        .await
                        .expect("post");
                    match r.status().as_u16() {
                        200 => break,
                        429 | 503 => tokio::time::sleep(Duration::from_millis(200)).await,
                        other => panic!("status {other}: {}", r.text().await.unwrap_or_default()),
                    }
                }
            }
        }));
    }
    for task in tasks {
        task.await.expect("task");
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "sent {spans} spans in {secs:.2} s: {:.0} spans/s",
        spans as f64 / secs
    );
}

async fn e2e(url: &str, db: &str) {
    use holdfast::store::{OperationFilter, Store};
    let store = holdfast::store::sqlite::SqliteStore::open(std::path::Path::new(db))
        .await
        .expect("store");
    let queue = OperationFilter {
        queue: true,
        ..OperationFilter::default()
    };
    let before = store.count(&queue).await.expect("count");
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_nanos() as u64;
    // A timed-out write: the tenth call of a fresh trace.
    let spans: Vec<Span> = call(9 + (stamp % 1_000_000) * 10, 1_788_000_000_000_000_000);
    let body = serde_json::to_vec(&request(spans)).expect("json");
    let started = Instant::now();
    let r = reqwest::Client::new()
        .post(url)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .expect("post");
    let answered = started.elapsed();
    assert_eq!(r.status(), 200);
    loop {
        if store.count(&queue).await.expect("count") > before {
            break;
        }
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    println!(
        "POST answered in {:.1} ms; the hold in the queue after {:.1} ms",
        answered.as_secs_f64() * 1000.0,
        started.elapsed().as_secs_f64() * 1000.0
    );
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("gen") => generate(&args[2], args[3].parse().expect("CALLS")),
        Some("send") => {
            let concurrency = args.get(4).map_or(4, |c| c.parse().expect("CONCURRENCY"));
            send(&args[2], &args[3], concurrency).await;
        }
        Some("e2e") => e2e(&args[2], &args[3]).await,
        _ => {
            eprintln!("usage: otlp_load gen FILE CALLS | send FILE URL [CONCURRENCY] | e2e URL DB")
        }
    }
}
