//! Plans that move on recorded evidence: reconcile records a lookup, resolve moves
//! UNKNOWN or BLOCKED on it, revalidate moves BLOCKED on a fresh validation.

use super::Plan;
use crate::core::clock;
use crate::core::lookup::{self, Finding, LookupInput, Verdict};
use crate::core::model::{
    Attempt, AttemptKind, ItemState, Observation, ObservationSource, Outcome, Phase, State,
};
use crate::core::refusal::{Refusal, Rule, refuse};
use crate::core::rules::{FoundField, MadeBy, ReconcileInput};

/// The states `resolve` moves a hold to, each a row of [`Plan::resolve`]: every
/// list of them (the console's options, `review … resolve --to`) is this one.
pub const RESOLVE_TARGETS: [State; 3] = [State::Succeeded, State::Failed, State::Partial];

/// The state `text` names among [`RESOLVE_TARGETS`], in any case; the error
/// lists them and names the one probably meant.
pub fn resolve_target(text: &str) -> Result<State, String> {
    let text = text.trim();
    RESOLVE_TARGETS
        .into_iter()
        .find(|s| s.as_str().eq_ignore_ascii_case(text))
        .ok_or_else(|| {
            let names = RESOLVE_TARGETS.map(State::as_str);
            let hint = crate::core::names::nearest(text, names)
                .map_or_else(String::new, |n| format!("; did you mean {n}?"));
            format!("resolve moves a hold to {}{hint}", names.join(", "))
        })
}

impl Plan<'_> {
    pub(super) fn reconcile(&mut self, input: &ReconcileInput) -> Result<(), Refusal> {
        let op = self.op();
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
        let undeclared = input.undeclared();
        if !undeclared.is_empty() {
            return refuse(
                Rule::G1,
                format!(
                    "a found answer is complete evidence only with every comparison and the effect count; not given: {}. Give them, or record them as unknown",
                    FoundField::list(&undeclared)
                ),
            );
        }
        let observed_at = input.observed_at.unwrap_or(self.now);
        if observed_at > self.now {
            return refuse(
                Rule::G1,
                format!(
                    "observation {observation_id} is dated {}, after now: a lookup cannot come from the future",
                    clock::human_instant(observed_at)
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
            url: None,
        };
        let observation = Observation {
            id: observation_id.clone(),
            operation: op.id.clone(),
            observed_at,
            source: input.source,
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
        let unknown = input.not_given();
        if !unknown.is_empty() {
            self.consequences.push(format!(
                "records {} as unknown: a found answer without them is incomplete evidence, so attempt-evidence completeness counts {} short",
                FoundField::list(&unknown),
                op.id
            ));
        }
        if input.raw_hash.is_none() && input.reference.is_none() {
            self.consequences.push(format!(
                "records neither the answer's raw hash nor a reference to where it was seen: attempt-evidence completeness counts {} short",
                op.id
            ));
        }
        self.consequences.push("the state does not change".into());
        if let Some(next) = op.next_observation_at.filter(|t| *t <= self.now) {
            self.consequences.push(format!(
                "the next observation ({}) stays overdue until a new one is scheduled (schedule --at +30m)",
                clock::human_instant(next)
            ));
        }
        self.evidence = vec![attempt_id, observation_id];
        self.commit_extra.attempts.push(attempt);
        self.commit_extra.observations.push(observation);
        self.say_what_is_open();
        Ok(())
    }

    /// Records a lookup: its attempt, its observation when an answer came, what
    /// the answer proves, and the next lookup's time (or routing to the owner).
    pub(super) fn lookup(&mut self, input: &LookupInput) -> Result<(), Refusal> {
        let effect = super::lookup::plan(self.detail, input, self.now);
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
        self.evidence = effect.evidence;
        self.commit_extra.attempts.extend(effect.attempt);
        self.commit_extra.observations.extend(effect.observation);
        self.commit_extra.new_next_observation_at = Some(effect.next_observation_at);
        self.commit_extra.new_owner = effect.new_owner;
        // After what was recorded and proved, before the next lookup.
        let mut next = self.consequences.split_off(self.consequences.len().min(2));
        self.consequences.push("the state does not change".into());
        self.say_what_is_open();
        self.consequences.append(&mut next);
        Ok(())
    }

    /// Says what the answer allows once it is recorded: the options that move
    /// the hold and that the rules allow this actor then (nothing when asked
    /// quietly).
    fn say_what_is_open(&mut self) {
        if self.quiet {
            return;
        }
        let open = super::moves_open(
            &self.detail_after(),
            self.actor,
            self.rationale,
            self.now,
            &|_| false,
        );
        self.consequences
            .push(crate::core::rules::allowed_in_words(&open));
    }

    pub(super) fn resolve(&mut self, to: State) -> Result<(), Refusal> {
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

    pub(super) fn revalidate(&mut self) -> Result<(), Refusal> {
        self.starts_from(
            State::Blocked,
            |op| format!("{} is {}, not BLOCKED", op.id, op.state),
            "revalidation",
        )?;
        let since = self.detail.row.state_since;
        let fresh =
            self.detail.observations.iter().rev().find(|o| {
                o.source == ObservationSource::Validator && o.found && o.observed_at > since
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
}
