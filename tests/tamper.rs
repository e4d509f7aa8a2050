//! Tampering behind the store's back, one test per kind, on both backends: an
//! edited audit field, a deleted row, reordered rows, a row inserted mid-chain, a
//! forged row appended with a correct hash, a row below seq 1, an evidence list
//! re-joined, and direct edits of what the chain describes (an operation's state,
//! owner and version, a stored record, the grants). `audit verify` names each
//! with the `seq` it breaks at; a chain written with the first canonical encoding
//! still verifies. A truncated tail is caught by `audit verify --digest`.
//!
//! A forged row with a correct hash, appended with the change it claims, is
//! named when the rules would refuse the decision it records (one test per kind
//! of forged decision), and evidence deleted or changed behind the chain's back
//! (an attempt, an observation, an expectation, a dependency, a contract, an
//! operation's tenant, budget or queue flag, the kept metric facts) is named
//! with its table.

use crate::support;

use holdfast::core::access::{GrantOp, GrantRequest, decide_grant};
use holdfast::core::audit::{AuditDraft, ChainStatus, chain_hash, genesis, seal};
use holdfast::core::ids::Sha256;
use holdfast::core::model::{Role, State};
use holdfast::core::rules::Action;
use holdfast::store::{IngestMode, Scope};
use support::review::{SMALL, comment, decided, id, loaded, now, records, resolve_f09};
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

