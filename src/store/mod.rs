//! The operations store: one async trait, one implementation per backend. Every
//! write commits its audit row in the same transaction as the change it records.

pub mod chain;
pub mod engine;
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
    pub modes: Vec<FailureMode>,
    pub risks: Vec<Risk>,
    /// Case-insensitive start of a word (after `:` `/` `-` `.` `@` `_` or a space)
    /// of the id, target, idempotency/business/correlation keys or a provider
    /// request id (one index range), or text anywhere in a column the console's
    /// queue shows: state, tenant, tool, owner, failure mode, or the start of a
    /// risk tier.
    pub search: Option<String>,
    /// Tenants the acting identity may see (G7); `None` means every tenant.
    pub visible_tenants: Option<Vec<String>>,
}

/// Which tenants a read covers (G7). A [`Session`] holds one, taken from its
/// actor's grants, and hands it to every read it makes; the store applies it
/// inside its queries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// Every tenant, and rows that belong to none (single-user mode).
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

/// The operations store.
#[async_trait]
pub trait Store: Send + Sync {
    /// Human-readable location (path or URL without password).
    fn location(&self) -> String;

    /// Validates and commits wire records in one transaction, for `ingester`:
    /// a record outside its tenants is refused like any other bad line.
    async fn ingest_as(
        &self,
        records: Vec<Numbered>,
        mode: IngestMode,
        ingester: &Ingester,
        now: DateTime<Utc>,
    ) -> Result<IngestReport, StoreError>;

    /// [`Store::ingest_as`] of records already redacted
    /// ([`plan::redaction::redact`]): a streamed ingest redacts the next batch on
    /// its reading thread while the store plans and writes this one.
    async fn ingest_redacted(
        &self,
        batch: plan::redaction::Redacted,
        mode: IngestMode,
        ingester: &Ingester,
        now: DateTime<Utc>,
    ) -> Result<IngestReport, StoreError>;

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

    /// One page of operations matching `filter`, plus the total that match.
    async fn list(
        &self,
        filter: &OperationFilter,
        sort: SortOrder,
        page: Page,
    ) -> Result<(Vec<OperationRow>, u64), StoreError>;

    async fn counts(
        &self,
        filter: &OperationFilter,
        now: DateTime<Utc>,
    ) -> Result<QueueCounts, StoreError>;

    /// The ids of every operation matching `filter`, in `sort` order, read in
    /// one statement over the operations table alone (mark-all).
    async fn matching_ids(
        &self,
        filter: &OperationFilter,
        sort: SortOrder,
    ) -> Result<Vec<OperationId>, StoreError>;

    /// The keys of up to `limit` operations matching `filter` in urgency
    /// order after `after`: one keyset page ([`sql::keyset_page`]).
    async fn urgency_page(
        &self,
        filter: &OperationFilter,
        after: Option<&sql::SortKey>,
        limit: u64,
    ) -> Result<Vec<sql::SortKey>, StoreError>;

    /// How many operations match `filter`: from the counts the triggers keep
    /// when the filter narrows by the tenant scope and the queue alone, else
    /// one `count(*)`.
    async fn count(&self, filter: &OperationFilter) -> Result<u64, StoreError>;

    /// One operation of any tenant.
    async fn detail(&self, id: &OperationId) -> Result<OperationDetail, StoreError> {
        self.detail_in(&Scope::Every, id).await
    }

    /// One operation, [`StoreError::NotFound`] unless it is in `scope`; what it
    /// depends on and its children are read within `scope` too.
    async fn detail_in(
        &self,
        scope: &Scope,
        id: &OperationId,
    ) -> Result<OperationDetail, StoreError>;

    /// Commits one allowed action; refuses with [`StoreError::Conflict`] when the
    /// operation's version moved.
    async fn commit(&self, commit: Commit) -> Result<AuditRow, StoreError>;

    /// Audit rows with `seq` in `from..`, at most `limit`.
    async fn audit(&self, from: i64, limit: u64) -> Result<Vec<AuditRow>, StoreError>;

