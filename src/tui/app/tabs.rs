//! The tabs: which one shows, the screen each page shows in place of the queue
//! ([`App::page_screen`], beside the tab table `screens::TABS`), showing one, opening
//! an operation from one in the detail panes, and the store's connection
//! status. Each tab owns its keys, requests, answers and drawing in
//! `tui/screens/`.

use crossterm::event::KeyEvent;

use super::{App, Effect};
use crate::core::ids::OperationId;
use crate::store::{Link, OperationFilter};
use crate::tui::layout::Pane;
use crate::tui::screens::{
    self, Asker, Ctx, Modal, Outcome, Page, Screen as ScreenTrait, TabSpec, queue,
};

impl App {
    /// The tab the header marks as shown.
    pub fn screen(&self) -> TabSpec {
        let shown =
            |t: &&TabSpec| t.page == self.page && t.list.is_none_or(|list| list == self.queue.tab);
        screens::TABS
            .iter()
            .find(shown)
            .copied()
            .unwrap_or(screens::HELD)
    }

    /// The screen shown in place of the queue on the page chosen, if any: the
    /// place a tab's screen is registered (with its arm in `App::asker_mut`,
    /// which hands it its answers and keys).
    pub fn page_screen(&self) -> Option<&dyn ScreenTrait> {
        match self.page {
            Page::Queue => None,
            Page::Metrics => Some(&self.metrics),
            Page::Audit => Some(&self.audit),
            Page::Tools => Some(&self.tools),
        }
    }

    /// The same, to change, with the context it sees.
    fn page_screen_mut(&mut self) -> (Ctx<'_>, Option<&mut dyn ScreenTrait>) {
        self.asker_mut(Asker::Tab(self.page))
    }

    /// A key for the tab that has the keys, when one other than the queue
    /// does; [`Outcome::Pass`] leaves it to the queue and detail keys.
    pub(super) fn tab_key(&mut self, key: KeyEvent) -> Outcome {
        if self.focus != Pane::Queue {
            return Outcome::Pass;
        }
        match self.page_screen_mut() {
            (ctx, Some(screen)) => screen.key(key, &ctx),
            (_, None) => Outcome::Pass,
        }
    }

    /// Shows the tab of `key`; the queue tabs list again, the others ask for
    /// their data.
    pub(super) fn show(&mut self, key: char) -> Vec<Effect> {
        let Some(shown) = screens::tab(key) else {
            return Vec::new();
        };
        self.focus = Pane::Queue;
        if let Some(Modal::Help(help)) = self.modal.take() {
            self.modal = help.under.map(|under| *under);
        }
        self.page = shown.page;
        let mut effects = Vec::new();
        if let Some(tab) = shown.list
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

    /// Shows the held queue narrowed by `filter` alone, its search cleared
    /// (the Tools tab's `Enter`): the filter line shows it, and `Esc` in the
    /// queue clears it.
    pub(super) fn show_queue(&mut self, filter: OperationFilter) -> Vec<Effect> {
        let described = crate::tui::filter::describe(&filter);
        self.focus = Pane::Queue;
        self.page = Page::Queue;
        self.queue.tab = queue::Tab::Held;
        self.queue.filter = filter;
        self.queue.search.clear();
        self.queue.restart();
        self.say(
            &format!("the held queue filtered by {described}; Esc clears the filter"),
            false,
        );
        let mut effects = self.list(None, false);
        effects.extend(self.sync_root());
        effects
    }

    /// Opens `id` in the detail panes over the tab; `Esc` comes back to it.
    pub(super) fn open_operation(&mut self, id: OperationId) -> Vec<Effect> {
        let from = self.page_screen().map_or("the queue", ScreenTrait::name);
        self.detail.clear();
        self.detail.set_root(&id);
        self.focus = Pane::Evidence;
        self.say(&format!("opened {id} from {from}; Esc comes back"), false);
        self.load_top()
    }

    /// Requests for the data of the tab on screen (none for the queue, which
    /// lists on its own).
    pub(super) fn page_effects(&mut self) -> Vec<Effect> {
        match self.page_screen_mut() {
            (ctx, Some(screen)) => screen.refresh(&ctx),
            (_, None) => Vec::new(),
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
