//! What the audit chain says the store holds — each operation's state, owner and
//! version, and the grants — replayed row by row, so that `audit verify` finds a
//! stored value changed behind the chain's back, not only an edited audit row;
//! and the rows no door writes (see [`Ledger::unlawful`]), refused as they come.

use std::collections::{BTreeMap, BTreeSet};

use compact_str::CompactString;
use hashbrown::HashMap;

use chrono::{DateTime, Utc};

use super::access::LEDGER;
use super::audit::{AuditRow, RECORD, RowView};
use super::audit::{CREATE, INGEST, TRANSITION};
use super::autonomy::{
    AUTONOMY_LEDGER, DRILL_ACTION, DRILL_LEDGER, DrillResult, LOOKUP_CHECK_ACTION, OpenVetoes,
    SET_ACTION, ToolLevel, veto_gate,
};
use super::circuit::{CIRCUIT_ACTION, CIRCUIT_LEDGER, Circuit};
use super::clock::format_instant;
use super::ladder::Level;
use super::model::{ActionKind, FailureMode, Grant, Role, State};
use super::rules::{MadeBy, transition_makers};
use super::work::{self, Lease, LeaseStatus};

/// The evidence entry of an `assign` row that names the new owner.
pub const OWNER: &str = "owner:";
/// The evidence entry of a `schedule` row that names the next observation time.
pub const NEXT_OBSERVATION: &str = "next_observation:";

/// The evidence entries that record what a commit changes besides the state: the
/// new owner and the next observation time, so the chain says what they are.
pub fn change_evidence(
    new_owner: Option<&str>,
    new_next_observation_at: Option<Option<DateTime<Utc>>>,
) -> Vec<String> {
    let mut entries = Vec::new();
    if let Some(owner) = new_owner {
        entries.push(format!("{OWNER}{owner}"));
    }
    if let Some(next) = new_next_observation_at {
        let at = next.map_or_else(|| "none".to_owned(), format_instant);
        entries.push(format!("{NEXT_OBSERVATION}{at}"));
    }
    entries
}

/// Where the chain leaves an operation's owner.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
enum Owner {
    /// Never assigned: the owner it was created with.
    #[default]
    AsCreated,
    /// The owner's place in [`Ledger::owners`]: few names recur across a
    /// million operations, so each slot holds a number, not a name.
    Assigned(u32),
    /// Assigned by a row written before `assign` rows named the new owner
    /// (encoding 1): the chain cannot say who owns it.
    Unrecorded,
}

/// One operation as its audit rows leave it.
#[derive(Debug, Clone, Default)]
struct Entry {
    state: Option<State>,
    owner: Owner,
    /// Every row but `record` rows bumped the version by one; creation sets 1.
    version: u32,
    last_seq: i64,
}

/// The lease the work rows leave: (worker, generation, until, status).
type LeaseFacts = (String, String, String, &'static str);

/// An operation as the store holds it, to compare with the chain.
#[derive(Debug, Clone, Copy)]
pub struct Stored<'a> {
    pub id: &'a str,
    pub state: State,
    pub owner: &'a str,
    /// The owner in the record it was created from.
    pub created_owner: &'a str,
    pub version: i64,
}

/// A stored value the chain does not account for: the audit row it disagrees
/// with (or the head, when no row speaks of it) and what differs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    pub seq: i64,
    pub reason: String,
}

/// The chain replayed. Feed every row in `seq` order, then compare.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    /// By id; where one of them is named, the least id is (see [`least`]).
    /// Keys held in the slot (ids of up to 24 bytes need no allocation of
    /// their own), so a lookup reads one place in memory, not two.
    operations: HashMap<CompactString, Entry>,
    /// By operation, the lease its work rows leave: few operations have one,
    /// so the slots of [`Self::operations`] stay small (48 bytes).
    leases: HashMap<CompactString, LeaseFacts>,
    /// Every owner an `assign` row named, and each one's place.
    owners: Vec<CompactString>,
    owner_places: HashMap<CompactString, u32>,
    grants: BTreeSet<(String, String, String)>,
    last_grant_seq: i64,
    /// Each tool's level as the `autonomy-set` rows leave it, with the row's seq.
    levels: BTreeMap<String, (String, i64)>,
    last_level_seq: i64,
    /// Each recorded drill's evidence entries, as its row wrote them.
    drills: Vec<(i64, Vec<String>)>,
    /// Every material change the drill ledger records (a `contract-version`
    /// row with material fields, a `tool-changed` row): its seq, tool and what.
    changes: Vec<(i64, String, String)>,
    /// Each tool's circuit as the `circuit` rows leave it: its position and
    /// the row's seq.
    circuits: BTreeMap<String, (String, i64)>,
    /// Every `lookup-check` row: its seq, tool and whether it found the record.
    lookup_checks: Vec<(i64, String, bool)>,
    head: i64,
    /// Every `autonomy-set` row, in order: its seq, tool, level, author and
    /// the identity it acted for.
    level_rows: Vec<LevelRow>,
    /// Every `grant` (`true`) and `revoke` row, in order: the grants at any
    /// `seq` (see [`Ledger::grants_before`]).
    grant_rows: Vec<(i64, bool, (String, String, String))>,
    /// The first row the rules would refuse that the walk alone can tell
    /// (see [`Ledger::unlawful`]).
    unlawful: Option<Divergence>,
    /// The operations with a row that records a decision: replayed through the
    /// rules after the walk ([`crate::core::lawful`]).
    decided: hashbrown::HashSet<CompactString>,
    /// The operations whose `ingest` row says their tool had no contract
    /// ([`crate::core::audit::NO_CONTRACT`]).
    uncontracted: hashbrown::HashSet<CompactString>,
    /// The records `ingest` and `record` rows name, per table (attempts,
    /// observations, items, expectations), over the whole chain.
    named: [u64; 4],
    /// By operation, the login that holds its lease (the claim row's `by`)
    /// while it is held.
    holders: HashMap<CompactString, CompactString>,
    /// The operation and author of the row just before, when it approved
    /// opening children (`approve-compensation`, `approve-resume`,
    /// `confirm`) or was itself such a child's `create` row.
    opener: Option<(CompactString, CompactString)>,
}

