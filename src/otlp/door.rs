//! Requests of spans through the store: read every span, bring back the spans
//! that were waiting for these traces (or have waited their window out), map
//! them ([`super::map`]), and commit the records through the one ingest path
//! (redaction, roles, the decision judge), in batches of whole operations. Then
//! the spans still waiting are kept and the ones that joined are released. A
//! span that cannot be read, or whose records the store refuses, is reported
//! with the input line (or request) it came in.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::map::{self, Context, Stored, Waiting};
use super::read::Numbered as Request;
use super::settings::OtlpSettings;
use super::span::{self, SpanFact};
use crate::core::names::count;
use crate::store::plan::redaction;
use crate::store::{IngestMode, IngestReport, Ingester, Store, StoreError, WaitingRow};
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

/// The account of one OTLP intake.
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
    /// Every reason anything was refused, by input line.
    pub rejected: Vec<LineError>,
    /// Spans waiting for their tool span once this intake is done.
    pub waiting: u64,
    pub committed_any: bool,
}

impl OtlpOutcome {
    pub fn refused(&self) -> bool {
        !self.rejected.is_empty()
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
            "{}: {}, {}; committed {committed} ({kinds}); unchanged {}; rejected {}; waiting for their tool span {}",
            self.source,
            count(self.requests, "request", "requests"),
            count(self.spans, "span", "spans"),
            self.unchanged,
            count(self.rejected_spans, "span", "spans"),
            self.waiting,
        );
        if self.refused() && !self.committed_any {
            line.push_str(" — nothing committed (fix the lines above, or pass --rejects FILE to commit the good spans)");
        }
        line
    }
}

/// Where one record came from, for messages.
#[derive(Debug, Clone)]
struct Origin {
    line: usize,
    what: String,
}

/// Runs `requests` (decoded, or refused with their line) into `store`.
pub async fn intake(
    store: &dyn Store,
    source: &str,
    requests: Vec<Result<Request, LineError>>,
    settings: &OtlpSettings,
    ingester: &Ingester,
    strictness: Strictness,
    now: DateTime<Utc>,
) -> Result<OtlpOutcome, StoreError> {
    let mut outcome = OtlpOutcome {
        source: source.to_owned(),
        ..OtlpOutcome::default()
    };
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
                            outcome.rejected_spans += 1;
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
    if strictness == Strictness::Strict && outcome.refused() {
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
    let cx = Context {
        settings,
        stored: &stored,
        by: &ingester.by,
        now,
    };
    let mapped = map::map(fresh, waiting, &cx);
    outcome.unchanged += mapped.already;

    // Each record its own number, so the planner's per-line bookkeeping sees one
    // record per line; messages go back to the input line.
    let (contracts, rest): (Vec<_>, Vec<_>) = mapped
        .records
        .into_iter()
        .partition(|(_, r)| matches!(r, Record::Contract(_)));
    let mut origins: Vec<Origin> = vec![Origin {
        line: 0,
        what: String::new(),
    }];
    let mut number = |line: usize, record: Record| {
        origins.push(Origin {
            line,
            what: describe(&record),
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
    let mut committed_any = false;
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
        for batch in std::iter::once(contracts).chain(batches) {
            if batch.is_empty() {
                continue;
            }
            let report = store
                .ingest_redacted(redaction::redact(batch), mode, ingester, now)
                .await?;
            committed_any |= !report.committed.is_empty();
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
    let mut totals: BTreeMap<String, u64> = BTreeMap::new();
    let mut refused_records: BTreeSet<usize> = BTreeSet::new();
    for report in reports {
        for (kind, n) in report.committed {
            *totals.entry(kind).or_default() += n;
        }
        outcome.unchanged += report.unchanged;
        for error in report.rejected {
            refused_records.insert(error.line);
            let origin = origins.get(error.line).cloned().unwrap_or(Origin {
                line: 0,
                what: String::new(),
            });
            outcome.rejected.push(LineError {
                line: origin.line,
                field: format!("{}.{}", origin.what, error.field),
                reason: error.reason,
            });
        }
    }
    outcome.rejected_spans += refused_records.len();
    outcome.committed = crate::wire::TYPES
        .iter()
        .filter_map(|t| {
            totals
                .get(*t)
                .filter(|n| **n > 0)
                .map(|n| ((*t).to_owned(), *n))
        })
        .collect();
    outcome.committed_any = committed_any;
    outcome.rejected.sort_by_key(|e| e.line);

    let nothing_committed = strictness == Strictness::Strict && !outcome.rejected.is_empty();
    if !nothing_committed {
        let keep: Vec<WaitingRow> = mapped
            .waiting
            .iter()
            .map(|w| WaitingRow {
                trace_id: w.span.trace_id.clone(),
                span_id: w.span.span_id.clone(),
                since: w.since,
                span: redacted_json(&w.span),
            })
            .collect();
        store.otlp_keep(&keep).await?;
        store.otlp_release(&mapped.released).await?;
    }
    outcome.waiting = store.otlp_waiting_count().await?;
    Ok(outcome)
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
    let mut tools: BTreeSet<String> = BTreeSet::from([map::UNKNOWN_TOOL.to_owned()]);
    for span in spans {
        ids.insert(map::operation_id(&span.trace_id, &span.span_id));
        if let Some(parent) = &span.parent {
            ids.insert(map::operation_id(&span.trace_id, parent));
        }
        if let Some(tool) = span.text("gen_ai.tool.name") {
            tools.insert(tool.to_owned());
        }
    }
    let ids: Vec<String> = ids.into_iter().collect();
    let tools: Vec<String> = tools.into_iter().collect();
    let mut calls = store.otlp_calls(&ids, &tools).await?;
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
    let contracts: HashMap<String, crate::core::model::Contract> = store
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
