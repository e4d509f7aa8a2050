//! The console's screens and dialogs, one file (or folder) each: its state, its
//! keys, the answers to what it asked and its drawing behind [`Screen`]. The
//! [`Modal`] enum is the registration point of the screens drawn over the
//! console; `App` holds the rest as fields. [`Asker`] names a screen, so that an
//! effect's answer goes back to the screen that asked.

pub(crate) mod audit;
pub(crate) mod bulk;
pub(crate) mod detail;
pub(crate) mod dialog;
#[cfg(test)]
pub(crate) mod fixture;
pub(crate) mod help;
pub(crate) mod lookup;
pub(crate) mod metrics;
pub(crate) mod prompt;
pub(crate) mod queue;
pub(crate) mod review;
pub(crate) mod tools;

use chrono::{DateTime, Utc};
use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::keymap::Context;
use super::layout::Pane;
use super::message::{Answer, Effect};
use super::theme::Theme;
use crate::core::ids::OperationId;
use crate::core::rules::Actor;

/// What the body of the console shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Page {
    /// The held queue or all operations (the queue's own list decides).
    #[default]
    Queue,
    Metrics,
    Audit,
    Tools,
}

/// One tab of the tab bar: its key, its titles, the page it shows and, for the
/// queue, which list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TabSpec {
    pub key: char,
    /// Its name at the `:` prompt (`:audit`).
    pub name: &'static str,
    pub title: &'static str,
    /// The title on narrow screens.
    pub short_title: &'static str,
    pub page: Page,
    pub list: Option<queue::Tab>,
}

/// Every tab, in the order of their keys: the one registration point of a
/// screen shown as a tab (with its arm in `App::page_screen`).
pub(crate) const TABS: [TabSpec; 5] = [
    TabSpec {
        key: '1',
        name: "held",
        title: "Held queue",
        short_title: "Held",
        page: Page::Queue,
        list: Some(queue::Tab::Held),
    },
    TabSpec {
        key: '2',
        name: "all",
        title: "All operations",
        short_title: "All",
        page: Page::Queue,
        list: Some(queue::Tab::All),
    },
    TabSpec {
        key: '3',
        name: "metrics",
        title: "Metrics",
        short_title: "Metrics",
        page: Page::Metrics,
        list: None,
    },
    TabSpec {
        key: '4',
        name: "audit",
        title: "Audit",
        short_title: "Audit",
        page: Page::Audit,
        list: None,
    },
    TabSpec {
        key: '5',
        name: "tools",
        title: "Tools",
        short_title: "Tools",
        page: Page::Tools,
        list: None,
    },
];

/// The held queue's tab, where the other tabs come back to.
pub(crate) const HELD: TabSpec = TABS[0];

/// The tab shown by `key`, if any.
pub(crate) fn tab(key: char) -> Option<&'static TabSpec> {
    TABS.iter().find(|t| t.key == key)
}

/// The screen that asked for an effect, named in its [`Tag`](super::message::Tag)
/// so that `App` hands the answer back to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Asker {
    /// The queue (its pages, the mark-all selection).
    Queue,
    /// The detail panes (the operation on top of their stack).
    Detail,
    /// The screen a tab shows in place of the queue, shown or not.
    Tab(Page),
    /// The screen drawn over the console, while it is the one of this kind.
    Modal(ModalKind),
}

/// What a screen sees of the console while it takes a key or draws: read only,
/// so a screen changes nothing but itself.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// Who is reviewing.
    pub actor: &'a Actor,
    pub now: DateTime<Utc>,
    pub theme: Theme,
    /// The whole terminal (wide screens lay panes side by side).
    pub size: Rect,
    /// The pane with the keys: the queue (or the tab shown in its place), or
    /// one of the detail panes.
    pub focus: Pane,
}

/// What a key came to, for the console to carry out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Handled by the screen; these effects are to run (often none).
    Done(Vec<Effect>),
    /// Not the screen's key: the console's own keys get it. For an answer:
    /// not one the screen waits on (its request was replaced), so dropped.
    Pass,
    /// Close the screen (a dialog, the help overlay; the detail panes go back
    /// to the queue).
    Close,
    /// Handled: say `text` on the status line and run `effects`.
    Say {
        text: String,
        alert: bool,
        effects: Vec<Effect>,
    },
    /// Leave the console.
    Quit,
    /// Open the help overlay over the screen.
    Help,
    /// Open this operation in the detail panes, `Esc` coming back to the screen.
    Open(OperationId),
    /// Show the tab whose key this is (see [`TABS`]).
    Show(char),
    /// Show the held queue narrowed by this filter alone (its search
    /// cleared): the Tools tab's `Enter` on a tool.
    Queue(Box<crate::store::OperationFilter>),
    /// Change the queue's search or filter (the prompt's keys).
    Narrow(prompt::Narrow),
    /// The list answered without the operation the selection was kept on
    /// (`id`): say `text` as an alert, run `effects`, and the detail panes
    /// showing `id` go back to the list, following its selection again.
    Left {
        id: OperationId,
        text: String,
        effects: Vec<Effect>,
    },
    /// What the screen asked for wrote to the store (a review, a lookup, a
    /// bulk apply): say `text`, unmark `unmark` in the queue, and read
    /// everything on screen again, the operation open taking its new version
    /// rather than flagging it as someone else's change.
    Wrote {
        text: String,
        alert: bool,
        unmark: Vec<OperationId>,
    },
}

