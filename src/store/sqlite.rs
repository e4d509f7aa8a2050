//! The embedded store: one SQLite file in WAL mode. Every write runs in a
//! `BEGIN IMMEDIATE` transaction under a busy timeout, so several consoles and
//! scripts on one host take turns instead of failing with `database is locked`.
//! The queries themselves are shared with PostgreSQL (see [`super::engine`]).

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::Sqlite;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use tokio::sync::watch;

use super::engine::{Backend, Create, SqlStore, publish};
use super::{Link, Live, StoreError};

/// Migrations compiled into the binary, one file each under `migrations/sqlite`.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        20261101000001,
        "initial",
        include_str!("../../migrations/sqlite/20261101000001_initial.sql"),
    ),
    (
        20261130000001,
        "search",
        include_str!("../../migrations/sqlite/20261130000001_search.sql"),
    ),
    (
        20261201000002,
        "audit_encoding",
        include_str!("../../migrations/sqlite/20261201000002_audit_encoding.sql"),
    ),
    (
        20261201000013,
        "lookup_claims",
        include_str!("../../migrations/sqlite/20261201000013_lookup_claims.sql"),
    ),
    (
        20261201000020,
        "work_leases",
        include_str!("../../migrations/sqlite/20261201000020_work_leases.sql"),
    ),
    (
        20261201000030,
        "autonomy",
        include_str!("../../migrations/sqlite/20261201000030_autonomy.sql"),
    ),
    (
        20261201000040,
        "redactions",
        include_str!("../../migrations/sqlite/20261201000040_redactions.sql"),
    ),
    (
        20261201000050,
        "operation_counts",
        include_str!("../../migrations/sqlite/20261201000050_operation_counts.sql"),
    ),
    (
        20261201000110,
        "metric_facts",
        include_str!("../../migrations/sqlite/20261201000110_metric_facts.sql"),
    ),
    (
        20261201000130,
        "operations_tool",
        include_str!("../../migrations/sqlite/20261201000130_operations_tool.sql"),
    ),
    (
        20261201000140,
        "due_counts",
        include_str!("../../migrations/sqlite/20261201000140_due_counts.sql"),
    ),
    (
        20261202000010,
        "queue_partial",
        include_str!("../../migrations/sqlite/20261202000010_queue_partial.sql"),
    ),
    (
        20261202000012,
        "tenant_rows",
        include_str!("../../migrations/sqlite/20261202000012_tenant_rows.sql"),
    ),
    (
        20261202000013,
        "lookup_check_role",
        include_str!("../../migrations/sqlite/20261202000013_lookup_check_role.sql"),
    ),
    (
        20261202000014,
        "operation_columns",
        include_str!("../../migrations/sqlite/20261202000014_operation_columns.sql"),
    ),
    (
        20261203000028,
        "chain_checks",
        include_str!("../../migrations/sqlite/20261203000028_chain_checks.sql"),
    ),
    (
        20261203000030,
        "otlp_pending",
        include_str!("../../migrations/sqlite/20261203000030_otlp_pending.sql"),
    ),
    (
        20261203000035,
        "attempt_url",
        include_str!("../../migrations/sqlite/20261203000035_attempt_url.sql"),
    ),
    (
        20261203000040,
        "approve_action",
        include_str!("../../migrations/sqlite/20261203000040_approve_action.sql"),
    ),
    (
        20261203000045,
        "attempt_refused",
        include_str!("../../migrations/sqlite/20261203000045_attempt_refused.sql"),
    ),
    (
        20261203000050,
        "same_call_index",
        include_str!("../../migrations/sqlite/20261203000050_same_call_index.sql"),
    ),
    (
        20261204000070,
        "classify_action",
        include_str!("../../migrations/sqlite/20261204000070_classify_action.sql"),
    ),
    (
        20261205000020,
        "domain_review",
        include_str!("../../migrations/sqlite/20261205000020_domain_review.sql"),
    ),
    (
        20261205000030,
        "rerun",
        include_str!("../../migrations/sqlite/20261205000030_rerun.sql"),
    ),
    (
        20261205000050,
        "circuits",
        include_str!("../../migrations/sqlite/20261205000050_circuits.sql"),
    ),
    (
        20261205000060,
        "root_cause_facts",
        include_str!("../../migrations/sqlite/20261205000060_root_cause_facts.sql"),
    ),
    (
        20261206000020,
        "tool_holds",
        include_str!("../../migrations/sqlite/20261206000020_tool_holds.sql"),
    ),
    (
        20261207000010,
        "routed_owner",
        include_str!("../../migrations/sqlite/20261207000010_routed_owner.sql"),
    ),
    (
        20261208000010,
        "metric_rows_clustered",
        include_str!("../../migrations/sqlite/20261208000010_metric_rows_clustered.sql"),
    ),
    (
        20261210000010,
        "metric_rows_by_n_partial",
        include_str!("../../migrations/sqlite/20261210000010_metric_rows_by_n_partial.sql"),
    ),
];

