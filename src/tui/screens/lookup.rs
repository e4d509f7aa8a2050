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
