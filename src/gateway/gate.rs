//! The gate at the tool-call boundary (DESIGN §10.2), without the protocol: a
//! `tools/call` becomes an operation before it is forwarded, its outcome moves
//! the operation, and a call identical to a held one is refused; with
//! `hold_writes_for_approval`, a write of a tool at autonomy `manual` is held
//! BLOCKED for a reviewer's approval instead of forwarded. Every record
//! goes through the one ingest path (redaction, roles, the decision judge), as
//! the gateway's own identity; a store error refuses the call (fail closed).
//!
//! The gate holds the store itself, not a session: it writes as its
//! [`crate::store::Ingester`], and reads back only the operations of the calls
//! it recorded (their outcome, a repeat of one).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::settings::GatewaySettings;
use crate::core::circuit::{self, Admit, CIRCUIT_OPEN, Failures};
use crate::core::contract::Contract;
use crate::core::ids::{OperationId, Sha256};
use crate::core::ladder::Level;
use crate::core::model::{
    Attempt, AttemptKind, Layer, Operation, Outcome, Phase, Risk, Role, State, TransitionRecord,
};
use crate::otlp::ToolSettings;
use crate::otlp::map::hash_arguments;
use crate::store::plan::redaction;
use crate::store::{IngestMode, IngestReport, Ingester, SameCall, Scope, Store, StoreError};
use crate::wire::{Numbered, Record};

/// How much of a result the attempt keeps as its excerpt.
const EXCERPT_CHARS: usize = 2000;
/// How much of a held call's arguments its evidence keeps: with its label
/// `arguments:` and a `…`, within the 128 characters of an evidence entry.
const ARGUMENTS_CHARS: usize = 110;

/// The clock the gateway records with.
pub type Now = Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>;

/// One `tools/call` as the agent made it.
#[derive(Debug, Clone)]
pub struct Call {
    /// The tool's name at its server.
    pub name: String,
    pub arguments: Option<serde_json::Map<String, Value>>,
    /// The server's `readOnlyHint` for the tool, when it gave one.
    pub read_only_hint: Option<bool>,
}

/// What the gate does with a call.
#[derive(Debug)]
pub enum Admission {
    /// A read: forwarded, nothing held.
    Pass,
    /// Recorded; forward it, then [`Gate::finish`] with how it ended.
    Forward(Ticket),
    /// Not forwarded: the text for the agent, an `isError` result.
    Refuse(String),
    /// Not forwarded: the identical call already succeeded; the text says so.
    Answer(String),
}

/// What [`Gate::finish`] recorded.
#[derive(Debug, Clone, Copy)]
pub struct Finished {
    /// The state the call's outcome moves its operation to.
    pub state: State,
    /// The outcome waits unwritten, the first of a group: call
    /// [`Gate::settle`] [`SETTLE_AFTER`] from now.
    pub settle: bool,
}

/// A forwarded call's place in the store.
#[derive(Debug, Clone)]
pub struct Ticket {
    pub operation: OperationId,
    pub tool: String,
    seq: u32,
    started: DateTime<Utc>,
    errors_may_commit: bool,
    /// A read recorded by `record_reads`: its operation, written with its
    /// outcome once the call ends (a read is never held, so nothing is written
    /// before it is sent).
    read: Option<Box<Operation>>,
    /// What makes another call identical to this one (its payload hash and
    /// business key), for a write whose settled outcome may be written after
    /// its answer ([`Gate::finish`]); `None` where the outcome is written first.
    same: Option<Identity>,
    /// The call is its tool's circuit probe (DESIGN §9.5): its outcome closes
    /// or reopens the circuit.
    probe: bool,
}

/// A write call as the gate holds it: its tool, arguments, what makes it
/// identical to another, and the tool's contract and settings.
struct Held<'a> {
    tool: &'a str,
    arguments: &'a Value,
    payload: Sha256,
    business_key: Option<String>,
    contract: Option<&'a Contract>,
    declared: Option<&'a ToolSettings>,
}

/// What makes two calls of one tool identical (DESIGN §10.2): the same payload
/// hash, or the same business key.
#[derive(Debug, Clone)]
struct Identity {
    payload: Sha256,
    business_key: Option<String>,
}

/// A settled outcome answered to the agent and not yet written: the records,
/// and which calls it settles.
struct Unwritten {
    tool: String,
    same: Identity,
    records: Vec<Record>,
}

/// How a forwarded call ended.
#[derive(Debug, Clone)]
pub enum Ending {
    /// The server answered with a result (`is_error` as it said); `text` is the
    /// result as JSON.
    Result { is_error: bool, text: String },
    /// The server answered with a JSON-RPC error.
    Error { code: i32, message: String },
    /// The agent cancelled the call (its timeout fired) before any answer.
    Cancelled,
    /// The server died or dropped the call before answering.
    Dropped(String),
}

/// JSON-RPC: the method does not exist.
pub const METHOD_NOT_FOUND: i32 = -32601;
/// JSON-RPC: the parameters were refused.
pub const INVALID_PARAMS: i32 = -32602;

/// Why the gate could not record a call: the store failed, or refused the
/// records. Either way the call is not forwarded.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("the store refused the gateway's records: {0}")]
    Refused(String),
}

