//! Secret detection: finds credentials in text (bearer JWTs, Stripe, AWS, GitHub,
//! Slack and GCP keys, Basic auth, passwords in URLs and query strings, PEM private
//! keys, a secret of no known shape after a credential-like word — `password:
//! hunter2`, `invalid_api_key 9fQ…` — and the extra patterns of the config file) and replaces each with a
//! `‹redacted:KIND›` marker. Ingest redacts every text value of every record
//! before it is stored (the store keeps, per redacted value, the SHA-256 of the
//! original and a [`sample`] that reveals nothing secret), and redaction is applied
//! again on every way out (see docs/security.md), so a secret that a
//! provider echoed never reaches the store, a screen, an export or the log.
//!
//! Every pattern excludes the marker's `‹` from the values it matches, so redacting
//! redacted text changes nothing.

use std::borrow::Cow;
use std::sync::{LazyLock, OnceLock};

use regex::{Regex, RegexSet};
use serde::Deserialize;
use serde_json::Value;

use super::ids::Sha256;

/// The text a secret of `kind` is replaced with.
pub fn marker(kind: &str) -> String {
    format!("‹redacted:{kind}›")
}

/// One kind of secret: a pattern whose group `s` (or, without one, whole match)
/// is the secret, and an optional check that a candidate really is one.
struct Detector {
    kind: String,
    regex: Regex,
    confirm: Option<Confirm>,
}

/// A check that a candidate match really is a secret.
type Confirm = fn(&str) -> bool;

/// An extra pattern from the config file (`[[redact]]` with `kind` and `pattern`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtraPattern {
    /// Lowercase letters, digits and `_`; shown in the marker.
    pub kind: String,
    /// A regular expression (Rust `regex` syntax); when it has a group named `s`
    /// only that group is redacted.
    pub pattern: String,
}

/// A set of detectors, with one combined pass that says which of them can match.
pub struct Redactor {
    detectors: Vec<Detector>,
    any: RegexSet,
}

