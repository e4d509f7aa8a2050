//! The tools a store knows, one row each (`holdfast tools`): the contract's
//! version, the autonomy level in force, the status lookup's kind and what its
//! checks showed, and the newest drill; with the whole inventory of one tool
//! (`holdfast tools show`), and the console's Tools tab. Read through the
//! autonomy gates' [`Snapshot`]: the contracts and the ledgers of levels,
//! drills and lookup checks, and per tool only what an index on the tool finds
//! (its holds, counted by the store with the tool filter).

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::autonomy::Snapshot;
use crate::core::autonomy::{self, DrillResult};
use crate::core::circuit::{Circuit, Position};
use crate::core::contract::Contract;
use crate::core::inventory::{self, Entry};
use crate::core::ladder::Level;
use crate::core::model::State;
use crate::store::{OperationFilter, Session, StoreError};

/// One tool as the list shows it. Each part is read from the store; a row
/// grows by a field, never by a second shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolRow {
    pub tool: String,
    /// The stored contract's version; `None` for a tool known only from a
    /// level or a drill.
    pub version: Option<String>,
    /// The level that bounds what holdfast does on its own (the stored level,
    /// or `manual` while the lookup is unchecked).
    pub autonomy: Level,
    /// `none`, `by hand` or `http`; `None` without a contract.
    pub lookup: Option<&'static str>,
    /// The lookup checks recorded for the tool (`holdfast lookup check`).
    pub checks: LookupHealth,
    /// The tool's operations in the console's held queue (held states and
    /// those held by a dependency), in the session's tenants: what `Enter` on
    /// the tool in the Tools tab lists.
    pub holds: u64,
    /// Of those, the ones in `UNKNOWN`.
    pub unknowns: u64,
    /// The newest recorded drill.
    pub drill: Option<LastDrill>,
    /// How many inventory fields the contract lacks (of 14).
    pub missing: usize,
    /// Where the tool's circuit stands (DESIGN §9.5); `None` when its contract
    /// sets no circuit (nothing ever holds its calls for failing).
    pub circuit: Option<Position>,
}

/// What the recorded lookup checks of a tool showed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct LookupHealth {
    /// Checks whose lookup found the record known to exist.
    pub answered: u64,
    /// Checks whose lookup did not.
    pub failed: u64,
    /// When the newest check ran.
    pub last_at: Option<DateTime<Utc>>,
}

/// The newest drill of a tool: when, whether it passed (every case passed
/// and every failure mode was covered, gate A2), the contract version it ran
/// under, and whether it still counts for the contract as it is now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LastDrill {
    pub at: DateTime<Utc>,
    pub cases: u32,
    pub passed: u32,
    pub pass: bool,
    /// The contract version it ran under; `None` when it did not name one.
    pub version: Option<String>,
    /// No material change since it ran ([`crate::core::rerun::last_drill`]).
    pub current: bool,
    /// Why it is stale, when it is.
    pub stale: Option<String>,
}

impl LastDrill {
    /// `pass 16/16 · IC07 · current · 2026-09-05T10:00:00Z`, as `holdfast
    /// tools` and the console's Tools tab show it. The version is the
    /// contract's text: neutralize it for a terminal.
    pub fn summary(&self) -> String {
        format!(
            "{} {}/{} · {} · {} · {}",
            if self.pass { "pass" } else { "fail" },
            self.passed,
            self.cases,
            self.version.as_deref().unwrap_or("no version"),
            if self.current { "current" } else { "stale" },
            crate::core::clock::human_instant(self.at)
        )
    }

    fn of(d: &DrillResult, ledger: Option<crate::core::rerun::LastDrill>) -> LastDrill {
        let (version, stale) = match ledger {
            Some(l) => (l.version, l.stale),
            None => (
                d.contract_version.clone(),
                Some("the drill ledger holds no record of it".to_owned()),
            ),
        };
        LastDrill {
            at: d.at,
            cases: d.cases,
            passed: d.passed,
            pass: d.check().is_ok(),
            version,
            current: stale.is_none(),
            stale,
        }
    }
}

