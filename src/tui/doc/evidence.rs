//! The evidence pane: every field of the bundle the core assembled (DESIGN §4),
//! laid out in the order a reviewer at 3 a.m. needs them: why it is held (the
//! transition into its state, its reason and evidence), what went wrong and what
//! the matrix recommends, what is prohibited and allowed now, the budget and
//! owner, what was verified, then identity, approval and identifiers. Nothing here decides anything: the
//! recommendation, what is prohibited and which actions are allowed all come from
//! the bundle.

use chrono::{DateTime, Utc};
use ratatui::style::Style;

use super::{opt, relative, when, when_relative};
use crate::core::clock::{human_duration, human_instant};
use crate::core::evidence::EvidenceBundle;
use crate::core::model::Matches;
use crate::core::sanitize::Clean;
use crate::tui::opened::{Frame, Loaded};
use crate::tui::theme::Theme;
use crate::tui::widgets::{Doc, LABEL_WIDTH, line, span};

/// The pane's lines for the operation `frame` shows.
pub(crate) fn doc(theme: Theme, frame: &Frame, loaded: &Loaded, now: DateTime<Utc>) -> Doc {
    let b = &loaded.bundle;
    let mut doc = Doc::default();
    doc.push(line(vec![
        span(Clean::new(b.id.as_str()), theme.title()),
        span(Clean::new(" "), theme.plain()),
        span(Clean::new(b.state.as_str()), theme.state(b.state)),
        span(
            Clean::new(&format!(
                " · version {} · in this state since {} ({})",
                b.version,
                human_instant(b.state_since),
                relative(b.state_since, now)
            )),
            theme.dim(),
        ),
    ]));
    why_held(&mut doc, theme, b);
    links(&mut doc, theme, frame);

    section(&mut doc, theme, "Decision");
    doc.field(
        theme,
        "failure mode",
        Clean::new(b.failure_mode.map_or("-", |m| m.as_str())),
        theme.plain(),
    );
    doc.field(
        theme,
        "recommendation",
        Clean::new(&b.recommendation.decision.to_string()),
        theme.title(),
    );
    doc.field(
        theme,
        "  because",
        Clean::new(&b.recommendation.reason),
        theme.plain(),
    );

    section(&mut doc, theme, "Prohibited now");
    if b.prohibited.is_empty() {
        doc.push(line(vec![span(
            Clean::new("  nothing beyond the refused actions below"),
            theme.dim(),
        )]));
    }
    for p in &b.prohibited {
        doc.push_indented(
            line(vec![span(Clean::new(&format!("  ✗ {p}")), theme.alert())]),
            4,
        );
    }

    section(&mut doc, theme, "Actions the core allows now");
    let width = b
        .actions
        .iter()
        .map(|a| a.label.chars().count())
        .max()
        .unwrap_or(0);
    let indent = u16::try_from(width + 5).unwrap_or(LABEL_WIDTH);
    let allowed: Vec<_> = b.actions.iter().filter(|a| a.allowed).collect();
    if allowed.is_empty() {
        doc.push(line(vec![span(
            Clean::new("  none for you right now"),
            theme.warn(),
        )]));
    }
    for a in allowed {
        doc.push_indented(
            line(vec![
                span(
                    Clean::new(&format!("  ✓ {:<width$} ", a.label)),
                    theme.good(),
                ),
                span(Clean::new(a.effect.as_deref().unwrap_or("")), theme.plain()),
            ]),
            indent,
        );
    }
    section(&mut doc, theme, "Budget and ownership");
    budget(&mut doc, theme, b);
    doc.field(theme, "owner", Clean::new(&b.owner), theme.plain());
    let next = when_relative(b.next_observation_at, now);
    if b.next_observation_overdue {
        doc.field(
            theme,
            "next observation",
            Clean::new(&format!("{next} · OVERDUE")),
            theme.alert(),
        );
    } else {
        doc.field(theme, "next observation", Clean::new(&next), theme.plain());
    }
    for (id, state) in &b.held_by {
        doc.field(
            theme,
            "held by",
            Clean::new(&format!(
                "{id} ({state}): cannot be confirmed to a customer"
            )),
            theme.warn(),
        );
    }
    if let Some(p) = &b.pending_proposal {
        doc.field(theme, "pending proposal", Clean::new(p), theme.warn());
    }

    section(&mut doc, theme, "Verified state");
    match &b.last_verified {
        Some((what, at)) => doc.field(
            theme,
            "last verified",
            Clean::new(&format!(
                "{what} · {} ({})",
                human_instant(*at),
                relative(*at, now)
            )),
            theme.plain(),
        ),
        None => doc.field(
            theme,
            "last verified",
            Clean::new("never observed"),
            theme.warn(),
        ),
    }
    if b.observations.is_empty() {
        doc.field(theme, "observations", Clean::new("none"), theme.dim());
    }
    for o in &b.observations {
        let found = if o.found { "found" } else { "not found" };
        let effects = o.effect_count.map_or_else(String::new, |n| {
            format!(" · {n} effect{}", if n == 1 { "" } else { "s" })
        });
        doc.field(
            theme,
            &format!("observation {}", o.id),
            Clean::new(&format!(
                "{} · {} · {found}{effects}",
                human_instant(o.observed_at),
                o.source
            )),
            if o.found { theme.plain() } else { theme.warn() },
        );
        if let Some(m) = &o.matches {
            doc.push_indented(matches_line(theme, m), LABEL_WIDTH);
        }
        if let Some(note) = &o.note {
            for piece in Clean::lines(note) {
                doc.field(theme, "  note", piece, theme.dim());
            }
        }
    }

    section(&mut doc, theme, "Identity and approval");
    doc.field(
        theme,
        "intent hash",
        opt(b.intent_hash.as_ref().map(|h| h.as_str())),
        theme.plain(),
    );
    doc.field(
        theme,
        "payload hash",
        Clean::new(b.payload_hash.as_str()),
        theme.plain(),
    );
    doc.field(theme, "actor", Clean::new(&b.actor), theme.plain());
    doc.field(theme, "tenant", Clean::new(&b.tenant), theme.plain());
    doc.field(
        theme,
        "tool / action",
        Clean::new(&format!(
            "{} / {}",
            b.tool,
            crate::core::names::known_action(&b.tool, &b.action).unwrap_or("-")
        )),
        theme.plain(),
    );
    let lookup_style = if b.status_lookup.starts_with("none") {
        theme.warn()
    } else {
        theme.plain()
    };
    doc.field(
        theme,
        "status lookup",
        Clean::new(&b.status_lookup),
        lookup_style,
    );
    doc.field(
        theme,
        "autonomy",
        Clean::new(&b.autonomy.describe()),
        theme.plain(),
    );
    doc.field(theme, "target", Clean::new(&b.target), theme.plain());
    let four_eyes = if b.risk.needs_four_eyes() {
        " (retry and compensation need a second approver)"
    } else {
        ""
    };
    doc.field(
        theme,
        "risk",
        Clean::new(&format!("{}{four_eyes}", b.risk)),
        theme.risk(b.risk),
    );
    match &b.approval {
        Some(a) => {
            doc.field(
                theme,
                "approval",
                Clean::new(&format!(
                    "{} · policy {} · at {}",
                    a.by,
                    a.policy,
                    when(a.at)
                )),
                theme.plain(),
            );
            doc.field(
                theme,
                "  bound payload",
                opt(a.payload_hash.as_ref().map(|h| h.as_str())),
                theme.plain(),
            );
            let valid = a.status == "valid";
            doc.field(
                theme,
                "  expires",
                Clean::new(&format!(
                    "{} · {}",
                    when_relative(a.expires_at, now),
                    a.status
                )),
                if valid { theme.good() } else { theme.alert() },
            );
        }
        None => doc.field(
            theme,
            "approval",
            Clean::new("none recorded"),
            theme.alert(),
        ),
    }

    section(&mut doc, theme, "Identifiers");
    doc.field(theme, "operation", Clean::new(b.id.as_str()), theme.plain());
    match &b.idempotency {
        Some(k) => {
            doc.field(
                theme,
                "idempotency key",
                Clean::new(&format!(
                    "{} · scope {} · retention {}",
                    k.key,
                    k.scope.as_deref().unwrap_or("-"),
                    k.retention_hours
                        .map_or_else(|| "-".to_owned(), |h| format!("{h}h"))
                )),
                theme.plain(),
            );
            let (text, style) = match k.expires_at {
                Some(t) if k.expired => (
                    format!(
                        "expired {} ({}): reconcile by business key first",
                        human_instant(t),
                        relative(t, now)
                    ),
                    theme.alert(),
                ),
                Some(t) => (
                    format!("until {} ({})", human_instant(t), relative(t, now)),
                    theme.plain(),
                ),
                None => match k.retention_hours {
                    Some(h) => (
                        format!("{h}h from the first request (none sent yet)"),
                        theme.plain(),
                    ),
                    None => (
                        "no retention documented by the contract".to_owned(),
                        theme.warn(),
                    ),
                },
            };
            doc.field(theme, "  protects", Clean::new(&text), style);
            if !k.conflicts.is_empty() {
                let ids: Vec<&str> = k.conflicts.iter().map(|i| i.as_str()).collect();
                doc.field(
                    theme,
                    "  key conflict",
                    Clean::new(&format!("same key, other payload: {}", ids.join(", "))),
                    theme.alert(),
                );
            }
        }
        None => doc.field(theme, "idempotency key", Clean::new("none"), theme.dim()),
    }
    doc.field(
        theme,
        "business key",
        opt(b.business_key.as_deref()),
        theme.plain(),
    );
    doc.field(
        theme,
        "correlation id",
        opt(b.correlation_id.as_deref()),
        theme.plain(),
    );
    let ids: Vec<&str> = b.provider_request_ids.iter().map(String::as_str).collect();
    doc.field(
        theme,
        "provider req ids",
        Clean::new(
            if ids.is_empty() {
                "none recorded".to_owned()
            } else {
                ids.join(", ")
            }
            .as_str(),
        ),
        if ids.is_empty() {
            theme.dim()
        } else {
            theme.plain()
        },
    );

    section(&mut doc, theme, "Refused now");
    for a in b.actions.iter().filter(|a| !a.allowed) {
        let rule = a.rule.map_or_else(String::new, |r| format!("{r} "));
        doc.push_indented(
            line(vec![
                span(
                    Clean::new(&format!("  · {:<width$} ", a.label)),
                    theme.dim(),
                ),
                span(Clean::new(&rule), theme.warn()),
                span(Clean::new(a.reason.as_deref().unwrap_or("")), theme.dim()),
            ]),
            indent,
        );
    }
    doc
}

