//! The audit chain: every change to an operation is one row, hash-chained from a
//! fixed genesis value over a canonical encoding, so that an edit made behind the
//! store's back is found by recomputing the chain.

use std::fmt::Write as _;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::clock::format_instant;
use super::ids::{OperationId, Sha256};
use super::model::{Role, State};

/// The text whose digest is the `prev_hash` of row 1.
pub const GENESIS_TEXT: &str = "holdfast audit chain v1 genesis";

/// The `prev_hash` of the first row.
pub fn genesis() -> Sha256 {
    Sha256::of(GENESIS_TEXT.as_bytes())
}

/// An audit row before the store gives it a place in the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditDraft {
    pub operation: OperationId,
    /// The stable kebab-case action name (`resolve`, `reconcile`, `ingest`, …).
    pub action: String,
    pub from: Option<State>,
    pub to: Option<State>,
    pub by: String,
    pub role: Role,
    pub policy: Option<String>,
    /// The identity `by` acted for, when someone acted on another's behalf.
    pub on_behalf_of: Option<String>,
    pub rationale: Option<String>,
    pub evidence: Vec<String>,
    pub at: DateTime<Utc>,
}

/// Who a row's act belongs to, as every surface headlines it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Author {
    /// The identity whose act it is: the identity acted for when a delegate
    /// acted, else the row's author.
    pub who: String,
    pub role: Role,
    /// The delegate that wrote the row for `who`.
    pub via: Option<String>,
    /// What a source claimed in a row written from wire records before imported
    /// moves were judged: `(by, role)` as reported, only a claim.
    pub claimed: Option<(String, Role)>,
}

impl Author {
    /// `maya`, or `maya via relay` when a delegate wrote the row: the person
    /// first, so that a cut column still names them.
    pub fn name(&self) -> String {
        match &self.via {
            Some(delegate) => format!("{} via {delegate}", self.who),
            None => self.who.clone(),
        }
    }
}

impl AuditDraft {
    /// Who acted. A row written from wire records before imported moves were
    /// judged kept the source's `by` in `on_behalf_of` and its `role` as the
    /// row's: its author is the importer, acting as the system, and the rest is
    /// what the source claimed.
    pub fn author(&self) -> Author {
        let wire = WIRE_ACTIONS.contains(&self.action.as_str());
        match (&self.on_behalf_of, wire) {
            (Some(claimed), true) => Author {
                who: self.by.clone(),
                role: Role::System,
                via: None,
                claimed: Some((claimed.clone(), self.role)),
            },
            (Some(person), false) => Author {
                who: person.clone(),
                role: self.role,
                via: Some(self.by.clone()),
                claimed: None,
            },
            (None, _) => Author {
                who: self.by.clone(),
                role: self.role,
                via: None,
                claimed: None,
            },
        }
    }
}

/// The action of the row that creates an operation from wire records.
pub const INGEST: &str = "ingest";
/// The action of the row that adds wire records to an existing operation.
pub const RECORD: &str = "record";
/// The action of the row of a state transition received as a wire record.
pub const TRANSITION: &str = "transition";

/// The audit actions of rows written from wire records (by `ingest`, or by a
/// worker completing its work): their `role` and `on_behalf_of` are what the
/// source reported, so what allows them is the writer's own `ingest` or `worker`
/// grant on the operation's tenant.
pub const WIRE_ACTIONS: &[&str] = &[INGEST, RECORD, TRANSITION];
/// The action of the row that creates a child operation (a compensation, a
/// resume) opened by a reviewer action on its parent.
pub const CREATE: &str = "create";

/// The evidence entry of an `ingest` row whose operation names a tool with no
/// stored contract (allowed only where contracts are optional: the
/// OpenTelemetry and MCP doors). `audit verify` asks a stored contract of every
/// tool an operation names, except a tool whose every operation was created so.
pub const NO_CONTRACT: &str = "contract:none";

/// The canonical encoding new rows are hashed with (see [`canonical`]).
pub const ENCODING: i64 = 2;

/// A committed audit row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRow {
    pub seq: i64,
    #[serde(flatten)]
    pub draft: AuditDraft,
    /// Which canonical encoding the row's hash is over: 1 for rows written before
    /// encoding 2 existed, [`ENCODING`] for every row written since.
    #[serde(default = "first_encoding")]
    pub encoding: i64,
    pub prev_hash: Sha256,
    pub hash: Sha256,
}

fn first_encoding() -> i64 {
    1
}

