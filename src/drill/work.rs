//! `holdfast drill --work`: the reference executor as a worker (DESIGN §9.2). It
//! claims the approved work of a drill store through [`crate::work`] — a retry a
//! reviewer authorized, a compensation or resume child a reviewer approved —
//! executes each piece against the simulated provider under its case's contract,
//! and completes the lease with the records of what happened, through the same
//! ingest path as every other door. The provider serves each case cleanly here
//! (its scripted faults belong to the drill run itself).

use std::net::SocketAddr;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use serde_json::json;

use super::{DrillError, REAL_TIMEOUT};
use crate::core::detail::OperationDetail;
use crate::core::ids::OperationId;
use crate::core::model::{Layer, Relation, State};
use crate::executor::transport::{LiteralResolver, Transport};
use crate::executor::{Context, Credential, ExecClock, Executor, Job, Settings};
use crate::sim::{Case, Provider};
use crate::store::{Session, StoreError};
use crate::work::{self, Holder, Lease, WorkError};

/// The worker name the drill's executor claims under.
pub const WORKER: &str = "drill-executor";

/// How long the executor's leases last (the drill's clock makes execution
/// itself take no real time).
pub const LEASE_SECONDS: i64 = 300;

/// The most pieces one `drill --work` takes.
pub const MAX_PIECES: u64 = 1000;

/// What became of one piece of work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Served {
    pub operation: OperationId,
    /// The case whose contract and provider it ran under.
    pub case: Option<String>,
    pub lease: i64,
    /// The operation's state after completion (unchanged when released).
    pub state: State,
    /// Requests the provider saw for it.
    pub requests: u32,
    /// Effects the provider applied for it.
    pub effects: u32,
    /// Why it was released instead of executed, when it was.
    pub released: Option<String>,
}

/// The drill case an operation belongs to: its own id or its root parent's.
async fn case_of<'c>(
    session: &Session,
    detail: &OperationDetail,
    cases: &'c [Case],
) -> Result<Option<&'c Case>, StoreError> {
    let mut root = detail.row.operation.clone();
    // Children hang off their parent; a few hops at most.
    for _ in 0..8 {
        if let Some(case) = cases.iter().find(|c| c.id == root.id.as_str()) {
            return Ok(Some(case));
        }
        let Some(parent) = root.parent.clone() else {
            break;
        };
        root = session.detail(&parent).await?.row.operation;
    }
    Ok(None)
}

/// The job for a piece of work: the operation as stored (in `APPROVED`), the
/// case's contract and lookup, and a stand-in payload (holdfast keeps only the
/// payload's hash; the drill's provider records the hash it is sent).
fn job(detail: &OperationDetail, case: &Case, base: &str) -> Job {
    let op = detail.row.operation.clone();
    let items: Vec<u32> = match op.relation {
        Some(Relation::ResumeOf) => detail.items.iter().map(|i| i.index).collect(),
        _ => Vec::new(),
    };
    // Checked when the case was read, with the same shape of URL.
    let lookup = case.lookup_spec(base).ok().flatten();
    Job {
        inverse_of: match op.relation {
            Some(Relation::CompensationOf) => op.parent.clone(),
            _ => None,
        },
        contract: case.contract.clone(),
        lookup,
        endpoint: base.to_owned(),
        payload: json!({"work": op.id.as_str(), "payload_hash": op.payload_hash.as_str()}),
        items,
        required: Vec::new(),
        version: 1,
        credential: Credential {
            identity: "I05".to_owned(),
            generation: 1,
        },
        layer: Layer::Queue,
        context: Context {
            stored_state: Some(op.state),
            prior_attempts: u32::try_from(detail.attempts.len()).unwrap_or(u32::MAX),
            prior_observations: u32::try_from(detail.observations.len()).unwrap_or(u32::MAX),
            ..Context::default()
        },
        operation: op,
    }
}

