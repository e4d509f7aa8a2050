//! Plain-text renderings for the command line: the operation list, the evidence
//! bundle and the attempt timeline. Every value that came from outside passes the
//! sanitizer before it is printed (G10).

use chrono::{DateTime, Utc};
use std::fmt::Write as _;

use crate::core::clock::{format_instant, human_duration};
use crate::core::evidence::{EvidenceBundle, describe_observation};
use crate::core::model::{AttemptKind, OperationDetail, OperationRow};
use crate::core::sanitize::sanitize;

fn clean(text: &str) -> String {
    sanitize(text).into_owned()
}

fn opt(text: Option<&str>) -> String {
    text.map_or_else(|| "-".to_owned(), clean)
}

fn when(at: Option<DateTime<Utc>>) -> String {
    at.map_or_else(|| "-".to_owned(), format_instant)
}

/// Pads or cuts `text` to `width` characters.
fn cell(text: &str, width: usize) -> String {
    let count = text.chars().count();
    if count > width {
        let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
        cut.push('…');
        cut
    } else {
        format!("{text:<width$}")
    }
}

/// The queue as a table, one line per operation.
pub fn list(rows: &[OperationRow], total: u64, now: DateTime<Utc>) -> String {
    let mut out = String::new();
    let header = [
        ("STATE", 10),
        ("ID", 10),
        ("TENANT", 10),
        ("TOOL/ACTION", 22),
        ("MODE", 17),
        ("RISK", 8),
        ("OWNER", 13),
        ("HELD", 7),
        ("NEXT OBS", 9),
        ("ATT", 5),
        ("LEFT", 7),
    ];
    let line: Vec<String> = header.iter().map(|(h, w)| cell(h, *w)).collect();
    let _ = writeln!(out, "{}", line.join(" ").trim_end());
    for row in rows {
        let op = &row.operation;
        let state = if row.held_dependencies.is_empty() {
            op.state.to_string()
        } else {
            format!("{}*", op.state)
        };
        let next = match op.next_observation_at {
            Some(t) if t < now && op.state.is_held() => {
                format!("!{}", human_duration((now - t).num_seconds()))
            }
            Some(t) => human_duration((t - now).num_seconds()),
            None => "-".into(),
        };
        let attempts = format!(
            "{}/{}",
            row.attempts_used,
            row.max_attempts
                .map_or_else(|| "-".into(), |m| m.to_string())
        );
        let left = op
            .deadline
            .map_or_else(|| "-".into(), |d| human_duration((d - now).num_seconds()));
        let cells = [
            (state, 10),
            (clean(op.id.as_str()), 10),
            (clean(&op.tenant), 10),
            (clean(&format!("{}/{}", op.tool, op.action)), 22),
            (op.failure_mode.map_or("-", |m| m.as_str()).to_owned(), 17),
            (op.risk.to_string(), 8),
            (clean(&op.owner), 13),
            (human_duration((now - row.state_since).num_seconds()), 7),
            (next, 9),
            (attempts, 5),
            (left, 7),
        ];
        let line: Vec<String> = cells.iter().map(|(c, w)| cell(c, *w)).collect();
        let _ = writeln!(out, "{}", line.join(" ").trim_end());
    }
    let _ = writeln!(
        out,
        "{} of {total} shown{}",
        rows.len(),
        if rows.iter().any(|r| !r.held_dependencies.is_empty()) {
            "; * held by a dependency; ! overdue observation"
        } else {
            "; ! overdue observation"
        }
    );
    out
}

