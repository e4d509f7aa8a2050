//! State evidence: whether an operation's state is a settled classification backed
//! by the evidence the transition table asks for it (SUCCEEDED verified, FAILED
//! proved, UNKNOWN supported, PARTIAL committed in part, BLOCKED with a reason,
//! COMPENSATED with downstream evidence, ACCEPTED by the owner).

use super::dataset::Index;
use super::view::View;
use crate::core::matrix;
use crate::core::model::{
    FailureMode, ItemState, ObservationSource, Outcome, Phase, Relation, Role, State,
};

impl Index<'_> {
    /// Whether the operation's state is a settled classification backed by the
    /// evidence the transition table asks for it.
    pub(super) fn classification(&self, v: &View<'_>) -> Result<(), String> {
        let state = v.op.state;
        match state {
            State::Planned
            | State::Validated
            | State::Approved
            | State::Sent
            | State::Acknowledged => {
                Err(format!("still {state}: the outcome was never classified"))
            }
            State::Succeeded if v.entered(State::Partial) => self.resume_verified(v),
            State::Succeeded => verified_success(v),
            State::Failed => self.non_application_proved(v),
            State::Unknown => self.unknown_supported(v),
            State::Partial => committed_subset(v),
            State::Blocked => match v.last_entry(State::Blocked) {
                Some(row) if not_blank(row.draft.rationale.as_deref()) => Ok(()),
                _ => Err("BLOCKED without a recorded reason".into()),
            },
            State::Compensated => self.compensation_verified(v),
            State::Accepted => owner_acceptance(v),
        }
    }

    pub(super) fn non_application_proved(&self, v: &View<'_>) -> Result<(), String> {
        if v.effective_deliveries() == 0 {
            return Ok(());
        }
        if v.assess_at(self.now).non_application.is_some() {
            return Ok(());
        }
        Err(
            "FAILED although a request may have applied and no observation proves it did not"
                .into(),
        )
    }

    pub(super) fn resume_verified(&self, v: &View<'_>) -> Result<(), String> {
        let resumes: Vec<&View<'_>> = v
            .children_of(Relation::ResumeOf)
            .filter(|c| c.state == State::Succeeded)
            .filter_map(|c| self.view(&c.id))
            .collect();
        if resumes.is_empty() {
            return Err("SUCCEEDED after PARTIAL without a succeeded resume".into());
        }
        let unverified: Vec<String> = v
            .items
            .iter()
            .filter(|i| i.state != ItemState::Succeeded)
            .filter(|i| {
                !resumes.iter().any(|r| {
                    r.items
                        .iter()
                        .any(|c| c.index == i.index && c.state == ItemState::Succeeded)
                })
            })
            .map(|i| i.index.to_string())
            .collect();
        if unverified.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "items {} are not verified as succeeded",
                unverified.join(", ")
            ))
        }
    }

    pub(super) fn compensation_verified(&self, v: &View<'_>) -> Result<(), String> {
        let Some(child) = v
            .children_of(Relation::CompensationOf)
            .find(|c| c.state == State::Succeeded)
        else {
            return Err(match v.children_of(Relation::CompensationOf).next() {
                Some(c) => format!("compensation {} is {}, not SUCCEEDED", c.id, c.state),
                None => "no compensation operation exists".into(),
            });
        };
        let downstream = v.observations.iter().any(|o| {
            o.source == ObservationSource::Downstream && o.observed_at >= child.created_at
        });
        if downstream {
            Ok(())
        } else {
            Err(format!(
                "compensation {} succeeded but no downstream evidence is recorded",
                child.id
            ))
        }
    }
}

pub(super) fn not_blank(text: Option<&str>) -> bool {
    text.is_some_and(|t| !t.trim().is_empty())
}

