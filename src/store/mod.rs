//! The operations store: one async trait, one implementation per backend. Every
//! write commits its audit row in the same transaction as the change it records.

pub mod chain;
pub mod engine;
pub mod ingest_sql;
pub mod judging;
pub mod metric_sql;
pub mod pages;
pub mod plan;
pub mod postgres;
pub mod session;
pub mod skipped;
pub mod sql;
pub mod sqlite;
pub mod work;

pub use engine::Create;
pub use judging::{Judging, Progress};
pub use plan::{copy, filter};
pub use session::Session;
pub use work::{Completion, WorkClaim, WorkStep};

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Serialize;
use tokio::sync::watch;

use crate::core::access::GrantChange;
use crate::core::audit::{AuditDraft, AuditRow, ChainStatus};
use crate::core::autonomy::{DrillResult, LevelChange, ToolLevel};
use crate::core::contract::Contract;
use crate::core::detail::Dataset;
use crate::core::detail::OperationDetail;
use crate::core::ids::{OperationId, Sha256};
use crate::core::ladder::Level;
pub use crate::core::model::Grant;
pub use crate::core::model::{ChildLink, OperationRow, Proposal};
use crate::core::model::{FailureMode, Risk, State};
pub use crate::core::rules::Commit;
use crate::core::work::Lease;
use crate::wire::{LineError, Numbered};
use copy::{Cell, CopyReport, Table};

/// What a store task handed to `tokio::spawn` answered: its own answer, its
/// panic carried on (never turned into an error a caller could ignore), or
/// its cancellation as an error.
pub fn joined<T>(
    task: Result<Result<T, StoreError>, tokio::task::JoinError>,
) -> Result<T, StoreError> {
    match task {
        Ok(answer) => answer,
        Err(join) if join.is_panic() => std::panic::resume_unwind(join.into_panic()),
        Err(join) => Err(StoreError::Other(format!(
            "a store task was cancelled: {join}"
        ))),
    }
}

/// What can go wrong in the store, in words a reviewer can act on. Driver errors
/// never reach the screen raw: they are mapped into these.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("operation {0} does not exist")]
    NotFound(OperationId),
    #[error(
        "operation {id} was changed by {by} at {at} (version {current}, you had {expected}); reload and decide again"
    )]
    Conflict {
        id: OperationId,
        expected: i64,
        current: i64,
        by: String,
        at: DateTime<Utc>,
    },
    #[error(
        "the store at {location} was written by a newer holdfast (schema {found}, this build knows up to {known}); upgrade holdfast"
    )]
    TooNew {
        location: String,
        found: i64,
        known: i64,
    },
    #[error("the grants changed while this change was decided; run it again")]
    GrantsChanged,
    /// A tool's autonomy level moved while a change of it was decided.
    #[error(
        "tool {tool}'s autonomy level changed to {now} while this change was decided; run it again"
    )]
    AutonomyChanged { tool: String, now: String },
    /// A tool's circuit moved while a change of it was decided.
    #[error("tool {tool}'s circuit moved to {now} while this change was decided; run it again")]
    CircuitChanged { tool: String, now: String },
    #[error("the store is busy (another process holds it); try again")]
    Busy,
    #[error("the database cannot be reached ({0}); check the connection and try again")]
    Unavailable(String),
    /// A store that must exist does not (a SQLite file not there).
    #[error("no store at {0}")]
    Missing(String),
    /// A database that can be reached but holds no holdfast schema, opened by a
    /// command that may not create a store.
    #[error("no holdfast store at {0} — run `holdfast db migrate` first")]
    NoSchema(String),
    #[error("cannot open the store at {location}: {reason}")]
    Open { location: String, reason: String },
    #[error("store error: {0}")]
    Other(String),
    /// A guard refused the change (a lease lost or held by another worker).
    #[error(transparent)]
    Refused(#[from] crate::core::refusal::Refusal),
    /// A recorded break of the audit chain that no owner acknowledged: nothing
    /// is appended to the chain (see [`crate::core::chain`]).
    #[error("{}", .0.refusal())]
    ChainBroken(Box<crate::core::chain::ChainBreak>),
}

/// An overdue hold ([`Store::overdue_holds`]), with the claim another observer
/// holds on its slot, if one does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overdue {
    pub id: OperationId,
    /// The observer holding the slot of its next observation, and until when.
    pub claim: Option<(String, DateTime<Utc>)>,
}

