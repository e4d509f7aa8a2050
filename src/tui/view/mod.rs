//! Drawing: one function from an immutable [`App`] to a frame. Views never await
//! and never touch the store; they format what the state holds, and every piece of
//! text reaches a cell as [`Clean`] through the widgets.

mod header;
mod items;

mod queue;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::app::{App, Page};
use super::doc::{evidence, timeline};
use super::layout::{self, Pane};
use super::screens::detail::Frame as DetailFrame;
use super::screens::{Modal, Screen};
use super::widgets::{self, message, span};
use crate::core::sanitize::Clean;

/// Draws the whole console.
pub fn draw(frame: &mut Frame, app: &App) {
    let areas = app.areas();
    header::draw(frame, app, areas.header, areas.query);
    if app.page != Page::Queue && app.focus == Pane::Queue {
        let body = Rect {
            y: areas.query.bottom(),
            height: areas.status.y.saturating_sub(areas.query.bottom()),
            ..areas.query
        };
        draw_page(frame, app, body);
        header::draw_status(frame, app, areas.status);
        if let Some(Modal::Help(help)) = &app.modal {
            help.draw(frame, frame.area(), &app.ctx());
        }
        return;
    }
    if let Some(area) = areas.queue {
        draw_page(frame, app, area);
    }
    if let Some(area) = areas.strip {
        draw_strip(frame, app, area);
    }
    let top = app.detail.top();
    for pane in [Pane::Evidence, Pane::Timeline, Pane::Items] {
        if let Some(area) = areas.pane(pane) {
            draw_detail_pane(frame, app, top, pane, area);
        }
    }
    header::draw_status(frame, app, areas.status);
    let ctx = app.ctx();
    match app.modal.as_ref().map(Modal::base) {
        Some(Modal::Review(dialog)) => dialog.draw(frame, frame.area(), &ctx),
        Some(Modal::Bulk(dialog)) => dialog.draw(frame, frame.area(), &ctx),
        _ => {}
    }
    if let Some(Modal::Help(help)) = &app.modal {
        help.draw(frame, frame.area(), &ctx);
    }
}

/// The queue, or the tab shown instead of it.
fn draw_page(frame: &mut Frame, app: &App, area: Rect) {
    match app.page {
        Page::Queue => queue::draw(frame, app, area),
        Page::Metrics => app.metrics.draw(frame, area, &app.ctx()),
        Page::Audit => app.audit.draw(frame, area, &app.ctx()),
    }
}

fn draw_detail_pane(
    frame: &mut Frame,
    app: &App,
    top: Option<&DetailFrame>,
    pane: Pane,
    area: Rect,
) {
    let focused = app.focus == pane;
    let theme = app.theme;
    let Some(open) = top else {
        let block = widgets::pane(theme, Clean::new(pane.title()), focused);
        let text = if app.queue.is_loaded() {
            "Select a hold in the queue to see it here."
        } else {
            "Loading…"
        };
        message(frame, area, block, theme, text);
        return;
    };
    let title = pane_title(app, open, pane);
    let mut block = widgets::pane(theme, title, focused);
    if open.changed.is_some() {
        block = block.title_top(
            Line::from(span(
                Clean::new(" ⚠ changed in the store: R shows it "),
                theme.alert(),
            ))
            .right_aligned(),
        );
    }
    let Some(loaded) = &open.loaded else {
        let text = match &open.error {
            Some(error) => error.clone(),
            None => format!("Loading {}…", open.id),
        };
        message(frame, area, block, theme, &text);
        return;
    };
    let inner = layout::inner(area);
    match pane {
        Pane::Evidence => {
            let doc = evidence::doc(theme, open, loaded, app.now);
            widgets::draw_lines(
                frame,
                area,
                block,
                doc.wrap(inner.width),
                open.scroll.evidence,
            );
        }
        Pane::Timeline => {
            let doc = timeline::doc(theme, loaded, app.now, inner.width);
            widgets::draw_lines(
                frame,
                area,
                block,
                doc.wrap(inner.width),
                open.scroll.timeline,
            );
        }
        Pane::Items => items::draw(frame, app, open, loaded, area, block),
        Pane::Queue => {}
    }
}

/// `Evidence · F21 › F22` — the pane and the way the reviewer came.
fn pane_title(app: &App, open: &DetailFrame, pane: Pane) -> Clean {
    let trail: Vec<&str> = app.detail.stack.iter().map(|f| f.id.as_str()).collect();
    let mut title = format!(" {} · {}", pane.title(), trail.join(" › "));
    if pane == Pane::Evidence && open.loaded.is_some() && app.detail.stack.len() > 1 {
        title.push_str(" (Esc back)");
    }
    title.push(' ');
    Clean::new(&title)
}

/// The strip naming the stacked detail panes, the focused one highlighted.
fn draw_strip(frame: &mut Frame, app: &App, area: Rect) {
    let theme = app.theme;
    let mut parts = Vec::new();
    for pane in app.panes().into_iter().filter(|p| *p != Pane::Queue) {
        let style = if pane == app.focus {
            theme.selected().patch(theme.title())
        } else {
            theme.dim()
        };
        parts.push(span(Clean::new(&format!(" {} ", pane.title())), style));
        parts.push(span(Clean::new(" "), theme.plain()));
    }
    let hint = keymap_hint(
        &[
            (super::keymap::Command::NextPane, "next pane"),
            (super::keymap::Command::Back, "back"),
        ],
        super::keymap::Context::Detail,
    );
    parts.push(span(Clean::new(&hint), theme.dim()));
    frame.render_widget(Paragraph::new(widgets::line(parts)), area);
}

/// `Tab next pane · Esc back`, labels taken from the keymap.
pub(super) fn keymap_hint(
    commands: &[(super::keymap::Command, &str)],
    context: super::keymap::Context,
) -> String {
    commands
        .iter()
        .filter_map(|(command, what)| {
            super::keymap::label(context, *command).map(|key| format!("{key} {what}"))
        })
        .collect::<Vec<_>>()
        .join(" · ")
}
