//! `holdfast db copy`: moves a store between backends (a laptop's SQLite file to
//! the team's PostgreSQL database, or a team store to a file for an incident
//! ticket). The source's chain is verified first, the copy's after, and the copy
//! keeps every hash, so both verdicts must agree.

use clap::Args;

use crate::cli::{Failure, exit};
use crate::core::audit::ChainStatus;
use crate::store::Location;

#[derive(Debug, Args)]
pub(crate) struct CopyArgs {
    /// The store to copy: `sqlite:PATH` or `postgres://USER@HOST/DATABASE`.
    #[arg(long, value_name = "STORE")]
    pub from: String,
    /// The store to create or fill; it must be new or empty.
    #[arg(long, value_name = "STORE")]
    pub to: String,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The chain of `status` in words, or the exit-4 failure of a broken one.
fn intact(status: ChainStatus, which: &Location) -> Result<(i64, String), Failure> {
    match status {
        ChainStatus::Intact { rows, head } => Ok((
            rows,
            head.map_or_else(|| "empty".into(), |(seq, hash)| format!("{seq} {hash}")),
        )),
        ChainStatus::Broken { seq, reason } => Err(Failure::new(
            exit::INTEGRITY,
            format!("the audit chain of {which} is broken at seq {seq}: {reason}"),
        )),
    }
}

pub(crate) async fn run(args: CopyArgs, now: chrono::DateTime<chrono::Utc>) -> anyhow::Result<u8> {
    let bad = |e: crate::store::StoreError| Failure::new(exit::BAD_INPUT, e.to_string());
    let from = Location::parse(&args.from).map_err(bad)?;
    let to = Location::parse(&args.to).map_err(bad)?;
    if from == to {
        return Err(Failure::new(exit::BAD_INPUT, "--from and --to name the same store").into());
    }
    let source = crate::cli::open_existing(&from).await?;
    let (rows, head) = intact(source.verify().await?, &from)?;
    let target = to.open().await?;
    let report = target.load_from(source.as_ref()).await?;
    let (copied_rows, copied_head) = intact(target.verify().await?, &to)?;
    if (copied_rows, &copied_head) != (rows, &head) {
        return Err(Failure::new(
            exit::INTEGRITY,
            format!(
                "the copy's audit chain ({copied_rows} rows, head {copied_head}) differs from the source's ({rows} rows, head {head})"
            ),
        )
        .into());
    }
    // The copy's operations are all marked stale (the facts are the store's
    // own cache, not copied): judged here, the copy is ready for the metrics
    // tab when the command ends. Its count goes to stderr as `report`'s does.
    super::ingest::judge_written(target.as_ref(), now, "the copy is complete").await;
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "from": from.to_string(),
                "to": to.to_string(),
                "tables": report.tables,
                "audit_rows": rows,
                "head": head,
            })
        );
    } else {
        let total: u64 = report.tables.iter().map(|(_, n)| n).sum();
        println!("copied {total} rows from {from} to {to}");
        for (table, n) in &report.tables {
            println!("  {table:<17} {n}");
        }
        println!("audit chain intact on both: {rows} rows, head {head}");
    }
    Ok(exit::OK)
}