/// A row's fields as the canonical encoding and the ledger read them, borrowed:
/// from an [`AuditRow`], or straight from the columns of a stored row, so that a
/// walk over the chain need not build an `AuditRow` per row. `at` is the instant
/// as [`format_instant`] writes it.
#[derive(Debug, Clone, Copy)]
pub struct RowView<'a, E: AsRef<str>> {
    pub seq: i64,
    pub encoding: i64,
    pub operation: &'a str,
    pub action: &'a str,
    pub from: Option<State>,
    pub to: Option<State>,
    pub by: &'a str,
    pub role: Role,
    pub policy: Option<&'a str>,
    pub on_behalf_of: Option<&'a str>,
    pub rationale: Option<&'a str>,
    pub evidence: &'a [E],
    /// The evidence list as JSON text that is known to be exactly what the
    /// canonical encoding writes for [`Self::evidence`] (a stored list read
    /// back unchanged), so the walk need not write it again; `None` writes it.
    pub evidence_json: Option<&'a str>,
    pub at: &'a str,
}

impl<'a> RowView<'a, String> {
    /// The view of `draft` as row `seq`; `at` is `format_instant(draft.at)`.
    pub fn of_draft(encoding: i64, seq: i64, draft: &'a AuditDraft, at: &'a str) -> Self {
        RowView {
            seq,
            encoding,
            operation: draft.operation.as_str(),
            action: &draft.action,
            from: draft.from,
            to: draft.to,
            by: &draft.by,
            role: draft.role,
            policy: draft.policy.as_deref(),
            on_behalf_of: draft.on_behalf_of.as_deref(),
            rationale: draft.rationale.as_deref(),
            evidence: &draft.evidence,
            evidence_json: None,
            at,
        }
    }
}

/// The canonical encoding of a row's content: one field per line, `name=value`, in
/// a fixed order, with `\` and newlines escaped, `-` for an absent value.
///
/// Encoding 1 joined the evidence list with commas, so `["a","b"]` and `["a,b"]`
/// hashed alike; encoding 2 starts with an `encoding=2` line and writes the list
/// as a JSON array, which tells them apart. A row keeps the encoding it was
/// sealed with (stores written before encoding 2 still verify), and the verifier
/// refuses a row whose encoding is older than the row before it, so no row can
/// be moved back to the weaker one.
pub fn canonical(encoding: i64, seq: i64, draft: &AuditDraft) -> String {
    let at = format_instant(draft.at);
    let mut out = String::new();
    write_canonical(&mut out, &RowView::of_draft(encoding, seq, draft, &at));
    out
}

/// Appends the canonical encoding of `row` (see [`canonical`]) to `out`.
pub fn write_canonical<E: AsRef<str>>(out: &mut String, row: &RowView<'_, E>) {
    fn esc(out: &mut String, text: &str) {
        // The three escaped characters are ASCII, so the text between them is
        // copied in runs, each cut on a character boundary.
        let mut rest = text;
        while let Some(at) = rest
            .bytes()
            .position(|b| matches!(b, b'\\' | b'\n' | b'\r'))
        {
            out.push_str(&rest[..at]);
            out.push_str(match rest.as_bytes()[at] {
                b'\\' => "\\\\",
                b'\n' => "\\n",
                _ => "\\r",
            });
            rest = &rest[at + 1..];
        }
        out.push_str(rest);
    }
    fn opt(out: &mut String, text: Option<&str>) {
        match text {
            Some(t) => {
                out.push('+');
                esc(out, t);
            }
            None => out.push('-'),
        }
    }
    if row.encoding >= 2 {
        let _ = writeln!(out, "encoding={}", row.encoding);
    }
    let _ = write!(out, "seq={}", row.seq);
    out.push_str("\noperation=");
    esc(out, row.operation);
    out.push_str("\naction=");
    esc(out, row.action);
    out.push_str("\nfrom=");
    opt(out, row.from.map(State::as_str));
    out.push_str("\nto=");
    opt(out, row.to.map(State::as_str));
    out.push_str("\nby=");
    esc(out, row.by);
    out.push_str("\nrole=");
    out.push_str(row.role.as_str());
    out.push_str("\npolicy=");
    opt(out, row.policy);
    out.push_str("\non_behalf_of=");
    opt(out, row.on_behalf_of);
    out.push_str("\nrationale=");
    opt(out, row.rationale);
    out.push_str("\nevidence=");
    if row.encoding >= 2 {
        match row.evidence_json {
            Some(json) => out.push_str(json),
            None => {
                let list: Vec<&str> = row.evidence.iter().map(AsRef::as_ref).collect();
                out.push_str(&serde_json::to_string(&list).unwrap_or_default());
            }
        }
    } else {
        for (i, e) in row.evidence.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            esc(out, e.as_ref());
        }
    }
    out.push_str("\nat=");
    out.push_str(row.at);
}

