//! Plain-text renderings for the command line: the operation list, the evidence
//! bundle and the attempt timeline. Every value that came from outside passes the
//! sanitizer before it is printed (G10).

use chrono::{DateTime, Utc};
use std::fmt::Write as _;

use crate::core::access::{GrantChange, GrantOp, GrantRequest};
use crate::core::audit::AuditRow;
use crate::core::bundle::{self, Key, SectionKey, Value};
use crate::core::clock::{human_duration, human_instant, relative};
use crate::core::detail::OperationDetail;
use crate::core::evidence::{EvidenceBundle, describe_observation};
use crate::core::model::{AttemptKind, Grant, OperationRow};
use crate::core::names::count;
use crate::core::rules::{ActionKind, Actor, Effect, Refusal};
use crate::core::sanitize::sanitize;
use crate::core::triage::{Bucket, TriageLine};
use crate::review::{Applied, ReviewError};

/// `text` sanitized for the terminal (G10).
pub(crate) fn clean(text: &str) -> String {
    sanitize(text).into_owned()
}

fn opt(text: Option<&str>) -> String {
    text.map_or_else(|| "-".to_owned(), clean)
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
pub(crate) fn list(rows: &[OperationRow], total: u64, now: DateTime<Utc>) -> String {
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
        let state = format!(
            "{}{}{}",
            op.state,
            if row.held_dependencies.is_empty() {
                ""
            } else {
                "*"
            },
            if row.pending_proposal { "+" } else { "" }
        );
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
        // As the console's queue says it: a deadline behind us has passed.
        let left = match op.deadline {
            Some(d) if d <= now => "passed".to_owned(),
            Some(d) => human_duration((d - now).num_seconds()),
            None => "-".into(),
        };
        let cells = [
            (state, 10),
            (clean(op.id.as_str()), 10),
            (clean(&op.tenant), 10),
            (
                clean(&crate::core::names::tool_and_action(&op.tool, &op.action)),
                22,
            ),
            (op.failure_mode.map_or("-", |m| m.as_str()).to_owned(), 17),
            (op.risk.to_string(), 8),
            (clean(row.owner()), 13),
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
        "{} of {total} shown{}{}; ! overdue observation",
        rows.len(),
        if rows.iter().any(|r| !r.held_dependencies.is_empty()) {
            "; * held by a dependency"
        } else {
            ""
        },
        if rows.iter().any(|r| r.pending_proposal) {
            "; + proposal pending a second approver"
        } else {
            ""
        }
    );
    out
}

/// The first line of `list` and `show`: who is acting, with which rights (or
/// single-user mode).
pub(crate) fn actor_header(actor: &Actor) -> String {
    format!("acting as {}\n", clean(&actor.describe()))
}

/// The exact effect of an action: applied with its audit row, or a preview.
pub(crate) fn effect(effect: &Effect, row: Option<&AuditRow>) -> String {
    let mut out = String::new();
    let id = clean(effect.commit.operation.as_str());
    let headline = match (row, effect.proposal_only) {
        (Some(_), true) => "proposal opened",
        (Some(_), false) => "applied",
        (None, true) => "dry run, nothing written — would open a proposal",
        (None, false) => "dry run, nothing written — would apply",
    };
    let _ = writeln!(out, "{headline}: {} on {id}", effect.action);
    let _ = writeln!(
        out,
        "  state      {}",
        match effect.to {
            Some(to) => format!("{} → {to}", effect.from),
            None => format!("{} (unchanged)", effect.from),
        }
    );
    for c in &effect.consequences {
        let _ = writeln!(out, "  effect     {}", clean(c));
    }
    for child in &effect.commit.children {
        let _ = writeln!(
            out,
            "  creates    {} ({}, {}) in {}",
            clean(child.id.as_str()),
            clean(&child.action),
            child.relation.map_or("-", |r| r.as_str()),
            child.state
        );
    }
    for p in &effect.still_prohibited {
        let _ = writeln!(out, "  prohibited {}", clean(p));
    }
    let draft = row.map_or(&effect.commit.audit, |r| &r.draft);
    let _ = writeln!(
        out,
        "  audit      {}{} by {} in role {}, policy {}, at {}",
        row.map_or_else(|| "would write ".to_owned(), |r| format!("seq {} ", r.seq)),
        clean(&draft.action),
        clean(&draft.by),
        draft.role,
        opt(draft.policy.as_deref()),
        human_instant(draft.at)
    );
    if !draft.evidence.is_empty() {
        let evidence: Vec<String> = draft.evidence.iter().map(|e| clean(e)).collect();
        let _ = writeln!(out, "  evidence   {}", evidence.join(", "));
    }
    let _ = writeln!(out, "  rationale  {}", opt(draft.rationale.as_deref()));
    if let Some(r) = row {
        let _ = writeln!(out, "  hash       {}", r.hash);
    }
    out
}

/// What an action would do to one triaged operation, in a few words.
fn outcome_words(outcome: &Result<Effect, Refusal>) -> String {
    match outcome {
        Ok(e) if e.proposal_only => "would open a proposal".into(),
        Ok(e) => match e.to {
            Some(to) => format!("would apply: {} → {to}", e.from),
            None => "would apply (no state change)".into(),
        },
        Err(r) => format!("refused: {}: {}", r.rule, clean(&r.reason)),
    }
}

/// The dry run of bulk triage: the selection split into the four buckets, each
/// operation with why it is there and what the action would do.
pub(crate) fn triage(filter: &str, action: ActionKind, lines: &[TriageLine]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "dry run, nothing written: {action} on {} operation{} matching `{}`",
        lines.len(),
        if lines.len() == 1 { "" } else { "s" },
        clean(if filter.is_empty() {
            "the held queue"
        } else {
            filter
        })
    );
    for bucket in [
        Bucket::RetryEligible,
        Bucket::NeedsReconciliation,
        Bucket::NeedsCompensation,
        Bucket::Blocked,
    ] {
        let members: Vec<&TriageLine> = lines.iter().filter(|l| l.bucket == bucket).collect();
        let _ = writeln!(out, "\n{} ({})", bucket.title(), members.len());
        for line in members {
            let _ = writeln!(
                out,
                "  {:<10} {:<11} {}",
                clean(line.id.as_str()),
                line.state.as_str(),
                clean(&line.why)
            );
            let _ = writeln!(
                out,
                "  {:<10} {:<11} {action}: {}",
                "",
                "",
                outcome_words(&line.outcome)
            );
        }
    }
    out
}

