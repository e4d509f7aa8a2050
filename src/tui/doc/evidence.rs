//! The evidence pane: every row of the bundle's document ([`crate::core::bundle`],
//! the one `show` and the export print too; DESIGN §4), laid out in the order a
//! reviewer at 3 a.m. needs them: why it is held (the transition into its state,
//! its reason and evidence), what went wrong and what the matrix recommends, what
//! is prohibited and allowed now, the budget and owner, what was verified, then
//! identity, approval and identifiers. Nothing here decides anything: the
//! recommendation, what is prohibited and which actions are allowed all come from
//! the document.

use chrono::{DateTime, Utc};
use ratatui::style::Style;

use super::{opt, relative, when_relative};
use crate::core::bundle::{self, COMPARED, Document, Key, Row, SectionKey, Value};
use crate::core::clock::{human_duration, human_instant};
use crate::core::sanitize::Clean;
use crate::tui::opened::{Frame, Loaded};
use crate::tui::theme::Theme;
use crate::tui::widgets::{Doc, LABEL_WIDTH, line, span};

/// The rows of the document the console lays out itself; any other row is
/// printed after them, label and values, so that nothing the bundle holds is
/// left out. The parent and children are the links under the heading.
const PLACED: &[Key] = &[
    Key::Operation,
    Key::StateSince,
    Key::WhyHeld,
    Key::Evidence,
    Key::Parent,
    Key::Child,
    Key::FailureMode,
    Key::RootCause,
    Key::Recommendation,
    Key::Prohibited,
    Key::Allowed,
    Key::Attempts,
    Key::Deadline,
    Key::Owner,
    Key::NextObservation,
    Key::HeldBy,
    Key::PendingProposal,
    Key::LastVerified,
    Key::Observation,
    Key::IntentHash,
    Key::PayloadHash,
    Key::TenantActor,
    Key::ToolAction,
    Key::StatusLookup,
    Key::Autonomy,
    Key::Target,
    Key::Risk,
    Key::Approval,
    Key::IdempotencyKey,
    Key::BusinessKey,
    Key::CorrelationId,
    Key::ProviderRequestIds,
    Key::Refused,
];

