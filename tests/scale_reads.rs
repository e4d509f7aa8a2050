//! The reads that stay cheap on a large store, shown to mean what the scans they
//! replace meant, on both backends: the header counts and listing totals read
//! from the counts the triggers keep (`operation_counts`) agree with a count of
//! the operations after ingest, a review, a grant-free copy; and the audit tab's
//! keyset pages, in any scope, add up to exactly the rows of that scope.

use crate::support;

use holdfast::core::ids::OperationId;
use holdfast::core::rules::Actor;
use holdfast::store::{OperationFilter, Page, Scope, Session, SortOrder, Start, Store, sql};
use sqlx::Row;
use support::review::{comment, loaded, now, resolve_f09};
use support::stores::{self, Fresh, Kind};

type Counted = Vec<(String, String, i64, i64)>;

/// The operations' day of next observation, as `due_counts` buckets it.
const DUE_DAY: &str =
    "(next_observation_ms - ((next_observation_ms % 86400000) + 86400000) % 86400000) / 86400000";

/// Rows of four columns read by `sql` on the store's own pool (sqlx's row types
/// differ by backend).
async fn rows(fresh: &Fresh, sql: String) -> Counted {
    macro_rules! read {
        ($pool:expr) => {
            sqlx::query(sqlx::AssertSqlSafe(sql))
                .fetch_all($pool)
                .await
                .unwrap()
                .iter()
                .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
                .collect::<Counted>()
        };
    }
    match (&fresh.sqlite, &fresh.postgres) {
        (Some(s), _) => read!(s.pool()),
        (_, Some(p)) => read!(p.pool()),
        (None, None) => unreachable!("a fresh store has one backend"),
    }
}

async fn assert_kept(fresh: &Fresh, when: &str) {
    // (tenant, state, queued, n) as the triggers kept them, and as a scan counts.
    let kept = "SELECT tenant, state, CAST(queued AS BIGINT) AS queued, CAST(n AS BIGINT) AS n \
                FROM operation_counts WHERE n > 0 ORDER BY tenant, state, queued";
    let scanned = "SELECT tenant, state, CAST(queued AS BIGINT) AS queued, count(*) AS n \
                   FROM operations GROUP BY tenant, state, queued ORDER BY tenant, state, queued";
    let (kept, scanned) = (
        rows(fresh, kept.into()).await,
        rows(fresh, scanned.into()).await,
    );
    assert!(!scanned.is_empty(), "{when}: the store holds operations");
    assert_eq!(
        kept, scanned,
        "{when}: the kept counts drifted from the operations"
    );
    // (tenant, day, -, n) of the queued operations due each day.
    let kept = "SELECT tenant, CAST(due_day AS TEXT), CAST(0 AS BIGINT), CAST(n AS BIGINT) \
                FROM due_counts WHERE n > 0 ORDER BY tenant, due_day";
    let scanned = format!(
        "SELECT tenant, CAST({DUE_DAY} AS TEXT), CAST(0 AS BIGINT), count(*) FROM operations \
         WHERE queued = 1 AND next_observation_ms IS NOT NULL \
         GROUP BY tenant, {DUE_DAY} ORDER BY tenant, {DUE_DAY}"
    );
    let (kept, scanned) = (rows(fresh, kept.into()).await, rows(fresh, scanned).await);
    assert_eq!(kept, scanned, "{when}: the kept due days drifted");
}

/// The overdue count through the kept days and through the due index alone, at
/// every held operation's next observation and a millisecond either side (the
/// day's edges included when one falls there). Returns how many holds were
/// overdue over all those instants.
async fn overdue_agrees_at_every_edge(fresh: &Fresh) -> u64 {
    let instants = rows(
        fresh,
        "SELECT CAST(next_observation_ms AS TEXT), CAST(0 AS TEXT), CAST(0 AS BIGINT), \
         CAST(0 AS BIGINT) FROM operations WHERE queued = 1 AND next_observation_ms IS NOT NULL"
            .into(),
    )
    .await;
    let store = fresh.store.as_ref();
    let kept = OperationFilter::default();
    let scanned = OperationFilter {
        tenants: vec!["pinehaven".into()],
        ..OperationFilter::default()
    };
    // The demo's operations are all pinehaven's: the filter keeps every one.
    let mut seen = 0;
    for (at, ..) in instants {
        let at: i64 = at.parse().unwrap();
        for ms in [at - 1, at, at + 1, at - at.rem_euclid(86_400_000)] {
            let now = chrono::DateTime::from_timestamp_millis(ms).unwrap();
            let (k, s) = (
                store.counts(&kept, now).await.unwrap(),
                store.counts(&scanned, now).await.unwrap(),
            );
            assert_eq!(k.overdue, s.overdue, "overdue at {now}");
            seen += k.overdue;
        }
    }
    seen
}

