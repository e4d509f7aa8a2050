//! The bulk triage dialog: its state (the ids of the marked operations that can
//! be read, the action to apply to all of them, the rationale, the dry run split
//! by bucket with each operation's decision, each operation's result once
//! applied), its keys and its drawing. Two steps: the dry run is the confirm
//! request, `y` on it is the confirmed apply. The dialog holds ids and the dry
//! run's lines, never the operations' details: reading the marked operations,
//! judging them and applying are effects the runner carries out one operation
//! at a time, whose answers come back to the dialog ([`Screen::answer`]).
//! Nothing here awaits.

use chrono::{DateTime, Utc};
use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph};

use super::dialog::{self, Dialog, shell};
use super::review::{Verdict, action_from_input, input_label, short};
use super::{Asker, Ctx, ModalKind, Outcome, Screen};
use crate::core::clock::human_instant;
use crate::core::ids::OperationId;
use crate::core::rules::{Action, ActionKind, Actor, Rationale};
use crate::core::sanitize::Clean;
use crate::core::triage::{Bucket, TriageLine};
use crate::review::Planned;
use crate::tui::keymap::Context;
use crate::tui::latest::Latest;
use crate::tui::message::{Answer, Effect, Tag};
use crate::tui::theme::Theme;
use crate::tui::widgets::{Doc, Prompt, line, max_scroll, span};

/// The actions bulk triage offers, in the order the action catalog places them
/// ([`crate::core::rules::catalog::BULK`]): every one but `reconcile`, which
/// records one lookup of one operation, and `approve`, which approves one exact
/// call a person has read the arguments of (G11).
pub const KINDS: &[ActionKind] = &crate::core::rules::catalog::BULK;

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
    /// The marked operations are being read again and judged for the dry run.
    Judging { rationale: Rationale },
    /// The dry run, waiting for the second step.
    DryRun {
        rationale: Rationale,
        lines: Vec<Planned>,
    },
    /// The apply is running.
    Applying,
    /// Each operation's result, in the order of the dry run.
    Done(Vec<(TriageLine, Verdict)>),
}

/// What the dialog asks the console to do after a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Request {
    Close,
    /// Judge `action` on every readable marked operation: the dry run.
    Judge {
        action: Box<Action>,
        rationale: Rationale,
    },
    /// Apply `action` to every operation of the dry run, each against the
    /// version the dry run read.
    Apply {
        planned: Vec<Planned>,
        action: Box<Action>,
        rationale: Rationale,
    },
}

/// The open bulk dialog over the marked operations.
#[derive(Debug, Clone)]
pub struct BulkDialog {
    /// The marked operations, by id.
    pub ids: Vec<OperationId>,
    /// Those that could be read, once read.
    pub readable: Vec<OperationId>,
    /// Marked operations that could not be read (gone, or no longer visible).
    pub missing: Vec<String>,
    /// Index into [`KINDS`]; the dialog opens on none, so that an action is
    /// always chosen, never taken by default.
    pub cursor: Option<usize>,
    /// The action with its input, once read.
    pub action: Option<Action>,
    pub step: Step,
    /// First line shown of a long dry run or result list.
    pub scroll: u16,
    /// A problem with what was typed.
    pub error: Option<String>,
    /// The load or apply the dialog waits on.
    pending: Latest<()>,
}

impl BulkDialog {
    /// Opens on the marked `ids`, with the effect that reads them fresh.
    pub fn open(ids: Vec<OperationId>) -> (Self, Effect) {
        let mut dialog = BulkDialog::new(ids.clone());
        let effect = Effect::BulkLoad {
            generation: dialog.request(),
            ids,
        };
        (dialog, effect)
    }

    /// The tag of a new load, dry run or apply, the one the dialog waits on.
    fn request(&mut self) -> Tag {
        Tag {
            by: Asker::Modal(ModalKind::Bulk),
            serial: self.pending.request(()),
        }
    }

