//! The metrics tab: its state (the report the runner computed from the store,
//! which figure is selected, the operations behind it with the one under the
//! cursor), its keys, and its drawing — the seven figures as bars with their
//! fractions, the release disposition with its vetoes, the unknown-age histogram
//! and retry amplification by layer, the most repeated errors, and beside them
//! (or in their place on a narrow screen) the operations behind the selected
//! figure or, on `e`, every group of repeated errors (owner × root cause ×
//! tool). The report is asked
//! for again whenever the store changes, and its answer comes back to the tab
//! ([`Screen::answer`]); nothing is computed here.

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::Line;

use super::{Asker, Ctx, Outcome, Page, Screen};
use crate::core::clock::human_instant;
use crate::core::ids::OperationId;
use crate::core::metrics::{Disposition, Metric, RepeatedError, Report};
use crate::core::sanitize::Clean;
use crate::store::Judging;
use crate::tui::keymap::{self, Command, Context};
use crate::tui::latest::Latest;
use crate::tui::layout;
use crate::tui::message::{Answer, Effect, Tag};
use crate::tui::theme::Theme;
use crate::tui::widgets::{self, Column, DataTable, Doc, line, message, span};

/// Which half of the tab the keys move.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MetricsFocus {
    /// The seven figures (and the summary under them).
    #[default]
    Figures,
    /// The operations behind the selected figure.
    Operations,
    /// The repeated errors: failed and held operations by owner × root cause
    /// × tool.
    Repeated,
}

/// One operation behind a figure: whether it counts in the numerator and, when it
/// does not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Behind {
    pub id: OperationId,
    pub counted: bool,
    pub shortfall: Option<String>,
}

/// The state of the metrics tab.
#[derive(Debug, Clone, Default)]
pub struct MetricsState {
    pub report: Option<Report>,
    /// Why the last computation failed, in words.
    pub error: Option<String>,
    /// Index of the selected figure in the report's order.
    pub figure: usize,
    pub focus: MetricsFocus,
    /// Index of the selected operation behind the figure.
    pub operation: usize,
    /// Index of the selected group of repeated errors.
    pub group: usize,
    /// Scroll of the summary (release, unknown age, amplification).
    pub scroll: u16,
    /// How far the report asked for has got judging the operations the
    /// store has not judged yet, while it does.
    pub judging: Option<Judging>,
    pending: Latest<()>,
}

impl MetricsState {
    /// Takes the answer to the request tagged `generation`; `false` when it was
    /// replaced by a newer one.
    pub fn apply(&mut self, generation: u64, result: Result<Report, String>) -> bool {
        if self.pending.answer(generation).is_none() {
            return false;
        }
        self.judging = None;
        match result {
            Ok(report) => {
                self.report = Some(report);
                self.error = None;
                self.clamp();
            }
            Err(e) => self.error = Some(e),
        }
        true
    }

    /// The selected figure.
    pub fn metric(&self) -> Option<&Metric> {
        self.report.as_ref()?.metrics.get(self.figure)
    }

    /// The operations of the selected figure's denominator, those short of the
    /// numerator first (the ones a reviewer looks at), each with its reason.
    pub fn behind(&self) -> Vec<Behind> {
        let Some(metric) = self.metric() else {
            return Vec::new();
        };
        // Short first, then counted, each in id order: the denominator, with
        // whatever a long list leaves out of both halves.
        metric
            .shortfalls
            .iter()
            .map(|(id, why)| Behind {
                id: id.clone(),
                counted: false,
                shortfall: Some(why.clone()),
            })
            .chain(metric.numerator_ids.iter().map(|id| Behind {
                id: id.clone(),
                counted: true,
                shortfall: None,
            }))
            .collect()
    }

    /// The operation under the cursor, when the operations have the focus;
    /// the newest of the selected group, when the repeated errors have it.
    pub fn selected_operation(&self) -> Option<OperationId> {
        match self.focus {
            MetricsFocus::Repeated => self.groups().get(self.group).map(|g| g.newest.clone()),
            _ => self.behind().get(self.operation).map(|b| b.id.clone()),
        }
    }

