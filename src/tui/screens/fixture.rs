//! Plain values the screens' unit tests are built from: an operation, its row
//! and its detail as a store would answer them, the context a screen sees, and
//! keys. No store and no runtime: a screen is tested alone, its keys and the
//! answers to what it asked given by hand.

use chrono::{DateTime, Duration, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::layout::Rect;

use super::Ctx;
use crate::core::audit::{AuditDraft, AuditRow};
use crate::core::clock::parse_instant;
use crate::core::detail::OperationDetail;
use crate::core::ids::{OperationId, Sha256};
use crate::core::ladder::Level;
use crate::core::model::{Operation, OperationRow, Role, State};
use crate::core::rules::Actor;
use crate::tui::layout::Pane;
use crate::tui::message::{Effect, Tag};
use crate::tui::theme::Theme;

/// The instant every fixture is read at.
pub(crate) fn now() -> DateTime<Utc> {
    parse_instant("2026-09-05T10:04:00Z").unwrap_or_else(|e| panic!("{e}"))
}

/// The reviewer every fixture is read by: a local identity, every tenant.
pub(crate) fn actor() -> Actor {
    Actor::local("rev:ana", None)
}

/// What a screen sees of a console of `width`×`height` with the keys on `focus`.
pub(crate) fn ctx(actor: &Actor, width: u16, height: u16, focus: Pane) -> Ctx<'_> {
    Ctx {
        actor,
        now: now(),
        theme: Theme { color: false },
        size: Rect::new(0, 0, width, height),
        focus,
    }
}

pub(crate) fn id(text: &str) -> OperationId {
    OperationId::parse(text).unwrap_or_else(|e| panic!("{e}"))
}

/// A key pressed without modifiers.
pub(crate) fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

/// A character key.
pub(crate) fn char(c: char) -> KeyEvent {
    key(KeyCode::Char(c))
}

/// An operation of tenant `acme` in `state`, held an hour, of low risk.
pub(crate) fn operation(name: &str, state: State) -> Operation {
    Operation::bare(name, state, now() - Duration::hours(1))
}

/// The queue's row of [`operation`].
pub(crate) fn row(name: &str, state: State) -> OperationRow {
    let operation = operation(name, state);
    OperationRow {
        state_since: operation.created_at,
        operation,
        version: 3,
        attempts_used: 1,
        max_attempts: Some(3),
        held_dependencies: Vec::new(),
        pending_proposal: false,
        routed_owner: None,
    }
}

/// Everything stored about [`operation`]: its row and nothing recorded beside.
pub(crate) fn detail(name: &str, state: State) -> OperationDetail {
    OperationDetail {
        row: row(name, state),
        contract: None,
        attempts: Vec::new(),
        items: Vec::new(),
        observations: Vec::new(),
        audit: Vec::new(),
        expectation: None,
        children: Vec::new(),
        dependencies: Vec::new(),
        proposals: Vec::new(),
        key_conflicts: Vec::new(),
        autonomy: Level::Manual,
        redactions: Vec::new(),
        lookup_unchecked: None,
    }
}

/// Audit row `seq`: `action` by the fixture's reviewer on `operation`, from
/// state `from` to `to` (`None`: unchanged).
pub(crate) fn audit_row(
    seq: i64,
    operation: &str,
    action: &str,
    from: State,
    to: Option<State>,
) -> AuditRow {
    AuditRow {
        seq,
        draft: AuditDraft {
            operation: id(operation),
            action: action.into(),
            from: Some(from),
            to,
            by: "rev:ana".into(),
            role: Role::Reviewer,
            policy: None,
            on_behalf_of: None,
            rationale: Some("checked with the provider by phone".into()),
            evidence: Vec::new(),
            at: now(),
        },
        encoding: 2,
        prev_hash: Sha256::of(&(seq - 1).to_be_bytes()),
        hash: Sha256::of(&seq.to_be_bytes()),
    }
}

/// The tag of the one effect in `effects`, which must be a request to the
/// runner (every effect but `Quit` and `Verify`, which is the console's).
pub(crate) fn tag(effects: &[Effect]) -> Tag {
    let [effect] = effects else {
        panic!("one effect expected, got {effects:?}");
    };
    match effect {
        Effect::List { generation, .. }
        | Effect::Metrics { generation, .. }
        | Effect::Audit { generation, .. }
        | Effect::Tools { generation, .. }
        | Effect::Load { generation, .. }
        | Effect::Debounce { generation, .. }
        | Effect::Review { generation, .. }
        | Effect::LookUp { generation, .. }
        | Effect::SelectAll { generation, .. }
        | Effect::BulkLoad { generation, .. }
        | Effect::BulkJudge { generation, .. }
        | Effect::BulkApply { generation, .. } => *generation,
        Effect::Verify { .. } | Effect::Quit => panic!("not a screen's request: {effect:?}"),
    }
}
