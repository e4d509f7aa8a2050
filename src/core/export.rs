//! Evidence export for incident tickets and disputes: the evidence bundle of each
//! hold with its attempts, items, observations and audit rows, addressed by a
//! content hash — SHA-256 over the canonical JSON of the document without its own
//! `content_hash` field (object keys sorted, no insignificant whitespace).
//!
//! Nothing secret goes in: the store holds payloads only as hashes, and untrusted
//! tool output only as its quarantined excerpt, which is exported sanitized (G10),
//! like every note. Every string value is exported with its secrets redacted
//! ([`super::redact`]), hashes are computed over the redacted document, and each
//! redacted value is listed in `redactions` with the SHA-256 of the original value
//! (for a value redacted at ingest, the hash the store kept of it as received), so
//! the evidence stays checkable against the original.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use std::fmt::Write as _;

use super::audit::AuditRow;
use super::bundle::{self, Key};
use super::clock::human_instant;
use super::detail::OperationDetail;
use super::evidence::{self, EvidenceBundle};
use super::ids::Sha256;
use super::model::{Attempt, Item, Observation};
use super::redact::{Redaction, redact_value, redacted_at_ingest};
use super::rules::actor::Actor;
use super::sanitize::{neutralize, sanitize};

/// The format name written into every export.
pub const FORMAT: &str = "holdfast-evidence-v1";

/// The name of the field that holds a document's own hash.
pub const HASH_FIELD: &str = "content_hash";

/// One hold's evidence, with everything behind the bundle.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BundleExport {
    pub bundle: EvidenceBundle,
    /// Requests and status queries in `seq` order; excerpts sanitized.
    pub attempts: Vec<Attempt>,
    pub items: Vec<Item>,
    /// In `observed_at` order; notes sanitized.
    pub observations: Vec<Observation>,
    /// The operation's audit rows (ingest, transitions, reviewer actions) in `seq`
    /// order, each with its chain hash.
    pub transitions: Vec<AuditRow>,
    /// The hash of this bundle's canonical JSON without this field.
    pub content_hash: Sha256,
}

/// An export of one or more holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Export {
    pub format: String,
    /// The instant the bundles describe (budgets, expiries and allowed actions are
    /// as of then).
    pub as_of: DateTime<Utc>,
    pub exported_by: String,
    pub bundles: Vec<BundleExport>,
    /// Every string value that held a secret: its path in this document, the kinds
    /// found, and the SHA-256 of the value as stored.
    pub redactions: Vec<Redaction>,
    /// The hash of the whole document's canonical JSON without this field.
    pub content_hash: Sha256,
}

/// `value` as canonical JSON: object keys sorted, no whitespace.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (n, key) in keys.into_iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                if let Some(v) = map.get(key) {
                    write_canonical(v, out);
                }
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (n, item) in items.iter().enumerate() {
                if n > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// The content hash of a document: its canonical JSON without [`HASH_FIELD`].
/// Recomputing it over an exported file checks that nothing was changed.
pub fn content_hash(document: &Value) -> Sha256 {
    let mut value = document.clone();
    if let Value::Object(map) = &mut value {
        map.remove(HASH_FIELD);
    }
    Sha256::of(canonical_json(&value).as_bytes())
}

/// A serializable document as JSON with its secrets redacted, and what was.
fn redacted<T: Serialize>(document: &T) -> (Value, Vec<Redaction>) {
    let mut value = match serde_json::to_value(document) {
        Ok(value) => value,
        Err(e) => unreachable!("export documents always serialize: {e}"),
    };
    let found = redact_value(&mut value);
    (value, found)
}

/// Hashes a serializable document, as exported (redacted), whose hash field is
/// still a placeholder.
fn hash_of<T: Serialize>(document: &T) -> Sha256 {
    content_hash(&redacted(document).0)
}

/// Untrusted text with its controls made visible; its secrets are redacted with
/// the whole document.
fn clean(text: &str) -> String {
    neutralize(text).into_owned()
}

/// A hold's evidence as stored, before it is neutralized and hashed.
fn stored_bundle(detail: &OperationDetail, actor: &Actor, now: DateTime<Utc>) -> BundleExport {
    BundleExport {
        bundle: evidence::bundle(detail, actor, now),
        attempts: detail.attempts.clone(),
        items: detail.items.clone(),
        observations: detail.observations.clone(),
        transitions: detail.audit.clone(),
        content_hash: super::audit::genesis(),
    }
}

/// Neutralizes a bundle's untrusted text and hashes it as exported.
fn seal(mut export: BundleExport) -> BundleExport {
    for o in &mut export.bundle.observations {
        o.note = o.note.as_deref().map(clean);
    }
    for a in &mut export.attempts {
        a.response_excerpt = a.response_excerpt.as_deref().map(clean);
        a.url = a.url.as_deref().map(clean);
    }
    for o in &mut export.observations {
        o.note = o.note.as_deref().map(clean);
    }
    export.content_hash = hash_of(&export);
    export
}

/// One hold's export, as `actor` sees it at `now`.
pub fn bundle_export(detail: &OperationDetail, actor: &Actor, now: DateTime<Utc>) -> BundleExport {
    seal(stored_bundle(detail, actor, now))
}

/// The export of `details` by `actor` at `now`, each bundle and the whole hashed;
/// `redactions` hash the values as stored.
pub fn build(details: &[OperationDetail], actor: &Actor, now: DateTime<Utc>) -> Export {
    let mut stream = Stream::new(actor, now);
    let bundles: Vec<BundleExport> = details.iter().map(|d| stream.push(d).0).collect();
    let mut export = stream.finish();
    export.bundles = bundles;
    export
}

/// An export made one bundle at a time, for a selection too large to hold: each
/// bundle is sealed and handed back as it is added, and the document's hash is
/// taken over the same canonical JSON as [`content_hash`], fed bundle by bundle.
/// Only the redactions (a path and a hash each) are kept until the end, where they
/// are sorted by path as in a document built whole.
pub struct Stream<'a> {
    actor: &'a Actor,
    now: DateTime<Utc>,
    hasher: sha2::Sha256,
    redactions: Vec<Redaction>,
    bundles: usize,
}

