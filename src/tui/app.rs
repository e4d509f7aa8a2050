//! The console's state and its one `update` function. Every key, mouse event,
//! resize, poll and store answer arrives as a [`Message`]; `update` changes the
//! state and returns the [`Effect`]s to run (store queries, quitting). Nothing here
//! awaits, draws or touches the store, so every flow can be driven by a test.
//! This file routes: messages to their handler, keys to the modal, the tab, or
//! the queue or detail screen with the focus, then the console's commands, and
//! each effect's answer to the screen its tag names (`App::answer`); the
//! handlers live in `app/` by part of the screen.

use chrono::{DateTime, Utc};
use crossterm::event::{KeyEvent, KeyEventKind, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;

/// What a screen sees of the console, built from `App`'s fields so that a
/// screen field can be borrowed mutably beside it.
macro_rules! ctx {
    ($app:expr) => {
        $crate::tui::screens::Ctx {
            actor: &$app.actor,
            now: $app.now,
            theme: $app.theme,
            size: $app.size,
            focus: $app.focus,
        }
    };
}

mod browse;
mod dialogs;
mod query;
mod tabs;

use super::message::{Answer, Tag};
pub(crate) use super::message::{Effect, Message};
pub(crate) use super::screens::Page;
pub(crate) use super::screens::prompt::{PromptKind, PromptState};

use super::chain::Chain;
use super::keymap::{self, Context};
use super::layout::{self, Areas, Pane};
use super::screens::audit::AuditState;
use super::screens::bulk::BulkDialog;
use super::screens::detail::DetailState;
use super::screens::help::Help;
use super::screens::metrics::MetricsState;
use super::screens::queue::QueueState;
use super::screens::review::ReviewDialog;
use super::screens::tools::ToolsState;
use super::screens::{Asker, Ctx, Modal, Outcome, Screen};
use super::theme::Theme;
use crate::core::rules::Actor;
use crate::core::sanitize::Clean;
use crate::store::{Link, Live};

/// A one-line message in the status bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub text: Clean,
    /// Something went wrong or needs attention.
    pub alert: bool,
}

/// How the console starts.
#[derive(Debug, Clone)]
pub struct Options {
    pub actor: Actor,
    /// The identity is only claimed (`--as`, `HOLDFAST_AS` or the config file on a
    /// store without logins), not the OS user's or a database login: the header
    /// says so, since nothing checked it.
    pub claimed: bool,
    pub now: DateTime<Utc>,
    /// The clock is frozen (`--now`, the demo): shown in the header.
    pub frozen: bool,
    pub color: bool,
    /// Where the logs go, shown in the help overlay.
    pub log_path: Option<String>,
}

/// The whole state of the console.
#[derive(Debug, Clone)]
pub struct App {
    pub theme: Theme,
    pub actor: Actor,
    /// See [`Options::claimed`].
    pub claimed: bool,
    pub now: DateTime<Utc>,
    pub frozen: bool,
    pub size: Rect,
    pub focus: Pane,
    /// The one screen drawn over the console (prompt, help, a dialog), if any.
    pub modal: Option<Modal>,
    pub queue: QueueState,
    pub detail: DetailState,
    pub status: Option<Status>,
    pub log_path: Option<Clean>,
    /// The queue or another tab; an operation opened from a tab shows in the
    /// detail panes and `Esc` comes back to the tab.
    pub page: Page,
    pub metrics: MetricsState,
    pub audit: AuditState,
    pub tools: ToolsState,
    /// Whether the store's connection holds (a banner shows while it does not).
    pub link: Link,
    /// The audit chain's status; a break shows on every screen.
    pub chain: Chain,
    head: Option<i64>,
    /// The last poll could not reach the store (its message is on screen).
    unreachable: bool,
}

/// Lines the mouse wheel scrolls a text pane by.
const WHEEL_LINES: i64 = 3;

impl App {
    pub fn new(options: Options, size: Rect) -> Self {
        App {
            theme: Theme {
                color: options.color,
            },
            queue: QueueState::new(),
            actor: options.actor,
            claimed: options.claimed,
            now: options.now,
            frozen: options.frozen,
            size,
            focus: Pane::Queue,
            modal: None,
            detail: DetailState::default(),
            status: None,
            log_path: options.log_path.as_deref().map(Clean::new),
            page: Page::Queue,
            metrics: MetricsState::default(),
            audit: AuditState::default(),
            tools: ToolsState::default(),
            link: Link::Connected,
            chain: Chain::default(),
            head: None,
            unreachable: false,
        }
    }

