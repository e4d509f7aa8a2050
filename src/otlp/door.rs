//! Requests of spans through the store: read every span, bring back the spans
//! that were waiting for these traces (or have waited their window out), map
//! them ([`super::map`]), and commit the records through the one ingest path
//! (redaction, roles, the decision judge), in batches of whole operations. Then
//! the spans still waiting are kept and the ones that joined are released. A
//! span that cannot be read, or whose records the store refuses, is reported
//! with the input line (or request) it came in.
//!
//! The door holds the store itself, not a session: it writes through the
//! ingest path as its [`crate::store::Ingester`], and reads back only what the
//! door itself keeps (waiting spans, the calls its spans repeat).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::map::{self, Context, Stored, Waiting};
use super::read::Numbered as Request;
use super::settings::OtlpSettings;
use super::span::{self, SpanFact};
use crate::core::names::count;
use crate::ingest::Refusals;
use crate::store::plan::redaction;
use crate::store::{
    IngestMode, IngestReport, Ingester, OtlpKeeping, Store, StoreError, WaitingRow,
};
use crate::wire::{LineError, Numbered, Record};

/// Whether refused spans stop everything (a file, by default) or only themselves
/// (a file with `--rejects`, and the receiver).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strictness {
    /// Anything refused: nothing is committed.
    Strict,
    /// The good spans are committed; the refused ones are reported.
    KeepGood,
}

/// The account of one OTLP intake (a file, taken in chunks of requests).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct OtlpOutcome {
    pub source: String,
    /// Requests decoded (documents or lines).
    pub requests: usize,
    /// Spans in them.
    pub spans: usize,
    /// Spans refused (unreadable, or their records refused by the store).
    pub rejected_spans: usize,
    /// New records committed per type.
    pub committed: Vec<(String, u64)>,
    /// Records already stored with the same content.
    pub unchanged: u64,
    /// The refusals: how many, per rule, and the first reasons (the same
    /// bounded account as a wire ingest's).
    pub rejected: Refusals,
    /// Spans waiting for their tool span once this intake is done.
    pub waiting: u64,
    pub committed_any: bool,
    /// Chunks of requests taken into the store, one after the other.
    pub chunks: usize,
    /// The line of the last refusal counted, so that a line is counted once.
    #[serde(skip)]
    last_line: Option<usize>,
}

impl OtlpOutcome {
    pub fn new(source: &str) -> OtlpOutcome {
        OtlpOutcome {
            source: source.to_owned(),
            rejected: Refusals::new(),
            ..OtlpOutcome::default()
        }
    }

    pub fn refused(&self) -> bool {
        self.rejected.reasons > 0
    }

    /// The first reasons anything was refused for.
    pub fn errors(&self) -> &[LineError] {
        &self.rejected.examples
    }

    /// Adds the account of one chunk, handing each of its refusals to
    /// `on_refusal` as it is counted.
    pub fn add(&mut self, chunk: Taken, on_refusal: &mut dyn FnMut(&LineError)) {
        self.requests += chunk.requests;
        self.spans += chunk.spans;
        self.rejected_spans += chunk.rejected_spans();
        let mut totals: BTreeMap<String, u64> = self.committed.drain(..).collect();
        for (kind, n) in chunk.committed {
            *totals.entry(kind).or_default() += n;
        }
        self.committed = in_wire_order(&totals);
        self.unchanged += chunk.unchanged;
        for error in &chunk.rejected {
            let new_line = self.last_line != Some(error.line);
            self.last_line = Some(error.line);
            self.rejected.add(error, new_line);
            on_refusal(error);
        }
        self.waiting = chunk.waiting;
        self.committed_any |= chunk.committed_any;
        self.chunks += 1;
    }

    /// The account once every chunk is added.
    pub fn finish(mut self) -> OtlpOutcome {
        self.rejected = self.rejected.finish();
        self
    }

