//! The store logic both backends share, written once over sqlx's `Database`: every
//! query is plain SQL that means the same on SQLite and PostgreSQL (numbered `$n`
//! parameters, `CASE` instead of boolean arithmetic, `string_agg`), over the same
//! tables and columns. What differs — opening, the write lock, the chain head,
//! error words, live updates — each backend says through [`Backend`].

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::migrate::{Migrate, MigrateError, Migration, MigrationType, Migrator};
use sqlx::query_builder::Separated;
use sqlx::{
    AssertSqlSafe, ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool,
    QueryBuilder, Row, SqlSafeStr, Transaction, Type,
};
use tokio::sync::{OnceCell, watch};

use super::codec::{self, AuditColumns, Current, from_ms, ms, observe_order};
use super::copy::{Cell, ColumnKind, CopyReport, TABLES, Table};
use super::ingest_plan::{self, Known, Plan, RecordKey, StoredOperation};
use super::rows::{OperationColumns, RecordColumns, plan_rows, search_terms};
use super::sql::{held_states_sql, order_by, push_filter};
use super::{
    IngestMode, IngestReport, Live, OperationFilter, Page, QueueCounts, SortOrder, Store,
    StoreError,
};
use crate::core::access::{self, GrantChange, GrantOp};
use crate::core::audit::{AuditDraft, AuditRow, ChainStatus, ChainVerifier, seal};
use crate::core::ids::{OperationId, Sha256};
use crate::core::model::{
    ChildLink, Dataset, Grant, Operation, OperationDetail, OperationRow, Proposal, Role,
};
use crate::core::rules::Commit;
use crate::wire::{Numbered, Record};

