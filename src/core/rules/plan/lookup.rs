//! What recording one lookup does to a hold, decided from the hold's records
//! alone: the attempt and observation it adds, what the answer proves, the next
//! lookup's time, and — when the deadline leaves none — routing to the owner.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::core::clock::human_instant;
use crate::core::detail::OperationDetail;
use crate::core::lookup::{LookupInput, Next, Verdict, jitter, judge, next_observation, records};
use crate::core::matrix;
use crate::core::model::{Attempt, AttemptKind, Observation};

/// The changes recording a lookup makes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct LookupEffect {
    pub attempt: Option<Attempt>,
    pub observation: Option<Observation>,
    /// What the answer proves, when one came.
    pub verdict: Option<Verdict>,
    pub next: Next,
    /// The next observation time to store: `None` clears the schedule.
    pub next_observation_at: Option<DateTime<Utc>>,
    /// A new owner, when the hold is routed to the contract's owner.
    pub new_owner: Option<String>,
    /// One line per consequence, in words.
    pub consequences: Vec<String>,
    /// Ids for the audit row.
    pub evidence: Vec<String>,
}

/// Plans recording `input` on the hold in `detail` at `now`.
pub(super) fn plan(
    detail: &OperationDetail,
    input: &LookupInput,
    now: DateTime<Utc>,
) -> LookupEffect {
    let op = &detail.row.operation;
    let assessment = matrix::assess_detail(detail, now);
    let mut effect = LookupEffect {
        attempt: None,
        observation: None,
        verdict: None,
        next: Next::Settled,
        next_observation_at: None,
        new_owner: None,
        consequences: Vec::new(),
        evidence: Vec::new(),
    };
    let call = match input {
        LookupInput::Exhausted => {
            effect.next = Next::Exhausted(match assessment.deadline {
                Some(d) => format!("the deadline {} has passed", human_instant(d)),
                None => "no lookup is left".into(),
            });
            route(detail, &mut effect);
            return effect;
        }
        LookupInput::Call(call) => call,
    };
    let seq = detail.attempts.iter().map(|a| a.seq).max().unwrap_or(0) + 1;
    let observation_id = format!("{}-O{}", op.id, detail.observations.len() + 1);
    let (attempt, observation) = records(call, &op.id, seq, &observation_id);
    let status = call
        .http_status
        .map_or_else(String::new, |s| format!(" HTTP {s},"));
    effect.consequences.push(format!(
        "records status query {} ({}{status} {} ms{})",
        attempt.id,
        call.outcome,
        call.duration_ms(),
        call.error_type
            .as_deref()
            .map_or_else(String::new, |e| format!(", {e}"))
    ));
    effect.evidence.push(attempt.id.clone());
    let lag = detail
        .contract
        .as_ref()
        .and_then(|c| c.status_lookup.spec())
        .map_or(0, crate::core::lookup::LookupSpec::lag_seconds);
    let since = detail
        .attempts
        .iter()
        .filter(|a| a.spends_budget())
        .map(Attempt::last_instant)
        .max();
    let verdict = observation.as_ref().map(|o| judge(o, since, lag));
    if let (Some(o), Some(v)) = (&observation, &verdict) {
        effect
            .consequences
            .push(format!("records observation {}: {}", o.id, v.proves()));
        effect.evidence.push(o.id.clone());
    } else {
        effect
            .consequences
            .push("no answer: an attempt and nothing more; the hold stays".into());
    }
    let failures = if observation.is_some() {
        0
    } else {
        failures_in_a_row(detail) + 1
    };
    effect.next = not_sooner_than(
        next_observation(
            call.ended_at,
            verdict.as_ref(),
            call.retry_after,
            assessment.deadline,
            failures,
            jitter(op.id.as_str(), call.ended_at),
        ),
        call.ended_at + chrono::Duration::seconds(i64::from(call.min_interval_seconds.max(1))),
        assessment.deadline,
    );
    match &effect.next {
        Next::At(at) => {
            effect.next_observation_at = Some(*at);
            effect
                .consequences
                .push(format!("next lookup at {}", human_instant(*at)));
        }
        Next::Settled => effect
            .consequences
            .push("no further scheduled lookups: the answer settles it".into()),
        Next::Exhausted(_) => route(detail, &mut effect),
    }
    effect.attempt = Some(attempt);
    effect.observation = observation;
    effect.verdict = verdict;
    effect
}

