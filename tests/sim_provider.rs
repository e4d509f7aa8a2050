//! The simulated provider on its own: the case file's strict parser, loopback
//! only, idempotency-key semantics (replay, conflict, expiry), status lag, late
//! answers and item-level batch results, all counted at the provider.

use std::net::SocketAddr;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use holdfast::core::model::{AttemptKind, Outcome, Phase};
use holdfast::executor::ExecClock;
use holdfast::executor::transport::{Exchange, HttpRequest, LiteralResolver, Transport, Url};
use holdfast::sim::provider::{ServeError, serve};
use holdfast::sim::{Provider, parse_cases};
use serde_json::{Value, json};

const CONTRACT: &str = r#"{"tool":"SIM-1","version":"IC07","action":"ticket.create","method":"POST","idempotency":{"supported":true,"scope":"account","retention_hours":1},"status_lookup":true,"retryable":[],"compensation":null,"owner":"integrations","max_attempts":3,"budget_seconds":900}"#;

fn case_line(id: &str, provider: &str) -> String {
    format!(
        r#"{{"type":"case","id":"{id}","mode":"timeout_unknown","name":"t","contract":{CONTRACT},"operation":{{"items":0}},"provider":{provider},"expect":{{"state":"SUCCEEDED","requests":1,"status_queries":0,"effects":1}}}}"#
    )
}

fn start() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-09-05T10:00:00Z")
        .unwrap()
        .with_timezone(&Utc)
}

struct Sim {
    provider: Provider,
    running: holdfast::sim::Running,
    clock: ExecClock,
    transport: Transport,
}

