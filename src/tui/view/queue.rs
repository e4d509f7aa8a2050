//! The queue table: one row per operation of the page on screen, columns dropped
//! from the least important when the pane is narrow.

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;

use crate::core::clock::human_duration;
use crate::core::ids::OperationId;
use crate::core::model::OperationRow;
use crate::core::sanitize::Clean;
use crate::tui::app::App;
use crate::tui::layout::Pane;
use crate::tui::queue::{Tab, sort_name};
use crate::tui::theme::Theme;
use crate::tui::widgets::{self, Column, DataTable, message, span};

/// What every cell needs besides its row.
struct Ctx {
    now: DateTime<Utc>,
    theme: Theme,
    /// The marked operations of the page on screen.
    marked: Vec<OperationId>,
}

/// Columns of the queue; `priority` 0 is never dropped.
const COLUMNS: &[Column<OperationRow, Ctx>] = &[
    Column {
        header: "STATE",
        width: 12,
        priority: 0,
        cell: |r, c| {
            let state = r.operation.state;
            let dep = if r.held_dependencies.is_empty() {
                ""
            } else {
                "*"
            };
            (Clean::new(&format!("{state}{dep}")), c.theme.state(state))
        },
    },
    Column {
        header: " ID",
        width: 9,
        priority: 0,
        // `✓` before the id marks it for bulk triage.
        cell: |r, c| {
            if c.marked.contains(&r.operation.id) {
                (Clean::new(&format!("✓{}", r.operation.id)), c.theme.title())
            } else {
                (Clean::new(&format!(" {}", r.operation.id)), c.theme.plain())
            }
        },
    },
    Column {
        header: "TENANT",
        width: 11,
        priority: 5,
        cell: |r, c| (Clean::new(&r.operation.tenant), c.theme.plain()),
    },
    Column {
        header: "TOOL/ACTION",
        width: 20,
        priority: 4,
        cell: |r, c| {
            let text = format!("{}/{}", r.operation.tool, r.operation.action);
            (Clean::new(&text), c.theme.plain())
        },
    },
    Column {
        header: "MODE",
        width: 16,
        priority: 1,
        cell: |r, c| {
            let mode = r.operation.failure_mode.map_or("-", |m| m.as_str());
            (Clean::new(mode), c.theme.plain())
        },
    },
    Column {
        header: "RISK",
        width: 8,
        priority: 1,
        cell: |r, c| {
            let risk = r.operation.risk;
            (Clean::new(risk.as_str()), c.theme.risk(risk))
        },
    },
    Column {
        header: "OWNER",
        width: 13,
        priority: 6,
        cell: |r, c| (Clean::new(&r.operation.owner), c.theme.plain()),
    },
    Column {
        header: "HELD",
        width: 6,
        priority: 3,
        cell: |r, c| {
            let held = human_duration((c.now - r.state_since).num_seconds());
            (Clean::new(&held), c.theme.plain())
        },
    },
    Column {
        header: "NEXT OBS",
        width: 8,
        priority: 2,
        cell: |r, c| match r.operation.next_observation_at {
            Some(t) if t < c.now && r.operation.state.is_held() => {
                let late = human_duration((c.now - t).num_seconds());
                (Clean::new(&format!("!{late}")), c.theme.alert())
            }
            Some(t) => {
                let wait = human_duration((t - c.now).num_seconds());
                (Clean::new(&wait), c.theme.plain())
            }
            None => (Clean::new("-"), c.theme.dim()),
        },
    },
    Column {
        header: "ATT",
        width: 5,
        priority: 2,
        cell: |r, c| {
            let max = r
                .max_attempts
                .map_or_else(|| "-".to_owned(), |m| m.to_string());
            let spent = r.max_attempts.is_some_and(|m| r.attempts_used >= m);
            let style = if spent {
                c.theme.alert()
            } else {
                c.theme.plain()
            };
            (Clean::new(&format!("{}/{max}", r.attempts_used)), style)
        },
    },
    Column {
        header: "LEFT",
        width: 7,
        priority: 3,
        cell: |r, c| match r.operation.deadline {
            _ if r.operation.state.is_terminal() => (Clean::new("-"), c.theme.dim()),
            Some(d) if d <= c.now => (Clean::new("passed"), c.theme.alert()),
            Some(d) => (
                Clean::new(&human_duration((d - c.now).num_seconds())),
                c.theme.plain(),
            ),
            None => (Clean::new("-"), c.theme.dim()),
        },
    },
    Column {
        header: "FLAGS",
        width: 9,
        priority: 4,
        cell: |r, c| {
            let mut flags = Vec::new();
            if !r.held_dependencies.is_empty() {
                flags.push("dep");
            }
            if r.pending_proposal {
                flags.push("2nd-eye");
            }
            (Clean::new(&flags.join(",")), c.theme.warn())
        },
    },
];

pub fn draw(frame: &mut Frame, app: &App, area: Rect) {
    let theme = app.theme;
    let queue = &app.queue;
    let focused = app.focus == Pane::Queue;
    let mut title = format!(" {} · {} ", queue.tab.title(), match_count(app));
    if !queue.marked.is_empty() {
        title.push_str(&format!("· {} marked ", queue.marked.len()));
    }
    if queue.is_loading() {
        title.push_str("· loading… ");
    }
    let block = widgets::pane(theme, Clean::new(&title), focused).title_bottom(
        Line::from(span(
            Clean::new(&format!(
                " sort: {} · * held by dependency · ! overdue ",
                sort_name(queue.sort)
            )),
            theme.dim(),
        ))
        .right_aligned(),
    );
    if let Some(text) = empty_hint(app) {
        message(frame, area, block, theme, text);
        return;
    }
    let selected = queue
        .selected
        .checked_sub(queue.rows_offset)
        .and_then(|i| usize::try_from(i).ok())
        .filter(|i| *i < queue.rows.len());
    let table = DataTable {
        columns: COLUMNS,
        rows: &queue.rows,
        context: &Ctx {
            now: app.now,
            theme,
            marked: queue
                .rows
                .iter()
                .map(|r| &r.operation.id)
                .filter(|id| queue.marked.contains(*id))
                .cloned()
                .collect(),
        },
        selected,
    };
    table.draw(frame, area, block, theme);
}

/// `9 match · 1–20` for the title.
fn match_count(app: &App) -> String {
    let queue = &app.queue;
    if !queue.is_loaded() {
        return "…".to_owned();
    }
    if queue.total == 0 {
        return "0 match".to_owned();
    }
    let first = queue.rows_offset + 1;
    let last = queue.rows_offset + queue.rows.len() as u64;
    format!(
        "{} match · {first}–{last} · #{}",
        queue.total,
        queue.selected + 1
    )
}

/// What to say instead of an empty table.
fn empty_hint(app: &App) -> Option<&'static str> {
    let queue = &app.queue;
    let counts = queue.counts.as_ref()?;
    if queue.total > 0 {
        return None;
    }
    let stored: u64 = counts.by_state.iter().map(|(_, n)| n).sum();
    Some(if stored == 0 {
        "The store is empty. Load records with `holdfast ingest FILE`, or run `holdfast demo` to open the TC094 demo packet."
    } else if queue.is_narrowed() {
        "Nothing matches the filter and search. Esc clears them."
    } else if queue.tab == Tab::Held {
        "Nothing is held right now. t lists all operations."
    } else {
        "No operation is visible to you."
    })
}
