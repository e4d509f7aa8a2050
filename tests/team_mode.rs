//! Team mode: what only a shared PostgreSQL store can show (a listener's session
//! killed under it, the server refusing connections, a least-privilege login, the
//! chain head guarded by the database, the database login as the acting identity
//! and its delegation) and moving a store between the backends. The behaviour both
//! backends share is in `store_conformance.rs`.

use crate::support;

use std::time::Duration;

use holdfast::core::audit::ChainStatus;
use holdfast::core::model::Role;
use holdfast::core::rules::Action;
use holdfast::store::Scope;
use holdfast::store::postgres::PgStore;
use holdfast::store::{IngestMode, Link, Live, Store, StoreError};
use sqlx::{Connection, PgConnection};
use support::review::{self, SMALL, comment, decided, id, loaded, now, records, reviewer};
use support::stores::{self, Fresh, Kind, LoginRole, application_grants};
use tokio::sync::watch;

/// Waits (at most `limit`) until the watched value satisfies `ok`.
async fn until(
    live: &mut watch::Receiver<Live>,
    limit: Duration,
    what: &str,
    ok: impl FnMut(&Live) -> bool,
) -> Live {
    let waited = tokio::time::timeout(limit, live.wait_for(ok))
        .await
        .map(|seen| seen.map(|value| *value));
    match waited {
        Ok(Ok(value)) => value,
        Ok(Err(_)) => panic!("the watcher stopped before {what}"),
        Err(_) => panic!("{what}: not within {limit:?}; last {:?}", *live.borrow()),
    }
}

