//! Rerun after material change (DESIGN §9.4): which differences between two
//! versions of a tool's contract are material, the recorded changes outside
//! the contract (`holdfast tools changed`), whether a tool's latest drill is
//! still current, and the system's drop of a tool's autonomy when it is not.
//!
//! Contract versions and recorded changes are rows of the drill ledger
//! ([`DRILL_LEDGER`]), beside the drills they make stale, so one read of that
//! ledger answers "is this drill current".

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use super::audit::{AuditDraft, AuditRow};
use super::autonomy::{
    AUTONOMY_LEDGER, DRILL_ACTION, DRILL_LEDGER, LevelChange, SET_ACTION, ToolLevel, ledger_draft,
};
use super::contract::Contract;
use super::ladder::Level;
use super::model::Role;

/// The action of the row that records a new version of a tool's contract.
pub const CONTRACT_VERSION_ACTION: &str = "contract-version";
/// The action of the row that records a material change outside the contract.
pub const TOOL_CHANGED_ACTION: &str = "tool-changed";

/// What a drill-ledger row of `action`, whose evidence `entry` reads, says
/// changed materially (a `contract-version` row with material fields, a
/// `tool-changed` row), in words; `None` for any other row. What the chain's
/// replay reads to find a raise on a stale drill.
pub fn material_change_of<'a>(
    action: &str,
    entry: &dyn Fn(&str) -> Option<&'a str>,
) -> Option<String> {
    match action {
        CONTRACT_VERSION_ACTION => {
            let material = entry("material:").filter(|m| !m.is_empty())?;
            Some(format!(
                "contract version {} → {} changed {}",
                entry("from:").unwrap_or_default(),
                entry("version:").unwrap_or_default(),
                material.replace(',', ", ")
            ))
        }
        TOOL_CHANGED_ACTION => Some(format!(
            "a material change was recorded: {}",
            entry("what:").unwrap_or_default()
        )),
        _ => None,
    }
}

/// The contract fields whose change is NOT material: who owns the tool (its
/// owner and its owners per unresolved state), the version label itself and
/// the time budget. Every other field — those of
/// today and any added later — is material unless it is named here, so a new
/// inventory field makes a drill stale by default.
pub const NOT_MATERIAL: &[&str] = &["owner", "owners", "version", "budget_seconds"];

/// The highest level a tool whose drill is stale keeps: every raise, to
/// `native` as to the levels above it, passes gate A2, so no level above
/// `manual` is held without a current drill.
pub const STALE_FLOOR: Level = Level::Manual;

/// The fields that differ materially between `old` and `new`, by name, sorted:
/// the two contracts compared as JSON objects, minus [`NOT_MATERIAL`].
pub fn material_changes(old: &Contract, new: &Contract) -> Vec<String> {
    let object = |c: &Contract| match serde_json::to_value(c) {
        Ok(Value::Object(map)) => map,
        _ => serde_json::Map::new(),
    };
    let (old, new) = (object(old), object(new));
    let mut keys: Vec<&String> = old.keys().chain(new.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| !NOT_MATERIAL.contains(&k.as_str()))
        .filter(|k| {
            old.get(k.as_str()).unwrap_or(&Value::Null)
                != new.get(k.as_str()).unwrap_or(&Value::Null)
        })
        .cloned()
        .collect()
}

/// A new version of a tool's contract, accepted at ingest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VersionChange {
    pub tool: String,
    pub from: String,
    pub to: String,
    /// The material fields that changed; empty for a non-material version.
    pub material: Vec<String>,
}

impl VersionChange {
    pub fn between(old: &Contract, new: &Contract) -> VersionChange {
        VersionChange {
            tool: new.tool.clone(),
            from: old.version.clone(),
            to: new.version.clone(),
            material: material_changes(old, new),
        }
    }

    /// The change in words, as the rationale of a drop names it.
    pub fn words(&self) -> String {
        if self.material.is_empty() {
            format!(
                "contract version {} → {} (no material field changed)",
                self.from, self.to
            )
        } else {
            format!(
                "contract version {} → {} changed {}",
                self.from,
                self.to,
                self.material.join(", ")
            )
        }
    }

