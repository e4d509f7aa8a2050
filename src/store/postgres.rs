//! The team store: one PostgreSQL database shared by many reviewers. Writers take
//! turns on the locked chain-head row, so the audit chain stays gapless whoever
//! writes; a commit also locks its operation's row and compares versions, so two
//! reviewers can never both win. Consoles LISTEN for a hint that the audit log
//! grew and re-read the head by `seq` after every hint and every reconnect. The
//! queries themselves are shared with SQLite (see [`super::engine`]).

use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgConnection, PgListener, PgPool, PgPoolOptions};
use sqlx::{Connection, Postgres};
use tokio::sync::{mpsc, watch};

use super::engine::{Backend, Create, HEAD_SEQ, SqlStore, publish};
use super::pages::{self, Column, Page};
use super::{Link, Live, StoreError};

/// Migrations compiled into the binary, one file each under `migrations/postgres`.
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        20261101000001,
        "initial",
        include_str!("../../migrations/postgres/20261101000001_initial.sql"),
    ),
    (
        20261130000001,
        "search",
        include_str!("../../migrations/postgres/20261130000001_search.sql"),
    ),
    (
        20261201000002,
        "audit_encoding",
        include_str!("../../migrations/postgres/20261201000002_audit_encoding.sql"),
    ),
    (
        20261201000003,
        "least_privilege",
        include_str!("../../migrations/postgres/20261201000003_least_privilege.sql"),
    ),
    (
        20261201000013,
        "lookup_claims",
        include_str!("../../migrations/postgres/20261201000013_lookup_claims.sql"),
    ),
    (
        20261201000020,
        "work_leases",
        include_str!("../../migrations/postgres/20261201000020_work_leases.sql"),
    ),
    (
        20261201000030,
        "autonomy",
        include_str!("../../migrations/postgres/20261201000030_autonomy.sql"),
    ),
    (
        20261201000040,
        "redactions",
        include_str!("../../migrations/postgres/20261201000040_redactions.sql"),
    ),
    (
        20261201000041,
        "audit_within_grants",
        include_str!("../../migrations/postgres/20261201000041_audit_within_grants.sql"),
    ),
    (
        20261201000050,
        "operation_counts",
        include_str!("../../migrations/postgres/20261201000050_operation_counts.sql"),
    ),
    (
        20261201000110,
        "metric_facts",
        include_str!("../../migrations/postgres/20261201000110_metric_facts.sql"),
    ),
    (
        20261201000130,
        "operations_tool",
        include_str!("../../migrations/postgres/20261201000130_operations_tool.sql"),
    ),
    (
        20261201000140,
        "due_counts",
        include_str!("../../migrations/postgres/20261201000140_due_counts.sql"),
    ),
    (
        20261202000010,
        "queue_partial",
        include_str!("../../migrations/postgres/20261202000010_queue_partial.sql"),
    ),
    (
        20261202000012,
        "tenant_rows",
        include_str!("../../migrations/postgres/20261202000012_tenant_rows.sql"),
    ),
    (
        20261202000013,
        "lookup_check_role",
        include_str!("../../migrations/postgres/20261202000013_lookup_check_role.sql"),
    ),
    (
        20261202000014,
        "operation_columns",
        include_str!("../../migrations/postgres/20261202000014_operation_columns.sql"),
    ),
    (
        20261203000028,
        "chain_checks",
        include_str!("../../migrations/postgres/20261203000028_chain_checks.sql"),
    ),
    (
        20261203000030,
        "otlp_pending",
        include_str!("../../migrations/postgres/20261203000030_otlp_pending.sql"),
    ),
    (
        20261203000035,
        "attempt_url",
        include_str!("../../migrations/postgres/20261203000035_attempt_url.sql"),
    ),
    (
        20261203000040,
        "approve_action",
        include_str!("../../migrations/postgres/20261203000040_approve_action.sql"),
    ),
    (
        20261203000045,
        "attempt_refused",
        include_str!("../../migrations/postgres/20261203000045_attempt_refused.sql"),
    ),
    (
        20261203000050,
        "same_call_index",
        include_str!("../../migrations/postgres/20261203000050_same_call_index.sql"),
    ),
    (
        20261204000070,
        "classify_action",
        include_str!("../../migrations/postgres/20261204000070_classify_action.sql"),
    ),
    (
        20261205000020,
        "domain_review",
        include_str!("../../migrations/postgres/20261205000020_domain_review.sql"),
    ),
    (
        20261205000030,
        "rerun",
        include_str!("../../migrations/postgres/20261205000030_rerun.sql"),
    ),
    (
        20261205000050,
        "circuits",
        include_str!("../../migrations/postgres/20261205000050_circuits.sql"),
    ),
    (
        20261205000060,
        "root_cause_facts",
        include_str!("../../migrations/postgres/20261205000060_root_cause_facts.sql"),
    ),
    (
        20261206000020,
        "tool_holds",
        include_str!("../../migrations/postgres/20261206000020_tool_holds.sql"),
    ),
    (
        20261206000030,
        "system_ledger_rows",
        include_str!("../../migrations/postgres/20261206000030_system_ledger_rows.sql"),
    ),
    (
        20261207000010,
        "routed_owner",
        include_str!("../../migrations/postgres/20261207000010_routed_owner.sql"),
    ),
    (
        20261208000010,
        "row_costs",
        include_str!("../../migrations/postgres/20261208000010_row_costs.sql"),
    ),
    (
        20261209000010,
        "trigger_costs",
        include_str!("../../migrations/postgres/20261209000010_trigger_costs.sql"),
    ),
    (
        20261209000020,
        "audited_as_owner",
        include_str!("../../migrations/postgres/20261209000020_audited_as_owner.sql"),
    ),
    (
        20261209000030,
        "trusted_asked_once",
        include_str!("../../migrations/postgres/20261209000030_trusted_asked_once.sql"),
    ),
    (
        20261209000040,
        "grants_per_statement",
        include_str!("../../migrations/postgres/20261209000040_grants_per_statement.sql"),
    ),
    (
        20261210000010,
        "metric_rows_by_n_partial",
        include_str!("../../migrations/postgres/20261210000010_metric_rows_by_n_partial.sql"),
    ),
];

