//! Ingest from a file or stdin: read and parse wire format v1 line by line, let the
//! store plan and commit the batch in one transaction, and account for every line —
//! committed, already stored, or refused with its line, field and rule. Strict by
//! default: one bad line and nothing is committed. With a rejects file the good lines
//! are committed and the bad ones are written there verbatim.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{self, BufRead, BufReader, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::core::names::count;
use crate::store::plan::ingest::{own_operation, withheld_reason};
use crate::store::{IngestMode, Store, StoreError};
use crate::wire::{LineError, Numbered, parse_stream};

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
        }
        if let Some(file) = &self.rejects_file {
            line.push_str(&format!(" — refused lines written to {file}"));
        }
        line
    }
}

/// A progress bar on stderr for large inputs, only when stderr is a terminal.
fn progress_bar(total: Option<u64>) -> Option<indicatif::ProgressBar> {
    const LARGE: u64 = 4 * 1024 * 1024;
    if !io::stderr().is_terminal() || total.is_some_and(|t| t < LARGE) {
        return None;
    }
    let bar = match total {
        Some(total) => indicatif::ProgressBar::new(total),
        None => indicatif::ProgressBar::new_spinner(),
    };
    let style = indicatif::ProgressStyle::with_template(
        "{spinner} reading {bytes}/{total_bytes} [{bar:30}] {bytes_per_sec} eta {eta}",
    )
    .map(|s| s.progress_chars("=> "));
    if let Ok(style) = style {
        bar.set_style(style);
    }
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
    Some(bar)
}

/// The verbatim bytes of the given lines (1-based), without their `\n`.
fn extract_lines(
    reader: impl BufRead,
    wanted: &BTreeSet<usize>,
) -> io::Result<Vec<(usize, Vec<u8>)>> {
    let mut out = Vec::new();
    for (index, line) in reader.split(b'\n').enumerate() {
        let line = line?;
        if wanted.contains(&(index + 1)) {
            out.push((index + 1, line));
        }
        if out.len() == wanted.len() {
            break;
        }
    }
    Ok(out)
}

/// Takes out of `records` every record of an operation a refused line names, so
/// that a committed operation never lacks evidence its committed transitions cite;
/// returns why each was refused.
fn withhold_histories(
    records: &mut Vec<Numbered>,
    bad_lines: &[(usize, Vec<u8>)],
) -> Vec<LineError> {
    let mut refused: BTreeMap<String, usize> = BTreeMap::new();
    for (line, bytes) in bad_lines {
        if let Some(op) = crate::wire::operation_named(bytes) {
            refused.entry(op).or_insert(*line);
        }
    }
    let mut errors = Vec::new();
    records.retain(|numbered| {
        let first =
            own_operation(&numbered.record).and_then(|op| refused.get(op).map(|l| (op, *l)));
        match first {
            Some((op, line)) => {
                errors.push(LineError {
                    line: numbered.line,
                    field: "-".into(),
                    reason: withheld_reason(op, line),
                });
                false
            }
            None => true,
        }
    });
    errors
}