/// The evidence bundle as labelled sections.
pub fn bundle(b: &EvidenceBundle, now: DateTime<Utc>) -> String {
    let mut out = String::new();
    let mut field = |name: &str, value: String| {
        let _ = writeln!(out, "  {name:<22} {value}");
    };
    field(
        "operation",
        format!(
            "{} ({}, version {})",
            clean(b.id.as_str()),
            b.state,
            b.version
        ),
    );
    field(
        "in state since",
        format!(
            "{} ({} ago)",
            format_instant(b.state_since),
            human_duration((now - b.state_since).num_seconds())
        ),
    );
    field(
        "tenant / actor",
        format!("{} / {}", clean(&b.tenant), clean(&b.actor)),
    );
    field(
        "tool / action",
        format!("{} / {}", clean(&b.tool), clean(&b.action)),
    );
    field("target", clean(&b.target));
    field("risk", b.risk.to_string());
    field(
        "intent hash",
        b.intent_hash
            .as_ref()
            .map_or_else(|| "-".into(), ToString::to_string),
    );
    field("payload hash", b.payload_hash.to_string());
    match &b.approval {
        Some(a) => {
            field(
                "approval",
                format!(
                    "{} under {} at {}",
                    clean(&a.by),
                    clean(&a.policy),
                    when(a.at)
                ),
            );
            field(
                "  binds payload",
                a.payload_hash
                    .as_ref()
                    .map_or_else(|| "-".into(), ToString::to_string),
            );
            field(
                "  expires",
                format!("{} ({})", when(a.expires_at), clean(&a.status)),
            );
        }
        None => field("approval", "none recorded".into()),
    }
    match &b.idempotency {
        Some(k) => {
            field(
                "idempotency key",
                format!(
                    "{} (scope {}, retention {})",
                    clean(&k.key),
                    opt(k.scope.as_deref()),
                    k.retention_hours
                        .map_or_else(|| "-".into(), |h| format!("{h}h"))
                ),
            );
            field(
                "  key protects until",
                format!(
                    "{}{}",
                    when(k.expires_at),
                    if k.expired { " (expired)" } else { "" }
                ),
            );
            if !k.conflicts.is_empty() {
                let ids: Vec<String> = k.conflicts.iter().map(|i| clean(i.as_str())).collect();
                field(
                    "  key conflict",
                    format!("same key, other payload: {}", ids.join(", ")),
                );
            }
        }
        None => field("idempotency key", "-".into()),
    }
    field("business key", opt(b.business_key.as_deref()));
    field("correlation id", opt(b.correlation_id.as_deref()));
    field(
        "last verified",
        b.last_verified.as_ref().map_or_else(
            || "never observed".into(),
            |(what, at)| format!("{} at {}", clean(what), format_instant(*at)),
        ),
    );
    let ids: Vec<String> = b.provider_request_ids.iter().map(|i| clean(i)).collect();
    field(
        "provider request ids",
        if ids.is_empty() {
            "-".into()
        } else {
            ids.join(", ")
        },
    );
    let budget = &b.budget;
    field(
        "attempts",
        format!(
            "{} of {} used, {} status queries{}",
            budget.attempts_used,
            budget
                .max_attempts
                .map_or_else(|| "-".into(), |m| m.to_string()),
            budget.status_queries,
            budget
                .exhausted
                .as_ref()
                .map_or_else(String::new, |e| format!(" — {e}"))
        ),
    );
    field(
        "deadline",
        match (budget.deadline, budget.seconds_left) {
            (Some(d), Some(s)) if s >= 0 => {
                format!("{} ({} left)", format_instant(d), human_duration(s))
            }
            (Some(d), Some(s)) => {
                format!("{} (passed {} ago)", format_instant(d), human_duration(-s))
            }
            _ => "-".into(),
        },
    );
    field("owner", clean(&b.owner));
    field(
        "next observation",
        format!(
            "{}{}",
            when(b.next_observation_at),
            if b.next_observation_overdue {
                " (OVERDUE)"
            } else {
                ""
            }
        ),
    );
    field(
        "failure mode",
        b.failure_mode.map_or("-", |m| m.as_str()).to_owned(),
    );
    field(
        "recommendation",
        format!(
            "{} — {}",
            b.recommendation.decision, b.recommendation.reason
        ),
    );
    if let Some((parent, relation)) = &b.parent {
        field("parent", format!("{} ({relation})", clean(parent.as_str())));
    }
    for child in &b.children {
        field(
            "child",
            format!(
                "{} ({}, {})",
                clean(child.id.as_str()),
                child.relation,
                child.state
            ),
        );
    }
    for (dep, state) in &b.held_by {
        field(
            "held by dependency",
            format!("{} ({state})", clean(dep.as_str())),
        );
    }
    if let Some(p) = &b.pending_proposal {
        field("pending proposal", clean(p));
    }
    let _ = writeln!(out, "\n  observations");
    if b.observations.is_empty() {
        let _ = writeln!(out, "    none");
    }
    for o in &b.observations {
        let _ = writeln!(
            out,
            "    {} {} {}{}",
            clean(&o.id),
            format_instant(o.observed_at),
            clean(&o.describe()),
            o.note
                .as_deref()
                .map_or_else(String::new, |n| format!(" — {}", clean(n)))
        );
    }
    let _ = writeln!(out, "\n  prohibited now");
    for p in &b.prohibited {
        let _ = writeln!(out, "    ✗ {}", clean(p));
    }
    let _ = writeln!(out, "\n  actions");
    for a in &b.actions {
        if a.allowed {
            let _ = writeln!(
                out,
                "    ✓ {:<24} {}",
                a.label,
                a.effect.as_deref().unwrap_or("")
            );
        } else {
            let _ = writeln!(
                out,
                "    · {:<24} {} {}",
                a.label,
                a.rule.map_or_else(String::new, |r| r.to_string()),
                clean(a.reason.as_deref().unwrap_or(""))
            );
        }
    }
    out
}