/// The built-in patterns, as (kind, pattern, confirmation).
const BUILTIN: &[(&str, &str, Option<Confirm>)] = &[
    (
        "private_key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?s:.*?)(?:-----END[A-Z0-9 ]*PRIVATE KEY-----|\z)",
        None,
    ),
    (
        "private_key_id",
        r#""private_key_id"\s*:\s*"(?P<s>[0-9a-f]{40})""#,
        None,
    ),
    (
        "jwt",
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        None,
    ),
    (
        "bearer",
        r"(?i)\bbearer\s+(?P<s>[A-Za-z0-9._~+/-]{12,}=*)",
        Some(has_digit),
    ),
    (
        "stripe_key",
        r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}",
        None,
    ),
    (
        "aws_secret_access_key",
        r#"(?i)(?:aws_?secret_?access_?key|secret_?access_?key|aws_?secret_?key|aws_?secret)["']?\s*[:=]\s*["']?(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|\z)"#,
        None,
    ),
    (
        "aws_secret_access_key",
        r#"(?:AKIA|ASIA)[A-Z0-9]{16}["']?[\s:/,;|=]{1,6}["']?(?P<s>[A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+=]|\z)"#,
        None,
    ),
    (
        "aws_access_key_id",
        r"\b(?:AKIA|ASIA|AIDA|AROA|AGPA|ANPA|ANVA|AIPA)[A-Z0-9]{16}\b",
        None,
    ),
    (
        "github_token",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}|\bgithub_pat_[A-Za-z0-9_]{22,}",
        None,
    ),
    ("slack_token", r"\bxox[abprse]-[A-Za-z0-9-]{10,}", None),
    ("gcp_api_key", r"\bAIza[0-9A-Za-z_-]{35}", None),
    (
        "basic_auth",
        r"(?i)\bbasic\s+(?P<s>[A-Za-z0-9+/]{6,}={0,2})",
        Some(is_basic_credential),
    ),
    (
        "url_password",
        r"(?i)\b[a-z][a-z0-9+.-]{0,20}://[^\s/?#@:‹]*:(?P<s>[^\s/?#@‹]+)@",
        None,
    ),
    (
        "query_secret",
        r#"(?i)(?:^|[?&;\s"'{,(])(?:password|passwd|pwd|pass|passphrase|token|access_token|refresh_token|id_token|auth_token|api_token|secret|client_secret|api_key|apikey|api-key|x-api-key|private_token|signature|sig|session_token|sessionid)=(?P<s>[^&\s#"'‹]+)"#,
        None,
    ),
    // A JSON field, also as JSON text inside a JSON string (`\"password\":\"…\"`,
    // as a tool's result echoing its arguments is kept): the value ends at its
    // closing quote, escaped or not; an escape inside it (`\n`) is part of it.
    (
        "secret_field",
        r#"(?i)\\*"(?:password|passwd|secret|client_secret|token|access_token|refresh_token|api_key|apikey)\\*"\s*:\s*\\*"(?P<s>(?:[^"\\‹]|\\+[^"\\‹])+)"#,
        None,
    ),
    // A password after its word and `:` or `=`, whatever its shape, unless it is a
    // plain word (`password: expired`, `secret=required`).
    (
        "password",
        r#"(?i)(?:password|passwd|passphrase|secret)["']?\s*[:=]\s*["']?(?P<s>[^\s"'‹,;&]{4,})"#,
        Some(is_not_plain_word),
    ),
    // A secret of no known shape after a credential-like word: a token-like run
    // of 16 or more characters (letters and digits mixed, or high entropy), so
    // that `invalid_api_key 9fQ…` is redacted and `token expired` is not. A bare
    // `key` must be a word of its own followed by `:` or `=` (`business key
    // order-…`, `"idempotency_key":"k-…"` are no credentials).
    (
        "credential",
        r#"(?i)(?:api[_-]?key|access[_-]?key|secret[_-]?key|private[_-]?key|[a-z]*[_-]?token|secret|credentials?|cookie|session(?:[_-]?id)?|bearer|auth|authorization)(?:["']?\s*[:=]\s*["']?|\s+)(?P<s>[A-Za-z0-9._~+/=-]{16,})"#,
        Some(is_token_like),
    ),
    (
        "credential",
        r#"(?i)\bkey\s*[:=]\s*["']?(?P<s>[A-Za-z0-9._~+/=-]{16,})"#,
        Some(is_token_like),
    ),
];

/// Whether a value after a password word is more than a plain word: it holds a
/// digit or a symbol, or a capital after its first letter (`hunter2`, `s3cr3t!`,
/// `OpenSesame`, not `expired` or `Required`).
fn is_not_plain_word(value: &str) -> bool {
    let mut chars = value.chars();
    let first_ok = chars.next().is_some_and(char::is_alphabetic);
    !(first_ok && chars.all(char::is_lowercase))
}

/// Whether a run after a credential word looks like a token rather than text:
/// letters and digits mixed, three or more capitals among small letters, or (20
/// characters or more) a high entropy per character, as random text has and
/// words do not.
fn is_token_like(run: &str) -> bool {
    let letters = run.bytes().filter(u8::is_ascii_alphabetic).count();
    let digits = run.bytes().filter(u8::is_ascii_digit).count();
    let upper = run.bytes().filter(u8::is_ascii_uppercase).count();
    let lower = run.bytes().filter(u8::is_ascii_lowercase).count();
    if (letters > 0 && digits > 0) || (upper >= 3 && lower > 0) {
        return true;
    }
    run.len() >= 20 && entropy(run) >= 3.8
}

