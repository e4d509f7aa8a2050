//! The autonomy service every surface calls: gathers what the gates of DESIGN
//! §9.4 read from the store (the tool's contract, its latest drill, the open
//! vetoes on its operations), asks `core::autonomy` to decide, and commits the
//! change with its audit row. Also records a drill result for a tool.
//!
//! It reads and writes through the acting identity's [`Session`]: a tool's
//! level, its drills and lookup checks belong to no tenant, and the gates read
//! the tool's open vetoes and tenants across every tenant from the store
//! (sums and the first few, never the records), as the session offers them.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::core::audit::AuditRow;
use crate::core::autonomy::{
    self, DrillResult, Gates, LevelChange, LevelRequest, LookupCheck, OpenVetoes, Standing,
    ToolLevel, VETOES_NAMED,
};
use crate::core::contract::Contract;
use crate::core::detail::Dataset;
use crate::core::ladder::Level;
use crate::core::rules::Rationale;
use crate::review::ReviewError;
use crate::store::{Session, StoreError};

/// How often a change is decided again when another one landed first.
const ATTEMPTS: usize = 3;

/// One tool as `autonomy list` shows it.
#[derive(Debug, Clone, Serialize)]
pub struct ToolStanding {
    pub tool: String,
    pub level: Level,
    /// Who set the level, when and why; `None` for the default `manual`.
    pub set: Option<ToolLevel>,
    pub lookup: String,
    pub drill: Option<DrillResult>,
    /// The latest drill's contract version and whether it is still current.
    pub last_drill: Option<crate::core::rerun::LastDrill>,
    /// How many open vetoes, and the first of them.
    pub open_vetoes: OpenVetoes,
    /// Whether a raise would pass the gates now, and if not why.
    pub gates: Standing,
    /// Why the tool's lookup is unchecked, which caps it at `manual`.
    pub unchecked: Option<String>,
    /// The level that bounds what holdfast does on its own: `level`, or
    /// `manual` while the lookup is unchecked.
    pub effective: Level,
}

/// What the gates read of one tool's operations.
#[derive(Debug, Clone, Default)]
struct ToolOperations {
    tenants: Vec<String>,
    vetoes: OpenVetoes,
}

/// What the gates read for every tool: contracts, levels, latest drills, and
/// the tenants and open vetoes of each tool's operations, read from the store
/// per tool (its kept facts and an index on the tool), never the whole dataset
/// but for a login that may only read the kept facts.
pub struct Snapshot {
    pub contracts: Vec<Contract>,
    pub levels: Vec<ToolLevel>,
    pub drills: Vec<(i64, DrillResult)>,
    /// Every lookup check, oldest first.
    pub checks: Vec<LookupCheck>,
    /// Every row of the drill ledger, oldest first: whether a drill is still
    /// current ([`crate::core::rerun::last_drill`]).
    pub drill_ledger: Vec<AuditRow>,
    tools: BTreeMap<String, ToolOperations>,
}

impl Snapshot {
    /// Reads everything the gates need at `now`, for every tool the store
    /// knows (a contract, a level or a drill).
    pub async fn read(session: &Session, now: DateTime<Utc>) -> Result<Snapshot, StoreError> {
        let contracts = session.contracts().await?;
        let levels = session.autonomy_levels().await?;
        let drills = session.drill_results(None).await?;
        let checks = session.lookup_checks().await?;
        let drill_ledger = session.drill_ledger().await?;
        let mut names: Vec<String> = contracts
            .iter()
            .map(|c| c.tool.clone())
            .chain(levels.iter().map(|l| l.tool.clone()))
            .chain(drills.iter().map(|(_, d)| d.tool.clone()))
            .collect();
        names.sort();
        names.dedup();
        let mut tools = BTreeMap::new();
        let mut dataset: Option<Dataset> = None;
        for tool in names {
            let vetoes = match session.open_vetoes(&tool, now, VETOES_NAMED).await? {
                Some(vetoes) => vetoes,
                None => {
                    // A login that may only read the kept facts: row-level
                    // security keeps it to its grants' tenants, as the
                    // session's scope does.
                    if dataset.is_none() {
                        dataset = Some(session.dataset().await?);
                    }
                    dataset
                        .as_ref()
                        .map(|d| autonomy::open_vetoes(d, &tool, now))
                        .unwrap_or_default()
                }
            };
            let tenants = session.tool_tenants(&tool).await?;
            tools.insert(tool, ToolOperations { tenants, vetoes });
        }
        Ok(Snapshot {
            contracts,
            levels,
            drills,
            checks,
            drill_ledger,
            tools,
        })
    }

    pub fn contract(&self, tool: &str) -> Option<&Contract> {
        self.contracts.iter().find(|c| c.tool == tool)
    }

    /// The newest recorded drill of `tool`.
    pub fn latest_drill(&self, tool: &str) -> Option<&DrillResult> {
        self.drills
            .iter()
            .filter(|(_, d)| d.tool == tool)
            .max_by_key(|(seq, _)| *seq)
            .map(|(_, d)| d)
    }

    /// Vetoes of the release gate on `tool`'s operations that are still open
    /// (the operation has not reached a terminal state): how many, and the
    /// first [`VETOES_NAMED`].
    pub fn open_vetoes(&self, tool: &str) -> OpenVetoes {
        self.tools
            .get(tool)
            .map(|t| t.vetoes.clone())
            .unwrap_or_default()
    }

    /// The tenants of `tool`'s operations, sorted.
    pub fn tenants(&self, tool: &str) -> Vec<String> {
        self.tools
            .get(tool)
            .map(|t| t.tenants.clone())
            .unwrap_or_default()
    }

