//! The audit chain: every change to an operation is one row, hash-chained from a
//! fixed genesis value over a canonical encoding, so that an edit made behind the
//! store's back is found by recomputing the chain.

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

/// The action of the row that creates an operation from wire records.
pub const INGEST: &str = "ingest";
/// The action of the row that adds wire records to an existing operation.
pub const RECORD: &str = "record";
/// The action of the row of a state transition received as a wire record.
pub const TRANSITION: &str = "transition";
/// The action of the row that creates a child operation (a compensation, a
/// resume) opened by a reviewer action on its parent.
pub const CREATE: &str = "create";

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
    fn esc(text: &str) -> String {
        text.replace('\\', "\\\\")
            .replace('\n', "\\n")
            .replace('\r', "\\r")
    }
    fn opt(text: Option<&str>) -> String {
        text.map_or_else(|| "-".to_owned(), |t| format!("+{}", esc(t)))
    }
    let evidence = if encoding >= 2 {
        serde_json::Value::from(draft.evidence.clone()).to_string()
    } else {
        let escaped: Vec<String> = draft.evidence.iter().map(|e| esc(e)).collect();
        escaped.join(",")
    };
    let mut lines = Vec::with_capacity(13);
    if encoding >= 2 {
        lines.push(format!("encoding={encoding}"));
    }
    lines.extend([
        format!("seq={seq}"),
        format!("operation={}", esc(draft.operation.as_str())),
        format!("action={}", esc(&draft.action)),
        format!("from={}", opt(draft.from.map(State::as_str))),
        format!("to={}", opt(draft.to.map(State::as_str))),
        format!("by={}", esc(&draft.by)),
        format!("role={}", draft.role.as_str()),
        format!("policy={}", opt(draft.policy.as_deref())),
        format!("on_behalf_of={}", opt(draft.on_behalf_of.as_deref())),
        format!("rationale={}", opt(draft.rationale.as_deref())),
        format!("evidence={evidence}"),
        format!("at={}", format_instant(draft.at)),
    ]);
    lines.join("\n")
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
    prev: Sha256,
    expected_seq: i64,
    rows: i64,
    encoding: i64,
}

impl Default for ChainVerifier {
    fn default() -> Self {
        ChainVerifier {
            prev: genesis(),
            expected_seq: 1,
            rows: 0,
            encoding: 1,
        }
    }
}

impl ChainVerifier {
    /// Checks the next row; the error names why the chain breaks at it.
    pub fn push(&mut self, row: &AuditRow) -> Result<(), ChainStatus> {
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
        if row.prev_hash != self.prev {
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
        let recomputed = chain_hash(&self.prev, row.encoding, row.seq, &row.draft);
        if recomputed != row.hash {
            return Err(broken(
                "hash does not match the row's content (the row was changed)".into(),
            ));
        }
        self.prev = row.hash.clone();
        self.encoding = row.encoding;
        self.expected_seq += 1;
        self.rows += 1;
        Ok(())
    }

    pub fn finish(self) -> ChainStatus {
        let head = (self.rows > 0).then(|| (self.expected_seq - 1, self.prev));
        ChainStatus::Intact {
            rows: self.rows,
            head,
        }
    }
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