/// The channel the audit trigger notifies at each commit that appended rows.
pub const CHANNEL: &str = "holdfast_audit";

/// How long a writer waits for a lock before reporting the store busy.
const LOCK_TIMEOUT: &str = "30s";

/// A transaction left open this long by a vanished client is ended by the server.
const IDLE_IN_TRANSACTION_TIMEOUT: &str = "60s";

/// How often a listening console checks its connection when nothing is heard.
const RECHECK: Duration = Duration::from_secs(5);

/// How long opening a store waits for the server to accept a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a command waits for a pooled connection once the store is open
/// (each may be held up to [`LOCK_TIMEOUT`] by a writer waiting its turn).
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections per store handle: a console's reads, its writes and its listener.
const POOL_SIZE: u32 = 6;

/// The PostgreSQL operations store.
pub type PgStore = SqlStore<Postgres>;

/// The newest schema version this build knows.
pub fn known_schema() -> i64 {
    super::engine::known_schema::<Postgres>()
}

impl Backend for Postgres {
    const MIGRATIONS: &'static [(i64, &'static str, &'static str)] = MIGRATIONS;
    const BEGIN_WRITE: &'static str = "BEGIN";
    // A prepared statement's generic plan is made once per connection, for
    // the tables as they were then, and kept until their statistics change.
    // Made while a fresh store was empty, the lookup of a batch's known
    // operations kept its sequential scan as the table grew to 200,000 rows
    // (0.2–0.4 s a statement at 20,000, and growing), and a database whose
    // statistics are never gathered (autovacuum off) never drops it. A batch
    // is thousands of rows: planning each statement anew costs far less.
    // Not so a trigger's lookup of one key for each row: the row-level
    // checks keep their plans for themselves (`grants_per_statement`).
    const BATCH_PLANS: Option<&'static str> = Some("SET LOCAL plan_cache_mode = force_custom_plan");
    // Without statistics the planner guessed the judging's lookups of a
    // batch's relatives would match much of the operations and read them
    // whole: 138 ms a lookup at 45,000 operations, 3.8 ms once analyzed. The
    // server's own autovacuum gathers them too, when it is on, a minute or
    // more later; each doubling of a table costs one `ANALYZE` of a sample.
    const GROWN_TABLES: Option<&'static str> = Some(
        "SELECT c.relname::text AS name FROM pg_stat_user_tables s \
         JOIN pg_class c ON c.oid = s.relid \
         WHERE s.schemaname = 'public' AND s.n_mod_since_analyze > 1000 \
         AND s.n_mod_since_analyze > c.reltuples AND pg_has_role(c.relowner, 'USAGE') \
         ORDER BY 1",
    );
    // A backend adds what it wrote to the server's counts at most once a
    // second, and an idle one ten seconds later: a fast run of batches read
    // counts that had not seen any of them and never analyzed (caught by
    // `write_scale::an_ingest_ends_with_the_tables_it_grew_analyzed` on a
    // quicker machine). Asked for, the counts go in as the commit ends; the
    // function is PostgreSQL 15's, so an older server skips it.
    const FLUSH_COUNTS: Option<&'static str> = Some(
        "DO $$ BEGIN PERFORM pg_stat_force_next_flush(); \
         EXCEPTION WHEN undefined_function THEN NULL; END $$",
    );
    // Through a function that runs as the owner: the application group holds no
    // UPDATE on the head (see the least-privilege migration).
    const HEAD: &'static str = "SELECT seq, hash FROM holdfast_lock_head()";
    const FOR_UPDATE: &'static str = " FOR UPDATE";
    const SKIP_LOCKED: &'static str = " FOR UPDATE OF o SKIP LOCKED";
    // The least-privilege checks (which return at once for the owner, but cost
    // a call and a role lookup per row), the chain's per-row checks of a login
    // (the per-statement `audit_extends_head` stays and checks every row), the
    // operation counts and the metric marks.
    const COPY_SETS_ASIDE: &'static [(&'static str, &'static [&'static str])] = &[
        (
            "contracts",
            &["metric_stale_contracts", "contracts_are_versioned"],
        ),
        (
            "operations",
            &[
                "operations_are_audited",
                "operation_counts_kept",
                "operation_counts_inserted",
                "due_counts_kept",
                "metric_stale_operations_insert",
                "metric_stale_operations_update",
                "metric_stale_operations_delete",
                "operation_route_insert",
            ],
        ),
        (
            "dependencies",
            &[
                "metric_stale_dependencies_insert",
                "metric_stale_dependencies_update",
                "metric_stale_dependencies_delete",
            ],
        ),
        (
            "attempts",
            &[
                "attempts_are_audited",
                "metric_stale_attempts_insert",
                "metric_stale_attempts_update",
                "metric_stale_attempts_delete",
                "operation_route_request",
            ],
        ),
        (
            "items",
            &[
                "items_are_audited",
                "metric_stale_items_insert",
                "metric_stale_items_update",
                "metric_stale_items_delete",
            ],
        ),
        (
            "observations",
            &[
                "observations_are_audited",
                "metric_stale_observations_insert",
                "metric_stale_observations_update",
                "metric_stale_observations_delete",
                "operation_route_observation",
            ],
        ),
        (
            "expectations",
            &[
                "expectations_are_audited",
                "metric_stale_expectations_insert",
                "metric_stale_expectations_update",
                "metric_stale_expectations_delete",
            ],
        ),
        ("wire_transitions", &["wire_transitions_are_audited"]),
        ("redactions", &["redactions_are_audited"]),
        (
            "proposals",
            &[
                "proposals_are_audited",
                "metric_stale_proposals_insert",
                "metric_stale_proposals_update",
                "metric_stale_proposals_delete",
            ],
        ),
        ("work_leases", &["work_leases_are_audited"]),
        ("autonomy", &["autonomy_is_audited"]),
        ("drill_runs", &["drill_runs_are_audited"]),
        ("circuits", &["circuits_are_audited"]),
        (
            "audit",
            &[
                "audit_written_by_login",
                "audit_within_grants",
                "audit_domain_review",
                "metric_stale_audit_insert",
                "operation_route_assign",
            ],
        ),
    ];
    const AFTER_COPY_COMMIT: &'static [&'static str] = &["VACUUM (ANALYZE)"];
    const AFTER_COPY: &'static [&'static str] = &[
        "SELECT setval(pg_get_serial_sequence('proposals', 'id'), \
         COALESCE((SELECT MAX(id) FROM proposals), 0) + 1, false)",
        // What `operation_counts_kept` would have counted, row by row.
        "DELETE FROM operation_counts",
        "INSERT INTO operation_counts (tenant, state, queued, n) \
         SELECT tenant, state, queued, count(*) FROM operations GROUP BY tenant, state, queued",
        // What `due_counts_kept` would have counted.
        "DELETE FROM due_counts",
        "INSERT INTO due_counts (tenant, due_day, n) \
         SELECT tenant, (next_observation_ms - ((next_observation_ms % 86400000) + 86400000) % 86400000) \
         / 86400000, count(*) FROM operations \
         WHERE queued = 1 AND next_observation_ms IS NOT NULL GROUP BY 1, 2",
        // Every copied operation is stale, as the marking triggers would have
        // left it: the copy's first report judges them anew.
        "INSERT INTO metric_stale (operation, mark) SELECT id, 1 FROM operations \
         ON CONFLICT (operation) DO NOTHING",
    ];
    // The application group reads the kept facts and may not write them (the
    // grants in docs/operations.md): a login that could write them could write a release
    // gate of its choosing.
    const MAY_KEEP_FACTS: Option<&'static str> = Some(
        "SELECT has_table_privilege('metric_rows', 'INSERT') \
         AND has_table_privilege('metric_rows', 'DELETE') \
         AND has_table_privilege('metric_facts', 'INSERT') \
         AND has_table_privilege('metric_facts', 'DELETE') \
         AND has_table_privilege('metric_counts', 'INSERT') \
         AND has_table_privilege('metric_counts', 'UPDATE') \
         AND has_table_privilege('metric_stale', 'DELETE') AS may",
    );
    // The login that authenticated, which `SET ROLE` does not change.
    const LOGIN: Option<&'static str> = Some("SELECT session_user::text AS login");
    // Row-level security keeps a login of the application group to the tenants
    // its grants name (the tenant_rows migration); the owner sees every row.
    const SEES_EVERY_ROW: Option<&'static str> = Some("SELECT holdfast_sees_all() AS may");
    // Through functions that run as the owner: a dependency or an operation of
    // the tool may be in a tenant the login does not see.
    const REQUEUE: &'static str = "SELECT holdfast_requeue($1, $2)";
    // The name as the migrator resolves it, on the login's search path; needs no
    // privilege on the table itself.
    const HAS_SCHEMA: &'static str =
        "SELECT CASE WHEN to_regclass('_sqlx_migrations') IS NULL THEN 0 ELSE 1 END::int8 AS has";
    const TOOL_TENANTS: &'static str =
        "SELECT tenant FROM holdfast_tool_tenants($1) ORDER BY tenant";
    // Every column holds its declared type.
    const IS_TEXT: &'static str = "TRUE";
    const IS_INTEGER: &'static str = "TRUE";
    const AGGREGATES_IN_ORDER: bool = false;
    // Every function named with its schema, so that no function of the same
    // name earlier on a login's search path can stand in for it. `textsend`
    // gives the text's bytes in the connection's encoding, which the driver
    // sets to UTF-8: the bytes ingest hashed, without `convert_to`'s second
    // pass over them (2.7 s against 3.3 s for 2.3 M attempts).
    const DIGEST: Option<&'static str> =
        Some("'sha256:' || pg_catalog.encode(pg_catalog.sha256(pg_catalog.textsend({c})), 'hex')");

    fn streamed_pages(
        pool: &PgPool,
        table: &str,
        condition: Option<&str>,
        keys: &str,
        columns: &[Column],
        rows_per_page: usize,
    ) -> Option<mpsc::Receiver<Result<Page, StoreError>>> {
        let select: Vec<String> = columns
            .iter()
            .map(|column| match column {
                Column::Text(name) => format!("{name}::text"),
                Column::Integer(name) => format!("{name}::int8"),
                Column::Absent => "NULL::text".to_owned(),
            })
            .collect();
        let condition = condition.map(|c| format!("WHERE {c}")).unwrap_or_default();
        let statement = format!(
            "COPY (SELECT {} FROM {table} {condition} ORDER BY {keys}) TO STDOUT (FORMAT binary)",
            select.join(", ")
        );
        Some(pages::copy_out(
            pool.clone(),
            statement,
            columns.to_vec(),
            rows_per_page,
        ))
    }

    fn classify(error: &sqlx::Error) -> Option<StoreError> {
        let sqlx::Error::Database(e) = error else {
            return None;
        };
        let code = e.code()?;
        let message = e.message();
        match code.as_ref() {
            // serialization failure, deadlock, lock timeout, statement timeout
            "40001" | "40P01" | "55P03" | "57014" => Some(StoreError::Busy),
            // connection exceptions; the server shutting down or ending this session
            c if c.starts_with("08") || matches!(c, "57P01" | "57P02" | "57P03") => {
                Some(StoreError::Unavailable(message.to_owned()))
            }
            // too many connections
            "53300" => Some(StoreError::Busy),
            // no such database, a refused login, a database closed to connections
            "3D000" | "28000" | "28P01" => Some(StoreError::Unavailable(message.to_owned())),
            "55000" if message.contains("not currently accepting connections") => {
                Some(StoreError::Unavailable(message.to_owned()))
            }
            "42501" if !message.contains("append-only") => Some(StoreError::Other(format!(
                "the database login may not do this ({message}); see \"Team mode\" in docs/operations.md \
                 for the grants an application role needs"
            ))),
            _ => None,
        }
    }

    fn spawn_watch(pool: PgPool, head: i64) -> watch::Receiver<Live> {
        let (tx, rx) = watch::channel(Live {
            head,
            link: Link::Connected,
        });
        tokio::spawn(listen(pool, tx));
        rx
    }
}

