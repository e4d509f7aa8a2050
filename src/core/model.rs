//! The domain vocabulary: states, failure modes, enumerations of the wire format and
//! the records that describe one logical operation and its physical attempts.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;

use super::ids::{OperationId, Sha256};
use super::names::text_enum;

text_enum!(
    /// The lifecycle state of a logical operation (DESIGN §2).
    State {
        Planned => "PLANNED",
        Validated => "VALIDATED",
        Approved => "APPROVED",
        Sent => "SENT",
        Acknowledged => "ACKNOWLEDGED",
        Unknown => "UNKNOWN",
        Partial => "PARTIAL",
        Blocked => "BLOCKED",
        Succeeded => "SUCCEEDED",
        Failed => "FAILED",
        Compensated => "COMPENSATED",
        Accepted => "ACCEPTED",
    }
);

/// The four groups the states fall into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateGroup {
    PreExecution,
    InFlight,
    Held,
    Terminal,
}

impl State {
    /// The states of the console's queue.
    pub const HELD: &'static [State] = &[State::Unknown, State::Partial, State::Blocked];

    pub fn group(self) -> StateGroup {
        match self {
            State::Planned | State::Validated | State::Approved => StateGroup::PreExecution,
            State::Sent | State::Acknowledged => StateGroup::InFlight,
            State::Unknown | State::Partial | State::Blocked => StateGroup::Held,
            State::Succeeded | State::Failed | State::Compensated | State::Accepted => {
                StateGroup::Terminal
            }
        }
    }

    pub fn is_held(self) -> bool {
        self.group() == StateGroup::Held
    }

    pub fn is_terminal(self) -> bool {
        self.group() == StateGroup::Terminal
    }
}

text_enum!(
    /// The eight failure modes of the seed, as stored ids.
    FailureMode {
        AuthDenied => "auth_denied",
        ValidationFailed => "validation_failed",
        TimeoutUnknown => "timeout_unknown",
        RateLimited => "rate_limited",
        TransientError => "transient_error",
        PartialWrite => "partial_write",
        DuplicateReplay => "duplicate_replay",
        UnsafeOutput => "unsafe_output",
    }
);

text_enum!(
    /// Risk tier of an operation; `high` and `critical` need four eyes (G6).
    Risk {
        Low => "low",
        Medium => "medium",
        High => "high",
        Critical => "critical",
    }
);

impl Risk {
    pub fn needs_four_eyes(self) -> bool {
        matches!(self, Risk::High | Risk::Critical)
    }
}

text_enum!(
    /// How far a physical attempt got before it ended.
    Phase {
        NotSent => "not_sent",
        Dns => "dns",
        Connected => "connected",
        RequestSent => "request_sent",
        Acknowledged => "acknowledged",
        ResponseReceived => "response_received",
    }
);

impl Phase {
    /// Whether the request bytes may have reached the provider: past this point a
    /// lost response leaves the outcome unknown.
    pub fn may_have_crossed_boundary(self) -> bool {
        matches!(
            self,
            Phase::RequestSent | Phase::Acknowledged | Phase::ResponseReceived
        )
    }
}

text_enum!(
    /// The transport result of one attempt.
    Outcome {
        Ok => "ok",
        Timeout => "timeout",
        ConnectionReset => "connection_reset",
        DnsFailure => "dns_failure",
        HttpError => "http_error",
        Rejected => "rejected",
        InvalidResponse => "invalid_response",
    }
);

text_enum!(
    /// A request that may have an effect, or a status query that only observes.
    AttemptKind {
        Request => "request",
        StatusQuery => "status_query",
    }
);

text_enum!(
    /// The layer that made a physical attempt.
    Layer {
        Sdk => "sdk",
        Gateway => "gateway",
        Queue => "queue",
        Orchestrator => "orchestrator",
        Agent => "agent",
    }
);

text_enum!(
    /// The state of one item of a batch or one step of a workflow.
    ItemState {
        Succeeded => "succeeded",
        Failed => "failed",
        Unknown => "unknown",
        Skipped => "skipped",
        NotAttempted => "not_attempted",
        Compensated => "compensated",
    }
);

text_enum!(
    /// How a child operation relates to its parent.
    Relation {
        CompensationOf => "compensation_of",
        ResumeOf => "resume_of",
    }
);

