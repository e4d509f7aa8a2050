//! `holdfast drill` and `holdfast sim-provider`: the seed's fault-injection
//! program into an ordinary store, and the simulated provider on its own.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Args;

use crate::cli::{Context, Failure, exit};
use crate::core::autonomy::{DrillResult, covered};
use crate::core::clock::human_instant;
use crate::executor::ExecClock;
use crate::sim::{Case, Provider, parse_cases};
use crate::store::Location;

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct DrillArgs {
    #[command(subcommand)]
    pub command: Option<DrillCommand>,
    /// More cases (JSON Lines, DESIGN §9.3), run after the sixteen built in.
    #[arg(long, value_name = "FILE")]
    pub cases: Option<PathBuf>,
    /// Print the cases, metrics and release gate as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// Run the sixteen injections under this tool's own contract, read from the
    /// store (`--db`/`--database-url` name that store), and record the result
    /// there for the autonomy gate; the drill's own operations go to a fresh
    /// store of their own.
    #[arg(long, value_name = "TOOL", conflicts_with_all = ["cases", "work"])]
    pub tool: Option<String>,
    /// Run `--tool` again for every tool of the store whose drill results are
    /// stale (a material new contract version or a recorded change since its
    /// latest drill), saying why each was, and record the results; it raises
    /// no autonomy level (an owner's decision).
    #[arg(long, conflicts_with_all = ["tool", "cases", "work", "into_existing"])]
    pub changed: bool,
    /// Serve approved work instead: the reference executor claims the store's
    /// approved retries, compensations and resumes through the work protocol
    /// (`holdfast work`), executes them against the simulated provider under
    /// their case's contract and completes them with their evidence. Runs on
    /// the store `--db` / `--database-url` name (a drill's store).
    #[arg(long)]
    pub work: bool,
    /// Run into the store `--db` / `--database-url` name even though it holds
    /// operations no drill wrote: the drill's operations go to a tenant of
    /// their own (`drill`), which the report and release gate of the store's
    /// other tenants never count. Without it such a store is refused.
    #[arg(long, conflicts_with_all = ["tool", "work"])]
    pub into_existing: bool,
}

#[derive(Debug, clap::Subcommand)]
pub(crate) enum DrillCommand {
    /// Write a drill case (DESIGN §9.3) reproducing a resolved operation's
    /// recorded attempts and provider answers, with the expectation its
    /// resolution proves. Only a verified outcome is a case.
    CaseFrom {
        /// The operation (SUCCEEDED, FAILED or COMPENSATED).
        id: String,
        /// Write the case to this file (refused if it exists) instead of stdout.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        /// Mark the case protected: the drill reports it by pass or fail only.
        #[arg(long)]
        protected: bool,
    },
}

/// `holdfast drill case-from ID`: the case line, on stdout or into a new file.
async fn case_from(
    ctx: &Context,
    id: &str,
    out: Option<&std::path::Path>,
    protected: bool,
) -> anyhow::Result<u8> {
    let id = crate::cli::parse_id(id)?;
    let session = ctx.session().await?;
    let detail = crate::review::load(&session, &id)
        .await
        .map_err(crate::cli::review::failure)?;
    super::warn_skipped(&session);
    let line = crate::drill::incident::case_from(&detail, protected).map_err(|e| {
        let code = match e {
            crate::drill::incident::NotACase::Unresolved { .. } => exit::REFUSED,
            crate::drill::incident::NotACase::Unreproducible { .. } => exit::ERROR,
        };
        Failure::new(code, crate::cli::render::clean(&e.to_string()))
    })?;
    match out {
        None => println!("{line}"),
        Some(path) => {
            if path.exists() {
                return Err(Failure::bad_input(format!(
                    "{} exists: case-from writes a new file (add cases to a case file with `>>` from stdout)",
                    path.display()
                )));
            }
            let mut partial = path.as_os_str().to_owned();
            partial.push(".partial");
            let partial = PathBuf::from(partial);
            let written = std::fs::write(&partial, format!("{line}\n"))
                .and_then(|()| std::fs::rename(&partial, path));
            if let Err(e) = written {
                let _ = std::fs::remove_file(&partial);
                return Err(Failure::new(
                    exit::ERROR,
                    format!("cannot write {}: {e}", path.display()),
                )
                .into());
            }
            eprintln!(
                "case {}{} written to {}",
                crate::drill::incident::CASE_PREFIX,
                crate::cli::render::clean(id.as_str()),
                path.display()
            );
        }
    }
    Ok(exit::OK)
}

#[derive(Debug, Args)]
pub(crate) struct SimProviderArgs {
    /// The loopback address to listen on (port 0: a free port).
    #[arg(long, default_value = "127.0.0.1:8710", value_name = "ADDR")]
    pub listen: SocketAddr,
    /// The cases whose scripts it plays (JSON Lines, DESIGN §9.3).
    #[arg(long, value_name = "FILE")]
    pub cases: PathBuf,
}

