//! The embedded store: one SQLite file in WAL mode. Every write runs in a
//! `BEGIN IMMEDIATE` transaction under a busy timeout, so several consoles and
//! scripts on one host take turns instead of failing with `database is locked`.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use sqlx::migrate::{Migrate, MigrateError, Migration, MigrationType, Migrator};
use sqlx::query_builder::Separated;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow,
    SqliteSynchronous,
};
use sqlx::{AssertSqlSafe, QueryBuilder, Row, SqlSafeStr, Sqlite, SqliteConnection};

use super::codec::{self, AuditColumns, Current, from_ms, ms, observe_order};
use super::ingest_plan::{self, Known, Plan, RecordKey, StoredOperation};
use super::rows::{OperationColumns, RecordColumns, plan_rows};
use super::sql::{held_states_sql, order_by, push_filter};
use super::{
    IngestMode, IngestReport, OperationFilter, Page, QueueCounts, SortOrder, Store, StoreError,
};
use crate::core::access::{self, GrantChange, GrantOp};
use crate::core::audit::{AuditDraft, AuditRow, ChainStatus, ChainVerifier, genesis, seal};
use crate::core::ids::{OperationId, Sha256};
use crate::core::model::{
    ChildLink, Dataset, Grant, OperationDetail, OperationRow, Proposal, Role,
};
use crate::core::rules::Commit;
use crate::wire::{Numbered, Record};

/// Migrations compiled into the binary, one file each under `migrations/sqlite`.
const MIGRATIONS: &[(i64, &str, &str)] = &[(
    20261101000001,
    "initial",
    include_str!("../../migrations/sqlite/20261101000001_initial.sql"),
)];

/// How long a writer waits for another to finish before reporting the store busy.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The SQLite operations store.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    path: PathBuf,
}

/// Maps a driver error into words a reviewer can act on.
pub(crate) fn db(error: sqlx::Error) -> StoreError {
    if let sqlx::Error::Database(e) = &error {
        let message = e.message();
        if message.contains("database is locked") || message.contains("database is busy") {
            return StoreError::Busy;
        }
        if message.contains("append-only") {
            return StoreError::Other(
                "the audit log is append-only; the database refused the change".into(),
            );
        }
    }
    tracing::error!(%error, "sqlite error");
    StoreError::Other(format!("the database reported: {error}"))
}