/// Why the operation is in its state: the transition into it, its reason and
/// the evidence it names, first of all (DESIGN §4).
fn why_held(doc: &mut Doc, theme: Theme, b: &EvidenceBundle) {
    let title = if b.state.is_held() {
        "Why held".to_owned()
    } else {
        format!("Why {}", b.state)
    };
    section(doc, theme, &title);
    let Some(why) = &b.why_held else {
        doc.field(
            theme,
            "transition",
            Clean::new("no audit row records the move into this state"),
            theme.warn(),
        );
        return;
    };
    doc.field(
        theme,
        "transition",
        Clean::new(&format!(
            "{} (audit #{}, {})",
            why.headline(),
            why.seq,
            why.action
        )),
        theme.plain(),
    );
    doc.field(
        theme,
        "reason",
        Clean::new(why.reason.as_deref().unwrap_or("none given")),
        if why.reason.is_some() {
            theme.title()
        } else {
            theme.warn()
        },
    );
    if why.evidence.is_empty() {
        doc.field(theme, "evidence", Clean::new("none named"), theme.dim());
    }
    for e in &why.evidence {
        let text = match &e.what {
            Some(what) => format!("{} ({what})", e.id),
            None => format!("{} (not among this operation's records)", e.id),
        };
        doc.field(theme, "evidence", Clean::new(&text), theme.plain());
    }
}