/// The pane's lines for the operation `frame` shows.
pub(crate) fn doc(theme: Theme, frame: &Frame, loaded: &Loaded, now: DateTime<Utc>) -> Doc {
    let d = bundle::document(&loaded.bundle);
    let none = Row {
        key: Key::Operation,
        label: String::new(),
        fields: Vec::new(),
    };
    let row = |key: Key| d.row(key).unwrap_or(&none);
    let mut doc = Doc::default();
    let op = row(Key::Operation);
    let state = match op.get("state") {
        Value::State(state) => Some(*state),
        _ => None,
    };
    let since = row(Key::StateSince).get("since").instant();
    doc.push(line(vec![
        span(text(op, "id"), theme.title()),
        span(Clean::new(" "), theme.plain()),
        span(
            text(op, "state"),
            state.map_or_else(|| theme.plain(), |s| theme.state(s)),
        ),
        span(
            Clean::new(&format!(
                " · version {} · in this state since {} ({})",
                op.text("version").unwrap_or_default(),
                since.map_or_else(|| "-".to_owned(), human_instant),
                since.map_or_else(|| "-".to_owned(), |t| relative(t, now))
            )),
            theme.dim(),
        ),
    ]));
    why_held(&mut doc, theme, &d);
    links(&mut doc, theme, frame);

    section(&mut doc, theme, "Decision");
    doc.field(
        theme,
        "failure mode",
        text(row(Key::FailureMode), "mode"),
        theme.plain(),
    );
    if let Some(cause) = d.row(Key::RootCause) {
        doc.field(
            theme,
            "root cause",
            Clean::new(&format!(
                "{} — {}",
                cause.text("layer").unwrap_or_default(),
                cause.text("because").unwrap_or_default()
            )),
            theme.plain(),
        );
    }
    let recommendation = row(Key::Recommendation);
    doc.field(
        theme,
        "recommendation",
        text(recommendation, "decision"),
        theme.title(),
    );
    doc.field(
        theme,
        "  because",
        text(recommendation, "reason"),
        theme.plain(),
    );

    section(&mut doc, theme, "Prohibited now");
    let prohibited: Vec<&Row> = d.all(Key::Prohibited).collect();
    if prohibited.is_empty() {
        doc.push(line(vec![span(
            Clean::new("  nothing beyond the refused actions below"),
            theme.dim(),
        )]));
    }
    for p in prohibited {
        doc.push_indented(
            line(vec![span(
                Clean::new(&format!("  ✗ {}", p.text("what").unwrap_or_default())),
                theme.alert(),
            )]),
            4,
        );
    }

    section(&mut doc, theme, "Actions the core allows now");
    let actions = d.section(SectionKey::Actions).map_or(&[][..], |s| &s.rows);
    let width = actions
        .iter()
        .map(|a| a.label.chars().count())
        .max()
        .unwrap_or(0);
    let indent = u16::try_from(width + 5).unwrap_or(LABEL_WIDTH);
    let allowed: Vec<&Row> = d.all(Key::Allowed).collect();
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
                span(
                    Clean::new(&a.text("effect").unwrap_or_default()),
                    theme.plain(),
                ),
            ]),
            indent,
        );
    }
    section(&mut doc, theme, "Budget and ownership");
    budget(&mut doc, theme, row(Key::Attempts), row(Key::Deadline));
    let owner = row(Key::Owner);
    doc.field(theme, "owner", text(owner, "owner"), theme.plain());
    if let Some(routed) = owner.text("routed as") {
        let of_record = owner
            .text("operation's owner")
            .map_or_else(String::new, |o| format!(" · operation's owner {o}"));
        doc.field(
            theme,
            "routed as",
            Clean::new(&format!("{routed}{of_record}")),
            theme.plain(),
        );
    }
    let next_row = row(Key::NextObservation);
    let next = when_relative(next_row.get("at").instant(), now);
    if next_row.text("overdue").is_some() {
        doc.field(
            theme,
            "next observation",
            Clean::new(&format!("{next} · OVERDUE")),
            theme.alert(),
        );
    } else {
        doc.field(theme, "next observation", Clean::new(&next), theme.plain());
    }
    for held in d.all(Key::HeldBy) {
        doc.field(
            theme,
            "held by",
            Clean::new(&format!(
                "{} ({}): cannot be confirmed to a customer",
                held.text("id").unwrap_or_default(),
                held.text("state").unwrap_or_default()
            )),
            theme.warn(),
        );
    }
    if let Some(p) = row(Key::PendingProposal).text("proposal") {
        doc.field(theme, "pending proposal", Clean::new(&p), theme.warn());
    }

    section(&mut doc, theme, "Verified state");
    let verified = row(Key::LastVerified);
    match (verified.text("what"), verified.get("at").instant()) {
        (Some(what), Some(at)) => doc.field(
            theme,
            "last verified",
            Clean::new(&format!(
                "{what} · {} ({})",
                human_instant(at),
                relative(at, now)
            )),
            theme.plain(),
        ),
        _ => doc.field(
            theme,
            "last verified",
            Clean::new("never observed"),
            theme.warn(),
        ),
    }
    observations(&mut doc, theme, &d);

    section(&mut doc, theme, "Identity and approval");
    doc.field(
        theme,
        "intent hash",
        text(row(Key::IntentHash), "hash"),
        theme.plain(),
    );
    doc.field(
        theme,
        "payload hash",
        text(row(Key::PayloadHash), "hash"),
        theme.plain(),
    );
    let who = row(Key::TenantActor);
    doc.field(theme, "actor", text(who, "actor"), theme.plain());
    doc.field(theme, "tenant", text(who, "tenant"), theme.plain());
    let tool = row(Key::ToolAction);
    doc.field(
        theme,
        "tool / action",
        Clean::new(&format!(
            "{} / {}",
            tool.text("tool").unwrap_or_default(),
            tool.text("action").as_deref().unwrap_or("-")
        )),
        theme.plain(),
    );
    let lookup = row(Key::StatusLookup).text("lookup").unwrap_or_default();
    let lookup_style = if lookup.starts_with("none") {
        theme.warn()
    } else {
        theme.plain()
    };
    doc.field(theme, "status lookup", Clean::new(&lookup), lookup_style);
    doc.field(
        theme,
        "autonomy",
        text(row(Key::Autonomy), "autonomy"),
        theme.plain(),
    );
    doc.field(
        theme,
        "target",
        text(row(Key::Target), "target"),
        theme.plain(),
    );
    if let Value::Risk(risk) = row(Key::Risk).get("risk") {
        let four_eyes = if risk.needs_four_eyes() {
            " (retry and compensation need a second approver)"
        } else {
            ""
        };
        doc.field(
            theme,
            "risk",
            Clean::new(&format!("{risk}{four_eyes}")),
            theme.risk(*risk),
        );
    }
    approval(&mut doc, theme, row(Key::Approval), now);

    section(&mut doc, theme, "Identifiers");
    doc.field(theme, "operation", text(op, "id"), theme.plain());
    idempotency(&mut doc, theme, row(Key::IdempotencyKey), now);
    doc.field(
        theme,
        "business key",
        text(row(Key::BusinessKey), "key"),
        theme.plain(),
    );
    doc.field(
        theme,
        "correlation id",
        text(row(Key::CorrelationId), "id"),
        theme.plain(),
    );
    let ids = row(Key::ProviderRequestIds).all("id");
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
    for a in d.all(Key::Refused) {
        let rule = a.text("rule").map_or_else(String::new, |r| format!("{r} "));
        doc.push_indented(
            line(vec![
                span(
                    Clean::new(&format!("  · {:<width$} ", a.label)),
                    theme.dim(),
                ),
                span(Clean::new(&rule), theme.warn()),
                span(
                    Clean::new(&a.text("reason").unwrap_or_default()),
                    theme.dim(),
                ),
            ]),
            indent,
        );
    }
    for other in d.rows().filter(|r| !PLACED.contains(&r.key)) {
        doc.field(
            theme,
            &other.label,
            Clean::new(&other.plain(str::to_owned)),
            theme.plain(),
        );
    }
    doc
}