/// The gate of one gateway.
pub struct Gate {
    store: Arc<dyn Store>,
    ingester: Ingester,
    settings: GatewaySettings,
    server: String,
    now: Now,
    /// This gateway's run, in every id it makes: host, process, start.
    instance: String,
    calls: AtomicU64,
    contracts: HashMap<String, Contract>,
    /// Settled outcomes (SUCCEEDED, FAILED) already answered and not yet
    /// written: [`Gate::settle`] writes them together, [`SETTLE_AFTER`] after
    /// the first. Held only to add or take; never across a write.
    unwritten: Mutex<Vec<Unwritten>>,
    /// Held across each write of outcomes taken from `unwritten`, so a call
    /// checking for its identical ones waits until they are in the store.
    settling: tokio::sync::Mutex<()>,
}

impl Gate {
    /// A gate for `server`, with the contracts the store holds and those the
    /// config declares (written to the store when it lacks them).
    pub async fn open(
        store: Arc<dyn Store>,
        ingester: Ingester,
        settings: GatewaySettings,
        server: &str,
        now: Now,
    ) -> Result<Gate, GateError> {
        let mut contracts: HashMap<String, Contract> = store
            .contracts()
            .await?
            .into_iter()
            .map(|c| (c.tool.clone(), c))
            .collect();
        let stored: Vec<Contract> = contracts.values().cloned().collect();
        // On stderr too: the agent's MCP client shows a server's stderr, and
        // stdout is the protocol.
        for warning in crate::otlp::settings::drift("gateway.tool", &settings.tool, &stored) {
            tracing::warn!("{warning}");
            eprintln!("holdfast gateway: warning: {warning}");
        }
        let declared: Vec<Record> = settings
            .tool
            .iter()
            .map(ToolSettings::contract)
            .filter(|c| !contracts.contains_key(&c.tool))
            .map(Record::Contract)
            .collect();
        if !declared.is_empty() {
            commit(store.as_ref(), &ingester, declared, now()).await?;
            contracts = store
                .contracts()
                .await?
                .into_iter()
                .map(|c| (c.tool.clone(), c))
                .collect();
        }
        let started = now();
        let instance = format!(
            "{}-{}-{}",
            host(),
            std::process::id(),
            started.timestamp_millis()
        );
        Ok(Gate {
            store,
            ingester,
            settings,
            server: server.to_owned(),
            now,
            instance,
            calls: AtomicU64::new(0),
            contracts,
            unwritten: Mutex::new(Vec::new()),
            settling: tokio::sync::Mutex::new(()),
        })
    }

    /// Moves to UNKNOWN the calls a gateway of this host recorded and
    /// forwarded (or was about to) before its process ended without their
    /// answer: their operations stay SENT otherwise, out of every reviewer's
    /// queue. A gateway still running is left alone; so is every call when
    /// this host cannot tell which processes run. Returns the operations moved.
    pub async fn sweep(&self) -> Result<Vec<OperationId>, GateError> {
        let procs = std::path::Path::new("/proc");
        if !procs.join("self").exists() {
            return Ok(Vec::new());
        }
        let prefix = format!("{CORRELATION}{}-", host());
        let mut moved = Vec::new();
        for (id, correlation, created) in self.store.sent_calls(&prefix).await? {
            let Some(pid) = correlation
                .strip_prefix(&prefix)
                .and_then(|rest| rest.split('-').next())
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if pid == std::process::id() || runs(procs, pid) {
                continue;
            }
            let now = (self.now)();
            let ticket = Ticket {
                operation: id.clone(),
                tool: String::new(),
                seq: self.next_seq(&id).await?,
                started: created,
                errors_may_commit: false,
                read: None,
                same: None,
                probe: false,
            };
            let mut attempt = gateway_attempt(
                format!("{}-a{}", id.as_str(), ticket.seq),
                &ticket,
                now,
                (Phase::RequestSent, Outcome::ConnectionReset),
            );
            attempt.error_type = Some("gateway_stopped".into());
            let transition = TransitionRecord {
                operation: id.clone(),
                from: State::Sent,
                to: State::Unknown,
                by: self.ingester.by.clone(),
                role: Some(Role::System),
                at: now.max(created),
                reason: Some(format!(
                    "the gateway that recorded this call (process {pid}) stopped before it recorded \
                     the call's outcome: the call may have reached the server and been applied"
                )),
                evidence: vec![attempt.id.clone()],
            };
            self.write(
                vec![Record::Attempt(attempt), Record::Transition(transition)],
                now,
            )
            .await?;
            moved.push(id);
        }
        Ok(moved)
    }

    /// The operation's tool for a call: `SERVER/TOOL`.
    pub fn tool(&self, name: &str) -> String {
        format!("{}/{name}", self.server)
    }