/// The Shannon entropy of `text`, in bits per byte.
fn entropy(text: &str) -> f64 {
    let mut counts = [0u32; 256];
    for b in text.bytes() {
        counts[usize::from(b)] += 1;
    }
    let n = text.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

fn has_digit(token: &str) -> bool {
    token.bytes().any(|b| b.is_ascii_digit())
}

/// Whether `b64` decodes to printable `user:password` text.
fn is_basic_credential(b64: &str) -> bool {
    let digits: Vec<u8> = b64.bytes().filter(|&b| b != b'=').collect();
    let mut bits: u32 = 0;
    let mut count = 0;
    let mut decoded = Vec::with_capacity(digits.len() * 3 / 4);
    for b in digits {
        let value = match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return false,
        };
        bits = (bits << 6) | u32::from(value);
        count += 6;
        if count >= 8 {
            count -= 8;
            decoded.push(((bits >> count) & 0xff) as u8);
        }
    }
    decoded.contains(&b':') && decoded.iter().all(|b| (0x20..0x7f).contains(b))
}

/// Why an extra pattern is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatternError {
    #[error("redact kind {0:?}: use lowercase letters, digits and `_` only")]
    Kind(String),
    #[error("redact pattern for {kind}: {reason}")]
    Pattern { kind: String, reason: String },
}

impl Redactor {
    /// The built-in detectors only.
    pub fn builtin() -> Redactor {
        Redactor::of(
            BUILTIN
                .iter()
                .filter_map(|(kind, pattern, confirm)| {
                    Regex::new(pattern).ok().map(|regex| Detector {
                        kind: (*kind).to_owned(),
                        regex,
                        confirm: *confirm,
                    })
                })
                .collect(),
        )
    }

    fn of(detectors: Vec<Detector>) -> Redactor {
        // Should the combined set exceed the size limit, every detector runs.
        let any = RegexSet::new(detectors.iter().map(|d| d.regex.as_str()))
            .or_else(|_| RegexSet::new(detectors.iter().map(|_| "")))
            .unwrap_or_else(|_| RegexSet::empty());
        Redactor { detectors, any }
    }

    /// The built-in detectors and `extra`.
    pub fn with_extra(extra: &[ExtraPattern]) -> Result<Redactor, PatternError> {
        let mut detectors = Redactor::builtin().detectors;
        for p in extra {
            let kind_ok = !p.kind.is_empty()
                && p.kind
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            if !kind_ok {
                return Err(PatternError::Kind(p.kind.clone()));
            }
            let regex = Regex::new(&p.pattern).map_err(|e| PatternError::Pattern {
                kind: p.kind.clone(),
                reason: e.to_string(),
            })?;
            if regex.is_match("") || regex.is_match(&marker(&p.kind)) {
                return Err(PatternError::Pattern {
                    kind: p.kind.clone(),
                    reason: "matches empty text or its own marker".into(),
                });
            }
            detectors.push(Detector {
                kind: p.kind.clone(),
                regex,
                confirm: None,
            });
        }
        Ok(Redactor::of(detectors))
    }

    /// Whether [`Self::find`] could find a secret in `text`: `false` means it
    /// finds none (a value shorter than 8 bytes is never a secret), `true` that a
    /// pattern matches and the full search must be made.
    pub fn may_find(&self, text: &str) -> bool {
        text.len() >= 8 && self.any.is_match(text)
    }

    /// The secrets in `text`: byte ranges (sorted, not overlapping) and kinds.
    pub fn find(&self, text: &str) -> Vec<(std::ops::Range<usize>, &str)> {
        let mut found: Vec<(std::ops::Range<usize>, &str)> = Vec::new();
        // Almost every value holds no secret: one pass that may stop at the
        // first match rules that out before every pattern is asked which matched.
        if !self.any.is_match(text) {
            return found;
        }
        for d in self.any.matches(text).iter().map(|i| &self.detectors[i]) {
            for caps in d.regex.captures_iter(text) {
                let Some(m) = caps.name("s").or_else(|| caps.get(0)) else {
                    continue;
                };
                if m.is_empty() || d.confirm.is_some_and(|ok| !ok(m.as_str())) {
                    continue;
                }
                found.push((m.range(), d.kind.as_str()));
            }
        }
        found.sort_by_key(|(r, _)| (r.start, std::cmp::Reverse(r.end)));
        let mut merged: Vec<(std::ops::Range<usize>, &str)> = Vec::with_capacity(found.len());
        for (range, kind) in found {
            match merged.last_mut() {
                Some((last, _)) if range.start < last.end => last.end = last.end.max(range.end),
                _ => merged.push((range, kind)),
            }
        }
        merged
    }