fn migrator() -> Migrator {
    let migrations = MIGRATIONS
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

/// The newest schema version this build knows.
pub fn known_schema() -> i64 {
    MIGRATIONS.iter().map(|m| m.0).max().unwrap_or(0)
}

impl SqliteStore {
    /// Opens the store at `path`, creating and migrating it on first use. A store
    /// written by a newer holdfast is refused.
    pub async fn open(path: &Path) -> Result<SqliteStore, StoreError> {
        let location = path.display().to_string();
        let open_error = |reason: String| StoreError::Open {
            location: location.clone(),
            reason,
        };
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .map_err(|e| open_error(format!("cannot create {}: {e}", dir.display())))?;
        }
        let options = SqliteConnectOptions::from_str("sqlite:")
            .map_err(|e| open_error(e.to_string()))?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(false);
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .acquire_timeout(BUSY_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(|e| open_error(e.to_string()))?;
        let store = SqliteStore {
            pool,
            path: path.to_owned(),
        };
        store.migrate().await?;
        Ok(store)
    }

    async fn migrate(&self) -> Result<(), StoreError> {
        let mut conn = self.pool.acquire().await.map_err(db)?;
        let newest: Option<i64> = match conn.list_applied_migrations("_sqlx_migrations").await {
            Ok(applied) => applied.iter().map(|m| m.version).max(),
            Err(_) => None,
        };
        if let Some(found) = newest.filter(|v| *v > known_schema()) {
            return Err(StoreError::TooNew {
                location: self.location(),
                found,
                known: known_schema(),
            });
        }
        drop(conn);
        migrator().run(&self.pool).await.map_err(|e| match e {
            MigrateError::VersionMissing(found) => StoreError::TooNew {
                location: self.location(),
                found,
                known: known_schema(),
            },
            other => StoreError::Open {
                location: self.location(),
                reason: format!("migration failed: {other}"),
            },
        })
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The pool, for tests that must reach behind the store (tamper checks).
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, Sqlite>, StoreError> {
        self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(db)
    }
}

/// The chain head inside a write transaction.
struct Head {
    seq: i64,
    hash: Sha256,
}

async fn head(conn: &mut SqliteConnection) -> Result<Head, StoreError> {
    let row = sqlx::query("SELECT seq, hash FROM audit ORDER BY seq DESC LIMIT 1")
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
    match row {
        None => Ok(Head {
            seq: 0,
            hash: genesis(),
        }),
        Some(row) => {
            let hash: String = row.try_get("hash").map_err(db)?;
            Ok(Head {
                seq: row.try_get("seq").map_err(db)?,
                hash: Sha256::parse(&hash)
                    .map_err(|_| codec::corrupt("the audit head hash".into()))?,
            })
        }
    }
}

fn audit_row(row: &SqliteRow) -> Result<AuditRow, StoreError> {
    AuditColumns {
        seq: row.try_get("seq").map_err(db)?,
        operation: row.try_get("operation").map_err(db)?,
        action: row.try_get("action").map_err(db)?,
        from_state: row.try_get("from_state").map_err(db)?,
        to_state: row.try_get("to_state").map_err(db)?,
        by_identity: row.try_get("by_identity").map_err(db)?,
        role: row.try_get("role").map_err(db)?,
        policy: row.try_get("policy").map_err(db)?,
        on_behalf_of: row.try_get("on_behalf_of").map_err(db)?,
        rationale: row.try_get("rationale").map_err(db)?,
        evidence: row.try_get("evidence").map_err(db)?,
        at: row.try_get("at").map_err(db)?,
        prev_hash: row.try_get("prev_hash").map_err(db)?,
        hash: row.try_get("hash").map_err(db)?,
    }
    .into_row()
}

const AUDIT_COLUMNS: &str = "seq, operation, action, from_state, to_state, by_identity, role, \
     policy, on_behalf_of, rationale, evidence, at, prev_hash, hash";

/// Rows per multi-row statement: well under SQLite's bound-parameter limit.
const PARAMS_PER_STATEMENT: usize = 30_000;

/// Inserts rows in multi-row statements; `push` binds one row's values.
async fn insert_many<T>(
    conn: &mut SqliteConnection,
    prefix: &'static str,
    columns: usize,
    rows: &[T],
    push: fn(&mut Separated<'_, Sqlite, &'static str>, &T),
) -> Result<(), StoreError> {
    for part in rows.chunks((PARAMS_PER_STATEMENT / columns).max(1)) {
        let mut qb: QueryBuilder<Sqlite> = QueryBuilder::new(prefix);
        qb.push_values(part, |mut b, row| push(&mut b, row));
        qb.build().execute(&mut *conn).await.map_err(db)?;
    }
    Ok(())
}

/// Runs `SELECT … WHERE column IN (…)` over `keys` in chunks, returning every row.
async fn select_in(
    conn: &mut SqliteConnection,
    prefix: &'static str,
    keys: &[String],
) -> Result<Vec<SqliteRow>, StoreError> {
    let mut out = Vec::new();
    for part in keys.chunks(PARAMS_PER_STATEMENT) {
        let mut qb: QueryBuilder<Sqlite> = QueryBuilder::new(prefix);
        qb.push(" (");
        let mut list = qb.separated(", ");
        for key in part {
            list.push_bind(key.clone());
        }
        list.push_unseparated(")");
        out.extend(qb.build().fetch_all(&mut *conn).await.map_err(db)?);
    }
    Ok(out)
}

async fn insert_operations(
    conn: &mut SqliteConnection,
    rows: &[OperationColumns],
) -> Result<(), StoreError> {
    insert_many(
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
    insert_many(
        conn,
        "INSERT OR IGNORE INTO dependencies (operation, depends_on) ",
        2,
        &deps,
        |b, (op, dep)| {
            b.push_bind(op.clone()).push_bind(dep.clone());
        },
    )
    .await
}

async fn insert_records(
    conn: &mut SqliteConnection,
    attempts: &[RecordColumns],
    observations: &[RecordColumns],
    items: &[RecordColumns],
) -> Result<(), StoreError> {
    insert_many(
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
    insert_many(
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
    insert_many(
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

async fn insert_audit(conn: &mut SqliteConnection, rows: &[AuditRow]) -> Result<(), StoreError> {
    let columns: Vec<AuditColumns> = rows.iter().map(AuditColumns::from_row).collect();
    insert_many(
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
async fn requeue(conn: &mut SqliteConnection, ids: &BTreeSet<String>) -> Result<(), StoreError> {
    let held = held_states_sql();
    let sql = format!(
        "UPDATE operations SET queued = (state IN ({held}) OR EXISTS (\
           SELECT 1 FROM dependencies d JOIN operations p ON p.id = d.depends_on \
           WHERE d.operation = operations.id AND p.state IN ({held}))) \
         WHERE id = ? OR id IN (SELECT operation FROM dependencies WHERE depends_on = ?)"
    );
    for id in ids {
        sqlx::query(AssertSqlSafe(sql.as_str()))
            .bind(id)
            .bind(id)
            .execute(&mut *conn)
            .await
            .map_err(db)?;
    }
    Ok(())
}

fn text(row: &SqliteRow, column: &str) -> Result<String, StoreError> {
    row.try_get(column).map_err(db)
}

/// Looks up what the store holds under the batch's keys, a few hundred keys per
/// query.
async fn known(conn: &mut SqliteConnection, records: &[Numbered]) -> Result<Known, StoreError> {
    let wanted = ingest_plan::lookups(records);
    let mut known = Known::default();
    let ops: Vec<String> = wanted.operations.iter().cloned().collect();
    for row in select_in(
        conn,
        "SELECT id, state, record_hash FROM operations WHERE id IN",
        &ops,
    )
    .await?
    {
        known.operations.insert(
            text(&row, "id")?,
            StoredOperation {
                state: codec::parse_state(&text(&row, "state")?)?,
                record_hash: row.try_get("record_hash").map_err(db)?,
            },
        );
    }
    let mut tools: BTreeSet<String> = wanted.contracts.clone();
    let (mut attempts, mut observations, mut keyed_ops) = (Vec::new(), Vec::new(), BTreeSet::new());
    for key in &wanted.keys {
        match key {
            RecordKey::Contract(tool) => {
                tools.insert(tool.clone());
            }
            RecordKey::Attempt(id) => attempts.push(id.clone()),
            RecordKey::Observation(id) => observations.push(id.clone()),
            RecordKey::Expectation(op) | RecordKey::Item(op, _) | RecordKey::Transition(op, ..) => {
                keyed_ops.insert(op.clone());
            }
            RecordKey::Operation(_) => {}
        }
    }
    let tools: Vec<String> = tools.into_iter().collect();
    for row in select_in(
        conn,
        "SELECT tool, record_hash FROM contracts WHERE tool IN",
        &tools,
    )
    .await?
    {
        let tool = text(&row, "tool")?;
        known.contracts.insert(tool.clone());
        known
            .hashes
            .insert(RecordKey::Contract(tool), text(&row, "record_hash")?);
    }
    for row in select_in(
        conn,
        "SELECT id, record_hash FROM attempts WHERE id IN",
        &attempts,
    )
    .await?
    {
        known.hashes.insert(
            RecordKey::Attempt(text(&row, "id")?),
            text(&row, "record_hash")?,
        );
    }
    for row in select_in(
        conn,
        "SELECT id, record_hash FROM observations WHERE id IN",
        &observations,
    )
    .await?
    {
        known.hashes.insert(
            RecordKey::Observation(text(&row, "id")?),
            text(&row, "record_hash")?,
        );
    }
    let keyed_ops: Vec<String> = keyed_ops.into_iter().collect();
    for row in select_in(
        conn,
        "SELECT operation, record_hash FROM expectations WHERE operation IN",
        &keyed_ops,
    )
    .await?
    {
        known.hashes.insert(
            RecordKey::Expectation(text(&row, "operation")?),
            text(&row, "record_hash")?,
        );
    }
    for row in select_in(
        conn,
        "SELECT operation, idx, record_hash FROM items WHERE operation IN",
        &keyed_ops,
    )
    .await?
    {
        let index: i64 = row.try_get("idx").map_err(db)?;
        let key = RecordKey::Item(
            text(&row, "operation")?,
            u32::try_from(index).unwrap_or(u32::MAX),
        );
        known.hashes.insert(key, text(&row, "record_hash")?);
    }
    for row in select_in(
        conn,
        "SELECT operation, from_state, to_state, at_ms, record_hash FROM wire_transitions WHERE operation IN",
        &keyed_ops,
    )
    .await?
    {
        let key = RecordKey::Transition(
            text(&row, "operation")?,
            codec::parse_state(&text(&row, "from_state")?)?,
            codec::parse_state(&text(&row, "to_state")?)?,
            row.try_get("at_ms").map_err(db)?,
        );
        known.hashes.insert(key, text(&row, "record_hash")?);
    }
    Ok(known)
}

/// Writes a plan: the new records, each operation's state history and one audit row
/// per creation, per transition and per batch of records added to an existing
/// operation, in multi-row statements.
async fn write_plan(
    conn: &mut SqliteConnection,
    known: &Known,
    plan: &Plan,
    by: &str,
    now: DateTime<Utc>,
) -> Result<(), StoreError> {
    let head = head(conn).await?;
    let rows = plan_rows(known, plan, by, now, (head.seq, &head.hash));
    for contract in &rows.contracts {
        sqlx::query(
            "INSERT INTO contracts (tool, max_attempts, wire, record_hash) VALUES (?, ?, ?, ?)",
        )
        .bind(&contract.key)
        .bind(contract.order)
        .bind(&contract.wire)
        .bind(&contract.hash)
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    }
    insert_operations(conn, &rows.operations).await?;
    insert_records(conn, &rows.attempts, &rows.observations, &rows.items).await?;
    insert_many(
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
    insert_many(
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
            "UPDATE operations SET state = ?, state_since_ms = ?, version = version + ? WHERE id = ?",
        )
        .bind(moved.state.as_str())
        .bind(ms(moved.since))
        .bind(moved.steps)
        .bind(&moved.id)
        .execute(&mut *conn)
        .await
        .map_err(db)?;
    }
    insert_audit(conn, &rows.audit).await?;
    let moved: BTreeSet<String> = rows.moved.iter().map(|m| m.id.clone()).collect();
    requeue(conn, &moved).await
}

/// The columns of a listing row, before the per-backend subqueries.
fn row_select() -> String {
    let held = held_states_sql();
    format!(
        "SELECT o.id, o.state, o.owner, o.next_observation_ms, o.version, o.state_since_ms, o.wire, \
         COALESCE(o.max_attempts, c.max_attempts) AS max_attempts, \
         (SELECT count(*) FROM attempts a WHERE a.operation = o.id AND a.kind = 'request') AS used, \
         (SELECT group_concat(d.depends_on, ' ') FROM dependencies d \
            JOIN operations p ON p.id = d.depends_on \
            WHERE d.operation = o.id AND p.state IN ({held})) AS held_deps, \
         EXISTS (SELECT 1 FROM proposals pr WHERE pr.operation = o.id AND pr.status = 'pending') AS pending \
         FROM operations o LEFT JOIN contracts c ON c.tool = o.tool WHERE 1 = 1"
    )
}

fn operation_row(row: &SqliteRow) -> Result<OperationRow, StoreError> {
    let wire: String = row.try_get("wire").map_err(db)?;
    let state: String = row.try_get("state").map_err(db)?;
    let owner: String = row.try_get("owner").map_err(db)?;
    let operation = codec::current_operation(
        &wire,
        Current {
            state: &state,
            owner: &owner,
            next_observation_ms: row.try_get("next_observation_ms").map_err(db)?,
        },
    )?;
    let held_deps: Option<String> = row.try_get("held_deps").map_err(db)?;
    let held_dependencies = held_deps
        .unwrap_or_default()
        .split_whitespace()
        .map(codec::parse_id)
        .collect::<Result<Vec<_>, _>>()?;
    let used: i64 = row.try_get("used").map_err(db)?;
    let max: Option<i64> = row.try_get("max_attempts").map_err(db)?;
    Ok(OperationRow {
        operation,
        version: row.try_get("version").map_err(db)?,
        attempts_used: u32::try_from(used).unwrap_or(u32::MAX),
        max_attempts: max.and_then(|m| u32::try_from(m).ok()),
        state_since: from_ms(row.try_get("state_since_ms").map_err(db)?)?,
        held_dependencies,
        pending_proposal: row.try_get::<bool, _>("pending").map_err(db)?,
    })
}

fn proposal(row: &SqliteRow) -> Result<Proposal, StoreError> {
    let at: String = row.try_get("proposed_at").map_err(db)?;
    let operation: String = row.try_get("operation").map_err(db)?;
    Ok(Proposal {
        id: row.try_get("id").map_err(db)?,
        operation: codec::parse_id(&operation)?,
        action: row.try_get("action").map_err(db)?,
        proposed_by: row.try_get("proposed_by").map_err(db)?,
        proposed_at: crate::core::clock::parse_instant(&at)
            .map_err(|_| codec::corrupt(format!("proposal time {at:?}")))?,
        rationale: row.try_get("rationale").map_err(db)?,
        status: row.try_get("status").map_err(db)?,
    })
}

/// Fetches `SELECT wire …` rows and decodes each.
async fn wires<T>(
    conn: &mut SqliteConnection,
    sql: &'static str,
    bind: &str,
    decode: fn(&str) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let rows = sqlx::query(sql)
        .bind(bind)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
    rows.iter()
        .map(|row| {
            let wire: String = row.try_get("wire").map_err(db)?;
            decode(&wire)
        })
        .collect()
}

async fn load_row(
    conn: &mut SqliteConnection,
    id: &str,
) -> Result<Option<OperationRow>, StoreError> {
    let sql = format!("{} AND o.id = ?", row_select());
    let row = sqlx::query(AssertSqlSafe(sql))
        .bind(id)
        .fetch_optional(&mut *conn)
        .await
        .map_err(db)?;
    row.as_ref().map(operation_row).transpose()
}

/// Every grant, in a stable order.
async fn all_grants(conn: &mut SqliteConnection) -> Result<Vec<Grant>, StoreError> {
    let rows = sqlx::query(
        "SELECT identity, role, tenant, granted_by, granted_at FROM grants \
         ORDER BY tenant, identity, role",
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(db)?;
    rows.iter()
        .map(|row| {
            let role: String = row.try_get("role").map_err(db)?;
            let at: String = row.try_get("granted_at").map_err(db)?;
            Ok(Grant {
                identity: row.try_get("identity").map_err(db)?,
                role: Role::parse(&role)
                    .ok_or_else(|| codec::corrupt(format!("grant role {role:?}")))?,
                tenant: row.try_get("tenant").map_err(db)?,
                granted_by: row.try_get("granted_by").map_err(db)?,
                granted_at: crate::core::clock::parse_instant(&at)
                    .map_err(|_| codec::corrupt(format!("grant time {at:?}")))?,
            })
        })
        .collect()
}

#[async_trait]
impl Store for SqliteStore {
    fn location(&self) -> String {
        self.path.display().to_string()
    }

    async fn ingest(
        &self,
        records: Vec<Numbered>,
        mode: IngestMode,
        by: &str,
        now: DateTime<Utc>,
    ) -> Result<IngestReport, StoreError> {
        let mut tx = self.begin_write().await?;
        let known = known(&mut tx, &records).await?;
        let plan = ingest_plan::plan(&records, &known);
        if mode == IngestMode::DryRun || (mode == IngestMode::Strict && !plan.rejected.is_empty()) {
            tx.rollback().await.map_err(db)?;
            return Ok(IngestReport {
                committed: Vec::new(),
                unchanged: plan.unchanged,
                rejected: plan.rejected,
            });
        }
        write_plan(&mut tx, &known, &plan, by, now).await?;
        tx.commit().await.map_err(db)?;
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
        let mut conn = self.pool.acquire().await.map_err(db)?;
        let mut qb: QueryBuilder<Sqlite> = QueryBuilder::new(row_select());
        push_filter(&mut qb, filter);
        qb.push(order_by(sort));
        qb.push(" LIMIT ");
        qb.push_bind(i64::try_from(page.limit).unwrap_or(i64::MAX));
        qb.push(" OFFSET ");
        qb.push_bind(i64::try_from(page.offset).unwrap_or(i64::MAX));
        let rows = qb.build().fetch_all(&mut *conn).await.map_err(db)?;
        let rows = rows
            .iter()
            .map(operation_row)
            .collect::<Result<Vec<_>, _>>()?;

        let mut count: QueryBuilder<Sqlite> =
            QueryBuilder::new("SELECT count(*) AS n FROM operations o WHERE 1 = 1");
        push_filter(&mut count, filter);
        let total: i64 = count
            .build()
            .fetch_one(&mut *conn)
            .await
            .map_err(db)?
            .try_get("n")
            .map_err(db)?;
        Ok((rows, u64::try_from(total).unwrap_or(0)))
    }

    async fn counts(
        &self,
        filter: &OperationFilter,
        now: DateTime<Utc>,
    ) -> Result<QueueCounts, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(db)?;
        let held = held_states_sql();
        let mut by_state: QueryBuilder<Sqlite> = QueryBuilder::new(
            "SELECT o.state AS state, count(*) AS n FROM operations o WHERE 1 = 1",
        );
        push_filter(&mut by_state, filter);
        by_state.push(" GROUP BY o.state");
        let mut counts = QueueCounts::default();
        for row in by_state.build().fetch_all(&mut *conn).await.map_err(db)? {
            let state: String = row.try_get("state").map_err(db)?;
            let n: i64 = row.try_get("n").map_err(db)?;
            counts
                .by_state
                .push((codec::parse_state(&state)?, u64::try_from(n).unwrap_or(0)));
        }
        counts.by_state.sort();

        let mut sums: QueryBuilder<Sqlite> = QueryBuilder::new(
            "SELECT \
               COALESCE(SUM(o.queued = 1 AND o.next_observation_ms IS NOT NULL AND o.next_observation_ms <= ",
        );
        sums.push_bind(ms(now));
        sums.push(format!(
            "), 0) AS overdue, \
               COALESCE(SUM(o.queued = 1 AND o.state NOT IN ({held})), 0) AS by_dependency, \
               COALESCE(SUM(EXISTS (SELECT 1 FROM proposals pr WHERE pr.operation = o.id AND pr.status = 'pending')), 0) AS pending \
             FROM operations o WHERE 1 = 1"
        ));
        push_filter(&mut sums, filter);
        let row = sums.build().fetch_one(&mut *conn).await.map_err(db)?;
        let get = |name: &str| -> Result<u64, StoreError> {
            let n: i64 = row.try_get(name).map_err(db)?;
            Ok(u64::try_from(n).unwrap_or(0))
        };
        counts.overdue = get("overdue")?;
        counts.held_by_dependency = get("by_dependency")?;
        counts.pending_proposals = get("pending")?;
        Ok(counts)
    }

    async fn detail(&self, id: &OperationId) -> Result<OperationDetail, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(db)?;
        let row = load_row(&mut conn, id.as_str())
            .await?
            .ok_or_else(|| StoreError::NotFound(id.clone()))?;
        let op = &row.operation;
        let contract = sqlx::query("SELECT wire FROM contracts WHERE tool = ?")
            .bind(&op.tool)
            .fetch_optional(&mut *conn)
            .await
            .map_err(db)?
            .map(|r| -> Result<_, StoreError> {
                let wire: String = r.try_get("wire").map_err(db)?;
                codec::contract(&wire)
            })
            .transpose()?;
        let key = id.as_str();
        let attempts = wires(
            &mut conn,
            "SELECT wire FROM attempts WHERE operation = ? ORDER BY seq, id",
            key,
            codec::attempt,
        )
        .await?;
        let items = wires(
            &mut conn,
            "SELECT wire FROM items WHERE operation = ? ORDER BY idx",
            key,
            codec::item,
        )
        .await?;
        let observations = wires(
            &mut conn,
            "SELECT wire FROM observations WHERE operation = ? ORDER BY observed_ms, id",
            key,
            codec::observation,
        )
        .await?;
        let expectation = wires(
            &mut conn,
            "SELECT wire FROM expectations WHERE operation = ?",
            key,
            codec::expectation,
        )
        .await?
        .pop();
        let audit = sqlx::query(AssertSqlSafe(format!(
            "SELECT {AUDIT_COLUMNS} FROM audit WHERE operation = ? ORDER BY seq"
        )))
        .bind(key)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?
        .iter()
        .map(audit_row)
        .collect::<Result<Vec<_>, _>>()?;

        let mut children = Vec::new();
        let child_rows = sqlx::query(
            "SELECT id, state, wire FROM operations WHERE parent = ? ORDER BY created_ms, id",
        )
        .bind(key)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
        for child in &child_rows {
            let child_id: String = child.try_get("id").map_err(db)?;
            let state: String = child.try_get("state").map_err(db)?;
            let wire: String = child.try_get("wire").map_err(db)?;
            let record = codec::operation(&wire)?;
            let Some(relation) = record.relation else {
                continue;
            };
            children.push(ChildLink {
                id: codec::parse_id(&child_id)?,
                relation,
                state: codec::parse_state(&state)?,
                items: wires(
                    &mut conn,
                    "SELECT wire FROM items WHERE operation = ? ORDER BY idx",
                    &child_id,
                    codec::item,
                )
                .await?,
            });
        }

        let mut dependencies = Vec::new();
        for dep in &op.depends_on {
            let state = sqlx::query("SELECT state FROM operations WHERE id = ?")
                .bind(dep.as_str())
                .fetch_optional(&mut *conn)
                .await
                .map_err(db)?;
            if let Some(state) = state {
                let state: String = state.try_get("state").map_err(db)?;
                dependencies.push((dep.clone(), codec::parse_state(&state)?));
            }
        }

        let proposals = sqlx::query(
            "SELECT id, operation, action, proposed_by, proposed_at, rationale, status \
             FROM proposals WHERE operation = ? ORDER BY id",
        )
        .bind(key)
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?
        .iter()
        .map(proposal)
        .collect::<Result<Vec<_>, _>>()?;

        let mut key_conflicts = Vec::new();
        if let Some(idem) = &op.idempotency_key {
            let rows = sqlx::query(
                "SELECT id FROM operations WHERE tenant = ? AND idempotency_key = ? \
                 AND payload_hash <> ? AND id <> ? ORDER BY id",
            )
            .bind(&op.tenant)
            .bind(idem)
            .bind(op.payload_hash.as_str())
            .bind(key)
            .fetch_all(&mut *conn)
            .await
            .map_err(db)?;
            for r in rows {
                let other: String = r.try_get("id").map_err(db)?;
                key_conflicts.push(codec::parse_id(&other)?);
            }
        }

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
        let mut tx = self.begin_write().await?;
        let id = commit.operation.as_str().to_owned();
        let current = sqlx::query("SELECT version, state FROM operations WHERE id = ?")
            .bind(&id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?
            .ok_or_else(|| StoreError::NotFound(commit.operation.clone()))?;
        let version: i64 = current.try_get("version").map_err(db)?;
        if version != commit.expected_version {
            let last = sqlx::query(
                "SELECT by_identity, at FROM audit WHERE operation = ? ORDER BY seq DESC LIMIT 1",
            )
            .bind(&id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db)?;
            let (by, at) = match last {
                Some(row) => {
                    let by: String = row.try_get("by_identity").map_err(db)?;
                    let at: String = row.try_get("at").map_err(db)?;
                    (
                        by,
                        crate::core::clock::parse_instant(&at).unwrap_or_default(),
                    )
                }
                None => ("unknown".to_owned(), DateTime::<Utc>::default()),
            };
            tx.rollback().await.map_err(db)?;
            return Err(StoreError::Conflict {
                id: commit.operation,
                expected: commit.expected_version,
                current: version,
                by,
                at: at.with_timezone(&Utc),
            });
        }
        let at = commit.audit.at;
        if let Some(state) = commit.new_state {
            sqlx::query("UPDATE operations SET state = ?, state_since_ms = ? WHERE id = ?")
                .bind(state.as_str())
                .bind(ms(at))
                .bind(&id)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        if let Some(owner) = &commit.new_owner {
            sqlx::query("UPDATE operations SET owner = ? WHERE id = ?")
                .bind(owner)
                .bind(&id)
                .execute(&mut *tx)
                .await
                .map_err(db)?;
        }
        if let Some(next) = commit.new_next_observation_at {
            sqlx::query(
                "UPDATE operations SET next_observation_ms = ?, observe_order = ? WHERE id = ?",
            )
            .bind(next.map(ms))
            .bind(observe_order(next))
            .bind(&id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        }
        sqlx::query("UPDATE operations SET version = version + 1 WHERE id = ?")
            .bind(&id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let attempts: Vec<RecordColumns> = commit
            .attempts
            .iter()
            .map(|a| {
                let record = Record::Attempt(a.clone());
                RecordColumns::of(&record, &ingest_plan::record_hash(&record))
            })
            .collect();
        let observations: Vec<RecordColumns> = commit
            .observations
            .iter()
            .map(|o| {
                let record = Record::Observation(o.clone());
                RecordColumns::of(&record, &ingest_plan::record_hash(&record))
            })
            .collect();
        let items: Vec<RecordColumns> = commit
            .child_items
            .iter()
            .map(|i| {
                let record = Record::Item(i.clone());
                RecordColumns::of(&record, &ingest_plan::record_hash(&record))
            })
            .collect();
        let mut touched = BTreeSet::from([id.clone()]);
        let head = head(&mut tx).await?;
        let mut children_rows = Vec::new();
        let mut children = Vec::new();
        for child in &commit.children {
            children.push(OperationColumns::new(
                child,
                child.state,
                at,
                1,
                child.state.is_held(),
                None,
            ));
            touched.insert(child.id.as_str().to_owned());
            children_rows.push(AuditDraft {
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
                at,
            });
        }
        insert_operations(&mut tx, &children).await?;
        insert_records(&mut tx, &attempts, &observations, &items).await?;
        if let Some(p) = &commit.open_proposal {
            sqlx::query(
                "INSERT INTO proposals (operation, action, proposed_by, proposed_at, rationale, status) \
                 VALUES (?, ?, ?, ?, ?, 'pending')",
            )
            .bind(p.operation.as_str())
            .bind(&p.action)
            .bind(&p.proposed_by)
            .bind(crate::core::clock::format_instant(p.proposed_at))
            .bind(&p.rationale)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        }
        if let Some((proposal, status)) = &commit.close_proposal {
            let closed = sqlx::query(
                "UPDATE proposals SET status = ? WHERE id = ? AND operation = ? AND status = 'pending'",
            )
            .bind(status)
            .bind(proposal)
            .bind(&id)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
            if closed.rows_affected() != 1 {
                tx.rollback().await.map_err(db)?;
                return Err(StoreError::Other(format!(
                    "proposal {proposal} of {id} is no longer pending; reload and decide again"
                )));
            }
        }
        let mut sealed = vec![seal(&head.hash, head.seq + 1, commit.audit.clone())];
        for draft in children_rows {
            let last = &sealed[sealed.len() - 1];
            let next = seal(&last.hash, last.seq + 1, draft);
            sealed.push(next);
        }
        insert_audit(&mut tx, &sealed).await?;
        let row = sealed.swap_remove(0);
        requeue(&mut tx, &touched).await?;
        tx.commit().await.map_err(db)?;
        Ok(row)
    }

    async fn audit(&self, from: i64, limit: u64) -> Result<Vec<AuditRow>, StoreError> {
        let rows = sqlx::query(AssertSqlSafe(format!(
            "SELECT {AUDIT_COLUMNS} FROM audit WHERE seq >= ? ORDER BY seq LIMIT ?"
        )))
        .bind(from)
        .bind(i64::try_from(limit).unwrap_or(i64::MAX))
        .fetch_all(&self.pool)
        .await
        .map_err(db)?;
        rows.iter().map(audit_row).collect()
    }

    async fn head_seq(&self) -> Result<i64, StoreError> {
        let row = sqlx::query("SELECT COALESCE(MAX(seq), 0) AS seq FROM audit")
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
        row.try_get("seq").map_err(db)
    }

    async fn verify(&self) -> Result<ChainStatus, StoreError> {
        const CHUNK: i64 = 10_000;
        let mut verifier = ChainVerifier::default();
        let mut next = 1;
        loop {
            let rows = sqlx::query(AssertSqlSafe(format!(
                "SELECT {AUDIT_COLUMNS} FROM audit WHERE seq >= ? ORDER BY seq LIMIT ?"
            )))
            .bind(next)
            .bind(CHUNK)
            .fetch_all(&self.pool)
            .await
            .map_err(db)?;
            if rows.is_empty() {
                return Ok(verifier.finish());
            }
            for row in &rows {
                let seq: i64 = row.try_get("seq").map_err(db)?;
                let decoded = match audit_row(row) {
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

    async fn grants(&self) -> Result<Vec<Grant>, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(db)?;
        all_grants(&mut conn).await
    }

    async fn change_grant(&self, change: GrantChange) -> Result<AuditRow, StoreError> {
        let mut tx = self.begin_write().await?;
        if access::basis(&all_grants(&mut tx).await?) != change.basis {
            tx.rollback().await.map_err(db)?;
            return Err(StoreError::GrantsChanged);
        }
        let g = &change.grant;
        let query = match change.op {
            GrantOp::Grant => sqlx::query(
                "INSERT INTO grants (identity, role, tenant, granted_by, granted_at) \
                 VALUES (?, ?, ?, ?, ?)",
            )
            .bind(&g.identity)
            .bind(g.role.as_str())
            .bind(&g.tenant)
            .bind(&g.granted_by)
            .bind(crate::core::clock::format_instant(g.granted_at)),
            GrantOp::Revoke => {
                sqlx::query("DELETE FROM grants WHERE identity = ? AND role = ? AND tenant = ?")
                    .bind(&g.identity)
                    .bind(g.role.as_str())
                    .bind(&g.tenant)
            }
        };
        query.execute(&mut *tx).await.map_err(db)?;
        let head = head(&mut tx).await?;
        let row = seal(&head.hash, head.seq + 1, change.audit);
        insert_audit(&mut tx, std::slice::from_ref(&row)).await?;
        tx.commit().await.map_err(db)?;
        Ok(row)
    }

    async fn dataset(&self) -> Result<Dataset, StoreError> {
        let mut conn = self.pool.acquire().await.map_err(db)?;
        let mut data = Dataset::default();
        for row in sqlx::query("SELECT wire FROM contracts ORDER BY tool")
            .fetch_all(&mut *conn)
            .await
            .map_err(db)?
        {
            let wire: String = row.try_get("wire").map_err(db)?;
            data.contracts.push(codec::contract(&wire)?);
        }
        for row in sqlx::query(
            "SELECT id, state, owner, next_observation_ms, wire FROM operations ORDER BY id",
        )
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?
        {
            let wire: String = row.try_get("wire").map_err(db)?;
            let state: String = row.try_get("state").map_err(db)?;
            let owner: String = row.try_get("owner").map_err(db)?;
            data.operations.push(codec::current_operation(
                &wire,
                Current {
                    state: &state,
                    owner: &owner,
                    next_observation_ms: row.try_get("next_observation_ms").map_err(db)?,
                },
            )?);
        }
        let all = |sql: &'static str| sqlx::query(sql).fetch_all(&self.pool);
        for row in all("SELECT wire FROM attempts ORDER BY operation, seq, id")
            .await
            .map_err(db)?
        {
            let wire: String = row.try_get("wire").map_err(db)?;
            data.attempts.push(codec::attempt(&wire)?);
        }
        for row in all("SELECT wire FROM items ORDER BY operation, idx")
            .await
            .map_err(db)?
        {
            let wire: String = row.try_get("wire").map_err(db)?;
            data.items.push(codec::item(&wire)?);
        }
        for row in all("SELECT wire FROM observations ORDER BY operation, observed_ms, id")
            .await
            .map_err(db)?
        {
            let wire: String = row.try_get("wire").map_err(db)?;
            data.observations.push(codec::observation(&wire)?);
        }
        for row in all("SELECT wire FROM expectations ORDER BY operation")
            .await
            .map_err(db)?
        {
            let wire: String = row.try_get("wire").map_err(db)?;
            data.expectations.push(codec::expectation(&wire)?);
        }
        let audit = sqlx::query(AssertSqlSafe(format!(
            "SELECT {AUDIT_COLUMNS} FROM audit ORDER BY seq"
        )))
        .fetch_all(&mut *conn)
        .await
        .map_err(db)?;
        data.audit = audit.iter().map(audit_row).collect::<Result<Vec<_>, _>>()?;
        data.proposals = all(
            "SELECT id, operation, action, proposed_by, proposed_at, rationale, status \
             FROM proposals ORDER BY id",
        )
        .await
        .map_err(db)?
        .iter()
        .map(proposal)
        .collect::<Result<Vec<_>, _>>()?;
        Ok(data)
    }
}