    fn new(ids: Vec<OperationId>) -> Self {
        BulkDialog {
            ids,
            readable: Vec::new(),
            missing: Vec::new(),
            cursor: None,
            action: None,
            step: Step::Loading,
            scroll: 0,
            error: None,
            pending: Latest::default(),
        }
    }

    /// Whether `generation` answers the load or apply the dialog waits on (it
    /// stops waiting then).
    fn answered(&mut self, generation: u64) -> bool {
        self.pending.answer(generation).is_some()
    }

    /// The action chosen, if any.
    pub fn kind(&self) -> Option<ActionKind> {
        self.cursor.and_then(|at| KINDS.get(at).copied())
    }

    /// The action chosen in words.
    fn kind_name(&self) -> &'static str {
        self.kind().map_or("no action chosen", ActionKind::as_str)
    }

    /// The marked operations that could be read; the others are named.
    fn loaded(&mut self, readable: Vec<OperationId>, missing: Vec<String>) {
        self.readable = readable;
        self.missing = missing;
        self.step = Step::Pick;
    }

    /// The dry run, judged on the operations as they are now; those that can
    /// no longer be read are named beside the others.
    fn judged(&mut self, lines: Vec<Planned>, missing: Vec<String>) {
        let Step::Judging { rationale } = &self.step else {
            return;
        };
        let rationale = rationale.clone();
        self.readable = lines.iter().map(|p| p.line.id.clone()).collect();
        self.missing.extend(missing);
        self.scroll = 0;
        self.step = Step::DryRun { rationale, lines };
    }

    /// Reading the marked operations failed as a whole.
    fn failed(&mut self, error: String) {
        self.error = Some(error);
        self.step = Step::Done(Vec::new());
    }

    /// Reads the picked action with its input; on to the rationale.
    fn read_action(&mut self, text: &str, now: DateTime<Utc>) {
        let Some(kind) = self.kind() else {
            self.step = Step::Pick;
            return;
        };
        match action_from_input(kind, text, now) {
            Ok(action) => {
                self.action = Some(action);
                self.step = Step::Rationale(Box::new(Prompt::new("rationale", "")));
            }
            Err(e) => self.error = Some(e),
        }
    }

    /// Each operation's result; what the status line says of them, and the
    /// operations applied, which leave the marks (the others stay marked).
    fn finish(&mut self, results: Vec<(TriageLine, Verdict)>) -> Outcome {
        let applied: Vec<OperationId> = results
            .iter()
            .filter(|(_, v)| matches!(v, Verdict::Applied(_)))
            .map(|(line, _)| line.id.clone())
            .collect();
        let refused = results.len() - applied.len();
        let text = match refused {
            0 => format!("bulk: all {} applied", applied.len()),
            n => format!(
                "bulk: {} applied, {n} not applied (still marked)",
                applied.len()
            ),
        };
        self.scroll = 0;
        self.step = Step::Done(results);
        Outcome::Wrote {
            text,
            alert: refused > 0,
            unmark: applied,
        }
    }
}

impl Dialog for BulkDialog {
    type Request = Request;
    const CONTEXT: Context = Context::Bulk;

    /// Whether keys are text now.
    fn typing(&self) -> bool {
        matches!(self.step, Step::Input(_) | Step::Rationale(_))
    }

