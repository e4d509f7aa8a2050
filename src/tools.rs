//! The tools a store knows, one row each (`holdfast tools`): the contract's
//! version, the autonomy level in force, the status lookup's kind and what its
//! checks showed, and the newest drill; with the whole inventory of one tool
//! (`holdfast tools show`). Read through the autonomy gates' [`Snapshot`]: the
//! contracts and the ledgers of levels, drills and lookup checks, and per tool
//! only what an index on the tool finds.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::autonomy::Snapshot;
use crate::core::autonomy::{self, DrillResult};
use crate::core::contract::Contract;
use crate::core::inventory::{self, Entry};
use crate::core::ladder::Level;
use crate::store::{Session, StoreError};

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
    /// The newest recorded drill.
    pub drill: Option<LastDrill>,
    /// How many inventory fields the contract lacks (of 14).
    pub missing: usize,
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

/// The newest drill of a tool: when, and whether it passed (every case passed
/// and every failure mode was covered, gate A2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LastDrill {
    pub at: DateTime<Utc>,
    pub cases: u32,
    pub passed: u32,
    pub pass: bool,
}

impl LastDrill {
    fn of(d: &DrillResult) -> LastDrill {
        LastDrill {
            at: d.at,
            cases: d.cases,
            passed: d.passed,
            pass: d.check().is_ok(),
        }
    }
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
    let snapshot = Snapshot::read(session, now).await?;
    Ok(snapshot
        .standings()
        .iter()
        .map(|s| row(&snapshot, &s.tool, s.effective))
        .collect())
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
    Ok(Some(ToolInventory {
        row: row(&snapshot, tool, level),
        inventory: inventory::inventory(contract),
    }))
}

fn row(snapshot: &Snapshot, tool: &str, autonomy: Level) -> ToolRow {
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
    ToolRow {
        tool: tool.to_owned(),
        version: contract.map(|c| c.version.clone()),
        autonomy,
        lookup: contract.map(|c| inventory::lookup_kind(&c.status_lookup)),
        checks,
        drill: snapshot.latest_drill(tool).map(LastDrill::of),
        missing: contract.map_or(0, |c| {
            inventory::inventory(c)
                .iter()
                .filter(|e| e.missing())
                .count()
        }),
    }
}