text_enum!(
    /// The role under which an identity acts. `delegate` is the one grant that
    /// permits no action of its own: on its tenant, the login holding it may act
    /// for another identity, with that identity's grants. `ingest` permits no
    /// review action either: its holder may feed wire records into the tenant.
    /// `worker` permits no review action: its holder may claim the tenant's
    /// approved work and report what executing it did (DESIGN §9.2).
    /// `domain:…` permits no action of its own: recovery on the holds of a tool
    /// whose contract asks that domain's review needs it besides the role
    /// that takes the action (G13).
    Role {
        System => "system",
        Viewer => "viewer",
        Reviewer => "reviewer",
        Approver => "approver",
        Owner => "owner",
        Local => "local",
        Delegate => "delegate",
        Ingest => "ingest",
        Worker => "worker",
        DomainLegal => "domain:legal",
        DomainFinancial => "domain:financial",
        DomainEmployment => "domain:employment",
        DomainPrivacy => "domain:privacy",
        DomainSecurity => "domain:security",
    }
);

impl Role {
    /// Whether this is a domain-review grant (`domain:…`, G13): held besides a
    /// role, never acted under.
    pub fn is_domain(self) -> bool {
        matches!(
            self,
            Role::DomainLegal
                | Role::DomainFinancial
                | Role::DomainEmployment
                | Role::DomainPrivacy
                | Role::DomainSecurity
        )
    }
}

/// The approval bound to one exact call (G11).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub by: String,
    pub policy: String,
    pub at: Option<DateTime<Utc>>,
    pub payload_hash: Option<Sha256>,
    pub expires_at: Option<DateTime<Utc>>,
}

/// One logical operation: an approved business intent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operation {
    pub id: OperationId,
    pub tenant: String,
    pub actor: String,
    pub tool: String,
    pub action: String,
    pub target: String,
    pub payload_hash: Sha256,
    pub intent_hash: Option<Sha256>,
    pub risk: Risk,
    pub approval: Option<Approval>,
    pub idempotency_key: Option<String>,
    pub business_key: Option<String>,
    pub correlation_id: Option<String>,
    pub owner: String,
    pub max_attempts: Option<u32>,
    pub deadline: Option<DateTime<Utc>>,
    pub failure_mode: Option<FailureMode>,
    pub state: State,
    pub next_observation_at: Option<DateTime<Utc>>,
    pub depends_on: Vec<OperationId>,
    pub parent: Option<OperationId>,
    pub relation: Option<Relation>,
    pub created_at: DateTime<Utc>,
}

#[cfg(test)]
impl Operation {
    /// An operation of tenant `acme` in `state`, of low risk, created at
    /// `created_at`, with nothing else recorded: the start of a test's operation.
    pub(crate) fn bare(name: &str, state: State, created_at: DateTime<Utc>) -> Operation {
        Operation {
            id: OperationId::parse(name).expect("an operation id"),
            tenant: "acme".into(),
            actor: "agent:billing".into(),
            tool: "payments".into(),
            action: "refund".into(),
            target: format!("order/{name}"),
            payload_hash: Sha256::of(name.as_bytes()),
            intent_hash: None,
            risk: Risk::Low,
            approval: None,
            idempotency_key: None,
            business_key: None,
            correlation_id: None,
            owner: "team:payments".into(),
            max_attempts: Some(3),
            deadline: None,
            failure_mode: None,
            state,
            next_observation_at: None,
            depends_on: Vec::new(),
            parent: None,
            relation: None,
            created_at,
        }
    }
}

