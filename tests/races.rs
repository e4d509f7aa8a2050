//! Races between reviewers, each on a store handle of its own as separate
//! processes would hold them, on both backends: sixteen decisions on one version
//! leave exactly one winner and fifteen G8 refusals (never a raw driver error);
//! sixteen comments on one version all land, since a comment changes nothing a
//! decision relied on; and a decision is not made stale by a comment or a
//! schedule committed meanwhile.

use crate::support;

use std::sync::Arc;

use holdfast::core::audit::ChainStatus;
use holdfast::core::model::State;
use holdfast::core::rules::Action;
use holdfast::store::Scope;
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
    let detail = fresh.store.detail(&Scope::Every, &id("F09")).await.unwrap();
    assert_eq!(detail.row.operation.state, State::Succeeded);
    assert!(matches!(
        fresh.store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
}

/// F09's version.
async fn version(fresh: &support::stores::Fresh) -> i64 {
    let detail = fresh.store.detail(&Scope::Every, &id("F09")).await.unwrap();
    detail.row.version
}

async fn sixteen_comments_on_one_version_all_land(kind: Kind) {
    let fresh = loaded(kind).await;
    let before = version(&fresh).await;
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
    let after = version(&fresh).await;
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

/// A live lease raced by fifteen other identities, each on a handle of its own
/// and naming the lease's own worker and generation: every one releases and
/// then claims at once. No release lands (the lease is its claimer's), so no
/// claim finds the work free: it is handed out once.
async fn other_identities_racing_to_release_and_reclaim_a_lease_get_nothing(kind: Kind) {
    let fresh = loaded(kind).await;
    support::review::put_at_level(
        fresh.store.as_ref(),
        "T03",
        holdfast::core::ladder::Level::Automation,
    )
    .await;
    let session = |store: Arc<dyn Store>, who: &str| {
        holdfast::store::Session::new(
            store,
            holdfast::core::rules::Actor::local(who, Some("RP03".into())),
        )
    };
    let lease = chrono::Duration::seconds(600);
    let first = session(Arc::clone(&fresh.store), "svc:worker-0");
    let got = holdfast::work::claim(&first, "w1", lease, 5, now())
        .await
        .unwrap();
    assert_eq!(got.len(), 1, "{got:?}");
    let holder = holdfast::work::Holder {
        operation: id("F10"),
        worker: "w1".into(),
        generation: Some(got[0].generation),
    };
    let handles = handles(&fresh).await;
    let barrier = Arc::new(Barrier::new(RACERS - 1));
    let tasks: Vec<_> = handles
        .into_iter()
        .skip(1)
        .enumerate()
        .map(|(n, store)| {
            let racer = session(store, &format!("svc:worker-{}", n + 1));
            let (barrier, holder) = (Arc::clone(&barrier), holder.clone());
            tokio::spawn(async move {
                barrier.wait().await;
                let released = holdfast::work::release(&racer, &holder, now()).await;
                let claimed = holdfast::work::claim(&racer, "w1", lease, 5, now()).await;
                (released.is_ok(), claimed.map(|l| l.len()).unwrap_or(0))
            })
        })
        .collect();
    for task in tasks {
        let (released, claimed) = task.await.unwrap();
        assert!(!released, "another identity released the lease");
        assert_eq!(claimed, 0, "the work was handed out twice");
    }
    let claims = fresh
        .store
        .audit(1, 100_000)
        .await
        .unwrap()
        .into_iter()
        .filter(|r| r.draft.operation.as_str() == "F10" && r.draft.action.starts_with("work-"))
        .count();
    assert_eq!(claims, 1, "one claim, nothing else");
    assert!(matches!(
        fresh.store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
}

holdfast_on_both_backends!(
    other_identities_racing_to_release_and_reclaim_a_lease_get_nothing,
    sixteen_decisions_on_one_version_leave_one_winner,
    sixteen_comments_on_one_version_all_land,
    a_decision_is_not_made_stale_by_a_comment_or_a_schedule,
);
