//! Status lookups, the I/O half (DESIGN §9.1): builds the URL from an operation's
//! stable identity, asks the provider over HTTP (rustls, timeouts, no redirects, a
//! body size limit) with the secret read at call time, and returns a
//! [`LookupCall`] for the review service to record. What the answer proves is
//! decided in `core::lookup`, never here.

mod answer;
mod bind;
mod limit;
mod observe;
mod redact;
mod service;

pub use answer::{Reading, Response, read, retry_after};
pub use bind::{
    Binding, Bindings, NotFoundBody, Route, RouteAuth, canonical_origin, is_private, is_private_ip,
    route,
};
pub use limit::{DEFAULT_RATE_PER_SECOND, LookupSettings, ProviderSettings, RateLimiter};
pub use observe::{
    Due, LEFT_LIMIT, Left, LeftKind, ObserveLine, ObserveOptions, ObserveStore, Observer,
};
pub use redact::{redact_secret, redact_url};
pub use service::{
    LookupError, Recorded, SessionObserver, last_provider_request_id, look_up, look_up_paced,
    record, spec_of, summary,
};

use std::error::Error as _;
use std::time::Duration;

use crate::core::clock::Clock;
use crate::core::ids::Sha256;
use crate::core::lookup::{LookupCall, LookupSpec};
use crate::core::model::{Operation, Outcome, Phase};

/// The largest body read by default (1 MiB); a larger one is an error.
pub const DEFAULT_BODY_LIMIT: usize = 1_048_576;
/// The longest excerpt of a body kept with an attempt, in bytes.
pub const EXCERPT_BYTES: usize = 512;

/// Where secrets come from: read at the moment of each call, never kept.
pub trait Secrets: Send + Sync {
    /// The value of the named secret, if it is set.
    fn get(&self, name: &str) -> Option<String>;
}

/// Secrets from the process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnvSecrets;

impl Secrets for EnvSecrets {
    fn get(&self, name: &str) -> Option<String> {
        std::env::var(name).ok().filter(|v| !v.is_empty())
    }
}

/// Why a lookup cannot be made at all: no call is sent and nothing is recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Impossible {
    #[error("lookup impossible: the contract of {0} has no status lookup holdfast can make")]
    NoSpec(String),
    #[error("lookup impossible: the operation has no {0}")]
    MissingValue(&'static str),
    #[error(
        "lookup impossible: the environment variable {0} that holds the lookup's secret is not set"
    )]
    MissingSecret(String),
    #[error("lookup impossible: the secret in {0} cannot be sent in an HTTP header")]
    BadSecret(String),
    /// A value of the operation would change what is asked, or is not the real one.
    #[error("lookup impossible: {0}")]
    Unsendable(String),
    /// The operator's bindings do not let this lookup go where it would go.
    #[error("lookup refused for tool {tool} ({rule}): {why}")]
    Refused {
        tool: String,
        rule: String,
        why: String,
    },
    #[error("lookup impossible: {0}")]
    Client(String),
}

/// The shortest wait between two lookups of one hold by default, in seconds.
pub const DEFAULT_MIN_INTERVAL_SECONDS: u32 = 30;

/// Settings of the HTTP side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupConfig {
    /// The largest body read, in bytes.
    pub body_limit: usize,
    /// The operator's bindings: where lookups may go and what they carry.
    pub bindings: Bindings,
    /// The shortest wait before a hold is looked up again, in seconds.
    pub min_interval_seconds: u32,
}

impl Default for LookupConfig {
    fn default() -> Self {
        LookupConfig {
            body_limit: DEFAULT_BODY_LIMIT,
            bindings: Bindings::new(),
            min_interval_seconds: DEFAULT_MIN_INTERVAL_SECONDS,
        }
    }
}

/// The HTTP client of lookups; one per process, shared by every lookup.
#[derive(Debug, Clone)]
pub struct Looker {
    /// For bindings that do not allow private addresses: a name resolving to
    /// one is not connected to (a hostname cannot smuggle in what an IP literal
    /// may not name).
    http: reqwest::Client,
    /// For bindings that allow them (`allow_private = true`).
    private: reqwest::Client,
    config: LookupConfig,
}

/// Resolves names through the system, keeping only addresses a binding that
/// does not allow private ones may reach.
struct PublicOnly;

