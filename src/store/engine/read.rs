//! Reading: listings and queue counts under a filter, one operation's detail,
//! the audit log, the whole dataset, grants and the login.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use futures_util::TryStreamExt;
use sqlx::{AssertSqlSafe, QueryBuilder, Row};

use super::{AUDIT_COLUMNS, HEAD_SEQ, db};
use crate::core::audit::AuditRow;
use crate::core::contract::Contract;
use crate::core::detail::{Dataset, OperationDetail};
use crate::core::ids::{OperationId, Sha256};
use crate::core::model::{
    Attempt, ChildLink, Grant, Operation, OperationRow, Proposal, Role, State,
};
use crate::core::redact::IngestRedaction;
use crate::store::plan::codec::{self, AuditColumns, Current, from_ms, ms};
use crate::store::sql::{
    self, Covering, held_states_sql, kept_scope, push_filter, push_in, push_tenants,
};
use crate::store::{OperationFilter, Page, QueueCounts, Scope, SortOrder, Start, StoreError};

/// The columns of a proposal row, as [`Proposal`] decodes them.
const PROPOSAL_COLUMNS: &str = "id, operation, action, proposed_by, proposed_at, rationale, status";

/// Reads a row's key column as text (ids are text, `seq` an integer), for
/// naming a row that cannot be decoded.
fn key_of<R: Row>(column: &'static str) -> impl Fn(&R) -> Option<String>
where
    for<'s> &'s str: sqlx::ColumnIndex<R>,
    for<'q> String: sqlx::Decode<'q, R::Database> + sqlx::Type<R::Database>,
    for<'q> i64: sqlx::Decode<'q, R::Database> + sqlx::Type<R::Database>,
{
    move |row| {
        row.try_get::<String, _>(column)
            .ok()
            .or_else(|| row.try_get::<i64, _>(column).ok().map(|n| n.to_string()))
    }
}

shared! {
    impl {
        pub(super) fn audit_row(row: &DB::Row) -> Result<AuditRow, StoreError> {
            Self::audit_columns::<String>(row)?.into_row()
        }

        /// The columns of an audit row, owned or borrowed from `row`.
        pub(super) fn audit_columns<'r, S>(row: &'r DB::Row) -> Result<AuditColumns<S>, StoreError>
        where
            S: sqlx::Decode<'r, DB> + sqlx::Type<DB>,
        {
            Ok(AuditColumns {
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
                encoding: row.try_get("encoding").map_err(db::<DB>)?,
                prev_hash: row.try_get("prev_hash").map_err(db::<DB>)?,
                hash: row.try_get("hash").map_err(db::<DB>)?,
            })
        }

        pub(super) fn operation_row(row: &DB::Row) -> Result<OperationRow, StoreError> {
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
                routed_owner: row.try_get("routed_owner").map_err(db::<DB>)?,
            })
        }

        pub(super) fn proposal(row: &DB::Row) -> Result<Proposal, StoreError> {
            let at: String = row.try_get("proposed_at").map_err(db::<DB>)?;
            let operation: String = row.try_get("operation").map_err(db::<DB>)?;
            let action: String = row.try_get("action").map_err(db::<DB>)?;
            let status: String = row.try_get("status").map_err(db::<DB>)?;
            Ok(Proposal {
                id: row.try_get("id").map_err(db::<DB>)?,
                operation: codec::parse_id(&operation)?,
                action: codec::parse_action(&action)?,
                proposed_by: row.try_get("proposed_by").map_err(db::<DB>)?,
                proposed_at: crate::core::clock::parse_instant(&at)
                    .map_err(|_| codec::corrupt(format!("proposal time {at:?}")))?,
                rationale: row.try_get("rationale").map_err(db::<DB>)?,
                status: codec::parse_proposal_status(&status)?,
            })
        }

        /// Fetches `SELECT wire …` rows bound to one key and decodes each.
        pub(super) async fn wires<T>(
            conn: &mut DB::Connection,
            sql: impl sqlx::SqlSafeStr,
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

        /// The `wire` rows of `table` that belong to operation `key`, in `order`,
        /// decoded: one operation's attempts, items, observations, expectation.
        pub(super) async fn wires_of<T>(
            conn: &mut DB::Connection,
            table: &'static str,
            order: &'static str,
            key: &str,
            decode: fn(&str) -> Result<T, StoreError>,
        ) -> Result<Vec<T>, StoreError> {
            let sql = format!("SELECT wire FROM {table} WHERE operation = $1 ORDER BY {order}");
            Self::wires(conn, AssertSqlSafe(sql), key, decode).await
        }

        /// Audit rows as read, those that cannot be decoded set aside (and
        /// counted) rather than failing the read.
        pub(super) fn audit_rows(&self, rows: &[DB::Row]) -> Vec<AuditRow> {
            self.skipped
                .keep("audit row", rows, key_of("seq"), Self::audit_row)
        }

        /// Fetches every `SELECT wire FROM table` row of the operations `covering`
        /// names (every row when it is `None`: the table belongs to no tenant), in
        /// `order`, and decodes each.
        pub(super) async fn all_wires<T>(
            &self,
            table: &'static str,
            covering: Option<&Covering<'_>>,
            order: &'static str,
            decode: fn(&str) -> Result<T, StoreError>,
        ) -> Result<Vec<T>, StoreError> {
            self.all_rows(table, "wire", covering, order, |row| {
                let wire: String = row.try_get("wire").map_err(db::<DB>)?;
                decode(&wire)
            })
            .await
        }

        /// Every attempt of the operations `covering` names, with its URL.
        pub(super) async fn all_attempts(
            &self,
            covering: Option<&Covering<'_>>,
        ) -> Result<Vec<Attempt>, StoreError> {
            self.all_rows("attempts", "wire, url", covering, "operation, seq, id", Self::attempt)
                .await
        }

        /// Fetches `SELECT columns FROM table` rows of the operations
        /// `covering` names (every row when it is `None`), in `order`, and
        /// decodes each; a row that does not decode is set aside and counted.
        async fn all_rows<T>(
            &self,
            table: &'static str,
            columns: &'static str,
            covering: Option<&Covering<'_>>,
            order: &'static str,
            decode: impl Fn(&DB::Row) -> Result<T, StoreError>,
        ) -> Result<Vec<T>, StoreError> {
            let mut qb: QueryBuilder<DB> =
                QueryBuilder::new(format!("SELECT {columns} FROM {table} WHERE 1 = 1"));
            if let Some(covering) = covering {
                covering.push_operations(&mut qb, "operation");
            }
            qb.push(format_args!(" ORDER BY {order}"));
            let rows = qb
                .build()
                .fetch_all(&self.pool)
                .await
                .map_err(db::<DB>)?;
            Ok(self.skipped.keep(table, &rows, |_| None, decode))
        }

        /// An attempt row: its wire line, and its URL beside it.
        fn attempt(row: &DB::Row) -> Result<Attempt, StoreError> {
            let wire: String = row.try_get("wire").map_err(db::<DB>)?;
            let mut attempt = codec::attempt(&wire)?;
            attempt.url = row.try_get("url").map_err(db::<DB>)?;
            Ok(attempt)
        }

        /// One operation's attempts, in order, with their URLs.
        pub(super) async fn attempts_of(
            conn: &mut DB::Connection,
            key: &str,
        ) -> Result<Vec<Attempt>, StoreError> {
            sqlx::query("SELECT wire, url FROM attempts WHERE operation = $1 ORDER BY seq, id")
                .bind(key)
                .fetch_all(&mut *conn)
                .await
                .map_err(db::<DB>)?
                .iter()
                .map(Self::attempt)
                .collect()
        }

        pub(super) async fn load_row(
            conn: &mut DB::Connection,
            id: &str,
            scope: &Scope,
        ) -> Result<Option<OperationRow>, StoreError> {
            let mut qb: QueryBuilder<DB> = sql::row_select("", scope, None);
            qb.push(" AND o.id = ");
            qb.push_bind(id.to_owned());
            push_tenants(&mut qb, "o.tenant", scope);
            let row = qb
                .build()
                .fetch_optional(&mut *conn)
                .await
                .map_err(db::<DB>)?;
            row.as_ref().map(Self::operation_row).transpose()
        }

        /// The linked children of an operation, with the items each covers.
        pub(super) async fn children(conn: &mut DB::Connection, key: &str) -> Result<Vec<ChildLink>, StoreError> {
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
                    items: Self::wires_of(conn, "items", "idx", &child_id, codec::item).await?,
                });
            }
            Ok(children)
        }

        /// One row of the `redactions` table.
        fn ingest_redaction(row: &DB::Row) -> Result<IngestRedaction, StoreError> {
            let hash = |column: &str| -> Result<Sha256, StoreError> {
                let text = Self::text(row, column)?;
                Sha256::parse(&text).map_err(|_| codec::corrupt(format!("redactions.{column} {text:?}")))
            };
            let line: Option<String> = row.try_get("line_sha256").map_err(db::<DB>)?;
            Ok(IngestRedaction {
                record: Self::text(row, "record")?,
                record_key: Self::text(row, "record_key")?,
                path: Self::text(row, "path")?,
                kinds: Self::text(row, "kinds")?.split(',').map(str::to_owned).collect(),
                value_sha256: hash("value_sha256")?,
                stored_sha256: hash("stored_sha256")?,
                sample: Self::text(row, "sample")?,
                line_sha256: line.as_deref().and_then(|l| Sha256::parse(l).ok()),
            })
        }

        /// The autonomy level of `tool`: manual unless one was set.
        pub(super) async fn autonomy_of(
            conn: &mut DB::Connection,
            tool: &str,
        ) -> Result<crate::core::ladder::Level, StoreError> {
            let row = sqlx::query("SELECT level FROM autonomy WHERE tool = $1")
                .bind(tool)
                .fetch_optional(&mut *conn)
                .await
                .map_err(db::<DB>)?;
            match row {
                Some(row) => {
                    let level = Self::text(&row, "level")?;
                    crate::core::ladder::Level::parse(&level)
                        .ok_or_else(|| codec::corrupt(format!("autonomy level {level:?}")))
                }
                None => Ok(crate::core::ladder::Level::Manual),
            }
        }

        /// Other operations of the tenant under the same idempotency key with another
        /// payload (G3).
        pub(super) async fn key_conflicts(
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

        /// Every grant, in a stable order.
        pub(super) async fn all_grants(conn: &mut DB::Connection) -> Result<Vec<Grant>, StoreError> {
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

        /// Ids only, in one statement: nothing but the operations table is read.
        pub(super) async fn read_matching_ids(
            &self,
            filter: &OperationFilter,
            sort: SortOrder,
        ) -> Result<Vec<OperationId>, StoreError> {
            let mut qb: QueryBuilder<DB> = sql::matching_ids("", filter, sort);
            let mut rows = qb.build().fetch(&self.pool);
            let mut ids = Vec::new();
            while let Some(row) = rows.try_next().await.map_err(db::<DB>)? {
                ids.push(codec::parse_id(&Self::text(&row, "id")?)?);
            }
            Ok(ids)
        }

        fn sort_key(row: &DB::Row) -> Result<sql::SortKey, StoreError> {
            Ok(sql::SortKey {
                risk_rank: row.try_get("risk_rank").map_err(db::<DB>)?,
                observe_order: row.try_get("observe_order").map_err(db::<DB>)?,
                state_since_ms: row.try_get("state_since_ms").map_err(db::<DB>)?,
                deadline_ms: row.try_get("deadline_ms").map_err(db::<DB>)?,
                id: Self::text(row, "id")?,
            })
        }

        /// Reads the legs of one keyset page (see [`sql::Seek::legs`]) until
        /// it holds `limit` rows, and returns them in the listing's order.
        async fn keyset_rows(
            conn: &mut DB::Connection,
            seek: sql::Seek<'_>,
            limit: u64,
            statement: impl Fn(sql::Leg, u64) -> Option<QueryBuilder<DB>>,
        ) -> Result<Vec<DB::Row>, StoreError> {
            let mut rows = Vec::new();
            for leg in seek.legs() {
                let left = limit.saturating_sub(rows.len() as u64);
                if left == 0 {
                    break;
                }
                if let Some(mut qb) = statement(*leg, left) {
                    rows.extend(qb.build().fetch_all(&mut *conn).await.map_err(db::<DB>)?);
                }
            }
            if seek.backward() {
                rows.reverse();
            }
            Ok(rows)
        }

        pub(super) async fn read_urgency_page(
            &self,
            filter: &OperationFilter,
            after: Option<&sql::SortKey>,
            limit: u64,
        ) -> Result<Vec<sql::SortKey>, StoreError> {
            let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
            let seek = after.map_or(sql::Seek::First, |key| sql::Seek::From(key, sql::Side::After));
            let rows = Self::keyset_rows(&mut conn, seek, limit, |leg, left| {
                sql::keyset_page("", sql::Columns::Keys, filter, SortOrder::Urgency, seek, leg, left)
            })
            .await?;
            rows.iter().map(Self::sort_key).collect()
        }

        pub(super) async fn read_list(
            &self,
            filter: &OperationFilter,
            sort: SortOrder,
            page: Page,
        ) -> Result<(Vec<OperationRow>, u64), StoreError> {
            let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
            let anchor = match &page.start {
                Start::At(id) | Start::After(id) | Start::Before(id) => {
                    let mut qb: QueryBuilder<DB> = sql::sort_key("", id.as_str(), &filter.scope);
                    let row = qb
                        .build()
                        .fetch_optional(&mut *conn)
                        .await
                        .map_err(db::<DB>)?
                        .ok_or_else(|| StoreError::NotFound(id.clone()))?;
                    Some(Self::sort_key(&row)?)
                }
                Start::First | Start::Last => None,
            };
            let seek = match (&page.start, &anchor) {
                (Start::At(_), Some(key)) => sql::Seek::From(key, sql::Side::At),
                (Start::After(_), Some(key)) => sql::Seek::From(key, sql::Side::After),
                (Start::Before(_), Some(key)) => sql::Seek::From(key, sql::Side::Before),
                (Start::Last, _) => sql::Seek::Last,
                _ => sql::Seek::First,
            };
            let rows = Self::keyset_rows(&mut conn, seek, page.limit, |leg, left| {
                sql::keyset_page("", sql::Columns::Rows, filter, sort, seek, leg, left)
            })
            .await?;
            let rows = self
                .skipped
                .keep("operation", &rows, key_of("id"), Self::operation_row);
            let total = Self::total(&mut conn, filter).await?;
            Ok((rows, total))
        }

        /// How many operations match `filter`: the counts the triggers keep
        /// when it narrows by the tenant scope and the queue alone.
        pub(super) async fn total(
            conn: &mut DB::Connection,
            filter: &OperationFilter,
        ) -> Result<u64, StoreError> {
            match kept_scope(&OperationFilter {
                queue: false,
                ..filter.clone()
            }) {
                Some(scope) => Ok(Self::kept_counts(conn, &scope)
                    .await?
                    .into_iter()
                    .filter(|(_, queued, _)| *queued || !filter.queue)
                    .map(|(_, _, n)| n)
                    .sum()),
                None => {
                    let mut count: QueryBuilder<DB> = sql::operations_query("", "count(*) AS n");
                    push_filter(&mut count, filter);
                    Self::count(conn, count).await
                }
            }
        }

        /// Operations per (state, queued) from the counts the triggers keep
        /// (`operation_counts`), in the tenants of `scope`: a read of a few dozen
        /// rows whatever the store's size.
        pub(super) async fn kept_counts(
            conn: &mut DB::Connection,
            scope: &Scope,
        ) -> Result<Vec<(State, bool, u64)>, StoreError> {
            let mut qb: QueryBuilder<DB> = sql::kept_counts("", scope);
            let mut kept = Vec::new();
            for row in qb.build().fetch_all(&mut *conn).await.map_err(db::<DB>)? {
                let state: String = row.try_get("state").map_err(db::<DB>)?;
                let queued: i64 = row.try_get("queued").map_err(db::<DB>)?;
                let n: i64 = row.try_get("n").map_err(db::<DB>)?;
                kept.push((codec::parse_state(&state)?, queued == 1, u64::try_from(n).unwrap_or(0)));
            }
            Ok(kept)
        }

        pub(super) async fn read_counts(
            &self,
            filter: &OperationFilter,
            now: DateTime<Utc>,
        ) -> Result<QueueCounts, StoreError> {
            // The three reads need nothing from each other: each on its own
            // connection, side by side, so the header waits for the slowest
            // (the due count on PostgreSQL), not for their sum.
            let count = |qb: QueryBuilder<DB>| async move {
                let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
                Self::count(&mut conn, qb).await
            };
            let (by_state, overdue, pending_proposals) = futures_util::try_join!(
                self.counts_by_state(filter),
                // The due count from the kept days and today's range of the
                // due index; the pending proposals by status.
                count(match kept_scope(filter) {
                    Some(scope) => sql::kept_overdue_count("", &scope, ms(now)),
                    None => sql::overdue_count("", filter, ms(now)),
                }),
                count(sql::pending_count("", filter)),
            )?;
            let (by_state, held_by_dependency) = by_state;
            Ok(QueueCounts {
                by_state,
                held_by_dependency,
                overdue,
                pending_proposals,
            })
        }

        /// The header's operations per state and those held by a dependency:
        /// from the kept counts where `filter` allows, else counted.
        async fn counts_by_state(
            &self,
            filter: &OperationFilter,
        ) -> Result<(Vec<(State, u64)>, u64), StoreError> {
            let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
            if let Some(scope) = kept_scope(filter) {
                let mut by_state: BTreeMap<State, u64> = BTreeMap::new();
                let mut held_by_dependency = 0;
                for (state, queued, n) in Self::kept_counts(&mut conn, &scope).await? {
                    *by_state.entry(state).or_default() += n;
                    if queued && !state.is_held() {
                        held_by_dependency += n;
                    }
                }
                let by_state = by_state.into_iter().filter(|(_, n)| *n > 0).collect();
                return Ok((by_state, held_by_dependency));
            }
            let held = held_states_sql();
            let mut counted: QueryBuilder<DB> = QueryBuilder::new(
                "SELECT o.state AS state, count(*) AS n FROM operations o WHERE 1 = 1",
            );
            push_filter(&mut counted, filter);
            counted.push(" GROUP BY o.state");
            let mut by_state = Vec::new();
            for row in counted
                .build()
                .fetch_all(&mut *conn)
                .await
                .map_err(db::<DB>)?
            {
                let state: String = row.try_get("state").map_err(db::<DB>)?;
                let n: i64 = row.try_get("n").map_err(db::<DB>)?;
                by_state.push((codec::parse_state(&state)?, u64::try_from(n).unwrap_or(0)));
            }
            by_state.sort();
            let mut dependency: QueryBuilder<DB> = QueryBuilder::new(format!(
                "SELECT count(*) AS n FROM operations o \
                 WHERE o.queued = 1 AND o.state NOT IN ({held})"
            ));
            push_filter(&mut dependency, filter);
            let held_by_dependency = Self::count(&mut conn, dependency).await?;
            Ok((by_state, held_by_dependency))
        }

        /// The `n` of a `SELECT count(*) AS n …`.
        async fn count(conn: &mut DB::Connection, mut qb: QueryBuilder<DB>) -> Result<u64, StoreError> {
            let n: i64 = qb
                .build()
                .fetch_one(&mut *conn)
                .await
                .map_err(db::<DB>)?
                .try_get("n")
                .map_err(db::<DB>)?;
            Ok(u64::try_from(n).unwrap_or(0))
        }

        pub(super) async fn read_detail(
            &self,
            scope: &Scope,
            id: &OperationId,
        ) -> Result<OperationDetail, StoreError> {
            let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
            let row = Self::load_row(&mut conn, id.as_str(), scope)
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
            let checks = sqlx::query(AssertSqlSafe(format!(
                "SELECT {AUDIT_COLUMNS} FROM audit WHERE operation = $1 AND action = $2 ORDER BY seq"
            )))
            .bind(crate::core::autonomy::AUTONOMY_LEDGER)
            .bind(crate::core::autonomy::LOOKUP_CHECK_ACTION)
            .fetch_all(&mut *conn)
            .await
            .map_err(db::<DB>)?;
            let latest_check = self
                .audit_rows(&checks)
                .iter()
                .filter_map(crate::core::autonomy::LookupCheck::from_row)
                .rfind(|c| c.tool == op.tool);
            let lookup_unchecked =
                crate::core::autonomy::unchecked(contract.as_ref(), latest_check.as_ref());
            let autonomy = crate::core::autonomy::effective_level(
                Self::autonomy_of(&mut conn, &op.tool).await?,
                lookup_unchecked.as_deref(),
            );
            let attempts = Self::attempts_of(&mut conn, key).await?;
            let items = Self::wires_of(&mut conn, "items", "idx", key, codec::item).await?;
            let observations = Self::wires_of(
                &mut conn,
                "observations",
                "observed_ms, id",
                key,
                codec::observation,
            )
            .await?;
            let expectation =
                Self::wires_of(&mut conn, "expectations", "operation", key, codec::expectation)
                    .await?
                    .pop();
            let rows = sqlx::query(AssertSqlSafe(format!(
                "SELECT {AUDIT_COLUMNS} FROM audit WHERE operation = $1 ORDER BY seq"
            )))
            .bind(key)
            .fetch_all(&mut *conn)
            .await
            .map_err(db::<DB>)?;
            let audit = self.audit_rows(&rows);
            let children = Self::children(&mut conn, key).await?;

            let mut dependencies = Vec::new();
            for dep in &op.depends_on {
                let mut qb: QueryBuilder<DB> =
                    QueryBuilder::new("SELECT o.state FROM operations o WHERE o.id = ");
                qb.push_bind(dep.as_str().to_owned());
                push_tenants(&mut qb, "o.tenant", scope);
                let state = qb
                    .build()
                    .fetch_optional(&mut *conn)
                    .await
                    .map_err(db::<DB>)?;
                if let Some(state) = state {
                    let state: String = state.try_get("state").map_err(db::<DB>)?;
                    dependencies.push((dep.clone(), codec::parse_state(&state)?));
                }
            }

            let proposals = sqlx::query(AssertSqlSafe(format!(
                "SELECT {PROPOSAL_COLUMNS} FROM proposals WHERE operation = $1 ORDER BY id"
            )))
            .bind(key)
            .fetch_all(&mut *conn)
            .await
            .map_err(db::<DB>)?
            .iter()
            .map(Self::proposal)
            .collect::<Result<Vec<_>, _>>()?;
            let key_conflicts = Self::key_conflicts(&mut conn, op).await?;
            let redactions = sqlx::query(
                "SELECT record, record_key, path, kinds, value_sha256, stored_sha256, sample, \
                 line_sha256 FROM redactions WHERE operation = $1 ORDER BY record, record_key, path",
            )
            .bind(key)
            .fetch_all(&mut *conn)
            .await
            .map_err(db::<DB>)?
            .iter()
            .map(Self::ingest_redaction)
            .collect::<Result<Vec<_>, _>>()?;

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
                autonomy,
                redactions,
                lookup_unchecked,
            })
        }

        pub(super) async fn read_audit(&self, from: i64, limit: u64) -> Result<Vec<AuditRow>, StoreError> {
            let rows = sqlx::query(AssertSqlSafe(format!(
                "SELECT {AUDIT_COLUMNS} FROM audit WHERE seq >= $1 ORDER BY seq LIMIT $2"
            )))
            .bind(from)
            .bind(i64::try_from(limit).unwrap_or(i64::MAX))
            .fetch_all(&self.pool)
            .await
            .map_err(db::<DB>)?;
            Ok(self.audit_rows(&rows))
        }

        pub(super) async fn read_head_seq(&self) -> Result<i64, StoreError> {
            let row = sqlx::query(HEAD_SEQ)
                .fetch_one(&self.pool)
                .await
                .map_err(db::<DB>)?;
            row.try_get("seq").map_err(db::<DB>)
        }

        pub(super) async fn read_dataset(&self, scope: &Scope) -> Result<Dataset, StoreError> {
            let contracts = self
                .all_wires("contracts", None, "tool", codec::contract)
                .await?;
            self.read_records(&Covering::Scope(scope), contracts).await
        }

        /// The next `limit` operations in `scope` after `after` in id order (a
        /// keyset page), and a dataset of their records and those of their
        /// relatives in `scope` — parent, children, the operations they depend
        /// on and those depending on them, those sharing their idempotency key —
        /// with `contracts` as given: what the rules over one operation read.
        pub(super) async fn read_dataset_page(
            &self,
            scope: &Scope,
            after: Option<&OperationId>,
            limit: u64,
            contracts: Vec<Contract>,
        ) -> Result<(Vec<OperationId>, Dataset), StoreError> {
            let mut select: QueryBuilder<DB> =
                QueryBuilder::new("SELECT id FROM operations WHERE 1 = 1");
            push_tenants(&mut select, "tenant", scope);
            if let Some(after) = after {
                select.push(" AND id > ");
                select.push_bind(after.to_string());
            }
            select.push(" ORDER BY id LIMIT ");
            select.push_bind(i64::try_from(limit).unwrap_or(i64::MAX));
            let page = self.ids(select).await?;
            if page.is_empty() {
                return Ok((Vec::new(), Dataset::default()));
            }
            let ids = page
                .iter()
                .map(|id| codec::parse_id(id))
                .collect::<Result<Vec<_>, _>>()?;
            let mut covered = self.related_ids(scope, &page).await?;
            covered.extend(page);
            covered.sort();
            covered.dedup();
            let data = self
                .read_records(&Covering::Ids(&covered), contracts)
                .await?;
            Ok((ids, data))
        }

        /// The operations in `scope` related to those of `page`: their parent,
        /// children, dependencies, dependents and those sharing their
        /// idempotency key.
        pub(super) async fn related_ids(
            &self,
            scope: &Scope,
            page: &[String],
        ) -> Result<Vec<String>, StoreError> {
            if page.is_empty() {
                return Ok(Vec::new());
            }
            let mut related: QueryBuilder<DB> = QueryBuilder::new(
                "SELECT r.id FROM operations r WHERE r.id IN (\
                 SELECT p.parent FROM operations p WHERE p.parent IS NOT NULL",
            );
            push_in(&mut related, "p.id", page.iter().cloned());
            related.push(" UNION SELECT c.id FROM operations c WHERE 1 = 1");
            push_in(&mut related, "c.parent", page.iter().cloned());
            related.push(" UNION SELECT d.depends_on FROM dependencies d WHERE 1 = 1");
            push_in(&mut related, "d.operation", page.iter().cloned());
            related.push(" UNION SELECT d.operation FROM dependencies d WHERE 1 = 1");
            push_in(&mut related, "d.depends_on", page.iter().cloned());
            related.push(
                " UNION SELECT k.id FROM operations o JOIN operations k \
                 ON k.tenant = o.tenant AND k.idempotency_key = o.idempotency_key \
                 WHERE o.idempotency_key IS NOT NULL",
            );
            push_in(&mut related, "o.id", page.iter().cloned());
            related.push(")");
            push_tenants(&mut related, "r.tenant", scope);
            self.ids(related).await
        }

        /// The `id` column of every row `select` returns.
        async fn ids(&self, mut select: QueryBuilder<DB>) -> Result<Vec<String>, StoreError> {
            select
                .build()
                .fetch_all(&self.pool)
                .await
                .map_err(db::<DB>)?
                .iter()
                .map(|row| row.try_get("id"))
                .collect::<Result<_, _>>()
                .map_err(db::<DB>)
        }

        /// The records of the operations `covering` names, with `contracts`.
        pub(super) async fn read_records(
            &self,
            covering: &Covering<'_>,
            contracts: Vec<Contract>,
        ) -> Result<Dataset, StoreError> {
            let mut select: QueryBuilder<DB> = QueryBuilder::new(
                "SELECT id, state, owner, next_observation_ms, wire FROM operations WHERE 1 = 1",
            );
            covering.push(&mut select, "tenant", "id");
            select.push(" ORDER BY id");
            let rows = select
                .build()
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
            let mut select: QueryBuilder<DB> = QueryBuilder::new(format!(
                "SELECT {AUDIT_COLUMNS} FROM audit WHERE 1 = 1"
            ));
            covering.push_operations(&mut select, "operation");
            select.push(" ORDER BY seq");
            let rows = select
                .build()
                .fetch_all(&self.pool)
                .await
                .map_err(db::<DB>)?;
            let audit = self.audit_rows(&rows);
            let mut select: QueryBuilder<DB> = QueryBuilder::new(format!(
                "SELECT {PROPOSAL_COLUMNS} FROM proposals WHERE 1 = 1"
            ));
            covering.push_operations(&mut select, "operation");
            select.push(" ORDER BY id");
            let proposals = select
                .build()
                .fetch_all(&self.pool)
                .await
                .map_err(db::<DB>)?
                .iter()
                .map(Self::proposal)
                .collect::<Result<Vec<_>, _>>()?;
            let covering = Some(covering);
            Ok(Dataset {
                proposals,
                contracts,
                operations,
                attempts: self.all_attempts(covering).await?,
                items: self
                    .all_wires("items", covering, "operation, idx", codec::item)
                    .await?,
                observations: self
                    .all_wires(
                        "observations",
                        covering,
                        "operation, observed_ms, id",
                        codec::observation,
                    )
                    .await?,
                audit,
                expectations: self
                    .all_wires("expectations", covering, "operation", codec::expectation)
                    .await?,
            })
        }

        /// The newest `limit` audit rows in `scope` below `before`, newest
        /// first: a walk down the `seq` key that checks each row's operation by
        /// its primary key, so a page costs its rows, not the log.
        pub(super) async fn read_audit_latest(
            &self,
            scope: &Scope,
            before: Option<i64>,
            limit: u64,
        ) -> Result<Vec<AuditRow>, StoreError> {
            let mut select: QueryBuilder<DB> =
                sql::audit_page("", AUDIT_COLUMNS, scope, before, limit);
            let rows = select
                .build()
                .fetch_all(&self.pool)
                .await
                .map_err(db::<DB>)?;
            Ok(self.audit_rows(&rows))
        }

        pub(super) async fn read_login(&self) -> Result<Option<String>, StoreError> {
            let Some(sql) = DB::LOGIN else {
                return Ok(None);
            };
            let row = sqlx::query(sql)
                .fetch_one(&self.pool)
                .await
                .map_err(db::<DB>)?;
            row.try_get("login").map(Some).map_err(db::<DB>)
        }
    }
}
