//! Ingest from a file or stdin, streamed: read and parse wire format v1 line by
//! line, let the store plan and commit it in batches of whole operation histories
//! (each batch one short transaction, so a concurrent reviewer waits at most one
//! batch), and account for every line — committed, already stored, or refused
//! with its line, field and rule. Memory follows the batch, not the file.
//!
//! Three passes over the input (stdin is spooled to a temporary file first):
//! the first parses every line and notes where each operation's records end
//! ([`crate::store::plan::chunk`]); in strict mode (the default) the second
//! judges every batch without committing, so that one bad line anywhere means
//! nothing is committed; the last commits batch by batch. With a rejects file the
//! judging pass is skipped: the good lines are committed, a refused line takes the
//! rest of its operation's history with it, and the bad lines are written to the
//! rejects file as received but with their secrets redacted ([`redacted_line`]).
//!
//! Refusals stream too: each is handed out (to stderr, by the command) and its
//! line written to the rejects file as it is found, in line order, while the
//! account keeps only counts per rule and the first
//! [`crate::bounded::INGEST_EXAMPLES`] reasons ([`Refusals`]), so a file of
//! millions of refused lines costs no more memory than a clean one.
//!
//! Ingest holds the store itself, not a [`crate::store::Session`]: a writer's
//! door is its [`crate::store::Ingester`] (the identity, the tenants it may
//! write, the decisions it is judged as), checked line by line by the ingest
//! plan; it reads nothing back but the account of what it wrote.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, BufRead, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::core::names::{count, grouped};
use crate::store::plan::chunk::{Batcher, Reach, Reached};
use crate::store::plan::ingest::{own_operation, withheld_reason};
use crate::store::plan::redaction::{self, Redacted};
use crate::store::{IngestMode, IngestReport, Ingester, Store, StoreError};
use crate::wire::{Line, LineError, Numbered, Record, each_line_hashed};

/// Records per batch: large enough that the per-transaction cost vanishes, small
/// enough that a batch's transaction holds the write lock for well under a second
/// and that the batches in flight (read, judged, planned, written) stay well
/// under the 300 MiB an ingest may hold. At 20,000 a 2.3 GB file peaked at 311
/// MiB; at 10,000, 238 MiB, in the same time (304 s against 313 s).
pub const BATCH_RECORDS: usize = 10_000;

/// Where the records come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Stdin,
    Path(PathBuf),
}

impl Source {
    fn describe(&self) -> String {
        match self {
            Source::Stdin => "stdin".to_owned(),
            Source::Path(path) => path.display().to_string(),
        }
    }
}

