//! The state machine and the one decision function every reviewer action passes:
//! the console's dialog, the command line and bulk triage all ask [`decide`], which
//! answers "allowed, with this exact effect" or "refused: rule Gn, because …".

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;
use std::fmt;

use super::audit::AuditDraft;
use super::ids::{OperationId, Sha256};
use super::lookup::{self, Finding, LookupInput, Verdict};
use super::matrix::{self, Assessment};
use super::model::{
    Approval, Attempt, AttemptKind, Grant, Item, ItemState, Matches, Observation,
    ObservationSource, Operation, OperationDetail, Outcome, Phase, Proposal, Relation, Role, State,
};

/// Who may make a transition of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MadeBy {
    System,
    Reviewer,
    Owner,
}

/// The transition table of DESIGN §2: who may move an operation from one state to
/// another, or `None` when nobody may.
pub fn transition_makers(from: State, to: State) -> Option<&'static [MadeBy]> {
    use MadeBy::*;
    use State::*;
    const SYSTEM: &[MadeBy] = &[System];
    const REVIEWER: &[MadeBy] = &[Reviewer];
    const OWNER: &[MadeBy] = &[Owner];
    const ANYONE: &[MadeBy] = &[System, Reviewer];
    if from.is_terminal() {
        return None;
    }
    match (from, to) {
        (Planned, Validated) => Some(SYSTEM),
        (Validated, Approved) => Some(ANYONE),
        (Approved, Sent) => Some(SYSTEM),
        (Sent, Acknowledged) => Some(SYSTEM),
        (Sent | Acknowledged, Succeeded | Failed | Unknown | Partial) => Some(SYSTEM),
        (Unknown, Succeeded | Failed | Partial | Approved) => Some(REVIEWER),
        (Partial, Compensated | Succeeded) => Some(REVIEWER),
        (Blocked, Validated | Failed) => Some(REVIEWER),
        (Unknown | Partial | Blocked, Accepted) => Some(OWNER),
        (_, Blocked) if from != Blocked => Some(ANYONE),
        _ => None,
    }
}

/// Whether the table has the row `from → to` for anyone at all.
pub fn transition_allowed(from: State, to: State) -> bool {
    transition_makers(from, to).is_some()
}

/// The guard a refusal cites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Rule {
    G1,
    G2,
    G3,
    G4,
    G5,
    G6,
    G7,
    G8,
    G9,
    G10,
    G11,
    G12,
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// A refused action: the rule and the reason in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, thiserror::Error)]
#[error("refused by {rule}: {reason}")]
pub struct Refusal {
    pub rule: Rule,
    pub reason: String,
}

fn refuse<T>(rule: Rule, reason: impl Into<String>) -> Result<T, Refusal> {
    Err(Refusal {
        rule,
        reason: reason.into(),
    })
}

/// A reviewer action's kind, with its stable kebab-case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum ActionKind {
    Reconcile,
    Resolve,
    AuthorizeRetry,
    ApproveCompensation,
    ApproveResume,
    MarkCompensated,
    MarkResumed,
    Revalidate,
    Accept,
    Block,
    Assign,
    Schedule,
    Comment,
    Confirm,
    Reject,
}

impl ActionKind {
    pub const ALL: &'static [ActionKind] = &[
        ActionKind::Reconcile,
        ActionKind::Resolve,
        ActionKind::AuthorizeRetry,
        ActionKind::ApproveCompensation,
        ActionKind::ApproveResume,
        ActionKind::MarkCompensated,
        ActionKind::MarkResumed,
        ActionKind::Revalidate,
        ActionKind::Accept,
        ActionKind::Block,
        ActionKind::Assign,
        ActionKind::Schedule,
        ActionKind::Comment,
        ActionKind::Confirm,
        ActionKind::Reject,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Reconcile => "reconcile",
            ActionKind::Resolve => "resolve",
            ActionKind::AuthorizeRetry => "authorize-retry",
            ActionKind::ApproveCompensation => "approve-compensation",
            ActionKind::ApproveResume => "approve-resume",
            ActionKind::MarkCompensated => "mark-compensated",
            ActionKind::MarkResumed => "mark-resumed",
            ActionKind::Revalidate => "revalidate",
            ActionKind::Accept => "accept",
            ActionKind::Block => "block",
            ActionKind::Assign => "assign",
            ActionKind::Schedule => "schedule",
            ActionKind::Comment => "comment",
            ActionKind::Confirm => "confirm",
            ActionKind::Reject => "reject",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|k| k.as_str() == text)
    }

    /// Actions that a reviewer can only propose and that, for high and critical
    /// risk, need a second approver to confirm (G6).
    pub fn is_proposable(self) -> bool {
        matches!(
            self,
            ActionKind::AuthorizeRetry
                | ActionKind::ApproveCompensation
                | ActionKind::ApproveResume
        )
    }
}

impl fmt::Display for ActionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a status lookup showed, as a reviewer enters it for `reconcile`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReconcileInput {
    pub source: String,
    pub found: bool,
    pub matches: Option<Matches>,
    pub effect_count: Option<u32>,
    pub provider_request_id: Option<String>,
    /// Where the reviewer looked (a ticket, a console URL, a query id).
    pub reference: Option<String>,
    pub raw_hash: Option<Sha256>,
    /// The observation's own id, when it came as a wire-format line; else one is
    /// made up from the operation id.
    pub id: Option<String>,
    /// When the lookup was made, when known; else the decision's `now`.
    pub observed_at: Option<DateTime<Utc>>,
}

impl ReconcileInput {
    /// What a stored or received observation showed, as a reconcile input: the
    /// same record counts whether it arrives by ingest or by a reviewer.
    pub fn from_observation(o: &Observation) -> ReconcileInput {
        ReconcileInput {
            source: o.source.clone(),
            found: o.found,
            matches: o.matches.clone(),
            effect_count: o.effect_count,
            provider_request_id: None,
            reference: o.note.clone(),
            raw_hash: o.raw_hash.clone(),
            id: Some(o.id.clone()),
            observed_at: Some(o.observed_at),
        }
    }
}

/// A reviewer action with its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Action {
    Reconcile(ReconcileInput),
    /// A reconcile by a lookup holdfast made itself (or the end of lookups).
    Lookup(LookupInput),
    Resolve {
        to: State,
    },
    AuthorizeRetry,
    ApproveCompensation,
    ApproveResume,
    MarkCompensated,
    MarkResumed,
    Revalidate,
    Accept {
        repair_ref: String,
    },
    Block,
    Assign {
        owner: String,
    },
    Schedule {
        at: DateTime<Utc>,
    },
    Comment,
    Confirm,
    Reject,
}

