//! The observer: every due lookup once (`observe`), or on and on, honouring each
//! hold's schedule (`observe --watch`). At most N lookups are in flight, each
//! provider is paced, and each slot is claimed in the store first so that several
//! observers on one store never ask twice for the same hold and slot. Every
//! overdue hold it does not look up is named with the reason ([`Left`]).

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use futures_util::StreamExt;
use tokio::sync::watch;

use super::{Looker, RateLimiter, Secrets};
use crate::core::clock::Clock;
use crate::core::ids::OperationId;
use crate::core::lookup::{LookupCall, LookupSpec};
use crate::core::model::Operation;

/// One hold whose lookup is due.
#[derive(Debug, Clone)]
pub struct Due {
    pub operation: Operation,
    /// The scheduled instant this lookup is for: the claim's key.
    pub slot: DateTime<Utc>,
    pub spec: LookupSpec,
    /// The provider request id the last request attempt recorded.
    pub provider_request_id: Option<String>,
    /// The lookup deadline has passed: route to the owner instead of asking.
    pub exhausted: bool,
}

/// Why an overdue hold is not looked up, as a kind a script can match.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LeftKind {
    /// Its tool's contract has no lookup object (or there is no contract).
    NoLookup,
    /// `observe --watch` only: its tool is below the autonomy level it needs.
    ToolLevel,
    /// `observe --watch` only: its tool's lookup is unchecked (capped at manual).
    LookupUnchecked,
    /// The operator's bindings do not let its lookup go where it would go.
    NoBinding,
    /// The lookup cannot be made (a placeholder without a value, a secret unset).
    Impossible,
    /// Another observer claimed its slot; it is due again when that claim lapses.
    Claimed,
    /// Its time budget is spent (the deadline passed): no more lookups.
    BudgetSpent,
    /// It came due while this round ran: the next round looks it up.
    NextRound,
    /// Held by a dependency, not in a held state: looked up once it is held.
    NotHeld,
}

impl LeftKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LeftKind::NoLookup => "no_lookup",
            LeftKind::ToolLevel => "tool_level",
            LeftKind::LookupUnchecked => "lookup_unchecked",
            LeftKind::NoBinding => "no_binding",
            LeftKind::Impossible => "impossible",
            LeftKind::Claimed => "claimed",
            LeftKind::BudgetSpent => "budget_spent",
            LeftKind::NextRound => "next_round",
            LeftKind::NotHeld => "not_held",
        }
    }
}

/// An overdue hold this observer did not look up, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Left {
    pub id: OperationId,
    pub kind: LeftKind,
    /// The reason in words, with what would let it be looked up.
    pub words: String,
    /// [`LeftKind::Claimed`]: the observer holding its slot.
    pub claimed_by: Option<String>,
    /// [`LeftKind::Claimed`]: when that claim expires; [`LeftKind::BudgetSpent`]:
    /// the deadline that passed.
    pub until: Option<DateTime<Utc>>,
}

/// The most overdue holds `observe` explains in one run.
pub const LEFT_LIMIT: usize = 100;

/// What the observer needs from a store, as the identity it runs as.
#[async_trait]
pub trait ObserveStore: Send + Sync {
    /// Holds whose next lookup is due at `now`, soonest first, at most `limit`.
    async fn due(&self, now: DateTime<Utc>, limit: usize) -> anyhow::Result<Vec<Due>>;
    /// Takes the slot for this observer; `false` when another holds it.
    async fn claim(
        &self,
        id: &OperationId,
        slot: DateTime<Utc>,
        now: DateTime<Utc>,
        lease: Duration,
    ) -> anyhow::Result<bool>;
    /// Records one lookup through the review service; the line says what it
    /// proved and when the next one is.
    async fn record(&self, id: &OperationId, call: LookupCall) -> anyhow::Result<String>;
    /// Routes a hold whose lookups are exhausted to its owner.
    async fn route(&self, id: &OperationId, now: DateTime<Utc>) -> anyhow::Result<String>;
    /// The overdue holds at `now` other than `seen` (those already given a
    /// line), soonest first, at most `limit`, each with why it is not looked up.
    async fn left(
        &self,
        now: DateTime<Utc>,
        seen: &[OperationId],
        limit: usize,
    ) -> anyhow::Result<Vec<Left>>;
}