/// The value of a drill row's evidence entry starting with `prefix`.
fn drill_entry<'a>(evidence: &'a [String], prefix: &str) -> Option<&'a str> {
    evidence.iter().find_map(|e| e.strip_prefix(prefix))
}

/// Whether a drill row's evidence passes gate A2: every case passed and all
/// eight failure modes were covered.
fn drill_gate(evidence: &[String]) -> Result<(), String> {
    let number = |prefix| drill_entry(evidence, prefix).and_then(|n| n.parse::<u32>().ok());
    let (Some(cases), Some(passed)) = (number("cases:"), number("passed:")) else {
        return Err("the drill row names no case counts".into());
    };
    if cases == 0 || passed != cases {
        return Err(format!("the drill passed {passed} of {cases} cases"));
    }
    let modes: Vec<&str> = drill_entry(evidence, "modes:")
        .unwrap_or_default()
        .split(',')
        .collect();
    let missing: Vec<&str> = FailureMode::ALL
        .iter()
        .map(|m| m.as_str())
        .filter(|m| !modes.contains(m))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("the drill did not cover {}", missing.join(", ")))
    }
}

/// One `autonomy-set` row as verify replays it.
#[derive(Debug, Clone)]
pub struct LevelRow {
    pub seq: i64,
    pub tool: String,
    pub level: String,
    pub by: String,
    pub on_behalf_of: Option<String>,
    /// The role the row was written under: `system` for the drop of a tool
    /// whose drill went stale ([`crate::core::rerun::stale_drop`]).
    pub role: Role,
    /// The row's `at`, as the chain holds it.
    pub at: String,
}

/// The record tables whose records the chain names, in [`Ledger::named`]'s
/// order, with the prefix an `ingest` or `record` row names one by.
pub const NAMED_TABLES: [(&str, &str); 4] = [
    ("attempts", "attempt:"),
    ("observations", "observation:"),
    ("items", "item:"),
    ("expectations", "expectation"),
];

/// The operation with the least id of `operations`: the one a report names
/// when several diverge, the same whatever order the map holds them in.
fn least<'a, V>(
    operations: impl Iterator<Item = (&'a CompactString, &'a V)>,
) -> Option<(&'a CompactString, &'a V)> {
    operations.min_by(|a, b| a.0.cmp(b.0))
}

/// The value of the evidence entry starting with `prefix`.
fn entry<'a, E: AsRef<str>>(row: &RowView<'a, E>, prefix: &str) -> Option<&'a str> {
    row.evidence
        .iter()
        .rev()
        .find_map(|e| e.as_ref().strip_prefix(prefix))
}

impl Ledger {
    /// An empty ledger with room for `operations` operations: a replay of a
    /// large store then fills its map without growing it step by step.
    pub fn with_capacity(operations: usize) -> Ledger {
        Ledger {
            operations: HashMap::with_capacity(operations),
            ..Ledger::default()
        }
    }

    pub fn push(&mut self, row: &AuditRow) {
        let at = format_instant(row.draft.at);
        self.push_view(&RowView::of_draft(row.encoding, row.seq, &row.draft, &at));
    }