fn read_cases(path: &std::path::Path) -> anyhow::Result<Vec<Case>> {
    let text =
        crate::bounded::read_text(path, "case file", crate::bounded::CASES_BYTES).map_err(|e| {
            match e {
                crate::bounded::BoundError::Read { .. } => {
                    anyhow::Error::from(Failure::new(exit::ERROR, e.to_string()))
                }
                _ => Failure::bad_input(e.to_string()),
            }
        })?;
    parse_cases(&text).map_err(|errors| {
        let lines: Vec<String> = errors
            .iter()
            .map(|e| format!("{}: {e}", path.display()))
            .collect();
        Failure::bad_input(lines.join("\n"))
    })
}

/// A fresh drill store in the data dir, named after `what` and the time.
fn fresh_store(ctx: &Context, what: &str) -> Location {
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3f");
    let name: String = what
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    Location::Sqlite(ctx.paths.data_dir.join(format!("drill-{name}{stamp}.db")))
}

/// One tool's drill: the seed's injections under its stored contract, into a
/// fresh store of their own, the result recorded in the session's store (with
/// the contract version it ran under) for autonomy gate A2.
async fn run_tool(
    ctx: &Context,
    session: &crate::store::Session,
    tool: &str,
) -> anyhow::Result<(crate::drill::Outcome, DrillResult, i64, String)> {
    let contracts = session.contracts().await?;
    let Some(contract) = contracts.iter().find(|c| c.tool == tool) else {
        return Err(Failure::new(
            exit::ERROR,
            format!("{} holds no contract for tool {tool}", session.location()),
        )
        .into());
    };
    let seed = crate::drill::seed_cases().map_err(|errors| {
        Failure::new(
            exit::ERROR,
            format!("the built-in cases do not parse: {}", errors[0]),
        )
    })?;
    let cases =
        crate::drill::under_contract(&seed, contract).map_err(|e| Failure::new(exit::ERROR, e))?;
    let location = fresh_store(ctx, &format!("{tool}-"));
    let scratch = location.open().await?;
    let outcome = crate::drill::run(scratch.as_ref(), &cases).await?;
    let result = DrillResult {
        tool: tool.to_owned(),
        at: ctx.now(),
        cases: u32::try_from(outcome.cases.len()).unwrap_or(u32::MAX),
        passed: u32::try_from(outcome.cases.iter().filter(|c| c.pass).count()).unwrap_or(u32::MAX),
        modes: covered(outcome.cases.iter().map(|c| c.mode)),
        failed: outcome
            .cases
            .iter()
            .filter(|c| !c.pass)
            .map(|c| c.id.clone())
            .collect(),
        drill_store: scratch.location(),
        by: session.actor().identity.clone(),
        contract_version: Some(contract.version.clone()),
    };
    let row = crate::autonomy::record_drill(session, result.clone(), ctx.now())
        .await
        .map_err(crate::cli::review::failure)?;
    Ok((outcome, result, row.seq, scratch.location()))
}

/// Prints one tool's drill as text: the cases, the result, and whether it
/// opens gate A2.
fn print_tool(
    session: &crate::store::Session,
    outcome: &crate::drill::Outcome,
    result: &DrillResult,
    seq: i64,
) {
    print!("{}", crate::drill::table::render(outcome));
    println!(
        "tool {}: {} of {} cases passed, {} of 8 failure modes covered under contract version {}; recorded in {} (audit seq {seq})",
        crate::cli::render::clean(&result.tool),
        result.passed,
        result.cases,
        result.modes.len(),
        crate::cli::render::clean(result.contract_version.as_deref().unwrap_or("unknown")),
        session.location(),
    );
    if let Err(why) = result.check() {
        println!("this drill does not open autonomy gate A2: {why}");
    }
}

/// `holdfast drill --tool TOOL`: the seed's injections under the tool's contract,
/// the result recorded for the tool.
async fn drill_tool(ctx: &Context, tool: &str, json: bool) -> anyhow::Result<u8> {
    let session = ctx.session().await?;
    let (outcome, result, seq, scratch) = run_tool(ctx, &session, tool).await?;
    if json {
        let mut value = outcome.to_json();
        value["tool"] = serde_json::json!({"result": result, "audit_seq": seq});
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print_tool(&session, &outcome, &result, seq);
    }
    eprintln!("drill store {scratch}; open it with `holdfast --db …`");
    Ok(if outcome.all_pass() {
        exit::OK
    } else {
        exit::ERROR
    })
}