    /// The one-line summary printed at the end.
    pub fn summary(&self) -> String {
        let committed: u64 = self.committed.iter().map(|(_, n)| n).sum();
        let kinds = if self.committed.is_empty() {
            "none".to_owned()
        } else {
            self.committed
                .iter()
                .map(|(t, n)| format!("{n} {t}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut line = format!(
            "{}: {}, {}; committed {committed} ({kinds}); unchanged {}; rejected {}",
            self.source,
            count(self.requests, "request", "requests"),
            count(self.spans, "span", "spans"),
            self.unchanged,
            count(self.rejected_spans, "span", "spans"),
        );
        if self.refused() {
            line.push_str(&format!(" ({})", self.rejected.by_rule_text()));
        }
        line.push_str(&format!("; waiting for their tool span {}", self.waiting));
        if self.refused() && !self.committed_any {
            line.push_str(" — nothing committed (fix the lines above, or pass --rejects FILE to commit the good spans)");
        }
        line
    }
}

/// What one intake of a set of requests did.
#[derive(Debug, Clone, Default)]
pub struct Taken {
    pub requests: usize,
    pub spans: usize,
    /// New records committed per type.
    pub committed: BTreeMap<String, u64>,
    pub unchanged: u64,
    /// Every reason anything was refused, in line order.
    pub rejected: Vec<LineError>,
    /// Spans refused per line (request): a span is counted once, however
    /// many of its records were refused.
    pub refused_spans: BTreeMap<usize, usize>,
    pub waiting: u64,
    pub committed_any: bool,
}

impl Taken {
    pub fn rejected_spans(&self) -> usize {
        self.refused_spans.values().sum()
    }
}

/// Counts per record type in wire order of types.
fn in_wire_order(totals: &BTreeMap<String, u64>) -> Vec<(String, u64)> {
    crate::wire::TYPES
        .iter()
        .filter_map(|t| {
            totals
                .get(*t)
                .filter(|n| **n > 0)
                .map(|n| ((*t).to_owned(), *n))
        })
        .collect()
}

/// Where one record came from, for messages.
#[derive(Debug, Clone)]
struct Origin {
    line: usize,
    what: String,
    /// The span the record stands for, when it came in here.
    span: Option<SpanKey>,
}

type SpanKey = (String, String);

/// The span a record was made from: an attempt's own, an operation's (and its
/// transition's) tool span.
fn span_of(record: &Record) -> Option<SpanKey> {
    let id = match record {
        Record::Attempt(a) => a.id.strip_prefix("otel-a-")?,
        Record::Operation(o) => o.id.as_str().strip_prefix("otel-")?,
        Record::Transition(t) => t.operation.as_str().strip_prefix("otel-")?,
        _ => return None,
    };
    let (trace, span) = id.rsplit_once('-')?;
    Some((trace.to_owned(), span.to_owned()))
}

/// Runs `requests` (decoded, or refused with their line) into `store`: one
/// chunk, its account kept whole.
pub async fn intake(
    store: &dyn Store,
    source: &str,
    requests: Vec<Result<Request, LineError>>,
    settings: &OtlpSettings,
    ingester: &Ingester,
    strictness: Strictness,
    now: DateTime<Utc>,
) -> Result<OtlpOutcome, StoreError> {
    let taken = take(store, requests, settings, ingester, strictness, now).await?;
    let mut outcome = OtlpOutcome::new(source);
    outcome.add(taken, &mut |_| {});
    Ok(outcome.finish())
}

/// Runs `requests` (decoded, or refused with their line) into `store`, and
/// says what became of each.
pub async fn take(
    store: &dyn Store,
    requests: Vec<Result<Request, LineError>>,
    settings: &OtlpSettings,
    ingester: &Ingester,
    strictness: Strictness,
    now: DateTime<Utc>,
) -> Result<Taken, StoreError> {
    let mut outcome = Taken::default();
    let mut fresh: Vec<SpanFact> = Vec::new();
    for request in requests {
        match request {
            Err(error) => outcome.rejected.push(error),
            Ok((line, request)) => {
                outcome.requests += 1;
                outcome.spans += span::span_count(&request);
                for read in span::read_request(&request) {
                    match read {
                        Ok(mut fact) => {
                            fact.line = line;
                            fresh.push(fact);
                        }
                        Err(e) => {
                            *outcome.refused_spans.entry(line).or_default() += 1;
                            outcome.rejected.push(LineError {
                                line,
                                field: e.field,
                                reason: e.reason,
                            });
                        }
                    }
                }
            }
        }
    }
    if strictness == Strictness::Strict && !outcome.rejected.is_empty() {
        outcome.rejected.sort_by_key(|e| e.line);
        outcome.waiting = store.otlp_waiting_count().await?;
        return Ok(outcome);
    }

    let traces: Vec<String> = fresh
        .iter()
        .map(|s| s.trace_id.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let waiting: Vec<Waiting> = store
        .otlp_waiting(&traces, now - settings.pending_window())
        .await?
        .into_iter()
        .filter_map(|row| {
            let span: SpanFact = serde_json::from_str(&row.span).ok()?;
            Some(Waiting {
                span,
                since: row.since,
            })
        })
        .collect();
    let stored = stored(store, &fresh, &waiting).await?;
    let arrived: HashSet<SpanKey> = fresh
        .iter()
        .chain(waiting.iter().map(|w| &w.span))
        .map(SpanFact::key)
        .collect();
    let cx = Context {
        settings,
        stored: &stored,
        by: &ingester.by,
        now,
    };
    let mapped = map::map(fresh, waiting, &cx);
    outcome.unchanged += mapped.already;
    let kept = keeping(&mapped);

    // Each record its own number, so the planner's per-line bookkeeping sees one
    // record per line; messages go back to the input line.
    let (contracts, rest): (Vec<_>, Vec<_>) = mapped
        .records
        .into_iter()
        .partition(|(_, r)| matches!(r, Record::Contract(_)));
    let mut origins: Vec<Origin> = vec![Origin {
        line: 0,
        what: String::new(),
        span: None,
    }];
    let mut number = |line: usize, record: Record| {
        origins.push(Origin {
            line,
            what: describe(&record),
            span: span_of(&record).filter(|k| arrived.contains(k)),
        });
        Numbered {
            line: origins.len() - 1,
            record,
            line_sha256: None,
        }
    };
    let contracts: Vec<Numbered> = contracts.into_iter().map(|(l, r)| number(l, r)).collect();
    let records: Vec<Numbered> = rest.into_iter().map(|(l, r)| number(l, r)).collect();
    let batches = batches(records, crate::ingest::BATCH_RECORDS);

    let mut reports: Vec<IngestReport> = Vec::new();
    let mut judged = Vec::new();
    if strictness == Strictness::Strict {
        // Every batch judged (with the contracts it may name) before any commits.
        for batch in std::iter::once(&Vec::new()).chain(batches.iter()) {
            let with_contracts = contracts.iter().chain(batch).cloned().collect();
            let report = store
                .ingest_redacted(
                    redaction::redact(with_contracts),
                    IngestMode::DryRun,
                    ingester,
                    now,
                )
                .await?;
            judged.extend(report.rejected);
        }
    }
    if judged.is_empty() {
        let mode = match strictness {
            Strictness::Strict => IngestMode::Strict,
            Strictness::KeepGood => IngestMode::Quarantine,
        };
        // What the door keeps between requests commits with the last batch (or
        // alone when there is none): spans kept waiting and the ones released
        // never disagree with the operations written.
        let mut kept = Some(kept);
        let mut batches: Vec<Vec<Numbered>> = std::iter::once(contracts)
            .chain(batches)
            .filter(|b| !b.is_empty())
            .collect();
        if batches.is_empty() {
            batches.push(Vec::new());
        }
        let last = batches.len() - 1;
        for (i, batch) in batches.into_iter().enumerate() {
            let with = if i == last {
                kept.take().unwrap_or_default()
            } else {
                OtlpKeeping::default()
            };
            let report = store
                .otlp_ingest(redaction::redact(batch), mode, ingester, now, &with)
                .await?;
            outcome.committed_any |= !report.committed.is_empty();
            let stop = mode == IngestMode::Strict && !report.rejected.is_empty();
            reports.push(report);
            if stop {
                break;
            }
        }
    } else {
        judged.sort_by_key(|e| e.line);
        judged.dedup();
        reports.push(IngestReport {
            committed: Vec::new(),
            unchanged: 0,
            rejected: judged,
        });
    }
    let mut refused: BTreeSet<(usize, SpanKey)> = BTreeSet::new();
    for report in reports {
        for (kind, n) in report.committed {
            *outcome.committed.entry(kind).or_default() += n;
        }
        outcome.unchanged += report.unchanged;
        for error in report.rejected {
            let origin = origins.get(error.line).cloned().unwrap_or(Origin {
                line: 0,
                what: String::new(),
                span: None,
            });
            if let Some(span) = origin.span {
                refused.insert((origin.line, span));
            }
            outcome.rejected.push(LineError {
                line: origin.line,
                field: format!("{}.{}", origin.what, error.field),
                reason: error.reason,
            });
        }
    }
    for (line, _) in refused {
        *outcome.refused_spans.entry(line).or_default() += 1;
    }
    outcome.rejected.sort_by_key(|e| e.line);

    outcome.waiting = store.otlp_waiting_count().await?;
    Ok(outcome)
}

/// What the door keeps of a mapping between requests: the spans still waiting
/// (redacted), the ones that joined, and the tool calls' own ids as search terms.
fn keeping(mapped: &map::Mapped) -> OtlpKeeping {
    OtlpKeeping {
        keep: mapped
            .waiting
            .iter()
            .map(|w| WaitingRow {
                trace_id: w.span.trace_id.clone(),
                span_id: w.span.span_id.clone(),
                since: w.since,
                span: redacted_json(&w.span),
            })
            .collect(),
        release: mapped.released.clone(),
        terms: mapped.terms.clone(),
    }
}

/// A span as the store keeps it while it waits: JSON with every secret redacted.
fn redacted_json(span: &SpanFact) -> String {
    let mut value = serde_json::to_value(span).unwrap_or_default();
    crate::core::redact::redact_value(&mut value);
    value.to_string()
}

/// What the store holds that these spans may attach to.
async fn stored(
    store: &dyn Store,
    fresh: &[SpanFact],
    waiting: &[Waiting],
) -> Result<Stored, StoreError> {
    let spans = fresh.iter().chain(waiting.iter().map(|w| &w.span));
    let mut ids: BTreeSet<String> = BTreeSet::new();
    // The payload hashes of the tool calls here: only an UNKNOWN operation with
    // one of them can be repeated by them.
    let mut payloads: BTreeSet<String> = BTreeSet::new();
    for span in spans {
        ids.insert(map::operation_id(&span.trace_id, &span.span_id));
        if let Some(parent) = &span.parent {
            ids.insert(map::operation_id(&span.trace_id, parent));
        }
        if span.is_tool()
            && let Some(hash) = map::payload_hash(span.attributes.get("gen_ai.tool.call.arguments"))
        {
            payloads.insert(hash.as_str().to_owned());
        }
    }
    let ids: Vec<String> = ids.into_iter().collect();
    let payloads: Vec<String> = payloads.into_iter().collect();
    let mut calls = store.otlp_calls(&ids, &payloads).await?;
    // The attempts of the UNKNOWN operations a call may repeat, numbered after.
    let repeated: Vec<String> = calls
        .unknown
        .iter()
        .map(|(id, ..)| id.as_str().to_owned())
        .filter(|id| !calls.attempts.contains_key(id))
        .collect();
    if !repeated.is_empty() {
        let more = store.otlp_calls(&repeated, &[]).await?;
        calls.attempts.extend(more.attempts);
    }
    let contracts: HashMap<String, crate::core::contract::Contract> = store
        .contracts()
        .await?
        .into_iter()
        .map(|c| (c.tool.clone(), c))
        .collect();
    Ok(Stored {
        operations: calls.attempts,
        unknown: calls.unknown,
        contracts,
    })
}

/// A record in words, as the prefix of a refused record's field.
fn describe(record: &Record) -> String {
    match record {
        Record::Contract(c) => format!("contract {}", c.tool),
        Record::Operation(o) => format!("operation {}", o.id),
        Record::Attempt(a) => format!("attempt {}", a.id),
        Record::Transition(t) => format!("transition of {}", t.operation),
        other => other.type_name().to_owned(),
    }
}

/// Batches of about `size` records that never split an operation's records.
fn batches(records: Vec<Numbered>, size: usize) -> Vec<Vec<Numbered>> {
    let mut out: Vec<Vec<Numbered>> = Vec::new();
    let mut current: Vec<Numbered> = Vec::new();
    for numbered in records {
        let starts_operation = matches!(numbered.record, Record::Operation(_));
        if starts_operation && current.len() >= size {
            out.push(std::mem::take(&mut current));
        }
        current.push(numbered);
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}
