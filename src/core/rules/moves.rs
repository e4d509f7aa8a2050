//! Every state move, whatever the door it comes through (a file, a worker's
//! completion, a receiver): either a reviewer's decision, which only [`decide`]
//! may allow, or a system move, which the records themselves must prove. A line's
//! own `by` and `role` never decide which it is: they are what the source claims.
//!
//! [`decide`]: super::decide

use crate::core::ids::Sha256;
use crate::core::model::{Approval, Attempt, AttemptKind, Outcome, Phase, State, TransitionRecord};
use crate::core::refusal::{Refusal, Rule, refuse};

use super::action::Action;
use super::approval::approval_binds;

/// What kind of move `from → to` is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Move {
    /// A reviewer's or owner's decision: the review action that makes it.
    Decision(Action),
    /// A move the system makes, provable from the records.
    System,
}

/// The kind of move a reported transition is. Every move out of a held state,
/// except into another held state (BLOCKED), is a decision; so is UNKNOWN →
/// APPROVED (an authorized retry).
pub fn classify(t: &TransitionRecord) -> Move {
    use State::*;
    let action = match (t.from, t.to) {
        (Partial, Succeeded) => Action::MarkResumed,
        (Unknown, Succeeded | Failed | Partial) | (Blocked, Failed) => Action::Resolve { to: t.to },
        (Unknown, Approved) => Action::AuthorizeRetry,
        (Partial, Compensated) => Action::MarkCompensated,
        (Blocked, Validated) => Action::Revalidate,
        (Unknown | Partial | Blocked, Accepted) => Action::Accept {
            repair_ref: repair_reference(t),
        },
        _ => return Move::System,
    };
    Move::Decision(action)
}

/// The manual-repair reference an acceptance reports: its `repair:` evidence
/// entry, else its reason.
fn repair_reference(t: &TransitionRecord) -> String {
    t.evidence
        .iter()
        .find_map(|e| e.strip_prefix("repair:"))
        .map(str::to_owned)
        .or_else(|| t.reason.clone())
        .unwrap_or_default()
}

/// What the records say of an operation when one of its system moves is proved.
pub struct Record<'a> {
    pub payload_hash: &'a Sha256,
    pub approval: Option<&'a Approval>,
    /// Its attempts recorded so far (stored and reported before the move), in
    /// any order.
    pub attempts: &'a [Attempt],
}

/// Whether the records prove the system move `t`: SENT/ACKNOWLEDGED into
/// SUCCEEDED, FAILED or ACKNOWLEDGED needs the request attempt that shows it (one
/// the line cites, else the latest request before the move); VALIDATED → APPROVED
/// needs an approval bound to the operation's payload and valid at that instant
/// (G11). Moves into a held state and the other rows of the table need nothing
/// more than the table (G1): holding never loses evidence.
pub fn prove_system_move(record: &Record<'_>, t: &TransitionRecord) -> Result<(), Refusal> {
    use State::*;
    match (t.from, t.to) {
        (Validated, Approved) => approval_binds(record.approval, record.payload_hash, t.at)
            .map_err(|refusal| Refusal {
                rule: refusal.rule,
                reason: format!(
                    "VALIDATED → APPROVED needs the operation's approval of this exact call: {}",
                    refusal.reason
                ),
            }),
        (Sent | Acknowledged, Succeeded | Failed | Acknowledged) => {
            let Some(attempt) = showing_attempt(record.attempts, t) else {
                return refuse(
                    Rule::G1,
                    format!(
                        "{} → {} is a system move the records must prove: no request attempt \
                         of {} is recorded or cited before {}",
                        t.from,
                        t.to,
                        t.operation,
                        crate::core::clock::human_instant(t.at)
                    ),
                );
            };
            if shows(attempt, t.to) {
                Ok(())
            } else {
                refuse(
                    Rule::G1,
                    format!(
                        "{} → {} is a system move the records must prove, and attempt {} \
                         ({}, {}) does not show it: {}",
                        t.from,
                        t.to,
                        attempt.id,
                        attempt.phase,
                        attempt.outcome,
                        needs(t.to)
                    ),
                )
            }
        }
        _ => Ok(()),
    }
}

