//! The search, filter and `:` command prompt in the query line: what is typed,
//! the text it started from (restored on cancel), the pause a typed search waits
//! on, and its keys, which come to a [`Narrow`] of the queue (or, at `:`, a
//! [`LineCommand`]) for the console to carry out; the pause's end comes back to
//! it as an answer ([`Screen::answer`]).

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;

use super::{Asker, Ctx, ModalKind, Outcome, Screen};
use crate::store::OperationFilter;
use crate::tui::filter;
use crate::tui::keymap::{self, Command, Context};
use crate::tui::latest::Latest;
use crate::tui::message::{Answer, Effect, Tag};
use crate::tui::widgets::Prompt;

/// How long typing must pause before the search runs.
pub(crate) const SEARCH_PAUSE: std::time::Duration = std::time::Duration::from_millis(150);

/// Which prompt is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    Search,
    Filter,
    /// `:`, k9s's command line: a tab by its name, `help`, `q`.
    Command,
}

/// What a command typed at the `:` prompt asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineCommand {
    /// Show the tab with this key (its name was typed).
    Show(char),
    Help,
    Quit,
}

/// Every command of the `:` prompt with what it does: each tab by its name
/// (from [`super::TABS`], so a new tab is a new command), then `help` and `q`.
pub(crate) fn line_commands() -> Vec<(&'static str, LineCommand)> {
    let mut all: Vec<(&'static str, LineCommand)> = super::TABS
        .iter()
        .map(|t| (t.name, LineCommand::Show(t.key)))
        .collect();
    all.extend([
        ("help", LineCommand::Help),
        ("q", LineCommand::Quit),
        ("quit", LineCommand::Quit),
    ]);
    all
}

/// The command typed (`:audit`, ` audit `), or why it is none: the nearest
/// name for a typo, and the names there are.
fn read_command(text: &str) -> Result<LineCommand, String> {
    let typed = text.trim().trim_start_matches(':').trim();
    let all = line_commands();
    if let Some((_, command)) = all
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(typed))
    {
        return Ok(*command);
    }
    let names: Vec<&str> = all.iter().map(|(name, _)| *name).collect();
    let hint = crate::core::names::nearest(typed, names.iter().copied())
        .map_or_else(String::new, |n| format!(" did you mean :{n}?"));
    Err(format!(
        "unknown command :{typed}.{hint} Commands: :{}",
        names.join(" :")
    ))
}

/// Completes `typed` to the one command it starts; with several, to what they
/// share, and says which they are.
fn complete(typed: &str) -> (Option<String>, Option<String>) {
    let typed = typed.trim().trim_start_matches(':');
    let names: Vec<&str> = line_commands()
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| name.starts_with(&typed.to_ascii_lowercase()))
        .collect();
    match names.as_slice() {
        [] => (None, Some(format!("no command starts with {typed:?}"))),
        [one] => (Some((*one).to_owned()), None),
        many => {
            let shared = many.iter().skip(1).fold(many[0], |acc, n| {
                let len = acc
                    .chars()
                    .zip(n.chars())
                    .take_while(|(a, b)| a == b)
                    .count();
                &acc[..len]
            });
            (
                (shared.len() > typed.len()).then(|| shared.to_owned()),
                Some(format!(":{}", many.join(" :"))),
            )
        }
    }
}

/// What a prompt key does to the queue's query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Narrow {
    /// The search now reads this; it runs once typing pauses (the effect asks
    /// for the pause).
    Typing(String, Effect),
    /// Typing paused: the search as typed runs now, and the prompt stays open.
    Paused,
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
    /// A `:` command, read; the prompt closes.
    Run(LineCommand),
    /// Said on the status line while the prompt stays open (the choices of a
    /// completion).
    Note(String),
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
            PromptKind::Command => "command",
        };
        let mut input = Prompt::new(label, &before);
        if kind == PromptKind::Search {
            // Reopened on a search, `/` selects it, so typing replaces it
            // (arrows keep it and move into it).
            input.select_all();
        }
        PromptState {
            kind,
            input,
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
            Some(Command::Accept) if self.kind == PromptKind::Command => {
                match read_command(&self.input.text()) {
                    Ok(command) => Narrow::Run(command),
                    Err(e) => Narrow::Invalid(e),
                }
            }
            Some(Command::Complete) if self.kind == PromptKind::Command => {
                let (text, note) = complete(&self.input.text());
                if let Some(text) = text {
                    self.input = Prompt::new("command", &text);
                }
                match note {
                    Some(note) => Narrow::Note(note),
                    None => return Outcome::done(),
                }
            }
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
                    generation: Tag {
                        by: Asker::Modal(ModalKind::Prompt),
                        serial: self.pause.request(()),
                    },
                    delay: SEARCH_PAUSE,
                };
                Narrow::Typing(self.input.text(), pause)
            }
        };
        Outcome::Narrow(narrow)
    }

    /// The pause of the latest key typed is over: the search runs. A pause
    /// overtaken by typing is dropped.
    fn answer(&mut self, generation: u64, answer: Answer, _ctx: &Ctx) -> Outcome {
        match answer {
            Answer::Debounced if self.pause.answer(generation).is_some() => {
                Outcome::Narrow(Narrow::Paused)
            }
            _ => Outcome::Pass,
        }
    }

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        self.input.draw(frame, area, ctx.theme);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tab_is_a_command_by_its_name_and_a_typo_is_named() {
        for tab in super::super::TABS {
            assert_eq!(read_command(tab.name), Ok(LineCommand::Show(tab.key)));
        }
        assert_eq!(read_command(":q"), Ok(LineCommand::Quit));
        assert_eq!(read_command(" Audit "), Ok(LineCommand::Show('4')));
        let e = read_command("audt").unwrap_err();
        assert!(
            e.starts_with("unknown command :audt. did you mean :audit?"),
            "{e}"
        );
        assert!(e.contains(":held :all :metrics :audit :help :q"), "{e}");
    }

    #[test]
    fn tab_completes_one_command_and_names_several() {
        assert_eq!(complete("au"), (Some("audit".into()), None));
        assert_eq!(complete(":me"), (Some("metrics".into()), None));
        let (text, note) = complete("q");
        assert_eq!(
            text.as_deref(),
            None,
            "q is already a command and the start of quit"
        );
        assert_eq!(note.as_deref(), Some(":q :quit"));
        assert_eq!(
            complete("h"),
            (Some("hel".into()), Some(":held :help".into()))
        );
        assert!(complete("x").1.unwrap().contains("no command"));
    }
}
