//! Where each pane goes for a given terminal size. One pure function answers it, so
//! that `update` (page sizes, scroll limits, what the mouse is over) and the views
//! (what to draw where) can never disagree.
//!
//! Below [`WIDE`] columns the panes stack: one detail pane at a time under a strip
//! naming them. With [`TALL`] rows or more the queue keeps the top of the body
//! and the detail pane (the evidence while the queue has the focus) sits under
//! it; on a shorter screen the queue fills the body and opening a hold gives it
//! to the detail pane. From [`WIDE`]
//! columns on, the queue spans the top with every column, and below it the
//! evidence sits side by side with the timeline and, when the hold has any, the
//! items under the timeline.

use ratatui::layout::{Constraint, Layout, Position, Rect};

/// Width from which the panes sit side by side.
pub(crate) const WIDE: u16 = 140;

/// Height from which a narrow screen shows the queue and a detail pane stacked.
pub(crate) const TALL: u16 = 40;

/// Rows above the body: the title with tabs and counts, and the query line.
const HEADER_ROWS: u16 = 2;

/// The four panes of the console, in `Tab` order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Queue,
    Evidence,
    Timeline,
    Items,
}

impl Pane {
    pub fn title(self) -> &'static str {
        match self {
            Pane::Queue => "Queue",
            Pane::Evidence => "Evidence",
            Pane::Timeline => "Timeline",
            Pane::Items => "Items",
        }
    }
}

/// The rectangles of one screen; a pane that is not shown has none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Areas {
    pub header: Rect,
    pub query: Rect,
    /// The strip naming the detail panes when they stack.
    pub strip: Option<Rect>,
    pub queue: Option<Rect>,
    pub evidence: Option<Rect>,
    pub timeline: Option<Rect>,
    pub items: Option<Rect>,
    pub status: Rect,
}

impl Areas {
    pub fn pane(&self, pane: Pane) -> Option<Rect> {
        match pane {
            Pane::Queue => self.queue,
            Pane::Evidence => self.evidence,
            Pane::Timeline => self.timeline,
            Pane::Items => self.items,
        }
    }

    /// The pane under a screen position (for the mouse wheel).
    pub fn pane_at(&self, column: u16, row: u16) -> Option<Pane> {
        let at = Position::new(column, row);
        [Pane::Queue, Pane::Evidence, Pane::Timeline, Pane::Items]
            .into_iter()
            .find(|p| self.pane(*p).is_some_and(|r| r.contains(at)))
    }
}

/// Whether `size` is wide enough for side-by-side panes.
pub(crate) fn is_wide(size: Rect) -> bool {
    size.width >= WIDE
}

/// Whether a detail pane is on screen while the queue has the focus.
pub(crate) fn shows_detail(size: Rect) -> bool {
    is_wide(size) || size.height >= TALL
}

/// The areas for a screen of `size`, with `focus` on one pane and `items` telling
/// whether the open hold has an item ledger to show.
pub(crate) fn areas(size: Rect, focus: Pane, items: bool) -> Areas {
    let [header, query, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(HEADER_ROWS - 1),
        Constraint::Min(0),
        Constraint::Length(1),
    ])
    .areas(size);
    let mut out = Areas {
        header,
        query,
        status,
        ..Areas::default()
    };
    if is_wide(size) {
        let [top, bottom] =
            Layout::vertical([Constraint::Percentage(40), Constraint::Percentage(60)]).areas(body);
        let [evidence, right] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                .areas(bottom);
        out.queue = Some(top);
        out.evidence = Some(evidence);
        if items {
            let [timeline, ledger] =
                Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)])
                    .areas(right);
            out.timeline = Some(timeline);
            out.items = Some(ledger);
        } else {
            out.timeline = Some(right);
        }
        return out;
    }
    let tall = size.height >= TALL;
    if focus == Pane::Queue && !tall {
        out.queue = Some(body);
        return out;
    }
    let rest = if tall {
        let [top, rest] =
            Layout::vertical([Constraint::Percentage(40), Constraint::Percentage(60)]).areas(body);
        out.queue = Some(top);
        rest
    } else {
        body
    };
    let [strip, pane] = Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(rest);
    out.strip = Some(strip);
    match focus {
        Pane::Queue | Pane::Evidence => out.evidence = Some(pane),
        Pane::Timeline => out.timeline = Some(pane),
        Pane::Items => out.items = Some(pane),
    }
    out
}

/// Rows of the queue table (its page size) on a screen of `size`; the tabs page
/// by the same.
pub(crate) fn page_rows(size: Rect) -> u16 {
    areas(size, Pane::Queue, false)
        .queue
        .map_or(1, |r| inner(r).height.saturating_sub(1).max(1))
}

/// The area inside a pane's border.
pub(crate) fn inner(area: Rect) -> Rect {
    Rect {
        x: area.x.saturating_add(1),
        y: area.y.saturating_add(1),
        width: area.width.saturating_sub(2),
        height: area.height.saturating_sub(2),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn narrow_screens_stack_and_wide_ones_sit_side_by_side() {
        let small = Rect::new(0, 0, 80, 24);
        let queue = areas(small, Pane::Queue, true);
        assert_eq!(queue.queue.map(|r| r.width), Some(80));
        assert!(queue.evidence.is_none());
        let detail = areas(small, Pane::Timeline, true);
        assert!(detail.queue.is_none() && detail.timeline.is_some() && detail.strip.is_some());

        let wide = areas(Rect::new(0, 0, 200, 50), Pane::Queue, true);
        assert!(wide.queue.is_some() && wide.evidence.is_some() && wide.items.is_some());
        let without = areas(Rect::new(0, 0, 200, 50), Pane::Queue, false);
        assert!(without.items.is_none());
        assert_eq!(without.pane_at(150, 45), Some(Pane::Timeline));
        assert_eq!(without.pane_at(10, 45), Some(Pane::Evidence));
        assert_eq!(without.pane_at(10, 5), Some(Pane::Queue));
    }

    #[test]
    fn tiny_sizes_give_empty_areas_not_panics() {
        for (w, h) in [(0, 0), (1, 1), (3, 2), (200, 1), (1, 60)] {
            for focus in [Pane::Queue, Pane::Evidence, Pane::Items] {
                let a = areas(Rect::new(0, 0, w, h), focus, true);
                let _ = a.pane(focus).map(inner);
            }
        }
    }
}
