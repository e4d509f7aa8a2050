//! Where a lookup may go, and with which credential: the operator's bindings
//! (`[lookup.bindings.NAME]` of the config file, DESIGN §9.1 revised). An
//! ingested contract's lookup may name a binding (`"provider": "payments"`) or a
//! URL on a bound origin; it never introduces a host or a secret's variable. The
//! binding alone decides the origin (scheme, host, port), the environment
//! variable whose value is sent, whether a loopback, private, link-local or
//! metadata address may be asked, and what the provider's own not-found body
//! looks like. Pure: nothing here does I/O.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::Impossible;
use crate::core::lookup::{LookupSpec, Unfillable};
use crate::core::model::Operation;

/// One binding: where lookups through it may go and what they carry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Binding {
    /// `scheme://host[:port]`: the only origin lookups through it may ask.
    pub origin: String,
    /// The environment variable holding the secret sent with each lookup; none:
    /// lookups through this binding carry no credential.
    pub env: Option<String>,
    /// The header that carries the secret (default `Authorization`).
    pub header: Option<String>,
    /// Put before the secret (`Bearer `; default nothing).
    pub prefix: Option<String>,
    /// Whether a loopback, private, link-local or metadata address may be asked
    /// (a simulator or a test provider on 127.0.0.1). Default: refused.
    #[serde(default)]
    pub allow_private: bool,
    /// What the provider's own "no such record" body looks like.
    pub not_found: Option<NotFoundBody>,
}

/// A not-found body the provider is known to send: the value at `pointer` (a
/// JSON Pointer) is the string or number `equals`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotFoundBody {
    pub pointer: String,
    pub equals: String,
}

/// The bindings of the config file, by name.
pub type Bindings = BTreeMap<String, Binding>;

/// How one lookup is made: the URL asked, the credential it carries and how its
/// not-found answer is recognized, all decided by the binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// The binding's name.
    pub binding: String,
    /// The URL asked, placeholders filled.
    pub url: String,
    /// `scheme://host:port`, canonical: the key of the per-provider rate limit.
    pub origin: String,
    pub auth: Option<RouteAuth>,
    pub not_found: Option<NotFoundBody>,
    /// Whether the binding lets the lookup reach a private address.
    pub allow_private: bool,
}

/// The credential a lookup carries: the binding's variable, never the contract's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteAuth {
    pub header: String,
    pub prefix: String,
    pub env: String,
}

/// The canonical `scheme://host:port` of a parsed URL (IP literals in the
/// parser's canonical form, the scheme's default port written out).
pub(super) fn origin_of(url: &url::Url) -> Option<String> {
    let host = url.host_str().filter(|h| !h.is_empty())?;
    let port = url.port_or_known_default()?;
    Some(format!(
        "{}://{}:{port}",
        url.scheme(),
        host.trim_end_matches('.').to_ascii_lowercase()
    ))
}

/// The canonical origin of `text` (`https://api.example` → `https://api.example:443`),
/// or `None` when it is not an `http(s)://host[:port]` with nothing after it.
pub fn canonical_origin(text: &str) -> Option<String> {
    let url = url::Url::parse(text).ok()?;
    let bare = matches!(url.scheme(), "http" | "https")
        && url.username().is_empty()
        && url.password().is_none()
        && matches!(url.path(), "" | "/")
        && url.query().is_none()
        && url.fragment().is_none();
    if bare { origin_of(&url) } else { None }
}

/// Whether `host` is a loopback, private, link-local, unique-local, shared,
/// unspecified, multicast or metadata address (or a name for one, `localhost`).
pub fn is_private(host: &url::Host<&str>) -> bool {
    match host {
        url::Host::Domain(name) => {
            let name = name.trim_end_matches('.').to_ascii_lowercase();
            name == "localhost"
                || name.ends_with(".localhost")
                || name == "metadata.google.internal"
                || name == "metadata"
        }
        url::Host::Ipv4(ip) => private_v4(*ip),
        url::Host::Ipv6(ip) => private_v6(*ip),
    }
}

fn private_v4(ip: Ipv4Addr) -> bool {
    let [a, b, ..] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && ip.octets()[2] == 0)
        || (a == 198 && (18..20).contains(&b))
        || a >= 240
}

fn private_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return private_v4(v4);
    }
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || (first & 0xffc0) == 0xfec0
        // NAT64 and IPv4-compatible forms carry an IPv4 address: judge that.
        || (ip.segments()[..6] == [0x64, 0xff9b, 0, 0, 0, 0] || ip.segments()[..6] == [0; 6])
            && private_v4(Ipv4Addr::from(
                u32::try_from(u128::from(ip) & 0xffff_ffff).unwrap_or(0),
            ))
}

/// Whether an address a name resolved to may be asked under a binding that does
/// not allow private addresses.
pub fn is_private_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => private_v4(v4),
        IpAddr::V6(v6) => private_v6(v6),
    }
}