/// Bulk triage applied, first line: the action and how many operations it goes to.
pub(crate) fn triage_applied_header(filter: &str, action: ActionKind, n: usize) -> String {
    format!(
        "{action} on {n} operation{} matching `{}`\n",
        if n == 1 { "" } else { "s" },
        clean(if filter.is_empty() {
            "the held queue"
        } else {
            filter
        })
    )
}

/// Bulk triage applied: one operation's result, written as it is applied.
pub(crate) fn triage_applied_line(
    line: &TriageLine,
    result: &Result<Applied, ReviewError>,
) -> String {
    let text = match result {
        Ok(a) => {
            let what = match (a.effect.proposal_only, a.effect.to) {
                (true, _) => "proposal opened".to_owned(),
                (false, Some(to)) => format!("{} → {to}", a.effect.from),
                (false, None) => "recorded".to_owned(),
            };
            format!("applied  {what}, audit seq {}", a.audit.seq)
        }
        Err(e) => clean(&e.to_string()),
    };
    format!(
        "  {:<10} {:<20} {text}\n",
        clean(line.id.as_str()),
        line.bucket.title()
    )
}

/// Bulk triage applied, last line: the totals.
pub(crate) fn triage_applied_totals(applied: usize, not_applied: usize) -> String {
    format!("{applied} applied, {not_applied} not applied\n")
}

/// The result of `grant` or `revoke`.
pub(crate) fn grant_change(
    request: &GrantRequest,
    changed: Option<&(GrantChange, AuditRow)>,
) -> String {
    let mut out = String::new();
    let (identity, tenant) = (clean(&request.identity), clean(&request.tenant));
    match changed {
        None => {
            let _ = writeln!(
                out,
                "nothing to change: {identity} {} {} on {tenant}",
                if request.op == GrantOp::Grant {
                    "already holds"
                } else {
                    "does not hold"
                },
                request.role
            );
        }
        Some((change, row)) => {
            let _ = writeln!(
                out,
                "{}ed: {} {identity} on {tenant}",
                change.op.as_str(),
                request.role
            );
            for c in &change.consequences {
                let _ = writeln!(out, "  {}", clean(c));
            }
            let _ = writeln!(
                out,
                "  audit seq {} by {} in role {}, hash {}",
                row.seq,
                clean(&row.draft.by),
                row.draft.role,
                row.hash
            );
        }
    }
    out
}

