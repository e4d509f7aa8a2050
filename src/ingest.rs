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

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, BufRead, BufReader, IsTerminal, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::core::names::count;
use crate::store::plan::chunk::{Batcher, Reach};
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
        "{source_name}: line {line}: more than {limit} lines refused; this is not a wire file with some bad lines, so nothing was committed (see README, \"Bounded inputs\")"
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
    /// Every reason every refused line was refused, in line order.
    pub rejected: Vec<LineError>,
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
    pub fn errors(&self) -> &[LineError] {
        &self.rejected
    }

    /// Lines refused, each once.
    pub fn rejected_lines(&self) -> usize {
        self.rejected
            .iter()
            .map(|e| e.line)
            .collect::<BTreeSet<_>>()
            .len()
    }

    /// Whether input was refused (the exit code says so even in quarantine mode).
    pub fn refused(&self) -> bool {
        !self.rejected.is_empty()
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

/// The style of a progress bar that counts records, with their rate and an ETA.
fn records_style(verb: &str) -> Option<indicatif::ProgressStyle> {
    indicatif::ProgressStyle::with_template(&format!(
        "{{spinner}} {verb} {{human_pos}}/{{human_len}} records [{{bar:30}}] {{per_sec}} eta {{eta}}"
    ))
    .map(|s| s.progress_chars("=> "))
    .ok()
}

/// A progress bar on stderr for large inputs, only when stderr is a terminal: bytes
/// while the input is first read, then records with their rate and an ETA.
struct Progress {
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    fn new(size: u64) -> Progress {
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
        if let Some(bar) = &self.bar {
            bar.reset();
            bar.set_length(total);
            bar.set_position(0);
            if let Some(style) = records_style(verb) {
                bar.set_style(style);
            }
        }
    }

    fn advance(&self, records: usize) {
        if let Some(bar) = &self.bar {
            bar.inc(records as u64);
        }
    }

    fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// The input as a file that can be read more than once: the file itself, or
/// stdin spooled to a temporary file removed when this is dropped.
struct Input {
    path: PathBuf,
    spooled: bool,
}

impl Input {
    fn open(source: &Source) -> io::Result<Input> {
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

    fn reader(&self) -> io::Result<BufReader<File>> {
        Ok(BufReader::with_capacity(1 << 16, File::open(&self.path)?))
    }

    fn size(&self) -> u64 {
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
    reach: std::sync::Arc<Reach>,
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
    out.reach = std::sync::Arc::new(reach);
    out.contracts_redacted = redaction::redact(out.contracts.clone());
    Ok(out)
}

/// Adds one batch's report to the running totals.
#[derive(Default)]
struct Totals {
    committed: BTreeMap<String, u64>,
    unchanged: u64,
    rejected: Vec<LineError>,
    batches: usize,
    largest: usize,
}

impl Totals {
    fn add(&mut self, report: IngestReport) {
        for (kind, n) in report.committed {
            *self.committed.entry(kind).or_default() += n;
        }
        self.unchanged += report.unchanged;
        self.rejected.extend(report.rejected);
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

/// One pass over the input after the scan, batch by batch.
async fn run_pass(passes: &Passes<'_>, pass: Pass) -> Result<Totals, IngestError> {
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
        totals.add(report);
        if stop {
            return Ok(totals);
        }
    }
    let contract_lines: BTreeSet<usize> = scan.contracts.iter().map(|n| n.line).collect();

    let (sender, mut receiver) = tokio::sync::mpsc::channel::<Redacted>(1);
    let reader = input.reader().map_err(|error| IngestError::Read {
        source_name: input.path.display().to_string(),
        error,
    })?;
    let withheld = Vec::<LineError>::new();
    let withheld = std::sync::Arc::new(std::sync::Mutex::new(withheld));
    let refused_operations = scan.refused_operations.clone();
    let quarantine = pass == Pass::Quarantine;
    // A line's hash is kept with what it redacts, so only a pass that writes needs it.
    let hash_lines = pass != Pass::Judge;
    // Parsing and redacting run on their own thread and hand over whole batches,
    // so that the next batch is read while the store plans and writes this one.
    let reading = {
        let withheld = std::sync::Arc::clone(&withheld);
        let reach = std::sync::Arc::clone(&scan.reach);
        std::thread::spawn(move || -> io::Result<()> {
            let mut batcher = Batcher::new(&reach, batch_records);
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
                    if let Ok(mut withheld) = withheld.lock() {
                        withheld.push(LineError {
                            line: numbered.line,
                            field: "-".into(),
                            reason: withheld_reason(op, *first),
                        });
                    }
                    return;
                }
                if let Some(batch) = batcher.push(numbered) {
                    closed = sender.blocking_send(redaction::redact(batch)).is_err();
                }
            })?;
            let last = batcher.finish();
            if !closed && !last.is_empty() {
                let _ = sender.blocking_send(redaction::redact(last));
            }
            Ok(())
        })
    };
    while let Some(batch) = receiver.recv().await {
        let size = batch.len();
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
        totals.add(report);
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
    if let Ok(mut withheld) = withheld.lock() {
        totals.rejected.append(&mut withheld);
    }
    tracing::info!(
        pass = match pass {
            Pass::Judge => "judge",
            Pass::Commit => "commit",
            Pass::Quarantine => "quarantine",
        },
        batches = totals.batches,
        rejected = totals.rejected.len(),
        seconds = started.elapsed().as_secs_f64(),
        "ingest: pass done"
    );
    Ok(totals)
}

/// Hands the verbatim bytes of the given lines (1-based), without their `\n`, to
/// `found` one at a time, holding one line at most: a line is gathered only when
/// it is wanted, and lines longer than [`crate::wire::KEEP_LIMIT`] are never wanted
/// (they are refused unkept).
fn extract_lines(
    mut reader: impl BufRead,
    wanted: &BTreeSet<usize>,
    found: &mut dyn FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<()> {
    let Some(&last) = wanted.last() else {
        return Ok(());
    };
    let mut line = 1usize;
    let mut current: Vec<u8> = Vec::new();
    loop {
        let chunk = match reader.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            if wanted.contains(&line) && !current.is_empty() {
                found(&current)?;
            }
            return Ok(());
        }
        let keep = wanted.contains(&line);
        let (used, ended) = match memchr::memchr(b'\n', chunk) {
            Some(end) => (end + 1, Some(end)),
            None => (chunk.len(), None),
        };
        if keep && current.len() <= crate::wire::KEEP_LIMIT {
            current.extend_from_slice(&chunk[..ended.unwrap_or(used)]);
        }
        reader.consume(used);
        if ended.is_some() {
            if keep {
                found(&current)?;
            }
            current.clear();
            if line == last {
                return Ok(());
            }
            line += 1;
        }
    }
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
    let name = source.describe();
    let read_error = |error: io::Error| IngestError::Read {
        source_name: name.clone(),
        error,
    };
    let input = Input::open(&source).map_err(read_error)?;
    let progress = Progress::new(input.size());
    let started = std::time::Instant::now();
    let scan = scan(&input, &progress).map_err(read_error)?;
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

    let mut rejected = scan.errors.clone();
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
        run_pass(&passes, Pass::Quarantine).await
    } else {
        match run_pass(&passes, Pass::Judge).await {
            Ok(judged) if !rejected.is_empty() || !judged.rejected.is_empty() => {
                // Nothing is committed; every problem of the input is reported.
                Ok(Totals {
                    committed: BTreeMap::new(),
                    ..judged
                })
            }
            Ok(_) => run_pass(&passes, Pass::Commit).await,
            Err(e) => Err(e),
        }
    };
    progress.finish();
    let totals = totals?;
    rejected.extend(totals.rejected.iter().cloned());
    rejected.sort_by_key(|e| e.line);
    let committed = totals.committed();
    let committed_any = !committed.is_empty();

    let mut outcome = IngestOutcome {
        source: name.clone(),
        lines: scan.lines,
        parsed: scan.parsed,
        committed,
        unchanged: totals.unchanged,
        rejected,
        committed_any,
        rejects_file: None,
        batches: totals.batches,
        largest_batch: totals.largest,
    };

    if let Some(path) = rejects {
        let wanted: BTreeSet<usize> = outcome
            .rejected
            .iter()
            .map(|e| e.line)
            .filter(|line| !scan.unkept.contains(line))
            .collect();
        let reader = input.reader().map_err(read_error)?;
        let rejects_error = |error| IngestError::Rejects {
            path: path.display().to_string(),
            error,
        };
        let mut file = io::BufWriter::new(File::create(path).map_err(rejects_error)?);
        // Written line by line as found, so the rejects file costs one line of
        // memory whatever the number of refused lines.
        let mut write_error = None;
        extract_lines(reader, &wanted, &mut |bytes| {
            let written = file
                .write_all(&redacted_line(bytes))
                .and_then(|()| file.write_all(b"\n"));
            if let Err(error) = written {
                write_error = Some(io::Error::new(error.kind(), error.to_string()));
                return Err(error);
            }
            Ok(())
        })
        .map_err(|error| match write_error.take() {
            Some(error) => rejects_error(error),
            None => read_error(error),
        })?;
        file.flush().map_err(rejects_error)?;
        outcome.rejects_file = Some(path.display().to_string());
    }
    Ok(outcome)
}
