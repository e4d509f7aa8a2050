//! The audit tab: the chain's verification status on top (intact with its head,
//! or broken at a `seq` with the reason), then the transitions newest first:
//! seq, time, who, role, action, from → to, operation and rationale. Every
//! stored text passes the sanitizer on its way to a cell.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::widgets::{Block, Paragraph};

use super::message;
use crate::core::audit::{AuditRow, ChainStatus};
use crate::core::clock::format_instant;
use crate::core::sanitize::Clean;
use crate::tui::app::App;
use crate::tui::layout;
use crate::tui::theme::Theme;
use crate::tui::widgets::{self, Column, DataTable, line, span};

fn state_name(state: Option<crate::core::model::State>) -> &'static str {
    state.map_or("-", |s| s.as_str())
}

const COLUMNS: &[Column<AuditRow, Theme>] = &[
    Column {
        header: "SEQ",
        width: 5,
        priority: 0,
        cell: |r, _| (Clean::new(&r.seq.to_string()), Style::new()),
    },
    Column {
        header: "TIME",
        width: 20,
        priority: 5,
        cell: |r, _| (Clean::new(&format_instant(r.draft.at)), Style::new()),
    },
    Column {
        header: "WHO",
        width: 16,
        priority: 4,
        cell: |r, _| {
            let who = match &r.draft.on_behalf_of {
                Some(other) => format!("{} for {other}", r.draft.by),
                None => r.draft.by.clone(),
            };
            (Clean::new(&who), Style::new())
        },
    },
    Column {
        header: "ROLE",
        width: 8,
        priority: 6,
        cell: |r, theme| (Clean::new(r.draft.role.as_str()), theme.dim()),
    },
    Column {
        header: "ACTION",
        width: 20,
        priority: 1,
        cell: |r, theme| (Clean::new(&r.draft.action), theme.title()),
    },
    Column {
        header: "FROM → TO",
        width: 22,
        priority: 3,
        cell: |r, _| {
            let text = match (r.draft.from, r.draft.to) {
                (None, None) => "-".to_owned(),
                // An action that changes no state records the state it left as is.
                (Some(state), None) => format!("{} (unchanged)", state.as_str()),
                (from, to) => format!("{} → {}", state_name(from), state_name(to)),
            };
            (Clean::new(&text), Style::new())
        },
    },
    Column {
        header: "OPERATION",
        width: 9,
        priority: 2,
        cell: |r, _| (Clean::new(r.draft.operation.as_str()), Style::new()),
    },
    Column {
        header: "RATIONALE",
        width: 90,
        priority: 7,
        cell: |r, theme| match &r.draft.rationale {
            Some(text) => (Clean::new(text), Style::new()),
            None => (Clean::new("-"), theme.dim()),
        },
    },
];

/// Draws the tab in `area`.
pub fn draw(frame: &mut Frame, app: &App, area: Rect) {
    let theme = app.theme;
    let state = &app.audit;
    let Some(page) = &state.page else {
        let block = widgets::pane(theme, Clean::new(" Audit "), true);
        let text = state.error.as_deref().map_or_else(
            || "Reading the audit log…".to_owned(),
            |e| format!("cannot read the audit log: {e}"),
        );
        message(frame, area, block, theme, &text);
        return;
    };
    let shown = page.rows.len();
    let title = if i64::try_from(shown).unwrap_or(i64::MAX) < page.head {
        format!(
            " Audit · newest {shown} of {} transitions · Enter opens the operation ",
            page.head
        )
    } else {
        format!(" Audit · {shown} transitions, newest first · Enter opens the operation ")
    };
    let block = widgets::pane(theme, Clean::new(&title), true);
    let inner = layout::inner(area);
    frame.render_widget(block, area);
    let [status, table] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(inner);
    let (text, style) = match &page.chain {
        ChainStatus::Intact { rows, head } => (
            match head {
                Some((seq, hash)) => format!(
                    "chain intact · {rows} rows verified · head seq {seq} {}…",
                    hash.short(12)
                ),
                None => "chain intact · the log is empty".to_owned(),
            },
            theme.good(),
        ),
        ChainStatus::Broken { seq, reason } => (
            format!("✗ CHAIN BROKEN at seq {seq}: {reason} (holdfast audit verify names it too)"),
            theme.alert(),
        ),
    };
    frame.render_widget(
        Paragraph::new(line(vec![span(Clean::new(&text), style)])),
        status,
    );
    if page.rows.is_empty() {
        frame.render_widget(
            Paragraph::new(line(vec![span(
                Clean::new("No transition recorded yet."),
                theme.dim(),
            )])),
            table,
        );
        return;
    }
    DataTable {
        columns: COLUMNS,
        rows: &page.rows,
        context: &theme,
        selected: Some(state.selected),
    }
    .draw(frame, table, Block::new(), theme);
}