/// The grants as a table.
pub(crate) fn grants(grants: &[Grant], single_user: bool) -> String {
    let mut out = String::new();
    if single_user {
        let _ = writeln!(
            out,
            "no grants: single-user mode — whoever opens this store may do everything; `holdfast grant YOU --role owner --tenant T` ends it"
        );
        return out;
    }
    let header = [
        ("TENANT", 16),
        ("IDENTITY", 20),
        ("ROLE", 9),
        ("GRANTED BY", 20),
    ];
    let line: Vec<String> = header.iter().map(|(h, w)| cell(h, *w)).collect();
    let _ = writeln!(out, "{} GRANTED AT", line.join(" "));
    for g in grants {
        let cells = [
            (clean(&g.tenant), 16),
            (clean(&g.identity), 20),
            (g.role.to_string(), 9),
            (clean(&g.granted_by), 20),
        ];
        let line: Vec<String> = cells.iter().map(|(c, w)| cell(c, *w)).collect();
        let _ = writeln!(out, "{} {}", line.join(" "), human_instant(g.granted_at));
    }
    out
}

/// A lookup's result, field by field.
pub(crate) fn lookup(call: &crate::core::lookup::LookupCall) -> String {
    let mut out = String::new();
    for (label, value) in call.rows() {
        let _ = writeln!(out, "  {label:<22} {}", clean(&value));
    }
    out
}

/// The evidence bundle as labelled lines, then its observations, what is
/// prohibited and the actions, in the order of its [`bundle::Document`].
pub(crate) fn bundle(b: &EvidenceBundle, now: DateTime<Utc>) -> String {
    let doc = bundle::document(b);
    let mut out = String::new();
    let mut field = |name: &str, value: String| {
        let _ = writeln!(out, "  {name:<22} {value}");
    };
    let instant = |v: &Value| v.instant().map(|t| (human_instant(t), relative(t, now)));
    let fields = doc.section(SectionKey::Fields).map_or(&[][..], |s| &s.rows);
    for row in fields {
        let text = |name: &str| row.text(name);
        let cleaned = |name: &str| opt(row.text(name).as_deref());
        match row.key {
            Key::Operation => field(
                &row.label,
                format!(
                    "{} ({}, version {})",
                    cleaned("id"),
                    text("state").unwrap_or_default(),
                    text("version").unwrap_or_default()
                ),
            ),
            Key::WhyHeld => {
                if let Some(transition) = text("transition") {
                    field(
                        &row.label,
                        format!(
                            "{} {}{}",
                            clean(&transition),
                            clean(&bundle::audit_reference(row)),
                            text("reason").map_or_else(String::new, |r| format!(": {}", clean(&r)))
                        ),
                    );
                }
            }
            Key::Evidence => field(
                "  evidence",
                match text("what") {
                    Some(what) => format!("{} ({})", cleaned("id"), clean(&what)),
                    None => cleaned("id"),
                },
            ),
            Key::StateSince => {
                if let Some((at, ago)) = instant(row.get("since")) {
                    field(&row.label, format!("{at} ({ago})"));
                }
            }
            Key::TenantActor => field(
                &row.label,
                format!("{} / {}", cleaned("tenant"), cleaned("actor")),
            ),
            Key::ToolAction => field(
                &row.label,
                format!("{} / {}", cleaned("tool"), cleaned("action")),
            ),
            Key::Approval if row.is_empty() => field(&row.label, "none recorded".into()),
            Key::Approval => {
                field(
                    &row.label,
                    format!(
                        "{} under {} at {}",
                        cleaned("by"),
                        cleaned("policy"),
                        text("at").unwrap_or_else(|| "-".into())
                    ),
                );
                field(
                    "  binds payload",
                    text("binds").unwrap_or_else(|| "-".into()),
                );
                field(
                    "  expires",
                    format!(
                        "{} ({})",
                        text("expires").unwrap_or_else(|| "-".into()),
                        cleaned("status")
                    ),
                );
            }
            Key::IdempotencyKey if row.is_empty() => field(&row.label, "-".into()),
            Key::IdempotencyKey => {
                field(
                    &row.label,
                    format!(
                        "{} (scope {}, retention {})",
                        cleaned("key"),
                        cleaned("scope"),
                        text("retention").unwrap_or_else(|| "-".into())
                    ),
                );
                field(
                    "  key protects until",
                    format!(
                        "{}{}",
                        text("until").unwrap_or_else(|| "-".into()),
                        if text("expired").is_some() {
                            " (expired)"
                        } else {
                            ""
                        }
                    ),
                );
                let ids: Vec<String> = row.all("conflict").iter().map(|i| clean(i)).collect();
                if !ids.is_empty() {
                    field(
                        "  key conflict",
                        format!("same key, other payload: {}", ids.join(", ")),
                    );
                }
            }
            Key::LastVerified => field(
                &row.label,
                match text("what") {
                    None => "never observed".into(),
                    Some(what) => format!("{} at {}", clean(&what), text("at").unwrap_or_default()),
                },
            ),
            Key::Attempts => field(&row.label, bundle::attempts_summary(row)),
            Key::Deadline => field(
                &row.label,
                match (row.get("at").instant(), row.get("seconds left").number()) {
                    (Some(d), Some(s)) if s >= 0 => {
                        format!("{} ({} left)", human_instant(d), human_duration(s))
                    }
                    (Some(d), Some(s)) => {
                        format!("{} (passed {} ago)", human_instant(d), human_duration(-s))
                    }
                    _ => "-".into(),
                },
            ),
            Key::NextObservation => field(
                &row.label,
                match instant(row.get("at")) {
                    None => "-".to_owned(),
                    Some((at, ago)) => format!(
                        "{at} ({ago}{})",
                        if text("overdue").is_some() {
                            ", OVERDUE"
                        } else {
                            ""
                        }
                    ),
                },
            ),
            Key::Recommendation => field(
                &row.label,
                format!(
                    "{} — {}",
                    text("decision").unwrap_or_default(),
                    text("reason").unwrap_or_default()
                ),
            ),
            Key::Parent => field(
                &row.label,
                format!(
                    "{} ({})",
                    cleaned("id"),
                    text("relation").unwrap_or_default()
                ),
            ),
            Key::Child => field(
                &row.label,
                format!(
                    "{} ({}, {})",
                    cleaned("id"),
                    text("relation").unwrap_or_default(),
                    text("state").unwrap_or_default()
                ),
            ),
            Key::HeldBy => field(
                &row.label,
                format!("{} ({})", cleaned("id"), text("state").unwrap_or_default()),
            ),
            Key::PendingProposal if row.is_empty() => {}
            _ => field(&row.label, row.plain(clean)),
        }
    }
    for section in doc.sections.iter().filter(|s| s.key != SectionKey::Fields) {
        let _ = writeln!(out, "\n  {}", section.title);
        if section.key == SectionKey::Observations && section.rows.is_empty() {
            let _ = writeln!(out, "    none");
        }
        for row in &section.rows {
            let text = |name: &str| row.text(name).unwrap_or_default();
            let _ = match row.key {
                Key::Observation => writeln!(
                    out,
                    "    {} {} {}{}",
                    clean(&text("id")),
                    text("at"),
                    clean(&text("what")),
                    row.text("note")
                        .map_or_else(String::new, |n| format!(" — {}", clean(&n)))
                ),
                Key::Prohibited => writeln!(out, "    ✗ {}", clean(&text("what"))),
                Key::Allowed => writeln!(out, "    ✓ {:<24} {}", row.label, text("effect")),
                Key::Refused => writeln!(
                    out,
                    "    · {:<24} {} {}",
                    row.label,
                    text("rule"),
                    clean(&text("reason"))
                ),
                _ => writeln!(out, "    {} {}", clean(&row.label), row.plain(clean)),
            };
        }
    }
    out
}

