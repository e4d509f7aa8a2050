//! A broken audit chain stops every door that appends to it: each write command
//! refuses with exit 4 and the seq of the break until an owner acknowledges the
//! break (an audited row) or `audit verify` passes again, and a read prints one
//! warning line on stderr naming the break.

use crate::support;

use sqlx::{Connection, Row, SqliteConnection};
use support::cli::{Cli, Run};

const RATIONALE: &str = "checked the provider console by hand";

async fn raw(cli: &Cli) -> SqliteConnection {
    SqliteConnection::connect(&format!("sqlite:{}", cli.db.display()))
        .await
        .unwrap()
}

/// Edits the newest audit row behind the store's back (its hash no longer
/// matches): a row after the checkpoint the last door's walk left, which the next
/// door's walk reaches. Returns its seq.
async fn tamper(cli: &Cli) -> i64 {
    let head = audit_rows(cli).await.len() as i64;
    let mut conn = raw(cli).await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP TRIGGER audit_no_update; UPDATE audit SET by_identity = 'mallory' WHERE seq = {head}"
    )))
    .execute(&mut conn)
    .await
    .unwrap();
    head
}

async fn audit_rows(cli: &Cli) -> Vec<(i64, String, String)> {
    let mut conn = raw(cli).await;
    sqlx::query("SELECT seq, operation, action FROM audit ORDER BY seq")
        .fetch_all(&mut conn)
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get("seq"), r.get("operation"), r.get("action")))
        .collect()
}

fn refused_at(seq: i64, run: Run, door: &str) {
    assert_eq!(run.code, 4, "{door}: {}", run.stderr);
    assert!(
        run.stderr.contains(&format!(
            "refused: the audit chain is broken at seq {seq} ("
        )),
        "{door}: {}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains(&format!("holdfast audit acknowledge {seq} --reason")),
        "{door}: {}",
        run.stderr
    );
}

