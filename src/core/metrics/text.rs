//! The report as plain text, as `holdfast report` prints it and the drill's
//! table ends with it.

use std::fmt::Write as _;

use super::{Disposition, NOT_EVALUATED_WHY, Repeated, Report};
use crate::core::clock::human_instant;
use crate::core::ids::OperationId;
use crate::core::names::count;
use crate::core::sanitize::sanitize;

fn join(ids: &[OperationId]) -> String {
    if ids.is_empty() {
        return "none".into();
    }
    ids.iter()
        .map(OperationId::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// ` … and N more` when a list of `shown` entries stands for `total`.
fn more(total: Option<u32>, shown: usize) -> String {
    let shown = u32::try_from(shown).unwrap_or(u32::MAX);
    match total {
        Some(total) if total > shown => format!(" … and {} more", total - shown),
        _ => String::new(),
    }
}

/// The report as plain text. Reasons name stored ids and states; they pass the
/// sanitizer all the same, like every text printed (G10).
pub fn render(report: &Report) -> String {
    let mut out = String::new();
    let ops = report.operational.logical_operations;
    let _ = writeln!(
        out,
        "holdfast report: {ops} logical operations, clock {}",
        human_instant(report.now)
    );
    let _ = writeln!(out);
    let _ = writeln!(out, "{:<38} {:>9} {:>9}", "METRIC", "FRACTION", "PERCENT");
    for m in &report.metrics {
        let percent = m
            .percent
            .map_or_else(|| "-".into(), |p| format!("{p:.2} %"));
        let _ = writeln!(
            out,
            "{:<38} {:>9} {:>9}",
            m.id.title(),
            format!("{}/{}", m.numerator, m.denominator),
            percent
        );
        for (id, why) in &m.shortfalls {
            let _ = writeln!(out, "    {:<5} {}", id.as_str(), sanitize(why));
        }
        if m.listed_at_most.is_some() {
            let short = m.denominator.saturating_sub(m.numerator);
            let _ = writeln!(out, "   {}", more(Some(short), m.shortfalls.len()));
        }
    }

    let release = &report.release;
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "RELEASE: {} ({} veto{})",
        release.disposition,
        release.veto_count(),
        if release.veto_count() == 1 { "" } else { "es" }
    );
    if release.disposition == Disposition::NotEvaluated {
        let _ = writeln!(out, "  {NOT_EVALUATED_WHY}");
    }
    for veto in &release.vetoes {
        let kinds: Vec<&str> = veto.kinds.iter().map(|k| k.as_str()).collect();
        let _ = writeln!(out, "  {:<5} {}", veto.operation.as_str(), kinds.join(", "));
        let _ = writeln!(
            out,
            "        evidence: {}",
            sanitize(&veto.evidence.join(", "))
        );
        for reason in &veto.reasons {
            let _ = writeln!(out, "        - {}", sanitize(reason));
        }
    }
    if release.vetoes_total.is_some() {
        let _ = writeln!(out, " {}", more(release.vetoes_total, release.vetoes.len()));
    }

    let o = &report.operational;
    let _ = writeln!(out);
    let _ = writeln!(out, "OPERATIONAL");
    let states: Vec<String> = o
        .by_state
        .iter()
        .map(|(state, n)| format!("{state} {n}"))
        .collect();
    let _ = writeln!(
        out,
        "  by state      {} ({} held)",
        states.join("  "),
        o.held
    );
    let u = &o.unknown_age;
    let _ = writeln!(out, "  unknown age   {}", u.summary("; "));
    let bars: Vec<String> = u
        .histogram
        .iter()
        .map(|b| format!("{} {}", b.label, b.count))
        .collect();
    let _ = writeln!(out, "                {}", bars.join("  "));
    let _ = writeln!(
        out,
        "  overdue       {}{}",
        join(&u.overdue),
        more(u.overdue_total, u.overdue.len())
    );
    let a = &o.amplification;
    let _ = writeln!(
        out,
        "  amplification {} ({}, {}) / {} logical = {} per operation; compound worst case {}",
        count(a.physical_attempts, "attempt", "attempts"),
        count(a.requests, "request", "requests"),
        count(a.status_queries, "status query", "status queries"),
        a.logical_operations,
        a.per_logical
            .map_or_else(|| "-".into(), |p| format!("{p:.2}")),
        a.compound_worst_case
    );
    let header = ["LAYER", "ATTEMPTS", "REQUESTS", "REPEATS", "OPS", "MAX/OP"].map(String::from);
    let rows = a.by_layer.iter().map(|l| {
        [
            l.layer.clone(),
            l.attempts.to_string(),
            l.requests.to_string(),
            l.repeats.to_string(),
            l.operations.to_string(),
            l.max_per_operation.to_string(),
        ]
    });
    for [layer, attempts, requests, repeats, ops, max] in std::iter::once(header).chain(rows) {
        let _ = writeln!(
            out,
            "                {layer:<13} {attempts:>8} {requests:>8} {repeats:>7} {ops:>5} {max:>7}"
        );
    }
    let t = &o.throttled;
    let _ = writeln!(
        out,
        "  throttled     {}/{} requests{}",
        t.throttled,
        t.requests,
        t.percent
            .map_or_else(String::new, |p| format!(" = {p:.2} %"))
    );
    if o.partial_in_progress.is_empty() {
        let _ = writeln!(out, "  partial       none in progress");
    }
    for p in &o.partial_in_progress {
        let children: Vec<String> = p
            .children
            .iter()
            .map(|(id, relation, state)| format!("{id} {relation} {state}"))
            .collect();
        let _ = writeln!(
            out,
            "  partial       {} [{}]: {}",
            p.operation.as_str(),
            children.join("; "),
            sanitize(&p.waiting_for)
        );
    }
    if o.partial_total.is_some() {
        let _ = writeln!(
            out,
            "               {}",
            more(o.partial_total, o.partial_in_progress.len())
        );
    }
    let pending: Vec<String> = o
        .pending_proposals
        .iter()
        .map(|p| {
            format!(
                "{} {} by {}",
                p.operation,
                sanitize(&p.action),
                sanitize(&p.proposed_by)
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "  proposals     {} pending{}{}{}",
        o.pending_total
            .unwrap_or_else(|| u32::try_from(pending.len()).unwrap_or(u32::MAX)),
        if pending.is_empty() { "" } else { ": " },
        pending.join("; "),
        more(o.pending_total, pending.len())
    );
    repeated(&mut out, &o.repeated);
    out
}

/// The repeated errors: one line per owner × root cause × tool, most frequent
/// in the last week first.
fn repeated(out: &mut String, r: &Repeated) {
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "REPEATED ERRORS (failed and held operations by owner, root cause and tool; \
         counted from when each entered its state)"
    );
    if r.groups.is_empty() {
        let _ = writeln!(out, "  none");
        return;
    }
    let rows: Vec<[std::borrow::Cow<'_, str>; 4]> = r
        .groups
        .iter()
        .map(|g| {
            [
                sanitize(&g.owner),
                g.layer.as_str().into(),
                sanitize(&g.tool),
                format!("{} ({})", g.newest.as_str(), human_instant(g.newest_since)).into(),
            ]
        })
        .collect();
    let width = |i: usize, title: &str| {
        rows.iter()
            .map(|row| row[i].chars().count())
            .chain([title.len()])
            .max()
            .unwrap_or(0)
    };
    let (w_owner, w_layer, w_tool) = (width(0, "OWNER"), width(1, "ROOT CAUSE"), width(2, "TOOL"));
    let _ = writeln!(
        out,
        "  {:<w_owner$}  {:<w_layer$}  {:<w_tool$}  {:>5} {:>5} {:>5}  NEWEST",
        "OWNER", "ROOT CAUSE", "TOOL", "1D", "7D", "ALL"
    );
    for (g, [owner, layer, tool, newest]) in r.groups.iter().zip(rows) {
        let _ = writeln!(
            out,
            "  {owner:<w_owner$}  {layer:<w_layer$}  {tool:<w_tool$}  {:>5} {:>5} {:>5}  {newest}",
            g.last_day, g.last_week, g.total
        );
    }
    if let Some(total) = r.groups_total {
        let _ = writeln!(out, "  {}", more(Some(total), r.groups.len()).trim_start());
    }
}