async fn sim(id: &str, provider_rules: &str) -> Sim {
    let cases = parse_cases(&case_line(id, provider_rules)).unwrap();
    let provider = Provider::new();
    let clock = ExecClock::simulated(start());
    provider.add_case(cases[0].clone(), clock.clone());
    let running = serve(provider.clone(), SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    Sim {
        provider,
        running,
        clock,
        transport: Transport::new(Arc::new(LiteralResolver), std::time::Duration::from_secs(2)),
    }
}

impl Sim {
    async fn write(&self, case: &str, key: &str, payload_hash: &str, items: &[u32]) -> Exchange {
        let body = json!({"operation": "op-1", "tenant": "pinehaven", "target": "t:1",
                          "business_key": "b-1", "payload_hash": payload_hash,
                          "payload": {"a": 1}, "items": items});
        self.transport
            .send(&HttpRequest {
                method: "POST".into(),
                url: Url::parse(&format!("{}/ops", self.running.case_url(case))).unwrap(),
                headers: vec![("Idempotency-Key".into(), key.into())],
                body: Some(body.to_string().into_bytes()),
                kind: AttemptKind::Request,
            })
            .await
    }

    async fn status(&self, case: &str) -> Exchange {
        self.transport
            .send(&HttpRequest {
                method: "GET".into(),
                url: Url::parse(&format!(
                    "{}/records?business_key=b-1",
                    self.running.case_url(case)
                ))
                .unwrap(),
                headers: vec![],
                body: None,
                kind: AttemptKind::StatusQuery,
            })
            .await
    }
}

fn json_of(exchange: &Exchange) -> Value {
    serde_json::from_slice(&exchange.body).unwrap()
}

#[test]
fn a_bad_case_file_names_every_bad_line_and_field() {
    let good = case_line("A", "[]");
    let bad_rule = case_line(
        "B",
        r#"[{"on":"request","n":1,"respond":"drop","when":"now"}]"#,
    );
    let bad_mode = good
        .replace("timeout_unknown", "gremlins")
        .replace("\"A\"", "\"C\"");
    let bad_contract = good
        .replace("\"max_attempts\":3,", "")
        .replace("\"A\"", "\"D\"");
    let text = [good.clone(), bad_rule, bad_mode, bad_contract, good].join("\n");
    let errors = parse_cases(&text).unwrap_err();
    let shown: Vec<String> = errors.iter().map(ToString::to_string).collect();
    assert!(
        shown[0].starts_with("line 2: provider[0]: unknown field `when`"),
        "{shown:?}"
    );
    assert!(
        shown
            .iter()
            .any(|e| e.starts_with("line 3: mode: `gremlins`")),
        "{shown:?}"
    );
    assert!(
        shown
            .iter()
            .any(|e| e.starts_with("line 4: contract.max_attempts")),
        "{shown:?}"
    );
    assert!(
        shown
            .iter()
            .any(|e| e.starts_with("line 5: id: case A appears twice")),
        "{shown:?}"
    );
}

#[tokio::test]
async fn the_provider_refuses_to_listen_beyond_loopback() {
    for addr in ["0.0.0.0:0", "192.0.2.10:8710"] {
        let result = serve(Provider::new(), addr.parse().unwrap()).await;
        assert!(matches!(result, Err(ServeError::NotLoopback(_))));
    }
}

#[tokio::test]
async fn a_key_replays_the_same_payload_refuses_another_and_expires() {
    let s = sim("K", "[]").await;
    let first = s.write("K", "k-1", "sha256:aa", &[]).await;
    assert_eq!(first.status, Some(200));
    let again = s.write("K", "k-1", "sha256:aa", &[]).await;
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(json_of(&again), json_of(&first), "the original result");
    assert_eq!(again.header("x-request-id"), first.header("x-request-id"));
    let other = s.write("K", "k-1", "sha256:bb", &[]).await;
    assert_eq!(other.status, Some(409));
    s.clock.wait(Duration::hours(1)).await;
    let expired = s.write("K", "k-1", "sha256:aa", &[]).await;
    assert_eq!(expired.status, Some(200));
    assert_ne!(expired.header("idempotent-replayed"), Some("true"));
    let c = s.provider.counters("K").unwrap();
    assert_eq!(
        (c.requests, c.replays, c.conflicts, c.effects),
        (4, 1, 1, 2)
    );
    assert_eq!(
        json_of(&s.status("K").await)["count"],
        2,
        "a duplicate after expiry"
    );
    s.running.stop().await;
}

#[tokio::test]
async fn status_lag_hides_a_committed_record_for_the_scripted_lookups() {
    let s = sim(
        "L",
        r#"[{"on":"request","n":1,"commit":true,"respond":"drop"},{"on":"status","n":1,"respond":{"status":404}},{"on":"status","n":2,"respond":"record"}]"#,
    )
    .await;
    let dropped = s.write("L", "k", "sha256:aa", &[]).await;
    assert_eq!(dropped.phase, Phase::RequestSent);
    assert_eq!(dropped.outcome, Outcome::ConnectionReset);
    assert_eq!(s.status("L").await.status, Some(404));
    let found = s.status("L").await;
    assert_eq!(found.status, Some(200));
    assert_eq!(json_of(&found)["record"]["payload_hash"], "sha256:aa");
    let c = s.provider.counters("L").unwrap();
    assert_eq!(
        (c.requests, c.status_queries, c.effects, c.dropped),
        (1, 2, 1, 1)
    );
}

#[tokio::test]
async fn a_drop_before_receipt_leaves_the_body_unsent_and_nothing_applied() {
    let s = sim("B", r#"[{"on":"request","n":1,"respond":"drop"}]"#).await;
    let dropped = s.write("B", "k", "sha256:aa", &[]).await;
    assert_eq!(dropped.phase, Phase::Connected);
    assert!(!dropped.phase.may_have_crossed_boundary());
    let c = s.provider.counters("B").unwrap();
    assert_eq!((c.requests, c.effects, c.dropped), (1, 0, 1));
    assert!(s.provider.records("B").is_empty());
}

#[tokio::test]
async fn a_late_answer_times_the_client_out_after_the_commit() {
    let s = sim(
        "H",
        r#"[{"on":"request","n":1,"commit":true,"respond":"hang"}]"#,
    )
    .await;
    let late = s.write("H", "k", "sha256:aa", &[]).await;
    assert_eq!(late.outcome, Outcome::Timeout);
    assert_eq!(late.phase, Phase::RequestSent);
    assert_eq!(s.provider.counters("H").unwrap().effects, 1);
}

#[tokio::test]
async fn a_batch_answers_item_by_item_and_stops_at_the_first_failure() {
    let s = sim(
        "I",
        r#"[{"on":"item","n":2,"request":1,"respond":{"status":422,"body":{"error":"bad"}}}]"#,
    )
    .await;
    let answer = json_of(&s.write("I", "k", "sha256:aa", &[1, 2, 3]).await);
    let states: Vec<&str> = answer["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, vec!["succeeded", "failed", "not_attempted"]);
    let c = s.provider.counters("I").unwrap();
    assert_eq!(c.effects, 1);
    assert_eq!(c.item_effects.get("op-1#1"), Some(&1));
}

#[tokio::test]
async fn scripted_answers_carry_headers_raw_bodies_and_record_overrides() {
    let s = sim(
        "S",
        r#"[{"on":"request","n":1,"respond":{"status":429,"headers":{"Retry-After":"Sat, 05 Sep 2026 10:00:10 GMT"}}},{"on":"request","n":2,"commit":true,"respond":{"status":200,"record":{"tenant":"northwind"}}},{"on":"request","n":3,"commit":true,"respond":{"status":200,"body":"{\"record\":"}}]"#,
    )
    .await;
    let limited = s.write("S", "k1", "sha256:aa", &[]).await;
    assert_eq!(
        limited.header("retry-after"),
        Some("Sat, 05 Sep 2026 10:00:10 GMT")
    );
    let wrong = json_of(&s.write("S", "k2", "sha256:bb", &[]).await);
    assert_eq!(wrong["record"]["tenant"], "northwind");
    let truncated = s.write("S", "k3", "sha256:cc", &[]).await;
    assert_eq!(truncated.body, b"{\"record\":");
    assert_eq!(s.provider.counters("S").unwrap().effects, 2);
}

/// A request at a method or path the case has no route for is answered 404 and
/// counted as unrouted, never served as the case's call or lookup: the call
/// lives at its contract's method and path only, the lookup at its object's.
#[tokio::test]
async fn an_unrouted_request_is_answered_404_and_counted() {
    let line = include_str!("fixtures/drill_paths.jsonl")
        .lines()
        .find(|l| l.contains(r#""id": "PT1""#))
        .unwrap();
    let cases = parse_cases(line).unwrap();
    let provider = Provider::new();
    provider.add_case(cases[0].clone(), ExecClock::simulated(start()));
    let running = serve(provider.clone(), SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let transport = Transport::new(Arc::new(LiteralResolver), std::time::Duration::from_secs(2));
    let base = running.case_url("PT1");
    let ask = |method: &str, path: &str| HttpRequest {
        method: method.into(),
        url: Url::parse(&format!("{base}{path}")).unwrap(),
        headers: vec![],
        body: None,
        kind: AttemptKind::StatusQuery,
    };
    for (method, path) in [
        ("POST", "/ops"),                         // the default call path: not this case's
        ("GET", "/v2/tickets/b-PT1"),             // the call's path, another method
        ("GET", "/records?business_key=b-PT1"),   // the default lookup: not this case's
        ("GET", "/v2/lookup/pinehaven"),          // half the lookup's path
        ("DELETE", "/v2/lookup/pinehaven/b-PT1"), // the lookup's path, another method
    ] {
        let answer = transport.send(&ask(method, path)).await;
        assert_eq!(answer.status, Some(404), "{method} {path}");
        assert_eq!(json_of(&answer)["error"], "not_found", "{method} {path}");
    }
    // The lookup's own method and path are served: nothing committed yet, so the
    // provider's own "no such record".
    let looked = transport
        .send(&ask("GET", "/v2/lookup/pinehaven/b-PT1"))
        .await;
    assert_eq!(looked.status, Some(404));
    assert_eq!(json_of(&looked)["error"], "record_not_found");
    let counters = provider.counters("PT1").unwrap();
    assert_eq!(counters.unrouted, 5);
    assert_eq!(counters.requests, 0);
    assert_eq!(counters.status_queries, 1);
    running.stop().await;
}
