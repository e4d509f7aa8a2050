//! Store behaviour every backend must share: ingest idempotency and refusals, the
//! queue, details, optimistic commits, concurrent reviewers, live updates and the
//! audit chain. Every test here runs once on SQLite and once on PostgreSQL (see
//! `holdfast_on_both_backends!` at the end); a few that only one backend can express (killing
//! a PostgreSQL session, moving a store between the two) follow it.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use holdfast::core::audit::ChainStatus;
use holdfast::core::model::{Role, State};
use holdfast::core::rules::{Action, Rationale, decide};
use holdfast::store::Scope;
use holdfast::store::copy::TABLES;
use holdfast::store::{IngestMode, Link, OperationFilter, Page, SortOrder, Store, StoreError};
use sqlx::Connection;
use support::review::{SMALL, comment, id, loaded, local, now, records, resolve_f09};
use support::stores::{self, Fresh, Kind};
use tokio::sync::Barrier;

/// The first `limit` rows of a listing, with the total that match.
async fn first_page(
    store: &dyn Store,
    filter: &OperationFilter,
    sort: SortOrder,
    limit: u64,
) -> (Vec<holdfast::store::OperationRow>, u64) {
    store.list(filter, sort, Page::first(limit)).await.unwrap()
}

fn queue() -> OperationFilter {
    OperationFilter {
        queue: true,
        ..OperationFilter::default()
    }
}

