//! `holdfast lookup check TOOL --known ID`: proves that a tool's status lookup
//! finds a record known to exist (the effect of operation ID, which the
//! reviewer knows is at the provider), and records, audited, whether it did. A
//! lookup never proven this way is flagged and caps its tool at `manual`
//! (`core::autonomy::unchecked`): a not-found from a lookup that was never seen
//! to find anything proves little.

use clap::{Args, Subcommand};

use crate::autonomy::record_lookup_check;
use crate::cli::{Context, Failure, exit, render};
use crate::core::autonomy::{LookupCheck, lookup_fingerprint};
use crate::core::ids::OperationId;
use crate::lookup::{EnvSecrets, Looker, RateLimiter, last_provider_request_id, spec_of};

#[derive(Debug, Subcommand)]
pub(crate) enum LookupCommand {
    /// Make TOOL's status lookup for an operation whose record is known to
    /// exist at the provider, and record (audited, owner only once grants
    /// exist) whether it found it. Until it has, the tool is capped at manual.
    Check(CheckArgs),
}

#[derive(Debug, Args)]
pub(crate) struct CheckArgs {
    /// The tool, as its contract names it (`T06`).
    pub tool: String,
    /// An operation of TOOL whose effect is known to be at the provider.
    #[arg(long)]
    pub known: String,
    /// Print JSON instead of text, for scripts.
    #[arg(long)]
    pub json: bool,
}

pub(crate) async fn lookup(ctx: &Context, command: LookupCommand) -> anyhow::Result<u8> {
    match command {
        LookupCommand::Check(args) => check(ctx, args).await,
    }
}

async fn check(ctx: &Context, args: CheckArgs) -> anyhow::Result<u8> {
    let known =
        OperationId::parse(&args.known).map_err(|e| Failure::bad_input(format!("--known: {e}")))?;
    let session = ctx.session().await?;
    let detail = session.detail(&known).await?;
    let op = &detail.row.operation;
    if op.tool != args.tool {
        return Err(Failure::bad_input(format!(
            "--known: operation {} is of tool {}, not {}",
            known,
            render::clean(&op.tool),
            render::clean(&args.tool)
        )));
    }
    let spec = spec_of(&detail).map_err(|e| Failure::new(exit::ERROR, e.to_string()))?;
    let looker = Looker::new(ctx.config.lookup.client())
        .map_err(|e| Failure::new(exit::ERROR, e.to_string()))?;
    RateLimiter::new(ctx.config.lookup.clone())
        .acquire(&spec.origin())
        .await;
    let call = looker
        .look_up(
            spec,
            op,
            last_provider_request_id(&detail),
            &EnvSecrets,
            ctx.clock,
        )
        .await
        .map_err(|e| Failure::new(exit::ERROR, e.to_string()))?;
    let status = call
        .http_status
        .map_or_else(|| "no answer".to_owned(), |s| format!("HTTP {s}"));
    let (found, answer) = match (&call.answer, &call.error_type) {
        (Some(a), _) => {
            let right = a.found
                && a.effect_count.is_none_or(|n| n >= 1)
                && a.matches.target != Some(false)
                && a.matches.payload_hash != Some(false)
                && a.matches.owner != Some(false);
            let what = if !a.found {
                "not found"
            } else if right {
                "found"
            } else {
                "found with another target, payload or tenant"
            };
            (right, format!("{status}, {what}"))
        }
        (None, Some(error)) => (false, format!("{status}, {error}")),
        (None, None) => (false, status),
    };
    let session = ctx.session().await?;
    let actor = session.actor();
    let result = LookupCheck {
        tool: op.tool.clone(),
        known: known.to_string(),
        found,
        lookup: lookup_fingerprint(spec),
        answer,
        by: actor.identity.clone(),
        at: ctx.now(),
    };
    let row = match record_lookup_check(&session, result.clone(), ctx.now()).await {
        Ok(row) => row,
        Err(e) => return crate::cli::commands::review::report_refusal(e, args.json),
    };
    if args.json {
        println!(
            "{}",
            crate::cli::json::pretty(&serde_json::json!({
                "tool": result.tool,
                "known": result.known,
                "found": result.found,
                "answer": result.answer,
                "checked": result.found,
                "lookup": call,
                "audit": row,
            }))?
        );
    } else {
        print!("{}", render::lookup(&call));
        if found {
            println!(
                "tool {}: the lookup found {} ({}); its status lookup is checked",
                render::clean(&result.tool),
                result.known,
                render::clean(&result.answer)
            );
        } else {
            println!(
                "tool {}: the lookup did not find {} ({}); its status lookup stays unchecked and the tool is capped at manual",
                render::clean(&result.tool),
                result.known,
                render::clean(&result.answer)
            );
        }
        println!("audit seq {}", row.seq);
    }
    Ok(if found { exit::OK } else { exit::ERROR })
}
