//! The lookup result over the console (`o` on a hold): the provider's answer
//! field by field, and what it now allows, as the review service recorded it.
//! The lookup itself runs on the effects runner; this screen waits for it, and
//! its answer comes back here ([`Screen::answer`]).

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use chrono::{DateTime, Utc};

use super::{Asker, Ctx, ModalKind, Outcome, Screen, dialog};
use crate::core::ids::OperationId;
use crate::core::sanitize::Clean;
use crate::tui::keymap::{self, Command, Context};
use crate::tui::latest::Latest;
use crate::tui::message::{Answer, Effect, Tag};
use crate::tui::widgets::{self, line, span};

/// What a recorded lookup shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LookupShown {
    /// The answer field by field (label, value); values are untrusted text.
    pub rows: Vec<(String, String)>,
    /// What recording it did and what it now allows, in words.
    pub consequences: Vec<String>,
}

/// The lookup screen of one hold.
#[derive(Debug, Clone)]
pub struct LookupScreen {
    pub id: OperationId,
    pub pending: Latest<()>,
    /// The answer once it came: the result, or why there is none.
    pub result: Option<Result<LookupShown, String>>,
}

impl LookupScreen {
    /// A screen waiting for the lookup of `id`, with the request that looks it
    /// up, dated on the console's clock (`frozen` at `now`, or the system's).
    pub fn start(id: OperationId, now: DateTime<Utc>, frozen: bool) -> (LookupScreen, Effect) {
        let mut pending = Latest::default();
        let generation = Tag {
            by: Asker::Modal(ModalKind::Lookup),
            serial: pending.request(()),
        };
        let effect = Effect::LookUp {
            generation,
            id: id.clone(),
            now,
            frozen,
        };
        let screen = LookupScreen {
            id,
            pending,
            result: None,
        };
        (screen, effect)
    }

    /// A screen that asks nothing: the lookup cannot be made, and `why` says why.
    pub fn impossible(id: OperationId, why: String) -> LookupScreen {
        LookupScreen {
            id,
            pending: Latest::default(),
            result: Some(Err(why)),
        }
    }

    /// Takes the answer tagged `generation`; `false` when it is not this one's.
    fn answered(&mut self, generation: u64, result: Result<LookupShown, String>) -> bool {
        if self.pending.answer(generation).is_none() {
            return false;
        }
        self.result = Some(result);
        true
    }
}

impl Screen for LookupScreen {
    fn context(&self) -> Context {
        Context::Lookup
    }

    fn key(&mut self, key: KeyEvent, _ctx: &Ctx) -> Outcome {
        match keymap::lookup(Context::Lookup, key).or_else(|| keymap::lookup(Context::Global, key))
        {
            Some(Command::Accept | Command::Cancel) => Outcome::Close,
            Some(Command::Quit) => Outcome::Quit,
            Some(Command::Help) => Outcome::Help,
            _ => Outcome::done(),
        }
    }

    /// The lookup answered: its result shows here, and everything is read
    /// again (the lookup added an attempt and maybe an observation).
    fn answer(&mut self, generation: u64, answer: Answer, _ctx: &Ctx) -> Outcome {
        let Answer::LookedUp(result) = answer else {
            return Outcome::Pass;
        };
        let (text, alert) = match &result {
            Ok(_) => (
                "lookup recorded; the evidence shows what it allows".to_owned(),
                false,
            ),
            Err(e) => (e.clone(), true),
        };
        if !self.answered(generation, result.map(|r| *r)) {
            return Outcome::Pass;
        }
        Outcome::Wrote {
            text,
            alert,
            unmark: Vec::new(),
        }
    }