/// The key the canonical JSON of a skeleton (a document with no bundles) is split
/// at: keys are sorted and strings escape their quotes, so it occurs once.
const EMPTY_BUNDLES: &str = "\"bundles\":[]";

impl<'a> Stream<'a> {
    pub fn new(actor: &'a Actor, now: DateTime<Utc>) -> Self {
        use sha2::Digest;
        let mut stream = Stream {
            actor,
            now,
            hasher: sha2::Sha256::new(),
            redactions: Vec::new(),
            bundles: 0,
        };
        let (head, _) = stream.skeleton_split();
        stream.hasher.update(head.as_bytes());
        stream.hasher.update(b"[");
        stream
    }

    /// The document without bundles, its redactions as found so far.
    fn skeleton(&self) -> Export {
        Export {
            format: FORMAT.to_owned(),
            as_of: self.now,
            exported_by: self.actor.identity.clone(),
            bundles: Vec::new(),
            redactions: self.redactions.clone(),
            content_hash: super::audit::genesis(),
        }
    }

    /// The skeleton's canonical JSON (without its hash) before and after the
    /// bundles' `[]`.
    fn skeleton_split(&self) -> (String, String) {
        let mut value = redacted(&self.skeleton()).0;
        if let Value::Object(map) = &mut value {
            map.remove(HASH_FIELD);
        }
        let text = canonical_json(&value);
        match text.find(EMPTY_BUNDLES) {
            Some(at) => {
                let split = at + EMPTY_BUNDLES.len() - 2;
                (text[..split].to_owned(), text[split + 2..].to_owned())
            }
            None => unreachable!("an export document always has its bundles"),
        }
    }

    /// Adds one hold: its sealed bundle, and that bundle as exported (redacted).
    pub fn push(&mut self, detail: &OperationDetail) -> (BundleExport, Value) {
        use sha2::Digest;
        let at = format!("bundles[{}]", self.bundles);
        let (stored, found) = redacted(&stored_bundle(detail, self.actor, self.now));
        self.redactions.extend(found.into_iter().map(|mut r| {
            r.path = format!("{at}.{}", r.path);
            r
        }));
        self.redactions
            .extend(redacted_at_ingest(&stored, &at, &detail.redactions));
        let sealed = seal(stored_bundle(detail, self.actor, self.now));
        let (exported, _) = redacted(&sealed);
        if self.bundles > 0 {
            self.hasher.update(b",");
        }
        self.hasher.update(canonical_json(&exported).as_bytes());
        self.bundles += 1;
        (sealed, exported)
    }

    /// How many bundles were added.
    pub fn len(&self) -> usize {
        self.bundles
    }

    /// Whether no bundle was added.
    pub fn is_empty(&self) -> bool {
        self.bundles == 0
    }

