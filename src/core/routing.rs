//! Who a hold goes to: the owner its unresolved state calls for (DESIGN §2,
//! "Owners by the unresolved state"). Access failures go to the security owner,
//! schema and validation failures to the integration owner, a record the lookup
//! found but not as expected to the business owner, and a partial or ambiguous
//! effect past its observation window to the incident owner; anything else, and
//! any role the contract names no owner for, stays with the operation's owner.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;

use super::contract::Contract;
use super::detail::OperationDetail;
use super::lookup::{Finding, LookupSpec, Verdict, judge};
use super::model::{ActionKind, Attempt, AttemptKind, FailureMode, Observation, Operation, State};
use super::names::text_enum;

text_enum!(
    /// The role a hold was routed as.
    OwnerRole {
        Integration => "integration",
        Security => "security",
        Business => "business",
        Incident => "incident",
        Owner => "owner",
        Assigned => "assigned",
    }
);

/// The owner a hold goes to, the role it was routed as and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Routed {
    pub owner: String,
    pub role: OwnerRole,
    /// What decided it: `auth_denied`, `target_mismatch finding`,
    /// `UNKNOWN past its observation window`; for a fallback, also that the
    /// contract names no owner for the role asked.
    pub why: String,
}

impl fmt::Display for Routed {
    /// `sec-team — security (auth_denied)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} — {} ({})", self.owner, self.role, self.why)
    }
}

/// What a hold's state calls for, before the contract names who.
fn asked(
    op: &Operation,
    contract: Option<&Contract>,
    attempts: &[Attempt],
    observations: &[Observation],
    now: DateTime<Utc>,
) -> Option<(OwnerRole, String)> {
    if !op.state.is_held() {
        return None;
    }
    match op.failure_mode {
        Some(FailureMode::AuthDenied) => {
            return Some((OwnerRole::Security, "auth_denied".into()));
        }
        Some(FailureMode::ValidationFailed) => {
            return Some((OwnerRole::Integration, "validation_failed".into()));
        }
        _ => {}
    }
    if let Some(findings) = finding(op, contract, attempts, observations) {
        let role = if findings.contains(&Finding::WrongTenant) {
            OwnerRole::Security
        } else {
            OwnerRole::Business
        };
        let names: Vec<&str> = findings.iter().map(|f| f.name()).collect();
        return Some((role, format!("{} finding", names.join(", "))));
    }
    if matches!(op.state, State::Unknown | State::Partial)
        && window_end(op).is_some_and(|end| end <= now)
    {
        return Some((
            OwnerRole::Incident,
            format!("{} past its observation window", op.state),
        ));
    }
    None
}

/// The end of a hold's observation window: its next observation, else its
/// deadline (the instant the matrix calls the window, `matrix::assess`).
pub fn window_end(op: &Operation) -> Option<DateTime<Utc>> {
    op.next_observation_at.or(op.deadline)
}

/// What the newest observation after the last request found that differs from
/// what was expected (a lookup finding, `core::lookup::verdict`): `None` when it
/// found nothing, or found the record as expected.
fn finding(
    op: &Operation,
    contract: Option<&Contract>,
    attempts: &[Attempt],
    observations: &[Observation],
) -> Option<Vec<Finding>> {
    let since = attempts
        .iter()
        .filter(|a| a.kind == AttemptKind::Request && a.operation == op.id)
        .map(Attempt::last_instant)
        .max();
    let newest = observations
        .iter()
        .filter(|o| since.is_none_or(|s| o.observed_at > s))
        .max_by_key(|o| o.observed_at)?;
    let lag = contract
        .and_then(|c| c.status_lookup.spec())
        .map_or(0, LookupSpec::lag_seconds);
    match judge(newest, since, lag) {
        Verdict::Findings { findings } => Some(findings),
        _ => None,
    }
}

/// The contract's owner for `role`, if it names one.
fn named(contract: Option<&Contract>, role: OwnerRole) -> Option<&str> {
    let owners = contract?.owners.as_ref()?;
    match role {
        OwnerRole::Integration => owners.integration.as_deref(),
        OwnerRole::Security => owners.security.as_deref(),
        OwnerRole::Business => owners.business.as_deref(),
        OwnerRole::Incident => owners.incident.as_deref(),
        OwnerRole::Owner | OwnerRole::Assigned => None,
    }
}

