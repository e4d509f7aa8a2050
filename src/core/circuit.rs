//! A circuit per tool (DESIGN §9.5): when the tool's recent attempts cross its
//! contract's failure threshold the circuit opens, and no sender sends to the
//! tool until a half-open probe succeeds or an owner closes it by hand. The
//! rules here are pure: which attempt counts as a failure, when a circuit
//! opens, what a sender may do, what a probe's outcome does, who may close it.
//! Every change is a row of the one audit chain under [`CIRCUIT_LEDGER`], so
//! `audit verify` compares the stored circuits with it.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;

use super::audit::AuditDraft;
use super::autonomy::owner_role;
use super::clock::human_instant;
use super::contract::CircuitConfig;
use super::ids::ledger_id;
use super::model::{Attempt, Outcome, Role, State};
use super::names::text_enum;
use super::refusal::Refusal;
use super::rules::Rationale;
use super::rules::actor::Actor;

/// The audit rows of circuit changes carry this in their `operation` column.
pub const CIRCUIT_LEDGER: &str = "holdfast:circuits";
/// The action name of a circuit change in the audit log.
pub const CIRCUIT_ACTION: &str = "circuit";
/// What a write held by an open circuit is held for: the start of its reason.
pub const CIRCUIT_OPEN: &str = "circuit open";

text_enum!(
    /// Where a tool's circuit stands.
    Position {
        Closed => "closed",
        Open => "open",
        HalfOpen => "half-open",
    }
);

/// One tool's circuit as stored: where it stands, since when, why, and the
/// probe let through while half-open. A tool without one is closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Circuit {
    pub tool: String,
    pub position: Position,
    pub since: DateTime<Utc>,
    /// Why it moved there, in words (the counts that opened it).
    pub reason: String,
    /// How many failures within the window opened it (0 once closed).
    pub failures: u32,
    /// The operation sent as the probe while half-open.
    pub probe: Option<String>,
    /// Who moved it: the sender that saw the failures, or the owner.
    pub by: String,
}

/// Why an attempt counts against its tool's circuit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Failure {
    /// The provider answered 5xx.
    ServerError,
    /// No answer in time.
    Timeout,
    /// The attempt left its operation UNKNOWN.
    Unknown,
}

impl Failure {
    pub fn as_str(self) -> &'static str {
        match self {
            Failure::ServerError => "5xx",
            Failure::Timeout => "timeout",
            Failure::Unknown => "unknown",
        }
    }

    pub fn parse(text: &str) -> Option<Failure> {
        [Failure::ServerError, Failure::Timeout, Failure::Unknown]
            .into_iter()
            .find(|f| f.as_str() == text)
    }
}

/// Whether `attempt`, which left its operation in `left`, counts as a failure
/// of its tool: a 5xx answer, a timeout, or an UNKNOWN outcome. A refusal of
/// the call (4xx, invalid parameters) is the caller's failure, not the tool's.
pub fn failure(attempt: &Attempt, left: State) -> Option<Failure> {
    if attempt.http_status.is_some_and(|s| (500..600).contains(&s)) {
        Some(Failure::ServerError)
    } else if attempt.outcome == Outcome::Timeout {
        Some(Failure::Timeout)
    } else if left == State::Unknown {
        Some(Failure::Unknown)
    } else {
        None
    }
}

/// A tool's failures within its window, by kind, as the store counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Failures {
    pub server_errors: u32,
    pub timeouts: u32,
    pub unknowns: u32,
}

impl Failures {
    pub fn total(&self) -> u32 {
        self.server_errors + self.timeouts + self.unknowns
    }
}

/// What a sender may do with a call of a tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admit {
    /// Closed (or no circuit): send.
    Send,
    /// Open long enough: send this one call as the probe, once the move to
    /// half-open ([`probe`]) is stored.
    Probe,
    /// Do not send: why, for the hold's reason.
    Hold(String),
}

