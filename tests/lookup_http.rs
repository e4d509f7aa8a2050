//! Status lookups against a real HTTP provider on 127.0.0.1: every scenario of
//! DESIGN §9.1 (found and matching, not found inside and after the lag window,
//! findings, throttling, a hang, bad bodies, a redirect), what each call records,
//! what its answer proves and when the next lookup is due; and the secret on the
//! wire but nowhere else.

use crate::support;

use chrono::{DateTime, Duration, Utc};
use holdfast::core::clock::{Clock, parse_instant};
use holdfast::core::lookup::{self, Finding, LookupCall, LookupSpec, Next, Verdict};
use holdfast::core::model::{Observation, Operation, Outcome, Phase};
use holdfast::lookup::{Binding, Impossible, Looker, LookupConfig, LookupSettings, Secrets};
use holdfast::wire::{Record, parse_line};
use support::provider::{HASH, Provider, TOKEN, contract_with};

/// The instant the lookups are made at (a frozen clock, as in every test).
const NOW: &str = "2026-09-05T10:10:00Z";

struct TestSecrets;

impl Secrets for TestSecrets {
    fn get(&self, name: &str) -> Option<String> {
        (name == "HOLDFAST_TEST_STATUS_TOKEN").then(|| TOKEN.to_owned())
    }
}

struct NoSecrets;

impl Secrets for NoSecrets {
    fn get(&self, _: &str) -> Option<String> {
        None
    }
}

fn now() -> DateTime<Utc> {
    parse_instant(NOW).unwrap()
}

fn spec(provider: &Provider, timeout_ms: u32) -> LookupSpec {
    let Ok(Record::Contract(c)) =
        parse_line(provider.contract("T06", timeout_ms, 60).as_bytes(), 1)
    else {
        panic!("the provider's contract does not parse")
    };
    c.status_lookup.spec().unwrap().clone()
}

fn operation(business_key: Option<&str>) -> Operation {
    let key = business_key.map_or("null".to_owned(), |k| format!("\"{k}\""));
    let line = format!(
        r#"{{"type":"operation","id":"F1","tenant":"pinehaven","actor":"svc:agent","tool":"T06","action":"record.write","target":"queue:7","payload_hash":"{HASH}","risk":"low","owner":"integrations","state":"UNKNOWN","business_key":{key},"deadline":"2026-09-05T11:00:00Z","created_at":"2026-09-05T10:00:00Z"}}"#
    );
    let Ok(Record::Operation(op)) = parse_line(line.as_bytes(), 1) else {
        panic!("bad operation")
    };
    op
}

/// One lookup of the scenario named by `key`.
async fn look(provider: &Provider, key: &str, timeout_ms: u32, limit: usize) -> LookupCall {
    let looker = Looker::new(LookupConfig {
        body_limit: limit,
        ..provider.settings().client()
    })
    .unwrap();
    looker
        .look_up(
            &spec(provider, timeout_ms),
            &operation(Some(key)),
            None,
            &TestSecrets,
            Clock::Frozen(now()),
        )
        .await
        .unwrap()
}

/// The observation the call's answer becomes.
fn observation(call: &LookupCall) -> Observation {
    let a = call.answer.as_ref().expect("an answer");
    Observation {
        id: "F1-O1".into(),
        operation: holdfast::core::ids::OperationId::parse("F1").unwrap(),
        observed_at: call.ended_at,
        source: lookup::SOURCE,
        found: a.found,
        matches: Some(a.matches.clone()),
        effect_count: a.effect_count,
        raw_hash: Some(a.raw_hash.clone()),
        note: None,
    }
}

/// What the answer proves with the last request `ago` before now (lag 60 s), and
/// the next lookup after it.
fn judged(call: &LookupCall, ago: i64) -> (Verdict, Next) {
    let verdict = lookup::judge(&observation(call), Some(now() - Duration::seconds(ago)), 60);
    let next = lookup::next_observation(
        call.ended_at,
        Some(&verdict),
        call.retry_after,
        Some(parse_instant("2026-09-05T11:00:00Z").unwrap()),
        0,
        0.5,
    );
    (verdict, next)
}