    /// The first effects: the first page of the queue, and the chain verified.
    pub fn init(&mut self) -> Vec<Effect> {
        let mut effects = self.list(None, true);
        effects.push(self.verify());
        effects
    }

    /// A request to verify the audit chain.
    fn verify(&mut self) -> Effect {
        Effect::Verify {
            generation: self.chain.request(),
        }
    }

    /// Applies one message; returns the effects to run.
    pub fn update(&mut self, message: Message) -> Vec<Effect> {
        match message {
            Message::Key(key) if key.kind == KeyEventKind::Press => self.key(key),
            Message::Key(_) => Vec::new(),
            Message::Mouse(mouse) => self.mouse(mouse),
            Message::Resize(width, height) => {
                self.size = Rect::new(0, 0, width, height);
                let mut effects = Vec::new();
                if self.queue.scroll_to_selection(self.page_rows()) {
                    effects.extend(self.list(self.queue.selected_id.clone(), false));
                }
                self.clamp_scrolls();
                effects
            }
            Message::Poll { live, now } => self.poll(live, now),
            Message::Metrics { generation, result } => {
                self.answer(generation, Answer::Metrics(result))
            }
            Message::Judging {
                generation,
                progress,
            } => self.answer(generation, Answer::Judging(progress)),
            Message::Audit { generation, result } => self.answer(generation, Answer::Audit(result)),
            Message::Tools { generation, result } => self.answer(generation, Answer::Tools(result)),
            Message::Verified {
                generation,
                result,
                acknowledged,
            } => {
                // The first answer is no news: "verifies again" only follows a break.
                let was_broken = self.chain.broken().is_some();
                let moved = self.chain.apply(generation, result, acknowledged);
                self.audit.chain.clone_from(&self.chain.status);
                if moved {
                    match self.chain.broken() {
                        Some((seq, reason)) => {
                            let text = format!(
                                "⚠ the audit chain is broken at seq {seq} ({reason}): no transition until an owner acknowledges it (A says how) or it verifies again"
                            );
                            self.say(&text, true);
                        }
                        None if was_broken => self.say("the audit chain verifies again", false),
                        None => {}
                    }
                }
                Vec::new()
            }
            Message::Listed { generation, result } => {
                self.answer(generation, Answer::Listed(result))
            }
            Message::Loaded { generation, result } => {
                self.answer(generation, Answer::Loaded(result))
            }
            Message::Debounced { generation } => self.answer(generation, Answer::Debounced),
            Message::Reviewed {
                generation,
                verdict,
            } => self.answer(generation, Answer::Reviewed(verdict)),
            Message::Selected { generation, result } => {
                self.answer(generation, Answer::Selected(result))
            }
            Message::LookedUp { generation, result } => {
                self.answer(generation, Answer::LookedUp(result))
            }
            Message::BulkLoaded { generation, result } => {
                self.answer(generation, Answer::BulkLoaded(result))
            }
            Message::BulkJudged { generation, result } => {
                self.answer(generation, Answer::BulkJudged(result))
            }
            Message::BulkApplied {
                generation,
                results,
            } => self.answer(generation, Answer::BulkApplied(results)),
        }
    }

    /// The areas of the screen as it is now.
    pub fn areas(&self) -> Areas {
        layout::areas(self.size, self.focus, self.has_items())
    }

    /// Whether the operation open has an items pane.
    pub fn has_items(&self) -> bool {
        self.detail.has_items()
    }

    /// Whether the detail is on screen (side by side, or opened).
    pub fn detail_visible(&self) -> bool {
        layout::shows_detail(self.size) || self.focus != Pane::Queue
    }

    /// The search or filter prompt, when open.
    pub fn prompt(&self) -> Option<&PromptState> {
        match &self.modal {
            Some(Modal::Prompt(prompt)) => Some(prompt.as_ref()),
            _ => None,
        }
    }

    /// Whether the help overlay is open.
    pub fn help_open(&self) -> bool {
        matches!(self.modal, Some(Modal::Help(_)))
    }

    /// The review dialog, when open (under the help overlay or not).
    pub fn review(&self) -> Option<&ReviewDialog> {
        match self.modal.as_ref().map(Modal::base) {
            Some(Modal::Review(dialog)) => Some(dialog),
            _ => None,
        }
    }

    fn review_mut(&mut self) -> Option<&mut ReviewDialog> {
        match self.modal.as_mut().map(Modal::base_mut) {
            Some(Modal::Review(dialog)) => Some(dialog),
            _ => None,
        }
    }