impl reqwest::dns::Resolve for PublicOnly {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let addrs: Vec<std::net::SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let public: Vec<std::net::SocketAddr> = addrs
                .into_iter()
                .filter(|a| !bind::is_private_ip(a.ip()))
                .collect();
            if public.is_empty() {
                return Err(format!(
                    "{host} resolves only to loopback, private, link-local or metadata addresses, which its binding does not allow"
                )
                .into());
            }
            Ok(Box::new(public.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

impl Looker {
    pub fn new(config: LookupConfig) -> Result<Looker, Impossible> {
        let builder = || {
            reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .user_agent(concat!("holdfast/", env!("CARGO_PKG_VERSION")))
                .connect_timeout(Duration::from_millis(u64::from(LookupSpec::MAX_TIMEOUT_MS)))
        };
        let built = |b: reqwest::ClientBuilder| {
            b.build()
                .map_err(|e| Impossible::Client(e.without_url().to_string()))
        };
        Ok(Looker {
            http: built(builder().dns_resolver(PublicOnly))?,
            private: built(builder())?,
            config,
        })
    }

    /// How `spec`'s lookup of `op` would be made under this client's bindings,
    /// or why it may not be made at all.
    pub fn route(
        &self,
        spec: &LookupSpec,
        op: &Operation,
        provider_request_id: Option<&str>,
    ) -> Result<Route, Impossible> {
        route(&self.config.bindings, spec, op, provider_request_id)
    }

    /// Makes one lookup of `op` as `spec` says, through the operator's binding
    /// ([`route`]): nothing is sent where no binding allows it. `provider_request_id`
    /// is the one the last request attempt recorded. Every call that was sent
    /// comes back as a [`LookupCall`], whatever happened on the way; its times are
    /// on `clock`.
    pub async fn look_up(
        &self,
        spec: &LookupSpec,
        op: &Operation,
        provider_request_id: Option<&str>,
        secrets: &dyn Secrets,
        clock: Clock,
    ) -> Result<LookupCall, Impossible> {
        let route = self.route(spec, op, provider_request_id)?;
        let url = route.url.clone();
        let http = if route.allow_private {
            &self.private
        } else {
            &self.http
        };
        let mut request = http
            .get(&url)
            .timeout(Duration::from_millis(u64::from(spec.timeout_ms())));
        let mut secret = None;
        if let Some(auth) = &route.auth {
            let value = secrets
                .get(&auth.env)
                .ok_or_else(|| Impossible::MissingSecret(auth.env.clone()))?;
            let text = format!("{}{value}", auth.prefix);
            let mut header = reqwest::header::HeaderValue::from_str(&text)
                .map_err(|_| Impossible::BadSecret(auth.env.clone()))?;
            header.set_sensitive(true);
            request = request.header(auth.header.as_str(), header);
            secret = Some(value);
        }
        let shown_url = redact_url(&url);
        let timer = std::time::Instant::now();
        let got = self.exchange(request).await;
        let elapsed = chrono::Duration::from_std(timer.elapsed())
            .unwrap_or_else(|_| chrono::Duration::zero());
        // The end is now on `clock` and the start that long before it, so a call
        // under a frozen clock is never dated after the clock's instant.
        let ended_at = clock.now();
        let started_at = ended_at - elapsed;
        let mut call = LookupCall {
            url: shown_url,
            started_at,
            ended_at,
            phase: Phase::ResponseReceived,
            outcome: Outcome::Ok,
            http_status: None,
            error_type: None,
            retry_after: None,
            response_hash: None,
            excerpt: None,
            answer: None,
            min_interval_seconds: self.config.min_interval_seconds,
        };
        // The secret itself, then every secret the project's redactor knows.
        let clean = |text: &str| {
            crate::core::redact::redact(&redact_secret(text, secret.as_deref())).into_owned()
        };
        match got {
            Exchange::Failed {
                phase,
                outcome,
                error_type,
                status,
                detail,
            } => {
                call.phase = phase;
                call.outcome = outcome;
                call.http_status = status;
                call.error_type = Some(error_type.to_owned());
                call.excerpt = Some(clean(&detail));
            }
            Exchange::Whole {
                status,
                retry_after: wait,
                content_type,
                location,
                body,
            } => {
                call.http_status = Some(status);
                call.response_hash = Some(Sha256::of(&body));
                call.excerpt = excerpt(&body).map(|e| clean(&e));
                if matches!(status, 429 | 503) {
                    call.retry_after = wait.and_then(|v| retry_after(&v, ended_at));
                }
                let response = Response {
                    status,
                    content_type: content_type.as_deref(),
                    location: location.as_deref(),
                    body: &body,
                };
                match read(spec, op, route.not_found.as_ref(), &response) {
                    Reading::Answer(mut answer) => {
                        answer.provider_request_id =
                            answer.provider_request_id.map(|id| clean(&id));
                        answer.version = answer.version.map(|v| clean(&v));
                        call.answer = Some(answer);
                    }
                    Reading::Bad {
                        outcome,
                        error_type,
                        detail,
                    } => {
                        call.outcome = outcome;
                        call.error_type = Some(error_type);
                        let body = call.excerpt.take().unwrap_or_default();
                        call.excerpt = Some(clean(&format!("{detail}; body: {body}")));
                    }
                }
            }
        }
        Ok(call)
    }

    async fn exchange(&self, request: reqwest::RequestBuilder) -> Exchange {
        let mut response = match request.send().await {
            Ok(r) => r,
            Err(e) => return Exchange::from_error(&e, None),
        };
        let status = response.status().as_u16();
        let header = |name: reqwest::header::HeaderName| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let retry_after = header(reqwest::header::RETRY_AFTER);
        let content_type = header(reqwest::header::CONTENT_TYPE);
        let location = header(reqwest::header::LOCATION).map(|l| redact_url(&l));
        let limit = self.config.body_limit;
        let too_large = |seen: String| Exchange::Failed {
            phase: Phase::ResponseReceived,
            outcome: Outcome::InvalidResponse,
            error_type: "body_too_large",
            status: Some(status),
            detail: format!("the body is {seen} bytes, over the limit of {limit} bytes"),
        };
        if let Some(len) = response.content_length()
            && len > limit as u64
        {
            return too_large(len.to_string());
        }
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > limit {
                        return too_large(format!("more than {limit}"));
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(e) => return Exchange::from_error(&e, Some(status)),
            }
        }
        Exchange::Whole {
            status,
            retry_after,
            content_type,
            location,
            body,
        }
    }
}

/// What came back from the wire.
enum Exchange {
    Whole {
        status: u16,
        retry_after: Option<String>,
        content_type: Option<String>,
        location: Option<String>,
        body: Vec<u8>,
    },
    Failed {
        phase: Phase,
        outcome: Outcome,
        error_type: &'static str,
        status: Option<u16>,
        detail: String,
    },
}

impl Exchange {
    /// Classifies a transport error; `status` is set when the headers had arrived.
    fn from_error(e: &reqwest::Error, status: Option<u16>) -> Exchange {
        let mut chain = String::new();
        let mut source: Option<&dyn std::error::Error> = Some(e);
        while let Some(err) = source {
            chain.push_str(&err.to_string().to_ascii_lowercase());
            chain.push_str("; ");
            source = err.source();
        }
        let has = |words: &[&str]| words.iter().any(|w| chain.contains(w));
        let (phase, outcome, error_type) = if has(&["dns error", "failed to lookup address"]) {
            (Phase::Dns, Outcome::DnsFailure, "dns_failure")
        } else if has(&[
            "certificate",
            "tls",
            "handshake",
            "corrupt message",
            "received fatal alert",
        ]) {
            (Phase::Connected, Outcome::ConnectionReset, "tls_error")
        } else if e.is_timeout() && e.is_connect() {
            (Phase::Dns, Outcome::Timeout, "connect_timeout")
        } else if e.is_timeout() {
            let phase = if status.is_some() {
                Phase::ResponseReceived
            } else {
                Phase::RequestSent
            };
            (phase, Outcome::Timeout, "timeout")
        } else if has(&["connection refused"]) {
            (Phase::Dns, Outcome::ConnectionReset, "connection_refused")
        } else if e.is_connect() {
            (Phase::Dns, Outcome::ConnectionReset, "connect_error")
        } else if status.is_some() || e.is_body() || e.is_decode() {
            (
                Phase::ResponseReceived,
                Outcome::ConnectionReset,
                "body_interrupted",
            )
        } else {
            (
                Phase::RequestSent,
                Outcome::ConnectionReset,
                "connection_reset",
            )
        };
        Exchange::Failed {
            phase,
            outcome,
            error_type,
            status,
            detail: e.without_url_ref(),
        }
    }
}

/// An error's text without its URL (which the attempt records redacted).
trait WithoutUrl {
    fn without_url_ref(&self) -> String;
}

impl WithoutUrl for reqwest::Error {
    fn without_url_ref(&self) -> String {
        let mut text = String::new();
        let mut source = self.source();
        text.push_str(if self.is_timeout() {
            "timed out"
        } else if self.is_connect() {
            "could not connect"
        } else {
            "transport error"
        });
        while let Some(err) = source {
            text.push_str(": ");
            text.push_str(&err.to_string());
            source = err.source();
        }
        text
    }
}

/// The first [`EXCERPT_BYTES`] of a body as text (invalid UTF-8 replaced).
fn excerpt(body: &[u8]) -> Option<String> {
    if body.is_empty() {
        return None;
    }
    let cut = &body[..body.len().min(EXCERPT_BYTES)];
    let mut text = String::from_utf8_lossy(cut).into_owned();
    if body.len() > EXCERPT_BYTES {
        text.push('…');
    }
    Some(text)
}