    /// Its audit row on the drill ledger, by whoever ingested it.
    pub fn draft(&self, by: &str, role: Role, at: DateTime<Utc>) -> AuditDraft {
        ledger_draft(
            DRILL_LEDGER,
            CONTRACT_VERSION_ACTION,
            (by, role, None),
            Some(self.words()),
            vec![
                format!("tool:{}", self.tool),
                format!("from:{}", self.from),
                format!("version:{}", self.to),
                format!("material:{}", self.material.join(",")),
            ],
            at,
        )
    }
}

/// The longest `--what` of a recorded change.
pub const WHAT_MAX_CHARS: usize = 200;

/// Checks the `what` of a recorded change: one line of 3 to
/// [`WHAT_MAX_CHARS`] characters, no control characters; secrets redacted.
pub fn parse_what(text: &str) -> Result<String, String> {
    let trimmed = text.trim();
    let count = trimmed.chars().count();
    if count < 3 {
        return Err(format!(
            "say what changed in at least 3 characters (it has {count})"
        ));
    }
    if count > WHAT_MAX_CHARS {
        return Err(format!(
            "at most {WHAT_MAX_CHARS} characters (it has {count}); the rationale takes the details"
        ));
    }
    if let Some(c) = trimmed.chars().find(|c| c.is_control()) {
        return Err(format!(
            "one line without control characters (found U+{:04X})",
            u32::from(c)
        ));
    }
    Ok(super::redact::redact(trimmed).into_owned())
}

/// A material change outside the contract (model, prompt, tool description,
/// credentials, provider API, retry library, queue, policy), recorded by the
/// tool's owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RecordedChange {
    pub tool: String,
    pub what: String,
    pub rationale: String,
    pub by: String,
    pub at: DateTime<Utc>,
}

impl RecordedChange {
    pub fn words(&self) -> String {
        format!("recorded change: {}", self.what)
    }

    pub fn draft(&self, role: Role, policy: Option<String>) -> AuditDraft {
        ledger_draft(
            DRILL_LEDGER,
            TOOL_CHANGED_ACTION,
            (&self.by, role, policy),
            Some(self.rationale.clone()),
            vec![format!("tool:{}", self.tool), format!("what:{}", self.what)],
            self.at,
        )
    }
}

/// The system's drop of `tool` from `current` to [`STALE_FLOOR`] because
/// `change` made its drill stale; `None` when it is already there. The one
/// rule both doors (ingest of a material version, `tools changed`) apply. The
/// act is the system's (role `system`, no person decided it), written in the
/// name of `by`, whose write brought the change: on PostgreSQL a login writes
/// audit rows only in its own name.
pub fn stale_drop(
    tool: &str,
    current: Level,
    change: &str,
    by: &str,
    now: DateTime<Utc>,
) -> Option<LevelChange> {
    if current <= STALE_FLOOR {
        return None;
    }
    let rationale = format!(
        "drill results stale after {change}; autonomy drops to {STALE_FLOOR} until `holdfast drill --tool {tool}` passes on it and an owner raises it again"
    );
    Some(LevelChange {
        from: current,
        to: ToolLevel {
            tool: tool.to_owned(),
            level: STALE_FLOOR,
            set_by: by.to_owned(),
            set_at: now,
            rationale: rationale.clone(),
        },
        consequences: vec![format!(
            "tool {tool} dropped from {current} to {STALE_FLOOR}: {}",
            STALE_FLOOR.meaning()
        )],
        audit: ledger_draft(
            AUTONOMY_LEDGER,
            SET_ACTION,
            (by, Role::System, None),
            Some(rationale),
            vec![
                format!("tool:{tool}"),
                format!("from:{current}"),
                format!("level:{STALE_FLOOR}"),
            ],
            now,
        ),
    })
}

/// A tool's latest drill as the drill ledger leaves it, and whether it is
/// still current: what the Tools tab shows as "last drill".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LastDrill {
    /// The seq of the row that recorded it.
    pub seq: i64,
    pub at: DateTime<Utc>,
    /// The contract version it ran under; `None` for a drill recorded before
    /// drills named their version (stale).
    pub version: Option<String>,
    /// Every case passed and every mode was covered.
    pub passed: bool,
    /// `None` while current; else why it is stale.
    pub stale: Option<String>,
}

