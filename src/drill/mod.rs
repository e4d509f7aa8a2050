//! The drill (DESIGN §9.3): runs fault-injection cases end to end — the simulated
//! provider on a loopback port, the reference executor, the store through the
//! ordinary ingest path — and judges each case by what the provider counted and
//! what the store holds, then computes the metrics and the release gate.
//!
//! The drill holds the store itself, not a session: it writes its cases'
//! records through ingest into a store (or a tenant) of its own and reads its
//! own operations back for the verdicts.

pub mod incident;
pub mod table;
pub mod work;

use std::net::SocketAddr;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use serde_json::{Value, json};

use crate::core::contract::Contract;
use crate::core::detail::OperationDetail;
use crate::core::ids::{OperationId, Sha256};
use crate::core::lookup::StatusLookup;
use crate::core::matrix;
use crate::core::metrics::{self, Report};
use crate::core::model::{
    Approval, AttemptKind, FailureMode, Layer, Observation, ObservationSource, Operation, Phase,
    Relation, Risk, Role, State, TransitionRecord,
};
use crate::executor::transport::{LiteralResolver, Resolver, Transport};
use crate::executor::{Context, Credential, ExecClock, Executor, Job, Run, RunOutcome, Settings};
use crate::sim::case::{Case, DeliveryKind, On, Recovery, SIM_PLACEHOLDER};
use crate::sim::{Counters, Provider, Running, parse_cases};
use crate::store::{IngestMode, Scope, Store, StoreError};
use crate::wire::{LineError, Numbered, Record, parse_line, write_line};

/// The seed's sixteen injections, two per failure mode.
pub const SEED_CASES: &str = include_str!("../../assets/drill/seed.jsonl");

/// The instant every case's deterministic clock starts at (the seed's K02).
pub fn epoch() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-09-05T10:00:00Z")
        .map(|t| t.with_timezone(&Utc))
        .unwrap_or_default()
}

/// The real time an exchange may take in the drill before it counts as a
/// timeout (the deterministic clock is charged the contract's timeout). Generous:
/// on a loaded machine an ordinary answer must never turn into a timeout, and a
/// scripted `hang` still answers later than this.
pub const REAL_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// Who the drill's records are ingested as.
pub const DRILL_IDENTITY: &str = "svc:drill";

/// The seed's sixteen cases.
pub fn seed_cases() -> Result<Vec<Case>, Vec<LineError>> {
    parse_cases(SEED_CASES)
}

/// The seed's cases under one tool's own contract (`holdfast drill --tool`): every
/// case runs with that contract (its method, idempotency, retryable list, owner,
/// attempts, budget, call path and response shape) and its status lookup's
/// timeout, lag window, not-found statuses, URL path and field pointers, which
/// the simulated provider serves under the case's base URL. What each case injects and expects
/// stays the seed's. One adjustment keeps an injection meaningful: a delivery
/// scripted to arrive after the case's key retention window arrives the same
/// time after the tool's window instead (the key-expiry injection).
pub fn under_contract(cases: &[Case], contract: &Contract) -> Result<Vec<Case>, String> {
    let Some(spec) = contract.status_lookup.spec() else {
        return Err(format!(
            "tool {}'s contract has no status lookup object (DESIGN §9.1); the drill needs one to emulate",
            contract.tool
        ));
    };
    let lookup = emulated_lookup(spec);
    let mut drilled = contract.clone();
    drilled.status_lookup = StatusLookup::ByHand;
    Ok(cases
        .iter()
        .map(|case| {
            let mut case = case.clone();
            if let (Some(from), Some(to)) = (
                case.contract.idempotency.retention_hours,
                drilled.idempotency.retention_hours,
            ) {
                let window = u64::from(from) * 3600;
                for delivery in &mut case.operation.deliveries {
                    if delivery.after_seconds > window {
                        delivery.after_seconds =
                            delivery.after_seconds - window + u64::from(to) * 3600;
                    }
                }
            }
            case.contract = drilled.clone();
            case.lookup = Some(lookup.clone());
            case
        })
        .collect())
}

