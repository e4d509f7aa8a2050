//! `holdfast` with no command (the console) and `holdfast demo`: a fresh store
//! loaded with the demo packet, opened in the console or printed as the queue.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use chrono::{DateTime, Utc};

use crate::cli::{Context, exit, render};
use crate::core::clock::{Clock, human_instant};
use crate::store::{OperationFilter, Page, Session, SortOrder};

pub(crate) async fn console(ctx: &Context, session: Session) -> anyhow::Result<u8> {
    let console = crate::tui::Console {
        actor: session.actor().clone(),
        claimed: ctx.claimed(&session).await?,
        clock: ctx.clock,
        no_color: ctx.no_color(),
        log_path: Some(ctx.paths.log_file.clone()),
        lookup: ctx.config.lookup.clone(),
    };
    crate::tui::run(session, console).await?;
    Ok(exit::OK)
}

async fn held_page(ctx: &Context, session: &Session) -> anyhow::Result<String> {
    let filter = OperationFilter {
        queue: true,
        ..OperationFilter::default()
    };
    let (rows, total) = session
        .list(&filter, SortOrder::Urgency, Page::first(50))
        .await?;
    let header = render::actor_header(session.actor());
    if total == 0 {
        return Ok(format!(
            "{header}no held operations — `holdfast ingest FILE` to load some, or `holdfast demo`\n"
        ));
    }
    Ok(format!("{header}{}", render::list(&rows, total, ctx.now())))
}

/// The demo packet, shipped inside the binary so `holdfast demo` works anywhere.
pub const DEMO_PACKET: &str = include_str!("../../../assets/demo/tc094.jsonl");

pub(crate) async fn demo(mut ctx: Context, print: bool) -> anyhow::Result<u8> {
    let path = ctx.db.clone().unwrap_or_else(|| ctx.paths.demo_store());
    for suffix in ["", "-wal", "-shm"] {
        let file = PathBuf::from(format!("{}{suffix}", path.display()));
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot reset {}", file.display())),
        }
    }
    // The demo always gets a fresh file of its own, whatever team store is set.
    ctx.db = Some(path);
    ctx.database_url = None;
    let store = ctx.create_store().await?;
    let parsed = crate::wire::parse_stream(DEMO_PACKET.as_bytes(), &mut |_| {})?;
    if let Some(first) = parsed.errors.first() {
        anyhow::bail!("the demo packet does not parse: {first}");
    }
    let instant = ctx.clock.now();
    let frozen = latest_instant(parsed.records.iter().map(|n| &n.record));
    let at = match ctx.clock {
        Clock::Frozen(t) => t,
        Clock::System => frozen.unwrap_or(instant),
    };
    ctx.clock = Clock::Frozen(at);
    let report = store
        .ingest(
            parsed.records,
            crate::store::IngestMode::Strict,
            DEMO_IDENTITY,
            at,
        )
        .await?;
    if let Some(first) = report.rejected.first() {
        anyhow::bail!("the demo packet was refused: {first}");
    }
    // Judged for the metrics as any ingest is, before the console opens.
    crate::store::judging::keep_current(store.as_ref(), at, &Default::default()).await?;
    eprintln!(
        "demo store {} loaded; clock frozen at {}",
        store.location(),
        human_instant(at)
    );
    let session = Session::new(Arc::clone(&store), ctx.actor(store.as_ref()).await?);
    if print {
        print!("{}", held_page(&ctx, &session).await?);
        return Ok(exit::OK);
    }
    console(&ctx, session).await
}

/// The identity `holdfast demo` loads its packet as: the author of a demo
/// store's first audit row.
pub(crate) const DEMO_IDENTITY: &str = "holdfast-demo";

/// The demo's frozen clock, when the SQLite store this invocation names is a
/// demo store (its first row written by [`DEMO_IDENTITY`]): every command on it
/// reads the clock the console reads there, the packet's own instant, unless
/// `--now` says otherwise. `None` for any other store, or one not there.
pub(crate) async fn demo_clock(ctx: &Context) -> Option<DateTime<Utc>> {
    let Ok(crate::store::Location::Sqlite(path)) = ctx.store_location() else {
        return None;
    };
    if !path.is_file() {
        return None;
    }
    let store = crate::store::Location::Sqlite(path)
        .open_existing()
        .await
        .ok()?;
    let first = store.audit(1, 1).await.ok()?;
    if first.first()?.draft.by != DEMO_IDENTITY {
        return None;
    }
    let parsed = crate::wire::parse_stream(DEMO_PACKET.as_bytes(), &mut |_| {}).ok()?;
    latest_instant(parsed.records.iter().map(|n| &n.record))
}

/// The latest instant any record names: the demo packet's own frozen "now".
pub(crate) fn latest_instant<'a>(
    records: impl Iterator<Item = &'a crate::wire::Record>,
) -> Option<DateTime<Utc>> {
    use crate::wire::Record;
    records
        .flat_map(|record| -> Vec<DateTime<Utc>> {
            match record {
                Record::Contract(_) => vec![],
                Record::Operation(o) => {
                    [Some(o.created_at), o.approval.as_ref().and_then(|a| a.at)]
                        .into_iter()
                        .flatten()
                        .collect()
                }
                Record::Attempt(a) => [Some(a.started_at), a.ended_at]
                    .into_iter()
                    .flatten()
                    .collect(),
                Record::Item(_) | Record::Expectation(_) => vec![],
                Record::Observation(o) => vec![o.observed_at],
                Record::Transition(t) => vec![t.at],
            }
        })
        .max()
}
