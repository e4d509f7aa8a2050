//! The report from facts a store keeps: each operation judged once into rows
//! (one per figure it is in, its veto, its state and its contributions to the
//! operational figures), and the report assembled from the sums of those rows,
//! the first rows of each kind and the few listed operations judged again.
//!
//! A row is `(kind, n, reason)`. The kinds:
//! - `<figure>:counted`, `<figure>:short`, `<figure>:unverified` — the
//!   operation's verdict in a figure whose denominator it is in, with the reason
//!   when it is out of the numerator;
//! - `veto` — the operation has findings that veto a release;
//! - `state:<STATE>` — its state;
//! - `unknown_since` — when UNKNOWN: the instant (ms) it became unknown;
//! - `next_observation` — when held with a next observation time: that
//!   instant (ms), so overdue is `n <= now` at report time;
//! - `attempts:<layer>`, `requests:<layer>`, `repeats:<layer>` — its attempts,
//!   requests and requests beyond the first at each layer it has attempts at;
//! - `throttled` — how many of its requests the provider throttled;
//! - `partial` — PARTIAL, its recovery in progress;
//! - `pending` — how many of its proposals wait for a second pair of eyes;
//! - `cause:<LAYER>` — when failed or held: the instant (ms) it entered its
//!   state, its root-cause layer (`unclassified` included) in the kind and its
//!   owner and tool in the reason ([`cause_reason`]), for the repeated errors.
//!
//! Every rule is the in-memory producer's ([`Index`]); only the bookkeeping is
//! new, so the figures equal [`super::report`]'s and the paged report's.

use chrono::{DateTime, Duration, TimeZone, Utc};
use std::collections::{BTreeMap, BTreeSet};

use super::dataset::Index;
use super::facts::{Facts, LayerFigure, MetricId, RepeatedError, Verdict};
use super::operational::{is_throttled, unknown_since};
use super::result::Report;
use super::tally::{LISTED, Listing, Tally};
use super::view::View;
use crate::core::cause::{self, RootCause};
use crate::core::detail::Dataset;
use crate::core::ids::OperationId;
use crate::core::model::{AttemptKind, Layer, ProposalStatus, State};

/// One fact of one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FactRow {
    pub kind: String,
    pub n: i64,
    pub reason: Option<String>,
}

/// One operation's facts as a store keeps them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Judged {
    pub operation: OperationId,
    pub tenant: String,
    /// A relative (parent, child, dependency or dependent) is in another
    /// tenant: a report scoped to some tenants may judge it otherwise.
    pub foreign: bool,
    /// The latest time in its records at or before the judging `now`: the
    /// facts hold from then (`None`: from the beginning) …
    pub valid_from: Option<DateTime<Utc>>,
    /// … until the earliest time in its records after `now`, where a rule that
    /// reads the clock could answer otherwise (`None`: for ever).
    pub stale_at: Option<DateTime<Utc>>,
    pub rows: Vec<FactRow>,
}

/// The kind of a figure's verdict row.
pub fn verdict_kind(id: MetricId, verdict: &Verdict) -> String {
    let code = match verdict {
        Verdict::Counted => "counted",
        Verdict::Short(_) => "short",
        Verdict::Unverified(_) => "unverified",
    };
    format!("{}:{code}", id.as_str())
}

/// The kinds of `id`'s rows: counted, short, unverified.
pub fn figure_kinds(id: MetricId) -> [String; 3] {
    ["counted", "short", "unverified"].map(|code| format!("{}:{code}", id.as_str()))
}

fn layer_name(layer: Option<Layer>) -> &'static str {
    layer.map_or("unrecorded", Layer::as_str)
}

/// The kind of a failed or held operation's root-cause row: `cause:provider`,
/// `cause:unclassified`.
pub fn cause_kind(layer: &str) -> String {
    format!("{CAUSE_PREFIX}{layer}")
}

/// Every kind of root-cause row, one per layer and `unclassified`.
pub fn cause_kinds() -> Vec<String> {
    RootCause::ALL
        .iter()
        .map(|l| l.as_str())
        .chain(["unclassified"])
        .map(cause_kind)
        .collect()
}

const CAUSE_PREFIX: &str = "cause:";

