//! Writing: ingest plans, reviewer commits and grant changes, each in one
//! transaction that reads the chain head first and appends its audit rows.

use std::collections::{BTreeSet, HashMap};

use chrono::{DateTime, Utc};
use sqlx::{AssertSqlSafe, Row, Transaction};

use super::{Head, db};
use crate::core::access::{self, GrantChange, GrantOp};
use crate::core::audit::{AuditDraft, AuditRow, seal};
use crate::core::detail::OperationDetail;
use crate::core::ids::Sha256;
use crate::core::ledger;
use crate::core::model::{ActionKind, Attempt, Operation, State, TransitionRecord};
use crate::core::rules::{Actor, Commit, may_overtake};
use crate::store::ingest_sql;
use crate::store::plan::codec::{self, AuditColumns, ms, observe_order};
use crate::store::plan::decisions::{self, Decisions, TransitionKey, transition_key};
use crate::store::plan::door;
use crate::store::plan::ingest::{
    self as ingest_plan, Known, Lookups, Plan, RecordKey, StoredOperation,
};
use crate::store::plan::redaction::{self, Prepared, RedactionRow};
use crate::store::plan::rows::{OperationColumns, RecordColumns, plan_rows, search_terms};
use crate::store::sql::held_states_sql;
use crate::store::{IngestMode, IngestReport, Ingester, Scope, StoreError};
use crate::wire::{LineError, Numbered, Record};

/// Search terms below which they are written in one padded statement.
const FEW_TERMS: usize = 32;

/// Records from which an ingest batch grows the page cache for its writes
/// (`Backend::BATCH_CACHE`) and plans its statements anew
/// (`Backend::BATCH_PLANS`).
const LARGE_BATCH: usize = 64;

/// The items of `items` whose place in `kept` is true, in order.
fn keep<T>(items: Vec<T>, kept: &[bool]) -> Vec<T> {
    items
        .into_iter()
        .zip(kept)
        .filter_map(|(item, kept)| kept.then_some(item))
        .collect()
}

/// The columns of a record a reviewer action adds.
fn record_columns(record: Record) -> RecordColumns {
    let wire = codec::encode(&record);
    let hash = Sha256::of(wire.as_bytes());
    RecordColumns::of(&record, wire, &hash)
}

