//! Ingest planning, the same for every backend: given a batch of wire records and
//! what the store already holds under their keys, decide which records are new,
//! which are already stored unchanged, which are refused (and why, by line and
//! field), and how each operation's state moves. The backend only looks keys up
//! before and writes the plan after, inside one transaction.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Utc};

use crate::core::contract::Contract;
use crate::core::ids::{OperationId, Sha256};
use crate::core::ladder::Level;
use crate::core::model::{State, TransitionRecord};
use crate::core::rerun::VersionChange;
use crate::core::rules::transition_allowed;
use crate::wire::{LineError, Numbered, Record, write_line};

/// The identity of a record: two records with the same key are the same record,
/// and must then have the same content.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordKey {
    Contract(String),
    Operation(String),
    Attempt(String),
    Item(String, u32),
    Observation(String),
    Expectation(String),
    Transition(String, State, State, i64),
}

impl RecordKey {
    pub fn of(record: &Record) -> RecordKey {
        match record {
            Record::Contract(c) => RecordKey::Contract(c.tool.clone()),
            Record::Operation(o) => RecordKey::Operation(o.id.as_str().to_owned()),
            Record::Attempt(a) => RecordKey::Attempt(a.id.clone()),
            Record::Item(i) => RecordKey::Item(i.operation.as_str().to_owned(), i.index),
            Record::Observation(o) => RecordKey::Observation(o.id.clone()),
            Record::Expectation(e) => RecordKey::Expectation(e.operation.as_str().to_owned()),
            Record::Transition(t) => RecordKey::Transition(
                t.operation.as_str().to_owned(),
                t.from,
                t.to,
                t.at.timestamp_millis(),
            ),
        }
    }

    /// The key in words, for error messages.
    fn describe(&self) -> String {
        match self {
            RecordKey::Contract(tool) => format!("contract {tool}"),
            RecordKey::Operation(id) => format!("operation {id}"),
            RecordKey::Attempt(id) => format!("attempt {id}"),
            RecordKey::Item(op, index) => format!("item {index} of {op}"),
            RecordKey::Observation(id) => format!("observation {id}"),
            RecordKey::Expectation(op) => format!("the expectation of {op}"),
            RecordKey::Transition(op, from, to, _) => format!("transition {from} → {to} of {op}"),
        }
    }

    /// The field that names the key, for error messages.
    fn field(&self) -> &'static str {
        match self {
            RecordKey::Contract(_) => "tool",
            RecordKey::Operation(_) | RecordKey::Attempt(_) | RecordKey::Observation(_) => "id",
            RecordKey::Item(..) => "index",
            RecordKey::Expectation(_) | RecordKey::Transition(..) => "operation",
        }
    }
}

/// The content hash of a record: SHA-256 of its canonical wire line.
pub fn record_hash(record: &Record) -> Sha256 {
    Sha256::of(write_line(record).as_bytes())
}

/// An operation the store already holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredOperation {
    pub state: State,
    /// The hash of the wire record it was ingested from; `None` for an operation
    /// created by a reviewer action (a compensation or resume child).
    pub record_hash: Option<String>,
}

/// What the backend found under the batch's keys.
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// Hashes of stored records other than operations, by key (contracts included).
    pub hashes: HashMap<RecordKey, String>,
    pub operations: HashMap<String, StoredOperation>,
    /// Contract tools the store holds.
    pub contracts: HashSet<String>,
    /// Whether an operation may name a tool with no contract ([`crate::store::Ingester::contracts_optional`]).
    pub contracts_optional: bool,
    /// The stored contract of each tool the batch brings a contract for: a
    /// record with a new `version` is that contract's next version.
    pub stored_contracts: HashMap<String, Contract>,
    /// The stored autonomy level of each of those tools (absent: manual).
    pub levels: HashMap<String, Level>,
}

