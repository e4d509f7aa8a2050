//! `holdfast ingest`: wire records from a file or stdin into the store, with a
//! summary and, in quarantine mode, a rejects file; each refusal printed as it
//! is found.

use std::path::PathBuf;

use crate::cli::{Context, exit};
use crate::store::Ingester;

pub(crate) async fn ingest(
    ctx: &Context,
    source: &str,
    rejects: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<u8> {
    let (store, ingester) = own_ingester(ctx).await?;
    let source = if source == "-" {
        crate::ingest::Source::Stdin
    } else {
        crate::ingest::Source::Path(PathBuf::from(source))
    };
    // Every refusal is printed as it is found, whatever the number; the
    // outcome keeps only their counts and the first of them.
    let mut print = |error: &crate::wire::LineError| {
        // Field paths and reasons can quote the input (an unknown key, a tool).
        eprintln!("{}", crate::core::sanitize::sanitize(&error.to_string()));
    };
    let outcome = crate::ingest::ingest_streamed(
        store.as_ref(),
        source,
        rejects.as_deref(),
        &ingester,
        ctx.now(),
        crate::ingest::BATCH_RECORDS,
        &mut print,
    )
    .await
    .map_err(|e| match e {
        crate::ingest::IngestError::TooManyRefused { .. } => {
            crate::cli::Failure::bad_input(e.to_string())
        }
        other => other.into(),
    })?;
    // Its refusals were printed as they were found.
    report(
        json,
        &outcome,
        &[],
        &outcome.summary(),
        outcome.refused() && outcome.rejects_file.is_none(),
    )
}

/// The store, and ingest in one's own name, into the tenants one holds `ingest` on.
async fn own_ingester(
    ctx: &Context,
) -> anyhow::Result<(std::sync::Arc<dyn crate::store::Store>, Ingester)> {
    let store = ctx.create_store().await?;
    let actor = ctx.actor(store.as_ref()).await?;
    crate::cli::own_name(&actor, "ingest")?;
    Ok((store, Ingester::of(&actor)))
}

/// Prints the account of an ingest (JSON, or the refusals and the summary) and
/// says its exit code.
fn report(
    json: bool,
    outcome: &impl serde::Serialize,
    errors: &[crate::wire::LineError],
    summary: &str,
    refused: bool,
) -> anyhow::Result<u8> {
    if json {
        println!("{}", crate::cli::json::pretty(outcome)?);
    } else {
        for error in errors {
            // Field paths and reasons can quote the input (an unknown key, a tool).
            eprintln!("{}", crate::core::sanitize::sanitize(&error.to_string()));
        }
        // The counts per rule name fields, which can quote the input.
        eprintln!("{}", crate::core::sanitize::sanitize(summary));
    }
    Ok(if refused { exit::BAD_INPUT } else { exit::OK })
}

/// `holdfast ingest --format otlp`: OpenTelemetry traces (OTLP/JSON, one request
/// or JSON Lines of them, gzip or not) through the same ingest, in one's own
/// name; tools without a contract are recorded and say so.
pub(crate) async fn ingest_otlp(
    ctx: &Context,
    source: &str,
    rejects: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<u8> {
    use crate::otlp::door::{Strictness, intake};
    use std::io::Read;
    let (store, mut ingester) = own_ingester(ctx).await?;
    ingester.contracts_optional = true;
    let limit = crate::bounded::OTLP_FILE_BYTES;
    let (name, raw) = if source == "-" {
        let mut bytes = Vec::new();
        std::io::stdin()
            .lock()
            .take(limit + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| crate::cli::Failure::bad_input(format!("cannot read stdin: {e}")))?;
        ("stdin".to_owned(), bytes)
    } else {
        let bytes = std::fs::read(source)
            .map_err(|e| crate::cli::Failure::bad_input(format!("cannot read {source}: {e}")))?;
        (source.to_owned(), bytes)
    };
    let bytes = crate::otlp::read::inflate(raw, limit)
        .map_err(|e| crate::cli::Failure::bad_input(format!("{name}: {e}")))?;
    if bytes.len() as u64 > limit {
        return Err(crate::cli::Failure::bad_input(format!(
            "{name}: more than {limit} bytes; split the traces into several files"
        )));
    }
    let requests = crate::otlp::read::requests(&bytes);
    let strictness = if rejects.is_some() {
        Strictness::KeepGood
    } else {
        Strictness::Strict
    };
    let outcome = intake(
        store.as_ref(),
        &name,
        requests,
        &ctx.config.otlp,
        &ingester,
        strictness,
        ctx.now(),
    )
    .await?;
    if let Some(path) = &rejects {
        write_rejects(path, &bytes, &outcome.rejected)?;
    }
    report(
        json,
        &outcome,
        &outcome.rejected,
        &outcome.summary(),
        outcome.refused() && rejects.is_none(),
    )
}

/// The refused requests (lines of the input, or the whole document), each
/// written once with its secrets redacted.
fn write_rejects(
    path: &std::path::Path,
    bytes: &[u8],
    rejected: &[crate::wire::LineError],
) -> anyhow::Result<()> {
    use std::io::Write;
    let lines: std::collections::BTreeSet<usize> = rejected.iter().map(|e| e.line).collect();
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let numbered: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let single = numbered
        .iter()
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .count()
        <= 1
        || serde_json::from_slice::<serde_json::Value>(bytes).is_ok();
    if single {
        if !lines.is_empty() {
            file.write_all(&crate::ingest::redacted_line(bytes))?;
            file.write_all(b"\n")?;
        }
    } else {
        for line in lines {
            if let Some(text) = line.checked_sub(1).and_then(|i| numbered.get(i)) {
                file.write_all(&crate::ingest::redacted_line(text))?;
                file.write_all(b"\n")?;
            }
        }
    }
    file.flush()?;
    Ok(())
}
