//! The search and filter prompt's part of `update`: opening it, and carrying out
//! what its keys come to on the queue's query.

use super::{App, Effect, PromptKind, PromptState};
use crate::tui::filter;
use crate::tui::layout::Pane;
use crate::tui::screens::Modal;
use crate::tui::screens::prompt::{LineCommand, Narrow, line_commands};

impl App {
    /// `/` or `f`: the prompt, starting from the search or filter in force.
    pub(super) fn open_prompt(&mut self, kind: PromptKind) -> Vec<Effect> {
        if kind == PromptKind::Command {
            // Over whatever is shown: a command says where to go.
            self.modal = Some(Modal::Prompt(Box::new(PromptState::new(
                kind,
                String::new(),
            ))));
            let names: Vec<&str> = line_commands().into_iter().map(|(n, _)| n).collect();
            self.say(&format!(":{} · Tab completes", names.join(" :")), false);
            return Vec::new();
        }
        // From inside a hold: back to the queue, whose list the query narrows
        // (the panes follow its selection again).
        let mut effects = Vec::new();
        if self.focus != Pane::Queue {
            self.focus = Pane::Queue;
            effects = self.sync_root();
        }
        let before = match kind {
            PromptKind::Search => self.queue.search.clone(),
            PromptKind::Filter => filter::describe(&self.queue.filter),
            PromptKind::Command => String::new(),
        };
        self.modal = Some(Modal::Prompt(Box::new(PromptState::new(kind, before))));
        if kind == PromptKind::Filter {
            self.say(
                &format!(
                    "fields: {}; e.g. state:unknown,partial risk:high",
                    filter::FIELDS
                ),
                false,
            );
        }
        effects
    }

    /// Changes the queue's query as a prompt key asked.
    pub(super) fn narrow(&mut self, narrow: Narrow) -> Vec<Effect> {
        match narrow {
            Narrow::Typing(text, pause) => {
                self.queue.search = text;
                vec![pause]
            }
            Narrow::Paused => {
                self.queue.restart();
                self.list(None, false)
            }
            Narrow::Search { relist } => {
                self.modal = None;
                if relist {
                    self.queue.restart();
                    return self.list(None, false);
                }
                Vec::new()
            }
            Narrow::Filter(parsed) => {
                self.modal = None;
                self.status = None;
                if parsed == self.queue.filter {
                    return Vec::new();
                }
                self.queue.filter = parsed;
                self.queue.restart();
                self.list(None, false)
            }
            Narrow::Restore(before) => {
                self.modal = None;
                self.status = None;
                let Some(before) = before else {
                    return Vec::new();
                };
                self.queue.search = before;
                self.queue.restart();
                self.list(None, false)
            }
            Narrow::Invalid(why) => {
                self.say(&why, true);
                Vec::new()
            }
            Narrow::Note(text) => {
                self.say(&text, false);
                Vec::new()
            }
            Narrow::Run(command) => {
                self.modal = None;
                self.status = None;
                match command {
                    LineCommand::Quit => vec![Effect::Quit],
                    LineCommand::Help => {
                        self.open_help();
                        Vec::new()
                    }
                    LineCommand::Show(key) => self.show(key),
                }
            }
        }
    }
}
