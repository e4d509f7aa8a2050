//! The queue and the detail together: a key goes to the one with the focus
//! (their own keys live in `screens/queue.rs` and `screens/detail/`), then to
//! the console's commands that reach across screens (panes, opening, search,
//! review, reload); the detail follows the queue's selection (after the
//! queue's keys here, after its answers in `App::answer`).

use crossterm::event::KeyEvent;

use super::{App, Effect, PromptKind};
use crate::core::ids::OperationId;
use crate::tui::keymap::Command;
use crate::tui::layout::{self, Pane};
use crate::tui::screens::{Outcome, Screen};

impl App {
    /// A request for the queue page, keeping the selection on `keep`; `recount`
    /// asks for the header counts too (the store or the time changed).
    pub(super) fn list(&mut self, keep: Option<OperationId>, recount: bool) -> Vec<Effect> {
        let ctx = ctx!(self);
        vec![self.queue.list(&ctx, keep, recount)]
    }

    /// A request for the operation on top of the detail stack.
    pub(super) fn load_top(&mut self) -> Vec<Effect> {
        self.detail.load_top()
    }

    /// A key for the queue or the detail, whichever has the focus; `None` when
    /// it is not theirs (the console's commands take it then).
    pub(super) fn browse_key(&mut self, key: KeyEvent) -> Option<Vec<Effect>> {
        let ctx = ctx!(self);
        let outcome = if self.focus == Pane::Queue {
            self.queue.key(key, &ctx)
        } else {
            self.detail.key(key, &ctx)
        };
        let mut effects = match outcome {
            Outcome::Pass => return None,
            // `Esc` at the first operation: back to the queue.
            Outcome::Close => {
                self.focus = Pane::Queue;
                Vec::new()
            }
            outcome => self.outcome(outcome),
        };
        if self.focus == Pane::Queue {
            effects.extend(self.sync_root());
        } else {
            self.leave_missing_items();
        }
        Some(effects)
    }

    /// With the queue in focus the detail follows its selection.
    pub(super) fn sync_root(&mut self) -> Vec<Effect> {
        if self.focus != Pane::Queue {
            return Vec::new();
        }
        match self.queue.selected_id.clone() {
            Some(id) if self.detail.set_root(&id) => self.load_top(),
            Some(_) => Vec::new(),
            None => {
                self.detail.clear();
                Vec::new()
            }
        }
    }

    /// The console's commands: those no screen took (quitting, help, panes,
    /// opening, search and filter, review, reload, the tabs), and moving
    /// through whatever has the focus under a tab that passed the key.
    pub(super) fn command(&mut self, command: Command) -> Vec<Effect> {
        if let Command::Show(screen) = command {
            return self.show(screen);
        }
        let page = self.pane_rows(i64::from(self.page_rows()));
        if let Some(delta) = command.movement(page) {
            return self.step(delta);
        }
        match command {
            Command::Quit => vec![Effect::Quit],
            Command::Help => {
                self.open_help();
                Vec::new()
            }
            Command::NextPane => self.cycle_pane(1),
            Command::PrevPane => self.cycle_pane(-1),
            Command::Open => self.open(),
            Command::Back => self.back(),
            Command::Search => self.open_prompt(PromptKind::Search),
            Command::Filter => self.open_prompt(PromptKind::Filter),
            Command::Colon => self.open_prompt(PromptKind::Command),
            Command::SwitchTab => {
                let ctx = ctx!(self);
                self.queue.switch_tab(&ctx)
            }
            Command::Reload => {
                if self.detail.accept_change() {
                    self.say("showing the new version", false);
                }
                self.refresh()
            }
            Command::Review => self.open_review(),
            Command::LookUp => self.look_up(),
            Command::AcknowledgeChain => {
                match self.chain.broken() {
                    Some((seq, _)) if self.chain.acknowledged => {
                        let text = format!(
                            "the break at seq {seq} is acknowledged (audited): transitions are offered; holdfast audit verify still names it"
                        );
                        self.say(&text, false);
                    }
                    Some((seq, _)) => {
                        let text = format!(
                            "acknowledging is an owner's audited act: holdfast audit acknowledge {seq} --reason \"…\", then R"
                        );
                        self.say(&text, true);
                    }
                    None => self.say("the audit chain is intact: nothing to acknowledge", false),
                }
                Vec::new()
            }
            Command::Bulk => self.open_bulk(),
            // The queue's, the detail's and the metrics tab's own keys (taken by
            // their screens).
            Command::Sort
            | Command::ClearQuery
            | Command::Mark
            | Command::MarkAll
            | Command::ClearMarks
            | Command::NextLink
            | Command::PrevLink
            | Command::Accept
            | Command::Cancel
            | Command::Apply
            | Command::Complete
            | Command::RepeatedErrors
            | Command::Show(_) => Vec::new(),
            // Movements, taken above.
            Command::Up
            | Command::Down
            | Command::PageUp
            | Command::PageDown
            | Command::Top
            | Command::Bottom => Vec::new(),
        }
    }

