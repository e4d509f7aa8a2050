//! The effects runner and the two sources of messages besides it: a thread
//! reading terminal events, and a watcher following the store's live status
//! ([`Session::watch`], the same on every backend) and the clock. Store
//! I/O happens here, on tasks, off the render path; every answer goes back to the
//! loop as a [`Message`] tagged with the generation of its request.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crossterm::event::{self, Event, KeyEventKind};
use tokio::sync::mpsc::UnboundedSender;
use tokio::task::JoinHandle;

use super::app::{Effect, Message};
use super::audit_tab::{AUDIT_PAGE, AuditPage};
use super::message::Tag;
use super::queue::{ListQuery, Listing};
use super::review::Verdict;
use super::screens::lookup::LookupShown;
use crate::core::clock::Clock;
use crate::core::model::State;
use crate::review;
use crate::store::judging::telling;
use crate::store::{OperationFilter, Progress, Session, StoreError};

/// How often the watcher reports the time (and the live status with it).
pub(crate) const POLL_EVERY: Duration = Duration::from_millis(500);

/// How often, at most, the metrics tab hears how far judging has got.
const JUDGING_EVERY: Duration = Duration::from_millis(250);

/// One page of the audit rows the session may see (G7), newest first: the
/// newest, or those below `before`. The chain's status is not read here: the
/// console verifies it at start and whenever the store moves.
pub async fn audit_page(session: &Session, before: Option<i64>) -> Result<AuditPage, StoreError> {
    let head = session.head_seq().await?;
    let limit = AUDIT_PAGE + 1;
    let mut rows = match before {
        None => session.audit_latest(limit).await?,
        Some(seq) => session.audit_before(seq, limit).await?,
    };
    let more = rows.len() > usize::try_from(AUDIT_PAGE).unwrap_or(usize::MAX);
    rows.truncate(usize::try_from(AUDIT_PAGE).unwrap_or(usize::MAX));
    Ok(AuditPage {
        rows,
        head,
        before,
        more,
    })
}

/// For a search that matched nothing in a narrowed listing: what it matches in
/// each state with no tab or filter (the session's tenant scope still applies).
async fn elsewhere(
    session: &Session,
    query: &ListQuery,
    total: u64,
) -> Result<Option<Vec<(State, u64)>>, StoreError> {
    let Some(search) = query.filter.search.clone() else {
        return Ok(None);
    };
    let search_only = OperationFilter {
        search: Some(search),
        ..OperationFilter::default()
    };
    if total > 0 {
        return Ok(None);
    }
    if query.filter == search_only {
        // The listing was the search alone: it matches nowhere.
        return Ok(Some(Vec::new()));
    }
    let counts = session.counts(&search_only, query.now).await?;
    Ok(Some(counts.by_state))
}

/// Runs one effect through `session` and returns the message answering it (`None`
/// for [`Effect::Quit`], which the loop handles itself). Every read is the
/// session's, in its tenants, and every write is the session's actor's. It
/// builds the lookup client (a TLS HTTP client) for this one effect: a caller
/// that runs many, or times them, keeps one [`Lookups`] and calls
/// [`perform_with`], as the console does.
pub async fn perform(session: &Session, effect: &Effect) -> Option<Message> {
    match Lookups::new(crate::lookup::LookupSettings::default()) {
        Ok(lookups) => perform_with(session, &lookups, effect).await,
        Err(error) => {
            tracing::error!(%error, "cannot build the lookup client");
            None
        }
    }
}