    /// The newest `limit` audit rows in `scope` with `seq` below `before` (any
    /// `seq` for `None`), newest first: one page of the log, by keyset on `seq`
    /// with the scope applied in the query.
    async fn audit_latest(
        &self,
        scope: &Scope,
        before: Option<i64>,
        limit: u64,
    ) -> Result<Vec<AuditRow>, StoreError>;

    /// The newest audit `seq` (0 for an empty log): a cheap change marker.
    async fn head_seq(&self) -> Result<i64, StoreError>;

    /// Walks the whole chain.
    async fn verify(&self) -> Result<ChainStatus, StoreError>;

    /// Walks the chain after a saved digest, row `seq` with `hash`: that row
    /// must still hash to it, then the rows after it are walked. Neither the
    /// rows before it nor the stored values are compared.
    async fn verify_from(&self, seq: i64, hash: &Sha256) -> Result<ChainStatus, StoreError>;

    /// Everything, for metrics and export.
    async fn dataset(&self) -> Result<Dataset, StoreError> {
        self.dataset_in(&Scope::Every).await
    }

    /// Everything in `scope`: its operations and what hangs off them (attempts,
    /// items, observations, audit rows, expectations, proposals), and every
    /// contract (contracts belong to no tenant).
    async fn dataset_in(&self, scope: &Scope) -> Result<Dataset, StoreError>;

    /// Every contract, in tool order (contracts belong to no tenant).
    async fn contracts(&self) -> Result<Vec<Contract>, StoreError>;

    /// One keyset page of the operations in `scope`: the next `limit` ids after
    /// `after` in id order, and a dataset holding their records and those of
    /// their relatives in `scope` (parent, children, dependencies, dependents,
    /// operations sharing their idempotency key), with `contracts`. The rules
    /// over one operation read nothing else, so a report can judge a store page
    /// by page in bounded memory.
    async fn dataset_page(
        &self,
        scope: &Scope,
        after: Option<&OperationId>,
        limit: u64,
        contracts: Vec<Contract>,
    ) -> Result<(Vec<OperationId>, Dataset), StoreError>;

    /// The report over `scope` at `now` from the facts kept per operation,
    /// after judging the operations written since they were kept (and those
    /// with a time in their records between `now` and the instant they were
    /// judged at); `None` when the scope leaves out a relative of an operation
    /// in it, and the report is judged page by page.
    async fn kept_report(
        &self,
        scope: &Scope,
        now: DateTime<Utc>,
    ) -> Result<Option<crate::core::metrics::Report>, StoreError>;

    /// Judges every operation whose kept facts are stale at `now` (written
    /// since they were judged, or never judged), with its relatives; returns
    /// how many operations were judged.
    async fn refresh_facts(&self, now: DateTime<Utc>) -> Result<u64, StoreError>;

    /// The database login this store is connected as (PostgreSQL's
    /// `session_user`), which is the acting identity there; `None` for a store
    /// without logins (SQLite), where the identity is whatever the command says.
    async fn login(&self) -> Result<Option<String>, StoreError>;

    /// Every grant, ordered by tenant, identity and role. None at all means the
    /// store is in single-user mode.
    async fn grants(&self) -> Result<Vec<Grant>, StoreError>;

    /// Inserts or deletes one grant with its audit row, in one transaction;
    /// refuses with [`StoreError::GrantsChanged`] when the grants no longer match
    /// the change's `basis` ([`crate::core::access::basis`]).
    async fn change_grant(&self, change: GrantChange) -> Result<AuditRow, StoreError>;

    /// The rows reads skipped since the last call because they could not be
    /// decoded, each as `TABLE KEY: reason`; a command prints them as warnings.
    fn take_skipped(&self) -> Vec<String>;

    /// Live updates: a receiver whose value moves whenever anyone commits a change
    /// (and whenever the connection is lost or back). Every call shares one
    /// watcher per store handle.
    async fn watch(&self) -> Result<watch::Receiver<Live>, StoreError>;

    /// Ids of held operations in `scope` whose status lookup holdfast makes itself
    /// and whose next observation is due at `now`, soonest first, at most
    /// `limit`; a slot that a live claim holds is left out. With `at_least`, only
    /// operations of tools at that autonomy level or above (DESIGN §9.4).
    async fn due_lookups(
        &self,
        scope: &Scope,
        now: DateTime<Utc>,
        at_least: Option<Level>,
        limit: u64,
    ) -> Result<Vec<OperationId>, StoreError>;

