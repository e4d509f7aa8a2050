//! The search and filter prompt in the query line: what is typed, the text it
//! started from (restored on cancel), the pause a typed search waits on, and its
//! keys, which come to a [`Narrow`] of the queue for the console to carry out.

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;

use super::{Ctx, Outcome, Screen};
use crate::store::OperationFilter;
use crate::tui::filter;
use crate::tui::keymap::{self, Command, Context};
use crate::tui::latest::Latest;
use crate::tui::message::Effect;
use crate::tui::widgets::Prompt;

/// How long typing must pause before the search runs.
pub(crate) const SEARCH_PAUSE: std::time::Duration = std::time::Duration::from_millis(150);

/// Which prompt is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    Search,
    Filter,
}

/// What a prompt key does to the queue's query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Narrow {
    /// The search now reads this; it runs once typing pauses (the effect asks
    /// for the pause).
    Typing(String, Effect),
    /// The search stands as typed and the prompt closes; `relist` when a pause
    /// was still waiting, so the search runs now.
    Search { relist: bool },
    /// The filter typed, parsed; the prompt closes.
    Filter(OperationFilter),
    /// Cancelled: the prompt closes, and the search goes back to this text when
    /// typing had changed it.
    Restore(Option<String>),
    /// The filter does not parse: this says why, and the prompt stays open.
    Invalid(String),
}

/// An open prompt, with the text it started from (restored on cancel).
#[derive(Debug, Clone)]
pub struct PromptState {
    pub kind: PromptKind,
    pub input: Prompt,
    pub before: String,
    /// The search was changed while the prompt was open.
    pub touched: bool,
    /// The pause a typed search waits on before it runs.
    pub pause: Latest<()>,
}

impl PromptState {
    /// A prompt of `kind` starting from `before` (the search or filter in force).
    pub fn new(kind: PromptKind, before: String) -> Self {
        let label = match kind {
            PromptKind::Search => "search",
            PromptKind::Filter => "filter",
        };
        PromptState {
            kind,
            input: Prompt::new(label, &before),
            before,
            touched: false,
            pause: Latest::default(),
        }
    }
}

impl Screen for PromptState {
    fn context(&self) -> Context {
        Context::Prompt
    }

    fn key(&mut self, key: KeyEvent, _ctx: &Ctx) -> Outcome {
        let narrow = match keymap::lookup(Context::Prompt, key) {
            Some(Command::Quit) => return Outcome::Quit,
            Some(Command::Accept) if self.kind == PromptKind::Search => Narrow::Search {
                relist: self.pause.cancel().is_some(),
            },
            Some(Command::Accept) => match filter::parse(&self.input.text()) {
                Ok(parsed) => Narrow::Filter(parsed),
                Err(e) => Narrow::Invalid(e),
            },
            Some(Command::Cancel) => Narrow::Restore(
                (self.kind == PromptKind::Search && self.touched).then(|| self.before.clone()),
            ),
            _ => {
                if !self.input.input(key) || self.kind != PromptKind::Search {
                    return Outcome::done();
                }
                self.touched = true;
                let pause = Effect::Debounce {
                    generation: self.pause.request(()),
                    delay: SEARCH_PAUSE,
                };
                Narrow::Typing(self.input.text(), pause)
            }
        };
        Outcome::Narrow(narrow)
    }

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        self.input.draw(frame, area, ctx.theme);
    }
}
