//! How a contract says to look an operation up (DESIGN §9.1): the URL template with
//! its placeholders, the secret's source, timeouts, the lag window and the JSON
//! Pointers into the answer. Parsed once, at ingest; invalid text never gets here.

use serde::{Serialize, Serializer};
use std::fmt;

use crate::core::model::Operation;

/// The identity fields a URL template may name, each percent-encoded when filled in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Placeholder {
    ProviderRequestId,
    IdempotencyKey,
    BusinessKey,
    Target,
    Operation,
    Tenant,
}

impl Placeholder {
    pub const ALL: &'static [Placeholder] = &[
        Placeholder::ProviderRequestId,
        Placeholder::IdempotencyKey,
        Placeholder::BusinessKey,
        Placeholder::Target,
        Placeholder::Operation,
        Placeholder::Tenant,
    ];

    /// The name between the braces.
    pub fn name(self) -> &'static str {
        match self {
            Placeholder::ProviderRequestId => "provider_request_id",
            Placeholder::IdempotencyKey => "idempotency_key",
            Placeholder::BusinessKey => "business_key",
            Placeholder::Target => "target",
            Placeholder::Operation => "operation",
            Placeholder::Tenant => "tenant",
        }
    }

    pub fn parse(name: &str) -> Option<Placeholder> {
        Self::ALL.iter().copied().find(|p| p.name() == name)
    }

    /// This field's value for `op`; `provider_request_id` is the one the last
    /// request attempt recorded.
    pub fn value<'a>(
        self,
        op: &'a Operation,
        provider_request_id: Option<&'a str>,
    ) -> Option<&'a str> {
        match self {
            Placeholder::ProviderRequestId => provider_request_id,
            Placeholder::IdempotencyKey => op.idempotency_key.as_deref(),
            Placeholder::BusinessKey => op.business_key.as_deref(),
            Placeholder::Target => Some(op.target.as_str()),
            Placeholder::Operation => Some(op.id.as_str()),
            Placeholder::Tenant => Some(op.tenant.as_str()),
        }
        .filter(|v| !v.is_empty())
    }
}

/// What a redaction at ingest leaves in a value (`‹redacted:KIND›`).
const REDACTION_MARK: &str = "‹redacted:";

/// Why a URL template cannot be filled for an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unfillable {
    /// The operation has no value for it.
    Missing(Placeholder),
    /// Its value is `.` or `..`: as a path segment it would ask another path.
    DotSegment(Placeholder),
    /// Its value was redacted at ingest: the stored form is not the real key.
    Redacted(Placeholder),
}

impl Unfillable {
    pub fn placeholder(self) -> Placeholder {
        match self {
            Unfillable::Missing(p) | Unfillable::DotSegment(p) | Unfillable::Redacted(p) => p,
        }
    }
}

impl fmt::Display for Unfillable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unfillable::Missing(p) => write!(f, "the operation has no {}", p.name()),
            Unfillable::DotSegment(p) => write!(
                f,
                "the operation's {} is a dot segment (`.` or `..`), which would change the path asked; it is never sent",
                p.name()
            ),
            Unfillable::Redacted(p) => write!(
                f,
                "the operation's {} was redacted at ingest (it holds a ‹redacted:…› marker); the redacted form is never sent",
                p.name()
            ),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Slot(Placeholder),
}

/// A URL with `{placeholder}` slots in its path or query, never in its scheme or
/// host: an operation's identity chooses what is asked, not whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UrlTemplate {
    text: String,
    parts: Vec<Part>,
}

/// The schemes a lookup may use.
const SCHEMES: &[&str] = &["http", "https"];