/// How the observer runs.
#[derive(Debug, Clone, Copy)]
pub struct ObserveOptions {
    /// Lookups in flight at once.
    pub concurrency: usize,
    /// How long a claim holds before another observer may take it over.
    pub lease: Duration,
    /// How often `--watch` looks for newly due holds.
    pub poll: Duration,
    /// The most holds taken per round.
    pub batch: usize,
}

impl Default for ObserveOptions {
    fn default() -> Self {
        ObserveOptions {
            concurrency: 4,
            lease: Duration::from_secs(300),
            poll: Duration::from_secs(1),
            batch: 500,
        }
    }
}

/// One hold's line of output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObserveLine {
    pub id: OperationId,
    pub text: String,
    /// The hold was looked up (or routed) by this observer.
    pub acted: bool,
    /// Why it was not, when the lookup could not be made.
    pub left: Option<LeftKind>,
}

/// Everything an observer shares between its lookups.
pub struct Observer {
    pub store: Arc<dyn ObserveStore>,
    pub looker: Looker,
    pub limiter: RateLimiter,
    pub secrets: Arc<dyn Secrets>,
    pub clock: Clock,
    pub options: ObserveOptions,
}

impl Observer {
    /// Runs every lookup due now once; each finished hold is handed to `line` as
    /// it completes. Returns how many holds this observer acted on.
    pub async fn round(&self, line: &(dyn Fn(ObserveLine) + Sync)) -> anyhow::Result<usize> {
        let now = self.clock.now();
        let due = self.store.due(now, self.options.batch).await?;
        let acted = std::sync::atomic::AtomicUsize::new(0);
        futures_util::stream::iter(due)
            .for_each_concurrent(self.options.concurrency.max(1), |due| {
                let acted = &acted;
                async move {
                    let out = self.one(due).await;
                    if out.acted {
                        acted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    line(out);
                }
            })
            .await;
        Ok(acted.into_inner())
    }

    async fn one(&self, due: Due) -> ObserveLine {
        let id = due.operation.id.clone();
        let done = |text: String, acted: bool| ObserveLine {
            id: id.clone(),
            text,
            acted,
            left: None,
        };
        let now = self.clock.now();
        match self
            .store
            .claim(&id, due.slot, now, self.options.lease)
            .await
        {
            Ok(true) => {}
            Ok(false) => {
                return ObserveLine {
                    left: Some(LeftKind::Claimed),
                    ..done("skipped: another observer holds this slot".into(), false)
                };
            }
            Err(e) => return done(format!("error: {e:#}"), false),
        }
        if due.exhausted {
            return match self.store.route(&id, now).await {
                Ok(text) => done(text, true),
                Err(e) => done(format!("error: {e:#}"), false),
            };
        }
        self.limiter.acquire(&due.spec.origin()).await;
        let call = self
            .looker
            .look_up(
                &due.spec,
                &due.operation,
                due.provider_request_id.as_deref(),
                self.secrets.as_ref(),
                self.clock,
            )
            .await;
        match call {
            Err(impossible) => {
                let kind = match impossible {
                    super::Impossible::NoSpec(_) => LeftKind::NoLookup,
                    super::Impossible::Refused { .. } => LeftKind::NoBinding,
                    _ => LeftKind::Impossible,
                };
                ObserveLine {
                    left: Some(kind),
                    ..done(impossible.to_string(), false)
                }
            }
            Ok(call) => match self.store.record(&id, call).await {
                Ok(text) => done(text, true),
                Err(e) => done(format!("error: {e:#}"), false),
            },
        }
    }

    /// The overdue holds other than `seen` that this observer leaves, and why
    /// (at most [`LEFT_LIMIT`]).
    pub async fn left(&self, seen: &[OperationId]) -> anyhow::Result<Vec<Left>> {
        self.store.left(self.clock.now(), seen, LEFT_LIMIT).await
    }

    /// Rounds until `stop` turns true, waiting `poll` between rounds that found
    /// nothing to do.
    pub async fn watch(
        &self,
        mut stop: watch::Receiver<bool>,
        line: &(dyn Fn(ObserveLine) + Sync),
    ) -> anyhow::Result<usize> {
        let mut total = 0;
        while !*stop.borrow() {
            let acted = self.round(line).await?;
            total += acted;
            if acted == 0 {
                tokio::select! {
                    _ = tokio::time::sleep(self.options.poll) => {}
                    _ = stop.changed() => {}
                }
            }
        }
        Ok(total)
    }
}