/// What can stop an ingest before any line is judged.
#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    #[error("cannot read {source_name}: {error}")]
    Read {
        source_name: String,
        error: io::Error,
    },
    #[error(
        "cannot write the rejects file {path}: {error} (the good lines were committed; the refused lines are listed above)"
    )]
    Rejects { path: String, error: io::Error },
    #[error(
        "{source_name}: line {line}: more than {limit} lines refused; this is not a wire file with some bad lines, so nothing was committed (see docs/security.md, \"Bounded inputs\")"
    )]
    TooManyRefused {
        source_name: String,
        line: usize,
        limit: usize,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The account of one ingest.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IngestOutcome {
    pub source: String,
    /// Non-blank lines read.
    pub lines: usize,
    /// Records per type in the input that parsed.
    pub parsed: Vec<(String, u64)>,
    /// New records committed per type.
    pub committed: Vec<(String, u64)>,
    /// Records already stored with the same content (a no-op).
    pub unchanged: u64,
    /// The refused lines: how many, why per rule, and the first reasons.
    pub rejected: Refusals,
    /// Whether anything was written.
    pub committed_any: bool,
    /// Where refused lines went, when a rejects file was asked for.
    pub rejects_file: Option<String>,
    /// Batches committed, each in its own transaction.
    pub batches: usize,
    /// Records in the largest batch handed to the store: what memory follows.
    pub largest_batch: usize,
}

impl IngestOutcome {
    /// The first reasons lines were refused for ([`Refusals::examples`]).
    pub fn errors(&self) -> &[LineError] {
        &self.rejected.examples
    }

    /// Lines refused, each once.
    pub fn rejected_lines(&self) -> usize {
        usize::try_from(self.rejected.lines).unwrap_or(usize::MAX)
    }

    /// Whether input was refused (the exit code says so even in quarantine mode).
    pub fn refused(&self) -> bool {
        self.rejected.lines > 0
    }

    /// The one-line summary printed at the end.
    pub fn summary(&self) -> String {
        let list = |counts: &[(String, u64)]| {
            if counts.is_empty() {
                "none".to_owned()
            } else {
                counts
                    .iter()
                    .map(|(t, n)| format!("{n} {t}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        };
        let committed: u64 = self.committed.iter().map(|(_, n)| n).sum();
        let mut line = format!(
            "{}: {}; records {}; committed {committed} ({}); unchanged {}; rejected {}",
            self.source,
            count(self.lines, "line", "lines"),
            list(&self.parsed),
            list(&self.committed),
            self.unchanged,
            count(self.rejected_lines(), "line", "lines"),
        );
        if self.refused() {
            line.push_str(&format!(" ({})", self.rejected.by_rule_text()));
        }
        if self.refused() && !self.committed_any {
            line.push_str(" — nothing committed (fix the lines above, or pass --rejects FILE to commit the good lines)");
        } else if self.refused() && self.rejects_file.is_none() {
            line.push_str(" — the store changed while this input was committed: the batches before the first refused line are committed, nothing after it; fix the lines above and ingest again (committed records are unchanged the second time)");
        }
        if let Some(file) = &self.rejects_file {
            line.push_str(&format!(" — refused lines written to {file}"));
        }
        line
    }
}

/// A reason's rule, when it names one first (`G7: …`): how refusals are
/// counted; other reasons are counted by their field.
fn rule_of(error: &LineError) -> String {
    let head = error.reason.split_once(':').map_or("", |(head, _)| head);
    let mut chars = head.chars();
    let named = chars.next().is_some_and(|c| c.is_ascii_uppercase())
        && head.len() <= 4
        && head.len() > 1
        && chars.all(|c| c.is_ascii_digit());
    if named {
        head.to_owned()
    } else if error.field == "-" {
        "whole line".to_owned()
    } else {
        format!("field {}", error.field)
    }
}

/// How many reasons one rule (or field) was given for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleCount {
    /// The rule a reason names first (`G7`), else `field NAME`, or `whole
    /// line`; past [`crate::bounded::INGEST_RULES_COUNTED`] kinds, `other`.
    pub rule: String,
    pub count: u64,
}

/// The refusals of one ingest, kept within a bound whatever their number:
/// exact counts, the count per rule, and the first
/// [`crate::bounded::INGEST_EXAMPLES`] reasons in line order. Every refusal
/// is handed out as it is found ([`ingest_streamed`]); this is what is left.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Refusals {
    /// Lines refused, each once.
    pub lines: u64,
    /// Reasons given (a line may be refused for more than one).
    pub reasons: u64,
    /// Reasons per rule, most first (ties by rule).
    pub by_rule: Vec<RuleCount>,
    /// The first reasons, in line order: at most `examples_limit`.
    pub examples: Vec<LineError>,
    /// How many reasons `examples` keeps at most.
    pub examples_limit: usize,
    /// Reasons not kept in `examples` (`reasons` less those kept).
    pub more: u64,
}

impl Refusals {
    pub fn new() -> Refusals {
        Refusals {
            examples_limit: crate::bounded::INGEST_EXAMPLES,
            ..Refusals::default()
        }
    }

    /// Counts `error`; `new_line` when it is the first reason of its line.
    pub fn add(&mut self, error: &LineError, new_line: bool) {
        self.lines += u64::from(new_line);
        self.reasons += 1;
        let rule = rule_of(error);
        let known = self.by_rule.iter().position(|r| r.rule == rule);
        let other = self.by_rule.iter().position(|r| r.rule == "other");
        let slot = match known {
            Some(at) => at,
            None if self.by_rule.len() < crate::bounded::INGEST_RULES_COUNTED => {
                self.by_rule.push(RuleCount { rule, count: 0 });
                self.by_rule.len() - 1
            }
            None => other.unwrap_or_else(|| {
                self.by_rule.push(RuleCount {
                    rule: "other".into(),
                    count: 0,
                });
                self.by_rule.len() - 1
            }),
        };
        self.by_rule[slot].count += 1;
        if self.examples.len() < self.examples_limit {
            self.examples.push(error.clone());
        } else {
            self.more += 1;
        }
    }

    /// Sorts the counts, most first.
    pub fn finish(mut self) -> Refusals {
        self.by_rule
            .sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.rule.cmp(&b.rule)));
        self
    }

    /// The counts per rule in words: `operation 5, whole line 1`.
    pub fn by_rule_text(&self) -> String {
        self.by_rule
            .iter()
            .map(|r| format!("{} {}", r.rule, grouped(r.count)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Where refusals go as they are found: held until every refusal of an
/// earlier line is known, then handed out in line order (the rejects file
/// written as they go), counted and forgotten. What is held at once is the
/// unparseable lines' reasons (at most [`crate::bounded::INGEST_REFUSED_LINES`]
/// lines), a contract's, and those of the batches in flight.
struct Outflow<'a> {
    held: BTreeMap<usize, Vec<LineError>>,
    refusals: Refusals,
    last_line: Option<usize>,
    on_refusal: &'a mut (dyn FnMut(&LineError) + Send),
    rejects: Option<RejectsFile<'a>>,
}

impl Outflow<'_> {
    fn hold(&mut self, errors: impl IntoIterator<Item = LineError>) {
        for error in errors {
            self.held.entry(error.line).or_default().push(error);
        }
    }

    /// Whether any refusal was found, handed out or held.
    fn refused(&self) -> bool {
        self.refusals.reasons > 0 || !self.held.is_empty()
    }

    /// Hands out every held refusal of a line up to `end`, in line order.
    fn through(&mut self, end: usize) -> Result<(), IngestError> {
        while let Some(entry) = self.held.first_entry() {
            if *entry.key() > end {
                break;
            }
            let (line, errors) = entry.remove_entry();
            let new_line = self.last_line != Some(line);
            self.last_line = Some(line);
            for (i, error) in errors.iter().enumerate() {
                self.refusals.add(error, new_line && i == 0);
                (self.on_refusal)(error);
            }
            if new_line && let Some(rejects) = self.rejects.as_mut() {
                rejects.write(line)?;
            }
        }
        Ok(())
    }
}

/// The rejects file, written as refusals are handed out: each refused line
/// read again from the input, forward, one line held at a time.
struct RejectsFile<'a> {
    path: &'a Path,
    file: io::BufWriter<File>,
    input: &'a Input,
    reader: BufReader<File>,
    /// The number of the line `reader` reads next.
    next: usize,
    /// Lines too long to keep (refused unkept): never written.
    unkept: &'a BTreeSet<usize>,
    line: Vec<u8>,
}

impl<'a> RejectsFile<'a> {
    fn create(
        path: &'a Path,
        input: &'a Input,
        unkept: &'a BTreeSet<usize>,
    ) -> Result<Self, IngestError> {
        Ok(RejectsFile {
            path,
            file: io::BufWriter::new(File::create(path).map_err(|e| rejects_error(path, e))?),
            input,
            reader: input.reader().map_err(|e| read_error(input, e))?,
            next: 1,
            unkept,
            line: Vec::new(),
        })
    }

    /// Writes line `n` of the input, redacted ([`redacted_line`]).
    fn write(&mut self, n: usize) -> Result<(), IngestError> {
        if self.unkept.contains(&n) {
            return Ok(());
        }
        if n < self.next {
            // Out of order (never, as refusals are handed out): read again.
            self.reader = self.input.reader().map_err(|e| read_error(self.input, e))?;
            self.next = 1;
        }
        if !self.read_line(n).map_err(|e| read_error(self.input, e))? {
            return Ok(());
        }
        let path = self.path;
        self.file
            .write_all(&redacted_line(&self.line))
            .and_then(|()| self.file.write_all(b"\n"))
            .map_err(|e| rejects_error(path, e))
    }

    /// Reads forward to line `n` into `self.line`, keeping at most
    /// [`crate::wire::KEEP_LIMIT`] bytes of it; `false` past the end.
    fn read_line(&mut self, n: usize) -> io::Result<bool> {
        self.line.clear();
        loop {
            let chunk = match self.reader.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if chunk.is_empty() {
                let last = self.next == n && !self.line.is_empty();
                self.next += 1;
                return Ok(last);
            }
            let keep = self.next == n;
            let (used, ended) = match memchr::memchr(b'\n', chunk) {
                Some(end) => (end + 1, Some(end)),
                None => (chunk.len(), None),
            };
            if keep && self.line.len() <= crate::wire::KEEP_LIMIT {
                self.line.extend_from_slice(&chunk[..ended.unwrap_or(used)]);
            }
            self.reader.consume(used);
            if ended.is_some() {
                self.next += 1;
                if keep {
                    return Ok(true);
                }
            }
        }
    }

    fn finish(mut self) -> Result<(), IngestError> {
        let path = self.path;
        self.file.flush().map_err(|e| rejects_error(path, e))
    }
}

fn rejects_error(path: &Path, error: io::Error) -> IngestError {
    IngestError::Rejects {
        path: path.display().to_string(),
        error,
    }
}

fn read_error(input: &Input, error: io::Error) -> IngestError {
    IngestError::Read {
        source_name: input.path.display().to_string(),
        error,
    }
}

/// The style of a progress bar that counts `unit`s (records, spans), with their
/// rate and an ETA; with no total known, a count and its rate.
fn counting_style(verb: &str, unit: &str, total: bool) -> Option<indicatif::ProgressStyle> {
    let template = if total {
        format!(
            "{{spinner}} {verb} {{human_pos}}/{{human_len}} {unit} [{{bar:30}}] {{per_sec}} eta {{eta}}"
        )
    } else {
        format!("{{spinner}} {verb} {{human_pos}} {unit} {{per_sec}}")
    };
    indicatif::ProgressStyle::with_template(&template)
        .map(|s| s.progress_chars("=> "))
        .ok()
}

/// A progress bar on stderr for large inputs, only when stderr is a terminal: bytes
/// while the input is first read, then records (or spans) with their rate and an
/// ETA.
pub(crate) struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    pub(crate) fn new(size: u64) -> Progress {
        const LARGE: u64 = 4 * 1024 * 1024;
        if !io::stderr().is_terminal() || size < LARGE {
            return Progress { bar: None };
        }
        let bar = indicatif::ProgressBar::new(size);
        let style = indicatif::ProgressStyle::with_template(
            "{spinner} reading {bytes}/{total_bytes} [{bar:30}] {bytes_per_sec} eta {eta}",
        )
        .map(|s| s.progress_chars("=> "));
        if let Ok(style) = style {
            bar.set_style(style);
        }
        bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        Progress { bar: Some(bar) }
    }

    fn bytes(&self, read: u64) {
        if let Some(bar) = &self.bar {
            bar.set_position(read);
        }
    }

    /// Starts counting `total` records under `verb`.
    fn records(&self, verb: &str, total: u64) {
        self.counting(verb, "records", Some(total));
    }

    /// Starts counting `unit`s under `verb`, `total` of them when it is known.
    pub(crate) fn counting(&self, verb: &str, unit: &str, total: Option<u64>) {
        if let Some(bar) = &self.bar {
            bar.reset();
            bar.set_length(total.unwrap_or(0));
            bar.set_position(0);
            if let Some(style) = counting_style(verb, unit, total.is_some()) {
                bar.set_style(style);
            }
        }
    }

    pub(crate) fn advance(&self, records: usize) {
        if let Some(bar) = &self.bar {
            bar.inc(records as u64);
        }
    }

    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The input as a file that can be read more than once: the file itself, or
/// stdin spooled to a temporary file removed when this is dropped.
pub(crate) struct Input {
    path: PathBuf,
    spooled: bool,
}

impl Input {
    pub(crate) fn open(source: &Source) -> io::Result<Input> {
        match source {
            Source::Path(path) => {
                File::open(path)?;
                // Read three times over, so a file it must be: a device such as
                // `/dev/zero` never ends, and a pipe cannot be read again.
                if !std::fs::metadata(path)?.is_file() {
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        "not a regular file; pass - to read stdin",
                    ));
                }
                Ok(Input {
                    path: path.clone(),
                    spooled: false,
                })
            }
            Source::Stdin => {
                let stamp = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos());
                let path = std::env::temp_dir().join(format!(
                    "holdfast-ingest-{}-{stamp}.jsonl",
                    std::process::id()
                ));
                let input = Input {
                    path,
                    spooled: true,
                };
                let mut file = io::BufWriter::new(
                    std::fs::OpenOptions::new()
                        .write(true)
                        .create_new(true)
                        .open(&input.path)?,
                );
                io::copy(&mut io::stdin().lock(), &mut file)?;
                file.flush()?;
                Ok(input)
            }
        }
    }

    pub(crate) fn reader(&self) -> io::Result<BufReader<File>> {
        Ok(BufReader::with_capacity(1 << 16, File::open(&self.path)?))
    }

    pub(crate) fn size(&self) -> u64 {
        std::fs::metadata(&self.path).map_or(0, |m| m.len())
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        if self.spooled {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// What the first pass learns: every line judged on its own, and where each
/// operation's records end.
#[derive(Default)]
struct Scan {
    lines: usize,
    /// Records that parsed, per type in order of first appearance.
    parsed: Vec<(String, u64)>,
    records: u64,
    /// Every reason every unparseable line was refused.
    errors: Vec<LineError>,
    /// Unparseable lines, counted up to [`crate::bounded::INGEST_REFUSED_LINES`].
    refused_lines: usize,
    /// The line past that bound, when there is one: nothing more is kept.
    too_many_refused: Option<usize>,
    /// Unparseable lines too long to keep for a rejects file.
    unkept: BTreeSet<usize>,
    /// Operations an unparseable line names, with the first such line.
    refused_operations: BTreeMap<String, usize>,
    /// The contracts, committed before everything else.
    contracts: Vec<Numbered>,
    /// The same contracts, redacted.
    contracts_redacted: Redacted,
    reach: std::sync::Arc<Reached>,
}

fn scan(input: &Input, progress: &Progress) -> io::Result<Scan> {
    let mut out = Scan::default();
    let mut reach = Reach::for_input(input.size());
    // Only a contract's line is hashed: the contracts are kept and committed
    // from here, every other record from the pass that commits it.
    out.lines = each_line_hashed(
        input.reader()?,
        &|record| matches!(record, Record::Contract(_)),
        &mut |read| progress.bytes(read),
        &mut |line| match line {
            Line::Record(numbered) => {
                let name = numbered.record.type_name();
                match out.parsed.iter_mut().find(|(t, _)| t == name) {
                    Some((_, n)) => *n += 1,
                    None => out.parsed.push((name.to_owned(), 1)),
                }
                out.records += 1;
                reach.note(&numbered);
                if matches!(numbered.record, Record::Contract(_)) {
                    out.contracts.push(numbered);
                }
            }
            Line::Bad {
                line,
                errors,
                bytes,
            } => {
                if out.too_many_refused.is_some() {
                    return;
                }
                out.refused_lines += 1;
                if out.refused_lines > crate::bounded::INGEST_REFUSED_LINES {
                    out.too_many_refused = Some(line);
                    return;
                }
                out.errors.extend(errors);
                match bytes {
                    Some(bytes) => {
                        if let Some(op) = crate::wire::operation_named(bytes) {
                            out.refused_operations.entry(op).or_insert(line);
                        }
                    }
                    None => {
                        out.unkept.insert(line);
                    }
                }
            }
        },
    )?;
    out.reach = std::sync::Arc::new(reach.finish());
    out.contracts_redacted = redaction::redact(out.contracts.clone());
    Ok(out)
}

/// Adds one batch's report to the running totals.
#[derive(Default)]
struct Totals {
    committed: BTreeMap<String, u64>,
    unchanged: u64,
    batches: usize,
    largest: usize,
}

impl Totals {
    /// Adds `report`'s counts; its refusals are `outflow`'s to hand out.
    fn add(&mut self, report: IngestReport, outflow: &mut Outflow<'_>) {
        for (kind, n) in report.committed {
            *self.committed.entry(kind).or_default() += n;
        }
        self.unchanged += report.unchanged;
        outflow.hold(report.rejected);
    }

    /// Committed counts in wire order of types.
    fn committed(&self) -> Vec<(String, u64)> {
        crate::wire::TYPES
            .iter()
            .filter_map(|t| {
                self.committed
                    .get(*t)
                    .filter(|n| **n > 0)
                    .map(|n| ((*t).to_owned(), *n))
            })
            .collect()
    }
}

/// How a pass hands its batches to the store.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// Judge every batch, commit nothing (the contracts are judged with each).
    Judge,
    /// Commit batch by batch; stop at the first batch the store refuses.
    Commit,
    /// Commit batch by batch, keeping the good lines.
    Quarantine,
}

/// What every pass after the scan shares.
struct Passes<'a> {
    store: &'a dyn Store,
    input: &'a Input,
    scan: &'a Scan,
    batch_records: usize,
    ingester: &'a Ingester,
    now: DateTime<Utc>,
    progress: &'a Progress,
}

