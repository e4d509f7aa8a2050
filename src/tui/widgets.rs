//! The building blocks every pane draws with. Text reaches a cell only as
//! [`Clean`] (sanitized, G10): [`span`] and [`DataTable`] accept nothing else, and
//! the views build their lines from these helpers alone.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, TableState, Wrap};
use ratatui_textarea::TextArea;

use super::theme::Theme;
use crate::core::sanitize::Clean;

/// A styled piece of sanitized text.
pub fn span(text: Clean, style: Style) -> Span<'static> {
    Span::styled(text.into_string(), style)
}

/// A line of sanitized pieces.
pub fn line(parts: Vec<Span<'static>>) -> Line<'static> {
    Line::from(parts)
}

/// `label: value` with the label dimmed.
pub fn field(theme: Theme, label: &str, value: Clean, style: Style) -> Line<'static> {
    line(vec![
        span(Clean::new(&format!("{label:<18}")), theme.label()),
        span(value, style),
    ])
}

/// A bordered block with a title; the border is bright when the pane has focus.
pub fn pane(theme: Theme, title: Clean, focused: bool) -> Block<'static> {
    let border = if focused {
        theme.focused_border()
    } else {
        theme.dim()
    };
    Block::new()
        .borders(Borders::ALL)
        .border_style(border)
        .title(span(title, theme.title()))
}

/// Draws lines in a block, scrolled by `scroll` rows, wrapping long ones.
pub fn draw_lines(frame: &mut Frame, area: Rect, block: Block<'static>, lines: Vec<Line<'static>>, scroll: u16) {
    let paragraph = Paragraph::new(lines)
        .block(block)
        .wrap(Wrap { trim: false })
        .scroll((scroll, 0));
    frame.render_widget(paragraph, area);
}

/// One column of a [`DataTable`]: a header, a width, a priority (columns with the
/// highest number are dropped first when the area is narrow) and how to get the
/// cell of one row.
pub struct Column<R, C> {
    pub header: &'static str,
    pub width: u16,
    pub priority: u8,
    pub cell: fn(&R, &C) -> (Clean, Style),
}

/// The one table widget: rows of any type through a list of columns, showing only
/// the columns that fit, with the selected row highlighted.
pub struct DataTable<'a, R, C> {
    pub columns: &'a [Column<R, C>],
    pub rows: &'a [R],
    pub context: &'a C,
    pub selected: Option<usize>,
}

impl<R, C> DataTable<'_, R, C> {
    /// Indexes of the columns that fit in `width`, in their original order.
    fn fitting(&self, width: u16) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.columns.len()).collect();
        order.sort_by_key(|&i| self.columns[i].priority);
        let mut chosen = Vec::new();
        let mut used: u16 = 0;
        for i in order {
            let need = self.columns[i].width + u16::from(!chosen.is_empty());
            if used + need <= width {
                used += need;
                chosen.push(i);
            }
        }
        chosen.sort_unstable();
        chosen
    }

    pub fn draw(&self, frame: &mut Frame, area: Rect, block: Block<'static>, theme: Theme) {
        let inner = block.inner(area);
        let shown = self.fitting(inner.width);
        let header = Row::new(
            shown
                .iter()
                .map(|&i| Cell::from(span(Clean::new(self.columns[i].header), theme.label()))),
        );
        let rows = self.rows.iter().map(|row| {
            Row::new(shown.iter().map(|&i| {
                let (text, style) = (self.columns[i].cell)(row, self.context);
                Cell::from(span(text, style))
            }))
        });
        let widths: Vec<Constraint> = shown
            .iter()
            .map(|&i| Constraint::Length(self.columns[i].width))
            .collect();
        let table = Table::new(rows, widths)
            .header(header)
            .block(block)
            .row_highlight_style(theme.selected());
        let mut state = TableState::default().with_selected(self.selected);
        frame.render_stateful_widget(table, area, &mut state);
    }
}

/// The one text-area wrapper: a single-line input with a label, used by search and
/// filter. It accepts only characters that the sanitizer would leave alone, so what
/// the reviewer types can be drawn as it is.
#[derive(Debug, Clone)]
pub struct Prompt {
    pub label: &'static str,
    area: TextArea<'static>,
}

impl Prompt {
    pub fn new(label: &'static str, initial: &str) -> Self {
        let mut area = TextArea::new(vec![Clean::new(initial).into_string()]);
        area.move_cursor(ratatui_textarea::CursorMove::End);
        area.set_cursor_line_style(Style::new());
        Prompt { label, area }
    }

    /// Feeds one key to the input; returns whether the text changed. Newlines and
    /// anything the sanitizer would mark are refused.
    pub fn input(&mut self, key: crossterm::event::KeyEvent) -> bool {
        use crossterm::event::KeyCode;
        match key.code {
            KeyCode::Enter | KeyCode::Tab => false,
            KeyCode::Char(c) if Clean::new(&c.to_string()).as_str() != c.to_string() => false,
            _ => self.area.input(key),
        }
    }

    pub fn text(&self) -> String {
        self.area.lines().concat()
    }

    pub fn draw(&self, frame: &mut Frame, area: Rect, theme: Theme) {
        let label_width = self.label.len() as u16 + 2;
        let [label, input] = ratatui::layout::Layout::horizontal([
            Constraint::Length(label_width),
            Constraint::Min(1),
        ])
        .areas(area);
        frame.render_widget(
            Paragraph::new(span(Clean::new(&format!("{}: ", self.label)), theme.title())),
            label,
        );
        frame.render_widget(&self.area, input);
    }
}