    /// Decides what happens to `call`, recording what must be recorded first.
    pub async fn admit(&self, call: &Call) -> Result<Admission, GateError> {
        let tool = self.tool(&call.name);
        let contract = self.contracts.get(&tool);
        let read = match contract {
            Some(c) => !c.is_write(),
            None => self.settings.trusts(&self.server) && call.read_only_hint == Some(true),
        };
        if read {
            return self.pass_read(call, &tool, contract);
        }
        let arguments = Value::Object(call.arguments.clone().unwrap_or_default());
        let payload = hash_arguments(&arguments);
        let declared = self.settings.tool(&tool);
        let business_key = stored_key(declared, &arguments);
        self.settle_identical(&tool, &payload, business_key.as_deref())
            .await;
        let same = self
            .store
            .same_calls(&tool, &payload, business_key.as_deref())
            .await?;
        if let Some(held) = same.iter().find(|s| holds(s.state)) {
            return self.refuse(held, &tool, &payload).await;
        }
        if let Some(approved) = same.iter().find(|s| s.state == State::Approved) {
            return self
                .forward_approved(approved, &tool, declared, business_key)
                .await;
        }
        if let Some(done) = same
            .iter()
            .find(|s| s.state == State::Succeeded && s.payload_hash == payload)
        {
            return self.answer(done).await;
        }
        let call = Held {
            tool: &tool,
            arguments: &arguments,
            payload,
            business_key,
            contract,
            declared,
        };
        if self.settings.hold_writes_for_approval && self.manual(&tool).await? {
            let reason = format!(
                "awaiting approval: autonomy manual ({tool} is at `manual`, so each of its \
                 write calls waits for a reviewer's approval of that exact call)"
            );
            let id = self.hold(call, reason, "awaiting_approval").await?;
            return Ok(Admission::Refuse(approval_text(&id, &tool)));
        }
        let now = (self.now)();
        let mut probe = None;
        if let Some(config) = contract.and_then(|c| c.circuit) {
            let current = self.store.circuit(&tool).await?;
            match circuit::admit(&config, current.as_ref(), now) {
                Admit::Send => {}
                Admit::Hold(why) => return self.hold_by_circuit(call, why).await,
                Admit::Probe => probe = current,
            }
        }
        let operation = self.operation(
            &tool,
            call.payload,
            call.business_key,
            contract,
            declared,
            now,
        )?;
        if let Some(current) = probe {
            let change = circuit::probe(&current, operation.id.as_str(), &self.ingester.by, now);
            match self.store.move_circuit(change).await {
                Ok(_) => {}
                Err(StoreError::CircuitChanged { now: position, .. }) => {
                    let call = Held {
                        payload: operation.payload_hash.clone(),
                        business_key: operation.business_key.clone(),
                        ..call
                    };
                    let why = format!(
                        "{CIRCUIT_OPEN}: tool {tool} moved to {position} while this call asked to be its probe"
                    );
                    return self.hold_by_circuit(call, why).await;
                }
                Err(e) => return Err(e.into()),
            }
            let mut admission = self.record_new(operation, declared).await?;
            if let Admission::Forward(ticket) = &mut admission {
                ticket.probe = true;
            }
            return Ok(admission);
        }
        self.record_new(operation, declared).await
    }

    /// Holds a new write because its tool's circuit is open (DESIGN §9.5).
    async fn hold_by_circuit(&self, call: Held<'_>, why: String) -> Result<Admission, GateError> {
        let tool = call.tool.to_owned();
        let id = self.hold(call, why.clone(), "circuit_open").await?;
        Ok(Admission::Refuse(circuit_text(&id, &tool, &why)))
    }

