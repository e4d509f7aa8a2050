//! What the store is asked for by the work protocol (DESIGN §9.2): a claim, a
//! step on a lease (heartbeat, completion, release), and what a completion did.
//! The rules are in [`crate::core::work`]; the queries in `engine/work.rs`.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::{IngestReport, Scope};
use crate::core::audit::AuditRow;
use crate::core::work::{Holder, Lease, Signer};

/// A claim of up to `limit` pieces of work for `worker` until `until`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkClaim {
    pub worker: String,
    /// Who signs the claims' audit rows.
    pub signer: Signer,
    /// The tenants whose work this claim may take (G7, and the `worker` role).
    pub tenants: Scope,
    /// Only work of these tools (the autonomy gate); `None` for any tool.
    pub tools: Option<Vec<String>>,
    /// Only work of tools at this autonomy level or above (rule A4: workers
    /// claim at `automation`); `None` only for the drill's own test bench.
    pub at_least: Option<crate::core::ladder::Level>,
    /// No work of these tools: their circuit is open (DESIGN §9.5), so nothing
    /// is sent to them until a probe succeeds or an owner closes it.
    pub held: Vec<String>,
    pub now: DateTime<Utc>,
    pub until: DateTime<Utc>,
    pub limit: u64,
}

/// One step on a lease a worker says it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkStep {
    pub holder: Holder,
    pub signer: Signer,
    /// The tenants the worker may act in: a lease outside them reads as absent.
    pub tenants: Scope,
    pub now: DateTime<Utc>,
}

/// What a completion did: the records taken (checked exactly as ingest checks
/// them) and, when they were, the completed lease and its audit row. Refused
/// lines leave everything as it was, the lease still held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Completion {
    pub report: IngestReport,
    pub lease: Option<Lease>,
    pub audit: Option<AuditRow>,
}