/// Reads, parses and commits `source`. Without `rejects`, any bad line means nothing
/// is committed; with it, good lines are committed and bad ones written to it.
pub async fn ingest_source(
    store: &dyn Store,
    source: Source,
    rejects: Option<&Path>,
    by: &str,
    now: DateTime<Utc>,
) -> Result<IngestOutcome, IngestError> {
    let name = source.describe();
    let read_error = |error: io::Error| IngestError::Read {
        source_name: name.clone(),
        error,
    };
    // Stdin cannot be read twice; it is kept in memory when its refused lines may
    // be needed again for the rejects file.
    let mut stdin_copy: Option<Vec<u8>> = None;
    let (reader, size): (Box<dyn BufRead>, Option<u64>) = match &source {
        Source::Path(path) => {
            let file = File::open(path).map_err(read_error)?;
            let size = file.metadata().ok().map(|m| m.len());
            (Box::new(BufReader::with_capacity(1 << 16, file)), size)
        }
        Source::Stdin if rejects.is_some() => {
            let mut buffer = Vec::new();
            io::stdin()
                .lock()
                .read_to_end(&mut buffer)
                .map_err(read_error)?;
            let size = buffer.len() as u64;
            stdin_copy = Some(buffer.clone());
            (Box::new(io::Cursor::new(buffer)), Some(size))
        }
        Source::Stdin => (Box::new(BufReader::new(io::stdin())), None),
    };
    let bar = progress_bar(size);
    let parsed = parse_stream(reader, &mut |bytes| {
        if let Some(bar) = &bar {
            bar.set_position(bytes);
        }
    })
    .map_err(read_error)?;
    // Checking and committing a large batch takes a while too: say so.
    let working = bar.map(|bar| {
        bar.finish_and_clear();
        let spinner = indicatif::ProgressBar::new_spinner();
        spinner.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        spinner.set_message(format!(
            "checking and committing {} records in one transaction",
            parsed.records.len()
        ));
        spinner.enable_steady_tick(std::time::Duration::from_millis(120));
        spinner
    });

    let mut parsed_counts: Vec<(String, u64)> = Vec::new();
    for record in &parsed.records {
        let name = record.record.type_name();
        match parsed_counts.iter_mut().find(|(t, _)| t == name) {
            Some((_, n)) => *n += 1,
            None => parsed_counts.push((name.to_owned(), 1)),
        }
    }
    let record_lines: Vec<usize> = parsed.records.iter().map(|r| r.line).collect();
    let mut parsed = parsed;
    if rejects.is_some() {
        let withheld = withhold_histories(&mut parsed.records, &parsed.bad_lines);
        parsed.errors.extend(withheld);
    }
    let mode = match (rejects.is_some(), parsed.is_clean()) {
        (true, _) => IngestMode::Quarantine,
        (false, true) => IngestMode::Strict,
        // Bad lines already: still judge the good ones, so that every problem of
        // the file is reported at once, but commit nothing.
        (false, false) => IngestMode::DryRun,
    };
    let report = store.ingest(parsed.records, mode, by, now).await;
    if let Some(spinner) = working {
        spinner.finish_and_clear();
    }
    let report = report?;
    let mut rejected = parsed.errors;
    rejected.extend(report.rejected);
    rejected.sort_by_key(|e| e.line);
    let committed_any = report.committed.iter().any(|(_, n)| *n > 0);

    let mut outcome = IngestOutcome {
        source: name.clone(),
        lines: parsed.lines,
        parsed: parsed_counts,
        committed: report.committed,
        unchanged: report.unchanged,
        rejected,
        committed_any,
        rejects_file: None,
    };

    if let Some(path) = rejects {
        let refused_records: BTreeSet<usize> = outcome
            .rejected
            .iter()
            .map(|e| e.line)
            .filter(|line| record_lines.binary_search(line).is_ok())
            .collect();
        let mut lines = parsed.bad_lines;
        if !refused_records.is_empty() {
            let again: Box<dyn BufRead> = match (&source, stdin_copy) {
                (Source::Path(p), _) => {
                    Box::new(BufReader::new(File::open(p).map_err(read_error)?))
                }
                (Source::Stdin, Some(buffer)) => Box::new(io::Cursor::new(buffer)),
                (Source::Stdin, None) => Box::new(io::Cursor::new(Vec::new())),
            };
            lines.extend(extract_lines(again, &refused_records).map_err(read_error)?);
        }
        lines.sort_by_key(|(line, _)| *line);
        let write = || -> io::Result<()> {
            let mut file = io::BufWriter::new(File::create(path)?);
            for (_, bytes) in &lines {
                file.write_all(bytes)?;
                file.write_all(b"\n")?;
            }
            file.flush()
        };
        write().map_err(|error| IngestError::Rejects {
            path: path.display().to_string(),
            error,
        })?;
        outcome.rejects_file = Some(path.display().to_string());
    }
    Ok(outcome)
}