fn refused(error: WorkError) -> DrillError {
    match error {
        WorkError::Store(e) => DrillError::Store(e),
        other => DrillError::Case {
            case: WORKER.to_owned(),
            reason: other.to_string(),
        },
    }
}

/// Claims every piece of approved work `session` may take at `now`, executes
/// each against a simulated provider on 127.0.0.1 and completes its lease with
/// the records; work that belongs to no case in `cases` is released untouched.
pub async fn serve(
    session: &Session,
    cases: &[Case],
    now: DateTime<Utc>,
) -> Result<Vec<Served>, DrillError> {
    let leases = work::claim_bench(
        session,
        WORKER,
        Duration::seconds(LEASE_SECONDS),
        MAX_PIECES,
        now,
    )
    .await
    .map_err(refused)?;
    if leases.is_empty() {
        return Ok(Vec::new());
    }
    let provider = Provider::new();
    let running =
        crate::sim::serve(provider.clone(), SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let clock = ExecClock::simulated(now);
    let executor = Executor::new(
        Transport::new(Arc::new(LiteralResolver), REAL_TIMEOUT),
        clock.clone(),
        Settings::default(),
    );
    let mut served = Vec::with_capacity(leases.len());
    for lease in &leases {
        let result = serve_one(
            session, cases, &provider, &running, &executor, &clock, lease, now,
        )
        .await;
        match result {
            Ok(one) => served.push(one),
            Err(e) => {
                running.stop().await;
                return Err(e);
            }
        }
    }
    running.stop().await;
    Ok(served)
}

#[allow(clippy::too_many_arguments)]
async fn serve_one(
    session: &Session,
    cases: &[Case],
    provider: &Provider,
    running: &crate::sim::Running,
    executor: &Executor,
    clock: &ExecClock,
    lease: &Lease,
    now: DateTime<Utc>,
) -> Result<Served, DrillError> {
    let holder = Holder {
        operation: lease.operation.clone(),
        worker: lease.worker.clone(),
        generation: Some(lease.generation),
    };
    let detail = session.detail(&lease.operation).await?;
    let Some(case) = case_of(session, &detail, cases).await? else {
        work::release(session, &holder, now)
            .await
            .map_err(refused)?;
        return Ok(Served {
            operation: lease.operation.clone(),
            case: None,
            lease: lease.generation,
            state: detail.row.operation.state,
            requests: 0,
            effects: 0,
            released: Some("no drill case holds this operation".into()),
        });
    };
    if provider.counters(&case.id).is_none() {
        // The case's contract, served without its scripted faults.
        let clean = Case {
            provider: Vec::new(),
            ..case.clone()
        };
        provider.add_case(clean, clock.clone());
    }
    let job = job(&detail, case, &running.case_url(&case.id));
    let run = executor.carry_out(&job, executor.prepare(&job)).await;
    let lines = super::wire_lines(&run.records()).map_err(|errors| DrillError::Refused {
        case: case.id.clone(),
        errors: errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
    })?;
    let completion = work::complete(session, &holder, lines, now)
        .await
        .map_err(refused)?;
    if !completion.report.rejected.is_empty() {
        work::release(session, &holder, now)
            .await
            .map_err(refused)?;
        return Err(DrillError::Refused {
            case: case.id.clone(),
            errors: completion
                .report
                .rejected
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        });
    }
    // The provider is this serve's own and each operation is served once, so
    // its counts for the operation are this execution's.
    let counters = provider.counters(&case.id).unwrap_or_default();
    let count = |map: &std::collections::BTreeMap<String, u32>| {
        map.get(lease.operation.as_str()).copied().unwrap_or(0)
    };
    Ok(Served {
        operation: lease.operation.clone(),
        case: Some(case.id.clone()),
        lease: lease.generation,
        state: session.detail(&lease.operation).await?.row.operation.state,
        requests: count(&counters.requests_by_operation),
        effects: count(&counters.effects_by_operation),
        released: None,
    })
}
