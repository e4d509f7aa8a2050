//! The store logic both backends share, written once over sqlx's `Database`: every
//! query is plain SQL that means the same on SQLite and PostgreSQL (numbered `$n`
//! parameters, `CASE` instead of boolean arithmetic, `string_agg`), over the same
//! tables and columns. What differs — opening, the write lock, the chain head,
//! error words, live updates — each backend says through [`Backend`]. This file
//! holds that seam, the store type, the shared row plumbing and the [`Store`]
//! impl, which routes each call to its concern: `migrate`, `read`, `verify`,
//! `write` and `copy`.

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use sqlx::query_builder::Separated;
use sqlx::{Database, Pool, QueryBuilder, Row};
use tokio::sync::{OnceCell, watch};

use super::plan::codec;
use super::plan::copy::{Cell, Table};
use super::{IngestMode, IngestReport, Ingester, Live, OperationFilter, StoreError};
use crate::core::audit::ChainStatus;
use crate::core::autonomy::ToolLevel;
use crate::core::contract::Contract;
use crate::core::ids::Sha256;
use crate::core::model::Grant;
use crate::wire::Numbered;

pub use migrate::{Create, known_schema};

/// What one backend says differently. Everything else is shared.
pub trait Backend: Database {
    /// Migrations compiled into the binary: (version, name, SQL).
    const MIGRATIONS: &'static [(i64, &'static str, &'static str)];
    /// The statement that opens a write transaction.
    const BEGIN_WRITE: &'static str;
    /// Statements that let a batch of ingest keep its changed pages in memory
    /// until it commits, and give that memory back before the commit: run first
    /// and last inside the batch's transaction. None where the server manages
    /// its own buffers.
    const BATCH_CACHE: Option<(&'static str, &'static str)> = None;
    /// Run first in a large ingest batch's transaction, where a statement's
    /// plan kept from an earlier batch may no longer fit its tables: each
    /// statement of the batch (the triggers' too) is then planned for the
    /// tables as they are now. None where plans are not kept.
    const BATCH_PLANS: Option<&'static str> = None;
    /// After a large ingest batch commits: the store's tables (`name`) whose
    /// statistics no longer describe them (never gathered, or more rows
    /// written since than the table held then) and that this login may
    /// analyze; each is then analyzed. None where the planner needs no
    /// statistics gathered.
    const GROWN_TABLES: Option<&'static str> = None;
    /// Run last in a large ingest batch's transaction, so that the rows it
    /// wrote are in the server's counts (`GROWN_TABLES` reads) as soon as it
    /// commits, not up to seconds later. None where nothing is counted.
    const FLUSH_COUNTS: Option<&'static str> = None;
    /// Reads the chain head (`seq`, `hash`; no row for an empty chain) as the first
    /// statement of every write transaction. Where the head is a row of its own,
    /// this locks it, so writers take turns from here on.
    const HEAD: &'static str;
    /// Appended to a `SELECT` whose rows the transaction is about to change.
    const FOR_UPDATE: &'static str;
    /// Appended to the `SELECT` of a claim's candidates (the operations aliased
    /// `o`): rows another transaction holds are skipped, not waited for.
    const SKIP_LOCKED: &'static str;
    /// Per table, the per-row triggers a copy sets aside inside its own
    /// transaction (the store is empty, and the copy runs as the owner, whom
    /// the login checks exempt): they check a login's writes, which an owner's
    /// copy of a verified chain needs no check of, or keep derived tables,
    /// which [`Self::AFTER_COPY`] rebuilds in one statement each. The chain's
    /// own per-statement check stays. The triggers are back in place before
    /// the copy commits, and a copy that fails rolls the change back with it.
    const COPY_SETS_ASIDE: &'static [(&'static str, &'static [&'static str])];
    /// Run last in a copy's transaction, while [`Self::COPY_SETS_ASIDE`] is
    /// still aside: new proposal ids follow the copied ones, and the tables the
    /// set-aside triggers keep are rebuilt from the copied rows.
    const AFTER_COPY: &'static [&'static str];
    /// Run once a copy has committed, outside any transaction: where the
    /// planner and index-only scans need statistics and a visibility map that
    /// a bulk load leaves unset (a freshly copied million operations on
    /// PostgreSQL counted its due holds with 44,000 heap fetches, 134 ms,
    /// until vacuumed: 8 ms).
    const AFTER_COPY_COMMIT: &'static [&'static str];
    /// Whether this connection's login may write the kept metric facts (a
    /// boolean column `may`); `None` where every connection may.
    const MAY_KEEP_FACTS: Option<&'static str>;
    /// Reads the database login a connection was authenticated as (a text column
    /// `login`), where the backend has logins; `None` where it has none.
    const LOGIN: Option<&'static str>;
    /// Whether this connection's login sees every row (a boolean column `may`),
    /// where row-level security may hide other tenants' rows from it; `None`
    /// where every connection sees every row.
    const SEES_EVERY_ROW: Option<&'static str>;
    /// Recomputes the queue flag (G9) of the operation bound as `$1` and of every
    /// operation depending on the one bound as `$2` (the same id), from the
    /// stored states of every tenant, whatever rows the login sees.
    const REQUEUE: &'static str;
    /// `has`: 1 when the database holds holdfast's migration table, else 0; read before
    /// anything is written by a command that may not create a store.
    const HAS_SCHEMA: &'static str;
    /// The distinct tenants (a text column `tenant`) of the operations of the
    /// tool bound as `$1`, in every tenant, whatever rows the login sees.
    const TOOL_TENANTS: &'static str;
    /// A condition that the column `{c}` holds text; SQLite keeps whatever type
    /// was written, so a value written as another type is told apart.
    const IS_TEXT: &'static str;
    /// A condition that the column `{c}` holds an integer (see [`Self::IS_TEXT`]).
    const IS_INTEGER: &'static str;
    /// Whether an aggregate over a subquery sorted by `ORDER BY` (and cut by
    /// `LIMIT`) folds the rows in that order, so that it needs no `ORDER BY` of
    /// its own, which would sort the rows a second time. Where this is relied
    /// on, the reader still checks each page's keys rise (SQLite's text order
    /// is byte order, as Rust's is).
    const AGGREGATES_IN_ORDER: bool;

    /// The file a store at `location` lives in, where verification may read
    /// whole tables from it on threads of its own ([`crate::store::pages`]);
    /// `None` where every read goes through the pool.
    fn paged_file(location: &str) -> Option<&std::path::Path> {
        let _ = location;
        None
    }

    /// The pages of a whole-table read for verification, streamed by the
    /// database itself on a task of their own
    /// ([`crate::store::pages::copy_out`]): the rows of `table` that meet
    /// `condition` (SQL with no parameters), in the order of `keys`, with
    /// `columns` in their order. `None` where pages are built by SQL through
    /// the pool.
    fn streamed_pages(
        pool: &Pool<Self>,
        table: &str,
        condition: Option<&str>,
        keys: &str,
        columns: &[crate::store::pages::Column],
        rows_per_page: usize,
    ) -> Option<tokio::sync::mpsc::Receiver<Result<crate::store::pages::Page, StoreError>>> {
        let _ = (pool, table, condition, keys, columns, rows_per_page);
        None
    }

    /// An expression for the digest of the text column `{c}`, written as
    /// [`Sha256::of`] writes it, where the database computes it with a
    /// function of its own: records are then hashed where they are stored and
    /// only one that does not match crosses the connection. `None` where the
    /// records are hashed here.
    const DIGEST: Option<&'static str> = None;

    /// Maps the errors this backend reports in its own terms; `None` leaves the
    /// error to the shared mapping.
    fn classify(error: &sqlx::Error) -> Option<StoreError>;

    /// Starts telling `Live` changes to the returned receiver, beginning at
    /// `head`. The work stops when every receiver is gone.
    fn spawn_watch(pool: Pool<Self>, head: i64) -> watch::Receiver<Live>;
}