    /// The groups of repeated errors, most frequent first.
    pub fn groups(&self) -> &[RepeatedError] {
        self.report
            .as_ref()
            .map_or(&[], |r| r.operational.repeated.groups.as_slice())
    }

    /// Moves the selection of the focused half by `delta`.
    pub fn step(&mut self, delta: i64) {
        let (at, count) = match self.focus {
            MetricsFocus::Figures => (
                &mut self.figure,
                self.report.as_ref().map_or(0, |r| r.metrics.len()),
            ),
            MetricsFocus::Operations => {
                let count = self.behind().len();
                (&mut self.operation, count)
            }
            MetricsFocus::Repeated => {
                let count = self.groups().len();
                (&mut self.group, count)
            }
        };
        let last = i64::try_from(count.saturating_sub(1)).unwrap_or(0);
        let to = i64::try_from(*at)
            .unwrap_or(0)
            .saturating_add(delta)
            .clamp(0, last);
        let to = usize::try_from(to).unwrap_or(0);
        if self.focus == MetricsFocus::Figures && to != self.figure {
            self.operation = 0;
        }
        match self.focus {
            MetricsFocus::Figures => self.figure = to,
            MetricsFocus::Operations => self.operation = to,
            MetricsFocus::Repeated => self.group = to,
        }
    }

    /// Keeps the selections within what the report holds now.
    fn clamp(&mut self) {
        let figures = self.report.as_ref().map_or(0, |r| r.metrics.len());
        self.figure = self.figure.min(figures.saturating_sub(1));
        self.operation = self.operation.min(self.behind().len().saturating_sub(1));
        self.group = self.group.min(self.groups().len().saturating_sub(1));
        if self.focus == MetricsFocus::Operations && self.behind().is_empty() {
            self.focus = MetricsFocus::Figures;
        }
    }

    fn toggle_focus(&mut self) {
        self.focus = match self.focus {
            MetricsFocus::Figures if !self.behind().is_empty() => MetricsFocus::Operations,
            _ => MetricsFocus::Figures,
        };
    }
}

impl Screen for MetricsState {
    fn context(&self) -> Context {
        Context::Metrics
    }

    fn key(&mut self, key: KeyEvent, ctx: &Ctx) -> Outcome {
        let Some(command) = keymap::lookup(Context::Metrics, key) else {
            return Outcome::Pass;
        };
        let rows = i64::from(layout::page_rows(ctx.size));
        if let Some(delta) = command.movement(rows) {
            if matches!(command, Command::PageUp | Command::PageDown)
                && self.focus == MetricsFocus::Figures
            {
                let to = i64::from(self.scroll).saturating_add(delta / 2);
                self.scroll = u16::try_from(to.max(0)).unwrap_or(u16::MAX);
            } else {
                self.step(delta);
            }
            return Outcome::done();
        }
        match command {
            Command::SwitchTab => Outcome::Show(super::HELD.key),
            // Enter on a figure lists the operations behind it; on one of
            // those, opens it.
            Command::Open if self.focus == MetricsFocus::Figures => {
                self.toggle_focus();
                Outcome::done()
            }
            Command::Open => self
                .selected_operation()
                .map_or_else(Outcome::done, Outcome::Open),
            Command::Back => {
                self.focus = MetricsFocus::Figures;
                Outcome::done()
            }
            // `e` shows the repeated errors beside the figures; again, back.
            Command::RepeatedErrors => {
                self.focus = if self.focus == MetricsFocus::Repeated {
                    MetricsFocus::Figures
                } else {
                    MetricsFocus::Repeated
                };
                Outcome::done()
            }
            Command::NextPane | Command::PrevPane => {
                self.toggle_focus();
                Outcome::done()
            }
            _ => Outcome::Pass,
        }
    }

