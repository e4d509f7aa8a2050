//! One physical HTTP/1.1 exchange that knows how far it got. A write announces
//! itself with `Expect: 100-continue` and sends its body only when the provider
//! agrees to read it, so a connection dropped before that point proves the
//! request never reached the provider; after it, the outcome is unknown.

use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::core::model::{AttemptKind, Outcome, Phase};

/// The largest response the executor reads.
pub const MAX_RESPONSE: usize = 1 << 20;

/// Resolves a host before a connection is made; the drill injects name lookup
/// failures here.
pub trait Resolver: Send + Sync {
    fn resolve(
        &self,
        host: &str,
        port: u16,
        path: &str,
        kind: AttemptKind,
    ) -> Result<SocketAddr, String>;
}

/// Literal IP addresses and `localhost` only: the executor talks to loopback
/// providers in the drill and never needs a system resolver there.
pub struct LiteralResolver;

impl Resolver for LiteralResolver {
    fn resolve(
        &self,
        host: &str,
        port: u16,
        _path: &str,
        _kind: AttemptKind,
    ) -> Result<SocketAddr, String> {
        let ip = if host == "localhost" {
            std::net::IpAddr::from([127, 0, 0, 1])
        } else {
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .parse()
                .map_err(|_| format!("cannot resolve {host}"))?
        };
        Ok(SocketAddr::new(ip, port))
    }
}

/// A parsed `http://host:port/path?query` URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Url {
    pub host: String,
    pub port: u16,
    /// Path and query.
    pub path: String,
}

impl Url {
    pub fn parse(text: &str) -> Result<Url, String> {
        let rest = text
            .strip_prefix("http://")
            .ok_or_else(|| format!("{text}: only http:// URLs are used by the executor"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let (host, port) = match authority.rsplit_once(':') {
            Some((host, port)) if !port.contains(']') => (
                host,
                port.parse::<u16>()
                    .map_err(|_| format!("{text}: bad port `{port}`"))?,
            ),
            _ => (authority, 80),
        };
        if host.is_empty() {
            return Err(format!("{text}: no host"));
        }
        Ok(Url {
            host: host.to_owned(),
            port,
            path: path.to_owned(),
        })
    }
}

/// One request.
#[derive(Debug, Clone)]
pub struct HttpRequest {
    pub method: String,
    pub url: Url,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub kind: AttemptKind,
}

/// What one exchange showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exchange {
    pub phase: Phase,
    pub outcome: Outcome,
    pub status: Option<u16>,
    /// Header names in lower case.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub error_type: Option<String>,
}

impl Exchange {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends HTTP/1.1 requests, one connection each.
#[derive(Clone)]
pub struct Transport {
    resolver: Arc<dyn Resolver>,
    /// The real time an exchange may take before it counts as a timeout.
    timeout: std::time::Duration,
}

struct Progress {
    phase: Phase,
    status: Option<u16>,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

#[derive(Debug)]
enum Failure {
    Dns(String),
    Connect(String),
    Closed(String),
    TooLarge,
    Malformed(String),
}

impl Transport {
    pub fn new(resolver: Arc<dyn Resolver>, timeout: std::time::Duration) -> Self {
        Transport { resolver, timeout }
    }

    /// Makes one exchange; never retries, never follows redirects.
    pub async fn send(&self, request: &HttpRequest) -> Exchange {
        let mut progress = Progress {
            phase: Phase::NotSent,
            status: None,
            headers: Vec::new(),
            body: Vec::new(),
        };
        let result =
            tokio::time::timeout(self.timeout, self.exchange(request, &mut progress)).await;
        let (outcome, error_type) = match result {
            Err(_) => (Outcome::Timeout, Some("read_timeout".to_owned())),
            Ok(Ok(())) => {
                let ok = progress.status.is_some_and(|s| (200..300).contains(&s));
                if ok {
                    (Outcome::Ok, None)
                } else {
                    (
                        Outcome::HttpError,
                        progress.status.map(|s| format!("http_{s}")),
                    )
                }
            }
            Ok(Err(Failure::Dns(e))) => (Outcome::DnsFailure, Some(format!("dns_failure: {e}"))),
            Ok(Err(Failure::Connect(e))) => (
                Outcome::ConnectionReset,
                Some(format!("connect_failed: {e}")),
            ),
            Ok(Err(Failure::Closed(e))) => (Outcome::ConnectionReset, Some(e)),
            Ok(Err(Failure::TooLarge)) => (
                Outcome::InvalidResponse,
                Some(format!("response_too_large: over {MAX_RESPONSE} bytes")),
            ),
            Ok(Err(Failure::Malformed(e))) => (Outcome::InvalidResponse, Some(e)),
        };
        Exchange {
            phase: progress.phase,
            outcome,
            status: progress.status,
            headers: progress.headers,
            body: progress.body,
            error_type,
        }
    }

