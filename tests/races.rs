//! Races between reviewers, each on a store handle of its own as separate
//! processes would hold them, on both backends: sixteen decisions on one version
//! leave exactly one winner and fifteen G8 refusals (never a raw driver error);
//! sixteen comments on one version all land, since a comment changes nothing a
//! decision relied on; and a decision is not made stale by a comment or a
//! schedule committed meanwhile.

mod support;

use std::sync::Arc;

use holdfast::core::audit::ChainStatus;
use holdfast::core::model::State;
use holdfast::core::rules::Action;
use holdfast::store::{Store, StoreError};
use support::review::{decided, id, loaded, now, resolve_f09, reviewer};
use support::stores::Kind;
use tokio::sync::Barrier;

const RACERS: usize = 16;

/// `RACERS` handles on the store, as many consoles would open it.
async fn handles(fresh: &support::stores::Fresh) -> Vec<Arc<dyn Store>> {
    let mut out = Vec::new();
    for _ in 0..RACERS {
        out.push(fresh.reopen().await.unwrap());
    }
    out
}

/// Commits every commit at once, one per handle, and returns the results.
async fn race(
    stores: Vec<Arc<dyn Store>>,
    commits: Vec<holdfast::core::rules::Commit>,
) -> Vec<Result<i64, StoreError>> {
    let barrier = Arc::new(Barrier::new(commits.len()));
    let tasks: Vec<_> = stores
        .into_iter()
        .zip(commits)
        .map(|(store, commit)| {
            let barrier = Arc::clone(&barrier);
            tokio::spawn(async move {
                barrier.wait().await;
                store.commit(commit).await.map(|row| row.seq)
            })
        })
        .collect();
    let mut out = Vec::new();
    for task in tasks {
        out.push(task.await.unwrap());
    }
    out
}

async fn sixteen_decisions_on_one_version_leave_one_winner(kind: Kind) {
    let fresh = loaded(kind).await;
    let mut commits = Vec::new();
    for n in 0..RACERS {
        commits.push(resolve_f09(fresh.store.as_ref(), &format!("rev:{n}")).await);
    }
    let results = race(handles(&fresh).await, commits).await;
    let winners = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(winners, 1, "{results:?}");
    for result in &results {
        if let Err(error) = result {
            assert!(matches!(error, StoreError::Conflict { .. }), "{error}");
        }
    }
    let detail = fresh.store.detail(&id("F09")).await.unwrap();
    assert_eq!(detail.row.operation.state, State::Succeeded);
    assert!(matches!(
        fresh.store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
}

async fn sixteen_comments_on_one_version_all_land(kind: Kind) {
    let fresh = loaded(kind).await;
    let before = fresh.store.detail(&id("F09")).await.unwrap().row.version;
    let mut commits = Vec::new();
    for n in 0..RACERS {
        commits.push(
            decided(
                fresh.store.as_ref(),
                "F09",
                &Action::Comment,
                &reviewer(&format!("rev:{n}")),
                &format!("note number {n} on the provider console"),
            )
            .await,
        );
    }
    let results = race(handles(&fresh).await, commits).await;
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let after = fresh.store.detail(&id("F09")).await.unwrap().row.version;
    assert_eq!(after, before + RACERS as i64);
    assert!(matches!(
        fresh.store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
}

async fn a_decision_is_not_made_stale_by_a_comment_or_a_schedule(kind: Kind) {
    let fresh = loaded(kind).await;
    let store = fresh.store.as_ref();
    let resolve = resolve_f09(store, "rev:ana").await;
    let schedule = decided(
        store,
        "F09",
        &Action::Schedule {
            at: now() + chrono::Duration::minutes(30),
        },
        &reviewer("rev:bo"),
        "look again after the provider's window",
    )
    .await;
    let comment = decided(
        store,
        "F09",
        &Action::Comment,
        &reviewer("rev:cy"),
        "paged the provider's on-call",
    )
    .await;
    let second_schedule = schedule.clone();
    store.commit(comment).await.unwrap();
    store.commit(schedule).await.unwrap();
    let stale = store.commit(second_schedule).await.unwrap_err();
    assert!(
        matches!(stale, StoreError::Conflict { .. }),
        "two schedules of one field conflict: {stale}"
    );
    let row = store.commit(resolve).await.unwrap();
    assert_eq!(row.draft.from, Some(State::Unknown));
    assert!(matches!(
        store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
}

holdfast_on_both_backends!(
    sixteen_decisions_on_one_version_leave_one_winner,
    sixteen_comments_on_one_version_all_land,
    a_decision_is_not_made_stale_by_a_comment_or_a_schedule,
);