    /// `text` with every secret replaced by its marker; borrowed when it has none.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if text.len() < 8 {
            return Cow::Borrowed(text);
        }
        let found = self.find(text);
        if found.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (range, kind) in found {
            out.push_str(&text[at..range.start]);
            out.push_str(&marker(kind));
            at = range.end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }
}

/// The public part a secret of a known format starts with: the type prefix a
/// provider puts on every token of that type (`sk_live_`, `ghp_`, `AKIA`, `xoxb-`,
/// `AIza`, a JWT's `eyJ`, a PEM block's `-----BEGIN … PRIVATE KEY-----`). It tells
/// what the secret is, never what it is.
static PUBLIC_PREFIX: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"^(?:(?:sk|rk)_(?:live|test)_|(?:ghp|gho|ghu|ghs|ghr)_|github_pat_|xox[abprse]-|(?:AKIA|ASIA|AIDA|AROA|AGPA|ANPA|ANVA|AIPA)|AIza|eyJ|-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----)",
    )
    .ok()
});

/// A protected sample of one secret of `kind`: the kind, the public prefix of its
/// format when it has one, and its length in characters, as
/// `stripe_key:sk_live_…(32 chars)` or `bearer:…(40 chars)`. Enough to tell which
/// credential a record held, nothing that helps to use it.
pub fn sample(kind: &str, secret: &str) -> String {
    let prefix = PUBLIC_PREFIX
        .as_ref()
        .and_then(|re| re.find(secret))
        .map_or("", |m| m.as_str());
    // A prefix that would be the whole secret says too much: keep none.
    let prefix = if prefix.len() < secret.len() {
        prefix
    } else {
        ""
    };
    format!("{kind}:{prefix}…({} chars)", secret.chars().count())
}

static INSTALLED: OnceLock<Redactor> = OnceLock::new();
static BUILTIN_ONLY: LazyLock<Redactor> = LazyLock::new(Redactor::builtin);

/// Makes the config file's extra patterns part of every redaction in this
/// process. Called once at start-up; a later call changes nothing.
pub fn install(extra: &[ExtraPattern]) -> Result<(), PatternError> {
    let redactor = Redactor::with_extra(extra)?;
    let _ = INSTALLED.set(redactor);
    Ok(())
}

/// The redactor in force: the installed one, else the built-in detectors.
pub fn active() -> &'static Redactor {
    INSTALLED.get().unwrap_or(&BUILTIN_ONLY)
}

/// `text` with every secret the active redactor finds replaced by its marker.
pub fn redact(text: &str) -> Cow<'_, str> {
    active().redact(text)
}

/// One string value of a JSON document that held a secret: where it was, which
/// kinds, and the SHA-256 of the value as stored, so that whoever holds the
/// original evidence can check it is the value this document describes.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Redaction {
    pub path: String,
    pub kinds: Vec<String>,
    pub original_sha256: Sha256,
}

/// Redacts every string value of `value` in place, returning what was redacted.
pub fn redact_value(value: &mut Value) -> Vec<Redaction> {
    redact_value_sampled(value)
        .into_iter()
        .map(|s| s.redaction)
        .collect()
}