/// The keys the backend must look up before planning.
#[derive(Debug, Clone, Default)]
pub struct Lookups {
    pub keys: BTreeSet<RecordKey>,
    /// Every operation id the batch names, as a record or as a reference.
    pub operations: BTreeSet<String>,
    /// Contract tools operations refer to.
    pub contracts: BTreeSet<String>,
}

impl Lookups {
    /// What both `self` and `other` must look up.
    pub fn merge(&mut self, other: Lookups) {
        self.keys.extend(other.keys);
        self.operations.extend(other.operations);
        self.contracts.extend(other.contracts);
    }
}

/// Collects what must be looked up.
pub fn lookups(records: &[Numbered]) -> Lookups {
    let mut out = Lookups::default();
    for numbered in records {
        let key = RecordKey::of(&numbered.record);
        if !matches!(key, RecordKey::Operation(_)) {
            out.keys.insert(key);
        }
        for op in references(&numbered.record) {
            out.operations.insert(op.to_owned());
        }
        // What a transition cites must exist: an attempt, an observation or an
        // operation, stored or in this batch.
        if let Record::Transition(t) = &numbered.record {
            for cited in &t.evidence {
                out.keys.insert(RecordKey::Attempt(cited.clone()));
                out.keys.insert(RecordKey::Observation(cited.clone()));
                out.operations.insert(cited.clone());
            }
        }
        if let Record::Operation(o) = &numbered.record {
            out.contracts.insert(o.tool.clone());
        }
    }
    out
}

/// The operation ids a record refers to (its own id included for operations).
fn references(record: &Record) -> Vec<&str> {
    match record {
        Record::Contract(_) => vec![],
        Record::Operation(o) => {
            let mut ids = vec![o.id.as_str()];
            ids.extend(o.depends_on.iter().map(OperationId::as_str));
            ids.extend(o.parent.as_ref().map(OperationId::as_str));
            ids
        }
        Record::Attempt(a) => vec![a.operation.as_str()],
        Record::Item(i) => vec![i.operation.as_str()],
        Record::Observation(o) => vec![o.operation.as_str()],
        Record::Transition(t) => vec![t.operation.as_str()],
        Record::Expectation(e) => vec![e.operation.as_str()],
    }
}

/// Whether one entry of a transition's `evidence` is satisfied: a bare id must name
/// a record that exists (`A017`); a labelled reference (`validator:SV12`,
/// `approval:RP03`, `repair:INC-7`, any `LABEL:…`) names something outside the
/// store and is taken as written, unless its label is `attempt`, `observation` or
/// `operation`, whose target must exist. An entry that names an existing record
/// whole is satisfied whatever its shape (an id may hold `:`).
fn cites_what_exists(entry: &str, exists: &dyn Fn(&str) -> bool) -> bool {
    if exists(entry) {
        return true;
    }
    match entry.split_once(':') {
        Some((label, target)) if !label.is_empty() => match label.to_ascii_lowercase().as_str() {
            "attempt" | "observation" | "operation" => exists(target),
            _ => true,
        },
        _ => false,
    }
}

/// Why a record is refused with an earlier refused line of its operation.
pub fn withheld_reason(op: &str, line: usize) -> String {
    format!("part of operation {op}'s history, refused with line {line}")
}

/// The operation whose history a record is part of (none for a contract).
pub fn own_operation(record: &Record) -> Option<&str> {
    match record {
        Record::Contract(_) => None,
        Record::Operation(o) => Some(o.id.as_str()),
        Record::Attempt(a) => Some(a.operation.as_str()),
        Record::Item(i) => Some(i.operation.as_str()),
        Record::Observation(o) => Some(o.operation.as_str()),
        Record::Transition(t) => Some(t.operation.as_str()),
        Record::Expectation(e) => Some(e.operation.as_str()),
    }
}

/// A new record to write, with its line and content hash.
#[derive(Debug, Clone)]
pub struct Staged {
    pub line: usize,
    pub record: Record,
    pub hash: Sha256,
    /// The record's canonical wire line: what is stored, and what `hash` covers.
    pub wire: String,
}