fn fixture(name: &str) -> String {
    format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[tokio::test]
async fn a_broken_chain_refuses_every_write_door_with_exit_4_and_the_seq() {
    let cli = Cli::with("small.jsonl");
    // A lease taken before the break, for the work protocol's later steps.
    cli.run("w0", &["work", "claim", "--worker", "w0", "--lease", "600"])
        .expect_code(0);
    let seq = tamper(&cli).await;
    let before = audit_rows(&cli).await;
    let records = fixture("review.jsonl");
    let doors: Vec<(&str, Vec<&str>)> = vec![
        (
            "review",
            vec!["review", "F09", "comment", "--rationale", RATIONALE],
        ),
        (
            "review --filter",
            vec![
                "review",
                "--filter",
                "tenant:pinehaven",
                "comment",
                "--rationale",
                RATIONALE,
            ],
        ),
        (
            "review assign",
            vec![
                "review",
                "F09",
                "assign",
                "--owner",
                "billing",
                "--rationale",
                RATIONALE,
            ],
        ),
        ("ingest", vec!["ingest", &records]),
        ("observe", vec!["observe"]),
        (
            "work claim",
            vec!["work", "claim", "--worker", "w1", "--lease", "60"],
        ),
        (
            "work heartbeat",
            vec!["work", "heartbeat", "F10", "--worker", "w0"],
        ),
        (
            "work release",
            vec!["work", "release", "F10", "--worker", "w0"],
        ),
        (
            "autonomy set",
            vec!["autonomy", "set", "T03", "native", "--rationale", RATIONALE],
        ),
        (
            "lookup check",
            vec!["lookup", "check", "T03", "--known", "F09"],
        ),
        (
            "grant",
            vec!["grant", "maya", "--role", "owner", "--tenant", "pinehaven"],
        ),
    ];
    for (door, args) in &doors {
        refused_at(seq, cli.run("maya", args), door);
    }
    assert_eq!(audit_rows(&cli).await, before, "nothing was appended");
}

#[tokio::test]
async fn a_read_on_a_broken_chain_prints_exactly_one_warning_line() {
    let cli = Cli::with("small.jsonl");
    let clean = cli.run("maya", &["list"]).expect_code(0);
    assert_eq!(clean.stderr, "", "an intact chain: no warning");
    let seq = tamper(&cli).await;
    for args in [
        vec!["list"],
        vec!["show", "F09"],
        vec!["report"],
        vec!["review", "F09", "comment", "--dry-run"],
    ] {
        let run = cli.run("maya", &args);
        // `report` also tells how far its judging has got, on lines of their own.
        let lines: Vec<&str> = run
            .stderr
            .lines()
            .filter(|l| !l.starts_with("Judging the operations"))
            .collect();
        assert_eq!(lines.len(), 1, "{args:?}: {}", run.stderr);
        assert!(
            lines[0].starts_with(&format!(
                "warning: the audit chain is broken at seq {seq} ("
            )),
            "{args:?}: {}",
            lines[0]
        );
    }
}

#[tokio::test]
async fn acknowledging_a_break_is_audited_and_lets_writes_go_on() {
    let cli = Cli::with("small.jsonl");
    // Row 2 is behind the checkpoint a door's walk left (`list` here): the
    // doors walk on from there, so only a full verify finds it, and records it.
    cli.run("maya", &["list"]).expect_code(0);
    let mut conn = raw(&cli).await;
    sqlx::raw_sql(
        "DROP TRIGGER audit_no_update; UPDATE audit SET by_identity = 'mallory' WHERE seq = 2",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    cli.run(
        "maya",
        &["review", "F09", "comment", "--rationale", RATIONALE],
    )
    .expect_code(0);
    cli.run("auditor", &["audit", "verify"]).expect_code(4);
    refused_at(
        2,
        cli.run(
            "maya",
            &["review", "F09", "comment", "--rationale", RATIONALE],
        ),
        "review",
    );
    // A reason is required, and only a recorded break can be acknowledged.
    cli.run("maya", &["audit", "acknowledge", "2", "--reason", "short"])
        .expect_code(2);
    cli.run(
        "maya",
        &["audit", "acknowledge", "7", "--reason", RATIONALE],
    )
    .expect_code(2);
    let acked = cli
        .run(
            "maya",
            &[
                "audit",
                "acknowledge",
                "2",
                "--reason",
                "restored from backup, row 2 differs",
                "--json",
            ],
        )
        .expect_code(0)
        .json();
    assert_eq!(acked["acknowledged"], 2, "{acked}");
    assert_eq!(acked["audit"]["action"], "acknowledge-break", "{acked}");
    assert_eq!(acked["audit"]["operation"], "holdfast:chain", "{acked}");
    assert_eq!(acked["audit"]["by"], "maya", "{acked}");
    let rows = audit_rows(&cli).await;
    assert_eq!(rows.last().map(|r| r.2.as_str()), Some("acknowledge-break"));
    // Writes go on; the chain still names the break; a read says it is acknowledged.
    cli.run(
        "maya",
        &["review", "F09", "comment", "--rationale", RATIONALE],
    )
    .expect_code(0);
    let verify = cli.run("auditor", &["audit", "verify"]).expect_code(4);
    assert!(
        verify.stderr.contains("broken at seq 2"),
        "{}",
        verify.stderr
    );
    cli.run(
        "maya",
        &["review", "F09", "comment", "--rationale", RATIONALE],
    )
    .expect_code(0);
    let read = cli.run("maya", &["list"]).expect_code(0);
    assert_eq!(read.stderr.lines().count(), 1, "{}", read.stderr);
    assert!(
        read.stderr.contains("acknowledged at seq"),
        "{}",
        read.stderr
    );
    // A second acknowledgement of the same break is refused.
    cli.run(
        "maya",
        &["audit", "acknowledge", "2", "--reason", RATIONALE],
    )
    .expect_code(2);
}

#[tokio::test]
async fn a_break_after_the_checkpoint_is_found_by_the_write_door_itself() {
    let cli = Cli::with("small.jsonl");
    // The door's walk finds the break without any `audit verify`, and records it.
    cli.run(
        "maya",
        &["review", "F09", "comment", "--rationale", RATIONALE],
    )
    .expect_code(0);
    let head = audit_rows(&cli).await.len();
    let mut conn = raw(&cli).await;
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "DROP TRIGGER audit_no_update; UPDATE audit SET rationale = 'nothing' WHERE seq = {head}"
    )))
    .execute(&mut conn)
    .await
    .unwrap();
    let run = cli
        .run(
            "maya",
            &["review", "F09", "comment", "--rationale", RATIONALE],
        )
        .expect_code(4);
    assert!(
        run.stderr.contains(&format!("broken at seq {head}")),
        "{}",
        run.stderr
    );
    // Once the row is as it was and a full verify passes, writes go on.
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "UPDATE audit SET rationale = '{RATIONALE}' WHERE seq = {head}"
    )))
    .execute(&mut conn)
    .await
    .unwrap();
    cli.run(
        "maya",
        &["review", "F09", "comment", "--rationale", RATIONALE],
    )
    .expect_code(4);
    cli.run("auditor", &["audit", "verify"]).expect_code(0);
    cli.run(
        "maya",
        &["review", "F09", "comment", "--rationale", RATIONALE],
    )
    .expect_code(0);
}

