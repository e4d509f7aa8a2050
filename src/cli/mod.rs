//! The command line: global options, subcommands, and the exit codes a script can
//! rely on, with the dispatch to [`commands`]. Every command opens the store, asks
//! the core, and prints text or `--json`; none of them re-implements a rule.

pub(crate) mod commands;
pub(crate) mod config;
pub(crate) mod json;
pub(crate) mod render;

pub use commands::console::DEMO_PACKET;
pub(crate) use commands::{copy, report, review};

use chrono::{DateTime, Utc};
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::core::clock::{Clock, TimeSpec};
use crate::core::ids::OperationId;
use crate::core::rules::Actor;
use crate::store::{Location, Session, Store, StoreError};
use config::{Config, Paths, Theme};

/// Exit codes, as documented in docs/cli.md.
pub(crate) mod exit {
    /// Success.
    pub(crate) const OK: u8 = 0;
    /// Something went wrong (store unreachable, file unreadable, no such operation).
    pub(crate) const ERROR: u8 = 1;
    /// Bad input: a usage error, or an ingest with bad lines (nothing committed).
    pub(crate) const BAD_INPUT: u8 = 2;
    /// A guard refused the action; the refusal names its rule.
    pub(crate) const REFUSED: u8 = 3;
    /// The audit chain does not verify, or does not match a saved digest.
    pub(crate) const INTEGRITY: u8 = 4;
    /// `report`: the release gate evaluated nothing (`NOT_EVALUATED`), which is
    /// not a pass.
    pub(crate) const NOT_EVALUATED: u8 = 5;
}

impl Failure {
    /// Bad input (exit 2) with a message.
    pub(crate) fn bad_input(message: impl Into<String>) -> anyhow::Error {
        Failure::new(exit::BAD_INPUT, message).into()
    }
}

/// An error that carries its exit code.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub(crate) struct Failure {
    pub code: u8,
    pub message: String,
}

impl Failure {
    pub(crate) fn new(code: u8, message: impl Into<String>) -> Self {
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
pub(crate) struct Cli {
    /// The SQLite store to use (default: holdfast.db in the data dir).
    #[arg(long, global = true, env = "HOLDFAST_DB", value_name = "PATH")]
    pub db: Option<PathBuf>,

    /// A team store: `postgres://USER@HOST/DATABASE` (or `sqlite:PATH`); wins over
    /// `--db` and the config file.
    #[arg(long, global = true, env = "HOLDFAST_DATABASE_URL", value_name = "URL")]
    pub database_url: Option<String>,

    /// Freeze the clock at this RFC 3339 instant, or at a time relative to the
    /// system clock (`-2h`, `+30m`): deterministic runs and snapshots.
    #[arg(
        long,
        global = true,
        env = "HOLDFAST_NOW",
        value_name = "TIME",
        value_parser = parse_now,
        allow_hyphen_values = true
    )]
    pub now: Option<DateTime<Utc>>,

    /// Act as this identity (default: the config file's `identity`, else the OS
    /// user). On PostgreSQL the database login acts, and naming anyone else needs
    /// the login to hold the `delegate` role.
    #[arg(long = "as", global = true, env = "HOLDFAST_AS", value_name = "NAME")]
    pub as_identity: Option<String>,

    #[command(subcommand)]
    pub command: Option<Command>,
}

/// `--now`: an instant, or a time relative to the system clock (`-2h`).
fn parse_now(text: &str) -> Result<DateTime<Utc>, String> {
    let now = TimeSpec::parse(text)?.resolve(Utc::now())?;
    crate::core::clock::check_now(now)
        .map_err(|e| format!("{} {e}", crate::core::clock::human_instant(now)))
}