/// [`perform`] with the console's lookup client and pacing.
pub async fn perform_with(
    session: &Session,
    lookups: &Lookups,
    effect: &Effect,
) -> Option<Message> {
    match effect {
        Effect::List { generation, query } => {
            let counts = async {
                match &query.counts {
                    Some(filter) => {
                        let counts = session.counts(filter, query.now).await?;
                        let circuits = crate::circuit::not_closed(session).await?;
                        Ok(Some((counts, circuits)))
                    }
                    None => Ok(None),
                }
            };
            // Holds are routed at the console's clock, frozen or not.
            let routed_at = OperationFilter {
                now: Some(query.now),
                ..query.filter.clone()
            };
            let (listing, counts) = tokio::join!(
                session.list(&routed_at, query.sort, query.page.clone()),
                counts
            );
            let listing = match (listing, counts) {
                (Ok((rows, total)), Ok(counts)) => {
                    elsewhere(session, query, total).await.map(|elsewhere| {
                        let (counts, circuits) = counts.unzip();
                        Listing {
                            rows,
                            total,
                            counts,
                            elsewhere,
                            circuits,
                        }
                    })
                }
                (Err(e), _) | (_, Err(e)) => Err(e),
            };
            let result = match listing {
                Ok(listing) => Ok(listing),
                Err(e) => {
                    tracing::warn!(error = %e, "listing failed");
                    Err(e.to_string())
                }
            };
            Some(Message::Listed {
                generation: *generation,
                result,
            })
        }
        Effect::Load { generation, id } => {
            let result = session.detail(id).await.map(Box::new).map_err(|e| {
                tracing::warn!(error = %e, %id, "loading an operation failed");
                e.to_string()
            });
            Some(Message::Loaded {
                generation: *generation,
                result,
            })
        }
        Effect::Metrics { generation, now } => {
            Some(metrics(session, *generation, *now, &Progress::default()).await)
        }
        Effect::Audit { generation, before } => {
            let result = audit_page(session, *before)
                .await
                .map(Box::new)
                .map_err(|e| {
                    tracing::warn!(error = %e, "reading the audit log failed");
                    e.to_string()
                });
            Some(Message::Audit {
                generation: *generation,
                result,
            })
        }
        Effect::Tools { generation, now } => {
            let result = crate::tools::inventories(session, *now).await.map_err(|e| {
                tracing::warn!(error = %e, "reading the tools failed");
                e.to_string()
            });
            Some(Message::Tools {
                generation: *generation,
                result,
            })
        }
        Effect::Verify { generation } => {
            let result = session.verify().await.map_err(|e| {
                tracing::warn!(error = %e, "verifying the audit chain failed");
                e.to_string()
            });
            // What the verify found is recorded for every door (as `audit
            // verify` records it), and the acknowledgement is the store's.
            if let Ok(status) = &result
                && let Err(e) = session
                    .record_chain(status, crate::core::chain::BY_VERIFY, chrono::Utc::now())
                    .await
            {
                tracing::warn!(error = %e, "recording the verified chain failed");
            }
            let acknowledged = match session.chain_marks().await {
                Ok(marks) => marks.refusing().is_none() && marks.named().is_some(),
                Err(e) => {
                    tracing::warn!(error = %e, "reading the chain checks failed");
                    false
                }
            };
            Some(Message::Verified {
                generation: *generation,
                result,
                acknowledged,
            })
        }
        Effect::Debounce { generation, delay } => {
            tokio::time::sleep(*delay).await;
            Some(Message::Debounced {
                generation: *generation,
            })
        }
        Effect::Review {
            generation,
            id,
            action,
            rationale,
            expected,
            now,
        } => {
            let result = review::apply(session, id, action, rationale, Some(*expected), *now).await;
            if let Err(e) = &result {
                tracing::info!(error = %e, %id, "review not applied");
            }
            Some(Message::Reviewed {
                generation: *generation,
                verdict: Verdict::from(result),
            })
        }
        Effect::SelectAll { generation, filter } => {
            let result = session
                .matching_ids(filter, crate::store::SortOrder::Urgency)
                .await
                .map_err(|e| {
                    tracing::warn!(error = %e, "selecting the matches failed");
                    e.to_string()
                });
            Some(Message::Selected {
                generation: *generation,
                result,
            })
        }
        Effect::BulkLoad { generation, ids } => {
            let mut readable = Vec::with_capacity(ids.len());
            let result = each_marked(session, ids, |detail| {
                readable.push(detail.row.operation.id.clone());
            })
            .await;
            Some(Message::BulkLoaded {
                generation: *generation,
                result: result.map(|missing| (readable, missing)),
            })
        }
        Effect::BulkJudge {
            generation,
            ids,
            action,
            rationale,
            now,
        } => {
            let actor = session.actor();
            let mut lines = Vec::with_capacity(ids.len());
            let result = each_marked(session, ids, |detail| {
                lines.push(review::Planned {
                    line: crate::core::triage::line(&detail, action, actor, rationale, *now),
                    version: detail.row.version,
                });
            })
            .await;
            lines.sort_by(|a, b| crate::core::triage::order(&a.line, &b.line));
            Some(Message::BulkJudged {
                generation: *generation,
                result: result.map(|missing| (lines, missing)),
            })
        }
        Effect::BulkApply {
            generation,
            planned,
            action,
            rationale,
            now,
        } => {
            let mut results = Vec::with_capacity(planned.len());
            for one in planned {
                let result =
                    review::triage_apply_planned(session, one, action, rationale, *now).await;
                if let Err(e) = &result {
                    tracing::info!(error = %e, id = %one.line.id, "bulk triage not applied");
                }
                results.push((one.line.clone(), Verdict::from(result)));
            }
            Some(Message::BulkApplied {
                generation: *generation,
                results,
            })
        }
        Effect::LookUp {
            generation,
            id,
            now,
            frozen,
        } => {
            let clock = if *frozen {
                Clock::Frozen(*now)
            } else {
                Clock::System
            };
            Some(Message::LookedUp {
                generation: *generation,
                result: look_up(session, lookups, id, clock).await.map(Box::new),
            })
        }
        Effect::Quit => None,
    }
}

