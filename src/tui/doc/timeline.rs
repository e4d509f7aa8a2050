//! The attempt timeline: every request and status query of one logical operation
//! drawn to scale on a time axis (durations, gaps, Retry-After waits, the
//! observations, the next observation, the deadline and now), then each attempt in
//! words: kind, layer, phase, outcome, HTTP status, provider request id, resends,
//! replay, and the quarantined response excerpt.

use chrono::{DateTime, Duration, Utc};
use ratatui::style::Style;
use ratatui::text::{Line, Span};

use super::opt;
use crate::core::clock::{human_duration, human_instant};
use crate::core::detail::OperationDetail;
use crate::core::model::{Attempt, AttemptKind, Outcome, Phase};
use crate::core::sanitize::Clean;
use crate::tui::opened::Loaded;
use crate::tui::theme::Theme;
use crate::tui::widgets::{Doc, line, span};

/// Columns of the row labels left of the axis.
const LABEL: u16 = 12;
/// The narrowest axis worth drawing.
const MIN_AXIS: u16 = 12;
/// Tick spacings to choose from, in seconds.
const STEPS: [i64; 20] = [
    1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400,
    172_800, 604_800,
];
/// How far past the axis a mark may always be and still stretch it.
const REACH_MS: i64 = 15 * 60 * 1000;
/// How far past the last event now may be and still be on the axis.
const FAR_MS: i64 = 24 * 3600 * 1000;
/// Columns wanted between two ticks.
const TICK_COLUMNS: i64 = 10;

/// A point in time the chart marks on its own row.
struct Mark {
    name: &'static str,
    at: DateTime<Utc>,
    glyph: char,
    style: Style,
    note: String,
}

/// Maps instants to columns of an axis `columns` wide from `start` to `end`.
struct Scale {
    start: DateTime<Utc>,
    millis: i64,
    columns: u16,
}

impl Scale {
    /// The column of `at`; `None` when it falls outside the axis.
    fn column(&self, at: DateTime<Utc>) -> Option<u16> {
        let offset = (at - self.start).num_milliseconds();
        if offset < 0 || offset > self.millis {
            return None;
        }
        let last = i64::from(self.columns.saturating_sub(1));
        u16::try_from(offset * last / self.millis.max(1)).ok()
    }
}

