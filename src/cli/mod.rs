//! The command line: global options, subcommands, and the exit codes a script can
//! rely on. Every command opens the store, asks the core, and prints text or
//! `--json`; none of them re-implements a rule.

pub mod config;
pub mod copy;
pub mod json;
pub mod render;
pub mod report;
pub mod review;

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::core::audit::ChainStatus;
use crate::core::clock::{Clock, format_instant, parse_instant};
use crate::core::ids::{OperationId, Sha256};
use crate::core::model::{FailureMode, Risk, State};
use crate::core::rules::Actor;
use crate::store::{Location, OperationFilter, Page, SortOrder, Store, StoreError};
use config::{Config, Paths, Theme};

/// Exit codes, as documented in the README.
pub mod exit {
    /// Success.
    pub const OK: u8 = 0;
    /// Something went wrong (store unreachable, file unreadable, no such operation).
    pub const ERROR: u8 = 1;
    /// Bad input: a usage error, or an ingest with bad lines (nothing committed).
    pub const BAD_INPUT: u8 = 2;
    /// A guard refused the action; the refusal names its rule.
    pub const REFUSED: u8 = 3;
    /// The audit chain does not verify, or does not match a saved digest.
    pub const INTEGRITY: u8 = 4;
}

impl Failure {
    /// Bad input (exit 2) with a message.
    pub fn bad_input(message: impl Into<String>) -> anyhow::Error {
        Failure::new(exit::BAD_INPUT, message).into()
    }
}

/// An error that carries its exit code.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub fn new(code: u8, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
        }
    }
}

#[derive(Debug, Parser)]
#[command(
    name = "holdfast",
    version,
    about = "A terminal console for held operations: agent tool calls that ended UNKNOWN, PARTIAL or BLOCKED.",
    long_about = None,
)]
pub struct Cli {
    /// The SQLite store to use (default: holdfast.db in the data dir).
    #[arg(long, global = true, env = "HOLDFAST_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,

    /// A team store: `postgres://USER@HOST/DATABASE` (or `sqlite:PATH`); wins over
    /// `--db` and the config file.
    #[arg(long, global = true, env = "HOLDFAST_DATABASE_URL", value_name = "URL")]
    pub database_url: Option<String>,

    /// Freeze the clock at this RFC 3339 instant (deterministic runs and snapshots).
    #[arg(long, global = true, env = "HOLDFAST_NOW", value_name = "TIME", value_parser = parse_now)]
    pub now: Option<DateTime<Utc>>,