/// The next lookup after a call without an answer (the first failure in a row).
fn next_without_answer(call: &LookupCall) -> Next {
    assert!(call.answer.is_none(), "{call:?}");
    lookup::next_observation(
        call.ended_at,
        None,
        call.retry_after,
        Some(parse_instant("2026-09-05T11:00:00Z").unwrap()),
        1,
        1.0,
    )
}

#[tokio::test]
async fn found_and_matching_allows_succeeded_and_settles() {
    let p = Provider::start("").await;
    let call = look(&p, "match:1", 2000, 1 << 20).await;
    assert_eq!(call.phase, Phase::ResponseReceived);
    assert_eq!(call.outcome, Outcome::Ok);
    assert_eq!(call.http_status, Some(200));
    assert_eq!(call.error_type, None);
    let a = call.answer.as_ref().unwrap();
    assert!(a.found);
    assert_eq!(a.matches.target, Some(true));
    assert_eq!(a.matches.payload_hash, Some(true));
    assert_eq!(a.matches.owner, Some(true));
    assert_eq!(a.effect_count, Some(1));
    assert_eq!(a.provider_request_id.as_deref(), Some("prov-1"));
    assert_eq!(call.response_hash.as_ref(), Some(&a.raw_hash));
    assert!(
        call.url.ends_with("/v1/records?business_key=match%3A1"),
        "{}",
        call.url
    );
    assert!(call.ended_at == now() && call.started_at <= call.ended_at);
    let (verdict, next) = judged(&call, 600);
    assert_eq!(verdict, Verdict::Applied);
    assert_eq!(
        verdict.proves(),
        "found, all fields match → the effect, once"
    );
    assert_eq!(next, Next::Settled);
}

#[tokio::test]
async fn not_found_proves_nothing_inside_the_lag_window_and_non_application_after_it() {
    let p = Provider::start("").await;
    let call = look(&p, "missing:1", 2000, 1 << 20).await;
    assert_eq!(call.http_status, Some(404));
    assert_eq!(call.outcome, Outcome::Ok);
    assert!(!call.answer.as_ref().unwrap().found);
    let (inside, next) = judged(&call, 10);
    let visible = now() + Duration::seconds(50);
    assert_eq!(
        inside,
        Verdict::NotYetVisible {
            visible_after: visible
        }
    );
    assert!(inside.proves().contains("not yet visible"));
    assert_eq!(next, Next::At(visible));
    let (after, next) = judged(&call, 120);
    assert_eq!(after, Verdict::NotApplied);
    assert!(after.proves().contains("non-application proved"));
    assert_eq!(next, Next::Settled);
}

#[tokio::test]
async fn mismatches_other_tenants_and_duplicates_are_findings() {
    let p = Provider::start("").await;
    for (key, finding) in [
        ("payload:1", Finding::PayloadMismatch),
        ("tenant:1", Finding::WrongTenant),
        ("dup:1", Finding::DuplicateEffect(2)),
    ] {
        let call = look(&p, key, 2000, 1 << 20).await;
        assert_eq!(call.outcome, Outcome::Ok, "{key}");
        let (verdict, next) = judged(&call, 600);
        assert_eq!(
            verdict,
            Verdict::Findings {
                findings: vec![finding]
            },
            "{key}"
        );
        assert!(verdict.proves().contains("not the intended effect once"));
        assert_eq!(next, Next::Settled, "{key}");
    }
    let tenant = look(&p, "tenant:2", 2000, 1 << 20).await;
    assert!(
        judged(&tenant, 600)
            .0
            .proves()
            .contains("found under another tenant → wrong-tenant finding (G7)")
    );
}