impl Outcome {
    /// Handled, with nothing to run.
    pub fn done() -> Self {
        Outcome::Done(Vec::new())
    }

    /// An answer taken (`Done`, nothing to run), or [`Outcome::Pass`] when
    /// the screen no longer waits on it.
    pub fn answered(taken: bool) -> Self {
        if taken {
            Outcome::done()
        } else {
            Outcome::Pass
        }
    }

    /// Handled: `text` on the status line, `effects` to run.
    pub fn say(text: impl Into<String>, alert: bool, effects: Vec<Effect>) -> Self {
        Outcome::Say {
            text: text.into(),
            alert,
            effects,
        }
    }
}

/// One screen of the console: its keys (returning what the console must do)
/// and its drawing (from its own state and the context alone).
pub trait Screen {
    /// Where its keys are looked up, and what the help overlay lists.
    fn context(&self) -> Context;
    /// Takes one key.
    fn key(&mut self, key: KeyEvent, ctx: &Ctx) -> Outcome;
    /// The requests for the data it shows, when it comes on screen and whenever
    /// the store moves (none for a screen that is handed its data).
    fn refresh(&mut self, _ctx: &Ctx) -> Vec<Effect> {
        Vec::new()
    }
    /// Takes the answer to the request of serial `generation` it asked for
    /// (`Tag::serial`), like a key: what the console must do now, or
    /// [`Outcome::Pass`] when it no longer waits on that request. A screen that
    /// asks for nothing takes no answer.
    fn answer(&mut self, _generation: u64, _answer: Answer, _ctx: &Ctx) -> Outcome {
        Outcome::Pass
    }
    /// Draws the screen into `area` (a dialog takes the frame's middle).
    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &Ctx);
    /// What the query line under the tab bar says while a tab shows.
    fn summary(&self, _ctx: &Ctx) -> Option<Line<'static>> {
        None
    }
    /// How the status line names the screen (`opened F21 from the audit tab`).
    fn name(&self) -> &'static str {
        "the console"
    }
}

/// Which screen is drawn over the console, as an answer names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModalKind {
    Prompt,
    Help,
    Review,
    Bulk,
    Lookup,
}

/// The one screen drawn over the console, if any. Adding an overlay adds a
/// variant here and an arm in [`Modal::kind`] and [`Modal::screen_mut`].
#[derive(Debug, Clone)]
pub enum Modal {
    /// The search or filter prompt in the query line.
    Prompt(Box<prompt::PromptState>),
    /// The key overlay, over whatever was open under it.
    Help(help::Help),
    Review(Box<review::ReviewDialog>),
    Bulk(Box<bulk::BulkDialog>),
    /// A hold's lookup (`o`): the answer field by field and what it allows.
    Lookup(Box<lookup::LookupScreen>),
}

impl Modal {
    /// The dialog under the help overlay, or this one.
    pub fn base(&self) -> &Modal {
        match self {
            Modal::Help(help) => help.under.as_deref().map_or(self, Modal::base),
            other => other,
        }
    }

    /// The same, to change.
    pub fn base_mut(&mut self) -> &mut Modal {
        match self {
            Modal::Help(help::Help {
                under: Some(under), ..
            }) => under.base_mut(),
            other => other,
        }
    }

    /// Which one it is.
    pub fn kind(&self) -> ModalKind {
        match self {
            Modal::Prompt(_) => ModalKind::Prompt,
            Modal::Help(_) => ModalKind::Help,
            Modal::Review(_) => ModalKind::Review,
            Modal::Bulk(_) => ModalKind::Bulk,
            Modal::Lookup(_) => ModalKind::Lookup,
        }
    }

    /// The screen taking the keys.
    pub fn screen_mut(&mut self) -> Option<&mut dyn Screen> {
        match self {
            Modal::Prompt(prompt) => Some(prompt.as_mut()),
            Modal::Help(help) => Some(help),
            Modal::Review(dialog) => Some(dialog.as_mut()),
            Modal::Bulk(dialog) => Some(dialog.as_mut()),
            Modal::Lookup(screen) => Some(screen.as_mut()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::keymap::{BINDINGS, Command};

    #[test]
    fn every_tab_has_its_key_bound_and_every_bound_tab_exists() {
        for t in TABS {
            assert!(
                BINDINGS.iter().any(|b| b.command == Command::Show(t.key)),
                "tab {} has no binding",
                t.key
            );
        }
        for b in BINDINGS {
            if let Command::Show(key) = b.command {
                assert!(tab(key).is_some(), "{key} shows no tab");
            }
        }
    }
}