/// The attempts and status queries in order, with durations and gaps, and the
/// observations, next observation and deadline placed among them.
pub fn timeline(detail: &OperationDetail, now: DateTime<Utc>) -> String {
    let op = &detail.row.operation;
    let mut out = String::new();
    let requests = detail
        .attempts
        .iter()
        .filter(|a| a.kind == AttemptKind::Request)
        .count();
    let queries = detail.attempts.len() - requests;
    let _ = writeln!(
        out,
        "{} — 1 logical operation, {} physical rows ({requests} requests, {queries} status queries)",
        clean(op.id.as_str()),
        detail.attempts.len()
    );
    let origin = op.created_at;
    let offset = |t: DateTime<Utc>| format!("+{}", human_duration((t - origin).num_seconds()));
    let _ = writeln!(
        out,
        "  {:<9} created {}",
        offset(origin),
        format_instant(origin)
    );
    enum Event<'a> {
        Attempt(&'a crate::core::model::Attempt),
        Observation(&'a crate::core::model::Observation),
        Mark(&'static str, DateTime<Utc>),
    }
    let mut events: Vec<(DateTime<Utc>, Event)> = Vec::new();
    events.extend(
        detail
            .attempts
            .iter()
            .map(|a| (a.started_at, Event::Attempt(a))),
    );
    events.extend(
        detail
            .observations
            .iter()
            .map(|o| (o.observed_at, Event::Observation(o))),
    );
    if let Some(t) = op.next_observation_at {
        events.push((t, Event::Mark("next observation", t)));
    }
    if let Some(t) = crate::core::matrix::assess_detail(detail, now).deadline {
        events.push((t, Event::Mark("deadline", t)));
    }
    events.push((now, Event::Mark("now", now)));
    events.sort_by_key(|(t, _)| *t);
    let mut previous_end: Option<DateTime<Utc>> = None;
    for (at, event) in events {
        match event {
            Event::Attempt(a) => {
                let gap = previous_end
                    .map(|p| format!(" gap {}", human_duration((a.started_at - p).num_seconds())))
                    .unwrap_or_default();
                let duration = a.ended_at.map_or_else(
                    || "open".into(),
                    |e| human_duration((e - a.started_at).num_seconds()),
                );
                let _ = writeln!(
                    out,
                    "  {:<9} #{} {} {} via {}: phase {}, {}{} ({duration}{gap})",
                    offset(at),
                    a.seq,
                    clean(&a.id),
                    a.kind,
                    a.layer.map_or("-", |l| l.as_str()),
                    a.phase,
                    a.outcome,
                    a.http_status
                        .map_or_else(String::new, |s| format!(" HTTP {s}"))
                );
                let _ = writeln!(
                    out,
                    "  {:<9}   provider id {}, resend {}, replayed {}{}{}",
                    "",
                    opt(a.provider_request_id.as_deref()),
                    a.resend_count.map_or_else(|| "-".into(), |n| n.to_string()),
                    a.replayed.map_or_else(|| "-".into(), |r| r.to_string()),
                    a.error_type
                        .as_deref()
                        .map_or_else(String::new, |e| format!(", error {}", clean(e))),
                    a.retry_after.map_or_else(String::new, |r| format!(
                        ", Retry-After until {} (wait {})",
                        format_instant(r),
                        human_duration((r - a.last_instant()).num_seconds())
                    ))
                );
                if let Some(excerpt) = &a.response_excerpt {
                    let _ = writeln!(
                        out,
                        "  {:<9}   quarantined output: «{}»",
                        "",
                        clean(excerpt)
                    );
                }
                previous_end = Some(a.last_instant());
            }
            Event::Observation(o) => {
                let _ = writeln!(
                    out,
                    "  {:<9} observation {}: {}",
                    offset(at),
                    clean(&o.id),
                    clean(&describe_observation(o))
                );
            }
            Event::Mark(name, t) => {
                let _ = writeln!(out, "  {:<9} — {name} {}", offset(at), format_instant(t));
            }
        }
    }
    out
}