/// Where a store lives: a SQLite file or a PostgreSQL database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Sqlite(PathBuf),
    /// A `postgres://` or `postgresql://` URL.
    Postgres(String),
}

impl Location {
    /// `postgres://…` / `postgresql://…`, or `sqlite:PATH`.
    pub fn parse(text: &str) -> Result<Location, StoreError> {
        if text.starts_with("postgres://") || text.starts_with("postgresql://") {
            Ok(Location::Postgres(text.to_owned()))
        } else if let Some(path) = text.strip_prefix("sqlite:").filter(|p| !p.is_empty()) {
            Ok(Location::Sqlite(PathBuf::from(path)))
        } else {
            Err(StoreError::Open {
                location: text.to_owned(),
                reason: "a store is named sqlite:PATH or postgres://USER@HOST/DATABASE".into(),
            })
        }
    }

    /// Opens a store that already exists, migrating it as needed; nothing is
    /// created. A SQLite file that is not there is [`StoreError::Missing`]; a
    /// database (or file) without holdfast's schema is [`StoreError::NoSchema`],
    /// found before anything is written to it.
    pub async fn open_existing(&self) -> Result<Arc<dyn Store>, StoreError> {
        match self {
            Location::Sqlite(path) if !path.exists() => Err(StoreError::Missing(self.to_string())),
            _ => self.open_as(Create::No).await,
        }
    }

    /// Opens the store, creating and migrating it as needed: only for the
    /// commands that fill or prepare one.
    pub async fn open(&self) -> Result<Arc<dyn Store>, StoreError> {
        self.open_as(Create::Yes).await
    }

    async fn open_as(&self, create: Create) -> Result<Arc<dyn Store>, StoreError> {
        Ok(match self {
            Location::Sqlite(path) => Arc::new(sqlite::SqliteStore::open_as(path, create).await?),
            Location::Postgres(url) => Arc::new(postgres::PgStore::connect_as(url, create).await?),
        })
    }
}

impl fmt::Display for Location {
    /// The place in words; a URL is shown without its password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(path) => write!(f, "sqlite:{}", path.display()),
            Location::Postgres(url) => f.write_str(&postgres::without_password(url)),
        }
    }
}

/// Which operations a listing shows. Empty vectors mean "any".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperationFilter {
    /// Only the console's queue: held states and operations held by a dependency.
    pub queue: bool,
    pub states: Vec<State>,
    pub tenants: Vec<String>,
    pub owners: Vec<String>,
    /// The tools the operations call (the Tools tab's `Enter`, `tool:`): read
    /// through the index on the tool.
    pub tools: Vec<String>,
    pub modes: Vec<FailureMode>,
    pub risks: Vec<Risk>,
    /// Case-insensitive start of a word (after `:` `/` `-` `.` `@` `_` or a space)
    /// of the id, target, idempotency/business/correlation keys or a provider
    /// request id (one index range), or text anywhere in a column the console's
    /// queue shows: state, tenant, tool, owner, failure mode, or the start of a
    /// risk tier.
    pub search: Option<String>,
    /// The tenants the listing covers (G7). A [`Session`] puts its own scope
    /// here, whatever the filter said.
    pub scope: Scope,
    /// The instant the routed owner is judged at (a hold past its observation
    /// window goes to the incident owner): the reader's clock, so a frozen
    /// clock routes as it shows; `None` reads the system clock.
    pub now: Option<DateTime<Utc>>,
}

impl OperationFilter {
    /// [`Self::now`] in milliseconds, the system clock's when unset.
    pub fn now_ms(&self) -> i64 {
        self.now.unwrap_or_else(Utc::now).timestamp_millis()
    }
}

/// Which tenants a read covers (G7). A [`Session`] holds one, taken from its
/// actor's grants, and hands it to every read it makes; the store applies it
/// inside its queries. A filter built without one covers every tenant until a
/// session puts its own in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Scope {
    /// Every tenant, and rows that belong to none (single-user mode).
    #[default]
    Every,
    /// Only these tenants' operations and the rows that hang off them.
    Tenants(Vec<String>),
}

impl Scope {
    /// The tenants, or `None` for every tenant.
    pub fn tenants(&self) -> Option<&[String]> {
        match self {
            Scope::Every => None,
            Scope::Tenants(tenants) => Some(tenants),
        }
    }
}