    /// The document without its bundles: the redactions of every bundle added,
    /// sorted by path, and the hash of the whole.
    pub fn finish(mut self) -> Export {
        use sha2::Digest;
        // The top-level fields' own redactions come first, as a walk of the whole
        // document finds them; the sort by path keeps that order among equals.
        let found = std::mem::take(&mut self.redactions);
        self.redactions = redacted(&self.skeleton()).1;
        self.redactions.extend(found);
        self.redactions.sort_by(|a, b| a.path.cmp(&b.path));
        let (_, tail) = self.skeleton_split();
        self.hasher.update(b"]");
        self.hasher.update(tail.as_bytes());
        let digest = self.hasher.finalize_reset();
        let mut export = self.skeleton();
        export.content_hash = Sha256::from_digest(&digest);
        export
    }
}

/// Text for a Markdown cell or line: sanitized, on one line, with the characters
/// Markdown or HTML would interpret escaped.
fn md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in sanitize(text).chars() {
        match c {
            '\\' | '|' | '*' | '_' | '`' | '[' | ']' | '#' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            _ => out.push(c),
        }
    }
    out
}

fn opt_md(text: Option<&str>) -> String {
    text.map_or_else(|| "-".to_owned(), md)
}

fn when(at: Option<DateTime<Utc>>) -> String {
    at.map_or_else(|| "-".to_owned(), human_instant)
}

fn table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    let _ = writeln!(out, "| {} |", header.join(" | "));
    let _ = writeln!(out, "|{}", "---|".repeat(header.len()));
    for row in rows {
        let _ = writeln!(out, "| {} |", row.join(" | "));
    }
    let _ = writeln!(out);
}

/// The export as Markdown, for pasting into a ticket. Every value from outside is
/// sanitized and escaped.
pub fn markdown(export: &Export) -> String {
    let mut out = markdown_head(export, export.bundles.len());
    for b in &export.bundles {
        bundle_markdown(&mut out, b);
    }
    out
}

/// The Markdown before the first bundle of an export of `bundles` bundles.
pub fn markdown_head(export: &Export, bundles: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Evidence export ({})\n", export.format);
    let _ = writeln!(
        out,
        "As of {}, exported by {}, {} bundle{}.\n",
        human_instant(export.as_of),
        md(&export.exported_by),
        bundles,
        if bundles == 1 { "" } else { "s" }
    );
    let _ = writeln!(out, "Content hash: `{}`\n", export.content_hash);
    out
}

/// One bundle's Markdown section.
pub fn markdown_bundle(bundle: &BundleExport) -> String {
    let mut out = String::new();
    bundle_markdown(&mut out, bundle);
    out
}

/// An export's pretty JSON (redacted, safe for a terminal), as written whole.
pub fn json(export: &Export) -> String {
    pretty(&redacted(export).0)
}

fn pretty(value: &Value) -> String {
    let text = match serde_json::to_string_pretty(value) {
        Ok(text) => text,
        Err(e) => unreachable!("a JSON value always prints: {e}"),
    };
    super::sanitize::json_for_terminal(&text).into_owned()
}

/// The pretty JSON of an export with no bundles, split where its bundles go:
/// what to write before the first bundle and what after the last. With the
/// [`json_bundle`]s in between it is [`json`] of the whole, byte for byte.
pub fn json_around_bundles(skeleton: &Export) -> (String, String) {
    let text = json(skeleton);
    let key = "\"bundles\": []";
    match text.find(key) {
        Some(at) => {
            let split = at + key.len() - 1;
            (text[..split].to_owned(), text[split + 1..].to_owned())
        }
        None => unreachable!("an export document always has its bundles"),
    }
}

/// One bundle as exported ([`Stream::push`]'s value) for the JSON document: its
/// separator from the one before, on its own lines at the array's indent.
pub fn json_bundle(exported: &Value, first: bool) -> String {
    let mut out = String::from(if first { "\n" } else { ",\n" });
    for (n, line) in pretty(exported).lines().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        out.push_str("    ");
        out.push_str(line);
    }
    out
}

/// What closes the bundles' array when `bundles` were written.
pub fn json_after_bundles(bundles: usize) -> &'static str {
    if bundles == 0 { "]" } else { "\n  ]" }
}

