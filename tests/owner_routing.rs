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
use holdfast::core::routing::OwnerRole;
use holdfast::core::rules::{Action, Actor, Rationale, Rule, decide};
use holdfast::store::{IngestMode, Scope, Store};
use support::cli::Cli;
use support::review::{id, records};
use support::stores::{self, Fresh, Kind};

/// The owners every contract of the packet names, and the review T02 asks.
const OWNERS: &str = r#""owners":{"integration":"team:integrations","security":"team:security","business":"team:ledger","incident":"team:incident"}"#;

/// The demo packet with every contract naming [`OWNERS`] and T02 asking
/// financial review.
fn packet() -> String {
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
    let report = store
        .ingest(
            records(&packet()),
            IngestMode::Strict,
            "test",
            at("2026-09-05T10:10:00Z"),
        )
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

/// On PostgreSQL the database holds a login to G13 too: a login of the
/// application group committing an acceptance of a T02 hold straight to the
/// store (no rules asked) is refused by the database until it holds
/// `domain:financial`; then the same commit goes in and the chain verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_the_database_refuses_a_login_recovery_without_the_domain_grant() {
    skip_without_postgres!();
    let app = stores::ApplicationLogin::new("hf_domain").await;
    let admin = app.fresh.store.as_ref();
    ingest_packet(admin).await;
    let login = app.login.name.clone();
    grant(admin, "maya", Role::Owner).await;
    grant(admin, &login, Role::Owner).await;
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