/// One value [`redact_value_sampled`] redacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sampled {
    pub redaction: Redaction,
    /// The protected [`sample`]s of the value's secrets, joined by `; `.
    pub sample: String,
    /// The SHA-256 of the value as redacted.
    pub redacted_sha256: Sha256,
}

/// [`redact_value`], with the protected [`sample`]s of each value's secrets and
/// the hash of what the value became.
pub fn redact_value_sampled(value: &mut Value) -> Vec<Sampled> {
    let mut out = Vec::new();
    walk(value, &mut String::new(), &mut out);
    out
}

fn walk(value: &mut Value, path: &mut String, out: &mut Vec<Sampled>) {
    match value {
        Value::String(text) => {
            let redactor = active();
            if text.len() < 8 {
                return;
            }
            let found = redactor.find(text);
            if found.is_empty() {
                return;
            }
            let mut kinds: Vec<String> = found.iter().map(|(_, k)| (*k).to_owned()).collect();
            kinds.sort();
            kinds.dedup();
            let samples: Vec<String> = found
                .iter()
                .map(|(range, kind)| sample(kind, &text[range.clone()]))
                .collect();
            let original_sha256 = Sha256::of(text.as_bytes());
            *text = redactor.redact(text).into_owned();
            out.push(Sampled {
                redaction: Redaction {
                    path: path.clone(),
                    kinds,
                    original_sha256,
                },
                sample: samples.join("; "),
                redacted_sha256: Sha256::of(text.as_bytes()),
            });
        }
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                walk(item, path, out);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                walk(item, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

/// A value ingest redacted, as the store keeps it (the `redactions` table).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct IngestRedaction {
    /// The record's type and key (see the table's migration).
    pub record: String,
    pub record_key: String,
    /// The field path in the record.
    pub path: String,
    pub kinds: Vec<String>,
    /// The SHA-256 of the value as received.
    pub value_sha256: Sha256,
    /// The SHA-256 of the value as stored, with its markers.
    pub stored_sha256: Sha256,
    /// The protected sample of its secrets ([`sample`]).
    pub sample: String,
    /// The SHA-256 of the line it came from, when it came from a file.
    pub line_sha256: Option<Sha256>,
}

/// The string values of `value` (found at `path` in its document) that are values
/// ingest redacted, by the hash of their stored (marked) text: each as a
/// [`Redaction`] at its path, with the kinds and the hash of the value as
/// received, from `stored`. Should two stored values read the same once marked,
/// the one of the same field name is taken.
pub fn redacted_at_ingest(value: &Value, path: &str, stored: &[IngestRedaction]) -> Vec<Redaction> {
    let mut out = Vec::new();
    if !stored.is_empty() {
        find_marked(value, &mut path.to_owned(), stored, &mut out);
    }
    out
}

/// The last field name of a path (`attempts[0].error_type` → `error_type`).
fn field_of(path: &str) -> &str {
    let path = path.trim_end_matches(|c: char| c == ']' || c.is_ascii_digit() || c == '[');
    path.rsplit('.').next().unwrap_or(path)
}

fn find_marked(
    value: &Value,
    path: &mut String,
    stored: &[IngestRedaction],
    out: &mut Vec<Redaction>,
) {
    match value {
        Value::String(text) if text.contains("‹redacted:") => {
            let hash = Sha256::of(text.as_bytes());
            let same: Vec<&IngestRedaction> =
                stored.iter().filter(|r| r.stored_sha256 == hash).collect();
            let field = field_of(path);
            let found = same
                .iter()
                .find(|r| field_of(&r.path) == field)
                .or_else(|| same.first());
            if let Some(r) = found {
                out.push(Redaction {
                    path: path.clone(),
                    kinds: r.kinds.clone(),
                    original_sha256: r.value_sha256.clone(),
                });
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                find_marked(item, path, stored, out);
                path.truncate(len);
            }
        }
        Value::Object(map) => {
            for (key, item) in map {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                find_marked(item, path, stored, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