/// The same counts through the kept path (scope only) and the scanning path (a
/// filter naming every tenant, which the counts table cannot serve).
async fn both_paths_agree(store: &dyn Store) {
    let kept = OperationFilter::default();
    let scanned = OperationFilter {
        tenants: vec!["pinehaven".into()],
        ..OperationFilter::default()
    };
    assert_eq!(
        store.counts(&kept, now()).await.unwrap(),
        store.counts(&scanned, now()).await.unwrap()
    );
    for queue in [false, true] {
        let total = |f: OperationFilter| async move {
            store
                .list(
                    &OperationFilter { queue, ..f },
                    SortOrder::Id,
                    Page::first(1),
                )
                .await
                .unwrap()
                .1
        };
        assert_eq!(total(kept.clone()).await, total(scanned.clone()).await);
    }
}

async fn counts_follow_every_write(kind: Kind) {
    let fresh = loaded(kind).await;
    assert_kept(&fresh, "after ingest").await;
    both_paths_agree(fresh.store.as_ref()).await;
    assert!(
        overdue_agrees_at_every_edge(&fresh).await > 0,
        "some hold of the demo was overdue at some instant"
    );
    let before = fresh
        .store
        .counts(&OperationFilter::default(), now())
        .await
        .unwrap();

    let commit = resolve_f09(fresh.store.as_ref(), "maya").await;
    fresh.store.commit(commit).await.unwrap();
    let commit = comment(fresh.store.as_ref(), "F09", "checked twice").await;
    fresh.store.commit(commit).await.unwrap();
    assert_kept(&fresh, "after a resolve and a comment").await;
    both_paths_agree(fresh.store.as_ref()).await;
    overdue_agrees_at_every_edge(&fresh).await;
    let after = fresh
        .store
        .counts(&OperationFilter::default(), now())
        .await
        .unwrap();
    assert_ne!(
        before.by_state, after.by_state,
        "the resolve moved F09 out of its held state"
    );

    let copy = stores::fresh(kind).await;
    copy.store.load_from(fresh.store.as_ref()).await.unwrap();
    assert_kept(&copy, "after a copy").await;
    assert_eq!(
        copy.store
            .counts(&OperationFilter::default(), now())
            .await
            .unwrap(),
        after
    );
    // Nothing is counted for a tenant no operation belongs to.
    let elsewhere = OperationFilter {
        scope: Scope::Tenants(vec!["nobody".into()]),
        ..OperationFilter::default()
    };
    let none = fresh.store.counts(&elsewhere, now()).await.unwrap();
    assert!(none.by_state.is_empty());
}

async fn audit_pages_add_up_to_the_scope(kind: Kind) {
    let fresh = loaded(kind).await;
    for text in [
        "first note on the ticket",
        "second note on the ticket",
        "third note on the ticket",
    ] {
        let commit = comment(fresh.store.as_ref(), "F09", text).await;
        fresh.store.commit(commit).await.unwrap();
    }
    let store = fresh.store.as_ref();
    for scope in [
        Scope::Every,
        Scope::Tenants(vec!["pinehaven".into()]),
        Scope::Tenants(vec!["nobody".into()]),
    ] {
        let whole = store.audit_latest(&scope, None, 10_000).await.unwrap();
        let mut paged = Vec::new();
        let mut before = None;
        loop {
            let page = store.audit_latest(&scope, before, 2).await.unwrap();
            assert!(page.len() <= 2, "a page holds at most its limit");
            let Some(last) = page.last() else { break };
            before = Some(last.seq);
            paged.extend(page);
        }
        assert_eq!(
            paged, whole,
            "{scope:?}: the pages are the scope's rows, newest first"
        );
        if let Scope::Tenants(t) = &scope
            && t == &["nobody"]
        {
            assert!(whole.is_empty(), "another tenant's rows are not shown");
        } else {
            assert!(whole.len() > 3, "{scope:?}: the rows are read");
            assert!(
                whole.windows(2).all(|w| w[0].seq > w[1].seq),
                "newest first"
            );
        }
    }
}

/// Bulk triage and `export --filter` read their selection in keyset pages: at
/// any page size, every matching operation comes once, in the queue's order.
async fn a_selection_in_keyset_pages_covers_every_row_once(kind: Kind) {
    let fresh = loaded(kind).await;
    let session = Session::new(fresh.store.clone(), Actor::local("maya", None));
    for filter in [
        OperationFilter::default(),
        OperationFilter {
            queue: true,
            ..OperationFilter::default()
        },
    ] {
        let all = session
            .matching_ids(&filter, SortOrder::Urgency)
            .await
            .unwrap();
        assert!(all.len() > 1, "more than one page of the smallest size");
        for page in [1, 2, 3, 500] {
            let selected: Vec<_> = holdfast::review::select_in_pages(&session, &filter, page)
                .await
                .unwrap()
                .into_iter()
                .map(|d| d.row.operation.id)
                .collect();
            assert_eq!(selected, all, "pages of {page}");
        }
    }
}

