//! The transition table of DESIGN §2 (G1): which state may follow which, and who
//! may make each move.

use serde::Serialize;

use crate::core::model::State;

/// Who may make a transition of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MadeBy {
    System,
    Reviewer,
    Owner,
}

/// The transition table of DESIGN §2: who may move an operation from one state to
/// another, or `None` when nobody may.
pub fn transition_makers(from: State, to: State) -> Option<&'static [MadeBy]> {
    use MadeBy::*;
    use State::*;
    const SYSTEM: &[MadeBy] = &[System];
    const REVIEWER: &[MadeBy] = &[Reviewer];
    const OWNER: &[MadeBy] = &[Owner];
    const ANYONE: &[MadeBy] = &[System, Reviewer];
    if from.is_terminal() {
        return None;
    }
    match (from, to) {
        (Planned, Validated) => Some(SYSTEM),
        (Validated, Approved) => Some(ANYONE),
        (Approved, Sent) => Some(SYSTEM),
        (Sent, Acknowledged) => Some(SYSTEM),
        (Sent | Acknowledged, Succeeded | Failed | Unknown | Partial) => Some(SYSTEM),
        (Unknown, Succeeded | Failed | Partial | Approved) => Some(REVIEWER),
        (Partial, Compensated | Succeeded) => Some(REVIEWER),
        (Blocked, Validated | Failed) => Some(REVIEWER),
        (Unknown | Partial | Blocked, Accepted) => Some(OWNER),
        (_, Blocked) if from != Blocked => Some(ANYONE),
        _ => None,
    }
}

/// Whether the table has the row `from → to` for anyone at all.
pub fn transition_allowed(from: State, to: State) -> bool {
    transition_makers(from, to).is_some()
}