    fn draw(&self, frame: &mut Frame, _area: Rect, ctx: &Ctx) {
        let theme = ctx.theme;
        let title = format!(" Lookup · {} ", self.id);
        let body = dialog::shell(frame, ctx, &title, None, "Enter/Esc close");
        let mut lines: Vec<Line<'static>> = Vec::new();
        match &self.result {
            None => lines.push(line(vec![span(
                Clean::new("asking the provider…"),
                theme.dim(),
            )])),
            Some(Err(why)) => {
                lines.push(Line::default());
                lines.push(line(vec![span(Clean::new(why), theme.alert())]));
                lines.push(Line::default());
                lines.push(line(vec![span(
                    Clean::new("nothing was recorded"),
                    theme.dim(),
                )]));
            }
            Some(Ok(shown)) => {
                // What it recorded and allows first: on a short screen the
                // answer's fields give way, never the conclusion.
                lines.push(Line::default());
                lines.push(line(vec![span(
                    Clean::new(" Recorded, and what it allows now"),
                    theme.title(),
                )]));
                for c in &shown.consequences {
                    lines.push(line(vec![
                        span(Clean::new("  · "), theme.dim()),
                        span(Clean::new(c), theme.plain()),
                    ]));
                }
                lines.push(Line::default());
                lines.push(line(vec![span(
                    Clean::new(" The answer, field by field"),
                    theme.title(),
                )]));
                for (label, value) in &shown.rows {
                    let style = if value.contains("MISMATCH") || value.contains("ANOTHER") {
                        theme.alert()
                    } else if value == "match" {
                        theme.good()
                    } else {
                        theme.plain()
                    };
                    lines.push(line(vec![
                        span(Clean::new(&format!(" {label:<18}")), theme.label()),
                        span(Clean::new(value), style),
                    ]));
                }
            }
        }
        let wrapped: Vec<Line<'static>> = lines
            .iter()
            .flat_map(|l| widgets::wrap(l, body.width.max(1), 4))
            .collect();
        frame.render_widget(Paragraph::new(wrapped), body);
    }

    fn name(&self) -> &'static str {
        "the lookup"
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyCode;

    use super::*;
    use crate::tui::layout::Pane;
    use crate::tui::screens::fixture::{self, char, id, key};

    fn shown() -> LookupShown {
        LookupShown {
            rows: vec![("status".into(), "match".into())],
            consequences: vec!["the next observation is due in 30m".into()],
        }
    }

    /// A screen waiting for the lookup of F09, with its request's serial.
    fn waiting() -> (LookupScreen, u64) {
        let (screen, effect) = LookupScreen::start(id("F09"), fixture::now(), true);
        let effects = [effect];
        let tag = fixture::tag(&effects);
        assert_eq!(tag.by, Asker::Modal(ModalKind::Lookup));
        assert!(matches!(
            &effects[0],
            Effect::LookUp { id: asked, now, frozen: true, .. }
                if *asked == id("F09") && *now == fixture::now()
        ));
        (screen, tag.serial)
    }

    #[test]
    fn a_recorded_lookup_shows_and_everything_is_read_again() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Evidence);
        let (mut screen, serial) = waiting();
        assert!(screen.result.is_none());
        let answer = Answer::LookedUp(Ok(Box::new(shown())));
        assert_eq!(
            screen.answer(serial, answer.clone(), &ctx),
            Outcome::Wrote {
                text: "lookup recorded; the evidence shows what it allows".into(),
                alert: false,
                unmark: Vec::new(),
            }
        );
        assert_eq!(screen.result, Some(Ok(shown())));
        assert_eq!(
            screen.answer(serial, answer, &ctx),
            Outcome::Pass,
            "taken once"
        );
    }

    #[test]
    fn a_lookup_not_recorded_says_why_as_an_alert() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Evidence);
        let (mut screen, serial) = waiting();
        let answer = Answer::LookedUp(Err("the provider did not answer".into()));
        assert_eq!(
            screen.answer(serial, answer, &ctx),
            Outcome::Wrote {
                text: "the provider did not answer".into(),
                alert: true,
                unmark: Vec::new(),
            }
        );
        assert_eq!(
            screen.result,
            Some(Err("the provider did not answer".into()))
        );
    }

    #[test]
    fn a_lookup_that_cannot_be_made_waits_on_nothing() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Evidence);
        let (_, serial) = waiting();
        let mut screen = LookupScreen::impossible(id("F09"), "no lookup".into());
        let answer = Answer::LookedUp(Ok(Box::new(shown())));
        assert_eq!(screen.answer(serial, answer, &ctx), Outcome::Pass);
        assert_eq!(screen.result, Some(Err("no lookup".into())));
    }

    #[test]
    fn enter_and_esc_close_and_the_global_keys_work() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Evidence);
        let (mut screen, _) = waiting();
        assert_eq!(screen.key(key(KeyCode::Enter), &ctx), Outcome::Close);
        assert_eq!(screen.key(key(KeyCode::Esc), &ctx), Outcome::Close);
        assert_eq!(screen.key(char('?'), &ctx), Outcome::Help);
        assert_eq!(screen.key(char('q'), &ctx), Outcome::Quit);
        assert_eq!(screen.key(char('j'), &ctx), Outcome::done());
    }
}
