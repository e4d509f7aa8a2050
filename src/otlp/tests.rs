//! The pure parts of the mapping, each tried against what would break it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::map::{payload_hash, reached};
use super::redact_url;
use super::span::SpanFact;
use crate::core::model::{Outcome, Phase};

fn span(attributes: &[(&str, Value)], error: bool) -> SpanFact {
    SpanFact {
        trace_id: "0af7651916cd43dd8448eb211c80319c".into(),
        span_id: "b7ad6b7169203331".into(),
        parent: None,
        name: "POST".into(),
        start: DateTime::<Utc>::UNIX_EPOCH,
        end: None,
        error,
        status_message: None,
        attributes: attributes
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect::<BTreeMap<_, _>>(),
        events: Vec::new(),
        line: 1,
    }
}

#[test]
fn url_userinfo_and_every_query_value_are_redacted() {
    let url = redact_url("https://ops:hunter2@api.example/v1/t?api_key=sk_1&page=2#frag");
    assert_eq!(
        url,
        "https://REDACTED:REDACTED@api.example/v1/t?api_key=REDACTED&page=REDACTED"
    );
    assert_eq!(redact_url("not a url?token=abc"), "not a url");
    assert_eq!(
        redact_url("https://api.example/v1/t"),
        "https://api.example/v1/t"
    );
}

#[test]
fn the_phase_decides_not_the_status() {
    let http = |error: &str| {
        span(
            &[
                ("http.request.method", json!("POST")),
                ("error.type", json!(error)),
            ],
            true,
        )
    };
    let phase = |s: &SpanFact| (reached(s).phase, reached(s).outcome);
    assert_eq!(
        phase(&http("timeout")),
        (Phase::RequestSent, Outcome::Timeout)
    );
    assert_eq!(
        phase(&http("ReadTimeout")),
        (Phase::RequestSent, Outcome::Timeout)
    );
    assert_eq!(
        phase(&http("connection_reset")),
        (Phase::RequestSent, Outcome::ConnectionReset)
    );
    assert_eq!(
        phase(&http("ConnectTimeout")),
        (Phase::NotSent, Outcome::ConnectionReset)
    );
    assert_eq!(
        phase(&http("connection_refused")),
        (Phase::NotSent, Outcome::ConnectionReset)
    );
    assert_eq!(
        phase(&http("tls_handshake_failed")),
        (Phase::NotSent, Outcome::ConnectionReset)
    );
    assert_eq!(phase(&http("dns_error")), (Phase::Dns, Outcome::DnsFailure));
    // A status answers, whatever the span status says.
    let answered = span(
        &[
            ("http.request.method", json!("POST")),
            ("http.response.status_code", json!(503)),
        ],
        true,
    );
    assert_eq!(
        phase(&answered),
        (Phase::ResponseReceived, Outcome::HttpError)
    );
    // An HTTP span in error with no cause may have been applied.
    let silent = span(&[("http.request.method", json!("POST"))], true);
    assert!(reached(&silent).phase.may_have_crossed_boundary());
}

#[test]
fn the_payload_hash_is_over_canonical_json_and_absent_is_unknown() {
    let a = payload_hash(Some(&json!(r#"{"b":1,"a":{"y":[1,2],"x":"z"}}"#)));
    let b = payload_hash(Some(&json!({"a": {"x": "z", "y": [1, 2]}, "b": 1})));
    assert_eq!(a, b);
    assert_ne!(
        a,
        payload_hash(Some(&json!({"a": {"x": "z", "y": [2, 1]}, "b": 1})))
    );
    assert_eq!(payload_hash(None), None);
}
