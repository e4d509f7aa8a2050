//! The top two lines (tabs with counts by state and overdue; the active filter,
//! search and sort, always visible) and the status bar at the bottom.

use chrono::SubsecRound;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::keymap_hint;
use crate::core::clock::human_instant;
use crate::core::model::State;
use crate::core::sanitize::Clean;
use crate::store::Link;
use crate::tui::app::App;
use crate::tui::filter;
use crate::tui::keymap::{Command, Context};
use crate::tui::layout;
use crate::tui::screens::Screen as _;
use crate::tui::screens::queue::{Tab, sort_name};
use crate::tui::screens::{HELD, TABS};
use crate::tui::widgets::{fit_line, line, span};

pub(super) fn draw(frame: &mut Frame, app: &App, header: Rect, query: Rect) {
    let theme = app.theme;
    let wide = layout::is_wide(app.size);
    let shown = app.screen();
    // Every tab by its title; when that leaves no room for the counts, the
    // tabs not shown by their key alone.
    let tabs = |titled: bool| -> Vec<Span<'static>> {
        let mut parts = Vec::new();
        if wide {
            parts.push(span(Clean::new(" holdfast "), theme.title()));
        }
        for screen in TABS {
            let style = if screen == shown {
                theme.selected().patch(theme.title())
            } else {
                theme.dim()
            };
            let name = if wide {
                screen.title
            } else {
                screen.short_title
            };
            let text = if titled || screen == shown {
                format!(" {} {name} ", screen.key)
            } else {
                format!(" {} ", screen.key)
            };
            parts.push(span(Clean::new(&text), style));
        }
        parts
    };
    let mut parts: Vec<Span<'static>> = Vec::new();
    parts.push(span(Clean::new(" │"), theme.dim()));
    if let Some((seq, _)) = app.chain.broken() {
        let text = if app.chain.acknowledged {
            format!(" ⚠ AUDIT CHAIN BROKEN at seq {seq} (acknowledged) │")
        } else {
            format!(
                " ⚠ AUDIT CHAIN BROKEN at seq {seq}: transitions refused, A: how to acknowledge │"
            )
        };
        parts.push(span(Clean::new(&text), theme.alert()));
    }
    if !app.queue.circuits.is_empty() {
        let tools: Vec<String> = app
            .queue
            .circuits
            .iter()
            .map(|c| format!("{} {}", c.tool, c.position.as_str()))
            .collect();
        let text = format!(" ⚠ circuit {} │", tools.join(", "));
        parts.push(span(Clean::new(&text), theme.alert()));
    }
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
    let titled = tabs(true);
    let width = |parts: &[Span<'static>]| parts.iter().map(Span::width).sum::<usize>();
    let head = if width(&titled) + width(&parts) <= usize::from(header.width) {
        titled
    } else {
        tabs(false)
    };
    let parts: Vec<Span<'static>> = head.into_iter().chain(parts).collect();
    frame.render_widget(Paragraph::new(fit_line(parts, header.width)), header);

    if let Link::Reconnecting { attempt } = app.link {
        let text = format!(
            " ⚠ connection to the store lost: reconnecting (attempt {attempt}); what is shown may be out of date"
        );
        frame.render_widget(
            Paragraph::new(line(vec![span(
                Clean::new(&format!("{text:<w$}", w = usize::from(query.width))),
                theme.alert().patch(theme.selected()),
            )])),
            query,
        );
        return;
    }
    if let Some(prompt) = app.prompt() {
        prompt.draw(frame, query, &app.ctx());
        return;
    }
    let query_line = app
        .page_screen()
        .and_then(|screen| screen.summary(&app.ctx()))
        .unwrap_or_else(|| query_summary(app));
    draw_query(frame, app, query, query_line);
}

/// The active filter, search and sort of the queue.
fn query_summary(app: &App) -> Line<'static> {
    let theme = app.theme;
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
    line(vec![
        span(Clean::new(" filter "), theme.label()),
        span(Clean::new(&filter_text), filter_style),
        span(Clean::new("  search "), theme.label()),
        span(Clean::new(&search_text), search_style),
        span(Clean::new("  sort "), theme.label()),
        span(Clean::new(sort_name(app.queue.sort)), theme.plain()),
    ])
}