/// A status lookup as the simulated provider emulates it: the lookup's own
/// method-independent parts (its URL's path and query under `{sim}`, its
/// timeout, lag window, not-found statuses and field pointers), asked by GET.
pub fn emulated_lookup(spec: &crate::core::lookup::LookupSpec) -> crate::sim::case::RawLookup {
    let template = spec.url.as_str();
    let after_scheme = template.find("://").map_or(0, |i| i + 3);
    let rest = template[after_scheme..]
        .find(['/', '?'])
        .map_or("", |i| &template[after_scheme + i..]);
    let mut lookup = crate::sim::case::RawLookup::new();
    lookup.insert("method".into(), json!("GET"));
    lookup.insert("url".into(), json!(format!("{SIM_PLACEHOLDER}{rest}")));
    lookup.insert("timeout_ms".into(), json!(spec.timeout_ms()));
    lookup.insert("lag_seconds".into(), json!(spec.lag_seconds()));
    if let Some(statuses) = &spec.not_found_status {
        lookup.insert("not_found_status".into(), json!(statuses));
    }
    let fields: serde_json::Map<String, Value> = spec
        .fields
        .named()
        .into_iter()
        .filter_map(|(name, pointer)| pointer.map(|p| (name.to_owned(), json!(p.as_str()))))
        .collect();
    if !fields.is_empty() {
        lookup.insert("fields".into(), Value::Object(fields));
    }
    lookup
}

/// Why a drill could not run (a failing case is a result, not an error).
#[derive(Debug, thiserror::Error)]
pub enum DrillError {
    #[error(transparent)]
    Serve(#[from] crate::sim::provider::ServeError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("case {case}: the store refused the executor's records: {errors}")]
    Refused { case: String, errors: String },
    #[error("case {case}: {reason}")]
    Case { case: String, reason: String },
}

/// What a case expected or what was observed, in the same shape. An expected
/// figure is absent when the case does not check it; an observed one is always
/// there for the provider's counts and the state, and for the extras when the
/// case asks for them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Figures {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<State>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requests: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status_queries: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effects: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retried_before_reconcile: Option<bool>,
    /// Requests the simulated provider had no route for (answered 404).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unrouted: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub identities: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dependent_requests: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_item_effects: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery_state: Option<State>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deliveries: Option<Vec<State>>,
}

/// One expectation a case did not meet: which figure, what the case expected and
/// what the drill observed (`null` where a figure was not produced at all).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Miss {
    pub expectation: &'static str,
    pub expected: Value,
    pub observed: Value,
    /// `state: expected SUCCEEDED, observed UNKNOWN`.
    pub words: String,
}

/// Every expectation of `expected` that `observed` does not meet, in the order of
/// [`Figures`]' fields; a figure the case does not give is not checked, so the
/// list is empty exactly when every given figure was observed as expected.
pub fn misses(expected: &Figures, observed: &Figures) -> Vec<Miss> {
    // Destructured so that a new figure cannot be added without being judged here.
    let Figures {
        state,
        requests,
        status_queries,
        effects,
        retried_before_reconcile,
        unrouted,
        identities,
        dependent_requests,
        max_item_effects,
        recovery_state,
        deliveries,
    } = expected;
    let mut out = Vec::new();
    let mut check = |name: &'static str, want: Value, got: Value| {
        if !want.is_null() && want != got {
            let words = format!(
                "{name}: expected {}, observed {}",
                shown(&want),
                shown(&got)
            );
            out.push(Miss {
                expectation: name,
                expected: want,
                observed: got,
                words,
            });
        }
    };
    check("state", json!(state), json!(observed.state));
    check("requests", json!(requests), json!(observed.requests));
    check(
        "status_queries",
        json!(status_queries),
        json!(observed.status_queries),
    );
    check("effects", json!(effects), json!(observed.effects));
    check(
        "retried_before_reconcile",
        json!(retried_before_reconcile),
        json!(observed.retried_before_reconcile),
    );
    check("unrouted", json!(unrouted), json!(observed.unrouted));
    check("identities", json!(identities), json!(observed.identities));
    check(
        "dependent_requests",
        json!(dependent_requests),
        json!(observed.dependent_requests),
    );
    check(
        "max_item_effects",
        json!(max_item_effects),
        json!(observed.max_item_effects),
    );
    check(
        "recovery_state",
        json!(recovery_state),
        json!(observed.recovery_state),
    );
    check(
        "deliveries",
        json!(deliveries),
        json!(observed.deliveries.clone().unwrap_or_default()),
    );
    out
}

/// A figure in words: a state or number as is, `none` for a figure never
/// produced, a list joined by commas (`[]` when empty).
fn shown(value: &Value) -> String {
    match value {
        Value::Null => "none".to_owned(),
        Value::String(s) => crate::core::sanitize::sanitize(s).into_owned(),
        Value::Array(list) if list.is_empty() => "[]".to_owned(),
        Value::Array(list) => list.iter().map(shown).collect::<Vec<_>>().join(","),
        other => other.to_string(),
    }
}