    /// Replays one row given as its fields (see [`RowView`]).
    pub fn push_view<E: AsRef<str>>(&mut self, row: &RowView<'_, E>) {
        self.head = row.seq;
        if row.operation == LEDGER {
            self.last_grant_seq = row.seq;
            let key = (
                entry(row, "identity:").unwrap_or_default().to_owned(),
                entry(row, "role:").unwrap_or_default().to_owned(),
                entry(row, "tenant:").unwrap_or_default().to_owned(),
            );
            match row.action {
                "grant" => {
                    self.grant_rows.push((row.seq, true, key.clone()));
                    self.grants.insert(key);
                }
                "revoke" => {
                    self.grant_rows.push((row.seq, false, key.clone()));
                    self.grants.remove(&key);
                }
                _ => {}
            }
            self.opener = None;
            return;
        }
        if row.operation == AUTONOMY_LEDGER {
            self.last_level_seq = row.seq;
            if row.action == SET_ACTION {
                let tool = entry(row, "tool:").unwrap_or_default().to_owned();
                let level = entry(row, "level:").unwrap_or_default().to_owned();
                self.level_rows.push(LevelRow {
                    seq: row.seq,
                    tool: tool.clone(),
                    level: level.clone(),
                    by: row.by.to_owned(),
                    on_behalf_of: row.on_behalf_of.map(str::to_owned),
                    role: row.role,
                    at: row.at.to_owned(),
                });
                self.levels.insert(tool, (level, row.seq));
            }
            if row.action == LOOKUP_CHECK_ACTION {
                let tool = entry(row, "tool:").unwrap_or_default().to_owned();
                let found = entry(row, "found:") == Some("yes");
                self.lookup_checks.push((row.seq, tool, found));
            }
            self.opener = None;
            return;
        }
        if row.operation == super::chain::CHAIN_LEDGER {
            self.opener = None;
            return;
        }
        if row.operation == CIRCUIT_LEDGER {
            if row.action == CIRCUIT_ACTION {
                let tool = entry(row, "tool:").unwrap_or_default().to_owned();
                let position = entry(row, "position:").unwrap_or_default().to_owned();
                self.circuits.insert(tool, (position, row.seq));
            }
            self.opener = None;
            return;
        }
        if row.operation == DRILL_LEDGER {
            if row.action == DRILL_ACTION {
                let evidence = row.evidence.iter().map(|e| e.as_ref().to_owned());
                self.drills.push((row.seq, evidence.collect()));
            }
            if let Some(what) = super::rerun::material_change_of(row.action, &|key| entry(row, key))
            {
                let tool = entry(row, "tool:").unwrap_or_default().to_owned();
                self.changes.push((row.seq, tool, what));
            }
            self.opener = None;
            return;
        }
        if let Some(reason) = self.refused(row)
            && self.unlawful.is_none()
        {
            self.unlawful = Some(Divergence {
                seq: row.seq,
                reason: format!("operation {}: {reason}", row.operation),
            });
        }
        self.opener = match row.action {
            "approve-compensation" | "approve-resume" | "confirm" | CREATE => {
                let parent = if row.action == CREATE {
                    entry(row, "parent:").unwrap_or_default()
                } else {
                    row.operation
                };
                Some((parent.into(), row.by.into()))
            }
            _ => None,
        };
        if ActionKind::parse(row.action).is_some()
            || row.action == CREATE
            || (row.action == TRANSITION
                && row
                    .from
                    .zip(row.to)
                    .and_then(|(from, to)| transition_makers(from, to))
                    .is_some_and(|makers| !makers.contains(&MadeBy::System)))
        {
            self.decided.insert(row.operation.into());
        }
        if matches!(row.action, INGEST | RECORD) {
            for e in row.evidence {
                let e = e.as_ref();
                if row.action == INGEST && e == crate::core::audit::NO_CONTRACT {
                    self.uncontracted.insert(row.operation.into());
                }
                if let Some(table) = NAMED_TABLES
                    .iter()
                    .position(|(_, prefix)| e.starts_with(prefix))
                {
                    self.named[table] += 1;
                }
            }
        }
        let op = self.operations.entry_ref(row.operation).or_default();
        op.last_seq = row.seq;
        if work::is_work_action(row.action) {
            let status = match row.action {
                work::COMPLETE => LeaseStatus::Completed,
                work::RELEASE => LeaseStatus::Released,
                _ => LeaseStatus::Held,
            };
            let lease = (
                entry(row, work::WORKER).unwrap_or_default().to_owned(),
                entry(row, work::GENERATION).unwrap_or_default().to_owned(),
                entry(row, work::UNTIL).unwrap_or_default().to_owned(),
                status.as_str(),
            );
            match status {
                LeaseStatus::Held if row.action == work::CLAIM => {
                    self.holders.insert(row.operation.into(), row.by.into());
                }
                LeaseStatus::Held => {}
                _ => {
                    self.holders.remove(row.operation);
                }
            }
            self.leases.insert(row.operation.into(), lease);
            return;
        }
        if row.action != RECORD {
            op.version = op.version.saturating_add(1);
        }
        if let Some(to) = row.to {
            op.state = Some(to);
        }
        if row.action == "assign" {
            op.owner = match entry(row, OWNER) {
                None => Owner::Unrecorded,
                Some(owner) => {
                    let next = u32::try_from(self.owners.len()).unwrap_or(u32::MAX);
                    let place = *self.owner_places.entry_ref(owner).or_insert(next);
                    if place == next {
                        self.owners.push(owner.into());
                    }
                    Owner::Assigned(place)
                }
            };
        }
    }

