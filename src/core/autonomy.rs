//! Autonomy per tool (DESIGN §9.4; seed 001's ladder manual → native → automation
//! → agent): the three gates a raise must pass and the audited decision on a
//! change, over the ladder of `ladder.rs`. Like grants, autonomy
//! changes and drill results are rows of the one audit chain, under the reserved
//! ledger ids [`AUTONOMY_LEDGER`] and [`DRILL_LEDGER`], so `audit verify` covers them.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use serde::Serialize;
use std::fmt;

use super::audit::AuditDraft;
use super::clock::human_instant;
use super::contract::Contract;
use super::detail::Dataset;
use super::ids::{OperationId, ledger_id};
use super::ladder::Level;
use super::lookup::StatusLookup;
use super::model::{FailureMode, Role, State};
use super::refusal::{Refusal, Rule};
use super::rules::Rationale;
use super::rules::actor::Actor;

/// The audit rows of autonomy changes carry this in their `operation` column.
pub const AUTONOMY_LEDGER: &str = "holdfast:autonomy";
/// The audit rows of drill results recorded for a tool carry this.
pub const DRILL_LEDGER: &str = "holdfast:drills";
/// The action name of an autonomy change in the audit log.
pub const SET_ACTION: &str = "autonomy-set";
/// The action name of a recorded drill in the audit log.
pub const DRILL_ACTION: &str = "drill";
/// The action name of a recorded lookup check (`holdfast lookup check`) in the
/// audit log: a row of the autonomy ledger, since what it proves bounds autonomy.
pub const LOOKUP_CHECK_ACTION: &str = "lookup-check";

/// A row of one of the reserved ledgers (`ledger`): `by` acting as `role`
/// under `policy`, in its own name, with `rationale` and `evidence`.
pub fn ledger_draft(
    ledger: &str,
    action: &str,
    (by, role, policy): (&str, Role, Option<String>),
    rationale: Option<String>,
    evidence: Vec<String>,
    at: DateTime<Utc>,
) -> AuditDraft {
    AuditDraft {
        operation: ledger_id(ledger),
        action: action.to_owned(),
        from: None,
        to: None,
        by: by.to_owned(),
        role,
        policy,
        on_behalf_of: None,
        rationale,
        evidence,
        at,
    }
}

/// A tool's stored level: who set it, when and why. A tool without one is at
/// [`Level::Manual`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolLevel {
    pub tool: String,
    pub level: Level,
    pub set_by: String,
    pub set_at: DateTime<Utc>,
    pub rationale: String,
}

/// The level of `tool` in `levels`, manual when it has none.
pub fn level_of(levels: &[ToolLevel], tool: &str) -> Level {
    levels
        .iter()
        .find(|l| l.tool == tool)
        .map_or(Level::Manual, |l| l.level)
}

/// One drill run for a tool, as recorded in its store: how many of the
/// injections ran and passed, and which failure modes they covered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DrillResult {
    pub tool: String,
    pub at: DateTime<Utc>,
    pub cases: u32,
    pub passed: u32,
    /// The failure modes the cases covered (a mode counts when at least one case
    /// of it ran), in [`FailureMode::ALL`] order.
    pub modes: Vec<FailureMode>,
    /// Ids of the cases that failed.
    pub failed: Vec<String>,
    /// Where the drill's own operations were written (a store of its own).
    pub drill_store: String,
    pub by: String,
    /// The version of the tool's contract the drill ran under; `None` for a
    /// drill recorded before drills named it (read as stale, DESIGN §9.4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contract_version: Option<String>,
}

impl DrillResult {
    /// Whether the evidence of a drill row says every case passed and every
    /// mode was covered (what [`Self::check`] asks of the stored result).
    pub fn passed_by_evidence(evidence: &[String]) -> bool {
        let entry = |key: &str| evidence.iter().find_map(|e| e.strip_prefix(key));
        let modes = entry("modes:").unwrap_or_default();
        entry("cases:") == entry("passed:")
            && entry("failed:").is_some_and(str::is_empty)
            && FailureMode::ALL
                .iter()
                .all(|m| modes.split(',').any(|x| x == m.as_str()))
    }

