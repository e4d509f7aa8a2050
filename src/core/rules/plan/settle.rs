//! Closing a repair: a child that succeeded moves its parent, to COMPENSATED with
//! downstream evidence (G4) or to SUCCEEDED once every item is verified.

use super::Plan;
use crate::core::model::{ItemState, ObservationSource, Relation, State};
use crate::core::refusal::{Refusal, Rule, refuse};
use crate::core::rules::{Action, MadeBy};

impl Plan<'_> {
    pub(super) fn mark_compensated(&mut self) -> Result<(), Refusal> {
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
                    None if self.allows(&Action::ApproveCompensation) => {
                        "no compensation operation exists: approve one first".to_owned()
                    }
                    None => "no compensation operation exists".to_owned(),
                },
            );
        };
        let downstream =
            self.detail.observations.iter().rev().find(|o| {
                o.source == ObservationSource::Downstream && o.observed_at >= op.created_at
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

    pub(super) fn mark_resumed(&mut self) -> Result<(), Refusal> {
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
}
