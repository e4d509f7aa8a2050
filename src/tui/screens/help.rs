//! The `?` overlay: every key of the context under it, read from the keymap
//! table, so the help can never disagree with the keys. When one column does not
//! fit the height, the keys flow into two, the first filled as far as the height
//! allows. It closes back onto the dialog it was opened over, if any.

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph};

use super::{Ctx, Modal, Outcome, Screen};
use crate::core::sanitize::Clean;
use crate::tui::keymap::{self, Command, Context};
use crate::tui::layout;
use crate::tui::theme::Theme;
use crate::tui::widgets::{self, Doc, line, span};

/// Widest the overlay gets.
const MAX_WIDTH: u16 = 100;

/// The open overlay.
#[derive(Debug, Clone)]
pub struct Help {
    /// The context whose keys it lists (the one under it).
    pub context: Context,
    /// The dialog it was opened over, shown again when it closes.
    pub under: Option<Box<Modal>>,
    /// Where the logs go, named at the foot.
    pub log_path: Option<Clean>,
}

impl Screen for Help {
    fn context(&self) -> Context {
        Context::Help
    }

    fn key(&mut self, key: KeyEvent, _ctx: &Ctx) -> Outcome {
        match keymap::lookup(Context::Help, key) {
            Some(Command::Quit) => Outcome::Quit,
            Some(_) => Outcome::Close,
            None => Outcome::done(),
        }
    }

    fn draw(&self, frame: &mut Frame, _area: Rect, ctx: &Ctx) {
        draw(frame, ctx, self);
    }
}

fn draw(frame: &mut Frame, ctx: &Ctx, help: &Help) {
    let theme = ctx.theme;
    let context = help.context;
    let mut entries: Vec<(&str, &str, bool)> = keymap::help(context)
        .into_iter()
        .map(|(k, h)| (k, h, false))
        .collect();
    entries.push(("wheel", "scroll the pane under the pointer", false));
    entries.extend(
        keymap::help(Context::Help)
            .into_iter()
            .map(|(k, h)| (k, h, true)),
    );
    let key_width = entries
        .iter()
        .map(|(k, _, _)| k.chars().count())
        .max()
        .unwrap_or(0)
        + 2;

    let area = frame.area();
    let width = area.width.saturating_sub(4).min(MAX_WIDTH);
    let room = area.height.saturating_sub(4);
    let inner_width = width.saturating_sub(2).max(1);
    let one = column(theme, &entries, key_width, inner_width);
    let split = one.len() > usize::from(room) && inner_width >= 60;
    let columns: Vec<Vec<Line<'static>>> = if split {
        let column_width = (inner_width - 1) / 2;
        // The first column is filled as far as the height allows (the log path
        // below takes a row), and the rest flows into the second.
        let rows = usize::from(room.saturating_sub(u16::from(help.log_path.is_some())));
        let mut used = 0;
        let half = entries
            .iter()
            .position(|entry| {
                used += column(theme, std::slice::from_ref(entry), key_width, column_width).len();
                used > rows
            })
            .unwrap_or(entries.len())
            .max(entries.len().div_ceil(2));
        vec![
            column(theme, &entries[..half], key_width, column_width),
            column(theme, &entries[half..], key_width, column_width),
        ]
    } else {
        vec![one]
    };
    let mut footer = Vec::new();
    if let Some(path) = &help.log_path {
        footer.push(line(vec![
            span(Clean::new(" logs: "), theme.dim()),
            span(path.clone(), theme.dim()),
        ]));
    }
    let footer: Vec<Line<'static>> = footer
        .iter()
        .flat_map(|l| widgets::wrap(l, inner_width, 7))
        .collect();
    let body = columns.iter().map(Vec::len).max().unwrap_or(0);
    let height = u16::try_from(body + footer.len() + 2)
        .unwrap_or(u16::MAX)
        .min(area.height);
    let [row] = Layout::vertical([Constraint::Length(height)])
        .flex(Flex::Center)
        .areas(area);
    let [popup] = Layout::horizontal([Constraint::Length(width)])
        .flex(Flex::Center)
        .areas(row);
    let title = match context {
        Context::Queue => " Keys · queue ",
        Context::Review => " Keys · review dialog ",
        Context::Bulk => " Keys · bulk triage ",
        Context::Lookup => " Keys · lookup ",
        Context::Metrics => " Keys · metrics ",
        Context::Audit => " Keys · audit ",
        _ => " Keys · detail ",
    };
    frame.render_widget(Clear, popup);
    frame.render_widget(widgets::pane(theme, Clean::new(title), true), popup);
    let inner = layout::inner(popup);
    let footer_rows = u16::try_from(footer.len()).unwrap_or(0).min(inner.height);
    let [keys, foot] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(footer_rows)]).areas(inner);
    let parts = Layout::horizontal(vec![Constraint::Fill(1); columns.len()])
        .spacing(1)
        .split(keys);
    for (lines, part) in columns.into_iter().zip(parts.iter()) {
        frame.render_widget(Paragraph::new(lines), *part);
    }
    frame.render_widget(Paragraph::new(footer), foot);
}

/// One column of `key  what` lines, wrapped to `width`.
fn column(
    theme: Theme,
    entries: &[(&str, &str, bool)],
    key_width: usize,
    width: u16,
) -> Vec<Line<'static>> {
    let mut doc = Doc::default();
    for (key, what, closing) in entries {
        let (key_style, text_style) = if *closing {
            (theme.dim(), theme.dim())
        } else {
            (theme.title(), theme.plain())
        };
        doc.push_indented(
            line(vec![
                span(Clean::new(&format!(" {key:<key_width$}")), key_style),
                span(Clean::new(what), text_style),
            ]),
            u16::try_from(key_width + 1).unwrap_or(0),
        );
    }
    doc.wrap(width)
}