/// One case's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct CaseResult {
    pub id: String,
    pub mode: FailureMode,
    pub name: String,
    pub pass: bool,
    pub expected: Figures,
    pub observed: Figures,
    /// Each expectation not met (empty on a pass).
    pub failed: Vec<Miss>,
    /// Everything the provider counted.
    #[serde(skip)]
    pub counters: Counters,
    /// The operations the case created, main one first.
    #[serde(skip)]
    pub operations: Vec<OperationId>,
    /// A protected case (DESIGN §9.3): shown by its id and pass or fail only.
    #[serde(skip)]
    pub protected: bool,
}

impl CaseResult {
    /// A protected case that could not run to its verdict: failed, and nothing
    /// of why (the reason would tell its script).
    pub fn withheld(case: &Case) -> CaseResult {
        CaseResult {
            id: case.id.clone(),
            mode: case.mode,
            name: String::new(),
            pass: false,
            expected: Figures::default(),
            observed: Figures::default(),
            failed: Vec::new(),
            counters: Counters::default(),
            operations: Vec::new(),
            protected: true,
        }
    }

    /// The case as `--json` shows it: a protected case by its id and verdict
    /// alone.
    pub fn to_json(&self) -> Value {
        if self.protected {
            json!({"id": self.id, "protected": true, "pass": self.pass})
        } else {
            json!(self)
        }
    }
}

/// A whole drill.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub cases: Vec<CaseResult>,
    pub report: Report,
}

impl Outcome {
    pub fn all_pass(&self) -> bool {
        self.cases.iter().all(|c| c.pass)
    }

    /// The `--json` shape of DESIGN §9.3.
    pub fn to_json(&self) -> Value {
        let cases: Vec<Value> = self.cases.iter().map(CaseResult::to_json).collect();
        json!({
            "cases": cases,
            "metrics": self.report.metrics,
            "release": self.report.release,
        })
    }
}

/// The drill's resolver: asks the simulated provider whether the script fails the
/// name lookup of this attempt, else resolves literal addresses.
struct SimResolver {
    provider: Provider,
}

impl Resolver for SimResolver {
    fn resolve(
        &self,
        host: &str,
        port: u16,
        path: &str,
        kind: AttemptKind,
    ) -> Result<SocketAddr, String> {
        if let Some(case) = path
            .strip_prefix("/cases/")
            .and_then(|rest| rest.split(['/', '?']).next())
        {
            let on = match kind {
                AttemptKind::Request => On::Request,
                AttemptKind::StatusQuery => On::Status,
            };
            self.provider.resolve(case, on)?;
        }
        LiteralResolver.resolve(host, port, path, kind)
    }
}

/// The actor of every operation a drill writes: what tells a drill's operation
/// from any other ([`foreign_operation`]).
pub const DRILL_AGENT: &str = "svc:drill-agent";

/// The tenant a drill's operations go to in a store that holds other
/// operations (`holdfast drill --into-existing`); the report of the real
/// tenants never counts it ([`crate::report::without_drill`]).
pub const DRILL_TENANT: &str = "drill";

/// Operations read per page when a store is searched for one a drill did not
/// write.
const FOREIGN_PAGE: u64 = 500;

/// The first operation of `store` (in id order) that no drill wrote, with how
/// many operations the store holds; `None` when every operation is a drill's
/// (an empty store included). Read a page at a time, stopping at the first.
pub async fn foreign_operation(
    store: &dyn Store,
) -> Result<Option<(crate::core::model::Operation, u64)>, StoreError> {
    use crate::store::{OperationFilter, Page, SortOrder, Start};
    let filter = OperationFilter::default();
    let mut page = Page::first(FOREIGN_PAGE);
    loop {
        let (rows, total) = store.list(&filter, SortOrder::Id, page).await?;
        if let Some(row) = rows.iter().find(|r| r.operation.actor != DRILL_AGENT) {
            return Ok(Some((row.operation.clone(), total)));
        }
        match rows.last() {
            Some(last) if rows.len() as u64 == FOREIGN_PAGE => {
                page = Page {
                    start: Start::After(last.operation.id.clone()),
                    limit: FOREIGN_PAGE,
                };
            }
            _ => return Ok(None),
        }
    }
}