/// What the reading thread of a pass hands over: a batch, or lines withheld
/// with a refused line of their operation and the line through which every
/// refusal is then known.
enum Piece {
    Batch(Redacted),
    Withheld(Vec<LineError>, usize),
}

/// Withheld lines handed over at once.
const WITHHELD_CHUNK: usize = 1_000;

/// One pass over the input after the scan, batch by batch, its refusals
/// handed to `outflow` as each batch is judged.
async fn run_pass(
    passes: &Passes<'_>,
    pass: Pass,
    outflow: &mut Outflow<'_>,
) -> Result<Totals, IngestError> {
    let Passes {
        store,
        input,
        scan,
        batch_records,
        ingester,
        now,
        progress,
    } = *passes;
    let started = std::time::Instant::now();
    let mode = match pass {
        Pass::Judge => IngestMode::DryRun,
        Pass::Commit => IngestMode::Strict,
        Pass::Quarantine => IngestMode::Quarantine,
    };
    progress.records(
        if pass == Pass::Judge {
            "checking"
        } else {
            "committing"
        },
        scan.records,
    );
    let mut totals = Totals::default();
    // The contracts first, on their own: in a judging pass their share of each
    // batch's report is taken out again, as they are judged with every batch.
    let mut contract_share = IngestReport::default();
    if !scan.contracts.is_empty() {
        let report = store
            .ingest_redacted(scan.contracts_redacted.clone(), mode, ingester, now)
            .await?;
        progress.advance(scan.contracts.len());
        totals.batches += usize::from(pass != Pass::Judge);
        totals.largest = scan.contracts.len();
        contract_share.unchanged = report.unchanged;
        let stop = pass == Pass::Commit && !report.rejected.is_empty();
        totals.add(report, outflow);
        if stop {
            outflow.through(usize::MAX)?;
            return Ok(totals);
        }
    }
    let contract_lines: BTreeSet<usize> = scan.contracts.iter().map(|n| n.line).collect();

    let (sender, mut receiver) = tokio::sync::mpsc::channel::<Piece>(1);
    let reader = input.reader().map_err(|error| IngestError::Read {
        source_name: input.path.display().to_string(),
        error,
    })?;
    let refused_operations = scan.refused_operations.clone();
    let quarantine = pass == Pass::Quarantine;
    // A line's hash is kept with what it redacts, so only a pass that writes needs it.
    let hash_lines = pass != Pass::Judge;
    // Parsing and redacting run on their own thread and hand over whole batches,
    // so that the next batch is read while the store plans and writes this one;
    // the lines withheld with a refused line go over in chunks between them.
    // What planning needs of a batch's records alone is worked out here too
    // where the store's side is the slower one: in a pass that writes, the
    // reading thread waits for the store half the time. The judging pass
    // writes nothing, and there the reading is the slower side.
    let prepare = move |batch: Redacted| {
        if hash_lines { batch.prepared() } else { batch }
    };
    let reading = {
        let reach = std::sync::Arc::clone(&scan.reach);
        std::thread::spawn(move || -> io::Result<()> {
            let mut batcher = Batcher::new(&reach, batch_records);
            let mut withheld: Vec<LineError> = Vec::new();
            let mut closed = false;
            let hash_line = |_: &Record| hash_lines;
            each_line_hashed(reader, &hash_line, &mut |_| {}, &mut |line| {
                let Line::Record(numbered) = line else {
                    return;
                };
                if closed || matches!(numbered.record, Record::Contract(_)) {
                    return;
                }
                if quarantine
                    && let Some(op) = own_operation(&numbered.record)
                    && let Some(first) = refused_operations.get(op)
                {
                    withheld.push(LineError {
                        line: numbered.line,
                        field: "-".into(),
                        reason: withheld_reason(op, *first),
                    });
                    if withheld.len() >= WITHHELD_CHUNK {
                        // Every line before the batch being gathered is judged.
                        let through = batcher.first_line().map_or(numbered.line, |l| l - 1);
                        let chunk = std::mem::take(&mut withheld);
                        closed = sender
                            .blocking_send(Piece::Withheld(chunk, through))
                            .is_err();
                    }
                    return;
                }
                if let Some(batch) = batcher.push(numbered) {
                    if !withheld.is_empty() {
                        let chunk = std::mem::take(&mut withheld);
                        closed = sender.blocking_send(Piece::Withheld(chunk, 0)).is_err();
                    }
                    closed = closed
                        || sender
                            .blocking_send(Piece::Batch(prepare(redaction::redact(batch))))
                            .is_err();
                }
            })?;
            let last = batcher.finish();
            if !closed && !withheld.is_empty() {
                closed = sender.blocking_send(Piece::Withheld(withheld, 0)).is_err();
            }
            if !closed && !last.is_empty() {
                let _ = sender.blocking_send(Piece::Batch(prepare(redaction::redact(last))));
            }
            Ok(())
        })
    };
    while let Some(piece) = receiver.recv().await {
        let batch = match piece {
            Piece::Withheld(errors, through) => {
                outflow.hold(errors);
                outflow.through(through)?;
                continue;
            }
            Piece::Batch(batch) => batch,
        };
        let size = batch.len();
        // Every line up to the batch's last was read before it was handed
        // over: the refusals of those lines are all known once it is judged.
        let end = batch.records.iter().map(|n| n.line).max().unwrap_or(0);
        totals.largest = totals.largest.max(size);
        let batch = match pass {
            Pass::Judge => scan.contracts_redacted.clone().then(batch),
            _ => batch,
        };
        let mut report = store.ingest_redacted(batch, mode, ingester, now).await?;
        if pass == Pass::Judge && !contract_lines.is_empty() {
            report.unchanged -= contract_share.unchanged.min(report.unchanged);
            report
                .rejected
                .retain(|e| !contract_lines.contains(&e.line));
        }
        progress.advance(size);
        totals.batches += usize::from(pass != Pass::Judge);
        let stop = pass == Pass::Commit && !report.rejected.is_empty();
        totals.add(report, outflow);
        outflow.through(end)?;
        if stop {
            break;
        }
    }
    drop(receiver);
    let read = reading
        .join()
        .map_err(|_| IngestError::Store(StoreError::Other("the input reader stopped".into())))?;
    read.map_err(|error| IngestError::Read {
        source_name: input.path.display().to_string(),
        error,
    })?;
    outflow.through(usize::MAX)?;
    tracing::info!(
        pass = match pass {
            Pass::Judge => "judge",
            Pass::Commit => "commit",
            Pass::Quarantine => "quarantine",
        },
        batches = totals.batches,
        refused_lines = outflow.refusals.lines,
        seconds = started.elapsed().as_secs_f64(),
        "ingest: pass done"
    );
    Ok(totals)
}