/// How long a writer waits for another to finish before reporting the store busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// Rows the driver's thread may read ahead of a streamed statement's reader. Each
/// hand-over between the two threads costs a wake-up; the driver's default of 50
/// made a walk over the audit chain spend most of its time waking threads. Memory
/// stays bounded: this many rows at most wait per statement.
const ROW_BUFFER: usize = 4096;

/// The page size of a store this build creates. An ingest writes every page it
/// changes to the WAL, one frame (two writes) per page, then copies it into the
/// file at a checkpoint; with 16 KiB pages a 100,000-operation ingest made half
/// the writes (500,583 `pwrite` calls against 1,057,240) and ran 8-11 % faster,
/// alternating runs against 4 KiB pages on the same input (no further gain at
/// 8, 32 or 64 KiB). A store created with another page size keeps it: SQLite
/// changes it only by a `VACUUM` outside WAL mode.
const PAGE_SIZE: u32 = 16 * 1024;

/// Prepared statements kept per connection: every shape a batched write uses (a
/// few per table, see `engine::statement_parts`) stays prepared between batches.
const STATEMENT_CACHE: usize = 256;

/// How often a console looks for changes made by other processes.
const POLL: Duration = Duration::from_millis(250);

/// The SQLite operations store.
pub type SqliteStore = SqlStore<Sqlite>;

/// The newest schema version this build knows.
pub fn known_schema() -> i64 {
    super::engine::known_schema::<Sqlite>()
}

