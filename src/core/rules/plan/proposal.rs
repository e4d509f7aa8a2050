//! Four eyes (G6): a proposable action turned into a proposal, and a different
//! approver confirming or rejecting the pending one.

use super::{CommitExtra, Plan};
use crate::core::model::{Proposal, ProposalStatus, Role};
use crate::core::refusal::{Refusal, Rule, refuse};
use crate::core::rules::{Action, Asked, plan_with};

impl<'a> Plan<'a> {
    /// Runs a proposable action, turning it into a proposal where four eyes or the
    /// actor's role require one (G6).
    pub(super) fn proposable(
        &mut self,
        check: fn(&mut Self) -> Result<(), Refusal>,
    ) -> Result<(), Refusal> {
        if let Some(p) = self
            .detail
            .proposals
            .iter()
            .find(|p| p.status == ProposalStatus::Pending)
        {
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
        let agent = crate::core::ladder::is_agent(self.actor.principal());
        if !self.confirming
            && (four_eyes || agent || !matches!(self.role, Role::Approver | Role::Local))
        {
            let why = if agent {
                format!("{} is an agent; a person confirms", self.actor.principal())
            } else if four_eyes {
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
                action: self.kind,
                proposed_by: self.actor.principal().to_owned(),
                proposed_at: self.now,
                rationale: self.rationale.as_str().to_owned(),
                status: ProposalStatus::Pending,
            });
        }
        Ok(())
    }

    fn pending(&self) -> Result<&'a Proposal, Refusal> {
        self.detail
            .proposals
            .iter()
            .find(|p| p.status == ProposalStatus::Pending)
            .ok_or_else(|| Refusal {
                rule: Rule::G6,
                reason: format!("{} has no pending proposal", self.op().id),
            })
    }

    pub(super) fn confirm(&mut self, version: i64) -> Result<(), Refusal> {
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
        let Some(action) = Action::from_proposal(proposal.action) else {
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
        let asked = Asked {
            confirming: true,
            quiet: self.quiet,
        };
        let mut inner = plan_with(
            &detail,
            &action,
            self.actor,
            self.rationale,
            version,
            self.now,
            asked,
        )?
        .finish(version);
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
            close_proposal: Some((proposal.id, ProposalStatus::Confirmed)),
        };
        Ok(())
    }

    pub(super) fn reject(&mut self) -> Result<(), Refusal> {
        let proposal = self.pending()?;
        self.consequences.push(format!(
            "rejects proposal {} ({} by {}); the state does not change",
            proposal.id, proposal.action, proposal.proposed_by
        ));
        self.evidence.push(format!("proposal:{}", proposal.id));
        self.commit_extra.close_proposal = Some((proposal.id, ProposalStatus::Rejected));
        Ok(())
    }
}
