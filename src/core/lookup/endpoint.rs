//! Where a tool's own call goes and what its answer is declared to carry: the
//! optional `path` and `response` of a contract. The path is a lookup URL's
//! template without its origin (the host is the operator's or the drill's); the
//! response shape names, by JSON Pointer, the parts of a 2xx body an executor
//! may rely on, and nothing else is checked.

use serde::{Serialize, Serializer};
use std::fmt;

use super::spec::{JsonPointer, Placeholder, Unfillable, UrlTemplate};
use crate::core::model::Operation;

/// The origin a path template is read against, only to check its shape.
const PATH_ORIGIN: &str = "http://provider.invalid";

/// A contract's `path`: `/…` with the placeholders of a lookup URL (DESIGN §9.1)
/// but `{provider_request_id}`, which no call has before it is made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathTemplate {
    template: UrlTemplate,
}

impl PathTemplate {
    /// Parses and checks a path template; the error says what is wrong in words.
    pub fn parse(text: &str) -> Result<PathTemplate, String> {
        if !text.starts_with('/') || text.starts_with("//") {
            return Err(format!(
                "{text:?} must start with a single `/`: a path (and query) at the tool's provider, never a host"
            ));
        }
        let template = UrlTemplate::parse(&format!("{PATH_ORIGIN}{text}"))?;
        if template
            .placeholders()
            .any(|p| p == Placeholder::ProviderRequestId)
        {
            return Err(
                "{provider_request_id} cannot stand in a call's path: the provider names it only in its answer"
                    .into(),
            );
        }
        Ok(PathTemplate { template })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.template.as_str()[PATH_ORIGIN.len()..]
    }

    /// The path and query for `op`, every placeholder filled as a lookup fills
    /// its URL ([`UrlTemplate::render`]).
    pub fn render(&self, op: &Operation) -> Result<String, Unfillable> {
        self.template
            .render(op, None)
            .map(|url| url[PATH_ORIGIN.len()..].to_owned())
    }

    /// Whether `path` (path and query as asked) could be this template filled in.
    pub fn matches(&self, path: &str) -> bool {
        self.template.matches(&format!("{PATH_ORIGIN}{path}"))
    }
}

impl fmt::Display for PathTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for PathTemplate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// A contract's `response`: JSON Pointers (RFC 6901) into a 2xx answer's body,
/// each optional. A declared pointer is a check: the value must be there and,
/// for tenant, target, payload hash and version, equal the operation's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ResponseShape {
    /// The id the provider gives the record (text or a number).
    pub record_id: Option<JsonPointer>,
    pub target: Option<JsonPointer>,
    pub tenant: Option<JsonPointer>,
    pub payload_hash: Option<JsonPointer>,
    /// The record version the call must produce.
    pub version: Option<JsonPointer>,
    /// The per-item results of a batch: an array of `{"index","state","id"}`.
    pub items: Option<JsonPointer>,
}

impl ResponseShape {
    /// The field names of the wire format, with their pointers, in wire order.
    pub fn named(&self) -> [(&'static str, Option<&JsonPointer>); 6] {
        [
            ("record_id", self.record_id.as_ref()),
            ("target", self.target.as_ref()),
            ("tenant", self.tenant.as_ref()),
            ("payload_hash", self.payload_hash.as_ref()),
            ("version", self.version.as_ref()),
            ("items", self.items.as_ref()),
        ]
    }

    /// Whether it declares any pointer (then the body must be JSON).
    pub fn declares_any(&self) -> bool {
        self.named().iter().any(|(_, p)| p.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_template_matches_its_own_renderings_only() {
        let path = PathTemplate::parse("/v2/accounts/{target}/notes?key={business_key}").unwrap();
        assert!(path.matches("/v2/accounts/account%3A7/notes?key=b-1"));
        assert!(!path.matches("/v2/accounts//notes?key=b-1"));
        assert!(!path.matches("/v2/accounts/a/b/notes?key=b-1"));
        assert!(!path.matches("/v2/accounts/a/notes"));
        assert!(!path.matches("/ops"));
        assert_eq!(
            path.as_str(),
            "/v2/accounts/{target}/notes?key={business_key}"
        );
    }

    #[test]
    fn a_path_names_no_host_and_no_provider_request_id() {
        assert!(PathTemplate::parse("v1/x").is_err());
        assert!(PathTemplate::parse("//evil.invalid/x").is_err());
        assert!(PathTemplate::parse("http://evil.invalid/x").is_err());
        let err = PathTemplate::parse("/x/{provider_request_id}").unwrap_err();
        assert!(err.contains("provider_request_id"), "{err}");
        assert!(
            PathTemplate::parse("/x/{nope}")
                .unwrap_err()
                .contains("unknown placeholder")
        );
    }
}
