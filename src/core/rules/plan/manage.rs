//! Plans that carry a decision without new evidence: an owner accepts, a reviewer
//! blocks, assigns an owner, schedules the next observation, classifies the root
//! cause or comments.

use chrono::{DateTime, Utc};

use super::Plan;
use crate::core::cause::{self, RootCause};
use crate::core::clock;
use crate::core::model::State;
use crate::core::refusal::{Refusal, Rule, refuse};
use crate::core::rules::MadeBy;

impl Plan<'_> {
    pub(super) fn accept(&mut self, repair_ref: &str) -> Result<(), Refusal> {
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

    pub(super) fn block(&mut self) -> Result<(), Refusal> {
        self.transition(State::Blocked, MadeBy::Reviewer)
    }

    pub(super) fn assign(&mut self, owner: &str) -> Result<(), Refusal> {
        let owner = owner.trim();
        if owner.is_empty() {
            return refuse(Rule::G1, "assign needs an owner");
        }
        self.consequences
            .push(format!("owner {} → {owner}", self.op().owner));
        self.commit_extra.new_owner = Some(owner.to_owned());
        Ok(())
    }

    pub(super) fn schedule(&mut self, at: DateTime<Utc>) -> Result<(), Refusal> {
        if at <= self.now {
            return refuse(Rule::G1, "the next observation must be in the future");
        }
        self.consequences
            .push(format!("next observation at {}", clock::human_instant(at)));
        self.commit_extra.new_next_observation_at = Some(Some(at));
        Ok(())
    }

    pub(super) fn comment(&mut self) -> Result<(), Refusal> {
        self.consequences
            .push("adds a comment to the audit log".into());
        Ok(())
    }

    /// Sets the root-cause layer of a failed or held operation: no state moves;
    /// the audit row carries the layer, which overrides what the evidence says.
    pub(super) fn classify(&mut self, layer: RootCause) -> Result<(), Refusal> {
        let op = self.op();
        if !cause::applies(op.state) {
            return refuse(
                Rule::G1,
                format!(
                    "{} is {}: only a failed or held operation has a root cause to classify",
                    op.id, op.state
                ),
            );
        }
        let now = cause::of(self.detail).unwrap_or(cause::Cause::Unclassified);
        if now.layer() == Some(layer) && matches!(now, cause::Cause::Classified { .. }) {
            return refuse(Rule::G1, format!("{} is already classified {layer}", op.id));
        }
        self.evidence.push(cause::evidence(layer));
        self.consequences
            .push(format!("root cause {} → {layer}", now.name()));
        Ok(())
    }
}
