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

/// A committed audit row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditRow {
    pub seq: i64,
    #[serde(flatten)]
    pub draft: AuditDraft,
    pub prev_hash: Sha256,
    pub hash: Sha256,
}

/// The canonical encoding of a row's content: one field per line, `name=value`, in
/// a fixed order, with `\` and newlines escaped, `-` for an absent value. Changing
/// this changes every hash, so it is versioned by [`GENESIS_TEXT`].
pub fn canonical(seq: i64, draft: &AuditDraft) -> String {
    fn esc(text: &str) -> String {
        text.replace('\\', "\\\\")
            .replace('\n', "\\n")
            .replace('\r', "\\r")
    }
    fn opt(text: Option<&str>) -> String {
        text.map_or_else(|| "-".to_owned(), |t| format!("+{}", esc(t)))
    }
    let evidence: Vec<String> = draft.evidence.iter().map(|e| esc(e)).collect();
    [
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
        format!("evidence={}", evidence.join(",")),
        format!("at={}", format_instant(draft.at)),
    ]
    .join("\n")
}

/// The hash of a row: SHA-256 over the previous hash, a newline and the row's
/// canonical encoding.
pub fn chain_hash(prev: &Sha256, seq: i64, draft: &AuditDraft) -> Sha256 {
    let text = format!("{}\n{}", prev.as_str(), canonical(seq, draft));
    Sha256::of(text.as_bytes())
}

/// Seals a draft as row `seq` after `prev`.
pub fn seal(prev: &Sha256, seq: i64, draft: AuditDraft) -> AuditRow {
    let hash = chain_hash(prev, seq, &draft);
    AuditRow {
        seq,
        draft,
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
}

impl Default for ChainVerifier {
    fn default() -> Self {
        ChainVerifier {
            prev: genesis(),
            expected_seq: 1,
            rows: 0,
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
        let recomputed = chain_hash(&self.prev, row.seq, &row.draft);
        if recomputed != row.hash {
            return Err(broken(
                "hash does not match the row's content (the row was changed)".into(),
            ));
        }
        self.prev = row.hash.clone();
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
        let text = canonical(1, &a);
        assert_eq!(text.lines().filter(|l| l.starts_with("by=")).count(), 1);
    }
}