/// Maps a driver error into words a reviewer can act on.
pub(crate) fn db<DB: Backend>(error: sqlx::Error) -> StoreError {
    if let Some(mapped) = DB::classify(&error) {
        return mapped;
    }
    tracing::error!(%error, backend = DB::NAME, "database error");
    match &error {
        sqlx::Error::Database(e) if e.message().contains("append-only") => StoreError::Other(
            "the audit log is append-only; the database refused the change".into(),
        ),
        sqlx::Error::Database(e) => {
            StoreError::Other(format!("the database refused the request: {}", e.message()))
        }
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => StoreError::Unavailable(error.to_string()),
        sqlx::Error::ColumnNotFound(_)
        | sqlx::Error::ColumnDecode { .. }
        | sqlx::Error::Decode(_)
        | sqlx::Error::TypeNotFound { .. } => {
            codec::corrupt("a stored value does not have the shape this holdfast expects".into())
        }
        _ => StoreError::Other(
            "the database connection failed unexpectedly; the details are in the log file \
             (`holdfast --help` shows where)"
                .into(),
        ),
    }
}

/// The newest committed audit `seq`, 0 for an empty log.
pub(crate) const HEAD_SEQ: &str = "SELECT COALESCE(MAX(seq), 0) AS seq FROM audit";