fn bundle_markdown(out: &mut String, export: &BundleExport) {
    let b = &export.bundle;
    let doc = bundle::document(b);
    let _ = writeln!(out, "## {} — {}\n", md(b.id.as_str()), b.state);
    let _ = writeln!(out, "Bundle hash: `{}`\n", export.content_hash);
    let mut rows: Vec<Vec<String>> = Vec::new();
    let fields = doc
        .section(bundle::SectionKey::Fields)
        .map_or(&[][..], |s| &s.rows);
    for row in fields {
        let text = |name: &str| row.text(name);
        let escaped = |name: &str| opt_md(row.text(name).as_deref());
        let or_dash = |name: &str| text(name).unwrap_or_else(|| "-".into());
        let value = match row.key {
            Key::Operation => Some((
                "state".to_owned(),
                format!(
                    "{} (version {}) since {}",
                    or_dash("state"),
                    or_dash("version"),
                    doc.row(Key::StateSince)
                        .and_then(|r| r.text("since"))
                        .unwrap_or_else(|| "-".into())
                ),
            )),
            Key::StateSince | Key::Evidence => None,
            Key::WhyHeld => Some((
                row.label.clone(),
                opt_md(bundle::why_summary(&doc).as_deref()),
            )),
            Key::TenantActor => Some((
                row.label.clone(),
                format!("{} / {}", escaped("tenant"), escaped("actor")),
            )),
            Key::ToolAction => Some((
                row.label.clone(),
                format!("{} / {}", escaped("tool"), escaped("action")),
            )),
            Key::Approval if row.is_empty() => Some((row.label.clone(), "none recorded".into())),
            Key::Approval => Some((
                row.label.clone(),
                format!(
                    "{} under {} at {}, binds {}, expires {} ({})",
                    escaped("by"),
                    escaped("policy"),
                    or_dash("at"),
                    or_dash("binds"),
                    or_dash("expires"),
                    escaped("status")
                ),
            )),
            Key::IdempotencyKey if row.is_empty() => Some((row.label.clone(), "-".into())),
            Key::IdempotencyKey => {
                let conflicts: Vec<String> = row.all("conflict").iter().map(|i| md(i)).collect();
                Some((
                    row.label.clone(),
                    format!(
                        "{} (scope {}, retention {}, protects until {}{}){}",
                        escaped("key"),
                        escaped("scope"),
                        or_dash("retention"),
                        or_dash("until"),
                        if text("expired").is_some() {
                            ", expired"
                        } else {
                            ""
                        },
                        if conflicts.is_empty() {
                            String::new()
                        } else {
                            format!("; same key, other payload: {}", conflicts.join(", "))
                        }
                    ),
                ))
            }
            Key::LastVerified => Some((
                row.label.clone(),
                match text("what") {
                    None => "never observed".into(),
                    Some(what) => format!("{} at {}", md(&what), or_dash("at")),
                },
            )),
            Key::Attempts => Some((row.label.clone(), md(&bundle::attempts_summary(row)))),
            Key::Deadline => Some((row.label.clone(), or_dash("at"))),
            Key::NextObservation => Some((
                row.label.clone(),
                format!(
                    "{}{}",
                    or_dash("at"),
                    if text("overdue").is_some() {
                        " (overdue)"
                    } else {
                        ""
                    }
                ),
            )),
            Key::Recommendation => Some((
                row.label.clone(),
                format!("{} — {}", or_dash("decision"), escaped("reason")),
            )),
            Key::Parent => Some((
                row.label.clone(),
                format!("{} ({})", escaped("id"), or_dash("relation")),
            )),
            Key::Child => Some((
                row.label.clone(),
                format!(
                    "{} ({}, {})",
                    escaped("id"),
                    or_dash("relation"),
                    or_dash("state")
                ),
            )),
            Key::HeldBy => Some((
                row.label.clone(),
                format!("{} ({})", escaped("id"), or_dash("state")),
            )),
            _ => Some((row.label.clone(), row.plain(md))),
        };
        if let Some((label, value)) = value {
            rows.push(vec![label, value]);
        }
    }
    table(out, &["field", "value"], &rows);

    // The observations are the export's own table below, with their raw hashes.
    for section in doc.sections.iter().filter(|s| {
        !matches!(
            s.key,
            bundle::SectionKey::Fields | bundle::SectionKey::Observations
        )
    }) {
        let _ = writeln!(out, "### {}\n", bundle::capitalized(section.title));
        for row in &section.rows {
            let escaped = |name: &str| opt_md(row.text(name).as_deref());
            let _ = match row.key {
                Key::Prohibited => writeln!(out, "- {}", escaped("what")),
                Key::Allowed => {
                    writeln!(out, "- allowed: {} — {}", md(&row.label), escaped("effect"))
                }
                Key::Refused => writeln!(
                    out,
                    "- refused: {} — {} {}",
                    md(&row.label),
                    row.text("rule").unwrap_or_else(|| "-".into()),
                    escaped("reason")
                ),
                _ => writeln!(out, "- {}: {}", md(&row.label), row.plain(md)),
            };
        }
        let _ = writeln!(out);
    }

    let _ = writeln!(out, "### Attempts\n");
    let rows: Vec<Vec<String>> = export
        .attempts
        .iter()
        .map(|a| {
            vec![
                a.seq.to_string(),
                md(&a.id),
                a.kind.to_string(),
                a.layer.map_or("-", |l| l.as_str()).to_owned(),
                human_instant(a.started_at),
                when(a.ended_at),
                a.phase.to_string(),
                a.outcome.to_string(),
                opt_md(a.provider_request_id.as_deref()),
                a.request_hash
                    .as_ref()
                    .map_or_else(|| "-".into(), ToString::to_string),
                a.response_hash
                    .as_ref()
                    .map_or_else(|| "-".into(), ToString::to_string),
                opt_md(a.response_excerpt.as_deref()),
            ]
        })
        .collect();
    table(
        out,
        &[
            "#",
            "id",
            "kind",
            "layer",
            "started",
            "ended",
            "phase",
            "outcome",
            "provider id",
            "request hash",
            "response hash",
            "quarantined excerpt",
        ],
        &rows,
    );
    let urls: Vec<(&str, &str)> = export
        .attempts
        .iter()
        .filter_map(|a| Some((a.id.as_str(), a.url.as_deref()?)))
        .collect();
    if !urls.is_empty() {
        let _ = writeln!(out, "Attempt URLs (userinfo and query values redacted):\n");
        for (id, url) in urls {
            let _ = writeln!(out, "- {}: {}", md(id), md(url));
        }
        let _ = writeln!(out);
    }

    if !export.items.is_empty() {
        let _ = writeln!(out, "### Items\n");
        let rows: Vec<Vec<String>> = export
            .items
            .iter()
            .map(|i| {
                vec![
                    i.index.to_string(),
                    opt_md(i.label.as_deref()),
                    i.state.to_string(),
                    opt_md(i.authoritative_id.as_deref()),
                ]
            })
            .collect();
        table(out, &["index", "label", "state", "authoritative id"], &rows);
    }

    let _ = writeln!(out, "### Observations\n");
    let rows: Vec<Vec<String>> = export
        .observations
        .iter()
        .map(|o| {
            vec![
                md(&o.id),
                human_instant(o.observed_at),
                md(&evidence::describe_observation(o)),
                o.raw_hash
                    .as_ref()
                    .map_or_else(|| "-".into(), ToString::to_string),
                opt_md(o.note.as_deref()),
            ]
        })
        .collect();
    table(
        out,
        &["id", "observed", "what it showed", "raw hash", "note"],
        &rows,
    );

    let _ = writeln!(out, "### Transitions and reviewer actions\n");
    let rows: Vec<Vec<String>> = export
        .transitions
        .iter()
        .map(|r| {
            let d = &r.draft;
            vec![
                r.seq.to_string(),
                human_instant(d.at),
                md(&d.action),
                format!(
                    "{} → {}",
                    d.from.map_or("-", |s| s.as_str()),
                    d.to.map_or("-", |s| s.as_str())
                ),
                md(&d.by),
                d.role.to_string(),
                opt_md(d.policy.as_deref()),
                opt_md(d.rationale.as_deref()),
                md(&d.evidence.join(", ")),
                r.hash.to_string(),
            ]
        })
        .collect();
    table(
        out,
        &[
            "seq",
            "at",
            "action",
            "from → to",
            "by",
            "role",
            "policy",
            "rationale",
            "evidence",
            "hash",
        ],
        &rows,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_sorts_keys_at_every_depth_and_drops_whitespace() {
        let a: Value =
            serde_json::from_str(r#"{"b": [1, {"z": 1, "a": "x\n"}], "a": null}"#).expect("json");
        let b: Value =
            serde_json::from_str(r#"{"a":null,"b":[1,{"a":"x\n","z":1}]}"#).expect("json");
        assert_eq!(
            canonical_json(&a),
            r#"{"a":null,"b":[1,{"a":"x\n","z":1}]}"#
        );
        assert_eq!(content_hash(&a), content_hash(&b));
        let mut hashed = a.clone();
        hashed[HASH_FIELD] = "sha256:whatever".into();
        assert_eq!(
            content_hash(&hashed),
            content_hash(&a),
            "its own hash is left out"
        );
    }

    #[test]
    fn markdown_cells_cannot_break_the_table_or_inject_html() {
        assert_eq!(md("a|b"), "a\\|b");
        assert_eq!(md("<script>"), "&lt;script&gt;");
        assert_eq!(md("x\u{1b}[2Jy"), "x⟦␛\\[2J⟧y");
        assert_eq!(md("line\nnext"), "line␊next");
    }
}
