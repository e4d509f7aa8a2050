//! The store logic both backends share, written once over sqlx's `Database`: every
//! query is plain SQL that means the same on SQLite and PostgreSQL (numbered `$n`
//! parameters, `CASE` instead of boolean arithmetic, `string_agg`), over the same
//! tables and columns. What differs — opening, the write lock, the chain head,
//! error words, live updates — each backend says through [`Backend`].

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::migrate::{Migrate, MigrateError, Migration, MigrationType, Migrator};
use sqlx::{
    AssertSqlSafe, ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool,
    QueryBuilder, Row, SqlSafeStr, Transaction, Type,
};
use tokio::sync::{OnceCell, watch};

use super::codec::{self, AuditColumns, Current, from_ms, ms, observe_order, risk_rank};
use super::copy::{Cell, ColumnKind, CopyReport, TABLES, Table};
use super::ingest_plan::{self, Known, Plan, RecordKey, StoredOperation};
use super::sql::{held_states_sql, order_by, push_filter};
use super::{
    IngestMode, IngestReport, Live, OperationFilter, Page, QueueCounts, SortOrder, Store,
    StoreError,
};
use crate::core::audit::{AuditDraft, AuditRow, ChainStatus, ChainVerifier, seal};
use crate::core::ids::{OperationId, Sha256};
use crate::core::model::{
    Attempt, ChildLink, Dataset, Item, Observation, Operation, OperationDetail, OperationRow,
    Proposal, Role, State,
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
}