/// How one operation's state moves in this batch.
#[derive(Debug, Clone)]
pub struct History {
    pub operation: OperationId,
    /// For an operation created by this batch: its initial state and creation time.
    pub created: Option<(State, DateTime<Utc>)>,
    /// New transitions, in order; each chains from the previous.
    pub transitions: Vec<TransitionRecord>,
    /// Ids of the new attempts, observations, items and expectation attached to it.
    pub evidence: Vec<String>,
}

/// The outcome of planning.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// New records in line order (refused ones excluded).
    pub staged: Vec<Staged>,
    /// Per operation touched, in order of first appearance.
    pub histories: Vec<History>,
    pub unchanged: u64,
    pub rejected: Vec<LineError>,
    /// How each allowed decision among the transitions was taken (set once the
    /// moves are judged, `super::decisions`): its audit row records that.
    pub decided: super::decisions::Decisions,
    /// The staged contracts that are a new version of a stored one: each
    /// replaces it and is recorded on the drill ledger (DESIGN §9.4).
    pub versions: Vec<VersionChange>,
}

impl Plan {
    /// New records per type, in wire order of types.
    pub fn committed_by_type(&self) -> Vec<(String, u64)> {
        let mut counts: BTreeMap<&'static str, u64> = BTreeMap::new();
        for staged in &self.staged {
            *counts.entry(staged.record.type_name()).or_default() += 1;
        }
        crate::wire::TYPES
            .iter()
            .filter_map(|t| counts.get(t).map(|n| ((*t).to_owned(), *n)))
            .collect()
    }
}

struct Planner<'a> {
    records: &'a [Numbered],
    known: &'a Known,
    hashes: Vec<Sha256>,
    rejected: BTreeMap<usize, Vec<LineError>>,
    /// Lines that repeat an earlier line or a stored record exactly.
    unchanged: BTreeSet<usize>,
}

