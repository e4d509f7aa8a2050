//! A provider on 127.0.0.1 (a random port) that answers status lookups: the
//! business key names the scenario, and every request's `Authorization` header is
//! kept for the test to inspect.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;

use super::cli::{Cli, Run};
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// The payload hash every scenario's operation carries.
pub const HASH: &str = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
/// A different payload hash.
pub const OTHER_HASH: &str =
    "sha256:0000000000000000000000000000000000000000000000000000000000000000";
/// The secret the tests hand to holdfast and expect to see on every call.
pub const TOKEN: &str = "tok-7Hq2-zz91-secret";
/// The environment variable the binding reads [`TOKEN`] from.
pub const TOKEN_ENV: &str = "HOLDFAST_TEST_STATUS_TOKEN";
/// What `/error/code` of this provider's own "no such record" body says.
pub const NOT_FOUND_CODE: &str = "resource_missing";

/// What the provider saw.
#[derive(Default)]
pub struct Seen {
    /// `Authorization` of every request, in order (`None` when absent).
    pub auth: Vec<Option<String>>,
    /// The business key of every request.
    pub keys: Vec<String>,
    /// The path and query of every request to a path the provider does not
    /// serve (answered 404 with an empty body), as it arrived.
    pub other: Vec<String>,
}

#[derive(Clone)]
struct Shared {
    seen: Arc<Mutex<Seen>>,
    /// The HTTP-date the `throttle-date` scenario asks to wait until.
    retry_date: String,
    base: String,
}

/// A running provider.
pub struct Provider {
    pub base: String,
    pub seen: Arc<Mutex<Seen>>,
}

impl Provider {
    /// Starts the provider on a random port of 127.0.0.1; `retry_date` is the
    /// HTTP-date of the `throttle-date` scenario.
    pub async fn start(retry_date: &str) -> Provider {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let base = format!("http://{}", listener.local_addr().expect("local addr"));
        let seen = Arc::new(Mutex::new(Seen::default()));
        let shared = Shared {
            seen: seen.clone(),
            retry_date: retry_date.to_owned(),
            base: base.clone(),
        };
        let app = Router::new()
            .route("/v1/records", get(records))
            .route("/elsewhere", get(|| async { "moved" }))
            .fallback(other)
            .with_state(shared);
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Provider { base, seen }
    }

    /// The contract line of tool `tool` whose status lookup asks this provider.
    pub fn contract(&self, tool: &str, timeout_ms: u32, lag_seconds: u32) -> String {
        contract_with(
            tool,
            &format!(
                r#"{{"method":"GET","url":"{}/v1/records?business_key={{business_key}}","auth":{{"header":"Authorization","prefix":"Bearer ","env":"HOLDFAST_TEST_STATUS_TOKEN"}},"timeout_ms":{timeout_ms},"lag_seconds":{lag_seconds},"not_found_status":[404],"fields":{{"target":"/record/target","payload_hash":"/record/payload_hash","tenant":"/record/tenant","version":"/record/version","effect_count":"/count","provider_request_id":"/record/request_id"}}}}"#,
                self.base
            ),
        )
    }

    /// The operator's binding of this provider as config-file TOML: its origin,
    /// the test token's variable, loopback allowed, and its not-found body (and
    /// a pace that does not slow the tests).
    pub fn binding_toml(&self) -> String {
        format!(
            "[lookup]\nrate_per_second = 1000.0\n[lookup.bindings.test]\norigin = \"{}\"\nenv = \"HOLDFAST_TEST_STATUS_TOKEN\"\nheader = \"Authorization\"\nprefix = \"Bearer \"\nallow_private = true\nnot_found = {{ pointer = \"/error/code\", equals = \"{NOT_FOUND_CODE}\" }}\n",
            self.base
        )
    }

    /// The `[lookup]` settings holding [`Provider::binding_toml`].
    pub fn settings(&self) -> holdfast::lookup::LookupSettings {
        let mut settings = holdfast::lookup::LookupSettings::default();
        settings.bindings.insert("test".into(), self.binding());
        settings
    }

    /// This provider's binding.
    pub fn binding(&self) -> holdfast::lookup::Binding {
        holdfast::lookup::Binding {
            origin: self.base.clone(),
            env: Some("HOLDFAST_TEST_STATUS_TOKEN".into()),
            header: Some("Authorization".into()),
            prefix: Some("Bearer ".into()),
            allow_private: true,
            not_found: Some(holdfast::lookup::NotFoundBody {
                pointer: "/error/code".into(),
                equals: NOT_FOUND_CODE.into(),
            }),
        }
    }