/// Bulk triage judges its selection a page at a time: at any page size the
/// plan is the dry run over the whole selection read at once (same lines, same
/// order, same versions), and applying it commits once per operation, each
/// against the version the plan read, so the same plan applied again changes
/// nothing.
async fn bulk_triage_in_pages_is_the_whole_dry_run_and_applies_each_once(kind: Kind) {
    use holdfast::core::rules::{Action, Rationale};
    use holdfast::review::{self, ReviewError};
    let fresh = stores::fresh(kind).await;
    support::console::ingest(fresh.store.as_ref(), support::console::PACKET).await;
    let session = Session::new(fresh.store.clone(), Actor::local("maya", None));
    let filter = OperationFilter::default();
    let action = Action::Comment;
    let rationale = Rationale::parse("checked against the provider, one page at a time").unwrap();
    let whole = review::select(&session, &filter).await.unwrap();
    assert!(
        whole.len() > 4,
        "more than a page of the smallest sizes: {}",
        whole.len()
    );
    let expected =
        holdfast::core::triage::dry_run(&whole, &action, session.actor(), &rationale, now());
    for page in [1, 2, 500] {
        let plan =
            review::triage_plan_in_pages(&session, &filter, &action, &rationale, now(), page)
                .await
                .unwrap();
        let lines: Vec<_> = plan.iter().map(|p| p.line.clone()).collect();
        assert_eq!(lines, expected, "pages of {page}");
        for p in &plan {
            let read = whole.iter().find(|d| d.row.operation.id == p.line.id);
            assert_eq!(
                Some(p.version),
                read.map(|d| d.row.version),
                "{}",
                p.line.id
            );
        }
    }
    let audit_rows = |details: &[holdfast::core::detail::OperationDetail]| {
        details
            .iter()
            .map(|d| (d.row.operation.id.clone(), d.audit.len()))
            .collect::<Vec<_>>()
    };
    let before = audit_rows(&whole);
    let plan = review::triage_plan_in_pages(&session, &filter, &action, &rationale, now(), 1)
        .await
        .unwrap();
    for planned in &plan {
        review::triage_apply_planned(&session, planned, &action, &rationale, now())
            .await
            .unwrap();
    }
    let after = audit_rows(&review::select(&session, &filter).await.unwrap());
    let added: Vec<_> = before
        .iter()
        .map(|(id, n)| {
            let now_n = after.iter().find(|(a, _)| a == id).map(|(_, n)| *n);
            (id.clone(), now_n.map(|m| m - n))
        })
        .collect();
    assert!(
        added.iter().all(|(_, n)| *n == Some(1)),
        "one comment each: {added:?}"
    );
    for planned in &plan {
        let again =
            review::triage_apply_planned(&session, planned, &action, &rationale, now()).await;
        assert!(
            matches!(again, Err(ReviewError::Conflict { .. })),
            "{}: {again:?}",
            planned.line.id
        );
    }
    assert_eq!(
        audit_rows(&review::select(&session, &filter).await.unwrap()),
        after,
        "a stale plan writes nothing"
    );
}

/// `export --filter` writes its document as it reads the selection, a page at a
/// time: at any page size, in JSON and in Markdown, the bytes are those of the
/// document built whole from the selection read at once, and its hash is the
/// hash of what was written.
async fn an_export_in_pages_is_the_document_built_whole(kind: Kind) {
    use holdfast::core::export;
    use holdfast::review::{self, ExportForm};
    let fresh = stores::fresh(kind).await;
    support::console::ingest(fresh.store.as_ref(), support::console::PACKET).await;
    let session = Session::new(fresh.store.clone(), Actor::local("maya", None));
    let filter = OperationFilter::default();
    let whole = review::select(&session, &filter).await.unwrap();
    assert!(whole.len() > 4, "more than a page of the smallest sizes");
    let built = export::build(&whole, session.actor(), now());
    let json = format!("{}\n", export::json(&built));
    let markdown = export::markdown(&built);
    for page in [1, 2, 500] {
        for (form, expected) in [(ExportForm::Json, &json), (ExportForm::Markdown, &markdown)] {
            let mut out = Vec::new();
            let (document, n) =
                review::export_in_pages(&session, &filter, page, form, now(), &mut out)
                    .await
                    .unwrap();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                **expected,
                "{form:?} in pages of {page}"
            );
            assert_eq!(n, whole.len());
            assert_eq!(document.content_hash, built.content_hash);
        }
    }
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(doc["bundles"].as_array().map(Vec::len), Some(whole.len()));
    assert_eq!(
        doc["content_hash"],
        export::content_hash(&doc).as_str(),
        "the hash fed bundle by bundle is the hash of the document"
    );
}