/// The value named `name`, sanitized, or `-`.
fn text(row: &Row, name: &str) -> Clean {
    opt(row.text(name).as_deref())
}

/// Why the operation is in its state: the transition into it, its reason and
/// the evidence it names, first of all (DESIGN §4).
fn why_held(doc: &mut Doc, theme: Theme, d: &Document) {
    let Some(why) = d.row(Key::WhyHeld) else {
        return;
    };
    section(doc, theme, &bundle::capitalized(&why.label));
    let Some(transition) = why.text("transition") else {
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
        Clean::new(&format!("{transition} {}", bundle::audit_reference(why))),
        theme.plain(),
    );
    let reason = why.text("reason");
    doc.field(
        theme,
        "reason",
        Clean::new(reason.as_deref().unwrap_or("none given")),
        if reason.is_some() {
            theme.title()
        } else {
            theme.warn()
        },
    );
    let evidence: Vec<&Row> = d.all(Key::Evidence).collect();
    if evidence.is_empty() {
        doc.field(theme, "evidence", Clean::new("none named"), theme.dim());
    }
    for e in evidence {
        let id = e.text("id").unwrap_or_default();
        let text = match e.text("what") {
            Some(what) => format!("{id} ({what})"),
            None => format!("{id} (not among this operation's records)"),
        };
        doc.field(theme, "evidence", Clean::new(&text), theme.plain());
    }
}

/// Each observation: when, from where, what it found, how it compared, its note.
fn observations(doc: &mut Doc, theme: Theme, d: &Document) {
    let observations: Vec<&Row> = d.all(Key::Observation).collect();
    if observations.is_empty() {
        doc.field(theme, "observations", Clean::new("none"), theme.dim());
    }
    for o in observations {
        let found = o.text("found").unwrap_or_default();
        let effects = o.get("effects").number().map_or_else(String::new, |n| {
            format!(" · {n} effect{}", if n == 1 { "" } else { "s" })
        });
        doc.field(
            theme,
            &format!("observation {}", o.text("id").unwrap_or_default()),
            Clean::new(&format!(
                "{} · {} · {found}{effects}",
                o.text("at").unwrap_or_default(),
                o.text("source").unwrap_or_default()
            )),
            if found == "found" {
                theme.plain()
            } else {
                theme.warn()
            },
        );
        if o.get(COMPARED[0]) != &Value::Missing {
            doc.push_indented(matches_line(theme, o), LABEL_WIDTH);
        }
        if let Some(note) = o.text("note") {
            for piece in Clean::lines(&note) {
                doc.field(theme, "  note", piece, theme.dim());
            }
        }
    }
}

