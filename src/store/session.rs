//! The scoped session (G7): a store together with the actor reading and writing
//! it. Every surface — the console's runner, the command line, review, report,
//! export and the audit views — reads through one, and the session hands its
//! tenant scope to every query, where the store applies it in SQL. A caller
//! cannot forget the scope: it never passes one.
//!
//! A session method that only passes a call on is made from the store's list of
//! calls ([`super::store_calls`]), which says for each call whether the session
//! passes its scope, puts it in the filter, passes the call on as it is, or
//! offers no method for it. The methods written out here add something: the
//! actor's name on a claim, the work scope on a work step, grants kept to the
//! tenants in scope, an audit page in two shapes.

use std::sync::Arc;

use super::*;
use crate::core::rules::Actor;

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

    /// Judges what the store's writes made stale, telling `progress` how far
    /// it has got ([`super::judging::keep_current`]): for a command that
    /// reads the kept facts and would otherwise wait for their judging
    /// without a word. The facts are kept for every tenant alike.
    pub async fn keep_current(
        &self,
        now: chrono::DateTime<chrono::Utc>,
        progress: &super::Progress,
    ) -> Result<Option<u64>, StoreError> {
        super::judging::keep_current(self.store.as_ref(), now, progress).await
    }

    /// The rows this session's reads skipped as unreadable ([`Store::take_skipped`]).
    pub fn take_skipped(&self) -> Vec<String> {
        self.store.take_skipped()
    }

    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// This session kept to `scope` within its own: the tenants both cover.
    /// A service narrows its session to part of what the actor may see (the
    /// report leaves the drill's tenant out); a session is never widened.
    pub fn narrowed(&self, scope: &Scope) -> Session {
        let scope = match (&self.scope, scope) {
            (mine, Scope::Every) => mine.clone(),
            (Scope::Every, theirs) => theirs.clone(),
            (Scope::Tenants(mine), Scope::Tenants(theirs)) => Scope::Tenants(
                mine.iter()
                    .filter(|t| theirs.contains(t))
                    .cloned()
                    .collect(),
            ),
        };
        Session {
            store: Arc::clone(&self.store),
            actor: self.actor.clone(),
            scope,
        }
    }

    /// This session over every tenant, for a check that walks the whole store
    /// beside `audit verify`'s walk of the chain (the kept metric facts held to
    /// the records, [`crate::report::kept_facts_differ`]): refused, as the walk
    /// is, for a login that row-level security keeps to its own tenants. Named
    /// only where `src/layering.rs` allows it.
    pub async fn walking(&self) -> Result<Session, StoreError> {
        if !self.store.walks_chain().await? {
            return Err(StoreError::Other(
                "checking the whole store reads every tenant's rows, and this login sees only \
                 the tenants its grants name (row-level security): run it as the database owner"
                    .into(),
            ));
        }
        Ok(Session {
            store: Arc::clone(&self.store),
            actor: self.actor.clone(),
            scope: Scope::Every,
        })
    }

    /// The tenants in scope: the scope's own, or, when it covers every tenant,
    /// those that hold an operation ([`Store::tenants`]).
    pub async fn tenants(&self) -> Result<Vec<String>, StoreError> {
        match &self.scope {
            Scope::Every => self.store.tenants().await,
            Scope::Tenants(tenants) => Ok(tenants.clone()),
        }
    }

    /// The store's location in words.
    pub fn location(&self) -> String {
        self.store.location()
    }

    /// The newest `limit` audit rows in scope, newest first.
    pub async fn audit_latest(&self, limit: u64) -> Result<Vec<AuditRow>, StoreError> {
        self.store.audit_latest(&self.scope, None, limit).await
    }

    /// The next `limit` audit rows in scope older than `seq`, newest first.
    pub async fn audit_before(&self, seq: i64, limit: u64) -> Result<Vec<AuditRow>, StoreError> {
        self.store.audit_latest(&self.scope, Some(seq), limit).await
    }

    /// The first link of the chain at or after `seq`, as (`seq`, hash): what a
    /// saved digest is compared with.
    pub async fn chain_link_from(&self, seq: i64) -> Result<Option<(i64, Sha256)>, StoreError> {
        let rows = self.store.audit(seq, 1).await?;
        Ok(rows.into_iter().next().map(|r| (r.seq, r.hash)))
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
            scope: self.scope.clone(),
            ..filter.clone()
        }
    }
}

/// One call of `forward`.
macro_rules! forward_one {
    (scoped $(#[$doc:meta])* fn $name:ident($scope:ident: $scope_ty:ty $(, $arg:ident: $ty:ty)*) -> $ret:ty) => {
        $(#[$doc])*
        ///
        /// In this session's scope.
        pub async fn $name(&self, $($arg: $ty),*) -> Result<$ret, StoreError> {
            self.store.$name(&self.scope, $($arg),*).await
        }
    };
    (filtered $(#[$doc:meta])* fn $name:ident($filter:ident: $filter_ty:ty $(, $arg:ident: $ty:ty)*) -> $ret:ty) => {
        $(#[$doc])*
        ///
        /// In this session's scope, whatever scope `filter` names.
        pub async fn $name(&self, $filter: $filter_ty, $($arg: $ty),*) -> Result<$ret, StoreError> {
            self.store.$name(&self.scoped($filter), $($arg),*).await
        }
    };
    (whole $(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        $(#[$doc])*
        pub async fn $name(&self, $($arg: $ty),*) -> Result<$ret, StoreError> {
            self.store.$name($($arg),*).await
        }
    };
    (store $(#[$doc:meta])* fn $name:ident($($arg:ident: $ty:ty),*) -> $ret:ty) => {};
}

/// One session method for each call of [`super::store_calls`], as the list
/// says the session offers it.
macro_rules! forward {
    ($($(#[$doc:meta])* $how:ident fn $name:ident($($arg:ident: $ty:ty),* $(,)?) -> $ret:ty = $by:ident;)*) => {
        impl Session {
            $(forward_one! { $how $(#[$doc])* fn $name($($arg: $ty),*) -> $ret })*
        }
    };
}

super::store_calls!(forward);
