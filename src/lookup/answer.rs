//! Reading a provider's answer: the status, the `Retry-After` header and the body
//! become either a compared answer or an error type. No I/O: the HTTP side hands
//! over what it received.

use chrono::{DateTime, Duration, Utc};

use crate::core::ids::Sha256;
use crate::core::lookup::{JsonPointer, LookupAnswer, LookupSpec};
use crate::core::model::{Matches, Operation, Outcome};
use crate::wire::tree::{self, Node};

use super::NotFoundBody;

/// What a response came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reading {
    /// The provider answered the question.
    Answer(LookupAnswer),
    /// No usable answer: the outcome and error type of the attempt.
    Bad {
        outcome: Outcome,
        error_type: String,
        /// What exactly was wrong, for the excerpt.
        detail: String,
    },
}

/// What arrived, as the HTTP side saw it.
pub struct Response<'a> {
    pub status: u16,
    pub content_type: Option<&'a str>,
    pub location: Option<&'a str>,
    pub body: &'a [u8],
}

fn bad(outcome: Outcome, error_type: &str, detail: impl Into<String>) -> Reading {
    Reading::Bad {
        outcome,
        error_type: error_type.to_owned(),
        detail: detail.into(),
    }
}

/// Reads a whole response to a lookup for `op` made after `spec`; `not_found` is
/// the binding's description of the provider's own not-found body.
///
/// A not-found status is an answer (non-application, once the lag window has
/// passed) only when the body is recognizably the provider's: the binding's
/// not-found body, or else strict JSON of the lookup's declared shape (its
/// `effect_count` pointer reading 0). An HTML page, an empty body, another
/// JSON shape or a redirect is `unclear_not_found`: an attempt that proves
/// nothing — a router's error page or a wrong path says nothing about the record.
pub fn read(
    spec: &LookupSpec,
    op: &Operation,
    not_found: Option<&NotFoundBody>,
    response: &Response<'_>,
) -> Reading {
    let raw_hash = Sha256::of(response.body);
    if spec.is_not_found(response.status) && !(300..=399).contains(&response.status) {
        return match recognized_not_found(spec, not_found, response) {
            Ok(()) => Reading::Answer(self::not_found(raw_hash)),
            Err(why) => bad(
                Outcome::HttpError,
                "unclear_not_found",
                format!(
                    "HTTP {} with {why}: not recognizably the provider's not-found, proves nothing",
                    response.status
                ),
            ),
        };
    }
    match response.status {
        300..=399 => {
            return bad(
                Outcome::HttpError,
                "redirect_not_followed",
                format!(
                    "HTTP {} to {}: redirects are not followed",
                    response.status,
                    response.location.unwrap_or("(no Location)")
                ),
            );
        }
        200..=299 => {}
        status => {
            return bad(
                Outcome::HttpError,
                &format!("http_{status}"),
                format!("HTTP {status}"),
            );
        }
    }
    let Ok(text) = std::str::from_utf8(response.body) else {
        return bad(
            Outcome::InvalidResponse,
            "invalid_json",
            "the body is not UTF-8 text",
        );
    };
    let root = match tree::parse(text) {
        Ok(root) => root,
        Err(e) => {
            let html = response
                .content_type
                .is_some_and(|c| c.to_ascii_lowercase().contains("html"))
                || text.trim_start().starts_with('<');
            return if html {
                bad(
                    Outcome::InvalidResponse,
                    "html_error_page",
                    format!("HTTP {} with an HTML page, not JSON", response.status),
                )
            } else {
                bad(
                    Outcome::InvalidResponse,
                    "invalid_json",
                    format!("the body is not strict JSON: {e:?}"),
                )
            };
        }
    };
    compare(spec, op, &root, raw_hash)
}

/// Whether a not-found response is the provider's own; the error says what the
/// body is instead.
fn recognized_not_found(
    spec: &LookupSpec,
    rule: Option<&NotFoundBody>,
    response: &Response<'_>,
) -> Result<(), String> {
    let text = std::str::from_utf8(response.body)
        .map_err(|_| "a body that is not UTF-8 text".to_owned())?;
    if text.trim().is_empty() {
        return Err("an empty body".into());
    }
    let root = tree::parse(text).map_err(|_| {
        let html = response
            .content_type
            .is_some_and(|c| c.to_ascii_lowercase().contains("html"))
            || text.trim_start().starts_with('<');
        if html {
            "an HTML page".to_owned()
        } else {
            "a body that is not strict JSON".to_owned()
        }
    })?;
    if let Some(rule) = rule {
        let pointer = JsonPointer::parse(&rule.pointer)
            .map_err(|e| format!("a body the binding's not-found pointer cannot read ({e})"))?;
        return match resolve(&root, &pointer).and_then(scalar) {
            Some(v) if v == rule.equals => Ok(()),
            _ => Err(format!(
                "a JSON body without the provider's not-found mark ({} = {:?})",
                rule.pointer, rule.equals
            )),
        };
    }
    match spec
        .fields
        .effect_count
        .as_ref()
        .and_then(|p| resolve(&root, p))
    {
        Some(Node::UInt(0)) => Ok(()),
        _ => Err(format!(
            "a JSON body not of the lookup's declared shape ({}), and the binding names no not-found body",
            spec.fields.effect_count.as_ref().map_or_else(
                || "no effect_count pointer to read 0 at".to_owned(),
                |p| format!("effect_count at {} is not 0", p.as_str())
            )
        )),
    }
}

