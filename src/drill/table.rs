//! The drill's printed table: case | mode | expected | observed | pass, then the
//! report's metrics and release gate. Each failed case then gets a line naming
//! every expectation it missed and what was observed.

use std::fmt::Write as _;

use super::{Figures, Outcome};
use crate::core::sanitize::sanitize;

/// Figures in one short line: `SUCCEEDED req 2 sq 0 eff 1`, then the extras a case
/// asked for; a figure the case does not check is left out (`-` when none is
/// checked at all), and requests the provider could not route show as `unrouted N`.
pub fn figures(f: &Figures) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(state) = f.state {
        parts.push(state.as_str().to_owned());
    }
    for (label, value) in [
        ("req", f.requests),
        ("sq", f.status_queries),
        ("eff", f.effects),
    ] {
        if let Some(n) = value {
            parts.push(format!("{label} {n}"));
        }
    }
    if f.retried_before_reconcile == Some(true) {
        parts.push("RETRIED-BEFORE-RECONCILE".to_owned());
    }
    if let Some(n) = f.unrouted.filter(|n| *n > 0) {
        parts.push(format!("unrouted {n}"));
    }
    if let Some(n) = f.identities {
        parts.push(format!("ids {n}"));
    }
    if let Some(n) = f.dependent_requests {
        parts.push(format!("dep {n}"));
    }
    if let Some(n) = f.max_item_effects {
        parts.push(format!("item≤{n}"));
    }
    if let Some(s) = f.recovery_state {
        parts.push(format!("rec {s}"));
    }
    if let Some(list) = f.deliveries.as_ref().filter(|l| !l.is_empty()) {
        let list: Vec<&str> = list.iter().map(|s| s.as_str()).collect();
        parts.push(format!("then {}", list.join(",")));
    }
    if parts.is_empty() {
        "-".to_owned()
    } else {
        parts.join(" ")
    }
}

/// The whole drill as text.
pub fn render(outcome: &Outcome) -> String {
    let rows: Vec<[String; 5]> = outcome
        .cases
        .iter()
        .map(|c| {
            if c.protected {
                return [
                    sanitize(&c.id).into_owned(),
                    "protected".to_owned(),
                    "-".to_owned(),
                    "-".to_owned(),
                    if c.pass { "pass" } else { "FAIL" }.to_owned(),
                ];
            }
            [
                sanitize(&c.id).into_owned(),
                c.mode.as_str().to_owned(),
                figures(&c.expected),
                figures(&c.observed),
                if c.pass { "pass" } else { "FAIL" }.to_owned(),
            ]
        })
        .collect();
    let header = ["CASE", "MODE", "EXPECTED", "OBSERVED", "PASS"].map(str::to_owned);
    let mut widths = [0usize; 5];
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    for case in outcome.cases.iter().filter(|c| !c.pass) {
        if case.protected {
            let _ = writeln!(out, "{} failed", sanitize(&case.id));
            continue;
        }
        let words: Vec<&str> = case.failed.iter().map(|m| m.words.as_str()).collect();
        let _ = writeln!(out, "{} failed: {}", sanitize(&case.id), words.join("; "));
    }
    let passed = outcome.cases.iter().filter(|c| c.pass).count();
    let _ = writeln!(out, "\n{passed} of {} cases pass\n", outcome.cases.len());
    out.push_str(&crate::core::metrics::text::render(&outcome.report));
    out
}