/// A section heading.
fn section(doc: &mut Doc, theme: Theme, title: &str) {
    doc.blank();
    doc.push(line(vec![span(Clean::new(title), theme.title())]));
}

/// The links to follow, the selected one marked.
fn links(doc: &mut Doc, theme: Theme, frame: &Frame) {
    let links = frame.links();
    if links.is_empty() {
        return;
    }
    let mut parts = vec![span(
        Clean::new(&format!(
            "{:<w$}",
            "links n/p Enter",
            w = usize::from(LABEL_WIDTH)
        )),
        theme.label(),
    )];
    for (i, link) in links.iter().enumerate() {
        if i > 0 {
            parts.push(span(Clean::new("  "), theme.plain()));
        }
        let style: Style = if i == frame.link {
            theme.selected()
        } else {
            theme.plain()
        };
        let mark = if i == frame.link { "▸ " } else { "" };
        parts.push(span(
            Clean::new(&format!("{mark}{}", link.describe())),
            style,
        ));
    }
    doc.push_indented(line(parts), LABEL_WIDTH);
}

/// `target ✓  payload_hash ✗  owner ?  version ✓`.
fn matches_line(theme: Theme, m: &Matches) -> ratatui::text::Line<'static> {
    let mut parts = vec![span(
        Clean::new(&" ".repeat(usize::from(LABEL_WIDTH))),
        theme.plain(),
    )];
    for (name, value) in [
        ("target", m.target),
        ("payload_hash", m.payload_hash),
        ("owner", m.owner),
        ("version", m.version),
    ] {
        let (mark, style) = match value {
            Some(true) => ("✓", theme.good()),
            Some(false) => ("✗", theme.alert()),
            None => ("?", theme.warn()),
        };
        parts.push(span(Clean::new(&format!("{name} ")), theme.label()));
        parts.push(span(Clean::new(&format!("{mark}  ")), style));
    }
    line(parts)
}