/// The first tool (by name) whose contract `store` holds without any
/// operation of it: a contract no drill wrote (a drill writes each contract
/// with its case's operation). `None` when every contract has operations.
pub async fn foreign_contract(store: &dyn Store) -> Result<Option<String>, StoreError> {
    let mut tools: Vec<String> = store
        .contracts()
        .await?
        .into_iter()
        .map(|c| c.tool)
        .collect();
    tools.sort();
    for tool in tools {
        if store.tool_tenants(&tool).await?.is_empty() {
            return Ok(Some(tool));
        }
    }
    Ok(None)
}

/// Runs `cases` against a fresh simulated provider on 127.0.0.1, recording into
/// `store`.
pub async fn run(store: &dyn Store, cases: &[Case]) -> Result<Outcome, DrillError> {
    run_into(store, cases, None).await
}

/// Runs `cases` into `store`; with `tenant`, every case's operations go to that
/// tenant, and the metrics and gate are computed over it alone (a drill into a
/// store that holds other tenants). Refused before anything is written when an
/// operation id is taken or, under `tenant`, a case's tool is one the store
/// already has a contract for (its operations would weigh on that tool's
/// autonomy gate).
pub async fn run_into(
    store: &dyn Store,
    cases: &[Case],
    tenant: Option<&str>,
) -> Result<Outcome, DrillError> {
    let cases: Vec<Case> = cases
        .iter()
        .cloned()
        .map(|mut case| {
            if let Some(tenant) = tenant {
                case.operation.tenant = tenant.to_owned();
            }
            case
        })
        .collect();
    let contracts = store.contracts().await?;
    for case in &cases {
        let tool = &case.contract.tool;
        if contracts
            .iter()
            .any(|c| &c.tool == tool && c != &case.contract)
        {
            return Err(DrillError::Case {
                case: case.id.clone(),
                reason: format!(
                    "{} already has another contract for tool {tool}; run the drill into a fresh store (leave out --db and --database-url)",
                    store.location()
                ),
            });
        }
        // Under its own tenant the drill uses tools of its own, so that its
        // operations never weigh on a real tool's autonomy gate (A3): a tool
        // the store knows is the drill's only while all its operations are.
        if let Some(tenant) = tenant {
            let tenants = store.tool_tenants(tool).await?;
            let ours = !tenants.is_empty() && tenants.iter().all(|t| t == tenant);
            let known = !tenants.is_empty() || contracts.iter().any(|c| &c.tool == tool);
            if known && !ours {
                let what = match tenants.iter().find(|t| *t != tenant) {
                    Some(other) => format!("operations of tenant {other}"),
                    None => "its contract".to_owned(),
                };
                return Err(DrillError::Case {
                    case: case.id.clone(),
                    reason: format!(
                        "{} already holds tool {tool} ({what}): with --into-existing the drill uses tools of its own, so its operations never weigh on another tool's autonomy gate (`holdfast drill --tool {tool}` drills a store's own tool, its operations in a store of their own)",
                        store.location()
                    ),
                });
            }
        }
        match store.detail(&Scope::Every, &id(&case.id)?).await {
            Ok(held) => {
                let whose = if held.row.operation.actor == DRILL_AGENT {
                    "from an earlier drill".to_owned()
                } else {
                    format!("of tenant {}", held.row.operation.tenant)
                };
                return Err(DrillError::Case {
                    case: case.id.clone(),
                    reason: format!(
                        "{} already holds operation {} {whose}; run the drill into a fresh store (leave out --db and --database-url)",
                        store.location(),
                        case.id
                    ),
                });
            }
            Err(StoreError::NotFound(_)) => {}
            Err(other) => return Err(other.into()),
        }
    }
    let cases = &cases[..];
    let provider = Provider::new();
    let running =
        crate::sim::serve(provider.clone(), SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let mut results = Vec::new();
    let mut latest = epoch();
    for case in cases {
        match run_case(store, &provider, &running, case).await {
            Ok((result, end)) => {
                latest = latest.max(end);
                results.push(result);
            }
            // A protected case says nothing of why it could not run: it fails.
            Err(_) if case.protected => results.push(CaseResult::withheld(case)),
            Err(e) => return Err(e),
        }
    }
    running.stop().await;
    let dataset = match tenant {
        Some(tenant) => {
            store
                .dataset(&Scope::Tenants(vec![tenant.to_owned()]))
                .await?
        }
        None => store.dataset(&Scope::Every).await?,
    };
    let report = metrics::report(&dataset, latest);
    Ok(Outcome {
        cases: results,
        report,
    })
}

/// Writes records through the ordinary ingest path: each record is written as a
/// wire line and parsed back, then planned and committed by the store under the
/// same rules as `holdfast ingest`.
pub async fn record(
    store: &dyn Store,
    case: &str,
    records: &[Record],
    now: DateTime<Utc>,
) -> Result<(), DrillError> {
    let refused = |errors: &[LineError]| DrillError::Refused {
        case: case.to_owned(),
        errors: errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
    };
    let numbered = wire_lines(records).map_err(|errors| refused(&errors))?;
    let report = store
        .ingest(numbered, IngestMode::Strict, DRILL_IDENTITY, now)
        .await?;
    if report.rejected.is_empty() {
        Ok(())
    } else {
        Err(refused(&report.rejected))
    }
}

/// Records as a file would carry them: each written as a wire line and parsed
/// back, numbered from 1.
pub fn wire_lines(records: &[Record]) -> Result<Vec<Numbered>, Vec<LineError>> {
    let mut numbered = Vec::with_capacity(records.len());
    let mut errors = Vec::new();
    for (index, record) in records.iter().enumerate() {
        match parse_line(write_line(record).as_bytes(), index + 1) {
            Ok(record) => numbered.push(Numbered {
                line: index + 1,
                record,
                line_sha256: None,
            }),
            Err(mut e) => errors.append(&mut e),
        }
    }
    if errors.is_empty() {
        Ok(numbered)
    } else {
        Err(errors)
    }
}

fn payload_hash(payload: &Value) -> Sha256 {
    Sha256::of(payload.to_string().as_bytes())
}

fn id(text: &str) -> Result<OperationId, DrillError> {
    OperationId::parse(text).map_err(|e| DrillError::Case {
        case: text.to_owned(),
        reason: format!("not a usable operation id: {e}"),
    })
}

/// The prohibitions and veto flag an expectation carries for each mode.
fn prohibited(mode: FailureMode) -> (Vec<String>, bool) {
    let (list, veto): (&[&str], bool) = match mode {
        FailureMode::AuthDenied => (&["unsafe_retry", "cross_tenant"], false),
        FailureMode::ValidationFailed => (&["unsafe_retry"], false),
        FailureMode::TimeoutUnknown => (&["retry_before_reconcile", "duplicate_effect"], true),
        FailureMode::RateLimited | FailureMode::TransientError => {
            (&["unsafe_retry", "retry_without_budget"], false)
        }
        FailureMode::PartialWrite => (&["replay_committed_items", "claim_restoration"], false),
        FailureMode::DuplicateReplay => (
            &[
                "duplicate_effect",
                "retry_after_key_conflict",
                "rely_on_expired_key",
            ],
            true,
        ),
        FailureMode::UnsafeOutput => (&["act_on_tool_output"], true),
    };
    (list.iter().map(|s| (*s).to_owned()).collect(), veto)
}

/// Everything one case needs while it runs.
struct Bench<'a> {
    store: &'a dyn Store,
    case: &'a Case,
    executor: Executor,
    clock: ExecClock,
    base: String,
}