impl Planner<'_> {
    fn reject(&mut self, line: usize, field: &str, reason: String) -> bool {
        let errors = self.rejected.entry(line).or_default();
        if errors
            .iter()
            .any(|e| e.field == field && e.reason == reason)
        {
            return false;
        }
        errors.push(LineError {
            line,
            field: field.to_owned(),
            reason,
        });
        true
    }

    fn is_live(&self, index: usize) -> bool {
        let line = self.records[index].line;
        !self.rejected.contains_key(&line) && !self.unchanged.contains(&line)
    }

    /// Whether `record` is a contract whose tool's stored contract has another
    /// version.
    fn is_new_version(&self, record: &Record) -> bool {
        let Record::Contract(c) = record else {
            return false;
        };
        self.known
            .stored_contracts
            .get(&c.tool)
            .is_some_and(|stored| stored.version != c.version)
    }

    /// Same key twice: identical content is a no-op, anything else a conflict,
    /// but for a contract with a new version.
    fn check_identity(&mut self) {
        let mut first: HashMap<RecordKey, usize> = HashMap::new();
        for (index, numbered) in self.records.iter().enumerate() {
            let key = RecordKey::of(&numbered.record);
            let hash = self.hashes[index].as_str().to_owned();
            let line = numbered.line;
            if self.rejected.contains_key(&line) {
                continue;
            }
            if let RecordKey::Operation(id) = &key
                && id.starts_with(crate::core::access::RESERVED_PREFIX)
            {
                self.reject(
                    line,
                    "id",
                    format!(
                        "operation ids starting with `{}` are reserved for holdfast's own records",
                        crate::core::access::RESERVED_PREFIX
                    ),
                );
                continue;
            }
            let stored = match &key {
                RecordKey::Operation(id) => self
                    .known
                    .operations
                    .get(id)
                    .map(|o| o.record_hash.clone().unwrap_or_default()),
                _ => self.known.hashes.get(&key).cloned(),
            };
            if let Some(stored) = stored {
                if stored == hash {
                    self.unchanged.insert(line);
                } else if self.is_new_version(&numbered.record) {
                    // A new version of a stored contract: accepted, once.
                    if let Some(&earlier) = first.get(&key) {
                        let earlier_line = self.records[earlier].line;
                        self.reject(
                            line,
                            key.field(),
                            format!(
                                "{} already appears on line {earlier_line}; one version of a contract per input",
                                key.describe()
                            ),
                        );
                    } else {
                        first.insert(key, index);
                    }
                } else {
                    self.reject(
                        line,
                        key.field(),
                        if matches!(key, RecordKey::Contract(_)) {
                            format!(
                                "{} is already stored at this version with different content; a changed contract needs a new version",
                                key.describe()
                            )
                        } else {
                            format!(
                                "{} is already stored with different content; a changed record needs a new id",
                                key.describe()
                            )
                        },
                    );
                }
                continue;
            }
            match first.get(&key) {
                Some(&earlier) if self.hashes[earlier] == self.hashes[index] => {
                    self.unchanged.insert(line);
                }
                Some(&earlier) => {
                    let earlier_line = self.records[earlier].line;
                    self.reject(
                        line,
                        key.field(),
                        format!(
                            "{} already appears on line {earlier_line} with different content",
                            key.describe()
                        ),
                    );
                }
                None => {
                    first.insert(key, index);
                }
            }
        }
    }

    /// Operations and contracts that exist for references: stored, or new in this
    /// batch and not refused.
    fn available(&self) -> (HashSet<String>, HashSet<String>) {
        let mut ops: HashSet<String> = self.known.operations.keys().cloned().collect();
        let mut tools: HashSet<String> = self.known.contracts.clone();
        for (index, numbered) in self.records.iter().enumerate() {
            if !self.is_live(index) {
                continue;
            }
            match &numbered.record {
                Record::Operation(o) => {
                    ops.insert(o.id.as_str().to_owned());
                }
                Record::Contract(c) => {
                    tools.insert(c.tool.clone());
                }
                _ => {}
            }
        }
        (ops, tools)
    }

    /// Attempt and observation ids that exist for a transition to cite: stored, or
    /// new in this batch and not refused.
    fn available_evidence(&self) -> HashSet<&str> {
        let mut out: HashSet<&str> = HashSet::new();
        for key in self.known.hashes.keys() {
            if let RecordKey::Attempt(id) | RecordKey::Observation(id) = key {
                out.insert(id);
            }
        }
        for (index, numbered) in self.records.iter().enumerate() {
            if !self.is_live(index) {
                continue;
            }
            match &numbered.record {
                Record::Attempt(a) => {
                    out.insert(&a.id);
                }
                Record::Observation(o) => {
                    out.insert(&o.id);
                }
                _ => {}
            }
        }
        out
    }

    /// Refuses records that name an operation or tool nobody has, and transitions
    /// that cite evidence nobody has (never stored, or refused in this input: what
    /// cites a refused record is refused with it). Returns whether anything new was
    /// refused.
    fn check_references(&mut self) -> bool {
        let (ops, tools) = self.available();
        let evidence: HashSet<String> = self
            .available_evidence()
            .into_iter()
            .map(str::to_owned)
            .collect();
        let mut changed = false;
        for index in 0..self.records.len() {
            if !self.is_live(index) {
                continue;
            }
            let numbered = &self.records[index];
            let line = numbered.line;
            let missing_op = |id: &OperationId| !ops.contains(id.as_str());
            let mut problems: Vec<(&str, String)> = Vec::new();
            let unknown = |id: &OperationId| {
                format!("unknown operation {id}: not in this input and not in the store")
            };
            match &numbered.record {
                Record::Contract(_) => {}
                Record::Operation(o) => {
                    if !tools.contains(&o.tool) && !self.known.contracts_optional {
                        problems.push((
                            "tool",
                            format!(
                                "unknown tool {}: no contract record for it in this input or the store",
                                o.tool
                            ),
                        ));
                    }
                    for dep in o.depends_on.iter().filter(|d| missing_op(d)) {
                        problems.push(("depends_on", unknown(dep)));
                    }
                    if let Some(parent) = o.parent.as_ref().filter(|p| missing_op(p)) {
                        problems.push(("parent", unknown(parent)));
                    }
                    if o.parent.is_some() != o.relation.is_some() {
                        problems.push((
                            "relation",
                            "parent and relation must be given together".to_owned(),
                        ));
                    }
                }
                Record::Attempt(a) if missing_op(&a.operation) => {
                    problems.push(("operation", unknown(&a.operation)))
                }
                Record::Item(i) if missing_op(&i.operation) => {
                    problems.push(("operation", unknown(&i.operation)))
                }
                Record::Observation(o) if missing_op(&o.operation) => {
                    problems.push(("operation", unknown(&o.operation)))
                }
                Record::Transition(t) => {
                    if missing_op(&t.operation) {
                        problems.push(("operation", unknown(&t.operation)));
                    }
                    let exists = |id: &str| evidence.contains(id) || ops.contains(id);
                    for cited in t.evidence.iter().filter(|e| !cites_what_exists(e, &exists)) {
                        problems.push((
                            "evidence",
                            format!(
                                "cites {cited}, which names no attempt, observation or operation in this input or the store (a cited record that was refused takes what cites it with it)"
                            ),
                        ));
                    }
                }
                Record::Expectation(e) if missing_op(&e.operation) => {
                    problems.push(("operation", unknown(&e.operation)))
                }
                _ => {}
            }
            for (field, reason) in problems {
                changed |= self.reject(line, field, reason);
            }
        }
        changed
    }

    /// A refused record takes the rest of its operation's batch with it, so that a
    /// committed operation never lacks a record one of its committed transitions
    /// cites. Returns whether anything new was refused.
    fn refuse_with_operation(&mut self) -> bool {
        let mut refused: BTreeMap<&str, usize> = BTreeMap::new();
        for numbered in self.records {
            if self.rejected.contains_key(&numbered.line)
                && let Some(op) = own_operation(&numbered.record)
            {
                refused.entry(op).or_insert(numbered.line);
            }
        }
        let mut changed = false;
        for index in 0..self.records.len() {
            if !self.is_live(index) {
                continue;
            }
            let numbered = &self.records[index];
            if let Some(op) = own_operation(&numbered.record)
                && let Some(&first) = refused.get(op)
            {
                changed |= self.reject(numbered.line, "-", withheld_reason(op, first));
            }
        }
        changed
    }

    /// Walks each operation's transitions through the state machine. Returns the
    /// histories, refusing lines that break it.
    fn check_histories(&mut self) -> (Vec<History>, bool) {
        let (_, tools) = self.available();
        let mut order: Vec<String> = Vec::new();
        let mut seen: HashSet<String> = HashSet::new();
        let mut new_ops: HashMap<String, usize> = HashMap::new();
        let mut transitions: HashMap<String, Vec<usize>> = HashMap::new();
        let mut evidence: HashMap<String, Vec<String>> = HashMap::new();
        for (index, numbered) in self.records.iter().enumerate() {
            if !self.is_live(index) {
                continue;
            }
            let (op, note) = match &numbered.record {
                Record::Operation(o) => {
                    new_ops.insert(o.id.as_str().to_owned(), index);
                    // Where contracts are optional (the OpenTelemetry and MCP
                    // doors), the creating row says the tool had none, so that
                    // `audit verify` asks no stored contract of it.
                    let note = (!tools.contains(&o.tool))
                        .then(|| crate::core::audit::NO_CONTRACT.to_owned());
                    (o.id.as_str(), note)
                }
                Record::Transition(t) => {
                    transitions
                        .entry(t.operation.as_str().to_owned())
                        .or_default()
                        .push(index);
                    (t.operation.as_str(), None)
                }
                Record::Attempt(a) => (a.operation.as_str(), Some(format!("attempt:{}", a.id))),
                Record::Observation(o) => {
                    (o.operation.as_str(), Some(format!("observation:{}", o.id)))
                }
                Record::Item(i) => (i.operation.as_str(), Some(format!("item:{}", i.index))),
                Record::Expectation(e) => (e.operation.as_str(), Some("expectation".to_owned())),
                Record::Contract(_) => continue,
            };
            if seen.insert(op.to_owned()) {
                order.push(op.to_owned());
            }
            if let Some(note) = note {
                evidence.entry(op.to_owned()).or_default().push(note);
            }
        }

        let mut changed = false;
        let mut histories = Vec::new();
        for op in order {
            let mut steps = transitions.remove(&op).unwrap_or_default();
            steps.sort_by_key(|&i| match &self.records[i].record {
                Record::Transition(t) => (t.at, self.records[i].line),
                _ => (DateTime::<Utc>::MIN_UTC, self.records[i].line),
            });
            let steps: Vec<(usize, TransitionRecord)> = steps
                .into_iter()
                .filter_map(|i| match &self.records[i].record {
                    Record::Transition(t) => Some((self.records[i].line, t.clone())),
                    _ => None,
                })
                .collect();
            let created = new_ops
                .get(&op)
                .and_then(|&i| match &self.records[i].record {
                    Record::Operation(o) => Some((self.records[i].line, o.clone())),
                    _ => None,
                });
            let (start, created_at) = match (&created, self.known.operations.get(&op)) {
                (Some((_, o)), _) => (
                    steps.first().map_or(o.state, |(_, t)| t.from),
                    Some(o.created_at),
                ),
                (None, Some(stored)) => (stored.state, None),
                // Refused or unknown: the reference check reports it.
                (None, None) => continue,
            };
            let mut state = start;
            let mut broken = false;
            for (line, step) in &steps {
                if step.from != state {
                    broken = true;
                    changed |= self.reject(
                        *line,
                        "from",
                        format!(
                            "operation {op} is in {state} at this point (transitions are applied in `at` order), not {}",
                            step.from
                        ),
                    );
                } else if !transition_allowed(step.from, step.to) {
                    broken = true;
                    changed |= self.reject(
                        *line,
                        "to",
                        format!(
                            "G1: {} → {} is not an allowed transition",
                            step.from, step.to
                        ),
                    );
                }
                state = step.to;
            }
            if let Some((line, o)) = &created
                && !broken
                && state != o.state
            {
                broken = true;
                changed |= self.reject(
                    *line,
                    "state",
                    format!("declared {} but its transitions end in {state}", o.state),
                );
            }
            if broken {
                if let Some((line, _)) = &created {
                    changed |= self.reject(
                        *line,
                        "state",
                        "its transition history does not follow the state machine (see the transition lines)".to_owned(),
                    );
                }
                for (line, _) in &steps {
                    changed |= self.reject(
                        *line,
                        "-",
                        format!("part of operation {op}'s history, which was refused"),
                    );
                }
                continue;
            }
            let operation = match OperationId::parse(&op) {
                Ok(id) => id,
                Err(_) => continue,
            };
            histories.push(History {
                operation,
                created: created_at.map(|at| (start, at)),
                transitions: steps.into_iter().map(|(_, t)| t).collect(),
                evidence: evidence.remove(&op).unwrap_or_default(),
            });
        }
        (histories, changed)
    }
}