impl Action {
    pub fn kind(&self) -> ActionKind {
        match self {
            Action::Reconcile(_) | Action::Lookup(_) => ActionKind::Reconcile,
            Action::Resolve { .. } => ActionKind::Resolve,
            Action::AuthorizeRetry => ActionKind::AuthorizeRetry,
            Action::ApproveCompensation => ActionKind::ApproveCompensation,
            Action::ApproveResume => ActionKind::ApproveResume,
            Action::MarkCompensated => ActionKind::MarkCompensated,
            Action::MarkResumed => ActionKind::MarkResumed,
            Action::Revalidate => ActionKind::Revalidate,
            Action::Accept { .. } => ActionKind::Accept,
            Action::Block => ActionKind::Block,
            Action::Assign { .. } => ActionKind::Assign,
            Action::Schedule { .. } => ActionKind::Schedule,
            Action::Comment => ActionKind::Comment,
            Action::Confirm => ActionKind::Confirm,
            Action::Reject => ActionKind::Reject,
        }
    }

    /// The action to evaluate for a proposal's stored name.
    pub fn from_proposal(name: &str) -> Option<Action> {
        match ActionKind::parse(name)? {
            ActionKind::AuthorizeRetry => Some(Action::AuthorizeRetry),
            ActionKind::ApproveCompensation => Some(Action::ApproveCompensation),
            ActionKind::ApproveResume => Some(Action::ApproveResume),
            _ => None,
        }
    }
}

/// Whether `role` may take an action of `kind` at all (G6). Viewers read;
/// reviewers reconcile, resolve, revalidate, block, comment, schedule, mark
/// compensations and resumes done, and *propose* retries, compensations and
/// resumes; approvers may do all that, apply those directly (below high risk) and
/// confirm or reject proposals; owners accept and assign. The local user of a
/// store without grants may do everything.
pub fn permits(role: Role, kind: ActionKind) -> bool {
    use ActionKind::*;
    let reviewer = matches!(
        kind,
        Reconcile
            | Resolve
            | Revalidate
            | Block
            | Comment
            | Schedule
            | MarkCompensated
            | MarkResumed
            | AuthorizeRetry
            | ApproveCompensation
            | ApproveResume
    );
    match role {
        Role::Local => true,
        Role::System | Role::Viewer | Role::Delegate => false,
        Role::Reviewer => reviewer,
        Role::Approver => reviewer || matches!(kind, Confirm | Reject),
        Role::Owner => matches!(kind, Accept | Assign),
    }
}

/// The order in which an identity's roles on one tenant are tried for an action:
/// the role that may apply a proposable action directly comes before the one that
/// only proposes it.
const ROLE_PREFERENCE: &[Role] = &[Role::Approver, Role::Reviewer, Role::Owner, Role::Viewer];

/// The acting identity and what it may do where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Actor {
    /// Who acts: the audit row's `by`. On PostgreSQL, the database login.
    pub identity: String,
    /// The review policy version in force, recorded on every row (G6).
    pub policy: Option<String>,
    /// The identity this actor acts for, when delegated
    /// ([`crate::core::access::act_for`]): the audit row's `on_behalf_of`, whose
    /// grants apply and who counts as the proposer or confirmer for four eyes.
    pub on_behalf_of: Option<String>,
    /// The grants that apply (G6, G7): the identity's own, or, when delegated,
    /// those of the identity acted for on the tenants the delegation covers;
    /// `None` is single-user mode: the store has no grants at all, and the local
    /// user may do everything on every tenant.
    pub grants: Option<Vec<Grant>>,
}

impl Actor {
    /// The local user of a store without grants.
    pub fn local(identity: &str, policy: Option<String>) -> Actor {
        Actor {
            identity: identity.to_owned(),
            policy,
            on_behalf_of: None,
            grants: None,
        }
    }

    /// `identity` as the store's grants define it: single-user mode when there are
    /// none at all, else only what this identity was granted. A `delegate` grant
    /// lets its holder act for others and permits nothing of its own, so it is
    /// not among them.
    pub fn from_grants(identity: &str, policy: Option<String>, all: &[Grant]) -> Actor {
        let grants = (!all.is_empty()).then(|| {
            all.iter()
                .filter(|g| g.identity == identity && g.role != Role::Delegate)
                .cloned()
                .collect()
        });
        Actor {
            identity: identity.to_owned(),
            policy,
            on_behalf_of: None,
            grants,
        }
    }

    /// The person whose decision this is: the identity acted for when delegated,
    /// else the acting identity itself. Proposals and approvals carry this name,
    /// and four eyes compares it.
    pub fn principal(&self) -> &str {
        self.on_behalf_of.as_deref().unwrap_or(&self.identity)
    }

    /// The actor in words: `maya`, or `relay for maya` when delegated.
    pub fn name(&self) -> String {
        match &self.on_behalf_of {
            Some(person) => format!("{} for {person}", self.identity),
            None => self.identity.clone(),
        }
    }

    /// Whether the store is in single-user mode for this actor.
    pub fn single_user(&self) -> bool {
        self.grants.is_none()
    }

    /// The tenants this actor may see (G7), sorted; `None` means every tenant.
    pub fn visible_tenants(&self) -> Option<Vec<String>> {
        self.grants.as_ref().map(|grants| {
            let mut tenants: Vec<String> = grants.iter().map(|g| g.tenant.clone()).collect();
            tenants.sort();
            tenants.dedup();
            tenants
        })
    }

    /// Who is acting with which rights, for a header: `maya — single-user mode (no
    /// grants in this store): may do everything`, or `bob — approver on pinehaven;
    /// viewer on harborline` (`relay for bob — …` when delegated).
    pub fn describe(&self) -> String {
        match &self.grants {
            None => format!(
                "{} — single-user mode (no grants in this store): may do everything",
                self.name()
            ),
            Some(grants) if grants.is_empty() => format!(
                "{} — no grants: sees no tenant (ask an owner for a grant)",
                self.name()
            ),
            Some(_) => {
                let per_tenant: Vec<String> = self
                    .visible_tenants()
                    .unwrap_or_default()
                    .iter()
                    .map(|t| {
                        let roles: Vec<&str> =
                            self.roles_on(t).iter().map(|r| r.as_str()).collect();
                        format!("{} on {t}", roles.join("+"))
                    })
                    .collect();
                format!("{} — {}", self.name(), per_tenant.join("; "))
            }
        }
    }

