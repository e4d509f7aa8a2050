//! `holdfast tools changed TOOL --what … --rationale …`: an owner records a
//! material change outside the tool's contract (model, prompt, tool
//! description, credentials, provider API, retry library, queue, policy). The
//! tool's drill results go stale and its autonomy drops to `manual`, the
//! system's audited act, until `holdfast drill --tool TOOL` passes again and an
//! owner raises it (DESIGN §9.4).

use clap::Args;

use crate::cli::{Context, Failure, exit, render};
use crate::core::rules::Rationale;

#[derive(Debug, Args)]
pub(crate) struct ChangedArgs {
    /// The tool, as its contract names it (`T06`).
    pub tool: String,
    /// What changed, in a line (`provider API v2`, `model gpt-x → gpt-y`).
    #[arg(long)]
    pub what: String,
    /// Why (at least 10 characters); recorded, secrets redacted, in the audit row.
    #[arg(long)]
    pub rationale: String,
    /// Print JSON instead of text, for scripts.
    #[arg(long)]
    pub json: bool,
}

pub(crate) async fn changed(ctx: &Context, args: ChangedArgs) -> anyhow::Result<u8> {
    let what = crate::core::rerun::parse_what(&args.what)
        .map_err(|e| Failure::bad_input(format!("--what: {e}")))?;
    let rationale = Rationale::parse(&args.rationale)
        .map_err(|e| Failure::bad_input(format!("--rationale: {e}")))?;
    let session = ctx.session().await?;
    if !session
        .contracts()
        .await?
        .iter()
        .any(|c| c.tool == args.tool)
    {
        return Err(Failure::new(
            exit::ERROR,
            format!(
                "{} holds no contract for tool {}",
                session.location(),
                render::clean(&args.tool)
            ),
        )
        .into());
    }
    match crate::autonomy::record_change(&session, &args.tool, &what, &rationale, ctx.now()).await {
        Ok(rows) => {
            let dropped = rows.get(1);
            if args.json {
                let value = serde_json::json!({
                    "tool": args.tool,
                    "what": what,
                    "audit_seq": rows[0].seq,
                    "dropped_to": dropped.map(|_| crate::core::rerun::STALE_FLOOR),
                    "drop_audit_seq": dropped.map(|r| r.seq),
                });
                println!("{}", crate::cli::json::pretty(&value)?);
            } else {
                println!(
                    "tool {}: material change recorded ({}), audit seq {}; its drill results are stale",
                    render::clean(&args.tool),
                    render::clean(&what),
                    rows[0].seq
                );
                match dropped {
                    Some(row) => println!(
                        "autonomy dropped to {} by the system (audit seq {}); run `holdfast drill --tool {}` (or `holdfast drill --changed`), then an owner raises it again",
                        crate::core::rerun::STALE_FLOOR,
                        row.seq,
                        render::clean(&args.tool)
                    ),
                    None => println!(
                        "autonomy stays at {}; a raise waits for `holdfast drill --tool {}` to pass",
                        crate::core::rerun::STALE_FLOOR,
                        render::clean(&args.tool)
                    ),
                }
            }
            Ok(exit::OK)
        }
        Err(e) => crate::cli::commands::review::report_refusal(e, args.json),
    }
}