/// The audit rows a store creates for the children a commit opens.
fn child_drafts(commit: &Commit) -> Vec<AuditDraft> {
    let id = commit.operation.as_str();
    commit
        .children
        .iter()
        .map(|child| AuditDraft {
            operation: child.id.clone(),
            action: crate::core::audit::CREATE.into(),
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

shared! {
    impl {
        /// Opens a write transaction and reads the chain head in it, first thing.
        /// Begins a write: locks the chain head and reads it, then refuses while
        /// a recorded break of the chain is not acknowledged (every door that
        /// appends to the chain comes through here).
        pub(super) async fn begin_write(&self) -> Result<(Transaction<'static, DB>, Head), StoreError> {
            let (mut tx, head) = self.begin_write_on_any_chain().await?;
            if let Some(broken) = Self::refusing_break(&mut tx).await? {
                return Err(StoreError::ChainBroken(Box::new(broken)));
            }
            Ok((tx, head))
        }

        /// [`Self::begin_write`] without the refusal: for the acknowledgement of
        /// a break, the one row a broken chain takes.
        pub(super) async fn begin_write_on_any_chain(
            &self,
        ) -> Result<(Transaction<'static, DB>, Head), StoreError> {
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

        pub(super) async fn insert_operations(
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
        /// A few terms (one operation's) go in one statement, padded to its
        /// shape by repeating the last, which adds nothing: seven terms were
        /// three statements (4 + 2 + 1), each a hand-off to SQLite's thread.
        pub(super) async fn insert_terms(
            conn: &mut DB::Connection,
            terms: &[(String, String)],
        ) -> Result<(), StoreError> {
            let padded;
            let terms = match terms.last() {
                Some(last) if terms.len() < FEW_TERMS => {
                    let shape = terms.len().next_power_of_two();
                    padded = terms
                        .iter()
                        .chain(std::iter::repeat_n(last, shape - terms.len()))
                        .cloned()
                        .collect::<Vec<_>>();
                    padded.as_slice()
                }
                _ => terms,
            };
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

        pub(super) async fn insert_records(
            conn: &mut DB::Connection,
            attempts: &[RecordColumns],
            observations: &[RecordColumns],
            items: &[RecordColumns],
        ) -> Result<(), StoreError> {
            Self::insert_many(
                conn,
                "INSERT INTO attempts (id, operation, seq, kind, provider_request_id, url, refused, wire, record_hash) ",
                9,
                attempts,
                |b, r| {
                    b.push_bind(r.key.clone())
                        .push_bind(r.operation.clone())
                        .push_bind(r.order)
                        .push_bind(r.kind.clone())
                        .push_bind(r.provider_request_id.clone())
                        .push_bind(r.url.clone())
                        .push_bind(r.refused)
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

        pub(super) async fn insert_audit(conn: &mut DB::Connection, rows: &[AuditRow]) -> Result<(), StoreError> {
            let columns: Vec<AuditColumns> = rows.iter().map(AuditColumns::from_row).collect();
            Self::insert_many(
                conn,
                "INSERT INTO audit (seq, operation, action, from_state, to_state, by_identity, role, \
                 policy, on_behalf_of, rationale, evidence, at, encoding, prev_hash, hash) ",
                15,
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
                        .push_bind(c.encoding)
                        .push_bind(c.prev_hash.clone())
                        .push_bind(c.hash.clone());
                },
            )
            .await
        }

        /// Recomputes whether each operation (and everything that depends on it) is in
        /// the console's queue (G9).
        pub(super) async fn requeue(conn: &mut DB::Connection, ids: &BTreeSet<String>) -> Result<(), StoreError> {
            let held = held_states_sql();
            let sql = DB::REQUEUE.replace("{held}", &held);
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

        /// Looks up what the store holds under the batch's keys, a few hundred keys per
        /// query.
        pub(super) async fn known(conn: &mut DB::Connection, wanted: &Lookups) -> Result<Known, StoreError> {
            let mut known = Known::default();
            let ops: Vec<String> = wanted.operations.iter().cloned().collect();
            for row in Self::select_in(
                conn,
                ingest_sql::OPERATIONS,
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
                ingest_sql::CONTRACTS,
                &tools,
            )
            .await?
            {
                let tool = Self::text(&row, "tool")?;
                known.contracts.insert(tool.clone());
                let key = RecordKey::Contract(tool.clone());
                if wanted.keys.contains(&key) {
                    // A contract of this batch may be the tool's next version.
                    let stored = codec::contract(&Self::text(&row, "wire")?)?;
                    known.stored_contracts.insert(tool.clone(), stored);
                }
                known.hashes.insert(key, Self::text(&row, "record_hash")?);
            }
            if !known.stored_contracts.is_empty() {
                for level in Self::all_levels(&mut *conn).await? {
                    if known.stored_contracts.contains_key(&level.tool) {
                        known.levels.insert(level.tool, level.level);
                    }
                }
            }
            for row in Self::select_in(
                conn,
                ingest_sql::ATTEMPTS,
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
                ingest_sql::OBSERVATIONS,
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
                ingest_sql::EXPECTATIONS,
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
                ingest_sql::ITEMS,
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
                ingest_sql::TRANSITIONS,
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
        pub(super) async fn write_plan(
            conn: &mut DB::Connection,
            head: &Head,
            known: &Known,
            plan: &Plan,
            redactions: &[RedactionRow],
            by: &str,
            now: DateTime<Utc>,
        ) -> Result<Head, StoreError> {
            let rows = plan_rows(known, plan, by, now, (head.seq, &head.hash));
            let staged: BTreeSet<usize> = plan.staged.iter().map(|s| s.line).collect();
            let redactions: Vec<&RedactionRow> =
                redactions.iter().filter(|r| staged.contains(&r.line)).collect();
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
            for update in &rows.contract_updates {
                sqlx::query(
                    "UPDATE contracts SET max_attempts = $1, wire = $2, record_hash = $3 WHERE tool = $4",
                )
                .bind(update.order)
                .bind(update.wire.as_str())
                .bind(update.hash.as_str())
                .bind(update.key.as_str())
                .execute(&mut *conn)
                .await
                .map_err(db::<DB>)?;
            }
            for drop in &rows.level_drops {
                if !Self::apply_level(&mut *conn, drop).await? {
                    return Err(StoreError::AutonomyChanged {
                        tool: drop.to.tool.clone(),
                        now: "another level".to_owned(),
                    });
                }
            }
            Self::insert_operations(conn, &rows.operations).await?;
            Self::insert_records(conn, &rows.attempts, &rows.observations, &rows.items).await?;
            // After the operations they name: a login kept to its tenants by
            // row-level security may write a redaction only of an operation it
            // sees, and a new one is seen once it is written.
            Self::insert_many_then(
                conn,
                "INSERT INTO redactions (record, record_key, path, operation, kinds, value_sha256, \
                 stored_sha256, sample, line_sha256) ",
                " ON CONFLICT DO NOTHING",
                9,
                &redactions,
                |b, r| {
                    b.push_bind(r.record.clone())
                        .push_bind(r.record_key.clone())
                        .push_bind(r.path.clone())
                        .push_bind(r.operation.clone())
                        .push_bind(r.kinds.clone())
                        .push_bind(r.value_sha256.clone())
                        .push_bind(r.stored_sha256.clone())
                        .push_bind(r.sample.clone())
                        .push_bind(r.line_sha256.clone());
                },
            )
            .await?;
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
                sqlx::query(ingest_sql::MOVE)
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
            Self::requeue(conn, &moved).await?;
            Ok(rows.audit.last().map_or_else(
                || Head {
                    seq: head.seq,
                    hash: head.hash.clone(),
                },
                |last| Head {
                    seq: last.seq,
                    hash: last.hash.clone(),
                },
            ))
        }

        /// The refusal of a commit made against `expected` when the row is at `current`:
        /// who made the newest change, and when.
        pub(super) async fn conflict(
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

        /// Whether `commit`, decided on an older version than `current`, may still be
        /// applied: every change made since is one it did not rely on (G8).
        async fn overtakes(
            conn: &mut DB::Connection,
            commit: &Commit,
            current: i64,
        ) -> Result<bool, StoreError> {
            let missed = current - commit.expected_version;
            let Some(kind) = ActionKind::parse(&commit.audit.action) else {
                return Ok(false);
            };
            if missed <= 0 {
                return Ok(false);
            }
            let rows = sqlx::query(
                "SELECT action FROM audit WHERE operation = $1 \
                 AND action NOT IN ('record', 'work-claim', 'work-heartbeat', 'work-complete', \
                 'work-release') ORDER BY seq DESC LIMIT $2",
            )
            .bind(commit.operation.as_str())
            .bind(missed)
            .fetch_all(&mut *conn)
            .await
            .map_err(db::<DB>)?;
            let since: Vec<String> = rows
                .iter()
                .map(|row| Self::text(row, "action"))
                .collect::<Result<_, _>>()?;
            Ok(since.len() as i64 == missed && may_overtake(kind, &since))
        }

        /// Applies the column changes of a commit to its operation and bumps its version.
        pub(super) async fn apply_changes(conn: &mut DB::Connection, commit: &Commit) -> Result<(), StoreError> {
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
        pub(super) async fn apply_proposals(conn: &mut DB::Connection, commit: &Commit) -> Result<(), StoreError> {
            let id = commit.operation.as_str();
            if let Some(p) = &commit.open_proposal {
                sqlx::query(
                    "INSERT INTO proposals (operation, action, proposed_by, proposed_at, rationale, status) \
                     VALUES ($1, $2, $3, $4, $5, 'pending')",
                )
                .bind(p.operation.as_str())
                .bind(p.action.as_str())
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
                .bind(status.as_str())
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

        /// The detail of `op`, which `plan` creates, as it will be stored: its
        /// contract from the batch or the store, and what the store says of its
        /// tool, its dependencies and its idempotency key. `declared` is the
        /// batch's operations by id.
        async fn created_detail(
            &self,
            known: &Known,
            plan: &Plan,
            declared: &HashMap<&str, &Operation>,
            op: &Operation,
        ) -> Result<OperationDetail, StoreError> {
            let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
            let in_batch = plan.staged.iter().find_map(|s| match &s.record {
                Record::Contract(c) if c.tool == op.tool => Some(c.clone()),
                _ => None,
            });
            let contract = match in_batch {
                Some(c) => Some(c),
                None => Self::wires(
                    &mut conn,
                    "SELECT wire FROM contracts WHERE tool = $1",
                    &op.tool,
                    codec::contract,
                )
                .await?
                .pop(),
            };
            let autonomy = Self::autonomy_of(&mut conn, &op.tool).await?;
            let dependencies = op
                .depends_on
                .iter()
                .filter_map(|d| {
                    let state = known
                        .operations
                        .get(d.as_str())
                        .map(|s| s.state)
                        .or_else(|| declared.get(d.as_str()).map(|o| o.state));
                    state.map(|s| (d.clone(), s))
                })
                .collect();
            let mut key_conflicts = Self::key_conflicts(&mut conn, op).await?;
            key_conflicts.extend(
                declared
                    .values()
                    .filter(|o| {
                        o.id != op.id
                            && o.tenant == op.tenant
                            && o.idempotency_key.is_some()
                            && o.idempotency_key == op.idempotency_key
                            && o.payload_hash != op.payload_hash
                    })
                    .map(|o| o.id.clone()),
            );
            key_conflicts.sort();
            key_conflicts.dedup();
            Ok(decisions::created_detail(
                op,
                &plan.staged,
                decisions::Surroundings {
                    contract,
                    autonomy,
                    dependencies,
                    key_conflicts,
                },
            ))
        }

        /// The moves of `plan` the rules refuse, each as its line's error, and how
        /// each allowed decision was taken: decisions pass the decision function as
        /// `decider` on what the store holds (or, for an operation the batch
        /// creates, on what the batch says); system moves that end a call or
        /// approve one must be proved by the attempts recorded before them.
        async fn judge_moves(
            &self,
            known: &Known,
            plan: &Plan,
            decider: Option<&Actor>,
            now: DateTime<Utc>,
        ) -> Result<(Vec<LineError>, Decisions), StoreError> {
            let mut out = Vec::new();
            let mut decided = Decisions::new();
            let mut lines: HashMap<TransitionKey, usize> = HashMap::new();
            let mut attempts: HashMap<&str, Vec<(usize, &Attempt)>> = HashMap::new();
            // The operations the batch declares, found by id once here rather
            // than by a walk of the batch for each history.
            let mut declared: HashMap<&str, &Operation> = HashMap::new();
            for s in &plan.staged {
                match &s.record {
                    Record::Transition(t) => {
                        lines.insert(transition_key(t), s.line);
                    }
                    Record::Attempt(a) => {
                        attempts.entry(a.operation.as_str()).or_default().push((s.line, a));
                    }
                    Record::Operation(o) => {
                        declared.entry(o.id.as_str()).or_insert(o);
                    }
                    _ => {}
                }
            }
            let line_of = |t: &TransitionRecord| lines.get(&transition_key(t)).copied().unwrap_or(0);
            for history in &plan.histories {
                let id = history.operation.as_str();
                // Work under a live lease is the worker's to report (G8): a plain
                // ingest moving it out of APPROVED would execute it twice.
                if decider.is_some()
                    && history.created.is_none()
                    && history.transitions.first().is_some_and(|t| t.from == State::Approved)
                {
                    let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
                    let lease =
                        Self::read_lease(&mut conn, &Scope::Every, &history.operation, false).await?;
                    if let Some(lease) = lease.filter(|l| l.live(now)) {
                        let t = &history.transitions[0];
                        out.push(LineError {
                            line: line_of(t),
                            field: "from".into(),
                            reason: format!(
                                "G8: {id} is work leased to worker {} until {}; only that \
                                 worker's `holdfast work complete` reports its execution",
                                lease.worker,
                                crate::core::clock::format_instant(lease.expires_at)
                            ),
                        });
                        continue;
                    }
                }
                let any_decision = history.transitions.iter().any(decisions::is_decision);
                if !any_decision && !history.transitions.iter().any(decisions::needs_proof) {
                    continue;
                }
                let created = declared
                    .get(id)
                    .copied()
                    .filter(|_| history.created.is_some());
                // Moves that are all system moves are proved from the operation
                // and its attempts alone (`decisions::judge` reads no more of a
                // system move): those of the batch for a created operation, the
                // stored ones with the batch's earlier ones for a stored one.
                if !any_decision {
                    let (op, stored) = match created {
                        Some(op) => (op.clone(), Vec::new()),
                        None if known.operations.contains_key(id) => {
                            let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
                            let row = Self::load_row(&mut conn, id, &Scope::Every)
                                .await?
                                .ok_or_else(|| StoreError::NotFound(history.operation.clone()))?;
                            (row.operation, Self::attempts_of(&mut conn, id).await?)
                        }
                        None => continue,
                    };
                    let mine = attempts.get(id).map(Vec::as_slice).unwrap_or(&[]);
                    for t in history.transitions.iter().filter(|t| decisions::needs_proof(t)) {
                        let line = line_of(t);
                        let mut before = stored.clone();
                        for (_, a) in mine.iter().filter(|(l, _)| *l < line) {
                            if !before.iter().any(|x| x.id == a.id) {
                                before.push((*a).clone());
                            }
                        }
                        before.sort_by_key(|a| a.seq);
                        if let Err(error) = decisions::prove(&op, &before, t, line) {
                            out.push(error);
                            break;
                        }
                    }
                    continue;
                }
                let mut detail = match created {
                    Some(op) => self.created_detail(known, plan, &declared, op).await?,
                    None if known.operations.contains_key(id) => {
                        self.read_detail(&Scope::Every, &history.operation).await?
                    }
                    None => continue,
                };
                for t in &history.transitions {
                    let line = line_of(t);
                    match decisions::judge(&mut detail, &plan.staged, t, line, decider) {
                        Ok(Some(how)) => {
                            decided.insert(transition_key(t), how);
                        }
                        Ok(None) => {}
                        Err(error) => {
                            out.push(error);
                            break;
                        }
                    }
                }
            }
            Ok((out, decided))
        }

        /// The records `ingester` may not write (G7): those outside its tenants.
        async fn refused_at_the_door(
            conn: &mut DB::Connection,
            records: &[Numbered],
            ingester: &Ingester,
        ) -> Result<Vec<LineError>, StoreError> {
            let Some(tenants) = &ingester.tenants else {
                return Ok(Vec::new());
            };
            let mut stored = HashMap::new();
            for row in Self::select_in(
                conn,
                ingest_sql::TENANTS,
                &door::operations(records),
            )
            .await?
            {
                stored.insert(Self::text(&row, "id")?, Self::text(&row, "tenant")?);
            }
            Ok(door::refused(records, &stored, &ingester.by, tenants))
        }

        /// Plans and writes one ingest batch in its own transaction, with what
        /// the OpenTelemetry door keeps between requests when it is given: both
        /// commit, or neither does.
        pub(super) async fn write_ingest(
            &self,
            redacted: redaction::Redacted,
            mode: IngestMode,
            ingester: &Ingester,
            now: DateTime<Utc>,
            keeping: Option<&crate::store::OtlpKeeping>,
        ) -> Result<IngestReport, StoreError> {
            let (mut tx, head) = self.begin_write().await?;
            // A few records change a few pages, which the usual cache holds:
            // the grow and shrink would be two more statements on the path of
            // each call the gateway records.
            let redacted_len = redacted.records.len();
            let cache = DB::BATCH_CACHE.filter(|_| redacted_len >= LARGE_BATCH);
            if let Some((grow, _)) = cache {
                sqlx::raw_sql(grow).execute(&mut *tx).await.map_err(db::<DB>)?;
            }
            if let Some(plans) = DB::BATCH_PLANS.filter(|_| redacted_len >= LARGE_BATCH) {
                sqlx::raw_sql(plans).execute(&mut *tx).await.map_err(db::<DB>)?;
            }
            let planned = self
                .ingest_in(&mut tx, &head, redacted, mode, ingester, now)
                .await;
            // Shrunk on the way out whatever the batch came to, so a refused or
            // failed batch does not leave its pooled connection the larger cache.
            if let Some((_, shrink)) = cache {
                sqlx::raw_sql(shrink).execute(&mut *tx).await.map_err(db::<DB>)?;
            }
            let (report, written) = planned?;
            if written.is_some() {
                if let Some(keeping) = keeping {
                    Self::write_keeping(&mut tx, keeping).await?;
                }
                if let Some(flush) = DB::FLUSH_COUNTS.filter(|_| redacted_len >= LARGE_BATCH) {
                    sqlx::raw_sql(flush).execute(&mut *tx).await.map_err(db::<DB>)?;
                }
                tx.commit().await.map_err(db::<DB>)?;
                if redacted_len >= LARGE_BATCH {
                    self.analyze_grown().await;
                }
            } else {
                tx.rollback().await.map_err(db::<DB>)?;
            }
            Ok(report)
        }

        /// Gathers the statistics of the tables that outgrew theirs
        /// (`Backend::GROWN_TABLES`), so that the next batch's statements and
        /// the judging of its facts are planned for the tables as they are. A
        /// failure is only logged: the batch is committed, and the statistics
        /// are an aid to the planner.
        async fn analyze_grown(&self) {
            let Some(grown) = DB::GROWN_TABLES else {
                return;
            };
            let tables = match sqlx::query(grown).fetch_all(&self.pool).await {
                Ok(rows) => rows,
                Err(error) => {
                    tracing::warn!(%error, "cannot tell which tables outgrew their statistics");
                    return;
                }
            };
            for row in tables {
                let Ok(name) = row.try_get::<String, _>("name") else {
                    continue;
                };
                let started = std::time::Instant::now();
                let analyze = format!("ANALYZE \"{}\"", name.replace('"', "\"\""));
                match sqlx::raw_sql(AssertSqlSafe(analyze)).execute(&self.pool).await {
                    Ok(_) => tracing::info!(
                        table = %name,
                        seconds = started.elapsed().as_secs_f64(),
                        "statistics gathered after an ingest batch"
                    ),
                    Err(error) => tracing::warn!(%error, table = %name, "cannot gather statistics"),
                }
            }
        }

        /// Plans and writes an ingest inside `tx`, whose chain head is `head`: the
        /// one ingest path, shared by `ingest` and a worker's completion. Returns
        /// the report and, when anything was written, the chain head after it;
        /// `None` means the caller must commit nothing (a dry run, or a strict
        /// ingest with refused lines).
        pub(super) async fn ingest_in(
            &self,
            tx: &mut Transaction<'static, DB>,
            head: &Head,
            redacted: redaction::Redacted,
            mode: IngestMode,
            ingester: &Ingester,
            now: DateTime<Utc>,
        ) -> Result<(IngestReport, Option<Head>), StoreError> {
            let by = ingester.by.as_str();
            // Secrets never reach the store: every record was redacted first
            // ([`redaction::redact`]), and is planned (and compared with what is
            // stored) as it will be stored.
            let (mut records, mut wires) = (redacted.records, redacted.wires);
            // Worked out ahead from the records alone, or here. The keys of
            // lines refused at the door are looked up too: what the store
            // holds under a key no kept record has is never asked.
            let Prepared {
                mut hashes,
                lookups: wanted,
            } = redacted
                .prepared
                .unwrap_or_else(|| Prepared::of(&records, &wires));
            let refused = Self::refused_at_the_door(tx, &records, ingester).await?;
            if !refused.is_empty() {
                let refused_lines: BTreeSet<usize> = refused.iter().map(|e| e.line).collect();
                let kept: Vec<bool> = records.iter().map(|n| !refused_lines.contains(&n.line)).collect();
                records = keep(records, &kept);
                wires = keep(wires, &kept);
                hashes = keep(hashes, &kept);
            }
            let mut known = Self::known(tx, &wanted).await?;
            known.contracts_optional = ingester.contracts_optional;
            let mut plan = ingest_plan::plan_hashed(records, wires, hashes, &known, redacted.refused);
            let (undecided, decided) = self.judge_moves(&known, &plan, ingester.decider.as_ref(), now).await?;
            if !undecided.is_empty() {
                // Planned again without the refused decisions: what follows one in
                // its operation's history no longer chains and is refused with it.
                let lines: BTreeSet<usize> = undecided.iter().map(|e| e.line).collect();
                let (kept, wires): (Vec<Numbered>, Vec<String>) = plan
                    .staged
                    .iter()
                    .filter(|s| !lines.contains(&s.line))
                    .map(|s| {
                        let numbered = Numbered {
                            line: s.line,
                            record: s.record.clone(),
                            line_sha256: None,
                        };
                        (numbered, s.wire.clone())
                    })
                    .unzip();
                let earlier = std::mem::take(&mut plan.rejected);
                let unchanged = plan.unchanged;
                plan = ingest_plan::plan_refusing(kept, wires, &known, Vec::new());
                plan.unchanged += unchanged;
                plan.rejected.extend(earlier);
                plan.rejected.extend(undecided);
            }
            plan.rejected.extend(refused);
            plan.rejected.sort_by_key(|e| e.line);
            plan.decided = decided;
            if mode == IngestMode::DryRun || (mode == IngestMode::Strict && !plan.rejected.is_empty()) {
                return Ok((
                    IngestReport {
                        committed: Vec::new(),
                        unchanged: plan.unchanged,
                        rejected: plan.rejected,
                    },
                    None,
                ));
            }
            let after =
                Self::write_plan(tx, head, &known, &plan, &redacted.rows, by, now).await?;
            Ok((
                IngestReport {
                    committed: plan.committed_by_type(),
                    unchanged: plan.unchanged,
                    rejected: plan.rejected,
                },
                Some(after),
            ))
        }

        pub(super) async fn write_commit(&self, commit: Commit) -> Result<AuditRow, StoreError> {
            let (mut tx, head) = self.begin_write().await?;
            let id = commit.operation.as_str().to_owned();
            let current = sqlx::query(AssertSqlSafe(format!(
                "SELECT version, state FROM operations WHERE id = $1{}",
                DB::FOR_UPDATE
            )))
            .bind(&id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db::<DB>)?
            .ok_or_else(|| StoreError::NotFound(commit.operation.clone()))?;
            let version: i64 = current.try_get("version").map_err(db::<DB>)?;
            let mut commit = commit;
            if version != commit.expected_version {
                if !Self::overtakes(&mut tx, &commit, version).await? {
                    let conflict = Self::conflict(&mut tx, &commit, version).await?;
                    tx.rollback().await.map_err(db::<DB>)?;
                    return Err(conflict);
                }
                // Made on an older version that differs only in what it did not
                // rely on: its row starts from the state the operation is in now.
                let state = Self::text(&current, "state")?;
                commit.audit.from = Some(codec::parse_state(&state)?);
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
                    let wire = codec::encode(&Record::Operation(child.clone()));
                    OperationColumns::new(child, wire, child.state, commit.audit.at, 1, held, None)
                })
                .collect();
            Self::insert_operations(&mut tx, &children).await?;
            Self::insert_records(&mut tx, &attempts, &observations, &items).await?;
            if let Err(refused) = Self::apply_proposals(&mut tx, &commit).await {
                tx.rollback().await.map_err(db::<DB>)?;
                return Err(refused);
            }
            // The row says what the commit changes besides the state (G8 covers
            // them too): verify compares the stored owner with it.
            let mut draft = commit.audit.clone();
            draft.evidence.extend(ledger::change_evidence(
                commit.new_owner.as_deref(),
                commit.new_next_observation_at,
            ));
            let mut sealed = vec![seal(&head.hash, head.seq + 1, draft)];
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

        pub(super) async fn write_grant(&self, change: GrantChange) -> Result<AuditRow, StoreError> {
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
    }
}