/// The wait before reconnect `attempt` (1, 2, …): 100 ms doubling up to 5 s.
fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(100u64.saturating_mul(1 << attempt.saturating_sub(1).min(6)))
        .min(Duration::from_secs(5))
}

async fn read_head(pool: &PgPool) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar::<_, i64>(HEAD_SEQ).fetch_one(pool).await
}

/// A listener on [`CHANNEL`] that leaves reconnecting to [`listen`].
async fn subscribe(pool: &PgPool) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    listener.eager_reconnect(false);
    listener.listen(CHANNEL).await?;
    Ok(listener)
}

/// What a listening console heard.
enum Event {
    /// A notification: someone committed audit rows.
    Heard,
    /// The listening connection is gone.
    Lost,
    /// Nothing for a while: time to check the connection.
    Quiet,
}

/// Hears notifications until nobody watches. Each one is only a hint: the head is
/// read again after it, after every reconnect (whatever was missed meanwhile is
/// then caught up) and every [`RECHECK`] of a quiet connection.
async fn listen(pool: PgPool, tx: watch::Sender<Live>) {
    let mut attempt: u32 = 0;
    loop {
        if attempt > 0 {
            let head = tx.borrow().head;
            publish(
                &tx,
                Live {
                    head,
                    link: Link::Reconnecting { attempt },
                },
            );
            tokio::select! {
                () = tx.closed() => return,
                () = tokio::time::sleep(backoff(attempt)) => {}
            }
        }
        let listener = subscribe(&pool).await;
        // Listening first, then reading: nothing committed after the read is missed.
        let (mut listener, head) = match listener {
            Ok(listener) => match read_head(&pool).await {
                Ok(head) => (listener, head),
                Err(error) => {
                    tracing::warn!(%error, "cannot read the audit head");
                    attempt = attempt.saturating_add(1);
                    continue;
                }
            },
            Err(error) => {
                tracing::warn!(%error, "cannot listen for changes");
                attempt = attempt.saturating_add(1);
                continue;
            }
        };
        publish(
            &tx,
            Live {
                head,
                link: Link::Connected,
            },
        );
        loop {
            let event = tokio::select! {
                () = tx.closed() => return,
                received = listener.try_recv() => match received {
                    Ok(Some(_)) => Event::Heard,
                    Ok(None) | Err(_) => Event::Lost,
                },
                () = tokio::time::sleep(RECHECK) => Event::Quiet,
            };
            let alive = match event {
                Event::Heard => true,
                Event::Lost => false,
                Event::Quiet => sqlx::query("SELECT 1").execute(&mut listener).await.is_ok(),
            };
            let head = if alive {
                read_head(&pool).await
            } else {
                Err(sqlx::Error::PoolClosed)
            };
            match head {
                Ok(head) => publish(
                    &tx,
                    Live {
                        head,
                        link: Link::Connected,
                    },
                ),
                Err(error) => {
                    tracing::warn!(%error, "lost the connection to the store");
                    break;
                }
            }
        }
        attempt = 1;
    }
}

