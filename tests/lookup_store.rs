//! Lookups recorded in a real store through the review service, against a real
//! provider on 127.0.0.1: for each scenario the attempt and the observation, the
//! state (unchanged), the actions then allowed and the next observation time; the
//! token in no byte of the store; and observers that look each due hold up once,
//! however many run at once.

use crate::support;

use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use holdfast::core::clock::{Clock, parse_instant};
use holdfast::core::model::{AttemptKind, Outcome, State};
use holdfast::core::rules::{Action, Actor, Rationale, Rule, decide};
use holdfast::lookup::{
    Impossible, Looker, LookupSettings, ObserveOptions, Observer, RateLimiter, Secrets,
    SessionObserver,
};
use holdfast::store::Scope;
use holdfast::store::{IngestMode, Session};
use support::provider::{Provider, TOKEN, due_holds, holds};
use support::review::{id, records};
use support::stores::{self, Fresh, Kind};

const NOW: &str = "2026-09-05T10:10:00Z";

fn now() -> DateTime<Utc> {
    parse_instant(NOW).unwrap()
}

struct TestSecrets;

impl Secrets for TestSecrets {
    fn get(&self, name: &str) -> Option<String> {
        (name == "HOLDFAST_TEST_STATUS_TOKEN").then(|| TOKEN.to_owned())
    }
}

fn rationale() -> Rationale {
    Rationale::parse("looked up at the provider by its business key").unwrap()
}

fn actor() -> Actor {
    Actor::local("maya", Some("RP03".into()))
}

