//! One lookup of one hold, start to finish: load it in the session's scope, ask
//! the provider, and record the attempt and observation through the review
//! service as a `reconcile`, audited as the session's actor. The command line,
//! the console and the observer all come through here.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use std::time::Duration;

use super::observe::{Due, Left, LeftKind, ObserveStore};
use super::{Impossible, Looker, Secrets};
use crate::core::clock::Clock;
use crate::core::detail::OperationDetail;
use crate::core::ids::OperationId;
use crate::core::lookup::{LookupCall, LookupInput, LookupSpec};
use crate::core::matrix;
use crate::core::model::AttemptKind;
use crate::core::rules::{Action, Rationale};
use crate::review::{self, Applied, ReviewError};
use crate::store::Session;

/// Why a lookup was not recorded.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    #[error(transparent)]
    Impossible(#[from] Impossible),
    #[error(transparent)]
    Review(#[from] ReviewError),
}

/// A recorded lookup: the call as made and the reconcile it became.
#[derive(Debug)]
pub struct Recorded {
    pub call: LookupCall,
    pub applied: Applied,
}

/// The lookup the contract of the hold in `detail` describes, if holdfast can make it.
pub fn spec_of(detail: &OperationDetail) -> Result<&LookupSpec, Impossible> {
    detail
        .contract
        .as_ref()
        .and_then(|c| c.status_lookup.spec())
        .ok_or_else(|| Impossible::NoSpec(detail.row.operation.tool.clone()))
}

/// The provider request id the last request attempt recorded.
pub fn last_provider_request_id(detail: &OperationDetail) -> Option<&str> {
    detail
        .attempts
        .iter()
        .filter(|a| a.kind == AttemptKind::Request)
        .max_by_key(|a| (a.started_at, a.seq))
        .and_then(|a| a.provider_request_id.as_deref())
}

/// Looks up hold `id` once and records it with `rationale`.
pub async fn look_up(
    session: &Session,
    looker: &Looker,
    secrets: &dyn Secrets,
    clock: Clock,
    id: &OperationId,
    rationale: &Rationale,
) -> Result<Recorded, LookupError> {
    look_up_paced(session, looker, None, secrets, clock, id, rationale).await
}

/// [`look_up`], waiting first for the provider's turn under `limiter` (the
/// `[lookup]` rates of the config), as the console and `review --lookup` do.
pub async fn look_up_paced(
    session: &Session,
    looker: &Looker,
    limiter: Option<&super::RateLimiter>,
    secrets: &dyn Secrets,
    clock: Clock,
    id: &OperationId,
    rationale: &Rationale,
) -> Result<Recorded, LookupError> {
    let detail = review::load(session, id).await?;
    let spec = spec_of(&detail)?;
    if let Some(limiter) = limiter {
        limiter.acquire(&spec.origin()).await;
    }
    let call = looker
        .look_up(
            spec,
            &detail.row.operation,
            last_provider_request_id(&detail),
            secrets,
            clock,
        )
        .await?;
    let applied = record(session, id, call.clone(), rationale, clock).await?;
    Ok(Recorded { call, applied })
}

/// Records `call` on hold `id`: a reconcile decided at the later of now and the
/// call's end, so that a lookup finished under a frozen clock is not "future".
pub async fn record(
    session: &Session,
    id: &OperationId,
    call: LookupCall,
    rationale: &Rationale,
    clock: Clock,
) -> Result<Applied, ReviewError> {
    let now = clock.now().max(call.ended_at);
    let action = Action::Lookup(LookupInput::Call(Box::new(call)));
    review::apply(session, id, &action, rationale, None, now).await
}

/// What an applied lookup says, on one line: its consequences.
pub fn summary(applied: &Applied) -> String {
    applied
        .effect
        .consequences
        .iter()
        .filter(|c| !c.starts_with("the state does not change"))
        .cloned()
        .collect::<Vec<_>>()
        .join("; ")
}

/// The observer's store: a session, acting as its own identity.
pub struct SessionObserver {
    pub session: Session,
    pub rationale: Rationale,
    pub clock: Clock,
    /// Only tools at this autonomy level or above (DESIGN §9.4): `observe --watch`
    /// asks for `native`; a one-shot `observe` a person runs asks for none.
    pub at_least: Option<crate::core::ladder::Level>,
}

#[async_trait]
impl ObserveStore for SessionObserver {
    async fn due(&self, now: DateTime<Utc>, limit: usize) -> anyhow::Result<Vec<Due>> {
        let ids = self
            .session
            .due_lookups(now, self.at_least, u64::try_from(limit).unwrap_or(u64::MAX))
            .await?;
        // A tool whose lookup was never proven to find a known record is capped
        // at `manual`: what runs by itself leaves it alone.
        let checked = match self.at_least {
            Some(level) if level > crate::core::ladder::Level::Manual && !ids.is_empty() => {
                Some(self.session.checked_tools().await?)
            }
            _ => None,
        };
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let detail = match self.session.detail(&id).await {
                Ok(d) => d,
                Err(crate::store::StoreError::NotFound(_)) => continue,
                Err(e) => return Err(e.into()),
            };
            if checked
                .as_ref()
                .is_some_and(|tools| !tools.contains(&detail.row.operation.tool))
            {
                continue;
            }
            let (Ok(spec), Some(slot)) =
                (spec_of(&detail), detail.row.operation.next_observation_at)
            else {
                continue;
            };
            let deadline = matrix::assess_detail(&detail, now).deadline;
            out.push(Due {
                spec: spec.clone(),
                slot,
                provider_request_id: last_provider_request_id(&detail).map(str::to_owned),
                exhausted: deadline.is_some_and(|d| now >= d),
                operation: detail.row.operation,
            });
        }
        Ok(out)
    }

    async fn claim(
        &self,
        id: &OperationId,
        slot: DateTime<Utc>,
        now: DateTime<Utc>,
        lease: Duration,
    ) -> anyhow::Result<bool> {
        let until = now + chrono::Duration::from_std(lease)?;
        Ok(self.session.claim_lookup(id, slot, now, until).await?)
    }

    async fn record(&self, id: &OperationId, call: LookupCall) -> anyhow::Result<String> {
        let applied = record(&self.session, id, call, &self.rationale, self.clock).await?;
        Ok(summary(&applied))
    }

    async fn route(&self, id: &OperationId, now: DateTime<Utc>) -> anyhow::Result<String> {
        let action = Action::Lookup(LookupInput::Exhausted);
        let applied = review::apply(&self.session, id, &action, &self.rationale, None, now).await?;
        Ok(summary(&applied))
    }

    async fn left(
        &self,
        now: DateTime<Utc>,
        seen: &[OperationId],
        limit: usize,
    ) -> anyhow::Result<Vec<Left>> {
        let asked = u64::try_from(limit.saturating_add(seen.len())).unwrap_or(u64::MAX);
        let holds = self.session.overdue_holds(now, asked).await?;
        let holds: Vec<_> = holds
            .into_iter()
            .filter(|hold| !seen.contains(&hold.id))
            .collect();
        if holds.is_empty() {
            return Ok(Vec::new());
        }
        // What `observe --watch` asks beyond a lookup object: the tool's level,
        // and a checked lookup above `manual` (the same gates as `due`).
        let gate = match self.at_least {
            Some(level) => Some((
                level,
                self.session.autonomy_levels().await?,
                if level > crate::core::ladder::Level::Manual {
                    Some(self.session.checked_tools().await?)
                } else {
                    None
                },
            )),
            None => None,
        };
        let mut out = Vec::new();
        for hold in holds.into_iter().take(limit) {
            let id = hold.id;
            let detail = match self.session.detail(&id).await {
                Ok(d) => d,
                Err(crate::store::StoreError::NotFound(_)) => continue,
                Err(e) => return Err(e.into()),
            };
            let op = &detail.row.operation;
            let tool = crate::core::sanitize::sanitize(&op.tool).into_owned();
            let mut claimed_by = None;
            let mut until = None;
            // The time budget as `due` reads it: past the deadline a hold is
            // routed to its owner, never looked up.
            let deadline = matrix::assess_detail(&detail, now)
                .deadline
                .filter(|d| now >= *d);
            let (kind, words) = if let Some(deadline) = deadline {
                until = Some(deadline);
                let owner = detail
                    .contract
                    .as_ref()
                    .map_or(op.owner.as_str(), |c| c.owner.as_str());
                (
                    LeftKind::BudgetSpent,
                    format!(
                        "budget spent: its deadline {} has passed, so holdfast looks it up no more; \
                         its owner {} decides (`review {id} …`)",
                        crate::core::clock::format_instant(deadline),
                        crate::core::sanitize::sanitize(owner)
                    ),
                )
            } else if spec_of(&detail).is_err() {
                (
                    LeftKind::NoLookup,
                    format!(
                        "the contract of tool {tool} has no lookup object: holdfast cannot ask; \
                         look it up by hand and record it (`review {id} reconcile`)"
                    ),
                )
            } else if let Some((need, has)) = gate
                .as_ref()
                .map(|(need, levels, _)| (*need, crate::core::autonomy::level_of(levels, &op.tool)))
                .filter(|(need, has)| has < need)
            {
                (
                    LeftKind::ToolLevel,
                    format!(
                        "tool {tool} is at `{}`: `observe --watch` looks up only tools at \
                         `{}` or above (`holdfast autonomy set`); a one-shot `observe` does",
                        has.as_str(),
                        need.as_str()
                    ),
                )
            } else if gate
                .as_ref()
                .and_then(|(_, _, checked)| checked.as_ref())
                .is_some_and(|checked| !checked.contains(&op.tool))
            {
                (
                    LeftKind::LookupUnchecked,
                    format!(
                        "tool {tool}'s lookup is unchecked, capped at `manual`: `observe --watch` \
                         skips it until `holdfast lookup check {tool} --known ID` finds a known record"
                    ),
                )
            } else if !op.state.is_held() {
                (
                    LeftKind::NotHeld,
                    format!(
                        "it is {} (held by a dependency), not a held state: it is looked up once held",
                        op.state
                    ),
                )
            } else if let Some((by, expires)) = hold.claim {
                let words = format!(
                    "{} claimed its slot: the claim expires at {}, and it is due again then if no lookup is recorded",
                    crate::core::sanitize::sanitize(&by),
                    crate::core::clock::format_instant(expires)
                );
                claimed_by = Some(by);
                until = Some(expires);
                (LeftKind::Claimed, words)
            } else {
                (
                    LeftKind::NextRound,
                    "it came due while this round ran: the next `observe` looks it up".to_owned(),
                )
            };
            out.push(Left {
                id,
                kind,
                words,
                claimed_by,
                until,
            });
        }
        Ok(out)
    }
}
