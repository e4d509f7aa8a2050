//! The store's side of scheduled lookups: which holds are due, and the claim on
//! one slot that keeps two observers from asking twice (one row per operation and
//! slot; the primary key decides who wins).

use chrono::{DateTime, Utc};
use sqlx::{QueryBuilder, Row};

use super::db;
use crate::core::ids::OperationId;
use crate::core::ladder::Level;
use crate::store::plan::codec::{self, ms};
use crate::store::sql::{held_states_sql, push_tenants};
use crate::store::{Scope, StoreError};

/// Matches the canonical wire line of a contract whose `status_lookup` is an
/// object (the writer emits it compactly, always in this form).
const HAS_LOOKUP: &str = r#"%"status_lookup":{%"#;

shared! {
    impl {
        pub(super) async fn read_due_lookups(
            &self,
            scope: &Scope,
            now: DateTime<Utc>,
            at_least: Option<Level>,
            limit: u64,
        ) -> Result<Vec<OperationId>, StoreError> {
            let now = ms(now);
            let mut qb: QueryBuilder<DB> = QueryBuilder::new(format!(
                "SELECT o.id FROM operations o WHERE o.state IN ({}) \
                 AND o.next_observation_ms IS NOT NULL AND o.next_observation_ms <= ",
                held_states_sql()
            ));
            qb.push_bind(now);
            qb.push(" AND o.tool IN (SELECT tool FROM contracts WHERE wire LIKE ");
            qb.push_bind(HAS_LOOKUP);
            qb.push(
                ") AND NOT EXISTS (SELECT 1 FROM lookup_claims c WHERE c.operation = o.id \
                 AND c.slot_ms = o.next_observation_ms AND c.expires_ms > ",
            );
            qb.push_bind(now);
            qb.push(")");
            if let Some(level) = at_least {
                qb.push(" AND o.tool IN (SELECT tool FROM autonomy WHERE level_rank >= ");
                qb.push_bind(level.rank());
                qb.push(")");
            }
            push_tenants(&mut qb, "o.tenant", scope);
            qb.push(" ORDER BY o.next_observation_ms, o.id LIMIT ");
            qb.push_bind(i64::try_from(limit).unwrap_or(i64::MAX));
            let rows = qb.build().fetch_all(&self.pool).await.map_err(db::<DB>)?;
            rows.iter()
                .map(|row| {
                    let id: String = row.try_get("id").map_err(db::<DB>)?;
                    codec::parse_id(&id)
                })
                .collect()
        }

        /// Held operations in `scope` whose next observation is at or before
        /// `now` (the console header's overdue count), soonest first, at most
        /// `limit`: whatever their tool, lookup or level; each with the claim an
        /// observer holds on the slot of that observation, if one does.
        pub(super) async fn read_overdue_holds(
            &self,
            scope: &Scope,
            now: DateTime<Utc>,
            limit: u64,
        ) -> Result<Vec<crate::store::Overdue>, StoreError> {
            let mut qb: QueryBuilder<DB> = QueryBuilder::new(
                "SELECT o.id, c.claimed_by, c.expires_ms FROM operations o \
                 LEFT JOIN lookup_claims c ON c.operation = o.id \
                 AND c.slot_ms = o.next_observation_ms AND c.expires_ms > ",
            );
            qb.push_bind(ms(now));
            qb.push(
                " WHERE o.queued = 1 \
                 AND o.next_observation_ms IS NOT NULL AND o.next_observation_ms <= ",
            );
            qb.push_bind(ms(now));
            push_tenants(&mut qb, "o.tenant", scope);
            qb.push(" ORDER BY o.next_observation_ms, o.id LIMIT ");
            qb.push_bind(i64::try_from(limit).unwrap_or(i64::MAX));
            let rows = qb.build().fetch_all(&self.pool).await.map_err(db::<DB>)?;
            rows.iter()
                .map(|row| {
                    let id: String = row.try_get("id").map_err(db::<DB>)?;
                    let by: Option<String> = row.try_get("claimed_by").map_err(db::<DB>)?;
                    let until: Option<i64> = row.try_get("expires_ms").map_err(db::<DB>)?;
                    let claim = match (by, until) {
                        (Some(by), Some(until)) => Some((by, codec::from_ms(until)?)),
                        _ => None,
                    };
                    Ok(crate::store::Overdue {
                        id: codec::parse_id(&id)?,
                        claim,
                    })
                })
                .collect()
        }

        pub(super) async fn write_claim_lookup(
            &self,
            id: &OperationId,
            slot: DateTime<Utc>,
            by: &str,
            now: DateTime<Utc>,
            until: DateTime<Utc>,
        ) -> Result<bool, StoreError> {
            let won = sqlx::query(
                "INSERT INTO lookup_claims (operation, slot_ms, claimed_by, claimed_ms, expires_ms) \
                 VALUES ($1, $2, $3, $4, $5) \
                 ON CONFLICT (operation, slot_ms) DO UPDATE SET claimed_by = excluded.claimed_by, \
                 claimed_ms = excluded.claimed_ms, expires_ms = excluded.expires_ms \
                 WHERE lookup_claims.expires_ms <= excluded.claimed_ms \
                 RETURNING operation",
            )
            .bind(id.as_str())
            .bind(ms(slot))
            .bind(by)
            .bind(ms(now))
            .bind(ms(until))
            .fetch_optional(&self.pool)
            .await
            .map_err(db::<DB>)?;
            Ok(won.is_some())
        }
    }
}
