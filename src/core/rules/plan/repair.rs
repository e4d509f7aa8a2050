//! Repairs that need authority: authorize a retry, approve a held call, approve
//! a compensation or a resume and the linked child operation each creates (G2,
//! G5, G11, G12).

use chrono::Duration;

use super::Plan;
use crate::core::clock;
use crate::core::ids::{OperationId, Sha256};
use crate::core::model::{Approval, Item, ItemState, Operation, Relation, State};
use crate::core::refusal::{Refusal, Rule, refuse};
use crate::core::rules::{MadeBy, approval_binds};

impl Plan<'_> {
    fn within_budget(&self) -> Result<(), Refusal> {
        let a = self.assess();
        if let Some(why) = a.budget_exhausted() {
            return refuse(Rule::G5, format!("{why}: {}", self.remaining()));
        }
        Ok(())
    }

    pub(super) fn authorize_retry(&mut self) -> Result<(), Refusal> {
        let op = self.starts_from(
            State::Unknown,
            |op| {
                format!(
                    "a retry is authorized from UNKNOWN only; {} is {}",
                    op.id, op.state
                )
            },
            "retry",
        )?;
        self.within_budget()?;
        approval_binds(op.approval.as_ref(), &op.payload_hash, self.now)?;
        let a = self.assess();
        if let Some(expiry) = a.key_expired_at {
            match &a.business_key_check {
                Some(obs) => self.evidence.push(obs.clone()),
                None => {
                    return refuse(
                        Rule::G12,
                        format!(
                            "idempotency key retention ended at {}; the key no longer protects a repeat: reconcile by business key first",
                            clock::human_instant(expiry)
                        ),
                    );
                }
            }
        }
        if a.write && a.crossed_boundary {
            match &a.non_application {
                Some(obs) => self.evidence.push(obs.clone()),
                None => {
                    return refuse(
                        Rule::G2,
                        "the last request may have crossed the execution boundary: reconcile and prove non-application before any repeat",
                    );
                }
            }
        }
        self.transition(State::Approved, MadeBy::Reviewer)?;
        self.consequences.push(format!(
            "same operation {}, actor, tenant, payload hash and idempotency key; attempt {} of {} next",
            op.id,
            a.attempts_used + 1,
            a.max_attempts
                .map_or_else(|| "unbounded".to_owned(), |m| m.to_string())
        ));
        Ok(())
    }

    /// VALIDATED → APPROVED by a person (DESIGN §2, the approver's row): the
    /// approval of this exact call, bound to its payload hash and the review
    /// policy version in force (G11), recorded on the audit row. The call it
    /// approves is sent once, by the one system move APPROVED → SENT; a further
    /// identical call needs another approval.
    pub(super) fn approve(&mut self) -> Result<(), Refusal> {
        let op = self.starts_from(
            State::Validated,
            |op| {
                let first = if op.state == State::Blocked {
                    ": revalidate it first, on a fresh validation of its arguments"
                } else {
                    ""
                };
                format!(
                    "a call is approved from VALIDATED only; {} is {}{first}",
                    op.id, op.state
                )
            },
            "approval",
        )?;
        let Some(policy) = self.actor.policy.clone() else {
            return refuse(
                Rule::G11,
                "an approval carries the review policy version in force, and none is set: \
                 name it with `policy` in the config file",
            );
        };
        self.transition(State::Approved, MadeBy::Reviewer)?;
        self.evidence.push(format!("payload:{}", op.payload_hash));
        self.evidence.push(format!("policy:{policy}"));
        self.consequences.push(format!(
            "approves this exact call of {}: payload {} under policy {policy}; the next \
             identical call is sent once, and another one needs a new approval",
            op.tool,
            op.payload_hash.short(12)
        ));
        Ok(())
    }

    fn child_id(&self, tag: char) -> OperationId {
        let n = self
            .detail
            .children
            .iter()
            .filter(|c| {
                c.id.as_str()
                    .starts_with(&format!("{}-{tag}", self.op().id))
            })
            .count()
            + 1;
        OperationId::parse(&format!("{}-{tag}{n}", self.op().id))
            .unwrap_or_else(|_| self.op().id.clone())
    }

    fn new_child(&self, id: OperationId, relation: Relation, action: &str) -> Operation {
        let op = self.op();
        let payload = Sha256::of(format!("{relation}:{}:{}", op.id, op.payload_hash).as_bytes());
        Operation {
            id: id.clone(),
            tenant: op.tenant.clone(),
            actor: op.actor.clone(),
            tool: op.tool.clone(),
            action: action.to_owned(),
            target: op.target.clone(),
            payload_hash: payload.clone(),
            intent_hash: op.intent_hash.clone(),
            risk: op.risk,
            approval: Some(Approval {
                by: self.actor.principal().to_owned(),
                policy: self.actor.policy.clone().unwrap_or_else(|| "-".into()),
                at: Some(self.now),
                payload_hash: Some(payload),
                expires_at: Some(self.now + Duration::hours(1)),
            }),
            idempotency_key: Some(format!("k-{id}")),
            business_key: op.business_key.clone(),
            correlation_id: op.correlation_id.clone(),
            owner: op.owner.clone(),
            max_attempts: op.max_attempts,
            deadline: None,
            failure_mode: None,
            state: State::Approved,
            next_observation_at: None,
            depends_on: Vec::new(),
            parent: Some(op.id.clone()),
            relation: Some(relation),
            created_at: self.now,
        }
    }

    /// One child of `relation` at a time: `rule` names the guard a second one
    /// would break.
    fn no_open_child(&self, relation: Relation, rule: Rule) -> Result<(), Refusal> {
        if let Some(c) = self
            .detail
            .children
            .iter()
            .find(|c| c.relation == relation && !c.state.is_terminal())
        {
            return refuse(
                rule,
                format!("{} ({relation}) is still {}: one at a time", c.id, c.state),
            );
        }
        Ok(())
    }

    /// G4: once a compensation has succeeded, a second one would revert the
    /// effect twice.
    fn no_succeeded_compensation(&self) -> Result<(), Refusal> {
        if let Some(c) = self
            .detail
            .children
            .iter()
            .find(|c| c.relation == Relation::CompensationOf && c.state == State::Succeeded)
        {
            return refuse(
                Rule::G4,
                format!(
                    "compensation {} already SUCCEEDED: a second one would revert the effect twice",
                    c.id
                ),
            );
        }
        Ok(())
    }

    pub(super) fn approve_compensation(&mut self) -> Result<(), Refusal> {
        let op = self.starts_from(
            State::Partial,
            |op| {
                format!(
                    "compensation is approved for PARTIAL operations; {} is {}",
                    op.id, op.state
                )
            },
            "automated repair",
        )?;
        let Some(inverse) = self
            .detail
            .contract
            .as_ref()
            .and_then(|c| c.compensation.clone())
        else {
            return refuse(
                Rule::G1,
                format!("the contract of {} names no compensating action", op.tool),
            );
        };
        self.no_succeeded_compensation()?;
        self.no_open_child(Relation::CompensationOf, Rule::G4)?;
        let id = self.child_id('C');
        let child = self.new_child(id.clone(), Relation::CompensationOf, &inverse);
        self.consequences.push(format!(
            "creates {id} ({inverse}, compensation_of {}) in APPROVED for an executor",
            op.id
        ));
        self.consequences.push(format!(
            "{} stays PARTIAL until the compensation succeeds and downstream evidence is recorded",
            op.id
        ));
        self.evidence.push(id.to_string());
        self.commit_extra.children.push(child);
        Ok(())
    }

    pub(super) fn approve_resume(&mut self) -> Result<(), Refusal> {
        let op = self.starts_from(
            State::Partial,
            |op| {
                format!(
                    "a resume is approved for PARTIAL operations; {} is {}",
                    op.id, op.state
                )
            },
            "automated repair",
        )?;
        self.within_budget()?;
        let unknown: Vec<String> = self
            .detail
            .items
            .iter()
            .filter(|i| i.state == ItemState::Unknown)
            .map(|i| i.index.to_string())
            .collect();
        if !unknown.is_empty() {
            return refuse(
                Rule::G2,
                format!(
                    "items {} are unknown: they may have committed; reconcile them before resuming",
                    unknown.join(", ")
                ),
            );
        }
        let todo: Vec<&Item> = self
            .detail
            .items
            .iter()
            .filter(|i| {
                matches!(
                    i.state,
                    ItemState::Failed | ItemState::NotAttempted | ItemState::Skipped
                )
            })
            .collect();
        if todo.is_empty() {
            return refuse(Rule::G1, "no uncommitted items are left to resume");
        }
        self.no_open_child(Relation::ResumeOf, Rule::G1)?;
        let id = self.child_id('R');
        let child = self.new_child(id.clone(), Relation::ResumeOf, &op.action);
        let indexes: Vec<String> = todo.iter().map(|i| i.index.to_string()).collect();
        self.consequences.push(format!(
            "creates {id} (resume_of {}) in APPROVED covering only items {}",
            op.id,
            indexes.join(", ")
        ));
        self.consequences
            .push("committed items are not sent again".into());
        self.commit_extra.child_items = todo
            .iter()
            .map(|i| Item {
                operation: id.clone(),
                index: i.index,
                label: i.label.clone(),
                state: ItemState::NotAttempted,
                authoritative_id: None,
            })
            .collect();
        self.evidence.push(id.to_string());
        self.commit_extra.children.push(child);
        Ok(())
    }
}