impl<DB: Database> Clone for SqlStore<DB> {
    fn clone(&self) -> Self {
        SqlStore {
            pool: self.pool.clone(),
            location: self.location.clone(),
            live: Arc::clone(&self.live),
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

/// The audit row of a wire batch that created an operation or added records to it.
fn ingest_draft(
    history: &ingest_plan::History,
    by: &str,
    now: DateTime<Utc>,
) -> Option<AuditDraft> {
    let (action, to, rationale, at) = match history.created {
        Some((state, at)) => ("ingest", Some(state), "created from wire format v1", at),
        None if !history.evidence.is_empty() => {
            ("record", None, "records added from wire format v1", now)
        }
        None => return None,
    };
    Some(AuditDraft {
        operation: history.operation.clone(),
        action: action.into(),
        from: None,
        to,
        by: by.to_owned(),
        role: Role::System,
        policy: None,
        on_behalf_of: None,
        rationale: Some(rationale.into()),
        evidence: history.evidence.clone(),
        at,
    })
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

    /// Seals `draft` after the head and inserts it; the head moves on.
    async fn append(
        conn: &mut DB::Connection,
        head: &mut Head,
        draft: AuditDraft,
    ) -> Result<AuditRow, StoreError> {
        let row = seal(&head.hash, head.seq + 1, draft);
        let c = AuditColumns::from_row(&row);
        sqlx::query(
            "INSERT INTO audit (seq, operation, action, from_state, to_state, by_identity, role, \
             policy, on_behalf_of, rationale, evidence, at, prev_hash, hash) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
        )
        .bind(c.seq)
        .bind(c.operation)
        .bind(c.action)
        .bind(c.from_state)
        .bind(c.to_state)
        .bind(c.by_identity)
        .bind(c.role)
        .bind(c.policy)
        .bind(c.on_behalf_of)
        .bind(c.rationale)
        .bind(c.evidence)
        .bind(c.at)
        .bind(c.prev_hash)
        .bind(c.hash)
        .execute(&mut *conn)
        .await
        .map_err(db::<DB>)?;
        head.seq = row.seq;
        head.hash = row.hash.clone();
        Ok(row)
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

    /// Inserts a new operation in `state`.
    async fn insert_operation(
        conn: &mut DB::Connection,
        op: &Operation,
        state: State,
        state_since: DateTime<Utc>,
        record_hash: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO operations (id, tenant, tool, owner, state, risk_rank, failure_mode, target, \
             payload_hash, idempotency_key, business_key, correlation_id, parent, max_attempts, \
             deadline_ms, created_ms, state_since_ms, next_observation_ms, observe_order, queued, \
             version, wire, record_hash) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
             $18, $19, 0, 1, $20, $21)",
        )
        .bind(op.id.as_str())
        .bind(&op.tenant)
        .bind(&op.tool)
        .bind(&op.owner)
        .bind(state.as_str())
        .bind(risk_rank(op.risk))
        .bind(op.failure_mode.map(|m| m.as_str()))
        .bind(&op.target)
        .bind(op.payload_hash.as_str())
        .bind(&op.idempotency_key)
        .bind(&op.business_key)
        .bind(&op.correlation_id)
        .bind(op.parent.as_ref().map(OperationId::as_str))
        .bind(op.max_attempts.map(i64::from))
        .bind(op.deadline.map(ms))
        .bind(ms(op.created_at))
        .bind(ms(state_since))
        .bind(op.next_observation_at.map(ms))
        .bind(observe_order(op.next_observation_at))
        .bind(codec::wire_of_operation(op))
        .bind(record_hash)
        .execute(&mut *conn)
        .await
        .map_err(db::<DB>)?;
        for dep in &op.depends_on {
            sqlx::query(
                "INSERT INTO dependencies (operation, depends_on) VALUES ($1, $2) \
                 ON CONFLICT DO NOTHING",
            )
            .bind(op.id.as_str())
            .bind(dep.as_str())
            .execute(&mut *conn)
            .await
            .map_err(db::<DB>)?;
        }
        Ok(())
    }

    async fn insert_attempt(
        conn: &mut DB::Connection,
        attempt: &Attempt,
        hash: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO attempts (id, operation, seq, kind, provider_request_id, wire, record_hash) \
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&attempt.id)
        .bind(attempt.operation.as_str())
        .bind(i64::from(attempt.seq))
        .bind(attempt.kind.as_str())
        .bind(&attempt.provider_request_id)
        .bind(codec::wire_of_attempt(attempt))
        .bind(hash)
        .execute(&mut *conn)
        .await
        .map_err(db::<DB>)?;
        Ok(())
    }

    async fn insert_observation(
        conn: &mut DB::Connection,
        observation: &Observation,
        hash: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO observations (id, operation, observed_ms, wire, record_hash) \
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(&observation.id)
        .bind(observation.operation.as_str())
        .bind(ms(observation.observed_at))
        .bind(codec::wire_of_observation(observation))
        .bind(hash)
        .execute(&mut *conn)
        .await
        .map_err(db::<DB>)?;
        Ok(())
    }

    async fn insert_item(
        conn: &mut DB::Connection,
        item: &Item,
        hash: &str,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO items (operation, idx, wire, record_hash) VALUES ($1, $2, $3, $4)",
        )
        .bind(item.operation.as_str())
        .bind(i64::from(item.index))
        .bind(codec::wire_of_item(item))
        .bind(hash)
        .execute(&mut *conn)
        .await
        .map_err(db::<DB>)?;
        Ok(())
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

    /// The `record_hash` a key is stored under, if any.
    async fn stored_hash(
        conn: &mut DB::Connection,
        key: &RecordKey,
    ) -> Result<Option<String>, StoreError> {
        let query = match key {
            RecordKey::Contract(tool) => {
                sqlx::query("SELECT record_hash FROM contracts WHERE tool = $1").bind(tool.clone())
            }
            RecordKey::Attempt(id) => {
                sqlx::query("SELECT record_hash FROM attempts WHERE id = $1").bind(id.clone())
            }
            RecordKey::Observation(id) => {
                sqlx::query("SELECT record_hash FROM observations WHERE id = $1").bind(id.clone())
            }
            RecordKey::Expectation(op) => {
                sqlx::query("SELECT record_hash FROM expectations WHERE operation = $1")
                    .bind(op.clone())
            }
            RecordKey::Item(op, index) => {
                sqlx::query("SELECT record_hash FROM items WHERE operation = $1 AND idx = $2")
                    .bind(op.clone())
                    .bind(i64::from(*index))
            }
            RecordKey::Transition(op, from, to, at) => sqlx::query(
                "SELECT record_hash FROM wire_transitions \
                 WHERE operation = $1 AND from_state = $2 AND to_state = $3 AND at_ms = $4",
            )
            .bind(op.clone())
            .bind(from.as_str())
            .bind(to.as_str())
            .bind(*at),
            RecordKey::Operation(_) => return Ok(None),
        };
        match query.fetch_optional(&mut *conn).await.map_err(db::<DB>)? {
            Some(row) => Ok(Some(row.try_get("record_hash").map_err(db::<DB>)?)),
            None => Ok(None),
        }
    }

    /// Looks up what the store holds under the batch's keys.
    async fn known(conn: &mut DB::Connection, records: &[Numbered]) -> Result<Known, StoreError> {
        let wanted = ingest_plan::lookups(records);
        let mut known = Known::default();
        for id in &wanted.operations {
            let row = sqlx::query("SELECT state, record_hash FROM operations WHERE id = $1")
                .bind(id)
                .fetch_optional(&mut *conn)
                .await
                .map_err(db::<DB>)?;
            if let Some(row) = row {
                let state: String = row.try_get("state").map_err(db::<DB>)?;
                known.operations.insert(
                    id.clone(),
                    StoredOperation {
                        state: codec::parse_state(&state)?,
                        record_hash: row.try_get("record_hash").map_err(db::<DB>)?,
                    },
                );
            }
        }
        for tool in &wanted.contracts {
            let found = sqlx::query("SELECT tool FROM contracts WHERE tool = $1")
                .bind(tool)
                .fetch_optional(&mut *conn)
                .await
                .map_err(db::<DB>)?;
            if found.is_some() {
                known.contracts.insert(tool.clone());
            }
        }
        for key in &wanted.keys {
            if let Some(hash) = Self::stored_hash(conn, key).await? {
                if let RecordKey::Contract(tool) = key {
                    known.contracts.insert(tool.clone());
                }
                known.hashes.insert(key.clone(), hash);
            }
        }
        Ok(known)
    }

    /// Writes the new records of a plan.
    async fn write_records(conn: &mut DB::Connection, plan: &Plan) -> Result<(), StoreError> {
        let initial: HashMap<&str, State> = plan
            .histories
            .iter()
            .filter_map(|h| h.created.map(|(state, _)| (h.operation.as_str(), state)))
            .collect();
        for staged in &plan.staged {
            let hash = staged.hash.as_str();
            match &staged.record {
                Record::Contract(c) => {
                    sqlx::query(
                        "INSERT INTO contracts (tool, max_attempts, wire, record_hash) \
                         VALUES ($1, $2, $3, $4)",
                    )
                    .bind(&c.tool)
                    .bind(i64::from(c.max_attempts))
                    .bind(codec::encode(&staged.record))
                    .bind(hash)
                    .execute(&mut *conn)
                    .await
                    .map_err(db::<DB>)?;
                }
                Record::Operation(op) => {
                    let state = initial.get(op.id.as_str()).copied().unwrap_or(op.state);
                    Self::insert_operation(conn, op, state, op.created_at, Some(hash)).await?;
                }
                Record::Attempt(a) => Self::insert_attempt(conn, a, hash).await?,
                Record::Observation(o) => Self::insert_observation(conn, o, hash).await?,
                Record::Item(i) => Self::insert_item(conn, i, hash).await?,
                Record::Expectation(e) => {
                    sqlx::query(
                        "INSERT INTO expectations (operation, wire, record_hash) VALUES ($1, $2, $3)",
                    )
                    .bind(e.operation.as_str())
                    .bind(codec::encode(&staged.record))
                    .bind(hash)
                    .execute(&mut *conn)
                    .await
                    .map_err(db::<DB>)?;
                }
                Record::Transition(t) => {
                    sqlx::query(
                        "INSERT INTO wire_transitions (operation, from_state, to_state, at_ms, record_hash) \
                         VALUES ($1, $2, $3, $4, $5)",
                    )
                    .bind(t.operation.as_str())
                    .bind(t.from.as_str())
                    .bind(t.to.as_str())
                    .bind(ms(t.at))
                    .bind(hash)
                    .execute(&mut *conn)
                    .await
                    .map_err(db::<DB>)?;
                }
            }
        }
        Ok(())
    }

    /// Writes a plan: the new records, each operation's state history and one audit
    /// row per creation, per transition and per batch of records added to an
    /// existing operation.
    async fn write_plan(
        conn: &mut DB::Connection,
        head: &mut Head,
        plan: &Plan,
        by: &str,
        now: DateTime<Utc>,
    ) -> Result<(), StoreError> {
        Self::write_records(conn, plan).await?;
        let mut touched = BTreeSet::new();
        for history in &plan.histories {
            let id = history.operation.clone();
            if let Some(draft) = ingest_draft(history, by, now) {
                Self::append(conn, head, draft).await?;
            }
            for t in &history.transitions {
                Self::append(
                    conn,
                    head,
                    AuditDraft {
                        operation: id.clone(),
                        action: "transition".into(),
                        from: Some(t.from),
                        to: Some(t.to),
                        by: t.by.clone(),
                        role: t.role.unwrap_or(Role::System),
                        policy: None,
                        on_behalf_of: None,
                        rationale: t.reason.clone(),
                        evidence: t.evidence.clone(),
                        at: t.at,
                    },
                )
                .await?;
                sqlx::query(
                    "UPDATE operations SET state = $1, state_since_ms = $2, version = version + 1 \
                     WHERE id = $3",
                )
                .bind(t.to.as_str())
                .bind(ms(t.at))
                .bind(id.as_str())
                .execute(&mut *conn)
                .await
                .map_err(db::<DB>)?;
            }
            touched.insert(id.as_str().to_owned());
        }
        Self::requeue(conn, &touched).await
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
        rows.iter()
            .map(|row| {
                let wire: String = row.try_get("wire").map_err(db::<DB>)?;
                decode(&wire)
            })
            .collect()
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
        let (mut tx, mut head) = self.begin_write().await?;
        let known = Self::known(&mut tx, &records).await?;
        let plan = ingest_plan::plan(&records, &known);
        if mode == IngestMode::DryRun || (mode == IngestMode::Strict && !plan.rejected.is_empty()) {
            tx.rollback().await.map_err(db::<DB>)?;
            return Ok(IngestReport {
                committed: Vec::new(),
                unchanged: plan.unchanged,
                rejected: plan.rejected,
            });
        }
        Self::write_plan(&mut tx, &mut head, &plan, by, now).await?;
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
        let rows = rows
            .iter()
            .map(Self::operation_row)
            .collect::<Result<Vec<_>, _>>()?;

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
        let (mut tx, mut head) = self.begin_write().await?;
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
        for attempt in &commit.attempts {
            let hash = ingest_plan::record_hash(&Record::Attempt(attempt.clone()));
            Self::insert_attempt(&mut tx, attempt, hash.as_str()).await?;
        }
        for observation in &commit.observations {
            let hash = ingest_plan::record_hash(&Record::Observation(observation.clone()));
            Self::insert_observation(&mut tx, observation, hash.as_str()).await?;
        }
        let mut touched = BTreeSet::from([id.clone()]);
        for child in &commit.children {
            Self::insert_operation(&mut tx, child, child.state, commit.audit.at, None).await?;
            touched.insert(child.id.as_str().to_owned());
        }
        for item in &commit.child_items {
            let hash = ingest_plan::record_hash(&Record::Item(item.clone()));
            Self::insert_item(&mut tx, item, hash.as_str()).await?;
        }
        if let Err(refused) = Self::apply_proposals(&mut tx, &commit).await {
            tx.rollback().await.map_err(db::<DB>)?;
            return Err(refused);
        }
        let row = Self::append(&mut tx, &mut head, commit.audit.clone()).await?;
        for draft in child_drafts(&commit) {
            Self::append(&mut tx, &mut head, draft).await?;
        }
        Self::requeue(&mut tx, &touched).await?;
        tx.commit().await.map_err(db::<DB>)?;
        Ok(row)
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
        rows.iter().map(Self::audit_row).collect()
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
        let mut operations = Vec::new();
        for row in sqlx::query(
            "SELECT id, state, owner, next_observation_ms, wire FROM operations ORDER BY id",
        )
        .fetch_all(&self.pool)
        .await
        .map_err(db::<DB>)?
        {
            let wire: String = row.try_get("wire").map_err(db::<DB>)?;
            let state: String = row.try_get("state").map_err(db::<DB>)?;
            let owner: String = row.try_get("owner").map_err(db::<DB>)?;
            operations.push(codec::current_operation(
                &wire,
                Current {
                    state: &state,
                    owner: &owner,
                    next_observation_ms: row.try_get("next_observation_ms").map_err(db::<DB>)?,
                },
            )?);
        }
        let audit = sqlx::query(AssertSqlSafe(format!(
            "SELECT {AUDIT_COLUMNS} FROM audit ORDER BY seq"
        )))
        .fetch_all(&self.pool)
        .await
        .map_err(db::<DB>)?
        .iter()
        .map(Self::audit_row)
        .collect::<Result<Vec<_>, _>>()?;
        Ok(Dataset {
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
