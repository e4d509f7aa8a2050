//! Tampering behind the store's back, one test per kind, on both backends: an
//! edited audit field, a deleted row, reordered rows, a row inserted mid-chain, a
//! forged row appended with a correct hash, a row below seq 1, an evidence list
//! re-joined, and direct edits of what the chain describes (an operation's state,
//! owner and version, a stored record, the grants). `audit verify` names each
//! with the `seq` it breaks at; a chain written with the first canonical encoding
//! still verifies. A truncated tail is caught by `audit verify --digest`.

mod support;

use holdfast::core::access::{GrantOp, GrantRequest, decide_grant};
use holdfast::core::audit::{ChainStatus, chain_hash, genesis, seal};
use holdfast::core::ids::Sha256;
use holdfast::core::model::Role;
use holdfast::core::rules::Action;
use support::review::{comment, decided, loaded, now};
use support::stores::{self, Fresh, Kind, unguard};

/// A loaded store with two comments on F09 after the ingest rows, and its head.
async fn commented(kind: Kind) -> (Fresh, i64) {
    let fresh = loaded(kind).await;
    for text in ["first look at the provider", "second look at the provider"] {
        let commit = comment(fresh.store.as_ref(), "F09", text).await;
        fresh.store.commit(commit).await.unwrap();
    }
    let head = fresh.store.head_seq().await.unwrap();
    assert!(head >= 5, "enough rows to tamper with: {head}");
    assert!(matches!(
        fresh.store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
    (fresh, head)
}

/// Where verify says the chain breaks, and why.
async fn broken(fresh: &Fresh) -> (i64, String) {
    match fresh.store.verify().await.unwrap() {
        ChainStatus::Broken { seq, reason } => (seq, reason),
        intact => panic!("the tampering went unnoticed: {intact:?}"),
    }
}

/// The row at `seq`, as stored.
async fn row_at(fresh: &Fresh, seq: i64) -> holdfast::core::audit::AuditRow {
    fresh.store.audit(seq, 1).await.unwrap().remove(0)
}

async fn an_edited_audit_field_is_named_with_its_seq(kind: Kind) {
    let (fresh, _) = commented(kind).await;
    unguard(&fresh).await;
    fresh
        .execute("UPDATE audit SET by_identity = 'mallory' WHERE seq = 3")
        .await
        .unwrap();
    assert_eq!(broken(&fresh).await.0, 3);
}

async fn a_deleted_row_is_a_gap_at_its_seq(kind: Kind) {
    let (fresh, _) = commented(kind).await;
    unguard(&fresh).await;
    fresh
        .execute("DELETE FROM audit WHERE seq = 2")
        .await
        .unwrap();
    let (seq, reason) = broken(&fresh).await;
    assert_eq!(seq, 2, "{reason}");
    assert!(reason.contains("gap"), "{reason}");
}

async fn reordered_rows_break_at_the_first_moved(kind: Kind) {
    let (fresh, _) = commented(kind).await;
    unguard(&fresh).await;
    for sql in [
        "UPDATE audit SET seq = 1000 WHERE seq = 2",
        "UPDATE audit SET seq = 2 WHERE seq = 3",
        "UPDATE audit SET seq = 3 WHERE seq = 1000",
    ] {
        fresh.execute(sql).await.unwrap();
    }
    assert_eq!(broken(&fresh).await.0, 2);
}

async fn a_row_inserted_mid_chain_is_named(kind: Kind) {
    let (fresh, head) = commented(kind).await;
    unguard(&fresh).await;
    let mut forged = row_at(&fresh, 3).await;
    forged.draft.rationale = Some("an extra row".into());
    for sql in [
        "UPDATE audit SET seq = seq + 1000 WHERE seq >= 3".to_owned(),
        "UPDATE audit SET seq = seq - 999 WHERE seq >= 1003".to_owned(),
        stores::audit_insert_sql(&forged),
    ] {
        fresh.execute(&sql).await.unwrap();
    }
    assert_eq!(fresh.store.head_seq().await.unwrap(), head + 1);
    assert_eq!(broken(&fresh).await.0, 3);
}

async fn a_forged_row_with_a_correct_hash_disagrees_with_the_operation(kind: Kind) {
    let (fresh, head) = commented(kind).await;
    let last = row_at(&fresh, head).await;
    let mut draft = last.draft.clone();
    draft.by = "alice".into();
    draft.rationale = Some("alice was never here".into());
    let forged = seal(&last.hash, head + 1, draft);
    // Appended correctly chained, so even the head trigger accepts it.
    fresh
        .execute(&stores::audit_insert_sql(&forged))
        .await
        .unwrap();
    let (seq, reason) = broken(&fresh).await;
    assert_eq!(seq, head + 1, "{reason}");
    assert!(
        reason.contains("F09") && reason.contains("version"),
        "{reason}"
    );
}

async fn a_row_below_seq_one_is_refused_or_reported(kind: Kind) {
    let (fresh, _) = commented(kind).await;
    let mut outside = row_at(&fresh, 1).await;
    outside.seq = 0;
    assert!(
        fresh
            .execute(&stores::audit_insert_sql(&outside))
            .await
            .is_err(),
        "the store refuses a row below seq 1"
    );
    unguard(&fresh).await;
    fresh
        .execute(&stores::audit_insert_sql(&outside))
        .await
        .unwrap();
    let (seq, reason) = broken(&fresh).await;
    assert_eq!(seq, 0, "{reason}");
}

async fn an_evidence_list_joined_differently_is_caught(kind: Kind) {
    let fresh = loaded(kind).await;
    let grant = decide_grant(
        &[],
        "maya",
        None,
        &GrantRequest {
            op: GrantOp::Grant,
            identity: "maya".into(),
            role: Role::Owner,
            tenant: "pinehaven".into(),
        },
        None,
        now(),
    )
    .unwrap()
    .unwrap();
    let row = fresh.store.change_grant(grant).await.unwrap();
    assert_eq!(row.draft.evidence.len(), 3);
    unguard(&fresh).await;
    fresh
        .execute(&format!(
            "UPDATE audit SET evidence = '[\"identity:maya,role:owner\",\"tenant:pinehaven\"]' \
             WHERE seq = {}",
            row.seq
        ))
        .await
        .unwrap();
    assert_eq!(broken(&fresh).await.0, row.seq);
}

async fn an_operation_state_owner_or_version_edited_directly_is_named(kind: Kind) {
    for edit in [
        "UPDATE operations SET state = 'ACCEPTED' WHERE id = 'F09'",
        "UPDATE operations SET owner = 'mallory' WHERE id = 'F09'",
        "UPDATE operations SET version = version + 1 WHERE id = 'F09'",
    ] {
        let (fresh, head) = commented(kind).await;
        fresh.execute(edit).await.unwrap();
        let (seq, reason) = broken(&fresh).await;
        assert_eq!(seq, head, "{edit}: {reason}");
        assert!(reason.contains("F09"), "{edit}: {reason}");
    }
}

async fn an_assign_row_records_the_owner_and_verify_holds_the_store_to_it(kind: Kind) {
    let (fresh, _) = commented(kind).await;
    let owner = holdfast::core::rules::Actor::local("olive", None);
    let assign = decided(
        fresh.store.as_ref(),
        "F09",
        &Action::Assign {
            owner: "payments".into(),
        },
        &owner,
        "payments team takes this one over",
    )
    .await;
    let row = fresh.store.commit(assign).await.unwrap();
    assert!(
        row.draft.evidence.contains(&"owner:payments".to_owned()),
        "{:?}",
        row.draft.evidence
    );
    assert!(matches!(
        fresh.store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
    fresh
        .execute("UPDATE operations SET owner = 'integrations' WHERE id = 'F09'")
        .await
        .unwrap();
    assert_eq!(broken(&fresh).await.0, row.seq);
}

async fn a_stored_record_edited_directly_is_named(kind: Kind) {
    let (fresh, _) = commented(kind).await;
    fresh
        .execute(
            "UPDATE attempts SET wire = replace(wire, '\"request_sent\"', '\"not_sent\"') \
             WHERE id = 'A017'",
        )
        .await
        .unwrap();
    let (_, reason) = broken(&fresh).await;
    assert!(reason.contains("attempts A017"), "{reason}");
}

async fn a_grant_inserted_directly_is_named(kind: Kind) {
    let (fresh, _) = commented(kind).await;
    fresh
        .execute(
            "INSERT INTO grants (identity, role, tenant, granted_by, granted_at) \
             VALUES ('mallory', 'owner', 'pinehaven', 'mallory', '2026-09-05T10:00:00Z')",
        )
        .await
        .unwrap();
    let (_, reason) = broken(&fresh).await;
    assert!(reason.contains("mallory as owner on pinehaven"), "{reason}");
}

async fn a_chain_of_the_first_encoding_still_verifies_and_continues(kind: Kind) {
    let (fresh, head) = commented(kind).await;
    unguard(&fresh).await;
    // Rewrite the whole chain as a store written before encoding 2 holds it.
    let mut prev: Sha256 = genesis();
    for seq in 1..=head {
        let row = row_at(&fresh, seq).await;
        let hash = chain_hash(&prev, 1, seq, &row.draft);
        fresh
            .execute(&format!(
                "UPDATE audit SET encoding = 1, prev_hash = '{prev}', hash = '{hash}' WHERE seq = {seq}"
            ))
            .await
            .unwrap();
        prev = hash;
    }
    if kind == Kind::Postgres {
        fresh
            .execute("DROP TRIGGER chain_head_moves_with_audit ON chain_head")
            .await
            .unwrap();
        fresh
            .execute(&format!("UPDATE chain_head SET hash = '{prev}'"))
            .await
            .unwrap();
    }
    assert_eq!(
        fresh.store.verify().await.unwrap(),
        ChainStatus::Intact {
            rows: head,
            head: Some((head, prev.clone()))
        }
    );
    let commit = comment(fresh.store.as_ref(), "F09", "a comment under encoding 2").await;
    let row = fresh.store.commit(commit).await.unwrap();
    assert_eq!((row.encoding, row.prev_hash), (2, prev));
    assert!(matches!(
        fresh.store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
}

/// The digest `audit digest` would have printed at `seq`.
async fn digest_at(fresh: &Fresh, seq: i64) -> Sha256 {
    row_at(fresh, seq).await.hash
}

/// Where the walk from the digest at `from` says the chain breaks, and why.
async fn broken_after(fresh: &Fresh, from: i64, hash: &Sha256) -> (i64, String) {
    match fresh.store.verify_from(from, hash).await.unwrap() {
        ChainStatus::Broken { seq, reason } => (seq, reason),
        intact => panic!("the walk from seq {from} noticed nothing: {intact:?}"),
    }
}

async fn a_walk_from_a_digest_covers_the_rows_after_it(kind: Kind) {
    let (fresh, head) = commented(kind).await;
    let hash = digest_at(&fresh, 3).await;
    assert_eq!(
        fresh.store.verify_from(3, &hash).await.unwrap(),
        ChainStatus::Intact {
            rows: head - 3,
            head: Some((head, digest_at(&fresh, head).await)),
        }
    );
    let top = digest_at(&fresh, head).await;
    assert_eq!(
        fresh.store.verify_from(head, &top).await.unwrap(),
        ChainStatus::Intact {
            rows: 0,
            head: Some((head, top)),
        },
        "a digest of the head has nothing after it"
    );
}

async fn a_tail_edit_after_a_digest_is_caught(kind: Kind) {
    let (fresh, head) = commented(kind).await;
    let hash = digest_at(&fresh, 3).await;
    unguard(&fresh).await;
    fresh
        .execute(&format!(
            "UPDATE audit SET rationale = 'rewritten' WHERE seq = {head}"
        ))
        .await
        .unwrap();
    let (seq, reason) = broken_after(&fresh, 3, &hash).await;
    assert_eq!(seq, head, "{reason}");
    assert!(reason.contains("row was changed"), "{reason}");
}

async fn an_edit_before_the_digest_is_not_walked(kind: Kind) {
    let (fresh, head) = commented(kind).await;
    let hash = digest_at(&fresh, 3).await;
    unguard(&fresh).await;
    fresh
        .execute("UPDATE audit SET by_identity = 'mallory' WHERE seq = 2")
        .await
        .unwrap();
    assert!(
        matches!(
            fresh.store.verify_from(3, &hash).await.unwrap(),
            ChainStatus::Intact { rows, .. } if rows == head - 3
        ),
        "by design, the rows before the digest are not walked"
    );
    assert_eq!(broken(&fresh).await.0, 2, "the whole walk still finds it");
}

async fn the_row_of_the_digest_must_still_hash_to_it(kind: Kind) {
    let (fresh, head) = commented(kind).await;
    let hash = digest_at(&fresh, 3).await;
    let other = digest_at(&fresh, 4).await;
    let (seq, reason) = broken_after(&fresh, 3, &other).await;
    assert_eq!(seq, 3, "{reason}");
    assert!(reason.contains("does not match"), "{reason}");
    let (seq, reason) = broken_after(&fresh, head + 1, &hash).await;
    assert_eq!(seq, head + 1, "{reason}");
    assert!(reason.contains("rows were removed"), "{reason}");
    unguard(&fresh).await;
    fresh
        .execute("UPDATE audit SET by_identity = 'mallory' WHERE seq = 3")
        .await
        .unwrap();
    let (seq, reason) = broken_after(&fresh, 3, &hash).await;
    assert_eq!(
        seq, 3,
        "its content is checked against the digest: {reason}"
    );
    assert!(reason.contains("row was changed"), "{reason}");
}

holdfast_on_both_backends!(
    an_edited_audit_field_is_named_with_its_seq,
    a_deleted_row_is_a_gap_at_its_seq,
    reordered_rows_break_at_the_first_moved,
    a_row_inserted_mid_chain_is_named,
    a_forged_row_with_a_correct_hash_disagrees_with_the_operation,
    a_row_below_seq_one_is_refused_or_reported,
    an_evidence_list_joined_differently_is_caught,
    an_operation_state_owner_or_version_edited_directly_is_named,
    an_assign_row_records_the_owner_and_verify_holds_the_store_to_it,
    a_stored_record_edited_directly_is_named,
    a_grant_inserted_directly_is_named,
    a_chain_of_the_first_encoding_still_verifies_and_continues,
    a_walk_from_a_digest_covers_the_rows_after_it,
    a_tail_edit_after_a_digest_is_caught,
    an_edit_before_the_digest_is_not_walked,
    the_row_of_the_digest_must_still_hash_to_it,
);

/// A tail cut off leaves a shorter chain that checks on its own; the digest kept
/// elsewhere is what catches it.
#[test]
fn a_truncated_tail_is_caught_by_the_digest() {
    let cli = support::cli::Cli::with("review.jsonl");
    cli.review("maya", "U1", "comment", &[]).expect_code(0);
    let digest = cli.run("maya", &["audit", "digest"]).expect_code(0).stdout;
    let path = cli.dir.path().join("digest.txt");
    std::fs::write(&path, &digest).unwrap();
    let path = path.to_string_lossy().into_owned();
    cli.run("maya", &["audit", "verify", "--digest", &path])
        .expect_code(0);
    let head = cli.head();
    let sql = format!(
        "DROP TRIGGER audit_no_delete; DELETE FROM audit WHERE seq = {head}; \
         UPDATE operations SET version = version - 1 WHERE id = 'U1';"
    );
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = holdfast::store::sqlite::SqliteStore::open(&cli.db)
            .await
            .unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
            .execute(store.pool())
            .await
            .unwrap();
        store.pool().close().await;
    });
    // The shorter chain checks on its own (the version moved back with it) …
    cli.run("maya", &["audit", "verify"]).expect_code(0);
    // … but not against the head kept elsewhere.
    let run = cli
        .run("maya", &["audit", "verify", "--digest", &path])
        .expect_code(4);
    assert!(run.stderr.contains("rows were removed"), "{}", run.stderr);
}

/// `audit verify --from SEQ --digest FILE`: a digest that matches walks what came
/// after it and says what it left out; one that does not is refused, and so is a
/// `--from` that is not the digest's seq.
#[test]
fn the_walk_from_a_saved_digest_on_the_command_line() {
    let cli = support::cli::Cli::with("review.jsonl");
    let digest = cli.run("maya", &["audit", "digest"]).expect_code(0).stdout;
    let seq = digest.split_whitespace().next().unwrap().to_owned();
    let path = cli.dir.path().join("digest.txt");
    std::fs::write(&path, &digest).unwrap();
    let path = path.to_string_lossy().into_owned();
    cli.review("maya", "U1", "comment", &[]).expect_code(0);
    let run = cli
        .run(
            "maya",
            &["audit", "verify", "--from", &seq, "--digest", &path],
        )
        .expect_code(0);
    assert!(run.stdout.contains("1 rows after it"), "{}", run.stdout);
    assert!(run.stdout.contains("were not checked"), "{}", run.stdout);
    let wrong = (seq.parse::<i64>().unwrap() - 1).to_string();
    let run = cli
        .run(
            "maya",
            &["audit", "verify", "--from", &wrong, "--digest", &path],
        )
        .expect_code(2);
    assert!(
        run.stderr.contains(&format!("give --from {seq}")),
        "{}",
        run.stderr
    );
    let forged = digest.replace(
        digest.split_whitespace().nth(1).unwrap(),
        &format!("sha256:{}", "0".repeat(64)),
    );
    std::fs::write(&path, forged).unwrap();
    let run = cli
        .run(
            "maya",
            &["audit", "verify", "--from", &seq, "--digest", &path],
        )
        .expect_code(4);
    assert!(run.stderr.contains("does not match"), "{}", run.stderr);
}