impl UrlTemplate {
    /// Parses and checks a template; the error says what is wrong in words.
    pub fn parse(text: &str) -> Result<UrlTemplate, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        let mut offset = 0;
        while let Some(open) = rest.find(['{', '}']) {
            if rest[open..].starts_with('}') {
                return Err(format!(
                    "unmatched `}}` at byte {}; placeholders are written {{name}}",
                    offset + open
                ));
            }
            let Some(len) = rest[open + 1..].find('}') else {
                return Err(format!(
                    "unmatched `{{` at byte {}; placeholders are written {{name}}",
                    offset + open
                ));
            };
            let name = &rest[open + 1..open + 1 + len];
            let slot = Placeholder::parse(name).ok_or_else(|| {
                format!(
                    "unknown placeholder {{{name}}}; allowed: {}",
                    Placeholder::ALL
                        .iter()
                        .map(|p| format!("{{{}}}", p.name()))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })?;
            if open > 0 {
                parts.push(Part::Text(rest[..open].to_owned()));
            }
            parts.push(Part::Slot(slot));
            offset += open + len + 2;
            rest = &rest[open + len + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        let template = UrlTemplate {
            text: text.to_owned(),
            parts,
        };
        template.check()?;
        Ok(template)
    }

    fn check(&self) -> Result<(), String> {
        if self
            .text
            .chars()
            .any(|c| c.is_control() || c.is_whitespace())
        {
            return Err("must not contain spaces or control characters".into());
        }
        let prefix = match self.parts.first() {
            Some(Part::Text(t)) => t.as_str(),
            _ => "",
        };
        let Some((scheme, after)) = prefix.split_once("://") else {
            return Err("must start with http:// or https:// and a host".into());
        };
        if !SCHEMES.contains(&scheme.to_ascii_lowercase().as_str()) {
            return Err(format!(
                "scheme {scheme:?} is not allowed; use http or https"
            ));
        }
        let fixed_authority = after.contains(['/', '?', '#']) || self.parts.len() == 1;
        if !fixed_authority {
            return Err("placeholders may stand only in the path or query, after the host".into());
        }
        let sample = self.sample();
        let url = url::Url::parse(&sample).map_err(|e| format!("is not a valid URL: {e}"))?;
        if url.host_str().is_none_or(str::is_empty) {
            return Err("must name a host".into());
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(
                "must not carry credentials; name the secret's environment variable in auth.env"
                    .into(),
            );
        }
        if url.fragment().is_some() {
            return Err("must not have a #fragment; it is never sent".into());
        }
        Ok(())
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The placeholders it names, in order.
    pub fn placeholders(&self) -> impl Iterator<Item = Placeholder> + '_ {
        self.parts.iter().filter_map(|p| match p {
            Part::Slot(s) => Some(*s),
            Part::Text(_) => None,
        })
    }

    /// The URL with every slot filled, each value percent-encoded as a single
    /// path segment (no `/` survives). The first placeholder without a value, with
    /// a value that is a dot segment (`.`, `..`: it would change the path asked),
    /// or with a value redacted at ingest (it holds a `‹redacted:…›` marker, and
    /// the redacted form is not the operation's key) makes the lookup impossible.
    pub fn render(
        &self,
        op: &Operation,
        provider_request_id: Option<&str>,
    ) -> Result<String, Unfillable> {
        for p in self.placeholders() {
            match p.value(op, provider_request_id) {
                None => return Err(Unfillable::Missing(p)),
                Some("." | "..") => return Err(Unfillable::DotSegment(p)),
                Some(v) if v.contains(REDACTION_MARK) => return Err(Unfillable::Redacted(p)),
                Some(_) => {}
            }
        }
        self.render_with(|p| p.value(op, provider_request_id))
            .map_err(Unfillable::Missing)
    }

    /// The scheme, host and port every URL of this template goes to (its
    /// placeholders stand only after the host), as the URL parser canonicalizes
    /// them: `http://0x7f.1` is `http://127.0.0.1`.
    pub fn origin(&self) -> Option<url::Url> {
        url::Url::parse(&self.sample()).ok()
    }

    /// The URL with every slot filled by `value`, percent-encoded; the first
    /// placeholder without a value is the error. [`UrlTemplate::render`] fills it
    /// from an operation, the simulated provider from a record it holds, to know
    /// which record an emulated lookup asks for.
    pub(crate) fn render_with<'a>(
        &self,
        value: impl Fn(Placeholder) -> Option<&'a str>,
    ) -> Result<String, Placeholder> {
        let mut out = String::with_capacity(self.text.len() + 32);
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Slot(p) => {
                    let value = value(*p).ok_or(*p)?;
                    percent_encode(value, &mut out);
                }
            }
        }
        Ok(out)
    }

    /// Whether `url` could be this template filled in: its text as written,
    /// each slot a non-empty run of what [`UrlTemplate::render`] writes for a
    /// value (unreserved characters and `%XX` escapes). The simulated provider
    /// routes a request by it before it knows which record is asked for.
    pub fn matches(&self, url: &str) -> bool {
        fn rest_matches(parts: &[Part], rest: &str) -> bool {
            match parts.split_first() {
                None => rest.is_empty(),
                Some((Part::Text(text), more)) => rest
                    .strip_prefix(text.as_str())
                    .is_some_and(|r| rest_matches(more, r)),
                Some((Part::Slot(_), more)) => {
                    let longest = rest
                        .find(|c: char| !(c.is_ascii_alphanumeric() || "-._~%".contains(c)))
                        .unwrap_or(rest.len());
                    (1..=longest).any(|n| rest_matches(more, &rest[n..]))
                }
            }
        }
        rest_matches(&self.parts, url)
    }

    /// The URL with every slot filled with `x`, to check its shape.
    fn sample(&self) -> String {
        self.parts
            .iter()
            .map(|part| match part {
                Part::Text(t) => t.as_str(),
                Part::Slot(_) => "x",
            })
            .collect()
    }
}