    async fn exchange(&self, request: &HttpRequest, p: &mut Progress) -> Result<(), Failure> {
        let addr = self
            .resolver
            .resolve(
                &request.url.host,
                request.url.port,
                &request.url.path,
                request.kind,
            )
            .map_err(Failure::Dns)?;
        p.phase = Phase::Dns;
        let mut stream = TcpStream::connect(addr)
            .await
            .map_err(|e| Failure::Connect(e.to_string()))?;
        p.phase = Phase::Connected;
        let mut head = format!(
            "{} {} HTTP/1.1\r\nHost: {}:{}\r\nConnection: close\r\n",
            request.method, request.url.path, request.url.host, request.url.port
        );
        for (name, value) in &request.headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        let closed = |e: std::io::Error| Failure::Closed(format!("connection_reset: {e}"));
        let mut reader = Reader::default();
        match &request.body {
            Some(body) => {
                head.push_str(&format!(
                    "Content-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
                    body.len()
                ));
                stream.write_all(head.as_bytes()).await.map_err(closed)?;
                let (status, headers) = reader.head(&mut stream).await.map_err(|e| match e {
                    Failure::Closed(_) => Failure::Closed(
                        "connection_reset: closed before the provider accepted the request body"
                            .to_owned(),
                    ),
                    other => other,
                })?;
                if status == 100 {
                    stream.write_all(body).await.map_err(closed)?;
                    stream.flush().await.map_err(closed)?;
                    p.phase = Phase::RequestSent;
                    let (status, headers) = reader.head(&mut stream).await?;
                    p.status = Some(status);
                    p.headers = headers;
                } else {
                    p.status = Some(status);
                    p.headers = headers;
                }
            }
            None => {
                head.push_str("\r\n");
                stream.write_all(head.as_bytes()).await.map_err(closed)?;
                p.phase = Phase::RequestSent;
                let (status, headers) = reader.head(&mut stream).await?;
                p.status = Some(status);
                p.headers = headers;
            }
        }
        p.phase = Phase::Acknowledged;
        let length = p
            .headers
            .iter()
            .find(|(n, _)| n == "content-length")
            .and_then(|(_, v)| v.trim().parse::<usize>().ok());
        p.body = reader.body(&mut stream, length).await?;
        p.phase = Phase::ResponseReceived;
        Ok(())
    }
}

/// Reads heads and bodies from one connection, keeping what was read ahead.
#[derive(Default)]
struct Reader {
    buffer: Vec<u8>,
}

impl Reader {
    async fn fill(&mut self, stream: &mut TcpStream) -> Result<usize, Failure> {
        let mut chunk = [0u8; 8192];
        let n = stream
            .read(&mut chunk)
            .await
            .map_err(|e| Failure::Closed(format!("connection_reset: {e}")))?;
        self.buffer.extend_from_slice(&chunk[..n]);
        if self.buffer.len() > MAX_RESPONSE {
            return Err(Failure::TooLarge);
        }
        Ok(n)
    }

    /// The status and headers of the next response head.
    async fn head(
        &mut self,
        stream: &mut TcpStream,
    ) -> Result<(u16, Vec<(String, String)>), Failure> {
        loop {
            if let Some(end) = self.buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                let head: Vec<u8> = self.buffer.drain(..end + 4).collect();
                return parse_head(&head);
            }
            if self.fill(stream).await? == 0 {
                return Err(Failure::Closed(
                    "connection_reset: closed before a response".to_owned(),
                ));
            }
        }
    }

    async fn body(
        &mut self,
        stream: &mut TcpStream,
        length: Option<usize>,
    ) -> Result<Vec<u8>, Failure> {
        loop {
            if length.is_some_and(|l| self.buffer.len() >= l) {
                let l = length.unwrap_or_default();
                return Ok(self.buffer.drain(..l).collect());
            }
            if self.fill(stream).await? == 0 {
                return match length {
                    Some(_) => Err(Failure::Closed(
                        "connection_reset: closed in the middle of the response body".to_owned(),
                    )),
                    None => Ok(std::mem::take(&mut self.buffer)),
                };
            }
        }
    }
}

fn parse_head(head: &[u8]) -> Result<(u16, Vec<(String, String)>), Failure> {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse::<u16>().ok())
        .filter(|_| status_line.starts_with("HTTP/1."))
        .ok_or_else(|| Failure::Malformed(format!("malformed_status_line: {status_line:.60}")))?;
    let headers = lines
        .filter(|l| !l.is_empty())
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Ok((status, headers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_with_and_without_ports() {
        let url = Url::parse("http://127.0.0.1:8710/v1/records?x=1").unwrap();
        assert_eq!(url.host, "127.0.0.1");
        assert_eq!(url.port, 8710);
        assert_eq!(url.path, "/v1/records?x=1");
        assert_eq!(Url::parse("http://localhost").unwrap().path, "/");
        assert!(Url::parse("https://example.invalid/").is_err());
        assert!(Url::parse("http://:80/").is_err());
    }

    #[tokio::test]
    async fn a_refused_connection_never_sent_the_request() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let transport =
            Transport::new(Arc::new(LiteralResolver), std::time::Duration::from_secs(2));
        let exchange = transport
            .send(&HttpRequest {
                method: "POST".into(),
                url: Url::parse(&format!("http://{addr}/x")).unwrap(),
                headers: vec![],
                body: Some(b"{}".to_vec()),
                kind: AttemptKind::Request,
            })
            .await;
        assert_eq!(exchange.phase, Phase::Dns);
        assert_eq!(exchange.outcome, Outcome::ConnectionReset);
        assert!(!exchange.phase.may_have_crossed_boundary());
    }
}