/// One physical interaction: a request or a status query.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attempt {
    pub id: String,
    pub operation: OperationId,
    pub seq: u32,
    pub kind: AttemptKind,
    pub layer: Option<Layer>,
    pub started_at: DateTime<Utc>,
    pub ended_at: Option<DateTime<Utc>>,
    pub phase: Phase,
    pub outcome: Outcome,
    pub http_status: Option<u16>,
    pub error_type: Option<String>,
    /// The absolute instant the provider asked the client to wait until.
    pub retry_after: Option<DateTime<Utc>>,
    pub provider_request_id: Option<String>,
    pub request_hash: Option<Sha256>,
    pub response_hash: Option<Sha256>,
    pub resend_count: Option<u32>,
    pub replayed: Option<bool>,
    pub trace_id: Option<String>,
    /// Untrusted tool output: quarantined data, never an instruction (G10).
    pub response_excerpt: Option<String>,
    /// The request's URL, its userinfo and query values redacted, when the door
    /// that recorded it knew it (OpenTelemetry's `url.full`). Not a field of the
    /// wire record: the store keeps it in its own column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl Attempt {
    /// A request attempt with nothing but its identity, phase and outcome
    /// recorded: the start of a test's attempt.
    #[cfg(test)]
    pub(crate) fn bare_request(
        id: &str,
        operation: &str,
        seq: u32,
        phase: Phase,
        outcome: Outcome,
    ) -> Attempt {
        Attempt {
            id: id.into(),
            operation: OperationId::parse(operation).expect("an operation id"),
            seq,
            kind: AttemptKind::Request,
            layer: None,
            started_at: "2026-09-05T09:59:00Z".parse().expect("an instant"),
            ended_at: None,
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

    /// The latest instant this attempt is known to have been active.
    pub fn last_instant(&self) -> DateTime<Utc> {
        self.ended_at.unwrap_or(self.started_at)
    }

    /// A try a gateway stopped before it left (phase `not_sent` at layer
    /// `gateway`), such as the repeat of a held call that `holdfast gateway`
    /// refuses: evidence of how often the caller tried, never a request the
    /// provider saw, so it spends no attempt of the budget (G5) and is not the
    /// last request G2 judges.
    pub fn refused_by_gateway(&self) -> bool {
        self.kind == AttemptKind::Request
            && self.phase == Phase::NotSent
            && self.layer == Some(Layer::Gateway)
    }

    /// A request that counts against the attempt budget (G5): every request
    /// but a try a gateway refused before it left.
    pub fn spends_budget(&self) -> bool {
        self.kind == AttemptKind::Request && !self.refused_by_gateway()
    }
}

/// One item of a batch or one step of a workflow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Item {
    pub operation: OperationId,
    pub index: u32,
    pub label: Option<String>,
    pub state: ItemState,
    pub authoritative_id: Option<String>,
}

/// Field-by-field comparison of an observed target with the intent.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Matches {
    pub target: Option<bool>,
    pub payload_hash: Option<bool>,
    pub owner: Option<bool>,
    pub version: Option<bool>,
}

impl Matches {
    /// All four fields present and matching.
    pub fn all(&self) -> bool {
        [self.target, self.payload_hash, self.owner, self.version]
            .iter()
            .all(|m| *m == Some(true))
    }
}

/// What a look at the authoritative target showed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Observation {
    pub id: String,
    pub operation: OperationId,
    pub observed_at: DateTime<Utc>,
    /// Where the observation came from.
    pub source: ObservationSource,
    pub found: bool,
    pub matches: Option<Matches>,
    pub effect_count: Option<u32>,
    pub raw_hash: Option<Sha256>,
    pub note: Option<String>,
}

impl Observation {
    /// An observation of `operation` at `observed_at` with nothing compared:
    /// found or not, from the provider's status, the start of a test's
    /// observation.
    #[cfg(test)]
    pub(crate) fn bare(operation: &str, observed_at: DateTime<Utc>, found: bool) -> Observation {
        Observation {
            id: "O1".into(),
            operation: OperationId::parse(operation).expect("an operation id"),
            observed_at,
            source: ObservationSource::ProviderStatus,
            found,
            matches: None,
            effect_count: None,
            raw_hash: None,
            note: None,
        }
    }
}

text_enum!(
    /// Where an observation came from: the closed set the rules give meaning to.
    /// `provider_status`: the provider's own status or operation endpoint (its
    /// `found: false` is the provider's proof of non-application); `business_key`:
    /// a lookup of the target by business key (needed after key retention, G12);
    /// `downstream`: a check of downstream consequences (needed before
    /// COMPENSATED, G4); `validator`: a fresh run of the validators (needed before
    /// revalidating a BLOCKED one); `target_record`: a read of the authoritative
    /// business record; `status_lookup`: a lookup holdfast made itself from the
    /// contract's `status_lookup` object (DESIGN §9.1), whose `found: false` proves
    /// non-application only after the contract's lag window and whose
    /// `matches.owner` holds the tenant comparison.
    ObservationSource {
        ProviderStatus => "provider_status",
        BusinessKey => "business_key",
        Downstream => "downstream",
        Validator => "validator",
        TargetRecord => "target_record",
        StatusLookup => "status_lookup",
    }
);

/// One state change as recorded in the audit log or received on the wire.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TransitionRecord {
    pub operation: OperationId,
    pub from: State,
    pub to: State,
    pub by: String,
    pub role: Option<Role>,
    pub at: DateTime<Utc>,
    pub reason: Option<String>,
    pub evidence: Vec<String>,
}

