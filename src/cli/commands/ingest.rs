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
    let store = ctx.create_store().await?;
    // Ingest is done in one's own name, into the tenants one holds `ingest` on.
    let actor = ctx.actor(store.as_ref()).await?;
    crate::cli::own_name(&actor, "ingest")?;
    let ingester = Ingester::of(&actor);
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
    if json {
        println!("{}", crate::cli::json::pretty(&outcome)?);
    } else {
        // The counts per rule name fields, which can quote the input.
        eprintln!("{}", crate::core::sanitize::sanitize(&outcome.summary()));
    }
    Ok(if outcome.refused() && outcome.rejects_file.is_none() {
        exit::BAD_INPUT
    } else {
        exit::OK
    })
}