    fn refresh(&mut self, ctx: &Ctx) -> Vec<Effect> {
        // A report still judging is not asked for again: a second one would
        // judge the same operations beside it and both would take longer. The
        // next refresh after its answer reads what was written since.
        if self.judging.is_some() && self.pending.is_waiting() {
            return Vec::new();
        }
        vec![Effect::Metrics {
            generation: Tag {
                by: Asker::Tab(Page::Metrics),
                serial: self.pending.request(()),
            },
            now: ctx.now,
        }]
    }

    fn answer(&mut self, generation: u64, answer: Answer, _ctx: &Ctx) -> Outcome {
        match answer {
            Answer::Metrics(result) => {
                Outcome::answered(self.apply(generation, result.map(|r| *r)))
            }
            Answer::Judging(judging) => {
                let asked = self.pending.awaits(generation);
                if asked {
                    self.judging = Some(judging);
                }
                Outcome::answered(asked)
            }
            _ => Outcome::Pass,
        }
    }

    fn summary(&self, ctx: &Ctx) -> Option<Line<'static>> {
        Some(release_line(self, ctx.theme))
    }

    fn name(&self) -> &'static str {
        "the metrics tab"
    }

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        draw(frame, self, area, ctx);
    }
}

/// Width of a figure's name column.
const NAME_WIDTH: usize = 36;

/// Draws the tab in `area`.
fn draw(frame: &mut Frame, state: &MetricsState, area: Rect, ctx: &Ctx) {
    let theme = ctx.theme;
    let Some(report) = &state.report else {
        let block = widgets::pane(theme, Clean::new(" Metrics "), true);
        let text = match (&state.error, &state.judging) {
            (Some(e), _) => format!("cannot compute the metrics: {e}"),
            (None, Some(judging)) => judging.to_string(),
            (None, None) => "Computing the metrics…".to_owned(),
        };
        message(frame, area, block, theme, &text);
        return;
    };
    let right = |frame: &mut Frame, area: Rect, focused: bool| match state.focus {
        MetricsFocus::Repeated => repeated(frame, state, theme, area),
        _ => behind(frame, state, theme, area, focused),
    };
    let figures = state.focus == MetricsFocus::Figures;
    if layout::is_wide(ctx.size) {
        let [left, right_area] =
            Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)])
                .areas(area);
        summary(frame, state, theme, report, left, figures);
        right(frame, right_area, !figures);
    } else if figures {
        summary(frame, state, theme, report, area, true);
    } else {
        right(frame, area, true);
    }
}

/// The figures, the release gate and the operational figures.
fn summary(
    frame: &mut Frame,
    state: &MetricsState,
    theme: Theme,
    report: &Report,
    area: Rect,
    focused: bool,
) {
    let inner = layout::inner(area);
    let doc = doc(theme, report, state.figure, inner.width);
    // While a newer report judges, the one shown says so in its title.
    let title = state.judging.map_or_else(
        || {
            format!(
                " Metrics · {} logical operations · Enter lists the operations behind a figure ",
                report.operational.logical_operations
            )
        },
        |judging| format!(" Metrics · judging {} ", judging.figures()),
    );
    let block = widgets::pane(theme, Clean::new(&title), focused);
    widgets::draw_lines(frame, area, block, doc.wrap(inner.width), state.scroll);
}

/// The summary's lines at `width` columns, figure `selected` highlighted.
pub(crate) fn doc(theme: Theme, report: &Report, selected: usize, width: u16) -> Doc {
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
    most_repeated(&mut doc, theme, report);
    doc
}

/// How many of the most repeated errors the summary names.
const MOST_REPEATED: usize = 3;

