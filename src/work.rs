//! The work protocol (DESIGN §9.2) as a Rust API: a worker claims approved work
//! (an authorized retry, an approved compensation or resume child) under a lease,
//! keeps the lease alive with heartbeats, and completes it with the wire records
//! of what executing it did, or releases it. Every call goes through a scoped
//! [`Session`] (G7 in SQL) and is audited; the command line's `holdfast work` and
//! the drill's executor (`holdfast drill --work`) both use these functions.

use std::path::Path;

use chrono::{DateTime, Duration, Utc};

use crate::core::access;
use crate::core::ladder::{Capability, Level};
use crate::core::model::Role;
use crate::core::refusal::{Refusal, Rule};
use crate::core::work::{self, Signer};
use crate::store::{Completion, Scope, Session, StoreError, WorkClaim, WorkStep};
use crate::wire::{LineError, Numbered};

pub use crate::core::work::{Holder, Lease, LeaseStatus};

/// Why a work call did nothing.
#[derive(Debug, thiserror::Error)]
pub enum WorkError {
    /// A guard refused it: G8 for a lease that is lost or another's, G6/G7 for
    /// an identity that may not work there.
    #[error("refused: {}: {}", .0.rule, .0.reason)]
    Refused(Refusal),
    /// The input is unusable (a worker name, a lease length).
    #[error("{0}")]
    BadInput(String),
    #[error("cannot read {path}: {error}")]
    Read { path: String, error: std::io::Error },
    /// No such operation (or none the session may see, G7): a step on it is not
    /// a lease problem. Carries the nearest visible id as a hint.
    #[error(transparent)]
    NoOperation(crate::review::ReviewError),
    #[error(transparent)]
    Store(StoreError),
}

/// A G8 refusal of a step on an operation with no lease at all, told apart:
/// when the operation itself does not exist (or is hidden, G7), that is said,
/// with the nearest visible id, instead of "never claimed".
async fn judged<T>(
    session: &Session,
    holder: &Holder,
    result: Result<T, StoreError>,
) -> Result<T, WorkError> {
    match result {
        Err(StoreError::Refused(refusal)) if refusal.rule == Rule::G8 => {
            Err(no_operation(session, holder)
                .await
                .unwrap_or(WorkError::Refused(refusal)))
        }
        other => Ok(other?),
    }
}

/// The error for `holder`'s operation when it has no lease and the session
/// cannot load it; `None` when it exists (or cannot be told).
async fn no_operation(session: &Session, holder: &Holder) -> Option<WorkError> {
    if session.lease(&holder.operation).await.ok()?.is_some() {
        return None;
    }
    match crate::review::load(session, &holder.operation).await {
        Err(e @ crate::review::ReviewError::NotFound { .. }) => Some(WorkError::NoOperation(e)),
        _ => None,
    }
}

impl From<StoreError> for WorkError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Refused(refusal) => WorkError::Refused(refusal),
            other => WorkError::Store(other),
        }
    }
}

impl From<Refusal> for WorkError {
    fn from(refusal: Refusal) -> Self {
        WorkError::Refused(refusal)
    }
}

/// Who signs the audit rows of `session`'s work: its identity, under the
/// `worker` role (`local` in single-user mode). An identity that holds the role
/// on no tenant it sees is refused (G6).
pub fn signer(session: &Session) -> Result<Signer, Refusal> {
    let actor = session.actor();
    let role = if actor.single_user() {
        Role::Local
    } else {
        if matches!(session.work_scope(), Scope::Tenants(t) if t.is_empty()) {
            return Err(Refusal {
                rule: Rule::G6,
                reason: format!(
                    "{} holds the worker role on no tenant it sees; an owner grants it with \
                     `holdfast grant {} --role worker --tenant TENANT`",
                    actor.name(),
                    actor.identity
                ),
            });
        }
        Role::Worker
    };
    Ok(Signer {
        by: actor.identity.clone(),
        role,
        policy: actor.policy.clone(),
        on_behalf_of: actor.on_behalf_of.clone(),
    })
}