/// The metrics report over `session`'s operations at `now`, answering the
/// request tagged `generation`; `progress` is told how far judging what the
/// store has not judged yet has got.
async fn metrics(
    session: &Session,
    generation: Tag,
    now: chrono::DateTime<chrono::Utc>,
    progress: &Progress,
) -> Message {
    let result = crate::report::compute(session, now, progress)
        .await
        .map(Box::new)
        .map_err(|e| {
            tracing::warn!(error = %e, "computing the metrics failed");
            e.to_string()
        });
    Message::Metrics { generation, result }
}

/// Runs [`Effect::Metrics`], sending [`Message::Judging`] into `tx` while the
/// store judges (at most every [`JUDGING_EVERY`]), then the report.
async fn metrics_telling(
    session: &Session,
    generation: Tag,
    now: chrono::DateTime<chrono::Utc>,
    tx: &UnboundedSender<Message>,
) -> Message {
    let told = tx.clone();
    let tell = move |progress| {
        let _ = told.send(Message::Judging {
            generation,
            progress,
        });
    };
    telling(JUDGING_EVERY, tell, |progress| async move {
        metrics(session, generation, now, &progress).await
    })
    .await
}

/// Reads the marked operations one at a time and hands each to `each`, which
/// keeps what it needs of it (the detail is dropped then). Answers the ones
/// that cannot be read (gone, or no longer visible) and why, or the store's
/// error that stopped the reading.
async fn each_marked(
    session: &Session,
    ids: &[crate::core::ids::OperationId],
    mut each: impl FnMut(crate::core::detail::OperationDetail),
) -> Result<Vec<String>, String> {
    let mut missing = Vec::new();
    for id in ids {
        match review::load(session, id).await {
            Ok(detail) => each(detail),
            Err(e @ review::ReviewError::Store(_)) => {
                tracing::warn!(error = %e, %id, "reading a marked operation failed");
                return Err(e.to_string());
            }
            Err(e) => missing.push(e.to_string()),
        }
    }
    Ok(missing)
}

/// One lookup of `id`, recorded through the review service, as the screen shows it.
async fn look_up(
    session: &Session,
    lookups: &Lookups,
    id: &crate::core::ids::OperationId,
    clock: Clock,
) -> Result<LookupShown, String> {
    let rationale = crate::core::rules::Rationale::parse("status lookup from the console")
        .map_err(|e| e.clone())?;
    let recorded = crate::lookup::look_up_paced(
        session,
        &lookups.looker,
        Some(&lookups.limiter),
        &crate::lookup::EnvSecrets,
        clock,
        id,
        &rationale,
    )
    .await
    .map_err(|e| {
        tracing::info!(error = %e, %id, "lookup not recorded");
        e.to_string()
    })?;
    Ok(LookupShown {
        rows: recorded
            .call
            .rows()
            .into_iter()
            .map(|(label, value)| (label.to_owned(), value))
            .collect(),
        consequences: recorded
            .applied
            .effect
            .consequences
            .into_iter()
            .filter(|c| !c.starts_with("the state does not change"))
            .collect(),
    })
}