impl From<Option<Vec<String>>> for Scope {
    fn from(tenants: Option<Vec<String>>) -> Self {
        tenants.map_or(Scope::Every, Scope::Tenants)
    }
}

/// Order of a listing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SortOrder {
    /// Risk (critical first), then overdue next observation, then oldest first.
    #[default]
    Urgency,
    /// Oldest first.
    Age,
    /// By id.
    Id,
    /// Soonest deadline first.
    Deadline,
}

/// One page of a listing, by keyset: where it starts in the listing's order
/// (an operation's place, never a count of rows to skip) and how many rows it
/// holds at most. Its rows always come in the listing's order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    pub start: Start,
    pub limit: u64,
}

impl Page {
    /// The first `limit` rows.
    pub fn first(limit: u64) -> Page {
        Page {
            start: Start::First,
            limit,
        }
    }
}

/// Where a [`Page`] starts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Start {
    /// At the top of the listing.
    #[default]
    First,
    /// The last rows of the listing.
    Last,
    /// At this operation's place: it (while it matches) and the rows after it.
    At(OperationId),
    /// Just after this operation's place.
    After(OperationId),
    /// The rows just before this operation's place (the page that ends there).
    Before(OperationId),
}

/// Counts for the queue header.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct QueueCounts {
    pub by_state: Vec<(State, u64)>,
    /// Held operations whose next observation time has passed.
    pub overdue: u64,
    /// Operations held only because something they depend on is held.
    pub held_by_dependency: u64,
    pub pending_proposals: u64,
}

/// How ingest treats bad lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IngestMode {
    /// Any bad line: report all, commit nothing.
    Strict,
    /// Commit the good lines; the bad ones are returned for the rejects file.
    Quarantine,
    /// Judge every line and report, commit nothing (the input had unparseable
    /// lines already, so a strict ingest cannot commit).
    DryRun,
}

/// Who ingests, and into which tenants: ingest is a door like any other, so once
/// a store has grants it takes the `ingest` role on every tenant a file touches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ingester {
    /// The author of the audit rows the ingest writes.
    pub by: String,
    /// The tenants its records may belong to, sorted; `None` for any (single-user
    /// mode).
    pub tenants: Option<Vec<String>>,
    /// The identity whose decisions a reported decision is judged as (a move out
    /// of a held state, an authorized retry): the ingesting identity with its own
    /// grants, never the line's `by`. `None` for a door that imports no decision
    /// (a worker's completion).
    pub decider: Option<crate::core::rules::Actor>,
    /// Whether an operation may name a tool with no contract (the OpenTelemetry
    /// door: a tool call is recorded whatever its tool, and its evidence says
    /// the contract is missing).
    pub contracts_optional: bool,
}

impl Ingester {
    /// `by` ingesting into any tenant, as in single-user mode.
    pub fn anyone(by: &str) -> Ingester {
        Ingester {
            by: by.to_owned(),
            tenants: None,
            decider: Some(crate::core::rules::Actor::local(by, None)),
            contracts_optional: false,
        }
    }

    /// `actor` ingesting in its own name, into the tenants its grants allow.
    pub fn of(actor: &crate::core::rules::Actor) -> Ingester {
        Ingester {
            by: actor.identity.clone(),
            tenants: actor.ingest_tenants(),
            decider: Some(actor.clone()),
            contracts_optional: false,
        }
    }
}

/// What an ingest did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IngestReport {
    /// Per record type: (type, new records committed).
    pub committed: Vec<(String, u64)>,
    /// Records already stored with the same content.
    pub unchanged: u64,
    /// Lines refused, every reason for each.
    pub rejected: Vec<LineError>,
}

/// Whether the store can be reached right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Link {
    Connected,
    /// The connection was lost; `attempt` counts the reconnects tried so far.
    Reconnecting {
        attempt: u32,
    },
}

/// What a console hears about a store while it is open: the newest committed
/// audit `seq` (changes by anyone move it) and whether the store is reachable.
/// A console re-reads what it shows whenever `head` moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Live {
    pub head: i64,
    pub link: Link,
}

