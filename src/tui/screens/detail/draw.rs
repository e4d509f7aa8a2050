//! The detail panes drawn: the evidence and the timeline as scrolled documents,
//! the items table, each titled with the trail of links followed, and a flag
//! when a newer version is held back.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;

use super::items;
use super::{DetailState, Frame as DetailFrame};
use crate::core::sanitize::Clean;
use crate::tui::doc::{evidence, timeline};
use crate::tui::layout::{self, Pane};
use crate::tui::screens::Ctx;
use crate::tui::widgets::{self, message, span};

impl DetailState {
    /// Draws one pane of the operation on top in `area`; `queue_loaded` tells
    /// "nothing selected" from "still loading" when nothing is open.
    pub fn draw_pane(
        &self,
        frame: &mut Frame,
        area: Rect,
        pane: Pane,
        ctx: &Ctx,
        focused: bool,
        queue_loaded: bool,
    ) {
        let theme = ctx.theme;
        let Some(open) = self.top() else {
            let block = widgets::pane(theme, Clean::new(pane.title()), focused);
            let text = if queue_loaded {
                "Select a hold in the queue to see it here."
            } else {
                "Loading…"
            };
            message(frame, area, block, theme, text);
            return;
        };
        let title = self.pane_title(open, pane);
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
                let doc = evidence::doc(theme, open, loaded, ctx.now);
                widgets::draw_lines(
                    frame,
                    area,
                    block,
                    doc.wrap(inner.width),
                    open.scroll.evidence,
                );
            }
            Pane::Timeline => {
                let doc = timeline::doc(theme, loaded, ctx.now, inner.width);
                widgets::draw_lines(
                    frame,
                    area,
                    block,
                    doc.wrap(inner.width),
                    open.scroll.timeline,
                );
            }
            Pane::Items => items::draw(frame, theme, focused, open, loaded, area, block),
            Pane::Queue => {}
        }
    }

    /// `Evidence · F21 › F22` — the pane and the way the reviewer came.
    fn pane_title(&self, open: &DetailFrame, pane: Pane) -> Clean {
        let trail: Vec<&str> = self.stack.iter().map(|f| f.id.as_str()).collect();
        let mut title = format!(" {} · {}", pane.title(), trail.join(" › "));
        if pane == Pane::Evidence && open.loaded.is_some() && self.stack.len() > 1 {
            title.push_str(" (Esc back)");
        }
        title.push(' ');
        Clean::new(&title)
    }
}
