//! The review dialog's own state: the actions the core offers on one operation
//! (allowed ones to pick, refused ones with their rule), the inputs the picked
//! action needs and the rationale, the exact effect `rules::decide` answers before
//! anything is written, and the verdict of the apply. Two steps, as in gitui: the
//! preview is the confirm request, `Enter` on it is the confirmed action. Nothing
//! here awaits: the apply is an effect the runner carries out.

use chrono::{DateTime, Utc};
use crossterm::event::KeyEvent;

use crate::core::clock::parse_instant;
use crate::core::ids::OperationId;
use crate::core::model::{Matches, ObservationSource, OperationDetail, State};
use crate::core::rules::{
    self, Action, ActionKind, ActionOption, Actor, Effect, Rationale, ReconcileInput, Rule,
};
use crate::review::{Applied, ReviewError};

use super::keymap::{self, Command, Context};
use super::widgets::Prompt;

/// What an input of the form holds, and how its text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    Owner,
    At,
    RepairRef,
    Found,
    MatchTarget,
    MatchPayload,
    MatchOwner,
    MatchVersion,
    EffectCount,
    ProviderRequestId,
    Source,
    Reference,
    Rationale,
}

impl FieldKind {
    fn label(self) -> &'static str {
        match self {
            FieldKind::Owner => "new owner",
            FieldKind::At => "next observation (RFC 3339)",
            FieldKind::RepairRef => "manual repair reference",
            FieldKind::Found => "found (y/n)",
            FieldKind::MatchTarget => "target matches (y/n/blank)",
            FieldKind::MatchPayload => "payload hash matches (y/n/blank)",
            FieldKind::MatchOwner => "owner matches (y/n/blank)",
            FieldKind::MatchVersion => "version matches (y/n/blank)",
            FieldKind::EffectCount => "effect count (blank: unknown)",
            FieldKind::ProviderRequestId => "provider request id",
            FieldKind::Source => "source",
            FieldKind::Reference => "reference (where you looked)",
            FieldKind::Rationale => "rationale",
        }
    }

    /// The inputs an action needs, the rationale last.
    fn for_action(kind: ActionKind) -> Vec<FieldKind> {
        use FieldKind as F;
        let mut fields = match kind {
            ActionKind::Assign => vec![F::Owner],
            ActionKind::Schedule => vec![F::At],
            ActionKind::Accept => vec![F::RepairRef],
            ActionKind::Reconcile => vec![
                F::Found,
                F::MatchTarget,
                F::MatchPayload,
                F::MatchOwner,
                F::MatchVersion,
                F::EffectCount,
                F::ProviderRequestId,
                F::Source,
                F::Reference,
            ],
            _ => Vec::new(),
        };
        fields.push(F::Rationale);
        fields
    }
}

/// One input of the form: the shared text-area wrapper with its meaning.
#[derive(Debug, Clone)]
pub struct Field {
    pub kind: FieldKind,
    pub input: Prompt,
}

/// The answer of an apply, as the dialog shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Written: the effect and its audit row.
    Applied(Box<Applied>),
    /// A guard refused it at commit time.
    Refused { rule: Rule, reason: String },
    /// Someone else changed the operation first (G8).
    Conflict {
        by: String,
        at: DateTime<Utc>,
        expected: i64,
        current: i64,
    },
    /// The store could not be reached or the operation is not visible.
    Failed(String),
}

impl From<Result<Applied, ReviewError>> for Verdict {
    fn from(result: Result<Applied, ReviewError>) -> Self {
        match result {
            Ok(applied) => Verdict::Applied(Box::new(applied)),
            Err(ReviewError::Refused(r)) => Verdict::Refused {
                rule: r.rule,
                reason: r.reason,
            },
            Err(ReviewError::Conflict {
                by,
                at,
                expected,
                current,
                ..
            }) => Verdict::Conflict {
                by,
                at,
                expected,
                current,
            },
            Err(e) => Verdict::Failed(e.to_string()),
        }
    }
}

/// Where the dialog is.
#[derive(Debug, Clone)]
pub enum Step {
    /// Choosing among the actions.
    Pick,
    /// Filling the inputs of the picked action and the rationale.
    Form { fields: Vec<Field>, focus: usize },
    /// The exact effect, waiting for the second step.
    Confirm {
        fields: Vec<Field>,
        action: Box<Action>,
        rationale: Rationale,
        effect: Box<Effect>,
    },
    /// The apply is running.
    Applying { effect: Box<Effect> },
    /// The apply answered.
    Done(Verdict),
}