/// A refused line as the rejects file keeps it: its text with every secret the
/// active redactor finds replaced by its marker, byte for byte otherwise. When the
/// line is JSON and redacting its text would break it (a PEM block cut short runs
/// to the end of the line) or leave a secret that hides behind JSON escapes
/// (`\u0073k_live_…`), it is written as its parsed JSON with every string value
/// redacted instead. A line that is not UTF-8 is redacted as its lossy text (its
/// bad bytes become U+FFFD) when it holds a secret, and kept as received when it
/// holds none. Re-ingesting a redacted line gives the record ingest would have
/// stored from the original, as markers are left alone by redaction.
pub fn redacted_line(bytes: &[u8]) -> Vec<u8> {
    use crate::core::redact::{redact, redact_value};
    use serde_json::Value;
    let text = String::from_utf8_lossy(bytes);
    let redacted = redact(&text);
    let as_text = |redacted: std::borrow::Cow<'_, str>| match redacted {
        // No secret: the line as received, bad bytes included.
        std::borrow::Cow::Borrowed(_) => bytes.to_vec(),
        std::borrow::Cow::Owned(redacted) => redacted.into_bytes(),
    };
    match serde_json::from_str::<Value>(&redacted) {
        Ok(mut value) => {
            if redact_value(&mut value).is_empty() {
                as_text(redacted)
            } else {
                value.to_string().into_bytes()
            }
        }
        Err(_) => match serde_json::from_str::<Value>(&text) {
            Ok(mut value) => {
                redact_value(&mut value);
                value.to_string().into_bytes()
            }
            Err(_) => as_text(redacted),
        },
    }
}