/// The queue flag's recomputation (G9) as one statement, where the login sees
/// every row; `{held}` stands for the quoted held states.
pub(crate) const REQUEUE: &str = "UPDATE operations SET queued = CASE WHEN state IN ({held}) OR EXISTS (\
     SELECT 1 FROM dependencies d JOIN operations p ON p.id = d.depends_on \
     WHERE d.operation = operations.id AND p.state IN ({held})) THEN 1 ELSE 0 END \
     WHERE id = $1 OR id IN (SELECT operation FROM dependencies WHERE depends_on = $2)";

/// Tells watchers `live`, unless it is what they already hold.
pub(crate) fn publish(tx: &watch::Sender<Live>, live: Live) {
    tx.send_if_modified(|current| {
        let changed = *current != live;
        *current = live;
        changed
    });
}

/// A store on one backend. Cloning shares the pool.
pub struct SqlStore<DB: Database> {
    pub(crate) pool: Pool<DB>,
    pub(crate) location: String,
    live: Arc<OnceCell<watch::Receiver<Live>>>,
    skipped: crate::store::skipped::Skipped,
}

impl<DB: Database> Clone for SqlStore<DB> {
    fn clone(&self) -> Self {
        SqlStore {
            pool: self.pool.clone(),
            location: self.location.clone(),
            live: Arc::clone(&self.live),
            skipped: self.skipped.clone(),
        }
    }
}

impl<DB: Database> fmt::Debug for SqlStore<DB> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqlStore")
            .field("backend", &DB::NAME)
            .field("location", &self.location)
            .finish_non_exhaustive()
    }
}

impl<DB: Database> SqlStore<DB> {
    /// The pool, for tests that must reach behind the store (tamper checks).
    pub fn pool(&self) -> &Pool<DB> {
        &self.pool
    }
}

/// Bound parameters per multi-row statement: under SQLite's limit (32,766) and
/// PostgreSQL's (65,535).
const PARAMS_PER_STATEMENT: usize = 30_000;

/// The most rows one multi-row statement inserts, or keys one `IN` list holds.
/// Statements are kept prepared per connection, so their shapes are few and small:
/// a statement with thousands of parameters costs megabytes while it is cached.
const ROWS_PER_STATEMENT: usize = 256;

/// How `total` rows are cut into statements of at most `max` rows each: every
/// part a power of two, largest first, so that a table is written with at most
/// `log2(max) + 1` statement shapes, each prepared once and reused.
fn statement_parts(total: usize, max: usize) -> impl Iterator<Item = usize> {
    let max = max.clamp(1, ROWS_PER_STATEMENT);
    let max = 1 << max.ilog2();
    let mut left = total;
    std::iter::from_fn(move || {
        (left > 0).then(|| {
            let part = max.min(1 << left.ilog2());
            left -= part;
            part
        })
    })
}