/// What the dialog asks the console to do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Close the dialog.
    Close,
    /// Apply `action` against the version shown.
    Apply {
        id: OperationId,
        action: Box<Action>,
        rationale: Rationale,
        expected: i64,
    },
}

/// The open review dialog on one operation, at the version it was opened on.
#[derive(Debug, Clone)]
pub struct ReviewDialog {
    pub detail: Box<OperationDetail>,
    /// Allowed actions first, then the refused ones.
    pub options: Vec<ActionOption>,
    /// Index into `options` of the highlighted action.
    pub cursor: usize,
    pub step: Step,
    /// A problem with what was typed (bad input, short rationale, refusal).
    pub error: Option<String>,
}

impl ReviewDialog {
    /// Opens on `detail`, with every action decided now for `actor`.
    pub fn new(detail: OperationDetail, actor: &Actor, now: DateTime<Utc>) -> Self {
        let mut options = rules::options(&detail, actor, now);
        options.sort_by_key(|o| o.outcome.is_err());
        ReviewDialog {
            detail: Box::new(detail),
            options,
            cursor: 0,
            step: Step::Pick,
            error: None,
        }
    }

    pub fn id(&self) -> &OperationId {
        &self.detail.row.operation.id
    }

    /// How many actions are allowed now.
    pub fn allowed(&self) -> usize {
        self.options.iter().filter(|o| o.outcome.is_ok()).count()
    }

    /// Moves the highlight among the allowed actions.
    pub fn step_cursor(&mut self, delta: i64) {
        if !matches!(self.step, Step::Pick) {
            return;
        }
        let last = self.allowed().saturating_sub(1) as i64;
        let to = (self.cursor as i64).saturating_add(delta).clamp(0, last);
        self.cursor = usize::try_from(to).unwrap_or(0);
    }

    /// `Enter`: pick, preview, or confirm, depending on the step.
    pub fn accept(&mut self, actor: &Actor, now: DateTime<Utc>) -> Option<Request> {
        self.error = None;
        match &mut self.step {
            Step::Pick => {
                let option = self
                    .options
                    .get(self.cursor)
                    .filter(|o| o.outcome.is_ok())?;
                let fields = FieldKind::for_action(option.action.kind())
                    .into_iter()
                    .map(|kind| Field {
                        kind,
                        input: Prompt::new(kind.label(), &default_text(kind, &self.detail)),
                    })
                    .collect::<Vec<_>>();
                self.step = Step::Form { fields, focus: 0 };
                None
            }
            Step::Form { fields, .. } => {
                let fields = fields.clone();
                match self.preview(&fields, actor, now) {
                    Ok((action, rationale, effect)) => {
                        self.step = Step::Confirm {
                            fields,
                            action: Box::new(action),
                            rationale,
                            effect: Box::new(effect),
                        };
                    }
                    Err(message) => self.error = Some(message),
                }
                None
            }
            Step::Confirm {
                action,
                rationale,
                effect,
                ..
            } => {
                let request = Request::Apply {
                    id: self.detail.row.operation.id.clone(),
                    action: action.clone(),
                    rationale: rationale.clone(),
                    expected: self.detail.row.version,
                };
                self.step = Step::Applying {
                    effect: effect.clone(),
                };
                Some(request)
            }
            Step::Applying { .. } => None,
            Step::Done(_) => Some(Request::Close),
        }
    }

    /// `Esc`: one step back; from the list, or once done, closes.
    pub fn back(&mut self) -> Option<Request> {
        self.error = None;
        match std::mem::replace(&mut self.step, Step::Pick) {
            Step::Pick | Step::Done(_) => Some(Request::Close),
            Step::Form { .. } => None,
            Step::Confirm { fields, .. } => {
                let focus = fields.len().saturating_sub(1);
                self.step = Step::Form { fields, focus };
                None
            }
            applying @ Step::Applying { .. } => {
                self.step = applying;
                None
            }
        }
    }

    /// `Tab` / `S-Tab` between the inputs of the form.
    pub fn next_field(&mut self, delta: i64) {
        if let Step::Form { fields, focus } = &mut self.step {
            let count = fields.len().max(1) as i64;
            let to = (*focus as i64 + delta).rem_euclid(count);
            *focus = usize::try_from(to).unwrap_or(0);
        }
    }

    /// A key typed into the focused input.
    pub fn type_key(&mut self, key: crossterm::event::KeyEvent) {
        if let Step::Form { fields, focus } = &mut self.step
            && let Some(field) = fields.get_mut(*focus)
        {
            field.input.input(key);
        }
    }