/// How the lookup `spec` of `op` is made under `bindings`, or why it may not be:
/// the binding it names (or the one bound to its URL's origin), the origin
/// checked against it, the contract's own `auth.env` refused unless the binding
/// names the same variable, private addresses refused unless the binding allows
/// them, and the URL filled with values that cannot change the path asked.
pub fn route(
    bindings: &Bindings,
    spec: &LookupSpec,
    op: &Operation,
    provider_request_id: Option<&str>,
) -> Result<Route, Impossible> {
    let tool = op.tool.clone();
    let refused = |rule: &str, why: String| Impossible::Refused {
        tool: tool.clone(),
        rule: rule.to_owned(),
        why,
    };
    let template = spec.url.origin().ok_or_else(|| {
        refused(
            "lookup URL",
            format!("the URL {} cannot be parsed", spec.url),
        )
    })?;
    let origin = origin_of(&template)
        .ok_or_else(|| refused("lookup URL", format!("the URL {} names no host", spec.url)))?;
    let (name, binding) = match &spec.provider {
        Some(name) => {
            let binding = bindings.get(name).ok_or_else(|| {
                refused(
                    "unbound provider",
                    format!(
                        "the contract names binding {name:?}, which the operator's config does not define ([lookup.bindings.{name}])"
                    ),
                )
            })?;
            (name.clone(), binding)
        }
        None => bindings
            .iter()
            .find(|(_, b)| canonical_origin(&b.origin).as_deref() == Some(origin.as_str()))
            .map(|(n, b)| (n.clone(), b))
            .ok_or_else(|| {
                refused(
                    "unbound host",
                    format!(
                        "the lookup goes to {origin}, which no binding in the operator's config names; a contract may not introduce a host"
                    ),
                )
            })?,
    };
    let bound = canonical_origin(&binding.origin).ok_or_else(|| {
        refused(
            "bad binding",
            format!(
                "binding {name:?} has origin {:?}, not http(s)://host[:port] with nothing after it",
                binding.origin
            ),
        )
    })?;
    if bound != origin {
        return Err(refused(
            "unbound host",
            format!("the lookup goes to {origin}, but binding {name:?} allows only {bound}"),
        ));
    }
    if let Some(host) = template.host()
        && is_private(&host)
        && !binding.allow_private
    {
        return Err(refused(
            "private address",
            format!(
                "the lookup host {host} is a loopback, private, link-local or metadata address, and binding {name:?} does not allow one (allow_private = true)"
            ),
        ));
    }
    if let Some(auth) = &spec.auth
        && binding.env.as_deref() != Some(auth.env.as_str())
    {
        return Err(refused(
            "contract secret",
            format!(
                "the contract names the secret variable {} in status_lookup.auth.env; only the operator's binding decides which secret is sent, and binding {name:?} names {}",
                auth.env,
                binding
                    .env
                    .as_deref()
                    .map_or_else(|| "none".to_owned(), |e| e.to_owned())
            ),
        ));
    }
    let url = spec
        .url
        .render(op, provider_request_id)
        .map_err(|why| match why {
            Unfillable::Missing(p) => Impossible::MissingValue(p.name()),
            other => Impossible::Unsendable(other.to_string()),
        })?;
    let parsed = url::Url::parse(&url)
        .map_err(|e| Impossible::Unsendable(format!("the URL filled in is not a URL: {e}")))?;
    if origin_of(&parsed).as_deref() != Some(origin.as_str()) {
        return Err(Impossible::Unsendable(
            "the URL filled in goes to another origin than its template".into(),
        ));
    }
    let written_path = written_path(&url);
    if parsed.path() != written_path {
        return Err(Impossible::Unsendable(format!(
            "the URL filled in has a dot segment: its path {written_path} would be asked as {}",
            parsed.path()
        )));
    }
    let auth = binding.env.as_ref().map(|env| {
        let contract = spec.auth.as_ref();
        RouteAuth {
            header: binding
                .header
                .clone()
                .or_else(|| contract.map(|a| a.header.clone()))
                .unwrap_or_else(|| "Authorization".to_owned()),
            prefix: binding
                .prefix
                .clone()
                .or_else(|| contract.and_then(|a| a.prefix.clone()))
                .unwrap_or_default(),
            env: env.clone(),
        }
    });
    Ok(Route {
        binding: name,
        url,
        origin,
        auth,
        not_found: binding.not_found.clone(),
        allow_private: binding.allow_private,
    })
}

/// The path of `url` as written, before the parser resolves dot segments.
fn written_path(url: &str) -> &str {
    let after = url.find("://").map_or(url, |i| &url[i + 3..]);
    let Some(start) = after.find('/') else {
        return "/";
    };
    let path = &after[start..];
    let end = path.find(['?', '#']).unwrap_or(path.len());
    &path[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(url: &str) -> bool {
        let parsed = url::Url::parse(url).unwrap();
        is_private(&parsed.host().unwrap())
    }

    #[test]
    fn private_and_obfuscated_addresses_are_private() {
        for url in [
            "http://169.254.169.254/latest",
            "http://0x7f.1/",
            "http://2130706433/",
            "http://0177.0.0.1/",
            "http://127.1/",
            "http://[::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:a9fe:a9fe]/",
            "http://10.1.2.3/",
            "http://172.16.0.1/",
            "http://192.168.1.1/",
            "http://[fc00::1]/",
            "http://[fd00:ec2::254]/",
            "http://[fe80::1]/",
            "http://0.0.0.0/",
            "http://localhost/",
            "http://api.localhost./",
            "http://metadata.google.internal/",
            "http://100.64.0.1/",
            "http://[64:ff9b::a9fe:a9fe]/",
        ] {
            assert!(host(url), "{url} must be private");
        }
        for url in [
            "https://api.stripe.com/",
            "http://93.184.216.34/",
            "http://[2001:db8::1]/",
        ] {
            assert!(!host(url), "{url} is public");
        }
    }

    #[test]
    fn origins_are_canonical() {
        assert_eq!(
            canonical_origin("https://API.example.com").as_deref(),
            Some("https://api.example.com:443")
        );
        assert_eq!(
            canonical_origin("http://0x7f.1:8080/").as_deref(),
            Some("http://127.0.0.1:8080")
        );
        assert_eq!(canonical_origin("http://x/path"), None);
        assert_eq!(canonical_origin("ftp://x"), None);
        assert_eq!(written_path("http://x/a/../b?q=1"), "/a/../b");
        assert_eq!(written_path("http://x?q"), "/");
    }
}