    /// Act as this identity (default: the config file's `identity`, else the OS
    /// user). On PostgreSQL the database login acts, and naming anyone else needs
    /// the login to hold the `delegate` role.
    #[arg(long = "as", global = true, env = "HOLDFAST_AS", value_name = "NAME")]
    pub as_identity: Option<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

fn parse_now(text: &str) -> Result<DateTime<Utc>, String> {
    parse_instant(text).map_err(|e| format!("{text:?} {e}"))
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load the fictional TC094 packet into a fresh demo store and open it.
    Demo {
        /// Print the held queue instead of opening the console.
        #[arg(long)]
        print: bool,
    },
    /// Ingest wire-format v1 records (JSON Lines) from a file, or `-` for stdin.
    Ingest {
        /// The file to read, or `-` for standard input.
        source: String,
        /// Commit the good lines and write the bad ones, verbatim, to this file.
        #[arg(long, value_name = "FILE")]
        rejects: Option<PathBuf>,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List operations (default: the held ones), most urgent first.
    List(ListArgs),
    /// Show the evidence bundle of one operation.
    Show {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Show the attempts and status queries of one operation in order.
    Timeline {
        id: String,
        #[arg(long)]
        json: bool,
    },
    /// Take a reviewer action on one operation (`review ID ACTION`), or on every
    /// held operation matching a filter (`review --filter TEXT ACTION`).
    Review(review::ReviewArgs),
    /// Give an identity a role on a tenant (audited).
    Grant(review::GrantArgs),
    /// Take a role on a tenant away from an identity (audited).
    Revoke(review::GrantArgs),
    /// List the grants (none: single-user mode).
    Grants {
        #[arg(long)]
        json: bool,
    },
    /// Write the evidence bundle(s) of operations, with a content hash, as JSON or
    /// Markdown.
    Export(review::ExportArgs),
    /// Check or print the audit chain.
    Audit {
        #[command(subcommand)]
        command: AuditCommand,
    },
    /// Store administration.
    Db {
        #[command(subcommand)]
        command: DbCommand,
    },
    /// The seven metrics, the release gate and the operational figures.
    Report {
        #[arg(long)]
        json: bool,
    },
    /// Print shell completions.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Args)]
pub struct ListArgs {
    /// `held` (default), `all`, or a state; repeatable.
    #[arg(long, value_name = "STATE")]
    pub state: Vec<String>,
    #[arg(long)]
    pub tenant: Vec<String>,
    #[arg(long)]
    pub owner: Vec<String>,
    /// A failure mode (`timeout_unknown`, …); repeatable.
    #[arg(long)]
    pub mode: Vec<String>,
    /// A risk tier (`low` … `critical`); repeatable.
    #[arg(long)]
    pub risk: Vec<String>,
    /// The start of a word of an id, target, key or provider request id (case-insensitive).
    #[arg(long)]
    pub search: Option<String>,
    #[arg(long, value_enum, default_value_t = SortArg::Urgency)]
    pub sort: SortArg,
    #[arg(long, default_value_t = 50)]
    pub limit: u64,
    #[arg(long, default_value_t = 0)]
    pub offset: u64,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SortArg {
    Urgency,
    Age,
    Id,
    Deadline,
}

#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Walk the whole chain; exit 4 naming the first broken seq.
    Verify {
        /// Also check the chain still contains a head printed earlier by `audit digest`
        /// (the file holds `SEQ HASH`).
        #[arg(long, value_name = "FILE")]
        digest: Option<PathBuf>,
        #[arg(long)]
        json: bool,
    },
    /// Print the chain head (`SEQ HASH`) to keep outside the database.
    Digest {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum DbCommand {
    /// Create the store if needed and apply pending migrations.
    Migrate,
    /// Copy everything, audit chain included, from one store into a new one.
    Copy(copy::CopyArgs),
}

/// Everything a command needs besides its own arguments.
pub struct Context {
    pub paths: Paths,
    pub config: Config,
    pub clock: Clock,
    /// The identity asked for: `--as` / `HOLDFAST_AS`, else the config file's.
    pub asked: Option<String>,
    /// The OS user, who acts on a SQLite store when nobody is asked for.
    pub local_user: String,
    pub db: Option<PathBuf>,
    /// `--database-url` / `HOLDFAST_DATABASE_URL`.
    pub database_url: Option<String>,
}

impl Context {
    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// The store this invocation works on: `--database-url`, else `--db`, else the
    /// config file's `database_url`, else its `store`, else the default file.
    pub fn store_location(&self) -> Result<Location, StoreError> {
        if let Some(url) = &self.database_url {
            return Location::parse(url);
        }
        if let Some(path) = &self.db {
            return Ok(Location::Sqlite(path.clone()));
        }
        if let Some(url) = &self.config.database_url {
            return Location::parse(url);
        }
        Ok(Location::Sqlite(
            self.config
                .store
                .clone()
                .unwrap_or_else(|| self.paths.default_store()),
        ))
    }

    pub async fn open_store(&self) -> anyhow::Result<Arc<dyn Store>> {
        Ok(self.store_location()?.open().await?)
    }

    /// The acting identity with what the store's grants allow it: on PostgreSQL
    /// the database login (acting for the identity asked for only with the
    /// `delegate` role; refused otherwise, exit 3), on SQLite the identity asked
    /// for or the OS user. With no grants at all the store is in single-user mode
    /// and that user may do everything.
    pub async fn actor(&self, store: &dyn Store) -> anyhow::Result<Actor> {
        crate::review::identify(
            store,
            self.asked.as_deref(),
            &self.local_user,
            self.config.policy.clone(),
        )
        .await
        .map_err(review::failure)
    }

    /// The acting identity for `what`, which is done only in one's own name:
    /// refused (exit 3) when the actor would act for someone else.
    pub async fn own_name(&self, store: &dyn Store, what: &str) -> anyhow::Result<String> {
        let actor = self.actor(store).await?;
        crate::core::access::own_name(&actor, what)
            .map(str::to_owned)
            .map_err(|r| review::failure(crate::review::ReviewError::Refused(r)))
    }

    pub fn no_color(&self) -> bool {
        std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
            || self.config.theme == Some(Theme::Mono)
    }
}

/// Text for `--help` that names the files holdfast uses.
fn files_help(paths: &Paths) -> String {
    format!(
        "Files:\n  config file  {}\n  data dir     {}\n  log file     {}\n\nExit codes: 0 ok, 1 error, 2 bad input, 3 refused by a guard (G8: changed by someone else first), 4 audit chain broken.",
        paths.config_file.display(),
        paths.data_dir.display(),
        paths.log_file.display()
    )
}

/// Parses the command line and runs it; returns the process exit code.
pub fn main() -> ExitCode {
    let paths = Paths::discover();
    let command = Cli::command().after_help(files_help(&paths));
    let cli = match Cli::from_arg_matches(&command.get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let _guard = init_logging(&paths);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("holdfast: cannot start the runtime: {e}");
            return ExitCode::from(exit::ERROR);
        }
    };
    match runtime.block_on(run(cli, paths)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            let code = e.downcast_ref::<Failure>().map_or(exit::ERROR, |f| f.code);
            let text = format!("{e:#}");
            tracing::error!(
                error = %crate::core::sanitize::sanitize(&text),
                "command failed"
            );
            let text = crate::core::redact::redact(&text);
            if code == exit::REFUSED {
                eprintln!("{text}");
            } else {
                eprintln!("holdfast: {text}");
            }
            ExitCode::from(code)
        }
    }
}

fn init_logging(paths: &Paths) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let dir = paths.log_file.parent()?;
    std::fs::create_dir_all(dir).ok()?;
    let name = paths.log_file.file_name()?;
    let appender = tracing_appender::rolling::never(dir, name);
    let (writer, guard) = tracing_appender::non_blocking(appender);
    let filter = tracing_subscriber::EnvFilter::try_from_env("HOLDFAST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init()
        .ok()?;
    Some(guard)
}

async fn run(cli: Cli, paths: Paths) -> anyhow::Result<u8> {
    let config = Config::load(&paths.config_file)
        .map_err(|e| Failure::new(exit::BAD_INPUT, e.to_string()))?;
    crate::core::redact::install(&config.redact).map_err(|e| {
        Failure::new(
            exit::BAD_INPUT,
            format!("config file {}: {e}", paths.config_file.display()),
        )
    })?;
    let asked = cli.as_identity.clone().or_else(|| config.identity.clone());
    let clock = cli.now.map_or(Clock::System, Clock::Frozen);
    let ctx = Context {
        paths,
        config,
        clock,
        asked,
        local_user: config::os_user(),
        db: cli.db.clone(),
        database_url: cli.database_url.clone(),
    };
    // Only the command's name: its arguments hold free text (rationales,
    // references) that must never reach the log.
    tracing::info!(command = command_name(cli.command.as_ref()), "start");
    match cli.command {
        None => console(&ctx, ctx.open_store().await?).await,
        Some(Command::Demo { print }) => demo(ctx, print).await,
        Some(Command::Ingest {
            source,
            rejects,
            json,
        }) => ingest(&ctx, &source, rejects, json).await,
        Some(Command::List(args)) => list(&ctx, args).await,
        Some(Command::Show { id, json }) => show(&ctx, &id, json).await,
        Some(Command::Timeline { id, json }) => timeline(&ctx, &id, json).await,
        Some(Command::Review(args)) => review::review(&ctx, args).await,
        Some(Command::Grant(args)) => {
            review::grant(&ctx, crate::core::access::GrantOp::Grant, args).await
        }
        Some(Command::Revoke(args)) => {
            review::grant(&ctx, crate::core::access::GrantOp::Revoke, args).await
        }
        Some(Command::Grants { json }) => review::grants(&ctx, json).await,
        Some(Command::Export(args)) => review::export(&ctx, args).await,
        Some(Command::Audit { command }) => audit(&ctx, command).await,
        Some(Command::Db {
            command: DbCommand::Migrate,
        }) => {
            let store = ctx.open_store().await?;
            println!("store {} is migrated and ready", store.location());
            Ok(exit::OK)
        }
        Some(Command::Db {
            command: DbCommand::Copy(args),
        }) => copy::run(args).await,
        Some(Command::Report { json }) => report::run(&ctx, json).await,
        Some(Command::Completions { shell }) => {
            let mut command = Cli::command();
            clap_complete::generate(shell, &mut command, "holdfast", &mut std::io::stdout());
            Ok(exit::OK)
        }
    }
}

async fn console(ctx: &Context, store: Arc<dyn Store>) -> anyhow::Result<u8> {
    let console = crate::tui::Console {
        actor: ctx.actor(store.as_ref()).await?,
        clock: ctx.clock,
        no_color: ctx.no_color(),
        log_path: Some(ctx.paths.log_file.clone()),
    };
    crate::tui::run(store, console).await?;
    Ok(exit::OK)
}

async fn held_page(ctx: &Context, store: &dyn Store) -> anyhow::Result<String> {
    let actor = ctx.actor(store).await?;
    let filter = OperationFilter {
        queue: true,
        visible_tenants: actor.visible_tenants(),
        ..OperationFilter::default()
    };
    let (rows, total) = store
        .list(
            &filter,
            SortOrder::Urgency,
            Page {
                offset: 0,
                limit: 50,
            },
            ctx.now(),
        )
        .await?;
    let header = render::actor_header(&actor);
    if total == 0 {
        return Ok(format!(
            "{header}no held operations — `holdfast ingest FILE` to load some, or `holdfast demo`\n"
        ));
    }
    Ok(format!("{header}{}", render::list(&rows, total, ctx.now())))
}

/// The demo packet, shipped inside the binary so `holdfast demo` works anywhere.
pub const DEMO_PACKET: &str = include_str!("../../assets/demo/tc094.jsonl");

async fn demo(mut ctx: Context, print: bool) -> anyhow::Result<u8> {
    let path = ctx.db.clone().unwrap_or_else(|| ctx.paths.demo_store());
    for suffix in ["", "-wal", "-shm"] {
        let file = PathBuf::from(format!("{}{suffix}", path.display()));
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot reset {}", file.display())),
        }
    }
    // The demo always gets a fresh file of its own, whatever team store is set.
    ctx.db = Some(path);
    ctx.database_url = None;
    let store = ctx.open_store().await?;
    let parsed = crate::wire::parse_stream(DEMO_PACKET.as_bytes(), &mut |_| {})?;
    if let Some(first) = parsed.errors.first() {
        anyhow::bail!("the demo packet does not parse: {first}");
    }
    let instant = ctx.clock.now();
    let frozen = latest_instant(parsed.records.iter().map(|n| &n.record));
    let at = match ctx.clock {
        Clock::Frozen(t) => t,
        Clock::System => frozen.unwrap_or(instant),
    };
    ctx.clock = Clock::Frozen(at);
    let report = store
        .ingest(
            parsed.records,
            crate::store::IngestMode::Strict,
            "holdfast-demo",
            at,
        )
        .await?;
    if let Some(first) = report.rejected.first() {
        anyhow::bail!("the demo packet was refused: {first}");
    }
    eprintln!(
        "demo store {} loaded; clock frozen at {}",
        store.location(),
        format_instant(at)
    );
    if print {
        print!("{}", held_page(&ctx, store.as_ref()).await?);
        return Ok(exit::OK);
    }
    console(&ctx, store).await
}

/// The latest instant any record names: the demo packet's own frozen "now".
fn latest_instant<'a>(
    records: impl Iterator<Item = &'a crate::wire::Record>,
) -> Option<DateTime<Utc>> {
    use crate::wire::Record;
    records
        .flat_map(|record| -> Vec<DateTime<Utc>> {
            match record {
                Record::Contract(_) => vec![],
                Record::Operation(o) => {
                    [Some(o.created_at), o.approval.as_ref().and_then(|a| a.at)]
                        .into_iter()
                        .flatten()
                        .collect()
                }
                Record::Attempt(a) => [Some(a.started_at), a.ended_at]
                    .into_iter()
                    .flatten()
                    .collect(),
                Record::Item(_) | Record::Expectation(_) => vec![],
                Record::Observation(o) => vec![o.observed_at],
                Record::Transition(t) => vec![t.at],
            }
        })
        .max()
}

async fn ingest(
    ctx: &Context,
    source: &str,
    rejects: Option<PathBuf>,
    json: bool,
) -> anyhow::Result<u8> {
    let store = ctx.open_store().await?;
    let by = ctx.own_name(store.as_ref(), "ingest").await?;
    let source = if source == "-" {
        crate::ingest::Source::Stdin
    } else {
        crate::ingest::Source::Path(PathBuf::from(source))
    };
    let outcome =
        crate::ingest::ingest_source(store.as_ref(), source, rejects.as_deref(), &by, ctx.now())
            .await?;
    if json {
        println!("{}", crate::cli::json::pretty(&outcome)?);
    } else {
        for error in outcome.errors() {
            // Field paths and reasons can quote the input (an unknown key, a tool).
            eprintln!("{}", crate::core::sanitize::sanitize(&error.to_string()));
        }
        eprintln!("{}", outcome.summary());
    }
    Ok(if outcome.refused() && outcome.rejects_file.is_none() {
        exit::BAD_INPUT
    } else {
        exit::OK
    })
}

fn parse_list<T>(
    values: &[String],
    what: &str,
    parse: fn(&str) -> Option<T>,
    expected: String,
) -> anyhow::Result<Vec<T>> {
    values
        .iter()
        .map(|v| {
            parse(v).ok_or_else(|| {
                Failure::bad_input(format!("--{what} {v}: must be one of: {expected}"))
            })
        })
        .collect()
}

async fn list(ctx: &Context, args: ListArgs) -> anyhow::Result<u8> {
    let (queue, states) = match args
        .state
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] | ["held"] => (true, Vec::new()),
        ["all"] => (false, Vec::new()),
        _ => (
            false,
            parse_list(
                &args.state,
                "state",
                State::parse,
                format!("held, all, {}", State::expected()),
            )?,
        ),
    };
    let filter = OperationFilter {
        queue,
        states,
        tenants: args.tenant.clone(),
        owners: args.owner.clone(),
        modes: parse_list(
            &args.mode,
            "mode",
            FailureMode::parse,
            FailureMode::expected(),
        )?,
        risks: parse_list(&args.risk, "risk", Risk::parse, Risk::expected())?,
        search: args.search.clone(),
        visible_tenants: None,
    };
    let sort = match args.sort {
        SortArg::Urgency => SortOrder::Urgency,
        SortArg::Age => SortOrder::Age,
        SortArg::Id => SortOrder::Id,
        SortArg::Deadline => SortOrder::Deadline,
    };
    let store = ctx.open_store().await?;
    let actor = ctx.actor(store.as_ref()).await?;
    let filter = OperationFilter {
        visible_tenants: actor.visible_tenants(),
        ..filter
    };
    let page = Page {
        offset: args.offset,
        limit: args.limit.clamp(1, 10_000),
    };
    let (rows, total) = store.list(&filter, sort, page, ctx.now()).await?;
    warn_skipped(store.as_ref());
    if args.json {
        let ops: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| crate::wire::to_value(&crate::wire::Record::Operation(r.operation.clone())))
            .collect();
        println!("{}", crate::cli::json::pretty(&ops)?);
    } else {
        print!(
            "{}{}",
            render::actor_header(&actor),
            render::list(&rows, total, ctx.now())
        );
    }
    Ok(exit::OK)
}