    /// Whether this actor may see operations of `tenant` (G7).
    pub fn sees(&self, tenant: &str) -> bool {
        self.grants
            .as_ref()
            .is_none_or(|grants| grants.iter().any(|g| g.tenant == tenant))
    }

    /// The roles held on `tenant`, most able first; `[local]` in single-user mode.
    pub fn roles_on(&self, tenant: &str) -> Vec<Role> {
        match &self.grants {
            None => vec![Role::Local],
            Some(grants) => ROLE_PREFERENCE
                .iter()
                .copied()
                .filter(|r| grants.iter().any(|g| g.tenant == tenant && g.role == *r))
                .collect(),
        }
    }

    /// The role under which this actor takes `kind` on `tenant`, or the refusal:
    /// G7 without any grant on the tenant, G6 when no granted role permits it.
    pub fn role_for(&self, tenant: &str, kind: ActionKind) -> Result<Role, Refusal> {
        let roles = self.roles_on(tenant);
        if roles.is_empty() {
            return refuse(
                Rule::G7,
                format!(
                    "{} holds no grant for tenant {tenant}; ask an owner of {tenant} for one",
                    self.name()
                ),
            );
        }
        if let Some(role) = roles.iter().copied().find(|r| permits(*r, kind)) {
            return Ok(role);
        }
        let names: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
        refuse(
            Rule::G6,
            format!(
                "{} holds {} on {tenant}, which may not {kind}; ask someone who holds the right role",
                self.name(),
                names.join(" and ")
            ),
        )
    }
}

/// Why a reviewer acts, as they typed it: at least 10 characters of text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rationale(String);

impl Rationale {
    pub const MIN_CHARS: usize = 10;
    pub const MAX_CHARS: usize = 4000;