/// The hash of a row: SHA-256 over the previous hash, a newline and the row's
/// canonical encoding.
pub fn chain_hash(prev: &Sha256, encoding: i64, seq: i64, draft: &AuditDraft) -> Sha256 {
    let text = format!("{}\n{}", prev.as_str(), canonical(encoding, seq, draft));
    Sha256::of(text.as_bytes())
}

/// Seals a draft as row `seq` after `prev`.
pub fn seal(prev: &Sha256, seq: i64, draft: AuditDraft) -> AuditRow {
    let hash = chain_hash(prev, ENCODING, seq, &draft);
    AuditRow {
        seq,
        draft,
        encoding: ENCODING,
        prev_hash: prev.clone(),
        hash,
    }
}

/// What a walk over the chain found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum ChainStatus {
    /// Every row checks; the head is (`seq`, `hash`), or none for an empty log.
    Intact {
        rows: i64,
        head: Option<(i64, Sha256)>,
    },
    /// The first row that does not check, and why.
    Broken { seq: i64, reason: String },
}

/// Incremental verifier: feed rows in `seq` order.
#[derive(Debug, Clone)]
pub struct ChainVerifier {
    /// The hash of the last row checked (`sha256:` and 64 lowercase hex digits).
    prev: String,
    expected_seq: i64,
    rows: i64,
    encoding: i64,
    /// The text hashed for one row, kept between rows.
    scratch: String,
}

impl Default for ChainVerifier {
    fn default() -> Self {
        ChainVerifier::after(0, &genesis(), 1)
    }
}

impl ChainVerifier {
    /// A verifier that continues after row `seq`, taken on trust to have hashed
    /// to `hash` with `encoding`: the walk from a saved digest.
    pub fn after(seq: i64, hash: &Sha256, encoding: i64) -> Self {
        ChainVerifier {
            prev: hash.as_str().to_owned(),
            expected_seq: seq + 1,
            rows: 0,
            encoding,
            scratch: String::new(),
        }
    }

    /// Checks the next row; the error names why the chain breaks at it.
    pub fn push(&mut self, row: &AuditRow) -> Result<(), ChainStatus> {
        let at = format_instant(row.draft.at);
        let view = RowView::of_draft(row.encoding, row.seq, &row.draft, &at);
        self.push_view(&view, row.prev_hash.as_str(), row.hash.as_str())
    }

    /// Checks the next row given as its fields and its stored `prev_hash` and
    /// `hash` (each a well-formed `sha256:` text); the error names why the
    /// chain breaks at it.
    pub fn push_view<E: AsRef<str>>(
        &mut self,
        row: &RowView<'_, E>,
        prev_hash: &str,
        hash: &str,
    ) -> Result<(), ChainStatus> {
        let broken = |reason: String| ChainStatus::Broken {
            seq: row.seq,
            reason,
        };
        if row.seq != self.expected_seq {
            return Err(ChainStatus::Broken {
                seq: self.expected_seq,
                reason: format!(
                    "gap: expected seq {} but found {}",
                    self.expected_seq, row.seq
                ),
            });
        }
        if prev_hash != self.prev {
            return Err(broken(
                "prev_hash does not equal the hash of the row before".into(),
            ));
        }
        if !(self.encoding..=ENCODING).contains(&row.encoding) {
            return Err(broken(format!(
                "encoding {} where the chain is at encoding {} (known up to {ENCODING})",
                row.encoding, self.encoding
            )));
        }
        if !hashes_to(&mut self.scratch, prev_hash, row, hash) {
            return Err(broken(
                "hash does not match the row's content (the row was changed)".into(),
            ));
        }
        self.prev.clear();
        self.prev.push_str(hash);
        self.encoding = row.encoding;
        self.expected_seq += 1;
        self.rows += 1;
        Ok(())
    }

    pub fn finish(self) -> ChainStatus {
        let head = (self.expected_seq > 1)
            .then(|| Sha256::parse(&self.prev).ok())
            .flatten()
            .map(|hash| (self.expected_seq - 1, hash));
        ChainStatus::Intact {
            rows: self.rows,
            head,
        }
    }
}

/// Whether `row`, chained after `prev`, hashes to `hash` (see [`chain_hash`]);
/// `scratch` holds the text hashed, so that a walk allocates it once.
pub fn hashes_to<E: AsRef<str>>(
    scratch: &mut String,
    prev: &str,
    row: &RowView<'_, E>,
    hash: &str,
) -> bool {
    scratch.clear();
    scratch.push_str(prev);
    scratch.push('\n');
    write_canonical(scratch, row);
    Sha256::is_digest_of(hash, scratch.as_bytes())
}