/// The subcommand's name, for the log (`console` without one).
fn command_name(command: Option<&Command>) -> String {
    command.map_or_else(
        || "console".to_owned(),
        |c| {
            format!("{c:?}")
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect()
        },
    )
}

/// Warns on stderr about every row the command's reads skipped as unreadable.
pub fn warn_skipped(store: &dyn Store) {
    for what in store.take_skipped() {
        eprintln!(
            "warning: skipped unreadable {}; run `holdfast audit verify`",
            crate::core::sanitize::sanitize(&what)
        );
    }
}

/// Parses an operation id typed on the command line.
pub fn parse_id(id: &str) -> anyhow::Result<OperationId> {
    OperationId::parse(id).map_err(|e| Failure::bad_input(format!("operation id {id:?} {e}")))
}

/// One operation as the acting identity may see it (G7), with that actor.
async fn load(
    ctx: &Context,
    id: &str,
) -> anyhow::Result<(crate::core::model::OperationDetail, Actor)> {
    let id = parse_id(id)?;
    let store = ctx.open_store().await?;
    let actor = ctx.actor(store.as_ref()).await?;
    let detail = crate::review::load(store.as_ref(), &id, &actor)
        .await
        .map_err(review::failure)?;
    Ok((detail, actor))
}

async fn show(ctx: &Context, id: &str, json: bool) -> anyhow::Result<u8> {
    let (detail, actor) = load(ctx, id).await?;
    let bundle = crate::core::evidence::bundle(&detail, &actor, ctx.now());
    if json {
        println!("{}", crate::cli::json::pretty(&bundle)?);
    } else {
        print!(
            "{}{}",
            render::actor_header(&actor),
            render::bundle(&bundle, ctx.now())
        );
    }
    Ok(exit::OK)
}