/// Whether `kind` is a root-cause row's.
pub fn is_cause_kind(kind: &str) -> bool {
    kind.starts_with(CAUSE_PREFIX)
}
/// Separates the owner from the tool in a root-cause row's reason; neither a
/// key's characters nor a name's include it.
const CAUSE_SEPARATOR: char = '\u{1f}';

/// A root-cause row's reason: the operation's owner and tool.
pub fn cause_reason(owner: &str, tool: &str) -> String {
    format!("{owner}{CAUSE_SEPARATOR}{tool}")
}

/// One repeated-errors group as a store's sums give it: the kind and reason of
/// its rows (see [`cause_kind`], [`cause_reason`]), their counts and the newest.
pub fn repeated_group(
    kind: &str,
    reason: &str,
    counts: (u64, u64, u64),
    newest: OperationId,
    newest_ms: i64,
) -> Option<RepeatedError> {
    let layer = kind.strip_prefix(CAUSE_PREFIX)?;
    let (owner, tool) = reason.split_once(CAUSE_SEPARATOR)?;
    let (last_day, last_week, total) = counts;
    Some(RepeatedError {
        owner: owner.to_owned(),
        layer: layer.to_owned(),
        tool: tool.to_owned(),
        last_day: narrow(last_day),
        last_week: narrow(last_week),
        total: narrow(total),
        newest,
        newest_since: instant_ms(newest_ms),
    })
}

fn row(kind: impl Into<String>, n: i64) -> FactRow {
    FactRow {
        kind: kind.into(),
        n,
        reason: None,
    }
}

fn wide(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The rows of the `judged` operations of `dataset` (which also holds their
/// relatives' records) at `now`, in id order.
pub fn judge(dataset: &Dataset, judged: BTreeSet<OperationId>, now: DateTime<Utc>) -> Vec<Judged> {
    let index = Index::new(dataset, now).judging(judged);
    let facts = index.facts();
    let mut around = Around::default();
    for op in &dataset.operations {
        for d in &op.depends_on {
            around.dependents.entry(d).or_default().push(&op.tenant);
        }
    }
    for p in &dataset.proposals {
        if p.status == ProposalStatus::Pending {
            *around.pending.entry(&p.operation).or_default() += 1;
        }
    }
    let mut out: BTreeMap<OperationId, Judged> = index
        .judged_views()
        .map(|v| (v.id().clone(), index.operation_rows(v, &around)))
        .collect();
    for figure in facts.figures {
        for (op, verdict) in figure.rows {
            if let Some(j) = out.get_mut(&op) {
                let kind = verdict_kind(figure.id, &verdict);
                j.rows.push(FactRow {
                    kind,
                    n: 1,
                    reason: verdict.shortfall(),
                });
            }
        }
    }
    let vetoed: BTreeSet<&OperationId> = facts.findings.iter().map(|f| &f.operation).collect();
    for op in vetoed {
        if let Some(j) = out.get_mut(op) {
            j.rows.push(row("veto", 1));
        }
    }
    out.into_values().collect()
}

/// What the rows of one operation read from the other records of a page.
#[derive(Default)]
struct Around<'a> {
    /// The tenants of the operations depending on each operation.
    dependents: BTreeMap<&'a OperationId, Vec<&'a String>>,
    /// Pending proposals per operation.
    pending: BTreeMap<&'a OperationId, usize>,
}

impl Index<'_> {
    /// One operation's rows apart from its verdicts and veto.
    fn operation_rows(&self, v: &View<'_>, around: &Around<'_>) -> Judged {
        let op = v.op;
        let mut rows = vec![row(format!("state:{}", op.state.as_str()), 1)];
        if op.state == State::Unknown {
            let since = unknown_since(op, v.audit.iter().copied());
            rows.push(row("unknown_since", since.timestamp_millis()));
        }
        if op.state.is_held()
            && let Some(next) = op.next_observation_at
        {
            rows.push(row("next_observation", next.timestamp_millis()));
        }
        let mut layers: BTreeMap<Option<Layer>, (i64, i64)> = BTreeMap::new();
        for a in &v.attempts {
            let (all, requests) = layers.entry(a.layer).or_default();
            *all += 1;
            if a.kind == AttemptKind::Request {
                *requests += 1;
            }
        }
        for (layer, (all, requests)) in layers {
            let name = layer_name(layer);
            rows.push(row(format!("attempts:{name}"), all));
            rows.push(row(format!("requests:{name}"), requests));
            if requests > 1 {
                rows.push(row(format!("repeats:{name}"), requests - 1));
            }
        }
        let throttled = v.attempts.iter().filter(|a| is_throttled(a)).count();
        if throttled > 0 {
            rows.push(row("throttled", wide(throttled)));
        }
        if op.state == State::Partial {
            rows.push(row("partial", 1));
        }
        let pending = around.pending.get(v.id()).copied().unwrap_or(0);
        if pending > 0 {
            rows.push(row("pending", wide(pending)));
        }
        if let Some(cause) = cause::of_records(op, &v.attempts, v.audit.iter().copied()) {
            rows.push(FactRow {
                kind: cause_kind(cause.name()),
                n: cause::since(op, v.audit.iter().copied()).timestamp_millis(),
                reason: Some(cause_reason(&op.owner, &op.tool)),
            });
        }
        let times = record_times(v);
        Judged {
            operation: op.id.clone(),
            tenant: op.tenant.clone(),
            foreign: self.foreign(v, around),
            valid_from: times.iter().filter(|t| **t <= self.now).max().copied(),
            stale_at: times.iter().filter(|t| **t > self.now).min().copied(),
            rows,
        }
    }

    /// Whether a relative of `v` other than those sharing its key (which share
    /// its tenant) is in another tenant, or missing from the records read.
    fn foreign(&self, v: &View<'_>, around: &Around<'_>) -> bool {
        let tenant = &v.op.tenant;
        let other = |id: &OperationId| self.view(id).is_none_or(|r| &r.op.tenant != tenant);
        v.op.parent.iter().any(other)
            || v.op.depends_on.iter().any(other)
            || v.children.iter().any(|c| &c.tenant != tenant)
            || around
                .dependents
                .get(v.id())
                .is_some_and(|ts| ts.iter().any(|t| *t != tenant))
    }
}

