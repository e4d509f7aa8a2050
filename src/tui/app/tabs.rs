//! The tabs: which one shows, the registration of the screens shown in place of
//! the queue ([`App::tab_key`] and [`App::page_effects`]), showing one, opening
//! an operation from one in the detail panes, and the store's connection
//! status. Each tab owns its keys, requests and drawing in `tui/screens/`.

use crossterm::event::KeyEvent;

use super::{App, Effect};
use crate::core::ids::OperationId;
use crate::store::Link;
use crate::tui::keymap::Screen;
use crate::tui::layout::Pane;
use crate::tui::screens::queue::Tab;
use crate::tui::screens::{Ctx, Modal, Outcome, Screen as ScreenTrait};

/// What the body of the console shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Page {
    /// The held queue or all operations (the queue's own tab decides).
    #[default]
    Queue,
    Metrics,
    Audit,
}

impl App {
    /// The tab the header marks as shown.
    pub fn screen(&self) -> Screen {
        match (self.page, self.queue.tab) {
            (Page::Metrics, _) => Screen::Metrics,
            (Page::Audit, _) => Screen::Audit,
            (Page::Queue, Tab::Held) => Screen::Held,
            (Page::Queue, Tab::All) => Screen::All,
        }
    }

    /// A key for the tab that has the keys, when one other than the queue
    /// does; [`Outcome::Pass`] leaves it to the queue and detail keys.
    pub(super) fn tab_key(&mut self, key: KeyEvent) -> Outcome {
        let ctx = Ctx {
            actor: &self.actor,
            now: self.now,
            theme: self.theme,
            size: self.size,
        };
        let tab: &mut dyn ScreenTrait = match self.page {
            _ if self.focus != Pane::Queue => return Outcome::Pass,
            Page::Queue => return Outcome::Pass,
            Page::Metrics => &mut self.metrics,
            Page::Audit => &mut self.audit,
        };
        tab.key(key, &ctx)
    }

    /// Shows one tab; the queue tabs list again, the others ask for their data.
    pub(super) fn show(&mut self, screen: Screen) -> Vec<Effect> {
        self.focus = Pane::Queue;
        if let Some(Modal::Help(help)) = self.modal.take() {
            self.modal = help.under.map(|under| *under);
        }
        let (page, tab) = match screen {
            Screen::Held => (Page::Queue, Some(Tab::Held)),
            Screen::All => (Page::Queue, Some(Tab::All)),
            Screen::Metrics => (Page::Metrics, None),
            Screen::Audit => (Page::Audit, None),
        };
        self.page = page;
        let mut effects = Vec::new();
        if let Some(tab) = tab
            && tab != self.queue.tab
        {
            self.queue.tab = tab;
            self.queue.restart();
            effects.extend(self.list(None, false));
        }
        effects.extend(self.sync_root());
        effects.extend(self.page_effects());
        effects
    }

    /// Opens `id` in the detail panes over the tab; `Esc` comes back to it.
    pub(super) fn open_operation(&mut self, id: OperationId) -> Vec<Effect> {
        let from = match self.page {
            Page::Audit => "the audit tab",
            _ => "the metrics tab",
        };
        self.detail.clear();
        self.detail.set_root(&id);
        self.focus = Pane::Evidence;
        self.say(&format!("opened {id} from {from}; Esc comes back"), false);
        self.load_top()
    }

    /// Requests for the data of the tab on screen (none for the queue, which
    /// lists on its own).
    pub(super) fn page_effects(&mut self) -> Vec<Effect> {
        let ctx = Ctx {
            actor: &self.actor,
            now: self.now,
            theme: self.theme,
            size: self.size,
        };
        match self.page {
            Page::Queue => Vec::new(),
            Page::Metrics => self.metrics.refresh(&ctx),
            Page::Audit => self.audit.refresh(&ctx),
        }
    }

    /// Takes the store's connection status; `true` when it just came back, so
    /// that everything on screen is read again.
    pub(super) fn link_moved(&mut self, link: Option<Link>) -> bool {
        let Some(link) = link else {
            return false;
        };
        let back = link == Link::Connected && self.link != Link::Connected;
        if back {
            self.say(
                "the connection to the store is back; everything was read again",
                false,
            );
        }
        self.link = link;
        back
    }
}