    /// How many requests reached this provider, whatever they asked.
    pub fn requests(&self) -> usize {
        let seen = self.seen.lock().expect("seen");
        seen.keys.len() + seen.other.len()
    }

    /// The paths asked that the provider does not serve.
    pub fn other_paths(&self) -> Vec<String> {
        self.seen.lock().expect("seen").other.clone()
    }

    /// Every `Authorization` header seen so far.
    pub fn auth_seen(&self) -> Vec<Option<String>> {
        self.seen.lock().expect("seen").auth.clone()
    }

    /// How many lookups asked for `key`.
    pub fn asked(&self, key: &str) -> usize {
        self.seen
            .lock()
            .expect("seen")
            .keys
            .iter()
            .filter(|k| *k == key)
            .count()
    }
}

/// The contract line of tool `tool` with `status_lookup` as given (JSON text).
pub fn contract_with(tool: &str, status_lookup: &str) -> String {
    format!(
        r#"{{"type":"contract","tool":"{tool}","version":"IC01","action":"record.write","method":"POST","idempotency":{{"supported":true,"scope":"tenant","retention_hours":24}},"status_lookup":{status_lookup},"retryable":["http_503"],"compensation":null,"owner":"integrations","max_attempts":3,"budget_seconds":86400}}"#
    )
}

/// A path the provider does not serve: kept as asked, answered 404 empty.
async fn other(State(s): State<Shared>, headers: HeaderMap, uri: axum::http::Uri) -> Response {
    let mut seen = s.seen.lock().expect("seen");
    seen.auth.push(
        headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned),
    );
    seen.other.push(
        uri.path_and_query()
            .map_or_else(String::new, |p| p.to_string()),
    );
    StatusCode::NOT_FOUND.into_response()
}

fn record(target: &str, hash: &str, tenant: &str, count: u32) -> String {
    format!(
        r#"{{"record":{{"target":"{target}","payload_hash":"{hash}","tenant":"{tenant}","version":"v3","request_id":"prov-{count}"}},"count":{count}}}"#
    )
}

async fn records(
    State(s): State<Shared>,
    headers: HeaderMap,
    Query(q): Query<HashMap<String, String>>,
) -> Response {
    let key = q.get("business_key").cloned().unwrap_or_default();
    {
        let mut seen = s.seen.lock().expect("seen");
        seen.auth.push(
            headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        );
        seen.keys.push(key.clone());
    }
    let scenario = key.split(':').next().unwrap_or_default();
    let json = |body: String| {
        (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response()
    };
    match scenario {
        "match" => json(record("queue:7", HASH, "pinehaven", 1)),
        "missing" => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "application/json")],
            format!(r#"{{"error":{{"code":"{NOT_FOUND_CODE}"}}}}"#),
        )
            .into_response(),
        // Not-found answers that are not recognizably the provider's.
        "html404" => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/html")],
            "<html><body><h1>404 Not Found</h1>nginx</body></html>",
        )
            .into_response(),
        "empty404" => StatusCode::NOT_FOUND.into_response(),
        "shape404" => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "application/json")],
            r#"{"error":{"code":"route_missing","message":"Unrecognized request URL"}}"#,
        )
            .into_response(),
        "payload" => json(record("queue:7", OTHER_HASH, "pinehaven", 1)),
        "tenant" => json(record("queue:7", HASH, "harbor", 1)),
        "dup" => json(record("queue:7", HASH, "pinehaven", 2)),
        "throttle-secs" => (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, HeaderValue::from_static("120"))],
            "slow down",
        )
            .into_response(),
        "throttle-date" => {
            let mut r = (StatusCode::TOO_MANY_REQUESTS, "slow down").into_response();
            if let Ok(v) = HeaderValue::from_str(&s.retry_date) {
                r.headers_mut().insert(header::RETRY_AFTER, v);
            }
            r
        }
        "unavailable" => (StatusCode::SERVICE_UNAVAILABLE, "maintenance").into_response(),
        "hang" => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            json(record("queue:7", HASH, "pinehaven", 1))
        }
        "badjson" => json(r#"{"record":{"target":"queue:7","#.to_owned()),
        "html" => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/html")],
            "<html><body>Internal error</body></html>",
        )
            .into_response(),
        "huge" => json(format!(
            r#"{{"pad":"{}","count":1}}"#,
            "x".repeat(2 * 1_048_576)
        )),
        "echo" => json(format!(
            r#"{{"record":{{"target":"queue:7","payload_hash":"{HASH}","tenant":"pinehaven","version":"v3","request_id":"{}"}},"count":1}}"#,
            headers
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
        )),
        "redirect" => (
            StatusCode::FOUND,
            [(header::LOCATION, format!("{}/elsewhere", s.base))],
        )
            .into_response(),
        _ => (StatusCode::BAD_REQUEST, "unknown scenario").into_response(),
    }
}