    /// Why this drill does not satisfy gate A2, or `Ok` when every mode was
    /// covered and every case passed.
    pub fn check(&self) -> Result<(), String> {
        let missing: Vec<&str> = FailureMode::ALL
            .iter()
            .filter(|m| !self.modes.contains(m))
            .map(|m| m.as_str())
            .collect();
        if !missing.is_empty() {
            return Err(format!(
                "its latest drill ({}) did not cover {}",
                human_instant(self.at),
                missing.join(", ")
            ));
        }
        if self.passed != self.cases || !self.failed.is_empty() {
            return Err(format!(
                "its latest drill ({}) passed {} of {} cases (failed: {})",
                human_instant(self.at),
                self.passed,
                self.cases,
                self.failed.join(", ")
            ));
        }
        Ok(())
    }

    /// The audit row that records it: `tool:`, `cases:`, `passed:`, `modes:`,
    /// `failed:` and `store:` entries, which verify compares with the stored row.
    pub fn draft(&self, role: Role, policy: Option<String>) -> AuditDraft {
        ledger_draft(
            DRILL_LEDGER,
            DRILL_ACTION,
            (&self.by, role, policy),
            None,
            self.evidence(),
            self.at,
        )
    }

    /// The evidence entries of its audit row.
    pub fn evidence(&self) -> Vec<String> {
        vec![
            format!("tool:{}", self.tool),
            format!("cases:{}", self.cases),
            format!("passed:{}", self.passed),
            format!(
                "modes:{}",
                self.modes
                    .iter()
                    .map(|m| m.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            format!("failed:{}", self.failed.join(",")),
            format!("store:{}", self.drill_store),
        ]
        .into_iter()
        .chain(self.contract_version.iter().map(|v| format!("version:{v}")))
        .collect()
    }
}

/// One check of a tool's status lookup against a record known to exist
/// (`holdfast lookup check TOOL --known ID`): the lookup of operation `known`,
/// whose effect is known to be at the provider, found it or not. A lookup is
/// "checked" while the latest check of its tool found the record with the very
/// lookup object the contract holds now (its fingerprint).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LookupCheck {
    pub tool: String,
    /// The operation whose record is known to exist.
    pub known: String,
    /// Whether the lookup found it.
    pub found: bool,
    /// The fingerprint of the lookup object checked ([`lookup_fingerprint`]).
    pub lookup: String,
    /// What the lookup showed, in words (`HTTP 200, found`, `unclear_not_found`).
    pub answer: String,
    pub by: String,
    pub at: DateTime<Utc>,
}

impl LookupCheck {
    /// The audit row that records it, on the autonomy ledger.
    pub fn draft(&self, role: Role, policy: Option<String>) -> AuditDraft {
        AuditDraft {
            operation: ledger_id(AUTONOMY_LEDGER),
            action: LOOKUP_CHECK_ACTION.to_owned(),
            from: None,
            to: None,
            by: self.by.clone(),
            role,
            policy,
            on_behalf_of: None,
            rationale: None,
            evidence: vec![
                format!("tool:{}", self.tool),
                format!("known:{}", self.known),
                format!("found:{}", if self.found { "yes" } else { "no" }),
                format!("lookup:{}", self.lookup),
                format!("answer:{}", self.answer),
            ],
            at: self.at,
        }
    }

