//! The report as every surface computes it — the console's metrics tab, `holdfast
//! report` and the bench: the facts of the session's tenants (G7), assembled by
//! `core::metrics` at one `now`.
//!
//! The store keeps each operation's judged facts, marked stale by triggers
//! whenever a record of it is written ([`compute_kept`]), so a report judges
//! only what changed and reads the rest as sums. The paged judging below is
//! the reference it falls back on.
//!
//! The store is read in keyset pages of [`PAGE`] operations, each with the
//! records of its relatives in scope ([`Session::dataset_page`]); each page is
//! judged by the same rules as a whole dataset and folded into a [`Tally`], so
//! memory follows the page and the report's lists (their first
//! [`metrics::LISTED`] entries), not the store.
//!
//! Every report is read through a [`Session`]: its scope is the session's,
//! narrowed ([`Session::narrowed`]) where the report leaves the drill's tenant
//! out.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use crate::core::ids::OperationId;
use crate::core::metrics::{self, Report, Tally};
use crate::store::{OperationFilter, Progress, Scope, Session, StoreError, joined};

/// Operations judged per page.
pub const PAGE: u64 = 1000;

/// The report over what `session` may see, at `now`: the real tenants' only,
/// never the operations a drill put into a store of theirs (its own tenant,
/// [`crate::drill::DRILL_TENANT`]) unless that tenant is all the session sees.
/// `progress` is told how far judging what the store has not judged yet has
/// got ([`compute_kept`]).
pub async fn compute(
    session: &Session,
    now: DateTime<Utc>,
    progress: &Progress,
) -> Result<Report, StoreError> {
    compute_kept(&without_drill(session).await?, now, progress).await
}

/// `session` without the drill's tenant, when it sees operations there and
/// other tenants besides; `session` as it is otherwise.
pub async fn without_drill(session: &Session) -> Result<Session, StoreError> {
    let drill = crate::drill::DRILL_TENANT;
    let in_drill = OperationFilter {
        tenants: vec![drill.to_owned()],
        ..Default::default()
    };
    if session.count(&in_drill).await? == 0 {
        return Ok(session.clone());
    }
    let real: Vec<String> = session
        .tenants()
        .await?
        .into_iter()
        .filter(|t| t != drill)
        .collect();
    Ok(if real.is_empty() {
        session.clone()
    } else {
        session.narrowed(&Scope::Tenants(real))
    })
}

/// The report over the operations in `session`'s scope at `now` from the facts
/// the store keeps per operation ([`Session::kept_report`]): sums and the
/// first rows of each list, after judging what was written since (a login
/// that may only read the kept facts judges it for this report alone, without
/// writing it), telling `progress` how many of those are judged. Where the
/// kept facts cannot give it (a scope with a relative outside it, or more
/// unkept operations than a report judges in memory), the store is judged
/// page by page ([`compute_paged`]), `progress` told how far.
pub async fn compute_kept(
    session: &Session,
    now: DateTime<Utc>,
    progress: &Progress,
) -> Result<Report, StoreError> {
    match session.kept_report(now, progress).await {
        Ok(Some(report)) => return Ok(report),
        Ok(None) => {}
        Err(error) => {
            tracing::warn!(%error, "the kept metric facts could not be read; judging page by page");
        }
    }
    compute_paged(session, now, PAGE, progress).await
}

/// The report over the operations in `session`'s scope at `now`, judged in
/// pages of `page` operations.
pub async fn compute_in(
    session: &Session,
    now: DateTime<Utc>,
    page: u64,
) -> Result<Report, StoreError> {
    compute_paged(session, now, page, &Progress::default()).await
}

/// [`compute_in`], telling `progress` how many of the operations in scope
/// (counted before the first page) are judged as each page is.
pub async fn compute_paged(
    session: &Session,
    now: DateTime<Utc>,
    page: u64,
    progress: &Progress,
) -> Result<Report, StoreError> {
    let contracts = session.contracts().await?;
    let mut meter = progress.start(session.count(&OperationFilter::default()).await?);
    let mut tally = Tally::default();
    // The next page is read on a task of its own while this one is judged:
    // the reading is the store's thread's work, the judging this one's.
    let read = |after: Option<OperationId>| {
        let (session, contracts) = (session.clone(), contracts.clone());
        tokio::spawn(async move {
            session
                .dataset_page(after.as_ref(), page.max(1), contracts)
                .await
        })
    };
    let mut next = read(None);
    loop {
        let (ids, data) = joined(next.await)?;
        let Some(last) = ids.last().cloned() else {
            break;
        };
        next = read(Some(last));
        let judged: BTreeSet<_> = ids.into_iter().collect();
        let count = u64::try_from(judged.len()).unwrap_or(u64::MAX);
        tally.add(metrics::page_facts(&data, judged, now));
        meter.add(count);
    }
    meter.finish();
    Ok(tally.finish(now))
}

/// Where the report from the kept facts differs from the report judged anew
/// from the records at `now`, in words; `None` when they agree. The kept facts
/// are a cache a writer of the metric tables could change behind the store's
/// back (emptied, or a veto row taken out with its counts moved to match):
/// `audit verify` recomputes them this way, so the release gate never rests on
/// facts the records do not give. Like the walk of the chain it follows, it
/// covers every tenant ([`Session::walking`]).
pub async fn kept_facts_differ(
    session: &Session,
    now: DateTime<Utc>,
) -> Result<Option<String>, StoreError> {
    let whole = session.walking().await?;
    let kept = compute_kept(&whole, now, &Progress::default()).await?;
    let judged = compute_in(&whole, now, PAGE).await?;
    if kept == judged {
        return Ok(None);
    }
    let mut differences = Vec::new();
    if kept.release.disposition != judged.release.disposition {
        differences.push(format!(
            "the release gate is {} from the kept facts but {} from the records",
            kept.release.disposition, judged.release.disposition
        ));
    }
    for (k, j) in kept.metrics.iter().zip(&judged.metrics) {
        if (k.numerator, k.denominator) != (j.numerator, j.denominator) {
            differences.push(format!(
                "{}: kept {}/{}, from the records {}/{}",
                k.id.as_str(),
                k.numerator,
                k.denominator,
                j.numerator,
                j.denominator
            ));
        }
    }
    let groups = |r: &Report| {
        r.operational
            .repeated
            .groups
            .iter()
            .map(|g| format!("{}/{}/{} {}", g.owner, g.layer, g.tool, g.total))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if kept.operational.repeated != judged.operational.repeated {
        differences.push(format!(
            "the repeated errors are [{}] from the kept facts but [{}] from the records",
            groups(&kept),
            groups(&judged)
        ));
    }
    if differences.is_empty() {
        differences.push("the operational figures or the lists differ".into());
    }
    Ok(Some(differences.join("; ")))
}
