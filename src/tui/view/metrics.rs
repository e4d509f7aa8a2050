//! The metrics tab: the seven figures as bars with their fractions, the release
//! disposition with its vetoes, the unknown-age histogram and retry
//! amplification by layer; beside them (or in their place on a narrow screen)
//! the operations behind the selected figure. Everything comes from the report
//! the runner computed; nothing is computed here.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;

use super::message;
use crate::core::clock::human_duration;
use crate::core::metrics::{Disposition, Metric, Report};
use crate::core::sanitize::Clean;
use crate::tui::app::App;
use crate::tui::layout;
use crate::tui::metrics_tab::{Behind, MetricsFocus};
use crate::tui::theme::Theme;
use crate::tui::widgets::{self, Column, DataTable, Doc, line, span};

/// Width of a figure's name column.
const NAME_WIDTH: usize = 36;

/// Draws the tab in `area`.
pub fn draw(frame: &mut Frame, app: &App, area: Rect) {
    let theme = app.theme;
    let state = &app.metrics;
    let Some(report) = &state.report else {
        let block = widgets::pane(theme, Clean::new(" Metrics "), true);
        let text = state.error.as_deref().map_or_else(
            || "Computing the metrics…".to_owned(),
            |e| format!("cannot compute the metrics: {e}"),
        );
        message(frame, area, block, theme, &text);
        return;
    };
    let operations = state.focus == MetricsFocus::Operations;
    if layout::is_wide(app.size) {
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)])
                .areas(area);
        summary(frame, app, report, left, !operations);
        behind(frame, app, right, operations);
    } else if operations {
        behind(frame, app, area, true);
    } else {
        summary(frame, app, report, area, true);
    }
}

/// The figures, the release gate and the operational figures.
fn summary(frame: &mut Frame, app: &App, report: &Report, area: Rect, focused: bool) {
    let theme = app.theme;
    let inner = layout::inner(area);
    let doc = doc(theme, report, app.metrics.figure, inner.width);
    let title = format!(
        " Metrics · {} logical operations · Enter lists the operations behind a figure ",
        report.operational.logical_operations
    );
    let block = widgets::pane(theme, Clean::new(&title), focused);
    widgets::draw_lines(
        frame,
        area,
        block,
        doc.wrap(inner.width),
        app.metrics.scroll,
    );
}

/// The summary's lines at `width` columns, figure `selected` highlighted.
pub fn doc(theme: Theme, report: &Report, selected: usize, width: u16) -> Doc {
    let mut doc = Doc::default();
    let bar_width = usize::from(width)
        .saturating_sub(NAME_WIDTH + 24)
        .clamp(4, 40);
    for (i, metric) in report.metrics.iter().enumerate() {
        doc.push_indented(figure(theme, metric, i == selected, bar_width), 4);
    }
    release(&mut doc, theme, report);
    unknown_age(&mut doc, theme, report, bar_width);
    amplification(&mut doc, theme, report);
    doc
}

/// `▸ Contract pass rate   ██████░░  26/32  81.25 %`.
fn figure(
    theme: Theme,
    m: &Metric,
    selected: bool,
    bar_width: usize,
) -> ratatui::text::Line<'static> {
    let mark = if selected { "▸ " } else { "  " };
    let name = format!("{mark}{:<NAME_WIDTH$}", m.id.title());
    let fill = if m.denominator == 0 {
        0
    } else {
        (usize::try_from(m.numerator).unwrap_or(0) * bar_width
            + usize::try_from(m.denominator / 2).unwrap_or(0))
            / usize::try_from(m.denominator).unwrap_or(1)
    };
    let fill = fill.min(bar_width);
    let percent = m
        .percent
        .map_or_else(|| "     -".to_owned(), |p| format!("{p:>6.2} %"));
    let bar_style = if m.denominator > 0 && m.numerator == m.denominator {
        theme.good()
    } else {
        theme.warn()
    };
    let base = if selected {
        theme.selected()
    } else {
        theme.plain()
    };
    line(vec![
        span(Clean::new(&name), base),
        span(Clean::new(&"█".repeat(fill)), bar_style),
        span(Clean::new(&"░".repeat(bar_width - fill)), theme.dim()),
        span(
            Clean::new(&format!(
                " {:>7}  {percent}",
                format!("{}/{}", m.numerator, m.denominator)
            )),
            base,
        ),
    ])
}

fn heading(doc: &mut Doc, theme: Theme, title: &str) {
    doc.blank();
    doc.push(line(vec![span(Clean::new(title), theme.title())]));
}

/// The disposition and each veto with its kinds, evidence and reasons.
fn release(doc: &mut Doc, theme: Theme, report: &Report) {
    let r = &report.release;
    let style = match r.disposition {
        Disposition::Deployable => theme.good(),
        Disposition::NotDeployed => theme.alert(),
    };
    doc.blank();
    doc.push(line(vec![
        span(Clean::new("Release gate  "), theme.title()),
        span(Clean::new(&r.disposition.to_string()), style),
        span(
            Clean::new(&format!(
                "  {} veto{} (decided apart from the figures)",
                r.vetoes.len(),
                if r.vetoes.len() == 1 { "" } else { "es" }
            )),
            theme.dim(),
        ),
    ]));
    for veto in &r.vetoes {
        let kinds: Vec<&str> = veto.kinds.iter().map(|k| k.as_str()).collect();
        doc.push_indented(
            line(vec![
                span(
                    Clean::new(&format!("  ✗ {:<6} ", veto.operation.as_str())),
                    theme.alert(),
                ),
                span(Clean::new(&kinds.join(", ")), theme.warn()),
            ]),
            10,
        );
        for reason in &veto.reasons {
            doc.push_indented(
                line(vec![span(
                    Clean::new(&format!("      {reason}")),
                    theme.plain(),
                )]),
                6,
            );
        }
        if !veto.evidence.is_empty() {
            doc.push_indented(
                line(vec![
                    span(Clean::new("      evidence "), theme.label()),
                    span(Clean::new(&veto.evidence.join(", ")), theme.dim()),
                ]),
                15,
            );
        }
    }
}