/// The values of an operation's records that ingest redacted: where each was, the
/// kinds, the protected sample and the SHA-256 of the value as received, so that
/// whoever holds the original can check it. Empty when there are none.
pub(crate) fn redactions(list: &[crate::core::redact::IngestRedaction]) -> String {
    if list.is_empty() {
        return String::new();
    }
    let mut out = String::from("\n  redacted at ingest\n");
    for r in list {
        let _ = writeln!(
            out,
            "    {} {} {}: {} — {} — {} as received",
            clean(&r.record),
            clean(&r.record_key),
            clean(&r.path),
            clean(&r.kinds.join(", ")),
            clean(&r.sample),
            r.value_sha256
        );
    }
    out
}

/// The attempts and status queries in order, with durations and gaps, and the
/// observations, next observation and deadline placed among them.
pub(crate) fn timeline(detail: &OperationDetail, now: DateTime<Utc>) -> String {
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
        "{} — 1 logical operation, {} ({}, {})",
        clean(op.id.as_str()),
        count(detail.attempts.len(), "physical row", "physical rows"),
        count(requests, "request", "requests"),
        count(queries, "status query", "status queries")
    );
    let origin = op.created_at;
    let offset = |t: DateTime<Utc>| format!("+{}", human_duration((t - origin).num_seconds()));
    let _ = writeln!(
        out,
        "  {:<9} created {}",
        offset(origin),
        human_instant(origin)
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
                        human_instant(r),
                        human_duration((r - a.last_instant()).num_seconds())
                    ))
                );
                if let Some(url) = &a.url {
                    let _ = writeln!(out, "  {:<9}   url {}", "", clean(url));
                }
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
                let _ = writeln!(out, "  {:<9} — {name} {}", offset(at), human_instant(t));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::bundle::{COMPARED, Key, Value};
    use crate::core::evidence;
    use crate::core::export;
    use crate::store::{IngestMode, Location, OperationFilter, SortOrder};
    use crate::tui::doc::evidence::doc as console_doc;
    use crate::tui::opened::{Frame, Loaded};
    use crate::tui::theme::Theme;

    /// The demo packet in a fresh store: every operation's detail, and the
    /// packet's own instant.
    async fn demo() -> (Vec<crate::core::detail::OperationDetail>, DateTime<Utc>) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Location::Sqlite(dir.path().join("demo.db"))
            .open()
            .await
            .expect("store");
        let parsed = crate::wire::parse_stream(crate::DEMO_PACKET.as_bytes(), &mut |_| {})
            .expect("the demo packet parses");
        let now =
            crate::cli::commands::console::latest_instant(parsed.records.iter().map(|n| &n.record))
                .expect("the demo has an instant");
        store
            .ingest(parsed.records, IngestMode::Strict, "holdfast-demo", now)
            .await
            .expect("ingest");
        let ids = store
            .matching_ids(&OperationFilter::default(), SortOrder::default())
            .await
            .expect("ids");
        let mut details = Vec::new();
        for id in &ids {
            details.push(
                store
                    .detail(&crate::store::Scope::Every, id)
                    .await
                    .expect("detail"),
            );
        }
        (details, now)
    }

    /// Markdown as text: its escapes undone.
    fn unescaped(markdown: &str) -> String {
        let mut out = String::new();
        let mut chars = markdown.chars();
        while let Some(c) = chars.next() {
            if c == '\\' {
                out.extend(chars.next());
            } else {
                out.push(c);
            }
        }
        out.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
    }

    #[tokio::test]
    async fn console_show_and_export_print_every_value_of_the_document() {
        let (details, now) = demo().await;
        assert!(details.len() > 20, "the demo holds every kind of hold");
        let actor = Actor::local("ana", None);
        let mut checked = 0;
        for detail in details {
            let loaded = Loaded::new(detail.clone(), &actor, now);
            let bundle = loaded.bundle.clone();
            let mut frame = Frame::new(bundle.id.clone());
            frame.loaded = Some(loaded);
            let console: String = frame
                .loaded
                .as_ref()
                .map(|l| console_doc(Theme { color: false }, &frame, l, now))
                .expect("loaded")
                .wrap(u16::MAX)
                .iter()
                .map(|line| {
                    let text: String = line.spans.iter().map(|s| s.content.as_ref()).collect();
                    text + "\n"
                })
                .collect();
            let show = super::bundle(&bundle, now);
            let exported = export::bundle_export(&detail, &actor, now);
            let markdown = unescaped(&export::markdown_bundle(&exported));
            let json = serde_json::to_string(&exported).expect("json");
            let document = crate::core::bundle::document(&evidence::bundle(&detail, &actor, now));
            for row in document.rows() {
                for field in &row.fields {
                    // Details each layout words its own way: the comparison of an
                    // observation field by field (show and the export say it in
                    // the observation's words, which the console spells out part
                    // by part), and the time to the deadline.
                    let detail_only = (row.key == Key::Observation
                        && COMPARED.contains(&field.name))
                        || (row.key == Key::Deadline && field.name == "seconds left");
                    let Some(value) = field.value.text() else {
                        continue;
                    };
                    if detail_only {
                        continue;
                    }
                    // A warning may be shouted (`OVERDUE`) or not.
                    let value = clean(&value).to_lowercase();
                    let in_words = row.key == Key::Observation && field.name == "what";
                    for (name, text) in [
                        ("console", &console),
                        ("show", &show),
                        ("export", &markdown),
                    ] {
                        if in_words && name == "console" {
                            continue;
                        }
                        // The console prints a note line by line.
                        let text = text.to_lowercase();
                        let found = value.split('␊').all(|piece| text.contains(piece));
                        assert!(
                            found,
                            "{} {:?} {}: {value:?} missing from {name}:\n{text}",
                            bundle.id, row.key, field.name
                        );
                    }
                    if matches!(
                        field.value,
                        Value::Id(_) | Value::Hash(_) | Value::Instant(_)
                    ) {
                        assert!(
                            json.to_lowercase().contains(&value),
                            "{} {:?} {}: {value:?} missing from the JSON export",
                            bundle.id,
                            row.key,
                            field.name
                        );
                    }
                    checked += 1;
                }
            }
        }
        assert!(checked > 1000, "{checked} values checked");
    }
}
