//! The scoped session (G7): a store together with the actor reading and writing
//! it. Every surface — the console's runner, the command line, review, report,
//! export and the audit views — reads through one, and the session hands its
//! tenant scope to every query, where the store applies it in SQL. A caller
//! cannot forget the scope: it never passes one.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use super::{
    Completion, GrantChange, Live, OperationFilter, Page, QueueCounts, Scope, SortOrder, Store,
    StoreError, WorkClaim, WorkStep,
};
use crate::core::audit::{AuditRow, ChainStatus};
use crate::core::detail::{Dataset, OperationDetail};
use crate::core::ids::{OperationId, Sha256};
use crate::core::model::{Grant, OperationRow};
use crate::core::rules::{Actor, Commit};
use crate::core::work::Lease;

/// A store as one actor sees it: only the tenants the actor's grants name
/// (every tenant in single-user mode).
///
/// Audit rows that belong to no operation — the `holdfast:grants` rows of grant
/// changes — are in no tenant, so only an unscoped (single-user) session reads
/// them among the audit rows; [`Session::grants`] lists the grants on the
/// tenants in scope, as `holdfast grants` always did. The chain's status, its
/// head `seq` and the live signal carry no tenant's data and are whole-store.
#[derive(Clone)]
pub struct Session {
    store: Arc<dyn Store>,
    actor: Actor,
    scope: Scope,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("store", &self.store.location())
            .field("actor", &self.actor.name())
            .field("scope", &self.scope)
            .finish()
    }
}

impl Session {
    /// `actor` on `store`, scoped to the tenants the actor's grants name.
    pub fn new(store: Arc<dyn Store>, actor: Actor) -> Session {
        let scope = Scope::from(actor.visible_tenants());
        Session {
            store,
            actor,
            scope,
        }
    }

    pub fn actor(&self) -> &Actor {
        &self.actor
    }

    /// The rows this session's reads skipped as unreadable ([`Store::take_skipped`]).
    pub fn take_skipped(&self) -> Vec<String> {
        self.store.take_skipped()
    }

    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The store behind the session, for reads that apply [`Self::scope`]
    /// themselves.
    pub(crate) fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// The store's location in words.
    pub fn location(&self) -> String {
        self.store.location()
    }

    /// One page of the operations in scope matching `filter`, and their total.
    pub async fn list(
        &self,
        filter: &OperationFilter,
        sort: SortOrder,
        page: Page,
    ) -> Result<(Vec<OperationRow>, u64), StoreError> {
        self.store.list(&self.scoped(filter), sort, page).await
    }

    /// One keyset page, in urgency order, of the operations in scope matching
    /// `filter` after `after` (see [`crate::store::sql::keyset_page`]).
    pub async fn urgency_page(
        &self,
        filter: &OperationFilter,
        after: Option<&crate::store::sql::SortKey>,
        limit: u64,
    ) -> Result<Vec<crate::store::sql::SortKey>, StoreError> {
        self.store
            .urgency_page(&self.scoped(filter), after, limit)
            .await
    }

    /// How many operations in scope match `filter`.
    pub async fn count(&self, filter: &OperationFilter) -> Result<u64, StoreError> {
        self.store.count(&self.scoped(filter)).await
    }

    /// The ids of every operation in scope matching `filter`, in `sort` order.
    pub async fn matching_ids(
        &self,
        filter: &OperationFilter,
        sort: SortOrder,
    ) -> Result<Vec<OperationId>, StoreError> {
        self.store.matching_ids(&self.scoped(filter), sort).await
    }

    /// Queue counts of the operations in scope matching `filter`.
    pub async fn counts(
        &self,
        filter: &OperationFilter,
        now: DateTime<Utc>,
    ) -> Result<QueueCounts, StoreError> {
        self.store.counts(&self.scoped(filter), now).await
    }

    /// One operation in scope; [`StoreError::NotFound`] for one outside it, the
    /// same as for one that does not exist.
    pub async fn detail(&self, id: &OperationId) -> Result<OperationDetail, StoreError> {
        self.store.detail_in(&self.scope, id).await
    }

    /// The newest `limit` audit rows in scope, newest first.
    pub async fn audit_latest(&self, limit: u64) -> Result<Vec<AuditRow>, StoreError> {
        self.store.audit_latest(&self.scope, None, limit).await
    }

    /// The next `limit` audit rows in scope older than `seq`, newest first.
    pub async fn audit_before(&self, seq: i64, limit: u64) -> Result<Vec<AuditRow>, StoreError> {
        self.store.audit_latest(&self.scope, Some(seq), limit).await
    }

    /// Everything in scope, for metrics, the report and export.
    pub async fn dataset(&self) -> Result<Dataset, StoreError> {
        self.store.dataset_in(&self.scope).await
    }

    /// Judges every operation whose kept metric facts are stale at `now`
    /// ([`Store::refresh_facts`]); returns how many were judged. A report does
    /// it first; after a large ingest the first one judges the whole store.
    pub async fn refresh_metric_facts(&self, now: DateTime<Utc>) -> Result<u64, StoreError> {
        self.store.refresh_facts(now).await
    }

    /// Walks the whole chain; only its status comes back.
    pub async fn verify(&self) -> Result<ChainStatus, StoreError> {
        self.store.verify().await
    }

    /// Walks the chain after a saved digest (row `seq` with `hash`) only.
    pub async fn verify_from(&self, seq: i64, hash: &Sha256) -> Result<ChainStatus, StoreError> {
        self.store.verify_from(seq, hash).await
    }