/// The formats `holdfast ingest` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum InputFormat {
    /// Wire-format v1 records (JSON Lines).
    Wire,
    /// OpenTelemetry traces as OTLP/JSON.
    Otlp,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
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
        /// What the input is: wire-format v1 records, or OpenTelemetry traces
        /// (OTLP/JSON: one ExportTraceServiceRequest, or JSON Lines of them;
        /// gzip accepted).
        #[arg(long, value_enum, default_value_t = InputFormat::Wire)]
        format: InputFormat,
        /// Leave judging the metrics' facts of what is written to the first
        /// `report` or metrics tab: the ingest ends sooner, its first reader
        /// waits for the judging instead.
        #[arg(long)]
        defer_judging: bool,
    },
    /// Receive OpenTelemetry traces over OTLP/HTTP (POST /v1/traces) into the store.
    Serve {
        /// The address to listen on (default: the config's `otlp.listen`, else 127.0.0.1:4318).
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
    },
    /// Put an MCP server behind holdfast: speak MCP on stdio to the agent, start
    /// the server with COMMAND, record every tool call before it is forwarded,
    /// and refuse a call identical to a held one.
    Gateway {
        /// The server's name in the operations' tools (`NAME/TOOL`); default: the
        /// command's file name.
        #[arg(long, value_name = "SERVER")]
        name: Option<String>,
        /// The command that starts the server, and its arguments.
        #[arg(required = true, last = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// List operations (default: the held ones), most urgent first.
    List(ListArgs),
    /// Show the evidence bundle of one operation.
    Show {
        id: String,
        /// Print JSON instead of text, for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Show the attempts and status queries of one operation in order.
    Timeline {
        id: String,
        /// Print JSON instead of text, for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Take a reviewer action on one operation (`review ID ACTION`), or on every
    /// held operation matching a filter (`review --filter TEXT ACTION`).
    Review(Box<review::ReviewArgs>),
    /// Run every due status lookup once (`--watch`: keep running them as they
    /// come due), as the observer's own identity; one line per hold.
    Observe(commands::observe::ObserveArgs),
    /// Give an identity a role on a tenant (audited).
    Grant(review::GrantArgs),
    /// Take a role on a tenant away from an identity (audited).
    Revoke(review::GrantArgs),
    /// List the grants (none: single-user mode).
    Grants {
        /// Print JSON instead of text, for scripts.
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
        /// Print JSON instead of text, for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Run the seed's fault-injection program (sixteen cases, two per failure
    /// mode) against a simulated provider, into a store; exit 0 only if all pass.
    Drill(commands::drill::DrillArgs),
    /// Each tool's autonomy level: list them, or (owner) set one, audited.
    Autonomy {
        #[command(subcommand)]
        command: commands::autonomy::AutonomyCommand,
    },
    /// Every tool the store knows, one row each (contract version, autonomy,
    /// lookup, newest drill, missing inventory fields); `tools show TOOL` for one
    /// tool's whole inventory and what each missing field limits.
    Tools(commands::tools::ToolsArgs),
    /// Circuits per tool: list the open ones, show one, or (owner) close one
    /// by hand, audited.
    Circuits(commands::tools_circuit::CircuitArgs),
    /// Status lookups: prove a tool's lookup finds a record known to exist.
    Lookup {
        #[command(subcommand)]
        command: commands::lookup::LookupCommand,
    },
    /// Approved work for workers (DESIGN §9.2): claim it under a lease, keep the
    /// lease alive, complete it with the records of what was done, or release it.
    Work {
        #[command(subcommand)]
        command: commands::work::WorkCommand,
    },
    /// Run the drill's simulated provider alone, on a loopback address.
    SimProvider(commands::drill::SimProviderArgs),
    /// Print shell completions.
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Debug, Args)]
pub(crate) struct ListArgs {
    /// `held` (default), `all`, or a state; repeatable.
    #[arg(long, value_name = "STATE")]
    pub state: Vec<String>,
    /// A tenant; repeatable.
    #[arg(long)]
    pub tenant: Vec<String>,
    /// An owner; repeatable.
    #[arg(long)]
    pub owner: Vec<String>,
    /// A tool, as its contract names it (`T03`); repeatable.
    #[arg(long)]
    pub tool: Vec<String>,
    /// A failure mode (`timeout_unknown`, …); repeatable.
    #[arg(long)]
    pub mode: Vec<String>,
    /// A risk tier (`low` … `critical`); repeatable.
    #[arg(long)]
    pub risk: Vec<String>,
    /// The start of a word of an id, target, key or provider request id, or text in the state, tenant, tool, owner or failure mode (case-insensitive).
    #[arg(long)]
    pub search: Option<String>,
    /// The order of the rows.
    #[arg(long, value_enum, default_value_t = SortArg::Urgency)]
    pub sort: SortArg,
    /// At most this many rows (0: none, only the count).
    #[arg(long, default_value_t = 50)]
    pub limit: u64,
    /// Start after this operation in the listing's order (the last id of the
    /// page before): pages are read by keyset, never by skipping rows.
    #[arg(long, value_name = "ID")]
    pub after: Option<String>,
    /// Print JSON instead of text, for scripts.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub(crate) enum SortArg {
    Urgency,
    Age,
    Id,
    Deadline,
}

#[derive(Debug, Subcommand)]
pub(crate) enum AuditCommand {
    /// Walk the whole chain; exit 4 naming the first broken seq.
    Verify {
        /// Also check the chain still contains a head printed earlier by `audit digest`
        /// (the file holds `SEQ HASH`).
        #[arg(long, value_name = "FILE")]
        digest: Option<PathBuf>,
        /// Check only what came after the saved digest, whose seq this is: its row
        /// must still have its hash, then the rows after it are walked (the rows
        /// before it and the store comparison are left out).
        #[arg(long, value_name = "SEQ", requires = "digest")]
        from: Option<i64>,
        /// Print JSON instead of text, for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Acknowledge the recorded break at SEQ (owner; audited, with a reason):
    /// writes go on while the chain stays broken there, and `audit verify` keeps
    /// naming the break.
    Acknowledge {
        /// The seq of the break, as `audit verify` or a refused write named it.
        seq: i64,
        /// Why writing may go on (at least 10 characters); recorded on the audit row.
        #[arg(long, value_name = "TEXT")]
        reason: String,
        /// Print JSON instead of text, for scripts.
        #[arg(long)]
        json: bool,
    },
    /// Print the chain head (`SEQ HASH`) to keep outside the database.
    Digest {
        /// Print JSON instead of text, for scripts.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub(crate) enum DbCommand {
    /// Create the store if needed and apply pending migrations.
    Migrate,
    /// Copy everything, audit chain included, from one store into a new one.
    Copy(copy::CopyArgs),
}

/// Everything a command needs besides its own arguments.
pub(crate) struct Context {
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
    /// What the command does to the audit chain: how a broken one stops it.
    pub door: Door,
    /// Whether the read warning about a broken chain was printed (once a run).
    pub warned: std::sync::atomic::AtomicBool,
}

/// How a command meets a broken audit chain (docs/security.md): a write door
/// refuses (exit 4) while a break is not acknowledged, a read prints one warning
/// line on stderr, and the rest (`audit`, `db`, the console, which shows the
/// break itself) check it their own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Door {
    Write,
    Read,
    Own,
}

impl Door {
    fn of(command: Option<&Command>) -> Door {
        use commands::autonomy::AutonomyCommand;
        use commands::tools::{ToolsArgs, ToolsCommand};
        match command {
            None
            | Some(
                Command::Demo { .. }
                | Command::Audit { .. }
                | Command::Db { .. }
                | Command::SimProvider(_)
                | Command::Completions { .. },
            ) => Door::Own,
            Some(
                Command::List(_)
                | Command::Show { .. }
                | Command::Timeline { .. }
                | Command::Grants { .. }
                | Command::Export(_)
                | Command::Report { .. }
                | Command::Tools(ToolsArgs {
                    command: None | Some(ToolsCommand::Show { .. }),
                    ..
                })
                | Command::Autonomy {
                    command: AutonomyCommand::List { .. },
                },
            ) => Door::Read,
            Some(Command::Drill(args)) if args.command.is_some() => Door::Read,
            Some(Command::Review(args)) if args.dry_run => Door::Read,
            Some(Command::Circuits(args)) if !args.close => Door::Read,
            Some(
                Command::Ingest { .. }
                | Command::Review(_)
                | Command::Observe(_)
                | Command::Grant(_)
                | Command::Revoke(_)
                | Command::Drill(_)
                | Command::Work { .. }
                | Command::Autonomy { .. }
                | Command::Tools(_)
                | Command::Circuits(_)
                | Command::Lookup { .. }
                | Command::Serve { .. }
                | Command::Gateway { .. },
            ) => Door::Write,
        }
    }
}

impl Context {
    pub(crate) fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    /// The store this invocation works on: `--database-url`, else `--db`, else the
    /// config file's `database_url`, else its `store`, else the default file.
    pub(crate) fn store_location(&self) -> Result<Location, StoreError> {
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

    /// Opens the store, which must exist: a mistyped `--db` is refused (exit 1)
    /// rather than answered from a new empty store.
    pub(crate) async fn open_store(&self) -> anyhow::Result<Arc<dyn Store>> {
        let store = open_existing(&self.store_location()?).await?;
        self.check_chain(store.as_ref()).await?;
        Ok(store)
    }

    /// The chain check of this command's door ([`Door`]): refuses a write on a
    /// break no owner acknowledged, warns a read once.
    pub(crate) async fn check_chain(&self, store: &dyn Store) -> anyhow::Result<()> {
        if self.door == Door::Own {
            return Ok(());
        }
        let Some(broken) = crate::store::chain::check(store, self.now()).await? else {
            return Ok(());
        };
        if self.door == Door::Write && broken.acknowledged_seq.is_none() {
            return Err(Failure::new(exit::INTEGRITY, render::clean(&broken.refusal())).into());
        }
        if !self.warned.swap(true, std::sync::atomic::Ordering::Relaxed) {
            eprintln!("{}", render::clean(&broken.warning()));
        }
        Ok(())
    }

    /// Opens the store, creating it when it is not there: only for the commands
    /// that fill or prepare one (`ingest`, `db migrate`, `demo`).
    pub(crate) async fn create_store(&self) -> anyhow::Result<Arc<dyn Store>> {
        let store = self.store_location()?.open().await?;
        self.check_chain(store.as_ref()).await?;
        Ok(store)
    }

    /// The store as the acting identity sees it: every read and write of a
    /// command that works on existing data goes through this session (G7).
    pub(crate) async fn session(&self) -> anyhow::Result<Session> {
        let store = self.open_store().await?;
        let actor = self.actor(store.as_ref()).await?;
        Ok(Session::new(store, actor))
    }

    /// The acting identity with what the store's grants allow it: on PostgreSQL
    /// the database login (acting for the identity asked for only with the
    /// `delegate` role; refused otherwise, exit 3), on SQLite the identity asked
    /// for or the OS user. With no grants at all the store is in single-user mode
    /// and that user may do everything.
    pub(crate) async fn actor(&self, store: &dyn Store) -> anyhow::Result<Actor> {
        crate::review::identify(
            store,
            self.asked.as_deref(),
            &self.local_user,
            self.config.policy.clone(),
        )
        .await
        .map_err(review::failure)
    }

    /// The acting identity of a service command (`observe`, `drill --work`):
    /// the identity asked for, else `service` on a store without logins; on
    /// PostgreSQL the database login acts unless another is asked for.
    pub(crate) async fn service_actor(
        &self,
        store: &dyn Store,
        service: &str,
    ) -> anyhow::Result<Actor> {
        let asked = match (&self.asked, store.login().await?) {
            (Some(asked), _) => Some(asked.clone()),
            (None, None) => Some(service.to_owned()),
            (None, Some(_)) => None,
        };
        crate::review::identify(
            store,
            asked.as_deref(),
            &self.local_user,
            self.config.policy.clone(),
        )
        .await
        .map_err(review::failure)
    }

    /// The store as a service command's identity sees it ([`Self::service_actor`]).
    pub(crate) async fn service_session(&self, service: &str) -> anyhow::Result<Session> {
        let store = self.open_store().await?;
        let actor = self.service_actor(store.as_ref(), service).await?;
        Ok(Session::new(store, actor))
    }

    /// Whether the acting identity is only claimed: named by `--as`,
    /// `HOLDFAST_AS` or the config file on a store without logins (SQLite), where
    /// nothing checks it. On PostgreSQL the database login acts, so it is not.
    pub(crate) async fn claimed(&self, session: &Session) -> anyhow::Result<bool> {
        Ok(self.asked.is_some() && session.login().await?.is_none())
    }

    pub(crate) fn no_color(&self) -> bool {
        std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
            || self.config.theme == Some(Theme::Mono)
    }
}

/// `actor`'s own identity for `what`, which is done only in one's own name:
/// refused (exit 3) when the actor would act for someone else.
pub(crate) fn own_name(actor: &Actor, what: &str) -> anyhow::Result<String> {
    crate::core::rules::actor::own_name(actor, what)
        .map(str::to_owned)
        .map_err(|r| review::failure(crate::review::ReviewError::Refused(r)))
}

/// Opens a store that must exist; a missing one is an error (exit 1) that says
/// how to create one.
pub(crate) async fn open_existing(location: &Location) -> anyhow::Result<Arc<dyn Store>> {
    match location.open_existing().await {
        Err(StoreError::Missing(place)) => Err(Failure::new(
            exit::ERROR,
            format!(
                "no store at {place}: check --db / HOLDFAST_DB for a typo; `holdfast db migrate` \
                 creates an empty store there, `holdfast ingest FILE` creates one and loads \
                 records, `holdfast demo` opens a demo store"
            ),
        )
        .into()),
        other => Ok(other?),
    }
}

/// Text for `--help` that names the files holdfast uses.
fn files_help(paths: &Paths) -> String {
    format!(
        "Files:\n  config file  {}\n  data dir     {}\n  log file     {}\n\nExit codes: 0 ok, 1 error, 2 bad input, 3 refused by a guard (G8: changed by someone else first), 4 audit chain broken, 5 report: release gate NOT_EVALUATED (nothing measured).",
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
    // The gateway answers one agent's calls one after another: on one thread
    // a call hands work between fewer threads (each hand-off a task switch).
    let mut builder = if matches!(cli.command, Some(Command::Gateway { .. })) {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut builder = tokio::runtime::Builder::new_multi_thread();
        builder.worker_threads(2);
        builder
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("holdfast: cannot start the runtime: {e}");
            return ExitCode::from(exit::ERROR);
        }
    };
    match runtime.block_on(run(cli, paths)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            // A write the store refused on a broken chain is exit 4 whichever door it came through.
            let broken = e.chain().any(|c| {
                matches!(
                    c.downcast_ref::<StoreError>(),
                    Some(StoreError::ChainBroken(_))
                )
            });
            let code = e
                .downcast_ref::<Failure>()
                .map_or(if broken { exit::INTEGRITY } else { exit::ERROR }, |f| {
                    f.code
                });
            let text = format!("{e:#}");
            tracing::error!(
                error = %crate::core::sanitize::sanitize(&text),
                "command failed"
            );
            // Errors can quote input (a path, a value): neutralized line by line.
            let text = crate::core::sanitize::sanitize_lines(&text).join("\n");
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
    let mut ctx = Context {
        paths,
        config,
        clock,
        asked,
        local_user: config::os_user(),
        db: cli.db.clone(),
        database_url: cli.database_url.clone(),
        door: Door::of(cli.command.as_ref()),
        warned: std::sync::atomic::AtomicBool::new(false),
    };
    // On the demo store every command reads the demo's frozen clock, as the
    // console there does, unless --now (or HOLDFAST_NOW) names another.
    if !ctx.clock.is_frozen()
        && !matches!(cli.command, Some(Command::Demo { .. }))
        && let Some(at) = commands::console::demo_clock(&ctx).await
    {
        eprintln!(
            "demo store: the clock is frozen at {}, the demo's own (--now to change it)",
            crate::core::clock::human_instant(at)
        );
        ctx.clock = Clock::Frozen(at);
    }
    // Only the command's name: its arguments hold free text (rationales,
    // references) that must never reach the log.
    tracing::info!(command = command_name(cli.command.as_ref()), "start");
    match cli.command {
        None => commands::console::console(&ctx, ctx.session().await?).await,
        Some(Command::Demo { print }) => commands::console::demo(ctx, print).await,
        Some(Command::Ingest {
            source,
            rejects,
            json,
            format: InputFormat::Wire,
            defer_judging,
        }) => commands::ingest::ingest(&ctx, &source, rejects, json, defer_judging).await,
        Some(Command::Ingest {
            source,
            rejects,
            json,
            format: InputFormat::Otlp,
            defer_judging,
        }) => commands::ingest::ingest_otlp(&ctx, &source, rejects, json, defer_judging).await,
        Some(Command::Serve { listen }) => commands::serve::serve(&ctx, listen).await,
        Some(Command::Gateway { name, command }) => {
            commands::gateway::gateway(&ctx, name, command).await
        }
        Some(Command::List(args)) => commands::list::list(&ctx, args).await,
        Some(Command::Show { id, json }) => commands::show::show(&ctx, &id, json).await,
        Some(Command::Timeline { id, json }) => commands::show::timeline(&ctx, &id, json).await,
        Some(Command::Review(args)) => review::review(&ctx, *args).await,
        Some(Command::Observe(args)) => commands::observe::observe(&ctx, args).await,
        Some(Command::Grant(args)) => {
            review::grant(&ctx, crate::core::access::GrantOp::Grant, args).await
        }
        Some(Command::Revoke(args)) => {
            review::grant(&ctx, crate::core::access::GrantOp::Revoke, args).await
        }
        Some(Command::Grants { json }) => review::grants(&ctx, json).await,
        Some(Command::Export(args)) => review::export(&ctx, args).await,
        Some(Command::Audit { command }) => commands::audit::audit(&ctx, command).await,
        Some(Command::Db {
            command: DbCommand::Migrate,
        }) => {
            let store = ctx.create_store().await?;
            println!("store {} is migrated and ready", store.location());
            Ok(exit::OK)
        }
        Some(Command::Db {
            command: DbCommand::Copy(args),
        }) => copy::run(args, ctx.now()).await,
        Some(Command::Report { json }) => report::run(&ctx, json).await,
        Some(Command::Drill(args)) => commands::drill::drill(&ctx, args).await,
        Some(Command::Work { command }) => commands::work::work(&ctx, command).await,
        Some(Command::SimProvider(args)) => commands::drill::sim_provider(args).await,
        Some(Command::Autonomy { command }) => commands::autonomy::autonomy(&ctx, command).await,
        Some(Command::Circuits(args)) => commands::tools_circuit::circuits(&ctx, args).await,
        Some(Command::Lookup { command }) => commands::lookup::lookup(&ctx, command).await,
        Some(Command::Tools(args)) => commands::tools::tools(&ctx, args).await,
        Some(Command::Completions { shell }) => {
            let mut command = Cli::command();
            clap_complete::generate(shell, &mut command, "holdfast", &mut std::io::stdout());
            Ok(exit::OK)
        }
    }
}

/// Parses an operation id typed on the command line.
pub(crate) fn parse_id(id: &str) -> anyhow::Result<OperationId> {
    OperationId::parse(id).map_err(|e| Failure::bad_input(format!("operation id {id:?} {e}")))
}