    /// The check an audit row records, when it is a lookup-check row.
    pub fn from_row(row: &super::audit::AuditRow) -> Option<LookupCheck> {
        let d = &row.draft;
        if d.operation.as_str() != AUTONOMY_LEDGER || d.action != LOOKUP_CHECK_ACTION {
            return None;
        }
        let entry = |key: &str| {
            d.evidence
                .iter()
                .find_map(|e| e.strip_prefix(key))
                .map(str::to_owned)
        };
        Some(LookupCheck {
            tool: entry("tool:")?,
            known: entry("known:")?,
            found: entry("found:")? == "yes",
            lookup: entry("lookup:")?,
            answer: entry("answer:").unwrap_or_default(),
            by: d.by.clone(),
            at: d.at,
        })
    }
}

/// The fingerprint of a lookup object: the SHA-256 of its JSON form. A check
/// holds only for the lookup it checked; a contract that changes its lookup
/// must be checked again.
pub fn lookup_fingerprint(spec: &super::lookup::LookupSpec) -> String {
    let text = serde_json::to_string(spec).unwrap_or_default();
    super::ids::Sha256::of(text.as_bytes()).to_string()
}

/// Why `contract`'s lookup does not count as checked by `latest` (the tool's
/// newest check), or `None` when it does. A contract without a lookup object
/// has nothing to check (the lookup gate refuses it on its own).
pub fn unchecked(contract: Option<&Contract>, latest: Option<&LookupCheck>) -> Option<String> {
    let spec = contract.and_then(|c| c.status_lookup.spec())?;
    let tool = contract.map_or("", |c| c.tool.as_str());
    let again =
        format!("run `holdfast lookup check {tool} --known ID` with a record known to exist");
    Some(match latest {
        None => format!(
            "tool {tool}'s status lookup was never proven to find a record known to exist; {again}"
        ),
        Some(c) if c.lookup != lookup_fingerprint(spec) => format!(
            "tool {tool}'s status lookup changed since it was checked ({}); {again}",
            human_instant(c.at)
        ),
        Some(c) if !c.found => format!(
            "tool {tool}'s status lookup did not find {}, a record known to exist ({}, {}); {again}",
            c.known,
            c.answer,
            human_instant(c.at)
        ),
        Some(_) => return None,
    })
}

/// The level that bounds what holdfast does on its own for a tool: its set
/// level, capped at `manual` while its lookup is unchecked.
pub fn effective_level(level: Level, unchecked: Option<&str>) -> Level {
    if unchecked.is_some() {
        Level::Manual
    } else {
        level
    }
}

/// The modes `modes` covers, each once, in [`FailureMode::ALL`] order.
pub fn covered(modes: impl IntoIterator<Item = FailureMode>) -> Vec<FailureMode> {
    let set: BTreeSet<FailureMode> = modes.into_iter().collect();
    FailureMode::ALL
        .iter()
        .copied()
        .filter(|m| set.contains(m))
        .collect()
}

/// A veto on one of the tool's operations that is still open: the release gate
/// found it (DESIGN §6) and the operation has not reached a terminal state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpenVeto {
    pub operation: OperationId,
    pub state: State,
    /// The veto kinds, as the release gate names them.
    pub kinds: Vec<String>,
}

/// The open vetoes on one tool's operations: how many, and the first of them
/// in operation order (each judged again for its kinds), as many as a report
/// names.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct OpenVetoes {
    pub total: u64,
    pub first: Vec<OpenVeto>,
}

impl OpenVetoes {
    /// Every open veto, named: all of them are listed.
    pub fn all(vetoes: Vec<OpenVeto>) -> OpenVetoes {
        OpenVetoes {
            total: u64::try_from(vetoes.len()).unwrap_or(u64::MAX),
            first: vetoes,
        }
    }
}

/// How many open vetoes `autonomy list` and a refused raise name; the rest are
/// counted (`holdfast report` and the metrics tab list them).
pub const VETOES_NAMED: u64 = 20;

/// Everything the gates of a raise read, gathered by the caller from the store.
#[derive(Debug, Clone, Default)]
pub struct Gates<'a> {
    /// The tool's contract, if the store holds one.
    pub contract: Option<&'a Contract>,
    /// The tool's latest recorded drill.
    pub drill: Option<&'a DrillResult>,
    /// Open vetoes on the tool's operations.
    pub vetoes: OpenVetoes,
    /// The tenants of the tool's operations (whose owners the change touches).
    pub tenants: Vec<String>,
    /// The tool's newest lookup check.
    pub lookup_check: Option<&'a LookupCheck>,
    /// Why the tool's latest drill is stale (`core::rerun::last_drill`), if
    /// it is: a stale drill does not open gate A2.
    pub stale: Option<String>,
}

/// A tool's standing against the three gates, for `autonomy list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Standing {
    /// `None` when the gate passes, else why not.
    pub lookup: Option<String>,
    pub drill: Option<String>,
    pub veto: Option<String>,
}

impl Standing {
    pub fn raisable(&self) -> bool {
        self.lookup.is_none() && self.drill.is_none() && self.veto.is_none()
    }
}

