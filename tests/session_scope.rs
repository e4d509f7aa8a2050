//! Tenant scope (G7) has one owner, the [`Session`]: every read path a surface
//! has — listings under any filter and order, queue counts, search, detail and
//! timeline, the audit rows, the dataset behind report, metrics and export, the
//! selection of bulk triage and mark-all, grants, the console's audit tab — is
//! walked by a reviewer of one tenant, and nothing of the other tenant comes
//! back. The same walk by a single-user session sees the other tenant, so each
//! check can fail. Runs on SQLite and on PostgreSQL.

use crate::support;

use std::fmt::Debug;
use std::sync::Arc;

use holdfast::core::access::{GrantOp, GrantRequest};
use holdfast::core::model::{Role, State};
use holdfast::core::rules::{Action, Actor, Rationale, Rule};
use holdfast::review::{self, ReviewError};
use holdfast::store::Scope;
use holdfast::store::{IngestMode, OperationFilter, Page, Session, SortOrder, Store};
use support::review::{id, now, records, reviewer};
use support::stores::{self, Fresh, Kind};

const PACKET: &str = include_str!("fixtures/review.jsonl");

/// What the other tenant's rows carry: its name, its operation's id (in the
/// operation, its attempt `A-H1-1` and observation `O-H1-1`, its audit rows).
const OTHER: [&str; 2] = ["harborline", "H1"];

fn leaks(value: &impl Debug) -> Option<&'static str> {
    let text = format!("{value:?}");
    OTHER.into_iter().find(|needle| text.contains(needle))
}

/// The review packet (pinehaven, and H1 of harborline) with a comment on an
/// operation of each tenant, then maya made owner of pinehaven and ana owner of
/// harborline (grant rows of both tenants in the audit log).
async fn two_tenants(kind: Kind) -> Fresh {
    let fresh = stores::fresh(kind).await;
    let store = Arc::clone(&fresh.store);
    let report = store
        .ingest(records(PACKET), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    let local = Session::new(Arc::clone(&store), reviewer("maya"));
    let rationale = Rationale::parse("checked the provider console").unwrap();
    for op in ["H1", "U1"] {
        review::apply(&local, &id(op), &Action::Comment, &rationale, None, now())
            .await
            .unwrap();
    }
    for (identity, tenant) in [("maya", "pinehaven"), ("ana", "harborline")] {
        let request = GrantRequest {
            op: GrantOp::Grant,
            identity: identity.into(),
            role: Role::Owner,
            tenant: tenant.into(),
        };
        let session = Session::new(
            Arc::clone(&store),
            Actor::from_grants("maya", None, &store.grants().await.unwrap()),
        );
        review::change_grant(&session, "maya", None, &request, None, now())
            .await
            .unwrap()
            .expect("a new grant");
    }
    fresh
}

/// Everything `session` can read, one entry per read path, each with its name.
async fn every_read(session: &Session) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut push = |name: String, value: &dyn Debug| out.push((name, format!("{value:?}")));
    let page = Page::first(1_000);
    let filters = [
        ("every operation", OperationFilter::default()),
        (
            "the queue",
            OperationFilter {
                queue: true,
                ..OperationFilter::default()
            },
        ),
        (
            "the other tenant by name",
            OperationFilter {
                tenants: vec!["harborline".into()],
                ..OperationFilter::default()
            },
        ),
        (
            "a forged scope",
            OperationFilter {
                scope: Scope::Tenants(vec!["harborline".into()]),
                ..OperationFilter::default()
            },
        ),
        (
            "held states",
            OperationFilter {
                states: State::HELD.to_vec(),
                ..OperationFilter::default()
            },
        ),
        (
            "search by id",
            OperationFilter {
                search: Some("h1".into()),
                ..OperationFilter::default()
            },
        ),
        (
            "search by target",
            OperationFilter {
                search: Some("target:h".into()),
                ..OperationFilter::default()
            },
        ),
    ];
    for (name, filter) in &filters {
        for sort in [
            SortOrder::Urgency,
            SortOrder::Age,
            SortOrder::Id,
            SortOrder::Deadline,
        ] {
            let listed = session.list(filter, sort, page.clone()).await.unwrap();
            push(format!("list {name} by {sort:?}"), &listed);
        }
        push(
            format!("counts of {name}"),
            &session.counts(filter, now()).await.unwrap(),
        );
        push(
            format!("select (bulk triage, mark-all) of {name}"),
            &review::select(session, filter).await.unwrap(),
        );
    }
    for op in ["H1", "U1"] {
        // Detail is also what `show`, `timeline`, the evidence pane and an
        // export by id read.
        // A refusal names the id asked for; what is checked is what came back.
        push(format!("detail {op}"), &session.detail(&id(op)).await.ok());
        push(
            format!("load {op}"),
            &review::load(session, &id(op)).await.ok(),
        );
    }
    push(
        "audit rows".into(),
        &session.audit_latest(u64::MAX / 2).await.unwrap(),
    );
    push(
        "the console's audit tab".into(),
        &holdfast::console::runner::audit_page(session, None)
            .await
            .unwrap(),
    );
    let data = session.dataset().await.unwrap();
    push(
        "report and metrics".into(),
        &holdfast::core::metrics::report(&data, now()),
    );
    push("dataset".into(), &data);
    let all = review::select(session, &OperationFilter::default())
        .await
        .unwrap();
    push(
        "export".into(),
        &holdfast::core::export::build(&all, session.actor(), now()),
    );
    push("grants".into(), &session.grants().await.unwrap());
    // The live signal carries the chain head and the link, no rows.
    push("watch".into(), &*session.watch().await.unwrap().borrow());
    out
}

