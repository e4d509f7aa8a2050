//! Every file holdfast reads on a user's word is read within a bound written down
//! here (and in docs/security.md, "Bounded inputs"), so that no file — `/dev/zero`, a
//! line without end, a count of four billion — can make it hold more than a small,
//! known amount of memory. A file over its bound is refused with a message that
//! names the file, the line where it matters, and the limit; nothing of it is used.
//!
//! The bound is enforced while reading (at most `limit + 1` bytes are ever read), so
//! a file that never ends is refused as soon as it passes its limit.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

/// A digest file (`audit verify --digest`): `SEQ HASH` is under 100 bytes.
pub const DIGEST_BYTES: u64 = 4 * 1024;
/// The config file.
pub const CONFIG_BYTES: u64 = 1024 * 1024;
/// A drill case file (`--cases`).
pub const CASES_BYTES: u64 = 4 * 1024 * 1024;
/// One line of a drill case file.
pub const CASE_LINE_BYTES: usize = 256 * 1024;
/// Cases in one case file.
pub const MAX_CASES: usize = 1_000;
/// Batch items of one drill case (`operation.items`).
pub const MAX_CASE_ITEMS: u32 = 1_000;
/// Dependent operations of one drill case (`operation.dependents`).
pub const MAX_CASE_DEPENDENTS: u32 = 100;
/// Executors racing for one drill case (`operation.concurrent`).
pub const MAX_CASE_CONCURRENT: u32 = 32;
/// Later deliveries of one drill case (`operation.deliveries`).
pub const MAX_CASE_DELIVERIES: usize = 100;
/// Provider rules of one drill case (`provider`).
pub const MAX_CASE_RULES: usize = 1_000;
/// The longest gap before a later delivery (`deliveries[].after_seconds`): 30 days.
pub const MAX_CASE_AFTER_SECONDS: u64 = 30 * 24 * 3600;
/// A drill case's contract budget (`contract.budget_seconds`), from which the
/// drill computes its operation's deadline: 30 days.
pub const MAX_CASE_BUDGET_SECONDS: u32 = 30 * 24 * 3600;
/// A work completion file (`work complete --file`) or an observation file
/// (`review --observation`): one operation's records.
pub const RECORD_FILE_BYTES: u64 = 4 * 1024 * 1024;
/// Records in a work completion or observation file.
pub const RECORD_FILE_RECORDS: usize = 10_000;
/// Lines an ingest may refuse before it gives up on the input as a whole: past
/// this, the input is not a wire file with some bad lines but something else, and
/// keeping every refusal would grow without end.
pub const INGEST_REFUSED_LINES: usize = 100_000;
/// Reasons for refused lines an ingest's account keeps (its `--json` output's
/// `examples`); every refusal is handed out as it is found and counted, the
/// rest are not kept.
pub const INGEST_EXAMPLES: usize = 100;
/// Rules (or fields) an ingest's account counts refusals under; refusals of
/// any further one are counted as `other`.
pub const INGEST_RULES_COUNTED: usize = 64;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum BoundError {
    #[error("cannot read {what} {path}: {error}")]
    Read {
        what: &'static str,
        path: String,
        error: io::Error,
    },
    #[error(
        "{what} {path} is larger than {limit} bytes ({}); refused unread",
        human(*.limit)
    )]
    TooLarge {
        what: &'static str,
        path: String,
        limit: u64,
    },
    #[error("{what} {path} is not UTF-8 text")]
    NotText { what: &'static str, path: String },
    #[error("{what} {path}: line {line}: more than {limit} records; at most {limit} are allowed")]
    TooMany {
        what: &'static str,
        path: String,
        line: usize,
        limit: usize,
    },
}

/// Reads a small wire file (a work completion file, an observation file) within
/// [`RECORD_FILE_BYTES`] and [`RECORD_FILE_RECORDS`]: every line judged as ingest
/// judges it, the whole file refused when it is over either bound.
pub fn read_records(
    path: &Path,
    what: &'static str,
) -> Result<crate::wire::ParsedStream, BoundError> {
    let read_error = |error| BoundError::Read {
        what,
        path: path.display().to_string(),
        error,
    };
    let mut reader = Bounded::open(path, RECORD_FILE_BYTES).map_err(read_error)?;
    let parsed = crate::wire::parse_stream(&mut reader, &mut |_| {}).map_err(read_error)?;
    if reader.over() {
        return Err(reader.refusal(what, path));
    }
    if let Some(past) = parsed.records.get(RECORD_FILE_RECORDS) {
        return Err(BoundError::TooMany {
            what,
            path: path.display().to_string(),
            line: past.line,
            limit: RECORD_FILE_RECORDS,
        });
    }
    Ok(parsed)
}