    pub fn gates(&self, tool: &str) -> Gates<'_> {
        Gates {
            contract: self.contract(tool),
            drill: self.latest_drill(tool),
            vetoes: self.open_vetoes(tool),
            tenants: self.tenants(tool),
            lookup_check: self.latest_check(tool),
            stale: self.last_drill(tool).and_then(|d| d.stale),
        }
    }

    /// `tool`'s latest drill and whether it is current.
    pub fn last_drill(&self, tool: &str) -> Option<crate::core::rerun::LastDrill> {
        crate::core::rerun::last_drill(tool, self.contract(tool), &self.drill_ledger)
    }

    pub fn level(&self, tool: &str) -> Level {
        autonomy::level_of(&self.levels, tool)
    }

    /// The newest lookup check of `tool`.
    pub fn latest_check(&self, tool: &str) -> Option<&LookupCheck> {
        self.checks.iter().rev().find(|c| c.tool == tool)
    }

    /// Why `tool`'s lookup is unchecked (which caps it at `manual`), if it is.
    pub fn unchecked(&self, tool: &str) -> Option<String> {
        autonomy::unchecked(self.contract(tool), self.latest_check(tool))
    }

    /// Every tool the store knows (a contract, a level or a drill), by name.
    pub fn standings(&self) -> Vec<ToolStanding> {
        self.tools
            .keys()
            .cloned()
            .map(|tool| {
                let gates = self.gates(&tool);
                let unchecked = self.unchecked(&tool);
                ToolStanding {
                    effective: autonomy::effective_level(self.level(&tool), unchecked.as_deref()),
                    unchecked,
                    level: self.level(&tool),
                    set: self.levels.iter().find(|l| l.tool == tool).cloned(),
                    lookup: gates.contract.map_or_else(
                        || "no contract stored".to_owned(),
                        |c| c.status_lookup.describe(),
                    ),
                    drill: gates.drill.cloned(),
                    last_drill: self.last_drill(&tool),
                    open_vetoes: gates.vetoes.clone(),
                    gates: autonomy::standing(&tool, &gates),
                    tool,
                }
            })
            .collect()
    }
}

/// Puts `request.tool` at `request.level` as the session's actor; `Ok(None)`
/// when it is already there. A change decided on a level that moved meanwhile
/// is decided again.
pub async fn set_level(
    session: &Session,
    request: &LevelRequest,
    rationale: &Rationale,
    now: DateTime<Utc>,
) -> Result<Option<(LevelChange, AuditRow)>, ReviewError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let snapshot = Snapshot::read(session, now).await?;
        let Some(change) = autonomy::decide_level(
            session.actor(),
            snapshot.level(&request.tool),
            request,
            &snapshot.gates(&request.tool),
            rationale,
            now,
        )
        .map_err(ReviewError::Refused)?
        else {
            return Ok(None);
        };
        match session.set_autonomy(change.clone()).await {
            Ok(row) => return Ok(Some((change, row))),
            Err(StoreError::AutonomyChanged { .. }) if attempt < ATTEMPTS => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Records `result` for its tool as the session's actor: an owner's act once
/// grants exist, like the change it enables (G6).
pub async fn record_drill(
    session: &Session,
    result: DrillResult,
    now: DateTime<Utc>,
) -> Result<AuditRow, ReviewError> {
    let actor = session.actor();
    let tenants = session.tool_tenants(&result.tool).await?;
    let role = autonomy::owner_role(actor, &result.tool, &tenants, "recording a drill")
        .map_err(ReviewError::Refused)?;
    let result = DrillResult {
        by: actor.identity.clone(),
        at: now,
        ..result
    };
    let draft = result.draft(role, actor.policy.clone());
    Ok(session.record_drill(result, draft).await?)
}

/// Records `check` for its tool as the session's actor: an owner's act once
/// grants exist, like the raise it enables (G6), audited on the autonomy
/// ledger.
pub async fn record_lookup_check(
    session: &Session,
    check: LookupCheck,
    now: DateTime<Utc>,
) -> Result<AuditRow, ReviewError> {
    let actor = session.actor();
    let tenants = session.tool_tenants(&check.tool).await?;
    let role = autonomy::owner_role(actor, &check.tool, &tenants, "checking a lookup")
        .map_err(ReviewError::Refused)?;
    let check = LookupCheck {
        by: actor.identity.clone(),
        at: now,
        ..check
    };
    let draft = check.draft(role, actor.policy.clone());
    Ok(session.append_ledger_row(draft).await?)
}

/// Records a material change outside `tool`'s contract (`holdfast tools
/// changed`) as the session's actor: the tool's owner's act once grants exist
/// (G6, as for an autonomy change). The store drops the tool to the stale
/// floor in the same transaction when it stood above it. Returns the rows
/// written, the change's first.
pub async fn record_change(
    session: &Session,
    tool: &str,
    what: &str,
    rationale: &Rationale,
    now: DateTime<Utc>,
) -> Result<Vec<AuditRow>, ReviewError> {
    let actor = session.actor();
    let tenants = session.tool_tenants(tool).await?;
    let role = autonomy::owner_role(actor, tool, &tenants, "recording a material change")
        .map_err(ReviewError::Refused)?;
    let change = crate::core::rerun::RecordedChange {
        tool: tool.to_owned(),
        what: what.to_owned(),
        rationale: rationale.as_str().to_owned(),
        by: actor.identity.clone(),
        at: now,
    };
    let draft = change.draft(role, actor.policy.clone());
    Ok(session.record_tool_change(change, draft).await?)
}