async fn ingest_commits_every_record_and_the_queue_shows_holds_and_their_dependents(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let store = fresh.store.as_ref();
    let report = store
        .ingest(records(SMALL), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    let committed: u64 = report.committed.iter().map(|(_, n)| n).sum();
    assert_eq!(committed, 8);
    let (rows, total) = first_page(store, &queue(), SortOrder::Urgency, 50).await;
    assert_eq!(total, 2);
    assert_eq!(rows[0].operation.id.as_str(), "F09");
    assert_eq!(rows[0].operation.state, State::Unknown);
    assert_eq!(rows[0].attempts_used, 1);
    assert_eq!(rows[0].max_attempts, Some(3));
    assert_eq!(rows[1].operation.id.as_str(), "F10");
    assert_eq!(rows[1].held_dependencies, vec![id("F09")]);

    let counts = store.counts(&queue(), now()).await.unwrap();
    assert_eq!(
        counts.overdue, 1,
        "F09's next observation 10:02 is before 10:03"
    );
    assert_eq!(counts.held_by_dependency, 1);

    let detail = store.detail(&Scope::Every, &id("F09")).await.unwrap();
    assert_eq!(detail.attempts.len(), 1);
    assert_eq!(detail.observations.len(), 1);
    assert!(detail.expectation.is_some());
    let actions: Vec<&str> = detail
        .audit
        .iter()
        .map(|r| r.draft.action.as_str())
        .collect();
    assert_eq!(actions, ["ingest", "transition", "transition"]);
    assert_eq!(detail.audit[0].draft.to, Some(State::Approved));
    assert_eq!(detail.row.version, 3);
    assert!(matches!(
        store.verify().await.unwrap(),
        ChainStatus::Intact { rows: 4, .. }
    ));
}

async fn the_same_records_twice_are_a_no_op(kind: Kind) {
    let fresh = loaded(kind).await;
    let store = fresh.store.as_ref();
    let head = store.head_seq().await.unwrap();
    let report = store
        .ingest(records(SMALL), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert!(report.committed.is_empty());
    assert_eq!(report.unchanged, 8);
    assert!(report.rejected.is_empty());
    assert_eq!(store.head_seq().await.unwrap(), head);
}

async fn the_same_id_with_other_content_is_refused_and_nothing_is_committed(kind: Kind) {
    let fresh = loaded(kind).await;
    let store = fresh.store.as_ref();
    let changed = SMALL.replace("ticket-queue:7", "ticket-queue:9");
    let extra = changed.replace("\"id\":\"A017\"", "\"id\":\"A099\"");
    let report = store
        .ingest(records(&extra), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert_eq!(report.rejected.len(), 2, "{:?}", report.rejected);
    assert_eq!(report.rejected[0].line, 2);
    assert_eq!(report.rejected[0].field, "id");
    assert!(report.rejected[0].reason.contains("different content"));
    // The new attempt is part of the refused operation's history.
    assert_eq!(report.rejected[1].line, 4);
    assert_eq!(
        report.rejected[1].reason,
        "part of operation F09's history, refused with line 2"
    );
    assert!(report.committed.is_empty());
    assert!(
        store
            .detail(&Scope::Every, &id("F09"))
            .await
            .unwrap()
            .attempts
            .len()
            == 1
    );
}

async fn unknown_references_are_refused_by_line_and_quarantine_keeps_the_good_lines(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let store = fresh.store.as_ref();
    let text = SMALL.replace(
        "\"id\":\"O05\",\"operation\":\"F09\"",
        "\"id\":\"O05\",\"operation\":\"F99\"",
    );
    let strict = store
        .ingest(records(&text), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert_eq!(strict.rejected.len(), 1);
    assert_eq!(
        (strict.rejected[0].line, strict.rejected[0].field.as_str()),
        (5, "operation")
    );
    assert_eq!(store.head_seq().await.unwrap(), 0, "strict commits nothing");

    let kept = store
        .ingest(records(&text), IngestMode::Quarantine, "test", now())
        .await
        .unwrap();
    let committed: u64 = kept.committed.iter().map(|(_, n)| n).sum();
    assert_eq!(committed, 7);
    assert!(
        store
            .detail(&Scope::Every, &id("F09"))
            .await
            .unwrap()
            .observations
            .is_empty()
    );
}

async fn transitions_pass_the_state_machine_and_must_end_in_the_declared_state(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let store = fresh.store.as_ref();
    let skipped = SMALL.replace(
        "\"from\":\"SENT\",\"to\":\"UNKNOWN\"",
        "\"from\":\"SENT\",\"to\":\"PLANNED\"",
    );
    let report = store
        .ingest(records(&skipped), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    let line7: Vec<_> = report.rejected.iter().filter(|e| e.line == 7).collect();
    assert!(
        line7
            .iter()
            .any(|e| e.field == "to" && e.reason.starts_with("G1")),
        "{:?}",
        report.rejected
    );
    let cascade = report
        .rejected
        .iter()
        .any(|e| e.line == 4 && e.field == "operation");
    assert!(
        cascade,
        "the attempt of a refused operation is refused too: {:?}",
        report.rejected
    );
    assert_eq!(store.head_seq().await.unwrap(), 0);
}

async fn a_stale_version_is_refused_with_who_changed_it(kind: Kind) {
    let fresh = loaded(kind).await;
    let store = fresh.store.as_ref();
    let detail = store.detail(&Scope::Every, &id("F09")).await.unwrap();
    let rationale = Rationale::parse("provider status shows the ticket exactly once").unwrap();
    let effect = decide(
        &detail,
        &Action::Resolve {
            to: State::Succeeded,
        },
        &local(),
        &rationale,
        detail.row.version,
        now(),
    )
    .unwrap();
    let row = store.commit(effect.commit.clone()).await.unwrap();
    assert_eq!(row.draft.to, Some(State::Succeeded));
    let again = store.commit(effect.commit).await.unwrap_err();
    match again {
        StoreError::Conflict {
            by,
            current,
            expected,
            ..
        } => {
            assert_eq!(by, "maya");
            assert_eq!(current, expected + 1);
        }
        other => panic!("expected a conflict, got {other}"),
    }
    let after = store.detail(&Scope::Every, &id("F09")).await.unwrap();
    assert_eq!(after.row.operation.state, State::Succeeded);
    let (rows, _) = first_page(store, &queue(), SortOrder::Urgency, 50).await;
    assert!(rows.is_empty(), "F10 is no longer held by its dependency");
    assert!(matches!(
        store.verify().await.unwrap(),
        ChainStatus::Intact { rows: 5, .. }
    ));
}

/// A fresh store of `kind` holding the console's fixture.
async fn with_console_packet(kind: Kind) -> Fresh {
    let fresh = stores::fresh(kind).await;
    let report = fresh
        .store
        .ingest(
            records(support::console::PACKET),
            IngestMode::Strict,
            "test",
            now(),
        )
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    fresh
}

async fn search_matches_the_columns_the_queue_shows(kind: Kind) {
    let fresh = with_console_packet(kind).await;
    let store = fresh.store.as_ref();
    let search = |needle: &str| OperationFilter {
        search: Some(needle.into()),
        ..OperationFilter::default()
    };
    let (rows, _) = first_page(store, &search("BILLING"), SortOrder::Id, 50).await;
    let ids: Vec<&str> = rows.iter().map(|r| r.operation.id.as_str()).collect();
    assert_eq!(ids, ["F21", "F22", "F23"], "an owner, in any case");
    let (rows, _) = first_page(store, &search("northw"), SortOrder::Id, 50).await;
    assert_eq!(rows.len(), 3);
    assert!(rows.iter().all(|r| r.operation.tenant == "northwind"));
    let (rows, _) = first_page(store, &search("duplicate_re"), SortOrder::Id, 50).await;
    assert!(
        rows.iter().any(|r| r.operation.id.as_str() == "F30"),
        "a failure mode"
    );
    let (rows, _) = first_page(store, &search("critical"), SortOrder::Id, 50).await;
    let ids: Vec<&str> = rows.iter().map(|r| r.operation.id.as_str()).collect();
    assert_eq!(ids, ["F21", "F22", "F23"], "a risk tier");
    let (rows, _) = first_page(store, &search("bil_ing"), SortOrder::Id, 50).await;
    assert!(rows.is_empty(), "`_` separates words: it is no wildcard");
    let scoped = OperationFilter {
        scope: Scope::Tenants(vec!["lakeshore".into()]),
        ..search("billing")
    };
    let (rows, total) = first_page(store, &scoped, SortOrder::Id, 50).await;
    assert!(
        rows.is_empty() && total == 0,
        "the tenant scope still applies"
    );
}

/// The tool filter narrows a listing, its count and the queue counts to the
/// operations of the tools named, the same as picking them out of everything.
async fn the_tool_filter_keeps_the_operations_of_the_tools_named(kind: Kind) {
    let fresh = with_console_packet(kind).await;
    let store = fresh.store.as_ref();
    let (every, _) = first_page(store, &OperationFilter::default(), SortOrder::Id, 500).await;
    let (queued, _) = first_page(store, &queue(), SortOrder::Id, 500).await;
    let of = |rows: &[holdfast::store::OperationRow], tools: &[&str]| -> Vec<String> {
        rows.iter()
            .filter(|r| tools.contains(&r.operation.tool.as_str()))
            .map(|r| r.operation.id.to_string())
            .collect()
    };
    for tools in [&["T03"][..], &["T05", "T07"], &["T99"]] {
        let by_tool = OperationFilter {
            tools: tools.iter().map(|t| (*t).to_owned()).collect(),
            ..OperationFilter::default()
        };
        let (rows, total) = first_page(store, &by_tool, SortOrder::Id, 500).await;
        let ids: Vec<String> = rows.iter().map(|r| r.operation.id.to_string()).collect();
        assert_eq!(ids, of(&every, tools), "{tools:?}");
        assert_eq!(total, ids.len() as u64);
        assert_eq!(store.count(&by_tool).await.unwrap(), total);
        let held = OperationFilter {
            queue: true,
            ..by_tool.clone()
        };
        let (rows, _) = first_page(store, &held, SortOrder::Id, 500).await;
        let ids: Vec<String> = rows.iter().map(|r| r.operation.id.to_string()).collect();
        assert_eq!(ids, of(&queued, tools), "{tools:?} in the queue");
        let counts = store.counts(&held, now()).await.unwrap();
        let counted: u64 = counts.by_state.iter().map(|(_, n)| n).sum();
        assert_eq!(counted, ids.len() as u64, "{tools:?}: {counts:?}");
        assert_eq!(store.count(&held).await.unwrap(), counted);
    }
    let (rows, _) = first_page(
        store,
        &OperationFilter {
            tools: vec!["T03".into()],
            ..OperationFilter::default()
        },
        SortOrder::Id,
        500,
    )
    .await;
    assert!(!rows.is_empty(), "the packet has T03 operations");
}

async fn search_finds_targets_keys_and_provider_ids(kind: Kind) {
    let fresh = loaded(kind).await;
    let store = fresh.store.as_ref();
    for (needle, expected) in [
        ("queue:8", "F10"),
        ("CASE-4411", "F09"),
        ("k-f09", "F09"),
        ("50%", ""),
    ] {
        let filter = OperationFilter {
            search: Some(needle.into()),
            ..OperationFilter::default()
        };
        let (rows, _) = first_page(store, &filter, SortOrder::Id, 10).await;
        let ids: Vec<&str> = rows.iter().map(|r| r.operation.id.as_str()).collect();
        let want: Vec<&str> = if expected.is_empty() {
            vec![]
        } else {
            vec![expected]
        };
        assert_eq!(ids, want, "search {needle}");
    }
    let hidden = OperationFilter {
        scope: Scope::Tenants(vec!["other".into()]),
        ..OperationFilter::default()
    };
    let (rows, total) = first_page(store, &hidden, SortOrder::Id, 10).await;
    assert!(rows.is_empty() && total == 0);
}

async fn the_audit_log_refuses_edits_and_verify_names_a_row_changed_behind_its_back(kind: Kind) {
    let fresh = loaded(kind).await;
    let refused = fresh
        .execute("UPDATE audit SET by_identity = 'mallory' WHERE seq = 2")
        .await;
    assert!(refused.is_err(), "the trigger refuses UPDATE");
    let refused = fresh.execute("DELETE FROM audit WHERE seq = 2").await;
    assert!(refused.is_err(), "the trigger refuses DELETE");

    let drop_trigger = match kind {
        Kind::Sqlite => "DROP TRIGGER audit_no_update",
        Kind::Postgres => "DROP TRIGGER audit_no_update ON audit",
    };
    fresh.execute(drop_trigger).await.unwrap();
    fresh
        .execute("UPDATE audit SET rationale = 'nothing happened' WHERE seq = 3")
        .await
        .unwrap();
    match fresh.store.verify().await.unwrap() {
        ChainStatus::Broken { seq, .. } => assert_eq!(seq, 3),
        other => panic!("expected a break, got {other:?}"),
    }
}

async fn a_store_from_a_newer_version_is_refused(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let checksum = match kind {
        Kind::Sqlite => "x'00'",
        Kind::Postgres => "'\\x00'::bytea",
    };
    fresh
        .execute(&format!(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time) \
             VALUES (99990101000000, 'future', true, {checksum}, 0)"
        ))
        .await
        .unwrap();
    fresh.close().await;
    let error = fresh
        .reopen()
        .await
        .err()
        .expect("a newer store is refused");
    assert!(
        matches!(
            error,
            StoreError::TooNew {
                found: 99990101000000,
                ..
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("newer holdfast"));
}

async fn sixteen_reviewers_racing_on_one_operation_make_exactly_one_transition(kind: Kind) {
    const REVIEWERS: usize = 16;
    let fresh = loaded(kind).await;
    let before = fresh.store.head_seq().await.unwrap();
    let start = Arc::new(Barrier::new(REVIEWERS));
    let mut racers = Vec::new();
    for n in 0..REVIEWERS {
        // Each reviewer has a console of their own, decided on the same version.
        let store = fresh.reopen().await.unwrap();
        let reviewer = format!("rev{n:02}");
        let commit = resolve_f09(store.as_ref(), &reviewer).await;
        let start = Arc::clone(&start);
        racers.push(tokio::spawn(async move {
            start.wait().await;
            (reviewer, store.commit(commit).await)
        }));
    }
    let mut winners = Vec::new();
    let mut conflicts = Vec::new();
    for racer in racers {
        match racer.await.unwrap() {
            (reviewer, Ok(row)) => winners.push((reviewer, row)),
            (
                reviewer,
                Err(StoreError::Conflict {
                    by,
                    current,
                    expected,
                    ..
                }),
            ) => {
                assert_eq!(
                    current,
                    expected + 1,
                    "{reviewer} lost to exactly one change"
                );
                conflicts.push(by);
            }
            (reviewer, Err(other)) => panic!("{reviewer}: expected a conflict, got {other}"),
        }
    }
    assert_eq!(winners.len(), 1, "exactly one transition");
    let (winner, row) = &winners[0];
    assert_eq!(row.draft.to, Some(State::Succeeded));
    assert_eq!(conflicts.len(), REVIEWERS - 1);
    assert!(
        conflicts.iter().all(|by| by == winner),
        "every loser is told who won: {conflicts:?}"
    );
    assert_eq!(fresh.store.head_seq().await.unwrap(), before + 1);
    let after = fresh.store.detail(&Scope::Every, &id("F09")).await.unwrap();
    assert_eq!(after.row.operation.state, State::Succeeded);
    assert!(matches!(
        fresh.store.verify().await.unwrap(),
        ChainStatus::Intact { rows: 5, .. }
    ));
}

async fn a_change_by_one_console_reaches_another_within_a_second(kind: Kind) {
    let fresh = loaded(kind).await;
    let other = fresh.reopen().await.unwrap();
    let mut live = other.watch().await.unwrap();
    let seen = live.borrow_and_update().head;
    assert_eq!(seen, fresh.store.head_seq().await.unwrap());
    assert_eq!(live.borrow().link, Link::Connected);

    let row = fresh
        .store
        .commit(comment(fresh.store.as_ref(), "F10", "paged the owner").await)
        .await
        .unwrap();
    let heard = tokio::time::timeout(Duration::from_secs(1), live.wait_for(|l| l.head >= row.seq))
        .await
        .expect("the change is heard within a second")
        .unwrap()
        .head;
    assert_eq!(heard, row.seq);
    let shown = other.detail(&Scope::Every, &id("F10")).await.unwrap();
    assert_eq!(shown.audit.last().map(|r| r.seq), Some(row.seq));
}

async fn a_cancelled_action_leaves_no_transaction_open(kind: Kind) {
    let fresh = loaded(kind).await;
    // Another writer holds the write lock, so the commit waits inside its
    // transaction; the console gives up on it (the task is dropped mid-flight).
    let holder = fresh.reopen().await.unwrap();
    let lock = match kind {
        Kind::Sqlite => "BEGIN IMMEDIATE",
        Kind::Postgres => "BEGIN; SELECT * FROM chain_head FOR UPDATE",
    };
    let mut blocker = raw_connection(&fresh).await;
    blocker.execute(lock).await;
    let commit = comment(fresh.store.as_ref(), "F10", "left half-way").await;
    let store = Arc::clone(&fresh.store);
    let waiting = tokio::spawn(async move { store.commit(commit).await });
    match kind {
        // SQLite waits inside its busy handler, which nothing outside can see.
        Kind::Sqlite => tokio::time::sleep(Duration::from_millis(300)).await,
        Kind::Postgres => {
            // Watched from a connection of its own: inside the blocker's transaction
            // pg_stat_activity would stay the snapshot of its first read.
            let mut observer = raw_connection(&fresh).await;
            let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
            while observer
                .count(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE datname = current_database() AND wait_event_type = 'Lock'",
                )
                .await
                == 0
            {
                assert!(!waiting.is_finished(), "the commit did not wait");
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "the commit never waited"
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
    waiting.abort();
    assert!(waiting.await.unwrap_err().is_cancelled());
    blocker.execute("ROLLBACK").await;
    drop(holder);

    if kind == Kind::Postgres {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let idle = blocker
                .count(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE datname = current_database() AND state LIKE 'idle in transaction%'",
                )
                .await;
            if idle == 0 {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{idle} session(s) left idle in transaction"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // Nothing of the cancelled commit landed, and the next one goes through at once.
    let before = fresh.store.head_seq().await.unwrap();
    let next = comment(fresh.store.as_ref(), "F10", "done properly").await;
    let row = tokio::time::timeout(Duration::from_secs(5), fresh.store.commit(next))
        .await
        .expect("the write lock was released")
        .unwrap();
    assert_eq!(row.seq, before + 1);
    assert!(matches!(
        fresh.store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
}

async fn a_copy_covers_every_table_and_column_of_the_schema(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let mut raw = raw_connection(&fresh).await;
    let mut stored = raw
        .strings(match kind {
            Kind::Sqlite => {
                "SELECT m.name || '.' || p.name FROM sqlite_master m, pragma_table_info(m.name) p \
                 WHERE m.type = 'table' AND m.name NOT LIKE '\\_%' ESCAPE '\\' \
                 AND m.name NOT LIKE 'sqlite%' \
                 AND m.name NOT IN ('operation_counts', 'due_counts', 'contract_owners') \
                 AND m.name NOT LIKE 'metric\\_%' ESCAPE '\\'"
            }
            // The chain head is derived: copying the audit rows moves it. The
            // operation and due counts are too: copying the operations keeps them. The
            // kept metric facts are judged anew: copying the records marks every
            // operation stale. The role-action pairs are schema, filled by their
            // migration. A contract's owners per role are kept from the contract by
            // a trigger, which the copy of the contracts runs. Views hold nothing.
            Kind::Postgres => {
                "SELECT c.table_name || '.' || c.column_name FROM information_schema.columns c \
                 JOIN information_schema.tables t ON t.table_schema = c.table_schema \
                 AND t.table_name = c.table_name AND t.table_type = 'BASE TABLE' \
                 WHERE c.table_schema = current_schema() \
                 AND c.table_name NOT IN ('_sqlx_migrations', 'chain_head', 'operation_counts', 'due_counts', \
                 'role_actions', 'contract_owners') AND c.table_name NOT LIKE 'metric\\_%'"
            }
        })
        .await;
    stored.sort();
    let mut copied: Vec<String> = TABLES
        .iter()
        .flat_map(|t| t.columns.iter().map(|(c, _)| format!("{}.{c}", t.name)))
        .collect();
    copied.sort();
    assert_eq!(copied, stored);
}

/// A connection of its own to the store's database, behind the store's back.
enum Raw {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

async fn raw_connection(fresh: &Fresh) -> Raw {
    match fresh.kind {
        Kind::Sqlite => {
            let path = fresh.sqlite.as_ref().unwrap().path().to_owned();
            let options = sqlx::sqlite::SqliteConnectOptions::new().filename(path);
            Raw::Sqlite(
                sqlx::SqliteConnection::connect_with(&options)
                    .await
                    .unwrap(),
            )
        }
        Kind::Postgres => Raw::Postgres(sqlx::PgConnection::connect(&fresh.url).await.unwrap()),
    }
}

impl Raw {
    async fn execute(&mut self, sql: &str) {
        let sql = sqlx::AssertSqlSafe(sql.to_owned());
        match self {
            Raw::Sqlite(c) => sqlx::raw_sql(sql).execute(c).await.map(drop),
            Raw::Postgres(c) => sqlx::raw_sql(sql).execute(c).await.map(drop),
        }
        .unwrap();
    }

    async fn strings(&mut self, sql: &'static str) -> Vec<String> {
        match self {
            Raw::Sqlite(c) => sqlx::query_scalar(sql).fetch_all(c).await,
            Raw::Postgres(c) => sqlx::query_scalar(sql).fetch_all(c).await,
        }
        .unwrap()
    }

    async fn count(&mut self, sql: &'static str) -> i64 {
        match self {
            Raw::Sqlite(c) => sqlx::query_scalar(sql).fetch_one(c).await,
            Raw::Postgres(c) => sqlx::query_scalar(sql).fetch_one(c).await,
        }
        .unwrap()
    }
}

async fn grants_commit_with_their_audit_row_and_refuse_a_stale_basis(kind: Kind) {
    use holdfast::core::access::{GrantOp, GrantRequest, LEDGER, decide_grant};
    let fresh = loaded(kind).await;
    let store = fresh.store.as_ref();
    assert!(store.grants().await.unwrap().is_empty(), "single-user mode");
    let head = store.head_seq().await.unwrap();
    let request = |op, identity: &str, role| GrantRequest {
        op,
        identity: identity.into(),
        role,
        tenant: "pinehaven".into(),
    };
    let first = decide_grant(
        &[],
        "maya",
        Some("RP03".into()),
        &request(GrantOp::Grant, "maya", Role::Owner),
        None,
        now(),
    )
    .unwrap()
    .unwrap();
    let row = store.change_grant(first.clone()).await.unwrap();
    assert_eq!(row.seq, head + 1);
    assert_eq!(row.draft.operation.as_str(), LEDGER);
    assert_eq!(row.draft.action, "grant");
    assert_eq!(row.draft.role, Role::Local);
    assert_eq!(
        row.draft.evidence,
        ["identity:maya", "role:owner", "tenant:pinehaven"]
    );
    let grants = store.grants().await.unwrap();
    assert_eq!(grants.len(), 1);
    assert_eq!(
        (
            grants[0].identity.as_str(),
            grants[0].role,
            grants[0].granted_at
        ),
        ("maya", Role::Owner, now())
    );

    let stale = store.change_grant(first).await.unwrap_err();
    assert!(matches!(stale, StoreError::GrantsChanged), "{stale}");

    let second = decide_grant(
        &grants,
        "maya",
        None,
        &request(GrantOp::Grant, "bo", Role::Approver),
        None,
        now(),
    )
    .unwrap()
    .unwrap();
    store.change_grant(second).await.unwrap();
    let grants = store.grants().await.unwrap();
    let revoke = decide_grant(
        &grants,
        "maya",
        None,
        &request(GrantOp::Revoke, "bo", Role::Approver),
        None,
        now(),
    )
    .unwrap()
    .unwrap();
    let row = store.change_grant(revoke).await.unwrap();
    assert_eq!(row.draft.action, "revoke");
    assert_eq!(store.grants().await.unwrap().len(), 1);
    assert!(matches!(
        store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
    assert!(
        store
            .detail(&Scope::Every, &id("F09"))
            .await
            .unwrap()
            .audit
            .len()
            == 3,
        "grant rows belong to no operation"
    );
}

async fn ingest_refuses_the_reserved_id_prefix(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let text = SMALL.replace("\"id\":\"F10\"", "\"id\":\"holdfast:grants\"");
    let report = fresh
        .store
        .ingest(records(&text), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    assert!(
        report
            .rejected
            .iter()
            .any(|e| e.line == 3 && e.field == "id" && e.reason.contains("reserved")),
        "{:?}",
        report.rejected
    );
    assert_eq!(fresh.store.head_seq().await.unwrap(), 0);
}

async fn due_lookups_are_scoped_and_each_slot_is_claimed_once(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let store = fresh.store.as_ref();
    let provider = support::provider::Provider {
        base: "http://127.0.0.1:9".into(),
        seen: Default::default(),
    };
    let mut packet = provider.contract("T06", 2000, 60);
    packet.push('\n');
    packet.push_str(&support::provider::holds(
        "T06",
        &[("L1", "match:1"), ("L2", "match:2")],
        "2026-09-05T10:02:00Z",
    ));
    packet.push_str(&support::provider::holds(
        "T06",
        &[("L3", "match:3")],
        "2026-09-05T10:30:00Z",
    ));
    packet.push_str(SMALL);
    store
        .ingest(records(&packet), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    let every = holdfast::store::Scope::Every;
    let due = store.due_lookups(&every, now(), None, 10).await.unwrap();
    assert_eq!(
        due,
        [id("L1"), id("L2")],
        "F09's tool has no lookup object; L3 is not due"
    );
    let other = holdfast::store::Scope::from(Some(vec!["harbor".to_owned()]));
    assert!(
        store
            .due_lookups(&other, now(), None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let slot = holdfast::core::clock::parse_instant("2026-09-05T10:02:00Z").unwrap();
    let lease = now() + chrono::Duration::minutes(5);
    assert!(
        store
            .claim_lookup(&id("L1"), slot, "svc:a", now(), lease)
            .await
            .unwrap()
    );
    assert!(
        !store
            .claim_lookup(&id("L1"), slot, "svc:b", now(), lease)
            .await
            .unwrap()
    );
    assert_eq!(
        store.due_lookups(&every, now(), None, 10).await.unwrap(),
        [id("L2")]
    );
    // Overdue whatever their lookup or claim (what `observe` explains), in
    // scope, and never one whose observation has not come.
    let holds = store.overdue_holds(&every, now(), 10).await.unwrap();
    let overdue: Vec<_> = holds.iter().map(|h| h.id.clone()).collect();
    assert!(
        overdue.contains(&id("L1")) && overdue.contains(&id("L2")),
        "{overdue:?}"
    );
    assert!(!overdue.contains(&id("L3")), "{overdue:?}");
    // With the claim on its slot: who holds it and until when (what `observe`
    // names); none on a hold nobody claimed.
    let claim_of = |op: &str| holds.iter().find(|h| h.id == id(op)).unwrap().claim.clone();
    assert_eq!(claim_of("L1"), Some(("svc:a".to_owned(), lease)));
    assert_eq!(claim_of("L2"), None);
    assert_eq!(
        store.overdue_holds(&every, now(), 1).await.unwrap().len(),
        1
    );
    assert!(
        store
            .overdue_holds(&other, now(), 10)
            .await
            .unwrap()
            .is_empty()
    );
    let later = lease + chrono::Duration::seconds(1);
    assert!(
        store
            .claim_lookup(
                &id("L1"),
                slot,
                "svc:b",
                later,
                later + chrono::Duration::minutes(5)
            )
            .await
            .unwrap(),
        "an expired claim is taken over"
    );
}

holdfast_on_both_backends!(
    due_lookups_are_scoped_and_each_slot_is_claimed_once,
    ingest_commits_every_record_and_the_queue_shows_holds_and_their_dependents,
    the_same_records_twice_are_a_no_op,
    the_same_id_with_other_content_is_refused_and_nothing_is_committed,
    unknown_references_are_refused_by_line_and_quarantine_keeps_the_good_lines,
    transitions_pass_the_state_machine_and_must_end_in_the_declared_state,
    a_stale_version_is_refused_with_who_changed_it,
    search_finds_targets_keys_and_provider_ids,
    search_matches_the_columns_the_queue_shows,
    the_tool_filter_keeps_the_operations_of_the_tools_named,
    the_audit_log_refuses_edits_and_verify_names_a_row_changed_behind_its_back,
    a_store_from_a_newer_version_is_refused,
    sixteen_reviewers_racing_on_one_operation_make_exactly_one_transition,
    a_change_by_one_console_reaches_another_within_a_second,
    a_cancelled_action_leaves_no_transaction_open,
    a_copy_covers_every_table_and_column_of_the_schema,
    grants_commit_with_their_audit_row_and_refuse_a_stale_basis,
    ingest_refuses_the_reserved_id_prefix,
);

/// The metrics are computed from `dataset()`: the same packet must read back the
/// same on both backends, and so give the same report.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_backends_give_the_metrics_the_same_inputs() {
    let packet = records(include_str!("../assets/demo/tc094.jsonl"));
    let at = packet
        .iter()
        .filter_map(|n| match &n.record {
            holdfast::wire::Record::Transition(t) => Some(t.at),
            _ => None,
        })
        .max()
        .unwrap_or_else(now);
    let mut inputs = Vec::new();
    for kind in [Kind::Sqlite, Kind::Postgres] {
        if kind == Kind::Postgres && stores::postgres_skipped().await {
            return;
        }
        let fresh = stores::fresh(kind).await;
        let report = fresh
            .store
            .ingest(packet.clone(), IngestMode::Strict, "test", at)
            .await
            .unwrap();
        assert!(report.rejected.is_empty(), "{:?}", report.rejected);
        let data = fresh.store.dataset(&Scope::Every).await.unwrap();
        assert_eq!(data.operations.len(), packet_count(&packet, "operation"));
        assert_eq!(data.attempts.len(), packet_count(&packet, "attempt"));
        inputs.push(data);
    }
    assert_eq!(inputs[0], inputs[1]);
    assert_eq!(
        holdfast::core::metrics::report(&inputs[0], at),
        holdfast::core::metrics::report(&inputs[1], at)
    );
}

fn packet_count(packet: &[holdfast::wire::Numbered], kind: &str) -> usize {
    packet
        .iter()
        .filter(|n| n.record.type_name() == kind)
        .count()
}