async fn timeline(ctx: &Context, id: &str, json: bool) -> anyhow::Result<u8> {
    let (detail, _) = load(ctx, id).await?;
    if json {
        let rows: Vec<serde_json::Value> = detail
            .attempts
            .iter()
            .map(|a| crate::wire::to_value(&crate::wire::Record::Attempt(a.clone())))
            .collect();
        println!("{}", crate::cli::json::pretty(&rows)?);
    } else {
        print!("{}", render::timeline(&detail, ctx.now()));
    }
    Ok(exit::OK)
}

/// A saved chain head: `SEQ HASH`.
fn read_digest(path: &std::path::Path) -> anyhow::Result<(i64, Sha256)> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read digest file {}", path.display()))?;
    let mut parts = text.split_whitespace();
    let bad = || {
        Failure::new(
            exit::BAD_INPUT,
            format!(
                "digest file {}: expected `SEQ HASH` as printed by `holdfast audit digest`",
                path.display()
            ),
        )
    };
    let seq = parts.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
    let hash = parts
        .next()
        .and_then(|h| Sha256::parse(h).ok())
        .ok_or_else(bad)?;
    Ok((seq, hash))
}

async fn audit(ctx: &Context, command: AuditCommand) -> anyhow::Result<u8> {
    let store = ctx.open_store().await?;
    match command {
        AuditCommand::Digest { json } => {
            let status = store.verify().await?;
            match status {
                ChainStatus::Intact { rows, head } => {
                    let (seq, hash) = head.map_or((0, crate::core::audit::genesis()), |h| h);
                    if json {
                        println!(
                            "{}",
                            serde_json::json!({"seq": seq, "hash": hash, "rows": rows})
                        );
                    } else {
                        println!("{seq} {hash}");
                    }
                    Ok(exit::OK)
                }
                ChainStatus::Broken { seq, reason } => Err(Failure::new(
                    exit::INTEGRITY,
                    format!("audit chain broken at seq {seq}: {reason}; no digest printed"),
                )
                .into()),
            }
        }
        AuditCommand::Verify { digest, json } => {
            let status = store.verify().await?;
            let saved = digest.as_deref().map(read_digest).transpose()?;
            let mut verdict = match &status {
                ChainStatus::Intact { rows, head } => Ok(format!(
                    "audit chain intact: {rows} rows, head {}",
                    head.as_ref()
                        .map_or_else(|| "empty".into(), |(s, h)| format!("{s} {h}"))
                )),
                ChainStatus::Broken { seq, reason } => {
                    Err(format!("audit chain broken at seq {seq}: {reason}"))
                }
            };
            if let (Some((seq, hash)), Ok(_)) = (&saved, &verdict) {
                let rows = store.audit(*seq, 1).await?;
                match rows.first() {
                    Some(row) if row.seq == *seq && &row.hash == hash => {}
                    Some(_) => {
                        verdict = Err(format!(
                            "the saved digest does not match: seq {seq} now has another hash (the chain was rewritten)"
                        ))
                    }
                    None => {
                        verdict = Err(format!(
                            "the saved digest names seq {seq}, which the chain no longer has (rows were removed)"
                        ))
                    }
                }
            }
            if json {
                let _ = writeln!(
                    std::io::stdout(),
                    "{}",
                    serde_json::json!({"status": status, "digest_checked": saved.is_some(), "ok": verdict.is_ok()})
                );
            }
            match verdict {
                Ok(text) => {
                    if !json {
                        println!("{text}");
                    }
                    Ok(exit::OK)
                }
                Err(text) => Err(Failure::new(exit::INTEGRITY, text).into()),
            }
        }
    }
}