    /// Why the rules refuse `row` on what the rows before it left, as far as
    /// the walk alone can tell: a row for an operation no `ingest` or `create`
    /// row made, a second creation, a `create` that is no lawful child, a row
    /// moving from another state than the operation's, a transition the state
    /// table does not have (G1), and a move or a lease step by a login that
    /// does not hold the operation's lease. `None` when it finds nothing.
    fn refused<E: AsRef<str>>(&self, row: &RowView<'_, E>) -> Option<String> {
        let entry_of = self.operations.get(row.operation);
        let exists = entry_of.is_some_and(|op| op.state.is_some());
        let state = entry_of.and_then(|op| op.state);
        match row.action {
            INGEST | CREATE if exists => {
                return Some(format!(
                    "a {} row for an operation an earlier row already created",
                    row.action
                ));
            }
            INGEST => {
                return (row.role != Role::System).then(|| {
                    format!(
                        "an ingest row is written under the system role, not {}",
                        row.role
                    )
                });
            }
            CREATE => {
                let parent = entry(row, "parent:");
                let lawful = matches!((&self.opener, parent), (Some((p, by)), Some(parent))
                    if p.as_str() == parent && by.as_str() == row.by);
                return (!lawful).then(|| {
                    "a create row opens a child only right after its parent's approve-compensation, \
                     approve-resume or confirm by the same identity"
                        .to_owned()
                });
            }
            _ if !exists && !work::is_work_action(row.action) => {
                return Some(format!(
                    "its first row is a {} row, not the ingest or create row that makes an operation",
                    row.action
                ));
            }
            _ => {}
        }
        if work::is_work_action(row.action) {
            let holder = self.holders.get(row.operation);
            return match holder {
                Some(holder) if row.action != work::CLAIM && holder.as_str() != row.by => {
                    Some(format!(
                        "{} {}: the lease was claimed by {holder}, and only that login holds it",
                        row.by, row.action
                    ))
                }
                None if row.action != work::CLAIM => {
                    Some(format!("{} {}: no lease on it is held", row.by, row.action))
                }
                _ => None,
            };
        }
        if let (Some(from), Some(state)) = (row.from, state)
            && from != state
        {
            return Some(format!(
                "the {} row moves from {from}, but its rows leave it {state}",
                row.action
            ));
        }
        if row.action == TRANSITION {
            let (Some(from), Some(to)) = (row.from, row.to) else {
                return Some("a transition row names no from or to state".into());
            };
            if transition_makers(from, to).is_none() {
                return Some(format!(
                    "{from} → {to} is no transition of the state table (G1)"
                ));
            }
            if let Some(holder) = self.holders.get(row.operation) {
                let until = self
                    .leases
                    .get(row.operation)
                    .map_or("", |(_, _, until, _)| until.as_str());
                let held = row.at < until;
                if held && holder.as_str() != row.by {
                    return Some(format!(
                        "{} moved it {from} → {to} while {holder} held its lease",
                        row.by
                    ));
                }
            } else if self.worker_only(row.by) {
                return Some(format!(
                    "{} holds only the worker role and moved it {from} → {to} without a lease",
                    row.by
                ));
            }
        }
        None
    }

    /// Whether `identity` holds grants and all of them are the worker role.
    fn worker_only(&self, identity: &str) -> bool {
        let mut roles = self
            .grants
            .iter()
            .filter(|(who, _, _)| who == identity)
            .map(|(_, role, _)| role.as_str())
            .peekable();
        roles.peek().is_some() && roles.all(|r| r == Role::Worker.as_str())
    }

    /// The first row the walk found unlawful (see [`Self::refused`]).
    pub fn unlawful(&self) -> Option<&Divergence> {
        self.unlawful.as_ref()
    }

    /// The operations with a row that records a decision, to replay through
    /// the rules ([`crate::core::lawful::replay`]), in id order.
    pub fn decided(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.decided.iter().map(|i| i.to_string()).collect();
        ids.sort();
        ids
    }

    /// How many records of each of [`NAMED_TABLES`] the `ingest` and `record`
    /// rows name.
    pub fn named(&self) -> [u64; 4] {
        self.named
    }

    /// Every `autonomy-set` row, in order.
    pub fn level_rows(&self) -> &[LevelRow] {
        &self.level_rows
    }

    /// Every `autonomy-set` row that raises its tool, with the level the rows
    /// before it left the tool at and the level it sets, in order.
    pub fn raises(&self) -> Vec<(&LevelRow, Level, Level)> {
        let mut current: HashMap<&str, Level> = HashMap::new();
        let mut out = Vec::new();
        for row in &self.level_rows {
            let level = Level::parse(&row.level).unwrap_or(Level::Manual);
            let before = current
                .insert(row.tool.as_str(), level)
                .unwrap_or(Level::Manual);
            if level > before {
                out.push((row, before, level));
            }
        }
        out
    }