/// When the window of failures counted at `now` starts.
pub fn window_start(config: &CircuitConfig, now: DateTime<Utc>) -> DateTime<Utc> {
    now - Duration::seconds(i64::from(config.window_seconds))
}

/// What a sender may do with a call of a tool whose contract says `config`,
/// its circuit `current` (none: closed), at `now`. A half-open circuit whose
/// probe has not reported for `probe_after_seconds` lets another probe through.
pub fn admit(config: &CircuitConfig, current: Option<&Circuit>, now: DateTime<Utc>) -> Admit {
    let Some(c) = current else {
        return Admit::Send;
    };
    let probe_at = c.since + Duration::seconds(i64::from(config.probe_after_seconds));
    match c.position {
        Position::Closed => Admit::Send,
        _ if now >= probe_at => Admit::Probe,
        Position::Open => Admit::Hold(format!(
            "{CIRCUIT_OPEN}: tool {} has been open since {} ({}); a probe is let through from {}",
            c.tool,
            human_instant(c.since),
            c.reason,
            human_instant(probe_at)
        )),
        Position::HalfOpen => Admit::Hold(format!(
            "{CIRCUIT_OPEN}: tool {} is half-open, its probe {} has not reported yet",
            c.tool,
            c.probe.as_deref().unwrap_or("-")
        )),
    }
}

/// A change of one tool's circuit: the position it must still be at when
/// stored (another sender may have moved it), the circuit after, and its
/// audit row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CircuitChange {
    pub from: Position,
    pub to: Circuit,
    #[serde(skip)]
    pub audit: AuditDraft,
}

impl CircuitChange {
    fn new(
        from: Position,
        to: Circuit,
        role: Role,
        rationale: Option<String>,
        at: DateTime<Utc>,
    ) -> CircuitChange {
        let audit = AuditDraft {
            operation: ledger_id(CIRCUIT_LEDGER),
            action: CIRCUIT_ACTION.to_owned(),
            from: None,
            to: None,
            by: to.by.clone(),
            role,
            policy: None,
            on_behalf_of: None,
            rationale: rationale.or_else(|| Some(to.reason.clone())),
            evidence: evidence(&to, from),
            at,
        };
        CircuitChange { from, to, audit }
    }
}

/// The evidence entries of a change's audit row, which verify compares with
/// the stored circuit.
pub fn evidence(to: &Circuit, from: Position) -> Vec<String> {
    let mut entries = vec![
        format!("tool:{}", to.tool),
        format!("from:{from}"),
        format!("position:{}", to.position),
        format!("failures:{}", to.failures),
    ];
    if let Some(probe) = &to.probe {
        entries.push(format!("probe:{probe}"));
    }
    entries
}

/// The position of `current` (closed when there is none).
pub fn position_of(current: Option<&Circuit>) -> Position {
    current.map_or(Position::Closed, |c| c.position)
}

/// The move a sender `by` makes before sending `operation` as the probe of
/// `current`: half-open, the probe named.
pub fn probe(current: &Circuit, operation: &str, by: &str, now: DateTime<Utc>) -> CircuitChange {
    let to = Circuit {
        tool: current.tool.clone(),
        position: Position::HalfOpen,
        since: now,
        reason: format!(
            "half-open: operation {operation} is let through as the probe (open since {})",
            human_instant(current.since)
        ),
        failures: current.failures,
        probe: Some(operation.to_owned()),
        by: by.to_owned(),
    };
    CircuitChange::new(current.position, to, Role::System, None, now)
}

/// One attempt of a tool as a sender saw it end: its operation, whether it
/// failed ([`failure`]), and the tool's failures within the window counted
/// after it (this one included).
#[derive(Debug, Clone, Copy)]
pub struct Ended<'a> {
    pub operation: &'a str,
    pub failed: Option<Failure>,
    pub recent: Failures,
}

