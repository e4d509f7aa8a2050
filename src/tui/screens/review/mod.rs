//! The review dialog: its state (the actions the core offers on one operation,
//! allowed ones to pick and refused ones with their rule, the inputs the picked
//! action needs and the rationale, the exact effect `rules::decide` answers
//! before anything is written, the verdict of the apply), its keys and its
//! drawing. Two steps, as in gitui: the preview is the confirm request, and a
//! distinct key confirms it, so a double `Enter` cannot apply: `y` for an
//! action that changes the state (or opens a proposal), the operation's id typed
//! for one of high or critical risk; `Enter` still confirms an action that
//! changes no state (a comment, an owner). Nothing here awaits: the apply is an
//! effect the runner carries out, and its verdict comes back to the dialog
//! ([`Screen::answer`]).

mod draw;
pub(crate) mod form;

use chrono::{DateTime, Utc};
use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;

use super::dialog::{self, Dialog};
use super::{Asker, Ctx, ModalKind, Outcome, Screen};
use crate::core::detail::OperationDetail;
use crate::core::ids::OperationId;
use crate::core::model::{Risk, State};
use crate::core::rules::{
    self, Action, ActionKind, ActionOption, Actor, Effect, Rationale, Rule, catalog,
};
use crate::review::{Applied, ReviewError};
use crate::tui::keymap::Context;
use crate::tui::latest::Latest;
use crate::tui::message::{self, Answer, Tag};
use crate::tui::widgets::Prompt;

pub(super) use draw::short;
pub(crate) use form::{Field, FieldKind, action_from_input, input_label};
use form::{Form, default_text};

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
        /// How the reviewer confirms it.
        confirm: Confirm,
    },
    /// The apply is running.
    Applying { effect: Box<Effect> },
    /// The apply answered.
    Done(Verdict),
}

/// How the effect previewed is confirmed.
#[derive(Debug, Clone)]
pub enum Confirm {
    /// It changes no state: `Enter` (or `y`) applies.
    Enter,
    /// It changes the state or opens a proposal: only `y` applies.
    Key,
    /// It changes the state of a high or critical operation: the id, typed
    /// here, then `Enter`.
    TypeId(Box<Prompt>),
}

impl Confirm {
    /// How `effect` on an operation of `risk` is confirmed.
    pub fn of(effect: &Effect, risk: Risk) -> Self {
        let changes = effect.to.is_some() || effect.proposal_only;
        match (changes, risk.needs_four_eyes()) {
            (false, _) => Confirm::Enter,
            (true, false) => Confirm::Key,
            (true, true) => Confirm::TypeId(Box::new(Prompt::new("type the id to apply", ""))),
        }
    }

    /// The keys of the confirm step, for the dialog's last line.
    pub fn hint(&self) -> &'static str {
        match self {
            Confirm::Enter => "Enter or y confirm and apply · Esc back to the inputs",
            Confirm::Key => "y confirm and apply (Enter does not) · Esc back to the inputs",
            Confirm::TypeId(_) => "type the id, then Enter to apply · Esc back to the inputs",
        }
    }
}

/// What the dialog asks the console to do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
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
    /// After a reconcile on a held operation: the next observation's time,
    /// offered (`+30m`) so the overdue mark can go; `Enter` schedules it through
    /// the review service, `Esc` skips it.
    pub follow_up: Option<FollowUp>,
    /// The state and version the operation is at since the apply: first as
    /// the applied effect says, then as the store reads it back.
    pub after: Option<(State, i64)>,
    /// The apply the dialog waits on.
    applying: Latest<()>,
}

/// The schedule offered after a reconcile.
#[derive(Debug, Clone)]
pub struct FollowUp {
    /// When, as typed (an instant or `+30m`).
    pub at: Prompt,
    /// The version the reconcile left the operation at.
    pub version: i64,
    /// The audit row of the reconcile, named in the schedule's rationale.
    pub after: i64,
}

