//! `holdfast observe`: every due status lookup once, or with `--watch` on and on,
//! as the observer's own identity (`svc:observer` unless `--as` says otherwise;
//! on PostgreSQL the database login). One line per hold, and one per overdue hold
//! it leaves, saying why (`--json`: `reason` and `words` as fields).

use clap::Args;
use std::sync::Arc;
use std::time::Duration;

use crate::cli::{Context, Failure, exit, render};
use crate::core::rules::Rationale;
use crate::lookup::{
    EnvSecrets, Looker, ObserveLine, ObserveOptions, Observer, RateLimiter, SessionObserver,
};

/// The identity the observer acts as on a store without logins.
pub(crate) const OBSERVER: &str = "svc:observer";

/// `holdfast observe`.
#[derive(Debug, Args)]
pub(crate) struct ObserveArgs {
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

pub(crate) async fn observe(ctx: &Context, args: ObserveArgs) -> anyhow::Result<u8> {
    let session = ctx.service_session(OBSERVER).await?;
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
            session,
            rationale,
            clock: ctx.clock,
            at_least: args
                .watch
                .then_some(crate::core::ladder::Capability::ScheduledLookup.needs()),
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
    let seen = std::sync::Mutex::new(Vec::new());
    let print = |line: ObserveLine| {
        if json {
            let mut value =
                serde_json::json!({"id": line.id, "acted": line.acted, "result": line.text});
            if let Some(kind) = line.left {
                value["reason"] = serde_json::json!(kind);
                value["words"] = serde_json::json!(line.text);
            }
            println!("{value}");
        } else {
            println!("{}: {}", line.id, render::clean(&line.text));
        }
    };
    // The first round, then every overdue hold it left, with why: once, so
    // that `--watch` does not repeat them every poll.
    let first = |line: ObserveLine| {
        if let Ok(mut seen) = seen.lock() {
            seen.push(line.id.clone());
        }
        print(line);
    };
    let acted = observer.round(&first).await?;
    let seen: Vec<_> = seen.lock().map(|s| s.clone()).unwrap_or_default();
    let left = observer.left(&seen).await?;
    for hold in &left {
        if json {
            let mut value = serde_json::json!({"id": hold.id, "acted": false, "reason": hold.kind, "words": hold.words});
            if let Some(by) = &hold.claimed_by {
                value["claimed_by"] = serde_json::json!(by);
            }
            match (hold.kind, hold.until) {
                (crate::lookup::LeftKind::Claimed, Some(at)) => {
                    value["claim_expires_at"] =
                        serde_json::json!(crate::core::clock::format_instant(at));
                }
                (crate::lookup::LeftKind::BudgetSpent, Some(at)) => {
                    value["deadline"] = serde_json::json!(crate::core::clock::format_instant(at));
                }
                _ => {}
            }
            println!("{value}");
        } else {
            println!("{}: not looked up: {}", hold.id, render::clean(&hold.words));
        }
    }
    if !json && left.len() >= crate::lookup::LEFT_LIMIT {
        println!(
            "(the first {} overdue holds left are shown)",
            crate::lookup::LEFT_LIMIT
        );
    }
    if !args.watch {
        if !json && acted == 0 && seen.is_empty() {
            println!(
                "{}",
                if left.is_empty() {
                    "no lookups are due"
                } else {
                    "no lookups are due: every overdue hold above is left for the reason given"
                }
            );
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
