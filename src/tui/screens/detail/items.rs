//! The items pane: the item ledger of a PARTIAL operation (or any with items) with
//! a summary line by state, the authoritative id of each item, and which linked
//! child (compensation, resume) covers it.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::{Block, Paragraph};

use super::{Frame as DetailFrame, Loaded};
use crate::core::model::{ChildLink, Item, ItemState};
use crate::core::sanitize::Clean;
use crate::tui::layout;
use crate::tui::theme::Theme;
use crate::tui::widgets::{Column, DataTable, Doc, line, span};

/// What every cell needs besides its item.
struct Cells {
    theme: Theme,
    children: Vec<ChildLink>,
}

const COLUMNS: &[Column<Item, Cells>] = &[
    Column {
        header: "#",
        width: 3,
        priority: 0,
        cut: false,
        cell: |i, c| (Clean::new(&i.index.to_string()), c.theme.plain()),
    },
    Column {
        header: "STATE",
        width: 13,
        priority: 0,
        cut: true,
        cell: |i, c| (Clean::new(i.state.as_str()), c.theme.item(i.state)),
    },
    Column {
        header: "AUTHORITATIVE ID",
        width: 16,
        priority: 1,
        cut: false,
        cell: |i, c| match &i.authoritative_id {
            Some(id) => (Clean::new(id), c.theme.plain()),
            None if i.state == ItemState::Succeeded => (Clean::new("missing"), c.theme.alert()),
            None => (Clean::new("-"), c.theme.dim()),
        },
    },
    Column {
        header: "COVERED BY",
        width: 20,
        priority: 1,
        cut: false,
        cell: |i, c| {
            let covers: Vec<String> = c
                .children
                .iter()
                .filter_map(|child| {
                    let mine = child.items.iter().find(|ci| ci.index == i.index)?;
                    Some(format!("{} {}", child.id, mine.state))
                })
                .collect();
            if covers.is_empty() {
                (Clean::new("-"), c.theme.dim())
            } else {
                (Clean::new(&covers.join(", ")), c.theme.plain())
            }
        },
    },
    Column {
        header: "LABEL",
        width: 20,
        priority: 2,
        cut: true,
        cell: |i, c| {
            (
                Clean::new(i.label.as_deref().unwrap_or("-")),
                c.theme.plain(),
            )
        },
    },
];

pub(super) fn draw(
    frame: &mut Frame,
    theme: Theme,
    focused: bool,
    open: &DetailFrame,
    loaded: &Loaded,
    area: Rect,
    block: Block<'static>,
) {
    let detail = &loaded.detail;
    let inner = layout::inner(area);
    let mut head = Doc::default();
    head.push(summary(theme, &detail.items));
    for child in &detail.children {
        let covered: Vec<String> = child.items.iter().map(|i| i.index.to_string()).collect();
        let items = if covered.is_empty() {
            String::new()
        } else {
            format!(", items {}", covered.join(" "))
        };
        head.push(line(vec![
            span(Clean::new(&format!("{} ", child.relation)), theme.label()),
            span(Clean::new(child.id.as_str()), theme.title()),
            span(Clean::new(" "), theme.plain()),
            span(Clean::new(child.state.as_str()), theme.state(child.state)),
            span(Clean::new(&items), theme.plain()),
        ]));
    }
    if !detail.children.is_empty() {
        head.push(line(vec![span(
            Clean::new("children are links: n/p selects one, Enter opens it, Esc comes back"),
            theme.dim(),
        )]));
    }
    let lines = head.wrap(inner.width);
    let head_rows = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .min(inner.height);
    frame.render_widget(block, area);
    let [top, table] =
        Layout::vertical([Constraint::Length(head_rows), Constraint::Min(0)]).areas(inner);
    frame.render_widget(Paragraph::new(lines), top);
    if detail.items.is_empty() {
        return;
    }
    let ctx = Cells {
        theme,
        children: detail.children.clone(),
    };
    DataTable {
        columns: COLUMNS,
        rows: &detail.items,
        context: &ctx,
        selected: focused.then_some(open.scroll.items),
    }
    .draw(frame, table, Block::new(), theme);
}

/// `5 items: 2 succeeded · 1 failed · …` over every item state.
fn summary(theme: Theme, items: &[Item]) -> ratatui::text::Line<'static> {
    let mut parts = vec![span(
        Clean::new(&format!(
            "{} item{}: ",
            items.len(),
            if items.len() == 1 { "" } else { "s" }
        )),
        theme.title(),
    )];
    for (i, state) in ItemState::ALL.iter().enumerate() {
        let count = items.iter().filter(|it| it.state == *state).count();
        if i > 0 {
            parts.push(span(Clean::new(" · "), theme.dim()));
        }
        let style = if count > 0 {
            theme.item(*state)
        } else {
            theme.dim()
        };
        parts.push(span(Clean::new(&format!("{count} {state}")), style));
    }
    let succeeded = items.iter().filter(|i| i.state == ItemState::Succeeded);
    let with_id = succeeded
        .clone()
        .filter(|i| i.authoritative_id.is_some())
        .count();
    let total = succeeded.count();
    if total > 0 {
        let style = if with_id == total {
            theme.good()
        } else {
            theme.alert()
        };
        parts.push(span(
            Clean::new(&format!(
                " · authoritative ids for {with_id} of {total} succeeded"
            )),
            style,
        ));
    }
    line(parts)
}