/// The backend pid of the session listening for changes, once there is one.
async fn listener_pid(admin: &mut PgConnection, database: &str) -> i32 {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let pid: Option<i32> = sqlx::query_scalar(
            "SELECT pid FROM pg_stat_activity WHERE datname = $1 AND query LIKE 'LISTEN%' \
             ORDER BY backend_start DESC LIMIT 1",
        )
        .bind(database)
        .fetch_optional(&mut *admin)
        .await
        .unwrap();
        if let Some(pid) = pid {
            return pid;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "nobody listens on {database}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A loaded PostgreSQL store, a second console watching it, and an admin
/// connection that sees the console's listening session.
struct Watched {
    fresh: Fresh,
    database: String,
    console: std::sync::Arc<dyn Store>,
    live: watch::Receiver<Live>,
    admin: PgConnection,
    listener: i32,
}

async fn watched() -> Watched {
    let fresh = loaded(Kind::Postgres).await;
    let database = fresh.database_name().unwrap().to_owned();
    let console = fresh.reopen().await.unwrap();
    let live = console.watch().await.unwrap();
    let mut admin = PgConnection::connect(&stores::admin_url()).await.unwrap();
    let listener = listener_pid(&mut admin, &database).await;
    Watched {
        fresh,
        database,
        console,
        live,
        admin,
        listener,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listener_killed_during_a_stream_of_changes_catches_up_after_reconnecting() {
    skip_without_postgres!();
    let Watched {
        fresh,
        database,
        console,
        mut live,
        mut admin,
        listener: first,
    } = watched().await;

    for n in 0..30 {
        if n == 10 {
            let killed: bool = sqlx::query_scalar("SELECT pg_terminate_backend($1)")
                .bind(first)
                .fetch_one(&mut admin)
                .await
                .unwrap();
            assert!(killed);
        }
        let change = comment(fresh.store.as_ref(), "F10", &format!("paging note {n}")).await;
        fresh.store.commit(change).await.unwrap();
    }

    let head = fresh.store.head_seq().await.unwrap();
    let seen = until(
        &mut live,
        Duration::from_secs(10),
        "the console catches up",
        |l| l.head == head && l.link == Link::Connected,
    )
    .await;
    assert_eq!(seen.head, head);
    let second = listener_pid(&mut admin, &database).await;
    assert_ne!(first, second, "the listener reconnected on a new session");
    let shown = console.detail(&Scope::Every, &id("F10")).await.unwrap();
    assert_eq!(shown.audit.last().map(|r| r.seq), Some(head));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_connection_shows_until_the_server_takes_connections_again() {
    skip_without_postgres!();
    let Watched {
        fresh,
        database,
        console: _console,
        mut live,
        mut admin,
        ..
    } = watched().await;
    let during = comment(fresh.store.as_ref(), "F10", "while the server is away").await;

    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "ALTER DATABASE {database} ALLOW_CONNECTIONS false; \
         SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{database}'"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    let lost = until(
        &mut live,
        Duration::from_secs(5),
        "the console shows the connection lost",
        |l| l.link != Link::Connected,
    )
    .await;
    assert!(matches!(lost.link, Link::Reconnecting { attempt } if attempt >= 1));
    let refused = fresh.store.commit(during).await;
    assert!(
        matches!(refused, Err(StoreError::Unavailable(_))),
        "{refused:?}"
    );

    sqlx::raw_sql(sqlx::AssertSqlSafe(format!(
        "ALTER DATABASE {database} ALLOW_CONNECTIONS true"
    )))
    .execute(&mut admin)
    .await
    .unwrap();
    let row = fresh
        .store
        .commit(comment(fresh.store.as_ref(), "F10", "back again").await)
        .await
        .unwrap();
    until(
        &mut live,
        Duration::from_secs(10),
        "the console reconnects and catches up",
        |l| l.head == row.seq && l.link == Link::Connected,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_database_is_migrated_on_first_open_and_only_then() {
    skip_without_postgres!();
    let database = stores::Database::create().await;
    let store = PgStore::connect(&database.url).await.unwrap();
    assert_eq!(store.head_seq().await.unwrap(), 0);
    assert!(matches!(
        store.verify().await.unwrap(),
        ChainStatus::Intact { rows: 0, .. }
    ));
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(store.pool())
        .await
        .unwrap();
    let known = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/postgres"))
        .unwrap()
        .count() as i64;
    assert_eq!(applied, known, "every migration the build knows");
    store.pool().close().await;
    let again = PgStore::connect(&database.url).await.unwrap();
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(again.pool())
        .await
        .unwrap();
    assert_eq!(applied, known, "an up-to-date store is left as it is");
    again.pool().close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_guards_the_chain_head() {
    skip_without_postgres!();
    let fresh = loaded(Kind::Postgres).await;
    for (tamper, why) in [
        ("TRUNCATE audit", "TRUNCATE on audit"),
        ("UPDATE chain_head SET seq = 1", "moving the head by hand"),
        ("DELETE FROM chain_head", "deleting the head"),
        ("TRUNCATE chain_head", "truncating the head"),
        (
            "INSERT INTO audit (seq, operation, action, by_identity, role, evidence, at, prev_hash, hash) \
             SELECT seq + 2, 'F09', 'comment', 'mallory', 'local', '[]', 'x', hash, hash FROM chain_head",
            "a row that leaves a gap",
        ),
        (
            "INSERT INTO audit (seq, operation, action, by_identity, role, evidence, at, prev_hash, hash) \
             SELECT seq + 1, 'F09', 'comment', 'mallory', 'local', '[]', 'x', 'sha256:00', 'sha256:00' \
             FROM chain_head",
            "a row that does not chain from the head",
        ),
    ] {
        assert!(fresh.execute(tamper).await.is_err(), "{why} is refused");
    }
    assert!(matches!(
        fresh.store.verify().await.unwrap(),
        ChainStatus::Intact { rows: 4, .. }
    ));
    let row = fresh
        .store
        .commit(comment(fresh.store.as_ref(), "F10", "still appending").await)
        .await
        .unwrap();
    assert_eq!(row.seq, 5);
}

/// A login `name` holding the README's application grants on a loaded store of
/// its own. Drop the store before the login.
async fn application_login(name: &str) -> (LoginRole, Fresh) {
    let role = LoginRole::create(name).await;
    let fresh = loaded(Kind::Postgres).await;
    let database = fresh.database_name().unwrap().to_owned();
    fresh
        .execute(&application_grants(&role.name, &database))
        .await
        .unwrap();
    (role, fresh)
}

/// A login of the application group honours the breaks the owner's `audit
/// verify` recorded (once grants exist, row-level security keeps it from walking
/// the chain, so they are all it has to go on): it reads
/// `chain_breaks` and `chain_checkpoint` but may neither clear a break nor move the
/// checkpoint, and the store refuses its commits until the owner acknowledges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_application_login_honours_a_recorded_break_and_cannot_clear_it() {
    skip_without_postgres!();
    let (role, fresh) = application_login("holdfast_app_chain").await;
    let url = stores::url_for_login(&fresh.url, &role.name);
    let app = PgStore::connect(&url).await.unwrap();
    // Without grants the login sees every row and walks the chain; it may not
    // record what it found (a warning in the log), and the chain is intact.
    assert_eq!(
        holdfast::store::chain::check(&app, now()).await.unwrap(),
        None
    );
    assert_eq!(app.chain_marks().await.unwrap().checkpoint, None);
    // The owner's verify records a break.
    let broken = ChainStatus::Broken {
        seq: 2,
        reason: "hash does not match the row's content (the row was changed)".into(),
    };
    fresh
        .store
        .record_chain(&broken, "verify", now())
        .await
        .unwrap();
    let found = holdfast::store::chain::check(&app, now())
        .await
        .unwrap()
        .expect("the login reads the recorded break");
    assert_eq!((found.seq, found.acknowledged_seq), (2, None));
    let refused = app
        .commit(review::resolve_f09(&app, &role.name).await)
        .await
        .unwrap_err();
    assert!(
        matches!(refused, StoreError::ChainBroken(ref b) if b.seq == 2),
        "{refused}"
    );
    let mut as_app = PgConnection::connect(&url).await.unwrap();
    for tamper in [
        "UPDATE chain_breaks SET acknowledged_seq = 1",
        "UPDATE chain_breaks SET cleared_ms = 0",
        "DELETE FROM chain_breaks",
        "INSERT INTO chain_checkpoint VALUES (1, 99, 'x', 'me', 0)",
    ] {
        let refused = sqlx::raw_sql(sqlx::AssertSqlSafe(tamper))
            .execute(&mut as_app)
            .await;
        assert!(refused.is_err(), "the application role may not: {tamper}");
    }
    as_app.close().await.unwrap();
    // Nor may it acknowledge through the store: that is the owner's login.
    let reason = holdfast::core::rules::Rationale::parse("checked the backup against it").unwrap();
    let ack =
        |by: &str| holdfast::core::chain::acknowledgement(by, Role::Owner, None, 2, &reason, now());
    assert!(app.acknowledge_break(2, ack(&role.name)).await.is_err());
    fresh
        .store
        .acknowledge_break(2, ack("postgres"))
        .await
        .unwrap();
    app.commit(review::resolve_f09(&app, &role.name).await)
        .await
        .unwrap();
    app.pool().close().await;
    drop(fresh);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_application_role_of_the_readme_works_but_cannot_change_the_audit_log() {
    skip_without_postgres!();
    let (role, fresh) = application_login("holdfast_app_test").await;

    let url = stores::url_for_login(&fresh.url, &role.name);
    let app = PgStore::connect(&url).await.unwrap();
    // F11's target holds a token: its redaction row is written by the login too.
    let report = app
        .ingest(
            records(
                &SMALL.replace("F10", "F11").replace("A017", "A018").replace(
                    "ticket-queue:8",
                    "ticket-queue:8?token=tok_9a8b7c6d5e4f3a2b",
                ),
            ),
            IngestMode::Quarantine,
            &role.name,
            now(),
        )
        .await
        .unwrap();
    assert!(!report.committed.is_empty(), "{report:?}");
    let row = app
        .commit(review::resolve_f09(&app, &role.name).await)
        .await
        .unwrap();
    let as_lee = decided(
        &app,
        "F11",
        &Action::Comment,
        &reviewer("lee"),
        "written in somebody else's name",
    )
    .await;
    let forged = app.commit(as_lee).await.unwrap_err();
    assert!(forged.to_string().contains("own name"), "{forged}");
    let mut live = app.watch().await.unwrap();
    assert_eq!(live.borrow_and_update().head, row.seq);

    let mut as_app = PgConnection::connect(&url).await.unwrap();
    for tamper in [
        "UPDATE audit SET by_identity = 'mallory' WHERE seq = 1",
        "DELETE FROM audit WHERE seq = 1",
        "TRUNCATE audit",
        "UPDATE chain_head SET seq = 0",
        "DROP TRIGGER audit_no_update ON audit",
        "UPDATE redactions SET value_sha256 = stored_sha256",
        "DELETE FROM redactions",
        "INSERT INTO redactions (record, record_key, path, operation, kinds, value_sha256, \
         stored_sha256, sample) VALUES ('attempt', 'A099', 'note', 'F09', 'jwt', 'x', 'y', 'z')",
        "CREATE TEMP TABLE shadow (x int)",
        "CREATE FUNCTION pg_temp.move_head() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN UPDATE public.chain_head SET seq = seq + 1000; RETURN NULL; END $$",
        "CREATE FUNCTION public.move_head() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN UPDATE public.chain_head SET seq = seq + 1000; RETURN NULL; END $$",
    ] {
        let refused = sqlx::raw_sql(sqlx::AssertSqlSafe(tamper))
            .execute(&mut as_app)
            .await;
        assert!(refused.is_err(), "the application role may not: {tamper}");
    }
    let (path, sample): (String, String) =
        sqlx::query_as("SELECT path, sample FROM redactions WHERE record_key = 'F11'")
            .fetch_one(&mut as_app)
            .await
            .unwrap();
    assert_eq!(
        (path.as_str(), sample.as_str()),
        ("target", "query_secret:…(20 chars)")
    );
    as_app.close().await.unwrap();
    assert!(matches!(
        app.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
    app.pool().close().await;
    drop(fresh);
    drop(role);
}

/// A login holding the README's grants takes work like any worker, in its own
/// name, and cannot move a lease without the audit row that goes with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_of_the_application_role_claims_work_and_cannot_move_a_lease_unaudited() {
    skip_without_postgres!();
    let (role, fresh) = application_login("holdfast_app_worker_test").await;
    let url = stores::url_for_login(&fresh.url, &role.name);
    let app = PgStore::connect(&url).await.unwrap();
    let session = holdfast::store::Session::new(
        std::sync::Arc::new(app.clone()),
        holdfast::core::rules::Actor::local(&role.name, None),
    );
    review::put_at_level(
        fresh.store.as_ref(),
        "T03",
        holdfast::core::ladder::Level::Automation,
    )
    .await;
    let leases = holdfast::work::claim(&session, "w1", chrono::Duration::seconds(60), 5, now())
        .await
        .unwrap();
    let ids: Vec<&str> = leases.iter().map(|l| l.operation.as_str()).collect();
    assert_eq!(ids, ["F10"]);
    let rows = app.audit(1, 100).await.unwrap();
    let claim = rows
        .iter()
        .find(|r| r.draft.action == "work-claim")
        .unwrap();
    assert_eq!(claim.draft.by, role.name);
    let mut as_app = PgConnection::connect(&url).await.unwrap();
    let moved = sqlx::raw_sql("UPDATE work_leases SET worker = 'mallory'")
        .execute(&mut as_app)
        .await;
    assert!(moved.is_err(), "a lease changes only with its audit row");
    as_app.close().await.unwrap();
    assert!(matches!(
        app.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
    app.pool().close().await;
    drop(fresh);
    drop(role);
}

/// The three ways a login of the application group forged history before the
/// least-privilege migration, each refused now: an audit row in another's name
/// (with a correct hash) together with the state it claims, a state changed with
/// no audit row at all, and a temporary trigger moving the chain head.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_application_role_cannot_forge_history() {
    skip_without_postgres!();
    let (role, fresh) = application_login("holdfast_forger").await;
    let url = stores::url_for_login(&fresh.url, &role.name);
    let head = fresh.store.head_seq().await.unwrap();
    let last = fresh.store.audit(head, 1).await.unwrap().remove(0);
    let forged_as = |by: &str| {
        let mut draft = last.draft.clone();
        draft.action = "accept".into();
        draft.to = Some(holdfast::core::model::State::Accepted);
        by.clone_into(&mut draft.by);
        holdfast::core::audit::seal(&last.hash, head + 1, draft)
    };
    let run = |sql: String| {
        let url = url.clone();
        async move {
            let mut conn = PgConnection::connect(&url).await.unwrap();
            let result = sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                .execute(&mut conn)
                .await
                .map(drop);
            conn.close().await.unwrap();
            result
        }
    };

    // (a) alice's acceptance, correctly hashed, with the state it claims.
    let refused = run(format!(
        "BEGIN; {}; UPDATE operations SET state = 'ACCEPTED' WHERE id = 'F09'; COMMIT;",
        stores::audit_insert_sql(&forged_as("alice"))
    ))
    .await
    .unwrap_err();
    assert!(refused.to_string().contains("own name"), "{refused}");

    // (b) a state, an owner, a version changed with no audit row.
    for change in [
        "UPDATE operations SET state = 'ACCEPTED' WHERE id = 'F09'",
        "UPDATE operations SET owner = 'mallory' WHERE id = 'F09'",
        "UPDATE operations SET version = version + 1 WHERE id = 'F09'",
        "INSERT INTO proposals (operation, action, proposed_by, proposed_at, rationale, status) \
         VALUES ('F09', 'authorize-retry', 'alice', '2026-09-05T10:00:00Z', 'forged', 'pending')",
    ] {
        let refused = run(change.to_owned()).await.unwrap_err();
        assert!(
            refused.to_string().contains("has no audit row"),
            "{change}: {refused}"
        );
    }

    // (c) a temporary trigger that would fire at depth 2 and move the head.
    let refused = run("CREATE TEMP TABLE relay (x int); \
         CREATE FUNCTION pg_temp.move_head() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN UPDATE public.chain_head SET seq = seq + 1000; RETURN NULL; END $$; \
         CREATE TRIGGER relay_moves AFTER INSERT ON pg_temp.relay \
         FOR EACH ROW EXECUTE FUNCTION pg_temp.move_head(); \
         INSERT INTO pg_temp.relay VALUES (1);"
        .to_owned())
    .await
    .unwrap_err();
    assert!(
        refused.to_string().contains("permission denied"),
        "{refused}"
    );
    let refused = run("UPDATE chain_head SET seq = seq + 1000".to_owned())
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("permission denied"),
        "{refused}"
    );

    assert_eq!(fresh.store.head_seq().await.unwrap(), head);
    assert_eq!(
        fresh
            .store
            .detail(&Scope::Every, &id("F09"))
            .await
            .unwrap()
            .row
            .operation
            .state,
        holdfast::core::model::State::Unknown
    );
    assert!(matches!(
        fresh.store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
    drop(fresh);
    drop(role);
}

/// A store with a little of everything: records, comments, an owner change and a
/// proposal a second reviewer rejected.
async fn busy_sqlite_store() -> Fresh {
    let fresh = loaded(Kind::Sqlite).await;
    let store = fresh.store.as_ref();
    let not_found = r#"{"type":"observation","id":"O06","operation":"F09","observed_at":"2026-09-05T10:02:30Z","source":"provider_status","found":false,"note":"no ticket"}"#;
    store
        .ingest(records(not_found), IngestMode::Strict, "test", now())
        .await
        .unwrap();
    store
        .commit(comment(store, "F10", "waiting on F09").await)
        .await
        .unwrap();
    let assign = Action::Assign {
        owner: "integrations-oncall".into(),
    };
    let change = decided(store, "F09", &assign, &reviewer("maya"), "paging on-call").await;
    store.commit(change).await.unwrap();
    let propose = decided(
        store,
        "F09",
        &Action::AuthorizeRetry,
        &reviewer("maya"),
        "provider shows no ticket after the window",
    )
    .await;
    assert!(propose.open_proposal.is_some(), "high risk: a proposal");
    store.commit(propose).await.unwrap();
    let reject = decided(
        store,
        "F09",
        &Action::Reject,
        &reviewer("lee"),
        "wait for the provider's incident to close",
    )
    .await;
    store.commit(reject).await.unwrap();
    fresh
}

/// Asserts `copy` holds exactly what `original` holds, and its chain verifies.
async fn assert_same_store(original: &dyn Store, copy: &dyn Store) {
    assert!(
        matches!(copy.verify().await.unwrap(), ChainStatus::Intact { .. }),
        "audit verify passes on {}",
        copy.location()
    );
    assert_eq!(
        copy.dataset(&Scope::Every).await.unwrap(),
        original.dataset(&Scope::Every).await.unwrap()
    );
    for op in ["F09", "F10"] {
        let a = original.detail(&Scope::Every, &id(op)).await.unwrap();
        let b = copy.detail(&Scope::Every, &id(op)).await.unwrap();
        assert_eq!(a.row, b.row);
        assert_eq!(a.proposals, b.proposals);
        assert_eq!(a.audit, b.audit);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_copied_sqlite_to_postgres_to_sqlite_keeps_everything_and_verifies() {
    skip_without_postgres!();
    let source = busy_sqlite_store().await;
    assert!(matches!(
        source.store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));

    let team = stores::fresh(Kind::Postgres).await;
    let report = team.store.load_from(source.store.as_ref()).await.unwrap();
    let audit_rows = report.tables.iter().find(|(t, _)| *t == "audit").unwrap().1;
    assert_eq!(audit_rows, 9);
    assert_same_store(source.store.as_ref(), team.store.as_ref()).await;
    // The copy set the per-row triggers aside in its own transaction: they are
    // back, and what they keep was rebuilt from the copied rows.
    let mut owner = PgConnection::connect(&team.url).await.unwrap();
    let (disabled, miscounted, unmarked, misdue): (i64, i64, i64, i64) = sqlx::query_as(
        "SELECT (SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid \
                 WHERE c.relnamespace = 'public'::regnamespace AND t.tgenabled = 'D'), \
                (SELECT count(*) FROM (SELECT tenant, state, queued, count(*) AS n FROM operations \
                 GROUP BY tenant, state, queued) o FULL JOIN operation_counts k \
                 USING (tenant, state, queued) WHERE k.n IS DISTINCT FROM o.n), \
                (SELECT count(*) FROM operations o \
                 WHERE NOT EXISTS (SELECT 1 FROM metric_stale s WHERE s.operation = o.id)), \
                (SELECT count(*) FROM (SELECT tenant, \
                   (next_observation_ms - ((next_observation_ms % 86400000) + 86400000) % 86400000) \
                   / 86400000 AS due_day, count(*) AS n FROM operations \
                 WHERE queued = 1 AND next_observation_ms IS NOT NULL GROUP BY 1, 2) o \
                 FULL JOIN (SELECT * FROM due_counts WHERE n > 0) k USING (tenant, due_day) \
                 WHERE k.n IS DISTINCT FROM o.n)",
    )
    .fetch_one(&mut owner)
    .await
    .unwrap();
    assert_eq!((disabled, miscounted, unmarked, misdue), (0, 0, 0, 0));
    // A bulk load leaves no statistics and no visibility map: the copy runs
    // `VACUUM (ANALYZE)` once it has committed. A table never analyzed has
    // `reltuples` -1; an analyzed one counts its rows.
    let unanalyzed: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM pg_class \
         WHERE relname IN ('operations', 'audit', 'metric_stale') \
         AND relnamespace = 'public'::regnamespace AND reltuples < 0",
    )
    .fetch_one(&mut owner)
    .await
    .unwrap();
    assert_eq!(unanalyzed, 0, "the copied tables are analyzed");
    owner.close().await.unwrap();

    let back = stores::fresh(Kind::Sqlite).await;
    back.store.load_from(team.store.as_ref()).await.unwrap();
    assert_same_store(team.store.as_ref(), back.store.as_ref()).await;

    // The copies go on working: new proposals number after the copied ones.
    for copy in [&team, &back] {
        let propose = decided(
            copy.store.as_ref(),
            "F09",
            &Action::AuthorizeRetry,
            &reviewer("maya"),
            "the provider's incident is closed",
        )
        .await;
        copy.store.commit(propose).await.unwrap();
        let detail = copy.store.detail(&Scope::Every, &id("F09")).await.unwrap();
        let ids: Vec<i64> = detail.proposals.iter().map(|p| p.id).collect();
        assert_eq!(ids, [1, 2], "on {}", copy.store.location());
    }

    let refused = team.store.load_from(source.store.as_ref()).await;
    assert!(
        matches!(&refused, Err(StoreError::Other(m)) if m.contains("already holds data")),
        "{refused:?}"
    );
}

/// Runs the real binary with its own data and config dirs; returns the exit code
/// and standard output.
fn holdfast(home: &std::path::Path, args: &[&str]) -> (i32, String) {
    holdfast_with(home, &[], args)
}

/// [`holdfast`] with these environment variables set.
fn holdfast_with(home: &std::path::Path, env: &[(&str, &str)], args: &[&str]) -> (i32, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .args(args)
        .env("HOLDFAST_DATA_DIR", home.join("data"))
        .env("HOLDFAST_CONFIG", home.join("config.toml"))
        .env("HOLDFAST_NOW", "2026-09-05T10:03:00Z")
        .env_remove("HOLDFAST_DATABASE_URL")
        .env_remove("HOLDFAST_DB")
        .env_remove("HOLDFAST_AS")
        .envs(env.iter().copied())
        .output()
        .expect("run holdfast");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let code = output.status.code().unwrap_or(-1);
    assert!(
        code == 0 || !stderr.is_empty(),
        "a failure says why on stderr"
    );
    (code, format!("{stdout}{stderr}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn db_copy_on_the_command_line_round_trips_and_audit_verify_passes_at_each_step() {
    skip_without_postgres!();
    let home = tempfile::tempdir().unwrap();
    let fixture = home.path().join("small.jsonl");
    std::fs::write(&fixture, SMALL).unwrap();
    let laptop = format!("sqlite:{}", home.path().join("laptop.db").display());
    let back = format!("sqlite:{}", home.path().join("back.db").display());
    let team = stores::fresh(Kind::Postgres).await;
    team.close().await;
    let run = |args: &[&str]| holdfast(home.path(), args);

    let (code, out) = run(&[
        "--database-url",
        &laptop,
        "ingest",
        fixture.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{out}");
    let listing = |url: &str| run(&["--database-url", url, "list", "--state", "all", "--json"]);
    let (_, original) = listing(&laptop);

    let mut previous = laptop.clone();
    for next in [team.url.clone(), back] {
        let (code, out) = run(&["db", "copy", "--from", &previous, "--to", &next]);
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("audit chain intact on both: 4 rows"), "{out}");
        let (code, out) = run(&["--database-url", &next, "audit", "verify"]);
        assert_eq!(code, 0, "audit verify on {next}: {out}");
        assert_eq!(listing(&next).1, original, "the copy lists the same");
        previous = next;
    }

    let (code, out) = run(&["db", "copy", "--from", &laptop, "--to", &team.url]);
    assert_ne!(code, 0, "a store that holds data is not overwritten");
    assert!(out.contains("already holds data"), "{out}");
    let (code, _) = run(&["db", "copy", "--from", &laptop, "--to", "mysql://nope"]);
    assert_eq!(code, 2, "an unknown kind of store is bad input");
}

/// A team store set up as the README says: the application grants held by a group
/// role, one login per person in it, the small fixture loaded, and the database
/// owner's login holding holdfast's owner role on pinehaven. Fields drop in order:
/// the database before the roles that hold privileges in it.
struct Team {
    fresh: Fresh,
    home: tempfile::TempDir,
    /// The database owner's login (the tests' admin).
    owner: String,
    people: Vec<LoginRole>,
    group: LoginRole,
}

impl Team {
    async fn new(people: &[&str]) -> Team {
        Team::on(loaded(Kind::Postgres).await, people).await
    }

    /// [`Team::new`] on `fresh`, a PostgreSQL store holding what the test needs.
    async fn on(fresh: Fresh, people: &[&str]) -> Team {
        let group = LoginRole::create("hf_app").await;
        let mut logins = Vec::new();
        for person in people {
            logins.push(LoginRole::member_of(&format!("hf_{person}"), &group).await);
        }
        let database = fresh.database_name().unwrap().to_owned();
        fresh
            .execute(&application_grants(&group.name, &database))
            .await
            .unwrap();
        let owner = fresh
            .store
            .login()
            .await
            .unwrap()
            .expect("PostgreSQL has logins");
        let team = Team {
            fresh,
            home: tempfile::tempdir().unwrap(),
            owner,
            people: logins,
            group,
        };
        team.change("grant", &team.owner, "owner", "pinehaven");
        team
    }

    /// The login of person `n`.
    fn login(&self, n: usize) -> &str {
        &self.people[n].name
    }

    /// `holdfast ARGS` connected as `login`, with `env` set.
    fn run(&self, login: &str, env: &[(&str, &str)], args: &[&str]) -> (i32, String) {
        let url = stores::url_for_login(&self.fresh.url, login);
        let args = [&["--database-url", url.as_str()][..], args].concat();
        holdfast_with(self.home.path(), env, &args)
    }

    /// A grant or revoke by the owner's login.
    fn change(&self, op: &str, who: &str, role: &str, tenant: &str) {
        let (code, out) = self.run(
            &self.owner,
            &[],
            &[op, who, "--role", role, "--tenant", tenant],
        );
        assert_eq!(code, 0, "{op} {role} to {who}: {out}");
    }

    /// The newest audit row.
    async fn last_row(&self) -> holdfast::core::audit::AuditRow {
        let head = self.fresh.store.head_seq().await.unwrap();
        self.fresh.store.audit(head, 1).await.unwrap().remove(0)
    }
}

const COMMENT: &[&str] = &[
    "review",
    "F09",
    "comment",
    "--rationale",
    "checked the provider console",
];

/// Asserts a run was refused by `rule` (exit 3); returns what it said.
fn refused(rule: &str, (code, out): (i32, String)) -> String {
    assert_eq!(code, 3, "{out}");
    assert!(out.contains(&format!("refused: {rule}")), "{out}");
    out
}

/// Asserts a run was refused because the login may not act for `person`.
fn refused_for(person: &str, run: (i32, String)) {
    let out = refused("G6", run);
    assert!(out.contains(&format!("may not act for {person}")), "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_the_database_login_acts_and_naming_anyone_else_is_refused() {
    skip_without_postgres!();
    let team = Team::new(&["maya", "lee"]).await;
    let (maya, lee) = (team.login(0), team.login(1));
    team.change("grant", maya, "reviewer", "pinehaven");
    let as_maya = PgStore::connect(&stores::url_for_login(&team.fresh.url, maya))
        .await
        .unwrap();
    assert_eq!(as_maya.login().await.unwrap().as_deref(), Some(maya));
    as_maya.pool().close().await;
    let file = stores::fresh(Kind::Sqlite).await;
    assert_eq!(
        file.store.login().await.unwrap(),
        None,
        "a file has no logins"
    );

    let (code, out) = team.run(maya, &[("USER", lee)], COMMENT);
    assert_eq!(code, 0, "the OS user does not matter: {out}");
    let row = team.last_row().await;
    assert_eq!(row.draft.by, maya);
    assert_eq!(row.draft.role, Role::Reviewer);
    assert_eq!(row.draft.on_behalf_of, None);

    let flag = [&["--as", lee][..], COMMENT].concat();
    refused_for(lee, team.run(maya, &[], &flag));
    refused_for(lee, team.run(maya, &[("HOLDFAST_AS", lee)], COMMENT));
    let config = team.home.path().join("config.toml");
    std::fs::write(&config, format!("identity = \"{lee}\"\n")).unwrap();
    refused_for(lee, team.run(maya, &[], COMMENT));
    refused_for(lee, team.run(maya, &[], &["list"]));
    std::fs::remove_file(&config).unwrap();
    assert_eq!(
        team.fresh.store.head_seq().await.unwrap(),
        row.seq,
        "nothing was written"
    );

    let (code, out) = team.run(maya, &[("HOLDFAST_AS", maya)], COMMENT);
    assert_eq!(code, 0, "naming the login itself is no delegation: {out}");
    refused("G7", team.run(lee, &[], COMMENT));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delegate_login_acts_for_others_with_their_grants_and_the_audit_row_names_both() {
    skip_without_postgres!();
    let team = Team::new(&["maya", "chatops"]).await;
    let (maya, chatops) = (team.login(0), team.login(1));
    team.change("grant", maya, "reviewer", "pinehaven");
    team.change("grant", maya, "reviewer", "harborline");
    let for_maya = |args: &[&str]| team.run(chatops, &[("HOLDFAST_AS", maya)], args);
    refused_for(maya, for_maya(COMMENT));

    team.change("grant", chatops, "delegate", "pinehaven");
    let (code, out) = for_maya(COMMENT);
    assert_eq!(code, 0, "{out}");
    let row = team.last_row().await;
    assert_eq!(row.draft.by, chatops, "the login that wrote it");
    assert_eq!(row.draft.on_behalf_of.as_deref(), Some(maya), "the person");
    assert_eq!(row.draft.role, Role::Reviewer, "the person's role");

    let (code, out) = for_maya(&["grants"]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains(&format!(
            "acting as {chatops} for {maya} — reviewer on pinehaven\n"
        )),
        "only the delegated tenant: {out}"
    );
    let accept = [
        "review",
        "F09",
        "accept",
        "--repair-ref",
        "INC-7",
        "--rationale",
        "repaired by hand at the provider",
    ];
    let out = refused("G6", for_maya(&accept));
    assert!(out.contains("may not accept"), "maya's grants apply: {out}");
    refused("G7", team.run(chatops, &[], COMMENT));
    let fixture = team.home.path().join("small.jsonl");
    std::fs::write(&fixture, SMALL).unwrap();
    for own in [
        &["grant", chatops, "--role", "owner", "--tenant", "pinehaven"][..],
        &["ingest", fixture.to_str().unwrap()][..],
    ] {
        let out = refused("G6", for_maya(own));
        assert!(out.contains("own name only"), "{out}");
    }

    team.change("revoke", chatops, "delegate", "pinehaven");
    refused_for(maya, for_maya(COMMENT));
    let (code, out) = team.run(&team.owner, &[], &["audit", "verify"]);
    assert_eq!(code, 0, "{out}");
}

/// The issue's reproduction on PostgreSQL: a viewer's login ingesting a
/// resolution claimed to be the owner's is refused (G7) and nothing is written; a
/// login with only the ingest role is refused too (a decision takes a reviewer's
/// role, G6); a login that also reviews writes it in its own name as `resolve`,
/// the line's `by` kept as what the source claims.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_ingest_takes_the_ingest_role_and_the_login_is_the_author() {
    skip_without_postgres!();
    let team = Team::new(&["viewer", "feeder"]).await;
    let (viewer, feeder) = (team.login(0).to_owned(), team.login(1).to_owned());
    team.change("grant", &viewer, "viewer", "pinehaven");
    let path = team.home.path().join("forged.jsonl");
    std::fs::write(
        &path,
        r#"{"type":"transition","operation":"F09","from":"UNKNOWN","to":"SUCCEEDED","by":"postgres","role":"reviewer","at":"2026-09-05T10:02:40Z","reason":"resolved by the owner","evidence":["O05"]}
"#,
    )
    .unwrap();
    let path = path.to_string_lossy().into_owned();
    let head = team.fresh.store.head_seq().await.unwrap();
    let (code, out) = team.run(&viewer, &[], &["ingest", &path]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains(&format!(
            "G7: {viewer} may not ingest into tenant pinehaven"
        )),
        "{out}"
    );
    assert_eq!(team.fresh.store.head_seq().await.unwrap(), head);

    // The ingest role alone imports facts, not a reviewer's decision (G6).
    team.change("grant", &feeder, "ingest", "pinehaven");
    let head = team.fresh.store.head_seq().await.unwrap();
    let (code, out) = team.run(&feeder, &[], &["ingest", &path]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains("G6: UNKNOWN → SUCCEEDED is a reviewer decision")
            && out.contains(&format!("{feeder} holds ingest on pinehaven")),
        "{out}"
    );
    assert_eq!(team.fresh.store.head_seq().await.unwrap(), head);
    team.change("grant", &feeder, "reviewer", "pinehaven");
    let (code, out) = team.run(&feeder, &[], &["ingest", &path]);
    assert_eq!(code, 0, "{out}");
    let row = team.last_row().await;
    assert_eq!(
        (
            row.draft.by.as_str(),
            row.draft.action.as_str(),
            row.draft.role,
            row.draft.on_behalf_of.as_deref()
        ),
        (feeder.as_str(), "resolve", Role::Reviewer, None)
    );
    assert!(
        row.draft
            .rationale
            .as_deref()
            .is_some_and(|r| r.ends_with("(the source reports postgres as reviewer)")),
        "{:?}",
        row.draft.rationale
    );
    assert!(matches!(
        team.fresh.store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
}

impl Team {
    /// A row appended after the head with a correct hash: `action` on `operation`
    /// by `login` as `role`, for `on_behalf_of` when given.
    async fn forged(
        &self,
        login: &str,
        operation: &str,
        action: &str,
        role: Role,
        on_behalf_of: Option<&str>,
    ) -> holdfast::core::audit::AuditRow {
        let last = self.last_row().await;
        let mut draft = last.draft.clone();
        draft.operation = holdfast::core::ids::OperationId::parse(operation).unwrap();
        draft.action = action.to_owned();
        draft.from = None;
        draft.to = (action == "accept").then_some(holdfast::core::model::State::Accepted);
        login.clone_into(&mut draft.by);
        draft.role = role;
        draft.on_behalf_of = on_behalf_of.map(str::to_owned);
        draft.evidence = vec![];
        holdfast::core::audit::seal(&last.hash, last.seq + 1, draft)
    }

    /// Runs `sql` in one transaction on a connection of `login`'s own.
    async fn sql_as(&self, login: &str, sql: &str) -> Result<(), sqlx::Error> {
        let url = stores::url_for_login(&self.fresh.url, login);
        let mut conn = PgConnection::connect(&url).await.unwrap();
        let result = sqlx::raw_sql(sqlx::AssertSqlSafe(format!("BEGIN; {sql}; COMMIT;")))
            .execute(&mut conn)
            .await
            .map(drop);
        conn.close().await.unwrap();
        result
    }
}

/// Asserts `sql` run by `login` is refused by the grants check, naming `why`.
async fn beyond_grants(team: &Team, login: &str, sql: &str, why: &str) {
    let refused = team.sql_as(login, sql).await.unwrap_err().to_string();
    assert!(
        refused.contains("stay within the writer's grants") && refused.contains(why),
        "{sql}: {refused}"
    );
}

/// Item 4(a) of the trust issue in full: a login of the application group that
/// writes audit rows in its own name, correctly hashed, cannot record what its
/// grants would not have let it do — an acceptance by a viewer (with the state it
/// claims), a row on another tenant's operation, a delegation it does not hold,
/// ingested history without the ingest role, a grant-ledger row. The row its
/// grants allow still goes in, and verify stays intact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_appends_only_rows_its_grants_allow() {
    skip_without_postgres!();
    let team = Team::new(&["viewer", "outsider", "relay"]).await;
    let (viewer, outsider, relay) = (team.login(0), team.login(1), team.login(2));
    team.change("grant", viewer, "viewer", "pinehaven");
    team.change("grant", outsider, "reviewer", "harborline");
    team.change("grant", relay, "reviewer", "pinehaven");
    let head = team.fresh.store.head_seq().await.unwrap();
    let insert = |row: &holdfast::core::audit::AuditRow| stores::audit_insert_sql(row);

    // A viewer's acceptance, in its own name and as what it holds, then as owner.
    for role in [Role::Viewer, Role::Owner] {
        let row = team.forged(viewer, "F09", "accept", role, None).await;
        let sql = format!(
            "{}; UPDATE operations SET state = 'ACCEPTED' WHERE id = 'F09'",
            insert(&row)
        );
        let why = match role {
            Role::Viewer => "the role viewer may not take accept",
            _ => "does not hold owner on tenant pinehaven",
        };
        beyond_grants(&team, viewer, &sql, why).await;
    }
    // A reviewer of harborline on a pinehaven operation.
    let row = team
        .forged(outsider, "F09", "resolve", Role::Reviewer, None)
        .await;
    beyond_grants(
        &team,
        outsider,
        &insert(&row),
        "does not hold reviewer on tenant pinehaven",
    )
    .await;
    // Acting for a reviewer of pinehaven without the delegate role there.
    let row = team
        .forged(outsider, "F09", "comment", Role::Reviewer, Some(relay))
        .await;
    beyond_grants(&team, outsider, &insert(&row), "holds no delegate role").await;
    // History from wire records without the ingest role.
    let row = team
        .forged(relay, "F09", "transition", Role::Owner, Some(&team.owner))
        .await;
    beyond_grants(&team, relay, &insert(&row), "holds no role that writes").await;
    // A grant-ledger row.
    let row = team
        .forged(
            relay,
            holdfast::core::access::LEDGER,
            "grant",
            Role::Owner,
            None,
        )
        .await;
    beyond_grants(&team, relay, &insert(&row), "an owner's").await;
    // The rows of one statement are checked together, after it: a row the
    // grants allow followed by one they do not is refused as a whole, in the
    // second row's words.
    let allowed = team
        .forged(relay, "F09", "comment", Role::Reviewer, None)
        .await;
    let mut draft = allowed.draft.clone();
    draft.role = Role::Owner;
    let beyond = holdfast::core::audit::seal(&allowed.hash, allowed.seq + 1, draft);
    let second = insert(&beyond);
    let (_, values) = second.split_once(" VALUES ").unwrap();
    beyond_grants(
        &team,
        relay,
        &format!("{}, {values}", insert(&allowed)),
        "the role owner may not take comment",
    )
    .await;

    assert_eq!(team.fresh.store.head_seq().await.unwrap(), head);
    let row = team
        .forged(relay, "F09", "comment", Role::Reviewer, None)
        .await;
    let sql = format!(
        "{}; UPDATE operations SET version = version + 1 WHERE id = 'F09'",
        insert(&row)
    );
    team.sql_as(relay, &sql)
        .await
        .expect("a row the grants allow goes in");
    assert_eq!(team.fresh.store.head_seq().await.unwrap(), head + 1);
    let (code, out) = team.run(&team.owner, &[], &["audit", "verify"]);
    assert_eq!(code, 0, "{out}");

    // The table the trigger reads is the Rust permission table.
    let mut conn = PgConnection::connect(&team.fresh.url).await.unwrap();
    let mut stored: Vec<(String, String)> =
        sqlx::query_as("SELECT role, action FROM role_actions ORDER BY role, action")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    conn.close().await.unwrap();
    let mut rust: Vec<(String, String)> = holdfast::core::access::role_actions()
        .into_iter()
        .map(|(role, action)| (role.as_str().to_owned(), action.to_owned()))
        .collect();
    rust.sort();
    stored.sort();
    assert_eq!(stored, rust);
}

/// The rows a worker's login writes under grants — its claim, the wire records
/// of its completion (whose role is what the executor reported) and the
/// completion — are within its grants: the grants check lets them all through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_login_claims_and_completes_within_its_grants() {
    skip_without_postgres!();
    let team = Team::new(&["worker"]).await;
    let worker = team.login(0).to_owned();
    team.change("grant", &worker, "worker", "pinehaven");
    team.change("grant", &team.owner, "reviewer", "pinehaven");
    review::put_at_level(
        team.fresh.store.as_ref(),
        "T03",
        holdfast::core::ladder::Level::Automation,
    )
    .await;
    let app = PgStore::connect(&stores::url_for_login(&team.fresh.url, &worker))
        .await
        .unwrap();
    let grants = app.grants().await.unwrap();
    let session = holdfast::store::Session::new(
        std::sync::Arc::new(app.clone()),
        holdfast::core::access::act_for(&grants, &worker, None, None).unwrap(),
    );
    let leases = holdfast::work::claim(&session, "w1", chrono::Duration::seconds(60), 5, now())
        .await
        .unwrap();
    assert_eq!(leases.len(), 1, "{leases:?}");
    let t = "2026-09-05T10:04:00Z";
    let lines = format!(
        r#"{{"type":"attempt","id":"F10-A1","operation":"F10","seq":1,"kind":"request","layer":"queue","started_at":"{t}","ended_at":"{t}","phase":"response_received","outcome":"ok","http_status":200,"provider_request_id":"req-F10"}}
{{"type":"transition","operation":"F10","from":"APPROVED","to":"SENT","by":"svc:executor","role":"system","at":"{t}","reason":"request sent","evidence":["F10-A1"]}}
{{"type":"transition","operation":"F10","from":"SENT","to":"SUCCEEDED","by":"svc:executor","role":"system","at":"{t}","reason":"provider answered 200","evidence":["F10-A1"]}}
"#
    );
    let holder = holdfast::work::Holder {
        operation: id("F10"),
        worker: "w1".into(),
        generation: None,
    };
    let done = holdfast::work::complete(&session, &holder, records(&lines), now())
        .await
        .unwrap();
    assert!(done.audit.is_some(), "{done:?}");
    let row = team.last_row().await;
    assert_eq!(
        (row.draft.action.as_str(), row.draft.by.as_str()),
        ("work-complete", worker.as_str())
    );
    assert!(matches!(
        team.fresh.store.verify().await.unwrap(),
        ChainStatus::Intact { .. }
    ));
    app.pool().close().await;
}

/// The small fixture again as tenant harborline: H09 (held, with an attempt, an
/// observation, an expectation and wire transitions) and H10, whose target
/// holds a token (a redaction row) and which depends on pinehaven's F09.
fn harborline() -> String {
    SMALL
        .lines()
        .skip(1)
        .collect::<Vec<_>>()
        .join("\n")
        .replace("pinehaven", "harborline")
        .replace("F09", "H09")
        .replace("F10", "H10")
        .replace("A017", "H017")
        .replace("O05", "H05")
        .replace(
            "ticket-queue:8",
            "ticket-queue:8?token=tok_9a8b7c6d5e4f3a2b",
        )
        .replace(r#""depends_on":["H09"]"#, r#""depends_on":["F09"]"#)
}

/// The rows of each table that belong to harborline's operations (H09, H10).
const HARBORLINE_ROWS: &[(&str, &str)] = &[
    ("operations", "tenant = 'harborline'"),
    ("attempts", "operation LIKE 'H%'"),
    ("items", "operation LIKE 'H%'"),
    ("observations", "operation LIKE 'H%'"),
    ("expectations", "operation LIKE 'H%'"),
    ("wire_transitions", "operation LIKE 'H%'"),
    ("proposals", "operation LIKE 'H%'"),
    ("dependencies", "operation LIKE 'H%'"),
    ("search_terms", "operation LIKE 'H%'"),
    ("redactions", "operation LIKE 'H%'"),
    ("work_leases", "operation LIKE 'H%'"),
    ("lookup_claims", "operation LIKE 'H%'"),
    ("audit", "operation LIKE 'H%'"),
    ("operation_counts", "tenant = 'harborline' AND n > 0"),
    ("due_counts", "tenant = 'harborline'"),
    ("metric_stale", "operation LIKE 'H%'"),
    ("metric_facts", "tenant = 'harborline'"),
    ("metric_rows", "tenant = 'harborline'"),
    ("metric_counts", "tenant = 'harborline'"),
];

/// How many rows of `table` meeting `condition` the connection sees.
async fn seen(conn: &mut PgConnection, table: &str, condition: &str) -> i64 {
    sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
        "SELECT count(*) FROM {table} WHERE {condition}"
    )))
    .fetch_one(conn)
    .await
    .unwrap_or_else(|e| panic!("{table}: {e}"))
}

/// Item 5 of issue 27: a login of the application group reaches only the
/// tenants its grants name. A reviewer of pinehaven sees none of harborline's
/// rows in any table, cannot insert a row of harborline's operations into any,
/// updates none of them, and cannot move its own operation into harborline; a
/// login with no grant sees no tenant's rows at all. holdfast itself still
/// works as the reviewer (a hold depending on a hidden one leaves the queue
/// when that one resolves), and `audit verify`, which must read every row, is
/// the owner's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_level_security_holds_each_login_to_the_tenants_its_grants_name() {
    skip_without_postgres!();
    let team = Team::new(&["reviewer", "nobody", "pineowner"]).await;
    let (reviewer, nobody) = (team.login(0).to_owned(), team.login(1).to_owned());
    let pine_owner = team.login(2).to_owned();
    team.change("grant", &reviewer, "reviewer", "pinehaven");
    team.change("grant", &pine_owner, "owner", "pinehaven");
    team.change("grant", &team.owner, "owner", "harborline");
    let store = team.fresh.store.as_ref();
    let report = store
        .ingest(
            records(&harborline()),
            IngestMode::Strict,
            &team.owner,
            now(),
        )
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    team.change("grant", &team.owner, "worker", "harborline");

    // holdfast as the reviewer: its tenant only, and the G9 flag of harborline's
    // H10, which waits on F09, follows F09 though the reviewer cannot see H10.
    let (code, out) = team.run(&reviewer, &[], &["list", "--state", "all"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("F09") && !out.contains("H09"), "{out}");
    let (code, out) = team.run(
        &reviewer,
        &[],
        &[
            "review",
            "F09",
            "resolve",
            "--to",
            "SUCCEEDED",
            "--rationale",
            "provider status shows the ticket exactly once",
        ],
    );
    assert_eq!(code, 0, "{out}");
    let queued = |id: &'static str| {
        let url = team.fresh.url.clone();
        async move {
            let mut conn = PgConnection::connect(&url).await.unwrap();
            let q: i64 = sqlx::query_scalar("SELECT queued FROM operations WHERE id = $1")
                .bind(id)
                .fetch_one(&mut conn)
                .await
                .unwrap();
            conn.close().await.unwrap();
            q
        }
    };
    assert_eq!(queued("H10").await, 0, "H10 no longer waits on a held F09");
    // The owner works harborline's queue once T03 is raised; H09's open veto is
    // settled first by a harborline reviewer (gate A3), F09's by the review above.
    team.change("grant", &team.owner, "reviewer", "harborline");
    review::put_at_level(store, "T03", holdfast::core::ladder::Level::Automation).await;
    let owner = holdfast::store::Session::new(
        std::sync::Arc::clone(&team.fresh.store),
        holdfast::core::rules::Actor::from_grants(
            &team.owner,
            None,
            &store.grants().await.unwrap(),
        ),
    );
    let claimed = holdfast::work::claim(&owner, "w1", chrono::Duration::seconds(600), 5, now())
        .await
        .unwrap();
    assert!(
        claimed.iter().any(|l| l.operation.as_str() == "H10"),
        "{claimed:?}"
    );
    // An owner of pinehaven alone, who sees only pinehaven's T03 operations,
    // still may not change T03's autonomy: harborline has T03 work too.
    let (code, out) = team.run(
        &pine_owner,
        &[],
        &[
            "autonomy",
            "set",
            "T03",
            "manual",
            "--rationale",
            "the ticket provider is being migrated",
        ],
    );
    assert_eq!(code, 3, "{out}");
    assert!(out.contains("is not an owner of harborline"), "{out}");
    // The states the owner-run requeue counts as held are the Rust ones.
    let mut conn = PgConnection::connect(&team.fresh.url).await.unwrap();
    let held: Vec<String> = sqlx::query_scalar("SELECT holdfast_held_states()")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    conn.close().await.unwrap();
    let rust: Vec<&str> = holdfast::core::model::State::HELD
        .iter()
        .map(|s| s.as_str())
        .collect();
    assert_eq!(held, rust);
    // The report as the reviewer: pinehaven's operations only.
    let (code, out) = team.run(&reviewer, &[], &["report", "--json"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("F09") && !out.contains("H09"), "{out}");
    let (code, out) = team.run(&reviewer, &[], &["audit", "verify"]);
    assert_ne!(code, 0, "{out}");
    assert!(out.contains("run it as the database owner"), "{out}");
    let (code, out) = team.run(&team.owner, &[], &["audit", "verify"]);
    assert_eq!(code, 0, "{out}");

    // The rows no ingest of this fixture writes, by the owner.
    team.fresh
        .execute(
            "INSERT INTO items (operation, idx, wire, record_hash) VALUES ('H09', 1, '{}', 'x'); \
             INSERT INTO proposals (operation, action, proposed_by, proposed_at, rationale, status) \
             VALUES ('H09', 'authorize-retry', 'lee', '2026-09-05T10:02:00Z', 'retry it', 'pending'); \
             INSERT INTO lookup_claims VALUES ('H09', 1, 'observer', 1, 2); \
             INSERT INTO due_counts VALUES ('harborline', 1, 1); \
             INSERT INTO metric_facts VALUES ('H09', 'harborline', 1, NULL, 0) ON CONFLICT DO NOTHING; \
             INSERT INTO metric_rows VALUES ('veto', 'H09', 'harborline', 1, NULL) ON CONFLICT DO NOTHING; \
             INSERT INTO metric_counts VALUES ('harborline', 'veto', 1, 1) ON CONFLICT DO NOTHING;",
        )
        .await
        .unwrap();
    let mut admin = PgConnection::connect(&team.fresh.url).await.unwrap();
    for (table, condition) in HARBORLINE_ROWS {
        assert!(
            seen(&mut admin, table, condition).await > 0,
            "the owner sees harborline's {table}"
        );
    }
    admin.close().await.unwrap();

    let mut as_reviewer = PgConnection::connect(&stores::url_for_login(&team.fresh.url, &reviewer))
        .await
        .unwrap();
    for (table, condition) in HARBORLINE_ROWS {
        assert_eq!(
            seen(&mut as_reviewer, table, condition).await,
            0,
            "a reviewer of pinehaven sees harborline's {table}"
        );
    }
    for (table, condition) in [
        ("operations", "tenant = 'pinehaven'"),
        ("attempts", "operation = 'F09'"),
        ("audit", "operation = 'F09'"),
        ("dependencies", "depends_on = 'F09'"),
    ] {
        assert!(
            seen(&mut as_reviewer, table, condition).await > 0,
            "a reviewer of pinehaven sees pinehaven's {table}"
        );
    }
    // Rows of harborline's operations, written by the reviewer of pinehaven.
    for insert in [
        "INSERT INTO operations (id, tenant, tool, owner, state, risk_rank, target, payload_hash, \
         created_ms, state_since_ms, observe_order, queued, version, wire) VALUES ('H99', \
         'harborline', 'T03', 'integrations', 'APPROVED', 1, 't', 'h', 0, 0, 0, 0, 1, '{}')",
        "INSERT INTO attempts (id, operation, seq, kind, wire, record_hash) \
         VALUES ('H-A9', 'H09', 9, 'request', '{}', 'x')",
        "INSERT INTO items (operation, idx, wire, record_hash) VALUES ('H09', 9, '{}', 'x')",
        "INSERT INTO observations (id, operation, observed_ms, wire, record_hash) \
         VALUES ('H-O9', 'H09', 0, '{}', 'x')",
        "INSERT INTO expectations (operation, wire, record_hash) VALUES ('H10', '{}', 'x')",
        "INSERT INTO wire_transitions (operation, from_state, to_state, at_ms, record_hash) \
         VALUES ('H09', 'UNKNOWN', 'SUCCEEDED', 0, 'x')",
        "INSERT INTO proposals (operation, action, proposed_by, proposed_at, rationale, status) \
         VALUES ('H09', 'authorize-retry', 'x', 'x', 'x', 'pending')",
        "INSERT INTO dependencies (operation, depends_on) VALUES ('H09', 'F09')",
        "INSERT INTO search_terms (term, operation) VALUES ('planted', 'H09')",
        "INSERT INTO redactions (record, record_key, path, operation, kinds, value_sha256, \
         stored_sha256, sample) VALUES ('attempt', 'H-A9', 'note', 'H09', 'jwt', 'x', 'y', 'z')",
        "INSERT INTO lookup_claims VALUES ('H09', 2, 'x', 1, 2)",
    ] {
        let refused = sqlx::raw_sql(sqlx::AssertSqlSafe(insert))
            .execute(&mut as_reviewer)
            .await
            .expect_err(insert)
            .to_string();
        assert!(
            refused.contains("row-level security"),
            "{insert}: {refused}"
        );
    }
    let lease = format!(
        "INSERT INTO work_leases (operation, worker, claimed_by, generation, claimed_ms, \
         expires_ms, length_ms, status) VALUES ('H09', 'w9', '{reviewer}', 1, 0, 1, 1, 'held')"
    );
    let refused = sqlx::raw_sql(sqlx::AssertSqlSafe(lease.as_str()))
        .execute(&mut as_reviewer)
        .await
        .expect_err("a lease on harborline's work")
        .to_string();
    assert!(refused.contains("row-level security"), "{refused}");
    // Updates of harborline's rows reach none of them.
    for update in [
        "UPDATE operations SET queued = 1 - queued WHERE id = 'H09'",
        "UPDATE lookup_claims SET expires_ms = 0 WHERE operation = 'H09'",
        "UPDATE proposals SET status = 'rejected' WHERE operation = 'H09'",
        "UPDATE work_leases SET status = 'released' WHERE operation = 'H10'",
    ] {
        let done = sqlx::raw_sql(sqlx::AssertSqlSafe(update))
            .execute(&mut as_reviewer)
            .await
            .unwrap_or_else(|e| panic!("{update}: {e}"));
        assert_eq!(done.rows_affected(), 0, "{update}");
    }
    // Nor can an operation of pinehaven be moved into harborline.
    let moved = sqlx::raw_sql("UPDATE operations SET tenant = 'harborline' WHERE id = 'F10'")
        .execute(&mut as_reviewer)
        .await
        .expect_err("a move into another tenant")
        .to_string();
    assert!(
        moved.contains("row-level security") || moved.contains("permission denied"),
        "{moved}"
    );
    as_reviewer.close().await.unwrap();

    let mut as_nobody = PgConnection::connect(&stores::url_for_login(&team.fresh.url, &nobody))
        .await
        .unwrap();
    for (table, _) in HARBORLINE_ROWS {
        let condition = if *table == "audit" {
            "operation NOT LIKE 'holdfast:%'"
        } else {
            "TRUE"
        };
        assert_eq!(
            seen(&mut as_nobody, table, condition).await,
            0,
            "a login with no grant sees {table}"
        );
    }
    as_nobody.close().await.unwrap();
}

/// Item 5 of issue 27: a lease belongs to the login that claimed it, not to the
/// `--worker` label. Another login with the worker role on the same tenant,
/// naming the same worker, is refused by holdfast (G8) to heartbeat, complete
/// or release it and gets nothing from a claim; writing the same by hand, each
/// with a correctly hashed audit row its grants allow, is refused by the
/// database; the work stays handed out once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_is_the_claiming_logins_and_another_login_cannot_take_it_over() {
    skip_without_postgres!();
    let team = Team::new(&["first", "second"]).await;
    let (first, second) = (team.login(0).to_owned(), team.login(1).to_owned());
    team.change("grant", &first, "worker", "pinehaven");
    team.change("grant", &second, "worker", "pinehaven");
    team.change("grant", &team.owner, "reviewer", "pinehaven");
    review::put_at_level(
        team.fresh.store.as_ref(),
        "T03",
        holdfast::core::ladder::Level::Automation,
    )
    .await;
    let session_of = |login: &str| {
        let url = stores::url_for_login(&team.fresh.url, login);
        let login = login.to_owned();
        async move {
            let app = PgStore::connect(&url).await.unwrap();
            let grants = app.grants().await.unwrap();
            holdfast::store::Session::new(
                std::sync::Arc::new(app),
                holdfast::core::access::act_for(&grants, &login, None, None).unwrap(),
            )
        }
    };
    let (a, b) = (session_of(&first).await, session_of(&second).await);
    // The database's clock: a lease live now is live to it too. (The store
    // keeps milliseconds.)
    let now = chrono::SubsecRound::trunc_subsecs(chrono::Utc::now(), 3);
    let hour = chrono::Duration::seconds(3600);
    let leases = holdfast::work::claim(&a, "w1", hour, 5, now).await.unwrap();
    assert_eq!(leases.len(), 1, "{leases:?}");
    assert_eq!(leases[0].claimed_by, first);
    let holder = holdfast::work::Holder {
        operation: id("F10"),
        worker: "w1".into(),
        generation: Some(1),
    };
    let taken_over = |result: Result<(), holdfast::work::WorkError>| {
        let refused = result.expect_err("another login's lease").to_string();
        assert!(
            refused.contains(&format!("claimed by {first}, not by {second}")),
            "{refused}"
        );
    };
    taken_over(
        holdfast::work::heartbeat(&b, &holder, None, now)
            .await
            .map(drop),
    );
    taken_over(holdfast::work::release(&b, &holder, now).await.map(drop));
    taken_over(
        holdfast::work::complete(&b, &holder, Vec::new(), now)
            .await
            .map(drop),
    );
    assert!(
        holdfast::work::claim(&b, "w1", hour, 5, now)
            .await
            .unwrap()
            .is_empty(),
        "live work is handed out once"
    );

    // By hand, as the second login, each with its audit row.
    let now_ms = now.timestamp_millis();
    for (action, change, why) in [
        (
            "work-release",
            "UPDATE work_leases SET status = 'released' WHERE operation = 'F10'".to_owned(),
            "only that login",
        ),
        (
            "work-heartbeat",
            "UPDATE work_leases SET expires_ms = expires_ms + 1 WHERE operation = 'F10'".to_owned(),
            "only that login",
        ),
        (
            "work-claim",
            format!(
                "UPDATE work_leases SET claimed_by = '{second}', generation = generation + 1, \
                 claimed_ms = {now_ms} + 1 WHERE operation = 'F10'"
            ),
            "only that login",
        ),
        (
            "work-claim",
            format!(
                "UPDATE work_leases SET claimed_by = '{second}', generation = generation + 1, \
                 claimed_ms = expires_ms WHERE operation = 'F10'"
            ),
            "later than the database's clock",
        ),
    ] {
        let row = team
            .forged(&second, "F10", action, Role::Worker, None)
            .await;
        let refused = team
            .sql_as(
                &second,
                &format!("{}; {change}", stores::audit_insert_sql(&row)),
            )
            .await
            .expect_err(&change)
            .to_string();
        assert!(refused.contains(why), "{change}: {refused}");
    }
    // Nor may a lease be written in the first login's name by the second.
    let row = team
        .forged(&second, "F09", "work-claim", Role::Worker, None)
        .await;
    let refused = team
        .sql_as(
            &second,
            &format!(
                "{}; INSERT INTO work_leases (operation, worker, claimed_by, generation, \
                 claimed_ms, expires_ms, length_ms, status) \
                 VALUES ('F09', 'w1', '{first}', 1, {now_ms}, {now_ms} + 1, 1, 'held')",
                stores::audit_insert_sql(&row)
            ),
        )
        .await
        .expect_err("a lease in another's name")
        .to_string();
    assert!(refused.contains("own name"), "{refused}");

    // The first login still holds it and completes it.
    let rows = team.fresh.store.audit(1, 1000).await.unwrap();
    let claims = rows
        .iter()
        .filter(|r| r.draft.action == "work-claim" && r.draft.operation.as_str() == "F10")
        .count();
    assert_eq!(claims, 1, "F10 was handed out once");
    holdfast::work::release(&a, &holder, now).await.unwrap();
    let again = holdfast::work::claim(&b, "w2", hour, 5, now).await.unwrap();
    assert_eq!(
        again.len(),
        1,
        "released work is claimable by another login"
    );
    assert_eq!(again[0].claimed_by, second);
    let status = team.fresh.store.verify().await.unwrap();
    assert!(matches!(status, ChainStatus::Intact { .. }), "{status:?}");
}

/// Item 9 of issue 27: a login set up exactly as the README's recipe says (the
/// grants are read from the README itself) observes, reviews and claims work.
/// The recipe once left out `lookup_claims`, and `observe` failed for such a
/// login; every table of the schema is now readable by the group, but the one
/// only the audit trigger reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_set_up_as_the_readme_says_observes_reviews_and_claims() {
    skip_without_postgres!();
    let p = support::provider::Provider::start("").await;
    let fresh = support::provider::due_holds(Kind::Postgres, &p, 2).await;
    let team = Team::on(fresh, &["oncall"]).await;
    let login = team.login(0).to_owned();
    for role in ["ingest", "reviewer", "worker"] {
        team.change("grant", &login, role, "pinehaven");
    }

    let mut admin = PgConnection::connect(&team.fresh.url).await.unwrap();
    let unread: Vec<String> = sqlx::query_scalar(
        "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
         WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') \
         AND NOT has_table_privilege($1, c.oid, 'SELECT') ORDER BY 1",
    )
    .bind(&team.group.name)
    .fetch_all(&mut admin)
    .await
    .unwrap();
    admin.close().await.unwrap();
    assert_eq!(unread, ["role_actions"], "tables the recipe leaves out");

    // The operator binds where the lookups go, as the README says.
    std::fs::write(team.home.path().join("config.toml"), p.binding_toml()).unwrap();
    let token = [("HOLDFAST_TEST_STATUS_TOKEN", support::provider::TOKEN)];
    let (code, out) = team.run(&login, &token, &["observe"]);
    assert_eq!(code, 0, "{out}");
    for i in 0..2 {
        assert_eq!(p.asked(&format!("match:{i}")), 1, "D{i:03}: {out}");
    }
    let (code, out) = team.run(
        &login,
        &[],
        &[
            "review",
            "D000",
            "resolve",
            "--to",
            "SUCCEEDED",
            "--rationale",
            "the provider holds the record once",
        ],
    );
    assert_eq!(code, 0, "{out}");

    let path = team.home.path().join("approved.jsonl");
    std::fs::write(
        &path,
        format!(
            r#"{{"type":"operation","id":"W01","tenant":"pinehaven","actor":"svc:agent","tool":"T06","action":"record.write","target":"queue:9","payload_hash":"{}","risk":"low","owner":"integrations","state":"APPROVED","depends_on":[],"created_at":"2026-09-05T10:00:30Z"}}
"#,
            support::provider::HASH
        ),
    )
    .unwrap();
    let (code, out) = team.run(&login, &[], &["ingest", &path.to_string_lossy()]);
    assert_eq!(code, 0, "{out}");
    // Work is handed out only for a tool whose lookup was proven (`lookup check`).
    review::put_checked(team.fresh.store.as_ref(), "T06").await;
    review::put_at_level(
        team.fresh.store.as_ref(),
        "T06",
        holdfast::core::ladder::Level::Automation,
    )
    .await;
    let (code, out) = team.run(
        &login,
        &[],
        &["work", "claim", "--worker", "w1", "--lease", "60"],
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("W01"), "{out}");
    for step in ["heartbeat", "release"] {
        let (code, out) = team.run(&login, &[], &["work", step, "W01", "--worker", "w1"]);
        assert_eq!(code, 0, "{step}: {out}");
    }
    let (code, out) = team.run(&team.owner, &[], &["audit", "verify"]);
    assert_eq!(code, 0, "{out}");

    // A group granted the recipe before the tenant_rows migration gets what it
    // now needs from the migration itself.
    let migration = include_str!("../migrations/postgres/20261202000012_tenant_rows.sql");
    let upgrade = &migration[migration
        .rfind("DO $$")
        .expect("the migration ends with the upgrade's grants")..];
    let group = &team.group.name;
    team.fresh
        .execute(&format!(
            "REVOKE ALL ON lookup_claims FROM {group}; \
             REVOKE ALL ON FUNCTION holdfast_requeue(TEXT, TEXT) FROM {group}; \
             REVOKE ALL ON FUNCTION holdfast_tool_tenants(TEXT) FROM {group}; {upgrade}"
        ))
        .await
        .unwrap();
    let mut admin = PgConnection::connect(&team.fresh.url).await.unwrap();
    let (claims, requeue, tenants): (bool, bool, bool) = sqlx::query_as(
        "SELECT has_table_privilege($1, 'lookup_claims', 'SELECT') \
         AND has_table_privilege($1, 'lookup_claims', 'INSERT') \
         AND has_table_privilege($1, 'lookup_claims', 'UPDATE'), \
         has_function_privilege($1, 'holdfast_requeue(text, text)', 'EXECUTE'), \
         has_function_privilege($1, 'holdfast_tool_tenants(text)', 'EXECUTE')",
    )
    .bind(group)
    .fetch_one(&mut admin)
    .await
    .unwrap();
    admin.close().await.unwrap();
    assert!(claims && requeue && tenants, "{claims} {requeue} {tenants}");
}

/// A PostgreSQL store holding the small fixture without the lines containing
/// `without` (nothing when empty), and `more` lines after it.
async fn loaded_with(without: &str, more: &str) -> Fresh {
    let fresh = stores::fresh(Kind::Postgres).await;
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
    fresh
}

/// A team whose person 0 holds `role` on pinehaven.
async fn forger(role: &str, fresh: Fresh) -> Team {
    let team = Team::on(fresh, &["forger"]).await;
    let login = team.login(0).to_owned();
    team.change("grant", &login, role, "pinehaven");
    team
}

/// A row of `action` on `op` moving `from → to` under `role`.
fn forged(
    op: &str,
    action: &str,
    (from, to): (
        Option<holdfast::core::model::State>,
        Option<holdfast::core::model::State>,
    ),
    role: Role,
    evidence: &[&str],
) -> holdfast::core::audit::AuditDraft {
    holdfast::core::audit::AuditDraft {
        operation: id(op),
        action: action.into(),
        from,
        to,
        by: String::new(),
        role,
        policy: None,
        on_behalf_of: None,
        rationale: Some("written by hand, hashed as the store hashes".into()),
        evidence: evidence.iter().map(|e| (*e).to_owned()).collect(),
        at: now(),
    }
}

/// As `login`, in one transaction: takes the head, appends `draft` in its own
/// name as the next row (sealed with holdfast's own hashing) and runs `also`.
/// The row's seq.
async fn forge_as(
    team: &Team,
    login: &str,
    draft: holdfast::core::audit::AuditDraft,
    also: &[String],
) -> i64 {
    forge_between(team, login, &[], draft, also).await
}

/// [`forge_as`], running `before` ahead of the row.
async fn forge_between(
    team: &Team,
    login: &str,
    before: &[String],
    mut draft: holdfast::core::audit::AuditDraft,
    also: &[String],
) -> i64 {
    let url = stores::url_for_login(&team.fresh.url, login);
    let mut conn = PgConnection::connect(&url).await.unwrap();
    let mut tx = conn.begin().await.unwrap();
    let head: (i64, String) = sqlx::query_as("SELECT seq, hash FROM holdfast_lock_head()")
        .fetch_one(&mut *tx)
        .await
        .unwrap_or_else(|e| panic!("the head: {e}"));
    login.clone_into(&mut draft.by);
    let prev = holdfast::core::ids::Sha256::parse(&head.1).unwrap();
    let row = holdfast::core::audit::seal(&prev, head.0 + 1, draft);
    let statements = before
        .iter()
        .cloned()
        .chain(std::iter::once(stores::audit_insert_sql(&row)))
        .chain(also.iter().cloned());
    for sql in statements {
        sqlx::raw_sql(sqlx::AssertSqlSafe(sql.clone()))
            .execute(&mut *tx)
            .await
            .unwrap_or_else(|e| panic!("{sql}: the login may write this, yet: {e}"));
    }
    tx.commit().await.unwrap();
    conn.close().await.unwrap();
    head.0 + 1
}

/// The SQL that moves `op` to `to` as a row would.
fn moving(op: &str, to: holdfast::core::model::State) -> String {
    format!(
        "UPDATE operations SET state = '{to}', version = version + 1, queued = {} WHERE id = '{op}'",
        i32::from(to.is_held())
    )
}

/// Asserts verify names row `seq`, saying each of `words`.
async fn verify_names(team: &Team, seq: i64, words: &[&str]) {
    match team.fresh.store.verify().await.unwrap() {
        ChainStatus::Broken { seq: at, reason } => {
            assert_eq!(at, seq, "{reason}");
            for word in words {
                assert!(reason.contains(word), "{word:?} not in: {reason}");
            }
        }
        intact => panic!("the forged row went unnoticed: {intact:?}"),
    }
}

use holdfast::core::model::State as S;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_login_forging_a_resolve_without_an_observation_is_named() {
    skip_without_postgres!();
    let team = forger("reviewer", loaded_with("O05", "").await).await;
    let login = team.login(0).to_owned();
    let row = forged(
        "F09",
        "resolve",
        (Some(S::Unknown), Some(S::Succeeded)),
        Role::Reviewer,
        &[],
    );
    let seq = forge_as(&team, &login, row, &[moving("F09", S::Succeeded)]).await;
    verify_names(&team, seq, &["operation F09", "resolve", "refuse"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_login_forging_a_retry_of_a_high_risk_hold_alone_is_named() {
    skip_without_postgres!();
    let team = forger("reviewer", loaded_with("O05", "").await).await;
    let login = team.login(0).to_owned();
    let row = forged(
        "F09",
        "authorize-retry",
        (Some(S::Unknown), Some(S::Approved)),
        Role::Reviewer,
        &[],
    );
    let seq = forge_as(&team, &login, row, &[moving("F09", S::Approved)]).await;
    verify_names(&team, seq, &["operation F09", "authorize-retry", "refuse"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_login_forging_mark_compensated_without_evidence_is_named() {
    skip_without_postgres!();
    let f11 = r#"{"type":"operation","id":"F11","tenant":"pinehaven","actor":"svc:relay-desk","tool":"T03","action":"ticket.create","target":"ticket-queue:9","payload_hash":"sha256:2e7d2c03a9507ae265ecf5b5356885a53393a2029d241394997265a1a25aefc7","risk":"low","owner":"integrations","state":"PARTIAL","created_at":"2026-09-05T10:00:40Z"}"#;
    let team = forger("reviewer", loaded_with("", f11).await).await;
    let login = team.login(0).to_owned();
    let row = forged(
        "F11",
        "mark-compensated",
        (Some(S::Partial), Some(S::Compensated)),
        Role::Reviewer,
        &[],
    );
    let seq = forge_as(&team, &login, row, &[moving("F11", S::Compensated)]).await;
    verify_names(&team, seq, &["operation F11", "mark-compensated", "refuse"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approver_login_forging_a_confirm_with_no_proposal_is_named() {
    skip_without_postgres!();
    let team = forger("approver", loaded(Kind::Postgres).await).await;
    let login = team.login(0).to_owned();
    let row = forged(
        "F09",
        "confirm",
        (Some(S::Unknown), Some(S::Approved)),
        Role::Approver,
        &[],
    );
    let seq = forge_as(&team, &login, row, &[moving("F09", S::Approved)]).await;
    verify_names(
        &team,
        seq,
        &["operation F09", "confirm", "no pending proposal"],
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_login_forging_an_accept_without_a_repair_reference_is_named() {
    skip_without_postgres!();
    let team = forger("owner", loaded(Kind::Postgres).await).await;
    let login = team.login(0).to_owned();
    let row = forged(
        "F09",
        "accept",
        (Some(S::Unknown), Some(S::Accepted)),
        Role::Owner,
        &[],
    );
    let seq = forge_as(&team, &login, row, &[moving("F09", S::Accepted)]).await;
    verify_names(&team, seq, &["operation F09", "accept", "refuse"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_login_forging_a_move_of_work_it_never_leased_is_named() {
    skip_without_postgres!();
    let team = forger("worker", loaded(Kind::Postgres).await).await;
    let login = team.login(0).to_owned();
    let row = forged(
        "F10",
        "transition",
        (Some(S::Approved), Some(S::Sent)),
        Role::Worker,
        &[],
    );
    let seq = forge_as(&team, &login, row, &[moving("F10", S::Sent)]).await;
    verify_names(&team, seq, &["operation F10", "without a lease"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ingest_login_forging_a_move_of_work_another_login_leased_is_named() {
    skip_without_postgres!();
    let team = Team::new(&["worker", "ingest"]).await;
    let (worker, ingest) = (team.login(0).to_owned(), team.login(1).to_owned());
    team.change("grant", &worker, "worker", "pinehaven");
    team.change("grant", &ingest, "ingest", "pinehaven");
    // A reviewer settles F09's open veto before the raise (gate A3).
    team.change("grant", &team.owner, "reviewer", "pinehaven");
    review::put_at_level(
        team.fresh.store.as_ref(),
        "T03",
        holdfast::core::ladder::Level::Automation,
    )
    .await;
    let app = PgStore::connect(&stores::url_for_login(&team.fresh.url, &worker))
        .await
        .unwrap();
    let grants = app.grants().await.unwrap();
    let session = holdfast::store::Session::new(
        std::sync::Arc::new(app.clone()),
        holdfast::core::access::act_for(&grants, &worker, None, None).unwrap(),
    );
    let leases = holdfast::work::claim(&session, "w1", chrono::Duration::seconds(600), 5, now())
        .await
        .unwrap();
    assert_eq!(leases.len(), 1, "{leases:?}");
    app.pool().close().await;
    let row = forged(
        "F10",
        "transition",
        (Some(S::Approved), Some(S::Sent)),
        Role::Ingest,
        &[],
    );
    let seq = forge_as(&team, &ingest, row, &[moving("F10", S::Sent)]).await;
    verify_names(&team, seq, &["operation F10", "held its lease"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_forging_a_create_of_an_approved_operation_is_named() {
    skip_without_postgres!();
    let team = forger("approver", loaded(Kind::Postgres).await).await;
    let login = team.login(0).to_owned();
    let row = forged(
        "F99",
        "create",
        (None, Some(S::Approved)),
        Role::Approver,
        &["parent:F09"],
    );
    // A copy of F10 under a new id, APPROVED: work a worker would claim.
    let insert = [
        "INSERT INTO operations SELECT * FROM jsonb_populate_record(NULL::operations, \
         (SELECT to_jsonb(o) || '{\"id\": \"F99\", \"state\": \"APPROVED\", \"version\": 1}'::jsonb \
         FROM operations o WHERE id = 'F10'))"
            .to_owned(),
    ];
    let seq = forge_between(&team, &login, &insert, row, &[]).await;
    verify_names(&team, seq, &["operation F99", "create"]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_of_another_tenant_raising_a_tools_autonomy_by_hand_is_named() {
    skip_without_postgres!();
    let team = Team::new(&["other"]).await;
    let login = team.login(0).to_owned();
    team.change("grant", &login, "owner", "elsewhere");
    let mut row = forged(
        holdfast::core::autonomy::AUTONOMY_LEDGER,
        holdfast::core::autonomy::SET_ACTION,
        (None, None),
        Role::Owner,
        &["tool:T03", "from:manual", "level:automation"],
    );
    row.operation = holdfast::core::ids::ledger_id(holdfast::core::autonomy::AUTONOMY_LEDGER);
    let level = format!(
        "INSERT INTO autonomy (tool, level, level_rank, set_by, set_at, rationale) VALUES \
         ('T03', 'automation', 2, '{login}', '2026-09-05T10:03:00Z', 'by hand')"
    );
    let seq = forge_as(&team, &login, row, &[level]).await;
    verify_names(&team, seq, &["autonomy", "T03", "G6", "pinehaven"]).await;
}

/// An operation's record and the columns ingest fixed are the operation's
/// own: a login of the application group may not rewrite them, with or without
/// their hash, so no check has to tell a rewritten record from the original.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_login_cannot_rewrite_an_operations_record_or_its_fixed_columns() {
    skip_without_postgres!();
    let team = Team::new(&["rewriter"]).await;
    let login = team.login(0).to_owned();
    team.change("grant", &login, "reviewer", "pinehaven");
    for set in [
        "wire = '{}', record_hash = 'sha256:00'",
        "risk_rank = 0",
        "max_attempts = 9",
        "deadline_ms = deadline_ms + 3600000",
        "tenant = 'pinehaven'",
    ] {
        let sql = format!("UPDATE operations SET {set} WHERE id = 'F09'");
        let refused = team.sql_as(&login, &sql).await.unwrap_err().to_string();
        assert!(refused.contains("permission denied"), "{sql}: {refused}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reviewer_login_forging_an_approve_of_an_unvalidated_hold_is_named() {
    skip_without_postgres!();
    // The database lets a reviewer append `approve` rows (the role_actions
    // pair); the rules replayed by verify still judge each one.
    let team = forger("reviewer", loaded_with("", "").await).await;
    let login = team.login(0).to_owned();
    let row = forged(
        "F09",
        "approve",
        (Some(S::Unknown), Some(S::Approved)),
        Role::Reviewer,
        &[],
    );
    let seq = forge_as(&team, &login, row, &[moving("F09", S::Approved)]).await;
    verify_names(&team, seq, &["operation F09", "approve", "refuse"]).await;
}

/// The least-privilege checks that leave the question of trust to their
/// trigger (migration `20261209000030_trusted_asked_once`) run only from
/// triggers that ask it: every trigger of `change_audited`,
/// `audit_within_grants` and `audit_domain_review` is skipped for a trusted
/// login by its `WHEN`, and the functions no longer ask themselves. A trigger
/// without that `WHEN` would check the owner's rows as a login's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_every_check_that_leaves_trust_to_its_trigger_is_asked_there() {
    skip_without_postgres!();
    let team = stores::fresh(Kind::Postgres).await;
    let mut owner = PgConnection::connect(&team.url).await.unwrap();
    let triggers: Vec<(String, String, String, bool)> = sqlx::query_as(
        "SELECT c.relname::text, t.tgname::text, p.proname::text, \
                pg_get_triggerdef(t.oid) LIKE '%NOT holdfast_trusted()%' \
         FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid \
         JOIN pg_proc p ON p.oid = t.tgfoid \
         WHERE NOT t.tgisinternal \
           AND p.proname IN ('change_audited', 'audit_within_grants', 'audit_domain_review', \
                             'audit_seen_by_login') \
         ORDER BY 1, 2",
    )
    .fetch_all(&mut owner)
    .await
    .unwrap();
    let unasked: Vec<_> = triggers.iter().filter(|t| !t.3).collect();
    assert!(unasked.is_empty(), "triggers that do not ask: {unasked:?}");
    let tables: Vec<&str> = triggers.iter().map(|t| t.0.as_str()).collect();
    for table in [
        "attempts",
        "audit",
        "expectations",
        "items",
        "observations",
        "operations",
        "proposals",
        "redactions",
        "wire_transitions",
        "work_leases",
    ] {
        assert!(tables.contains(&table), "no check on {table}: {triggers:?}");
    }
    let asking: Vec<String> = sqlx::query_scalar(
        "SELECT proname::text FROM pg_proc \
         WHERE proname IN ('change_audited', 'audit_within_grants', 'audit_domain_review', \
                           'audit_seen_by_login') \
           AND prosrc LIKE '%holdfast_trusted%'",
    )
    .fetch_all(&mut owner)
    .await
    .unwrap();
    assert!(asking.is_empty(), "{asking:?} still ask themselves");
    team.close().await;
}
