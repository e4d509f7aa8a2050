//! `holdfast observe`: every due status lookup once, or with `--watch` on and on,
//! as the observer's own identity (`svc:observer` unless `--as` says otherwise;
//! on PostgreSQL the database login). One line per hold.

use clap::Args;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::{Context, Failure, exit, render};
use crate::core::rules::Rationale;
use crate::lookup::{
    EnvSecrets, Looker, ObserveLine, ObserveOptions, Observer, RateLimiter, SessionObserver,
};
use crate::store::Session;

/// The identity the observer acts as on a store without logins.
pub const OBSERVER: &str = "svc:observer";

/// `holdfast observe`.
#[derive(Debug, Args)]
pub struct ObserveArgs {
    /// Keep going: look holds up as their next observation comes due, until
    /// interrupted (or `--duration` ends).
    #[arg(long)]
    pub watch: bool,
    /// Lookups in flight at once.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub concurrency: u16,
    /// With `--watch`: stop after this many seconds.
    #[arg(long, value_name = "SECONDS", requires = "watch")]
    pub duration: Option<u64>,
    /// One JSON object per line instead of text.
    #[arg(long)]
    pub json: bool,
}

pub async fn observe(ctx: &Context, args: ObserveArgs) -> anyhow::Result<u8> {
    let store = ctx.open_store().await?;
    let actor = ctx.service_actor(store.as_ref(), OBSERVER).await?;
    let rationale = Rationale::parse(if args.watch {
        "scheduled status lookup by observe --watch"
    } else {
        "scheduled status lookup by observe"
    })
    .map_err(anyhow::Error::msg)?;
    let looker = Looker::new(ctx.config.lookup.client())
        .map_err(|e| Failure::new(exit::ERROR, e.to_string()))?;
    let observer = Observer {
        store: Arc::new(SessionObserver {
            session: Session::new(store, actor),
            rationale,
            clock: ctx.clock,
        }),
        looker,
        limiter: RateLimiter::new(ctx.config.lookup.clone()),
        secrets: Arc::new(EnvSecrets),
        clock: ctx.clock,
        options: ObserveOptions {
            concurrency: usize::from(args.concurrency),
            // Once: every due hold in one round. Watching: rounds of the default
            // size, so newly due holds are not kept waiting behind a long one.
            batch: if args.watch {
                ObserveOptions::default().batch
            } else {
                usize::MAX
            },
            ..ObserveOptions::default()
        },
    };
    let json = args.json;
    let print = move |line: ObserveLine| {
        if json {
            println!(
                "{}",
                serde_json::json!({"id": line.id, "acted": line.acted, "result": line.text})
            );
        } else {
            println!("{}: {}", line.id, render::clean(&line.text));
        }
    };
    if !args.watch {
        let acted = observer.round(&print).await?;
        if !json && acted == 0 {
            println!("no lookups are due");
        }
        return Ok(exit::OK);
    }
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let limit = args.duration.map(Duration::from_secs);
    tokio::spawn(async move {
        match limit {
            Some(d) => {
                tokio::select! {
                    _ = tokio::time::sleep(d) => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            None => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
        let _ = stop.send(true);
    });
    observer.watch(stopped, &print).await?;
    Ok(exit::OK)
}