impl fmt::Display for UrlTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for UrlTemplate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// Percent-encodes everything but the unreserved characters of RFC 3986.
fn percent_encode(value: &str, out: &mut String) {
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0xf)]));
        }
    }
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// A JSON Pointer (RFC 6901): empty, or `/`-separated tokens with `~0` and `~1`
/// the only escapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPointer(String);

impl JsonPointer {
    pub fn parse(text: &str) -> Result<JsonPointer, String> {
        if !text.is_empty() && !text.starts_with('/') {
            return Err(format!(
                "{text:?} is not a JSON Pointer: it must be empty or start with `/`"
            ));
        }
        let mut chars = text.char_indices();
        while let Some((i, c)) = chars.next() {
            if c == '~' && !matches!(chars.next(), Some((_, '0' | '1'))) {
                return Err(format!(
                    "{text:?} is not a JSON Pointer: `~` at byte {i} must be followed by 0 or 1"
                ));
            }
        }
        Ok(JsonPointer(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The reference tokens, unescaped (`~1` → `/`, then `~0` → `~`).
    pub fn tokens(&self) -> impl Iterator<Item = String> + '_ {
        self.0
            .split('/')
            .skip(1)
            .map(|t| t.replace("~1", "/").replace("~0", "~"))
    }
}

impl Serialize for JsonPointer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

/// Where the secret for a lookup comes from: an environment variable read at call
/// time. Its value is never stored, logged, exported or shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LookupAuth {
    /// The header that carries it (`Authorization`).
    pub header: String,
    /// Put before the secret (`Bearer `).
    pub prefix: Option<String>,
    /// The environment variable that holds it.
    pub env: String,
}

/// JSON Pointers into the answer's body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LookupFields {
    pub target: Option<JsonPointer>,
    pub payload_hash: Option<JsonPointer>,
    pub tenant: Option<JsonPointer>,
    pub version: Option<JsonPointer>,
    pub effect_count: Option<JsonPointer>,
    pub provider_request_id: Option<JsonPointer>,
}