/// How long the UNKNOWN operations have been unknown, as a histogram.
fn unknown_age(doc: &mut Doc, theme: Theme, report: &Report, bar_width: usize) {
    let age = &report.operational.unknown_age;
    heading(doc, theme, "Unknown age");
    let fmt = |s: Option<i64>| s.map_or_else(|| "-".to_owned(), human_duration);
    let oldest = age.oldest.as_ref().map_or_else(
        || "-".to_owned(),
        |id| format!("{id} ({})", fmt(age.oldest_seconds)),
    );
    doc.push(line(vec![span(
        Clean::new(&format!(
            "  {} unknown · oldest {oldest} · median {}",
            age.count,
            fmt(age.median_seconds)
        )),
        theme.plain(),
    )]));
    if !age.overdue.is_empty() {
        let ids: Vec<&str> = age.overdue.iter().map(|i| i.as_str()).collect();
        doc.push_indented(
            line(vec![span(
                Clean::new(&format!("  overdue next observation: {}", ids.join(", "))),
                theme.alert(),
            )]),
            4,
        );
    }
    let most = age
        .histogram
        .iter()
        .map(|b| b.count)
        .max()
        .unwrap_or(0)
        .max(1);
    for bucket in &age.histogram {
        let fill = usize::try_from(bucket.count).unwrap_or(0) * bar_width
            / usize::try_from(most).unwrap_or(1);
        doc.push(line(vec![
            span(
                Clean::new(&format!("  {:<10} ", bucket.label)),
                theme.label(),
            ),
            span(Clean::new(&"█".repeat(fill)), theme.warn()),
            span(Clean::new(&format!(" {}", bucket.count)), theme.plain()),
        ]));
    }
}

/// Physical attempts per logical operation, overall and by layer.
fn amplification(doc: &mut Doc, theme: Theme, report: &Report) {
    let a = &report.operational.amplification;
    heading(doc, theme, "Retry amplification");
    let per = a
        .per_logical
        .map_or_else(|| "-".to_owned(), |p| format!("{p:.2}"));
    doc.push_indented(
        line(vec![span(
            Clean::new(&format!(
                "  {} physical attempts ÷ {} logical operations = {per} · {} requests, {} status queries · worst case if every layer retries: {} calls",
                a.physical_attempts, a.logical_operations, a.requests, a.status_queries, a.compound_worst_case
            )),
            theme.plain(),
        )]),
        4,
    );
    doc.push(line(vec![span(
        Clean::new(&format!(
            "  {:<16} {:>8} {:>8} {:>7} {:>4} {:>6}",
            "LAYER", "ATTEMPTS", "REQUESTS", "REPEATS", "OPS", "MAX/OP"
        )),
        theme.label(),
    )]));
    for l in &a.by_layer {
        let style: Style = if l.repeats > 0 {
            theme.warn()
        } else {
            theme.plain()
        };
        doc.push(line(vec![span(
            Clean::new(&format!(
                "  {:<16} {:>8} {:>8} {:>7} {:>4} {:>6}",
                l.layer, l.attempts, l.requests, l.repeats, l.operations, l.max_per_operation
            )),
            style,
        )]));
    }
}

const COLUMNS: &[Column<Behind, Theme>] = &[
    Column {
        header: "OPERATION",
        width: 10,
        priority: 0,
        cell: |b, _| (Clean::new(b.id.as_str()), Style::new()),
    },
    Column {
        header: "COUNTED",
        width: 8,
        priority: 1,
        cell: |b, theme| {
            if b.counted {
                (Clean::new("✓ yes"), theme.good())
            } else {
                (Clean::new("✗ no"), theme.alert())
            }
        },
    },
    Column {
        header: "WHY NOT",
        width: 58,
        priority: 2,
        cell: |b, _| {
            (
                Clean::new(b.shortfall.as_deref().unwrap_or("")),
                Style::new(),
            )
        },
    },
];

/// The operations behind the selected figure, those short of it first.
fn behind(frame: &mut Frame, app: &App, area: Rect, focused: bool) {
    let theme = app.theme;
    let state = &app.metrics;
    let rows = state.behind();
    let title = match state.metric() {
        Some(m) => format!(
            " {} · {} · {} ",
            m.id.title(),
            m.fraction(),
            if focused {
                "Enter opens · Esc back"
            } else {
                "Enter lists"
            }
        ),
        None => " Operations behind ".to_owned(),
    };
    let block = widgets::pane(theme, Clean::new(&title), focused);
    if rows.is_empty() {
        let text = state.metric().map_or("", |m| m.id.counts());
        message(
            frame,
            area,
            block,
            theme,
            &format!("No operation is measured by this figure ({text})."),
        );
        return;
    }
    let [what, table] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(layout::inner(area));
    frame.render_widget(block, area);
    if let Some(m) = state.metric() {
        frame.render_widget(
            ratatui::widgets::Paragraph::new(line(vec![span(
                Clean::new(&format!("counts {}", m.id.counts())),
                theme.dim(),
            )])),
            what,
        );
    }
    DataTable {
        columns: COLUMNS,
        rows: &rows,
        context: &theme,
        selected: focused.then_some(state.operation),
    }
    .draw(frame, table, ratatui::widgets::Block::new(), theme);
}