/// What the follow-up offers first.
pub(crate) const FOLLOW_UP_DEFAULT: &str = "+30m";

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
            follow_up: None,
            after: None,
            applying: Latest::default(),
        }
    }

    pub fn id(&self) -> &OperationId {
        &self.detail.row.operation.id
    }

    /// How many actions are allowed now.
    pub fn allowed(&self) -> usize {
        self.options.iter().filter(|o| o.outcome.is_ok()).count()
    }

    /// Whether `generation` answers the apply the dialog waits on (it stops
    /// waiting then).
    fn answered(&mut self, generation: u64) -> bool {
        self.applying.answer(generation).is_some()
    }

    /// The operation read back after the apply: the title shows the state and
    /// version it is at now.
    pub fn read_back(&mut self, id: &OperationId, state: State, version: i64) {
        if self.after.is_some() && *id == self.detail.row.operation.id {
            self.after = Some((state, version));
        }
    }

    /// The verdict of the apply; after a reconcile that left a hold held, the
    /// next observation is offered when the core allows scheduling one.
    fn finish(&mut self, verdict: Verdict) {
        if let Verdict::Applied(applied) = &verdict {
            let effect = &applied.effect;
            self.after = Some((
                effect.to.unwrap_or(effect.from),
                effect.commit.expected_version + 1,
            ));
        }
        self.follow_up = match &verdict {
            Verdict::Applied(applied)
                if applied.effect.action == ActionKind::Reconcile
                    && applied.effect.to.is_none()
                    && applied.effect.from.is_held()
                    && self.schedule_allowed() =>
            {
                Some(FollowUp {
                    at: Prompt::new("next observation in", FOLLOW_UP_DEFAULT),
                    version: applied.effect.commit.expected_version + 1,
                    after: applied.audit.seq,
                })
            }
            _ => None,
        };
        self.step = Step::Done(verdict);
    }

    /// Whether the core allowed scheduling the next observation when the
    /// dialog opened.
    fn schedule_allowed(&self) -> bool {
        self.options
            .iter()
            .any(|o| matches!(o.action, Action::Schedule { .. }) && o.outcome.is_ok())
    }

    /// `Enter` on the follow-up: the schedule it names, applied at the version
    /// the reconcile left (the review service decides it again on that version).
    fn schedule_follow_up(&mut self, actor: &Actor, now: DateTime<Utc>) -> Option<Request> {
        let follow_up = self.follow_up.as_ref()?;
        let action = match action_from_input(ActionKind::Schedule, follow_up.at.text().trim(), now)
        {
            Ok(action) => action,
            Err(message) => {
                self.error = Some(message);
                return None;
            }
        };
        let rationale = match Rationale::parse(&format!(
            "next observation set after the reconcile recorded in audit #{}",
            follow_up.after
        )) {
            Ok(rationale) => rationale,
            Err(message) => {
                self.error = Some(message);
                return None;
            }
        };
        let expected = follow_up.version;
        let effect = match self.decide(&action, actor, &rationale, now) {
            Ok(effect) => effect,
            Err(message) => {
                self.error = Some(message);
                return None;
            }
        };
        self.follow_up = None;
        self.step = Step::Applying {
            effect: Box::new(effect),
        };
        Some(Request::Apply {
            id: self.detail.row.operation.id.clone(),
            action: Box::new(action),
            rationale,
            expected,
        })
    }

    /// What `action` does on the version shown, or the refusal in words.
    fn decide(
        &self,
        action: &Action,
        actor: &Actor,
        rationale: &Rationale,
        now: DateTime<Utc>,
    ) -> Result<Effect, String> {
        rules::decide(
            &self.detail,
            action,
            actor,
            rationale,
            self.detail.row.version,
            now,
        )
        .map_err(|r| format!("refused: {}: {}", r.rule, r.reason))
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
        let mut form = Form {
            text: &text,
            picked: &option.action,
            now,
        };
        let action = catalog::action(option.action.kind(), &mut form)?;
        let effect = self.decide(&action, actor, &rationale, now)?;
        Ok((action, rationale, effect))
    }
}

impl ReviewDialog {
    /// The apply of the effect previewed; the dialog waits on it.
    fn apply(&mut self) -> Option<Request> {
        let Step::Confirm {
            action,
            rationale,
            effect,
            ..
        } = &self.step
        else {
            return None;
        };
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
}

impl Dialog for ReviewDialog {
    type Request = Request;
    const CONTEXT: Context = Context::Review;

    fn typing(&self) -> bool {
        matches!(
            self.step,
            Step::Form { .. }
                | Step::Confirm {
                    confirm: Confirm::TypeId(_),
                    ..
                }
        ) || (matches!(self.step, Step::Done(_)) && self.follow_up.is_some())
    }

