//! Fresh stores for the conformance suite, one constructor per backend. Each store
//! lives in its own place — a temp file, or a PostgreSQL database created for the
//! test and dropped after it — so runs never collide.
//!
//! PostgreSQL is reached through `HOLDFAST_TEST_DATABASE_URL` (an admin login that
//! may create databases; default `postgres://postgres@127.0.0.1:5432/test`). `.ci/run`
//! starts a server when none answers and sets the variable, which makes the server
//! required. Without the variable, a machine with no server skips the PostgreSQL
//! half of each suite with one line saying so (see [`postgres_skipped`]).

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use holdfast::store::postgres::PgStore;
use holdfast::store::sqlite::SqliteStore;
use holdfast::store::{Scope, Session, Store, StoreError};
use sqlx::{AssertSqlSafe, Connection, PgConnection, Postgres, QueryBuilder, Row, Sqlite};

/// The admin connection used when `HOLDFAST_TEST_DATABASE_URL` is not set.
pub const DEFAULT_ADMIN_URL: &str = "postgres://postgres@127.0.0.1:5432/test";

/// The two backends every conformance test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sqlite,
    Postgres,
}

/// Whether the PostgreSQL tests of this run must be skipped: only when neither
/// `HOLDFAST_TEST_DATABASE_URL` nor `HOLDFAST_TEST_REQUIRE_POSTGRES` is set and no
/// server answers at the default URL. The first skip of a test binary (a suite)
/// writes one line to the terminal saying why and how to run them; with either
/// variable set, a missing server is the failure of the test that needs it.
/// The single user's session on `store`, kept to `scope`: how a test reads a
/// report over one scope.
pub fn session_in(store: &Arc<dyn Store>, scope: &Scope) -> Session {
    Session::new(
        Arc::clone(store),
        holdfast::core::rules::Actor::local("test", None),
    )
    .narrowed(scope)
}

pub async fn postgres_skipped() -> bool {
    static ANSWERS: tokio::sync::OnceCell<bool> = tokio::sync::OnceCell::const_new();
    let required = std::env::var_os("HOLDFAST_TEST_DATABASE_URL").is_some()
        || std::env::var_os("HOLDFAST_TEST_REQUIRE_POSTGRES").is_some();
    if required {
        return false;
    }
    let answers = *ANSWERS
        .get_or_init(|| async {
            let connect = PgConnection::connect(&admin_url());
            match tokio::time::timeout(std::time::Duration::from_secs(5), connect).await {
                Ok(Ok(conn)) => {
                    let _ = conn.close().await;
                    true
                }
                _ => false,
            }
        })
        .await;
    if !answers {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            use std::io::Write;
            let suite = std::env::current_exe()
                .ok()
                .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                .map(|s| {
                    s.rsplit_once('-')
                        .map_or(s.clone(), |(name, _)| name.to_owned())
                })
                .unwrap_or_default();
            // Written to the terminal itself: the test harness captures `eprintln!`.
            let _ = writeln!(
                std::io::stderr(),
                "{suite}: PostgreSQL tests skipped: no server answered at {DEFAULT_ADMIN_URL}; \
                 run them with .ci/run, or set HOLDFAST_TEST_DATABASE_URL to an admin URL"
            );
        });
    }
    !answers
}

/// Returns from the calling test when [`postgres_skipped`] says so.
#[macro_export]
macro_rules! skip_without_postgres {
    () => {
        if $crate::support::stores::postgres_skipped().await {
            return;
        }
    };
}

/// A store and whatever keeps it alive.
pub struct Fresh {
    pub kind: Kind,
    pub store: Arc<dyn Store>,
    pub sqlite: Option<SqliteStore>,
    pub postgres: Option<PgStore>,
    /// `sqlite:PATH` or the database's URL, as the command line takes it.
    pub url: String,
    _place: Place,
}

enum Place {
    Dir(tempfile::TempDir),
    Database(Database),
}

pub async fn fresh(kind: Kind) -> Fresh {
    match kind {
        Kind::Sqlite => sqlite().await,
        Kind::Postgres => postgres().await,
    }
}

pub async fn sqlite() -> Fresh {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("store.db");
    let store = SqliteStore::open(&path).await.expect("open store");
    Fresh {
        kind: Kind::Sqlite,
        store: Arc::new(store.clone()),
        sqlite: Some(store),
        postgres: None,
        url: format!("sqlite:{}", path.display()),
        _place: Place::Dir(dir),
    }
}