    /// Rows of the focused detail pane, for paging (the queue's page otherwise).
    pub(super) fn pane_rows(&self, queue_page: i64) -> i64 {
        match self.areas().pane(self.focus) {
            Some(area) if self.focus != Pane::Queue => i64::from(layout::inner(area).height.max(1)),
            _ => queue_page,
        }
    }

    /// Moves the selection or scroll of the focused pane by `delta`.
    pub(super) fn step(&mut self, delta: i64) -> Vec<Effect> {
        self.scroll(self.focus, delta)
    }

    /// Moves the queue's selection (the detail following it) or scrolls a
    /// detail pane.
    pub(super) fn scroll(&mut self, pane: Pane, delta: i64) -> Vec<Effect> {
        let ctx = ctx!(self);
        match pane {
            Pane::Queue => {
                let mut effects = self.queue.step(delta, &ctx);
                effects.extend(self.sync_root());
                effects
            }
            pane => {
                self.detail.scroll(pane, delta, &ctx);
                Vec::new()
            }
        }
    }

    /// Keeps every scroll offset within what the panes show now.
    pub(super) fn clamp_scrolls(&mut self) {
        let ctx = ctx!(self);
        self.detail.clamp_scrolls(&ctx);
    }

    /// Moves the focus off the items pane of an operation known to have none.
    /// One still loading keeps it (an answer for another operation says nothing
    /// about it).
    pub(super) fn leave_missing_items(&mut self) {
        if self.focus == Pane::Items && self.detail.current().is_some_and(|l| !l.has_items()) {
            self.focus = Pane::Evidence;
        }
    }

    /// The panes `Tab` visits now. While the operation is still loading its items
    /// pane is visited too: keys typed ahead must not wrap back to the queue (if
    /// it turns out to have no items, the focus moves to the evidence).
    pub fn panes(&self) -> Vec<Pane> {
        let mut panes = vec![Pane::Queue];
        if let Some(top) = self.detail.top() {
            panes.extend([Pane::Evidence, Pane::Timeline]);
            if top.loaded.as_ref().is_none_or(|l| l.has_items()) {
                panes.push(Pane::Items);
            }
        }
        panes
    }

    pub(super) fn cycle_pane(&mut self, delta: i64) -> Vec<Effect> {
        let panes = self.panes();
        let at = panes.iter().position(|p| *p == self.focus).unwrap_or(0);
        let next = (at as i64 + delta).rem_euclid(panes.len() as i64);
        self.focus = panes[usize::try_from(next).unwrap_or(0)];
        let effects = self.sync_root();
        self.clamp_scrolls();
        effects
    }

    /// `Enter` on the queue: into the detail of the selected hold.
    pub(super) fn open(&mut self) -> Vec<Effect> {
        if self.focus != Pane::Queue || self.detail.top().is_none() {
            return Vec::new();
        }
        self.focus = Pane::Evidence;
        self.clamp_scrolls();
        Vec::new()
    }

    /// `Esc` that no screen took: back along the links followed, then to the
    /// queue.
    pub(super) fn back(&mut self) -> Vec<Effect> {
        if self.detail.pop() {
            self.leave_missing_items();
            return self.load_top();
        }
        self.focus = Pane::Queue;
        self.sync_root()
    }
}