    /// What the attempt `attempt` of a forwarded write, which left its
    /// operation in `left`, does to its tool's circuit (DESIGN §9.5): a
    /// failure is counted and may open it; the probe's outcome closes or
    /// reopens it. A success that is no probe reads and writes nothing.
    async fn circuit_after(
        &self,
        ticket: &Ticket,
        attempt: &Attempt,
        left: State,
        now: DateTime<Utc>,
    ) -> Result<(), GateError> {
        let Some(config) = self.contracts.get(&ticket.tool).and_then(|c| c.circuit) else {
            return Ok(());
        };
        let failed = circuit::failure(attempt, left);
        if failed.is_none() && !ticket.probe {
            return Ok(());
        }
        let recent = match failed {
            Some(kind) => {
                self.store
                    .note_circuit_failure(
                        &ticket.tool,
                        &attempt.id,
                        kind,
                        now,
                        circuit::window_start(&config, now),
                    )
                    .await?
            }
            None => Failures::default(),
        };
        let current = self.store.circuit(&ticket.tool).await?;
        let Some(change) = circuit::after_attempt(
            &config,
            &ticket.tool,
            current.as_ref(),
            circuit::Ended {
                operation: ticket.operation.as_str(),
                failed,
                recent,
            },
            &self.ingester.by,
            now,
        ) else {
            return Ok(());
        };
        match self.store.move_circuit(change).await {
            // Another sender moved it first: its move stands.
            Ok(_) | Err(StoreError::CircuitChanged { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Records the outcome of a forwarded call: its attempt and the move it
    /// shows. A settled outcome waits unwritten ([`Finished::settle`]).
    pub async fn finish(&self, ticket: &Ticket, ending: &Ending) -> Result<Finished, GateError> {
        let now = (self.now)();
        let (phase, outcome, error, state, excerpt) = match ending {
            Ending::Result {
                is_error: false,
                text,
            } => (
                Phase::ResponseReceived,
                Outcome::Ok,
                None,
                State::Succeeded,
                Some(text.as_str()),
            ),
            Ending::Result {
                is_error: true,
                text,
            } => (
                Phase::ResponseReceived,
                Outcome::Rejected,
                Some("tool_error".to_owned()),
                if ticket.errors_may_commit {
                    State::Unknown
                } else {
                    State::Failed
                },
                Some(text.as_str()),
            ),
            Ending::Error { code, message }
                if matches!(*code, METHOD_NOT_FOUND | INVALID_PARAMS) =>
            {
                (
                    Phase::ResponseReceived,
                    Outcome::Rejected,
                    Some(format!("jsonrpc_{code}")),
                    State::Failed,
                    Some(message.as_str()),
                )
            }
            Ending::Error { code, message } => (
                Phase::ResponseReceived,
                Outcome::InvalidResponse,
                Some(format!("jsonrpc_{code}")),
                State::Unknown,
                Some(message.as_str()),
            ),
            Ending::Cancelled => (
                Phase::RequestSent,
                Outcome::Timeout,
                Some("cancelled_by_client".to_owned()),
                State::Unknown,
                None,
            ),
            Ending::Dropped(why) => (
                Phase::RequestSent,
                Outcome::ConnectionReset,
                Some("server_dropped".to_owned()),
                State::Unknown,
                Some(why.as_str()),
            ),
        };
        let mut attempt = gateway_attempt(
            format!("{}-a{}", ticket.operation.as_str(), ticket.seq),
            ticket,
            now,
            (phase, outcome),
        );
        attempt.error_type.clone_from(&error);
        attempt.response_hash = excerpt.map(|t| Sha256::of(t.as_bytes()));
        attempt.response_excerpt = excerpt.map(excerpt_of);
        let reason = match ending {
            Ending::Result { is_error: false, .. } => "the server answered with a result".to_owned(),
            Ending::Result { is_error: true, .. } if ticket.errors_may_commit => {
                "the server answered with an error, and the tool's contract says its errors may follow a commit".to_owned()
            }
            Ending::Result { is_error: true, .. } => {
                "the server answered that it did not do it (an error result)".to_owned()
            }
            Ending::Error { code, .. } if state == State::Failed => {
                format!("the server refused the call (JSON-RPC error {code})")
            }
            Ending::Error { code, .. } => format!(
                "the server failed inside the call (JSON-RPC error {code}): it may have committed"
            ),
            Ending::Cancelled => {
                "the agent cancelled the call before an answer: the server may have committed"
                    .to_owned()
            }
            Ending::Dropped(_) => {
                "the server died or dropped the call before an answer: it may have committed"
                    .to_owned()
            }
        };
        if let Some(operation) = &ticket.read {
            let state = self
                .finish_read(operation, attempt, state, reason, now)
                .await?;
            return Ok(Finished {
                state,
                settle: false,
            });
        }
        self.circuit_after(ticket, &attempt, state, now).await?;
        let transition = TransitionRecord {
            operation: ticket.operation.clone(),
            from: State::Sent,
            to: state,
            by: self.ingester.by.clone(),
            role: Some(Role::System),
            at: now.max(ticket.started),
            reason: Some(reason),
            evidence: vec![attempt.id.clone()],
        };
        let records = vec![Record::Attempt(attempt), Record::Transition(transition)];
        match &ticket.same {
            // Settled and not a hold: the agent need not wait for its write,
            // which [`Gate::settle`] makes with the others of its group (or
            // an identical call makes first, `settle_identical`).
            // Until then the operation is SENT, which holds its identical
            // calls on every gateway; a gateway killed before the write leaves
            // it SENT, and the next one's sweep holds it UNKNOWN.
            Some(same) if matches!(state, State::Succeeded | State::Failed) => {
                let mut unwritten = lock(&self.unwritten);
                unwritten.push(Unwritten {
                    tool: ticket.tool.clone(),
                    same: same.clone(),
                    records,
                });
                return Ok(Finished {
                    state,
                    settle: unwritten.len() == 1,
                });
            }
            _ => self.write(records, now).await?,
        }
        Ok(Finished {
            state,
            settle: false,
        })
    }

    /// Writes the settled outcomes answered and not yet written. A gateway
    /// calls it [`SETTLE_AFTER`] after the first of a group and before it stops; an
    /// outcome the store refuses is logged, and its operation stays SENT.
    pub async fn settle(&self) {
        let _settling = self.settling.lock().await;
        let earlier = std::mem::take(&mut *lock(&self.unwritten));
        self.write_settled(earlier).await;
    }

    /// Writes the unwritten outcomes first when one settles a call identical
    /// to `tool` with `payload` or `business_key`, so the call is judged on
    /// the store as it is.
    async fn settle_identical(&self, tool: &str, payload: &Sha256, business_key: Option<&str>) {
        let _settling = self.settling.lock().await;
        let earlier = {
            let mut unwritten = lock(&self.unwritten);
            let identical = unwritten.iter().any(|u| {
                u.tool == tool
                    && (u.same.payload == *payload
                        || business_key.is_some_and(|k| u.same.business_key.as_deref() == Some(k)))
            });
            if !identical {
                return;
            }
            std::mem::take(&mut *unwritten)
        };
        self.write_settled(earlier).await;
    }

    /// Writes `earlier` in one transaction, or, if that is refused, each
    /// apart, so that one refused outcome does not keep the others out.
    async fn write_settled(&self, earlier: Vec<Unwritten>) {
        if earlier.is_empty() {
            return;
        }
        let now = (self.now)();
        let all: Vec<Record> = earlier.iter().flat_map(|u| u.records.clone()).collect();
        if commit(self.store.as_ref(), &self.ingester, all, now)
            .await
            .is_ok()
        {
            return;
        }
        for one in earlier {
            if let Err(e) = commit(self.store.as_ref(), &self.ingester, one.records, now).await {
                tracing::error!(tool = %one.tool, error = %e, "the outcome of a call could not be recorded");
            }
        }
    }

    /// Writes a recorded read with its outcome: SUCCEEDED on a result, else
    /// FAILED — a read changed nothing, so an outcome not known is no hold.
    /// The move from SENT is written when its attempt proves it; a read that
    /// ended without a clear answer is written FAILED with its attempt alone.
    async fn finish_read(
        &self,
        operation: &Operation,
        attempt: Attempt,
        state: State,
        reason: String,
        now: DateTime<Utc>,
    ) -> Result<State, GateError> {
        let clear = attempt.phase == Phase::ResponseReceived
            && matches!(attempt.outcome, Outcome::Ok | Outcome::Rejected);
        let state = if state == State::Succeeded {
            State::Succeeded
        } else {
            State::Failed
        };
        let mut records = vec![
            Record::Operation(Operation {
                state,
                ..operation.clone()
            }),
            Record::Attempt(attempt.clone()),
        ];
        if clear {
            records.push(Record::Transition(TransitionRecord {
                operation: operation.id.clone(),
                from: State::Sent,
                to: state,
                by: self.ingester.by.clone(),
                role: Some(Role::System),
                at: now.max(operation.created_at),
                reason: Some(format!("a read, recorded as configured: {reason}")),
                evidence: vec![attempt.id],
            }));
        }
        self.write(records, now).await?;
        Ok(state)
    }

    /// Records an answer that came after the agent cancelled the call: evidence
    /// on the operation, never delivered.
    pub async fn late(&self, ticket: &Ticket, is_error: bool, text: &str) -> Result<(), GateError> {
        let now = (self.now)();
        let mut attempt = gateway_attempt(
            format!("{}-a{}-late", ticket.operation.as_str(), ticket.seq),
            ticket,
            now,
            (
                Phase::ResponseReceived,
                if is_error {
                    Outcome::Rejected
                } else {
                    Outcome::Ok
                },
            ),
        );
        attempt.error_type = Some("late_answer_after_cancel".into());
        attempt.response_hash = Some(Sha256::of(text.as_bytes()));
        attempt.response_excerpt = Some(excerpt_of(text));
        self.write(vec![Record::Attempt(attempt)], now).await
    }

    /// Records `operation` (SENT) before its call is forwarded.
    async fn record_new(
        &self,
        operation: Operation,
        declared: Option<&ToolSettings>,
    ) -> Result<Admission, GateError> {
        let now = operation.created_at;
        let id = operation.id.clone();
        let tool = operation.tool.clone();
        let same = Identity {
            payload: operation.payload_hash.clone(),
            business_key: operation.business_key.clone(),
        };
        self.write(vec![Record::Operation(operation)], now).await?;
        Ok(Admission::Forward(Ticket {
            operation: id,
            tool,
            seq: 1,
            started: now,
            errors_may_commit: declared.is_some_and(|t| t.errors_may_commit),
            read: None,
            same: Some(same),
            probe: false,
        }))
    }

    /// A new operation of a call of `tool` made at `now`, SENT.
    fn operation(
        &self,
        tool: &str,
        payload: Sha256,
        business_key: Option<String>,
        contract: Option<&Contract>,
        declared: Option<&ToolSettings>,
        now: DateTime<Utc>,
    ) -> Result<Operation, GateError> {
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let id = OperationId::parse(&format!("mcp-{}-{n}", self.instance))
            .map_err(|e| GateError::Refused(format!("the gateway made a bad operation id: {e}")))?;
        Ok(Operation {
            id,
            tenant: declared
                .and_then(|t| t.tenant.clone())
                .or_else(|| self.settings.tenant.clone())
                .unwrap_or_else(|| "default".into()),
            actor: self
                .settings
                .actor
                .clone()
                .unwrap_or_else(|| format!("agent:{}", self.server)),
            tool: tool.to_owned(),
            action: contract.map_or_else(|| tool.to_owned(), |c| c.action.clone()),
            target: format!("mcp:{tool}"),
            payload_hash: payload.clone(),
            intent_hash: None,
            risk: declared
                .and_then(|t| t.risk)
                .or(self.settings.risk)
                .unwrap_or(Risk::Medium),
            approval: self
                .settings
                .approval
                .as_ref()
                .map(|a| a.of_call(&payload, now)),
            idempotency_key: None,
            business_key,
            correlation_id: Some(format!("{CORRELATION}{}", self.instance)),
            owner: contract
                .map(|c| c.owner.clone())
                .or_else(|| self.settings.owner.clone())
                .unwrap_or_else(|| "unassigned".into()),
            max_attempts: contract.map(|c| c.max_attempts),
            deadline: None,
            failure_mode: None,
            state: State::Sent,
            next_observation_at: None,
            depends_on: Vec::new(),
            parent: None,
            relation: None,
            created_at: now,
        })
    }

    /// Whether `tool` is at autonomy `manual` in the store; a tool with no
    /// recorded level is (DESIGN §9.4).
    async fn manual(&self, tool: &str) -> Result<bool, GateError> {
        let levels = self.store.autonomy_levels().await?;
        Ok(crate::core::autonomy::level_of(&levels, tool) == Level::Manual)
    }

    /// Holds a new write instead of forwarding it: its operation, created
    /// PLANNED and moved to BLOCKED (the system's move into a hold) for
    /// `reason`, with the call's `not_sent` attempt (`error_type`) and, as
    /// evidence, its payload hash and a redacted excerpt of its arguments. It
    /// carries no standing approval: its approval is a reviewer's, of this
    /// exact call (revalidate, then approve). Used for a `manual` tool's write
    /// awaiting approval and for a write whose tool's circuit is open.
    async fn hold(
        &self,
        call: Held<'_>,
        reason: String,
        error_type: &str,
    ) -> Result<OperationId, GateError> {
        let now = (self.now)();
        let Held {
            tool,
            arguments,
            payload,
            business_key,
            contract,
            declared,
        } = call;
        let mut operation =
            self.operation(tool, payload.clone(), business_key, contract, declared, now)?;
        // A record states where its transitions leave it: PLANNED → BLOCKED.
        operation.state = State::Blocked;
        operation.approval = None;
        let id = operation.id.clone();
        let ticket = Ticket {
            operation: id.clone(),
            tool: tool.to_owned(),
            seq: 1,
            started: now,
            errors_may_commit: false,
            read: None,
            same: None,
            probe: false,
        };
        let mut attempt = gateway_attempt(
            format!("{}-a1", id.as_str()),
            &ticket,
            now,
            (Phase::NotSent, Outcome::Rejected),
        );
        attempt.error_type = Some(error_type.into());
        attempt.request_hash = Some(payload.clone());
        let transition = TransitionRecord {
            operation: id.clone(),
            from: State::Planned,
            to: State::Blocked,
            by: self.ingester.by.clone(),
            role: Some(Role::System),
            at: now,
            reason: Some(reason),
            evidence: vec![
                attempt.id.clone(),
                format!("payload:{payload}"),
                format!("arguments:{}", arguments_excerpt(arguments)),
            ],
        };
        self.write(
            vec![
                Record::Operation(operation),
                Record::Attempt(attempt),
                Record::Transition(transition),
            ],
            now,
        )
        .await?;
        Ok(id)
    }

    /// A read: passed as it is, or, with `record_reads`, forwarded with a
    /// ticket whose operation is written once the call ends. Nothing is
    /// written before it is sent and nothing refuses it: a read is never held.
    fn pass_read(
        &self,
        call: &Call,
        tool: &str,
        contract: Option<&Contract>,
    ) -> Result<Admission, GateError> {
        if !self.settings.record_reads {
            return Ok(Admission::Pass);
        }
        let arguments = Value::Object(call.arguments.clone().unwrap_or_default());
        let declared = self.settings.tool(tool);
        let business_key = stored_key(declared, &arguments);
        let now = (self.now)();
        let operation = self.operation(
            tool,
            hash_arguments(&arguments),
            business_key,
            contract,
            declared,
            now,
        )?;
        Ok(Admission::Forward(Ticket {
            operation: operation.id.clone(),
            tool: tool.to_owned(),
            seq: 1,
            started: now,
            errors_may_commit: false,
            read: Some(Box::new(operation)),
            same: None,
            probe: false,
        }))
    }

    /// The next identical call after a reviewer's authorize-retry: APPROVED →
    /// SENT, which only one gateway's ingest can make.
    async fn forward_approved(
        &self,
        approved: &SameCall,
        tool: &str,
        declared: Option<&ToolSettings>,
        business_key: Option<String>,
    ) -> Result<Admission, GateError> {
        let now = (self.now)();
        let seq = self.next_seq(&approved.id).await?;
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        // This call's own mark: two gateways taking the authorization in the
        // same millisecond would otherwise write the same record, and the
        // second would be stored as a repeat of the first (unchanged), not
        // refused, and forward a second time.
        let transition = TransitionRecord {
            operation: approved.id.clone(),
            from: State::Approved,
            to: State::Sent,
            by: self.ingester.by.clone(),
            role: Some(Role::System),
            at: now,
            reason: Some(
                "the next identical call after the authorized retry, forwarded once".into(),
            ),
            evidence: vec![format!("forwarded-by:{}-{n}", self.instance)],
        };
        let taken = match commit(
            self.store.as_ref(),
            &self.ingester,
            vec![Record::Transition(transition)],
            now,
        )
        .await
        {
            Ok(report) if report.unchanged == 0 => Ok(()),
            Ok(_) => Err(GateError::Refused(
                "the authorization was taken by another call".into(),
            )),
            Err(e) => Err(e),
        };
        match taken {
            Ok(()) => Ok(Admission::Forward(Ticket {
                operation: approved.id.clone(),
                tool: tool.to_owned(),
                seq,
                started: now,
                errors_may_commit: declared.is_some_and(|t| t.errors_may_commit),
                read: None,
                same: Some(Identity {
                    payload: approved.payload_hash.clone(),
                    business_key,
                }),
                probe: false,
            })),
            // Another call took the authorization first: this one is a repeat of
            // an operation in flight.
            Err(GateError::Refused(_)) => {
                let held = SameCall {
                    state: State::Sent,
                    ..approved.clone()
                };
                self.refuse(&held, tool, &approved.payload_hash).await
            }
            Err(e) => Err(e),
        }
    }

    /// Refuses a repeat of `held`, recording a `not_sent` attempt on it.
    async fn refuse(
        &self,
        held: &SameCall,
        tool: &str,
        payload: &Sha256,
    ) -> Result<Admission, GateError> {
        let now = (self.now)();
        let seq = self.next_seq(&held.id).await?;
        let n = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        let ticket = Ticket {
            operation: held.id.clone(),
            tool: tool.to_owned(),
            seq,
            started: now,
            errors_may_commit: false,
            read: None,
            same: None,
            probe: false,
        };
        let mut attempt = gateway_attempt(
            format!("{}-refused-{}-{n}", held.id.as_str(), self.instance),
            &ticket,
            now,
            (Phase::NotSent, Outcome::Rejected),
        );
        attempt.error_type = Some("held_by_gateway".into());
        attempt.request_hash = Some(payload.clone());
        self.write(vec![Record::Attempt(attempt)], now).await?;
        Ok(Admission::Refuse(refusal_text(held, tool)))
    }

    async fn answer(&self, done: &SameCall) -> Result<Admission, GateError> {
        let detail = self.store.detail(&Scope::Every, &done.id).await?;
        let recorded = detail
            .attempts
            .iter()
            .rev()
            .find(|a| a.outcome == Outcome::Ok && a.phase == Phase::ResponseReceived)
            .and_then(|a| a.response_excerpt.clone());
        let mut text = format!(
            "holdfast did not send this call: an identical call already SUCCEEDED as operation {} \
             (recorded {}). Repeating it would apply it twice. It is done; do not call it again.",
            done.id.as_str(),
            crate::core::clock::human_instant(done.created),
        );
        if let Some(result) = recorded {
            text.push_str("\nThe result recorded then:\n");
            text.push_str(&result);
        }
        Ok(Admission::Answer(text))
    }

    /// Writes `records` through the one ingest path as the gateway.
    async fn write(&self, records: Vec<Record>, now: DateTime<Utc>) -> Result<(), GateError> {
        commit(self.store.as_ref(), &self.ingester, records, now)
            .await
            .map(drop)
    }

    async fn next_seq(&self, id: &OperationId) -> Result<u32, GateError> {
        let detail = self.store.detail(&Scope::Every, id).await?;
        let used = detail.attempts.iter().map(|a| a.seq).max().unwrap_or(0);
        Ok(used.saturating_add(1))
    }
}

/// How long a settled outcome waits after its answer, so that the outcomes of
/// calls in quick succession are written in one commit ([`Gate::settle`]),
/// beside the agent's calls rather than in their way.
pub const SETTLE_AFTER: std::time::Duration = std::time::Duration::from_millis(20);

/// What a gateway's operations' correlation ids start with, before the run.
const CORRELATION: &str = "mcp-gateway:";

/// This host's name as a gateway's run names it (letters, digits, `-`).
fn host() -> String {
    let name = std::env::var("HOSTNAME")
        .ok()
        .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
        .unwrap_or_default();
    let clean: String = name
        .trim()
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .collect();
    if clean.is_empty() {
        "host".into()
    } else {
        clean
    }
}

/// Whether process `pid` runs on this host (a zombie has ended).
fn runs(procs: &std::path::Path, pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(procs.join(pid.to_string()).join("stat")) else {
        return false;
    };
    let state = stat
        .rsplit_once(')')
        .and_then(|(_, rest)| rest.trim_start().chars().next());
    !matches!(state, Some('Z' | 'X') | None)
}

/// An attempt of `ticket`'s call made by the gateway, ended at `ended` in
/// `reached` (phase, outcome); the rest for the caller to fill in.
fn gateway_attempt(
    id: String,
    ticket: &Ticket,
    ended: DateTime<Utc>,
    (phase, outcome): (Phase, Outcome),
) -> Attempt {
    Attempt {
        id,
        operation: ticket.operation.clone(),
        seq: ticket.seq,
        kind: AttemptKind::Request,
        layer: Some(Layer::Gateway),
        started_at: ticket.started,
        ended_at: Some(ended.max(ticket.started)),
        phase,
        outcome,
        http_status: None,
        error_type: None,
        retry_after: None,
        provider_request_id: None,
        request_hash: None,
        response_hash: None,
        resend_count: None,
        replayed: None,
        trace_id: None,
        response_excerpt: None,
        url: None,
    }
}

/// The business key the tool's contract finds in `arguments`, as the store
/// keeps it: with its secrets redacted (the one ingest redaction), so that the
/// key of a repeat is compared with the key stored for the call it repeats.
fn stored_key(declared: Option<&ToolSettings>, arguments: &Value) -> Option<String> {
    declared
        .and_then(|t| t.business_key(Some(arguments)))
        .map(|key| crate::core::redact::redact(&key).into_owned())
}

/// The states a repeat may not pass: held, or in flight with no outcome
/// recorded (its gateway may have stopped before the answer).
fn holds(state: State) -> bool {
    matches!(
        state,
        State::Unknown
            | State::Partial
            | State::Blocked
            | State::Sent
            | State::Acknowledged
            | State::Planned
            | State::Validated
    )
}

/// What the agent reads when its call is refused: the hold, its state, what
/// must happen first, and that retrying cannot help.
fn refusal_text(held: &SameCall, tool: &str) -> String {
    let why = match held.state {
        State::Unknown => {
            "an earlier identical call may already have taken effect, and whether it did is not known"
        }
        State::Partial => "an earlier identical call took effect only in part",
        State::Blocked => "an earlier identical call is blocked, awaiting a reviewer",
        State::Validated => {
            "an earlier identical call was not sent and is revalidated, awaiting a reviewer's approval"
        }
        _ => "an earlier identical call was sent and its outcome is not recorded yet",
    };
    format!(
        "holdfast held this call and did NOT send it to the server. It repeats operation {id} \
         ({tool}), which is {state}: {why}. Do not retry this call: every identical call is \
         refused the same way until a reviewer reconciles operation {id} in holdfast \
         (`holdfast show {id}`). If the reviewer authorizes a retry, the next identical call is \
         sent once. Tell the user that this action is waiting for review.",
        id = held.id.as_str(),
        state = held.state,
    )
}

/// What the agent reads when its call is held for approval: that it was not
/// sent, why, what a reviewer must do first, and that retrying cannot help.
fn approval_text(id: &OperationId, tool: &str) -> String {
    format!(
        "holdfast held this call for a person's approval and did NOT send it to the server. \
         Tool {tool} is at autonomy `manual`: each of its write calls waits for a reviewer. \
         It is recorded as operation {id}, BLOCKED awaiting approval. Do not retry this call: \
         every identical call is refused the same way until a reviewer approves operation {id} \
         in holdfast (`holdfast show {id}`); once it is approved, the next identical call is \
         sent once. Tell the user that this action is waiting for approval.",
        id = id.as_str(),
    )
}

/// What the agent reads when its call is held because its tool's circuit is
/// open: that it was not sent, why, and what must happen first.
fn circuit_text(id: &OperationId, tool: &str, why: &str) -> String {
    format!(
        "holdfast held this call and did NOT send it to the server: {why}. Tool {tool} has \
         failed repeatedly, so its circuit stops every write until a probe succeeds or its \
         owner closes it. It is recorded as operation {id}, BLOCKED. Do not retry this call: \
         every identical call is refused until a reviewer settles operation {id} in holdfast \
         (`holdfast show {id}`). Tell the user that the tool is failing and this action waits.",
        id = id.as_str(),
    )
}

/// A call's arguments as a hold's evidence entry shows them: compact JSON with
/// every secret redacted (each value, then the text, where a key names a
/// credential), control characters replaced, then the first characters, `…`
/// when cut, no space at the end (an evidence entry is read as an id is).
fn arguments_excerpt(arguments: &Value) -> String {
    let mut clean = arguments.clone();
    crate::core::redact::redact_value(&mut clean);
    let text = clean.to_string();
    let redacted = crate::core::redact::redact(&text);
    let mut chars = redacted
        .chars()
        .map(|c| if c.is_control() { '\u{FFFD}' } else { c });
    let mut excerpt: String = chars.by_ref().take(ARGUMENTS_CHARS).collect();
    let cut = chars.next().is_some();
    excerpt.truncate(excerpt.trim_end().len());
    if cut {
        excerpt.push('…');
    }
    excerpt
}

/// A result's text as an attempt keeps it: the first characters.
fn excerpt_of(text: &str) -> String {
    text.chars().take(EXCERPT_CHARS).collect()
}

/// `mutex`'s guard; a poisoned lock still guards a whole value (each holder
/// only adds, takes or reads).
pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Writes `records` through the one ingest path; a refusal is an error.
async fn commit(
    store: &dyn Store,
    ingester: &Ingester,
    records: Vec<Record>,
    now: DateTime<Utc>,
) -> Result<IngestReport, GateError> {
    let numbered: Vec<Numbered> = records
        .into_iter()
        .enumerate()
        .map(|(i, record)| Numbered {
            line: i + 1,
            record,
            line_sha256: None,
        })
        .collect();
    let report = store
        .ingest_redacted(
            redaction::redact(numbered),
            IngestMode::Strict,
            ingester,
            now,
        )
        .await?;
    if report.rejected.is_empty() {
        Ok(report)
    } else {
        let reasons: Vec<String> = report
            .rejected
            .iter()
            .map(|e| format!("{}: {}", e.field, e.reason))
            .collect();
        Err(GateError::Refused(reasons.join("; ")))
    }
}
