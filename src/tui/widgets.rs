//! The building blocks every pane draws with. Text reaches a cell only as
//! [`Clean`] (sanitized, G10): [`span`] and [`DataTable`] accept nothing else, and
//! the views build their lines from these helpers alone.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Cell, Paragraph, Row, Table, TableState};
use ratatui_textarea::TextArea;

use super::theme::Theme;
use crate::core::sanitize::Clean;

/// A styled piece of sanitized text.
pub(crate) fn span(text: Clean, style: Style) -> Span<'static> {
    Span::styled(text.into_string(), style)
}

/// A line of sanitized pieces.
pub(crate) fn line(parts: Vec<Span<'static>>) -> Line<'static> {
    Line::from(parts)
}

/// A line of sanitized pieces cut to `width` columns, an ellipsis where it was
/// cut (the pieces are already clean, so cutting one keeps it clean).
pub(crate) fn fit_line(parts: Vec<Span<'static>>, width: u16) -> Line<'static> {
    let width_of = |part: &Span| {
        u16::try_from(unicode_width::UnicodeWidthStr::width(part.content.as_ref()))
            .unwrap_or(u16::MAX)
    };
    let total = parts.iter().map(width_of).fold(0u16, u16::saturating_add);
    if total <= width {
        return Line::from(parts);
    }
    // One column is kept for the ellipsis.
    let mut left = width.saturating_sub(1);
    let mut out = Vec::new();
    for part in parts {
        let w = width_of(&part);
        if w <= left {
            left -= w;
            out.push(part);
            continue;
        }
        out.push(span(
            ellipsis(&Clean::new(part.content.as_ref()), left + 1),
            part.style,
        ));
        break;
    }
    Line::from(out)
}

/// Width of the label column of [`field`] lines.
pub(crate) const LABEL_WIDTH: u16 = 18;

/// `label: value` with the label dimmed.
pub(crate) fn field(theme: Theme, label: &str, value: Clean, style: Style) -> Line<'static> {
    line(vec![
        span(
            Clean::new(&format!(
                "{label:<width$} ",
                width = usize::from(LABEL_WIDTH - 1)
            )),
            theme.label(),
        ),
        span(value, style),
    ])
}

/// A bordered block with a title; the border is bright when the pane has focus.
pub(crate) fn pane(theme: Theme, title: Clean, focused: bool) -> Block<'static> {
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

/// Lines of a scrolling pane, each with the indent its continuation lines get when
/// it is wrapped. Wrapping here, rather than in the paragraph, gives the exact
/// height the scroll limits need.
#[derive(Debug, Clone, Default)]
pub(crate) struct Doc {
    lines: Vec<(Line<'static>, u16)>,
}

impl Doc {
    /// A line whose continuation is indented by two columns.
    pub(crate) fn push(&mut self, line: Line<'static>) {
        self.lines.push((line, 2));
    }

    /// A line whose continuation is indented by `indent` columns.
    pub(crate) fn push_indented(&mut self, line: Line<'static>, indent: u16) {
        self.lines.push((line, indent));
    }

    /// A [`field`] line; its value wraps under itself.
    pub(crate) fn field(&mut self, theme: Theme, label: &str, value: Clean, style: Style) {
        self.lines
            .push((field(theme, label, value, style), LABEL_WIDTH));
    }

    pub(crate) fn blank(&mut self) {
        self.lines.push((Line::default(), 0));
    }

    /// Every line cut to `width` columns, long ones continued on indented lines.
    pub(crate) fn wrap(&self, width: u16) -> Vec<Line<'static>> {
        self.lines
            .iter()
            .flat_map(|(line, indent)| wrap(line, width, *indent))
            .collect()
    }
}

/// Cuts one line into lines of at most `width` columns, preferring to break after a
/// space in the second half of a line; continuation lines start with `indent`
/// spaces (dropped when the width is too small for them).
pub(crate) fn wrap(line: &Line<'static>, width: u16, indent: u16) -> Vec<Line<'static>> {
    let width = usize::from(width.max(1));
    let indent = if usize::from(indent) * 2 < width {
        usize::from(indent)
    } else {
        0
    };
    let cells: Vec<(char, Style)> = line
        .spans
        .iter()
        .flat_map(|s| {
            let style = line.style.patch(s.style);
            s.content.chars().map(move |c| (c, style))
        })
        .collect();
    let char_width = |c: char| unicode_width::UnicodeWidthChar::width(c).unwrap_or(0);
    let mut out = Vec::new();
    let mut start = 0;
    while start < cells.len() || out.is_empty() {
        let lead = if out.is_empty() { 0 } else { indent };
        let room = width - lead;
        let mut end = start;
        let mut used = 0;
        while end < cells.len() && used + char_width(cells[end].0) <= room {
            used += char_width(cells[end].0);
            end += 1;
        }
        if end == start && end < cells.len() {
            end += 1;
        }
        if end < cells.len()
            && let Some(space) = (start + room / 2..end).rev().find(|&i| cells[i].0 == ' ')
        {
            end = space + 1;
        }
        let mut spans = Vec::new();
        if lead > 0 {
            spans.push(Span::raw(" ".repeat(lead)));
        }
        let mut piece = String::new();
        let mut style = None;
        for &(c, s) in &cells[start..end] {
            if style.is_some_and(|st| st != s) {
                spans.push(Span::styled(
                    std::mem::take(&mut piece),
                    style.unwrap_or_default(),
                ));
            }
            style = Some(s);
            piece.push(c);
        }
        if !piece.is_empty() {
            spans.push(Span::styled(piece, style.unwrap_or_default()));
        }
        out.push(Line::from(spans));
        start = end;
    }
    out
}

/// The largest useful scroll offset for `height` wrapped lines in `rows` rows.
pub(crate) fn max_scroll(height: usize, rows: u16) -> u16 {
    u16::try_from(height.saturating_sub(usize::from(rows))).unwrap_or(u16::MAX)
}

/// Draws already wrapped lines in a block, scrolled by `scroll` rows (clamped).
pub(crate) fn draw_lines(
    frame: &mut Frame,
    area: Rect,
    block: Block<'static>,
    lines: Vec<Line<'static>>,
    scroll: u16,
) {
    let rows = block.inner(area).height;
    let scroll = scroll.min(max_scroll(lines.len(), rows));
    let paragraph = Paragraph::new(lines).block(block).scroll((scroll, 0));
    frame.render_widget(paragraph, area);
}

/// One column of a [`DataTable`]: a header, the most columns it takes before
/// its cells are cut (unless room is left over), a priority (columns with the
/// highest number are dropped first when the area is narrow) and how to get the
/// cell of one row.
pub(crate) struct Column<R, C> {
    pub header: &'static str,
    pub width: u16,
    pub priority: u8,
    /// Whether a cut start of its cells still says something (a name, a
    /// text); an instant, an id or a figure is shown whole or not at all.
    pub cut: bool,
    pub cell: fn(&R, &C) -> (Clean, Style),
}

/// The one table widget: rows of any type through a list of columns, showing only
/// the columns that fit, with the selected row highlighted. Columns are as wide
/// as their header and cells need (up to their `width`), a column with no text
/// in any row is left out, and room left over goes back to the columns that were
/// cut, most important first.
pub(crate) struct DataTable<'a, R, C> {
    pub columns: &'a [Column<R, C>],
    pub rows: &'a [R],
    pub context: &'a C,
    pub selected: Option<usize>,
}

/// The fewest cells a column is cut to rather than dropped.
const MIN_CUT: u16 = 10;

fn text_width(text: &str) -> u16 {
    u16::try_from(unicode_width::UnicodeWidthStr::width(text)).unwrap_or(u16::MAX)
}

impl<R, C> DataTable<'_, R, C> {
    /// The columns shown in `width` and how wide each is, in their original
    /// order, for cells already computed (`cells[row][column]`).
    fn fitting(&self, cells: &[Vec<(Clean, Style)>], width: u16) -> Vec<(usize, u16)> {
        let natural: Vec<Option<u16>> = (0..self.columns.len())
            .map(|i| {
                let widest = cells.iter().map(|row| text_width(row[i].0.as_str())).max();
                match widest {
                    Some(0) => None,
                    w => Some(w.unwrap_or(0).max(text_width(self.columns[i].header))),
                }
            })
            .collect();
        let mut order: Vec<usize> = (0..self.columns.len())
            .filter(|&i| natural[i].is_some())
            .collect();
        order.sort_by_key(|&i| self.columns[i].priority);
        let wanted = |i: usize| {
            let header = text_width(self.columns[i].header);
            natural[i]
                .unwrap_or(0)
                .min(self.columns[i].width.max(header))
        };
        let mut chosen: Vec<(usize, u16)> = Vec::new();
        let mut used: u16 = 0;
        for &i in &order {
            let gap = u16::from(!chosen.is_empty());
            let room = width.saturating_sub(used).saturating_sub(gap);
            // A column that does not fit whole is cut to the room left, when
            // that still shows its header and a useful start of its cells;
            // a less important one never takes its place.
            let least = if self.columns[i].cut {
                wanted(i).min(text_width(self.columns[i].header).max(MIN_CUT))
            } else {
                wanted(i)
            };
            if room < least {
                continue;
            }
            let given = wanted(i).min(room);
            used += given + gap;
            chosen.push((i, given));
        }
        // Room left over widens the cut columns, most important first.
        let mut left = width.saturating_sub(used);
        for (i, given) in &mut chosen {
            let more = natural[*i].unwrap_or(0).saturating_sub(*given).min(left);
            *given += more;
            left -= more;
        }
        chosen.sort_unstable_by_key(|(i, _)| *i);
        chosen
    }

    pub(crate) fn draw(&self, frame: &mut Frame, area: Rect, block: Block<'static>, theme: Theme) {
        let inner = block.inner(area);
        let cells: Vec<Vec<(Clean, Style)>> = self
            .rows
            .iter()
            .map(|row| {
                self.columns
                    .iter()
                    .map(|c| (c.cell)(row, self.context))
                    .collect()
            })
            .collect();
        let shown = self.fitting(&cells, inner.width);
        let header =
            Row::new(shown.iter().map(|&(i, _)| {
                Cell::from(span(Clean::new(self.columns[i].header), theme.label()))
            }));
        let rows = cells.iter().map(|row| {
            Row::new(shown.iter().map(|&(i, w)| {
                let (text, style) = &row[i];
                Cell::from(span(ellipsis(text, w), *style))
            }))
        });
        let widths: Vec<Constraint> = shown.iter().map(|&(_, w)| Constraint::Length(w)).collect();
        let table = Table::new(rows, widths)
            .header(header)
            .block(block)
            .flex(ratatui::layout::Flex::Start)
            .row_highlight_style(theme.selected());
        let mut state = TableState::default().with_selected(self.selected);
        frame.render_stateful_widget(table, area, &mut state);
    }
}