/// The pane's lines at `width` columns.
pub(crate) fn doc(theme: Theme, loaded: &Loaded, now: DateTime<Utc>, width: u16) -> Doc {
    let detail = &loaded.detail;
    let op = &detail.row.operation;
    let budget = &loaded.bundle.budget;
    let mut doc = Doc::default();
    let queries = usize::try_from(budget.status_queries).unwrap_or(usize::MAX);
    // A try stopped before it left (a gate's refusal of a repeat, a rule that
    // failed first) is counted apart: it is a try, not a request the provider saw.
    let not_sent = detail
        .attempts
        .iter()
        .filter(|a| a.kind == AttemptKind::Request && a.phase == Phase::NotSent)
        .count();
    let requests = detail
        .attempts
        .len()
        .saturating_sub(queries)
        .saturating_sub(not_sent);
    let max = budget
        .max_attempts
        .map_or_else(|| "-".to_owned(), |m| m.to_string());
    let held_back = if not_sent == 0 {
        String::new()
    } else {
        format!(" + {not_sent} not sent")
    };
    doc.push(line(vec![
        span(Clean::new("1 logical operation "), theme.title()),
        span(Clean::new(op.id.as_str()), theme.title()),
        span(
            Clean::new(&format!(
                " · {} physical: {requests} request{}{held_back} ({} of {max} attempts used) + {queries} status quer{}",
                detail.attempts.len(),
                if requests == 1 { "" } else { "s" },
                budget.attempts_used,
                if queries == 1 { "y" } else { "ies" }
            )),
            theme.plain(),
        ),
    ]));

    let origin = detail
        .attempts
        .iter()
        .map(|a| a.started_at)
        .chain([op.created_at])
        .min()
        .unwrap_or(op.created_at);
    let core_end = detail
        .attempts
        .iter()
        .flat_map(|a| [Some(a.last_instant()), a.retry_after])
        .flatten()
        .chain(detail.observations.iter().map(|o| o.observed_at))
        .chain([origin])
        .max()
        .unwrap_or(origin);
    let mut marks = Vec::new();
    if let Some(at) = op.next_observation_at {
        let overdue = loaded.bundle.next_observation_overdue;
        marks.push(Mark {
            name: "next obs",
            at,
            glyph: '▲',
            style: if overdue { theme.alert() } else { theme.warn() },
            note: if overdue {
                format!("overdue by {}", human_duration((now - at).num_seconds()))
            } else {
                String::new()
            },
        });
    }
    if let Some(at) = budget.deadline {
        marks.push(Mark {
            name: "deadline",
            at,
            glyph: '┃',
            style: theme.alert(),
            note: if at <= now {
                "passed".to_owned()
            } else {
                String::new()
            },
        });
    }
    marks.push(Mark {
        name: "now",
        at: now,
        glyph: '▼',
        style: theme.title(),
        note: String::new(),
    });
    // The axis runs from the first event to now, so the time held shows to
    // scale (unless now is more than a day past the last event, when it is drawn
    // at the edge); the other marks join it when they are no further than half
    // its length (or a quarter of an hour) beyond, else they sit at the edge.
    let base = if (now - core_end).num_milliseconds() <= FAR_MS {
        core_end.max(now)
    } else {
        core_end
    };
    let reach =
        base + Duration::milliseconds(((base - origin).num_milliseconds() / 2).max(REACH_MS));
    let settle = |t: DateTime<Utc>| t >= origin && t <= reach;
    let end = marks
        .iter()
        .map(|m| m.at)
        .filter(|t| settle(*t))
        .chain([base, origin + Duration::seconds(1)])
        .max()
        .unwrap_or(base);
    let axis = width.saturating_sub(LABEL);
    doc.push(line(vec![span(
        Clean::new(&format!(
            "axis {} to {} ({})",
            human_instant(origin),
            human_instant(end),
            human_duration((end - origin).num_seconds())
        )),
        theme.dim(),
    )]));
    if axis >= MIN_AXIS {
        let scale = Scale {
            start: origin,
            millis: (end - origin).num_milliseconds().max(1),
            columns: axis,
        };
        chart(&mut doc, theme, detail, &marks, &scale);
    } else {
        doc.push(line(vec![span(
            Clean::new("(too narrow for the time axis)"),
            theme.dim(),
        )]));
    }

    doc.blank();
    let offset = |t: DateTime<Utc>| format!("+{}", human_duration((t - origin).num_seconds()));
    let mut previous: Option<&Attempt> = None;
    for a in &detail.attempts {
        attempt(&mut doc, theme, a, previous, &offset);
        previous = Some(a);
    }
    if detail.attempts.is_empty() {
        doc.push(line(vec![span(
            Clean::new("no attempt recorded"),
            theme.dim(),
        )]));
    }
    doc.blank();
    doc.field(
        theme,
        "created",
        Clean::new(&format!(
            "{} ({})",
            human_instant(op.created_at),
            offset(op.created_at)
        )),
        theme.plain(),
    );
    for mark in &marks {
        let place = if mark.at < origin || mark.at > end {
            " · off the scale".to_owned()
        } else {
            String::new()
        };
        let note = if mark.note.is_empty() {
            String::new()
        } else {
            format!(" · {}", mark.note)
        };
        doc.field(
            theme,
            mark.name,
            Clean::new(&format!(
                "{} ({}){note}{place}",
                human_instant(mark.at),
                offset_signed(mark.at, origin)
            )),
            if mark.note.is_empty() {
                theme.plain()
            } else {
                mark.style
            },
        );
    }
    doc
}

/// `+3m05s`, or `-2m` for an instant before the start.
fn offset_signed(at: DateTime<Utc>, origin: DateTime<Utc>) -> String {
    let seconds = (at - origin).num_seconds();
    if seconds >= 0 {
        format!("+{}", human_duration(seconds))
    } else {
        human_duration(seconds)
    }
}