#[tokio::test]
async fn throttling_sets_the_next_lookup_no_earlier_than_retry_after() {
    let p = Provider::start("Sat, 05 Sep 2026 10:40:00 GMT").await;
    let secs = look(&p, "throttle-secs:1", 2000, 1 << 20).await;
    assert_eq!(secs.http_status, Some(429));
    assert_eq!(secs.outcome, Outcome::HttpError);
    assert_eq!(secs.error_type.as_deref(), Some("http_429"));
    let wanted = secs.ended_at + Duration::seconds(120);
    assert_eq!(secs.retry_after, Some(wanted));
    assert_eq!(next_without_answer(&secs), Next::At(wanted));

    let date = look(&p, "throttle-date:1", 2000, 1 << 20).await;
    let at = parse_instant("2026-09-05T10:40:00Z").unwrap();
    assert_eq!(date.retry_after, Some(at));
    assert_eq!(next_without_answer(&date), Next::At(at));

    let late = Provider::start("Sat, 05 Sep 2026 12:00:00 GMT").await;
    let past = look(&late, "throttle-date:2", 2000, 1 << 20).await;
    assert!(
        matches!(next_without_answer(&past), Next::Exhausted(ref why) if why.contains("past the deadline")),
        "a Retry-After past the deadline leaves no lookup"
    );
}

#[tokio::test]
async fn unavailable_without_retry_after_backs_off() {
    let p = Provider::start("").await;
    let call = look(&p, "unavailable:1", 2000, 1 << 20).await;
    assert_eq!(call.http_status, Some(503));
    assert_eq!(call.error_type.as_deref(), Some("http_503"));
    assert_eq!(call.retry_after, None);
    assert_eq!(
        next_without_answer(&call),
        Next::At(call.ended_at + Duration::seconds(15))
    );
}

#[tokio::test]
async fn a_hang_past_the_timeout_is_a_timeout_attempt_and_nothing_more() {
    let p = Provider::start("").await;
    let started = std::time::Instant::now();
    let call = look(&p, "hang:1", 300, 1 << 20).await;
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    assert_eq!(call.outcome, Outcome::Timeout);
    assert_eq!(call.phase, Phase::RequestSent);
    assert_eq!(call.error_type.as_deref(), Some("timeout"));
    assert!(call.duration_ms() >= 300, "{}", call.duration_ms());
    assert_eq!(call.http_status, None);
    assert!(matches!(next_without_answer(&call), Next::At(_)));
}

#[tokio::test]
async fn bad_bodies_and_redirects_are_attempts_with_an_error_type() {
    let p = Provider::start("").await;
    for (key, status, outcome, error) in [
        ("badjson:1", 200, Outcome::InvalidResponse, "invalid_json"),
        ("html:1", 200, Outcome::InvalidResponse, "html_error_page"),
        ("huge:1", 200, Outcome::InvalidResponse, "body_too_large"),
        (
            "redirect:1",
            302,
            Outcome::HttpError,
            "redirect_not_followed",
        ),
    ] {
        let call = look(&p, key, 2000, 1 << 20).await;
        assert_eq!(call.http_status, Some(status), "{key}");
        assert_eq!(call.outcome, outcome, "{key}");
        assert_eq!(call.error_type.as_deref(), Some(error), "{key}");
        assert!(call.answer.is_none(), "{key}");
        assert!(
            call.excerpt.as_ref().is_some_and(|e| e.len() < 1024),
            "{key}"
        );
        assert!(matches!(next_without_answer(&call), Next::At(_)), "{key}");
    }
    assert_eq!(p.asked("elsewhere"), 0);
    let small = look(&p, "match:2", 2000, 64).await;
    assert_eq!(small.error_type.as_deref(), Some("body_too_large"));
}

#[tokio::test]
async fn a_refused_connection_is_an_attempt() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let p = Provider {
        base: format!("http://127.0.0.1:{port}"),
        seen: Default::default(),
    };
    let call = look(&p, "match:1", 2000, 1 << 20).await;
    assert_eq!(call.outcome, Outcome::ConnectionReset);
    assert_eq!(call.error_type.as_deref(), Some("connection_refused"));
    assert!(call.answer.is_none());
}

#[tokio::test]
async fn the_secret_goes_on_the_wire_and_nowhere_else() {
    let p = Provider::start("").await;
    let mut calls = Vec::new();
    for key in [
        "match:9",
        "missing:9",
        "badjson:9",
        "echo:9",
        "unavailable:9",
    ] {
        calls.push(look(&p, key, 2000, 1 << 20).await);
    }
    let seen = p.auth_seen();
    assert_eq!(seen.len(), 5);
    assert!(
        seen.iter()
            .all(|a| a.as_deref() == Some(&format!("Bearer {TOKEN}"))),
        "{seen:?}"
    );
    let recorded = format!("{calls:?}");
    assert!(!recorded.contains(TOKEN), "{recorded}");
    assert!(
        recorded.contains("[redacted]"),
        "the echo is redacted: {recorded}"
    );
}