    pub fn parse(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        let count = trimmed.chars().count();
        if count < Self::MIN_CHARS {
            return Err(format!(
                "the rationale must be at least {} characters (it has {count}); say why",
                Self::MIN_CHARS
            ));
        }
        if count > Self::MAX_CHARS {
            return Err(format!(
                "the rationale must be at most {} characters (it has {count})",
                Self::MAX_CHARS
            ));
        }
        if let Some(c) = trimmed
            .chars()
            .find(|c| c.is_control() && *c != '\n' && *c != '\t')
        {
            return Err(format!(
                "the rationale contains the control character U+{:04X}",
                u32::from(c)
            ));
        }
        Ok(Rationale(trimmed.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Everything a commit of one allowed action writes, in one transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Commit {
    pub operation: OperationId,
    /// The version the decision was made against (G8).
    pub expected_version: i64,
    /// The new state, when the action changes it.
    pub new_state: Option<State>,
    /// New owner, for `assign`.
    pub new_owner: Option<String>,
    /// New next observation time, for `schedule`.
    pub new_next_observation_at: Option<Option<DateTime<Utc>>>,
    /// Records the action adds (a reconcile's status query and observation).
    pub attempts: Vec<Attempt>,
    pub observations: Vec<Observation>,
    /// Child operations to create, in APPROVED, linked to this one.
    pub children: Vec<Operation>,
    /// The items a child covers (a resume's uncommitted subset).
    pub child_items: Vec<Item>,
    /// A proposal to open, or the id of one to close with its new status.
    pub open_proposal: Option<Proposal>,
    pub close_proposal: Option<(i64, String)>,
    pub audit: AuditDraft,
}

/// An allowed action: what it will do, exactly, before anyone confirms it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Effect {
    pub action: ActionKind,
    pub from: State,
    /// The state after the commit; `None` when the state does not change.
    pub to: Option<State>,
    /// Whether this only opens a proposal that a different approver must confirm.
    pub proposal_only: bool,
    /// One line per consequence, in words, for the preview.
    pub consequences: Vec<String>,
    /// What stays prohibited after it.
    pub still_prohibited: Vec<String>,
    pub commit: Commit,
}

/// Decides one action on one operation at `now`. The same function runs for the
/// preview and again at commit time; the store then re-checks the version (G8).
pub fn decide(
    detail: &OperationDetail,
    action: &Action,
    actor: &Actor,
    rationale: &Rationale,
    expected_version: i64,
    now: DateTime<Utc>,
) -> Result<Effect, Refusal> {
    decide_with(
        detail,
        action,
        actor,
        rationale,
        expected_version,
        now,
        false,
    )
}

/// [`decide`], or, with `confirming`, the proposed action applied for the second
/// approver who confirms it.
fn decide_with(
    detail: &OperationDetail,
    action: &Action,
    actor: &Actor,
    rationale: &Rationale,
    expected_version: i64,
    now: DateTime<Utc>,
    confirming: bool,
) -> Result<Effect, Refusal> {
    let op = &detail.row.operation;
    let kind = action.kind();
    if !actor.sees(&op.tenant) {
        return refuse(
            Rule::G7,
            format!(
                "{} holds no grant for tenant {}; ask an owner of {} for one",
                actor.name(),
                op.tenant,
                op.tenant
            ),
        );
    }
    if expected_version != detail.row.version {
        return refuse(
            Rule::G8,
            format!(
                "{} changed since it was loaded (version {} → {}); reload and decide again",
                op.id, expected_version, detail.row.version
            ),
        );
    }
    let role = actor.role_for(&op.tenant, kind)?;
    if op.state.is_terminal() && kind != ActionKind::Comment {
        return refuse(
            Rule::G1,
            format!(
                "{} is {}, a terminal state: nothing moves it any more",
                op.id, op.state
            ),
        );
    }
    let mut plan = Plan::new(detail, actor, role, rationale, kind, now);
    plan.confirming = confirming;
    match action {
        Action::Reconcile(input) => plan.reconcile(input)?,
        Action::Lookup(input) => plan.lookup(input)?,
        Action::Resolve { to } => plan.resolve(*to)?,
        Action::AuthorizeRetry => plan.proposable(Plan::authorize_retry)?,
        Action::ApproveCompensation => plan.proposable(Plan::approve_compensation)?,
        Action::ApproveResume => plan.proposable(Plan::approve_resume)?,
        Action::MarkCompensated => plan.mark_compensated()?,
        Action::MarkResumed => plan.mark_resumed()?,
        Action::Revalidate => plan.revalidate()?,
        Action::Accept { repair_ref } => plan.accept(repair_ref)?,
        Action::Block => plan.block()?,
        Action::Assign { owner } => plan.assign(owner)?,
        Action::Schedule { at } => plan.schedule(*at)?,
        Action::Comment => plan
            .consequences
            .push("adds a comment to the audit log".into()),
        Action::Confirm => plan.confirm(expected_version)?,
        Action::Reject => plan.reject()?,
    }
    Ok(plan.finish(expected_version))
}

/// The effect under construction.
struct Plan<'a> {
    detail: &'a OperationDetail,
    actor: &'a Actor,
    /// The role the actor takes this action under.
    role: Role,
    rationale: &'a Rationale,
    now: DateTime<Utc>,
    kind: ActionKind,
    /// Applying a confirmed proposal: no second proposal is opened.
    confirming: bool,
    to: Option<State>,
    proposal_only: bool,
    consequences: Vec<String>,
    evidence: Vec<String>,
    commit_extra: CommitExtra,
}

#[derive(Default)]
struct CommitExtra {
    new_owner: Option<String>,
    new_next_observation_at: Option<Option<DateTime<Utc>>>,
    attempts: Vec<Attempt>,
    observations: Vec<Observation>,
    children: Vec<Operation>,
    child_items: Vec<Item>,
    open_proposal: Option<Proposal>,
    close_proposal: Option<(i64, String)>,
}

impl<'a> Plan<'a> {
    fn new(
        detail: &'a OperationDetail,
        actor: &'a Actor,
        role: Role,
        rationale: &'a Rationale,
        kind: ActionKind,
        now: DateTime<Utc>,
    ) -> Self {
        Plan {
            detail,
            actor,
            role,
            rationale,
            now,
            kind,
            confirming: false,
            to: None,
            proposal_only: false,
            consequences: Vec::new(),
            evidence: Vec::new(),
            commit_extra: CommitExtra::default(),
        }
    }

    fn op(&self) -> &'a Operation {
        &self.detail.row.operation
    }

    fn assess(&self) -> Assessment {
        matrix::assess_detail(self.detail, self.now)
    }

    /// Moves to `to`, checking the table for the maker this actor acts as.
    fn transition(&mut self, to: State, maker: MadeBy) -> Result<(), Refusal> {
        let from = self.op().state;
        match transition_makers(from, to) {
            Some(makers) if makers.contains(&maker) => {
                self.to = Some(to);
                self.consequences.push(format!("state {from} → {to}"));
                Ok(())
            }
            _ => refuse(
                Rule::G1,
                format!("the transition {from} → {to} is not in the table"),
            ),
        }
    }

    fn no_key_conflict(&self, what: &str) -> Result<(), Refusal> {
        if self.detail.key_conflicts.is_empty() {
            return Ok(());
        }
        refuse(
            Rule::G3,
            format!(
                "idempotency key {} is also used by {} with a different payload: no {what}; only accept or resolve to FAILED",
                self.op().idempotency_key.as_deref().unwrap_or("-"),
                join_ids(&self.detail.key_conflicts)
            ),
        )
    }

    fn dependencies_settled(&self) -> Result<(), Refusal> {
        let held: Vec<&OperationId> = self
            .detail
            .dependencies
            .iter()
            .filter(|(_, s)| !matches!(s, State::Succeeded | State::Accepted))
            .map(|(id, _)| id)
            .collect();
        if held.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = held.iter().map(|id| id.to_string()).collect();
        refuse(
            Rule::G9,
            format!(
                "depends on {} which has not succeeded: it cannot be confirmed yet",
                names.join(", ")
            ),
        )
    }

    fn reconcile(&mut self, input: &ReconcileInput) -> Result<(), Refusal> {
        let op = self.op();
        if input.source.trim().is_empty() {
            return refuse(Rule::G1, "a reconcile needs the source that was queried");
        }
        let seq = self
            .detail
            .attempts
            .iter()
            .map(|a| a.seq)
            .max()
            .unwrap_or(0)
            + 1;
        let attempt_id = format!("{}-Q{seq}", op.id);
        let observation_id = input
            .id
            .clone()
            .unwrap_or_else(|| format!("{}-O{}", op.id, self.detail.observations.len() + 1));
        if self
            .detail
            .observations
            .iter()
            .any(|o| o.id == observation_id)
        {
            return refuse(
                Rule::G1,
                format!(
                    "observation {observation_id} is already recorded for {}",
                    op.id
                ),
            );
        }
        let observed_at = input.observed_at.unwrap_or(self.now);
        if observed_at > self.now {
            return refuse(
                Rule::G1,
                format!(
                    "observation {observation_id} is dated {}, after now: a lookup cannot come from the future",
                    super::clock::format_instant(observed_at)
                ),
            );
        }
        let attempt = Attempt {
            id: attempt_id.clone(),
            operation: op.id.clone(),
            seq,
            kind: AttemptKind::StatusQuery,
            layer: None,
            started_at: observed_at,
            ended_at: Some(observed_at),
            phase: Phase::ResponseReceived,
            outcome: Outcome::Ok,
            http_status: None,
            error_type: None,
            retry_after: None,
            provider_request_id: input.provider_request_id.clone(),
            request_hash: None,
            response_hash: input.raw_hash.clone(),
            resend_count: Some(0),
            replayed: None,
            trace_id: None,
            response_excerpt: None,
        };
        let observation = Observation {
            id: observation_id.clone(),
            operation: op.id.clone(),
            observed_at,
            source: input.source.trim().to_owned(),
            found: input.found,
            matches: input.matches.clone(),
            effect_count: input.effect_count,
            raw_hash: input.raw_hash.clone(),
            note: input.reference.clone(),
        };
        self.consequences.push(format!(
            "records status query {attempt_id} and observation {observation_id} ({}, {})",
            observation.source,
            if input.found { "found" } else { "not found" }
        ));
        self.consequences
            .push("the state does not change; resolve afterwards".into());
        self.evidence = vec![attempt_id, observation_id];
        self.commit_extra.attempts.push(attempt);
        self.commit_extra.observations.push(observation);
        Ok(())
    }

    /// Records a lookup: its attempt, its observation when an answer came, what
    /// the answer proves, and the next lookup's time (or routing to the owner).
    fn lookup(&mut self, input: &LookupInput) -> Result<(), Refusal> {
        let effect = lookup::plan(self.detail, input, self.now);
        if let Some(o) = &effect.observation
            && self.detail.observations.iter().any(|x| x.id == o.id)
        {
            return refuse(
                Rule::G1,
                format!(
                    "observation {} is already recorded for {}",
                    o.id,
                    self.op().id
                ),
            );
        }
        if let Some(a) = &effect.attempt
            && a.ended_at.is_some_and(|t| t > self.now)
        {
            return refuse(
                Rule::G1,
                "the lookup is dated after now: a lookup cannot come from the future",
            );
        }
        self.consequences = effect.consequences;
        self.consequences
            .push("the state does not change; resolve afterwards".into());
        self.evidence = effect.evidence;
        self.commit_extra.attempts.extend(effect.attempt);
        self.commit_extra.observations.extend(effect.observation);
        self.commit_extra.new_next_observation_at = Some(effect.next_observation_at);
        self.commit_extra.new_owner = effect.new_owner;
        Ok(())
    }

    fn resolve(&mut self, to: State) -> Result<(), Refusal> {
        let from = self.op().state;
        match (from, to) {
            (State::Unknown, State::Succeeded) => {
                self.no_key_conflict("resolution to SUCCEEDED")?;
                self.dependencies_settled()?;
                let obs = self.assess().fresh_observation.ok_or_else(|| Refusal {
                    rule: Rule::G1,
                    reason: "SUCCEEDED needs an observation newer than the last request; reconcile first".into(),
                })?;
                if let Some(Verdict::Findings { findings }) = &self.assess().lookup {
                    let rule = if findings.contains(&Finding::WrongTenant) {
                        Rule::G7
                    } else {
                        Rule::G1
                    };
                    let named: Vec<String> = findings
                        .iter()
                        .map(|f| format!("{f} ({} finding)", f.name().replace('_', "-")))
                        .collect();
                    return refuse(
                        rule,
                        format!(
                            "lookup observation {obs}: {}: it does not show the intended effect once",
                            named.join("; ")
                        ),
                    );
                }
                let ok = self
                    .detail
                    .observations
                    .iter()
                    .find(|o| o.id == obs)
                    .is_some_and(lookup::proves_single_effect);
                if !ok {
                    return refuse(
                        Rule::G1,
                        format!(
                            "observation {obs} does not show exactly one matching effect (found, target, payload hash, owner and version all matching, effect count 1)"
                        ),
                    );
                }
                self.evidence.push(obs);
            }
            (State::Unknown, State::Failed) | (State::Blocked, State::Failed) => {
                let assessment = self.assess();
                let proof = assessment.non_application.clone();
                let pre_execution = from == State::Blocked && !assessment.crossed_boundary;
                match (proof, pre_execution) {
                    (Some(obs), _) => self.evidence.push(obs),
                    (None, true) => self.consequences.push(
                        "no request ever crossed the execution boundary (pre-execution rejection)"
                            .into(),
                    ),
                    (None, false) => {
                        return refuse(
                            Rule::G1,
                            "FAILED needs proof of non-application: an observation newer than the last request, after the observation window, showing not found (or the provider's own status saying so)",
                        );
                    }
                }
            }
            (State::Unknown, State::Partial) => {
                self.no_key_conflict("resolution to PARTIAL")?;
                let committed = self
                    .detail
                    .items
                    .iter()
                    .filter(|i| i.state == ItemState::Succeeded)
                    .count();
                if committed == 0 || committed == self.detail.items.len() {
                    return refuse(
                        Rule::G1,
                        format!(
                            "PARTIAL needs items showing a committed subset ({committed} of {} committed)",
                            self.detail.items.len()
                        ),
                    );
                }
            }
            _ => {
                return refuse(
                    Rule::G1,
                    format!("resolve cannot move {from} to {to}; the table has no such row"),
                );
            }
        }
        self.transition(to, MadeBy::Reviewer)
    }

    /// Runs a proposable action, turning it into a proposal where four eyes or the
    /// actor's role require one (G6).
    fn proposable(&mut self, check: fn(&mut Self) -> Result<(), Refusal>) -> Result<(), Refusal> {
        if let Some(p) = self.detail.proposals.iter().find(|p| p.status == "pending") {
            return refuse(
                Rule::G6,
                format!(
                    "proposal {} ({} by {}) is pending: confirm or reject it first",
                    p.id, p.action, p.proposed_by
                ),
            );
        }
        check(self)?;
        let four_eyes = self.op().risk.needs_four_eyes();
        if !self.confirming && (four_eyes || !matches!(self.role, Role::Approver | Role::Local)) {
            let why = if four_eyes {
                format!(
                    "risk {} needs a second, different approver to confirm",
                    self.op().risk
                )
            } else {
                format!("role {} proposes; an approver confirms", self.role)
            };
            self.proposal_only = true;
            self.to = None;
            self.commit_extra.children.clear();
            self.commit_extra.child_items.clear();
            self.consequences = vec![
                format!("opens a proposal to {}: {why}", self.kind),
                "nothing else changes until it is confirmed".into(),
            ];
            self.commit_extra.open_proposal = Some(Proposal {
                id: 0,
                operation: self.op().id.clone(),
                action: self.kind.as_str().to_owned(),
                proposed_by: self.actor.principal().to_owned(),
                proposed_at: self.now,
                rationale: self.rationale.as_str().to_owned(),
                status: "pending".into(),
            });
        }
        Ok(())
    }

    fn within_budget(&self) -> Result<(), Refusal> {
        let a = self.assess();
        if let Some(why) = a.budget_exhausted() {
            return refuse(
                Rule::G5,
                format!("{why}: only accept, resolve to FAILED or block remain"),
            );
        }
        Ok(())
    }

    fn authorize_retry(&mut self) -> Result<(), Refusal> {
        let op = self.op();
        if op.state != State::Unknown {
            return refuse(
                Rule::G1,
                format!(
                    "a retry is authorized from UNKNOWN only; {} is {}",
                    op.id, op.state
                ),
            );
        }
        self.no_key_conflict("retry")?;
        self.within_budget()?;
        approval_binds(op.approval.as_ref(), &op.payload_hash, self.now)?;
        let a = self.assess();
        if let Some(expiry) = a.key_expired_at {
            match &a.business_key_check {
                Some(obs) => self.evidence.push(obs.clone()),
                None => {
                    return refuse(
                        Rule::G12,
                        format!(
                            "idempotency key retention ended at {}; the key no longer protects a repeat: reconcile by business key first",
                            super::clock::format_instant(expiry)
                        ),
                    );
                }
            }
        }
        if a.write && a.crossed_boundary {
            match &a.non_application {
                Some(obs) => self.evidence.push(obs.clone()),
                None => {
                    return refuse(
                        Rule::G2,
                        "the last request may have crossed the execution boundary: reconcile and prove non-application before any repeat",
                    );
                }
            }
        }
        self.transition(State::Approved, MadeBy::Reviewer)?;
        self.consequences.push(format!(
            "same operation {}, actor, tenant, payload hash and idempotency key; attempt {} of {} next",
            op.id,
            a.attempts_used + 1,
            a.max_attempts
                .map_or_else(|| "unbounded".to_owned(), |m| m.to_string())
        ));
        Ok(())
    }

    fn child_id(&self, tag: char) -> OperationId {
        let n = self
            .detail
            .children
            .iter()
            .filter(|c| {
                c.id.as_str()
                    .starts_with(&format!("{}-{tag}", self.op().id))
            })
            .count()
            + 1;
        OperationId::parse(&format!("{}-{tag}{n}", self.op().id))
            .unwrap_or_else(|_| self.op().id.clone())
    }

    fn new_child(&self, id: OperationId, relation: Relation, action: &str) -> Operation {
        let op = self.op();
        let payload = Sha256::of(format!("{relation}:{}:{}", op.id, op.payload_hash).as_bytes());
        Operation {
            id: id.clone(),
            tenant: op.tenant.clone(),
            actor: op.actor.clone(),
            tool: op.tool.clone(),
            action: action.to_owned(),
            target: op.target.clone(),
            payload_hash: payload.clone(),
            intent_hash: op.intent_hash.clone(),
            risk: op.risk,
            approval: Some(Approval {
                by: self.actor.principal().to_owned(),
                policy: self.actor.policy.clone().unwrap_or_else(|| "-".into()),
                at: Some(self.now),
                payload_hash: Some(payload),
                expires_at: Some(self.now + Duration::hours(1)),
            }),
            idempotency_key: Some(format!("k-{id}")),
            business_key: op.business_key.clone(),
            correlation_id: op.correlation_id.clone(),
            owner: op.owner.clone(),
            max_attempts: op.max_attempts,
            deadline: None,
            failure_mode: None,
            state: State::Approved,
            next_observation_at: None,
            depends_on: Vec::new(),
            parent: Some(op.id.clone()),
            relation: Some(relation),
            created_at: self.now,
        }
    }

    fn no_open_child(&self, relation: Relation) -> Result<(), Refusal> {
        if let Some(c) = self
            .detail
            .children
            .iter()
            .find(|c| c.relation == relation && !c.state.is_terminal())
        {
            return refuse(
                Rule::G1,
                format!("{} ({relation}) is still {}: one at a time", c.id, c.state),
            );
        }
        Ok(())
    }

    fn approve_compensation(&mut self) -> Result<(), Refusal> {
        let op = self.op();
        if op.state != State::Partial {
            return refuse(
                Rule::G1,
                format!(
                    "compensation is approved for PARTIAL operations; {} is {}",
                    op.id, op.state
                ),
            );
        }
        self.no_key_conflict("automated repair")?;
        let Some(inverse) = self
            .detail
            .contract
            .as_ref()
            .and_then(|c| c.compensation.clone())
        else {
            return refuse(
                Rule::G1,
                format!("the contract of {} names no compensating action", op.tool),
            );
        };
        self.no_open_child(Relation::CompensationOf)?;
        let id = self.child_id('C');
        let child = self.new_child(id.clone(), Relation::CompensationOf, &inverse);
        self.consequences.push(format!(
            "creates {id} ({inverse}, compensation_of {}) in APPROVED for an executor",
            op.id
        ));
        self.consequences.push(format!(
            "{} stays PARTIAL until the compensation succeeds and downstream evidence is recorded",
            op.id
        ));
        self.evidence.push(id.to_string());
        self.commit_extra.children.push(child);
        Ok(())
    }

    fn approve_resume(&mut self) -> Result<(), Refusal> {
        let op = self.op();
        if op.state != State::Partial {
            return refuse(
                Rule::G1,
                format!(
                    "a resume is approved for PARTIAL operations; {} is {}",
                    op.id, op.state
                ),
            );
        }
        self.no_key_conflict("automated repair")?;
        self.within_budget()?;
        let unknown: Vec<String> = self
            .detail
            .items
            .iter()
            .filter(|i| i.state == ItemState::Unknown)
            .map(|i| i.index.to_string())
            .collect();
        if !unknown.is_empty() {
            return refuse(
                Rule::G2,
                format!(
                    "items {} are unknown: they may have committed; reconcile them before resuming",
                    unknown.join(", ")
                ),
            );
        }
        let todo: Vec<&Item> = self
            .detail
            .items
            .iter()
            .filter(|i| {
                matches!(
                    i.state,
                    ItemState::Failed | ItemState::NotAttempted | ItemState::Skipped
                )
            })
            .collect();
        if todo.is_empty() {
            return refuse(Rule::G1, "no uncommitted items are left to resume");
        }
        self.no_open_child(Relation::ResumeOf)?;
        let id = self.child_id('R');
        let child = self.new_child(id.clone(), Relation::ResumeOf, &op.action);
        let indexes: Vec<String> = todo.iter().map(|i| i.index.to_string()).collect();
        self.consequences.push(format!(
            "creates {id} (resume_of {}) in APPROVED covering only items {}",
            op.id,
            indexes.join(", ")
        ));
        self.consequences
            .push("committed items are not sent again".into());
        self.commit_extra.child_items = todo
            .iter()
            .map(|i| Item {
                operation: id.clone(),
                index: i.index,
                label: i.label.clone(),
                state: ItemState::NotAttempted,
                authoritative_id: None,
            })
            .collect();
        self.evidence.push(id.to_string());
        self.commit_extra.children.push(child);
        Ok(())
    }

    fn mark_compensated(&mut self) -> Result<(), Refusal> {
        let op = self.op();
        let Some(child) = self
            .detail
            .children
            .iter()
            .find(|c| c.relation == Relation::CompensationOf && c.state == State::Succeeded)
        else {
            let failed = self
                .detail
                .children
                .iter()
                .find(|c| c.relation == Relation::CompensationOf);
            return refuse(
                Rule::G4,
                match failed {
                    Some(c) => format!(
                        "compensation {} is {}, not SUCCEEDED: {} stays PARTIAL",
                        c.id, c.state, op.id
                    ),
                    None => "no compensation operation exists: approve one first".to_owned(),
                },
            );
        };
        let downstream =
            self.detail.observations.iter().rev().find(|o| {
                o.source == ObservationSource::DOWNSTREAM && o.observed_at >= op.created_at
            });
        let Some(downstream) = downstream else {
            return refuse(
                Rule::G4,
                format!(
                    "compensation {} succeeded but no downstream evidence is recorded: reconcile with source `downstream` first",
                    child.id
                ),
            );
        };
        self.evidence = vec![child.id.to_string(), downstream.id.clone()];
        self.transition(State::Compensated, MadeBy::Reviewer)?;
        self.consequences.push(
            "the original effect stays visible in the log; COMPENSATED is not erasure".into(),
        );
        Ok(())
    }

    fn mark_resumed(&mut self) -> Result<(), Refusal> {
        let op = self.op();
        self.dependencies_settled()?;
        let Some(child) = self
            .detail
            .children
            .iter()
            .find(|c| c.relation == Relation::ResumeOf && c.state == State::Succeeded)
        else {
            return refuse(Rule::G1, format!("no resume of {} has SUCCEEDED", op.id));
        };
        let unverified: Vec<String> = self
            .detail
            .items
            .iter()
            .filter(|i| {
                i.state != ItemState::Succeeded
                    && !child
                        .items
                        .iter()
                        .any(|c| c.index == i.index && c.state == ItemState::Succeeded)
            })
            .map(|i| i.index.to_string())
            .collect();
        if !unverified.is_empty() {
            return refuse(
                Rule::G1,
                format!(
                    "items {} are not verified as succeeded",
                    unverified.join(", ")
                ),
            );
        }
        self.evidence.push(child.id.to_string());
        self.transition(State::Succeeded, MadeBy::Reviewer)
    }

    fn revalidate(&mut self) -> Result<(), Refusal> {
        let op = self.op();
        if op.state != State::Blocked {
            return refuse(Rule::G1, format!("{} is {}, not BLOCKED", op.id, op.state));
        }
        self.no_key_conflict("revalidation")?;
        let since = self.detail.row.state_since;
        let fresh =
            self.detail.observations.iter().rev().find(|o| {
                o.source == ObservationSource::VALIDATOR && o.found && o.observed_at > since
            });
        match fresh {
            Some(o) => self.evidence.push(o.id.clone()),
            None => {
                return refuse(
                    Rule::G1,
                    "revalidation needs a fresh validation event (an observation with source `validator`) after the repair",
                );
            }
        }
        self.transition(State::Validated, MadeBy::Reviewer)
    }

    fn accept(&mut self, repair_ref: &str) -> Result<(), Refusal> {
        if repair_ref.trim().is_empty() {
            return refuse(
                Rule::G1,
                "accept needs a manual-repair reference (a ticket or runbook id)",
            );
        }
        self.evidence.push(format!("repair:{}", repair_ref.trim()));
        self.transition(State::Accepted, MadeBy::Owner)?;
        self.consequences.push(format!(
            "the owner accepts the recorded state {} as final; manual repair {}",
            self.op().state,
            repair_ref.trim()
        ));
        Ok(())
    }

    fn block(&mut self) -> Result<(), Refusal> {
        self.transition(State::Blocked, MadeBy::Reviewer)
    }

    fn assign(&mut self, owner: &str) -> Result<(), Refusal> {
        let owner = owner.trim();
        if owner.is_empty() {
            return refuse(Rule::G1, "assign needs an owner");
        }
        self.consequences
            .push(format!("owner {} → {owner}", self.op().owner));
        self.commit_extra.new_owner = Some(owner.to_owned());
        Ok(())
    }

    fn schedule(&mut self, at: DateTime<Utc>) -> Result<(), Refusal> {
        if at <= self.now {
            return refuse(Rule::G1, "the next observation must be in the future");
        }
        self.consequences.push(format!(
            "next observation at {}",
            super::clock::format_instant(at)
        ));
        self.commit_extra.new_next_observation_at = Some(Some(at));
        Ok(())
    }

    fn pending(&self) -> Result<&'a Proposal, Refusal> {
        self.detail
            .proposals
            .iter()
            .find(|p| p.status == "pending")
            .ok_or_else(|| Refusal {
                rule: Rule::G6,
                reason: format!("{} has no pending proposal", self.op().id),
            })
    }