/// Checks the three gates of a raise of `tool`; the first that fails is refused
/// with its rule (A1 lookup, A2 drill, A3 veto).
pub fn standing(tool: &str, gates: &Gates<'_>) -> Standing {
    let lookup = match gates.contract.map(|c| &c.status_lookup) {
        None => Some(format!("the store holds no contract for tool {tool}")),
        Some(StatusLookup::Http(_)) => unchecked(gates.contract, gates.lookup_check),
        Some(StatusLookup::ByHand) => Some(format!(
            "tool {tool}'s contract says a lookup exists but not how to make it; give status_lookup the object of DESIGN §9.1"
        )),
        Some(StatusLookup::None) => Some(format!(
            "tool {tool}'s contract has no status lookup; the lack of a status path limits autonomy"
        )),
    };
    let drill = match gates.drill {
        None => Some(format!(
            "tool {tool} has no recorded drill in this store; run `holdfast drill --tool {tool}` against this store (the same --db / --database-url): it records the result here for this gate, its simulated operations in a fresh store of their own (a plain `holdfast drill`, into a fresh store or with --into-existing, records no tool's drill)"
        )),
        Some(d) => d.check().err().or_else(|| {
            gates.stale.as_ref().map(|why| {
                let version = gates
                    .contract
                    .map_or_else(|| "its current contract".to_owned(), |c| format!("contract version {}", c.version));
                format!(
                    "its latest drill is stale: {why}; run `holdfast drill --tool {tool}` (or `holdfast drill --changed`) on {version}"
                )
            })
        }),
    };
    let veto = veto_gate(tool, &gates.vetoes);
    Standing {
        lookup,
        drill,
        veto,
    }
}

/// Gate A3: `None` when no veto on `tool`'s operations is open, else why the
/// raise waits (the first vetoes named, the rest counted). The one rule the
/// autonomy command asks before a raise and `audit verify` asks again of every
/// raise the chain records, on the vetoes open at that row.
pub fn veto_gate(tool: &str, vetoes: &OpenVetoes) -> Option<String> {
    (vetoes.total > 0).then(|| {
        let named: Vec<String> = vetoes
            .first
            .iter()
            .map(|v| format!("{} ({}, {})", v.operation, v.state, v.kinds.join("+")))
            .collect();
        let unnamed = vetoes
            .total
            .saturating_sub(u64::try_from(named.len()).unwrap_or(u64::MAX));
        let more = if unnamed > 0 {
            format!(" and {unnamed} more (`holdfast report` lists them)")
        } else {
            String::new()
        };
        format!(
            "{} on tool {tool}'s operations: {}{more}; settle them first",
            crate::core::names::count(vetoes.total, "open veto", "open vetoes"),
            named.join(", ")
        )
    })
}

/// The vetoes of the release gate on `tool`'s operations in `dataset` that are
/// still open at `now` (the operation has not reached a terminal state),
/// judged from the records: how many, and the first [`VETOES_NAMED`]. What a
/// login that may only read the kept facts reads for gate A3, and what
/// `audit verify` reads of the operations as the chain left them at a raise.
pub fn open_vetoes(dataset: &Dataset, tool: &str, now: DateTime<Utc>) -> OpenVetoes {
    let vetoes = super::metrics::report(dataset, now).release.vetoes;
    let open: Vec<OpenVeto> = vetoes
        .iter()
        .filter_map(|v| {
            let op = dataset
                .operations
                .iter()
                .find(|o| o.id == v.operation && o.tool == tool)?;
            (!op.state.is_terminal()).then(|| OpenVeto {
                operation: op.id.clone(),
                state: op.state,
                kinds: v.kinds.iter().map(|k| k.as_str().to_owned()).collect(),
            })
        })
        .collect();
    let total = u64::try_from(open.len()).unwrap_or(u64::MAX);
    let named = usize::try_from(VETOES_NAMED).unwrap_or(usize::MAX);
    OpenVetoes {
        total,
        first: open.into_iter().take(named).collect(),
    }
}

/// What someone asks: put `tool` at `level`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelRequest {
    pub tool: String,
    pub level: Level,
}