/// `next`, moved to `floor` when it would come sooner: however a provider answers
/// (a `Retry-After` of 0, a lag window about to end), one hold is never asked
/// again sooner than the operator's minimum interval. Past the deadline it is
/// exhausted, as any schedule past it is.
fn not_sooner_than(next: Next, floor: DateTime<Utc>, deadline: Option<DateTime<Utc>>) -> Next {
    match next {
        Next::At(at) if at < floor => match deadline {
            Some(d) if floor > d => Next::Exhausted(format!(
                "the next lookup would be at {} (the minimum interval), past the deadline {}",
                human_instant(floor),
                human_instant(d)
            )),
            _ => Next::At(floor),
        },
        other => other,
    }
}

/// Status queries without an answer since the last observation.
fn failures_in_a_row(detail: &OperationDetail) -> u32 {
    let last_answer = detail.observations.iter().map(|o| o.observed_at).max();
    let count = detail
        .attempts
        .iter()
        .filter(|a| {
            a.kind == AttemptKind::StatusQuery
                && a.error_type.is_some()
                && last_answer.is_none_or(|t| a.started_at > t)
        })
        .count();
    u32::try_from(count).unwrap_or(u32::MAX)
}

/// Clears the schedule and hands the hold to the contract's owner.
fn route(detail: &OperationDetail, effect: &mut LookupEffect) {
    let op = &detail.row.operation;
    let owner = detail
        .contract
        .as_ref()
        .map_or(op.owner.as_str(), |c| c.owner.as_str());
    if owner != op.owner {
        effect.new_owner = Some(owner.to_owned());
    }
    let why = match &effect.next {
        Next::Exhausted(why) => why.clone(),
        _ => String::new(),
    };
    effect.next_observation_at = None;
    effect.consequences.push(format!(
        "lookups exhausted ({why}): routed to owner {owner}; no more scheduled lookups"
    ));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::clock::parse_instant;

    fn at(s: &str) -> DateTime<Utc> {
        parse_instant(s).expect("instant")
    }

    #[test]
    fn an_exhausted_schedule_says_why_and_leaves_the_routing_to_the_one_line_that_routes() {
        let now = at("2026-09-05T10:00:00Z");
        let deadline = Some(at("2026-09-05T10:00:10Z"));
        let late = next_observation(
            now,
            None,
            Some(at("2026-09-05T10:02:00Z")),
            deadline,
            1,
            0.5,
        );
        let floored = not_sooner_than(Next::At(now), at("2026-09-05T10:00:30Z"), deadline);
        for next in [late, floored] {
            let Next::Exhausted(why) = next else {
                panic!("past the deadline: {next:?}");
            };
            assert!(why.contains("past the deadline"), "{why}");
            // `route` adds "routed to owner X" once; the reason must not say it first.
            assert!(!why.contains("routed"), "{why}");
        }
    }

    #[test]
    fn no_schedule_comes_sooner_than_the_minimum_interval() {
        let floor = at("2026-09-05T10:00:30Z");
        assert_eq!(
            not_sooner_than(Next::At(at("2026-09-05T10:00:00Z")), floor, None),
            Next::At(floor),
            "a Retry-After of now is raised to the floor"
        );
        let later = Next::At(at("2026-09-05T10:05:00Z"));
        assert_eq!(not_sooner_than(later.clone(), floor, None), later);
        assert_eq!(not_sooner_than(Next::Settled, floor, None), Next::Settled);
        assert!(matches!(
            not_sooner_than(
                Next::At(at("2026-09-05T10:00:00Z")),
                floor,
                Some(at("2026-09-05T10:00:10Z"))
            ),
            Next::Exhausted(why) if why.contains("minimum interval")
        ));
    }
}