    /// `Enter`: pick, preview, or confirm, depending on the step.
    fn accept(&mut self, actor: &Actor, now: DateTime<Utc>) -> Option<Request> {
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
                        let confirm = Confirm::of(&effect, self.detail.row.operation.risk);
                        self.step = Step::Confirm {
                            fields,
                            action: Box::new(action),
                            rationale,
                            effect: Box::new(effect),
                            confirm,
                        };
                    }
                    Err(message) => self.error = Some(message),
                }
                None
            }
            Step::Confirm {
                confirm: Confirm::Key,
                ..
            } => {
                self.error = Some("press y to apply: Enter does not change the state".into());
                None
            }
            Step::Confirm {
                confirm: Confirm::TypeId(typed),
                ..
            } if typed.text().trim() != self.detail.row.operation.id.as_str() => {
                self.error = Some(format!(
                    "type {} exactly, then Enter, to apply",
                    self.detail.row.operation.id
                ));
                None
            }
            Step::Confirm { .. } => self.apply(),
            Step::Applying { .. } => None,
            Step::Done(_) if self.follow_up.is_some() => self.schedule_follow_up(actor, now),
            Step::Done(_) => Some(Request::Close),
        }
    }

    /// `y`: applies the effect previewed, unless its id must be typed.
    fn confirm(&mut self) -> Option<Request> {
        match &self.step {
            Step::Confirm {
                confirm: Confirm::Enter | Confirm::Key,
                ..
            } => {
                self.error = None;
                self.apply()
            }
            _ => None,
        }
    }

    /// `Esc`: one step back; from the list, or once done, closes.
    fn back(&mut self) -> Option<Request> {
        self.error = None;
        self.follow_up = None;
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

    /// Moves the highlight among the allowed actions.
    fn step_cursor(&mut self, delta: i64) {
        if !matches!(self.step, Step::Pick) {
            return;
        }
        let last = self.allowed().saturating_sub(1) as i64;
        let to = (self.cursor as i64).saturating_add(delta).clamp(0, last);
        self.cursor = usize::try_from(to).unwrap_or(0);
    }

    /// `Tab` / `S-Tab` between the inputs of the form.
    fn next_field(&mut self, delta: i64, _now: DateTime<Utc>) {
        if let Step::Form { fields, focus } = &mut self.step {
            let count = fields.len().max(1) as i64;
            let to = (*focus as i64 + delta).rem_euclid(count);
            *focus = usize::try_from(to).unwrap_or(0);
        }
    }

    /// A key typed into the focused input.
    fn type_key(&mut self, key: crossterm::event::KeyEvent) {
        match &mut self.step {
            Step::Form { fields, focus } => {
                if let Some(field) = fields.get_mut(*focus) {
                    field.key(key);
                }
            }
            Step::Confirm {
                confirm: Confirm::TypeId(typed),
                ..
            } => {
                typed.input(key);
            }
            Step::Done(_) => {
                if let Some(follow_up) = &mut self.follow_up {
                    follow_up.at.input(key);
                }
            }
            _ => {}
        }
    }

    fn request(&mut self, request: Request, ctx: &Ctx) -> Outcome {
        match request {
            Request::Close => Outcome::Close,
            Request::Apply {
                id,
                action,
                rationale,
                expected,
            } => Outcome::Done(vec![message::Effect::Review {
                generation: Tag {
                    by: Asker::Modal(ModalKind::Review),
                    serial: self.applying.request(()),
                },
                id,
                action,
                rationale,
                expected,
                now: ctx.now,
            }]),
        }
    }
}

impl Screen for ReviewDialog {
    fn context(&self) -> Context {
        Context::Review
    }

    fn key(&mut self, key: KeyEvent, ctx: &Ctx) -> Outcome {
        dialog::key(self, key, ctx)
    }

    /// The apply answered: the verdict shows in the dialog and on the status
    /// line, and everything is read again (the operation changed, by us or by
    /// someone else).
    fn answer(&mut self, generation: u64, answer: Answer, _ctx: &Ctx) -> Outcome {
        let Answer::Reviewed(verdict) = answer else {
            return Outcome::Pass;
        };
        if !self.answered(generation) {
            return Outcome::Pass;
        }
        let (text, alert) = said(&verdict);
        self.finish(verdict);
        Outcome::Wrote {
            text,
            alert,
            unmark: Vec::new(),
        }
    }

    fn draw(&self, frame: &mut Frame, _area: Rect, ctx: &Ctx) {
        draw::draw(frame, ctx, self);
    }
}