/// Held operations of `tool` for the wire: each `(id, business_key)` becomes an
/// UNKNOWN write whose request timed out after crossing the boundary (ended
/// 10:00:31), with its next observation at `next` and its deadline 11:00.
pub fn holds(tool: &str, holds: &[(&str, &str)], next: &str) -> String {
    let mut out = String::new();
    for (id, key) in holds {
        out.push_str(&format!(
            r#"{{"type":"operation","id":"{id}","tenant":"pinehaven","actor":"svc:agent","tool":"{tool}","action":"record.write","target":"queue:7","payload_hash":"{HASH}","risk":"low","approval":{{"by":"rev:maya","policy":"RP03","at":"2026-09-05T10:00:00Z","payload_hash":"{HASH}","expires_at":"2026-09-05T12:00:00Z"}},"idempotency_key":"k-{id}","business_key":"{key}","owner":"integrations","max_attempts":3,"deadline":"2026-09-05T11:00:00Z","failure_mode":"timeout_unknown","state":"UNKNOWN","next_observation_at":"{next}","created_at":"2026-09-05T10:00:00Z"}}
{{"type":"attempt","id":"{id}-A1","operation":"{id}","seq":1,"kind":"request","started_at":"2026-09-05T10:00:01Z","ended_at":"2026-09-05T10:00:31Z","phase":"request_sent","outcome":"timeout","error_type":"read_timeout"}}
{{"type":"transition","operation":"{id}","from":"APPROVED","to":"SENT","by":"svc:orchestrator","role":"system","at":"2026-09-05T10:00:01Z"}}
{{"type":"transition","operation":"{id}","from":"SENT","to":"UNKNOWN","by":"svc:orchestrator","role":"system","at":"2026-09-05T10:00:31Z"}}
"#
        ));
    }
    out
}

/// A store with `n` due T06 holds whose lookups all find the record.
pub async fn due_holds(kind: super::stores::Kind, p: &Provider, n: usize) -> super::stores::Fresh {
    let fresh = super::stores::fresh(kind).await;
    let ids: Vec<(String, String)> = (0..n)
        .map(|i| (format!("D{i:03}"), format!("match:{i}")))
        .collect();
    let pairs: Vec<(&str, &str)> = ids.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    let packet = format!(
        "{}\n{}",
        p.contract("T06", 2000, 60),
        holds("T06", &pairs, "2026-09-05T10:02:00Z")
    );
    fresh
        .store
        .ingest(
            super::review::records(&packet),
            holdfast::store::IngestMode::Strict,
            "test",
            super::review::now(),
        )
        .await
        .unwrap();
    fresh
}

/// A command-line store with T06 holds (one per scenario, `L-SCENARIO`, looked
/// up by this provider) and a T08 hold `L-none` whose contract has no status
/// path; the config file binds the provider.
pub fn store_with_holds(p: &Provider, scenarios: &[&str]) -> Cli {
    let cli = Cli::empty();
    let pairs: Vec<(String, String)> = scenarios
        .iter()
        .map(|s| (format!("L-{s}"), format!("{s}:1")))
        .collect();
    let pairs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let none = contract_with("T08", "false");
    let packet = format!(
        "{}\n{none}\n{}{}",
        p.contract("T06", 500, 60),
        holds("T06", &pairs, "2026-09-05T10:02:00Z"),
        holds("T08", &[("L-none", "match:9")], "2026-09-05T10:02:00Z"),
    );
    let path = cli.dir.path().join("packet.jsonl");
    std::fs::write(&path, packet).expect("write the packet");
    cli.run("loader", &["ingest", &path.to_string_lossy()])
        .expect_code(0);
    // The operator binds the provider in the config file.
    std::fs::write(cli.dir.path().join("no-config.toml"), p.binding_toml())
        .expect("write the config");
    cli
}

/// `holdfast ARGS` as `identity` with the token in the environment.
pub fn run_with_token(cli: &Cli, identity: &str, args: &[&str]) -> Run {
    let output = cli
        .command(identity, args)
        .env(TOKEN_ENV, TOKEN)
        .output()
        .expect("run holdfast");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// `review ID reconcile --lookup` as maya, with the token.
pub fn lookup(cli: &Cli, id: &str) -> Run {
    run_with_token(
        cli,
        "maya",
        &[
            "review",
            id,
            "reconcile",
            "--lookup",
            "--rationale",
            "asked the provider by business key",
        ],
    )
}