    /// Held operations in `scope` whose next observation has come at `now` (the
    /// header's overdue ones), soonest first, at most `limit`, whatever their
    /// lookup: `observe` says why each it does not look up is left.
    async fn overdue_holds(
        &self,
        scope: &Scope,
        now: DateTime<Utc>,
        limit: u64,
    ) -> Result<Vec<Overdue>, StoreError>;

    /// Every tool's stored autonomy level; a tool not listed is at `manual`.
    async fn autonomy_levels(&self) -> Result<Vec<ToolLevel>, StoreError>;

    /// The tenants of `tool`'s operations, sorted, each once.
    async fn tool_tenants(&self, tool: &str) -> Result<Vec<String>, StoreError>;

    /// The tenants that hold an operation, sorted, each once: from the counts
    /// the triggers keep (`operation_counts`), a read of a few dozen rows.
    async fn tenants(&self) -> Result<Vec<String>, StoreError>;

    /// The vetoes of the release gate on `tool`'s operations still open at
    /// `now` (the operation is not terminal), from the facts kept per
    /// operation once those written since are judged: how many, and the first
    /// `named` in operation order with their kinds. `None` for a login that may
    /// only read the kept facts: the caller judges the operations itself.
    async fn open_vetoes(
        &self,
        tool: &str,
        now: DateTime<Utc>,
        named: u64,
    ) -> Result<Option<crate::core::autonomy::OpenVetoes>, StoreError>;

    /// Writes one level change with its audit row, in one transaction; refuses
    /// with [`StoreError::AutonomyChanged`] when the tool's level is no longer the
    /// change's `from`.
    async fn set_autonomy(&self, change: LevelChange) -> Result<AuditRow, StoreError>;

    /// Recorded drill results (`holdfast drill --tool`), oldest first, each with
    /// the seq of the audit row that recorded it; only `tool`'s when named.
    async fn drill_results(
        &self,
        tool: Option<&str>,
    ) -> Result<Vec<(i64, DrillResult)>, StoreError>;

    /// Records one drill result with its audit row `draft`, in one transaction.
    async fn record_drill(
        &self,
        result: DrillResult,
        draft: AuditDraft,
    ) -> Result<AuditRow, StoreError>;

    /// Every lookup check (`holdfast lookup check`), oldest first, as the audit
    /// rows of the autonomy ledger record them.
    async fn lookup_checks(&self) -> Result<Vec<crate::core::autonomy::LookupCheck>, StoreError>;

    /// Appends the audit row of one lookup check (a `lookup-check` row of the
    /// autonomy ledger; any other draft is refused).
    async fn append_ledger_row(&self, draft: AuditDraft) -> Result<AuditRow, StoreError>;

