//! Owners by the unresolved state and domain review (DESIGN §2, G13) on both
//! backends: the demo packet with its contracts naming an owner per state and
//! T02 asking financial review, each hold routed by what it is, and recovery
//! on T02's holds refused without the `domain:financial` grant, allowed with
//! it, and judged unlawful by `audit verify` when written without it.

use crate::support;

use chrono::{DateTime, Utc};
use holdfast::core::access::{GrantOp, GrantRequest, decide_grant};
use holdfast::core::audit::{ChainStatus, seal};
use holdfast::core::clock::parse_instant;
use holdfast::core::evidence::bundle;
use holdfast::core::model::{Role, State};
use holdfast::core::routing;
use holdfast::core::routing::OwnerRole;
use holdfast::core::rules::{Action, Actor, Rationale, Rule, decide};
use holdfast::store::{IngestMode, OperationFilter, Page, Scope, SortOrder, Store};
use holdfast::wire::Numbered;
use support::cli::Cli;
use support::review::{id, records};
use support::stores::{self, Fresh, Kind};

/// The owners every contract of the packet names, and the review T02 asks.
const OWNERS: &str = r#""owners":{"integration":"team:integrations","security":"team:security","business":"team:ledger","incident":"team:incident"}"#;

/// The demo packet with every contract naming [`OWNERS`] and T02 asking
/// financial review.
pub(crate) fn packet() -> String {
    holdfast::DEMO_PACKET
        .lines()
        .map(|line| {
            if !line.starts_with(r#"{"type":"contract""#) {
                return line.to_owned();
            }
            let review = if line.contains(r#""tool":"T02""#) {
                r#","domain_review":"financial""#
            } else {
                ""
            };
            format!("{},{OWNERS}{review}}}", &line[..line.len() - 1])
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn at(text: &str) -> DateTime<Utc> {
    parse_instant(text).unwrap()
}

/// [`packet`] ingested into `store`.
async fn ingest_packet(store: &dyn Store) {
    ingest_all(store, records(&packet()), "test").await;
}

/// `lines` ingested into `store` by `by`, every one of them taken.
async fn ingest_all(store: &dyn Store, lines: Vec<Numbered>, by: &str) {
    let report = store
        .ingest(lines, IngestMode::Strict, by, at("2026-09-05T10:10:00Z"))
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
}

async fn loaded(kind: Kind) -> Fresh {
    let fresh = stores::fresh(kind).await;
    ingest_packet(fresh.store.as_ref()).await;
    fresh
}

/// Where `op` is routed at `now`: (owner, role, why).
async fn routed(store: &dyn Store, op: &str, now: &str) -> (String, OwnerRole, String) {
    let detail = store.detail(&Scope::Every, &id(op)).await.unwrap();
    let b = bundle(&detail, &Actor::local("maya", None), at(now));
    let r = b.routed.expect("the contract names owners");
    (r.owner, r.role, r.why)
}

async fn each_state_is_routed_to_its_owner(kind: Kind) {
    let fresh = loaded(kind).await;
    let store = fresh.store.as_ref();
    let early = "2026-09-05T10:10:00Z";
    // auth_denied: access.
    let (owner, role, why) = routed(store, "F01", early).await;
    assert_eq!(
        (owner.as_str(), role, why.as_str()),
        ("team:security", OwnerRole::Security, "auth_denied")
    );
    // validation_failed: schema and provider contracts.
    for op in ["F06", "F08"] {
        let (owner, role, _) = routed(store, op, early).await;
        assert_eq!(
            (owner.as_str(), role),
            ("team:integrations", OwnerRole::Integration),
            "{op}"
        );
    }
    // The record found twice: record truth is the business owner's.
    let (owner, role, why) = routed(store, "F28", early).await;
    assert_eq!(
        (owner.as_str(), role),
        ("team:ledger", OwnerRole::Business),
        "{why}"
    );
    assert_eq!(why, "duplicate_effect finding");
    // UNKNOWN and PARTIAL inside their window stay with their owner ...
    for op in ["F09", "F23"] {
        let (owner, role, why) = routed(store, op, early).await;
        assert_eq!(role, OwnerRole::Owner, "{op}: {why}");
        assert!(!owner.starts_with("team:"), "{op}: {owner}");
    }
    // ... and past it go to the incident owner (F09's window ends 11:05,
    // F23's 11:30).
    for op in ["F09", "F23"] {
        let (owner, role, why) = routed(store, op, "2026-09-05T11:31:00Z").await;
        assert_eq!(
            (owner.as_str(), role),
            ("team:incident", OwnerRole::Incident),
            "{op}"
        );
        assert!(why.ends_with("past its observation window"), "{why}");
    }
    // A reviewer's assignment stands above the routing.
    let action = Action::Assign {
        owner: "rev:maya".into(),
    };
    let commit = decided(
        store,
        "F01",
        &action,
        &Actor::local("maya", Some("RP03".into())),
    )
    .await
    .unwrap();
    store.commit(commit).await.unwrap();
    let (owner, role, _) = routed(store, "F01", early).await;
    assert_eq!((owner.as_str(), role), ("rev:maya", OwnerRole::Assigned));
}

/// A request of F28 after the lookup that found its duplicate.
const LATER_REQUEST: &str = r#"{"type":"attempt","id":"A990","operation":"F28","seq":3,"kind":"request","layer":"orchestrator","started_at":"2026-09-05T10:55:00Z","ended_at":"2026-09-05T10:55:01Z","phase":"response_received","outcome":"http_error","http_status":503,"error_type":"unavailable","retry_after":null,"provider_request_id":null,"request_hash":"sha256:2fa854e4a6a6f703ca5c6c8933ddc6fda90d751af052d886d2d58b7ce71573be","response_hash":null,"resend_count":0,"replayed":null,"trace_id":null,"response_excerpt":null}"#;

/// Every held operation's queue row at `now`: (id, owner shown) in id order.
async fn queue_owners(store: &dyn Store, now: &str, owners: &[&str]) -> Vec<(String, String)> {
    let filter = OperationFilter {
        queue: true,
        owners: owners.iter().map(|o| (*o).to_owned()).collect(),
        now: Some(at(now)),
        ..OperationFilter::default()
    };
    let (rows, total) = store
        .list(&filter, SortOrder::Id, Page::first(1_000))
        .await
        .unwrap();
    assert_eq!(rows.len() as u64, total);
    rows.iter()
        .map(|r| (r.operation.id.to_string(), r.owner().to_owned()))
        .collect()
}

/// The queue's OWNER column and `owner:` filter say, for every hold, what the
/// routing of its whole detail says at the same instant: the kept route and the
/// contract owners the store writes as the evidence arrives agree with the
/// rules, before and after the observation windows end, after an assignment,
/// and after a new request hides the finding that routed a hold.
async fn the_queue_lists_each_hold_under_its_routed_owner(kind: Kind) {
    let fresh = loaded(kind).await;
    let store = fresh.store.as_ref();
    let early = "2026-09-05T10:10:00Z";
    let late = "2026-09-05T11:31:00Z";
    async fn check(store: &dyn Store, now: &str) -> Vec<(String, String)> {
        let shown = queue_owners(store, now, &[]).await;
        assert!(shown.len() > 10, "{shown:?}");
        for (op, owner) in &shown {
            let detail = store.detail(&Scope::Every, &id(op)).await.unwrap();
            let routed = routing::of(&detail, at(now));
            assert_eq!(owner, &routed.owner, "{op} at {now}: {routed}");
        }
        // The filter lists exactly the rows shown under each owner.
        let mut owners: Vec<&str> = shown.iter().map(|(_, o)| o.as_str()).collect();
        owners.sort_unstable();
        owners.dedup();
        for owner in owners {
            let filtered = queue_owners(store, now, &[owner]).await;
            let expected: Vec<(String, String)> =
                shown.iter().filter(|(_, o)| o == owner).cloned().collect();
            assert_eq!(filtered, expected, "owner:{owner} at {now}");
        }
        shown
    }
    let before = check(store, early).await;
    let owner_of = |rows: &[(String, String)], op: &str| {
        rows.iter().find(|(o, _)| o == op).map(|(_, w)| w.clone())
    };
    assert_eq!(owner_of(&before, "F01").as_deref(), Some("team:security"));
    assert_eq!(owner_of(&before, "F28").as_deref(), Some("team:ledger"));
    assert_ne!(owner_of(&before, "F09").as_deref(), Some("team:incident"));
    let after = check(store, late).await;
    assert_eq!(owner_of(&after, "F09").as_deref(), Some("team:incident"));
    assert_eq!(owner_of(&after, "F23").as_deref(), Some("team:incident"));

    // A reviewer's assignment stands above the routing, in the queue too.
    let action = Action::Assign {
        owner: "rev:maya".into(),
    };
    let actor = Actor::local("maya", Some("RP03".into()));
    let commit = decided(store, "F01", &action, &actor).await.unwrap();
    store.commit(commit).await.unwrap();
    assert_eq!(
        owner_of(&check(store, early).await, "F01").as_deref(),
        Some("rev:maya")
    );

    // A request after the lookup that found F28's duplicate: that finding no
    // longer speaks for the record, and the hold goes back to its owner.
    let report = store
        .ingest(
            records(LATER_REQUEST),
            IngestMode::Strict,
            "test",
            at(early),
        )
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    let shown = check(store, early).await;
    assert_ne!(owner_of(&shown, "F28").as_deref(), Some("team:ledger"));
}

/// What `actor` may commit for `action` on `op` now, or the refusal.
async fn decided(
    store: &dyn Store,
    op: &str,
    action: &Action,
    actor: &Actor,
) -> Result<holdfast::store::Commit, holdfast::core::refusal::Refusal> {
    let detail = store.detail(&Scope::Every, &id(op)).await.unwrap();
    decide(
        &detail,
        action,
        actor,
        &Rationale::parse("the finance desk reviewed the refund").unwrap(),
        detail.row.version,
        at("2026-09-05T10:10:00Z"),
    )
    .map(|effect| effect.commit)
}

/// Grants `role` on pinehaven to `identity`, by maya (the first grant makes
/// maya its owner).
async fn grant(store: &dyn Store, identity: &str, role: Role) {
    let all = store.grants().await.unwrap();
    let change = decide_grant(
        &all,
        "maya",
        Some("RP03".into()),
        &GrantRequest {
            op: GrantOp::Grant,
            identity: identity.into(),
            role,
            tenant: "pinehaven".into(),
        },
        None,
        at("2026-09-05T10:05:00Z"),
    )
    .unwrap()
    .unwrap();
    store.change_grant(change).await.unwrap();
}

async fn actor(store: &dyn Store, identity: &str) -> Actor {
    Actor::from_grants(
        identity,
        Some("RP03".into()),
        &store.grants().await.unwrap(),
    )
}

fn accept() -> Action {
    Action::Accept {
        repair_ref: "FIN-7".into(),
    }
}

async fn recovery_needs_the_domain_grant(kind: Kind) {
    let fresh = loaded(kind).await;
    let store = fresh.store.as_ref();
    // Single-user mode: the local user holds every role, the domain's too.
    assert!(
        decided(
            store,
            "F01",
            &accept(),
            &Actor::local("maya", Some("RP03".into()))
        )
        .await
        .is_ok()
    );
    grant(store, "maya", Role::Owner).await;
    grant(store, "bob", Role::Owner).await;
    grant(store, "bob", Role::Approver).await;
    let bob = actor(store, "bob").await;
    for (op, action) in [("F01", accept()), ("F06", accept())] {
        let refused = decided(store, op, &action, &bob).await.unwrap_err();
        assert_eq!(refused.rule, Rule::G13, "{refused}");
        for words in [
            "financial review",
            "domain:financial",
            "tenant pinehaven",
            "holdfast grant bob --role domain:financial --tenant pinehaven",
        ] {
            assert!(refused.reason.contains(words), "{words:?} not in {refused}");
        }
    }
    // Not recovery: a comment or an assignment needs no domain grant.
    assert!(decided(store, "F01", &Action::Comment, &bob).await.is_ok());
    // Another tool's hold (T03, no domain review): accepted without it.
    assert!(decided(store, "F26", &accept(), &bob).await.is_ok());
    // With the grant, the same acceptance commits.
    grant(store, "bob", Role::DomainFinancial).await;
    let bob = actor(store, "bob").await;
    let commit = decided(store, "F01", &accept(), &bob).await.unwrap();
    store.commit(commit).await.unwrap();
    let detail = store.detail(&Scope::Every, &id("F01")).await.unwrap();
    assert_eq!(detail.row.operation.state, State::Accepted);
    assert!(matches!(
        store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
}

async fn a_recovery_recorded_without_the_grant_is_unlawful(kind: Kind) {
    let fresh = loaded(kind).await;
    let store = fresh.store.as_ref();
    grant(store, "maya", Role::Owner).await;
    grant(store, "carol", Role::Owner).await;
    // The decision as it would be with the grant, written behind the rules'
    // back without it: hashed as the store hashes, the state moved with it.
    let with_grant = as_if_granted(actor(store, "carol").await);
    let commit = decided(store, "F06", &accept(), &with_grant).await.unwrap();
    let head = store.head_seq().await.unwrap();
    let last = store.audit(head, 1).await.unwrap().remove(0);
    let row = seal(&last.hash, head + 1, commit.audit.clone());
    fresh
        .execute(&format!(
            "{}; UPDATE operations SET state = 'ACCEPTED', version = version + 1, queued = 0 WHERE id = 'F06'",
            stores::audit_insert_sql(&row)
        ))
        .await
        .unwrap();
    match store.verify().await.unwrap() {
        ChainStatus::Broken { seq, reason } => {
            assert_eq!(seq, head + 1, "{reason}");
            assert!(
                reason.contains("G13") && reason.contains("domain:financial"),
                "{reason}"
            );
        }
        intact => panic!("an acceptance without the domain grant went unnoticed: {intact:?}"),
    }
}

holdfast_on_both_backends!(
    each_state_is_routed_to_its_owner,
    the_queue_lists_each_hold_under_its_routed_owner,
    recovery_needs_the_domain_grant,
    a_recovery_recorded_without_the_grant_is_unlawful,
);

/// The command line: `show` says who a hold is routed to and why, and
/// `review … accept` on a T02 hold is refused with G13 until the reviewer holds
/// `domain:financial` (`holdfast grant`).
#[test]
fn on_the_command_line_show_names_the_routed_owner_and_review_obeys_g13() {
    let cli = Cli::empty();
    let path = cli.dir.path().join("packet.jsonl");
    std::fs::write(&path, packet()).unwrap();
    cli.run("loader", &["ingest", &path.to_string_lossy()])
        .expect_code(0);
    let shown = cli
        .run("maya", &["show", "F01", "--json"])
        .expect_code(0)
        .json();
    assert_eq!(shown["routed"]["owner"], "team:security");
    assert_eq!(shown["routed"]["role"], "security");
    assert_eq!(shown["routed"]["why"], "auth_denied");
    let text = cli.run("maya", &["show", "F01"]).expect_code(0).stdout;
    assert!(text.contains("team:security"), "{text}");
    assert!(text.contains("security (auth_denied)"), "{text}");

    for (who, role) in [("maya", "owner"), ("bob", "owner")] {
        cli.run(
            "maya",
            &["grant", who, "--role", role, "--tenant", "pinehaven"],
        )
        .expect_code(0);
    }
    let run = cli
        .review("bob", "F01", "accept", &["--repair-ref", "FIN-7"])
        .refused("G13");
    assert!(run.stderr.contains("domain:financial"), "{}", run.stderr);
    assert_eq!(cli.state("bob", "F01"), "BLOCKED");
    cli.run(
        "maya",
        &[
            "grant",
            "bob",
            "--role",
            "domain:financial",
            "--tenant",
            "pinehaven",
        ],
    )
    .expect_code(0);
    cli.review("bob", "F01", "accept", &["--repair-ref", "FIN-7"])
        .expect_code(0);
    assert_eq!(cli.state("bob", "F01"), "ACCEPTED");
    cli.run("auditor", &["audit", "verify"]).expect_code(0);
}

/// `actor` as if it also held `domain:financial` on pinehaven: what the rules
/// would let it commit with the grant, for a writer that skips the rules.
fn as_if_granted(mut actor: Actor) -> Actor {
    if let Some(grants) = actor.grants.as_mut() {
        let mut domain = grants[0].clone();
        domain.role = Role::DomainFinancial;
        grants.push(domain);
    }
    actor
}

/// A PostgreSQL store holding [`packet`], with maya its owner and a login of
/// the application group (named `name`) holding `role` on pinehaven: the
/// store, and the login's name.
async fn with_app_login(name: &str, role: Role) -> (stores::ApplicationLogin, String) {
    let app = stores::ApplicationLogin::new(name).await;
    let admin = app.fresh.store.as_ref();
    ingest_packet(admin).await;
    let login = app.login.name.clone();
    grant(admin, "maya", Role::Owner).await;
    grant(admin, &login, role).await;
    (app, login)
}

/// On PostgreSQL the database holds a login to G13 too: a login of the
/// application group committing an acceptance of a T02 hold straight to the
/// store (no rules asked) is refused by the database until it holds
/// `domain:financial`; then the same commit goes in and the chain verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_the_database_refuses_a_login_recovery_without_the_domain_grant() {
    skip_without_postgres!();
    let (app, login) = with_app_login("hf_domain", Role::Owner).await;
    let admin = app.fresh.store.as_ref();
    let door = holdfast::store::postgres::PgStore::connect(&app.url())
        .await
        .unwrap();
    let commit = decided(
        admin,
        "F01",
        &accept(),
        &as_if_granted(actor(admin, &login).await),
    )
    .await
    .unwrap();
    let refused = door.commit(commit.clone()).await.unwrap_err().to_string();
    assert!(
        refused.contains("recovery needs the domain's review (G13)")
            && refused.contains("domain:financial"),
        "{refused}"
    );
    let detail = admin.detail(&Scope::Every, &id("F01")).await.unwrap();
    assert_eq!(detail.row.operation.state, State::Blocked);
    grant(admin, &login, Role::DomainFinancial).await;
    door.commit(commit).await.unwrap();
    let detail = admin.detail(&Scope::Every, &id("F01")).await.unwrap();
    assert_eq!(detail.row.operation.state, State::Accepted);
    assert!(matches!(
        admin.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
}

/// On PostgreSQL the routes are the database's: a login of the application
/// group can neither move a hold's route nor name a contract's owner for a
/// role by writing the tables itself, while the evidence it ingests through
/// its own door moves the route as the rules say (a new request hides the
/// finding that routed F28 to its business owner).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_login_cannot_route_a_hold_itself() {
    skip_without_postgres!();
    let (app, login) = with_app_login("hf_route", Role::Ingest).await;
    let admin = app.fresh.store.as_ref();
    let early = "2026-09-05T10:10:00Z";
    let ledger = queue_owners(admin, early, &["team:ledger"]).await;
    assert_eq!(ledger, vec![("F28".to_owned(), "team:ledger".to_owned())]);

    use sqlx::Connection;
    let mut raw = sqlx::PgConnection::connect(&app.url()).await.unwrap();
    for forged in [
        "UPDATE operations SET route = 'business' WHERE id = 'F09'",
        "INSERT INTO contract_owners (tool, role, owner) VALUES ('T03', 'incident', 'mallory')",
        "DELETE FROM contract_owners WHERE tool = 'T01'",
    ] {
        let refused = sqlx::query(forged)
            .execute(&mut raw)
            .await
            .unwrap_err()
            .to_string();
        assert!(refused.contains("permission denied"), "{forged}: {refused}");
    }
    raw.close().await.unwrap();
    assert_eq!(
        queue_owners(admin, early, &["team:ledger"]).await,
        ledger,
        "nothing moved"
    );
    assert!(queue_owners(admin, early, &["mallory"]).await.is_empty());

    let door = holdfast::store::postgres::PgStore::connect(&app.url())
        .await
        .unwrap();
    let report = door
        .ingest(
            records(LATER_REQUEST),
            IngestMode::Strict,
            &login,
            at(early),
        )
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    assert!(
        queue_owners(admin, early, &["team:ledger"])
            .await
            .is_empty()
    );
    assert!(matches!(
        admin.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
}

/// Operations whose kept route is not the one `operation_routes` derives from
/// their records, and operations routed at all.
async fn routes_kept(url: &str) -> (i64, i64) {
    use sqlx::Connection;
    let mut owner = sqlx::PgConnection::connect(url).await.unwrap();
    let counted = sqlx::query_as(
        "SELECT (SELECT count(*) FROM operations o JOIN operation_routes r ON r.id = o.id \
                 WHERE o.route IS DISTINCT FROM r.route), \
                (SELECT count(*) FROM operations WHERE route IS NOT NULL)",
    )
    .fetch_one(&mut owner)
    .await
    .unwrap();
    owner.close().await.unwrap();
    counted
}

/// PostgreSQL keeps the route per statement (migration `trigger_costs`): after
/// statements that bring many operations' requests and observations at once,
/// and a later request by a login of the application group, every
/// operation's kept route is the one its records derive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_every_kept_route_is_the_one_its_records_derive() {
    skip_without_postgres!();
    let (app, login) = with_app_login("hf_routes_kept", Role::Ingest).await;
    let admin = app.fresh.store.as_ref();
    let (wrong, routed) = routes_kept(&app.fresh.url).await;
    assert_eq!(wrong, 0, "after the packet");
    assert!(routed > 0, "the packet routes some holds");

    let door = holdfast::store::postgres::PgStore::connect(&app.url())
        .await
        .unwrap();
    let copies: Vec<_> = ["R1-", "R2-", "R3-"]
        .into_iter()
        .flat_map(support::packets::renamed_demo)
        .collect();
    ingest_all(admin, copies, "test").await;
    ingest_all(&door, records(LATER_REQUEST), &login).await;
    let (wrong, routed_after) = routes_kept(&app.fresh.url).await;
    assert_eq!(wrong, 0, "after the application login's ingests");
    assert!(routed_after > routed, "the copies route holds of their own");
}
