//! `holdfast ingest`: wire records from a file or stdin into the store, with a
//! summary and, in quarantine mode, a rejects file; each refusal printed as it
//! is found.

use std::path::PathBuf;

use crate::cli::{Context, exit};
use crate::store::Ingester;
use crate::store::judging::keep_current;

pub(crate) async fn ingest(
    ctx: &Context,
    source: &str,
    rejects: Option<PathBuf>,
    json: bool,
    defer_judging: bool,
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
    let writing = crate::ingest::ingest_streamed(
        store.as_ref(),
        source,
        rejects.as_deref(),
        &ingester,
        ctx.now(),
        crate::ingest::BATCH_RECORDS,
        &mut print,
    );
    let outcome = judged(ctx, store.as_ref(), defer_judging, writing)
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

/// Runs `writing` (an ingest of any format) and, once it has committed,
/// judges what it wrote for the metrics ([`judge_written`]), unless `defer`
/// leaves the judging to the first reader.
async fn judged<O, E>(
    ctx: &Context,
    store: &dyn crate::store::Store,
    defer: bool,
    writing: impl Future<Output = Result<O, E>>,
) -> Result<O, E> {
    let written = writing.await?;
    if !defer {
        judge_written(store, ctx.now(), "what was ingested is committed").await;
    }
    Ok(written)
}

/// Judges at `now` what a command wrote for the metrics ([`keep_current`]),
/// how far it has got told on stderr as `report` tells it. A judging that
/// fails is a warning that starts with `done` (what the command did): its
/// writes are committed, and the first reader judges them.
pub(super) async fn judge_written(
    store: &dyn crate::store::Store,
    now: chrono::DateTime<chrono::Utc>,
    done: &str,
) {
    let judging = super::report::judging_on_stderr(|progress| async move {
        keep_current(store, now, &progress).await
    })
    .await;
    if let Err(error) = judging {
        eprintln!(
            "warning: {done}, but its metrics were not judged ({}); the first `holdfast report` or metrics tab judges them",
            crate::core::sanitize::sanitize(&error.to_string())
        );
    }
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
/// or JSON Lines of them, gzip or not, of any size) through the same ingest, in
/// one's own name; tools without a contract are recorded and say so. Each
/// refusal is printed as it is found; the account keeps their counts and the
/// first of them.
pub(crate) async fn ingest_otlp(
    ctx: &Context,
    source: &str,
    rejects: Option<PathBuf>,
    json: bool,
    defer_judging: bool,
) -> anyhow::Result<u8> {
    use crate::otlp::file::{FileError, FileIntake, intake_file};
    let (store, mut ingester) = own_ingester(ctx).await?;
    ingester.contracts_optional = true;
    super::serve::warn_of_drift(store.as_ref(), &ctx.config.otlp).await?;
    // Read more than once (strict: checked, then committed), so stdin is
    // spooled to a file first.
    let input = if source == "-" {
        crate::ingest::Input::open(&crate::ingest::Source::Stdin)
    } else {
        crate::ingest::Input::open(&crate::ingest::Source::Path(PathBuf::from(source)))
    }
    .map_err(|e| crate::cli::Failure::bad_input(format!("cannot read {source}: {e}")))?;
    let name = if source == "-" { "stdin" } else { source };
    let open = || -> std::io::Result<Box<dyn std::io::BufRead + Send>> {
        crate::otlp::read::inflating(Box::new(input.reader()?))
    };
    let mut rejects_file = match &rejects {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path).map_err(|e| {
                anyhow::anyhow!("cannot write the rejects file {}: {e}", path.display())
            })?,
        )),
        None => None,
    };
    let mut print = |error: &crate::wire::LineError| {
        // Field paths and reasons can quote the input (an unknown key, a tool).
        eprintln!("{}", crate::core::sanitize::sanitize(&error.to_string()));
    };
    let door = FileIntake {
        store: store.as_ref(),
        source: name,
        settings: &ctx.config.otlp,
        ingester: &ingester,
        now: ctx.now(),
        chunk_spans: crate::bounded::OTLP_CHUNK_SPANS,
        size: input.size(),
    };
    let writing = intake_file(
        &door,
        &open,
        rejects
            .as_deref()
            .zip(rejects_file.as_mut().map(|f| f as &mut dyn std::io::Write)),
        &mut print,
    );
    let outcome = judged(ctx, store.as_ref(), defer_judging, writing)
        .await
        .map_err(|e| match e {
            FileError::Read(..) => crate::cli::Failure::bad_input(e.to_string()),
            other => anyhow::Error::from(other),
        })?;
    report(
        json,
        &outcome,
        &[],
        &outcome.summary(),
        outcome.refused() && rejects.is_none(),
    )
}