    /// The first `autonomy-set` row that raises a tool without the gates the
    /// chain can show: A1, the tool's latest `lookup-check` row before it found
    /// the known record (a lookup holdfast can make, proven); A2, its latest
    /// `drill` row before it covered all eight failure modes with every case
    /// passing; A3, no veto open on the tool's operations at that row, as
    /// `vetoes_at` gives them for the raise's `seq` (judged by the caller from
    /// the operations as the chain left them there) and
    /// [`crate::core::autonomy::veto_gate`] decides, as it decided the raise.
    pub fn check_raise_gates(
        &self,
        vetoes_at: &dyn Fn(i64) -> OpenVetoes,
    ) -> Result<(), Divergence> {
        for (row, before, level) in self.raises() {
            let refused = |gate: &str, why: String| Divergence {
                seq: row.seq,
                reason: format!(
                    "autonomy: {} raised tool {} from {before} to {level} without its gate \
                     ({gate}): {why}",
                    row.by, row.tool
                ),
            };
            let latest = self.drills.iter().rev().find(|(seq, evidence)| {
                *seq < row.seq && drill_entry(evidence, "tool:") == Some(row.tool.as_str())
            });
            let checked = self
                .lookup_checks
                .iter()
                .rev()
                .find(|(seq, tool, _)| *seq < row.seq && *tool == row.tool);
            if !checked.is_some_and(|(_, _, found)| *found) {
                return Err(refused(
                    "A1",
                    match checked {
                        None => "no lookup check of the tool is recorded before it".to_owned(),
                        Some((seq, _, _)) => format!(
                            "its latest lookup check (row {seq}) did not find the known record"
                        ),
                    },
                ));
            }
            let why = match latest {
                None => Some("no drill of the tool is recorded before it".to_owned()),
                Some((seq, evidence)) => drill_gate(evidence)
                    .err()
                    .map(|e| format!("{e} (drill row {seq})")),
            };
            let stale = latest.and_then(|(drill, _)| {
                self.changes
                    .iter()
                    .find(|(seq, tool, _)| seq > drill && *seq < row.seq && *tool == row.tool)
            });
            let why = why.or_else(|| {
                stale.map(|(seq, _, what)| {
                    format!("its latest drill was stale: {what} (row {seq}) came after it")
                })
            });
            if let Some(why) = why {
                return Err(refused("A2", why));
            }
            if let Some(why) = veto_gate(&row.tool, &vetoes_at(row.seq)) {
                return Err(refused("A3", why));
            }
        }
        Ok(())
    }

    /// The state the chain leaves `operation` in.
    pub fn state_of(&self, operation: &str) -> Option<State> {
        self.operations.get(operation).and_then(|op| op.state)
    }

    /// The grants the grant and revoke rows leave just before row `seq`.
    pub fn grants_before(&self, seq: i64) -> Vec<Grant> {
        let mut held: BTreeSet<&(String, String, String)> = BTreeSet::new();
        for (at, add, key) in &self.grant_rows {
            if *at >= seq {
                break;
            }
            if *add {
                held.insert(key);
            } else {
                held.remove(key);
            }
        }
        held.into_iter()
            .filter_map(|(identity, role, tenant)| {
                Some(Grant {
                    identity: identity.clone(),
                    role: Role::parse(role)?,
                    tenant: tenant.clone(),
                    granted_by: String::new(),
                    granted_at: DateTime::<Utc>::UNIX_EPOCH,
                })
            })
            .collect()
    }

    /// Compares one stored operation with what the chain says of it.
    pub fn check(&self, stored: &Stored<'_>) -> Result<(), Divergence> {
        let Some(op) = self.operations.get(stored.id) else {
            return Err(Divergence {
                seq: self.head,
                reason: format!(
                    "operation {} is stored but no audit row created it",
                    stored.id
                ),
            });
        };
        let differs = |what: &str, stored_value: &str, chain: &str| Divergence {
            seq: op.last_seq,
            reason: format!(
                "operation {}: the stored {what} is {stored_value} but its audit rows say {chain}",
                stored.id
            ),
        };
        let chain_state = op.state.map_or("nothing", State::as_str);
        if op.state != Some(stored.state) {
            return Err(differs("state", stored.state.as_str(), chain_state));
        }
        let owner = match &op.owner {
            Owner::AsCreated => Some(stored.created_owner),
            // Every place was given out with its name: an empty name, never
            // anyone's, would be reported rather than the check skipped.
            Owner::Assigned(place) => Some(
                usize::try_from(*place)
                    .ok()
                    .and_then(|place| self.owners.get(place))
                    .map_or("", CompactString::as_str),
            ),
            Owner::Unrecorded => None,
        };
        if let Some(owner) = owner.filter(|o| *o != stored.owner) {
            return Err(differs("owner", stored.owner, owner));
        }
        if i64::from(op.version) != stored.version {
            return Err(differs(
                "version",
                &stored.version.to_string(),
                &op.version.to_string(),
            ));
        }
        Ok(())
    }

