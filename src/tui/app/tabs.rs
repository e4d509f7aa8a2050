//! The keys and requests of the metrics and audit tabs, and the store's
//! connection status. Each tab keeps its own state ([`MetricsState`],
//! [`AuditState`]); this part of `update` routes keys to them, asks the runner
//! for their data when they show or the store moves, and opens the operation
//! under their cursor in the detail panes.
//!
//! [`MetricsState`]: crate::tui::screens::metrics::MetricsState
//! [`AuditState`]: crate::tui::screens::audit::AuditState

use super::{App, Effect};
use crate::core::ids::OperationId;
use crate::store::Link;
use crate::tui::keymap::{Command, Screen};
use crate::tui::layout::Pane;
use crate::tui::screens::Modal;
use crate::tui::screens::metrics::MetricsFocus;
use crate::tui::screens::queue::Tab;

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

    /// Whether a tab other than the queue has the keys.
    fn on_tab(&self) -> bool {
        self.page != Page::Queue && self.focus == Pane::Queue
    }

    /// Handles `command` when it belongs to the tabs; `None` leaves it to the
    /// queue and detail.
    pub(super) fn tab_command(&mut self, command: Command) -> Option<Vec<Effect>> {
        if let Command::Show(screen) = command {
            return Some(self.show(screen));
        }
        if !self.on_tab() {
            return None;
        }
        let rows = i64::from(self.page_rows());
        let delta = match command {
            Command::Up => -1,
            Command::Down => 1,
            Command::PageUp => -rows,
            Command::PageDown => rows,
            Command::Top => i64::MIN / 2,
            Command::Bottom => i64::MAX / 2,
            Command::SwitchTab => return Some(self.show(Screen::Held)),
            Command::Open => return Some(self.open_on_tab()),
            Command::Back if self.page == Page::Metrics => {
                self.metrics.focus = MetricsFocus::Figures;
                return Some(Vec::new());
            }
            Command::NextPane | Command::PrevPane if self.page == Page::Metrics => {
                self.toggle_metrics_focus();
                return Some(Vec::new());
            }
            Command::NextPane | Command::PrevPane => return Some(Vec::new()),
            _ => return None,
        };
        match self.page {
            Page::Metrics
                if matches!(command, Command::PageUp | Command::PageDown)
                    && self.metrics.focus == MetricsFocus::Figures =>
            {
                let to = i64::from(self.metrics.scroll).saturating_add(delta / 2);
                self.metrics.scroll = u16::try_from(to.max(0)).unwrap_or(u16::MAX);
            }
            Page::Metrics => self.metrics.step(delta),
            Page::Audit => self.audit.step(delta),
            Page::Queue => {}
        }
        Some(Vec::new())
    }

    fn toggle_metrics_focus(&mut self) {
        self.metrics.focus = match self.metrics.focus {
            MetricsFocus::Figures if !self.metrics.behind().is_empty() => MetricsFocus::Operations,
            _ => MetricsFocus::Figures,
        };
    }

    /// Shows one tab; the queue tabs list again, the others ask for their data.
    fn show(&mut self, screen: Screen) -> Vec<Effect> {
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

    /// `Enter` on a tab: the operations behind a figure, or the operation under
    /// the cursor opened in the detail panes.
    fn open_on_tab(&mut self) -> Vec<Effect> {
        let id = match self.page {
            Page::Metrics if self.metrics.focus == MetricsFocus::Figures => {
                self.toggle_metrics_focus();
                return Vec::new();
            }
            Page::Metrics => self.metrics.selected_operation(),
            Page::Audit => self.audit.selected_operation(),
            Page::Queue => None,
        };
        match id {
            Some(id) => self.open_operation(id),
            None => Vec::new(),
        }
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
        let tenants = self.actor.visible_tenants();
        match self.page {
            Page::Queue => Vec::new(),
            Page::Metrics => {
                let generation = self.metrics.expect();
                vec![Effect::Metrics {
                    generation,
                    tenants,
                    now: self.now,
                }]
            }
            Page::Audit => {
                let generation = self.audit.expect();
                vec![Effect::Audit {
                    generation,
                    tenants,
                }]
            }
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
