//! The check a door makes of the audit chain before it writes (or, for a read,
//! before it warns): a recorded break not acknowledged refuses at once; else the
//! rows from the checkpoint to the head are walked — each row's link to the one
//! before and its hash over its own content — and what the walk finds is recorded
//! (a break, or the checkpoint moved to the head), so that the next door walks only
//! the rows appended since. What this does not cover, a full `audit verify` does
//! (docs/security.md).

use chrono::{DateTime, Utc};

use super::{Store, StoreError};
use crate::core::audit::ChainStatus;
use crate::core::chain::{BY_LINK_CHECK, ChainBreak};

/// The break a door must name, if any, after checking the chain: `None` when the
/// chain links from its checkpoint to its head and no break is recorded. A break
/// with `acknowledged_seq` set lets writes go on (a read still names it).
pub async fn check(
    store: &dyn Store,
    now: DateTime<Utc>,
) -> Result<Option<ChainBreak>, StoreError> {
    let marks = store.chain_marks().await?;
    if let Some(refusing) = marks.refusing() {
        return Ok(Some(refusing.clone()));
    }
    // A login that row-level security keeps to its tenants sees a chain with
    // rows missing: it honours the recorded breaks only.
    if !store.walks_chain().await? {
        return Ok(marks.named().cloned());
    }
    let status = store.link_check(marks.checkpoint.as_ref()).await?;
    // Recorded where the login may write the checks' tables; a login that may
    // not still refuses on what it found.
    if let Err(e) = store.record_chain(&status, BY_LINK_CHECK, now).await {
        tracing::warn!(error = %e, "recording the chain check failed");
    }
    Ok(match status {
        ChainStatus::Intact { .. } => marks.named().cloned(),
        ChainStatus::Broken { seq, reason } => {
            let known = store.chain_marks().await.ok().and_then(|m| {
                m.breaks
                    .into_iter()
                    .find(|b| b.seq == seq && b.reason == reason)
            });
            Some(known.unwrap_or(ChainBreak {
                seq,
                reason,
                found_by: BY_LINK_CHECK.to_owned(),
                found_at: now,
                acknowledged_seq: None,
            }))
        }
    })
}

/// [`check`] for a door that writes: the refusing break as an error.
pub async fn writable(store: &dyn Store, now: DateTime<Utc>) -> Result<(), StoreError> {
    match check(store, now).await? {
        Some(b) if b.acknowledged_seq.is_none() => Err(StoreError::ChainBroken(Box::new(b))),
        _ => Ok(()),
    }
}
