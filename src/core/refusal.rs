//! Refusals: the guard (G1–G13) a refused action cites and the reason in words.

use serde::Serialize;
use std::fmt;

/// The guard a refusal cites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Rule {
    G1,
    G2,
    G3,
    G4,
    G5,
    G6,
    G7,
    G8,
    G9,
    G10,
    G11,
    G12,
    /// Domain review: recovery on the holds of a tool whose contract names a
    /// `domain_review` needs the matching `domain:…` grant besides the role.
    G13,
    /// Autonomy (DESIGN §9.4): a raise needs a status lookup holdfast can make.
    A1,
    /// Autonomy: a raise needs the tool's latest drill to cover all eight modes
    /// with every case passing.
    A2,
    /// Autonomy: a raise is refused while a veto on the tool's operations is open.
    A3,
    /// Autonomy: what holdfast or an agent does on its own is bounded by the
    /// tool's level.
    A4,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A refused action: the rule and the reason in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("refused by {rule}: {reason}")]
pub struct Refusal {
    pub rule: Rule,
    pub reason: String,
}

/// Refuses with `rule` and `reason`, as an `Err` of any result type.
pub(crate) fn refuse<T>(rule: Rule, reason: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal {
        rule,
        reason: reason.into(),
    })
}