    /// The first operation the chain created that `is_stored` says is gone.
    pub fn check_none_missing(&self, is_stored: impl Fn(&str) -> bool) -> Result<(), Divergence> {
        match least(self.operations.iter().filter(|(id, _)| !is_stored(id))) {
            Some((id, op)) => Err(Divergence {
                seq: op.last_seq,
                reason: format!("operation {id} has audit rows but is no longer stored"),
            }),
            None => Ok(()),
        }
    }

    /// How many operations the chain made.
    pub fn operations(&self) -> usize {
        self.operations.len()
    }

    /// Whether `operation` was created with no contract for its tool, as its
    /// `ingest` row says.
    pub fn uncontracted(&self, operation: &str) -> bool {
        self.uncontracted.contains(operation)
    }

    /// The seq of the newest row about `operation`, else the head.
    pub fn last_seq_of(&self, operation: &str) -> i64 {
        self.operations
            .get(operation)
            .map_or(self.head, |op| op.last_seq)
    }

    /// Compares the stored leases with the work rows: every lease is the one the
    /// newest work row of its operation describes, and no lease is stored without
    /// one.
    pub fn check_leases(&self, stored: &[Lease]) -> Result<(), Divergence> {
        let mut seen = BTreeSet::new();
        for lease in stored {
            let id = lease.operation.as_str();
            seen.insert(id.to_owned());
            let chain = self.leases.get(id);
            let found = (
                lease.worker.clone(),
                lease.generation.to_string(),
                format_instant(lease.expires_at),
                lease.status.as_str(),
            );
            if chain != Some(&found) {
                return Err(Divergence {
                    seq: self.last_seq_of(id),
                    reason: format!(
                        "the lease on {id} ({} lease {} until {}, {}) is not the one its work rows describe",
                        found.0, found.1, found.2, found.3
                    ),
                });
            }
        }
        match least(
            self.leases
                .iter()
                .filter(|(id, _)| !seen.contains(id.as_str())),
        ) {
            Some((id, _)) => Err(Divergence {
                seq: self.last_seq_of(id),
                reason: format!("the lease on {id} was made by work rows but is no longer stored"),
            }),
            None => Ok(()),
        }
    }

    /// Compares the stored grants with the `grant` and `revoke` rows.
    pub fn check_grants(&self, stored: &[Grant]) -> Result<(), Divergence> {
        let stored: BTreeSet<(String, String, String)> = stored
            .iter()
            .map(|g| {
                (
                    g.identity.clone(),
                    g.role.as_str().to_owned(),
                    g.tenant.clone(),
                )
            })
            .collect();
        let describe = |(identity, role, tenant): &(String, String, String)| {
            format!("{identity} as {role} on {tenant}")
        };
        if let Some(extra) = stored.difference(&self.grants).next() {
            return Err(Divergence {
                seq: if self.last_grant_seq > 0 {
                    self.last_grant_seq
                } else {
                    self.head
                },
                reason: format!(
                    "the grant of {} is stored but no grant row made it",
                    describe(extra)
                ),
            });
        }
        if let Some(gone) = self.grants.difference(&stored).next() {
            return Err(Divergence {
                seq: self.last_grant_seq,
                reason: format!(
                    "the grant of {} was made by a grant row but is no longer stored",
                    describe(gone)
                ),
            });
        }
        Ok(())
    }
}

impl Ledger {
    /// Compares the stored autonomy levels with the `autonomy-set` rows: every
    /// stored level is the one its tool's newest row set, and every tool a row
    /// raised above manual still has its row.
    pub fn check_levels(&self, stored: &[ToolLevel]) -> Result<(), Divergence> {
        for level in stored {
            match self.levels.get(&level.tool) {
                Some((chain, seq)) if chain != level.level.as_str() => {
                    return Err(Divergence {
                        seq: *seq,
                        reason: format!(
                            "tool {}: the stored autonomy level is {} but its audit rows say {chain}",
                            level.tool, level.level
                        ),
                    });
                }
                Some(_) => {}
                None => {
                    return Err(Divergence {
                        seq: if self.last_level_seq > 0 {
                            self.last_level_seq
                        } else {
                            self.head
                        },
                        reason: format!(
                            "tool {}: an autonomy level ({}) is stored but no autonomy-set row made it",
                            level.tool, level.level
                        ),
                    });
                }
            }
        }
        for (tool, (level, seq)) in &self.levels {
            if !stored.iter().any(|l| &l.tool == tool) {
                return Err(Divergence {
                    seq: *seq,
                    reason: format!(
                        "tool {tool}: an autonomy-set row set {level} but no level is stored"
                    ),
                });
            }
        }
        Ok(())
    }