/// The request attempt that must show `t`: the last cited one, else the latest
/// request started no later than the move.
fn showing_attempt<'a>(attempts: &'a [Attempt], t: &TransitionRecord) -> Option<&'a Attempt> {
    let requests = || attempts.iter().filter(|a| a.kind == AttemptKind::Request);
    let cited = requests()
        .filter(|a| t.evidence.contains(&a.id))
        .max_by_key(|a| (a.seq, a.started_at));
    cited.or_else(|| {
        requests()
            .filter(|a| a.started_at <= t.at)
            .max_by_key(|a| (a.seq, a.started_at))
    })
}

/// Whether `attempt` shows that the operation went into `to`.
fn shows(attempt: &Attempt, to: State) -> bool {
    match to {
        State::Succeeded => attempt.outcome == Outcome::Ok,
        State::Acknowledged => {
            attempt.outcome == Outcome::Ok || attempt.phase == Phase::Acknowledged
        }
        // Refused by the provider, or never sent; a timeout or reset after the
        // request may have crossed leaves the outcome unknown, not failed.
        State::Failed => match attempt.outcome {
            Outcome::HttpError | Outcome::Rejected | Outcome::DnsFailure => true,
            Outcome::Timeout | Outcome::ConnectionReset => {
                !attempt.phase.may_have_crossed_boundary()
            }
            Outcome::Ok | Outcome::InvalidResponse => false,
        },
        _ => true,
    }
}

/// What a move into `to` needs of its attempt, in words.
fn needs(to: State) -> &'static str {
    match to {
        State::Succeeded => "SUCCEEDED needs a request that ended `ok`",
        State::Acknowledged => "ACKNOWLEDGED needs a request the provider acknowledged",
        State::Failed => {
            "FAILED needs a request the provider refused or that was never sent; a timeout \
             or reset after the request may have crossed is UNKNOWN"
        }
        _ => "",
    }
}

