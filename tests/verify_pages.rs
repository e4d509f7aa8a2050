//! `audit verify` reads the chain, the operations and the records in keyset
//! pages, each page one value joined in SQL. A store of several pages verifies
//! whole, and from a digest; an edit on the first row of a later page or on the
//! last row of each is found and named, on both backends; on SQLite, a value
//! stored as another type than its column's is still caught.

use crate::support;

#[path = "../examples/common/shape.rs"]
mod shape;

use holdfast::core::audit::ChainStatus;
use holdfast::store::IngestMode;
use support::review::records;
use support::stores::{Fresh, Kind, unguard};

/// Operations generated: more than a page of operations, attempts and audit rows.
const OPS: u64 = 1_100;
/// Items added to the first operation, so the table keyed by two columns spans pages.
const ITEMS: i64 = 1_100;

/// A store of [`OPS`] generated operations and [`ITEMS`] more items on
/// `B0000000`, numbered from 100.
async fn generated(kind: Kind) -> Fresh {
    let fresh = support::stores::fresh(kind).await;
    let mut lines = vec![shape::CONTRACT.to_owned()];
    for n in 0..OPS {
        shape::operation_lines(n, 12, &mut lines);
    }
    let report = fresh
        .store
        .ingest(
            records(&lines.join("\n")),
            IngestMode::Strict,
            "test",
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected.first());
    // The items come by ingest, as any record does: the chain names each one.
    let items: Vec<String> = (0..ITEMS)
        .map(|i| {
            format!(
                r#"{{"type":"item","operation":"B0000000","index":{},"state":"succeeded","authoritative_id":null}}"#,
                100 + i
            )
        })
        .collect();
    let report = fresh
        .store
        .ingest(
            records(&items.join("\n")),
            IngestMode::Strict,
            "test",
            chrono::Utc::now(),
        )
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected.first());
    fresh
}

/// Runs `tamper`, expects verify to name the change with `named`, then runs
/// `undo` and expects the store to verify again.
async fn caught(fresh: &Fresh, tamper: &str, named: &str, undo: &str) {
    fresh.execute(tamper).await.unwrap();
    match fresh.store.verify().await.unwrap() {
        ChainStatus::Broken { reason, .. } => assert!(reason.contains(named), "{tamper}: {reason}"),
        intact => panic!("{tamper} went unnoticed: {intact:?}"),
    }
    fresh.execute(undo).await.unwrap();
    assert!(matches!(
        fresh.store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
}

async fn a_store_of_many_pages_verifies_whole_and_each_page_is_checked(kind: Kind) {
    let fresh = generated(kind).await;
    let head = fresh.store.head_seq().await.unwrap();
    assert!(
        head >= i64::try_from(2 * OPS).unwrap(),
        "several pages of audit rows: {head}"
    );
    match fresh.store.verify().await.unwrap() {
        ChainStatus::Intact {
            rows,
            head: Some((seq, _)),
        } => assert_eq!((rows, seq), (head, head)),
        other => panic!("the generated store does not verify: {other:?}"),
    }
    let link = fresh.store.audit(10, 1).await.unwrap().remove(0);
    assert!(matches!(
        fresh.store.verify_from(10, &link.hash).await.unwrap(),
        ChainStatus::Intact { rows, .. } if rows == head - 10
    ));

    // The first operation of the second page and the last of the last.
    for id in ["B0001024", "B0001099"] {
        caught(
            &fresh,
            &format!("UPDATE operations SET version = version + 1 WHERE id = '{id}'"),
            &format!("operation {id}: the stored version"),
            &format!("UPDATE operations SET version = version - 1 WHERE id = '{id}'"),
        )
        .await;
    }
    let last_attempt = "(SELECT max(id) FROM attempts)";
    caught(
        &fresh,
        &format!("UPDATE attempts SET wire = wire || ' ' WHERE id = {last_attempt}"),
        "attempts A-B0001099-",
        &format!(
            "UPDATE attempts SET wire = substr(wire, 1, length(wire) - 1) WHERE id = {last_attempt}"
        ),
    )
    .await;
    let last_item = format!("operation = 'B0000000' AND idx = {}", 99 + ITEMS);
    caught(
        &fresh,
        &format!("UPDATE items SET wire = wire || ' ' WHERE {last_item}"),
        &format!("items B0000000#{}", 99 + ITEMS),
        &format!("UPDATE items SET wire = substr(wire, 1, length(wire) - 1) WHERE {last_item}"),
    )
    .await;
    // Two altered: the first in key order is named, the numeric order of the
    // second key (#101 before #1199), whatever order they are found in.
    let two = format!("operation = 'B0000000' AND idx IN (101, {})", 99 + ITEMS);
    caught(
        &fresh,
        &format!("UPDATE items SET wire = wire || ' ' WHERE {two}"),
        "items B0000000#101:",
        &format!("UPDATE items SET wire = substr(wire, 1, length(wire) - 1) WHERE {two}"),
    )
    .await;

    unguard(&fresh).await;
    if kind == Kind::Sqlite {
        // A value of another type is read again row by row, as before pages.
        let seq = head - 100;
        fresh
            .execute(&format!(
                "UPDATE audit SET by_identity = CAST(by_identity AS BLOB) WHERE seq = {seq}"
            ))
            .await
            .unwrap();
        match fresh.store.verify().await.unwrap() {
            ChainStatus::Broken { seq: at, reason } => {
                assert_eq!(at, seq, "{reason}");
                assert!(reason.contains("the row cannot be read"), "{reason}");
            }
            intact => panic!("a blob in a text column went unnoticed: {intact:?}"),
        }
        fresh
            .execute(&format!(
                "UPDATE audit SET by_identity = CAST(by_identity AS TEXT) WHERE seq = {seq}"
            ))
            .await
            .unwrap();
        fresh
            .execute(&format!(
                "UPDATE attempts SET wire = CAST(wire AS BLOB) WHERE id = {last_attempt}"
            ))
            .await
            .unwrap();
        // A record that no longer holds the text that was hashed is named
        // as altered, not left as a store error.
        match fresh.store.verify().await.unwrap() {
            ChainStatus::Broken { reason, .. } => assert!(
                reason.contains("attempts A-B0001099-")
                    && reason.contains("no longer matches its record_hash"),
                "{reason}"
            ),
            intact => panic!("a blob record went unnoticed: {intact:?}"),
        }
        fresh
            .execute(&format!(
                "UPDATE attempts SET wire = CAST(wire AS TEXT) WHERE id = {last_attempt}"
            ))
            .await
            .unwrap();
        caught(
            &fresh,
            "UPDATE operations SET wire = CAST(wire AS BLOB) WHERE id = 'B0001099'",
            "operation B0001099: its stored record no longer matches its record_hash",
            "UPDATE operations SET wire = CAST(wire AS TEXT) WHERE id = 'B0001099'",
        )
        .await;
    }
    fresh
        .execute(&format!(
            "UPDATE audit SET rationale = 'rewritten' WHERE seq = {head}"
        ))
        .await
        .unwrap();
    match fresh.store.verify().await.unwrap() {
        ChainStatus::Broken { seq, reason } => {
            assert_eq!(seq, head, "{reason}");
            assert!(reason.contains("row was changed"), "{reason}");
        }
        intact => panic!("an edit of the last row went unnoticed: {intact:?}"),
    }
}

holdfast_on_both_backends!(a_store_of_many_pages_verifies_whole_and_each_page_is_checked);