    /// Compares the stored drill results with the `drill` rows, one for one.
    pub fn check_drills(&self, stored: &[(i64, DrillResult)]) -> Result<(), Divergence> {
        for (seq, drill) in stored {
            match self.drills.iter().find(|(s, _)| s == seq) {
                Some((_, evidence)) if *evidence == drill.evidence() => {}
                Some(_) => {
                    return Err(Divergence {
                        seq: *seq,
                        reason: format!(
                            "tool {}: the stored drill result differs from the drill row that recorded it",
                            drill.tool
                        ),
                    });
                }
                None => {
                    return Err(Divergence {
                        seq: self.head,
                        reason: format!(
                            "tool {}: a drill result is stored under seq {seq}, which is no drill row",
                            drill.tool
                        ),
                    });
                }
            }
        }
        if let Some((seq, _)) = self
            .drills
            .iter()
            .find(|(s, _)| !stored.iter().any(|(t, _)| t == s))
        {
            return Err(Divergence {
                seq: *seq,
                reason: "a drill row recorded a result that is no longer stored".into(),
            });
        }
        Ok(())
    }
}

impl Ledger {
    /// Compares the stored circuits with the `circuit` rows: every stored
    /// circuit stands where its tool's newest row left it, and every tool a
    /// row moved still has its circuit.
    pub fn check_circuits(&self, stored: &[Circuit]) -> Result<(), Divergence> {
        for circuit in stored {
            match self.circuits.get(&circuit.tool) {
                Some((chain, _)) if chain == circuit.position.as_str() => {}
                Some((chain, seq)) => {
                    return Err(Divergence {
                        seq: *seq,
                        reason: format!(
                            "tool {}: the stored circuit is {} but its audit rows say {chain}",
                            circuit.tool, circuit.position
                        ),
                    });
                }
                None => {
                    return Err(Divergence {
                        seq: self.head,
                        reason: format!(
                            "tool {}: a circuit ({}) is stored but no circuit row moved it",
                            circuit.tool, circuit.position
                        ),
                    });
                }
            }
        }
        for (tool, (position, seq)) in &self.circuits {
            if !stored.iter().any(|c| &c.tool == tool) {
                return Err(Divergence {
                    seq: *seq,
                    reason: format!(
                        "tool {tool}: a circuit row left it {position} but no circuit is stored"
                    ),
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::audit::{AuditDraft, genesis, seal};
    use crate::core::clock::parse_instant;
    use crate::core::ids::OperationId;
    use crate::core::model::Role;

    fn row(seq: i64, action: &str, to: Option<State>, evidence: &[&str]) -> AuditRow {
        seal(
            &genesis(),
            seq,
            AuditDraft {
                operation: OperationId::parse("F09").unwrap(),
                action: action.into(),
                from: None,
                to,
                by: "rev:maya".into(),
                role: Role::Reviewer,
                policy: None,
                on_behalf_of: None,
                rationale: None,
                evidence: evidence.iter().map(|e| (*e).to_owned()).collect(),
                at: parse_instant("2026-09-05T10:00:00Z").unwrap(),
            },
        )
    }

    fn stored(state: State, owner: &str, version: i64) -> Stored<'_> {
        Stored {
            id: "F09",
            state,
            owner,
            created_owner: "integrations",
            version,
        }
    }

    fn ledger() -> Ledger {
        let mut ledger = Ledger::default();
        let mut ingest = row(1, "ingest", Some(State::Unknown), &["A017"]);
        ingest.draft.role = Role::System;
        ledger.push(&ingest);
        ledger.push(&row(2, "record", None, &["O05"]));
        ledger.push(&row(3, "comment", None, &[]));
        ledger
    }

    /// A raise after a material change that followed the tool's latest drill
    /// is refused by the replay (A2), as the gate refused it; a new drill after
    /// the change opens it again.
    #[test]
    fn a_raise_on_a_stale_drill_is_named() {
        let ledger_row = |seq: i64, ledger: &str, action: &str, role: Role, evidence: &[&str]| {
            let mut r = row(seq, action, None, evidence);
            r.draft.operation = OperationId::parse(ledger).unwrap();
            r.draft.role = role;
            r
        };
        let drill = [
            "tool:T06",
            "cases:16",
            "passed:16",
            "modes:auth_denied,validation_failed,timeout_unknown,rate_limited,transient_error,partial_write,duplicate_replay,unsafe_output",
            "failed:",
            "store:s",
            "version:IC09",
        ];
        let check = ["tool:T06", "known:F1", "found:yes", "lookup:x", "answer:ok"];
        let bump = ["tool:T06", "from:IC09", "version:IC10", "material:method"];
        let raise = ["tool:T06", "from:manual", "level:native"];
        let walk = |rows: &[AuditRow]| {
            let mut ledger = Ledger::default();
            for r in rows {
                ledger.push(r);
            }
            ledger.check_raise_gates(&|_| OpenVetoes::default())
        };
        let mut rows = vec![
            ledger_row(1, AUTONOMY_LEDGER, LOOKUP_CHECK_ACTION, Role::Owner, &check),
            ledger_row(2, DRILL_LEDGER, DRILL_ACTION, Role::Owner, &drill),
            ledger_row(3, DRILL_LEDGER, "contract-version", Role::System, &bump),
            ledger_row(4, AUTONOMY_LEDGER, SET_ACTION, Role::Owner, &raise),
        ];
        let refused = walk(&rows).unwrap_err();
        assert_eq!(refused.seq, 4);
        assert!(
            refused.reason.contains("(A2)") && refused.reason.contains("IC09 → IC10"),
            "{}",
            refused.reason
        );
        rows.insert(
            3,
            ledger_row(4, DRILL_LEDGER, DRILL_ACTION, Role::Owner, &drill),
        );
        rows[4].seq = 5;
        assert_eq!(walk(&rows), Ok(()));
    }

    #[test]
    fn a_store_that_matches_its_rows_checks() {
        assert_eq!(
            ledger().check(&stored(State::Unknown, "integrations", 2)),
            Ok(())
        );
    }

    #[test]
    fn a_state_owner_or_version_changed_behind_the_chain_is_named() {
        let ledger = ledger();
        for changed in [
            stored(State::Accepted, "integrations", 2),
            stored(State::Unknown, "mallory", 2),
            stored(State::Unknown, "integrations", 7),
        ] {
            let divergence = ledger.check(&changed).unwrap_err();
            assert_eq!(divergence.seq, 3, "{}", divergence.reason);
        }
    }

    #[test]
    fn an_assign_row_names_the_owner_it_gave() {
        let mut ledger = ledger();
        let assign = change_evidence(Some("payments"), None);
        let evidence: Vec<&str> = assign.iter().map(String::as_str).collect();
        ledger.push(&row(4, "assign", None, &evidence));
        assert_eq!(ledger.check(&stored(State::Unknown, "payments", 3)), Ok(()));
        assert!(ledger.check(&stored(State::Unknown, "mallory", 3)).is_err());
    }

    #[test]
    fn rows_no_door_writes_are_refused_as_they_come() {
        let mut moved = row(4, "transition", Some(State::Succeeded), &[]);
        moved.draft.from = Some(State::Unknown);
        let mut first = row(1, "comment", None, &[]);
        first.draft.operation = OperationId::parse("F99").unwrap();
        let mut from_elsewhere = row(4, "comment", None, &[]);
        from_elsewhere.draft.from = Some(State::Blocked);
        for (bad, words) in [
            (
                row(4, "ingest", Some(State::Unknown), &[]),
                "already created",
            ),
            (
                row(4, "create", Some(State::Approved), &["parent:F08"]),
                "create row",
            ),
            (first, "first row"),
            (from_elsewhere, "moves from BLOCKED"),
        ] {
            let mut ledger = ledger();
            ledger.push(&bad);
            let refused = ledger
                .unlawful()
                .cloned()
                .unwrap_or_else(|| panic!("{bad:?}"));
            assert!(refused.reason.contains(words), "{}", refused.reason);
        }
        // UNKNOWN → SUCCEEDED is in the table: a decision, replayed by the rules.
        let mut ledger = ledger();
        ledger.push(&moved);
        assert_eq!(ledger.unlawful(), None);
        assert_eq!(ledger.decided(), vec!["F09".to_owned()]);
        let mut outside = row(5, "transition", Some(State::Approved), &[]);
        outside.draft.from = Some(State::Succeeded);
        ledger.push(&outside);
        assert!(
            ledger
                .unlawful()
                .is_some_and(|d| d.seq == 5 && d.reason.contains("G1"))
        );
    }

    #[test]
    fn grants_must_be_what_the_grant_rows_made() {
        let mut ledger = Ledger::default();
        let mut grant = row(
            1,
            "grant",
            None,
            &["identity:ana", "role:owner", "tenant:p"],
        );
        grant.draft.operation = OperationId::parse(LEDGER).unwrap();
        ledger.push(&grant);
        let held = |identity: &str, role: Role| Grant {
            identity: identity.into(),
            role,
            tenant: "p".into(),
            granted_by: "ana".into(),
            granted_at: parse_instant("2026-09-05T10:00:00Z").unwrap(),
        };
        assert_eq!(ledger.check_grants(&[held("ana", Role::Owner)]), Ok(()));
        assert!(
            ledger
                .check_grants(&[held("ana", Role::Owner), held("eve", Role::Owner)])
                .is_err()
        );
        assert!(ledger.check_grants(&[]).is_err());
    }
}
