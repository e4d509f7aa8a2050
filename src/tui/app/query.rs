//! The search and filter prompt's part of `update`: opening it, and its keys,
//! which change the queue's query (a typed search runs once typing pauses).

use crossterm::event::KeyEvent;

use super::{App, Effect, PromptKind, PromptState, SEARCH_PAUSE};
use crate::tui::filter;
use crate::tui::keymap::{self, Command, Context};
use crate::tui::screens::Modal;

impl App {
    /// `/` or `f`: the prompt, starting from the search or filter in force.
    pub(super) fn open_prompt(&mut self, kind: PromptKind) -> Vec<Effect> {
        let before = match kind {
            PromptKind::Search => self.queue.search.clone(),
            PromptKind::Filter => filter::describe(&self.queue.filter),
        };
        let label = match kind {
            PromptKind::Search => "search",
            PromptKind::Filter => "filter",
        };
        self.modal = Some(Modal::Prompt(Box::new(PromptState::new(
            kind, label, before,
        ))));
        if kind == PromptKind::Filter {
            self.say(
                &format!(
                    "fields: {}; e.g. state:unknown,partial risk:high",
                    filter::FIELDS
                ),
                false,
            );
        }
        Vec::new()
    }

    pub(super) fn prompt_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Some(Modal::Prompt(prompt)) = self.modal.as_mut() else {
            return Vec::new();
        };
        let kind = prompt.kind;
        match keymap::lookup(Context::Prompt, key) {
            Some(Command::Quit) => vec![Effect::Quit],
            Some(Command::Accept) => {
                let text = prompt.input.text();
                if kind == PromptKind::Search {
                    let paused = prompt.pause.cancel().is_some();
                    self.modal = None;
                    if paused {
                        self.queue.restart();
                        return self.list(None, false);
                    }
                    return Vec::new();
                }
                match filter::parse(&text) {
                    Ok(parsed) => {
                        self.modal = None;
                        self.status = None;
                        if parsed == self.queue.filter {
                            return Vec::new();
                        }
                        self.queue.filter = parsed;
                        self.queue.restart();
                        self.list(None, false)
                    }
                    Err(e) => {
                        self.say(&e, true);
                        Vec::new()
                    }
                }
            }
            Some(Command::Cancel) => {
                let before = prompt.before.clone();
                let touched = prompt.touched;
                self.modal = None;
                self.status = None;
                if kind == PromptKind::Search && touched {
                    self.queue.search = before;
                    self.queue.restart();
                    return self.list(None, false);
                }
                Vec::new()
            }
            _ => {
                if !prompt.input.input(key) || kind != PromptKind::Search {
                    return Vec::new();
                }
                prompt.touched = true;
                self.queue.search = prompt.input.text();
                let generation = prompt.pause.request(());
                vec![Effect::Debounce {
                    generation,
                    delay: SEARCH_PAUSE,
                }]
            }
        }
    }
}