/// The few most repeated errors, and the key that lists them all.
fn most_repeated(doc: &mut Doc, theme: Theme, report: &Report) {
    let r = &report.operational.repeated;
    let total = r
        .groups_total
        .map_or(r.groups.len(), |t| usize::try_from(t).unwrap_or(usize::MAX));
    heading(
        doc,
        theme,
        &format!("Repeated errors · {total} groups of owner × root cause × tool · e lists them"),
    );
    if r.groups.is_empty() {
        doc.push(line(vec![span(
            Clean::new("  none: no operation failed or is held"),
            theme.plain(),
        )]));
    }
    for g in r.groups.iter().take(MOST_REPEATED) {
        doc.push_indented(
            line(vec![span(
                Clean::new(&format!(
                    "  {} in 7 days, {} in all · {} · {} · {} · newest {}",
                    g.last_week, g.total, g.layer, g.owner, g.tool, g.newest
                )),
                theme.plain(),
            )]),
            4,
        );
    }
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
        Disposition::NotEvaluated => theme.warn(),
    };
    doc.blank();
    doc.push(line(vec![
        span(Clean::new("Release gate  "), theme.title()),
        span(Clean::new(&r.disposition.to_string()), style),
        span(
            Clean::new(&format!(
                "  {} veto{} (decided apart from the figures)",
                r.veto_count(),
                if r.veto_count() == 1 { "" } else { "es" }
            )),
            theme.dim(),
        ),
    ]));
    if r.disposition == Disposition::NotEvaluated {
        doc.push_indented(
            line(vec![span(
                Clean::new(&format!("  {}", crate::core::metrics::NOT_EVALUATED_WHY)),
                theme.warn(),
            )]),
            4,
        );
    }
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
    doc.push(line(vec![span(
        Clean::new(&format!("  {}", age.summary(" · "))),
        theme.plain(),
    )]));
    if !age.overdue.is_empty() {
        let ids: Vec<&str> = age.overdue.iter().map(|i| i.as_str()).collect();
        doc.push_indented(
            line(vec![span(
                Clean::new(&format!(
                    "  overdue next observation: {}{}",
                    ids.join(", "),
                    age.overdue_total.map_or_else(String::new, |total| format!(
                        " … and {} more",
                        total.saturating_sub(u32::try_from(ids.len()).unwrap_or(u32::MAX))
                    ))
                )),
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
        cut: false,
        cell: |b, _| (Clean::new(b.id.as_str()), Style::new()),
    },
    Column {
        header: "COUNTED",
        width: 8,
        priority: 1,
        cut: true,
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
        cut: true,
        cell: |b, _| {
            (
                Clean::new(b.shortfall.as_deref().unwrap_or("")),
                Style::new(),
            )
        },
    },
];

/// The operations behind the selected figure, those short of it first.
fn behind(frame: &mut Frame, state: &MetricsState, theme: Theme, area: Rect, focused: bool) {
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
            ratatui::widgets::Paragraph::new(widgets::fit_line(
                vec![span(
                    Clean::new(&format!("counts {}", m.id.counts())),
                    theme.dim(),
                )],
                what.width,
            )),
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

const GROUP_COLUMNS: &[Column<RepeatedError, Theme>] = &[
    Column {
        header: "OWNER",
        width: 16,
        priority: 0,
        cut: true,
        cell: |g, _| (Clean::new(&g.owner), Style::new()),
    },
    Column {
        header: "ROOT CAUSE",
        width: 19,
        priority: 0,
        cut: true,
        cell: |g, theme| {
            let style = if g.layer == "unclassified" {
                theme.warn()
            } else {
                Style::new()
            };
            (Clean::new(&g.layer), style)
        },
    },
    Column {
        header: "TOOL",
        width: 12,
        priority: 1,
        cut: true,
        cell: |g, _| (Clean::new(&g.tool), Style::new()),
    },
    Column {
        header: "1D",
        width: 5,
        priority: 2,
        cut: false,
        cell: |g, _| (Clean::new(&g.last_day.to_string()), Style::new()),
    },
    Column {
        header: "7D",
        width: 5,
        priority: 0,
        cut: false,
        cell: |g, _| (Clean::new(&g.last_week.to_string()), Style::new()),
    },
    Column {
        header: "ALL",
        width: 6,
        priority: 1,
        cut: false,
        cell: |g, _| (Clean::new(&g.total.to_string()), Style::new()),
    },
    Column {
        header: "NEWEST",
        width: 10,
        priority: 1,
        cut: false,
        cell: |g, _| (Clean::new(g.newest.as_str()), Style::new()),
    },
    Column {
        header: "SINCE",
        width: 20,
        priority: 3,
        cut: false,
        cell: |g, _| (Clean::new(&human_instant(g.newest_since)), Style::new()),
    },
];

/// The repeated errors: one row per owner × root cause × tool, most frequent
/// in the last week first.
fn repeated(frame: &mut Frame, state: &MetricsState, theme: Theme, area: Rect) {
    let groups = state.groups();
    let total = state
        .report
        .as_ref()
        .and_then(|r| r.operational.repeated.groups_total)
        .map_or_else(
            || groups.len().to_string(),
            |t| format!("first {} of {t}", groups.len()),
        );
    let title = format!(" Repeated errors · {total} groups · Enter opens the newest · e back ");
    let block = widgets::pane(theme, Clean::new(&title), true);
    if groups.is_empty() {
        message(
            frame,
            area,
            block,
            theme,
            "No operation failed or is held: nothing repeats.",
        );
        return;
    }
    let [what, table] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(layout::inner(area));
    frame.render_widget(block, area);
    frame.render_widget(
        ratatui::widgets::Paragraph::new(widgets::fit_line(
            vec![span(
                Clean::new(
                    "failed and held by owner × root cause × tool · 1D, 7D: entered their state in the last day, week",
                ),
                theme.dim(),
            )],
            what.width,
        )),
        what,
    );
    DataTable {
        columns: GROUP_COLUMNS,
        rows: groups,
        context: &theme,
        selected: Some(state.group),
    }
    .draw(frame, table, ratatui::widgets::Block::new(), theme);
}

/// The release disposition and what the figures are computed over.
fn release_line(state: &MetricsState, theme: Theme) -> Line<'static> {
    let Some(report) = &state.report else {
        let text = state.judging.map_or_else(
            || " computing…".to_owned(),
            |judging| format!(" judging {:.1}%…", judging.percent()),
        );
        return line(vec![span(Clean::new(&text), theme.dim())]);
    };
    let (text, style) = match report.release.disposition {
        Disposition::Deployable => ("DEPLOYABLE", theme.good()),
        Disposition::NotDeployed => ("NOT_DEPLOYED", theme.alert()),
        Disposition::NotEvaluated => ("NOT_EVALUATED", theme.warn()),
    };
    line(vec![
        span(Clean::new(" release "), theme.label()),
        span(Clean::new(text), style),
        span(
            Clean::new(&format!(
                "  vetoes {}  over {} operations",
                report.release.veto_count(),
                report.operational.logical_operations
            )),
            theme.label(),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyCode;

    use super::*;
    use crate::core::detail::Dataset;
    use crate::tui::layout::Pane;
    use crate::tui::screens::fixture::{self, char, id, key};

    /// The report of an empty store, the second figure given one operation
    /// short of it (F05) and one counted (F06).
    fn report() -> Report {
        let mut report = crate::core::metrics::report(&Dataset::default(), fixture::now());
        let figure = &mut report.metrics[1];
        figure.shortfalls = vec![(id("F05"), "no observation verifies it".into())];
        figure.numerator_ids = vec![id("F06")];
        report
    }

    /// The tab with `report` shown.
    fn shown(ctx: &Ctx, report: Report) -> MetricsState {
        let mut tab = MetricsState::default();
        let serial = fixture::tag(&tab.refresh(ctx)).serial;
        let answer = Answer::Metrics(Ok(Box::new(report)));
        assert_eq!(tab.answer(serial, answer, ctx), Outcome::done());
        tab
    }

    #[test]
    fn the_report_answered_is_shown_and_an_older_one_dropped() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 160, 45, Pane::Queue);
        let mut tab = MetricsState::default();
        let old = tab.refresh(&ctx);
        let new = tab.refresh(&ctx);
        assert_eq!(fixture::tag(&new).by, Asker::Tab(Page::Metrics));
        assert!(matches!(new[0], Effect::Metrics { now, .. } if now == fixture::now()));
        let answer = |r: Report| Answer::Metrics(Ok(Box::new(r)));
        assert_eq!(
            tab.answer(fixture::tag(&old).serial, answer(report()), &ctx),
            Outcome::Pass
        );
        assert!(tab.report.is_none());
        assert_eq!(
            tab.answer(fixture::tag(&new).serial, answer(report()), &ctx),
            Outcome::done()
        );
        assert_eq!(tab.report.as_ref().map(|r| r.metrics.len()), Some(7));
    }

    #[test]
    fn a_failed_report_keeps_the_last_one_and_says_why() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 160, 45, Pane::Queue);
        let mut tab = shown(&ctx, report());
        let serial = fixture::tag(&tab.refresh(&ctx)).serial;
        let failed = Answer::Metrics(Err("timeout".into()));
        assert_eq!(tab.answer(serial, failed, &ctx), Outcome::done());
        assert_eq!(tab.error.as_deref(), Some("timeout"));
        assert!(tab.report.is_some());
    }

    #[test]
    fn enter_lists_the_operations_behind_a_figure_then_opens_one() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 160, 45, Pane::Queue);
        let mut tab = shown(&ctx, report());
        assert_eq!(tab.key(key(KeyCode::Enter), &ctx), Outcome::done());
        assert_eq!(
            tab.focus,
            MetricsFocus::Figures,
            "nothing behind the first figure"
        );
        tab.key(char('j'), &ctx);
        assert_eq!(tab.figure, 1);
        tab.key(key(KeyCode::Enter), &ctx);
        assert_eq!(tab.focus, MetricsFocus::Operations);
        let behind: Vec<(OperationId, bool)> = tab
            .behind()
            .into_iter()
            .map(|b| (b.id, b.counted))
            .collect();
        assert_eq!(behind, [(id("F05"), false), (id("F06"), true)]);
        tab.key(char('j'), &ctx);
        assert_eq!(tab.key(key(KeyCode::Enter), &ctx), Outcome::Open(id("F06")));
        tab.key(key(KeyCode::Esc), &ctx);
        assert_eq!(tab.focus, MetricsFocus::Figures);
        tab.key(key(KeyCode::Tab), &ctx);
        assert_eq!(tab.focus, MetricsFocus::Operations);
    }

    #[test]
    fn e_lists_the_repeated_errors_and_enter_opens_a_group_s_newest() {
        use crate::core::metrics::{Repeated, RepeatedError};
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 160, 45, Pane::Queue);
        let group = |owner: &str, newest: &str, total: u32| RepeatedError {
            owner: owner.into(),
            layer: "provider".into(),
            tool: "T06".into(),
            last_day: total,
            last_week: total,
            total,
            newest: id(newest),
            newest_since: fixture::now(),
        };
        let mut with_groups = report();
        with_groups.operational.repeated = Repeated {
            groups: vec![group("billing", "F15", 2), group("comms", "F14", 1)],
            groups_total: None,
        };
        let mut tab = shown(&ctx, with_groups);
        assert_eq!(tab.key(char('e'), &ctx), Outcome::done());
        assert_eq!(tab.focus, MetricsFocus::Repeated);
        assert_eq!(tab.selected_operation(), Some(id("F15")));
        tab.key(char('j'), &ctx);
        tab.key(char('j'), &ctx);
        assert_eq!(tab.group, 1, "the selection stops at the last group");
        assert_eq!(tab.key(key(KeyCode::Enter), &ctx), Outcome::Open(id("F14")));
        assert_eq!(tab.figure, 0, "the figures did not move");
        tab.key(char('e'), &ctx);
        assert_eq!(tab.focus, MetricsFocus::Figures);
        tab.key(char('e'), &ctx);
        tab.key(key(KeyCode::Esc), &ctx);
        assert_eq!(tab.focus, MetricsFocus::Figures);

        // A newer report with fewer groups keeps the selection inside it.
        tab.key(char('e'), &ctx);
        tab.key(char('j'), &ctx);
        let mut fewer = report();
        fewer.operational.repeated.groups = vec![group("billing", "F15", 3)];
        let serial = fixture::tag(&tab.refresh(&ctx)).serial;
        tab.answer(serial, Answer::Metrics(Ok(Box::new(fewer))), &ctx);
        assert_eq!((tab.focus, tab.group), (MetricsFocus::Repeated, 0));
        assert_eq!(tab.selected_operation(), Some(id("F15")));
    }

    /// How far judging has got is kept for the request in flight alone, and
    /// the report that answers it puts it away.
    #[test]
    fn judging_is_shown_for_the_request_in_flight_until_its_report_comes() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 160, 45, Pane::Queue);
        let mut tab = shown(&ctx, report());
        let judging = Judging {
            judged: 500,
            total: 1_000,
            elapsed: std::time::Duration::from_secs(2),
        };
        let old = fixture::tag(&tab.refresh(&ctx)).serial;
        let new = fixture::tag(&tab.refresh(&ctx)).serial;
        let told = Answer::Judging(judging);
        assert_eq!(tab.answer(old, told.clone(), &ctx), Outcome::Pass);
        assert_eq!(tab.judging, None);
        assert_eq!(tab.answer(new, told, &ctx), Outcome::done());
        assert_eq!(tab.judging, Some(judging));
        let backend = ratatui::backend::TestBackend::new(160, 20);
        let mut terminal = ratatui::Terminal::new(backend).unwrap_or_else(|e| panic!("{e}"));
        terminal
            .draw(|frame| draw(frame, &tab, frame.area(), &ctx))
            .unwrap_or_else(|e| panic!("{e}"));
        let title: String = (0..160)
            .map(|x| terminal.backend().buffer()[(x, 0)].symbol().to_owned())
            .collect();
        assert!(
            title.contains(" Metrics · judging 500 of 1,000 (50.0%) · 250/s · about 2s left "),
            "the report shown says a newer one judges: {title}"
        );
        // While it judges, a refresh asks for no second report beside it.
        assert!(tab.refresh(&ctx).is_empty());
        let answer = Answer::Metrics(Ok(Box::new(report())));
        assert_eq!(tab.answer(new, answer, &ctx), Outcome::done());
        assert_eq!(tab.judging, None);
        assert_eq!(tab.refresh(&ctx).len(), 1, "asked again once answered");
    }

    #[test]
    fn moving_to_another_figure_starts_its_operations_at_the_top() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 160, 45, Pane::Queue);
        let mut tab = shown(&ctx, report());
        tab.key(char('j'), &ctx);
        tab.key(key(KeyCode::Tab), &ctx);
        tab.key(char('j'), &ctx);
        assert_eq!(tab.operation, 1);
        tab.key(key(KeyCode::Tab), &ctx);
        tab.key(char('G'), &ctx);
        assert_eq!((tab.figure, tab.operation), (6, 0));
    }

    #[test]
    fn t_goes_back_to_the_held_queue_and_the_consoles_keys_pass() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 160, 45, Pane::Queue);
        let mut tab = shown(&ctx, report());
        assert_eq!(tab.key(char('t'), &ctx), Outcome::Show('1'));
        for k in [char('r'), char('q'), char('4'), char('/')] {
            assert_eq!(tab.key(k, &ctx), Outcome::Pass, "{k:?}");
        }
    }
}