/// An allowed change, ready for the store: the new row, the level it was decided
/// on (the store refuses the change when it moved in between) and its audit row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LevelChange {
    pub from: Level,
    pub to: ToolLevel,
    pub consequences: Vec<String>,
    pub audit: AuditDraft,
}

/// The role `actor` changes `tool`'s level with: the local user in single-user
/// mode; otherwise an owner of every tenant the tool's operations belong to (of
/// some tenant when it has none yet), acting in its own name (G6).
pub fn owner_role(
    actor: &Actor,
    tool: &str,
    tenants: &[String],
    what: &str,
) -> Result<Role, Refusal> {
    if actor.on_behalf_of.is_some() {
        super::rules::actor::own_name(actor, what)?;
    }
    let Some(grants) = &actor.grants else {
        return Ok(Role::Local);
    };
    let owns = |tenant: &str| {
        grants
            .iter()
            .any(|g| g.role == Role::Owner && g.tenant == tenant)
    };
    let missing: Vec<&str> = tenants
        .iter()
        .map(String::as_str)
        .filter(|t| !owns(t))
        .collect();
    let owner_anywhere = grants.iter().any(|g| g.role == Role::Owner);
    if !missing.is_empty() || !owner_anywhere {
        return Err(Refusal {
            rule: Rule::G6,
            reason: if missing.is_empty() {
                format!(
                    "{what} for tool {tool} is an owner's decision; {} is an owner nowhere",
                    actor.identity
                )
            } else {
                format!(
                    "{what} for tool {tool} is an owner's decision on every tenant its operations belong to; {} is not an owner of {}",
                    actor.identity,
                    missing.join(", ")
                )
            },
        });
    }
    Ok(Role::Owner)
}

/// Decides a change of `tool`'s level from `current` to the requested one.
/// `Ok(None)`: it is already there. Raising needs every gate (A1–A3); lowering is
/// always allowed to an owner.
pub fn decide_level(
    actor: &Actor,
    current: Level,
    request: &LevelRequest,
    gates: &Gates<'_>,
    rationale: &Rationale,
    now: DateTime<Utc>,
) -> Result<Option<LevelChange>, Refusal> {
    let LevelRequest { tool, level } = request;
    let role = owner_role(actor, tool, &gates.tenants, "changing autonomy")?;
    if *level == current {
        return Ok(None);
    }
    let raising = *level > current;
    if raising {
        let standing = standing(tool, gates);
        for (rule, why) in [
            (Rule::A1, standing.lookup),
            (Rule::A2, standing.drill),
            (Rule::A3, standing.veto),
        ] {
            if let Some(why) = why {
                return Err(Refusal {
                    rule,
                    reason: format!(
                        "raising tool {tool} from {current} to {level} is refused: {why}"
                    ),
                });
            }
        }
    }
    let to = ToolLevel {
        tool: tool.clone(),
        level: *level,
        set_by: actor.identity.clone(),
        set_at: now,
        rationale: rationale.as_str().to_owned(),
    };
    let consequences = vec![format!(
        "tool {tool} is at {level} (was {current}): {}",
        level.meaning()
    )];
    let audit = AuditDraft {
        operation: ledger_id(AUTONOMY_LEDGER),
        action: SET_ACTION.to_owned(),
        from: None,
        to: None,
        by: actor.identity.clone(),
        role,
        policy: actor.policy.clone(),
        on_behalf_of: None,
        rationale: Some(rationale.as_str().to_owned()),
        evidence: vec![
            format!("tool:{tool}"),
            format!("from:{current}"),
            format!("level:{level}"),
        ],
        at: now,
    };
    Ok(Some(LevelChange {
        from: current,
        to,
        consequences,
        audit,
    }))
}