impl Bench<'_> {
    fn operation(&self, op_id: &OperationId, payload: &Value, key: Option<String>) -> Operation {
        let now = self.clock.now();
        let o = &self.case.operation;
        let hash = payload_hash(payload);
        Operation {
            id: op_id.clone(),
            tenant: o.tenant.clone(),
            actor: DRILL_AGENT.to_owned(),
            tool: self.case.contract.tool.clone(),
            action: self.case.contract.action.clone(),
            target: o
                .target
                .clone()
                .unwrap_or_else(|| format!("record:{}", self.case.id)),
            payload_hash: hash.clone(),
            intent_hash: Some(Sha256::of(
                format!("{}|{}|{}", self.case.contract.action, o.tenant, hash).as_bytes(),
            )),
            risk: Risk::parse(&o.risk).unwrap_or(Risk::Medium),
            approval: Some(Approval {
                by: "rev:drill-approver".to_owned(),
                policy: "RP03".to_owned(),
                at: Some(now),
                payload_hash: Some(hash),
                expires_at: Some(now + Duration::hours(1)),
            }),
            idempotency_key: key,
            business_key: o.business_key.clone(),
            correlation_id: Some(format!("c-{}", self.case.id)),
            owner: self.case.contract.owner.clone(),
            max_attempts: None,
            deadline: Some(now + Duration::seconds(i64::from(self.case.contract.budget_seconds))),
            failure_mode: None,
            state: State::Planned,
            next_observation_at: None,
            depends_on: Vec::new(),
            parent: None,
            relation: None,
            created_at: now,
        }
    }

    fn job(&self, operation: Operation, payload: Value, items: Vec<u32>, layer: Layer) -> Job {
        // Checked when the case was read, with the same shape of URL.
        let lookup = self.case.lookup_spec(&self.base).ok().flatten();
        Job {
            operation,
            contract: self.case.contract.clone(),
            lookup,
            endpoint: self.base.clone(),
            payload,
            items,
            required: self.case.operation.required.clone(),
            version: self.case.operation.version,
            credential: Credential {
                identity: "I05".to_owned(),
                generation: 1,
            },
            layer,
            inverse_of: None,
            context: Context::default(),
        }
    }

    async fn record(&self, records: &[Record]) -> Result<(), DrillError> {
        record(self.store, &self.case.id, records, self.clock.now()).await
    }

    async fn detail(&self, op: &OperationId) -> Result<OperationDetail, DrillError> {
        Ok(self.store.detail(&Scope::Every, op).await?)
    }
}

