//! OTLP/JSON input: one `ExportTraceServiceRequest` document, or JSON Lines of
//! them (what the Collector's `file` exporter writes), gzip-compressed or not.
//! A document that does not decode is refused with its line and what serde
//! found wrong (the field it names).

use std::io::{BufRead, Read};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;

use crate::wire::LineError;

/// Whether `bytes` start like a gzip stream.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// Why a gzip body could not be inflated.
#[derive(Debug, thiserror::Error)]
pub enum InflateError {
    #[error("more than {0} bytes once inflated")]
    TooLarge(u64),
    #[error("not a gzip stream: {0}")]
    Bad(std::io::Error),
}

/// `bytes` inflated when they are gzip, at most `limit` bytes of output.
pub fn inflate(bytes: Vec<u8>, limit: u64) -> Result<Vec<u8>, InflateError> {
    if !is_gzip(&bytes) {
        return Ok(bytes);
    }
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(bytes.as_slice())
        .take(limit.saturating_add(1))
        .read_to_end(&mut out)
        .map_err(InflateError::Bad)?;
    if out.len() as u64 > limit {
        return Err(InflateError::TooLarge(limit));
    }
    Ok(out)
}

/// One decoded request with the line it starts on.
pub type Numbered = (usize, ExportTraceServiceRequest);

/// Decodes one OTLP/JSON request.
pub fn decode_json(text: &[u8], line: usize) -> Result<ExportTraceServiceRequest, LineError> {
    serde_json::from_slice(text).map_err(|e| LineError {
        line: line + e.line().saturating_sub(1),
        field: "-".into(),
        reason: format!(
            "not an OTLP/JSON ExportTraceServiceRequest: {} (column {})",
            strip_position(&e.to_string()),
            e.column()
        ),
    })
}

fn strip_position(message: &str) -> &str {
    message.split(" at line ").next().unwrap_or(message)
}

/// An input of any size read one request at a time: a whole document when the
/// input (once inflated) is within [`crate::bounded::OTLP_DOCUMENT_BYTES`] and
/// decodes as one, else JSON Lines, each line within that bound. Each request
/// comes with its text when `keep_text` (for a rejects file).
pub struct Requests {
    /// A whole document, handed out once.
    document: Option<Piece>,
    lines: Option<Lines>,
    /// The number of the line read next.
    next: usize,
    keep_text: bool,
    line: Vec<u8>,
}

/// What was read to tell a document from lines, then the rest of the input.
type Lines = std::io::Chain<std::io::Cursor<Vec<u8>>, Box<dyn BufRead + Send>>;

/// `reader` as text: inflated when it starts like gzip.
pub fn inflating(mut reader: Box<dyn BufRead + Send>) -> std::io::Result<Box<dyn BufRead + Send>> {
    if is_gzip(reader.fill_buf()?) {
        Ok(Box::new(std::io::BufReader::with_capacity(
            1 << 16,
            flate2::bufread::MultiGzDecoder::new(reader),
        )))
    } else {
        Ok(reader)
    }
}

impl Requests {
    /// Reads the start of `reader` (inflated already) to tell a document from
    /// JSON Lines.
    pub fn new(mut reader: Box<dyn BufRead + Send>, keep_text: bool) -> std::io::Result<Requests> {
        let limit = crate::bounded::OTLP_DOCUMENT_BYTES;
        let mut start = Vec::new();
        (&mut reader)
            .take(limit.saturating_add(1))
            .read_to_end(&mut start)?;
        let mut requests = Requests {
            document: None,
            lines: None,
            next: 1,
            keep_text,
            line: Vec::new(),
        };
        if start.len() as u64 <= limit {
            let mut nonblank = start
                .split(|b| *b == b'\n')
                .enumerate()
                .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace));
            let first = nonblank.next().map_or(1, |(i, _)| i + 1);
            let single = nonblank.next().is_none();
            if single {
                let decoded = decode_json(&start, 1).map(|r| (first, r));
                requests.document = Some((decoded, start));
                return Ok(requests);
            }
            if let Ok(request) = serde_json::from_slice::<ExportTraceServiceRequest>(&start) {
                requests.document = Some((Ok((first, request)), start));
                return Ok(requests);
            }
        }
        requests.lines = Some(std::io::Cursor::new(start).chain(reader));
        Ok(requests)
    }

    /// Reads the next line into `self.line`, keeping at most the bound and
    /// one byte more; `None` at the end.
    fn read_line(&mut self) -> Option<std::io::Result<usize>> {
        let reader = self.lines.as_mut()?;
        let limit = usize::try_from(crate::bounded::OTLP_DOCUMENT_BYTES).unwrap_or(usize::MAX);
        self.line.clear();
        let mut any = false;
        loop {
            let chunk = match reader.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Some(Err(e)),
            };
            if chunk.is_empty() {
                if !any {
                    self.lines = None;
                    return None;
                }
                break;
            }
            any = true;
            let (used, end) = match memchr::memchr(b'\n', chunk) {
                Some(at) => (at + 1, Some(at)),
                None => (chunk.len(), None),
            };
            let room = (limit + 1).saturating_sub(self.line.len());
            let take = end.unwrap_or(used).min(room);
            self.line.extend_from_slice(&chunk[..take]);
            reader.consume(used);
            if end.is_some() {
                break;
            }
        }
        let number = self.next;
        self.next += 1;
        Some(Ok(number))
    }
}

/// One request read, or refused with its line, with its text when kept.
pub type Piece = (Result<Numbered, LineError>, Vec<u8>);

impl Iterator for Requests {
    type Item = std::io::Result<Piece>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some((decoded, text)) = self.document.take() {
            let text = if self.keep_text { text } else { Vec::new() };
            return Some(Ok((decoded, text)));
        }
        loop {
            let number = match self.read_line()? {
                Ok(number) => number,
                Err(e) => return Some(Err(e)),
            };
            if self.line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let limit = crate::bounded::OTLP_DOCUMENT_BYTES;
            if self.line.len() as u64 > limit {
                let refused = LineError {
                    line: number,
                    field: "-".into(),
                    reason: format!(
                        "longer than {limit} bytes ({}); refused unread (split the request)",
                        crate::bounded::human(limit)
                    ),
                };
                // Too long to keep for a rejects file.
                return Some(Ok((Err(refused), Vec::new())));
            }
            let decoded = decode_json(&self.line, number).map(|r| (number, r));
            let text = if self.keep_text {
                self.line.clone()
            } else {
                Vec::new()
            };
            return Some(Ok((decoded, text)));
        }
    }
}
