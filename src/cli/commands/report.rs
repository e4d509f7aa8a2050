//! `holdfast report`: the seven figures with the operations behind them, the
//! release disposition with its vetoes, and the operational figures — as a table
//! to read or, with `--json`, as one object for scripts.

use std::fmt::Write as _;

use crate::cli::{Context, exit};
use crate::core::clock::human_instant;
use crate::core::ids::OperationId;
use crate::core::metrics::{Disposition, NOT_EVALUATED_WHY, Report};
use crate::core::names::count;
use crate::core::sanitize::sanitize;

/// Computes the report over the tenants the acting identity sees (the whole store
/// in single-user mode, G7) at the context's clock and prints it.
pub(crate) async fn run(ctx: &Context, json: bool) -> anyhow::Result<u8> {
    let session = ctx.session().await?;
    let actor = session.actor();
    let report = crate::report::compute(&session, ctx.now()).await?;
    super::warn_skipped(&session);
    if json {
        println!("{}", crate::cli::json::pretty(&report)?);
    } else {
        print!(
            "{}{}",
            crate::cli::render::actor_header(actor),
            render(&report)
        );
    }
    Ok(code(&report))
}

/// The exit code of a report: a gate that evaluated nothing is not a pass, so a
/// script that reads exit 0 as one never reads it so.
fn code(report: &Report) -> u8 {
    if report.release.disposition == Disposition::NotEvaluated {
        exit::NOT_EVALUATED
    } else {
        exit::OK
    }
}

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
pub(crate) fn render(report: &Report) -> String {
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::Dataset;

    #[test]
    fn an_empty_store_reads_as_nothing_measured_and_not_evaluated() {
        let now = crate::core::clock::parse_instant("2026-09-05T12:00:00Z");
        let Ok(now) = now else {
            panic!("a fixed instant parses");
        };
        let report = crate::core::metrics::report(&Dataset::default(), now);
        let text = render(&report);
        assert!(text.contains("Contract pass rate"));
        assert!(text.contains("0/0"));
        assert!(text.contains("RELEASE: NOT_EVALUATED (0 vetoes)"), "{text}");
        assert!(!text.contains("DEPLOYABLE"), "{text}");
        assert!(text.contains("nothing evaluated"), "{text}");
        assert!(text.contains("proposals     0 pending"));
        assert_eq!(code(&report), exit::NOT_EVALUATED);
    }

    /// A report folded from more operations than a list keeps prints the first
    /// of each list, the full counts, and how many it left out.
    #[test]
    fn a_long_list_prints_its_first_entries_and_how_many_more() {
        use crate::core::metrics::{
            Facts, FigureFacts, Finding, LISTED, MetricId, OperationalFacts, Tally, Verdict,
            VetoKind,
        };
        let Ok(now) = crate::core::clock::parse_instant("2026-09-05T12:00:00Z") else {
            panic!("a fixed instant parses");
        };
        let ops: Vec<OperationId> = (0..LISTED + 20)
            .map(|n| OperationId::parse(&format!("P{n:04}")))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("an id: {e}"));
        let mut tally = Tally::default();
        for page in ops.chunks(7) {
            tally.add(Facts {
                figures: vec![FigureFacts {
                    id: MetricId::DuplicateEffectContainment,
                    rows: page
                        .iter()
                        .map(|op| (op.clone(), Verdict::Short("twice".into())))
                        .collect(),
                }],
                findings: page
                    .iter()
                    .map(|op| Finding {
                        operation: op.clone(),
                        kind: VetoKind::DuplicatePrimaryEffect,
                        evidence: vec![format!("O-{op}")],
                        reason: "twice".into(),
                    })
                    .collect(),
                operational: OperationalFacts {
                    logical_operations: u32::try_from(page.len()).unwrap_or(0),
                    overdue: page.to_vec(),
                    ..OperationalFacts::default()
                },
            });
        }
        let report = tally.finish(now);
        let text = render(&report);
        let m = report.metric(MetricId::DuplicateEffectContainment);
        assert_eq!(m.map(|m| (m.numerator, m.denominator)), Some((0, 120)));
        assert_eq!(m.map(|m| m.shortfalls.len()), Some(LISTED));
        assert!(text.contains("Duplicate-effect containment"));
        assert!(text.contains("0/120"), "{text}");
        assert!(text.contains(" … and 20 more\n"), "{text}");
        assert!(
            text.contains("RELEASE: NOT_DEPLOYED (120 vetoes)"),
            "{text}"
        );
        assert!(!text.contains("P0119"), "{text}");
        assert!(text.contains("P0099"), "{text}");
        let Ok(json) = serde_json::to_value(&report) else {
            panic!("the report serializes");
        };
        assert_eq!(json["release"]["vetoes_total"], 120);
        assert_eq!(json["operational"]["unknown_age"]["overdue_total"], 120);
        assert_eq!(json["metrics"][4]["listed_at_most"], 100);
    }
}