/// What a test case expected of one operation (the review row of the seed's packet).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expectation {
    pub operation: OperationId,
    pub expected_state: State,
    pub requires_reconciliation: Option<bool>,
    pub duplicate_risk: Option<bool>,
    pub prohibited: Vec<String>,
    pub veto: Option<bool>,
}

/// One row of the queue: the operation plus the figures the queue shows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OperationRow {
    pub operation: Operation,
    /// Optimistic-lock version, bumped by every change (G8).
    pub version: i64,
    /// Request attempts made so far, those a gateway refused before they left
    /// aside ([`Attempt::spends_budget`]).
    pub attempts_used: u32,
    /// `max_attempts` of the operation, else of its contract.
    pub max_attempts: Option<u32>,
    /// When the operation entered its current state.
    pub state_since: DateTime<Utc>,
    /// Ids of held operations it depends on (G9); non-empty means held by dependency.
    pub held_dependencies: Vec<OperationId>,
    /// A proposal waiting for a second pair of eyes.
    pub pending_proposal: bool,
    /// The owner the hold is routed to at the listing's `now`
    /// (`core::routing`), where the read computed it: a listing's rows carry
    /// it, a single operation's detail routes from its whole evidence instead.
    pub routed_owner: Option<String>,
}

impl OperationRow {
    /// Who the row goes to: the routed owner where the read computed it, else
    /// the operation's own.
    pub fn owner(&self) -> &str {
        self.routed_owner
            .as_deref()
            .unwrap_or(&self.operation.owner)
    }
}

text_enum!(
    @snake_names
    /// A reviewer action's kind, with its stable kebab-case name: the command-line
    /// word, the audit row's `action` and a proposal's stored action. In JSON
    /// output (`review --json`) it is written in snake_case like every other
    /// key and value there (`authorize_retry`).
    ActionKind {
        Reconcile => "reconcile",
        Resolve => "resolve",
        AuthorizeRetry => "authorize-retry",
        ApproveCompensation => "approve-compensation",
        ApproveResume => "approve-resume",
        MarkCompensated => "mark-compensated",
        MarkResumed => "mark-resumed",
        Revalidate => "revalidate",
        Approve => "approve",
        Accept => "accept",
        Block => "block",
        Assign => "assign",
        Schedule => "schedule",
        Comment => "comment",
        Classify => "classify",
        Confirm => "confirm",
        Reject => "reject",
    }
);

/// Serializes an action kind as its stable name, where a record stores it.
fn action_name<S: serde::Serializer>(kind: &ActionKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(kind.as_str())
}

text_enum!(
    /// Where a proposal stands: waiting for a second approver, or closed.
    ProposalStatus {
        Pending => "pending",
        Confirmed => "confirmed",
        Rejected => "rejected",
    }
);

/// A proposal waiting for a different approver (G6).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Proposal {
    pub id: i64,
    pub operation: OperationId,
    /// The action proposed, serialized by its stable name (`authorize-retry`, …).
    #[serde(serialize_with = "action_name")]
    pub action: ActionKind,
    pub proposed_by: String,
    pub proposed_at: DateTime<Utc>,
    pub rationale: String,
    pub status: ProposalStatus,
}

/// A linked child operation seen from its parent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChildLink {
    pub id: OperationId,
    pub relation: Relation,
    pub state: State,
    /// The child's own items (a resume covers a subset of the parent's indexes).
    pub items: Vec<Item>,
}

/// One grant: `identity` holds `role` on `tenant` (G6, G7). A store without any
/// grant is in single-user mode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grant {
    pub identity: String,
    pub role: Role,
    pub tenant: String,
    pub granted_by: String,
    pub granted_at: DateTime<Utc>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_action_kind_prints_snake_case_in_json_but_a_proposal_stores_the_stable_name() {
        assert_eq!(
            serde_json::to_value(ActionKind::AuthorizeRetry).ok(),
            Some(serde_json::json!("authorize_retry"))
        );
        let proposal = Proposal {
            id: 7,
            operation: OperationId::parse("F09").unwrap_or_else(|e| panic!("{e}")),
            action: ActionKind::ApproveCompensation,
            proposed_by: "rev:ana".into(),
            proposed_at: DateTime::<Utc>::UNIX_EPOCH,
            rationale: "the compensation is safe".into(),
            status: ProposalStatus::Pending,
        };
        let json = serde_json::to_value(&proposal).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(json["action"], "approve-compensation");
        assert_eq!(json["status"], "pending");
        for kind in ActionKind::ALL {
            assert_eq!(ActionKind::parse(kind.as_str()), Some(*kind));
        }
    }
}
