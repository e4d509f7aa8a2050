//! Drawing: one function from an immutable [`App`] to a frame, laying out the
//! header, the queue or the tab shown, the detail panes and the modal; each
//! screen draws itself. Views never await and never touch the store; they format
//! what the state holds, and every piece of text reaches a cell as [`Clean`]
//! through the widgets.

mod header;

use ratatui::Frame;
use ratatui::layout::Rect;

use ratatui::widgets::Paragraph;

use super::app::{App, Page};
use super::layout::{Areas, Pane};
use super::screens::{Modal, Screen};
use super::widgets::{self, span};
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
    } else {
        draw_queue_and_detail(frame, app, &areas);
    }
    header::draw_status(frame, app, areas.status);
    let ctx = app.ctx();
    match app.modal.as_ref().map(Modal::base) {
        Some(Modal::Review(dialog)) => dialog.draw(frame, frame.area(), &ctx),
        Some(Modal::Bulk(dialog)) => dialog.draw(frame, frame.area(), &ctx),
        Some(Modal::Lookup(screen)) => screen.draw(frame, frame.area(), &ctx),
        _ => {}
    }
    if let Some(Modal::Help(help)) = &app.modal {
        help.draw(frame, frame.area(), &ctx);
    }
}

/// The queue (or the tab it came from) with the detail panes beside or under it.
fn draw_queue_and_detail(frame: &mut Frame, app: &App, areas: &Areas) {
    if let Some(area) = areas.queue {
        draw_page(frame, app, area);
    }
    if let Some(area) = areas.strip {
        draw_strip(frame, app, area);
    }
    app.detail.draw(frame, frame.area(), &app.ctx());
}

/// The queue, or the tab shown instead of it.
fn draw_page(frame: &mut Frame, app: &App, area: Rect) {
    let ctx = app.ctx();
    match app.page_screen() {
        Some(screen) => screen.draw(frame, area, &ctx),
        None => app.queue.draw(frame, area, &ctx),
    }
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
