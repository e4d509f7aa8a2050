//! `holdfast circuits [TOOL] [--close --rationale …]`: the circuits per tool
//! (DESIGN §9.5) that are open or half-open, one tool's circuit, or an owner's
//! audited closing of one by hand.

use clap::Args;

use crate::cli::{Context, Failure, exit, render};
use crate::core::circuit::{Circuit, Position};
use crate::core::clock::human_instant;
use crate::core::rules::Rationale;

#[derive(Debug, Args)]
pub(crate) struct CircuitArgs {
    /// One tool, as its contract names it; without it, every circuit not closed.
    pub tool: Option<String>,
    /// Close the tool's circuit by hand (owner only, audited).
    #[arg(long, requires = "tool", requires = "rationale")]
    pub close: bool,
    /// Why (at least 10 characters); recorded in the audit row.
    #[arg(long)]
    pub rationale: Option<String>,
    /// Print JSON instead of text, for scripts.
    #[arg(long)]
    pub json: bool,
}

pub(crate) async fn circuits(ctx: &Context, args: CircuitArgs) -> anyhow::Result<u8> {
    if args.close {
        return close(ctx, args).await;
    }
    let session = ctx.session().await?;
    let shown: Vec<Circuit> = match &args.tool {
        Some(tool) => vec![session.circuit(tool).await?.unwrap_or_else(|| Circuit {
            tool: tool.clone(),
            position: Position::Closed,
            since: chrono::DateTime::UNIX_EPOCH,
            reason: "never opened".into(),
            failures: 0,
            probe: None,
            by: String::new(),
        })],
        None => crate::circuit::not_closed(&session).await?,
    };
    if args.json {
        println!("{}", crate::cli::json::pretty(&shown)?);
        return Ok(exit::OK);
    }
    if shown.is_empty() {
        println!("no circuit is open");
    }
    for c in &shown {
        if c.by.is_empty() {
            println!("{}  {}  never opened", render::clean(&c.tool), c.position);
            continue;
        }
        println!(
            "{}  {}  since {}  by {}",
            render::clean(&c.tool),
            c.position,
            human_instant(c.since),
            render::clean(&c.by)
        );
        println!("  why: {}", render::clean(&c.reason));
    }
    Ok(exit::OK)
}

async fn close(ctx: &Context, args: CircuitArgs) -> anyhow::Result<u8> {
    let tool = args.tool.unwrap_or_default();
    let rationale = Rationale::parse(args.rationale.as_deref().unwrap_or_default())
        .map_err(|e| Failure::bad_input(format!("--rationale: {e}")))?;
    let session = ctx.session().await?;
    match crate::circuit::close(&session, &tool, &rationale, ctx.now()).await {
        Ok(changed) => {
            if args.json {
                let consequences = changed
                    .as_ref()
                    .map(|(c, row)| (vec![c.to.reason.clone()], row));
                crate::cli::commands::review::print_change(
                    serde_json::json!({ "tool": tool, "position": "closed" }),
                    consequences.as_ref().map(|(c, row)| (c.as_slice(), *row)),
                );
            } else {
                match &changed {
                    Some((change, row)) => {
                        println!(
                            "tool {}'s circuit is closed (was {})",
                            render::clean(&tool),
                            change.from
                        );
                        println!("audit seq {}", row.seq);
                    }
                    None => println!(
                        "tool {}'s circuit is closed already; nothing changed",
                        render::clean(&tool)
                    ),
                }
            }
            Ok(exit::OK)
        }
        Err(e) => crate::cli::commands::review::report_refusal(e, args.json),
    }
}