#[tokio::test]
async fn a_missing_identity_value_or_secret_makes_the_lookup_impossible() {
    let p = Provider::start("").await;
    let looker = Looker::new(p.settings().client()).unwrap();
    let spec = spec(&p, 2000);
    let err = looker
        .look_up(
            &spec,
            &operation(None),
            None,
            &TestSecrets,
            Clock::Frozen(now()),
        )
        .await
        .unwrap_err();
    assert_eq!(err, Impossible::MissingValue("business_key"));
    assert_eq!(
        err.to_string(),
        "lookup impossible: the operation has no business_key"
    );
    let err = looker
        .look_up(
            &spec,
            &operation(Some("match:1")),
            None,
            &NoSecrets,
            Clock::Frozen(now()),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, Impossible::MissingSecret(_)));
    assert!(
        p.auth_seen().is_empty(),
        "no call is made without its values"
    );
}

#[tokio::test]
async fn a_failed_tls_handshake_is_an_attempt_with_its_error_type() {
    let p = Provider::start("").await;
    let line = p.contract("T06", 2000, 60).replace("http://", "https://");
    let Ok(Record::Contract(c)) = parse_line(line.as_bytes(), 1) else {
        panic!("the contract does not parse")
    };
    let mut settings = p.settings();
    if let Some(b) = settings.bindings.get_mut("test") {
        b.origin = b.origin.replace("http://", "https://");
    }
    let looker = Looker::new(settings.client()).unwrap();
    let call = looker
        .look_up(
            c.status_lookup.spec().unwrap(),
            &operation(Some("match:1")),
            None,
            &TestSecrets,
            Clock::Frozen(now()),
        )
        .await
        .unwrap();
    assert_eq!(call.error_type.as_deref(), Some("tls_error"), "{call:?}");
    assert_eq!(call.outcome, Outcome::ConnectionReset);
    assert!(call.answer.is_none());
    assert!(
        p.auth_seen().is_empty(),
        "the token never left over a failed handshake"
    );
}

/// Every variable holds the token: what is sent is decided by the binding alone.
struct AnySecret;

impl Secrets for AnySecret {
    fn get(&self, _: &str) -> Option<String> {
        Some(TOKEN.to_owned())
    }
}

/// The lookup object of a contract line written by hand.
fn spec_of(status_lookup: &str) -> LookupSpec {
    let line = contract_with("T06", status_lookup);
    let Ok(Record::Contract(c)) = parse_line(line.as_bytes(), 1) else {
        panic!("the contract does not parse: {line}")
    };
    c.status_lookup.spec().unwrap().clone()
}

/// A lookup object asking `url`, with `extra` JSON members (`,"auth":{…}`).
fn lookup_at(url: &str, extra: &str) -> String {
    format!(
        r#"{{"method":"GET","url":"{url}"{extra},"fields":{{"target":"/record/target","payload_hash":"/record/payload_hash","tenant":"/record/tenant","effect_count":"/count"}}}}"#
    )
}

async fn try_look(
    settings: &LookupSettings,
    spec: &LookupSpec,
    key: &str,
) -> Result<LookupCall, Impossible> {
    Looker::new(settings.client())
        .unwrap()
        .look_up(
            spec,
            &operation(Some(key)),
            None,
            &AnySecret,
            Clock::Frozen(now()),
        )
        .await
}