fn worker_name(worker: &str) -> Result<String, WorkError> {
    access::parse_name(worker).map_err(|e| WorkError::BadInput(format!("worker name {e}")))
}

/// `now` as a store keeps an instant (milliseconds): a lease's times and the
/// audit row that records them must agree when `audit verify` compares them.
fn kept(now: DateTime<Utc>) -> DateTime<Utc> {
    chrono::SubsecRound::trunc_subsecs(now, 3)
}

fn step(session: &Session, holder: &Holder, now: DateTime<Utc>) -> Result<WorkStep, WorkError> {
    let now = kept(now);
    worker_name(&holder.worker)?;
    Ok(WorkStep {
        holder: holder.clone(),
        signer: signer(session)?,
        tenants: session.work_scope(),
        now,
    })
}

/// Claims up to `limit` pieces of work for `worker`, each under a lease of
/// `lease` from `now`, oldest first; an empty list when there is none. Each
/// piece is handed to one claimer only, however many claim at once.
pub async fn claim(
    session: &Session,
    worker: &str,
    lease: Duration,
    limit: u64,
    now: DateTime<Utc>,
) -> Result<Vec<Lease>, WorkError> {
    claim_tools(session, worker, lease, limit, None, now).await
}

/// [`claim`], only work of `tools` when given (`None`: any tool). Only work of
/// tools at autonomy level `automation` or above is handed out (rule A4).
pub async fn claim_tools(
    session: &Session,
    worker: &str,
    lease: Duration,
    limit: u64,
    tools: Option<Vec<String>>,
    now: DateTime<Utc>,
) -> Result<Vec<Lease>, WorkError> {
    let at_least = Some(Capability::ClaimWork.needs());
    claim_gated(session, worker, lease, limit, tools, at_least, now).await
}

/// [`claim`] for the drill's own test bench (`drill --work`): its simulated
/// tools are no real tools with an autonomy level, so the A4 gate is not asked.
pub(crate) async fn claim_bench(
    session: &Session,
    worker: &str,
    lease: Duration,
    limit: u64,
    now: DateTime<Utc>,
) -> Result<Vec<Lease>, WorkError> {
    claim_gated(session, worker, lease, limit, None, None, now).await
}

async fn claim_gated(
    session: &Session,
    worker: &str,
    lease: Duration,
    limit: u64,
    tools: Option<Vec<String>>,
    at_least: Option<Level>,
    now: DateTime<Utc>,
) -> Result<Vec<Lease>, WorkError> {
    let now = kept(now);
    let worker = worker_name(worker)?;
    work::lease_length(lease.num_seconds()).map_err(WorkError::BadInput)?;
    if limit == 0 {
        return Err(WorkError::BadInput(
            "a claim asks for at least 1 piece".into(),
        ));
    }
    // A tool whose lookup is unchecked is capped at `manual`: no worker gets
    // its work, whatever its level.
    let tools = match at_least {
        Some(level) if level > Level::Manual => {
            let checked = session.checked_tools().await?;
            let allowed: Vec<String> = match tools {
                Some(asked) => asked.into_iter().filter(|t| checked.contains(t)).collect(),
                None => checked,
            };
            if allowed.is_empty() {
                return Ok(Vec::new());
            }
            Some(allowed)
        }
        _ => tools,
    };
    let held = circuit_held(session).await?;
    let claim = WorkClaim {
        worker,
        signer: signer(session)?,
        tenants: session.work_scope(),
        tools,
        at_least,
        held,
        now,
        until: now + lease,
        limit,
    };
    Ok(session.claim_work(claim).await?)
}

/// The tools whose circuit holds their writes (DESIGN §9.5): open, or
/// half-open with its probe out. A worker is never the probe: a circuit
/// open past its probe delay still hands out no work, and the gateway's next
/// call (or an owner's close) decides it.
async fn circuit_held(session: &Session) -> Result<Vec<String>, WorkError> {
    let open = crate::circuit::not_closed(session)
        .await
        .map_err(WorkError::Store)?;
    if open.is_empty() {
        return Ok(Vec::new());
    }
    let contracts = session.contracts().await.map_err(WorkError::Store)?;
    Ok(open
        .into_iter()
        .filter(|c| {
            contracts
                .iter()
                .find(|k| k.tool == c.tool)
                .and_then(|k| k.circuit)
                .is_some()
        })
        .map(|c| c.tool)
        .collect())
}