/// Every page statement starts at a key and never skips rows by `OFFSET`: the
/// listing's pages in every order and on every side of a key, and the keys of a
/// bulk selection.
#[test]
fn a_page_is_a_keyset_not_an_offset() {
    let with_deadline = sql::SortKey {
        risk_rank: 3,
        observe_order: 10,
        state_since_ms: 20,
        deadline_ms: Some(30),
        id: "F09".into(),
    };
    let without = sql::SortKey {
        deadline_ms: None,
        ..with_deadline.clone()
    };
    let mut seeks = vec![sql::Seek::First, sql::Seek::Last];
    for key in [&with_deadline, &without] {
        for side in [sql::Side::At, sql::Side::After, sql::Side::Before] {
            seeks.push(sql::Seek::From(key, side));
        }
    }
    let filter = OperationFilter::default();
    for sort in [
        SortOrder::Urgency,
        SortOrder::Age,
        SortOrder::Id,
        SortOrder::Deadline,
    ] {
        for seek in &seeks {
            for leg in seek.legs() {
                let pages: [Option<sqlx::QueryBuilder<sqlx::Sqlite>>; 2] = [
                    sql::keyset_page("", sql::Columns::Rows, &filter, sort, *seek, *leg, 50),
                    sql::keyset_page("", sql::Columns::Keys, &filter, sort, *seek, *leg, 50),
                ];
                for qb in pages.into_iter().flatten() {
                    let text = qb.sql().as_str().to_uppercase();
                    assert!(!text.contains("OFFSET"), "{text}");
                    assert!(text.contains("LIMIT"), "{text}");
                }
            }
        }
    }
}

/// Paging a listing by keyset, down after each page's last row or up before
/// each page's first, in every order, lists every operation once, in the order
/// of the listing read whole; a page at an operation starts with it.
async fn a_listing_in_keyset_pages_is_the_listing_whole(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    support::console::ingest(fresh.store.as_ref(), support::console::DEMO).await;
    let store = fresh.store.as_ref();
    for queue in [false, true] {
        let filter = OperationFilter {
            queue,
            ..OperationFilter::default()
        };
        for sort in [
            SortOrder::Urgency,
            SortOrder::Age,
            SortOrder::Id,
            SortOrder::Deadline,
        ] {
            let ids = |rows: Vec<holdfast::store::OperationRow>| -> Vec<String> {
                rows.into_iter()
                    .map(|r| r.operation.id.to_string())
                    .collect()
            };
            let (whole, total) = store
                .list(&filter, sort, Page::first(10_000))
                .await
                .unwrap();
            let whole = ids(whole);
            assert_eq!(whole.len() as u64, total);
            assert!(
                whole.len() > 3,
                "{sort:?}, queue {queue}: {} rows, not several pages",
                whole.len()
            );
            let mut down = Vec::new();
            let mut start = Start::First;
            loop {
                let page = Page { start, limit: 3 };
                let rows = ids(store.list(&filter, sort, page).await.unwrap().0);
                let Some(last) = rows.last().cloned() else {
                    break;
                };
                down.extend(rows);
                start = Start::After(OperationId::parse(&last).unwrap());
            }
            assert_eq!(down, whole, "{sort:?}, queue {queue}: down");
            let mut up = Vec::new();
            let mut start = Start::Last;
            loop {
                let page = Page { start, limit: 3 };
                let rows = ids(store.list(&filter, sort, page).await.unwrap().0);
                let Some(first) = rows.first().cloned() else {
                    break;
                };
                up.splice(0..0, rows);
                start = Start::Before(OperationId::parse(&first).unwrap());
            }
            assert_eq!(up, whole, "{sort:?}, queue {queue}: up");
            let middle = OperationId::parse(&whole[whole.len() / 2]).unwrap();
            let at = store
                .list(
                    &filter,
                    sort,
                    Page {
                        start: Start::At(middle),
                        limit: 2,
                    },
                )
                .await
                .unwrap()
                .0;
            assert_eq!(
                ids(at),
                whole[whole.len() / 2..][..2].to_vec(),
                "{sort:?}: at"
            );
        }
    }
}

holdfast_on_both_backends!(
    counts_follow_every_write,
    a_listing_in_keyset_pages_is_the_listing_whole,
    audit_pages_add_up_to_the_scope,
    a_selection_in_keyset_pages_covers_every_row_once,
    bulk_triage_in_pages_is_the_whole_dry_run_and_applies_each_once,
    an_export_in_pages_is_the_document_built_whole
);