/// A byte count in the unit a person reads.
pub fn human(bytes: u64) -> String {
    if bytes >= 1024 * 1024 && bytes.is_multiple_of(1024 * 1024) {
        format!("{} MiB", bytes / (1024 * 1024))
    } else if bytes >= 1024 && bytes.is_multiple_of(1024) {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// Reads at most `limit` bytes of `path` as text; a longer file is refused without
/// reading past `limit + 1` bytes.
pub fn read_text(path: &Path, what: &'static str, limit: u64) -> Result<String, BoundError> {
    let name = path.display().to_string();
    let read_error = |error| BoundError::Read {
        what,
        path: name.clone(),
        error,
    };
    let file = File::open(path).map_err(read_error)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(read_error)?;
    if bytes.len() as u64 > limit {
        return Err(BoundError::TooLarge {
            what,
            path: name,
            limit,
        });
    }
    String::from_utf8(bytes).map_err(|_| BoundError::NotText { what, path: name })
}

/// A reader of at most `limit + 1` bytes of `path`; [`Bounded::over`] says
/// afterwards whether the file went past `limit`.
pub struct Bounded {
    inner: BufReader<io::Take<File>>,
    limit: u64,
}

impl Bounded {
    pub fn open(path: &Path, limit: u64) -> io::Result<Bounded> {
        let file = File::open(path)?;
        Ok(Bounded {
            inner: BufReader::new(file.take(limit.saturating_add(1))),
            limit,
        })
    }

    /// Whether more than the limit was read: the file is larger than allowed.
    pub fn over(&self) -> bool {
        self.inner.get_ref().limit() == 0
    }

    /// The refusal for a file over its limit.
    pub fn refusal(&self, what: &'static str, path: &Path) -> BoundError {
        BoundError::TooLarge {
            what,
            path: path.display().to_string(),
            limit: self.limit,
        }
    }
}

impl Read for Bounded {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf)
    }
}

impl BufRead for Bounded {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.inner.fill_buf()
    }

    fn consume(&mut self, amount: usize) {
        self.inner.consume(amount)
    }
}

/// The most one OpenTelemetry request may hold in a file (a whole document,
/// or one line of JSON Lines), once inflated. A file of any size is read a
/// chunk of requests at a time: a span that waits for its tool span waits in
/// the store, not in memory.
pub const OTLP_DOCUMENT_BYTES: u64 = 16 * 1024 * 1024;
/// Spans taken into the store at once from a file (whole requests: a chunk
/// ends after the request that reaches this).
pub const OTLP_CHUNK_SPANS: usize = 4_000;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_past_its_limit_is_refused_after_reading_one_byte_more() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "x".repeat(11)).unwrap();
        assert!(matches!(
            read_text(&path, "test file", 10),
            Err(BoundError::TooLarge { limit: 10, .. })
        ));
        assert_eq!(read_text(&path, "test file", 11).unwrap().len(), 11);
        let mut reader = Bounded::open(&path, 10).unwrap();
        let mut all = Vec::new();
        reader.read_to_end(&mut all).unwrap();
        assert_eq!(all.len(), 11);
        assert!(reader.over());
        let mut reader = Bounded::open(&path, 11).unwrap();
        reader.read_to_end(&mut all).unwrap();
        assert!(!reader.over());
    }

    #[test]
    fn an_endless_file_is_refused() {
        let zero = Path::new("/dev/zero");
        if zero.exists() {
            let error = read_text(zero, "digest file", DIGEST_BYTES).unwrap_err();
            assert!(error.to_string().contains("larger than 4096 bytes (4 KiB)"));
        }
    }

    #[test]
    fn sizes_read_as_people_write_them() {
        assert_eq!(human(4 * 1024 * 1024), "4 MiB");
        assert_eq!(human(4096), "4 KiB");
        assert_eq!(human(100), "100 bytes");
    }
}
