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
use super::review::{Dialog, Verdict, action_from_input, input_label};
use super::widgets::Prompt;

/// The actions bulk triage offers, as `review --filter` does: every one but
/// `reconcile`, which records one lookup of one operation.
pub const KINDS: &[ActionKind] = &[
    ActionKind::Block,
    ActionKind::Comment,
    ActionKind::Revalidate,
    ActionKind::AuthorizeRetry,
    ActionKind::ApproveCompensation,
    ActionKind::ApproveResume,
    ActionKind::MarkCompensated,
    ActionKind::MarkResumed,
    ActionKind::Resolve,
    ActionKind::Accept,
    ActionKind::Assign,
    ActionKind::Schedule,
    ActionKind::Confirm,
    ActionKind::Reject,
];

/// Where the dialog is.
#[derive(Debug, Clone)]
pub enum Step {
    /// The marked operations are being read.
    Loading,
    /// Choosing the action.
    Pick,
    /// Typing the one input the picked action needs (`resolve`'s state, an
    /// owner, a time, a repair reference).
    Input(Box<Prompt>),
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
    /// Index into [`KINDS`].
    pub cursor: usize,
    /// The action with its input, once read.
    pub action: Option<Action>,
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
            action: None,
            step: Step::Loading,
            scroll: 0,
            error: None,
        }
    }

    pub fn kind(&self) -> ActionKind {
        KINDS.get(self.cursor).copied().unwrap_or(KINDS[0])
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
                let last = KINDS.len().saturating_sub(1) as i64;
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
                match input_label(self.kind()) {
                    Some(label) => self.step = Step::Input(Box::new(Prompt::new(label, ""))),
                    None => self.read_action(""),
                }
                None
            }
            Step::Input(input) => {
                let text = input.text();
                self.read_action(&text);
                None
            }
            Step::Rationale(input) => {
                let Some(action) = &self.action else {
                    self.step = Step::Pick;
                    return None;
                };
                match Rationale::parse(&input.text()) {
                    Ok(rationale) => {
                        let lines =
                            triage::dry_run(&self.selection, action, actor, &rationale, now);
                        self.scroll = 0;
                        self.step = Step::DryRun { rationale, lines };
                    }
                    Err(e) => self.error = Some(e),
                }
                None
            }
            Step::DryRun { rationale, .. } => {
                let action = self.action.clone()?;
                let request = Request::Apply {
                    selection: self.selection.clone(),
                    action: Box::new(action),
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
            Step::Input(_) => {
                self.step = Step::Pick;
                None
            }
            Step::Rationale(_) => {
                self.step = match input_label(self.kind()) {
                    Some(label) => Step::Input(Box::new(Prompt::new(label, ""))),
                    None => Step::Pick,
                };
                None
            }
            Step::DryRun { rationale, .. } => {
                self.step = Step::Rationale(Box::new(Prompt::new("rationale", rationale.as_str())));
                None
            }
            Step::Applying => None,
        }
    }

    /// Reads the picked action with its input; on to the rationale.
    fn read_action(&mut self, text: &str) {
        match action_from_input(self.kind(), text) {
            Ok(action) => {
                self.action = Some(action);
                self.step = Step::Rationale(Box::new(Prompt::new("rationale", "")));
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// A key typed into the input or the rationale.
    pub fn type_key(&mut self, key: crossterm::event::KeyEvent) {
        if let Step::Input(input) | Step::Rationale(input) = &mut self.step {
            input.input(key);
        }
    }

    /// Whether keys are text now.
    pub fn typing(&self) -> bool {
        matches!(self.step, Step::Input(_) | Step::Rationale(_))
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