/// What one backend says differently. Everything else is shared.
pub trait Backend: Database {
    /// Migrations compiled into the binary: (version, name, SQL).
    const MIGRATIONS: &'static [(i64, &'static str, &'static str)];
    /// The statement that opens a write transaction.
    const BEGIN_WRITE: &'static str;
    /// Reads the chain head (`seq`, `hash`; no row for an empty chain) as the first
    /// statement of every write transaction. Where the head is a row of its own,
    /// this locks it, so writers take turns from here on.
    const HEAD: &'static str;
    /// Appended to a `SELECT` whose rows the transaction is about to change.
    const FOR_UPDATE: &'static str;
    /// Run after a copy wrote explicit proposal ids, so new ones follow them.
    const AFTER_COPY: Option<&'static str>;
    /// Reads the database login a connection was authenticated as (a text column
    /// `login`), where the backend has logins; `None` where it has none.
    const LOGIN: Option<&'static str>;

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
    skipped: super::skipped::Skipped,
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

/// The newest schema version a backend's build knows.
pub fn known_schema<DB: Backend>() -> i64 {
    DB::MIGRATIONS.iter().map(|m| m.0).max().unwrap_or(0)
}

fn migrator<DB: Backend>() -> Migrator {
    let migrations = DB::MIGRATIONS
        .iter()
        .map(|(version, name, sql)| {
            Migration::new(
                *version,
                Cow::Borrowed(*name),
                MigrationType::Simple,
                AssertSqlSafe(*sql).into_sql_str(),
                false,
            )
        })
        .collect();
    Migrator::with_migrations(migrations)
}

/// Bound parameters per multi-row statement: under SQLite's limit (32,766) and
/// PostgreSQL's (65,535).
const PARAMS_PER_STATEMENT: usize = 30_000;

/// The chain head inside a write transaction.
struct Head {
    seq: i64,
    hash: Sha256,
}

const AUDIT_COLUMNS: &str = "seq, operation, action, from_state, to_state, by_identity, role, \
     policy, on_behalf_of, rationale, evidence, at, prev_hash, hash";

/// The columns of a listing row, before the filter.
fn row_select() -> String {
    let held = held_states_sql();
    format!(
        "SELECT o.id, o.state, o.owner, o.next_observation_ms, o.version, o.state_since_ms, o.wire, \
         COALESCE(o.max_attempts, c.max_attempts) AS max_attempts, \
         (SELECT count(*) FROM attempts a WHERE a.operation = o.id AND a.kind = 'request') AS used, \
         (SELECT string_agg(d.depends_on, ' ') FROM dependencies d \
            JOIN operations p ON p.id = d.depends_on \
            WHERE d.operation = o.id AND p.state IN ({held})) AS held_deps, \
         EXISTS (SELECT 1 FROM proposals pr WHERE pr.operation = o.id AND pr.status = 'pending') AS pending \
         FROM operations o LEFT JOIN contracts c ON c.tool = o.tool WHERE 1 = 1"
    )
}

/// Reads a row's key column as text (ids are text, `seq` an integer), for
/// naming a row that cannot be decoded.
fn key_of<R: Row>(column: &'static str) -> impl Fn(&R) -> Option<String>
where
    for<'s> &'s str: ColumnIndex<R>,
    for<'q> String: Decode<'q, R::Database> + Type<R::Database>,
    for<'q> i64: Decode<'q, R::Database> + Type<R::Database>,
{
    move |row| {
        row.try_get::<String, _>(column)
            .ok()
            .or_else(|| row.try_get::<i64, _>(column).ok().map(|n| n.to_string()))
    }
}

/// The columns of a record a reviewer action adds.
fn record_columns(record: Record) -> RecordColumns {
    RecordColumns::of(&record, &ingest_plan::record_hash(&record))
}

/// The audit rows a store creates for the children a commit opens.
fn child_drafts(commit: &Commit) -> Vec<AuditDraft> {
    let id = commit.operation.as_str();
    commit
        .children
        .iter()
        .map(|child| AuditDraft {
            operation: child.id.clone(),
            action: "create".into(),
            from: None,
            to: Some(child.state),
            by: commit.audit.by.clone(),
            role: commit.audit.role,
            policy: commit.audit.policy.clone(),
            on_behalf_of: commit.audit.on_behalf_of.clone(),
            rationale: commit.audit.rationale.clone(),
            evidence: vec![format!("parent:{id}")],
            at: commit.audit.at,
        })
        .collect()
}

impl<DB> SqlStore<DB>
where
    DB: Backend,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Connection: Migrate,
    DB::Arguments: IntoArguments<DB>,
    for<'s> &'s str: ColumnIndex<DB::Row>,
    str: Type<DB>,
    for<'q> &'q str: Encode<'q, DB>,
    for<'q> String: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> bool: Decode<'q, DB> + Type<DB>,
    for<'q> Option<String>: Encode<'q, DB>,
    for<'q> Option<&'q str>: Encode<'q, DB>,
    for<'q> Option<i64>: Encode<'q, DB>,
{
    /// Wraps a connected pool and brings its schema up to date. A store written by
    /// a newer holdfast is refused.
    pub(crate) async fn new(pool: Pool<DB>, location: String) -> Result<Self, StoreError> {
        let store = SqlStore {
            pool,
            location,
            live: Arc::new(OnceCell::new()),
            skipped: super::skipped::Skipped::default(),
        };
        store.migrate().await?;
        Ok(store)
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let too_new = |found| StoreError::TooNew {
            location: self.location.clone(),
            found,
            known: known_schema::<DB>(),
        };
        let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
        let applied: BTreeSet<i64> = match conn.list_applied_migrations("_sqlx_migrations").await {
            Ok(applied) => applied.iter().map(|m| m.version).collect(),
            Err(_) => BTreeSet::new(),
        };
        drop(conn);
        if let Some(&found) = applied.iter().max().filter(|v| **v > known_schema::<DB>()) {
            return Err(too_new(found));
        }
        // Up to date: nothing to run, so a login that may only read and write data
        // (no DDL rights) opens the store all the same.
        if DB::MIGRATIONS.iter().all(|m| applied.contains(&m.0)) {
            return Ok(());
        }
        migrator::<DB>().run(&self.pool).await.map_err(|e| match e {
            MigrateError::VersionMissing(found) => too_new(found),
            MigrateError::Execute(error) => db::<DB>(error),
            other => StoreError::Open {
                location: self.location.clone(),
                reason: format!("migration failed: {other}"),
            },
        })
    }

    /// Opens a write transaction and reads the chain head in it, first thing.
    async fn begin_write(&self) -> Result<(Transaction<'static, DB>, Head), StoreError> {
        let mut tx = self
            .pool
            .begin_with(DB::BEGIN_WRITE)
            .await
            .map_err(db::<DB>)?;
        let row = sqlx::query(DB::HEAD)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db::<DB>)?;
        let head = match row {
            None => Head {
                seq: 0,
                hash: crate::core::audit::genesis(),
            },
            Some(row) => {
                let hash: String = row.try_get("hash").map_err(db::<DB>)?;
                Head {
                    seq: row.try_get("seq").map_err(db::<DB>)?,
                    hash: Sha256::parse(&hash)
                        .map_err(|_| codec::corrupt("the audit head hash".into()))?,
                }
            }
        };
        Ok((tx, head))
    }

    /// Inserts rows in multi-row statements; `push` binds one row's values.
    async fn insert_many<T>(
        conn: &mut DB::Connection,
        prefix: &'static str,
        columns: usize,
        rows: &[T],
        push: fn(&mut Separated<'_, DB, &'static str>, &T),
    ) -> Result<(), StoreError> {
        Self::insert_many_then(conn, prefix, "", columns, rows, push).await
    }

    /// [`Self::insert_many`] with `suffix` after each statement's values.
    async fn insert_many_then<T>(
        conn: &mut DB::Connection,
        prefix: &'static str,
        suffix: &'static str,
        columns: usize,
        rows: &[T],
        push: fn(&mut Separated<'_, DB, &'static str>, &T),
    ) -> Result<(), StoreError> {
        for part in rows.chunks((PARAMS_PER_STATEMENT / columns).max(1)) {
            let mut qb: QueryBuilder<DB> = QueryBuilder::new(prefix);
            qb.push_values(part, |mut b, row| push(&mut b, row));
            qb.push(suffix);
            qb.build().execute(&mut *conn).await.map_err(db::<DB>)?;
        }
        Ok(())
    }

    /// Runs `SELECT … WHERE column IN (…)` over `keys` in chunks, returning every row.
    async fn select_in(
        conn: &mut DB::Connection,
        prefix: &'static str,
        keys: &[String],
    ) -> Result<Vec<DB::Row>, StoreError> {
        let mut out = Vec::new();
        for part in keys.chunks(PARAMS_PER_STATEMENT) {
            let mut qb: QueryBuilder<DB> = QueryBuilder::new(prefix);
            qb.push(" (");
            let mut list = qb.separated(", ");
            for key in part {
                list.push_bind(key.clone());
            }
            list.push_unseparated(")");
            out.extend(qb.build().fetch_all(&mut *conn).await.map_err(db::<DB>)?);
        }
        Ok(out)
    }

    fn audit_row(row: &DB::Row) -> Result<AuditRow, StoreError> {
        AuditColumns {
            seq: row.try_get("seq").map_err(db::<DB>)?,
            operation: row.try_get("operation").map_err(db::<DB>)?,
            action: row.try_get("action").map_err(db::<DB>)?,
            from_state: row.try_get("from_state").map_err(db::<DB>)?,
            to_state: row.try_get("to_state").map_err(db::<DB>)?,
            by_identity: row.try_get("by_identity").map_err(db::<DB>)?,
            role: row.try_get("role").map_err(db::<DB>)?,
            policy: row.try_get("policy").map_err(db::<DB>)?,
            on_behalf_of: row.try_get("on_behalf_of").map_err(db::<DB>)?,
            rationale: row.try_get("rationale").map_err(db::<DB>)?,
            evidence: row.try_get("evidence").map_err(db::<DB>)?,
            at: row.try_get("at").map_err(db::<DB>)?,
            prev_hash: row.try_get("prev_hash").map_err(db::<DB>)?,
            hash: row.try_get("hash").map_err(db::<DB>)?,
        }
        .into_row()
    }

    async fn insert_operations(
        conn: &mut DB::Connection,
        rows: &[OperationColumns],
    ) -> Result<(), StoreError> {
        Self::insert_many(
            conn,
            "INSERT INTO operations (id, tenant, tool, owner, state, risk_rank, failure_mode, target, \
             payload_hash, idempotency_key, business_key, correlation_id, parent, max_attempts, \
             deadline_ms, created_ms, state_since_ms, next_observation_ms, observe_order, queued, \
             version, wire, record_hash) ",
            23,
            rows,
            |b, r| {
                b.push_bind(r.id.clone())
                    .push_bind(r.tenant.clone())
                    .push_bind(r.tool.clone())
                    .push_bind(r.owner.clone())
                    .push_bind(r.state.clone())
                    .push_bind(r.risk_rank)
                    .push_bind(r.failure_mode.clone())
                    .push_bind(r.target.clone())
                    .push_bind(r.payload_hash.clone())
                    .push_bind(r.idempotency_key.clone())
                    .push_bind(r.business_key.clone())
                    .push_bind(r.correlation_id.clone())
                    .push_bind(r.parent.clone())
                    .push_bind(r.max_attempts)
                    .push_bind(r.deadline_ms)
                    .push_bind(r.created_ms)
                    .push_bind(r.state_since_ms)
                    .push_bind(r.next_observation_ms)
                    .push_bind(r.observe_order)
                    .push_bind(r.queued)
                    .push_bind(r.version)
                    .push_bind(r.wire.clone())
                    .push_bind(r.record_hash.clone());
            },
        )
        .await?;
        let deps: Vec<(String, String)> = rows
            .iter()
            .flat_map(|r| r.depends_on.iter().map(|d| (r.id.clone(), d.clone())))
            .collect();
        Self::insert_many_then(
            conn,
            "INSERT INTO dependencies (operation, depends_on) ",
            " ON CONFLICT DO NOTHING",
            2,
            &deps,
            |b, (op, dep)| {
                b.push_bind(op.clone()).push_bind(dep.clone());
            },
        )
        .await?;
        let terms: Vec<(String, String)> = rows
            .iter()
            .flat_map(|r| {
                let values = [
                    Some(r.id.as_str()),
                    Some(r.target.as_str()),
                    r.idempotency_key.as_deref(),
                    r.business_key.as_deref(),
                    r.correlation_id.as_deref(),
                ];
                search_terms(&r.id, values.into_iter().flatten())
            })
            .collect();
        Self::insert_terms(conn, &terms).await
    }

    /// Adds search terms (`term`, `operation`); a term already there is kept.
    async fn insert_terms(
        conn: &mut DB::Connection,
        terms: &[(String, String)],
    ) -> Result<(), StoreError> {
        Self::insert_many_then(
            conn,
            "INSERT INTO search_terms (term, operation) ",
            " ON CONFLICT DO NOTHING",
            2,
            terms,
            |b, (term, op)| {
                b.push_bind(term.clone()).push_bind(op.clone());
            },
        )
        .await
    }

    async fn insert_records(
        conn: &mut DB::Connection,
        attempts: &[RecordColumns],
        observations: &[RecordColumns],
        items: &[RecordColumns],
    ) -> Result<(), StoreError> {
        Self::insert_many(
            conn,
            "INSERT INTO attempts (id, operation, seq, kind, provider_request_id, wire, record_hash) ",
            7,
            attempts,
            |b, r| {
                b.push_bind(r.key.clone())
                    .push_bind(r.operation.clone())
                    .push_bind(r.order)
                    .push_bind(r.kind.clone())
                    .push_bind(r.provider_request_id.clone())
                    .push_bind(r.wire.clone())
                    .push_bind(r.hash.clone());
            },
        )
        .await?;
        let terms: Vec<(String, String)> = attempts
            .iter()
            .flat_map(|a| search_terms(&a.operation, a.provider_request_id.as_deref()))
            .collect();
        Self::insert_terms(conn, &terms).await?;
        Self::insert_many(
            conn,
            "INSERT INTO observations (id, operation, observed_ms, wire, record_hash) ",
            5,
            observations,
            |b, r| {
                b.push_bind(r.key.clone())
                    .push_bind(r.operation.clone())
                    .push_bind(r.order)
                    .push_bind(r.wire.clone())
                    .push_bind(r.hash.clone());
            },
        )
        .await?;
        Self::insert_many(
            conn,
            "INSERT INTO items (operation, idx, wire, record_hash) ",
            4,
            items,
            |b, r| {
                b.push_bind(r.operation.clone())
                    .push_bind(r.order)
                    .push_bind(r.wire.clone())
                    .push_bind(r.hash.clone());
            },
        )
        .await
    }

    async fn insert_audit(conn: &mut DB::Connection, rows: &[AuditRow]) -> Result<(), StoreError> {
        let columns: Vec<AuditColumns> = rows.iter().map(AuditColumns::from_row).collect();
        Self::insert_many(
            conn,
            "INSERT INTO audit (seq, operation, action, from_state, to_state, by_identity, role, \
             policy, on_behalf_of, rationale, evidence, at, prev_hash, hash) ",
            14,
            &columns,
            |b, c| {
                b.push_bind(c.seq)
                    .push_bind(c.operation.clone())
                    .push_bind(c.action.clone())
                    .push_bind(c.from_state.clone())
                    .push_bind(c.to_state.clone())
                    .push_bind(c.by_identity.clone())
                    .push_bind(c.role.clone())
                    .push_bind(c.policy.clone())
                    .push_bind(c.on_behalf_of.clone())
                    .push_bind(c.rationale.clone())
                    .push_bind(c.evidence.clone())
                    .push_bind(c.at.clone())
                    .push_bind(c.prev_hash.clone())
                    .push_bind(c.hash.clone());
            },
        )
        .await
    }

    /// Recomputes whether each operation (and everything that depends on it) is in
    /// the console's queue (G9).
    async fn requeue(conn: &mut DB::Connection, ids: &BTreeSet<String>) -> Result<(), StoreError> {
        let held = held_states_sql();
        let sql = format!(
            "UPDATE operations SET queued = CASE WHEN state IN ({held}) OR EXISTS (\
               SELECT 1 FROM dependencies d JOIN operations p ON p.id = d.depends_on \
               WHERE d.operation = operations.id AND p.state IN ({held})) THEN 1 ELSE 0 END \
             WHERE id = $1 OR id IN (SELECT operation FROM dependencies WHERE depends_on = $2)"
        );
        for id in ids {
            sqlx::query(AssertSqlSafe(sql.as_str()))
                .bind(id)
                .bind(id)
                .execute(&mut *conn)
                .await
                .map_err(db::<DB>)?;
        }
        Ok(())
    }

    fn text(row: &DB::Row, column: &str) -> Result<String, StoreError> {
        row.try_get(column).map_err(db::<DB>)
    }

    /// Looks up what the store holds under the batch's keys, a few hundred keys per
    /// query.
    async fn known(conn: &mut DB::Connection, records: &[Numbered]) -> Result<Known, StoreError> {
        let wanted = ingest_plan::lookups(records);
        let mut known = Known::default();
        let ops: Vec<String> = wanted.operations.iter().cloned().collect();
        for row in Self::select_in(
            conn,
            "SELECT id, state, record_hash FROM operations WHERE id IN",
            &ops,
        )
        .await?
        {
            known.operations.insert(
                Self::text(&row, "id")?,
                StoredOperation {
                    state: codec::parse_state(&Self::text(&row, "state")?)?,
                    record_hash: row.try_get("record_hash").map_err(db::<DB>)?,
                },
            );
        }
        let mut tools: BTreeSet<String> = wanted.contracts.clone();
        let (mut attempts, mut observations, mut keyed_ops) =
            (Vec::new(), Vec::new(), BTreeSet::new());
        for key in &wanted.keys {
            match key {
                RecordKey::Contract(tool) => {
                    tools.insert(tool.clone());
                }
                RecordKey::Attempt(id) => attempts.push(id.clone()),
                RecordKey::Observation(id) => observations.push(id.clone()),
                RecordKey::Expectation(op)
                | RecordKey::Item(op, _)
                | RecordKey::Transition(op, ..) => {
                    keyed_ops.insert(op.clone());
                }
                RecordKey::Operation(_) => {}
            }
        }
        let tools: Vec<String> = tools.into_iter().collect();
        for row in Self::select_in(
            conn,
            "SELECT tool, record_hash FROM contracts WHERE tool IN",
            &tools,
        )
        .await?
        {
            let tool = Self::text(&row, "tool")?;
            known.contracts.insert(tool.clone());
            known
                .hashes
                .insert(RecordKey::Contract(tool), Self::text(&row, "record_hash")?);
        }
        for row in Self::select_in(
            conn,
            "SELECT id, record_hash FROM attempts WHERE id IN",
            &attempts,
        )
        .await?
        {
            known.hashes.insert(
                RecordKey::Attempt(Self::text(&row, "id")?),
                Self::text(&row, "record_hash")?,
            );
        }
        for row in Self::select_in(
            conn,
            "SELECT id, record_hash FROM observations WHERE id IN",
            &observations,
        )
        .await?
        {
            known.hashes.insert(
                RecordKey::Observation(Self::text(&row, "id")?),
                Self::text(&row, "record_hash")?,
            );
        }
        let keyed_ops: Vec<String> = keyed_ops.into_iter().collect();
        for row in Self::select_in(
            conn,
            "SELECT operation, record_hash FROM expectations WHERE operation IN",
            &keyed_ops,
        )
        .await?
        {
            known.hashes.insert(
                RecordKey::Expectation(Self::text(&row, "operation")?),
                Self::text(&row, "record_hash")?,
            );
        }
        for row in Self::select_in(
            conn,
            "SELECT operation, idx, record_hash FROM items WHERE operation IN",
            &keyed_ops,
        )
        .await?
        {
            let index: i64 = row.try_get("idx").map_err(db::<DB>)?;
            let key = RecordKey::Item(
                Self::text(&row, "operation")?,
                u32::try_from(index).unwrap_or(u32::MAX),
            );
            known.hashes.insert(key, Self::text(&row, "record_hash")?);
        }
        for row in Self::select_in(
            conn,
            "SELECT operation, from_state, to_state, at_ms, record_hash FROM wire_transitions \
             WHERE operation IN",
            &keyed_ops,
        )
        .await?
        {
            let key = RecordKey::Transition(
                Self::text(&row, "operation")?,
                codec::parse_state(&Self::text(&row, "from_state")?)?,
                codec::parse_state(&Self::text(&row, "to_state")?)?,
                row.try_get("at_ms").map_err(db::<DB>)?,
            );
            known.hashes.insert(key, Self::text(&row, "record_hash")?);
        }
        Ok(known)
    }

    /// Writes a plan: the new records, each operation's state history and one audit
    /// row per creation, per transition and per batch of records added to an
    /// existing operation, in multi-row statements.
    async fn write_plan(
        conn: &mut DB::Connection,
        head: &Head,
        known: &Known,
        plan: &Plan,
        by: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        let rows = plan_rows(known, plan, by, now, (head.seq, &head.hash));
        Self::insert_many(
            conn,
            "INSERT INTO contracts (tool, max_attempts, wire, record_hash) ",
            4,
            &rows.contracts,
            |b, r| {
                b.push_bind(r.key.clone())
                    .push_bind(r.order)
                    .push_bind(r.wire.clone())
                    .push_bind(r.hash.clone());
            },
        )
        .await?;
        Self::insert_operations(conn, &rows.operations).await?;
        Self::insert_records(conn, &rows.attempts, &rows.observations, &rows.items).await?;
        Self::insert_many(
            conn,
            "INSERT INTO expectations (operation, wire, record_hash) ",
            3,
            &rows.expectations,
            |b, r| {
                b.push_bind(r.operation.clone())
                    .push_bind(r.wire.clone())
                    .push_bind(r.hash.clone());
            },
        )
        .await?;
        Self::insert_many(
            conn,
            "INSERT INTO wire_transitions (operation, from_state, to_state, at_ms, record_hash) ",
            5,
            &rows.transitions,
            |b, r| {
                b.push_bind(r.operation.clone())
                    .push_bind(r.from_state.clone())
                    .push_bind(r.to_state.clone())
                    .push_bind(r.at_ms)
                    .push_bind(r.hash.clone());
            },
        )
        .await?;
        for moved in &rows.moved {
            sqlx::query(
                "UPDATE operations SET state = $1, state_since_ms = $2, version = version + $3 \
                 WHERE id = $4",
            )
            .bind(moved.state.as_str())
            .bind(ms(moved.since))
            .bind(moved.steps)
            .bind(&moved.id)
            .execute(&mut *conn)
            .await
            .map_err(db::<DB>)?;
        }
        Self::insert_audit(conn, &rows.audit).await?;
        let moved: BTreeSet<String> = rows.moved.iter().map(|m| m.id.clone()).collect();
        Self::requeue(conn, &moved).await
    }

    fn operation_row(row: &DB::Row) -> Result<OperationRow, StoreError> {
        let wire: String = row.try_get("wire").map_err(db::<DB>)?;
        let state: String = row.try_get("state").map_err(db::<DB>)?;
        let owner: String = row.try_get("owner").map_err(db::<DB>)?;
        let operation = codec::current_operation(
            &wire,
            Current {
                state: &state,
                owner: &owner,
                next_observation_ms: row.try_get("next_observation_ms").map_err(db::<DB>)?,
            },
        )?;
        let held_deps: Option<String> = row.try_get("held_deps").map_err(db::<DB>)?;
        let held_dependencies = held_deps
            .unwrap_or_default()
            .split_whitespace()
            .map(codec::parse_id)
            .collect::<Result<Vec<_>, _>>()?;
        let used: i64 = row.try_get("used").map_err(db::<DB>)?;
        let max: Option<i64> = row.try_get("max_attempts").map_err(db::<DB>)?;
        Ok(OperationRow {
            operation,
            version: row.try_get("version").map_err(db::<DB>)?,
            attempts_used: u32::try_from(used).unwrap_or(u32::MAX),
            max_attempts: max.and_then(|m| u32::try_from(m).ok()),
            state_since: from_ms(row.try_get("state_since_ms").map_err(db::<DB>)?)?,
            held_dependencies,
            pending_proposal: row.try_get::<bool, _>("pending").map_err(db::<DB>)?,
        })
    }

    fn proposal(row: &DB::Row) -> Result<Proposal, StoreError> {
        let at: String = row.try_get("proposed_at").map_err(db::<DB>)?;
        let operation: String = row.try_get("operation").map_err(db::<DB>)?;
        Ok(Proposal {
            id: row.try_get("id").map_err(db::<DB>)?,
            operation: codec::parse_id(&operation)?,
            action: row.try_get("action").map_err(db::<DB>)?,
            proposed_by: row.try_get("proposed_by").map_err(db::<DB>)?,
            proposed_at: crate::core::clock::parse_instant(&at)
                .map_err(|_| codec::corrupt(format!("proposal time {at:?}")))?,
            rationale: row.try_get("rationale").map_err(db::<DB>)?,
            status: row.try_get("status").map_err(db::<DB>)?,
        })
    }

    /// Fetches `SELECT wire …` rows bound to one key and decodes each.
    async fn wires<T>(
        conn: &mut DB::Connection,
        sql: &'static str,
        bind: &str,
        decode: fn(&str) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let rows = sqlx::query(sql)
            .bind(bind)
            .fetch_all(&mut *conn)
            .await
            .map_err(db::<DB>)?;
        rows.iter()
            .map(|row| {
                let wire: String = row.try_get("wire").map_err(db::<DB>)?;
                decode(&wire)
            })
            .collect()
    }

    /// Fetches every `SELECT wire …` row of a table and decodes each.
    async fn all_wires<T>(
        &self,
        sql: &'static str,
        decode: fn(&str) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let rows = sqlx::query(sql)
            .fetch_all(&self.pool)
            .await
            .map_err(db::<DB>)?;
        let table = sql.split_whitespace().nth(3).unwrap_or("record");
        Ok(self.skipped.keep(
            table,
            &rows,
            |_| None,
            |row| {
                let wire: String = row.try_get("wire").map_err(db::<DB>)?;
                decode(&wire)
            },
        ))
    }

    async fn load_row(
        conn: &mut DB::Connection,
        id: &str,
    ) -> Result<Option<OperationRow>, StoreError> {
        let sql = format!("{} AND o.id = $1", row_select());
        let row = sqlx::query(AssertSqlSafe(sql))
            .bind(id)
            .fetch_optional(&mut *conn)
            .await
            .map_err(db::<DB>)?;
        row.as_ref().map(Self::operation_row).transpose()
    }

    /// The linked children of an operation, with the items each covers.
    async fn children(conn: &mut DB::Connection, key: &str) -> Result<Vec<ChildLink>, StoreError> {
        let mut children = Vec::new();
        let child_rows = sqlx::query(
            "SELECT id, state, wire FROM operations WHERE parent = $1 ORDER BY created_ms, id",
        )
        .bind(key)
        .fetch_all(&mut *conn)
        .await
        .map_err(db::<DB>)?;
        for child in &child_rows {
            let child_id: String = child.try_get("id").map_err(db::<DB>)?;
            let state: String = child.try_get("state").map_err(db::<DB>)?;
            let wire: String = child.try_get("wire").map_err(db::<DB>)?;
            let record = codec::operation(&wire)?;
            let Some(relation) = record.relation else {
                continue;
            };
            children.push(ChildLink {
                id: codec::parse_id(&child_id)?,
                relation,
                state: codec::parse_state(&state)?,
                items: Self::wires(
                    conn,
                    "SELECT wire FROM items WHERE operation = $1 ORDER BY idx",
                    &child_id,
                    codec::item,
                )
                .await?,
            });
        }
        Ok(children)
    }

    /// Other operations of the tenant under the same idempotency key with another
    /// payload (G3).
    async fn key_conflicts(
        conn: &mut DB::Connection,
        op: &Operation,
    ) -> Result<Vec<OperationId>, StoreError> {
        let Some(idem) = &op.idempotency_key else {
            return Ok(Vec::new());
        };
        let rows = sqlx::query(
            "SELECT id FROM operations WHERE tenant = $1 AND idempotency_key = $2 \
             AND payload_hash <> $3 AND id <> $4 ORDER BY id",
        )
        .bind(&op.tenant)
        .bind(idem)
        .bind(op.payload_hash.as_str())
        .bind(op.id.as_str())
        .fetch_all(&mut *conn)
        .await
        .map_err(db::<DB>)?;
        rows.iter()
            .map(|r| {
                let other: String = r.try_get("id").map_err(db::<DB>)?;
                codec::parse_id(&other)
            })
            .collect()
    }

    /// The refusal of a commit made against `expected` when the row is at `current`:
    /// who made the newest change, and when.
    async fn conflict(
        conn: &mut DB::Connection,
        commit: &Commit,
        current: i64,
    ) -> Result<StoreError, StoreError> {
        let last = sqlx::query(
            "SELECT by_identity, at FROM audit WHERE operation = $1 ORDER BY seq DESC LIMIT 1",
        )
        .bind(commit.operation.as_str())
        .fetch_optional(&mut *conn)
        .await
        .map_err(db::<DB>)?;
        let (by, at) = match last {
            Some(row) => {
                let by: String = row.try_get("by_identity").map_err(db::<DB>)?;
                let at: String = row.try_get("at").map_err(db::<DB>)?;
                (
                    by,
                    crate::core::clock::parse_instant(&at).unwrap_or_default(),
                )
            }
            None => ("unknown".to_owned(), DateTime::<Utc>::default()),
        };
        Ok(StoreError::Conflict {
            id: commit.operation.clone(),
            expected: commit.expected_version,
            current,
            by,
            at,
        })
    }

    /// Applies the column changes of a commit to its operation and bumps its version.
    async fn apply_changes(conn: &mut DB::Connection, commit: &Commit) -> Result<(), StoreError> {
        let id = commit.operation.as_str();
        let at = commit.audit.at;
        if let Some(state) = commit.new_state {
            sqlx::query("UPDATE operations SET state = $1, state_since_ms = $2 WHERE id = $3")
                .bind(state.as_str())
                .bind(ms(at))
                .bind(id)
                .execute(&mut *conn)
                .await
                .map_err(db::<DB>)?;
        }
        if let Some(owner) = &commit.new_owner {
            sqlx::query("UPDATE operations SET owner = $1 WHERE id = $2")
                .bind(owner)
                .bind(id)
                .execute(&mut *conn)
                .await
                .map_err(db::<DB>)?;
        }
        if let Some(next) = commit.new_next_observation_at {
            sqlx::query(
                "UPDATE operations SET next_observation_ms = $1, observe_order = $2 WHERE id = $3",
            )
            .bind(next.map(ms))
            .bind(observe_order(next))
            .bind(id)
            .execute(&mut *conn)
            .await
            .map_err(db::<DB>)?;
        }
        sqlx::query("UPDATE operations SET version = version + 1 WHERE id = $1")
            .bind(id)
            .execute(&mut *conn)
            .await
            .map_err(db::<DB>)?;
        Ok(())
    }

    /// Opens or closes the proposal a commit names. A proposal closed by someone
    /// else in the meantime refuses the commit.
    async fn apply_proposals(conn: &mut DB::Connection, commit: &Commit) -> Result<(), StoreError> {
        let id = commit.operation.as_str();
        if let Some(p) = &commit.open_proposal {
            sqlx::query(
                "INSERT INTO proposals (operation, action, proposed_by, proposed_at, rationale, status) \
                 VALUES ($1, $2, $3, $4, $5, 'pending')",
            )
            .bind(p.operation.as_str())
            .bind(&p.action)
            .bind(&p.proposed_by)
            .bind(crate::core::clock::format_instant(p.proposed_at))
            .bind(&p.rationale)
            .execute(&mut *conn)
            .await
            .map_err(db::<DB>)?;
        }
        if let Some((proposal, status)) = &commit.close_proposal {
            let closed = sqlx::query(
                "UPDATE proposals SET status = $1 \
                 WHERE id = $2 AND operation = $3 AND status = 'pending' RETURNING id",
            )
            .bind(status)
            .bind(*proposal)
            .bind(id)
            .fetch_optional(&mut *conn)
            .await
            .map_err(db::<DB>)?;
            if closed.is_none() {
                return Err(StoreError::Other(format!(
                    "proposal {proposal} of {id} is no longer pending; reload and decide again"
                )));
            }
        }
        Ok(())
    }

    /// Every grant, in a stable order.
    async fn all_grants(conn: &mut DB::Connection) -> Result<Vec<Grant>, StoreError> {
        let rows = sqlx::query(
            "SELECT identity, role, tenant, granted_by, granted_at FROM grants \
             ORDER BY tenant, identity, role",
        )
        .fetch_all(&mut *conn)
        .await
        .map_err(db::<DB>)?;
        rows.iter()
            .map(|row| {
                let role = Self::text(row, "role")?;
                let at = Self::text(row, "granted_at")?;
                Ok(Grant {
                    identity: Self::text(row, "identity")?,
                    role: Role::parse(&role)
                        .ok_or_else(|| codec::corrupt(format!("grant role {role:?}")))?,
                    tenant: Self::text(row, "tenant")?,
                    granted_by: Self::text(row, "granted_by")?,
                    granted_at: crate::core::clock::parse_instant(&at)
                        .map_err(|_| codec::corrupt(format!("grant time {at:?}")))?,
                })
            })
            .collect()
    }

    /// Reads one page of a table's rows, every column as a cell.
    async fn table_page(
        &self,
        table: &Table,
        offset: i64,
        limit: i64,
    ) -> Result<Vec<Vec<Cell>>, StoreError> {
        let sql = format!(
            "SELECT {} FROM {} ORDER BY {} LIMIT $1 OFFSET $2",
            table.column_list(),
            table.name,
            table.order
        );
        let rows = sqlx::query(AssertSqlSafe(sql))
            .bind(limit)
            .bind(offset)
            .fetch_all(&self.pool)
            .await
            .map_err(db::<DB>)?;
        rows.iter()
            .map(|row| {
                table
                    .columns
                    .iter()
                    .map(|(name, kind)| match kind {
                        ColumnKind::Int => row.try_get(*name).map(Cell::Int),
                        ColumnKind::Text => row.try_get(*name).map(Cell::Text),
                    })
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(db::<DB>)
            })
            .collect()
    }

    /// Inserts rows of a table exactly as they are.
    async fn insert_cells(
        conn: &mut DB::Connection,
        table: &Table,
        rows: Vec<Vec<Cell>>,
    ) -> Result<(), StoreError> {
        if rows.is_empty() {
            return Ok(());
        }
        let mut qb: QueryBuilder<DB> = QueryBuilder::new(format!(
            "INSERT INTO {} ({}) ",
            table.name,
            table.column_list()
        ));
        qb.push_values(rows, |mut values, row| {
            for cell in row {
                match cell {
                    Cell::Int(value) => values.push_bind(value),
                    Cell::Text(value) => values.push_bind(value),
                };
            }
        });
        qb.build().execute(&mut *conn).await.map_err(db::<DB>)?;
        Ok(())
    }
}

#[async_trait]
impl<DB> Store for SqlStore<DB>
where
    DB: Backend,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Connection: Migrate,
    DB::Arguments: IntoArguments<DB>,
    for<'s> &'s str: ColumnIndex<DB::Row>,
    str: Type<DB>,
    for<'q> &'q str: Encode<'q, DB>,
    for<'q> String: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Decode<'q, DB> + Type<DB>,
    for<'q> bool: Decode<'q, DB> + Type<DB>,
    for<'q> Option<String>: Encode<'q, DB>,
    for<'q> Option<&'q str>: Encode<'q, DB>,
    for<'q> Option<i64>: Encode<'q, DB>,
{
    fn location(&self) -> String {
        self.location.clone()
    }

    async fn ingest(
        &self,
        records: Vec<Numbered>,
        mode: IngestMode,
        by: &str,
        now: DateTime<Utc>,
    ) -> Result<IngestReport, StoreError> {
        let (mut tx, head) = self.begin_write().await?;
        let known = Self::known(&mut tx, &records).await?;
        let plan = ingest_plan::plan(records, &known);
        if mode == IngestMode::DryRun || (mode == IngestMode::Strict && !plan.rejected.is_empty()) {
            tx.rollback().await.map_err(db::<DB>)?;
            return Ok(IngestReport {
                committed: Vec::new(),
                unchanged: plan.unchanged,
                rejected: plan.rejected,
            });
        }
        Self::write_plan(&mut tx, &head, &known, &plan, by, now).await?;
        tx.commit().await.map_err(db::<DB>)?;
        Ok(IngestReport {
            committed: plan.committed_by_type(),
            unchanged: plan.unchanged,
            rejected: plan.rejected,
        })
    }

    async fn list(
        &self,
        filter: &OperationFilter,
        sort: SortOrder,
        page: Page,
        _now: DateTime<Utc>,
    ) -> Result<(Vec<OperationRow>, u64), StoreError> {
        let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
        let mut qb: QueryBuilder<DB> = QueryBuilder::new(row_select());
        push_filter(&mut qb, filter);
        qb.push(order_by(sort));
        qb.push(" LIMIT ");
        qb.push_bind(i64::try_from(page.limit).unwrap_or(i64::MAX));
        qb.push(" OFFSET ");
        qb.push_bind(i64::try_from(page.offset).unwrap_or(i64::MAX));
        let rows = qb.build().fetch_all(&mut *conn).await.map_err(db::<DB>)?;
        let rows = self
            .skipped
            .keep("operation", &rows, key_of("id"), Self::operation_row);

        let mut count: QueryBuilder<DB> =
            QueryBuilder::new("SELECT count(*) AS n FROM operations o WHERE 1 = 1");
        push_filter(&mut count, filter);
        let total: i64 = count
            .build()
            .fetch_one(&mut *conn)
            .await
            .map_err(db::<DB>)?
            .try_get("n")
            .map_err(db::<DB>)?;
        Ok((rows, u64::try_from(total).unwrap_or(0)))
    }

    async fn counts(
        &self,
        filter: &OperationFilter,
        now: DateTime<Utc>,
    ) -> Result<QueueCounts, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
        let held = held_states_sql();
        let mut by_state: QueryBuilder<DB> = QueryBuilder::new(
            "SELECT o.state AS state, count(*) AS n FROM operations o WHERE 1 = 1",
        );
        push_filter(&mut by_state, filter);
        by_state.push(" GROUP BY o.state");
        let mut counts = QueueCounts::default();
        for row in by_state
            .build()
            .fetch_all(&mut *conn)
            .await
            .map_err(db::<DB>)?
        {
            let state: String = row.try_get("state").map_err(db::<DB>)?;
            let n: i64 = row.try_get("n").map_err(db::<DB>)?;
            counts
                .by_state
                .push((codec::parse_state(&state)?, u64::try_from(n).unwrap_or(0)));
        }
        counts.by_state.sort();

        let mut sums: QueryBuilder<DB> = QueryBuilder::new(
            "SELECT \
               COALESCE(SUM(CASE WHEN o.queued = 1 AND o.next_observation_ms IS NOT NULL \
                 AND o.next_observation_ms <= ",
        );
        sums.push_bind(ms(now));
        sums.push(format!(
            " THEN 1 ELSE 0 END), 0) AS overdue, \
               COALESCE(SUM(CASE WHEN o.queued = 1 AND o.state NOT IN ({held}) THEN 1 ELSE 0 END), 0) \
                 AS by_dependency, \
               COALESCE(SUM(CASE WHEN EXISTS (SELECT 1 FROM proposals pr \
                 WHERE pr.operation = o.id AND pr.status = 'pending') THEN 1 ELSE 0 END), 0) AS pending \
             FROM operations o WHERE 1 = 1"
        ));
        push_filter(&mut sums, filter);
        let row = sums.build().fetch_one(&mut *conn).await.map_err(db::<DB>)?;
        let get = |name: &str| -> Result<u64, StoreError> {
            let n: i64 = row.try_get(name).map_err(db::<DB>)?;
            Ok(u64::try_from(n).unwrap_or(0))
        };
        counts.overdue = get("overdue")?;
        counts.held_by_dependency = get("by_dependency")?;
        counts.pending_proposals = get("pending")?;
        Ok(counts)
    }

