//! What the checks of the audit chain found, and the owner's acknowledgement of a
//! break. `audit verify` records its outcome (a break: the first broken seq and
//! why; or the head it verified, as the checkpoint), and every write door first
//! walks the rows from the checkpoint to the head ([`crate::store::chain`]). While a
//! recorded break is neither acknowledged nor cleared by a passing `audit verify`,
//! nothing appends to the chain. Acknowledging is an owner's audited act: a row of
//! the chain ledger [`CHAIN_LEDGER`], so that `audit verify` shows who accepted a
//! broken chain, when and why.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::audit::AuditDraft;
use super::ids::{Sha256, ledger_id};
use super::model::Role;
use super::rules::Rationale;

/// The audit rows of acknowledgements carry this in their `operation` column (the
/// `holdfast:` prefix is reserved, see [`super::access::RESERVED_PREFIX`]).
pub const CHAIN_LEDGER: &str = "holdfast:chain";

/// The action of an acknowledgement's audit row.
pub const ACKNOWLEDGE_ACTION: &str = "acknowledge-break";

/// Who found a break or set the checkpoint: a full `audit verify` (the console's
/// verify is one), or a write door's link check.
pub const BY_VERIFY: &str = "verify";
pub const BY_LINK_CHECK: &str = "link-check";

/// A recorded break of the chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChainBreak {
    /// The first seq found broken.
    pub seq: i64,
    /// What broke there, in words.
    pub reason: String,
    /// [`BY_VERIFY`] or [`BY_LINK_CHECK`].
    pub found_by: String,
    pub found_at: DateTime<Utc>,
    /// The audit row of the owner's acknowledgement, once acknowledged.
    pub acknowledged_seq: Option<i64>,
}

/// The checks' record: the checkpoint and the breaks not cleared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChainMarks {
    /// The newest row up to which the chain was found to link: (seq, hash).
    pub checkpoint: Option<(i64, Sha256)>,
    /// The breaks no passing `audit verify` has cleared, lowest seq first.
    pub breaks: Vec<ChainBreak>,
}

impl ChainMarks {
    /// The first break not acknowledged: every write door refuses while there is one.
    pub fn refusing(&self) -> Option<&ChainBreak> {
        self.breaks.iter().find(|b| b.acknowledged_seq.is_none())
    }

    /// The break a read names: the first refusing one, else the first acknowledged.
    pub fn named(&self) -> Option<&ChainBreak> {
        self.refusing().or_else(|| self.breaks.first())
    }
}

impl ChainBreak {
    /// The one line a read command prints on stderr while the chain is broken.
    pub fn warning(&self) -> String {
        match self.acknowledged_seq {
            None => format!(
                "warning: the audit chain is broken at seq {} ({}); writes are refused until an owner runs \
                 `holdfast audit acknowledge {} --reason …` or `holdfast audit verify` passes",
                self.seq, self.reason, self.seq
            ),
            Some(ack) => format!(
                "warning: the audit chain is broken at seq {} ({}); acknowledged at seq {ack}, writes go on",
                self.seq, self.reason
            ),
        }
    }

    /// The refusal of a write door (exit 4 on the command line).
    pub fn refusal(&self) -> String {
        format!(
            "refused: the audit chain is broken at seq {} ({}): nothing is written until an owner \
             acknowledges it (`holdfast audit acknowledge {} --reason …`) or `holdfast audit verify` passes again",
            self.seq, self.reason, self.seq
        )
    }
}

/// The audit row of an owner's acknowledgement of the break at `seq`.
pub fn acknowledgement(
    by: &str,
    role: Role,
    policy: Option<String>,
    seq: i64,
    reason: &Rationale,
    at: DateTime<Utc>,
) -> AuditDraft {
    AuditDraft {
        operation: ledger_id(CHAIN_LEDGER),
        action: ACKNOWLEDGE_ACTION.to_owned(),
        from: None,
        to: None,
        by: by.to_owned(),
        role,
        policy,
        on_behalf_of: None,
        rationale: Some(reason.as_str().to_owned()),
        evidence: vec![format!("break:{seq}")],
        at,
    }
}