/// What the status line says of an apply's verdict, and whether as an alert.
fn said(verdict: &Verdict) -> (String, bool) {
    match verdict {
        Verdict::Applied(applied) => {
            let done = if applied.effect.proposal_only {
                "proposal opened for"
            } else {
                "applied to"
            };
            let text = format!(
                "{} {done} {} (audit #{})",
                applied.effect.action, applied.audit.draft.operation, applied.audit.seq
            );
            (text, false)
        }
        Verdict::Refused { rule, reason } => (format!("refused: {rule}: {reason}"), true),
        Verdict::Conflict { by, at, .. } => (
            format!(
                "refused: G8: changed by {by} at {}; reloaded",
                crate::core::clock::human_instant(*at)
            ),
            true,
        ),
        Verdict::Failed(e) => (e.clone(), true),
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyCode;

    use super::*;
    use crate::tui::layout::Pane;
    use crate::tui::screens::fixture::{self, char, detail, key};

    const WHY: &str = "checked with the provider by phone";

    /// A dialog on held F01, at version 3.
    fn dialog() -> ReviewDialog {
        ReviewDialog::new(
            detail("F01", State::Unknown),
            &fixture::actor(),
            fixture::now(),
        )
    }

    /// Moves the cursor to the first allowed action `pick` accepts, whose
    /// only input is the rationale; returns its effect as the list previews it.
    fn choose(
        dialog: &mut ReviewDialog,
        ctx: &Ctx,
        pick: impl Fn(&ActionOption, &Effect) -> bool,
    ) -> Effect {
        let at = dialog
            .options
            .iter()
            .position(|o| {
                o.outcome.as_ref().is_ok_and(|e| pick(o, e))
                    && FieldKind::for_action(o.action.kind()) == [FieldKind::Rationale]
            })
            .unwrap_or_else(|| panic!("no such action in {:?}", dialog.options));
        dialog.key(key(KeyCode::Home), ctx);
        for _ in 0..at {
            dialog.key(key(KeyCode::Down), ctx);
        }
        assert_eq!(dialog.cursor, at);
        dialog.options[at]
            .outcome
            .clone()
            .unwrap_or_else(|r| panic!("{r:?}"))
    }

    /// Picks the action under the cursor, types the rationale and previews it.
    fn preview(dialog: &mut ReviewDialog, ctx: &Ctx) {
        assert_eq!(dialog.key(key(KeyCode::Enter), ctx), Outcome::done());
        assert!(matches!(dialog.step, Step::Form { .. }));
        for c in WHY.chars() {
            dialog.key(char(c), ctx);
        }
        assert_eq!(dialog.key(key(KeyCode::Enter), ctx), Outcome::done());
        assert!(
            matches!(dialog.step, Step::Confirm { .. }),
            "{:?}",
            dialog.error
        );
    }

    /// The apply in `outcome`: its serial, checked that the dialog asked for it
    /// on F01 at the version shown, with the rationale typed.
    fn apply_of(outcome: Outcome) -> u64 {
        let Outcome::Done(effects) = outcome else {
            panic!("no apply: {outcome:?}");
        };
        let tag = fixture::tag(&effects);
        assert_eq!(tag.by, Asker::Modal(ModalKind::Review));
        let message::Effect::Review {
            id,
            rationale,
            expected,
            ..
        } = &effects[0]
        else {
            panic!("{effects:?}");
        };
        assert_eq!((id.as_str(), *expected), ("F01", 3));
        assert_eq!(rationale.as_str(), WHY);
        tag.serial
    }

    /// What an apply of `effect` on F01 answers, written as audit row 7.
    fn applied(effect: Effect) -> Verdict {
        let action = effect.action.as_str();
        let audit = fixture::audit_row(7, "F01", action, effect.from, effect.to);
        Verdict::Applied(Box::new(Applied { effect, audit }))
    }

    #[test]
    fn the_list_offers_allowed_actions_first_and_esc_closes() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 120, 40, Pane::Evidence);
        let mut dialog = dialog();
        let allowed = dialog.allowed();
        assert!(allowed > 1, "a held operation offers actions");
        assert!(dialog.options[..allowed].iter().all(|o| o.outcome.is_ok()));
        assert!(dialog.options[allowed..].iter().all(|o| o.outcome.is_err()));
        dialog.key(key(KeyCode::End), &ctx);
        assert_eq!(
            dialog.cursor,
            allowed - 1,
            "the refused ones are not picked"
        );
        dialog.key(char('k'), &ctx);
        assert_eq!(dialog.cursor, allowed - 2);
        assert_eq!(dialog.key(char('?'), &ctx), Outcome::Help);
        assert_eq!(dialog.key(key(KeyCode::Esc), &ctx), Outcome::Close);
    }

    #[test]
    fn an_action_changing_no_state_applies_on_enter_and_its_verdict_comes_back() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 120, 40, Pane::Evidence);
        let mut dialog = dialog();
        let effect = choose(&mut dialog, &ctx, |o, _| {
            o.action.kind() == ActionKind::Comment
        });
        preview(&mut dialog, &ctx);
        let serial = apply_of(dialog.key(key(KeyCode::Enter), &ctx));
        assert!(matches!(dialog.step, Step::Applying { .. }));
        assert_eq!(
            dialog.key(key(KeyCode::Esc), &ctx),
            Outcome::done(),
            "the apply runs on"
        );
        let answer = Answer::Reviewed(applied(effect));
        assert_eq!(
            dialog.answer(serial, answer.clone(), &ctx),
            Outcome::Wrote {
                text: "comment applied to F01 (audit #7)".into(),
                alert: false,
                unmark: Vec::new(),
            }
        );
        assert!(matches!(dialog.step, Step::Done(Verdict::Applied(_))));
        assert_eq!(dialog.after, Some((State::Unknown, 4)));
        dialog.read_back(&fixture::id("F01"), State::Unknown, 5);
        assert_eq!(dialog.after, Some((State::Unknown, 5)));
        assert_eq!(dialog.answer(serial, answer, &ctx), Outcome::Pass);
        assert_eq!(dialog.key(key(KeyCode::Enter), &ctx), Outcome::Close);
    }

    #[test]
    fn a_state_change_waits_for_y_not_enter() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 120, 40, Pane::Evidence);
        let mut dialog = dialog();
        choose(&mut dialog, &ctx, |_, e| e.to.is_some() && !e.proposal_only);
        preview(&mut dialog, &ctx);
        assert_eq!(dialog.key(key(KeyCode::Enter), &ctx), Outcome::done());
        assert_eq!(
            dialog.error.as_deref(),
            Some("press y to apply: Enter does not change the state")
        );
        apply_of(dialog.key(char('y'), &ctx));
    }

    #[test]
    fn esc_steps_back_from_the_preview_to_the_form_keeping_what_was_typed() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 120, 40, Pane::Evidence);
        let mut dialog = dialog();
        choose(&mut dialog, &ctx, |o, _| {
            o.action.kind() == ActionKind::Comment
        });
        preview(&mut dialog, &ctx);
        assert_eq!(dialog.key(key(KeyCode::Esc), &ctx), Outcome::done());
        let Step::Form { fields, .. } = &dialog.step else {
            panic!("back to the form: {:?}", dialog.step);
        };
        assert_eq!(fields[0].input.text(), WHY);
        assert_eq!(dialog.key(char('q'), &ctx), Outcome::done(), "q is typed");
    }

    #[test]
    fn a_refusal_or_a_conflict_at_commit_is_an_alert() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 120, 40, Pane::Evidence);
        let verdicts = [
            (
                Verdict::Refused {
                    rule: Rule::G8,
                    reason: "the version moved".into(),
                },
                "refused: G8: the version moved".to_owned(),
            ),
            (
                Verdict::Conflict {
                    by: "rev:bo".into(),
                    at: fixture::now(),
                    expected: 3,
                    current: 4,
                },
                format!(
                    "refused: G8: changed by rev:bo at {}; reloaded",
                    crate::core::clock::human_instant(fixture::now())
                ),
            ),
            (
                Verdict::Failed("store down".into()),
                "store down".to_owned(),
            ),
        ];
        for (verdict, text) in verdicts {
            let mut dialog = dialog();
            choose(&mut dialog, &ctx, |o, _| {
                o.action.kind() == ActionKind::Comment
            });
            preview(&mut dialog, &ctx);
            let serial = apply_of(dialog.key(char('y'), &ctx));
            assert_eq!(
                dialog.answer(serial, Answer::Reviewed(verdict), &ctx),
                Outcome::Wrote {
                    text,
                    alert: true,
                    unmark: Vec::new(),
                }
            );
            assert_eq!(dialog.after, None, "nothing was applied");
        }
    }
}