    /// `Enter`: pick, dry run, or confirm, depending on the step.
    fn accept(&mut self, _actor: &Actor, now: DateTime<Utc>) -> Option<Request> {
        self.error = None;
        match &self.step {
            Step::Loading | Step::Judging { .. } | Step::Applying => None,
            Step::Pick if self.readable.is_empty() => {
                self.error = Some("none of the marked operations can be read".to_owned());
                None
            }
            Step::Pick => {
                let Some(kind) = self.kind() else {
                    self.error = Some("choose the action first: ↑↓ move through the list".into());
                    return None;
                };
                match input_label(kind) {
                    Some(label) => self.step = Step::Input(Box::new(Prompt::new(label, ""))),
                    None => self.read_action("", now),
                }
                None
            }
            Step::Input(input) => {
                let text = input.text();
                self.read_action(&text, now);
                None
            }
            Step::Rationale(input) => {
                let Some(action) = &self.action else {
                    self.step = Step::Pick;
                    return None;
                };
                match Rationale::parse(&input.text()) {
                    Ok(rationale) => {
                        let request = Request::Judge {
                            action: Box::new(action.clone()),
                            rationale: rationale.clone(),
                        };
                        self.step = Step::Judging { rationale };
                        Some(request)
                    }
                    Err(e) => {
                        self.error = Some(e);
                        None
                    }
                }
            }
            Step::DryRun { .. } => {
                self.error = Some("press y to apply to all: Enter does not".into());
                None
            }
            Step::Done(_) => Some(Request::Close),
        }
    }

    /// `y`: applies the action of the dry run to every operation.
    fn confirm(&mut self) -> Option<Request> {
        match &self.step {
            Step::DryRun { rationale, lines } => {
                self.error = None;
                let action = self.action.clone()?;
                let request = Request::Apply {
                    planned: lines.clone(),
                    action: Box::new(action),
                    rationale: rationale.clone(),
                };
                self.step = Step::Applying;
                Some(request)
            }
            _ => None,
        }
    }

    /// `Esc`: one step back; from the list, or once done, closes.
    fn back(&mut self) -> Option<Request> {
        self.error = None;
        match &self.step {
            Step::Pick | Step::Done(_) | Step::Loading => Some(Request::Close),
            Step::Input(_) => {
                self.step = Step::Pick;
                None
            }
            Step::Rationale(_) => {
                self.step = match self.kind().and_then(input_label) {
                    Some(label) => Step::Input(Box::new(Prompt::new(label, ""))),
                    None => Step::Pick,
                };
                None
            }
            Step::DryRun { rationale, .. } => {
                self.step = Step::Rationale(Box::new(Prompt::new("rationale", rationale.as_str())));
                None
            }
            Step::Judging { .. } | Step::Applying => None,
        }
    }

    /// `Tab` from the action's input on to the rationale, `S-Tab` back.
    fn next_field(&mut self, delta: i64, now: DateTime<Utc>) {
        self.error = None;
        match &self.step {
            Step::Input(input) if delta > 0 => {
                let text = input.text();
                self.read_action(&text, now);
            }
            Step::Rationale(_) if delta < 0 => {
                self.back();
            }
            _ => {}
        }
    }

    /// `↑`/`↓`: the action in the list, or the scroll of the dry run and results.
    fn step_cursor(&mut self, delta: i64) {
        match self.step {
            Step::Pick => {
                let last = KINDS.len().saturating_sub(1) as i64;
                // From no action, moving down starts above the first and
                // moving up below the last.
                let from = self
                    .cursor
                    .map_or(if delta < 0 { last + 1 } else { -1 }, |at| at as i64);
                let to = from.saturating_add(delta).clamp(0, last);
                self.cursor = Some(usize::try_from(to).unwrap_or(0));
            }
            Step::DryRun { .. } | Step::Done(_) => {
                let to = i64::from(self.scroll).saturating_add(delta).max(0);
                self.scroll = u16::try_from(to).unwrap_or(u16::MAX);
            }
            _ => {}
        }
    }

    /// A key typed into the input or the rationale.
    fn type_key(&mut self, key: KeyEvent) {
        if let Step::Input(input) | Step::Rationale(input) = &mut self.step {
            input.input(key);
        }
    }