    fn confirm(&mut self, version: i64) -> Result<(), Refusal> {
        let proposal = self.pending()?;
        if proposal.proposed_by == self.actor.principal() {
            return refuse(
                Rule::G6,
                format!(
                    "{} proposed this; a second, different approver must confirm",
                    proposal.proposed_by
                ),
            );
        }
        let Some(action) = Action::from_proposal(&proposal.action) else {
            return refuse(
                Rule::G1,
                format!(
                    "proposal {} names no action that can be confirmed",
                    proposal.id
                ),
            );
        };
        let mut detail = self.detail.clone();
        detail.proposals.retain(|p| p.id != proposal.id);
        let mut inner = decide_with(
            &detail,
            &action,
            self.actor,
            self.rationale,
            version,
            self.now,
            true,
        )?;
        if inner.proposal_only {
            return refuse(Rule::G6, "the proposal could not be applied directly");
        }
        self.to = inner.to;
        self.consequences = std::mem::take(&mut inner.consequences);
        self.consequences.insert(
            0,
            format!(
                "confirms proposal {} ({} by {})",
                proposal.id, proposal.action, proposal.proposed_by
            ),
        );
        self.evidence = inner.commit.audit.evidence.clone();
        self.evidence.push(format!("proposal:{}", proposal.id));
        let c = inner.commit;
        self.commit_extra = CommitExtra {
            new_owner: c.new_owner,
            new_next_observation_at: c.new_next_observation_at,
            attempts: c.attempts,
            observations: c.observations,
            children: c.children,
            child_items: c.child_items,
            open_proposal: None,
            close_proposal: Some((proposal.id, "confirmed".into())),
        };
        Ok(())
    }