    /// The verdict of the apply.
    pub fn finish(&mut self, verdict: Verdict) {
        self.step = Step::Done(verdict);
    }

    /// Reads the form into an action and a rationale, and decides it on the
    /// version shown: the exact effect the confirm will commit.
    fn preview(
        &self,
        fields: &[Field],
        actor: &Actor,
        now: DateTime<Utc>,
    ) -> Result<(Action, Rationale, Effect), String> {
        let option = self
            .options
            .get(self.cursor)
            .ok_or_else(|| "no action is selected".to_owned())?;
        let text = |kind: FieldKind| {
            fields
                .iter()
                .find(|f| f.kind == kind)
                .map(|f| f.input.text().trim().to_owned())
                .unwrap_or_default()
        };
        let rationale = Rationale::parse(&text(FieldKind::Rationale))?;
        let action = match &option.action {
            Action::Assign { .. } => {
                action_from_input(ActionKind::Assign, &text(FieldKind::Owner))?
            }
            Action::Schedule { .. } => {
                action_from_input(ActionKind::Schedule, &text(FieldKind::At))?
            }
            Action::Accept { .. } => {
                action_from_input(ActionKind::Accept, &text(FieldKind::RepairRef))?
            }
            Action::Reconcile(_) => Action::Reconcile(reconcile_input(&text)?),
            other => other.clone(),
        };
        let effect = rules::decide(
            &self.detail,
            &action,
            actor,
            &rationale,
            self.detail.row.version,
            now,
        )
        .map_err(|r| format!("refused: {}: {}", r.rule, r.reason))?;
        Ok((action, rationale, effect))
    }
}

/// The one input `kind` needs besides the rationale when it is the same for
/// every operation (bulk triage), if any.
pub fn input_label(kind: ActionKind) -> Option<&'static str> {
    match kind {
        ActionKind::Resolve => Some("resolve to (SUCCEEDED, FAILED, PARTIAL)"),
        ActionKind::Accept => Some(FieldKind::RepairRef.label()),
        ActionKind::Assign => Some(FieldKind::Owner.label()),
        ActionKind::Schedule => Some(FieldKind::At.label()),
        _ => None,
    }
}

/// The action `kind` with its one input read from `text` (see [`input_label`]);
/// kinds without an input ignore it. `reconcile` takes a form of its own.
pub fn action_from_input(kind: ActionKind, text: &str) -> Result<Action, String> {
    let text = text.trim();
    Ok(match kind {
        ActionKind::Resolve => Action::Resolve {
            to: State::parse(&text.to_ascii_uppercase())
                .ok_or_else(|| format!("resolve to {text:?}: one of {}", State::expected()))?,
        },
        ActionKind::Accept => Action::Accept {
            repair_ref: required(text, "the manual repair reference")?,
        },
        ActionKind::Assign => Action::Assign {
            owner: required(text, "the new owner")?,
        },
        ActionKind::Schedule => Action::Schedule {
            at: parse_instant(text).map_err(|e| {
                format!("next observation {text:?}: {e} (e.g. 2026-09-05T12:00:00Z)")
            })?,
        },
        ActionKind::Reconcile => {
            return Err(
                "reconcile records one lookup of one operation: review it on its own".into(),
            );
        }
        ActionKind::AuthorizeRetry => Action::AuthorizeRetry,
        ActionKind::ApproveCompensation => Action::ApproveCompensation,
        ActionKind::ApproveResume => Action::ApproveResume,
        ActionKind::MarkCompensated => Action::MarkCompensated,
        ActionKind::MarkResumed => Action::MarkResumed,
        ActionKind::Revalidate => Action::Revalidate,
        ActionKind::Block => Action::Block,
        ActionKind::Comment => Action::Comment,
        ActionKind::Confirm => Action::Confirm,
        ActionKind::Reject => Action::Reject,
    })
}

/// What an input starts with: the values the core's own default would use.
fn default_text(kind: FieldKind, detail: &OperationDetail) -> String {
    match kind {
        FieldKind::Owner => detail.row.operation.owner.clone(),
        FieldKind::Source => ObservationSource::PROVIDER_STATUS.to_owned(),
        _ => String::new(),
    }
}

fn required(text: &str, what: &str) -> Result<String, String> {
    if text.is_empty() {
        Err(format!("{what} is required"))
    } else {
        Ok(text.to_owned())
    }
}

/// `y`/`yes`, `n`/`no`, or blank for "not looked at".
fn yes_no(text: &str, what: &str) -> Result<Option<bool>, String> {
    match text.to_ascii_lowercase().as_str() {
        "" => Ok(None),
        "y" | "yes" => Ok(Some(true)),
        "n" | "no" => Ok(Some(false)),
        other => Err(format!("{what}: {other:?} is not y or n")),
    }
}