    /// Claims the lookup of `id` for the slot `slot` (its scheduled instant) for
    /// `by` until `until`: `true` when this call holds it now, `false` when a live
    /// claim of another holds it. A claim past its `until` may be taken over.
    async fn claim_lookup(
        &self,
        id: &OperationId,
        slot: DateTime<Utc>,
        by: &str,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError>;

    /// Claims up to `claim.limit` pieces of work (operations in `APPROVED` in
    /// the claim's tenants, not under a live lease), oldest first, each with its
    /// audit row, in one transaction: a piece is handed to one claimer only.
    async fn claim_work(&self, claim: &WorkClaim) -> Result<Vec<Lease>, StoreError>;

    /// The lease on `id`, if it is in `scope` and was ever claimed.
    async fn lease(&self, scope: &Scope, id: &OperationId) -> Result<Option<Lease>, StoreError>;

    /// Extends the holder's live lease to `length` from now (by default the
    /// length it was claimed or last renewed for), with its audit row;
    /// [`StoreError::Refused`] (G8) when the holder no longer holds it.
    async fn renew_work(
        &self,
        step: &WorkStep,
        length: Option<chrono::Duration>,
    ) -> Result<Lease, StoreError>;

    /// Takes the holder's records for its operation through the ingest path
    /// (every line for that operation, strict), completes the lease and appends
    /// its audit row, all in one transaction; [`StoreError::Refused`] (G8) when
    /// the holder no longer holds the lease.
    async fn complete_work(
        &self,
        step: &WorkStep,
        records: Vec<Numbered>,
    ) -> Result<Completion, StoreError>;

    /// Gives the holder's live lease back, with its audit row.
    async fn release_work(&self, step: &WorkStep) -> Result<Lease, StoreError>;

    /// One page of a table's rows, every value as stored, for [`Store::load_from`]:
    /// the first `limit` rows in the table's order after the row whose key cells
    /// are `after` (keyset paging: each page is an index range, however deep).
    async fn table_rows(
        &self,
        table: &'static Table,
        after: Option<&[Cell]>,
        limit: u64,
    ) -> Result<Vec<Vec<Cell>>, StoreError>;

    /// Fills this store, which must be empty, with everything `source` holds, in
    /// one transaction: the audit chain and its hashes stay as they are. `source`
    /// should not change while it is copied.
    async fn load_from(&self, source: &dyn Store) -> Result<CopyReport, StoreError>;

    /// What the checks of the audit chain recorded: the checkpoint and the
    /// breaks not cleared.
    async fn chain_marks(&self) -> Result<crate::core::chain::ChainMarks, StoreError>;

    /// Whether this login reads every row of the audit chain (on PostgreSQL, a
    /// login bound by row-level security does not): only then can it walk it.
    async fn walks_chain(&self) -> Result<bool, StoreError>;

    /// Walks the chain from the row `from` (it must still have its hash; the
    /// genesis for `None`) to the head: the links and each row's hash only.
    async fn link_check(&self, from: Option<&(i64, Sha256)>) -> Result<ChainStatus, StoreError>;

    /// Records what a check of the chain found. `Intact` moves the checkpoint
    /// forward to its head (and, for a full `audit verify` — `found_by` is
    /// [`crate::core::chain::BY_VERIFY`] — clears every recorded break); `Broken`
    /// records the break (the same break found again keeps its acknowledgement).
    async fn record_chain(
        &self,
        status: &ChainStatus,
        found_by: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError>;

    /// Appends the owner's acknowledgement of the recorded break at `seq` (the
    /// one write a broken chain allows) and moves the checkpoint to it, so that a
    /// write door's walk starts after the break it accepts.
    async fn acknowledge_break(&self, seq: i64, draft: AuditDraft) -> Result<AuditRow, StoreError>;

    /// [`Store::ingest_redacted`] for the OpenTelemetry door: the batch, and what
    /// the door keeps between requests (`keeping`: spans that wait for their tool
    /// span, the ones that joined, search terms), in one transaction. Nothing of
    /// either is committed without the other.
    async fn otlp_ingest(
        &self,
        batch: plan::redaction::Redacted,
        mode: IngestMode,
        ingester: &Ingester,
        now: DateTime<Utc>,
        keeping: &OtlpKeeping,
    ) -> Result<IngestReport, StoreError>;

    /// The waiting spans of these traces, and every span that has waited since
    /// `since_before` or longer.
    async fn otlp_waiting(
        &self,
        traces: &[String],
        since_before: DateTime<Utc>,
    ) -> Result<Vec<WaitingRow>, StoreError>;

    /// How many spans wait for their tool span.
    async fn otlp_waiting_count(&self) -> Result<u64, StoreError>;

    /// Which of `ids` are stored operations (with their attempts' ids), and the
    /// UNKNOWN operations with one of `payloads` (payload hashes) that a new call
    /// may repeat.
    async fn otlp_calls(
        &self,
        ids: &[String],
        payloads: &[String],
    ) -> Result<OtlpCalls, StoreError>;

    /// The SENT operations whose correlation id starts with `correlation_prefix`:
    /// id, correlation id, creation instant.
    async fn sent_calls(
        &self,
        correlation_prefix: &str,
    ) -> Result<Vec<(OperationId, String, DateTime<Utc>)>, StoreError>;

    /// The operations of `tool` that a call repeats: the same payload hash, or
    /// the same business key when it has one; newest first.
    async fn same_calls(
        &self,
        tool: &str,
        payload_hash: &Sha256,
        business_key: Option<&str>,
    ) -> Result<Vec<SameCall>, StoreError>;
}

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
