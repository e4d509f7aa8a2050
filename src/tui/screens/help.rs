//! The `?` overlay: every key of the context under it, read from the keymap
//! table, so the help can never disagree with the keys. When one column does not
//! fit the height, the keys flow into two, the first filled as far as the height
//! allows; when two do not fit either (80x24), the two columns share the lines
//! evenly and scroll together (`j`/`k`), a last line saying how much is below.
//! It closes back onto the dialog it was opened over, if any.

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
    /// Lines scrolled, when the keys do not fit.
    pub scroll: u16,
}

impl Help {
    /// The overlay on the keys of `context`, scrolled to the top.
    pub fn new(context: Context, under: Option<Box<Modal>>, log_path: Option<Clean>) -> Self {
        Help {
            context,
            under,
            log_path,
            scroll: 0,
        }
    }
}

impl Screen for Help {
    fn context(&self) -> Context {
        Context::Help
    }

    fn key(&mut self, key: KeyEvent, ctx: &Ctx) -> Outcome {
        let last = lay_out(ctx, self).scroll_max;
        let page = i64::from(lay_out(ctx, self).rows.max(1));
        let by = |scroll: u16, delta: i64| {
            u16::try_from((i64::from(scroll) + delta).clamp(0, i64::from(last))).unwrap_or(0)
        };
        match keymap::lookup(Context::Help, key) {
            Some(Command::Quit) => Outcome::Quit,
            Some(Command::Down) => {
                self.scroll = by(self.scroll, 1);
                Outcome::done()
            }
            Some(Command::Up) => {
                self.scroll = by(self.scroll, -1);
                Outcome::done()
            }
            Some(Command::PageDown) => {
                self.scroll = by(self.scroll, page);
                Outcome::done()
            }
            Some(Command::PageUp) => {
                self.scroll = by(self.scroll, -page);
                Outcome::done()
            }
            Some(Command::Top) => {
                self.scroll = 0;
                Outcome::done()
            }
            Some(Command::Bottom) => {
                self.scroll = last;
                Outcome::done()
            }
            Some(_) => Outcome::Close,
            None => Outcome::done(),
        }
    }

    fn draw(&self, frame: &mut Frame, _area: Rect, ctx: &Ctx) {
        draw(frame, ctx, self);
    }
}

/// The overlay measured for a screen: its columns, footer and where it goes.
struct Laid {
    columns: Vec<Vec<Line<'static>>>,
    footer: Vec<Line<'static>>,
    /// Rows the keys get.
    rows: u16,
    /// The largest scroll (0 when everything fits).
    scroll_max: u16,
    popup: Rect,
}

fn lay_out(ctx: &Ctx, help: &Help) -> Laid {
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

    let area = ctx.size;
    let width = area.width.saturating_sub(4).min(MAX_WIDTH);
    let room = area.height.saturating_sub(4);
    let inner_width = width.saturating_sub(2).max(1);
    let mut footer = Vec::new();
    if let Some(path) = &help.log_path {
        footer.push(line(vec![
            span(Clean::new(" logs: "), theme.dim()),
            span(path.clone(), theme.dim()),
        ]));
    }
    let mut footer: Vec<Line<'static>> = footer
        .iter()
        .flat_map(|l| widgets::wrap(l, inner_width, 7))
        .collect();
    // The rows the keys may take (the log path below takes its own).
    let rows = room.saturating_sub(u16::try_from(footer.len()).unwrap_or(0));
    let one = column(theme, &entries, key_width, inner_width);
    let split = one.len() > usize::from(rows) && inner_width >= 60;
    let mut columns: Vec<Vec<Line<'static>>> = if split {
        let column_width = (inner_width - 1) / 2;
        let heights: Vec<usize> = entries
            .iter()
            .map(|entry| column(theme, std::slice::from_ref(entry), key_width, column_width).len())
            .collect();
        let total: usize = heights.iter().sum();
        // The first column is filled as far as the height allows and the rest
        // flows into the second; when even two columns overflow, the lines are
        // shared evenly and both scroll.
        let target = if total > 2 * usize::from(rows) {
            total.div_ceil(2)
        } else {
            usize::from(rows)
        };
        let mut used = 0;
        let half = heights
            .iter()
            .position(|h| {
                used += h;
                used > target
            })
            .unwrap_or(entries.len());
        vec![
            column(theme, &entries[..half], key_width, column_width),
            column(theme, &entries[half..], key_width, column_width),
        ]
    } else {
        vec![one]
    };
    let body = columns.iter().map(Vec::len).max().unwrap_or(0);
    let mut key_rows = rows;
    let mut scroll_max = 0;
    if body > usize::from(rows) {
        // One row says how much is below.
        key_rows = rows.saturating_sub(1);
        scroll_max = u16::try_from(body - usize::from(key_rows)).unwrap_or(u16::MAX);
        let scroll = help.scroll.min(scroll_max);
        let below = scroll_max - scroll;
        let text = if below > 0 {
            format!(
                " ↓ {below} more line{} · j k PgDn PgUp scroll",
                plural(below)
            )
        } else {
            format!(" ↑ {scroll} line{} above · k g scroll up", plural(scroll))
        };
        footer.insert(0, line(vec![span(Clean::new(&text), theme.warn())]));
        for column in &mut columns {
            column.drain(..usize::from(scroll).min(column.len()));
            column.truncate(usize::from(key_rows));
        }
    }
    let shown = columns.iter().map(Vec::len).max().unwrap_or(0);
    let height = u16::try_from(shown + footer.len() + 2)
        .unwrap_or(u16::MAX)
        .min(area.height);
    let [row] = Layout::vertical([Constraint::Length(height)])
        .flex(Flex::Center)
        .areas(area);
    let [popup] = Layout::horizontal([Constraint::Length(width)])
        .flex(Flex::Center)
        .areas(row);
    Laid {
        columns,
        footer,
        rows: key_rows,
        scroll_max,
        popup,
    }
}