/// `text` cut to `width` columns, its last column an ellipsis when it was cut.
pub(crate) fn ellipsis(text: &Clean, width: u16) -> Clean {
    use unicode_width::UnicodeWidthChar;
    let width = usize::from(width);
    if unicode_width::UnicodeWidthStr::width(text.as_str()) <= width {
        return text.clone();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.as_str().chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        used += w;
        out.push(c);
    }
    if width > 0 {
        out.push('…');
    }
    Clean::new(&out)
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
        // Reversed rather than coloured, so a selection shows without colour too.
        area.set_selection_style(Style::new().reversed());
        Prompt { label, area }
    }

    /// Selects the whole text (when there is any), so that typing replaces it.
    pub fn select_all(&mut self) {
        if !self.text().is_empty() {
            self.area.select_all();
        }
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
        self.draw_aligned(frame, area, theme, self.label.len() as u16 + 2);
    }

    /// Draws with the label in a column `label_width` wide, so that the inputs of
    /// a form line up.
    pub fn draw_aligned(&self, frame: &mut Frame, area: Rect, theme: Theme, label_width: u16) {
        let [label, input] = ratatui::layout::Layout::horizontal([
            Constraint::Length(label_width),
            Constraint::Min(1),
        ])
        .areas(area);
        frame.render_widget(
            Paragraph::new(span(
                Clean::new(&format!("{}: ", self.label)),
                theme.title(),
            )),
            label,
        );
        frame.render_widget(&self.area, input);
    }
}

