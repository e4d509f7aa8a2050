//! `ingest --format otlp` on a file of any size: its requests are read on their
//! own thread and taken into the store a chunk at a time (whole requests, about
//! [`crate::bounded::OTLP_CHUNK_SPANS`] spans), so what is held at once is one
//! chunk, never the file. A child whose tool span comes in a later chunk waits
//! in the store (`otlp_pending`) and joins it there, as across two requests of
//! the receiver. Strict (the default): the whole input is read once first and
//! nothing is committed if any request or span is refused; then each chunk is
//! judged before it is committed, and a chunk the store refuses stops the rest.
//!
//! It hands the store to the door ([`super::door`]), which writes as its
//! identity; it reads nothing itself.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use chrono::{DateTime, Utc};

use super::door::{OtlpOutcome, Strictness, Taken, take};
use super::read::{Piece, Requests};
use super::settings::OtlpSettings;
use super::span;
use crate::store::{Ingester, Store};
use crate::wire::LineError;

/// Opens the input again from its start (inflated), for each pass over it.
pub type Open<'a> = &'a (dyn Fn() -> std::io::Result<Box<dyn BufRead + Send>> + Sync);

/// Why a file was not taken in.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot read {0}: {1}")]
    Read(String, std::io::Error),
    #[error("cannot write the rejects file {0}: {1}")]
    Rejects(String, std::io::Error),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
}

/// What one file intake needs besides its input.
pub struct FileIntake<'a> {
    pub store: &'a dyn Store,
    pub source: &'a str,
    pub settings: &'a OtlpSettings,
    pub ingester: &'a Ingester,
    pub now: DateTime<Utc>,
    /// Spans per chunk.
    pub chunk_spans: usize,
    /// The input's size in bytes: a large one shows a progress bar on stderr
    /// (when it is a terminal), in spans.
    pub size: u64,
}

/// Takes the input `open` reads into the store; each refusal handed to
/// `on_refusal` as it is found, and its request written (redacted) to
/// `rejects` when there is one: then the good spans are committed.
pub async fn intake_file(
    door: &FileIntake<'_>,
    open: Open<'_>,
    mut rejects: Option<(&std::path::Path, &mut dyn Write)>,
    on_refusal: &mut dyn FnMut(&LineError),
) -> Result<OtlpOutcome, FileError> {
    let strictness = if rejects.is_some() {
        Strictness::KeepGood
    } else {
        Strictness::Strict
    };
    let read_error = |e| FileError::Read(door.source.to_owned(), e);
    let progress = crate::ingest::Progress::new(door.size);
    let mut total = None;
    if strictness == Strictness::Strict {
        // Every request and span read before anything is committed.
        progress.counting("checking", "spans", None);
        let mut checked = OtlpOutcome::new(door.source);
        let mut chunks = Chunks::start(open, false, door.chunk_spans).map_err(read_error)?;
        while let Some(chunk) = chunks.next().await {
            let chunk = check(chunk.map_err(read_error)?);
            progress.advance(chunk.spans);
            checked.add(chunk, on_refusal);
        }
        if checked.refused() {
            progress.finish();
            checked.waiting = door.store.otlp_waiting_count().await?;
            return Ok(checked.finish());
        }
        total = Some(checked.spans as u64);
    }
    progress.counting("taking", "spans", total);
    let mut outcome = OtlpOutcome::new(door.source);
    let mut chunks =
        Chunks::start(open, rejects.is_some(), door.chunk_spans).map_err(read_error)?;
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(read_error)?;
        let texts: BTreeMap<usize, Vec<u8>> = chunk
            .iter()
            .filter(|(_, text)| !text.is_empty())
            .map(|(read, text)| (line_of(read), text.clone()))
            .collect();
        let requests = chunk.into_iter().map(|(read, _)| read).collect();
        let taken = take(
            door.store,
            requests,
            door.settings,
            door.ingester,
            strictness,
            door.now,
        )
        .await?;
        if let Some((path, file)) = rejects.as_mut() {
            let mut lines: Vec<usize> = taken.rejected.iter().map(|e| e.line).collect();
            lines.dedup();
            for line in lines {
                if let Some(text) = texts.get(&line) {
                    file.write_all(&crate::ingest::redacted_line(text))
                        .and_then(|()| file.write_all(b"\n"))
                        .map_err(|e| FileError::Rejects(path.display().to_string(), e))?;
                }
            }
        }
        let stop = strictness == Strictness::Strict && !taken.rejected.is_empty();
        progress.advance(taken.spans);
        outcome.add(taken, on_refusal);
        if stop {
            break;
        }
    }
    progress.finish();
    if let Some((path, file)) = rejects.as_mut() {
        file.flush()
            .map_err(|e| FileError::Rejects(path.display().to_string(), e))?;
    }
    Ok(outcome.finish())
}