    fn request(&mut self, request: Request, ctx: &Ctx) -> Outcome {
        match request {
            Request::Close => Outcome::Close,
            Request::Judge { action, rationale } => Outcome::Done(vec![Effect::BulkJudge {
                generation: self.request(),
                ids: self.readable.clone(),
                action,
                rationale,
                now: ctx.now,
            }]),
            Request::Apply {
                planned,
                action,
                rationale,
            } => Outcome::Done(vec![Effect::BulkApply {
                generation: self.request(),
                planned,
                action,
                rationale,
                now: ctx.now,
            }]),
        }
    }
}

impl Screen for BulkDialog {
    fn context(&self) -> Context {
        Context::Bulk
    }

    fn key(&mut self, key: KeyEvent, ctx: &Ctx) -> Outcome {
        dialog::key(self, key, ctx)
    }

    /// The load, the dry run or the apply the dialog waits on answered.
    fn answer(&mut self, generation: u64, answer: Answer, _ctx: &Ctx) -> Outcome {
        let ours = matches!(
            answer,
            Answer::BulkLoaded(_) | Answer::BulkJudged(_) | Answer::BulkApplied(_)
        );
        if !ours || !self.answered(generation) {
            return Outcome::Pass;
        }
        match answer {
            Answer::BulkLoaded(Ok((readable, missing))) => self.loaded(readable, missing),
            Answer::BulkJudged(Ok((lines, missing))) => self.judged(lines, missing),
            Answer::BulkLoaded(Err(e)) | Answer::BulkJudged(Err(e)) => self.failed(e),
            Answer::BulkApplied(results) => return self.finish(results),
            _ => {}
        }
        Outcome::done()
    }

    fn draw(&self, frame: &mut Frame, _area: Rect, ctx: &Ctx) {
        draw(frame, ctx, self);
    }
}

/// The buckets in the order the dry run lists them.
const BUCKETS: [Bucket; 4] = [
    Bucket::RetryEligible,
    Bucket::NeedsReconciliation,
    Bucket::NeedsCompensation,
    Bucket::Blocked,
];

/// Width of the id column of the dry run and the results.
const ID_WIDTH: usize = 10;

fn draw(frame: &mut Frame, ctx: &Ctx, dialog: &BulkDialog) {
    let theme = ctx.theme;
    let title = format!(
        " Bulk triage · {} marked · {} ",
        dialog.ids.len(),
        dialog.kind_name()
    );
    let hint = match &dialog.step {
        Step::Loading => "reading the marked operations… · Esc close",
        Step::Pick => "↑↓ choose the action · Enter rationale · Esc close",
        Step::Input(_) => "Enter or Tab on to the rationale · Esc back to the actions",
        Step::Rationale(_) => "Enter dry run (nothing is written) · S-Tab or Esc back",
        Step::Judging { .. } => "judging…",
        Step::DryRun { .. } => "y confirm and apply to all (Enter does not) · ↑↓ scroll · Esc back",
        Step::Applying => "applying…",
        Step::Done(_) => "↑↓ scroll · Enter or Esc close",
    };
    let body = shell(frame, ctx, &title, dialog.error.as_deref(), hint);
    let doc = match &dialog.step {
        Step::Loading => waiting(
            theme,
            &format!("reading the {} marked operations…", dialog.ids.len()),
        ),
        Step::Judging { .. } => waiting(
            theme,
            &format!(
                "dry run: judging {} on {} operations as they are now…",
                dialog.kind_name(),
                dialog.readable.len()
            ),
        ),
        Step::Pick => pick(theme, dialog),
        Step::Input(input) | Step::Rationale(input) => {
            let [head, field] =
                Layout::vertical([Constraint::Length(3), Constraint::Length(3)]).areas(body);
            let mut doc = Doc::default();
            doc.blank();
            doc.push(action_line(theme, dialog));
            frame.render_widget(Paragraph::new(doc.wrap(head.width)), head);
            let block = Block::default()
                .borders(Borders::ALL)
                .border_style(theme.focused_border())
                .title(span(
                    Clean::new(&match &dialog.step {
                        Step::Input(_) => format!("› {} ", input.label),
                        _ => "› rationale (required, at least 10 characters) ".to_owned(),
                    }),
                    theme.focused_border(),
                ));
            let box_inner = block.inner(field);
            frame.render_widget(block, field);
            input.draw_aligned(frame, box_inner, theme, 0);
            return;
        }
        Step::DryRun { lines, .. } => dry_run(theme, dialog, lines),
        Step::Applying => waiting(
            theme,
            &format!(
                "applying {} to {} operations, one audited transition each…",
                dialog.kind_name(),
                dialog.readable.len()
            ),
        ),
        Step::Done(results) => done(theme, results),
    };
    draw_scrolled(frame, body, doc.wrap(body.width), dialog.scroll);
}