/// The store's side, on both backends: a door's walk finds an edited row after
/// the checkpoint and records it; the store then refuses any commit (whatever
/// door it came through) until the owner's acknowledgement, an audit row, which
/// moves the checkpoint past the break; a passing full verify clears breaks.
async fn the_store_refuses_a_commit_past_a_recorded_break_until_acknowledged(
    kind: support::stores::Kind,
) {
    use holdfast::core::audit::ChainStatus;
    use holdfast::store::StoreError;
    use support::review::{comment, loaded, now};
    let fresh = loaded(kind).await;
    let store = fresh.store.as_ref();
    assert_eq!(
        holdfast::store::chain::check(store, now()).await.unwrap(),
        None
    );
    let head = store.head_seq().await.unwrap();
    assert_eq!(
        store.chain_marks().await.unwrap().checkpoint.map(|c| c.0),
        Some(head),
        "the walk left its checkpoint at the head"
    );
    let c = comment(store, "F09", "first look at the provider").await;
    store.commit(c).await.unwrap();
    // Only the update guard goes: the head keeps moving with appended rows.
    fresh
        .execute(match kind {
            support::stores::Kind::Sqlite => "DROP TRIGGER audit_no_update",
            support::stores::Kind::Postgres => "DROP TRIGGER audit_no_update ON audit",
        })
        .await
        .unwrap();
    fresh
        .execute(&format!(
            "UPDATE audit SET rationale = 'nothing happened' WHERE seq = {}",
            head + 1
        ))
        .await
        .unwrap();
    let found = holdfast::store::chain::check(store, now())
        .await
        .unwrap()
        .expect("the walk finds the edited row");
    assert_eq!(found.seq, head + 1);
    assert_eq!(found.found_by, "link-check");
    assert_eq!(found.acknowledged_seq, None);
    let c = comment(store, "F09", "second look at the provider").await;
    match store.commit(c).await {
        Err(StoreError::ChainBroken(b)) => assert_eq!(b.seq, head + 1),
        other => panic!("committed past a recorded break: {other:?}"),
    }
    // A full verify finds the same break and keeps it (not acknowledged).
    let status = store.verify().await.unwrap();
    assert!(matches!(status, ChainStatus::Broken { seq, .. } if seq == head + 1));
    store.record_chain(&status, "verify", now()).await.unwrap();
    let reason = holdfast::core::rules::Rationale::parse("the row was restored by hand").unwrap();
    let draft = holdfast::core::chain::acknowledgement(
        "maya",
        holdfast::core::model::Role::Local,
        None,
        head + 1,
        &reason,
        now(),
    );
    let ack = store.acknowledge_break(head + 1, draft).await.unwrap();
    assert_eq!(ack.draft.operation.as_str(), "holdfast:chain");
    let marks = store.chain_marks().await.unwrap();
    assert_eq!(marks.breaks[0].acknowledged_seq, Some(ack.seq));
    assert_eq!(marks.checkpoint.map(|c| c.0), Some(ack.seq));
    let c = comment(store, "F09", "second look at the provider").await;
    store.commit(c).await.unwrap();
    // The same break found again keeps its acknowledgement.
    store.record_chain(&status, "verify", now()).await.unwrap();
    assert_eq!(store.chain_marks().await.unwrap().refusing(), None);
    // A passing verify clears it.
    store
        .record_chain(
            &ChainStatus::Intact {
                rows: 1,
                head: None,
            },
            "verify",
            now(),
        )
        .await
        .unwrap();
    assert!(store.chain_marks().await.unwrap().breaks.is_empty());
}

holdfast_on_both_backends!(the_store_refuses_a_commit_past_a_recorded_break_until_acknowledged);

#[tokio::test]
async fn once_grants_exist_only_an_owner_acknowledges_a_break() {
    let cli = Cli::with("small.jsonl");
    for (who, role) in [("maya", "owner"), ("rev", "reviewer")] {
        cli.run(
            "maya",
            &["grant", who, "--role", role, "--tenant", "pinehaven"],
        )
        .expect_code(0);
    }
    let seq = tamper(&cli).await;
    refused_at(
        seq,
        cli.run(
            "rev",
            &["review", "F09", "comment", "--rationale", RATIONALE],
        ),
        "review",
    );
    let seq_text = seq.to_string();
    let ack = [
        "audit",
        "acknowledge",
        seq_text.as_str(),
        "--reason",
        RATIONALE,
    ];
    let refused = cli.run("rev", &ack).refused("G6");
    assert!(
        refused.stderr.contains("an owner's decision"),
        "{}",
        refused.stderr
    );
    let before = audit_rows(&cli).await;
    cli.run("maya", &ack).expect_code(0);
    let after = audit_rows(&cli).await;
    assert_eq!(after.len(), before.len() + 1);
    assert_eq!(
        after.last().map(|r| (r.1.as_str(), r.2.as_str())),
        Some(("holdfast:chain", "acknowledge-break"))
    );
    cli.run(
        "rev",
        &["review", "F09", "comment", "--rationale", RATIONALE],
    )
    .expect_code(0);
}