/// Every call of the store, written once: its doc, how a [`Session`] offers
/// it, its signature and the engine's method that answers it. The list is
/// handed to the macro named by the caller, which makes one thing of it: the
/// [`Store`] trait here, its implementation in [`engine`] (each call answered
/// by the named method of `SqlStore`, which holds the SQL), and the
/// session's forwarders in [`session`].
///
/// How a session offers a call, by the word before `fn`:
/// - `scoped`: the first parameter is a [`Scope`], and the session passes its
///   own; its method takes the rest.
/// - `filtered`: the first parameter is an [`OperationFilter`], and the
///   session puts its own scope in it, whatever the filter said.
/// - `whole`: the session passes the call on as it is. Such a call reads or
///   writes no tenant's rows beyond what its doc says (the chain's status, a
///   tool's autonomy, contracts, which belong to no tenant) or writes a change
///   a service decided for the session's actor.
/// - `store`: no session method: a writer acting as the system (ingest, the
///   OpenTelemetry and gateway doors, a copy) or a call a session wraps by
///   hand (grants, audit pages, claims and work steps), named in
///   `session.rs`.
macro_rules! store_calls {
    ($then:ident) => {
        $then! {
            /// Validates and commits wire records in one transaction, for
            /// `ingester`: a record outside its tenants is refused like any other
            /// bad line.
            store fn ingest_as(
                records: Vec<Numbered>,
                mode: IngestMode,
                ingester: &Ingester,
                now: DateTime<Utc>
            ) -> IngestReport = ingest_records;

            /// [`Store::ingest_as`] of records already redacted
            /// ([`plan::redaction::redact`]): a streamed ingest redacts the next
            /// batch on its reading thread while the store plans and writes this
            /// one.
            store fn ingest_redacted(
                batch: plan::redaction::Redacted,
                mode: IngestMode,
                ingester: &Ingester,
                now: DateTime<Utc>
            ) -> IngestReport = ingest_batch;

            /// One page of operations matching `filter`, plus the total that match.
            filtered fn list(
                filter: &OperationFilter,
                sort: SortOrder,
                page: Page
            ) -> (Vec<OperationRow>, u64) = read_list;

            /// Queue counts of the operations matching `filter`.
            filtered fn counts(filter: &OperationFilter, now: DateTime<Utc>) -> QueueCounts
                = read_counts;

            /// The ids of every operation matching `filter`, in `sort` order, read
            /// in one statement over the operations table alone (mark-all).
            filtered fn matching_ids(filter: &OperationFilter, sort: SortOrder)
                -> Vec<OperationId> = read_matching_ids;

            /// The keys of up to `limit` operations matching `filter` in urgency
            /// order after `after`: one keyset page ([`sql::keyset_page`]).
            filtered fn urgency_page(
                filter: &OperationFilter,
                after: Option<&sql::SortKey>,
                limit: u64
            ) -> Vec<sql::SortKey> = read_urgency_page;

            /// How many operations match `filter`: from the counts the triggers
            /// keep when the filter narrows by the tenant scope and the queue
            /// alone, else one `count(*)`.
            filtered fn count(filter: &OperationFilter) -> u64 = read_count;

            /// One operation, [`StoreError::NotFound`] unless it is in `scope`
            /// (the same as for one that does not exist); what it depends on and
            /// its children are read within `scope` too.
            scoped fn detail(scope: &Scope, id: &OperationId) -> OperationDetail = read_detail;

            /// Commits one allowed action (decided by [`crate::review`] for the
            /// session's actor on an operation in its scope); refuses with
            /// [`StoreError::Conflict`] when the operation's version moved.
            whole fn commit(commit: Commit) -> AuditRow = write_commit;

            /// Audit rows with `seq` in `from..`, at most `limit`, of every tenant.
            store fn audit(from: i64, limit: u64) -> Vec<AuditRow> = read_audit;

            /// The newest `limit` audit rows in `scope` with `seq` below `before`
            /// (any `seq` for `None`), newest first: one page of the log, by
            /// keyset on `seq` with the scope applied in the query.
            store fn audit_latest(scope: &Scope, before: Option<i64>, limit: u64)
                -> Vec<AuditRow> = read_audit_latest;

            /// The newest audit `seq` of the whole store (0 for an empty log): a
            /// cheap change marker, no row.
            whole fn head_seq() -> i64 = read_head_seq;

            /// Walks the whole chain; only its status comes back.
            whole fn verify() -> ChainStatus = walk_chain;

            /// Walks the chain after a saved digest, row `seq` with `hash`: that
            /// row must still hash to it, then the rows after it are walked.
            /// Neither the rows before it nor the stored values are compared;
            /// only the status comes back.
            whole fn verify_from(seq: i64, hash: &Sha256) -> ChainStatus = walk_chain_from;

            /// Everything in `scope`, for metrics and export: its operations and
            /// what hangs off them (attempts, items, observations, audit rows,
            /// expectations, proposals), and every contract (contracts belong to
            /// no tenant).
            scoped fn dataset(scope: &Scope) -> Dataset = read_dataset;

            /// Every contract, in tool order (contracts belong to no tenant).
            whole fn contracts() -> Vec<Contract> = read_contracts;

            /// One keyset page of the operations in `scope`: the next `limit` ids
            /// after `after` in id order, and a dataset holding their records and
            /// those of their relatives in `scope` (parent, children,
            /// dependencies, dependents, operations sharing their idempotency
            /// key), with `contracts`. The rules over one operation read nothing
            /// else, so a report can judge a store page by page in bounded memory.
            scoped fn dataset_page(
                scope: &Scope,
                after: Option<&OperationId>,
                limit: u64,
                contracts: Vec<Contract>
            ) -> (Vec<OperationId>, Dataset) = read_dataset_page;

            /// The report over `scope` at `now` from the facts kept per
            /// operation, after judging the operations written since they were
            /// kept (and those with a time in their records between `now` and the
            /// instant they were judged at), telling `progress` how far the
            /// judging has got; `None` when the scope leaves out a relative of an
            /// operation in it, and the report is judged page by page.
            scoped fn kept_report(scope: &Scope, now: DateTime<Utc>, progress: &Progress)
                -> Option<crate::core::metrics::Report> = read_metric_report;

            /// Judges every operation whose kept facts are stale at `now` (written
            /// since they were judged, or never judged), with its relatives,
            /// telling `progress` how far it has got; returns how many operations
            /// were judged. The facts are a cache of the records, kept for every
            /// tenant alike; a report does it first, and after a large ingest the
            /// first one judges the whole store.
            whole fn refresh_facts(now: DateTime<Utc>, progress: &Progress) -> u64
                = refresh_metric_facts;

            /// Whether this login may write the kept facts: every SQLite store;
            /// on PostgreSQL the owner, not the application group, whose reports
            /// judge what is stale without writing it. An ingest by one that may
            /// judges what it wrote before it ends
            /// ([`crate::store::judging::keep_current`]).
            whole fn keeps_facts() -> bool = may_keep_facts;

            /// The database login this store is connected as (PostgreSQL's
            /// `session_user`), which is the acting identity there; `None` for a
            /// store without logins (SQLite), where the identity is whatever the
            /// command says. A login names no tenant's rows.
            whole fn login() -> Option<String> = read_login;

            /// Every grant, ordered by tenant, identity and role. None at all
            /// means the store is in single-user mode.
            store fn grants() -> Vec<Grant> = read_grants;

            /// Inserts or deletes one grant (a change
            /// [`crate::review::change_grant`] decided over the whole table) with
            /// its audit row, in one transaction; refuses with
            /// [`StoreError::GrantsChanged`] when the grants no longer match the
            /// change's `basis` ([`crate::core::access::basis`]).
            whole fn change_grant(change: GrantChange) -> AuditRow = write_grant;

            /// Live updates of the whole store: a receiver whose value (a `seq`
            /// and the link, no rows) moves whenever anyone commits a change (and
            /// whenever the connection is lost or back). Every call shares one
            /// watcher per store handle.
            whole fn watch() -> watch::Receiver<Live> = read_live;

            /// Ids of held operations in `scope` whose status lookup holdfast
            /// makes itself and whose next observation is due at `now`, soonest
            /// first, at most `limit`; a slot that a live claim holds is left
            /// out. With `at_least`, only operations of tools at that autonomy
            /// level or above (DESIGN §9.4).
            scoped fn due_lookups(
                scope: &Scope,
                now: DateTime<Utc>,
                at_least: Option<Level>,
                limit: u64
            ) -> Vec<OperationId> = read_due_lookups;

            /// Held operations in `scope` whose next observation has come at
            /// `now` (the header's overdue ones), soonest first, at most `limit`,
            /// whatever their lookup: `observe` says why each it does not look up
            /// is left.
            scoped fn overdue_holds(scope: &Scope, now: DateTime<Utc>, limit: u64)
                -> Vec<Overdue> = read_overdue_holds;

            /// Every tool's stored autonomy level; a tool not listed is at
            /// `manual`. A tool's level holds in every tenant.
            whole fn autonomy_levels() -> Vec<ToolLevel> = read_levels;

            /// The tenants of `tool`'s operations, sorted, each once, in every
            /// tenant: who owns a tool's autonomy (G6) is decided over all of
            /// them.
            whole fn tool_tenants(tool: &str) -> Vec<String> = read_tool_tenants;

            /// The tenants that hold an operation, sorted, each once: from the
            /// counts the triggers keep (`operation_counts`), a read of a few
            /// dozen rows.
            store fn tenants() -> Vec<String> = read_tenants;

            /// The vetoes of the release gate on `tool`'s operations still open
            /// at `now` (the operation is not terminal) in every tenant, as the
            /// gates of a raise read them (DESIGN §9.4), from the facts kept per
            /// operation once those written since are judged: how many, and the
            /// first `named` in operation order with their kinds. `None` for a
            /// login that may only read the kept facts: the caller judges the
            /// operations it sees itself.
            whole fn open_vetoes(tool: &str, now: DateTime<Utc>, named: u64)
                -> Option<crate::core::autonomy::OpenVetoes> = read_open_vetoes;

            /// Writes one level change (decided by [`crate::autonomy`]) with its
            /// audit row, in one transaction; refuses with
            /// [`StoreError::AutonomyChanged`] when the tool's level is no longer
            /// the change's `from`.
            whole fn set_autonomy(change: LevelChange) -> AuditRow = write_level;

            /// Recorded drill results (`holdfast drill --tool`), oldest first,
            /// each with the seq of the audit row that recorded it; only `tool`'s
            /// when named. A drill result belongs to its tool, in no tenant.
            whole fn drill_results(tool: Option<&str>) -> Vec<(i64, DrillResult)> = read_drills;

            /// Records one drill result (decided by [`crate::autonomy`]) with its
            /// audit row `draft`, in one transaction.
            whole fn record_drill(result: DrillResult, draft: AuditDraft) -> AuditRow = write_drill;

            /// Every lookup check (`holdfast lookup check`), oldest first, as the
            /// audit rows of the autonomy ledger record them. A check belongs to
            /// its tool, in no tenant.
            whole fn lookup_checks() -> Vec<crate::core::autonomy::LookupCheck>
                = read_lookup_checks;

            /// Appends the audit row of one lookup check (a `lookup-check` row of
            /// the autonomy ledger, decided by [`crate::autonomy`]; any other
            /// draft is refused).
            whole fn append_ledger_row(draft: AuditDraft) -> AuditRow = write_lookup_check;

            /// Every row of the drill ledger, oldest first: drills, new
            /// contract versions and recorded changes (DESIGN §9.4), what
            /// [`crate::core::rerun::last_drill`] reads.
            whole fn drill_ledger() -> Vec<AuditRow> = read_drill_ledger;

            /// Records a material change outside a tool's contract with its
            /// audit row and, in the same transaction, the system's drop of
            /// the tool's level when its drill went stale; the rows written,
            /// the change's first.
            whole fn record_tool_change(
                change: crate::core::rerun::RecordedChange,
                draft: AuditDraft
            ) -> Vec<AuditRow> = write_tool_change;
            /// Every stored circuit (DESIGN §9.5), by tool; a tool not listed
            /// is closed. A circuit belongs to its tool, in no tenant: what the
            /// Tools tab and `holdfast circuits` show.
            whole fn circuits() -> Vec<crate::core::circuit::Circuit> = read_circuits;

            /// `tool`'s stored circuit, if it has one: what a sender checks
            /// before it sends (one row by its key).
            whole fn circuit(tool: &str) -> Option<crate::core::circuit::Circuit> = read_circuit;

            /// Writes one circuit change (decided by `core::circuit`) with its
            /// audit row, in one transaction; refuses with
            /// [`StoreError::CircuitChanged`] when the circuit no longer stands
            /// at the change's `from`.
            whole fn move_circuit(change: crate::core::circuit::CircuitChange) -> AuditRow
                = write_circuit;

            /// Notes a failed attempt of `tool` (a sender's, after it sent),
            /// forgets the failures before `since`, and counts those since by
            /// kind, this one included.
            store fn note_circuit_failure(
                tool: &str,
                attempt: &str,
                kind: crate::core::circuit::Failure,
                at: DateTime<Utc>,
                since: DateTime<Utc>
            ) -> crate::core::circuit::Failures = write_circuit_failure;

            /// Claims the lookup of `id` for the slot `slot` (its scheduled
            /// instant) for `by` until `until`: `true` when this call holds it
            /// now, `false` when a live claim of another holds it. A claim past
            /// its `until` may be taken over.
            store fn claim_lookup(
                id: &OperationId,
                slot: DateTime<Utc>,
                by: &str,
                now: DateTime<Utc>,
                until: DateTime<Utc>
            ) -> bool = write_claim_lookup;

            /// Claims up to `claim.limit` pieces of work (operations in `APPROVED`
            /// in the claim's tenants, not under a live lease), oldest first, each
            /// with its audit row, in one transaction: a piece is handed to one
            /// claimer only.
            store fn claim_work(claim: &WorkClaim) -> Vec<Lease> = write_claim_work;

            /// The lease on `id`, if it is in `scope` and was ever claimed.
            scoped fn lease(scope: &Scope, id: &OperationId) -> Option<Lease> = read_lease_in;

            /// Extends the holder's live lease to `length` from now (by default
            /// the length it was claimed or last renewed for), with its audit row;
            /// [`StoreError::Refused`] (G8) when the holder no longer holds it.
            store fn renew_work(step: &WorkStep, length: Option<chrono::Duration>) -> Lease
                = write_renew_work;

            /// Takes the holder's records for its operation through the ingest
            /// path (every line for that operation, strict), completes the lease
            /// and appends its audit row, all in one transaction;
            /// [`StoreError::Refused`] (G8) when the holder no longer holds the
            /// lease.
            store fn complete_work(step: &WorkStep, records: Vec<Numbered>) -> Completion
                = write_complete_work;

            /// Gives the holder's live lease back, with its audit row.
            store fn release_work(step: &WorkStep) -> Lease = write_release_work;

            /// One page of a table's rows, every value as stored, for
            /// [`Store::load_from`]: the first `limit` rows in the table's order
            /// after the row whose key cells are `after` (keyset paging: each page
            /// is an index range, however deep).
            store fn table_rows(table: &'static Table, after: Option<&[Cell]>, limit: u64)
                -> Vec<Vec<Cell>> = read_table_rows;

            /// Fills this store, which must be empty, with everything `source`
            /// holds, in one transaction: the audit chain and its hashes stay as
            /// they are. `source` should not change while it is copied.
            store fn load_from(source: &dyn Store) -> CopyReport = copy_from;

            /// What the checks of the audit chain recorded: the checkpoint and the
            /// breaks not cleared. The chain's status is the whole store's and
            /// names no tenant's rows.
            whole fn chain_marks() -> crate::core::chain::ChainMarks = read_chain_marks;

            /// Whether this login reads every row of the audit chain (on
            /// PostgreSQL, a login bound by row-level security does not): only
            /// then can it walk it.
            whole fn walks_chain() -> bool = read_walks_chain;

            /// Walks the chain from the row `from` (it must still have its hash;
            /// the genesis for `None`) to the head: the links and each row's hash
            /// only, whose status alone comes back.
            whole fn link_check(from: Option<&(i64, Sha256)>) -> ChainStatus = read_link_check;

            /// Records what a check of the chain found. `Intact` moves the
            /// checkpoint forward to its head (and, for a full `audit verify` —
            /// `found_by` is [`crate::core::chain::BY_VERIFY`] — clears every
            /// recorded break); `Broken` records the break (the same break found
            /// again keeps its acknowledgement).
            whole fn record_chain(status: &ChainStatus, found_by: &str, now: DateTime<Utc>) -> ()
                = write_chain_outcome;

            /// Appends the owner's acknowledgement of the recorded break at `seq`
            /// (the one write a broken chain allows) and moves the checkpoint to
            /// it, so that a write door's walk starts after the break it accepts.
            whole fn acknowledge_break(seq: i64, draft: AuditDraft) -> AuditRow
                = write_acknowledgement;

            /// [`Store::ingest_redacted`] for the OpenTelemetry door: the batch,
            /// and what the door keeps between requests (`keeping`: spans that
            /// wait for their tool span, the ones that joined, search terms), in
            /// one transaction. Nothing of either is committed without the other.
            store fn otlp_ingest(
                batch: plan::redaction::Redacted,
                mode: IngestMode,
                ingester: &Ingester,
                now: DateTime<Utc>,
                keeping: &OtlpKeeping
            ) -> IngestReport = write_otlp_ingest;

            /// The waiting spans of these traces, and every span that has waited
            /// since `since_before` or longer.
            store fn otlp_waiting(traces: &[String], since_before: DateTime<Utc>)
                -> Vec<WaitingRow> = read_waiting;

            /// How many spans wait for their tool span.
            store fn otlp_waiting_count() -> u64 = count_waiting;

            /// Which of `ids` are stored operations (with their attempts' ids),
            /// and the UNKNOWN operations with one of `payloads` (payload hashes)
            /// that a new call may repeat.
            store fn otlp_calls(ids: &[String], payloads: &[String]) -> OtlpCalls = read_calls;

            /// The SENT operations whose correlation id starts with
            /// `correlation_prefix`: id, correlation id, creation instant.
            store fn sent_calls(correlation_prefix: &str)
                -> Vec<(OperationId, String, DateTime<Utc>)> = read_sent_calls;

            /// The operations of `tool` that a call repeats: the same payload
            /// hash, or the same business key when it has one; newest first.
            store fn same_calls(
                tool: &str,
                payload_hash: &Sha256,
                business_key: Option<&str>
            ) -> Vec<SameCall> = read_same_calls;
        }
    };
}
pub(crate) use store_calls;

/// Declares [`Store`] from [`store_calls`].
macro_rules! declare_store {
    ($($(#[$doc:meta])* $how:ident fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty = $by:ident;)*) => {
        /// The operations store. A surface reads it through a [`Session`], which
        /// passes the acting identity's tenant scope to every read; a call that
        /// reads in a scope takes it as its first parameter, so no read here is
        /// unscoped without saying [`Scope::Every`].
        #[async_trait]
        pub trait Store: Send + Sync {
            /// Human-readable location (path or URL without password).
            fn location(&self) -> String;

            /// The rows reads skipped since the last call because they could not
            /// be decoded, each as `TABLE KEY: reason`; a command prints them as
            /// warnings.
            fn take_skipped(&self) -> Vec<String>;

            /// [`Store::ingest_as`] by `by` into any tenant, as in single-user mode.
            async fn ingest(
                &self,
                records: Vec<Numbered>,
                mode: IngestMode,
                by: &str,
                now: DateTime<Utc>,
            ) -> Result<IngestReport, StoreError> {
                self.ingest_as(records, mode, &Ingester::anyone(by), now)
                    .await
            }

            $(
                $(#[$doc])*
                async fn $name(&self, $($arg: $ty),*) -> Result<$ret, StoreError>;
            )*
        }
    };
}

store_calls!(declare_store);

/// An operation a call repeats, as [`Store::same_calls`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SameCall {
    pub id: OperationId,
    pub state: State,
    pub payload_hash: Sha256,
    pub created: DateTime<Utc>,
}

/// A span waiting for its tool span: its ids, since when, and the span as JSON
/// (redacted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitingRow {
    pub trace_id: String,
    pub span_id: String,
    pub since: DateTime<Utc>,
    pub span: String,
}

/// What the OpenTelemetry door keeps between requests, written with a batch
/// ([`Store::otlp_ingest`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OtlpKeeping {
    /// Spans that wait for their tool span, each kept once: a span already kept
    /// stays as it was.
    pub keep: Vec<WaitingRow>,
    /// Waiting spans that joined an operation, forgotten.
    pub release: Vec<(String, String)>,
    /// `(operation, value)`: each stored operation made findable by a value that
    /// is not one of its record's fields (a tool call's own id,
    /// `gen_ai.tool.call.id`), as its id, target and keys are. A term already
    /// there is kept; a term of an operation not stored is dropped.
    pub terms: Vec<(String, String)>,
}

impl OtlpKeeping {
    pub fn is_empty(&self) -> bool {
        self.keep.is_empty() && self.release.is_empty() && self.terms.is_empty()
    }
}

/// What [`Store::otlp_calls`] finds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OtlpCalls {
    /// Stored operations by id, with their attempts' ids.
    pub attempts: std::collections::HashMap<String, Vec<String>>,
    /// UNKNOWN operations: id, tool, payload hash, business key.
    pub unknown: Vec<(OperationId, String, Sha256, Option<String>)>,
}
