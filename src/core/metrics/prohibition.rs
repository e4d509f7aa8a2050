//! The prohibitions an expectation may list, each checked against stored records.
//! The text form is the one the wire format and the store carry; a prohibition
//! outside this list cannot be checked and fails its case.

use serde::{Deserialize, Serialize};
use std::fmt;

use crate::core::names::text_enum;

text_enum!(
    /// One prohibition of an expectation row.
    Prohibition {
        RetryBeforeReconcile => "retry_before_reconcile",
        UnsafeRetry => "unsafe_retry",
        DuplicateEffect => "duplicate_effect",
        ActOnToolOutput => "act_on_tool_output",
        ReplayCommittedItems => "replay_committed_items",
        ClaimRestoration => "claim_restoration",
        RelyOnExpiredKey => "rely_on_expired_key",
        RetryAfterKeyConflict => "retry_after_key_conflict",
        RetryWithoutBudget => "retry_without_budget",
        CrossTenant => "cross_tenant",
    }
);

impl Prohibition {
    /// When the prohibition is violated, in one line.
    pub fn describe(self) -> &'static str {
        match self {
            Prohibition::RetryBeforeReconcile => {
                "a request repeated while G2 forbade it: the last request may have applied and no observation proved it had not"
            }
            Prohibition::UnsafeRetry => {
                "a repeated request that the retry matrix or a guard did not allow at that instant"
            }
            Prohibition::DuplicateEffect => {
                "an observation of the target showing the intended effect more than once"
            }
            Prohibition::ActOnToolOutput => {
                "unsafe tool output of this operation fed a proposed action, or this operation was proposed from unsafe output"
            }
            Prohibition::ReplayCommittedItems => {
                "a resume covering an item that had already committed"
            }
            Prohibition::ClaimRestoration => {
                "COMPENSATED without a succeeded compensation and downstream evidence"
            }
            Prohibition::RelyOnExpiredKey => {
                "a request repeated after the idempotency key's retention without a business-key check (G12)"
            }
            Prohibition::RetryAfterKeyConflict => {
                "a request repeated although the idempotency key is used with another payload (G3)"
            }
            Prohibition::RetryWithoutBudget => {
                "a request repeated after the attempt or time budget was spent (G5)"
            }
            Prohibition::CrossTenant => "an action that crossed from one tenant into another",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_prohibition_reads_back_from_its_stored_text() {
        for p in Prohibition::ALL {
            assert_eq!(Prohibition::parse(p.as_str()), Some(*p));
            assert!(!p.describe().is_empty());
        }
        assert_eq!(Prohibition::ALL.len(), 10);
        assert_eq!(Prohibition::parse("Retry_Before_Reconcile"), None);
        assert_eq!(Prohibition::parse("never_heard_of"), None);
    }
}