pub async fn postgres() -> Fresh {
    let database = Database::migrated().await;
    let store = PgStore::connect(&database.url)
        .await
        .expect("connect to the test database");
    Fresh {
        kind: Kind::Postgres,
        store: Arc::new(store.clone()),
        sqlite: None,
        postgres: Some(store),
        url: database.url.clone(),
        _place: Place::Database(database),
    }
}

/// Drops the triggers that stand between the database owner and the audit rows.
pub async fn unguard(fresh: &Fresh) {
    let drops: &[&str] = match fresh.kind {
        Kind::Sqlite => &[
            "DROP TRIGGER audit_no_update",
            "DROP TRIGGER audit_no_delete",
            "DROP TRIGGER audit_seq_positive",
        ],
        Kind::Postgres => &[
            "DROP TRIGGER audit_no_update ON audit",
            "DROP TRIGGER audit_no_delete ON audit",
            "DROP TRIGGER audit_extends_head ON audit",
        ],
    };
    for sql in drops {
        fresh.execute(sql).await.unwrap();
    }
}

impl Fresh {
    /// Runs raw SQL behind the store's back, as the database owner would.
    pub async fn execute(&self, sql: &str) -> Result<(), sqlx::Error> {
        let sql = AssertSqlSafe(sql.to_owned());
        match (&self.sqlite, &self.postgres) {
            (Some(s), _) => sqlx::raw_sql(sql).execute(s.pool()).await.map(drop),
            (_, Some(p)) => sqlx::raw_sql(sql).execute(p.pool()).await.map(drop),
            (None, None) => unreachable!("a fresh store has one backend"),
        }
    }

    /// Another handle on the same store, as a second console would open it.
    pub async fn reopen(&self) -> Result<Arc<dyn Store>, StoreError> {
        Ok(match (&self.sqlite, &self.postgres) {
            (Some(s), _) => Arc::new(SqliteStore::open(s.path()).await?),
            (_, Some(_)) => Arc::new(PgStore::connect(&self.url).await?),
            (None, None) => unreachable!("a fresh store has one backend"),
        })
    }

    /// The PostgreSQL database this store lives in.
    pub fn database_name(&self) -> Option<&str> {
        match &self._place {
            Place::Database(d) => Some(&d.name),
            Place::Dir(_) => None,
        }
    }

    /// Each read's plan as lines, from `EXPLAIN QUERY PLAN` (the reads carry that
    /// prefix): SQLite's `detail` column.
    pub async fn sqlite_plans<R>(
        &self,
        reads: Vec<(R, QueryBuilder<Sqlite>)>,
    ) -> Vec<(R, Vec<String>)> {
        let Some(store) = &self.sqlite else {
            unreachable!("a SQLite store")
        };
        let mut out = Vec::new();
        for (read, mut qb) in reads {
            let rows = qb.build().fetch_all(store.pool()).await.unwrap();
            let plan = rows
                .iter()
                .map(|r| r.try_get::<String, _>("detail").unwrap())
                .collect();
            out.push((read, plan));
        }
        out
    }

    /// Each read's plan as lines, from `EXPLAIN` (the reads carry that prefix),
    /// with the planner told to take an index wherever one serves
    /// (`enable_seqscan = off`), so a small test store shows the plan a large one
    /// gets.
    pub async fn postgres_plans<R>(
        &self,
        reads: Vec<(R, QueryBuilder<Postgres>)>,
    ) -> Vec<(R, Vec<String>)> {
        let Some(store) = &self.postgres else {
            unreachable!("a PostgreSQL store")
        };
        let mut conn = store.pool().acquire().await.unwrap();
        sqlx::query("SET enable_seqscan = off")
            .execute(&mut *conn)
            .await
            .unwrap();
        let mut out = Vec::new();
        for (read, mut qb) in reads {
            let rows = qb.build().fetch_all(&mut *conn).await.unwrap();
            let plan = rows
                .iter()
                .map(|r| r.try_get::<String, _>(0).unwrap())
                .collect();
            out.push((read, plan));
        }
        out
    }

    /// Closes this handle's connections (the store itself stays).
    pub async fn close(&self) {
        if let Some(s) = &self.sqlite {
            s.pool().close().await;
        }
        if let Some(p) = &self.postgres {
            p.pool().close().await;
        }
    }
}