/// The axis with its ticks, one bar row per attempt, and the mark rows.
fn chart(doc: &mut Doc, theme: Theme, detail: &OperationDetail, marks: &[Mark], scale: &Scale) {
    let total_s = (scale.millis / 1000).max(1);
    let columns = i64::from(scale.columns.max(1));
    let step = STEPS
        .iter()
        .copied()
        .find(|s| s * columns / total_s >= TICK_COLUMNS)
        .unwrap_or_else(|| total_s * TICK_COLUMNS / columns + 1);
    let mut labels = vec![(' ', theme.dim()); usize::from(scale.columns)];
    let mut ticks = vec![('─', theme.dim()); usize::from(scale.columns)];
    let mut free_from = 0;
    let mut tick = 0;
    while tick <= total_s {
        if let Some(x) = scale.column(scale.start + Duration::seconds(tick)) {
            let x = usize::from(x);
            ticks[x] = (if tick == 0 { '├' } else { '┼' }, theme.dim());
            let text = format!("+{}", human_duration(tick));
            if x >= free_from && x + text.len() <= labels.len() {
                for (i, c) in text.chars().enumerate() {
                    labels[x + i] = (c, theme.dim());
                }
                free_from = x + text.len() + 1;
            }
        }
        tick += step;
    }
    doc.push_indented(row(theme, "", labels), 0);
    doc.push_indented(row(theme, "", ticks), 0);

    for a in &detail.attempts {
        let mut cells = vec![(' ', theme.plain()); usize::from(scale.columns)];
        let (glyph, kind) = match a.kind {
            AttemptKind::Request => ('█', "req"),
            AttemptKind::StatusQuery => ('▒', "query"),
        };
        let style = match a.outcome {
            Outcome::Ok => theme.good(),
            Outcome::Timeout => theme.warn(),
            _ => theme.alert(),
        };
        let from = scale.column(a.started_at);
        let to = scale.column(a.last_instant()).or(from);
        if let (Some(from), Some(to)) = (from, to) {
            for cell in &mut cells[usize::from(from)..=usize::from(to.max(from))] {
                *cell = (glyph, style);
            }
            if let Some(wait) = a.retry_after.and_then(|t| scale.column(t)) {
                let start = usize::from(to) + 1;
                for cell in cells.iter_mut().take(usize::from(wait) + 1).skip(start) {
                    *cell = ('┄', theme.warn());
                }
            }
        }
        doc.push_indented(row(theme, &format!("#{} {kind}", a.seq), cells), 0);
    }
    if !detail.observations.is_empty() {
        let mut cells = vec![(' ', theme.plain()); usize::from(scale.columns)];
        for o in &detail.observations {
            if let Some(x) = scale.column(o.observed_at) {
                let style = if o.found { theme.good() } else { theme.warn() };
                cells[usize::from(x)] = ('◆', style);
            }
        }
        doc.push_indented(row(theme, "observed", cells), 0);
    }
    for mark in marks {
        let mut cells = vec![(' ', theme.plain()); usize::from(scale.columns)];
        match scale.column(mark.at) {
            Some(x) => cells[usize::from(x)] = (mark.glyph, mark.style),
            None if mark.at > scale.start => {
                if let Some(last) = cells.last_mut() {
                    *last = ('»', mark.style);
                }
            }
            None => {
                if let Some(first) = cells.first_mut() {
                    *first = ('«', mark.style);
                }
            }
        }
        doc.push_indented(row(theme, mark.name, cells), 0);
    }
    let legend = "█ request  ▒ status query  ┄ Retry-After wait  ◆ observation  » off the scale";
    doc.push(line(vec![span(Clean::new(legend), theme.dim())]));
}