/// Every time in `v`'s records a rule may compare the clock with (an attempt,
/// an observation, a deadline, a key's expiry, the next observation): between
/// two of them the rules that read the clock answer the same.
fn record_times(v: &View<'_>) -> Vec<DateTime<Utc>> {
    let op = v.op;
    let mut times: Vec<DateTime<Utc>> = vec![op.created_at];
    times.extend(op.deadline);
    times.extend(op.next_observation_at);
    if let Some(c) = v.contract {
        times.push(op.created_at + Duration::seconds(i64::from(c.budget_seconds)));
    }
    for a in &v.attempts {
        times.push(a.started_at);
        times.extend(a.ended_at);
        if let Some(hours) = v.contract.and_then(|c| c.idempotency.retention_hours) {
            times.extend(
                a.started_at
                    .checked_add_signed(Duration::hours(i64::from(hours))),
            );
        }
    }
    times.extend(v.observations.iter().map(|o| o.observed_at));
    times
}

/// What a store read back for one report: the sums of the rows in scope, the
/// first rows of the listed kinds, and the facts of the operations those lists
/// name, judged again at the report's `now`.
#[derive(Debug, Default)]
pub struct Stored {
    /// Per kind: how many rows, and the sum of their `n`.
    pub sums: BTreeMap<String, (u64, i64)>,
    /// Per layer: the most requests one operation made at it.
    pub max_requests: BTreeMap<String, i64>,
    /// Per figure verdict kind: its first [`LISTED`] rows in id order, with
    /// their reasons.
    pub verdicts: BTreeMap<String, Vec<(OperationId, Option<String>)>>,
    /// Every UNKNOWN operation with the instant it became unknown.
    pub unknown_since: Vec<(OperationId, DateTime<Utc>)>,
    /// The first overdue operations, and how many there are.
    pub overdue: Vec<OperationId>,
    pub overdue_total: u64,
    /// The facts of the first vetoed, partial, throttled and pending
    /// operations, judged again: the lists of vetoes, recovery progress,
    /// throttled requests and proposals are theirs.
    pub listed: Facts,
    /// The repeated errors' groups ([`repeated_group`]).
    pub repeated: Vec<RepeatedError>,
}

