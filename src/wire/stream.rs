//! Reading a whole wire file: byte lines of any length and encoding, every bad
//! line reported and kept verbatim for a rejects file, good lines parsed.
//!
//! Memory stays bounded per line: a line that fits in the reader's buffer is parsed
//! where it lies; a longer one is gathered up to [`KEEP_LIMIT`] bytes so that it can
//! still go to a rejects file verbatim. A line longer than that is counted but not
//! kept: it is refused, and its number is listed in [`ParsedStream::unkept`].

use std::io::{self, BufRead};

use super::read::{MAX_LINE_BYTES, parse_line, too_long_reason};
use super::{LineError, Numbered};

/// The longest refused line whose bytes are kept for a rejects file (16 MiB).
pub const KEEP_LIMIT: usize = 16 * 1_048_576;

/// Progress is reported after at least this many new bytes.
const PROGRESS_STEP: u64 = 256 * 1024;

/// The outcome of reading a whole wire file.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ParsedStream {
    /// The good records, in file order.
    pub records: Vec<Numbered>,
    /// Every error of every bad line, in file order.
    pub errors: Vec<LineError>,
    /// The verbatim bytes of each bad line (without its `\n`, with any `\r`), for a
    /// rejects file.
    pub bad_lines: Vec<(usize, Vec<u8>)>,
    /// Bad lines too long to keep (over [`KEEP_LIMIT`] bytes): refused, reported in
    /// `errors`, but missing from `bad_lines`.
    pub unkept: Vec<usize>,
    /// How many lines the file has, blank ones included.
    pub lines: usize,
}

impl ParsedStream {
    /// Whether every non-blank line parsed.
    pub fn is_clean(&self) -> bool {
        self.errors.is_empty()
    }
}

/// One judged line of a stream, handed to the sink of [`each_line`] as it is read.
#[allow(
    clippy::large_enum_variant,
    reason = "a line is moved once into its batch; boxing the record would add an allocation per ingested line"
)]
#[derive(Debug)]
pub enum Line<'a> {
    /// A line that parsed.
    Record(Numbered),
    /// A bad line: every reason, and its verbatim bytes (without its `\n`) when
    /// they were kept (a line over [`KEEP_LIMIT`] bytes is not).
    Bad {
        line: usize,
        errors: Vec<LineError>,
        bytes: Option<&'a [u8]>,
    },
}

/// Reads every line of `reader`; blank lines (whitespace only) are skipped and a
/// trailing `\r` is ignored. `progress` hears the number of bytes read so far.
pub fn parse_stream<R: BufRead>(
    reader: R,
    progress: &mut dyn FnMut(u64),
) -> io::Result<ParsedStream> {
    let mut out = ParsedStream::default();
    out.lines = each_line(reader, progress, &mut |line| match line {
        Line::Record(numbered) => out.records.push(numbered),
        Line::Bad {
            line,
            errors,
            bytes,
        } => {
            out.errors.extend(errors);
            match bytes {
                Some(bytes) => out.bad_lines.push((line, bytes.to_vec())),
                None => out.unkept.push(line),
            }
        }
    })?;
    Ok(out)
}

/// Reads `reader` line by line like [`parse_stream`], but hands each judged line
/// to `sink` as soon as it is read instead of keeping it: memory stays bounded by
/// the longest line whatever the size of the input. Returns how many lines the
/// input has, blank ones included.
pub fn each_line<R: BufRead>(
    reader: R,
    progress: &mut dyn FnMut(u64),
    sink: &mut dyn FnMut(Line<'_>),
) -> io::Result<usize> {
    each_line_hashed(reader, &|_| true, progress, sink)
}

/// [`each_line`], hashing the line of a record ([`Numbered::line_sha256`]) only
/// when `hash_line` says so: a pass that writes nothing has no use for the hashes.
pub fn each_line_hashed<R: BufRead>(
    mut reader: R,
    hash_line: &dyn Fn(&super::Record) -> bool,
    progress: &mut dyn FnMut(u64),
    sink: &mut dyn FnMut(Line<'_>),
) -> io::Result<usize> {
    let mut state = Lines {
        sink,
        hash_line,
        lines: 0,
        pending: Vec::new(),
        pending_len: 0,
    };
    let mut read: u64 = 0;
    let mut reported: u64 = 0;
    loop {
        let chunk = match reader.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            if state.pending_len > 0 {
                state.finish_gathered();
            }
            break;
        }
        let used = match memchr::memchr(b'\n', chunk) {
            Some(end) if state.pending_len == 0 => {
                state.finish(&chunk[..end], end as u64, true);
                end + 1
            }
            Some(end) => {
                state.gather(&chunk[..end]);
                state.finish_gathered();
                end + 1
            }
            None => {
                state.gather(chunk);
                chunk.len()
            }
        };
        reader.consume(used);
        read += used as u64;
        if read - reported >= PROGRESS_STEP {
            reported = read;
            progress(read);
        }
    }
    progress(read);
    Ok(state.lines)
}

struct Lines<'s> {
    sink: &'s mut dyn FnMut(Line<'_>),
    /// Whether a record's line is hashed.
    hash_line: &'s dyn Fn(&super::Record) -> bool,
    lines: usize,
    /// The bytes gathered of a line that spans reader buffers.
    pending: Vec<u8>,
    /// The length of that line so far, kept or not.
    pending_len: u64,
}

impl Lines<'_> {
    fn gather(&mut self, bytes: &[u8]) {
        self.pending_len += bytes.len() as u64;
        if self.pending_len <= KEEP_LIMIT as u64 {
            self.pending.extend_from_slice(bytes);
        } else if !self.pending.is_empty() {
            self.pending = Vec::new();
        }
    }

    fn finish_gathered(&mut self) {
        let pending = std::mem::take(&mut self.pending);
        let len = std::mem::take(&mut self.pending_len);
        let kept = len <= KEEP_LIMIT as u64;
        self.finish(&pending, len, kept);
        if pending.capacity() <= MAX_LINE_BYTES {
            self.pending = pending;
            self.pending.clear();
        }
    }

    /// Handles one complete line; `bytes` is the whole line when `kept`.
    fn finish(&mut self, bytes: &[u8], len: u64, kept: bool) {
        self.lines += 1;
        let line = self.lines;
        let body = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        let body_len = if kept { body.len() as u64 } else { len };
        let errors = if body_len > MAX_LINE_BYTES as u64 {
            vec![LineError {
                line,
                field: "-".into(),
                reason: too_long_reason(body_len),
            }]
        } else if body.iter().all(u8::is_ascii_whitespace) {
            return;
        } else {
            match parse_line(body, line) {
                Ok(record) => {
                    let line_sha256 =
                        (self.hash_line)(&record).then(|| crate::core::ids::Sha256::of(body));
                    (self.sink)(Line::Record(Numbered {
                        line,
                        record,
                        line_sha256,
                    }));
                    return;
                }
                Err(errors) => errors,
            }
        };
        (self.sink)(Line::Bad {
            line,
            errors,
            bytes: kept.then_some(bytes),
        });
    }
}