/// A short message inside a pane.
pub(crate) fn message(
    frame: &mut Frame,
    area: Rect,
    block: Block<'static>,
    theme: Theme,
    text: &str,
) {
    let inner = super::layout::inner(area);
    let mut doc = Doc::default();
    for piece in Clean::lines(text) {
        doc.push(line(vec![span(piece, theme.plain())]));
    }
    draw_lines(frame, area, block, doc.wrap(inner.width), 0);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(lines: &[Line<'static>]) -> Vec<String> {
        lines.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn wrapping_breaks_after_spaces_and_indents_continuations() {
        let line = Line::from("label  one two three four five");
        assert_eq!(
            texts(&wrap(&line, 16, 7)),
            ["label  one two ", "       three ", "       four five"]
        );
        assert_eq!(texts(&wrap(&Line::default(), 10, 2)), [""]);
    }

    #[test]
    fn long_words_are_cut_and_wide_characters_never_split() {
        let hash = Line::from("sha256:0123456789abcdef");
        assert_eq!(
            texts(&wrap(&hash, 10, 2)),
            ["sha256:012", "  3456789a", "  bcdef"]
        );
        let wide = Line::from("世界世界世");
        assert_eq!(texts(&wrap(&wide, 5, 0)), ["世界", "世界", "世"]);
        assert_eq!(
            texts(&wrap(&wide, 1, 0)).len(),
            5,
            "a too-narrow width still progresses"
        );
    }

    #[test]
    fn styles_survive_wrapping_and_scroll_limits_are_exact() {
        let line = Line::from(vec![
            Span::styled("ab", Style::new().bold()),
            Span::raw("cd"),
        ]);
        let wrapped = wrap(&line, 3, 0);
        assert_eq!(wrapped[0].spans[0].style, Style::new().bold());
        assert_eq!(wrapped[0].spans[1].content, "c");
        assert_eq!(max_scroll(10, 4), 6);
        assert_eq!(max_scroll(3, 4), 0);
    }
}

#[cfg(test)]
mod ellipsis_tests {
    use super::*;

    #[test]
    fn a_cut_text_ends_in_an_ellipsis_and_a_fitting_one_is_left_alone() {
        let text = Clean::new("validation_failed");
        assert_eq!(ellipsis(&text, 16).as_str(), "validation_fail…");
        assert_eq!(ellipsis(&text, 17).as_str(), "validation_failed");
        assert_eq!(ellipsis(&text, 0).as_str(), "");
    }
}