/// A chart row: its label, then the axis cells run-length grouped by style.
fn row(theme: Theme, label: &str, cells: Vec<(char, Style)>) -> Line<'static> {
    let mut spans: Vec<Span<'static>> = vec![span(
        Clean::new(&format!("{label:<w$}", w = usize::from(LABEL))),
        theme.label(),
    )];
    let mut piece = String::new();
    let mut style: Option<Style> = None;
    for (c, s) in cells {
        if style.is_some_and(|st| st != s) {
            spans.push(span(
                Clean::new(&std::mem::take(&mut piece)),
                style.unwrap_or_default(),
            ));
        }
        style = Some(s);
        piece.push(c);
    }
    if !piece.is_empty() {
        spans.push(span(Clean::new(&piece), style.unwrap_or_default()));
    }
    line(spans)
}

/// One attempt in words.
fn attempt(
    doc: &mut Doc,
    theme: Theme,
    a: &Attempt,
    previous: Option<&Attempt>,
    offset: &dyn Fn(DateTime<Utc>) -> String,
) {
    let style = match a.outcome {
        Outcome::Ok => theme.good(),
        Outcome::Timeout => theme.warn(),
        _ => theme.alert(),
    };
    doc.push(line(vec![
        span(Clean::new(&format!("#{} ", a.seq)), theme.title()),
        span(Clean::new(&a.id), theme.title()),
        span(
            Clean::new(&format!(
                " {} via {}",
                a.kind,
                a.layer.map_or("unknown layer", |l| l.as_str())
            )),
            theme.plain(),
        ),
        span(Clean::new(&format!(" → {}", a.outcome)), style),
    ]));
    let took = a.ended_at.map_or_else(
        || "no end recorded".to_owned(),
        |e| format!("took {}", human_duration((e - a.started_at).num_seconds())),
    );
    let gap = previous.map_or_else(String::new, |p| {
        let seconds = (a.started_at - p.last_instant()).num_seconds();
        if seconds >= 0 {
            format!(" · gap {} after #{}", human_duration(seconds), p.seq)
        } else {
            format!(" · overlaps #{} by {}", p.seq, human_duration(-seconds))
        }
    });
    let ended = a
        .ended_at
        .map_or_else(String::new, |e| format!(" → {}", offset(e)));
    detail_line(
        doc,
        theme,
        &format!("{}{ended} · {took}{gap}", offset(a.started_at)),
        theme.plain(),
    );
    detail_line(
        doc,
        theme,
        &format!(
            "phase {} · HTTP {} · error {}",
            a.phase,
            a.http_status
                .map_or_else(|| "-".to_owned(), |s| s.to_string()),
            a.error_type.as_deref().unwrap_or("-")
        ),
        theme.plain(),
    );
    detail_line(
        doc,
        theme,
        &format!(
            "provider id {} · resent {} · replayed {}",
            opt(a.provider_request_id.as_deref()),
            a.resend_count
                .map_or_else(|| "-".to_owned(), |n| n.to_string()),
            a.replayed.map_or("-", |r| if r { "yes" } else { "no" })
        ),
        theme.plain(),
    );
    if let Some(url) = &a.url {
        detail_line(doc, theme, &format!("url {url}"), theme.plain());
    }
    if let Some(until) = a.retry_after {
        detail_line(
            doc,
            theme,
            &format!(
                "Retry-After until {} ({}) · waits {}",
                human_instant(until),
                offset(until),
                human_duration((until - a.last_instant()).num_seconds())
            ),
            theme.warn(),
        );
    }
    if let Some(excerpt) = &a.response_excerpt {
        let hash = a
            .response_hash
            .as_ref()
            .map_or_else(String::new, |h| format!(" (response {h})"));
        detail_line(
            doc,
            theme,
            &format!("quarantined output, data only{hash}:"),
            theme.dim(),
        );
        for piece in Clean::lines(excerpt) {
            doc.push_indented(
                line(vec![
                    span(Clean::new("     │ "), theme.dim()),
                    span(piece, theme.warn()),
                ]),
                7,
            );
        }
    }
}

/// An indented line under an attempt's heading.
fn detail_line(doc: &mut Doc, theme: Theme, text: &str, style: Style) {
    doc.push_indented(
        line(vec![
            span(Clean::new("   "), theme.plain()),
            span(Clean::new(text), style),
        ]),
        5,
    );
}