    /// The first link of the chain at or after `seq`, as (`seq`, hash): what a
    /// saved digest is compared with.
    pub async fn chain_link_from(&self, seq: i64) -> Result<Option<(i64, Sha256)>, StoreError> {
        let rows = self.store.audit(seq, 1).await?;
        Ok(rows.into_iter().next().map(|r| (r.seq, r.hash)))
    }

    /// The newest audit `seq` of the whole store: a change marker.
    pub async fn head_seq(&self) -> Result<i64, StoreError> {
        self.store.head_seq().await
    }

    /// Live updates of the whole store (a `seq` and the link, no rows).
    pub async fn watch(&self) -> Result<watch::Receiver<Live>, StoreError> {
        self.store.watch().await
    }

    /// The grants on the tenants in scope, ordered by tenant, identity and role.
    pub async fn grants(&self) -> Result<Vec<Grant>, StoreError> {
        let mut grants = self.store.grants().await?;
        grants.retain(|g| self.actor.sees(&g.tenant));
        Ok(grants)
    }

    /// Every grant, for deciding a grant change: the rules (owners, the last
    /// owner, the basis a change is made on) are over the whole table.
    pub async fn all_grants(&self) -> Result<Vec<Grant>, StoreError> {
        self.store.grants().await
    }

    /// Commits a decided action (see [`crate::review`]).
    pub async fn commit(&self, commit: Commit) -> Result<AuditRow, StoreError> {
        self.store.commit(commit).await
    }

    /// Commits a decided grant change (see [`crate::review::change_grant`]).
    pub async fn change_grant(&self, change: GrantChange) -> Result<AuditRow, StoreError> {
        self.store.change_grant(change).await
    }

    /// [`Store::overdue_holds`] in this session's scope.
    pub async fn overdue_holds(
        &self,
        now: DateTime<Utc>,
        limit: u64,
    ) -> Result<Vec<super::Overdue>, StoreError> {
        self.store.overdue_holds(&self.scope, now, limit).await
    }

    /// Ids of the holds in scope whose lookup is due at `now` (see
    /// [`Store::due_lookups`]).
    pub async fn due_lookups(
        &self,
        now: DateTime<Utc>,
        at_least: Option<crate::core::ladder::Level>,
        limit: u64,
    ) -> Result<Vec<OperationId>, StoreError> {
        self.store
            .due_lookups(&self.scope, now, at_least, limit)
            .await
    }

    /// The tools whose status lookup counts as checked now: every stored
    /// contract's tool but those whose lookup object was never proven to find a
    /// record known to exist (`holdfast lookup check`), which are capped at
    /// `manual` whatever their level.
    pub async fn checked_tools(&self) -> Result<Vec<String>, StoreError> {
        let checks = self.store.lookup_checks().await?;
        let contracts = self.store.contracts().await?;
        Ok(contracts
            .iter()
            .filter(|c| {
                let latest = checks.iter().rev().find(|k| k.tool == c.tool);
                crate::core::autonomy::unchecked(Some(c), latest).is_none()
            })
            .map(|c| c.tool.clone())
            .collect())
    }

    /// Claims one lookup slot for this session's actor (see
    /// [`Store::claim_lookup`]).
    pub async fn claim_lookup(
        &self,
        id: &OperationId,
        slot: DateTime<Utc>,
        now: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        self.store
            .claim_lookup(id, slot, self.actor.principal(), now, until)
            .await
    }

    /// The tenants this session's actor may work in (G7 and the `worker` role),
    /// as a scope the store applies in SQL.
    pub fn work_scope(&self) -> Scope {
        match (self.actor.work_tenants(), &self.scope) {
            (None, scope) => scope.clone(),
            (Some(work), Scope::Every) => Scope::Tenants(work),
            (Some(work), Scope::Tenants(seen)) => {
                Scope::Tenants(work.into_iter().filter(|t| seen.contains(t)).collect())
            }
        }
    }

    /// Claims work in this session's work scope (see [`Store::claim_work`]);
    /// whatever tenants `claim` named are replaced by that scope.
    pub async fn claim_work(&self, claim: WorkClaim) -> Result<Vec<Lease>, StoreError> {
        let claim = WorkClaim {
            tenants: self.work_scope(),
            ..claim
        };
        self.store.claim_work(&claim).await
    }

    /// The lease on `id`, if it is in scope.
    pub async fn lease(&self, id: &OperationId) -> Result<Option<Lease>, StoreError> {
        self.store.lease(&self.scope, id).await
    }

    /// A heartbeat in this session's work scope (see [`Store::renew_work`]).
    pub async fn renew_work(
        &self,
        step: WorkStep,
        length: Option<chrono::Duration>,
    ) -> Result<Lease, StoreError> {
        self.store.renew_work(&self.scoped_step(step), length).await
    }

    /// A completion in this session's work scope (see [`Store::complete_work`]).
    pub async fn complete_work(
        &self,
        step: WorkStep,
        records: Vec<crate::wire::Numbered>,
    ) -> Result<Completion, StoreError> {
        self.store
            .complete_work(&self.scoped_step(step), records)
            .await
    }

    /// A release in this session's work scope (see [`Store::release_work`]).
    pub async fn release_work(&self, step: WorkStep) -> Result<Lease, StoreError> {
        self.store.release_work(&self.scoped_step(step)).await
    }

    fn scoped_step(&self, step: WorkStep) -> WorkStep {
        WorkStep {
            tenants: self.work_scope(),
            ..step
        }
    }

    /// `filter` with this session's tenants in place of whatever it said.
    fn scoped(&self, filter: &OperationFilter) -> OperationFilter {
        OperationFilter {
            visible_tenants: self.scope.tenants().map(<[String]>::to_vec),
            ..filter.clone()
        }
    }
}