/// `url` without its password (after the login or as a `password=` parameter),
/// for messages and `location()`.
pub fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, query)) => (rest, Some(query)),
        None => (rest, None),
    };
    let mut shown = match rest.rsplit_once('@') {
        Some((login, host)) => {
            let user = login.split_once(':').map_or(login, |(user, _)| user);
            format!("{scheme}://{user}@{host}")
        }
        None => format!("{scheme}://{rest}"),
    };
    if let Some(query) = query {
        let kept: Vec<&str> = query
            .split('&')
            .filter(|pair| {
                let key = pair.split_once('=').map_or(*pair, |(key, _)| key);
                !key.eq_ignore_ascii_case("password")
            })
            .collect();
        if !kept.is_empty() {
            shown.push('?');
            shown.push_str(&kept.join("&"));
        }
    }
    shown
}

impl SqlStore<Postgres> {
    /// Connects to the database at `url` (`postgres://…`) and brings its schema up
    /// to date, creating it in an empty database. A database written by a newer
    /// holdfast is refused.
    pub async fn connect(url: &str) -> Result<PgStore, StoreError> {
        Self::connect_as(url, Create::Yes).await
    }

    /// Connects to the database at `url`; with [`Create::No`] a database without
    /// holdfast's schema is refused before anything is written to it. A server
    /// that cannot be reached, a missing database or a refused login is reported
    /// within [`CONNECT_TIMEOUT`], naming what was tried (host, port, database,
    /// login; never a password) and why.
    pub async fn connect_as(url: &str, create: Create) -> Result<PgStore, StoreError> {
        let location = without_password(url);
        let options = PgConnectOptions::from_str(url).map_err(|e| StoreError::Open {
            location: location.clone(),
            reason: format!(
                "the URL does not parse: {}",
                without_password(&e.to_string())
            ),
        })?;
        let options = if options.get_application_name().is_some() {
            options
        } else {
            options.application_name("holdfast")
        };
        // JIT off: the planner's cost of a queue page on a large store is past
        // `jit_above_cost`, and compiling it took ten times the query itself
        // (40 ms of a 44 ms first page at 100k operations).
        let options = options.options([
            ("lock_timeout", LOCK_TIMEOUT),
            (
                "idle_in_transaction_session_timeout",
                IDLE_IN_TRANSACTION_TIMEOUT,
            ),
            ("jit", "off"),
        ]);
        // One connection first, bounded in time: the pool retries a refused
        // connection until its acquire timeout and then says only that it timed
        // out, with the reason lost.
        let open_error = |reason: String| StoreError::Open {
            location: location.clone(),
            reason,
        };
        let tried = Tried::of(&options);
        match tokio::time::timeout(CONNECT_TIMEOUT, PgConnection::connect_with(&options)).await {
            Ok(Ok(probe)) => {
                // Only a courtesy to the server: the connection is dropped anyway.
                let _ = probe.close().await;
            }
            Ok(Err(error)) => {
                tracing::warn!(%error, "cannot connect to the store");
                return Err(open_error(tried.explain(&error)));
            }
            Err(_) => return Err(open_error(tried.unanswered())),
        }
        let pool = PgPoolOptions::new()
            .max_connections(POOL_SIZE)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_lazy_with(options);
        SqlStore::new(pool, location, create).await
    }
}