/// The circuit in a word: `closed`, `open`, `half-open`, or `none` when the
/// contract sets no circuit.
pub fn circuit_words(row: &ToolRow) -> &'static str {
    row.circuit.map_or("none", Position::as_str)
}

/// One tool's whole inventory, for `tools show`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolInventory {
    #[serde(flatten)]
    pub row: ToolRow,
    pub inventory: Vec<Entry>,
}

/// Every tool the store knows, by name.
pub async fn rows(session: &Session, now: DateTime<Utc>) -> Result<Vec<ToolRow>, StoreError> {
    Ok(inventories(session, now)
        .await?
        .into_iter()
        .map(|i| i.row)
        .collect())
}

/// Every tool the store knows, by name, each with its whole inventory (empty
/// for a tool without a contract): what the console's Tools tab shows.
pub async fn inventories(
    session: &Session,
    now: DateTime<Utc>,
) -> Result<Vec<ToolInventory>, StoreError> {
    let snapshot = Snapshot::read(session, now).await?;
    let circuits = session.circuits().await?;
    let mut out = Vec::new();
    for standing in snapshot.standings() {
        let row = row(
            session,
            &snapshot,
            &circuits,
            &standing.tool,
            standing.effective,
        )
        .await?;
        let inventory = snapshot
            .contract(&standing.tool)
            .map(inventory::inventory)
            .unwrap_or_default();
        out.push(ToolInventory { row, inventory });
    }
    Ok(out)
}

/// The inventory of `tool`; `None` when the store holds no contract for it.
pub async fn show(
    session: &Session,
    tool: &str,
    now: DateTime<Utc>,
) -> Result<Option<ToolInventory>, StoreError> {
    let snapshot = Snapshot::read(session, now).await?;
    let Some(contract) = snapshot.contract(tool) else {
        return Ok(None);
    };
    let unchecked = snapshot.unchecked(tool);
    let level = autonomy::effective_level(snapshot.level(tool), unchecked.as_deref());
    let circuits = session.circuits().await?;
    Ok(Some(ToolInventory {
        row: row(session, &snapshot, &circuits, tool, level).await?,
        inventory: inventory::inventory(contract),
    }))
}

/// How many of `tool`'s operations are in the held queue, and how many of
/// those are `UNKNOWN`: two counts through the index on the tool.
async fn holds(session: &Session, tool: &str) -> Result<(u64, u64), StoreError> {
    let held = OperationFilter {
        queue: true,
        tools: vec![tool.to_owned()],
        ..OperationFilter::default()
    };
    let unknown = OperationFilter {
        states: vec![State::Unknown],
        ..held.clone()
    };
    Ok((session.count(&held).await?, session.count(&unknown).await?))
}

async fn row(
    session: &Session,
    snapshot: &Snapshot,
    circuits: &[Circuit],
    tool: &str,
    autonomy: Level,
) -> Result<ToolRow, StoreError> {
    let contract: Option<&Contract> = snapshot.contract(tool);
    let mut checks = LookupHealth::default();
    for c in snapshot.checks.iter().filter(|c| c.tool == tool) {
        if c.found {
            checks.answered += 1;
        } else {
            checks.failed += 1;
        }
        checks.last_at = checks.last_at.max(Some(c.at));
    }
    let (holds, unknowns) = holds(session, tool).await?;
    Ok(ToolRow {
        tool: tool.to_owned(),
        version: contract.map(|c| c.version.clone()),
        autonomy,
        lookup: contract.map(|c| inventory::lookup_kind(&c.status_lookup)),
        checks,
        holds,
        unknowns,
        drill: snapshot
            .latest_drill(tool)
            .map(|d| LastDrill::of(d, snapshot.last_drill(tool))),
        missing: contract.map_or(0, |c| {
            inventory::inventory(c)
                .iter()
                .filter(|e| e.missing())
                .count()
        }),
        circuit: contract.and_then(|c| c.circuit).map(|_| {
            circuits
                .iter()
                .find(|c| c.tool == tool)
                .map_or(Position::Closed, |c| c.position)
        }),
    })
}