    async fn detail(&self, id: &OperationId) -> Result<OperationDetail, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
        let row = Self::load_row(&mut conn, id.as_str())
            .await?
            .ok_or_else(|| StoreError::NotFound(id.clone()))?;
        let op = &row.operation;
        let key = id.as_str();
        let contract = Self::wires(
            &mut conn,
            "SELECT wire FROM contracts WHERE tool = $1",
            &op.tool,
            codec::contract,
        )
        .await?
        .pop();
        let attempts = Self::wires(
            &mut conn,
            "SELECT wire FROM attempts WHERE operation = $1 ORDER BY seq, id",
            key,
            codec::attempt,
        )
        .await?;
        let items = Self::wires(
            &mut conn,
            "SELECT wire FROM items WHERE operation = $1 ORDER BY idx",
            key,
            codec::item,
        )
        .await?;
        let observations = Self::wires(
            &mut conn,
            "SELECT wire FROM observations WHERE operation = $1 ORDER BY observed_ms, id",
            key,
            codec::observation,
        )
        .await?;
        let expectation = Self::wires(
            &mut conn,
            "SELECT wire FROM expectations WHERE operation = $1",
            key,
            codec::expectation,
        )
        .await?
        .pop();
        let audit = sqlx::query(AssertSqlSafe(format!(
            "SELECT {AUDIT_COLUMNS} FROM audit WHERE operation = $1 ORDER BY seq"
        )))
        .bind(key)
        .fetch_all(&mut *conn)
        .await
        .map_err(db::<DB>)?
        .iter()
        .map(Self::audit_row)
        .collect::<Result<Vec<_>, _>>()?;
        let children = Self::children(&mut conn, key).await?;