    fn reject(&mut self) -> Result<(), Refusal> {
        let proposal = self.pending()?;
        self.consequences.push(format!(
            "rejects proposal {} ({} by {}); the state does not change",
            proposal.id, proposal.action, proposal.proposed_by
        ));
        self.evidence.push(format!("proposal:{}", proposal.id));
        self.commit_extra.close_proposal = Some((proposal.id, "rejected".into()));
        Ok(())
    }

    fn finish(self, expected_version: i64) -> Effect {
        let op = self.op();
        let extra = self.commit_extra;
        let still_prohibited = {
            let mut after = self.detail.clone();
            if let Some(to) = self.to {
                after.row.operation.state = to;
            }
            after.attempts.extend(extra.attempts.iter().cloned());
            after
                .observations
                .extend(extra.observations.iter().cloned());
            prohibited(&after, self.now)
        };
        let audit = AuditDraft {
            operation: op.id.clone(),
            action: self.kind.as_str().to_owned(),
            from: Some(op.state),
            to: self.to,
            by: self.actor.identity.clone(),
            role: self.role,
            policy: self.actor.policy.clone(),
            on_behalf_of: self.actor.on_behalf_of.clone(),
            rationale: Some(self.rationale.as_str().to_owned()),
            evidence: self.evidence,
            at: self.now,
        };
        Effect {
            action: self.kind,
            from: op.state,
            to: self.to,
            proposal_only: self.proposal_only,
            consequences: self.consequences,
            still_prohibited,
            commit: Commit {
                operation: op.id.clone(),
                expected_version,
                new_state: self.to,
                new_owner: extra.new_owner,
                new_next_observation_at: extra.new_next_observation_at,
                attempts: extra.attempts,
                observations: extra.observations,
                children: extra.children,
                child_items: extra.child_items,
                open_proposal: extra.open_proposal,
                close_proposal: extra.close_proposal,
                audit,
            },
        }
    }
}