impl LastDrill {
    pub fn current(&self) -> bool {
        self.stale.is_none()
    }
}

fn entry<'a>(row: &'a AuditRow, key: &str) -> Option<&'a str> {
    row.draft.evidence.iter().find_map(|e| e.strip_prefix(key))
}

/// `tool`'s latest drill in `rows` (the drill ledger's rows, in seq order;
/// other rows are skipped) and whether it is current under `contract`: it ran
/// under a known contract version, and every change recorded after it — new
/// contract versions and recorded changes — was non-material, and it ran
/// under the version the contract is at now or one the non-material versions
/// since lead from. `None` when the tool has no recorded drill.
pub fn last_drill(tool: &str, contract: Option<&Contract>, rows: &[AuditRow]) -> Option<LastDrill> {
    let mut last: Option<LastDrill> = None;
    // The version the latest drill counts for, carried along non-material versions.
    let mut counts_for: Option<String> = None;
    for row in rows {
        let d = &row.draft;
        if d.operation.as_str() != DRILL_LEDGER || entry(row, "tool:") != Some(tool) {
            continue;
        }
        match d.action.as_str() {
            DRILL_ACTION => {
                let version = entry(row, "version:").map(str::to_owned);
                let passed = super::autonomy::DrillResult::passed_by_evidence(&d.evidence);
                counts_for.clone_from(&version);
                last = Some(LastDrill {
                    seq: row.seq,
                    at: d.at,
                    stale: version
                        .is_none()
                        .then(|| "it ran under an unknown contract version (recorded before drills named theirs)".to_owned()),
                    version,
                    passed,
                });
            }
            action => {
                let Some(drill) = last.as_mut() else { continue };
                match material_change_of(action, &|key| entry(row, key)) {
                    Some(what) if drill.stale.is_none() => {
                        drill.stale = Some(format!("{what} after it"));
                    }
                    Some(_) => {}
                    None if action == CONTRACT_VERSION_ACTION => {
                        // Not material: the drill counts for the new version.
                        let from = entry(row, "from:").unwrap_or_default();
                        if counts_for.as_deref() == Some(from) {
                            counts_for = entry(row, "version:").map(str::to_owned);
                        }
                    }
                    None => {}
                }
            }
        }
    }
    let mut drill = last?;
    if drill.stale.is_none()
        && let Some(contract) = contract
        && counts_for.as_deref() != Some(contract.version.as_str())
    {
        drill.stale = Some(format!(
            "it ran under contract version {}, and the contract is at {}",
            drill.version.as_deref().unwrap_or("unknown"),
            contract.version
        ));
    }
    Some(drill)
}