fn not_found(raw_hash: Sha256) -> LookupAnswer {
    LookupAnswer {
        found: false,
        matches: Matches::default(),
        effect_count: None,
        provider_request_id: None,
        version: None,
        raw_hash,
    }
}

/// Follows a JSON Pointer into the tree.
fn resolve<'t, 'a>(root: &'t Node<'a>, pointer: &JsonPointer) -> Option<&'t Node<'a>> {
    let mut node = root;
    for token in pointer.tokens() {
        node = match node {
            Node::Object(entries) => entries.iter().find(|(k, _)| *k == token).map(|(_, v)| v)?,
            Node::Array(items) => {
                let leading_zero = token.len() > 1 && token.starts_with('0');
                if leading_zero {
                    return None;
                }
                items.get(token.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(node)
}

/// A field's value as text: strings as they are, integers in decimal.
fn scalar(node: &Node<'_>) -> Option<String> {
    match node {
        Node::Str(s) => Some(s.to_string()),
        Node::UInt(n) => Some(n.to_string()),
        Node::Int(n) => Some(n.to_string()),
        _ => None,
    }
}

fn compare(spec: &LookupSpec, op: &Operation, root: &Node<'_>, raw_hash: Sha256) -> Reading {
    let f = &spec.fields;
    let effect_count = match &f.effect_count {
        None => None,
        Some(p) => match resolve(root, p) {
            Some(Node::UInt(n)) => match u32::try_from(*n) {
                Ok(n) => Some(n),
                Err(_) => {
                    return bad(
                        Outcome::InvalidResponse,
                        "invalid_field",
                        "effect_count is too large",
                    );
                }
            },
            Some(other) => {
                return bad(
                    Outcome::InvalidResponse,
                    "invalid_field",
                    format!(
                        "effect_count at {} is {}, not a count",
                        p.as_str(),
                        other.kind()
                    ),
                );
            }
            None => return pointer_missing("effect_count", p),
        },
    };
    if effect_count == Some(0) {
        return Reading::Answer(LookupAnswer {
            effect_count,
            ..not_found(raw_hash)
        });
    }
    let mut values: [Option<String>; 5] = Default::default();
    let named = [
        ("target", &f.target),
        ("payload_hash", &f.payload_hash),
        ("tenant", &f.tenant),
        ("version", &f.version),
        ("provider_request_id", &f.provider_request_id),
    ];
    for (slot, (name, pointer)) in values.iter_mut().zip(named) {
        let Some(pointer) = pointer else { continue };
        match resolve(root, pointer) {
            None => return pointer_missing(name, pointer),
            Some(node) => match scalar(node) {
                Some(text) => *slot = Some(text),
                None => {
                    return bad(
                        Outcome::InvalidResponse,
                        "invalid_field",
                        format!(
                            "{name} at {} is {}, not a string",
                            pointer.as_str(),
                            node.kind()
                        ),
                    );
                }
            },
        }
    }
    let [target, payload_hash, tenant, version, provider_request_id] = values;
    Reading::Answer(LookupAnswer {
        found: true,
        matches: Matches {
            target: target.map(|t| t == op.target),
            payload_hash: payload_hash.map(|p| p == op.payload_hash.as_str()),
            owner: tenant.map(|t| t == op.tenant),
            version: None,
        },
        effect_count,
        provider_request_id,
        version,
        raw_hash,
    })
}

fn pointer_missing(name: &str, pointer: &JsonPointer) -> Reading {
    bad(
        Outcome::InvalidResponse,
        "pointer_not_found",
        format!("{name}: {} points nowhere in the body", pointer.as_str()),
    )
}

/// The instant a `Retry-After` value asks to wait until: delay seconds or an
/// HTTP-date still to come; `None` for anything else, a date in the past (or
/// now) included — such a header asks nothing, and the backoff decides.
pub fn retry_after(value: &str, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        let seconds = value.parse::<i64>().ok()?.min(i64::from(u32::MAX));
        return Some(now + Duration::seconds(seconds));
    }
    DateTime::parse_from_rfc2822(value)
        .ok()
        .map(|t| t.with_timezone(&Utc))
        .filter(|t| *t > now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{Record, parse_line};

    const HASH: &str = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

    fn spec() -> LookupSpec {
        let line = r#"{"type":"contract","tool":"T","version":"1","action":"a","method":"POST","idempotency":{"supported":true},"status_lookup":{"method":"GET","url":"http://x/r?k={business_key}","fields":{"target":"/record/target","payload_hash":"/record/payload_hash","tenant":"/record/tenant","effect_count":"/count","provider_request_id":"/record/ids/0"}},"owner":"o","max_attempts":1,"budget_seconds":60}"#.to_owned();
        let Ok(Record::Contract(c)) = parse_line(line.as_bytes(), 1) else {
            panic!("bad contract")
        };
        c.status_lookup.spec().unwrap().clone()
    }

    fn op() -> Operation {
        let line = format!(
            r#"{{"type":"operation","id":"F1","tenant":"pinehaven","actor":"a","tool":"T","action":"a","target":"q:7","payload_hash":"{HASH}","risk":"low","owner":"o","state":"UNKNOWN","business_key":"b-1","created_at":"2026-09-05T10:00:00Z"}}"#
        );
        let Ok(Record::Operation(o)) = parse_line(line.as_bytes(), 1) else {
            panic!("bad operation")
        };
        o
    }

    fn json(status: u16, body: &str) -> Reading {
        read(
            &spec(),
            &op(),
            None,
            &Response {
                status,
                content_type: Some("application/json"),
                location: None,
                body: body.as_bytes(),
            },
        )
    }

    fn error_type(r: &Reading) -> &str {
        match r {
            Reading::Bad { error_type, .. } => error_type,
            Reading::Answer(a) => panic!("expected an error, got {a:?}"),
        }
    }

    #[test]
    fn a_record_is_compared_field_by_field() {
        let body = format!(
            r#"{{"record":{{"target":"q:7","payload_hash":"{HASH}","tenant":"harbor","ids":["req-9"]}},"count":1}}"#
        );
        let Reading::Answer(a) = json(200, &body) else {
            panic!("no answer")
        };
        assert!(a.found);
        assert_eq!(a.matches.target, Some(true));
        assert_eq!(a.matches.payload_hash, Some(true));
        assert_eq!(a.matches.owner, Some(false));
        assert_eq!(a.effect_count, Some(1));
        assert_eq!(a.provider_request_id.as_deref(), Some("req-9"));
        assert_eq!(a.raw_hash, Sha256::of(body.as_bytes()));
    }

    fn with_rule(status: u16, content_type: &str, body: &str) -> Reading {
        let rule = NotFoundBody {
            pointer: "/error/code".into(),
            equals: "resource_missing".into(),
        };
        read(
            &spec(),
            &op(),
            Some(&rule),
            &Response {
                status,
                content_type: Some(content_type),
                location: None,
                body: body.as_bytes(),
            },
        )
    }

    #[test]
    fn only_a_recognizable_not_found_is_an_answer() {
        let Reading::Answer(a) = with_rule(
            404,
            "application/json",
            r#"{"error":{"code":"resource_missing"}}"#,
        ) else {
            panic!("the binding's not-found body is an answer")
        };
        assert!(!a.found);
        let Reading::Answer(a) = json(404, r#"{"count":0}"#) else {
            panic!("a 404 of the declared shape is an answer")
        };
        assert!(!a.found);
        for (ct, body) in [
            ("text/html", "<html><h1>404 Not Found</h1></html>"),
            ("application/json", ""),
            ("application/json", r#"{"error":{"code":"route_missing"}}"#),
            ("application/json", r#"{"message":"no route"}"#),
            ("text/plain", "no such record"),
        ] {
            assert_eq!(
                error_type(&with_rule(404, ct, body)),
                "unclear_not_found",
                "{body}"
            );
            assert_eq!(error_type(&json(404, body)), "unclear_not_found", "{body}");
        }
    }

    #[test]
    fn not_found_statuses_and_a_zero_count_are_answers() {
        let Reading::Answer(a) = json(404, r#"{"count":0}"#) else {
            panic!("no answer")
        };
        assert!(!a.found);
        let Reading::Answer(a) = json(200, r#"{"count":0}"#) else {
            panic!("no answer")
        };
        assert!(!a.found);
        assert_eq!(a.effect_count, Some(0));
    }

    #[test]
    fn bad_answers_have_error_types() {
        assert_eq!(error_type(&json(200, "{not json")), "invalid_json");
        assert_eq!(error_type(&json(200, r#"{"a":1,"a":2}"#)), "invalid_json");
        assert_eq!(
            error_type(&json(200, "<html>oops</html>")),
            "html_error_page"
        );
        assert_eq!(
            error_type(&json(200, r#"{"count":1}"#)),
            "pointer_not_found"
        );
        assert_eq!(
            error_type(&json(200, r#"{"count":"one"}"#)),
            "invalid_field"
        );
        assert_eq!(error_type(&json(503, "")), "http_503");
        assert_eq!(error_type(&json(302, "")), "redirect_not_followed");
    }

    #[test]
    fn retry_after_takes_seconds_or_an_http_date() {
        let now = crate::core::clock::parse_instant("2026-09-05T10:00:00Z").unwrap();
        assert_eq!(retry_after("120", now), Some(now + Duration::seconds(120)));
        assert_eq!(
            retry_after("Sat, 05 Sep 2026 10:30:00 GMT", now),
            crate::core::clock::parse_instant("2026-09-05T10:30:00Z").ok()
        );
        assert_eq!(retry_after("soon", now), None);
        assert_eq!(retry_after("Sat, 05 Sep 2026 09:59:59 GMT", now), None);
        assert_eq!(retry_after("Thu, 01 Jan 1970 00:00:00 GMT", now), None);
        assert_eq!(retry_after("-5", now), None);
    }
}
