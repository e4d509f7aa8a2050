//! G11: whether a recorded approval binds this exact payload and is still valid.

use chrono::{DateTime, Utc};

use crate::core::clock;
use crate::core::ids::Sha256;
use crate::core::model::Approval;
use crate::core::refusal::{Refusal, Rule, refuse};

/// Checks that an approval binds this exact payload and has not expired (G11).
pub fn approval_binds(
    approval: Option<&Approval>,
    payload: &Sha256,
    at: DateTime<Utc>,
) -> Result<(), Refusal> {
    let Some(approval) = approval else {
        return refuse(
            Rule::G11,
            "no approval is recorded: obtain one for this exact call",
        );
    };
    match &approval.payload_hash {
        Some(bound) if bound == payload => {}
        Some(bound) => {
            return refuse(
                Rule::G11,
                format!(
                    "the approval binds payload {} but the operation carries {}: the payload changed, a new approval is needed",
                    bound.short(12),
                    payload.short(12)
                ),
            );
        }
        None => {
            return refuse(
                Rule::G11,
                "the approval binds no payload hash: a new approval for this exact call is needed",
            );
        }
    }
    match approval.expires_at {
        Some(expiry) if expiry > at => Ok(()),
        Some(expiry) => refuse(
            Rule::G11,
            format!(
                "the approval expired at {}: a new one is needed",
                clock::human_instant(expiry)
            ),
        ),
        None => refuse(
            Rule::G11,
            "the approval has no expiry: a new, time-bound approval is needed",
        ),
    }
}