/// What a connection attempt tried, in words: where, which database, as whom.
/// The password is never part of it.
struct Tried {
    place: String,
    database: String,
    user: String,
}

impl Tried {
    fn of(options: &PgConnectOptions) -> Tried {
        let place = match options.get_socket() {
            Some(socket) => format!("the socket in {}", socket.display()),
            None => format!("{}:{}", options.get_host(), options.get_port()),
        };
        let user = options.get_username().to_owned();
        // PostgreSQL's own default: the database named after the login.
        let database = options.get_database().unwrap_or(&user).to_owned();
        Tried {
            place,
            database,
            user,
        }
    }

    /// The reason `error` gives, in words, with what was tried.
    fn explain(&self, error: &sqlx::Error) -> String {
        let Tried {
            place,
            database,
            user,
        } = self;
        let as_whom = format!("database {database}, login {user}");
        match error {
            sqlx::Error::Io(e) => {
                let why = match e.kind() {
                    std::io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
                    std::io::ErrorKind::TimedOut => "the connection timed out".to_owned(),
                    std::io::ErrorKind::NotFound => "no such host or socket".to_owned(),
                    std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::UnexpectedEof => {
                        "the server closed the connection".to_owned()
                    }
                    _ => e.to_string(),
                };
                format!("could not reach PostgreSQL at {place} ({why}; tried {as_whom})")
            }
            sqlx::Error::Tls(e) => {
                format!("could not set up TLS with PostgreSQL at {place} ({e}; tried {as_whom})")
            }
            sqlx::Error::Database(e) => {
                let message = e.message();
                match e.code().as_deref() {
                    Some("3D000") => format!("database {database} does not exist on {place}"),
                    Some("28P01") => format!(
                        "PostgreSQL at {place} refused login {user} to database {database} \
                         (password authentication failed)"
                    ),
                    Some("28000") => format!(
                        "PostgreSQL at {place} refused login {user} to database {database} \
                         ({message})"
                    ),
                    Some("53300") => {
                        format!("PostgreSQL at {place} has no free connection ({message})")
                    }
                    Some("57P03") => {
                        format!("PostgreSQL at {place} does not accept connections now ({message})")
                    }
                    Some("55000") => format!(
                        "database {database} on {place} does not accept connections now \
                         ({message})"
                    ),
                    _ => format!(
                        "PostgreSQL at {place} refused the connection ({message}; tried {as_whom})"
                    ),
                }
            }
            other => format!(
                "could not connect to PostgreSQL at {place} ({}; tried {as_whom})",
                without_password(&other.to_string())
            ),
        }
    }

