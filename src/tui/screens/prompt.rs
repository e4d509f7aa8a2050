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
        assert!(
            e.contains(":held :all :metrics :audit :tools :help :q"),
            "{e}"
        );
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

#[cfg(test)]
mod screen_tests {
    use crossterm::event::{KeyCode, KeyModifiers};

    use super::*;
    use crate::tui::layout::Pane;
    use crate::tui::screens::fixture::{self, char, key};

    /// Types `text` into `prompt`, returning what the last key came to.
    fn typed(prompt: &mut PromptState, text: &str, ctx: &Ctx) -> Outcome {
        let mut last = Outcome::done();
        for c in text.chars() {
            last = prompt.key(char(c), ctx);
        }
        last
    }

    /// The pause a typed search asked for: its serial, once checked that the
    /// search reads `text` and the prompt asked for the pause.
    fn pause(outcome: &Outcome, text: &str) -> u64 {
        let Outcome::Narrow(Narrow::Typing(now, effect)) = outcome else {
            panic!("typing a search waits on a pause: {outcome:?}");
        };
        assert_eq!(now, text);
        let tag = fixture::tag(std::slice::from_ref(effect));
        assert_eq!(tag.by, Asker::Modal(ModalKind::Prompt));
        assert!(matches!(effect, Effect::Debounce { delay, .. } if *delay == SEARCH_PAUSE));
        tag.serial
    }

    #[test]
    fn a_search_runs_when_the_latest_pause_answers_not_an_overtaken_one() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Queue);
        let mut prompt = PromptState::new(PromptKind::Search, "old".into());
        let first = pause(&prompt.key(char('F'), &ctx), "F");
        let second = pause(&prompt.key(char('1'), &ctx), "F1");
        assert_eq!(prompt.answer(first, Answer::Debounced, &ctx), Outcome::Pass);
        assert_eq!(
            prompt.answer(second, Answer::Debounced, &ctx),
            Outcome::Narrow(Narrow::Paused)
        );
        assert_eq!(
            prompt.key(key(KeyCode::Enter), &ctx),
            Outcome::Narrow(Narrow::Search { relist: false }),
            "the search already ran"
        );
    }

    #[test]
    fn enter_runs_a_search_still_waiting_for_its_pause() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Queue);
        let mut prompt = PromptState::new(PromptKind::Search, String::new());
        let serial = pause(&typed(&mut prompt, "bill", &ctx), "bill");
        assert_eq!(
            prompt.key(key(KeyCode::Enter), &ctx),
            Outcome::Narrow(Narrow::Search { relist: true })
        );
        assert_eq!(
            prompt.answer(serial, Answer::Debounced, &ctx),
            Outcome::Pass,
            "the pause was given up"
        );
    }

    #[test]
    fn esc_restores_the_search_only_when_typing_changed_it() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Queue);
        let mut prompt = PromptState::new(PromptKind::Search, "old".into());
        assert_eq!(
            prompt.key(key(KeyCode::Esc), &ctx),
            Outcome::Narrow(Narrow::Restore(None))
        );
        typed(&mut prompt, "new", &ctx);
        assert_eq!(
            prompt.key(key(KeyCode::Esc), &ctx),
            Outcome::Narrow(Narrow::Restore(Some("old".into())))
        );
    }

    #[test]
    fn a_filter_is_read_on_enter_and_a_bad_one_keeps_the_prompt() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Queue);
        let mut prompt = PromptState::new(PromptKind::Filter, String::new());
        assert_eq!(
            typed(&mut prompt, "risk:high", &ctx),
            Outcome::done(),
            "a filter waits for Enter"
        );
        match prompt.key(key(KeyCode::Enter), &ctx) {
            Outcome::Narrow(Narrow::Filter(parsed)) => {
                assert_eq!(parsed, filter::parse("risk:high").unwrap_or_default());
                assert_ne!(parsed, OperationFilter::default());
            }
            other => panic!("the filter was not read: {other:?}"),
        }
        let mut prompt = PromptState::new(PromptKind::Filter, String::new());
        typed(&mut prompt, "colour:red", &ctx);
        assert!(matches!(
            prompt.key(key(KeyCode::Enter), &ctx),
            Outcome::Narrow(Narrow::Invalid(_))
        ));
    }

    #[test]
    fn the_command_prompt_runs_completes_and_names_a_typo() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Queue);
        let mut prompt = PromptState::new(PromptKind::Command, String::new());
        typed(&mut prompt, "au", &ctx);
        assert_eq!(prompt.key(key(KeyCode::Tab), &ctx), Outcome::done());
        assert_eq!(prompt.input.text(), "audit");
        assert_eq!(
            prompt.key(key(KeyCode::Enter), &ctx),
            Outcome::Narrow(Narrow::Run(LineCommand::Show('4')))
        );
        let mut prompt = PromptState::new(PromptKind::Command, String::new());
        typed(&mut prompt, "h", &ctx);
        assert_eq!(
            prompt.key(key(KeyCode::Tab), &ctx),
            Outcome::Narrow(Narrow::Note(":held :help".into()))
        );
        typed(&mut prompt, "x", &ctx);
        assert!(matches!(
            prompt.key(key(KeyCode::Enter), &ctx),
            Outcome::Narrow(Narrow::Invalid(e)) if e.starts_with("unknown command :helx")
        ));
    }

    #[test]
    fn q_is_typed_and_ctrl_c_quits() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Queue);
        let mut prompt = PromptState::new(PromptKind::Search, String::new());
        pause(&prompt.key(char('q'), &ctx), "q");
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(prompt.key(ctrl_c, &ctx), Outcome::Quit);
    }
}
