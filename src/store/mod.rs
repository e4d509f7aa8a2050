//! The operations store: one async trait, one implementation per backend. Every
//! write commits its audit row in the same transaction as the change it records.

pub mod codec;
pub mod filter;
pub mod ingest_plan;
pub mod rows;
pub mod sql;
pub mod sqlite;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::core::access::GrantChange;
use crate::core::audit::{AuditRow, ChainStatus};
use crate::core::ids::OperationId;
pub use crate::core::model::Grant;
pub use crate::core::model::{ChildLink, OperationDetail, OperationRow, Proposal};
use crate::core::model::{Dataset, FailureMode, Risk, State};
pub use crate::core::rules::Commit;
use crate::wire::{LineError, Numbered};

/// What can go wrong in the store, in words a reviewer can act on. Driver errors
/// never reach the screen raw: they are mapped into these.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("operation {0} does not exist")]
    NotFound(OperationId),
    #[error(
        "operation {id} was changed by {by} at {at} (version {current}, you had {expected}); reload and decide again"
    )]
    Conflict {
        id: OperationId,
        expected: i64,
        current: i64,
        by: String,
        at: DateTime<Utc>,
    },
    #[error(
        "the store at {location} was written by a newer holdfast (schema {found}, this build knows up to {known}); upgrade holdfast"
    )]
    TooNew {
        location: String,
        found: i64,
        known: i64,
    },
    #[error("the grants changed while this change was decided; run it again")]
    GrantsChanged,
    #[error("the store is busy (another process holds it); try again")]
    Busy,
    #[error("cannot open the store at {location}: {reason}")]
    Open { location: String, reason: String },
    #[error("store error: {0}")]
    Other(String),
}

/// Which operations a listing shows. Empty vectors mean "any".
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OperationFilter {
    /// Only the console's queue: held states and operations held by a dependency.
    pub queue: bool,
    pub states: Vec<State>,
    pub tenants: Vec<String>,
    pub owners: Vec<String>,
    pub modes: Vec<FailureMode>,
    pub risks: Vec<Risk>,
    /// Case-insensitive substring over id, target, idempotency/business/correlation
    /// keys and provider request ids.
    pub search: Option<String>,
    /// Tenants the acting identity may see (G7); `None` means every tenant.
    pub visible_tenants: Option<Vec<String>>,
}

/// Order of a listing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SortOrder {
    /// Risk (critical first), then overdue next observation, then oldest first.
    #[default]
    Urgency,
    /// Oldest first.
    Age,
    /// By id.
    Id,
    /// Soonest deadline first.
    Deadline,
}

/// One page of a listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub offset: u64,
    pub limit: u64,
}

/// Counts for the queue header.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct QueueCounts {
    pub by_state: Vec<(State, u64)>,
    /// Held operations whose next observation time has passed.
    pub overdue: u64,
    /// Operations held only because something they depend on is held.
    pub held_by_dependency: u64,
    pub pending_proposals: u64,
}

/// How ingest treats bad lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IngestMode {
    /// Any bad line: report all, commit nothing.
    Strict,
    /// Commit the good lines; the bad ones are returned for the rejects file.
    Quarantine,
    /// Judge every line and report, commit nothing (the input had unparseable
    /// lines already, so a strict ingest cannot commit).
    DryRun,
}

/// What an ingest did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IngestReport {
    /// Per record type: (type, new records committed).
    pub committed: Vec<(String, u64)>,
    /// Records already stored with the same content.
    pub unchanged: u64,
    /// Lines refused, every reason for each.
    pub rejected: Vec<LineError>,
}

/// The operations store.
#[async_trait]
pub trait Store: Send + Sync {
    /// Human-readable location (path or URL without password).
    fn location(&self) -> String;

    /// Validates and commits wire records in one transaction.
    async fn ingest(
        &self,
        records: Vec<Numbered>,
        mode: IngestMode,
        by: &str,
        now: DateTime<Utc>,
    ) -> Result<IngestReport, StoreError>;

    /// One page of operations matching `filter`, plus the total that match.
    async fn list(
        &self,
        filter: &OperationFilter,
        sort: SortOrder,
        page: Page,
        now: DateTime<Utc>,
    ) -> Result<(Vec<OperationRow>, u64), StoreError>;

    async fn counts(
        &self,
        filter: &OperationFilter,
        now: DateTime<Utc>,
    ) -> Result<QueueCounts, StoreError>;

    async fn detail(&self, id: &OperationId) -> Result<OperationDetail, StoreError>;

    /// Commits one allowed action; refuses with [`StoreError::Conflict`] when the
    /// operation's version moved.
    async fn commit(&self, commit: Commit) -> Result<AuditRow, StoreError>;

    /// Audit rows with `seq` in `from..`, at most `limit`.
    async fn audit(&self, from: i64, limit: u64) -> Result<Vec<AuditRow>, StoreError>;

    /// The newest audit `seq` (0 for an empty log): a cheap change marker.
    async fn head_seq(&self) -> Result<i64, StoreError>;

    /// Walks the whole chain.
    async fn verify(&self) -> Result<ChainStatus, StoreError>;

    /// Everything, for metrics and export.
    async fn dataset(&self) -> Result<Dataset, StoreError>;

    /// Every grant, ordered by tenant, identity and role. None at all means the
    /// store is in single-user mode.
    async fn grants(&self) -> Result<Vec<Grant>, StoreError>;

    /// Inserts or deletes one grant with its audit row, in one transaction;
    /// refuses with [`StoreError::GrantsChanged`] when the grants no longer match
    /// the change's `basis` ([`crate::core::access::basis`]).
    async fn change_grant(&self, change: GrantChange) -> Result<AuditRow, StoreError>;
}