impl Backend for Sqlite {
    const MIGRATIONS: &'static [(i64, &'static str, &'static str)] = MIGRATIONS;
    const BEGIN_WRITE: &'static str = "BEGIN IMMEDIATE";
    // A batch of ingest changes pages all over the indexes. With SQLite's 2 MiB
    // cache it spills half-written pages to the WAL and writes them again
    // later; with 16 MiB it holds them until the commit (a 100,000-operation
    // ingest: 7.6 s of system time to about 5). The cache shrinks back before
    // the commit writes them, so no pooled connection keeps the larger cache
    // (kept, it took the 1 M bench's report from 126 MiB to 235 MiB).
    const BATCH_CACHE: Option<(&'static str, &'static str)> =
        Some(("PRAGMA cache_size = -16384", "PRAGMA cache_size = -2000"));
    const HEAD: &'static str = "SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1";
    // `BEGIN IMMEDIATE` already holds the only write lock.
    const FOR_UPDATE: &'static str = "";
    const SKIP_LOCKED: &'static str = "";
    // The triggers stay: SQLite cannot set one aside without dropping it.
    const COPY_SETS_ASIDE: &'static [(&'static str, &'static [&'static str])] = &[];
    // Explicit ids move SQLite's AUTOINCREMENT counter by themselves.
    const AFTER_COPY: &'static [&'static str] = &[];
    // SQLite's index scans need no visibility map, and it plans without
    // gathered statistics as it does on a store that was never copied.
    const AFTER_COPY_COMMIT: &'static [&'static str] = &[];
    const MAY_KEEP_FACTS: Option<&'static str> = None;
    // A file has no logins: the acting identity is whoever the command says.
    const LOGIN: Option<&'static str> = None;
    // Nor row-level security: whoever opens the file reads all of it.
    const SEES_EVERY_ROW: Option<&'static str> = None;
    const REQUEUE: &'static str = super::engine::REQUEUE;
    const HAS_SCHEMA: &'static str = "SELECT count(*) AS has FROM sqlite_master \
         WHERE type = 'table' AND name = '_sqlx_migrations'";
    const TOOL_TENANTS: &'static str =
        "SELECT DISTINCT tenant FROM operations WHERE tool = $1 ORDER BY tenant";
    const IS_TEXT: &'static str = "typeof({c}) = 'text'";
    const IS_INTEGER: &'static str = "typeof({c}) = 'integer'";
    const AGGREGATES_IN_ORDER: bool = true;

    fn paged_file(location: &str) -> Option<&Path> {
        Some(Path::new(location))
    }

    fn classify(error: &sqlx::Error) -> Option<StoreError> {
        let sqlx::Error::Database(e) = error else {
            return None;
        };
        let message = e.message();
        (message.contains("database is locked") || message.contains("database is busy"))
            .then_some(StoreError::Busy)
    }

    /// Polls the head: other processes write the same file without telling us.
    fn spawn_watch(pool: SqlitePool, head: i64) -> watch::Receiver<Live> {
        let (tx, rx) = watch::channel(Live {
            head,
            link: Link::Connected,
        });
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(POLL);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut failures = 0;
            loop {
                tokio::select! {
                    () = tx.closed() => return,
                    _ = tick.tick() => {}
                }
                let read = sqlx::query_scalar::<_, i64>(super::engine::HEAD_SEQ)
                    .fetch_one(&pool)
                    .await;
                let live = match read {
                    Ok(head) => {
                        failures = 0;
                        Live {
                            head,
                            link: Link::Connected,
                        }
                    }
                    Err(error) => {
                        failures += 1;
                        tracing::warn!(%error, "cannot read the store's head");
                        Live {
                            head: tx.borrow().head,
                            link: Link::Reconnecting { attempt: failures },
                        }
                    }
                };
                publish(&tx, live);
            }
        });
        rx
    }
}

impl SqlStore<Sqlite> {
    /// Opens the store at `path`, creating and migrating it on first use. A store
    /// written by a newer holdfast is refused.
    pub async fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        Self::open_as(path, Create::Yes).await
    }

    /// Opens the store at `path`; with [`Create::No`] neither the file nor the
    /// schema is created (a file without holdfast's schema is refused).
    pub async fn open_as(path: &Path, create: Create) -> Result<SqliteStore, StoreError> {
        let location = path.display().to_string();
        let open_error = |reason: String| StoreError::Open {
            location: location.clone(),
            reason,
        };
        // An empty file holds no store; opening it would write SQLite's header.
        if create == Create::No && std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
            return Err(StoreError::NoSchema(location));
        }
        if let Some(dir) = path
            .parent()
            .filter(|d| create == Create::Yes && !d.as_os_str().is_empty())
        {
            std::fs::create_dir_all(dir)
                .map_err(|e| open_error(format!("cannot create {}: {e}", dir.display())))?;
        }
        let options = SqliteConnectOptions::from_str("sqlite:")
            .map_err(|e| open_error(e.to_string()))?
            .filename(path)
            .create_if_missing(create == Create::Yes)
            .page_size(PAGE_SIZE)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(BUSY_TIMEOUT)
            .row_buffer_size(ROW_BUFFER)
            .statement_cache_capacity(STATEMENT_CACHE)
            .foreign_keys(false);
        // A connection to a local file cannot drop: the ping the pool sends
        // before lending one by default is a hand-off to the driver's thread
        // and back on the path of every statement outside a transaction.
        let pool = SqlitePoolOptions::new()
            .test_before_acquire(false)
            .max_connections(4)
            .acquire_timeout(BUSY_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(|e| open_error(e.to_string()))?;
        SqlStore::new(pool, location, create).await
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        Path::new(&self.location)
    }
}