    /// The bulk dialog, when open (under the help overlay or not).
    pub fn bulk(&self) -> Option<&BulkDialog> {
        match self.modal.as_ref().map(Modal::base) {
            Some(Modal::Bulk(dialog)) => Some(dialog),
            _ => None,
        }
    }

    /// What a screen sees of the console.
    pub fn ctx(&self) -> Ctx<'_> {
        Ctx {
            actor: &self.actor,
            now: self.now,
            theme: self.theme,
            size: self.size,
            focus: self.focus,
        }
    }

    /// Where the keys go now.
    pub fn context(&self) -> Context {
        match &self.modal {
            Some(Modal::Prompt(_)) => Context::Prompt,
            Some(Modal::Help(_)) => Context::Help,
            _ => self.help_context(),
        }
    }

    /// The context the help overlay describes (the one under it).
    pub fn help_context(&self) -> Context {
        if self.review().is_some() {
            Context::Review
        } else if self.bulk().is_some() {
            Context::Bulk
        } else if matches!(self.modal.as_ref().map(Modal::base), Some(Modal::Lookup(_))) {
            Context::Lookup
        } else if self.focus == Pane::Queue
            && let Some(screen) = self.page_screen()
        {
            screen.context()
        } else if self.focus == Pane::Queue {
            Context::Queue
        } else {
            Context::Detail
        }
    }

    /// Rows of the queue table (its page size).
    pub fn page_rows(&self) -> u16 {
        layout::page_rows(self.size)
    }

    fn say(&mut self, text: &str, alert: bool) {
        self.status = Some(Status {
            text: Clean::new(text),
            alert,
        });
    }

    /// Everything on screen, asked for again (the store changed).
    fn refresh(&mut self) -> Vec<Effect> {
        let mut effects = self.list(self.queue.selected_id.clone(), true);
        effects.extend(self.load_top());
        effects.extend(self.page_effects());
        effects.push(self.verify());
        effects
    }

    fn poll(&mut self, live: Result<Live, String>, now: DateTime<Utc>) -> Vec<Effect> {
        let mut effects = Vec::new();
        let back = self.link_moved(live.as_ref().map(|l| l.link).ok());
        let head = live.map(|l| l.head);
        if now.timestamp() != self.now.timestamp() {
            let requery = now.timestamp() / 10 != self.now.timestamp() / 10;
            self.now = now;
            self.detail.retime(&self.actor, now);
            if requery {
                effects.extend(self.list(self.queue.selected_id.clone(), true));
                effects.extend(self.page_effects());
            }
        }
        if head.is_ok() && self.unreachable {
            self.unreachable = false;
            self.say("the store answers again", false);
        }
        match head {
            Ok(head) if self.head != Some(head) => {
                let first = self.head.is_none();
                self.head = Some(head);
                if first {
                    effects.extend(self.list(self.queue.selected_id.clone(), true));
                } else {
                    effects = self.refresh();
                }
            }
            Ok(_) if back => effects = self.refresh(),
            Ok(_) => {}
            Err(e) => {
                self.unreachable = true;
                self.say(&format!("cannot reach the store: {e}"), true);
            }
        }
        effects
    }

    fn key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if self.modal.is_some() {
            return self.modal_key(key);
        }
        let Some(command) = keymap::lookup(self.context(), key) else {
            return Vec::new();
        };
        self.status = None;
        match self.tab_key(key) {
            Outcome::Pass => {}
            outcome => return self.outcome(outcome),
        }
        // The queue's and the detail's own keys, while one of them shows.
        let browsing = self.page == Page::Queue || self.focus != Pane::Queue;
        let handled = if browsing { self.browse_key(key) } else { None };
        match handled {
            Some(effects) => effects,
            None => self.command(command),
        }
    }

    /// A key for the screen drawn over the console (the help overlay or a
    /// dialog): one dispatch for all of them.
    fn modal_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let ctx = Ctx {
            actor: &self.actor,
            now: self.now,
            theme: self.theme,
            size: self.size,
            focus: self.focus,
        };
        let Some(screen) = self.modal.as_mut().and_then(Modal::screen_mut) else {
            return Vec::new();
        };
        let outcome = screen.key(key, &ctx);
        self.outcome(outcome)
    }

    /// Carries out what a screen's key came to.
    fn outcome(&mut self, outcome: Outcome) -> Vec<Effect> {
        match outcome {
            Outcome::Done(effects) => effects,
            Outcome::Say {
                text,
                alert,
                effects,
            } => {
                self.say(&text, alert);
                effects
            }
            Outcome::Pass => Vec::new(),
            Outcome::Quit => vec![Effect::Quit],
            Outcome::Help => {
                self.open_help();
                Vec::new()
            }
            Outcome::Close => {
                if let Some(Modal::Help(help)) = self.modal.take() {
                    self.status = None;
                    self.modal = help.under.map(|under| *under);
                }
                Vec::new()
            }
            Outcome::Open(id) => self.open_operation(id),
            Outcome::Show(screen) => self.show(screen),
            Outcome::Queue(filter) => self.show_queue(*filter),
            Outcome::Narrow(narrow) => self.narrow(narrow),
            Outcome::Left { id, text, effects } => {
                // The panes showed the operation that left: they follow the
                // new selection, so what is shown and what `r` reviews agree.
                if self.detail.stack.first().is_some_and(|f| f.id == id) {
                    self.focus = Pane::Queue;
                }
                self.say(&text, true);
                effects
            }
            Outcome::Wrote {
                text,
                alert,
                unmark,
            } => {
                for id in &unmark {
                    self.queue.marked.remove(id);
                }
                self.say(&text, alert);
                self.detail.reload_expected = true;
                self.refresh()
            }
        }
    }

    /// Hands an effect's answer to the screen that asked (its tag says which),
    /// then carries out what it came to. What reaches across screens stays
    /// here: the detail follows the queue's selection, and the review dialog
    /// reads back the operation the detail loaded.
    fn answer(&mut self, tag: Tag, answer: Answer) -> Vec<Effect> {
        let outcome = match self.asker_mut(tag.by) {
            (ctx, Some(screen)) => screen.answer(tag.serial, answer, &ctx),
            (_, None) => Outcome::Pass,
        };
        let taken = outcome != Outcome::Pass;
        let mut effects = self.outcome(outcome);
        match tag.by {
            Asker::Queue if taken => {
                self.detail.queue_loaded = self.queue.is_loaded();
                effects.extend(self.sync_root());
            }
            Asker::Detail => self.detail_answered(),
            _ => {}
        }
        effects
    }

    /// The screen `asker` names, if it is still there (a dialog since closed
    /// is not), with the context it sees.
    pub(super) fn asker_mut(&mut self, asker: Asker) -> (Ctx<'_>, Option<&mut dyn Screen>) {
        let ctx = ctx!(self);
        let screen: Option<&mut dyn Screen> = match asker {
            Asker::Queue => Some(&mut self.queue),
            Asker::Detail => Some(&mut self.detail),
            // A tab's screen, shown or not (with its arm in `page_screen`).
            Asker::Tab(Page::Queue) => None,
            Asker::Tab(Page::Metrics) => Some(&mut self.metrics),
            Asker::Tab(Page::Audit) => Some(&mut self.audit),
            Asker::Tab(Page::Tools) => Some(&mut self.tools),
            Asker::Modal(kind) => self
                .modal
                .as_mut()
                .map(Modal::base_mut)
                .filter(|modal| modal.kind() == kind)
                .and_then(Modal::screen_mut),
        };
        (ctx, screen)
    }

    /// After a detail answer: the review dialog reads back the operation it
    /// applied to, and the focus and scrolls fit what the panes show now.
    fn detail_answered(&mut self) {
        let read = self.detail.current().map(|l| {
            let row = &l.detail.row;
            (row.operation.id.clone(), row.operation.state, row.version)
        });
        if let Some((id, state, version)) = read
            && let Some(dialog) = self.review_mut()
        {
            dialog.read_back(&id, state, version);
        }
        self.leave_missing_items();
        self.clamp_scrolls();
    }

    /// The help overlay over what is open now, listing its keys.
    fn open_help(&mut self) {
        let help = Help::new(
            self.help_context(),
            self.modal.take().map(Box::new),
            self.log_path.clone(),
        );
        self.modal = Some(Modal::Help(help));
    }

    fn mouse(&mut self, mouse: MouseEvent) -> Vec<Effect> {
        let delta = match mouse.kind {
            MouseEventKind::ScrollDown => 1,
            MouseEventKind::ScrollUp => -1,
            _ => return Vec::new(),
        };
        if self.modal.is_some() {
            return Vec::new();
        }
        let pane = self.areas().pane_at(mouse.column, mouse.row);
        if pane == Some(Pane::Queue) && self.focus != Pane::Queue {
            // Browsing the queue again: the detail follows its selection.
            self.focus = Pane::Queue;
        }
        match pane {
            Some(pane @ (Pane::Evidence | Pane::Timeline)) => {
                self.scroll(pane, delta * WHEEL_LINES)
            }
            Some(pane) => self.scroll(pane, delta),
            None => Vec::new(),
        }
    }
}