        let mut dependencies = Vec::new();
        for dep in &op.depends_on {
            let state = sqlx::query("SELECT state FROM operations WHERE id = $1")
                .bind(dep.as_str())
                .fetch_optional(&mut *conn)
                .await
                .map_err(db::<DB>)?;
            if let Some(state) = state {
                let state: String = state.try_get("state").map_err(db::<DB>)?;
                dependencies.push((dep.clone(), codec::parse_state(&state)?));
            }
        }

        let proposals = sqlx::query(
            "SELECT id, operation, action, proposed_by, proposed_at, rationale, status \
             FROM proposals WHERE operation = $1 ORDER BY id",
        )
        .bind(key)
        .fetch_all(&mut *conn)
        .await
        .map_err(db::<DB>)?
        .iter()
        .map(Self::proposal)
        .collect::<Result<Vec<_>, _>>()?;
        let key_conflicts = Self::key_conflicts(&mut conn, op).await?;

        Ok(OperationDetail {
            row,
            contract,
            attempts,
            items,
            observations,
            audit,
            expectation,
            children,
            dependencies,
            proposals,
            key_conflicts,
        })
    }

    async fn commit(&self, commit: Commit) -> Result<AuditRow, StoreError> {
        let (mut tx, head) = self.begin_write().await?;
        let id = commit.operation.as_str().to_owned();
        let current = sqlx::query(AssertSqlSafe(format!(
            "SELECT version FROM operations WHERE id = $1{}",
            DB::FOR_UPDATE
        )))
        .bind(&id)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db::<DB>)?
        .ok_or_else(|| StoreError::NotFound(commit.operation.clone()))?;
        let version: i64 = current.try_get("version").map_err(db::<DB>)?;
        if version != commit.expected_version {
            let conflict = Self::conflict(&mut tx, &commit, version).await?;
            tx.rollback().await.map_err(db::<DB>)?;
            return Err(conflict);
        }
        Self::apply_changes(&mut tx, &commit).await?;
        let attempts: Vec<RecordColumns> = commit
            .attempts
            .iter()
            .map(|a| record_columns(Record::Attempt(a.clone())))
            .collect();
        let observations: Vec<RecordColumns> = commit
            .observations
            .iter()
            .map(|o| record_columns(Record::Observation(o.clone())))
            .collect();
        let items: Vec<RecordColumns> = commit
            .child_items
            .iter()
            .map(|i| record_columns(Record::Item(i.clone())))
            .collect();
        let children: Vec<OperationColumns> = commit
            .children
            .iter()
            .map(|child| {
                let held = child.state.is_held();
                OperationColumns::new(child, child.state, commit.audit.at, 1, held, None)
            })
            .collect();
        Self::insert_operations(&mut tx, &children).await?;
        Self::insert_records(&mut tx, &attempts, &observations, &items).await?;
        if let Err(refused) = Self::apply_proposals(&mut tx, &commit).await {
            tx.rollback().await.map_err(db::<DB>)?;
            return Err(refused);
        }
        let mut sealed = vec![seal(&head.hash, head.seq + 1, commit.audit.clone())];
        for draft in child_drafts(&commit) {
            let last = &sealed[sealed.len() - 1];
            let next = seal(&last.hash, last.seq + 1, draft);
            sealed.push(next);
        }
        Self::insert_audit(&mut tx, &sealed).await?;
        let mut touched = BTreeSet::from([id]);
        touched.extend(children.into_iter().map(|c| c.id));
        Self::requeue(&mut tx, &touched).await?;
        tx.commit().await.map_err(db::<DB>)?;
        Ok(sealed.swap_remove(0))
    }

    async fn audit(&self, from: i64, limit: u64) -> Result<Vec<AuditRow>, StoreError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT {AUDIT_COLUMNS} FROM audit WHERE seq >= $1 ORDER BY seq LIMIT $2"
        )))
        .bind(from)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(db::<DB>)?;
        Ok(self
            .skipped
            .keep("audit row", &rows, key_of("seq"), Self::audit_row))
    }

    async fn head_seq(&self) -> Result<i64, StoreError> {
        let row = sqlx::query(HEAD_SEQ)
            .fetch_one(&self.pool)
            .await
            .map_err(db::<DB>)?;
        row.try_get("seq").map_err(db::<DB>)
    }

    async fn verify(&self) -> Result<ChainStatus, StoreError> {
        const CHUNK: i64 = 10_000;
        let mut verifier = ChainVerifier::default();
        let mut next = 1;
        loop {
            let rows = sqlx::query(AssertSqlSafe(format!(
                "SELECT {AUDIT_COLUMNS} FROM audit WHERE seq >= $1 ORDER BY seq LIMIT $2"
            )))
            .bind(next)
            .bind(CHUNK)
            .fetch_all(&self.pool)
            .await
            .map_err(db::<DB>)?;
            if rows.is_empty() {
                return Ok(verifier.finish());
            }
            for row in &rows {
                let seq: i64 = row.try_get("seq").map_err(db::<DB>)?;
                let decoded = match Self::audit_row(row) {
                    Ok(decoded) => decoded,
                    Err(e) => {
                        return Ok(ChainStatus::Broken {
                            seq,
                            reason: format!("the row cannot be read: {e}"),
                        });
                    }
                };
                if let Err(broken) = verifier.push(&decoded) {
                    return Ok(broken);
                }
                next = seq + 1;
            }
        }
    }

    async fn dataset(&self) -> Result<Dataset, StoreError> {
        let rows = sqlx::query(
            "SELECT id, state, owner, next_observation_ms, wire FROM operations ORDER BY id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(db::<DB>)?;
        let operations = self.skipped.keep("operation", &rows, key_of("id"), |row| {
            let wire: String = row.try_get("wire").map_err(db::<DB>)?;
            let state: String = row.try_get("state").map_err(db::<DB>)?;
            let owner: String = row.try_get("owner").map_err(db::<DB>)?;
            codec::current_operation(
                &wire,
                Current {
                    state: &state,
                    owner: &owner,
                    next_observation_ms: row.try_get("next_observation_ms").map_err(db::<DB>)?,
                },
            )
        });
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT {AUDIT_COLUMNS} FROM audit ORDER BY seq"
        )))
        .fetch_all(&self.pool)
        .await
        .map_err(db::<DB>)?;
        let audit = self
            .skipped
            .keep("audit row", &rows, key_of("seq"), Self::audit_row);
        let proposals = sqlx::query(
            "SELECT id, operation, action, proposed_by, proposed_at, rationale, status \
             FROM proposals ORDER BY id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(db::<DB>)?
        .iter()
        .map(Self::proposal)
        .collect::<Result<Vec<_>, _>>()?;
        Ok(Dataset {
            proposals,
            contracts: self
                .all_wires("SELECT wire FROM contracts ORDER BY tool", codec::contract)
                .await?,
            operations,
            attempts: self
                .all_wires(
                    "SELECT wire FROM attempts ORDER BY operation, seq, id",
                    codec::attempt,
                )
                .await?,
            items: self
                .all_wires(
                    "SELECT wire FROM items ORDER BY operation, idx",
                    codec::item,
                )
                .await?,
            observations: self
                .all_wires(
                    "SELECT wire FROM observations ORDER BY operation, observed_ms, id",
                    codec::observation,
                )
                .await?,
            audit,
            expectations: self
                .all_wires(
                    "SELECT wire FROM expectations ORDER BY operation",
                    codec::expectation,
                )
                .await?,
        })
    }

    async fn login(&self) -> Result<Option<String>, StoreError> {
        let Some(sql) = DB::LOGIN else {
            return Ok(None);
        };
        let row = sqlx::query(sql)
            .fetch_one(&self.pool)
            .await
            .map_err(db::<DB>)?;
        row.try_get("login").map(Some).map_err(db::<DB>)
    }

    async fn grants(&self) -> Result<Vec<Grant>, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
        Self::all_grants(&mut conn).await
    }

    async fn change_grant(&self, change: GrantChange) -> Result<AuditRow, StoreError> {
        let (mut tx, head) = self.begin_write().await?;
        if access::basis(&Self::all_grants(&mut tx).await?) != change.basis {
            tx.rollback().await.map_err(db::<DB>)?;
            return Err(StoreError::GrantsChanged);
        }
        let g = &change.grant;
        let query = match change.op {
            GrantOp::Grant => sqlx::query(
                "INSERT INTO grants (identity, role, tenant, granted_by, granted_at) \
                 VALUES ($1, $2, $3, $4, $5)",
            )
            .bind(&g.identity)
            .bind(g.role.as_str())
            .bind(&g.tenant)
            .bind(&g.granted_by)
            .bind(crate::core::clock::format_instant(g.granted_at)),
            GrantOp::Revoke => {
                sqlx::query("DELETE FROM grants WHERE identity = $1 AND role = $2 AND tenant = $3")
                    .bind(&g.identity)
                    .bind(g.role.as_str())
                    .bind(&g.tenant)
            }
        };
        query.execute(&mut *tx).await.map_err(db::<DB>)?;
        let row = seal(&head.hash, head.seq + 1, change.audit);
        Self::insert_audit(&mut tx, std::slice::from_ref(&row)).await?;
        tx.commit().await.map_err(db::<DB>)?;
        Ok(row)
    }

    fn take_skipped(&self) -> Vec<String> {
        self.skipped.take()
    }

    async fn watch(&self) -> Result<watch::Receiver<Live>, StoreError> {
        let receiver = self
            .live
            .get_or_try_init(|| async {
                let head = self.head_seq().await?;
                Ok::<_, StoreError>(DB::spawn_watch(self.pool.clone(), head))
            })
            .await?;
        Ok(receiver.clone())
    }

    async fn table_rows(
        &self,
        table: &'static Table,
        offset: u64,
        limit: u64,
    ) -> Result<Vec<Vec<Cell>>, StoreError> {
        self.table_page(
            table,
            i64::try_from(offset).unwrap_or(i64::MAX),
            i64::try_from(limit).unwrap_or(i64::MAX),
        )
        .await
    }

    async fn load_from(&self, source: &dyn Store) -> Result<CopyReport, StoreError> {
        const PAGE: u64 = 500;
        let (mut tx, head) = self.begin_write().await?;
        let operations: i64 = sqlx::query("SELECT count(*) AS n FROM operations")
            .fetch_one(&mut *tx)
            .await
            .map_err(db::<DB>)?
            .try_get("n")
            .map_err(db::<DB>)?;
        if head.seq > 0 || operations > 0 {
            tx.rollback().await.map_err(db::<DB>)?;
            return Err(StoreError::Other(format!(
                "{} already holds data; copy into a new, empty store",
                self.location
            )));
        }
        let mut report = CopyReport::default();
        for table in TABLES {
            let mut copied = 0;
            loop {
                let rows = source.table_rows(table, copied, PAGE).await?;
                let n = rows.len() as u64;
                Self::insert_cells(&mut tx, table, rows).await?;
                copied += n;
                if n < PAGE {
                    break;
                }
            }
            report.tables.push((table.name, copied));
        }
        if let Some(sql) = DB::AFTER_COPY {
            sqlx::query(sql).execute(&mut *tx).await.map_err(db::<DB>)?;
        }
        tx.commit().await.map_err(db::<DB>)?;
        Ok(report)
    }
}