fn plural(n: u16) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn draw(frame: &mut Frame, ctx: &Ctx, help: &Help) {
    let theme = ctx.theme;
    let laid = lay_out(ctx, help);
    let popup = laid.popup;
    let title = match help.context {
        Context::Queue => " Keys · queue ",
        Context::Review => " Keys · review dialog ",
        Context::Bulk => " Keys · bulk triage ",
        Context::Lookup => " Keys · lookup ",
        Context::Metrics => " Keys · metrics ",
        Context::Audit => " Keys · audit ",
        Context::Tools => " Keys · tools ",
        _ => " Keys · detail ",
    };
    frame.render_widget(Clear, popup);
    frame.render_widget(widgets::pane(theme, Clean::new(title), true), popup);
    let inner = layout::inner(popup);
    let footer_rows = u16::try_from(laid.footer.len())
        .unwrap_or(0)
        .min(inner.height);
    let [keys, foot] =
        Layout::vertical([Constraint::Min(0), Constraint::Length(footer_rows)]).areas(inner);
    let parts = Layout::horizontal(vec![Constraint::Fill(1); laid.columns.len()])
        .spacing(1)
        .split(keys);
    for (lines, part) in laid.columns.into_iter().zip(parts.iter()) {
        frame.render_widget(Paragraph::new(lines), *part);
    }
    frame.render_widget(Paragraph::new(laid.footer), foot);
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

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::*;
    use crate::tui::layout::Pane;
    use crate::tui::screens::fixture::{self, char, key};

    #[test]
    fn the_keys_scroll_within_what_does_not_fit() {
        let actor = fixture::actor();
        // The queue's keys do not fit 80×24: the overlay scrolls.
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Queue);
        let mut help = Help::new(Context::Queue, None, None);
        let last = lay_out(&ctx, &help).scroll_max;
        assert!(last > 1, "the queue's keys overflow 80×24");
        assert_eq!(help.key(char('k'), &ctx), Outcome::done());
        assert_eq!(help.scroll, 0, "nothing above the top");
        help.key(char('j'), &ctx);
        assert_eq!(help.scroll, 1);
        help.key(char('G'), &ctx);
        assert_eq!(help.scroll, last);
        help.key(key(KeyCode::PageDown), &ctx);
        assert_eq!(help.scroll, last, "nothing below the bottom");
        help.key(char('g'), &ctx);
        assert_eq!(help.scroll, 0);
    }

    #[test]
    fn keys_that_fit_do_not_scroll() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 200, 60, Pane::Queue);
        let mut help = Help::new(Context::Lookup, None, None);
        assert_eq!(lay_out(&ctx, &help).scroll_max, 0);
        help.key(char('j'), &ctx);
        help.key(char('G'), &ctx);
        assert_eq!(help.scroll, 0);
    }

    #[test]
    fn esc_q_and_question_mark_close_and_ctrl_c_quits() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Queue);
        let mut help = Help::new(Context::Detail, None, None);
        for k in [key(KeyCode::Esc), char('q'), char('?')] {
            assert_eq!(help.key(k, &ctx), Outcome::Close, "{k:?}");
        }
        assert_eq!(
            help.key(char('x'), &ctx),
            Outcome::done(),
            "an unbound key is nothing"
        );
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(help.key(ctrl_c, &ctx), Outcome::Quit);
    }

    #[test]
    fn it_asks_for_nothing_so_takes_no_answer() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Queue);
        let mut help = Help::new(Context::Queue, None, None);
        let answer = crate::tui::message::Answer::Debounced;
        assert_eq!(help.answer(1, answer, &ctx), Outcome::Pass);
        assert_eq!(help.scroll, 0);
    }
}