/// One dim line saying what the dialog waits for.
fn waiting(theme: Theme, text: &str) -> Doc {
    let mut doc = Doc::default();
    doc.blank();
    doc.push(line(vec![span(Clean::new(text), theme.dim())]));
    doc
}

/// Lines scrolled by `scroll`, never past the last one.
fn draw_scrolled(frame: &mut Frame, area: Rect, lines: Vec<Line<'static>>, scroll: u16) {
    let scroll = scroll.min(max_scroll(lines.len(), area.height));
    frame.render_widget(Paragraph::new(lines).scroll((scroll, 0)), area);
}

/// `action block on 3 operations`.
fn action_line(theme: Theme, dialog: &BulkDialog) -> Line<'static> {
    line(vec![
        span(Clean::new("action "), theme.dim()),
        span(Clean::new(dialog.kind_name()), theme.title()),
        span(
            Clean::new(&format!(" on {} operations", dialog.readable.len())),
            theme.dim(),
        ),
    ])
}

/// The marked operations as read, the ones that could not be, and the actions.
fn pick(theme: Theme, dialog: &BulkDialog) -> Doc {
    let mut doc = Doc::default();
    doc.blank();
    let ids: Vec<&str> = dialog.readable.iter().map(OperationId::as_str).collect();
    doc.field(
        theme,
        "selection",
        Clean::new(&format!("{} operations: {}", ids.len(), ids.join(" "))),
        theme.plain(),
    );
    for missing in &dialog.missing {
        doc.push_indented(
            line(vec![span(
                Clean::new(&format!("not included: {missing}")),
                theme.warn(),
            )]),
            2,
        );
    }
    doc.blank();
    doc.push(line(vec![span(
        Clean::new("action for all of them (the dry run shows where it is refused)"),
        theme.title(),
    )]));
    for (i, kind) in KINDS.iter().enumerate() {
        let (marker, style) = if Some(i) == dialog.cursor {
            ("› ", theme.selected())
        } else {
            ("  ", theme.plain())
        };
        let asks = input_label(*kind).map_or(String::new(), |l| format!("  asks: {l}"));
        doc.push(line(vec![
            span(Clean::new(marker), theme.title()),
            span(Clean::new(kind.as_str()), style),
            span(Clean::new(&asks), theme.dim()),
        ]));
    }
    doc
}

