//! The work protocol's rules (DESIGN §9.2), pure: what counts as work, who holds a
//! lease on it and until when, whether a heartbeat, completion or release still
//! holds one (a lease that ran out is lost, G8; a generation no claim returned is
//! named as such, not as replaced), and the audit rows of each step.

use chrono::{DateTime, Duration, Utc};
use serde::Serialize;

use super::audit::AuditDraft;
use super::clock::{format_instant, human_instant};
use super::ids::OperationId;
use super::model::{Role, State};
use super::refusal::{Refusal, Rule};

/// The state of an operation a worker may execute: an authorized retry, and an
/// approved compensation or resume child, all wait in `APPROVED`.
pub const WORK_STATE: State = State::Approved;

/// The audit action of a claim.
pub const CLAIM: &str = "work-claim";
/// The audit action of a heartbeat that extended a lease.
pub const HEARTBEAT: &str = "work-heartbeat";
/// The audit action of a completion: the worker's records were taken.
pub const COMPLETE: &str = "work-complete";
/// The audit action of a lease given back unfinished.
pub const RELEASE: &str = "work-release";

/// The evidence entry naming the worker.
pub const WORKER: &str = "worker:";
/// The evidence entry naming the lease's generation (1 for the first claim of an
/// operation, one more for each claim after).
pub const GENERATION: &str = "lease:";
/// The evidence entry naming the lease's end.
pub const UNTIL: &str = "until:";

/// The longest lease a claim or heartbeat may ask for.
pub const MAX_LEASE_SECONDS: i64 = 86_400;

/// Whether an audit action is a step of the work protocol. Such rows change no
/// column of their operation, so they move no version.
pub fn is_work_action(action: &str) -> bool {
    matches!(action, CLAIM | HEARTBEAT | COMPLETE | RELEASE)
}

/// Where a lease stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LeaseStatus {
    /// A worker holds it until `expires_at` (after that it is lost).
    Held,
    /// The worker's records were taken.
    Completed,
    /// The worker gave the work back.
    Released,
}

impl LeaseStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            LeaseStatus::Held => "held",
            LeaseStatus::Completed => "completed",
            LeaseStatus::Released => "released",
        }
    }

    pub fn parse(text: &str) -> Option<LeaseStatus> {
        [
            LeaseStatus::Held,
            LeaseStatus::Completed,
            LeaseStatus::Released,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// One lease on one operation, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Lease {
    pub operation: OperationId,
    pub tenant: String,
    pub tool: String,
    pub worker: String,
    /// The identity that claimed it: on PostgreSQL the database login. Only it
    /// heartbeats, completes or releases the lease, whatever `worker` label
    /// another names.
    pub claimed_by: String,
    /// 1 for the first claim of this operation, one more for each claim after.
    pub generation: i64,
    pub claimed_at: DateTime<Utc>,
    pub expires_at: DateTime<Utc>,
    pub status: LeaseStatus,
}

impl Lease {
    /// Whether the lease keeps others from claiming the work at `now`.
    pub fn live(&self, now: DateTime<Utc>) -> bool {
        self.status == LeaseStatus::Held && self.expires_at > now
    }
}

/// What a worker says it holds: the operation, its own name and, when it kept
/// it, the generation its claim returned (a worker restarted under the same name
/// cannot then act on a lease a later claim of its own replaced).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Holder {
    pub operation: OperationId,
    pub worker: String,
    pub generation: Option<i64>,
}

/// Whether `holder`, acting as `by`, still holds `lease` at `now`: held, claimed
/// by `by` (the login, on PostgreSQL), by this worker, of this generation, not
/// run out. Anything else is refused with G8, as a stale version is: someone
/// else may be executing the work now.
pub fn check_holder(
    lease: Option<&Lease>,
    holder: &Holder,
    by: &str,
    now: DateTime<Utc>,
) -> Result<(), Refusal> {
    let id = &holder.operation;
    let refuse = |reason: String| {
        Err(Refusal {
            rule: Rule::G8,
            reason,
        })
    };
    let Some(lease) = lease else {
        return refuse(format!(
            "{id} was never claimed; claim it with `holdfast work claim` first"
        ));
    };
    if lease.claimed_by != by {
        return refuse(format!(
            "the lease on {id} (lease {}) was claimed by {}, not by {by}: only the identity that \
             claimed work heartbeats, completes or releases it, whatever worker name is given",
            lease.generation, lease.claimed_by
        ));
    }
    if lease.worker != holder.worker {
        return refuse(format!(
            "the lease on {id} is {}'s (lease {}), not {}'s: the work may be executing elsewhere; \
             the late worker's records are not taken",
            lease.worker, lease.generation, holder.worker
        ));
    }
    if let Some(generation) = holder.generation
        && !(1..=lease.generation).contains(&generation)
    {
        return refuse(format!(
            "lease {generation} on {id} never existed: its leases are numbered 1 to {} \
             (the latest claimed at {}); give the generation its claim printed",
            lease.generation,
            human_instant(lease.claimed_at)
        ));
    }
    if let Some(generation) = holder.generation
        && generation != lease.generation
    {
        return refuse(format!(
            "lease {generation} on {id} was replaced by lease {} (claimed again at {})",
            lease.generation,
            human_instant(lease.claimed_at)
        ));
    }
    match lease.status {
        LeaseStatus::Completed => refuse(format!(
            "lease {} on {id} is already completed; its records were taken once",
            lease.generation
        )),
        LeaseStatus::Released => refuse(format!(
            "lease {} on {id} was released; claim the work again",
            lease.generation
        )),
        LeaseStatus::Held if lease.expires_at <= now => refuse(format!(
            "lease {} on {id} ran out at {} (now {}): the work is claimable by others and \
             this worker lost it; claim it again",
            lease.generation,
            human_instant(lease.expires_at),
            human_instant(now)
        )),
        LeaseStatus::Held => Ok(()),
    }
}