/// Extends `holder`'s lease to `length` from `now` (by default the length it
/// last had); refused (G8) once the lease is lost.
pub async fn heartbeat(
    session: &Session,
    holder: &Holder,
    length: Option<Duration>,
    now: DateTime<Utc>,
) -> Result<Lease, WorkError> {
    if let Some(length) = length {
        work::lease_length(length.num_seconds()).map_err(WorkError::BadInput)?;
    }
    let step = step(session, holder, now)?;
    judged(session, holder, session.renew_work(step, length).await).await
}

/// Completes `holder`'s lease with `records` (attempt, item, observation and
/// transition records of its operation), checked exactly as ingest checks them;
/// one refused line and nothing is taken, the lease still held. Refused (G8)
/// once the lease is lost: a late worker's records are never taken.
pub async fn complete(
    session: &Session,
    holder: &Holder,
    records: Vec<Numbered>,
    now: DateTime<Utc>,
) -> Result<Completion, WorkError> {
    let step = step(session, holder, now)?;
    judged(session, holder, session.complete_work(step, records).await).await
}

/// What a completion from a file did: the lines that did not parse, and what
/// the store made of the rest (nothing is taken when any line is bad).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FileCompletion {
    pub lines: usize,
    pub completion: Completion,
}

impl FileCompletion {
    /// Every refused line with its field and rule, in line order.
    pub fn errors(&self) -> &[LineError] {
        &self.completion.report.rejected
    }

    pub fn completed(&self) -> bool {
        self.completion.lease.is_some()
    }
}

/// [`complete`] with the records of a wire-format file, read and parsed line by
/// line as `holdfast ingest` reads one. Lines that do not parse are reported
/// with the store's refusals, and nothing is taken.
pub async fn complete_file(
    session: &Session,
    holder: &Holder,
    path: &Path,
    now: DateTime<Utc>,
) -> Result<FileCompletion, WorkError> {
    let read_error = |error| WorkError::Read {
        path: path.display().to_string(),
        error,
    };
    let parsed =
        crate::bounded::read_records(path, "work completion file").map_err(|e| match e {
            crate::bounded::BoundError::Read { error, .. } => read_error(error),
            other => WorkError::BadInput(other.to_string()),
        })?;
    let lines = parsed.lines;
    let step = step(session, holder, now)?;
    let mut completion = if parsed.is_clean() {
        judged(
            session,
            holder,
            session.complete_work(step, parsed.records).await,
        )
        .await?
    } else {
        // Still judged, so every problem of the file shows at once; the bad
        // lines refuse it (a line for no operation is not taken either way).
        let (_, mut refused) =
            crate::store::plan::work::split(parsed.records.clone(), &holder.operation);
        refused.extend(parsed.errors);
        refused.sort_by_key(|e| e.line);
        let mut completion = Completion {
            report: crate::store::IngestReport::default(),
            lease: None,
            audit: None,
        };
        completion.report.rejected = refused;
        // A lost lease is refused as such, whatever its lines say.
        let lease = session.lease(&holder.operation).await?;
        let held = work::check_holder(lease.as_ref(), holder, &step.signer.by, step.now);
        judged(session, holder, held.map_err(StoreError::Refused)).await?;
        completion
    };
    completion.report.rejected.sort_by_key(|e| e.line);
    Ok(FileCompletion { lines, completion })
}

/// Gives `holder`'s lease back unfinished: the work is claimable again at once.
pub async fn release(
    session: &Session,
    holder: &Holder,
    now: DateTime<Utc>,
) -> Result<Lease, WorkError> {
    let step = step(session, holder, now)?;
    judged(session, holder, session.release_work(step).await).await
}