/// A store of `kind` holding the small fixture without the lines containing
/// `without`, and `more` lines after it.
async fn loaded_with(kind: Kind, without: &str, more: &str) -> Fresh {
    let fresh = stores::fresh(kind).await;
    let mut lines: Vec<&str> = SMALL
        .lines()
        .filter(|l| without.is_empty() || !l.contains(without))
        .collect();
    lines.extend(more.lines().filter(|l| !l.trim().is_empty()));
    let report = fresh
        .store
        .ingest(
            records(&lines.join("\n")),
            IngestMode::Strict,
            "test",
            now(),
        )
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    assert!(matches!(
        fresh.store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
    fresh
}

/// F11: a low-risk operation left PARTIAL, with no compensation child.
const PARTIAL_F11: &str = r#"{"type":"operation","id":"F11","tenant":"pinehaven","actor":"svc:relay-desk","tool":"T03","action":"ticket.create","target":"ticket-queue:9","payload_hash":"sha256:2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc7","risk":"low","owner":"integrations","state":"PARTIAL","created_at":"2026-09-05T10:00:40Z"}"#;

/// A row of `action` on `op` by `by`, moving `from → to`.
fn draft(
    op: &str,
    action: &str,
    (from, to): (Option<State>, Option<State>),
    by: &str,
    evidence: &[&str],
) -> AuditDraft {
    AuditDraft {
        operation: id(op),
        action: action.into(),
        from,
        to,
        by: by.into(),
        role: Role::Local,
        policy: Some("RP03".into()),
        on_behalf_of: None,
        rationale: Some("forged, but hashed exactly as the store hashes".into()),
        evidence: evidence.iter().map(|e| (*e).to_owned()).collect(),
        at: now(),
    }
}

/// Appends `draft` as the next row, chained and hashed correctly, then runs
/// `also` (the change the row claims) behind the store's back: the row's seq.
async fn forge(fresh: &Fresh, draft: AuditDraft, also: &[String]) -> i64 {
    let head = fresh.store.head_seq().await.unwrap();
    let last = row_at(fresh, head).await;
    let row = seal(&last.hash, head + 1, draft);
    fresh
        .execute(&stores::audit_insert_sql(&row))
        .await
        .unwrap();
    for sql in also {
        fresh.execute(sql).await.unwrap();
    }
    head + 1
}

/// The SQL that moves `op` to `to` as a row would, version and queue flag too.
fn moved(op: &str, to: State) -> String {
    format!(
        "UPDATE operations SET state = '{to}', version = version + 1, queued = {} WHERE id = '{op}'",
        i32::from(to.is_held())
    )
}

/// Asserts verify names row `seq` and says each of `words`.
async fn named(fresh: &Fresh, seq: i64, words: &[&str]) {
    let (at, reason) = broken(fresh).await;
    assert_eq!(at, seq, "{reason}");
    for word in words {
        assert!(reason.contains(word), "{word:?} not in: {reason}");
    }
}

async fn a_forged_resolve_without_an_observation_is_refused(kind: Kind) {
    let fresh = loaded_with(kind, "O05", "").await;
    let to = (Some(State::Unknown), Some(State::Succeeded));
    let seq = forge(
        &fresh,
        draft("F09", "resolve", to, "maya", &[]),
        &[moved("F09", State::Succeeded)],
    )
    .await;
    named(&fresh, seq, &["operation F09", "resolve", "refuse"]).await;
}

async fn a_forged_retry_of_a_high_risk_operation_by_one_person_is_refused(kind: Kind) {
    // F09 is high risk: a retry needs a second approver, and O05 found it applied.
    let fresh = loaded(kind).await;
    let to = (Some(State::Unknown), Some(State::Approved));
    let seq = forge(
        &fresh,
        draft("F09", "authorize-retry", to, "maya", &[]),
        &[moved("F09", State::Approved)],
    )
    .await;
    named(&fresh, seq, &["operation F09", "authorize-retry"]).await;
}

async fn a_forged_retry_past_the_budget_is_refused(kind: Kind) {
    // F09's budget is 3 requests; two more timeouts use it up.
    let more: String = ["A018", "A019"]
        .iter()
        .enumerate()
        .map(|(i, a)| {
            SMALL
                .lines()
                .find(|l| l.contains(r#""id":"A017""#))
                .unwrap()
                .replace("A017", a)
                .replace(r#""seq":1"#, &format!(r#""seq":{}"#, i + 2))
                .replace("tr-1", &format!("tr-{}", i + 2))
                + "\n"
        })
        .collect();
    let fresh = loaded_with(kind, "O05", &more).await;
    let to = (Some(State::Unknown), Some(State::Approved));
    let seq = forge(
        &fresh,
        draft("F09", "authorize-retry", to, "maya", &[]),
        &[moved("F09", State::Approved)],
    )
    .await;
    named(
        &fresh,
        seq,
        &["operation F09", "authorize-retry", "budget exhausted"],
    )
    .await;
}

async fn a_forged_mark_compensated_without_a_compensation_is_refused(kind: Kind) {
    let fresh = loaded_with(kind, "", PARTIAL_F11).await;
    let to = (Some(State::Partial), Some(State::Compensated));
    let seq = forge(
        &fresh,
        draft("F11", "mark-compensated", to, "maya", &[]),
        &[moved("F11", State::Compensated)],
    )
    .await;
    named(
        &fresh,
        seq,
        &["operation F11", "mark-compensated", "refuse"],
    )
    .await;
}

async fn a_forged_confirm_with_no_proposal_is_refused(kind: Kind) {
    let fresh = loaded(kind).await;
    let to = (Some(State::Unknown), Some(State::Approved));
    let seq = forge(
        &fresh,
        draft("F09", "confirm", to, "ana", &["proposal:1"]),
        &[moved("F09", State::Approved)],
    )
    .await;
    named(
        &fresh,
        seq,
        &["operation F09", "confirm", "no pending proposal"],
    )
    .await;
}

async fn a_forged_accept_without_a_repair_reference_is_refused(kind: Kind) {
    let fresh = loaded(kind).await;
    let to = (Some(State::Unknown), Some(State::Accepted));
    let seq = forge(
        &fresh,
        draft("F09", "accept", to, "maya", &[]),
        &[moved("F09", State::Accepted)],
    )
    .await;
    named(&fresh, seq, &["operation F09", "accept", "refuse"]).await;
}

async fn a_forged_reconcile_that_moves_the_state_is_refused(kind: Kind) {
    // A reconcile records a lookup; it is never a move, whatever it names.
    let fresh = loaded(kind).await;
    let to = (Some(State::Unknown), Some(State::Succeeded));
    let seq = forge(
        &fresh,
        draft("F09", "reconcile", to, "maya", &["O05"]),
        &[moved("F09", State::Succeeded)],
    )
    .await;
    named(&fresh, seq, &["operation F09", "reconcile row moves it"]).await;
}

async fn a_forged_transition_out_of_a_hold_is_a_decision_and_refused(kind: Kind) {
    // The F27 of the issue: UNKNOWN → APPROVED reported as a transition.
    let fresh = loaded_with(kind, "O05", "").await;
    let to = (Some(State::Unknown), Some(State::Approved));
    let seq = forge(
        &fresh,
        draft("F09", "transition", to, "test", &[]),
        &[moved("F09", State::Approved)],
    )
    .await;
    named(&fresh, seq, &["operation F09", "transition"]).await;
}

async fn a_forged_transition_outside_the_state_table_is_refused(kind: Kind) {
    let fresh = loaded(kind).await;
    let to = (Some(State::Approved), Some(State::Succeeded));
    let seq = forge(
        &fresh,
        draft("F10", "transition", to, "test", &[]),
        &[moved("F10", State::Succeeded)],
    )
    .await;
    named(
        &fresh,
        seq,
        &["operation F10", "APPROVED → SUCCEEDED", "G1"],
    )
    .await;
}

async fn a_forged_create_of_an_approved_operation_is_refused(kind: Kind) {
    let fresh = loaded(kind).await;
    let seq = forge(
        &fresh,
        draft(
            "F99",
            "create",
            (None, Some(State::Approved)),
            "maya",
            &["parent:F09"],
        ),
        &[],
    )
    .await;
    named(&fresh, seq, &["operation F99", "create"]).await;
}

async fn a_comment_covering_a_rewrite_of_risk_budget_deadline_or_tenant_is_named(kind: Kind) {
    for (set, column) in [
        ("risk_rank = 0", "risk"),
        ("max_attempts = 9", "max_attempts"),
        ("deadline_ms = deadline_ms + 3600000", "deadline"),
        ("tenant = 'elsewhere'", "tenant"),
    ] {
        let fresh = loaded(kind).await;
        let seq = forge(
            &fresh,
            draft("F09", "comment", (Some(State::Unknown), None), "maya", &[]),
            &[format!(
                "UPDATE operations SET {set}, version = version + 1 WHERE id = 'F09'"
            )],
        )
        .await;
        named(&fresh, seq, &["operation F09", &format!("stored {column}")]).await;
    }
}

async fn a_worker_login_moving_work_it_holds_no_lease_on_is_named(kind: Kind) {
    let fresh = loaded(kind).await;
    for (identity, role) in [("boss", Role::Owner), ("wrk", Role::Worker)] {
        let all = fresh.store.grants().await.unwrap();
        let change = decide_grant(
            &all,
            "boss",
            None,
            &GrantRequest {
                op: GrantOp::Grant,
                identity: identity.into(),
                role,
                tenant: "pinehaven".into(),
            },
            None,
            now(),
        )
        .unwrap()
        .unwrap();
        fresh.store.change_grant(change).await.unwrap();
    }
    let to = (Some(State::Approved), Some(State::Sent));
    let seq = forge(
        &fresh,
        draft("F10", "transition", to, "wrk", &[]),
        &[moved("F10", State::Sent)],
    )
    .await;
    named(
        &fresh,
        seq,
        &["operation F10", "wrk", "worker role", "without a lease"],
    )
    .await;
}

async fn a_deleted_attempt_is_named_with_its_table(kind: Kind) {
    let fresh = loaded(kind).await;
    fresh
        .execute("DELETE FROM attempts WHERE id = 'A017'")
        .await
        .unwrap();
    named(&fresh, 1, &["attempts", "A017", "no longer stored"]).await;
}

async fn a_deleted_attempt_under_a_decision_is_named_and_the_decision_replayed(kind: Kind) {
    // F09 resolved on O05 after A017: both are what the decision stood on.
    let fresh = loaded(kind).await;
    fresh
        .store
        .commit(resolve_f09(fresh.store.as_ref(), "maya").await)
        .await
        .unwrap();
    fresh
        .execute("DELETE FROM observations WHERE id = 'O05'")
        .await
        .unwrap();
    named(&fresh, 1, &["observation O05", "no longer stored"]).await;
}

async fn a_deleted_observation_is_named_with_its_table(kind: Kind) {
    let fresh = loaded(kind).await;
    fresh
        .execute("DELETE FROM observations WHERE id = 'O05'")
        .await
        .unwrap();
    named(&fresh, 1, &["observations", "O05", "no longer stored"]).await;
}

async fn an_inserted_observation_no_row_added_is_named(kind: Kind) {
    let fresh = loaded(kind).await;
    fresh
        .execute(
            "INSERT INTO observations (id, operation, observed_ms, wire, record_hash) \
             SELECT 'O06', operation, observed_ms, replace(wire, 'O05', 'O06'), record_hash \
             FROM observations WHERE id = 'O05'",
        )
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let (_, reason) = broken(&fresh).await;
    assert!(reason.contains("O06"), "{reason}");
}

async fn a_deleted_expectation_is_named_with_its_table(kind: Kind) {
    let fresh = loaded(kind).await;
    fresh
        .execute("DELETE FROM expectations WHERE operation = 'F09'")
        .await
        .unwrap();
    named(&fresh, 1, &["expectations", "F09", "no longer stored"]).await;
}

async fn a_deleted_dependency_is_named_with_its_table(kind: Kind) {
    let fresh = loaded(kind).await;
    fresh
        .execute("DELETE FROM dependencies WHERE operation = 'F10'")
        .await
        .unwrap();
    let (_, reason) = broken(&fresh).await;
    assert!(
        reason.contains("dependencies") && reason.contains("F10") && reason.contains("F09"),
        "{reason}"
    );
}

async fn a_deleted_contract_is_named_with_its_table(kind: Kind) {
    let fresh = loaded(kind).await;
    fresh.execute("DELETE FROM contracts").await.unwrap();
    let (_, reason) = broken(&fresh).await;
    assert!(
        reason.contains("contracts") && reason.contains("T03"),
        "{reason}"
    );
}

async fn a_changed_tenant_or_queue_flag_is_named(kind: Kind) {
    for (sql, op, words) in [
        (
            "UPDATE operations SET tenant = 'elsewhere' WHERE id = 'F09'",
            "F09",
            "stored tenant is elsewhere",
        ),
        (
            "UPDATE operations SET queued = 0 WHERE id = 'F10'",
            "F10",
            "stored queue flag is 0",
        ),
    ] {
        let fresh = loaded(kind).await;
        fresh.execute(sql).await.unwrap();
        let (_, reason) = broken(&fresh).await;
        assert!(
            reason.contains(&format!("operation {op}")) && reason.contains(words),
            "{sql}: {reason}"
        );
    }
}

async fn emptied_metric_facts_are_named_and_never_trusted(kind: Kind) {
    let fresh = loaded(kind).await;
    let whole = stores::session_in(&fresh.store, &Scope::Every);
    let kept = async || {
        holdfast::report::compute_kept(&whole, now(), &Default::default())
            .await
            .unwrap()
    };
    let before = kept().await;
    assert!(
        fresh
            .store
            .kept_report(&Scope::Every, now(), &Default::default())
            .await
            .unwrap()
            .is_some(),
        "the facts are kept"
    );
    for table in [
        "metric_rows",
        "metric_facts",
        "metric_counts",
        "metric_stale",
    ] {
        fresh
            .execute(&format!("DELETE FROM {table}"))
            .await
            .unwrap();
    }
    let (_, reason) = broken(&fresh).await;
    assert!(reason.contains("metric_facts"), "{reason}");
    assert!(
        fresh
            .store
            .kept_report(&Scope::Every, now(), &Default::default())
            .await
            .unwrap()
            .is_none(),
        "facts that do not cover every operation are not read"
    );
    let after = kept().await;
    assert_eq!(after.release.disposition, before.release.disposition);
    assert_ne!(
        after.release.disposition,
        holdfast::core::metrics::Disposition::Deployable
    );
}

/// A raise of `tool` from manual to automation, written as the store's own
/// autonomy call writes it, without asking the gates.
fn raise(tool: &str) -> holdfast::core::autonomy::LevelChange {
    use holdfast::core::autonomy::{AUTONOMY_LEDGER, LevelChange, SET_ACTION, ToolLevel};
    use holdfast::core::ids::ledger_id;
    use holdfast::core::ladder::Level;
    LevelChange {
        from: Level::Manual,
        to: ToolLevel {
            tool: tool.into(),
            level: Level::Automation,
            set_by: "owner".into(),
            set_at: now(),
            rationale: "raised by hand".into(),
        },
        consequences: Vec::new(),
        audit: AuditDraft {
            operation: ledger_id(AUTONOMY_LEDGER),
            action: SET_ACTION.into(),
            from: None,
            to: None,
            by: "owner".into(),
            role: Role::Local,
            policy: None,
            on_behalf_of: None,
            rationale: Some("raised by hand".into()),
            evidence: vec![
                format!("tool:{tool}"),
                "from:manual".into(),
                "level:automation".into(),
            ],
            at: now(),
        },
    }
}

/// The small fixture with a proven lookup of T03 and a drill of it that
/// passed `passed` of its 16 cases recorded after it.
async fn checked_and_drilled(kind: Kind, passed: u32) -> Fresh {
    use holdfast::core::autonomy::{DrillResult, LookupCheck};
    let fresh = loaded_with(kind, "", "").await;
    let check = LookupCheck {
        tool: "T03".into(),
        known: "F09".into(),
        found: true,
        lookup: "fingerprint".into(),
        answer: "HTTP 200, found".into(),
        by: "owner".into(),
        at: now(),
    };
    fresh
        .store
        .append_ledger_row(check.draft(Role::Local, None))
        .await
        .unwrap();
    let drill = DrillResult {
        tool: "T03".into(),
        at: now(),
        cases: 16,
        passed,
        modes: holdfast::core::model::FailureMode::ALL.to_vec(),
        failed: (passed < 16).then(|| "T2".to_owned()).into_iter().collect(),
        drill_store: "elsewhere".into(),
        by: "owner".into(),
        contract_version: Some("IC03".into()),
    };
    let draft = drill.draft(Role::Local, None);
    fresh.store.record_drill(drill, draft).await.unwrap();
    fresh
}

/// A raise written with a correct hash (as the store's own autonomy call
/// writes it, without asking the gates) is named when the chain shows no
/// proven lookup of the tool before it (A1), or no passing drill (A2).
async fn a_raise_without_a_proven_lookup_or_a_passing_drill_is_named(kind: Kind) {
    let unchecked = loaded_with(kind, "", "").await;
    let row = unchecked.store.set_autonomy(raise("T03")).await.unwrap();
    named(&unchecked, row.seq, &["T03", "A1", "no lookup check"]).await;
    let fresh = checked_and_drilled(kind, 15).await;
    let row = fresh.store.set_autonomy(raise("T03")).await.unwrap();
    named(&fresh, row.seq, &["T03", "A2", "passed 15 of 16"]).await;
}

/// A raise written with a correct hash while a veto on one of the tool's
/// operations was open (F09 UNKNOWN, failing its veto expectation) is named
/// (A3), even once F09 is settled after it: verify judges the vetoes on the
/// operations as the chain left them at the raise. The same raise made after
/// F09 was settled verifies.
async fn a_raise_while_a_veto_was_open_is_named(kind: Kind) {
    let fresh = checked_and_drilled(kind, 16).await;
    let row = fresh.store.set_autonomy(raise("T03")).await.unwrap();
    let settled = resolve_f09(fresh.store.as_ref(), "rev").await;
    fresh.store.commit(settled).await.unwrap();
    named(
        &fresh,
        row.seq,
        &[
            "T03",
            "A3",
            "1 open veto on tool T03",
            "F09 (UNKNOWN, expectation_failed)",
        ],
    )
    .await;

    let lawful = checked_and_drilled(kind, 16).await;
    let settled = resolve_f09(lawful.store.as_ref(), "rev").await;
    lawful.store.commit(settled).await.unwrap();
    lawful.store.set_autonomy(raise("T03")).await.unwrap();
    let status = lawful.store.verify().await.unwrap();
    assert!(matches!(status, ChainStatus::Intact { .. }), "{status:?}");
}

holdfast_on_both_backends!(
    a_raise_without_a_proven_lookup_or_a_passing_drill_is_named,
    a_raise_while_a_veto_was_open_is_named,
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
    a_forged_resolve_without_an_observation_is_refused,
    a_forged_retry_of_a_high_risk_operation_by_one_person_is_refused,
    a_forged_retry_past_the_budget_is_refused,
    a_forged_mark_compensated_without_a_compensation_is_refused,
    a_forged_confirm_with_no_proposal_is_refused,
    a_forged_accept_without_a_repair_reference_is_refused,
    a_forged_reconcile_that_moves_the_state_is_refused,
    a_forged_transition_out_of_a_hold_is_a_decision_and_refused,
    a_forged_transition_outside_the_state_table_is_refused,
    a_forged_create_of_an_approved_operation_is_refused,
    a_comment_covering_a_rewrite_of_risk_budget_deadline_or_tenant_is_named,
    a_worker_login_moving_work_it_holds_no_lease_on_is_named,
    a_deleted_attempt_is_named_with_its_table,
    a_deleted_attempt_under_a_decision_is_named_and_the_decision_replayed,
    a_deleted_observation_is_named_with_its_table,
    an_inserted_observation_no_row_added_is_named,
    a_deleted_expectation_is_named_with_its_table,
    a_deleted_dependency_is_named_with_its_table,
    a_deleted_contract_is_named_with_its_table,
    a_changed_tenant_or_queue_flag_is_named,
    emptied_metric_facts_are_named_and_never_trusted,
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

/// A veto taken out of the kept metric facts with its counts moved to match
/// keeps every count in step, so only judging the records again shows it: the
/// report from the kept facts would say DEPLOYABLE, and `audit verify` names the
/// difference instead of passing.
#[test]
fn kept_facts_changed_with_their_counts_are_recomputed_by_verify() {
    let cli = support::cli::Cli::demo();
    cli.run("maya", &["report"]).expect_code(0);
    cli.run("maya", &["audit", "verify"]).expect_code(0);
    let sql = "DELETE FROM metric_rows WHERE kind = 'veto'; \
               UPDATE metric_counts SET row_count = 0, n_sum = 0 WHERE kind = 'veto';";
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let store = holdfast::store::sqlite::SqliteStore::open(&cli.db)
            .await
            .unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.to_owned()))
            .execute(store.pool())
            .await
            .unwrap();
        store.pool().close().await;
    });
    let run = cli.run("maya", &["audit", "verify"]).expect_code(4);
    assert!(
        run.stderr
            .contains("the kept metric facts differ from the records")
            && run
                .stderr
                .contains("DEPLOYABLE from the kept facts but NOT_DEPLOYED from the records"),
        "{}",
        run.stderr
    );
}