fn narrow(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn narrow_signed(n: i64) -> u32 {
    u32::try_from(n.max(0)).unwrap_or(u32::MAX)
}

/// The instant `ms` milliseconds after the epoch.
pub fn instant_ms(ms: i64) -> DateTime<Utc> {
    Utc.timestamp_millis_opt(ms).single().unwrap_or_default()
}

impl Stored {
    fn rows(&self, kind: &str) -> u64 {
        self.sums.get(kind).map_or(0, |(rows, _)| *rows)
    }

    fn sum(&self, kind: &str) -> i64 {
        self.sums.get(kind).map_or(0, |(_, sum)| *sum)
    }

    /// The first rows of `kinds` merged in id order, cut to [`LISTED`].
    fn merged(&self, kinds: &[&String]) -> Vec<(OperationId, Option<String>)> {
        let mut all: Vec<(OperationId, Option<String>)> = kinds
            .iter()
            .flat_map(|k| self.verdicts.get(*k).into_iter().flatten().cloned())
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all.truncate(LISTED);
        all
    }

    fn listing<T>(first: Vec<T>, total: u64) -> Listing<T> {
        let mut first = first;
        first.truncate(LISTED);
        Listing {
            first,
            total: narrow(total),
        }
    }

    /// The report at `now`, as [`Tally::finish`] gives it over the same
    /// operations read page by page.
    pub fn report(self, now: DateTime<Utc>) -> Report {
        let mut tally = Tally::default();
        for id in MetricId::ALL {
            let [counted, short, unverified] = figure_kinds(*id);
            let (nc, ns, nu) = (
                self.rows(&counted),
                self.rows(&short),
                self.rows(&unverified),
            );
            if nc + ns + nu == 0 {
                continue;
            }
            let ids = |list: Vec<(OperationId, Option<String>)>| {
                list.into_iter().map(|(op, _)| op).collect::<Vec<_>>()
            };
            let figure = tally.figure(*id);
            figure.numerator = Self::listing(ids(self.merged(&[&counted])), nc);
            figure.denominator = Self::listing(
                ids(self.merged(&[&counted, &short, &unverified])),
                nc + ns + nu,
            );
            figure.unverified = Self::listing(ids(self.merged(&[&unverified])), nu);
            let reasons = self
                .merged(&[&short, &unverified])
                .into_iter()
                .map(|(op, why)| (op, why.unwrap_or_default()))
                .collect();
            figure.shortfalls = Self::listing(reasons, ns + nu);
        }
        let vetoes = super::release::vetoes(self.listed.findings.clone());
        tally.vetoes = Self::listing(vetoes, self.rows("veto"));
        for state in State::ALL {
            let n = self.rows(&format!("state:{}", state.as_str()));
            if n > 0 {
                tally.by_state.insert(*state, narrow(n));
            }
        }
        tally.logical_operations = tally.by_state.values().sum();
        tally.unknown_since = self.unknown_since.clone();
        tally.overdue = Self::listing(self.overdue.clone(), self.overdue_total);
        let mut layers: Vec<(Option<Layer>, String)> = self
            .sums
            .keys()
            .filter_map(|k| k.strip_prefix("attempts:"))
            .map(|name| (Layer::parse(name), name.to_owned()))
            .collect();
        layers.sort();
        for (layer, name) in layers {
            let requests = self.sum(&format!("requests:{name}"));
            tally.by_layer.insert(
                layer,
                LayerFigure {
                    layer: name.clone(),
                    attempts: narrow_signed(self.sum(&format!("attempts:{name}"))),
                    requests: narrow_signed(requests),
                    repeats: narrow_signed(self.sum(&format!("repeats:{name}"))),
                    operations: narrow(self.rows(&format!("attempts:{name}"))),
                    max_per_operation: narrow_signed(
                        self.max_requests.get(&name).copied().unwrap_or(0),
                    ),
                },
            );
        }
        let throttled = u64::try_from(self.sum("throttled")).unwrap_or(0);
        let partial = self.rows("partial");
        let pending = u64::try_from(self.sum("pending")).unwrap_or(0);
        let o = self.listed.operational;
        tally.throttled = Self::listing(o.throttled, throttled);
        tally.partial_in_progress = Self::listing(o.partial_in_progress, partial);
        tally.pending_proposals = Self::listing(o.pending_proposals, pending);
        for group in self.repeated {
            tally.repeated.add(group);
        }
        tally.finish(now)
    }
}