/// Routes one operation at `now`. `assigned`: a reviewer assigned its owner
/// (`assign`), which is a person's decision and stands above the routing.
pub fn route(
    op: &Operation,
    contract: Option<&Contract>,
    attempts: &[Attempt],
    observations: &[Observation],
    assigned: bool,
    now: DateTime<Utc>,
) -> Routed {
    let own = |why: String| Routed {
        owner: op.owner.clone(),
        role: OwnerRole::Owner,
        why,
    };
    if assigned {
        return Routed {
            owner: op.owner.clone(),
            role: OwnerRole::Assigned,
            why: "assigned by a reviewer".into(),
        };
    }
    match asked(op, contract, attempts, observations, now) {
        None if op.state.is_held() => own(format!("{} with nothing to route by", op.state)),
        None => own(format!("{} is not held", op.state)),
        Some((role, why)) => match named(contract, role) {
            Some(owner) => Routed {
                owner: owner.to_owned(),
                role,
                why,
            },
            None => own(format!("{why}; the contract names no {role} owner")),
        },
    }
}

/// Routes an operation's whole detail at `now`.
pub fn of(detail: &OperationDetail, now: DateTime<Utc>) -> Routed {
    let assign = ActionKind::Assign.as_str();
    route(
        &detail.row.operation,
        detail.contract.as_ref(),
        &detail.attempts,
        &detail.observations,
        detail.audit.iter().any(|r| r.draft.action == assign),
        now,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::contract::{IdempotencyContract, Owners};
    use crate::core::lookup::StatusLookup;
    use crate::core::model::{Matches, Outcome, Phase};
    use chrono::{Duration, TimeZone};

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 9, 5, 12, 0, 0).unwrap()
    }

    fn op(state: State, mode: Option<FailureMode>) -> Operation {
        let mut op = Operation::bare("op-1", state, now() - Duration::hours(1));
        op.failure_mode = mode;
        op.next_observation_at = Some(now() + Duration::minutes(5));
        op
    }

    fn contract(owners: Option<Owners>) -> Contract {
        Contract {
            tool: "payments".into(),
            version: "v1".into(),
            action: "refund".into(),
            method: "POST".into(),
            idempotency: IdempotencyContract {
                supported: true,
                scope: None,
                retention_hours: None,
            },
            status_lookup: StatusLookup::from(true),
            retryable: Vec::new(),
            compensation: None,
            owner: "team:payments".into(),
            max_attempts: 3,
            budget_seconds: 120,
            path: None,
            response: None,
            owners,
            domain_review: None,
            inventory: Default::default(),
            circuit: None,
        }
    }

    fn every_owner() -> Contract {
        contract(Some(Owners {
            integration: Some("team:integrations".into()),
            security: Some("team:security".into()),
            business: Some("team:ledger".into()),
            incident: Some("team:incident".into()),
        }))
    }

    fn found(matches: Matches, effects: u32) -> Observation {
        let mut o = Observation::bare("op-1", now() - Duration::minutes(1), true);
        o.matches = Some(matches);
        o.effect_count = Some(effects);
        o
    }

    fn matching() -> Matches {
        Matches {
            target: Some(true),
            payload_hash: Some(true),
            owner: Some(true),
            version: Some(true),
        }
    }

    fn routed(op: &Operation, c: &Contract, obs: &[Observation]) -> (String, OwnerRole, String) {
        let r = route(op, Some(c), &[], obs, false, now());
        (r.owner, r.role, r.why)
    }

    #[test]
    fn auth_denied_goes_to_security() {
        let (owner, role, why) = routed(
            &op(State::Blocked, Some(FailureMode::AuthDenied)),
            &every_owner(),
            &[],
        );
        assert_eq!(
            (owner.as_str(), role),
            ("team:security", OwnerRole::Security)
        );
        assert_eq!(why, "auth_denied");
    }

    #[test]
    fn a_validation_failure_goes_to_integration() {
        let (owner, role, _) = routed(
            &op(State::Blocked, Some(FailureMode::ValidationFailed)),
            &every_owner(),
            &[],
        );
        assert_eq!(
            (owner.as_str(), role),
            ("team:integrations", OwnerRole::Integration)
        );
    }

    #[test]
    fn a_record_found_but_not_as_expected_goes_to_business() {
        let mut other = matching();
        other.payload_hash = Some(false);
        let held = op(State::Unknown, Some(FailureMode::TimeoutUnknown));
        let (owner, role, why) = routed(&held, &every_owner(), &[found(other, 1)]);
        assert_eq!((owner.as_str(), role), ("team:ledger", OwnerRole::Business));
        assert_eq!(why, "payload_mismatch finding");
        let (_, role, why) = routed(&held, &every_owner(), &[found(matching(), 2)]);
        assert_eq!(role, OwnerRole::Business);
        assert_eq!(why, "duplicate_effect finding");
        // Found as expected: nothing disputed, the operation's own owner.
        let (owner, role, _) = routed(&held, &every_owner(), &[found(matching(), 1)]);
        assert_eq!((owner.as_str(), role), ("team:payments", OwnerRole::Owner));
    }

    #[test]
    fn another_tenants_record_is_an_access_matter() {
        let mut other = matching();
        other.owner = Some(false);
        let held = op(State::Unknown, Some(FailureMode::TimeoutUnknown));
        let (owner, role, _) = routed(&held, &every_owner(), &[found(other, 1)]);
        assert_eq!(
            (owner.as_str(), role),
            ("team:security", OwnerRole::Security)
        );
    }

    #[test]
    fn a_finding_before_the_last_request_is_not_the_current_dispute() {
        let mut other = matching();
        other.target = Some(false);
        let held = op(State::Unknown, Some(FailureMode::TimeoutUnknown));
        let mut request =
            Attempt::bare_request("A1", "op-1", 1, Phase::RequestSent, Outcome::Timeout);
        request.started_at = now() - Duration::seconds(30);
        let r = route(
            &held,
            Some(&every_owner()),
            &[request],
            &[found(other, 1)],
            false,
            now(),
        );
        assert_eq!(r.role, OwnerRole::Owner);
    }

    #[test]
    fn partial_and_unknown_past_their_window_go_to_incident() {
        for state in [State::Unknown, State::Partial] {
            let mut held = op(state, Some(FailureMode::TimeoutUnknown));
            let (_, role, _) = routed(&held, &every_owner(), &[]);
            assert_eq!(role, OwnerRole::Owner, "{state} inside its window");
            held.next_observation_at = Some(now() - Duration::minutes(1));
            let (owner, role, why) = routed(&held, &every_owner(), &[]);
            assert_eq!(
                (owner.as_str(), role),
                ("team:incident", OwnerRole::Incident)
            );
            assert_eq!(why, format!("{state} past its observation window"));
            // No observation scheduled: the deadline ends the window.
            held.next_observation_at = None;
            held.deadline = Some(now() - Duration::minutes(1));
            assert_eq!(routed(&held, &every_owner(), &[]).1, OwnerRole::Incident);
            held.deadline = None;
            assert_eq!(routed(&held, &every_owner(), &[]).1, OwnerRole::Owner);
        }
        // A BLOCKED hold past its window is not an ambiguous effect.
        let mut blocked = op(State::Blocked, None);
        blocked.next_observation_at = Some(now() - Duration::minutes(1));
        assert_eq!(routed(&blocked, &every_owner(), &[]).1, OwnerRole::Owner);
    }

    #[test]
    fn a_role_the_contract_names_no_owner_for_falls_back_to_the_operations_owner() {
        let held = op(State::Blocked, Some(FailureMode::AuthDenied));
        for c in [
            contract(None),
            contract(Some(Owners {
                integration: Some("team:integrations".into()),
                ..Owners::default()
            })),
        ] {
            let (owner, role, why) = routed(&held, &c, &[]);
            assert_eq!((owner.as_str(), role), ("team:payments", OwnerRole::Owner));
            assert_eq!(why, "auth_denied; the contract names no security owner");
        }
        // No contract at all.
        let r = route(&held, None, &[], &[], false, now());
        assert_eq!(
            (r.owner.as_str(), r.role),
            ("team:payments", OwnerRole::Owner)
        );
    }

    #[test]
    fn other_holds_and_settled_operations_stay_with_their_owner() {
        let held = op(State::Unknown, Some(FailureMode::TimeoutUnknown));
        let (_, role, why) = routed(&held, &every_owner(), &[]);
        assert_eq!(role, OwnerRole::Owner);
        assert_eq!(why, "UNKNOWN with nothing to route by");
        let done = op(State::Failed, Some(FailureMode::AuthDenied));
        let (_, role, why) = routed(&done, &every_owner(), &[]);
        assert_eq!(role, OwnerRole::Owner);
        assert_eq!(why, "FAILED is not held");
    }

    #[test]
    fn an_assignment_stands_above_the_routing() {
        let mut held = op(State::Blocked, Some(FailureMode::AuthDenied));
        held.owner = "rev:maya".into();
        let r = route(&held, Some(&every_owner()), &[], &[], true, now());
        assert_eq!(
            (r.owner.as_str(), r.role),
            ("rev:maya", OwnerRole::Assigned)
        );
        assert_eq!(
            r.to_string(),
            "rev:maya — assigned (assigned by a reviewer)"
        );
    }
}
