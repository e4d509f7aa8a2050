//! Bringing a store's schema up to date: the migrations each backend compiles in,
//! run on open, the refusal of a store written by a newer holdfast, and of a
//! database without holdfast's schema opened by a command that may not create one.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::sync::Arc;

use sqlx::migrate::{Migrate, MigrateError, Migration, MigrationType, Migrator};
use sqlx::{AssertSqlSafe, Pool, Row, SqlSafeStr};
use tokio::sync::OnceCell;

use super::{Backend, SqlStore, db};
use crate::store::StoreError;

/// The newest schema version a backend's build knows.
pub fn known_schema<DB: Backend>() -> i64 {
    DB::MIGRATIONS.iter().map(|m| m.0).max().unwrap_or(0)
}

/// Whether opening a store may create its schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Create {
    /// Create the schema in an empty database (`db migrate`, `ingest`, `demo`,
    /// a drill into a fresh store, the target of `db copy`).
    Yes,
    /// The schema must be there already: every other command.
    No,
}

fn migrator<DB: Backend>() -> Migrator {
    let migrations = DB::MIGRATIONS
        .iter()
        .map(|(version, name, sql)| {
            Migration::new(
                *version,
                Cow::Borrowed(*name),
                MigrationType::Simple,
                AssertSqlSafe(*sql).into_sql_str(),
                false,
            )
        })
        .collect();
    Migrator::with_migrations(migrations)
}

shared! {
    impl {
        /// Wraps a connected pool and brings its schema up to date. A store written by
        /// a newer holdfast is refused. With [`Create::No`] a database that holds no
        /// holdfast schema is refused ([`StoreError::NoSchema`]) before anything is
        /// written to it: only the commands that fill or prepare a store create one.
        pub(crate) async fn new(
            pool: Pool<DB>,
            location: String,
            create: Create,
        ) -> Result<Self, StoreError> {
            let store = SqlStore {
                pool,
                location,
                live: Arc::new(OnceCell::new()),
                skipped: crate::store::skipped::Skipped::default(),
            };
            store.migrate(create).await?;
            Ok(store)
        }

        async fn migrate(&self, create: Create) -> Result<(), StoreError> {
            let too_new = |found| StoreError::TooNew {
                location: self.location.clone(),
                found,
                known: known_schema::<DB>(),
            };
            let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
            let no_schema = || StoreError::NoSchema(self.location.clone());
            if create == Create::No {
                let has: i64 = sqlx::query(DB::HAS_SCHEMA)
                    .fetch_one(&mut *conn)
                    .await
                    .and_then(|row| row.try_get("has"))
                    .map_err(db::<DB>)?;
                if has == 0 {
                    return Err(no_schema());
                }
            }
            let applied: BTreeSet<i64> = match conn.list_applied_migrations("_sqlx_migrations").await {
                Ok(applied) => applied.iter().map(|m| m.version).collect(),
                Err(_) => BTreeSet::new(),
            };
            drop(conn);
            if create == Create::No && applied.is_empty() {
                return Err(no_schema());
            }
            if let Some(&found) = applied.iter().max().filter(|v| **v > known_schema::<DB>()) {
                return Err(too_new(found));
            }
            // Up to date: nothing to run, so a login that may only read and write data
            // (no DDL rights) opens the store all the same.
            if DB::MIGRATIONS.iter().all(|m| applied.contains(&m.0)) {
                return Ok(());
            }
            migrator::<DB>().run(&self.pool).await.map_err(|e| match e {
                MigrateError::VersionMissing(found) => too_new(found),
                MigrateError::Execute(error) => db::<DB>(error),
                other => StoreError::Open {
                    location: self.location.clone(),
                    reason: format!("migration failed: {other}"),
                },
            })
        }
    }
}