async fn a_second_tenant_never_comes_back_from_any_read_path(kind: Kind) {
    let fresh = two_tenants(kind).await;
    let store: Arc<dyn Store> = Arc::clone(&fresh.store);
    let grants = store.grants().await.unwrap();

    let maya = Session::new(
        Arc::clone(&store),
        Actor::from_grants("maya", None, &grants),
    );
    assert_eq!(maya.scope().tenants(), Some(&["pinehaven".to_owned()][..]));
    let reads = every_read(&maya).await;
    for (name, text) in &reads {
        for needle in OTHER {
            assert!(
                !text.contains(needle),
                "{name} leaked {needle} to a pinehaven reviewer: {text}"
            );
        }
    }
    // Pinehaven's own data does come back, on the paths that carry rows.
    let seen = |name: &str| {
        reads
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, text)| text.contains("U1"))
    };
    for name in [
        "list every operation by Id",
        "detail U1",
        "audit rows",
        "dataset",
        "export",
    ] {
        assert_eq!(seen(name), Some(true), "{name} shows pinehaven");
    }
    match review::load(&maya, &id("H1")).await {
        Err(e @ ReviewError::NotFound { .. }) => {
            assert_eq!(e.rule(), Some(Rule::G7))
        }
        other => panic!("H1 must be hidden by G7, got {other:?}"),
    }

    // A session with no tenant sees nothing at all.
    let stranger = Session::new(Arc::clone(&store), Actor::from_grants("lee", None, &grants));
    for (name, text) in every_read(&stranger).await {
        if name == "watch" {
            continue;
        }
        for needle in ["U1", "harborline", "H1", "pinehaven"] {
            assert!(
                !text.contains(needle),
                "{name} leaked {needle} to someone with no grant: {text}"
            );
        }
    }

    // The same walk unscoped does see the other tenant, path by path.
    let everyone = Session::new(Arc::clone(&store), reviewer("root"));
    let open = every_read(&everyone).await;
    for name in [
        "list every operation by Urgency",
        "list the other tenant by name by Id",
        "list search by id by Id",
        "select (bulk triage, mark-all) of every operation",
        "detail H1",
        "load H1",
        "audit rows",
        "the console's audit tab",
        "dataset",
        "export",
        "grants",
    ] {
        let text = &open.iter().find(|(n, _)| n == name).expect(name).1;
        assert!(leaks(text).is_some(), "{name} shows H1 unscoped: {text}");
    }
}

/// U1 (pinehaven) depends on H1 (harborline, held). U1's own record names H1,
/// but whether H1 is held, and in which state, is harborline's to tell.
async fn a_hold_in_another_tenant_is_not_shown_on_a_dependent(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let store = Arc::clone(&fresh.store);
    let u1 = PACKET
        .lines()
        .find(|l| l.contains(r#""id":"U1""#))
        .expect("U1 in the packet");
    let packet = PACKET.replace(
        u1,
        &u1.replace(r#""depends_on":[]"#, r#""depends_on":["H1"]"#),
    );
    assert_ne!(packet, PACKET);
    let report = store
        .ingest(records(&packet), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    let local = Session::new(Arc::clone(&store), reviewer("maya"));
    let request = GrantRequest {
        op: GrantOp::Grant,
        identity: "maya".into(),
        role: Role::Owner,
        tenant: "pinehaven".into(),
    };
    review::change_grant(&local, "maya", None, &request, None, now())
        .await
        .unwrap();
    let maya = Session::new(
        Arc::clone(&store),
        Actor::from_grants("maya", None, &store.grants().await.unwrap()),
    );
    let everyone = Session::new(Arc::clone(&store), reviewer("root"));
    let filter = OperationFilter {
        search: Some("u1".into()),
        ..OperationFilter::default()
    };
    let page = Page::first(10);
    let held_of = |rows: Vec<holdfast::store::OperationRow>| -> Vec<String> {
        rows.iter()
            .find(|r| r.operation.id.as_str() == "U1")
            .expect("U1 listed")
            .held_dependencies
            .iter()
            .map(|d| d.as_str().to_owned())
            .collect()
    };
    let (open, _) = everyone
        .list(&filter, SortOrder::Id, page.clone())
        .await
        .unwrap();
    assert_eq!(held_of(open), ["H1"]);
    let (scoped, _) = maya.list(&filter, SortOrder::Id, page).await.unwrap();
    assert!(held_of(scoped).is_empty());

    let open = everyone.detail(&id("U1")).await.unwrap();
    assert_eq!(open.dependencies.len(), 1);
    assert_eq!(open.row.held_dependencies.len(), 1);
    let scoped = maya.detail(&id("U1")).await.unwrap();
    assert!(scoped.dependencies.is_empty(), "{:?}", scoped.dependencies);
    assert!(scoped.row.held_dependencies.is_empty());
}

holdfast_on_both_backends!(
    a_second_tenant_never_comes_back_from_any_read_path,
    a_hold_in_another_tenant_is_not_shown_on_a_dependent,
);