/// Spawns effects on tasks whose answers come back on the message channel.
pub(crate) struct Runner {
    session: Arc<Session>,
    lookups: Arc<Lookups>,
    tx: UnboundedSender<Message>,
}

/// What `o` looks up with: the HTTP client built from the `[lookup]` config (its
/// body limit) and the per-provider pacing of its rates, shared by every lookup
/// the console makes, as `observe` and `review --lookup` use them.
pub struct Lookups {
    pub looker: crate::lookup::Looker,
    pub limiter: crate::lookup::RateLimiter,
}

impl Lookups {
    pub fn new(settings: crate::lookup::LookupSettings) -> anyhow::Result<Lookups> {
        Ok(Lookups {
            looker: crate::lookup::Looker::new(settings.client())?,
            limiter: crate::lookup::RateLimiter::new(settings),
        })
    }
}

impl Runner {
    pub(crate) fn new(
        session: Arc<Session>,
        lookups: Arc<Lookups>,
        tx: UnboundedSender<Message>,
    ) -> Self {
        Runner {
            session,
            lookups,
            tx,
        }
    }

    /// Starts `effect`; returns `false` for [`Effect::Quit`].
    pub(crate) fn run(&self, effect: Effect) -> bool {
        if effect == Effect::Quit {
            return false;
        }
        let session = Arc::clone(&self.session);
        let lookups = Arc::clone(&self.lookups);
        let tx = self.tx.clone();
        tokio::spawn(async move {
            let message = match &effect {
                Effect::Metrics { generation, now } => {
                    Some(metrics_telling(&session, *generation, *now, &tx).await)
                }
                _ => perform_with(&session, &lookups, &effect).await,
            };
            if let Some(message) = message {
                let _ = tx.send(message);
            }
        });
        true
    }
}

/// Follows [`Session::watch`]: reports the live status whenever it moves (a
/// change committed by anyone, the connection lost or back) and every
/// [`POLL_EVERY`] with the time now. When the store cannot be watched at all the
/// error is reported and watching is tried again on the next tick. Ends when the
/// console stops listening.
pub(crate) fn spawn_poller(
    session: Arc<Session>,
    clock: Clock,
    tx: UnboundedSender<Message>,
) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(POLL_EVERY);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut watching = None;
        loop {
            let live = match &mut watching {
                None => {
                    ticks.tick().await;
                    match session.watch().await {
                        Ok(mut rx) => {
                            let live = Ok(*rx.borrow_and_update());
                            watching = Some(rx);
                            live
                        }
                        Err(e) => Err(e.to_string()),
                    }
                }
                Some(rx) => {
                    let lost = tokio::select! {
                        changed = rx.changed() => changed.is_err(),
                        _ = ticks.tick() => false,
                    };
                    let live = *rx.borrow_and_update();
                    if lost {
                        watching = None;
                    }
                    Ok(live)
                }
            };
            if tx
                .send(Message::Poll {
                    live,
                    now: clock.now(),
                })
                .is_err()
            {
                break;
            }
        }
    })
}

/// The thread reading terminal events; stopped and joined when dropped.
pub(crate) struct Input {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Input {
    /// Starts reading keys, mouse events and resizes into `tx`.
    pub(crate) fn spawn(tx: UnboundedSender<Message>) -> std::io::Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("holdfast-input".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    match event::poll(Duration::from_millis(100)) {
                        Ok(true) => {}
                        Ok(false) => continue,
                        Err(e) => {
                            tracing::error!(error = %e, "cannot read the terminal");
                            break;
                        }
                    }
                    let message = match event::read() {
                        Ok(Event::Key(key)) if key.kind == KeyEventKind::Press => Message::Key(key),
                        Ok(Event::Mouse(mouse)) => Message::Mouse(mouse),
                        Ok(Event::Resize(width, height)) => Message::Resize(width, height),
                        Ok(_) => continue,
                        Err(e) => {
                            tracing::error!(error = %e, "cannot read the terminal");
                            break;
                        }
                    };
                    if tx.send(message).is_err() {
                        break;
                    }
                }
            })?;
        Ok(Input {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