/// The tools of `contracts` whose latest drill in `rows` is stale, each with
/// why: what `holdfast drill --changed` reruns.
pub fn stale_tools(contracts: &[Contract], rows: &[AuditRow]) -> Vec<(String, String)> {
    contracts
        .iter()
        .filter_map(|c| {
            let why = last_drill(&c.tool, Some(c), rows)?.stale?;
            Some((c.tool.clone(), why))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::audit::{genesis, seal};
    use crate::core::autonomy::DrillResult;
    use crate::core::clock::parse_instant;
    use crate::core::lookup::StatusLookup;
    use crate::core::model::FailureMode;

    fn at() -> DateTime<Utc> {
        parse_instant("2026-09-05T10:00:00Z").expect("instant")
    }

    fn contract(version: &str) -> Contract {
        Contract {
            tool: "T03".into(),
            version: version.into(),
            action: "ticket.create".into(),
            method: "POST".into(),
            idempotency: crate::core::contract::IdempotencyContract {
                supported: true,
                scope: None,
                retention_hours: None,
            },
            status_lookup: StatusLookup::ByHand,
            retryable: vec!["http_503".into()],
            compensation: None,
            owner: "integrations".into(),
            max_attempts: 3,
            budget_seconds: 120,
            path: None,
            response: None,
            inventory: Default::default(),
            owners: None,
            domain_review: None,
            circuit: None,
        }
    }

    fn rows(drafts: Vec<AuditDraft>) -> Vec<AuditRow> {
        let mut prev = genesis();
        drafts
            .into_iter()
            .enumerate()
            .map(|(i, d)| {
                let row = seal(&prev, i64::try_from(i).expect("small") + 1, d);
                prev = row.hash.clone();
                row
            })
            .collect()
    }

    fn drill(version: Option<&str>) -> AuditDraft {
        DrillResult {
            tool: "T03".into(),
            at: at(),
            cases: 16,
            passed: 16,
            modes: FailureMode::ALL.to_vec(),
            failed: vec![],
            drill_store: "s".into(),
            by: "maya".into(),
            contract_version: version.map(str::to_owned),
        }
        .draft(Role::Local, None)
    }

    /// Owner, version and budget are not material; anything else is,
    /// including a field the comparison names nowhere.
    #[test]
    fn only_the_named_fields_are_not_material() {
        let old = contract("V1");
        let mut new = contract("V2");
        new.owner = "someone".into();
        new.budget_seconds = 5;
        assert!(material_changes(&old, &new).is_empty());
        new.method = "PUT".into();
        new.retryable.clear();
        new.path = Some(crate::core::lookup::PathTemplate::parse("/t/{target}").expect("path"));
        assert_eq!(
            material_changes(&old, &new),
            ["method", "path", "retryable"]
        );
    }

    #[test]
    fn a_drill_is_current_until_a_material_change_follows_it() {
        let v1 = contract("V1");
        let v2 = contract("V2");
        let bump = |material: &[&str]| {
            VersionChange {
                tool: "T03".into(),
                from: "V1".into(),
                to: "V2".into(),
                material: material.iter().map(|s| (*s).to_owned()).collect(),
            }
            .draft("ingest", Role::System, at())
        };
        let current = rows(vec![drill(Some("V1"))]);
        assert!(
            last_drill("T03", Some(&v1), &current)
                .expect("drill")
                .current()
        );
        assert!(
            last_drill("T03", Some(&v2), &current)
                .expect("drill")
                .stale
                .is_some()
        );
        let quiet = rows(vec![drill(Some("V1")), bump(&[])]);
        assert!(
            last_drill("T03", Some(&v2), &quiet)
                .expect("drill")
                .current()
        );
        let loud = rows(vec![drill(Some("V1")), bump(&["method"])]);
        let why = last_drill("T03", Some(&v2), &loud)
            .expect("drill")
            .stale
            .expect("stale");
        assert!(why.contains("V1 → V2 changed method"), "{why}");
        let again = rows(vec![
            drill(Some("V1")),
            bump(&["method"]),
            drill(Some("V2")),
        ]);
        assert!(
            last_drill("T03", Some(&v2), &again)
                .expect("drill")
                .current()
        );
        let changed = RecordedChange {
            tool: "T03".into(),
            what: "provider API v2".into(),
            rationale: "the provider moved".into(),
            by: "maya".into(),
            at: at(),
        };
        let recorded = rows(vec![drill(Some("V1")), changed.draft(Role::Owner, None)]);
        let why = last_drill("T03", Some(&v1), &recorded)
            .expect("drill")
            .stale
            .expect("stale");
        assert!(why.contains("recorded: provider API v2"), "{why}");
        let unknown = rows(vec![drill(None)]);
        assert!(
            last_drill("T03", Some(&v1), &unknown)
                .expect("drill")
                .stale
                .is_some()
        );
        assert!(last_drill("T04", Some(&v1), &unknown).is_none());
        assert_eq!(stale_tools(&[v1], &recorded).len(), 1);
    }

    #[test]
    fn the_drop_is_the_systems_and_names_the_change() {
        let drop = stale_drop(
            "T03",
            Level::Automation,
            "recorded change: queue",
            "maya",
            at(),
        )
        .expect("drop");
        assert_eq!(drop.to.level, STALE_FLOOR);
        assert_eq!(drop.audit.role, Role::System);
        assert_eq!(drop.audit.by, "maya");
        assert!(
            drop.audit
                .rationale
                .as_deref()
                .unwrap_or_default()
                .contains("queue")
        );
        assert!(stale_drop("T03", Level::Manual, "x", "maya", at()).is_none());
    }
}