/// The line a read request starts on, or the line it was refused at.
fn line_of(read: &Result<super::read::Numbered, LineError>) -> usize {
    match read {
        Ok((line, _)) => *line,
        Err(e) => e.line,
    }
}

/// What reading a chunk finds, with no store: the refused requests and spans.
fn check(chunk: Vec<Piece>) -> Taken {
    let mut taken = Taken::default();
    for (read, _) in chunk {
        match read {
            Err(error) => taken.rejected.push(error),
            Ok((line, request)) => {
                taken.requests += 1;
                taken.spans += span::span_count(&request);
                for e in span::read_request(&request)
                    .into_iter()
                    .filter_map(Result::err)
                {
                    *taken.refused_spans.entry(line).or_default() += 1;
                    taken.rejected.push(LineError {
                        line,
                        field: e.field,
                        reason: e.reason,
                    });
                }
            }
        }
    }
    taken
}

/// The input's chunks, read on their own thread (the next chunk is read while
/// the store takes this one).
struct Chunks {
    receiver: tokio::sync::mpsc::Receiver<std::io::Result<Vec<Piece>>>,
    reading: Option<std::thread::JoinHandle<()>>,
}

impl Chunks {
    fn start(open: Open<'_>, keep_text: bool, chunk_spans: usize) -> std::io::Result<Chunks> {
        let reader = open()?;
        let chunk_spans = chunk_spans.max(1);
        let (sender, receiver) = tokio::sync::mpsc::channel(1);
        let reading = std::thread::spawn(move || {
            let requests = match Requests::new(reader, keep_text) {
                Ok(requests) => requests,
                Err(e) => {
                    let _ = sender.blocking_send(Err(e));
                    return;
                }
            };
            let mut chunk: Vec<Piece> = Vec::new();
            let mut spans = 0;
            for piece in requests {
                let piece = match piece {
                    Ok(piece) => piece,
                    Err(e) => {
                        let _ = sender.blocking_send(Err(e));
                        return;
                    }
                };
                if let Ok((_, request)) = &piece.0 {
                    spans += span::span_count(request);
                }
                chunk.push(piece);
                if spans >= chunk_spans {
                    spans = 0;
                    if sender
                        .blocking_send(Ok(std::mem::take(&mut chunk)))
                        .is_err()
                    {
                        return;
                    }
                }
            }
            if !chunk.is_empty() {
                let _ = sender.blocking_send(Ok(chunk));
            }
        });
        Ok(Chunks {
            receiver,
            reading: Some(reading),
        })
    }

    async fn next(&mut self) -> Option<std::io::Result<Vec<Piece>>> {
        self.receiver.recv().await
    }
}

impl Drop for Chunks {
    fn drop(&mut self) {
        // The reader stops at its next send.
        self.receiver.close();
        while self.receiver.try_recv().is_ok() {}
        if let Some(reading) = self.reading.take() {
            let _ = reading.join();
        }
    }
}
