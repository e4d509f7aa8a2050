//! What the review and bulk dialogs share: how a key becomes a step of a
//! dialog (one dispatch for both), and the frame a dialog is drawn in.

use chrono::{DateTime, Utc};
use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::{Clear, Paragraph};

use super::{Ctx, Outcome};
use crate::core::rules::Actor;
use crate::core::sanitize::Clean;
use crate::tui::keymap::{self, Command, Context};
use crate::tui::layout;
use crate::tui::widgets::{self, line, span};

/// Widest a dialog gets.
const MAX_WIDTH: u16 = 120;

/// A dialog over the console that takes keys in its own context.
pub(crate) trait Dialog {
    /// What the dialog asks the console to do.
    type Request;
    /// Where its keys are looked up.
    const CONTEXT: Context;
    /// Whether keys are text now (only the dialog's own keys act then).
    fn typing(&self) -> bool;
    fn accept(&mut self, actor: &Actor, now: DateTime<Utc>) -> Option<Self::Request>;
    fn back(&mut self) -> Option<Self::Request>;
    /// `y`: the distinct key that applies what changes state.
    fn confirm(&mut self) -> Option<Self::Request> {
        None
    }
    fn step_cursor(&mut self, delta: i64);
    fn next_field(&mut self, _delta: i64, _now: DateTime<Utc>) {}
    fn type_key(&mut self, key: KeyEvent);
    /// What the console does for the dialog's `request` (close it, or run the
    /// effect the dialog now waits on).
    fn request(&mut self, request: Self::Request, ctx: &Ctx) -> Outcome;
}

/// Runs `key` in `dialog`: its own keys first, the global ones while not typing,
/// any other key typed into its input.
pub(crate) fn key<D: Dialog>(dialog: &mut D, key: KeyEvent, ctx: &Ctx) -> Outcome {
    let typing = dialog.typing();
    let command = keymap::lookup(D::CONTEXT, key).or_else(|| {
        (!typing)
            .then(|| keymap::lookup(Context::Global, key))
            .flatten()
    });
    let request = match command {
        Some(Command::Accept) => dialog.accept(ctx.actor, ctx.now),
        Some(Command::Cancel) => dialog.back(),
        Some(Command::Apply) if !typing => dialog.confirm(),
        Some(Command::NextPane) => {
            dialog.next_field(1, ctx.now);
            None
        }
        Some(Command::PrevPane) => {
            dialog.next_field(-1, ctx.now);
            None
        }
        Some(Command::Up) if !typing => {
            dialog.step_cursor(-1);
            None
        }
        Some(Command::Down) if !typing => {
            dialog.step_cursor(1);
            None
        }
        Some(Command::Top) if !typing => {
            dialog.step_cursor(i64::MIN / 2);
            None
        }
        Some(Command::Bottom) if !typing => {
            dialog.step_cursor(i64::MAX / 2);
            None
        }
        Some(Command::Quit) => return Outcome::Quit,
        Some(Command::Help) if !typing => return Outcome::Help,
        _ if typing => {
            dialog.type_key(key);
            None
        }
        _ => None,
    };
    match request {
        Some(request) => dialog.request(request, ctx),
        None => Outcome::done(),
    }
}

/// Draws a dialog's frame over the console — its title, who acts, the error if
/// any, the keys of this step on the last line — and returns the area left for
/// its body.
pub(crate) fn shell(
    frame: &mut Frame,
    ctx: &Ctx,
    title: &str,
    error: Option<&str>,
    hint: &str,
) -> Rect {
    let theme = ctx.theme;
    let popup = popup(frame.area());
    frame.render_widget(Clear, popup);
    frame.render_widget(widgets::pane(theme, Clean::new(title), true), popup);
    let inner = layout::inner(popup);
    let error_rows = u16::from(error.is_some()) * 2;
    let [who, body, error_area, hint_area] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(0),
        Constraint::Length(error_rows),
        Constraint::Length(1),
    ])
    .areas(inner);
    frame.render_widget(
        Paragraph::new(line(vec![
            span(Clean::new("as "), theme.dim()),
            span(Clean::new(&ctx.actor.describe()), theme.plain()),
        ])),
        who,
    );
    frame.render_widget(
        Paragraph::new(span(Clean::new(hint), theme.title())),
        hint_area,
    );
    if let Some(message) = error {
        let text = line(vec![span(Clean::new(message), theme.alert())]);
        frame.render_widget(
            Paragraph::new(widgets::wrap(&text, error_area.width.max(1), 2)),
            error_area,
        );
    }
    body
}

/// The area of a dialog drawn over the console: nearly the whole screen, at most
/// [`MAX_WIDTH`] wide, centred.
fn popup(area: Rect) -> Rect {
    let width = area.width.saturating_sub(2).min(MAX_WIDTH);
    let height = area.height.saturating_sub(2);
    Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    )
}
