//! `holdfast work claim|heartbeat|complete|release`: the work protocol (DESIGN
//! §9.2) for workers that are scripts or other programs. Each subcommand is one
//! call of [`crate::work`] through the acting identity's session, in its own
//! name (a worker's records are signed by whoever runs it).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::cli::{Context, Failure, exit, render};
use crate::core::clock::{format_instant, human_instant};
use crate::store::Session;
use crate::work::{self, Holder, Lease, WorkError};

#[derive(Debug, Subcommand)]
pub(crate) enum WorkCommand {
    /// Hand out approved work not under a live lease, oldest first.
    Claim(ClaimArgs),
    /// Keep a lease alive (refused once it is lost).
    Heartbeat(StepArgs),
    /// Report what executing the work did: a wire-format file of attempt, item,
    /// observation and transition lines for that operation, checked as ingest
    /// checks them.
    Complete {
        #[command(flatten)]
        step: StepArgs,
        /// The wire-format file (JSON Lines).
        file: PathBuf,
    },
    /// Give the work back unfinished: claimable again at once.
    Release(StepArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ClaimArgs {
    /// The worker's name, repeated on every later step of its leases.
    #[arg(long, value_name = "NAME")]
    pub worker: String,
    /// How long each lease lasts without a heartbeat.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(i64).range(1..=work_max()))]
    pub lease: i64,
    /// At most this many pieces.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1000))]
    pub limit: u64,
    /// One JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

const fn work_max() -> i64 {
    crate::core::work::MAX_LEASE_SECONDS
}

#[derive(Debug, Args)]
pub(crate) struct StepArgs {
    /// The operation the lease is on.
    pub id: String,
    /// The worker that claimed it.
    #[arg(long, value_name = "NAME")]
    pub worker: String,
    /// The lease generation the claim printed: refuses the step when a later
    /// claim replaced that lease, even one under the same worker name.
    #[arg(long = "lease-generation", value_name = "N")]
    pub generation: Option<i64>,
    /// Heartbeat only: extend to this many seconds from now (default: the
    /// lease's own length).
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(i64).range(1..=work_max()))]
    pub lease: Option<i64>,
    /// One JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Maps a work error to its exit code: refused 3 (a hidden operation is a G7
/// refusal), bad input 2, else 1 (no such operation, as `show` says it).
fn failure(error: WorkError) -> anyhow::Error {
    let code = match &error {
        WorkError::Refused(_) => exit::REFUSED,
        WorkError::BadInput(_) => exit::BAD_INPUT,
        WorkError::NoOperation(e) if e.rule().is_some() => exit::REFUSED,
        WorkError::Read { .. } | WorkError::Store(_) | WorkError::NoOperation(_) => exit::ERROR,
    };
    Failure::new(code, render::clean(&error.to_string())).into()
}

fn lease_json(lease: &Lease) -> serde_json::Value {
    json!({
        "operation": lease.operation.as_str(),
        "tenant": lease.tenant,
        "tool": lease.tool,
        "worker": lease.worker,
        "generation": lease.generation,
        "claimed_at": format_instant(lease.claimed_at),
        "expires_at": format_instant(lease.expires_at),
        "status": lease.status,
    })
}

fn lease_line(lease: &Lease) -> String {
    render::clean(&format!(
        "{} {} (tenant {}, tool {}) lease {} for {} until {}",
        lease.operation,
        lease.status.as_str(),
        lease.tenant,
        lease.tool,
        lease.generation,
        lease.worker,
        human_instant(lease.expires_at)
    ))
}

async fn session(ctx: &Context) -> anyhow::Result<Session> {
    let session = ctx.session().await?;
    crate::cli::own_name(session.actor(), "work")?;
    Ok(session)
}

fn holder(step: &StepArgs) -> anyhow::Result<Holder> {
    Ok(Holder {
        operation: crate::cli::parse_id(&step.id)?,
        worker: step.worker.clone(),
        generation: step.generation,
    })
}

pub(crate) async fn work(ctx: &Context, command: WorkCommand) -> anyhow::Result<u8> {
    let session = session(ctx).await?;
    let now = ctx.now();
    match command {
        WorkCommand::Claim(args) => {
            let leases = work::claim(
                &session,
                &args.worker,
                chrono::Duration::seconds(args.lease),
                args.limit,
                now,
            )
            .await
            .map_err(failure)?;
            if args.json {
                let mut list = Vec::with_capacity(leases.len());
                for lease in &leases {
                    let mut value = lease_json(lease);
                    // What to execute: the operation as the store holds it.
                    let detail = session.detail(&lease.operation).await?;
                    value["kind"] = json!(kind(&detail.row.operation));
                    value["record"] = crate::wire::to_value(&crate::wire::Record::Operation(
                        detail.row.operation.clone(),
                    ));
                    list.push(value);
                }
                println!("{}", crate::cli::json::pretty(&json!({ "claimed": list }))?);
            } else if leases.is_empty() {
                println!(
                    "no work to claim (workers take approved work only of tools at `automation` or above: `holdfast autonomy list`)"
                );
            } else {
                for lease in &leases {
                    println!("claimed {}", lease_line(lease));
                }
            }
            Ok(exit::OK)
        }
        WorkCommand::Heartbeat(step) => {
            let lease = work::heartbeat(
                &session,
                &holder(&step)?,
                step.lease.map(chrono::Duration::seconds),
                now,
            )
            .await
            .map_err(failure)?;
            print_lease(&lease, step.json, "renewed")
        }
        WorkCommand::Release(step) => {
            let lease = work::release(&session, &holder(&step)?, now)
                .await
                .map_err(failure)?;
            print_lease(&lease, step.json, "released")
        }
        WorkCommand::Complete { step, file } => {
            let done = work::complete_file(&session, &holder(&step)?, &file, now)
                .await
                .map_err(failure)?;
            if step.json {
                println!("{}", crate::cli::json::pretty(&done)?);
            } else {
                for error in done.errors() {
                    eprintln!("{}", render::clean(&error.to_string()));
                }
                match &done.completion.lease {
                    Some(lease) => {
                        let taken: u64 = done
                            .completion
                            .report
                            .committed
                            .iter()
                            .map(|(_, n)| n)
                            .sum();
                        println!(
                            "{}: {} taken, {} already stored",
                            lease_line(lease),
                            crate::core::names::count(taken, "record", "records"),
                            done.completion.report.unchanged
                        );
                    }
                    None => eprintln!(
                        "{}: nothing taken; the lease is still held (fix the lines above and complete again)",
                        file.display()
                    ),
                }
            }
            Ok(if done.completed() {
                exit::OK
            } else {
                exit::BAD_INPUT
            })
        }
    }
}

fn print_lease(lease: &Lease, json: bool, what: &str) -> anyhow::Result<u8> {
    if json {
        println!("{}", crate::cli::json::pretty(&lease_json(lease))?);
    } else {
        println!("{what} {}", lease_line(lease));
    }
    Ok(exit::OK)
}

/// What kind of work an operation is: a compensation or resume child, else a
/// retry of an operation a reviewer authorized (or approved work as ingested).
fn kind(op: &crate::core::model::Operation) -> &'static str {
    match op.relation {
        Some(crate::core::model::Relation::CompensationOf) => "compensation",
        Some(crate::core::model::Relation::ResumeOf) => "resume",
        None => "retry",
    }
}