fn refused_rule(result: Result<LookupCall, Impossible>) -> String {
    match result {
        Err(Impossible::Refused { tool, rule, why }) => {
            assert_eq!(tool, "T06", "the refusal names the tool: {why}");
            rule
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn a_contract_never_sends_a_token_to_an_unbound_host_or_from_another_variable() {
    let bound = Provider::start("").await;
    let listener = Provider::start("").await;
    let settings = bound.settings();
    // The contract points its lookup at a listener of its own choosing.
    let elsewhere = spec_of(&lookup_at(
        &format!("{}/v1/records?business_key={{business_key}}", listener.base),
        r#","auth":{"header":"Authorization","prefix":"Bearer ","env":"HOLDFAST_TEST_STATUS_TOKEN"}"#,
    ));
    let err = try_look(&settings, &elsewhere, "match:1").await;
    let text = format!("{err:?}");
    assert_eq!(refused_rule(err), "unbound host", "{text}");
    // Naming the bound binding does not move the host either.
    let named = spec_of(&lookup_at(
        &format!("{}/v1/records?business_key={{business_key}}", listener.base),
        r#","provider":"test""#,
    ));
    assert_eq!(
        refused_rule(try_look(&settings, &named, "match:1").await),
        "unbound host"
    );
    let unknown = spec_of(&lookup_at(
        &format!("{}/v1/records?business_key={{business_key}}", bound.base),
        r#","provider":"payments""#,
    ));
    assert_eq!(
        refused_rule(try_look(&settings, &unknown, "match:1").await),
        "unbound provider"
    );
    // On the bound host, the contract names another tool's variable.
    let other_var = spec_of(&lookup_at(
        &format!("{}/v1/records?business_key={{business_key}}", bound.base),
        r#","auth":{"header":"Cookie","env":"T99_SESSION_COOKIE"}"#,
    ));
    let err = try_look(&settings, &other_var, "match:1").await;
    assert!(
        err.as_ref()
            .is_err_and(|e| e.to_string().contains("T99_SESSION_COOKIE")),
        "{err:?}"
    );
    assert_eq!(refused_rule(err), "contract secret");
    assert_eq!(listener.requests(), 0, "nothing reached the listener");
    assert_eq!(
        bound.requests(),
        0,
        "nothing was sent from another variable"
    );
    // A binding without a secret sends none, and a contract naming one is refused.
    let mut bare = bound.settings();
    if let Some(b) = bare.bindings.get_mut("test") {
        b.env = None;
    }
    assert_eq!(
        refused_rule(try_look(&bare, &spec(&bound, 2000), "match:1").await),
        "contract secret"
    );
    // The bound lookup, by name or by origin, carries the binding's secret.
    let by_name = spec_of(&lookup_at(
        &format!("{}/v1/records?business_key={{business_key}}", bound.base),
        r#","provider":"test""#,
    ));
    let call = try_look(&settings, &by_name, "match:1").await.unwrap();
    assert_eq!(call.http_status, Some(200));
    assert_eq!(bound.auth_seen(), vec![Some(format!("Bearer {TOKEN}"))]);
    assert!(!format!("{call:?}").contains(TOKEN));
}

#[tokio::test]
async fn loopback_private_metadata_and_obfuscated_hosts_are_refused_unless_allowed() {
    let p = Provider::start("").await;
    let port = p.base.rsplit(':').next().unwrap().to_owned();
    for origin in [
        "http://169.254.169.254".to_owned(),
        "http://[fd00:ec2::254]".to_owned(),
        format!("http://0x7f.1:{port}"),
        format!("http://2130706433:{port}"),
        format!("http://0177.0.0.1:{port}"),
        format!("http://[::1]:{port}"),
        format!("http://[::ffff:127.0.0.1]:{port}"),
        format!("http://localhost:{port}"),
        format!("http://127.0.0.1:{port}"),
        "http://10.1.2.3".to_owned(),
        "http://172.16.0.1".to_owned(),
        "http://192.168.0.1".to_owned(),
        "http://0.0.0.0".to_owned(),
        "http://[fe80::1]".to_owned(),
    ] {
        let mut settings = LookupSettings::default();
        settings.bindings.insert(
            "x".into(),
            Binding {
                origin: origin.clone(),
                allow_private: false,
                env: None,
                not_found: None,
                ..p.binding()
            },
        );
        let spec = spec_of(&lookup_at(
            &format!("{origin}/v1/records?business_key={{business_key}}"),
            "",
        ));
        let err = try_look(&settings, &spec, "match:1").await;
        assert!(
            err.as_ref()
                .is_err_and(|e| e.to_string().contains("allow_private")),
            "{origin}: {err:?}"
        );
        assert_eq!(refused_rule(err), "private address", "{origin}");
    }
    assert_eq!(p.requests(), 0, "no refused lookup reached the provider");
    // Allowed by the binding, the obfuscated spelling is the same origin.
    let mut settings = p.settings();
    if let Some(b) = settings.bindings.get_mut("test") {
        b.env = None;
    }
    let spec = spec_of(&lookup_at(
        &format!("http://0x7f.1:{port}/v1/records?business_key={{business_key}}"),
        "",
    ));
    let call = try_look(&settings, &spec, "match:1").await.unwrap();
    assert_eq!(call.http_status, Some(200));
    assert_eq!(p.requests(), 1);
}

#[tokio::test]
async fn identity_values_never_change_the_path_and_redacted_values_are_never_sent() {
    let p = Provider::start("").await;
    let settings = p.settings();
    let by_path = spec_of(&lookup_at(
        &format!("{}/v1/items/{{business_key}}/status", p.base),
        "",
    ));
    for key in [
        "..",
        ".",
        "‹redacted:stripe_key›",
        "sk_‹redacted:stripe_key›x",
    ] {
        let err = try_look(&settings, &by_path, key).await.unwrap_err();
        assert!(matches!(err, Impossible::Unsendable(_)), "{key}: {err:?}");
        let text = err.to_string();
        assert!(
            text.contains("business_key")
                && (text.contains("dot segment") || text.contains("redacted")),
            "{key}: {text}"
        );
    }
    assert_eq!(p.requests(), 0, "no lookup was sent");
    let call = try_look(&settings, &by_path, "a/b").await.unwrap();
    assert_eq!(call.http_status, Some(404));
    let call = try_look(&settings, &by_path, "../../v1/records")
        .await
        .unwrap();
    assert_eq!(call.http_status, Some(404));
    assert_eq!(
        p.other_paths(),
        vec![
            "/v1/items/a%2Fb/status".to_owned(),
            "/v1/items/..%2F..%2Fv1%2Frecords/status".to_owned()
        ],
        "each value stays one path segment"
    );
    assert_eq!(p.asked(""), 0);
    // In a query, a dot-only value is refused the same way.
    let query = spec(&p, 2000);
    assert!(matches!(
        try_look(&settings, &query, "..").await,
        Err(Impossible::Unsendable(_))
    ));
}

#[tokio::test]
async fn only_the_providers_own_not_found_is_an_answer() {
    let p = Provider::start("").await;
    let call = look(&p, "missing:1", 2000, 1 << 20).await;
    assert!(call.answer.as_ref().is_some_and(|a| !a.found), "{call:?}");
    for key in ["html404:1", "empty404:1", "shape404:1"] {
        let call = look(&p, key, 2000, 1 << 20).await;
        assert_eq!(call.http_status, Some(404), "{key}");
        assert_eq!(
            call.error_type.as_deref(),
            Some("unclear_not_found"),
            "{key}"
        );
        assert!(call.answer.is_none(), "{key}: no observation");
        assert!(
            call.excerpt
                .as_ref()
                .is_some_and(|e| e.contains("proves nothing")),
            "{key}: {:?}",
            call.excerpt
        );
    }
    // A wrong path on the provider's host answers its router's 404.
    let typo = spec_of(&lookup_at(
        &format!("{}/v1/record?business_key={{business_key}}", p.base),
        "",
    ));
    let mut settings = p.settings();
    if let Some(b) = settings.bindings.get_mut("test") {
        b.env = None;
    }
    let call = try_look(&settings, &typo, "missing:1").await.unwrap();
    assert_eq!(call.error_type.as_deref(), Some("unclear_not_found"));
    // Without the binding's not-found body, only the declared shape (count 0) counts.
    if let Some(b) = settings.bindings.get_mut("test") {
        b.not_found = None;
    }
    let plain = spec_of(&lookup_at(
        &format!("{}/v1/records?business_key={{business_key}}", p.base),
        "",
    ));
    let call = try_look(&settings, &plain, "missing:2").await.unwrap();
    assert_eq!(call.error_type.as_deref(), Some("unclear_not_found"));
}
