//! The seam between counting and judging: the plain facts each figure, the gate
//! and the operational figures are assembled from. A producer fills them (today
//! the in-memory one over a `Dataset`; a store may fill them with aggregates) and
//! `assemble` turns them into the report.

use chrono::{DateTime, Utc};

use super::operational::{LayerFigure, PartialProgress, PendingProposal};
use super::release::VetoKind;
use super::result::MetricId;
use crate::core::ids::OperationId;
use crate::core::model::State;

/// One operation's standing in one figure whose denominator it is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// In the numerator.
    Counted,
    /// Left out of the numerator: a record shows the rule is not met.
    Short(String),
    /// Left out of the numerator: no record shows whether the rule is met.
    /// Missing evidence is never inferred.
    Unverified(String),
}

impl Verdict {
    /// `Counted` when `problems` is empty, else `Short` with the problems after
    /// `lead`.
    pub fn unless(lead: &str, problems: Vec<String>) -> Verdict {
        if problems.is_empty() {
            Verdict::Counted
        } else {
            Verdict::Short(format!("{lead}{}", problems.join("; ")))
        }
    }

    /// Why the operation is out of the numerator, if it is.
    pub fn shortfall(self) -> Option<String> {
        match self {
            Verdict::Counted => None,
            Verdict::Short(why) | Verdict::Unverified(why) => Some(why),
        }
    }
}

impl From<Result<(), String>> for Verdict {
    fn from(result: Result<(), String>) -> Verdict {
        match result {
            Ok(()) => Verdict::Counted,
            Err(why) => Verdict::Short(why),
        }
    }
}

/// The input of one figure: every operation of its denominator with its verdict,
/// in operation id order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FigureFacts {
    pub id: MetricId,
    pub rows: Vec<(OperationId, Verdict)>,
}

/// One finding that vetoes a release; findings on one operation make one veto.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub operation: OperationId,
    pub kind: VetoKind,
    /// Attempt, observation and operation ids that show it.
    pub evidence: Vec<String>,
    /// One sentence.
    pub reason: String,
}

/// The counts and short listings the operational figures are derived from. Each
/// field is one aggregate over stored records (a `GROUP BY`, a `COUNT`, or a
/// listing of the few held rows); the rules that pick the rows are in
/// `operational` (`unknown_since`, `is_overdue`, `is_throttled`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OperationalFacts {
    pub logical_operations: u32,
    /// Operations per state, states with none left out.
    pub by_state: Vec<(State, u32)>,
    /// Each UNKNOWN operation with the instant it became unknown.
    pub unknown_since: Vec<(OperationId, DateTime<Utc>)>,
    /// Held operations whose next observation time has passed, in id order.
    pub overdue: Vec<OperationId>,
    /// Attempt counts per layer, in layer order (attempts whose layer is
    /// unrecorded first).
    pub by_layer: Vec<LayerFigure>,
    /// Requests the throttle rule matches, by attempt id.
    pub throttled: Vec<String>,
    pub partial_in_progress: Vec<PartialProgress>,
    pub pending_proposals: Vec<PendingProposal>,
}

/// Everything the report is assembled from.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Facts {
    /// One entry per figure; a figure without an entry measures nothing.
    pub figures: Vec<FigureFacts>,
    /// In the order their reasons are listed.
    pub findings: Vec<Finding>,
    pub operational: OperationalFacts,
}