/// The dry run: a summary, then each bucket with its operations, the reason they
/// are there, and the action's effect or refusal for each.
fn dry_run(theme: Theme, dialog: &BulkDialog, planned: &[Planned]) -> Doc {
    let lines: Vec<&TriageLine> = planned.iter().map(|p| &p.line).collect();
    let allowed = lines.iter().filter(|l| l.outcome.is_ok()).count();
    let mut doc = Doc::default();
    doc.blank();
    doc.push(line(vec![span(
        Clean::new(&format!(
            "dry run, nothing written: {} on {} operations · {allowed} allowed · {} refused",
            dialog.kind_name(),
            lines.len(),
            lines.len() - allowed
        )),
        theme.title(),
    )]));
    for bucket in BUCKETS {
        let members: Vec<&TriageLine> = lines
            .iter()
            .copied()
            .filter(|l| l.bucket == bucket)
            .collect();
        doc.blank();
        doc.push(line(vec![span(
            Clean::new(&format!("{} ({})", bucket.title(), members.len())),
            theme.title(),
        )]));
        for member in members {
            doc.push_indented(
                row(
                    theme,
                    member.id.as_str(),
                    (
                        format!("{:<11} ", member.state.as_str()),
                        theme.state(member.state),
                    ),
                    (member.why.clone(), theme.dim()),
                ),
                u16::try_from(ID_WIDTH + 2).unwrap_or(0),
            );
            let (text, style) = match &member.outcome {
                Ok(effect) => (format!("✓ allowed: {}", short(effect)), theme.good()),
                Err(refusal) => (
                    format!("✗ refused {}: {}", refusal.rule, refusal.reason),
                    theme.alert(),
                ),
            };
            doc.push_indented(
                line(vec![
                    span(Clean::new(&format!("  {:<ID_WIDTH$}", "")), theme.plain()),
                    span(Clean::new(&text), style),
                ]),
                u16::try_from(ID_WIDTH + 4).unwrap_or(0),
            );
        }
    }
    doc
}

/// Each operation's result, after a summary.
fn done(theme: Theme, results: &[(TriageLine, Verdict)]) -> Doc {
    let applied = results
        .iter()
        .filter(|(_, v)| matches!(v, Verdict::Applied(_)))
        .count();
    let mut doc = Doc::default();
    doc.blank();
    doc.push(line(vec![span(
        Clean::new(&format!(
            "{applied} applied · {} not applied, of {}",
            results.len() - applied,
            results.len()
        )),
        theme.title(),
    )]));
    doc.blank();
    for (member, verdict) in results {
        let (text, style) = match verdict {
            Verdict::Applied(a) => (
                format!("applied  {}, audit #{}", short(&a.effect), a.audit.seq),
                theme.good(),
            ),
            Verdict::Refused { rule, reason } => {
                (format!("refused  {rule}: {reason}"), theme.alert())
            }
            Verdict::Conflict { by, at, .. } => (
                format!(
                    "conflict G8: changed by {by} at {}; nothing applied",
                    human_instant(*at)
                ),
                theme.alert(),
            ),
            Verdict::Failed(message) => (format!("failed   {message}"), theme.alert()),
        };
        doc.push_indented(
            row(
                theme,
                member.id.as_str(),
                (format!("{:<21} ", member.bucket.title()), theme.dim()),
                (text, style),
            ),
            u16::try_from(ID_WIDTH + 24).unwrap_or(0),
        );
    }
    doc
}