    /// No answer within [`CONNECT_TIMEOUT`].
    fn unanswered(&self) -> String {
        format!(
            "could not reach PostgreSQL at {} (no answer within {} s; tried database {}, login {})",
            self.place,
            CONNECT_TIMEOUT.as_secs(),
            self.database,
            self.user
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_location_never_shows_the_password() {
        assert_eq!(
            without_password("postgres://maya:s3cret@db.internal:5432/holdfast?sslmode=require"),
            "postgres://maya@db.internal:5432/holdfast?sslmode=require"
        );
        assert_eq!(
            without_password("postgresql://maya@db/holdfast"),
            "postgresql://maya@db/holdfast"
        );
        assert_eq!(
            without_password("postgres://db/holdfast"),
            "postgres://db/holdfast"
        );
        assert_eq!(
            without_password("postgres://maya@db/holdfast?password=s3cret&sslmode=require"),
            "postgres://maya@db/holdfast?sslmode=require"
        );
        assert_eq!(
            without_password("postgres://db/holdfast?PASSWORD=s3cret"),
            "postgres://db/holdfast"
        );
    }

    #[test]
    fn reconnects_back_off_from_a_tenth_of_a_second_to_five_seconds() {
        let waits: Vec<u128> = (1..=8).map(|n| backoff(n).as_millis()).collect();
        assert_eq!(waits, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
    }

    #[test]
    fn the_migration_starts_the_chain_at_the_genesis_value() {
        let genesis = crate::core::audit::genesis();
        assert!(MIGRATIONS[0].2.contains(genesis.as_str()));
    }
}