/// The shape an `IN` list of `len` keys is padded to (by repeating its last key,
/// which selects nothing more): the next power of two, at most
/// [`ROWS_PER_STATEMENT`].
fn in_list_len(len: usize) -> usize {
    len.next_power_of_two().min(ROWS_PER_STATEMENT)
}

/// The chain head inside a write transaction.
struct Head {
    seq: i64,
    hash: Sha256,
}

const AUDIT_COLUMNS: &str = "seq, operation, action, from_state, to_state, by_identity, role, \
     policy, on_behalf_of, rationale, evidence, at, encoding, prev_hash, hash";

/// Opens an `impl` block over [`SqlStore`] for every backend, with the driver
/// bounds the shared SQL needs written here once: `shared! { impl { … } }` for
/// the inherent methods of one concern (each file has its own block), and
/// `shared! { #[async_trait] impl Store { … } }` for the trait.
macro_rules! shared {
    ($(#[$attr:meta])* impl $($tr:path)? { $($body:tt)* }) => {
        $(#[$attr])*
        impl<DB> $($tr for)? $crate::store::engine::SqlStore<DB>
        where
            DB: $crate::store::engine::Backend,
            for<'c> &'c mut DB::Connection: ::sqlx::Executor<'c, Database = DB>,
            DB::Connection: ::sqlx::migrate::Migrate,
            DB::Arguments: ::sqlx::IntoArguments<DB>,
            for<'s> &'s str: ::sqlx::ColumnIndex<DB::Row>,
            str: ::sqlx::Type<DB>,
            for<'q> &'q str: ::sqlx::Encode<'q, DB> + ::sqlx::Decode<'q, DB>,
            for<'q> String: ::sqlx::Encode<'q, DB> + ::sqlx::Decode<'q, DB> + ::sqlx::Type<DB>,
            for<'q> i64: ::sqlx::Encode<'q, DB> + ::sqlx::Decode<'q, DB> + ::sqlx::Type<DB>,
            for<'q> bool: ::sqlx::Decode<'q, DB> + ::sqlx::Type<DB>,
            for<'q> Option<String>: ::sqlx::Encode<'q, DB>,
            for<'q> Option<&'q str>: ::sqlx::Encode<'q, DB>,
            for<'q> Option<i64>: ::sqlx::Encode<'q, DB>,
        {
            $($body)*
        }
    };
}

mod autonomy;
mod chain;
mod circuit;
mod copy;
mod lookup;
mod metric;
mod migrate;
mod otlp;
mod read;
mod verify;
mod work;
mod write;

shared! {
    impl {
        /// Inserts rows in multi-row statements; `push` binds one row's values.
        pub(super) async fn insert_many<T>(
            conn: &mut DB::Connection,
            prefix: &'static str,
            columns: usize,
            rows: &[T],
            push: fn(&mut Separated<'_, DB, &'static str>, &T),
        ) -> Result<(), StoreError> {
            Self::insert_many_then(conn, prefix, "", columns, rows, push).await
        }

        /// [`Self::insert_many`] with `suffix` after each statement's values.
        pub(super) async fn insert_many_then<T>(
            conn: &mut DB::Connection,
            prefix: &'static str,
            suffix: &'static str,
            columns: usize,
            rows: &[T],
            push: fn(&mut Separated<'_, DB, &'static str>, &T),
        ) -> Result<(), StoreError> {
            let statement = |part: &[T]| {
                let mut qb: QueryBuilder<DB> = QueryBuilder::new(prefix);
                qb.push_values(part, |mut b, row| push(&mut b, row));
                qb.push(suffix);
                qb
            };
            let mut parts = statement_parts(rows.len(), PARAMS_PER_STATEMENT / columns).scan(
                rows,
                |rest, part| {
                    let (now, later) = rest.split_at(part);
                    *rest = later;
                    Some(now)
                },
            );
            let Some(first) = parts.next() else {
                return Ok(());
            };
            // Each statement is built while the one before it runs: the
            // statement is sent first (`biased`), so the driver's thread or
            // the server works on it while this thread binds the next.
            let mut running = statement(first);
            loop {
                let following = parts.next();
                let (ran, built) = tokio::join!(
                    biased;
                    running.build().execute(&mut *conn),
                    async { following.map(statement) },
                );
                ran.map_err(db::<DB>)?;
                match built {
                    Some(next) => running = next,
                    None => return Ok(()),
                }
            }
        }

        /// Runs `SELECT … WHERE column IN (…)` over `keys` in chunks, returning every row.
        pub(super) async fn select_in(
            conn: &mut DB::Connection,
            prefix: &'static str,
            keys: &[String],
        ) -> Result<Vec<DB::Row>, StoreError> {
            let mut out = Vec::new();
            for part in keys.chunks(ROWS_PER_STATEMENT) {
                let mut qb: QueryBuilder<DB> = QueryBuilder::new(prefix);
                qb.push(" (");
                let mut list = qb.separated(", ");
                let padding = std::iter::repeat_n(&part[part.len() - 1], in_list_len(part.len()) - part.len());
                for key in part.iter().chain(padding) {
                    list.push_bind(key.clone());
                }
                list.push_unseparated(")");
                out.extend(qb.build().fetch_all(&mut *conn).await.map_err(db::<DB>)?);
            }
            Ok(out)
        }

        pub(super) fn text(row: &DB::Row, column: &str) -> Result<String, StoreError> {
            row.try_get(column).map_err(db::<DB>)
        }

        /// Refuses `what`, which reads every row of the store, for a login that
        /// row-level security keeps to its own tenants: it would see a chain
        /// with other tenants' rows missing and report gaps that are not there.
        async fn sees_every_row(&self, what: &str) -> Result<(), StoreError> {
            let Some(sql) = DB::SEES_EVERY_ROW else {
                return Ok(());
            };
            let may: bool = sqlx::query(sql)
                .fetch_one(&self.pool)
                .await
                .map_err(db::<DB>)?
                .try_get("may")
                .map_err(db::<DB>)?;
            if may {
                return Ok(());
            }
            let login = match DB::LOGIN {
                Some(sql) => Self::text(
                    &sqlx::query(sql).fetch_one(&self.pool).await.map_err(db::<DB>)?,
                    "login",
                )?,
                None => String::new(),
            };
            Err(StoreError::Other(format!(
                "{what} reads every tenant's rows, and the login {login} sees only the tenants \
                 its grants name (row-level security): run it as the database owner"
            )))
        }
    }
}

shared! {
    impl {
        /// [`Store::ingest_as`]: the records redacted here, then planned and
        /// written.
        async fn ingest_records(
            &self,
            records: Vec<Numbered>,
            mode: IngestMode,
            ingester: &Ingester,
            now: DateTime<Utc>,
        ) -> Result<IngestReport, StoreError> {
            self.write_ingest(super::plan::redaction::redact(records), mode, ingester, now, None)
                .await
        }

        /// [`Store::ingest_redacted`]: a batch redacted by its reader.
        async fn ingest_batch(
            &self,
            batch: super::plan::redaction::Redacted,
            mode: IngestMode,
            ingester: &Ingester,
            now: DateTime<Utc>,
        ) -> Result<IngestReport, StoreError> {
            self.write_ingest(batch, mode, ingester, now, None).await
        }

        async fn read_count(&self, filter: &OperationFilter) -> Result<u64, StoreError> {
            let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
            Self::total(&mut conn, filter).await
        }

        /// [`Store::verify`], for a login that reads every row.
        async fn walk_chain(&self) -> Result<ChainStatus, StoreError> {
            self.sees_every_row("audit verify").await?;
            self.read_verify().await
        }

        /// [`Store::verify_from`], for a login that reads every row.
        async fn walk_chain_from(&self, seq: i64, hash: &Sha256) -> Result<ChainStatus, StoreError> {
            self.sees_every_row("audit verify --from").await?;
            self.read_verify_from(seq, hash).await
        }

        async fn read_contracts(&self) -> Result<Vec<Contract>, StoreError> {
            self.all_wires("contracts", None, "tool", codec::contract).await
        }

        async fn read_grants(&self) -> Result<Vec<Grant>, StoreError> {
            let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
            Self::all_grants(&mut conn).await
        }

        /// The one watcher of this store handle, started by the first call.
        async fn read_live(&self) -> Result<watch::Receiver<Live>, StoreError> {
            let receiver = self
                .live
                .get_or_try_init(|| async {
                    let head = self.read_head_seq().await?;
                    Ok::<_, StoreError>(DB::spawn_watch(self.pool.clone(), head))
                })
                .await?;
            Ok(receiver.clone())
        }

        async fn read_levels(&self) -> Result<Vec<ToolLevel>, StoreError> {
            let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
            Self::all_levels(&mut conn).await
        }

        async fn read_tool_tenants(&self, tool: &str) -> Result<Vec<String>, StoreError> {
            let rows = sqlx::query(DB::TOOL_TENANTS)
                .bind(tool)
                .fetch_all(&self.pool)
                .await
                .map_err(db::<DB>)?;
            rows.iter().map(|row| Self::text(row, "tenant")).collect()
        }

        async fn read_tenants(&self) -> Result<Vec<String>, StoreError> {
            let rows = sqlx::query(
                "SELECT DISTINCT tenant FROM operation_counts WHERE n > 0 ORDER BY tenant",
            )
            .fetch_all(&self.pool)
            .await
            .map_err(db::<DB>)?;
            rows.iter().map(|row| Self::text(row, "tenant")).collect()
        }

        async fn read_table_rows(
            &self,
            table: &'static Table,
            after: Option<&[Cell]>,
            limit: u64,
        ) -> Result<Vec<Vec<Cell>>, StoreError> {
            self.table_page(table, after, i64::try_from(limit).unwrap_or(i64::MAX))
                .await
        }

        async fn read_walks_chain(&self) -> Result<bool, StoreError> {
            Ok(self.sees_every_row("").await.is_ok())
        }
    }
}

/// Implements [`Store`] from the list of [`crate::store::store_calls`]: each
/// call is answered by the method of `SqlStore` the list names, which holds
/// its SQL.
macro_rules! route {
    ($($(#[$doc:meta])* $how:ident fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty = $by:ident;)*) => {
        shared! {
            #[async_trait]
            impl Store {
                fn location(&self) -> String {
                    self.location.clone()
                }

                fn take_skipped(&self) -> Vec<String> {
                    self.skipped.take()
                }

                $(
                    async fn $name(&self, $($arg: $ty),*) -> Result<$ret, StoreError> {
                        self.$by($($arg),*).await
                    }
                )*
            }
        }
    };
}

/// The names the list of calls is written in.
mod calls {
    use super::super::*;

    crate::store::store_calls!(route);
}

#[cfg(test)]
mod tests {
    use super::{ROWS_PER_STATEMENT, in_list_len, statement_parts};

    #[test]
    fn statements_come_in_a_few_power_of_two_shapes_that_cover_every_row() {
        for total in [0, 1, 2, 3, 255, 256, 257, 1000, 20_011] {
            for max in [1, 7, 13, 1304, 30_000] {
                let parts: Vec<usize> = statement_parts(total, max).collect();
                assert_eq!(
                    parts.iter().sum::<usize>(),
                    total,
                    "{total} rows, {max} max"
                );
                assert!(parts.iter().all(|p| p.is_power_of_two() && *p <= max));
                assert!(parts.windows(2).all(|w| w[0] >= w[1]));
            }
        }
        assert_eq!(
            statement_parts(1000, 30_000).collect::<Vec<_>>(),
            [256, 256, 256, 128, 64, 32, 8]
        );
    }

    #[test]
    fn in_lists_are_padded_to_a_power_of_two() {
        assert_eq!(in_list_len(1), 1);
        assert_eq!(in_list_len(3), 4);
        assert_eq!(in_list_len(ROWS_PER_STATEMENT), ROWS_PER_STATEMENT);
    }
}
