//! The bulk triage dialog's own state: the marked operations as loaded, the action
//! to apply to all of them (only those that need no per-operation input, as on the
//! command line), the rationale, the dry run split by bucket with each operation's
//! decision, and each operation's result once applied. Two steps: the dry run is
//! the confirm request, `Enter` on it is the confirmed apply. Nothing here awaits:
//! loading and applying are effects the runner carries out.

use chrono::{DateTime, Utc};

use crate::core::ids::OperationId;
use crate::core::model::OperationDetail;
use crate::core::rules::{Action, ActionKind, Actor, Rationale};
use crate::core::triage::{self, TriageLine};

use super::keymap::Context;
use super::review::{Dialog, Verdict};
use super::widgets::Prompt;

/// The actions bulk triage offers: the ones that mean the same for every operation
/// and need no input of their own (`reconcile` records one lookup of one operation).
pub const ACTIONS: &[Action] = &[
    Action::Block,
    Action::Comment,
    Action::Revalidate,
    Action::AuthorizeRetry,
    Action::ApproveCompensation,
    Action::ApproveResume,
    Action::MarkCompensated,
    Action::MarkResumed,
    Action::Confirm,
    Action::Reject,
];

/// Where the dialog is.
#[derive(Debug, Clone)]
pub enum Step {
    /// The marked operations are being read.
    Loading,
    /// Choosing the action.
    Pick,
    /// Typing the rationale for the picked action.
    Rationale(Box<Prompt>),
    /// The dry run, waiting for the second step.
    DryRun {
        rationale: Rationale,
        lines: Vec<TriageLine>,
    },
    /// The apply is running.
    Applying,
    /// Each operation's result, in the order of the dry run.
    Done(Vec<(TriageLine, Verdict)>),
}

/// What the dialog asks the console to do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Close,
    /// Apply `action` to every operation of the selection, each against the
    /// version it was read at.
    Apply {
        selection: Vec<OperationDetail>,
        action: Box<Action>,
        rationale: Rationale,
    },
}

/// The open bulk dialog over the marked operations.
#[derive(Debug, Clone)]
pub struct BulkDialog {
    /// The marked operations, by id.
    pub ids: Vec<OperationId>,
    /// Their details, once read.
    pub selection: Vec<OperationDetail>,
    /// Marked operations that could not be read (gone, or no longer visible).
    pub missing: Vec<String>,
    /// Index into [`ACTIONS`].
    pub cursor: usize,
    pub step: Step,
    /// First line shown of a long dry run or result list.
    pub scroll: u16,
    /// A problem with what was typed.
    pub error: Option<String>,
}

impl BulkDialog {
    pub fn new(ids: Vec<OperationId>) -> Self {
        BulkDialog {
            ids,
            selection: Vec::new(),
            missing: Vec::new(),
            cursor: 0,
            step: Step::Loading,
            scroll: 0,
            error: None,
        }
    }

    pub fn action(&self) -> &Action {
        ACTIONS.get(self.cursor).unwrap_or(&ACTIONS[0])
    }

    pub fn kind(&self) -> ActionKind {
        self.action().kind()
    }

    /// The marked operations as read; the ones that could not be read are named.
    pub fn loaded(&mut self, selection: Vec<OperationDetail>, missing: Vec<String>) {
        self.selection = selection;
        self.missing = missing;
        self.step = Step::Pick;
    }

    /// Reading the marked operations failed as a whole.
    pub fn failed(&mut self, error: String) {
        self.error = Some(error);
        self.step = Step::Done(Vec::new());
    }

    /// `↑`/`↓`: the action in the list, or the scroll of the dry run and results.
    pub fn step_cursor(&mut self, delta: i64) {
        match self.step {
            Step::Pick => {
                let last = ACTIONS.len().saturating_sub(1) as i64;
                let to = (self.cursor as i64).saturating_add(delta).clamp(0, last);
                self.cursor = usize::try_from(to).unwrap_or(0);
            }
            Step::DryRun { .. } | Step::Done(_) => {
                let to = i64::from(self.scroll).saturating_add(delta).max(0);
                self.scroll = u16::try_from(to).unwrap_or(u16::MAX);
            }
            _ => {}
        }
    }

    /// `Enter`: pick, dry run, or confirm, depending on the step.
    pub fn accept(&mut self, actor: &Actor, now: DateTime<Utc>) -> Option<Request> {
        self.error = None;
        match &self.step {
            Step::Loading | Step::Applying => None,
            Step::Pick if self.selection.is_empty() => {
                self.error = Some("none of the marked operations can be read".to_owned());
                None
            }
            Step::Pick => {
                self.step = Step::Rationale(Box::new(Prompt::new("rationale", "")));
                None
            }
            Step::Rationale(input) => {
                match Rationale::parse(&input.text()) {
                    Ok(rationale) => {
                        let lines =
                            triage::dry_run(&self.selection, self.action(), actor, &rationale, now);
                        self.scroll = 0;
                        self.step = Step::DryRun { rationale, lines };
                    }
                    Err(e) => self.error = Some(e),
                }
                None
            }
            Step::DryRun { rationale, .. } => {
                let request = Request::Apply {
                    selection: self.selection.clone(),
                    action: Box::new(self.action().clone()),
                    rationale: rationale.clone(),
                };
                self.step = Step::Applying;
                Some(request)
            }
            Step::Done(_) => Some(Request::Close),
        }
    }

    /// `Esc`: one step back; from the list, or once done, closes.
    pub fn back(&mut self) -> Option<Request> {
        self.error = None;
        match &self.step {
            Step::Pick | Step::Done(_) | Step::Loading => Some(Request::Close),
            Step::Rationale(_) => {
                self.step = Step::Pick;
                None
            }
            Step::DryRun { rationale, .. } => {
                self.step = Step::Rationale(Box::new(Prompt::new("rationale", rationale.as_str())));
                None
            }
            Step::Applying => None,
        }
    }

    /// A key typed into the rationale.
    pub fn type_key(&mut self, key: crossterm::event::KeyEvent) {
        if let Step::Rationale(input) = &mut self.step {
            input.input(key);
        }
    }

    /// Whether keys are text now.
    pub fn typing(&self) -> bool {
        matches!(self.step, Step::Rationale(_))
    }

    /// Each operation's result.
    pub fn finish(&mut self, results: Vec<(TriageLine, Verdict)>) {
        self.scroll = 0;
        self.step = Step::Done(results);
    }
}

impl Dialog for BulkDialog {
    type Request = Request;
    const CONTEXT: Context = Context::Bulk;

    fn typing(&self) -> bool {
        BulkDialog::typing(self)
    }

    fn accept(&mut self, actor: &Actor, now: DateTime<Utc>) -> Option<Request> {
        BulkDialog::accept(self, actor, now)
    }

    fn back(&mut self) -> Option<Request> {
        BulkDialog::back(self)
    }

    fn step_cursor(&mut self, delta: i64) {
        BulkDialog::step_cursor(self, delta);
    }

    fn type_key(&mut self, key: crossterm::event::KeyEvent) {
        BulkDialog::type_key(self, key);
    }
}