/// The admin URL the tests connect with.
pub fn admin_url() -> String {
    std::env::var("HOLDFAST_TEST_DATABASE_URL").unwrap_or_else(|_| DEFAULT_ADMIN_URL.to_owned())
}

/// A database of its own for one test, dropped when the test ends.
pub struct Database {
    pub name: String,
    pub url: String,
}

impl Database {
    /// A new, empty database.
    pub async fn create() -> Database {
        Database::create_from("template1").await
    }

    /// A new database with the schema already migrated, cloned from a template
    /// migrated once per schema (migrating every test's database anew costs more
    /// than creating it).
    pub async fn migrated() -> Database {
        Database::create_from(migrated_template().await).await
    }

    async fn create_from(template: &str) -> Database {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default();
        let name = format!(
            "holdfast_test_{}_{}_{nanos}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let admin_url = admin_url();
        admin(&format!("CREATE DATABASE {name} TEMPLATE {template}"))
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "PostgreSQL must answer at {admin_url} for the conformance suite ({e}); \
                     run .ci/run or set HOLDFAST_TEST_DATABASE_URL"
                )
            });
        let url = database_url(&name);
        Database { name, url }
    }
}

/// The admin URL pointed at another database.
fn database_url(name: &str) -> String {
    let admin_url = admin_url();
    let (base, query) = admin_url.split_once('?').unwrap_or((&admin_url, ""));
    let server = base.rsplit_once('/').map_or(base, |(server, _)| server);
    if query.is_empty() {
        format!("{server}/{name}")
    } else {
        format!("{server}/{name}?{query}")
    }
}

/// The name of a database holding exactly the migrated schema, created on first
/// use and named after the migrations' content, so that it is made once per schema
/// and shared by every test run (it stays on the server; `.ci/run`'s server is
/// thrown away with it).
async fn migrated_template() -> &'static str {
    static TEMPLATE: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    TEMPLATE
        .get_or_init(|| async {
            let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/migrations/postgres");
            let mut files: Vec<_> = std::fs::read_dir(dir)
                .expect("the PostgreSQL migrations")
                .map(|entry| entry.expect("a migration").path())
                .collect();
            files.sort();
            let mut text = Vec::new();
            for file in files {
                text.extend(std::fs::read(file).expect("a migration's text"));
            }
            let digest = holdfast::core::ids::Sha256::of(&text);
            let name = format!("holdfast_template_{}", &digest.as_str()[7..23]);
            let exists: Option<i32> =
                sqlx::query_scalar("SELECT 1 FROM pg_database WHERE datname = $1")
                    .bind(&name)
                    .fetch_optional(&mut PgConnection::connect(&admin_url()).await.unwrap())
                    .await
                    .unwrap();
            if exists.is_none() {
                // Migrated under a name of its own, then renamed: a run racing this
                // one either wins the rename or finds the template made.
                let building = Database::create().await;
                let store = PgStore::connect(&building.url).await.expect("migrate");
                store.pool().close().await;
                let renamed = admin(&format!(
                    "ALTER DATABASE {} RENAME TO {name}",
                    building.name
                ))
                .await;
                if renamed.is_ok() {
                    std::mem::forget(building);
                }
            }
            name
        })
        .await
}

impl Drop for Database {
    fn drop(&mut self) {
        admin_blocking(format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        ));
    }
}

/// Runs SQL on the admin connection.
pub async fn admin(sql: &str) -> Result<(), sqlx::Error> {
    let mut conn = PgConnection::connect(&admin_url()).await?;
    sqlx::raw_sql(AssertSqlSafe(sql.to_owned()))
        .execute(&mut conn)
        .await?;
    conn.close().await
}

/// [`admin`] from a `Drop`, which runs inside the test's runtime and cannot be
/// blocked on: a thread of its own with a runtime of its own does the work.
fn admin_blocking(sql: String) {
    let done = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        runtime
            .block_on(admin(&sql))
            .map_err(|e| format!("{sql}: {e}"))
    })
    .join();
    match done {
        Ok(Ok(())) => {}
        Ok(Err(e)) => eprintln!("cleaning up after a test failed: {e}"),
        Err(_) => eprintln!("cleaning up after a test panicked"),
    }
}