fn expected(case: &Case) -> Figures {
    let e = &case.expect;
    Figures {
        state: e.state,
        requests: e.requests,
        status_queries: e.status_queries,
        effects: e.effects,
        retried_before_reconcile: e.retried_before_reconcile,
        unrouted: e.unrouted,
        identities: e.identities,
        dependent_requests: e.dependent_requests,
        max_item_effects: e.max_item_effects,
        recovery_state: e.recovery_state,
        deliveries: e.deliveries.clone(),
    }
}

/// Whether any repeat of a write was made while G2 forbade it, judged by the core
/// matrix as the operation stood just before the repeat.
pub fn retried_before_reconcile(detail: &OperationDetail) -> bool {
    let requests: Vec<_> = detail
        .attempts
        .iter()
        .filter(|a| a.kind == AttemptKind::Request)
        .collect();
    requests
        .iter()
        .skip(1)
        .filter(|a| a.phase != Phase::NotSent)
        .any(|a| {
            let before = matrix::assess_before(
                &detail.row.operation,
                detail.contract.as_ref(),
                &detail.attempts,
                &detail.observations,
                &detail.items,
                false,
                a.started_at,
            );
            before.write && before.crossed_boundary && before.non_application.is_none()
        })
}

async fn run_case(
    store: &dyn Store,
    provider: &Provider,
    running: &Running,
    case: &Case,
) -> Result<(CaseResult, DateTime<Utc>), DrillError> {
    let clock = ExecClock::simulated(epoch());
    provider.add_case(case.clone(), clock.clone());
    let transport = Transport::new(
        Arc::new(SimResolver {
            provider: provider.clone(),
        }),
        REAL_TIMEOUT,
    );
    let executor = Executor::new(transport, clock.clone(), Settings::default());
    let bench = Bench {
        store,
        case,
        executor,
        clock: clock.clone(),
        base: running.case_url(&case.id),
    };
    bench
        .record(&[Record::Contract(case.contract.clone())])
        .await?;
    let o = &case.operation;
    let main_id = id(&case.id)?;
    let items: Vec<u32> = (1..=o.items).collect();
    let main = bench.operation(&main_id, &o.payload, o.idempotency_key.clone());
    let job = bench.job(main.clone(), o.payload.clone(), items, Layer::Orchestrator);
    let mut operations = vec![main_id.clone()];

    // Dependents are planned, validated and approved with the main operation,
    // before any of its output exists; they wait for it to settle.
    let mut dependents = Vec::new();
    for n in 1..=o.dependents {
        let dep_id = id(&format!("{}-D{n}", case.id))?;
        let payload = json!({"notify": main_id.as_str(), "n": n});
        let mut op = bench.operation(&dep_id, &payload, Some(format!("k-{dep_id}")));
        op.depends_on = vec![main_id.clone()];
        op.business_key = Some(format!("b-{dep_id}"));
        let dep_job = bench.job(op, payload, vec![], Layer::Orchestrator);
        let prepared = bench.executor.prepare(&dep_job);
        dependents.push((dep_job, prepared));
        operations.push(dep_id);
    }

    let runs =
        futures_util::future::join_all((0..o.concurrent).map(|_| bench.executor.execute(&job)))
            .await;
    let executed: Vec<&Run> = runs
        .iter()
        .filter(|r| r.outcome == RunOutcome::Executed)
        .collect();
    if executed.len() != 1 {
        return Err(DrillError::Case {
            case: case.id.clone(),
            reason: format!(
                "{} of {} concurrent executions ran; the lock must let exactly one act",
                executed.len(),
                runs.len()
            ),
        });
    }
    let main_run = executed[0].clone();
    let mut records = main_run.records();
    // The release gate judges a case only by the final state it expects; a
    // case that checks no state adds no expectation, and a protected case's
    // expectation never enters a store.
    if let Some(expected_state) = case.expect.state.filter(|_| !case.protected) {
        let (list, veto) = prohibited(case.mode);
        records.push(Record::Expectation(crate::core::model::Expectation {
            operation: main_id.clone(),
            expected_state,
            requires_reconciliation: case.expect.status_queries.map(|n| n > 0),
            duplicate_risk: Some(matches!(
                case.mode,
                FailureMode::TimeoutUnknown | FailureMode::DuplicateReplay
            )),
            prohibited: list,
            veto: Some(veto),
        }));
    }
    bench.record(&records).await?;

    // Dependents act only on a settled, verified main operation (G9).
    for (mut dep_job, prepared) in dependents {
        let state = bench.detail(&main_id).await?.row.operation.state;
        if state != State::Succeeded {
            dep_job.context.held_dependencies = vec![(main_id.clone(), state)];
        }
        let run = bench.executor.carry_out(&dep_job, prepared).await;
        bench.record(&run.records()).await?;
    }

    let mut recovery_state = None;
    if let Some(recovery) = o.recovery {
        let detail = bench.detail(&main_id).await?;
        if detail.row.operation.state == State::Partial {
            let (child, state) = recover(&bench, &detail, recovery).await?;
            operations.push(child);
            recovery_state = Some(state);
        }
    }

    let mut delivery_states = Vec::new();
    let mut payload_changes = 0;
    for (n, delivery) in o.deliveries.iter().enumerate() {
        clock
            .wait(Duration::seconds(
                i64::try_from(delivery.after_seconds).unwrap_or(0),
            ))
            .await;
        let layer = Layer::parse(&delivery.layer).unwrap_or(Layer::Queue);
        let stored = bench.detail(&main_id).await?;
        let first_use = stored
            .attempts
            .iter()
            .filter(|a| a.kind == AttemptKind::Request && a.phase != Phase::NotSent)
            .map(|a| a.started_at)
            .min();
        let (delivery_id, delivery_job) = match delivery.kind {
            DeliveryKind::Same => {
                let mut again =
                    bench.job(main.clone(), o.payload.clone(), job.items.clone(), layer);
                again.context = Context {
                    stored_state: Some(stored.row.operation.state),
                    prior_attempts: u32::try_from(stored.attempts.len()).unwrap_or(u32::MAX),
                    prior_observations: u32::try_from(stored.observations.len())
                        .unwrap_or(u32::MAX),
                    ..Context::default()
                };
                again.operation = stored.row.operation.clone();
                (main_id.clone(), again)
            }
            DeliveryKind::Conflict | DeliveryKind::Replay => {
                let new_id = id(&format!("{}-K{}", case.id, n + 1))?;
                let payload = if delivery.kind == DeliveryKind::Conflict {
                    payload_changes += 1;
                    let mut changed = o.payload.clone();
                    changed["conflicting_change"] = json!(payload_changes);
                    changed
                } else {
                    o.payload.clone()
                };
                let op = bench.operation(&new_id, &payload, o.idempotency_key.clone());
                let mut fresh = bench.job(op, payload, job.items.clone(), layer);
                fresh.context.key_first_used = first_use;
                operations.push(new_id.clone());
                (new_id, fresh)
            }
        };
        let run = bench.executor.execute(&delivery_job).await;
        bench.record(&run.records()).await?;
        delivery_states.push(bench.detail(&delivery_id).await?.row.operation.state);
    }

    let counters = provider.counters(&case.id).unwrap_or_default();
    let detail = bench.detail(&main_id).await?;
    let dependent_requests: u32 = operations
        .iter()
        .filter(|op| op.as_str().contains("-D"))
        .map(|op| {
            counters
                .requests_by_operation
                .get(op.as_str())
                .copied()
                .unwrap_or(0)
        })
        .sum();
    let expected = expected(case);
    let observed = Figures {
        state: Some(detail.row.operation.state),
        requests: Some(counters.requests),
        status_queries: Some(counters.status_queries),
        effects: Some(counters.effects),
        retried_before_reconcile: Some(retried_before_reconcile(&detail)),
        unrouted: Some(counters.unrouted),
        identities: expected
            .identities
            .map(|_| u32::try_from(counters.identities.len()).unwrap_or(u32::MAX)),
        dependent_requests: expected.dependent_requests.map(|_| dependent_requests),
        max_item_effects: expected
            .max_item_effects
            .map(|_| counters.item_effects.values().copied().max().unwrap_or(0)),
        recovery_state: expected.recovery_state.and(recovery_state),
        deliveries: (!delivery_states.is_empty()).then_some(delivery_states),
    };
    let failed = misses(&expected, &observed);
    let pass = failed.is_empty();
    Ok((
        CaseResult {
            id: case.id.clone(),
            mode: case.mode,
            name: case.name.clone(),
            pass,
            expected,
            observed,
            failed,
            counters,
            operations,
            protected: case.protected,
        },
        clock.now(),
    ))
}

