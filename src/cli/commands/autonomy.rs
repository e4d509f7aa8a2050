//! `holdfast autonomy list|set`: each tool's autonomy level (DESIGN §9.4), what it
//! lets holdfast do on its own, and whether the gates would let it be raised; an
//! owner's audited change of one level.

use clap::{Args, Subcommand};

use crate::autonomy::{Snapshot, set_level};
use crate::cli::{Context, Failure, exit, render};
use crate::core::autonomy::LevelRequest;
use crate::core::clock::human_instant;
use crate::core::ladder::Level;
use crate::core::rules::Rationale;

#[derive(Debug, Subcommand)]
pub(crate) enum AutonomyCommand {
    /// Every tool the store knows: its level, its lookup, its latest drill, open
    /// vetoes, and whether a raise would pass the gates.
    List {
        /// Print JSON instead of text, for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Put a tool at a level (owner only, audited). Raising is refused unless the
    /// tool has a status lookup (A1), its latest drill covered all eight modes
    /// with every case passing (A2) and no veto is open (A3); lowering is always
    /// allowed.
    Set(SetArgs),
}

#[derive(Debug, Args)]
pub(crate) struct SetArgs {
    /// The tool, as its contract names it (`T06`).
    pub tool: String,
    /// `manual`, `native`, `automation` or `agent`.
    #[arg(value_parser = parse_level)]
    pub level: Level,
    /// Why (at least 10 characters); recorded in the audit row.
    #[arg(long)]
    pub rationale: String,
    /// Print JSON instead of text, for scripts.
    #[arg(long)]
    pub json: bool,
}

fn parse_level(text: &str) -> Result<Level, String> {
    Level::parse_hinted(text)
}

pub(crate) async fn autonomy(ctx: &Context, command: AutonomyCommand) -> anyhow::Result<u8> {
    match command {
        AutonomyCommand::List { json } => list(ctx, json).await,
        AutonomyCommand::Set(args) => set(ctx, args).await,
    }
}

async fn list(ctx: &Context, json: bool) -> anyhow::Result<u8> {
    let session = ctx.session().await?;
    super::report::judge_first(&session, ctx.now()).await?;
    let snapshot = Snapshot::read(&session, ctx.now()).await?;
    let standings = snapshot.standings();
    if json {
        println!("{}", crate::cli::json::pretty(&standings)?);
        return Ok(exit::OK);
    }
    if standings.is_empty() {
        println!("no tools: the store holds no contract");
        return Ok(exit::OK);
    }
    for s in &standings {
        println!("{}  {}", render::clean(&s.tool), s.level);
        println!("  means:   {}", s.level.meaning());
        if let Some(set) = &s.set {
            println!(
                "  set by:  {} at {}: {}",
                render::clean(&set.set_by),
                human_instant(set.set_at),
                render::clean(&set.rationale)
            );
        }
        println!("  lookup:  {}", render::clean(&s.lookup));
        if let Some(why) = &s.unchecked {
            println!(
                "  checked: no, capped at {}: {}",
                s.effective,
                render::clean(why)
            );
        }
        match &s.drill {
            Some(d) => println!(
                "  drill:   {} of {} passed, {} of 8 modes, {}",
                d.passed,
                d.cases,
                d.modes.len(),
                human_instant(d.at)
            ),
            None => println!("  drill:   none recorded"),
        }
        if let Some(last) = &s.last_drill {
            println!(
                "  current: {}",
                match &last.stale {
                    None => format!(
                        "yes, under contract version {}",
                        render::clean(last.version.as_deref().unwrap_or("unknown"))
                    ),
                    Some(why) => format!("no, stale: {}", render::clean(why)),
                }
            );
        }
        println!("  raise:   {}", render::clean(&s.gates.to_string()));
    }
    Ok(exit::OK)
}

async fn set(ctx: &Context, args: SetArgs) -> anyhow::Result<u8> {
    let rationale = Rationale::parse(&args.rationale)
        .map_err(|e| Failure::bad_input(format!("--rationale: {e}")))?;
    let session = ctx.session().await?;
    let request = LevelRequest {
        tool: args.tool,
        level: args.level,
    };
    match set_level(&session, &request, &rationale, ctx.now()).await {
        Ok(changed) => {
            if args.json {
                crate::cli::commands::review::print_change(
                    serde_json::json!({ "tool": request.tool, "level": request.level }),
                    changed
                        .as_ref()
                        .map(|(c, row)| (c.consequences.as_slice(), row)),
                );
            } else {
                match &changed {
                    Some((change, row)) => {
                        for line in &change.consequences {
                            println!("{}", render::clean(line));
                        }
                        println!("audit seq {}", row.seq);
                    }
                    None => println!(
                        "tool {} is already at {}; nothing changed",
                        render::clean(&request.tool),
                        request.level
                    ),
                }
            }
            Ok(exit::OK)
        }
        Err(e) => crate::cli::commands::review::report_refusal(e, args.json),
    }
}