/// Checks that an approval binds this exact payload and has not expired (G11).
pub fn approval_binds(
    approval: Option<&Approval>,
    payload: &Sha256,
    at: DateTime<Utc>,
) -> Result<(), Refusal> {
    let Some(approval) = approval else {
        return refuse(
            Rule::G11,
            "no approval is recorded: obtain one for this exact call",
        );
    };
    match &approval.payload_hash {
        Some(bound) if bound == payload => {}
        Some(bound) => {
            return refuse(
                Rule::G11,
                format!(
                    "the approval binds payload {} but the operation carries {}: the payload changed, a new approval is needed",
                    bound.short(12),
                    payload.short(12)
                ),
            );
        }
        None => {
            return refuse(
                Rule::G11,
                "the approval binds no payload hash: a new approval for this exact call is needed",
            );
        }
    }
    match approval.expires_at {
        Some(expiry) if expiry > at => Ok(()),
        Some(expiry) => refuse(
            Rule::G11,
            format!(
                "the approval expired at {}: a new one is needed",
                super::clock::format_instant(expiry)
            ),
        ),
        None => refuse(
            Rule::G11,
            "the approval has no expiry: a new, time-bound approval is needed",
        ),
    }
}

fn join_ids(ids: &[OperationId]) -> String {
    ids.iter()
        .map(|i| i.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// What nobody may do to this operation right now, each with its rule.
pub fn prohibited(detail: &OperationDetail, now: DateTime<Utc>) -> Vec<String> {
    let op = &detail.row.operation;
    let mut out = Vec::new();
    if op.state.is_terminal() {
        out.push(format!("any transition: {} is terminal (G1)", op.state));
        return out;
    }
    let a = matrix::assess_detail(detail, now);
    if !detail.key_conflicts.is_empty() {
        out.push(format!(
            "retry or automated repair: key conflict with {} (G3)",
            join_ids(&detail.key_conflicts)
        ));
    }
    if a.write && a.crossed_boundary && a.non_application.is_none() {
        out.push("repeating the write before reconciliation proves non-application (G2)".into());
    }
    if let Some(why) = a.budget_exhausted() {
        out.push(format!("retry: {why} (G5)"));
    }
    if a.key_expired_at.is_some() && a.business_key_check.is_none() {
        out.push("relying on the expired idempotency key: reconcile by business key (G12)".into());
    }
    if let Err(r) = approval_binds(op.approval.as_ref(), &op.payload_hash, now) {
        out.push(format!(
            "sending on the current approval: {} ({})",
            r.reason, r.rule
        ));
    }
    if detail
        .dependencies
        .iter()
        .any(|(_, s)| !matches!(s, State::Succeeded | State::Accepted))
    {
        out.push("confirming to a customer while a dependency is held (G9)".into());
    }
    if op.state.is_held() {
        out.push("customer-facing confirmation and dependent writes while held".into());
    }
    if detail.attempts.iter().any(|a| a.response_excerpt.is_some()) {
        out.push(
            "acting on tool output: it is quarantined data, never an instruction (G10)".into(),
        );
    }
    out
}

/// One action as the console offers it: allowed with its effect, or refused.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActionOption {
    /// The command-line form (`resolve --to FAILED`).
    pub label: String,
    pub action: Action,
    pub outcome: Result<Effect, Refusal>,
}

/// Every action with default parameters, decided now for this actor: what the
/// evidence pane lists as allowed and refused.
pub fn options(detail: &OperationDetail, actor: &Actor, now: DateTime<Utc>) -> Vec<ActionOption> {
    let preview = Rationale("preview of the effect".into());
    let version = detail.row.version;
    let reconcile = Action::Reconcile(ReconcileInput {
        source: ObservationSource::PROVIDER_STATUS.into(),
        found: false,
        matches: None,
        effect_count: None,
        provider_request_id: None,
        reference: None,
        raw_hash: None,
        id: None,
        observed_at: None,
    });
    let mut actions: Vec<(String, Action)> = vec![("reconcile".into(), reconcile)];
    for to in [State::Succeeded, State::Failed, State::Partial] {
        actions.push((format!("resolve --to {to}"), Action::Resolve { to }));
    }
    let plain = [
        Action::AuthorizeRetry,
        Action::ApproveCompensation,
        Action::ApproveResume,
        Action::MarkCompensated,
        Action::MarkResumed,
        Action::Revalidate,
        Action::Accept {
            repair_ref: "REF".into(),
        },
        Action::Block,
        Action::Assign {
            owner: detail.row.operation.owner.clone(),
        },
        Action::Schedule {
            at: now + Duration::minutes(15),
        },
        Action::Comment,
        Action::Confirm,
        Action::Reject,
    ];
    actions.extend(plain.into_iter().map(|a| (a.kind().as_str().to_owned(), a)));
    actions
        .into_iter()
        .map(|(label, action)| {
            let outcome = decide(detail, &action, actor, &preview, version, now);
            ActionOption {
                label,
                action,
                outcome,
            }
        })
        .collect()
}
