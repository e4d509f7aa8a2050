//! `holdfast tools [show TOOL]`: every tool the store knows, one row each
//! (contract version, autonomy level, status lookup and its checks, its holds
//! and the UNKNOWN ones of them, newest drill and whether it is current, missing
//! inventory fields), and one tool's whole inventory with what
//! each missing field limits (DESIGN §5 "The inventory fields").

use clap::{Args, Subcommand};

use crate::cli::{Context, Failure, exit, render};
use crate::tools::{self, ToolInventory, ToolRow};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct ToolsArgs {
    #[command(subcommand)]
    pub command: Option<ToolsCommand>,
    /// Print JSON instead of text, for scripts.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ToolsCommand {
    /// One tool's whole inventory: each field the seed lists, present or
    /// missing, and what each missing field limits.
    Show {
        /// The tool, as its contract names it (`T06`).
        tool: String,
        /// Print JSON instead of text, for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Record a material change outside a tool's contract (model, prompt, tool
    /// description, credentials, provider API, retry library, queue, policy):
    /// owner only, audited; the tool's drill results go stale and its autonomy
    /// drops to manual until `drill --tool` passes again and an owner raises it.
    Changed(crate::cli::commands::tools_changed::ChangedArgs),
}

pub(crate) async fn tools(ctx: &Context, args: ToolsArgs) -> anyhow::Result<u8> {
    match args.command {
        None => list(ctx, args.json).await,
        Some(ToolsCommand::Show { tool, json }) => show(ctx, &tool, json).await,
        Some(ToolsCommand::Changed(args)) => {
            crate::cli::commands::tools_changed::changed(ctx, args).await
        }
    }
}

async fn list(ctx: &Context, json: bool) -> anyhow::Result<u8> {
    let session = ctx.session().await?;
    super::report::judge_first(&session, ctx.now()).await?;
    let rows = tools::rows(&session, ctx.now()).await?;
    if json {
        println!("{}", crate::cli::json::pretty(&rows)?);
        return Ok(exit::OK);
    }
    if rows.is_empty() {
        println!("no tools: the store holds no contract");
        return Ok(exit::OK);
    }
    println!(
        "{:<20} {:<10} {:<10} {:<8} {:<14} {:>5} {:>7}  {:<9} {:<52} MISSING",
        "TOOL",
        "VERSION",
        "AUTONOMY",
        "LOOKUP",
        "CHECKS",
        "HOLDS",
        "UNKNOWN",
        "CIRCUIT",
        "LAST DRILL"
    );
    for r in &rows {
        println!(
            "{:<20} {:<10} {:<10} {:<8} {:<14} {:>5} {:>7}  {:<9} {:<52} {}",
            render::clean(&r.tool),
            render::clean(r.version.as_deref().unwrap_or("-")),
            r.autonomy.as_str(),
            r.lookup.unwrap_or("-"),
            checks(r),
            r.holds,
            r.unknowns,
            tools::circuit_words(r),
            drill(r),
            r.missing
        );
    }
    Ok(exit::OK)
}

/// `2 found, 1 not` or `none`.
fn checks(r: &ToolRow) -> String {
    if r.checks.answered + r.checks.failed == 0 {
        "none".to_owned()
    } else {
        format!("{} found, {} not", r.checks.answered, r.checks.failed)
    }
}

/// `pass 16/16 · IC07 · current · 2026-03-01T12:00:00Z` or `none`.
fn drill(r: &ToolRow) -> String {
    r.drill
        .as_ref()
        .map_or_else(|| "none".to_owned(), |d| render::clean(&d.summary()))
}

async fn show(ctx: &Context, tool: &str, json: bool) -> anyhow::Result<u8> {
    let session = ctx.session().await?;
    super::report::judge_first(&session, ctx.now()).await?;
    let Some(inv) = tools::show(&session, tool, ctx.now()).await? else {
        return Err(Failure::new(
            exit::ERROR,
            format!(
                "the store holds no contract for tool {}",
                render::clean(tool)
            ),
        )
        .into());
    };
    if json {
        println!("{}", crate::cli::json::pretty(&inv)?);
        return Ok(exit::OK);
    }
    print_inventory(&inv);
    Ok(exit::OK)
}

fn print_inventory(inv: &ToolInventory) {
    let r = &inv.row;
    println!(
        "{}  version {}  autonomy {}",
        render::clean(&r.tool),
        render::clean(r.version.as_deref().unwrap_or("-")),
        r.autonomy
    );
    println!(
        "  lookup {}, checks {}; drill {}",
        r.lookup.unwrap_or("-"),
        checks(r),
        drill(r)
    );
    if let Some(why) = r.drill.as_ref().and_then(|d| d.stale.as_deref()) {
        println!("  the drill is stale: {}", render::clean(why));
    }
    println!("  {} held, {} of them UNKNOWN", r.holds, r.unknowns);
    println!("  circuit {}", tools::circuit_words(r));
    println!(
        "  {} of {} inventory fields missing",
        r.missing,
        inv.inventory.len()
    );
    for e in &inv.inventory {
        match &e.value {
            Some(value) => println!("  {:<21} {}", e.field, render::clean(value)),
            None => println!("  {:<21} MISSING ({})", e.field, e.wire),
        }
        if let Some(limit) = e.limit {
            println!("  {:<21}   limits: {limit}", "");
        }
    }
}