/// Verifies a whole chain held in memory.
pub fn verify<'a>(rows: impl IntoIterator<Item = &'a AuditRow>) -> ChainStatus {
    let mut verifier = ChainVerifier::default();
    for row in rows {
        if let Err(status) = verifier.push(row) {
            return status;
        }
    }
    verifier.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::clock::parse_instant;

    fn draft(n: u32) -> AuditDraft {
        AuditDraft {
            operation: OperationId::parse("F09").unwrap(),
            action: "comment".into(),
            from: Some(State::Unknown),
            to: None,
            by: "rev:maya".into(),
            role: Role::Reviewer,
            policy: Some("RP03".into()),
            on_behalf_of: None,
            rationale: Some(format!("note {n}\nsecond line")),
            evidence: vec!["A017".into()],
            at: parse_instant("2026-09-05T10:00:00Z").unwrap(),
        }
    }

    fn chain(n: u32) -> Vec<AuditRow> {
        let mut prev = genesis();
        (1..=n)
            .map(|i| {
                let row = seal(&prev, i64::from(i), draft(i));
                prev = row.hash.clone();
                row
            })
            .collect()
    }

    #[test]
    fn an_untouched_chain_verifies_to_its_head() {
        let rows = chain(3);
        assert_eq!(
            verify(&rows),
            ChainStatus::Intact {
                rows: 3,
                head: Some((3, rows[2].hash.clone()))
            }
        );
    }

    #[test]
    fn an_edited_field_names_its_row() {
        let mut rows = chain(4);
        rows[2].draft.by = "rev:mallory".into();
        assert!(matches!(verify(&rows), ChainStatus::Broken { seq: 3, .. }));
    }

    #[test]
    fn a_deleted_row_is_a_gap() {
        let mut rows = chain(4);
        rows.remove(1);
        assert!(matches!(verify(&rows), ChainStatus::Broken { seq: 2, .. }));
    }

    #[test]
    fn canonical_encoding_escapes_newlines_so_fields_cannot_be_forged() {
        let mut a = draft(1);
        a.rationale = Some("x\nby=rev:eve".into());
        let text = canonical(ENCODING, 1, &a);
        assert_eq!(text.lines().filter(|l| l.starts_with("by=")).count(), 1);
    }

    #[test]
    fn evidence_lists_that_joined_alike_hash_apart() {
        let mut split = draft(1);
        split.evidence = vec!["a".into(), "b".into()];
        let mut joined = draft(1);
        joined.evidence = vec!["a,b".into()];
        let prev = genesis();
        assert_eq!(
            chain_hash(&prev, 1, 1, &split),
            chain_hash(&prev, 1, 1, &joined),
            "encoding 1 is the weak one this replaces"
        );
        assert_ne!(
            chain_hash(&prev, ENCODING, 1, &split),
            chain_hash(&prev, ENCODING, 1, &joined)
        );
    }

    /// Rows sealed with encoding 1 by an earlier holdfast.
    fn first_encoding_chain(n: u32) -> Vec<AuditRow> {
        let mut prev = genesis();
        (1..=n)
            .map(|i| {
                let d = draft(i);
                let hash = chain_hash(&prev, 1, i64::from(i), &d);
                let row = AuditRow {
                    seq: i64::from(i),
                    draft: d,
                    encoding: 1,
                    prev_hash: prev.clone(),
                    hash,
                };
                prev = row.hash.clone();
                row
            })
            .collect()
    }

    #[test]
    fn a_chain_begun_with_encoding_one_still_verifies_and_continues_with_two() {
        let mut rows = first_encoding_chain(2);
        // The first row's hash as the encoding-1 code computed it.
        assert_eq!(
            rows[0].hash.as_str(),
            "sha256:8a7744fceba0278ce7fbb12634fac1455dc3dc9440e0eaafb02f500f893f2b6a"
        );
        let next = seal(&rows[1].hash, 3, draft(3));
        rows.push(next);
        assert!(matches!(verify(&rows), ChainStatus::Intact { rows: 3, .. }));
    }

    #[test]
    fn a_row_cannot_go_back_to_encoding_one() {
        let mut rows = chain(3);
        let d = rows[2].draft.clone();
        rows[2].encoding = 1;
        rows[2].hash = chain_hash(&rows[1].hash, 1, 3, &d);
        assert!(matches!(verify(&rows), ChainStatus::Broken { seq: 3, .. }));
    }
}