/// The reason an imported move is recorded with: the line's own reason, and who
/// the source says made it, as what the source claims. A line that names its
/// `author` (the identity ingesting it) as a system mover claims nothing beyond
/// the row itself (the OpenTelemetry door writes its lines so), and keeps only
/// its reason.
pub fn reported_reason(t: &TransitionRecord, author: &str) -> String {
    let reason = t.reason.as_deref().map(str::trim).filter(|r| !r.is_empty());
    if t.by == author && matches!(t.role, None | Some(crate::core::model::Role::System)) {
        return reason.unwrap_or("without a reason").to_owned();
    }
    let role = t.role.map(|r| format!(" as {r}")).unwrap_or_default();
    match reason {
        Some(reason) => format!("{reason} (the source reports {}{role})", t.by),
        None => format!("(the source reports {}{role}, without a reason)", t.by),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::ids::OperationId;

    fn transition(from: State, to: State, evidence: &[&str]) -> TransitionRecord {
        TransitionRecord {
            operation: OperationId::parse("F1").unwrap(),
            from,
            to,
            by: "rev:forged".into(),
            role: Some(crate::core::model::Role::Reviewer),
            at: "2026-09-05T10:00:00Z".parse().unwrap(),
            reason: None,
            evidence: evidence.iter().map(|e| (*e).to_owned()).collect(),
        }
    }

    fn attempt(id: &str, phase: Phase, outcome: Outcome) -> Attempt {
        Attempt::bare_request(id, "F1", 1, phase, outcome)
    }

    fn hash() -> Sha256 {
        Sha256::of(b"payload")
    }

    #[test]
    fn moves_out_of_a_hold_are_decisions_whatever_the_line_claims() {
        use State::*;
        for (from, to) in [
            (Unknown, Succeeded),
            (Unknown, Failed),
            (Unknown, Partial),
            (Unknown, Approved),
            (Partial, Succeeded),
            (Partial, Compensated),
            (Blocked, Validated),
            (Blocked, Failed),
            (Unknown, Accepted),
            (Partial, Accepted),
            (Blocked, Accepted),
        ] {
            let mut t = transition(from, to, &[]);
            t.role = Some(crate::core::model::Role::System);
            assert!(
                matches!(classify(&t), Move::Decision(_)),
                "{from} → {to} must be a decision"
            );
        }
        for (from, to) in [(Sent, Unknown), (Approved, Sent), (Unknown, Blocked)] {
            assert_eq!(classify(&transition(from, to, &[])), Move::System);
        }
    }

    #[test]
    fn a_success_needs_the_attempt_that_shows_it() {
        let hash = hash();
        let t = transition(State::Sent, State::Succeeded, &[]);
        let none = Record {
            payload_hash: &hash,
            approval: None,
            attempts: &[],
        };
        assert_eq!(prove_system_move(&none, &t).unwrap_err().rule, Rule::G1);
        let timeout = [attempt("A1", Phase::RequestSent, Outcome::Timeout)];
        let timed_out = Record {
            attempts: &timeout,
            ..none
        };
        assert!(prove_system_move(&timed_out, &t).is_err());
        let ok = [attempt("A1", Phase::ResponseReceived, Outcome::Ok)];
        let answered = Record {
            attempts: &ok,
            ..none
        };
        assert!(prove_system_move(&answered, &t).is_ok());
    }

    #[test]
    fn a_timeout_after_the_boundary_never_proves_a_failure() {
        let hash = hash();
        let t = transition(State::Sent, State::Failed, &["A1"]);
        let crossed = [attempt("A1", Phase::RequestSent, Outcome::Timeout)];
        let record = Record {
            payload_hash: &hash,
            approval: None,
            attempts: &crossed,
        };
        assert!(prove_system_move(&record, &t).is_err());
        let unsent = [attempt("A1", Phase::Dns, Outcome::DnsFailure)];
        let record = Record {
            attempts: &unsent,
            ..record
        };
        assert!(prove_system_move(&record, &t).is_ok());
    }

    #[test]
    fn approval_needs_an_approval_of_this_payload() {
        let hash = hash();
        let t = transition(State::Validated, State::Approved, &[]);
        let none = Record {
            payload_hash: &hash,
            approval: None,
            attempts: &[],
        };
        assert_eq!(prove_system_move(&none, &t).unwrap_err().rule, Rule::G11);
        let approval = Approval {
            by: "rev:maya".into(),
            policy: "RP03".into(),
            at: Some("2026-09-05T09:00:00Z".parse().unwrap()),
            payload_hash: Some(hash.clone()),
            expires_at: Some("2026-09-05T11:00:00Z".parse().unwrap()),
        };
        let bound = Record {
            approval: Some(&approval),
            ..none
        };
        assert!(prove_system_move(&bound, &t).is_ok());
    }

    #[test]
    fn the_claim_is_kept_as_a_claim() {
        let mut t = transition(State::Unknown, State::Failed, &[]);
        t.reason = Some("provider says no".into());
        assert_eq!(
            reported_reason(&t, "svc:ingest"),
            "provider says no (the source reports rev:forged as reviewer)"
        );
        // The ingesting identity claiming a move as the system is the row itself.
        t.by = "svc:otlp".into();
        t.role = Some(crate::core::model::Role::System);
        assert_eq!(reported_reason(&t, "svc:otlp"), "provider says no");
        // Claiming a reviewer's role is still a claim, kept as one.
        t.role = Some(crate::core::model::Role::Reviewer);
        assert_eq!(
            reported_reason(&t, "svc:otlp"),
            "provider says no (the source reports svc:otlp as reviewer)"
        );
    }
}
