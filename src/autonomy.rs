//! The autonomy service every surface calls: gathers what the gates of DESIGN
//! §9.4 read from the store (the tool's contract, its latest drill, the open
//! vetoes on its operations), asks `core::autonomy` to decide, and commits the
//! change with its audit row. Also records a drill result for a tool.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::core::actor::Actor;
use crate::core::audit::AuditRow;
use crate::core::autonomy::{
    self, DrillResult, Gates, Level, LevelChange, LevelRequest, OpenVeto, Standing, ToolLevel,
};
use crate::core::metrics;
use crate::core::model::{Contract, Dataset};
use crate::core::rules::Rationale;
use crate::review::ReviewError;
use crate::store::{Store, StoreError};

/// The tenants of `tool`'s operations in `dataset`, sorted.
fn tenants_of(dataset: &Dataset, tool: &str) -> Vec<String> {
    let mut tenants: Vec<String> = dataset
        .operations
        .iter()
        .filter(|o| o.tool == tool)
        .map(|o| o.tenant.clone())
        .collect();
    tenants.sort();
    tenants.dedup();
    tenants
}

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
    pub open_vetoes: Vec<OpenVeto>,
    /// Whether a raise would pass the gates now, and if not why.
    pub gates: Standing,
}

/// What the gates read for every tool: contracts, levels, latest drills and
/// open vetoes, from one read of the store.
pub struct Snapshot {
    pub dataset: Dataset,
    pub levels: Vec<ToolLevel>,
    pub drills: Vec<(i64, DrillResult)>,
    vetoes: Vec<metrics::Veto>,
}

impl Snapshot {
    /// Reads everything the gates need at `now`.
    pub async fn read(store: &dyn Store, now: DateTime<Utc>) -> Result<Snapshot, StoreError> {
        let dataset = store.dataset().await?;
        let vetoes = metrics::report(&dataset, now).release.vetoes;
        Ok(Snapshot {
            levels: store.autonomy_levels().await?,
            drills: store.drill_results(None).await?,
            dataset,
            vetoes,
        })
    }

    pub fn contract(&self, tool: &str) -> Option<&Contract> {
        self.dataset.contracts.iter().find(|c| c.tool == tool)
    }

    /// The newest recorded drill of `tool`.
    pub fn latest_drill(&self, tool: &str) -> Option<&DrillResult> {
        self.drills
            .iter()
            .filter(|(_, d)| d.tool == tool)
            .max_by_key(|(seq, _)| *seq)
            .map(|(_, d)| d)
    }

    /// Vetoes of the release gate on `tool`'s operations that are still open: the
    /// operation has not reached a terminal state.
    pub fn open_vetoes(&self, tool: &str) -> Vec<OpenVeto> {
        self.vetoes
            .iter()
            .filter_map(|v| {
                let op = self
                    .dataset
                    .operations
                    .iter()
                    .find(|o| o.id == v.operation && o.tool == tool)?;
                (!op.state.is_terminal()).then(|| OpenVeto {
                    operation: op.id.clone(),
                    state: op.state,
                    kinds: v.kinds.iter().map(|k| k.as_str().to_owned()).collect(),
                })
            })
            .collect()
    }

    /// The tenants of `tool`'s operations, sorted.
    pub fn tenants(&self, tool: &str) -> Vec<String> {
        tenants_of(&self.dataset, tool)
    }

    pub fn gates(&self, tool: &str) -> Gates<'_> {
        Gates {
            contract: self.contract(tool),
            drill: self.latest_drill(tool),
            vetoes: self.open_vetoes(tool),
            tenants: self.tenants(tool),
        }
    }

    pub fn level(&self, tool: &str) -> Level {
        autonomy::level_of(&self.levels, tool)
    }

    /// Every tool the store knows (a contract, a level or a drill), by name.
    pub fn standings(&self) -> Vec<ToolStanding> {
        let mut tools: Vec<String> = self
            .dataset
            .contracts
            .iter()
            .map(|c| c.tool.clone())
            .chain(self.levels.iter().map(|l| l.tool.clone()))
            .chain(self.drills.iter().map(|(_, d)| d.tool.clone()))
            .collect();
        tools.sort();
        tools.dedup();
        tools
            .into_iter()
            .map(|tool| {
                let gates = self.gates(&tool);
                ToolStanding {
                    level: self.level(&tool),
                    set: self.levels.iter().find(|l| l.tool == tool).cloned(),
                    lookup: gates.contract.map_or_else(
                        || "no contract stored".to_owned(),
                        |c| c.status_lookup.describe(),
                    ),
                    drill: gates.drill.cloned(),
                    open_vetoes: gates.vetoes.clone(),
                    gates: autonomy::standing(&tool, &gates),
                    tool,
                }
            })
            .collect()
    }
}

/// Puts `request.tool` at `request.level` as `actor`; `Ok(None)` when it is
/// already there. A change decided on a level that moved meanwhile is decided
/// again.
pub async fn set_level(
    store: &dyn Store,
    actor: &Actor,
    request: &LevelRequest,
    rationale: &Rationale,
    now: DateTime<Utc>,
) -> Result<Option<(LevelChange, AuditRow)>, ReviewError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let snapshot = Snapshot::read(store, now).await?;
        let Some(change) = autonomy::decide_level(
            actor,
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
        match store.set_autonomy(change.clone()).await {
            Ok(row) => return Ok(Some((change, row))),
            Err(StoreError::AutonomyChanged { .. }) if attempt < ATTEMPTS => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Records `result` for its tool as `actor`: an owner's act once grants exist,
/// like the change it enables (G6).
pub async fn record_drill(
    store: &dyn Store,
    actor: &Actor,
    result: DrillResult,
    now: DateTime<Utc>,
) -> Result<AuditRow, ReviewError> {
    let tenants = tenants_of(&store.dataset().await?, &result.tool);
    let role = autonomy::owner_role(actor, &result.tool, &tenants, "recording a drill")
        .map_err(ReviewError::Refused)?;
    let result = DrillResult {
        by: actor.identity.clone(),
        at: now,
        ..result
    };
    let draft = result.draft(role, actor.policy.clone());
    Ok(store.record_drill(result, draft).await?)
}