/// Reads, parses and commits `source` in batches of [`BATCH_RECORDS`]. Without
/// `rejects`, any bad line means nothing is committed; with it, good lines are
/// committed and bad ones written to it.
pub async fn ingest_source(
    store: &dyn Store,
    source: Source,
    rejects: Option<&Path>,
    ingester: &Ingester,
    now: DateTime<Utc>,
) -> Result<IngestOutcome, IngestError> {
    ingest_in_batches(store, source, rejects, ingester, now, BATCH_RECORDS).await
}

/// [`ingest_source`] with batches of about `batch_records` records (a batch only
/// ends where no operation's history continues past it).
pub async fn ingest_in_batches(
    store: &dyn Store,
    source: Source,
    rejects: Option<&Path>,
    ingester: &Ingester,
    now: DateTime<Utc>,
    batch_records: usize,
) -> Result<IngestOutcome, IngestError> {
    let mut ignore = |_: &LineError| {};
    ingest_streamed(
        store,
        source,
        rejects,
        ingester,
        now,
        batch_records,
        &mut ignore,
    )
    .await
}

/// [`ingest_in_batches`], handing every reason every line is refused for to
/// `on_refusal` as it is found, in line order (a line's reasons together),
/// while the outcome keeps their counts and the first
/// [`crate::bounded::INGEST_EXAMPLES`] ([`Refusals`]).
pub async fn ingest_streamed(
    store: &dyn Store,
    source: Source,
    rejects: Option<&Path>,
    ingester: &Ingester,
    now: DateTime<Utc>,
    batch_records: usize,
    on_refusal: &mut (dyn FnMut(&LineError) + Send),
) -> Result<IngestOutcome, IngestError> {
    let name = source.describe();
    let read_error = |error: io::Error| IngestError::Read {
        source_name: name.clone(),
        error,
    };
    let input = Input::open(&source).map_err(read_error)?;
    let progress = Progress::new(input.size());
    let started = std::time::Instant::now();
    let mut scan = scan(&input, &progress).map_err(read_error)?;
    if let Some(line) = scan.too_many_refused {
        progress.finish();
        return Err(IngestError::TooManyRefused {
            source_name: name,
            line,
            limit: crate::bounded::INGEST_REFUSED_LINES,
        });
    }
    tracing::info!(
        source = %name,
        lines = scan.lines,
        records = scan.records,
        seconds = started.elapsed().as_secs_f64(),
        "ingest: input scanned"
    );

    let errors = std::mem::take(&mut scan.errors);
    let unkept = std::mem::take(&mut scan.unkept);
    let mut outflow = Outflow {
        held: BTreeMap::new(),
        refusals: Refusals::new(),
        last_line: None,
        on_refusal,
        rejects: match rejects {
            Some(path) => Some(RejectsFile::create(path, &input, &unkept)?),
            None => None,
        },
    };
    outflow.hold(errors);
    let passes = Passes {
        store,
        input: &input,
        scan: &scan,
        batch_records,
        ingester,
        now,
        progress: &progress,
    };
    let totals = if rejects.is_some() {
        run_pass(&passes, Pass::Quarantine, &mut outflow).await
    } else {
        match run_pass(&passes, Pass::Judge, &mut outflow).await {
            Ok(judged) if outflow.refused() => {
                // Nothing is committed; every problem of the input is reported.
                Ok(Totals {
                    committed: BTreeMap::new(),
                    ..judged
                })
            }
            Ok(_) => run_pass(&passes, Pass::Commit, &mut outflow).await,
            Err(e) => Err(e),
        }
    };
    progress.finish();
    let totals = totals?;
    outflow.through(usize::MAX)?;
    if let Some(file) = outflow.rejects.take() {
        file.finish()?;
    }
    let committed = totals.committed();
    let committed_any = !committed.is_empty();
    Ok(IngestOutcome {
        source: name.clone(),
        lines: scan.lines,
        parsed: scan.parsed,
        committed,
        unchanged: totals.unchanged,
        rejected: outflow.refusals.finish(),
        committed_any,
        rejects_file: rejects.map(|path| path.display().to_string()),
        batches: totals.batches,
        largest_batch: totals.largest,
    })
}