fn budget(doc: &mut Doc, theme: Theme, b: &EvidenceBundle) {
    let budget = &b.budget;
    let max = budget
        .max_attempts
        .map_or_else(|| "-".to_owned(), |m| m.to_string());
    let queries = budget.status_queries;
    let refused = budget.refused_by_gateway;
    let held_back = if refused == 0 {
        String::new()
    } else {
        format!(" · {refused} refused by the gateway, not counted")
    };
    let text = format!(
        "{} of {max} used{held_back} · {queries} status quer{}",
        budget.attempts_used,
        if queries == 1 { "y" } else { "ies" }
    );
    let style = if budget.exhausted.is_some() {
        theme.alert()
    } else {
        theme.plain()
    };
    doc.field(theme, "attempts", Clean::new(&text), style);
    if let Some(why) = &budget.exhausted {
        doc.field(theme, "  exhausted", Clean::new(why), theme.alert());
    }
    let (text, style) = match (budget.deadline, budget.seconds_left) {
        (Some(d), Some(s)) if s >= 0 => (
            format!("{} ({} left)", human_instant(d), human_duration(s)),
            theme.plain(),
        ),
        (Some(d), Some(s)) => (
            format!("{} (passed {} ago)", human_instant(d), human_duration(-s)),
            theme.alert(),
        ),
        _ => ("none".to_owned(), theme.dim()),
    };
    doc.field(theme, "deadline", Clean::new(&text), style);
}