/// Who approved, the payload the approval binds and whether it still does.
fn approval(doc: &mut Doc, theme: Theme, a: &Row, now: DateTime<Utc>) {
    if a.is_empty() {
        doc.field(
            theme,
            "approval",
            Clean::new("none recorded"),
            theme.alert(),
        );
        return;
    }
    let or_dash = |name: &str| a.text(name).unwrap_or_else(|| "-".to_owned());
    doc.field(
        theme,
        "approval",
        Clean::new(&format!(
            "{} · policy {} · at {}",
            or_dash("by"),
            or_dash("policy"),
            or_dash("at")
        )),
        theme.plain(),
    );
    doc.field(theme, "  bound payload", text(a, "binds"), theme.plain());
    let status = or_dash("status");
    doc.field(
        theme,
        "  expires",
        Clean::new(&format!(
            "{} · {status}",
            when_relative(a.get("expires").instant(), now),
        )),
        if status == "valid" {
            theme.good()
        } else {
            theme.alert()
        },
    );
}

/// The idempotency key, how long it protects a repeat, and any conflict.
fn idempotency(doc: &mut Doc, theme: Theme, k: &Row, now: DateTime<Utc>) {
    if k.is_empty() {
        doc.field(theme, "idempotency key", Clean::new("none"), theme.dim());
        return;
    }
    let retention = k.text("retention");
    doc.field(
        theme,
        "idempotency key",
        Clean::new(&format!(
            "{} · scope {} · retention {}",
            k.text("key").unwrap_or_default(),
            k.text("scope").as_deref().unwrap_or("-"),
            retention.as_deref().unwrap_or("-")
        )),
        theme.plain(),
    );
    let (text, style) = match k.get("until").instant() {
        Some(t) if k.text("expired").is_some() => (
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
        None => match retention {
            Some(h) => (
                format!("{h} from the first request (none sent yet)"),
                theme.plain(),
            ),
            None => (
                "no retention documented by the contract".to_owned(),
                theme.warn(),
            ),
        },
    };
    doc.field(theme, "  protects", Clean::new(&text), style);
    let conflicts = k.all("conflict");
    if !conflicts.is_empty() {
        doc.field(
            theme,
            "  key conflict",
            Clean::new(&format!(
                "same key, other payload: {}",
                conflicts.join(", ")
            )),
            theme.alert(),
        );
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
fn matches_line(theme: Theme, o: &Row) -> ratatui::text::Line<'static> {
    let mut parts = vec![span(
        Clean::new(&" ".repeat(usize::from(LABEL_WIDTH))),
        theme.plain(),
    )];
    for name in COMPARED {
        let (mark, style) = match o.text(name).as_deref() {
            Some("match") => ("✓", theme.good()),
            Some("differs") => ("✗", theme.alert()),
            _ => ("?", theme.warn()),
        };
        parts.push(span(Clean::new(&format!("{name} ")), theme.label()));
        parts.push(span(Clean::new(&format!("{mark}  ")), style));
    }
    line(parts)
}

fn budget(doc: &mut Doc, theme: Theme, attempts: &Row, deadline: &Row) {
    let number = |name: &str| attempts.get(name).number().unwrap_or(0);
    let max = attempts.text("max").unwrap_or_else(|| "-".to_owned());
    let queries = number("status queries");
    let refused = number("refused");
    let held_back = if refused == 0 {
        String::new()
    } else {
        format!(" · {refused} refused by the gateway, not counted")
    };
    let text = format!(
        "{} of {max} used{held_back} · {queries} status quer{}",
        number("used"),
        if queries == 1 { "y" } else { "ies" }
    );
    let exhausted = attempts.text("exhausted");
    let style = if exhausted.is_some() {
        theme.alert()
    } else {
        theme.plain()
    };
    doc.field(theme, "attempts", Clean::new(&text), style);
    if let Some(why) = &exhausted {
        doc.field(theme, "  exhausted", Clean::new(why), theme.alert());
    }
    let (text, style) = match (
        deadline.get("at").instant(),
        deadline.get("seconds left").number(),
    ) {
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