impl LookupFields {
    /// The field names of the wire format, with their pointers.
    pub fn named(&self) -> [(&'static str, Option<&JsonPointer>); 6] {
        [
            ("target", self.target.as_ref()),
            ("payload_hash", self.payload_hash.as_ref()),
            ("tenant", self.tenant.as_ref()),
            ("version", self.version.as_ref()),
            ("effect_count", self.effect_count.as_ref()),
            ("provider_request_id", self.provider_request_id.as_ref()),
        ]
    }
}

/// How holdfast makes a lookup itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LookupSpec {
    /// `GET`: a lookup only reads.
    pub method: String,
    pub url: UrlTemplate,
    /// The operator's binding this lookup goes through (`[lookup.bindings.NAME]`
    /// of the config file): it decides the host and the credential, never the
    /// contract. Absent: the binding whose origin is the URL's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    pub auth: Option<LookupAuth>,
    pub timeout_ms: Option<u32>,
    pub lag_seconds: Option<u32>,
    /// Statuses that mean "no such record"; absent: 404.
    pub not_found_status: Option<Vec<u16>>,
    pub fields: LookupFields,
}

impl LookupSpec {
    /// Used when the contract names no timeout.
    pub const DEFAULT_TIMEOUT_MS: u32 = 2_000;
    /// The longest timeout a contract may ask for.
    pub const MAX_TIMEOUT_MS: u32 = 120_000;

    pub fn timeout_ms(&self) -> u32 {
        self.timeout_ms.unwrap_or(Self::DEFAULT_TIMEOUT_MS)
    }

    pub fn lag_seconds(&self) -> u32 {
        self.lag_seconds.unwrap_or(0)
    }

    pub fn is_not_found(&self, status: u16) -> bool {
        match &self.not_found_status {
            Some(list) => list.contains(&status),
            None => status == 404,
        }
    }

    /// Which provider a lookup goes to, for rate limits: the URL's scheme, host
    /// and port, as the URL parser canonicalizes them (`http://0x7f.1` is
    /// `http://127.0.0.1:80`), the port written out only when the URL writes it.
    pub fn origin(&self) -> String {
        let text = self.url.as_str();
        if let Some(url) = self.url.origin()
            && let Some(host) = url.host_str()
        {
            return match url.port() {
                Some(port) => format!("{}://{host}:{port}", url.scheme()),
                None => format!("{}://{host}", url.scheme()),
            };
        }
        let start = text.find("://").map_or(0, |i| i + 3);
        let end = text[start..]
            .find(['/', '?', '#', '{'])
            .map_or(text.len(), |i| start + i);
        text[..end].to_ascii_lowercase()
    }
}

/// A contract's `status_lookup`: none, one made by hand somewhere, or one holdfast
/// can make itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatusLookup {
    /// `false`: no status path; a product risk that limits autonomy.
    None,
    /// `true`: a lookup exists and a person makes it.
    ByHand,
    /// An object: holdfast makes it.
    Http(Box<LookupSpec>),
}

impl StatusLookup {
    /// Whether any status path exists.
    pub fn exists(&self) -> bool {
        !matches!(self, StatusLookup::None)
    }

    /// How holdfast makes the lookup, when it can.
    pub fn spec(&self) -> Option<&LookupSpec> {
        match self {
            StatusLookup::Http(spec) => Some(spec),
            _ => None,
        }
    }

    /// One line for `show` and the evidence pane.
    pub fn describe(&self) -> String {
        match self {
            StatusLookup::None => {
                "none: the contract has no status path (a product risk; lookups are impossible)"
                    .into()
            }
            StatusLookup::ByHand => {
                "by hand: a status path exists, a person looks it up and reconciles".into()
            }
            StatusLookup::Http(spec) => format!(
                "{} {} (timeout {} ms, lag {} s{}{})",
                spec.method,
                spec.url,
                spec.timeout_ms(),
                spec.lag_seconds(),
                spec.provider
                    .as_ref()
                    .map_or_else(String::new, |p| format!(", binding {p}")),
                spec.auth
                    .as_ref()
                    .map_or_else(String::new, |a| format!(", secret from ${}", a.env))
            ),
        }
    }
}

impl From<bool> for StatusLookup {
    fn from(exists: bool) -> Self {
        if exists {
            StatusLookup::ByHand
        } else {
            StatusLookup::None
        }
    }
}

impl Serialize for StatusLookup {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            StatusLookup::None => s.serialize_bool(false),
            StatusLookup::ByHand => s.serialize_bool(true),
            StatusLookup::Http(spec) => spec.serialize(s),
        }
    }
}