/// SUCCEEDED outside a partial: the last request answered with a provider request id
/// and a response hash, or an observation newer than it shows exactly one matching
/// effect. Output that failed validation proves nothing by itself: for an
/// `unsafe_output` operation only an observation verifies.
pub(super) fn verified_success(v: &View<'_>) -> Result<(), String> {
    // A delivery that was never sent (a duplicate refused before the network)
    // cannot change what the last request that left proved.
    let Some(last) = v.requests().filter(|a| a.phase != Phase::NotSent).last() else {
        return Err("SUCCEEDED without any request".into());
    };
    let since = last.last_instant();
    let observed = v
        .observations
        .iter()
        .any(|o| o.observed_at > since && crate::core::lookup::proves_single_effect(o));
    if observed {
        return Ok(());
    }
    if v.op.failure_mode == Some(FailureMode::UnsafeOutput) {
        return Err(
            "SUCCEEDED on output that failed validation, with no observation of the target".into(),
        );
    }
    let answered = last.phase == Phase::ResponseReceived
        && last.outcome == Outcome::Ok
        && last.provider_request_id.is_some()
        && last.response_hash.is_some();
    if answered {
        Ok(())
    } else {
        Err(format!(
            "SUCCEEDED but {} has no provider request id and response hash, and no observation verifies it",
            last.id
        ))
    }
}

impl Index<'_> {
    /// UNKNOWN: the last request may have applied with its outcome unknown, and
    /// either a next observation is planned or an observation newer than that
    /// request settles the question (it proves the effect once, its absence, or
    /// a finding) and the hold waits for a reviewer's decision on it. A lookup
    /// that settles the question clears the schedule: what it showed is the
    /// classification.
    pub(super) fn unknown_supported(&self, v: &View<'_>) -> Result<(), String> {
        let crossed = v
            .requests()
            .last()
            .is_some_and(|a| a.phase.may_have_crossed_boundary() && matrix::ambiguous(a.outcome));
        if !crossed {
            return Err("UNKNOWN but no request left its outcome in doubt".into());
        }
        if v.op.next_observation_at.is_some() || self.settled_by_observation(v) {
            return Ok(());
        }
        Err("UNKNOWN without a next observation time, and no observation since the last request settles it".into())
    }

    /// Whether the newest observation after the last request proves what
    /// happened: the effect once, non-application, or a finding (another
    /// target, payload or tenant, or more than one effect).
    fn settled_by_observation(&self, v: &View<'_>) -> bool {
        let a = v.assess_at(self.now);
        if a.non_application.is_some() {
            return true;
        }
        let Some(fresh) = a
            .fresh_observation
            .as_deref()
            .and_then(|id| v.observations.iter().find(|o| o.id == id))
        else {
            return false;
        };
        let verdict = a
            .lookup
            .clone()
            .unwrap_or_else(|| crate::core::lookup::judge(fresh, None, 0));
        fresh.found
            && matches!(
                verdict,
                crate::core::lookup::Verdict::Applied
                    | crate::core::lookup::Verdict::Findings { .. }
            )
    }
}

/// PARTIAL: items showing a committed subset.
pub(super) fn committed_subset(v: &View<'_>) -> Result<(), String> {
    let committed = v
        .items
        .iter()
        .filter(|i| matches!(i.state, ItemState::Succeeded | ItemState::Compensated))
        .count();
    if committed > 0 && committed < v.items.len() {
        Ok(())
    } else {
        Err(format!(
            "PARTIAL needs items showing a committed subset ({committed} of {} committed)",
            v.items.len()
        ))
    }
}

/// ACCEPTED: by an owner, with a rationale and a manual-repair reference.
pub(super) fn owner_acceptance(v: &View<'_>) -> Result<(), String> {
    match v.last_entry(State::Accepted) {
        Some(row)
            if matches!(row.draft.role, Role::Owner | Role::Local)
                && not_blank(row.draft.rationale.as_deref())
                && !row.draft.evidence.is_empty() =>
        {
            Ok(())
        }
        Some(row) => Err(format!(
            "accepted by {} ({}) without the owner role, a rationale or a repair reference",
            row.draft.by, row.draft.role
        )),
        None => Err("ACCEPTED with no recorded acceptance".into()),
    }
}