/// `holdfast drill --changed`: `drill --tool` again for every tool whose
/// latest drill is stale (a material new contract version or a recorded
/// change since, or a drill that named no version), saying why each was. It
/// raises no level: that stays an owner's decision.
async fn drill_changed(ctx: &Context, json: bool) -> anyhow::Result<u8> {
    let session = ctx.session().await?;
    let stale = crate::core::rerun::stale_tools(
        &session.contracts().await?,
        &session.drill_ledger().await?,
    );
    let mut all_pass = true;
    let mut reports = Vec::new();
    if stale.is_empty() && !json {
        println!("no tool has stale drill results: nothing to rerun");
    }
    for (tool, why) in &stale {
        if !json {
            println!(
                "tool {}: drill stale: {}; running it again",
                crate::cli::render::clean(tool),
                crate::cli::render::clean(why)
            );
        }
        let (outcome, result, seq, scratch) = run_tool(ctx, &session, tool).await?;
        all_pass &= outcome.all_pass();
        if json {
            reports.push(serde_json::json!({
                "tool": tool,
                "stale": why,
                "pass": outcome.all_pass(),
                "result": result,
                "audit_seq": seq,
                "drill_store": scratch,
            }));
        } else {
            print_tool(&session, &outcome, &result, seq);
            eprintln!("drill store {scratch}; open it with `holdfast --db …`");
        }
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "rerun": reports }))?
        );
    } else if !stale.is_empty() {
        println!(
            "autonomy is not raised by a drill: an owner raises each tool again with `holdfast autonomy set TOOL LEVEL --rationale …`"
        );
    }
    Ok(if all_pass { exit::OK } else { exit::ERROR })
}

/// Runs the drill; exit 0 only when every case passes.
pub(crate) async fn drill(ctx: &Context, args: DrillArgs) -> anyhow::Result<u8> {
    if let Some(DrillCommand::CaseFrom { id, out, protected }) = &args.command {
        return case_from(ctx, id, out.as_deref(), *protected).await;
    }
    if let Some(tool) = &args.tool {
        return drill_tool(ctx, tool, args.json).await;
    }
    if args.changed {
        return drill_changed(ctx, args.json).await;
    }
    let mut cases = crate::drill::seed_cases().map_err(|errors| {
        Failure::new(
            exit::ERROR,
            format!("the built-in cases do not parse: {}", errors[0]),
        )
    })?;
    if let Some(path) = &args.cases {
        let mut more = read_cases(path)?;
        if let Some(clash) = more.iter().find(|c| cases.iter().any(|b| b.id == c.id)) {
            return Err(Failure::bad_input(format!(
                "{}: case {} clashes with a built-in case id",
                path.display(),
                clash.id
            )));
        }
        cases.append(&mut more);
    }
    if args.work {
        return serve_work(ctx, &cases, args.json).await;
    }
    let (held_out, cases): (Vec<Case>, Vec<Case>) = cases.into_iter().partition(|c| c.protected);
    let named = ctx.database_url.is_some() || ctx.db.is_some();
    let location = if named {
        ctx.store_location()?
    } else {
        fresh_store(ctx, "")
    };
    let store = location.open().await?;
    let tenant = if args.into_existing {
        Some(crate::drill::DRILL_TENANT)
    } else {
        if let Some((op, total)) = crate::drill::foreign_operation(store.as_ref()).await? {
            return Err(Failure::new(
                exit::REFUSED,
                format!(
                    "{} holds operations no drill wrote ({} of tenant {}, one of {} there): the drill writes nothing into it. \
                     Leave out --db / --database-url (and HOLDFAST_DB / HOLDFAST_DATABASE_URL) to run into a fresh drill store in {}, \
                     or add --into-existing to put the drill's operations in tenant `{}` of this store, which its other tenants' report and release gate never count. \
                     To record a drill of one of its tools for the autonomy gate, run `holdfast drill --tool TOOL` on it.",
                    store.location(),
                    crate::cli::render::clean(op.id.as_str()),
                    crate::cli::render::clean(&op.tenant),
                    total,
                    ctx.paths.data_dir.display(),
                    crate::drill::DRILL_TENANT,
                ),
            )
            .into());
        }
        if let Some(tool) = crate::drill::foreign_contract(store.as_ref()).await? {
            return Err(Failure::new(
                exit::REFUSED,
                format!(
                    "{} holds the contract of tool {} without any operation of it, which no drill writes: the drill writes nothing into it. \
                     Leave out --db / --database-url (and HOLDFAST_DB / HOLDFAST_DATABASE_URL) to run into a fresh drill store in {}, \
                     or add --into-existing to put the drill's operations in tenant `{}` of this store. \
                     To record a drill of {} for the autonomy gate, run `holdfast drill --tool {}` on it.",
                    store.location(),
                    crate::cli::render::clean(&tool),
                    ctx.paths.data_dir.display(),
                    crate::drill::DRILL_TENANT,
                    crate::cli::render::clean(&tool),
                    crate::cli::render::clean(&tool),
                ),
            )
            .into());
        }
        None
    };
    let mut outcome = crate::drill::run_into(store.as_ref(), &cases, tenant).await?;
    if !held_out.is_empty() {
        outcome.cases.extend(held_out_run(ctx, &held_out).await);
    }
    let place = match tenant {
        Some(tenant) => format!("tenant `{tenant}` of {}", store.location()),
        None => store.location(),
    };
    if args.json {
        let mut value = outcome.to_json();
        value["store"] = serde_json::json!(store.location());
        value["tenant"] = serde_json::json!(tenant);
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print!("{}", crate::drill::table::render(&outcome));
        println!("drill operations in {place}");
    }
    eprintln!(
        "drill store {} (clock {}); open it with `holdfast --db …` or `holdfast --database-url …`",
        store.location(),
        human_instant(outcome.report.now)
    );
    Ok(if outcome.all_pass() {
        exit::OK
    } else {
        exit::ERROR
    })
}