/// A login role for one test, dropped when the test ends (after the databases
/// it holds privileges in: declare it before them).
pub struct LoginRole {
    pub name: String,
}

impl LoginRole {
    pub async fn create(prefix: &str) -> LoginRole {
        LoginRole::create_with(prefix, "LOGIN").await
    }

    /// A login that is a member of `group`, holding its privileges.
    pub async fn member_of(prefix: &str, group: &LoginRole) -> LoginRole {
        LoginRole::create_with(prefix, &format!("LOGIN IN ROLE {}", group.name)).await
    }

    async fn create_with(prefix: &str, options: &str) -> LoginRole {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let name = format!(
            "{prefix}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        admin(&format!("CREATE ROLE {name} {options}"))
            .await
            .expect("create a login role");
        LoginRole { name }
    }
}

impl Drop for LoginRole {
    fn drop(&mut self) {
        admin_blocking(format!("DROP ROLE IF EXISTS {}", self.name));
    }
}

/// `url` with its login replaced by `login` (no password: the test server trusts).
pub fn url_for_login(url: &str, login: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL with a scheme");
    let host = rest.split_once('@').map_or(rest, |(_, host)| host);
    format!("{scheme}://{login}@{host}")
}

/// Generates, for each named `async fn(Kind)` of the calling test file, one
/// `#[tokio::test]` on SQLite (`sqlite::NAME`) and one on PostgreSQL
/// (`postgres::NAME`), so that no behaviour is tested on one backend only.
#[macro_export]
macro_rules! holdfast_on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name($crate::support::stores::Kind::Sqlite).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    $crate::skip_without_postgres!();
                    super::$name($crate::support::stores::Kind::Postgres).await;
                }
            )*
        }
    };
}

fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// An INSERT of `row` as holdfast would write it.
pub fn audit_insert_sql(row: &holdfast::core::audit::AuditRow) -> String {
    let c = holdfast::store::plan::codec::AuditColumns::from_row(row);
    let opt = |v: &Option<String>| v.as_deref().map_or("NULL".to_owned(), quoted);
    format!(
        "INSERT INTO audit (seq, operation, action, from_state, to_state, by_identity, role, \
         policy, on_behalf_of, rationale, evidence, at, encoding, prev_hash, hash) VALUES \
         ({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {})",
        c.seq,
        quoted(&c.operation),
        quoted(&c.action),
        opt(&c.from_state),
        opt(&c.to_state),
        quoted(&c.by_identity),
        quoted(&c.role),
        opt(&c.policy),
        opt(&c.on_behalf_of),
        opt(&c.rationale),
        quoted(&c.evidence),
        quoted(&c.at),
        c.encoding,
        quoted(&c.prev_hash),
        quoted(&c.hash),
    )
}

/// The grants the operations guide (docs/operations.md) gives a least-privilege application role.
pub fn application_grants(role: &str, database: &str) -> String {
    let readme = include_str!("../../docs/operations.md");
    let start = readme
        .find("-- holdfast application role")
        .expect("docs/operations.md shows the application role's grants");
    let end = start
        + readme[start..]
            .find("```")
            .expect("the grants end with their code block");
    readme[start..end]
        .replace("holdfast_app", role)
        .replace("holdfast_db", database)
}

/// A fresh PostgreSQL store whose application group (a new role holding the
/// operations guide's grants) has one login, and the login of the database
/// owner, who holds the tables. Fields drop in order: the store before the
/// roles that hold privileges in it.
pub struct ApplicationLogin {
    pub fresh: Fresh,
    pub login: LoginRole,
    pub group: LoginRole,
    /// The database owner's login (the tests' admin).
    pub owner: String,
}

impl ApplicationLogin {
    pub async fn new(prefix: &str) -> ApplicationLogin {
        let group = LoginRole::create(&format!("{prefix}_app")).await;
        let login = LoginRole::member_of(&format!("{prefix}_login"), &group).await;
        let fresh = postgres().await;
        let database = fresh.database_name().unwrap().to_owned();
        fresh
            .execute(&application_grants(&group.name, &database))
            .await
            .unwrap();
        let owner = fresh.store.login().await.unwrap().expect("a login");
        ApplicationLogin {
            fresh,
            login,
            group,
            owner,
        }
    }

    /// The store's URL as the application login.
    pub fn url(&self) -> String {
        url_for_login(&self.fresh.url, &self.login.name)
    }
}