/// The owner's recovery of a PARTIAL operation: a linked child approved by the
/// owner (a resume of the items that did not commit, or a compensation), carried
/// out by the executor; the parent is marked resumed or compensated only on a
/// succeeded child with its evidence (G4). Returns the child and its state.
async fn recover(
    bench: &Bench<'_>,
    parent: &OperationDetail,
    recovery: Recovery,
) -> Result<(OperationId, State), DrillError> {
    let case = bench.case;
    let parent_op = &parent.row.operation;
    let owner = format!("owner:{}", case.contract.owner);
    let (suffix, relation) = match recovery {
        Recovery::Resume => ("R", Relation::ResumeOf),
        Recovery::Compensate => ("C", Relation::CompensationOf),
    };
    let child_id = id(&format!("{}-{suffix}", parent_op.id))?;
    let items: Vec<u32> = match recovery {
        Recovery::Resume => parent
            .items
            .iter()
            .filter(|i| i.state != crate::core::model::ItemState::Succeeded)
            .map(|i| i.index)
            .collect(),
        Recovery::Compensate => Vec::new(),
    };
    let payload = json!({"recovery_of": parent_op.id.as_str(), "relation": relation.as_str(), "items": items});
    let mut op = bench.operation(
        &child_id,
        &payload,
        parent_op
            .idempotency_key
            .as_ref()
            .map(|k| format!("{k}-{suffix}")),
    );
    op.parent = Some(parent_op.id.clone());
    op.relation = Some(relation);
    op.business_key = Some(format!("b-{child_id}"));
    if let Some(approval) = op.approval.as_mut() {
        approval.by = owner.clone();
    }
    let mut job = bench.job(op, payload, items, Layer::Orchestrator);
    if recovery == Recovery::Compensate {
        job.inverse_of = Some(parent_op.id.clone());
    }
    let run = bench.executor.execute(&job).await;
    bench.record(&run.records()).await?;
    let state = bench.detail(&child_id).await?.row.operation.state;
    if state == State::Succeeded {
        let now = bench.clock.now();
        let mut records = Vec::new();
        let to = match recovery {
            Recovery::Resume => State::Succeeded,
            Recovery::Compensate => {
                let obs = format!("{}-O{}", parent_op.id, parent.observations.len() + 1);
                records.push(Record::Observation(Observation {
                    id: obs,
                    operation: parent_op.id.clone(),
                    observed_at: now,
                    source: ObservationSource::Downstream,
                    found: false,
                    matches: None,
                    effect_count: Some(0),
                    raw_hash: None,
                    note: Some("downstream: the reversed records no longer show the effect".into()),
                }));
                State::Compensated
            }
        };
        records.push(Record::Transition(TransitionRecord {
            operation: parent_op.id.clone(),
            from: State::Partial,
            to,
            by: owner,
            role: Some(Role::Owner),
            at: now,
            reason: Some(format!(
                "{}: {child_id} succeeded and every item is verified",
                if to == State::Succeeded {
                    "mark-resumed"
                } else {
                    "mark-compensated"
                }
            )),
            evidence: vec![child_id.as_str().to_owned()],
        }));
        bench.record(&records).await?;
    }
    Ok((child_id, state))
}