/// The protected cases, run into a store of their own that is deleted when they
/// end: what they did never reaches the store the drill names, its metrics or
/// its release gate, and any failure to run says only which case failed.
async fn held_out_run(ctx: &Context, cases: &[Case]) -> Vec<crate::drill::CaseResult> {
    let withheld = || {
        cases
            .iter()
            .map(crate::drill::CaseResult::withheld)
            .collect()
    };
    let location = fresh_store(ctx, "protected-");
    let Location::Sqlite(path) = &location else {
        return withheld();
    };
    let results = match location.open().await {
        Ok(store) => match crate::drill::run(store.as_ref(), cases).await {
            Ok(outcome) => outcome.cases,
            Err(_) => withheld(),
        },
        Err(_) => withheld(),
    };
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(file));
    }
    results
}

/// `drill --work`: the executor serves the store's approved work.
async fn serve_work(ctx: &Context, cases: &[Case], json: bool) -> anyhow::Result<u8> {
    // The executor acts as the drill's service identity unless told otherwise;
    // on PostgreSQL the database login acts.
    let session = ctx.service_session(crate::drill::DRILL_IDENTITY).await?;
    crate::cli::own_name(session.actor(), "work")?;
    let served = crate::drill::work::serve(&session, cases, ctx.now()).await?;
    if json {
        println!(
            "{}",
            crate::cli::json::pretty(&serde_json::json!({ "served": served }))?
        );
    } else if served.is_empty() {
        println!("no approved work to serve in {}", session.location());
    } else {
        println!(
            "{:<14} {:<6} {:>5} {:<10} {:>8} {:>7}  note",
            "operation", "case", "lease", "state", "requests", "effects"
        );
        for s in &served {
            println!(
                "{}",
                crate::cli::render::clean(&format!(
                    "{:<14} {:<6} {:>5} {:<10} {:>8} {:>7}  {}",
                    s.operation.as_str(),
                    s.case.as_deref().unwrap_or("-"),
                    s.lease,
                    s.state.as_str(),
                    s.requests,
                    s.effects,
                    s.released.as_deref().unwrap_or("")
                ))
            );
        }
    }
    Ok(exit::OK)
}

/// Serves the simulated provider until interrupted.
pub(crate) async fn sim_provider(args: SimProviderArgs) -> anyhow::Result<u8> {
    let cases = read_cases(&args.cases)?;
    let provider = Provider::new();
    for case in &cases {
        provider.add_case(case.clone(), ExecClock::System);
    }
    let running = crate::sim::serve(provider, args.listen)
        .await
        .map_err(|e| Failure::bad_input(e.to_string()))?;
    println!("simulated provider on http://{}", running.addr);
    for case in &cases {
        if case.protected {
            println!("  {:<6} protected", crate::cli::render::clean(&case.id));
            continue;
        }
        let base = running.case_url(&case.id);
        let path = case
            .contract
            .path
            .as_ref()
            .map_or(crate::executor::run::DEFAULT_PATH, |p| p.as_str());
        let lookup = match case.lookup_spec(&base) {
            Ok(Some(spec)) => format!("{} {}", spec.method, spec.url),
            _ => format!(
                "GET {base}{}?business_key=…",
                crate::sim::provider::STANDARD_LOOKUP
            ),
        };
        println!(
            "{}",
            crate::cli::render::clean(&format!(
                "  {:<6} {:<18} {} {base}{path}  {lookup}  GET {base}/counters",
                case.id,
                case.mode.as_str(),
                case.contract.method.to_ascii_uppercase(),
            ))
        );
    }
    tokio::select! {
        _ = running.wait() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(exit::OK)
}