/// The lease length asked for, checked: 1 second to [`MAX_LEASE_SECONDS`].
pub fn lease_length(seconds: i64) -> Result<Duration, String> {
    if (1..=MAX_LEASE_SECONDS).contains(&seconds) {
        Ok(Duration::seconds(seconds))
    } else {
        Err(format!(
            "a lease lasts 1 to {MAX_LEASE_SECONDS} seconds, not {seconds}"
        ))
    }
}

/// Who writes a step's audit row: the acting identity under the role that lets
/// it work on the tenant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Signer {
    pub by: String,
    pub role: Role,
    pub policy: Option<String>,
    pub on_behalf_of: Option<String>,
}

/// The audit row of one step of the protocol on `lease`'s operation.
pub fn draft(
    signer: &Signer,
    action: &str,
    lease: &Lease,
    at: DateTime<Utc>,
    extra: Vec<String>,
) -> AuditDraft {
    let mut evidence = vec![
        format!("{WORKER}{}", lease.worker),
        format!("{GENERATION}{}", lease.generation),
        format!("{UNTIL}{}", format_instant(lease.expires_at)),
    ];
    evidence.extend(extra);
    AuditDraft {
        operation: lease.operation.clone(),
        action: action.to_owned(),
        from: None,
        to: None,
        by: signer.by.clone(),
        role: signer.role,
        policy: signer.policy.clone(),
        on_behalf_of: signer.on_behalf_of.clone(),
        rationale: None,
        evidence,
        at,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        crate::core::clock::parse_instant(text).unwrap()
    }

    fn lease() -> Lease {
        Lease {
            operation: OperationId::parse("F09").unwrap(),
            tenant: "pinehaven".into(),
            tool: "T03".into(),
            worker: "w1".into(),
            claimed_by: "maya".into(),
            generation: 2,
            claimed_at: at("2026-09-05T10:00:00Z"),
            expires_at: at("2026-09-05T10:01:00Z"),
            status: LeaseStatus::Held,
        }
    }

    fn holder(worker: &str, generation: Option<i64>) -> Holder {
        Holder {
            operation: OperationId::parse("F09").unwrap(),
            worker: worker.into(),
            generation,
        }
    }

    #[test]
    fn only_the_live_holder_of_the_current_generation_holds_a_lease() {
        let l = lease();
        let inside = at("2026-09-05T10:00:30Z");
        assert!(check_holder(Some(&l), &holder("w1", None), "maya", inside).is_ok());
        assert!(check_holder(Some(&l), &holder("w1", Some(2)), "maya", inside).is_ok());
        for (who, generation, now) in [
            ("w2", None, inside),
            ("w1", Some(1), inside),
            ("w1", None, at("2026-09-05T10:01:00Z")),
        ] {
            let refused =
                check_holder(Some(&l), &holder(who, generation), "maya", now).unwrap_err();
            assert_eq!(refused.rule, Rule::G8, "{who} {generation:?} {now}");
        }
        assert!(check_holder(None, &holder("w1", None), "maya", inside).is_err());
        // A generation no claim ever returned is not a replaced one.
        for never in [3, 0, -1] {
            let refused =
                check_holder(Some(&l), &holder("w1", Some(never)), "maya", inside).unwrap_err();
            assert_eq!(refused.rule, Rule::G8);
            assert!(
                refused
                    .reason
                    .contains(&format!("lease {never} on F09 never existed")),
                "{refused:?}"
            );
        }
        let replaced = check_holder(Some(&l), &holder("w1", Some(1)), "maya", inside).unwrap_err();
        assert!(
            replaced.reason.contains("replaced by lease 2"),
            "{replaced:?}"
        );
        // Another identity naming the same worker and generation.
        let taken = check_holder(Some(&l), &holder("w1", Some(2)), "lee", inside).unwrap_err();
        assert_eq!(taken.rule, Rule::G8);
        assert!(
            taken.reason.contains("claimed by maya, not by lee"),
            "{taken:?}"
        );
        for status in [LeaseStatus::Completed, LeaseStatus::Released] {
            let done = Lease { status, ..lease() };
            assert!(check_holder(Some(&done), &holder("w1", None), "maya", inside).is_err());
        }
    }

    #[test]
    fn lease_lengths_are_bounded() {
        assert!(lease_length(0).is_err());
        assert!(lease_length(MAX_LEASE_SECONDS + 1).is_err());
        assert_eq!(lease_length(30).unwrap(), Duration::seconds(30));
    }
}