impl fmt::Display for Standing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let failing: Vec<String> = [
            ("A1", &self.lookup),
            ("A2", &self.drill),
            ("A3", &self.veto),
        ]
        .into_iter()
        .filter_map(|(rule, why)| why.as_ref().map(|w| format!("{rule}: {w}")))
        .collect();
        if failing.is_empty() {
            f.write_str("may be raised")
        } else {
            f.write_str(&failing.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::clock::parse_instant;
    use crate::core::model::Grant;

    fn at() -> DateTime<Utc> {
        parse_instant("2026-09-05T10:00:00Z").expect("instant")
    }

    fn drill(passed: u32, modes: &[FailureMode]) -> DrillResult {
        DrillResult {
            tool: "T06".into(),
            at: at(),
            cases: 16,
            passed,
            modes: modes.to_vec(),
            failed: if passed == 16 {
                vec![]
            } else {
                vec!["T1".into()]
            },
            drill_store: "sqlite:/tmp/d.db".into(),
            by: "maya".into(),
            contract_version: Some("V1".into()),
        }
    }

    /// A tool with more open vetoes than are named counts them all and says
    /// how many more there are; a tool with none passes the gate.
    #[test]
    fn the_veto_gate_counts_every_open_veto_and_names_the_first() {
        let veto = |n: u32| OpenVeto {
            operation: OperationId::parse(&format!("B{n:07}")).expect("id"),
            state: State::Unknown,
            kinds: vec!["retry_before_reconcile".into()],
        };
        let named = u32::try_from(VETOES_NAMED).expect("small");
        let gates = Gates {
            vetoes: OpenVetoes {
                total: u64::from(named) + 5,
                first: (0..named).map(veto).collect(),
            },
            ..Gates::default()
        };
        let why = standing("S01", &gates).veto.expect("refused");
        assert!(why.starts_with("25 open vetoes on tool S01's operations: B0000000 (UNKNOWN, retry_before_reconcile), "), "{why}");
        assert!(why.contains("B0000019 (UNKNOWN, retry_before_reconcile) and 5 more (`holdfast report` lists them); settle them first"), "{why}");
        let all = Gates {
            vetoes: OpenVetoes::all(vec![veto(1)]),
            ..Gates::default()
        };
        let why = standing("S01", &all).veto.expect("refused");
        assert_eq!(
            why,
            "1 open veto on tool S01's operations: B0000001 (UNKNOWN, retry_before_reconcile); settle them first"
        );
        assert_eq!(standing("S01", &Gates::default()).veto, None);
    }

    /// A drill in a store of its own cannot open gate A2 here: the refusal names
    /// the one command that records a tool's drill in this store.
    #[test]
    fn the_drill_gate_names_the_command_that_records_a_drill_in_this_store() {
        let why = standing("T06", &Gates::default()).drill.expect("refused");
        assert!(
            why.contains("run `holdfast drill --tool T06` against this store"),
            "{why}"
        );
        assert!(why.contains("records the result here"), "{why}");
        assert!(why.contains("records no tool's drill"), "{why}");
    }

    #[test]
    fn a_drill_counts_only_when_it_covered_every_mode_and_passed_every_case() {
        assert!(drill(16, FailureMode::ALL).check().is_ok());
        assert!(drill(15, FailureMode::ALL).check().is_err());
        let err = drill(16, &FailureMode::ALL[..7]).check().unwrap_err();
        assert!(err.contains("unsafe_output"), "{err}");
    }

    #[test]
    fn owners_of_every_tenant_of_the_tool_decide() {
        let grant = |identity: &str, role: Role, tenant: &str| Grant {
            identity: identity.into(),
            role,
            tenant: tenant.into(),
            granted_by: "maya".into(),
            granted_at: at(),
        };
        let all = [
            grant("maya", Role::Owner, "p"),
            grant("maya", Role::Owner, "n"),
            grant("bo", Role::Owner, "p"),
            grant("kai", Role::Approver, "p"),
        ];
        let tenants = vec!["p".to_owned(), "n".to_owned()];
        let actor = |who: &str| Actor::from_grants(who, None, &all);
        assert_eq!(
            owner_role(&actor("maya"), "T06", &tenants, "x"),
            Ok(Role::Owner)
        );
        assert_eq!(
            owner_role(&actor("bo"), "T06", &tenants, "x")
                .unwrap_err()
                .rule,
            Rule::G6
        );
        assert_eq!(
            owner_role(&actor("kai"), "T06", &[], "x").unwrap_err().rule,
            Rule::G6
        );
        assert_eq!(
            owner_role(&Actor::local("me", None), "T06", &tenants, "x"),
            Ok(Role::Local)
        );
    }
}