fn reconcile_input(text: &dyn Fn(FieldKind) -> String) -> Result<ReconcileInput, String> {
    let found = yes_no(&text(FieldKind::Found), "found")?
        .ok_or_else(|| "found: say what the lookup showed, y or n".to_owned())?;
    let matches = Matches {
        target: yes_no(&text(FieldKind::MatchTarget), "target matches")?,
        payload_hash: yes_no(&text(FieldKind::MatchPayload), "payload hash matches")?,
        owner: yes_no(&text(FieldKind::MatchOwner), "owner matches")?,
        version: yes_no(&text(FieldKind::MatchVersion), "version matches")?,
    };
    let any = [
        matches.target,
        matches.payload_hash,
        matches.owner,
        matches.version,
    ]
    .iter()
    .any(Option::is_some);
    let count = text(FieldKind::EffectCount);
    let effect_count = if count.is_empty() {
        None
    } else {
        Some(
            count
                .parse::<u32>()
                .map_err(|_| format!("effect count {count:?} is not a whole number"))?,
        )
    };
    let optional = |kind| Some(text(kind)).filter(|t: &String| !t.is_empty());
    Ok(ReconcileInput {
        source: required(&text(FieldKind::Source), "the source")?,
        found,
        matches: any.then_some(matches),
        effect_count,
        provider_request_id: optional(FieldKind::ProviderRequestId),
        reference: optional(FieldKind::Reference),
        raw_hash: None,
        id: None,
        observed_at: None,
    })
}

/// A dialog over the console that takes keys in its own context: the review
/// dialog and the bulk triage dialog share how a key becomes a step.
pub trait Dialog {
    /// What the dialog asks the console to do.
    type Request;
    /// Where its keys are looked up.
    const CONTEXT: Context;
    /// Whether keys are text now (only the dialog's own keys act then).
    fn typing(&self) -> bool;
    fn accept(&mut self, actor: &Actor, now: DateTime<Utc>) -> Option<Self::Request>;
    fn back(&mut self) -> Option<Self::Request>;
    fn step_cursor(&mut self, delta: i64);
    fn next_field(&mut self, _delta: i64) {}
    fn type_key(&mut self, key: KeyEvent);
}

/// What a key in a dialog came to.
pub enum Keyed<R> {
    /// Nothing for the console, or the dialog's request.
    Request(Option<R>),
    Quit,
    Help,
}

/// Runs `key` in `dialog`: its own keys first, the global ones while not typing,
/// any other key typed into its input.
pub fn dialog_key<D: Dialog>(
    dialog: &mut D,
    key: KeyEvent,
    actor: &Actor,
    now: DateTime<Utc>,
) -> Keyed<D::Request> {
    let typing = dialog.typing();
    let command = keymap::lookup(D::CONTEXT, key).or_else(|| {
        (!typing)
            .then(|| keymap::lookup(Context::Global, key))
            .flatten()
    });
    let request = match command {
        Some(Command::Accept) => dialog.accept(actor, now),
        Some(Command::Cancel) => dialog.back(),
        Some(Command::NextPane) => {
            dialog.next_field(1);
            None
        }
        Some(Command::PrevPane) => {
            dialog.next_field(-1);
            None
        }
        Some(Command::Up) if !typing => {
            dialog.step_cursor(-1);
            None
        }
        Some(Command::Down) if !typing => {
            dialog.step_cursor(1);
            None
        }
        Some(Command::Quit) => return Keyed::Quit,
        Some(Command::Help) if !typing => return Keyed::Help,
        _ if typing => {
            dialog.type_key(key);
            None
        }
        _ => None,
    };
    Keyed::Request(request)
}

impl Dialog for ReviewDialog {
    type Request = Request;
    const CONTEXT: Context = Context::Review;

    fn typing(&self) -> bool {
        matches!(self.step, Step::Form { .. })
    }

    fn accept(&mut self, actor: &Actor, now: DateTime<Utc>) -> Option<Request> {
        ReviewDialog::accept(self, actor, now)
    }

    fn back(&mut self) -> Option<Request> {
        ReviewDialog::back(self)
    }

    fn step_cursor(&mut self, delta: i64) {
        ReviewDialog::step_cursor(self, delta);
    }

    fn next_field(&mut self, delta: i64) {
        ReviewDialog::next_field(self, delta);
    }

    fn type_key(&mut self, key: KeyEvent) {
        ReviewDialog::type_key(self, key);
    }
}