/// A store holding T06 (lag 60 s) and T07 (lag 20 min) holds, one per scenario.
async fn store_with(kind: Kind, p: &Provider, scenarios: &[&str]) -> Fresh {
    let fresh = stores::fresh(kind).await;
    let mut packet = format!(
        "{}\n{}\n",
        p.contract("T06", 300, 60),
        p.contract("T07", 300, 1200)
    );
    let six: Vec<(String, String)> = scenarios
        .iter()
        .map(|s| (format!("L-{s}"), format!("{s}:1")))
        .collect();
    let pairs: Vec<(&str, &str)> = six.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
    packet.push_str(&holds("T06", &pairs, "2026-09-05T10:02:00Z"));
    packet.push_str(&holds(
        "T07",
        &[("L-early", "missing:2")],
        "2026-09-05T10:02:00Z",
    ));
    let report = fresh
        .store
        .ingest(records(&packet), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    fresh
}

/// What an action would do now: `Ok(())`, or the rule that refuses it.
/// Looks up the hold of each scenario once, through the review service.
async fn look_up_each(fresh: &Fresh, p: &Provider, scenarios: &[&str]) {
    let session = Session::new(fresh.store.clone(), actor());
    let looker = Looker::new(p.settings().client()).unwrap();
    for s in scenarios {
        holdfast::lookup::look_up(
            &session,
            &looker,
            &TestSecrets,
            Clock::Frozen(now()),
            &id(&format!("L-{s}")),
            &rationale(),
        )
        .await
        .unwrap();
    }
}

fn allowed(detail: &holdfast::core::detail::OperationDetail, action: Action) -> Result<(), Rule> {
    decide(
        detail,
        &action,
        &actor(),
        &rationale(),
        detail.row.version,
        now(),
    )
    .map(|_| ())
    .map_err(|r| r.rule)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_scenario_is_recorded_with_what_it_now_allows() {
    let p = Provider::start("Sat, 05 Sep 2026 10:40:00 GMT").await;
    let scenarios = [
        "match",
        "missing",
        "payload",
        "tenant",
        "dup",
        "throttle-secs",
        "throttle-date",
        "unavailable",
        "hang",
        "badjson",
        "html",
        "huge",
        "redirect",
    ];
    let fresh = store_with(Kind::Sqlite, &p, &scenarios).await;
    let session = Session::new(fresh.store.clone(), actor());
    let looker = Looker::new(p.settings().client()).unwrap();
    let clock = Clock::Frozen(now());
    let succeeded = || Action::Resolve {
        to: State::Succeeded,
    };
    for s in scenarios.iter().copied().chain(["early"]) {
        let op = id(&format!("L-{s}"));
        let recorded =
            holdfast::lookup::look_up(&session, &looker, &TestSecrets, clock, &op, &rationale())
                .await
                .unwrap_or_else(|e| panic!("{s}: {e}"));
        let d = session.detail(&op).await.unwrap();
        assert_eq!(
            d.row.operation.state,
            State::Unknown,
            "{s}: the state never moves by a lookup"
        );
        let q = d.attempts.last().unwrap();
        assert_eq!(q.kind, AttemptKind::StatusQuery, "{s}");
        assert_eq!(q.id, format!("L-{s}-Q2"), "{s}");
        assert_eq!(q.http_status, recorded.call.http_status, "{s}");
        assert_eq!(recorded.applied.audit.draft.action, "reconcile", "{s}");
        assert_eq!(recorded.applied.audit.draft.by, "maya", "{s}");
        let next = d.row.operation.next_observation_at;
        let answered = d.observations.len() == 1;
        match s {
            "match" => {
                assert!(answered && d.observations[0].found);
                assert_eq!(d.observations[0].raw_hash, q.response_hash);
                assert_eq!(d.observations[0].source.to_string(), "status_lookup");
                assert_eq!(allowed(&d, succeeded()), Ok(()));
                assert_eq!(allowed(&d, Action::AuthorizeRetry), Err(Rule::G2));
                assert_eq!(next, None, "settled");
            }
            "missing" => {
                assert!(answered && !d.observations[0].found);
                assert_eq!(allowed(&d, Action::AuthorizeRetry), Ok(()));
                assert_eq!(allowed(&d, Action::Resolve { to: State::Failed }), Ok(()));
                assert_eq!(next, None);
            }
            "early" => {
                assert!(answered && !d.observations[0].found);
                assert_eq!(
                    allowed(&d, Action::AuthorizeRetry),
                    Err(Rule::G2),
                    "inside the lag"
                );
                assert_eq!(
                    next,
                    parse_instant("2026-09-05T10:20:31Z").ok(),
                    "when the lag ends"
                );
                assert!(
                    recorded
                        .applied
                        .effect
                        .consequences
                        .iter()
                        .any(|c| c.contains("not yet visible"))
                );
            }
            "payload" | "dup" => {
                assert!(answered);
                assert_eq!(allowed(&d, succeeded()), Err(Rule::G1), "{s}");
                assert_eq!(next, None);
            }
            "tenant" => {
                assert_eq!(allowed(&d, succeeded()), Err(Rule::G7));
                assert!(
                    recorded
                        .applied
                        .effect
                        .consequences
                        .iter()
                        .any(|c| c.contains("wrong-tenant finding"))
                );
            }
            "throttle-secs" => {
                assert!(!answered);
                assert_eq!(q.outcome, Outcome::HttpError);
                assert_eq!(next, Some(recorded.call.ended_at + Duration::seconds(120)));
                assert_eq!(q.retry_after, next);
            }
            "throttle-date" => {
                assert_eq!(next, parse_instant("2026-09-05T10:40:00Z").ok());
            }
            "unavailable" | "badjson" | "html" | "huge" | "redirect" | "hang" => {
                assert!(!answered, "{s}");
                assert!(q.error_type.is_some(), "{s}");
                let n = next.unwrap_or_else(|| panic!("{s}: a backoff"));
                assert_eq!(
                    n,
                    recorded.call.ended_at + Duration::seconds(30),
                    "{s}: a backoff of at most 15 s, raised to the minimum interval"
                );
                assert_eq!(allowed(&d, succeeded()), Err(Rule::G1), "{s}");
            }
            other => panic!("no expectation for {other}"),
        }
    }
}

/// An observer on `store` acting as `svc:observer`, with `concurrency` in flight.
fn observer(store: Arc<dyn holdfast::store::Store>, p: &Provider, concurrency: usize) -> Observer {
    observer_at(store, p, concurrency, now())
}

/// The same, its clock frozen at `at`.
fn observer_at(
    store: Arc<dyn holdfast::store::Store>,
    p: &Provider,
    concurrency: usize,
    at: DateTime<Utc>,
) -> Observer {
    observer_on(store, p, concurrency, Clock::Frozen(at))
}

/// The same, on `clock`, with the provider's binding and the default pacing.
fn observer_on(
    store: Arc<dyn holdfast::store::Store>,
    p: &Provider,
    concurrency: usize,
    clock: Clock,
) -> Observer {
    Observer {
        store: Arc::new(SessionObserver {
            session: Session::new(store, Actor::local("svc:observer", None)),
            rationale: Rationale::parse("scheduled lookup by the observer").unwrap(),
            clock,
            at_least: None,
        }),
        looker: Looker::new(p.settings().client()).unwrap(),
        limiter: RateLimiter::new(LookupSettings::default()),
        secrets: Arc::new(TestSecrets),
        clock,
        options: ObserveOptions {
            concurrency,
            ..ObserveOptions::default()
        },
    }
}

/// Every hold was asked about once, and shows one lookup by `svc:observer`.
async fn each_looked_up_once(fresh: &Fresh, p: &Provider, n: usize) {
    for i in 0..n {
        assert_eq!(p.asked(&format!("match:{i}")), 1, "D{i:03} asked once");
        let d = fresh
            .store
            .detail(&Scope::Every, &id(&format!("D{i:03}")))
            .await
            .unwrap();
        let queries = d
            .attempts
            .iter()
            .filter(|a| a.kind == AttemptKind::StatusQuery)
            .count();
        assert_eq!(queries, 1, "D{i:03}");
        let last = d.audit.last().unwrap();
        assert_eq!(last.draft.action, "reconcile");
        assert_eq!(last.draft.by, "svc:observer");
        assert_eq!(d.row.operation.next_observation_at, None, "settled");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn observe_looks_each_of_fifty_due_holds_up_once() {
    let p = Provider::start("").await;
    let fresh = due_holds(Kind::Sqlite, &p, 50).await;
    let obs = observer(fresh.store.clone(), &p, 4);
    let lines = std::sync::Mutex::new(Vec::new());
    let acted = obs
        .round(&|line| lines.lock().unwrap().push(line))
        .await
        .unwrap();
    assert_eq!(acted, 50);
    let lines = lines.into_inner().unwrap();
    assert_eq!(lines.len(), 50, "one line per hold");
    assert!(
        lines
            .iter()
            .all(|l| l.text.contains("allows now: resolve --to SUCCEEDED")),
        "{lines:?}"
    );
    each_looked_up_once(&fresh, &p, 50).await;
    assert_eq!(
        obs.round(&|_| {}).await.unwrap(),
        0,
        "nothing is due any more"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_observers_on_one_postgres_store_look_each_hold_up_once() {
    if stores::postgres_skipped().await {
        return;
    }
    let p = Provider::start("").await;
    let fresh = due_holds(Kind::Postgres, &p, 50).await;
    let second = fresh.reopen().await.unwrap();
    let a = observer(fresh.store.clone(), &p, 4);
    let b = observer(second, &p, 4);
    let (ra, rb) = tokio::join!(a.round(&|_| {}), b.round(&|_| {}));
    assert_eq!(ra.unwrap() + rb.unwrap(), 50);
    each_looked_up_once(&fresh, &p, 50).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_is_in_no_byte_of_the_store_or_an_export() {
    let p = Provider::start("").await;
    let fresh = store_with(
        Kind::Sqlite,
        &p,
        &["match", "echo", "badjson", "unavailable"],
    )
    .await;
    look_up_each(&fresh, &p, &["match", "echo", "badjson", "unavailable"]).await;
    let seen = p.auth_seen();
    assert_eq!(seen.len(), 4);
    assert!(
        seen.iter()
            .all(|a| a.as_deref() == Some(&format!("Bearer {TOKEN}")))
    );
    let dataset = fresh.store.dataset(&Scope::Every).await.unwrap();
    let export = serde_json::to_string(&dataset).unwrap();
    assert!(export.contains("[redacted]"), "the echo is kept, redacted");
    assert!(!export.contains(TOKEN));
    if let Some(sqlite) = &fresh.sqlite {
        sqlite.pool().close().await;
    }
    let dir = std::path::Path::new(fresh.url.trim_start_matches("sqlite:"))
        .parent()
        .unwrap()
        .to_path_buf();
    let mut files = 0;
    let mut records_seen = false;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        files += 1;
        records_seen |= bytes.windows(13).any(|w| w == b"status_lookup");
        assert!(
            !bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
            "a store file holds the token"
        );
    }
    assert!(files > 0 && records_seen, "the store's files were read");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_deadline_a_hold_is_routed_to_its_owner_and_not_looked_up() {
    let p = Provider::start("").await;
    let fresh = due_holds(Kind::Sqlite, &p, 3).await;
    let late = parse_instant("2026-09-05T11:05:00Z").unwrap();
    let obs = observer_at(fresh.store.clone(), &p, 2, late);
    let lines = std::sync::Mutex::new(Vec::new());
    assert_eq!(
        obs.round(&|l| lines.lock().unwrap().push(l)).await.unwrap(),
        3
    );
    for line in lines.into_inner().unwrap() {
        assert!(line.text.contains("lookups exhausted"), "{line:?}");
        assert!(
            line.text.contains("routed to owner integrations"),
            "{line:?}"
        );
    }
    assert!(
        p.auth_seen().is_empty(),
        "nobody was asked past the deadline"
    );
    let d = fresh
        .store
        .detail(&Scope::Every, &id("D000"))
        .await
        .unwrap();
    assert_eq!(d.row.operation.next_observation_at, None);
    assert_eq!(d.row.operation.state, State::Unknown, "the hold stays held");
    assert!(d.attempts.iter().all(|a| a.kind == AttemptKind::Request));
    let last = d.audit.last().unwrap();
    assert_eq!(
        (last.draft.action.as_str(), last.draft.by.as_str()),
        ("reconcile", "svc:observer")
    );
    assert_eq!(obs.round(&|_| {}).await.unwrap(), 0, "routed once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn findings_of_lookups_count_in_the_release_gate() {
    use holdfast::core::metrics::{self, VetoKind};
    let p = Provider::start("").await;
    let fresh = store_with(Kind::Sqlite, &p, &["match", "dup", "tenant"]).await;
    look_up_each(&fresh, &p, &["match", "dup", "tenant"]).await;
    let report = metrics::report(&fresh.store.dataset(&Scope::Every).await.unwrap(), now());
    let kinds = |op: &str| -> Vec<VetoKind> {
        report
            .release
            .vetoes
            .iter()
            .filter(|v| v.operation.as_str() == op)
            .flat_map(|v| v.kinds.clone())
            .collect()
    };
    assert_eq!(kinds("L-dup"), [VetoKind::DuplicatePrimaryEffect]);
    assert_eq!(kinds("L-tenant"), [VetoKind::CrossTenantAction]);
    assert!(kinds("L-match").is_empty());
}

/// A store holding one T06 hold per `(id, business key)`, its deadline far
/// ahead so that a real clock may run against it.
async fn store_of(kind: Kind, p: &Provider, pairs: &[(&str, &str)]) -> Fresh {
    let fresh = stores::fresh(kind).await;
    let packet = format!(
        "{}\n{}",
        p.contract("T06", 2000, 60),
        holds("T06", pairs, "2026-09-05T10:02:00Z")
            .replace("2026-09-05T11:00:00Z", "2099-01-01T00:00:00Z")
    );
    let report = fresh
        .store
        .ingest(records(&packet), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    fresh
}

/// HTML, empty, wrong-shape and redirect answers to a lookup prove nothing:
/// each is an attempt without an observation, and authorize-retry and resolve
/// to FAILED stay refused; the provider's own not-found allows both.
async fn unclear_not_found_answers_leave_the_hold_unproven(kind: Kind) {
    let p = Provider::start("").await;
    let scenarios = ["html404", "empty404", "shape404", "redirect", "missing"];
    let pairs: Vec<(String, String)> = scenarios
        .iter()
        .map(|s| (format!("U-{s}"), format!("{s}:1")))
        .collect();
    let refs: Vec<(&str, &str)> = pairs
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    let fresh = store_of(kind, &p, &refs).await;
    let session = Session::new(fresh.store.clone(), actor());
    let looker = Looker::new(p.settings().client()).unwrap();
    for s in scenarios {
        let op = id(&format!("U-{s}"));
        holdfast::lookup::look_up(
            &session,
            &looker,
            &TestSecrets,
            Clock::Frozen(now()),
            &op,
            &rationale(),
        )
        .await
        .unwrap_or_else(|e| panic!("{s}: {e}"));
        let d = session.detail(&op).await.unwrap();
        let q = d.attempts.last().unwrap();
        assert_eq!(q.kind, AttemptKind::StatusQuery, "{s}");
        if s == "missing" {
            assert_eq!(d.observations.len(), 1);
            assert_eq!(allowed(&d, Action::AuthorizeRetry), Ok(()));
            assert_eq!(allowed(&d, Action::Resolve { to: State::Failed }), Ok(()));
            continue;
        }
        let expected = if s == "redirect" {
            "redirect_not_followed"
        } else {
            "unclear_not_found"
        };
        assert_eq!(q.error_type.as_deref(), Some(expected), "{s}");
        assert!(d.observations.is_empty(), "{s}: no observation");
        assert!(
            allowed(&d, Action::AuthorizeRetry).is_err(),
            "{s}: authorize-retry stays refused"
        );
        assert!(
            allowed(&d, Action::Resolve { to: State::Failed }).is_err(),
            "{s}: resolve to FAILED stays refused"
        );
    }
}

/// A business key redacted at ingest is never sent in its redacted form.
async fn a_redacted_business_key_is_never_sent(kind: Kind) {
    let p = Provider::start("").await;
    let fresh = store_of(
        kind,
        &p,
        &[("R1", "refund-sk_live_4eC39HqLyjWDarjtT1zdp7dc")],
    )
    .await;
    let d = fresh.store.detail(&Scope::Every, &id("R1")).await.unwrap();
    let stored = d.row.operation.business_key.clone().unwrap_or_default();
    assert!(stored.contains("‹redacted:"), "stored as {stored}");
    let session = Session::new(fresh.store.clone(), actor());
    let looker = Looker::new(p.settings().client()).unwrap();
    let err = holdfast::lookup::look_up(
        &session,
        &looker,
        &TestSecrets,
        Clock::Frozen(now()),
        &id("R1"),
        &rationale(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(
            err,
            holdfast::lookup::LookupError::Impossible(Impossible::Unsendable(_))
        ),
        "{err:?}"
    );
    assert!(err.to_string().contains("redacted at ingest"), "{err}");
    assert_eq!(p.requests(), 0, "nothing was sent");
    let d = fresh.store.detail(&Scope::Every, &id("R1")).await.unwrap();
    assert!(
        d.attempts.iter().all(|a| a.kind == AttemptKind::Request),
        "nothing is recorded"
    );
}

/// A provider answering 429 with a Retry-After in the past is asked once per
/// minimum interval, not as fast as `observe --watch` can loop.
async fn a_past_retry_after_does_not_make_the_observer_hammer(kind: Kind) {
    let p = Provider::start("Sat, 05 Sep 2026 10:40:00 GMT").await;
    let fresh = store_of(kind, &p, &[("H1", "throttle-date:1")]).await;
    let obs = observer_on(fresh.store.clone(), &p, 4, Clock::System);
    let obs = Observer {
        options: ObserveOptions {
            poll: std::time::Duration::from_millis(20),
            ..obs.options
        },
        ..obs
    };
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let watching = async {
        obs.watch(stopped, &|_| {}).await.unwrap();
    };
    let stopping = async {
        tokio::time::sleep(std::time::Duration::from_secs(3)).await;
        let _ = stop.send(true);
    };
    tokio::join!(watching, stopping);
    assert_eq!(
        p.asked("throttle-date:1"),
        1,
        "one lookup in 3 s, not one per loop"
    );
    let d = fresh.store.detail(&Scope::Every, &id("H1")).await.unwrap();
    let q = d.attempts.last().unwrap();
    assert_eq!(
        q.retry_after, None,
        "a past Retry-After is treated as absent"
    );
    let next = d.row.operation.next_observation_at.unwrap();
    assert!(
        next >= q.ended_at.unwrap() + Duration::milliseconds(29_999),
        "not sooner than the minimum interval: {next}"
    );
}

holdfast_on_both_backends!(
    unclear_not_found_answers_leave_the_hold_unproven,
    a_redacted_business_key_is_never_sent,
    a_past_retry_after_does_not_make_the_observer_hammer,
);