/// One operation's line: its id, a column, and the text that wraps after them.
fn row(
    theme: Theme,
    id: &str,
    (column, column_style): (String, Style),
    (text, style): (String, Style),
) -> Line<'static> {
    line(vec![
        span(Clean::new(&format!("  {id:<ID_WIDTH$}")), theme.plain()),
        span(Clean::new(&column), column_style),
        span(Clean::new(&text), style),
    ])
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyCode;

    use super::*;
    use crate::core::model::State;
    use crate::review::Applied;
    use crate::tui::layout::Pane;
    use crate::tui::screens::fixture::{self, char, detail, id, key};

    const WHY: &str = "the provider confirmed every one";

    /// The request in `effects`, checked that the bulk dialog asked it.
    fn asked(effects: &[Effect]) -> u64 {
        let tag = fixture::tag(effects);
        assert_eq!(tag.by, Asker::Modal(ModalKind::Bulk));
        tag.serial
    }

    fn effects(outcome: Outcome) -> Vec<Effect> {
        match outcome {
            Outcome::Done(effects) => effects,
            other => panic!("effects expected: {other:?}"),
        }
    }

    /// A dialog on F01 and F02 of which only F01 could be read.
    fn loaded(ctx: &Ctx) -> BulkDialog {
        let (mut dialog, load) = BulkDialog::open(vec![id("F01"), id("F02")]);
        let serial = asked(std::slice::from_ref(&load));
        assert!(matches!(&load, Effect::BulkLoad { ids, .. } if ids.len() == 2));
        assert_eq!(dialog.key(key(KeyCode::Enter), ctx), Outcome::done());
        assert!(matches!(dialog.step, Step::Loading), "nothing to pick yet");
        let answer = Answer::BulkLoaded(Ok((vec![id("F01")], vec!["F02: not found".into()])));
        assert_eq!(dialog.answer(serial, answer, ctx), Outcome::done());
        assert!(matches!(dialog.step, Step::Pick));
        dialog
    }

    /// The first action bulk offers that takes no input but the rationale.
    fn plain_kind() -> usize {
        KINDS
            .iter()
            .position(|k| input_label(*k).is_none())
            .unwrap_or_else(|| panic!("every bulk action takes an input"))
    }

    /// Chooses [`plain_kind`], types the rationale and asks for the dry run;
    /// returns the request's serial and the action judged.
    fn judge(dialog: &mut BulkDialog, ctx: &Ctx) -> (u64, Action, Rationale) {
        for _ in 0..=plain_kind() {
            dialog.key(key(KeyCode::Down), ctx);
        }
        assert_eq!(dialog.cursor, Some(plain_kind()));
        assert_eq!(dialog.key(key(KeyCode::Enter), ctx), Outcome::done());
        assert!(matches!(dialog.step, Step::Rationale(_)));
        for c in WHY.chars() {
            dialog.key(char(c), ctx);
        }
        let effects = effects(dialog.key(key(KeyCode::Enter), ctx));
        let serial = asked(&effects);
        let Effect::BulkJudge {
            ids,
            action,
            rationale,
            now,
            ..
        } = &effects[0]
        else {
            panic!("{effects:?}");
        };
        assert_eq!((ids.as_slice(), *now), ([id("F01")].as_slice(), ctx.now));
        assert!(matches!(dialog.step, Step::Judging { .. }));
        (serial, (**action).clone(), rationale.clone())
    }

    /// Judged and shown as a dry run: the serial of the apply `y` asked for,
    /// and the line of F01.
    fn applying(dialog: &mut BulkDialog, ctx: &Ctx) -> (u64, TriageLine) {
        let (serial, action, rationale) = judge(dialog, ctx);
        let held = detail("F01", State::Unknown);
        let line = crate::core::triage::line(&held, &action, ctx.actor, &rationale, ctx.now);
        let planned = vec![Planned {
            line: line.clone(),
            version: 3,
        }];
        let answer = Answer::BulkJudged(Ok((planned.clone(), Vec::new())));
        assert_eq!(dialog.answer(serial, answer, ctx), Outcome::done());
        assert!(matches!(dialog.step, Step::DryRun { .. }));
        assert_eq!(dialog.key(key(KeyCode::Enter), ctx), Outcome::done());
        assert_eq!(
            dialog.error.as_deref(),
            Some("press y to apply to all: Enter does not")
        );
        let effects = effects(dialog.key(char('y'), ctx));
        assert!(matches!(&effects[0], Effect::BulkApply { planned: sent, .. } if *sent == planned));
        assert!(matches!(dialog.step, Step::Applying));
        (asked(&effects), line)
    }

    #[test]
    fn the_marked_are_read_then_an_action_must_be_chosen() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 120, 40, Pane::Queue);
        let mut dialog = loaded(&ctx);
        assert_eq!(dialog.readable, [id("F01")]);
        assert_eq!(dialog.missing, ["F02: not found"]);
        assert_eq!(dialog.key(key(KeyCode::Enter), &ctx), Outcome::done());
        assert_eq!(
            dialog.error.as_deref(),
            Some("choose the action first: ↑↓ move through the list")
        );
        dialog.key(key(KeyCode::Up), &ctx);
        assert_eq!(
            dialog.cursor,
            Some(KINDS.len() - 1),
            "up from none is the last"
        );
        assert_eq!(dialog.key(key(KeyCode::Esc), &ctx), Outcome::Close);
    }

    #[test]
    fn an_answer_for_another_dialog_is_dropped() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 120, 40, Pane::Queue);
        let (_, other) = BulkDialog::open(vec![id("F09")]);
        let mut dialog = loaded(&ctx);
        let answer = Answer::BulkLoaded(Ok((Vec::new(), Vec::new())));
        let serial = asked(std::slice::from_ref(&other));
        assert_eq!(dialog.answer(serial, answer, &ctx), Outcome::Pass);
        assert_eq!(dialog.readable, [id("F01")]);
    }

    #[test]
    fn a_failed_read_ends_the_dialog_with_why() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 120, 40, Pane::Queue);
        let (mut dialog, load) = BulkDialog::open(vec![id("F01")]);
        let serial = asked(std::slice::from_ref(&load));
        let answer = Answer::BulkLoaded(Err("store down".into()));
        assert_eq!(dialog.answer(serial, answer, &ctx), Outcome::done());
        assert_eq!(dialog.error.as_deref(), Some("store down"));
        assert!(matches!(&dialog.step, Step::Done(results) if results.is_empty()));
    }

    #[test]
    fn esc_steps_back_from_the_dry_run_to_the_rationale_typed() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 120, 40, Pane::Queue);
        let mut dialog = loaded(&ctx);
        let (serial, action, rationale) = judge(&mut dialog, &ctx);
        let held = detail("F01", State::Unknown);
        let line = crate::core::triage::line(&held, &action, &actor, &rationale, ctx.now);
        let planned = vec![Planned { line, version: 3 }];
        dialog.answer(serial, Answer::BulkJudged(Ok((planned, Vec::new()))), &ctx);
        assert_eq!(dialog.key(key(KeyCode::Esc), &ctx), Outcome::done());
        let Step::Rationale(typed) = &dialog.step else {
            panic!("back to the rationale: {:?}", dialog.step);
        };
        assert_eq!(typed.text(), WHY);
        dialog.key(key(KeyCode::Esc), &ctx);
        assert!(matches!(dialog.step, Step::Pick), "no input to go back to");
    }

    #[test]
    fn a_refused_apply_stays_marked_and_is_an_alert() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 120, 40, Pane::Queue);
        let mut dialog = loaded(&ctx);
        let (serial, line) = applying(&mut dialog, &ctx);
        let results = vec![(line, Verdict::Failed("store down".into()))];
        assert_eq!(
            dialog.answer(serial, Answer::BulkApplied(results.clone()), &ctx),
            Outcome::Wrote {
                text: "bulk: 0 applied, 1 not applied (still marked)".into(),
                alert: true,
                unmark: Vec::new(),
            }
        );
        assert!(matches!(&dialog.step, Step::Done(shown) if *shown == results));
        assert_eq!(
            dialog.answer(serial, Answer::BulkApplied(results), &ctx),
            Outcome::Pass
        );
    }

    #[test]
    fn the_operations_applied_leave_the_marks() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 120, 40, Pane::Queue);
        let mut dialog = loaded(&ctx);
        let (serial, line) = applying(&mut dialog, &ctx);
        let effect = line
            .outcome
            .clone()
            .unwrap_or_else(|r| panic!("the action is allowed on F01: {r:?}"));
        let audit = fixture::audit_row(8, "F01", effect.action.as_str(), effect.from, effect.to);
        let verdict = Verdict::Applied(Box::new(Applied { effect, audit }));
        assert_eq!(
            dialog.answer(serial, Answer::BulkApplied(vec![(line, verdict)]), &ctx),
            Outcome::Wrote {
                text: "bulk: all 1 applied".into(),
                alert: false,
                unmark: vec![id("F01")],
            }
        );
        assert_eq!(dialog.key(key(KeyCode::Enter), &ctx), Outcome::Close);
    }
}