/// The query line: `query_line` on the left, who and the clock on the right.
fn draw_query(frame: &mut Frame, app: &App, query: Rect, query_line: Line<'static>) {
    let theme = app.theme;
    let clock = if app.frozen { "frozen" } else { "now" };
    // The live clock to the second: a reader at 3 a.m. needs the minute, not nine
    // digits of a fraction that changes with every frame.
    let clock = format!("{clock} {} ", human_instant(app.now.trunc_subsecs(0)));
    let room = usize::from(query.width).saturating_sub(query_line.width() + 2);
    // A claimed identity is marked wherever the name is shown: nothing checked it.
    let name = app.actor.name();
    let who = if app.claimed {
        format!("{name} (--as, unchecked)")
    } else {
        name.clone()
    };
    let right = [
        format!(
            "{} · {clock}",
            app.actor.describe().replacen(&name, &who, 1)
        ),
        format!("as {who} · {clock}"),
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
pub(super) fn draw_status(frame: &mut Frame, app: &App, area: Rect) {
    let theme = app.theme;
    let width = usize::from(area.width.saturating_sub(1));
    let text = match (&app.status, app.prompt()) {
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
        (None, None) if app.review().is_some() && !app.help_open() => {
            "review dialog: its keys are on its last line".to_owned()
        }
        (None, None) if app.bulk().is_some() && !app.help_open() => {
            "bulk triage: its keys are on its last line".to_owned()
        }
        (None, None) if app.help_open() => "Esc or q close help · Ctrl-C quit".to_owned(),
        (None, None) => match app.help_context() {
            Context::Queue => fitted_hint(
                &[
                    (Command::Open, "open"),
                    (Command::Mark, "mark"),
                    (Command::Bulk, "bulk"),
                    (Command::Search, "search"),
                    (Command::Filter, "filter"),
                    (Command::Sort, "sort"),
                    (Command::SwitchTab, "tab"),
                    (Command::NextPane, "pane"),
                    (Command::Review, "review"),
                    (Command::Help, "help"),
                    (Command::Quit, "quit"),
                ],
                Context::Queue,
                3,
                width,
            ),
            Context::Metrics => fitted_hint(
                &[
                    (Command::Down, "select"),
                    (Command::Open, "open"),
                    (Command::Back, "back"),
                    (Command::NextPane, "figures/operations"),
                    (Command::RepeatedErrors, "repeated errors"),
                    (Command::Show(HELD.key), "queue"),
                    (Command::Help, "help"),
                    (Command::Quit, "quit"),
                ],
                Context::Metrics,
                2,
                width,
            ),
            Context::Audit => fitted_hint(
                &[
                    (Command::Down, "select"),
                    (Command::Open, "open operation"),
                    (Command::Show(HELD.key), "queue"),
                    (Command::Show('3'), "metrics"),
                    (Command::Help, "help"),
                    (Command::Quit, "quit"),
                ],
                Context::Audit,
                2,
                width,
            ),
            Context::Tools => fitted_hint(
                &[
                    (Command::Down, "select"),
                    (Command::Open, "its holds"),
                    (Command::PageDown, "scroll inventory"),
                    (Command::Show(HELD.key), "queue"),
                    (Command::Help, "help"),
                    (Command::Quit, "quit"),
                ],
                Context::Tools,
                2,
                width,
            ),
            _ => fitted_hint(
                &[
                    (Command::NextPane, "pane"),
                    (Command::Down, "scroll"),
                    (Command::NextLink, "next link"),
                    (Command::Open, "follow"),
                    (Command::Back, "back"),
                    (Command::Review, "review"),
                    (Command::Help, "help"),
                    (Command::Quit, "quit"),
                ],
                Context::Detail,
                3,
                width,
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

/// The hints of `commands` in `context` within `width` columns: the last `keep`
/// (the keys that matter everywhere: review, help, quit) always stay, and the
/// ones before them give way from the middle, an ellipsis marking the cut.
fn fitted_hint(
    commands: &[(Command, &str)],
    context: Context,
    keep: usize,
    width: usize,
) -> String {
    let items: Vec<String> = commands
        .iter()
        .map(|c| keymap_hint(std::slice::from_ref(c), context))
        .filter(|hint| !hint.is_empty())
        .collect();
    let (head, tail) = items.split_at(items.len().saturating_sub(keep));
    let mut head = head.to_vec();
    let mut cut = false;
    loop {
        let mut parts: Vec<&str> = head.iter().map(String::as_str).collect();
        if cut {
            parts.push("…");
        }
        parts.extend(tail.iter().map(String::as_str));
        let text = parts.join(" · ");
        if text.chars().count() <= width || head.is_empty() {
            return text;
        }
        head.pop();
        cut = true;
    }
}
