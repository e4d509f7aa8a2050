//! OTLP/JSON input: one `ExportTraceServiceRequest` document, or JSON Lines of
//! them (what the Collector's `file` exporter writes), gzip-compressed or not.
//! A document that does not decode is refused with its line and what serde
//! found wrong (the field it names).

use std::io::Read;

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

/// The requests of a document or of JSON Lines, each decoded or refused.
pub fn requests(bytes: &[u8]) -> Vec<Result<Numbered, LineError>> {
    let text = bytes;
    // One document (pretty-printed or not) first; JSON Lines when that fails and
    // the input has more than one non-blank line.
    let lines: Vec<(usize, &[u8])> = text
        .split(|b| *b == b'\n')
        .enumerate()
        .map(|(i, l)| (i + 1, l))
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace))
        .collect();
    if lines.len() <= 1 {
        let start = lines.first().map_or(1, |(n, _)| *n);
        return vec![decode_json(text, 1).map(|r| (start, r))];
    }
    if let Ok(request) = serde_json::from_slice::<ExportTraceServiceRequest>(text) {
        return vec![Ok((lines[0].0, request))];
    }
    lines
        .into_iter()
        .map(|(n, l)| decode_json(l, n).map(|r| (n, r)))
        .collect()
}