/// What an attempt of `tool`, which sender `by` saw end at `now`, does to the
/// circuit `current`: the probe's outcome closes or reopens a half-open
/// circuit; a failure that brings the window's count to the threshold opens
/// a closed one. `None`: nothing moves.
pub fn after_attempt(
    config: &CircuitConfig,
    tool: &str,
    current: Option<&Circuit>,
    ended: Ended<'_>,
    by: &str,
    now: DateTime<Utc>,
) -> Option<CircuitChange> {
    let Ended {
        operation,
        failed,
        recent,
    } = ended;
    let from = position_of(current);
    let to = |position, reason: String, failures| Circuit {
        tool: tool.to_owned(),
        position,
        since: now,
        reason,
        failures,
        probe: None,
        by: by.to_owned(),
    };
    let change = |to| Some(CircuitChange::new(from, to, Role::System, None, now));
    match current {
        Some(c) if c.position == Position::HalfOpen && c.probe.as_deref() == Some(operation) => {
            match failed {
                Some(f) => change(to(
                    Position::Open,
                    format!("the probe {operation} failed ({}): open again", f.as_str()),
                    c.failures,
                )),
                None => change(to(
                    Position::Closed,
                    format!("the probe {operation} succeeded: closed"),
                    0,
                )),
            }
        }
        Some(c) if c.position != Position::Closed => None,
        _ => {
            failed?;
            (recent.total() >= config.failures).then_some(())?;
            change(to(
                Position::Open,
                format!(
                    "{} failures within {} s (5xx {}, timeouts {}, unknown {}) reached the threshold of {}",
                    recent.total(),
                    config.window_seconds,
                    recent.server_errors,
                    recent.timeouts,
                    recent.unknowns,
                    config.failures
                ),
                recent.total(),
            ))
        }
    }
}

