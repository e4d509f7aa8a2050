//! The top two lines (tabs with counts by state and overdue; the active filter,
//! search and sort, always visible) and the status bar at the bottom.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Span;
use ratatui::widgets::Paragraph;

use super::keymap_hint;
use crate::core::clock::format_instant;
use crate::core::model::State;
use crate::core::sanitize::Clean;
use crate::tui::app::App;
use crate::tui::filter;
use crate::tui::keymap::{Command, Context};
use crate::tui::layout;
use crate::tui::queue::{Tab, sort_name};
use crate::tui::widgets::{line, span};

pub fn draw(frame: &mut Frame, app: &App, header: Rect, query: Rect) {
    let theme = app.theme;
    let wide = layout::is_wide(app.size);
    let mut parts: Vec<Span<'static>> = Vec::new();
    if wide {
        parts.push(span(Clean::new(" holdfast "), theme.title()));
    }
    for tab in [Tab::Held, Tab::All] {
        let style = if tab == app.queue.tab {
            theme.selected().patch(theme.title())
        } else {
            theme.dim()
        };
        let name = if wide { tab.title() } else { tab.short_title() };
        parts.push(span(Clean::new(&format!(" {name} ")), style));
    }
    parts.push(span(Clean::new(" │"), theme.dim()));
    match &app.queue.counts {
        None => parts.push(span(Clean::new(" counting…"), theme.dim())),
        Some(counts) => {
            let count = |state: State| {
                counts
                    .by_state
                    .iter()
                    .find(|(s, _)| *s == state)
                    .map_or(0, |(_, n)| *n)
            };
            let states: Vec<State> = match app.queue.tab {
                Tab::Held => State::HELD.to_vec(),
                Tab::All => State::ALL
                    .iter()
                    .copied()
                    .filter(|s| count(*s) > 0)
                    .collect(),
            };
            let overdue = if counts.overdue > 0 {
                theme.alert()
            } else {
                theme.plain()
            };
            parts.push(span(
                Clean::new(&format!(" overdue {}", counts.overdue)),
                overdue,
            ));
            parts.push(span(Clean::new(" │"), theme.dim()));
            for state in states {
                parts.push(span(Clean::new(&format!(" {state} ")), theme.state(state)));
                parts.push(span(Clean::new(&count(state).to_string()), theme.plain()));
            }
            if counts.held_by_dependency > 0 {
                parts.push(span(
                    Clean::new(&format!(" │ by dependency {}", counts.held_by_dependency)),
                    theme.warn(),
                ));
            }
            if counts.pending_proposals > 0 {
                parts.push(span(
                    Clean::new(&format!(
                        " │ awaiting 2nd approver {}",
                        counts.pending_proposals
                    )),
                    theme.warn(),
                ));
            }
        }
    }
    frame.render_widget(Paragraph::new(line(parts)), header);

    if let Some(prompt) = &app.prompt {
        prompt.input.draw(frame, query, theme);
        return;
    }
    let described = filter::describe(&app.queue.filter);
    let (filter_text, filter_style) = if described.is_empty() {
        ("none".to_owned(), theme.dim())
    } else {
        (described, theme.warn())
    };
    let (search_text, search_style) = if app.queue.search.is_empty() {
        ("none".to_owned(), theme.dim())
    } else {
        (format!("\"{}\"", app.queue.search), theme.warn())
    };
    let query_line = line(vec![
        span(Clean::new(" filter "), theme.label()),
        span(Clean::new(&filter_text), filter_style),
        span(Clean::new("  search "), theme.label()),
        span(Clean::new(&search_text), search_style),
        span(Clean::new("  sort "), theme.label()),
        span(Clean::new(sort_name(app.queue.sort)), theme.plain()),
    ]);
    let clock = if app.frozen { "frozen" } else { "now" };
    let clock = format!("{clock} {} ", format_instant(app.now));
    let room = usize::from(query.width).saturating_sub(query_line.width() + 2);
    let right = [
        format!("{} · {clock}", app.actor.describe()),
        format!("as {} · {clock}", app.actor.name()),
        clock,
    ]
    .into_iter()
    .find(|text| text.chars().count() <= room)
    .unwrap_or_default();
    let right_width = u16::try_from(right.chars().count()).unwrap_or(u16::MAX);
    let [left_area, right_area] =
        Layout::horizontal([Constraint::Min(0), Constraint::Length(right_width)]).areas(query);
    frame.render_widget(Paragraph::new(query_line), left_area);
    frame.render_widget(
        Paragraph::new(line(vec![span(Clean::new(&right), theme.dim())])),
        right_area,
    );
}

/// The status message, or the keys that matter here.
pub fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    let theme = app.theme;
    let text = match (&app.status, &app.prompt) {
        (Some(status), _) => {
            let style = if status.alert {
                theme.alert()
            } else {
                theme.plain()
            };
            frame.render_widget(
                Paragraph::new(line(vec![
                    span(Clean::new(" "), style),
                    span(status.text.clone(), style),
                ])),
                area,
            );
            return;
        }
        (None, Some(_)) => keymap_hint(
            &[(Command::Accept, "keep"), (Command::Cancel, "cancel")],
            Context::Prompt,
        ),
        (None, None) if app.help => keymap_hint(
            &[(Command::Help, "close help"), (Command::Quit, "quit")],
            Context::Help,
        ),
        (None, None) => match app.help_context() {
            Context::Queue => keymap_hint(
                &[
                    (Command::Open, "open"),
                    (Command::Search, "search"),
                    (Command::Filter, "filter"),
                    (Command::Sort, "sort"),
                    (Command::SwitchTab, "tab"),
                    (Command::NextPane, "pane"),
                    (Command::Help, "help"),
                    (Command::Quit, "quit"),
                ],
                Context::Queue,
            ),
            _ => keymap_hint(
                &[
                    (Command::NextPane, "pane"),
                    (Command::Down, "scroll"),
                    (Command::NextLink, "next link"),
                    (Command::Open, "follow"),
                    (Command::Back, "back"),
                    (Command::Help, "help"),
                    (Command::Quit, "quit"),
                ],
                Context::Detail,
            ),
        },
    };
    frame.render_widget(
        Paragraph::new(line(vec![span(
            Clean::new(&format!(" {text}")),
            theme.dim(),
        )])),
        area,
    );
}