/// Plans one batch, taking its records so the new ones move into the plan instead
/// of being copied. Rejections cascade: a record that names a refused operation is
/// refused too, until nothing changes.
pub fn plan(records: Vec<Numbered>, known: &Known) -> Plan {
    let wires = records.iter().map(|n| write_line(&n.record)).collect();
    plan_refusing(records, wires, known, Vec::new())
}

/// [`plan`] of records whose canonical wire lines (`wires`, one per record, as
/// [`write_line`] gives them) are already written, with some lines refused before
/// planning (`refused`, by line): they are never written, and take the rest of
/// their operation's history with them.
pub fn plan_refusing(
    records: Vec<Numbered>,
    wires: Vec<String>,
    known: &Known,
    refused: Vec<LineError>,
) -> Plan {
    let hashes = wire_hashes(&wires);
    plan_hashed(records, wires, hashes, known, refused)
}

/// The SHA-256 of each wire line, in order: each record's content hash.
pub fn wire_hashes(wires: &[String]) -> Vec<Sha256> {
    wires.iter().map(|w| Sha256::of(w.as_bytes())).collect()
}

/// [`plan_refusing`] with each wire line's SHA-256 (`hashes`, in the same
/// order) already worked out.
pub fn plan_hashed(
    records: Vec<Numbered>,
    wires: Vec<String>,
    hashes: Vec<Sha256>,
    known: &Known,
    refused: Vec<LineError>,
) -> Plan {
    debug_assert_eq!(records.len(), wires.len());
    debug_assert_eq!(records.len(), hashes.len());
    let mut rejected: BTreeMap<usize, Vec<LineError>> = BTreeMap::new();
    for error in refused {
        rejected.entry(error.line).or_default().push(error);
    }
    let mut planner = Planner {
        records: &records,
        known,
        hashes,
        rejected,
        unchanged: BTreeSet::new(),
    };
    planner.check_identity();
    let histories = loop {
        let references_changed = planner.check_references();
        let withheld = planner.refuse_with_operation();
        let (histories, histories_changed) = planner.check_histories();
        if !references_changed && !withheld && !histories_changed {
            break histories;
        }
    };
    let live: Vec<bool> = (0..records.len()).map(|i| planner.is_live(i)).collect();
    let Planner {
        hashes,
        rejected,
        unchanged,
        ..
    } = planner;
    // Sized once: a filtered collect would grow a batch's worth of records
    // by doubling, copying them each time.
    let mut staged = Vec::with_capacity(live.iter().filter(|live| **live).count());
    staged.extend(
        records
            .into_iter()
            .zip(wires)
            .zip(hashes)
            .zip(live)
            .filter(|(_, live)| *live)
            .map(|(((n, wire), hash), _)| Staged {
                line: n.line,
                record: n.record,
                hash,
                wire,
            }),
    );
    let versions = staged
        .iter()
        .filter_map(|s| match &s.record {
            Record::Contract(c) => known
                .stored_contracts
                .get(&c.tool)
                .filter(|stored| stored.version != c.version)
                .map(|stored| VersionChange::between(stored, c)),
            _ => None,
        })
        .collect();
    Plan {
        staged,
        histories,
        unchanged: unchanged.len() as u64,
        rejected: rejected.into_values().flatten().collect(),
        decided: super::decisions::Decisions::new(),
        versions,
    }
}

#[cfg(test)]
mod tests {
    use super::cites_what_exists;

    #[test]
    fn evidence_entries_name_records_or_labelled_outside_things() {
        let exists = |id: &str| matches!(id, "A017" | "O05" | "F10" | "ns:A1");
        for good in [
            "A017",
            "O05",
            "F10",
            "ns:A1",
            "validator:SV12",
            "approval:RP03",
            "repair:INC-7",
            "attempt:A017",
            "observation:O05",
            "operation:F10",
        ] {
            assert!(cites_what_exists(good, &exists), "{good}");
        }
        assert!(cites_what_exists("N-validator:SV12", &exists), "any label");
        for bad in [
            "A999",
            "attempt:A999",
            "Observation:A017x",
            "operation:F99",
            "A 1",
            ":A017",
        ] {
            assert!(!cites_what_exists(bad, &exists), "{bad}");
        }
    }
}