/// An owner's closing of `tool`'s circuit by hand (`holdfast circuits TOOL
/// --close`): an owner's decision on every tenant the tool's operations
/// belong to, as an autonomy change is (G6). `Ok(None)` when it is closed.
pub fn decide_close(
    actor: &Actor,
    tool: &str,
    current: Option<&Circuit>,
    tenants: &[String],
    rationale: &Rationale,
    now: DateTime<Utc>,
) -> Result<Option<CircuitChange>, Refusal> {
    let role = owner_role(actor, tool, tenants, "closing a circuit")?;
    let from = position_of(current);
    if from == Position::Closed {
        return Ok(None);
    }
    let to = Circuit {
        tool: tool.to_owned(),
        position: Position::Closed,
        since: now,
        reason: format!("closed by hand by {}", actor.identity),
        failures: 0,
        probe: None,
        by: actor.identity.clone(),
    };
    let mut change = CircuitChange::new(from, to, role, Some(rationale.as_str().to_owned()), now);
    change.audit.policy.clone_from(&actor.policy);
    Ok(Some(change))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::clock::parse_instant;
    use crate::core::model::Phase;

    const CONFIG: CircuitConfig = CircuitConfig {
        failures: 3,
        window_seconds: 60,
        probe_after_seconds: 30,
    };

    fn at(s: &str) -> DateTime<Utc> {
        parse_instant(s).unwrap()
    }

    fn attempt(status: Option<u16>, outcome: Outcome) -> Attempt {
        Attempt {
            http_status: status,
            ..Attempt::bare_request("A1", "F1", 1, Phase::ResponseReceived, outcome)
        }
    }

    fn after(
        current: Option<&Circuit>,
        operation: &str,
        failed: Option<Failure>,
        recent: Failures,
        now: DateTime<Utc>,
    ) -> Option<CircuitChange> {
        let ended = Ended {
            operation,
            failed,
            recent,
        };
        after_attempt(&CONFIG, "T", current, ended, "gw", now)
    }

    fn counts(n: u32) -> Failures {
        Failures {
            server_errors: n,
            ..Failures::default()
        }
    }

    #[test]
    fn failures_are_5xx_timeouts_and_unknown_outcomes_only() {
        let e503 = attempt(Some(503), Outcome::HttpError);
        assert_eq!(failure(&e503, State::Failed), Some(Failure::ServerError));
        let timeout = attempt(None, Outcome::Timeout);
        assert_eq!(failure(&timeout, State::Sent), Some(Failure::Timeout));
        let reset = attempt(None, Outcome::ConnectionReset);
        assert_eq!(failure(&reset, State::Unknown), Some(Failure::Unknown));
        assert_eq!(failure(&reset, State::Failed), None);
        let e422 = attempt(Some(422), Outcome::Rejected);
        assert_eq!(failure(&e422, State::Failed), None);
        assert_eq!(
            failure(&attempt(Some(200), Outcome::Ok), State::Succeeded),
            None
        );
    }

    #[test]
    fn a_closed_circuit_opens_at_the_threshold_not_before() {
        let now = at("2026-09-05T10:00:00Z");
        let f = Some(Failure::ServerError);
        assert_eq!(after(None, "F1", f, counts(2), now), None);
        let open = after(None, "F1", f, counts(3), now).unwrap();
        assert_eq!(open.from, Position::Closed);
        assert_eq!(open.to.position, Position::Open);
        assert_eq!(open.to.failures, 3);
        assert!(open.audit.evidence.contains(&"position:open".to_owned()));
        // A success never opens it, whatever the window holds.
        assert_eq!(after(None, "F1", None, counts(9), now), None);
    }

    #[test]
    fn an_open_circuit_holds_then_lets_one_probe_through() {
        let opened = at("2026-09-05T10:00:00Z");
        let open = after(None, "F1", Some(Failure::Timeout), counts(3), opened)
            .unwrap()
            .to;
        let early = opened + Duration::seconds(29);
        assert!(
            matches!(admit(&CONFIG, Some(&open), early), Admit::Hold(why) if why.starts_with(CIRCUIT_OPEN))
        );
        let late = opened + Duration::seconds(30);
        assert_eq!(admit(&CONFIG, Some(&open), late), Admit::Probe);
        let half = probe(&open, "F2", "gw", late).to;
        assert_eq!(half.position, Position::HalfOpen);
        // A second call while the probe is out is held.
        assert!(matches!(admit(&CONFIG, Some(&half), late), Admit::Hold(_)));
        // Another call's failure does not move it; the probe's outcome does.
        assert_eq!(
            after(Some(&half), "F3", Some(Failure::Timeout), counts(9), late),
            None
        );
        let closed = after(Some(&half), "F2", None, counts(0), late).unwrap();
        assert_eq!(closed.to.position, Position::Closed);
        let reopened = after(
            Some(&half),
            "F2",
            Some(Failure::ServerError),
            counts(0),
            late,
        )
        .unwrap();
        assert_eq!(reopened.to.position, Position::Open);
        assert_eq!(reopened.from, Position::HalfOpen);
    }

    #[test]
    fn closing_by_hand_is_an_owners_decision() {
        let now = at("2026-09-05T10:00:00Z");
        let open = after(None, "F1", Some(Failure::Timeout), counts(3), now)
            .unwrap()
            .to;
        let rationale = Rationale::parse("the provider recovered").unwrap();
        let local = Actor::local("me", None);
        let change = decide_close(&local, "T", Some(&open), &[], &rationale, now)
            .unwrap()
            .unwrap();
        assert_eq!(change.to.position, Position::Closed);
        assert_eq!(change.audit.role, Role::Local);
        assert_eq!(
            decide_close(&local, "T", None, &[], &rationale, now).unwrap(),
            None
        );
        let reviewer = Actor {
            grants: Some(vec![crate::core::model::Grant {
                identity: "rev:maya".into(),
                role: Role::Reviewer,
                tenant: "acme".into(),
                granted_by: "root".into(),
                granted_at: now,
            }]),
            ..Actor::local("rev:maya", None)
        };
        let refused = decide_close(
            &reviewer,
            "T",
            Some(&open),
            &["acme".into()],
            &rationale,
            now,
        )
        .unwrap_err();
        assert_eq!(refused.rule, crate::core::refusal::Rule::G6);
    }
}
