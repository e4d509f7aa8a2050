//! Copying: one page of a table's rows as stored, and filling an empty store
//! with everything another one holds, in one transaction. Each table is read
//! by keyset pages, the next page read while the last is written (two pages in
//! memory at most). Where the backend names per-row triggers a copy may set
//! aside ([`super::Backend::COPY_SETS_ASIDE`]), they are off inside the
//! transaction only, the tables they keep are rebuilt in one statement each,
//! and the chain's per-statement check still sees every audit row.

use sqlx::{QueryBuilder, Row};

use super::db;
use crate::store::plan::copy::{Cell, ColumnKind, CopyReport, TABLES, Table};
use crate::store::{Store, StoreError};

shared! {
    impl {
        /// Reads one page of a table's rows, every column as a cell: the rows after
        /// the key `after` in the table's order, by keyset (never `OFFSET`).
        pub(super) async fn table_page(
            &self,
            table: &Table,
            after: Option<&[Cell]>,
            limit: i64,
        ) -> Result<Vec<Vec<Cell>>, StoreError> {
            let keys = table.key_columns();
            let mut qb: QueryBuilder<DB> = QueryBuilder::new(format!(
                "SELECT {} FROM {}",
                table.column_list(),
                table.name
            ));
            if let Some(after) = after {
                qb.push(format_args!(" WHERE ({}) > (", keys.join(", ")));
                let mut values = qb.separated(", ");
                for cell in after {
                    match cell {
                        Cell::Int(value) => values.push_bind(*value),
                        Cell::Text(value) => values.push_bind(value.clone()),
                    };
                }
                qb.push(")");
            }
            qb.push(format_args!(" ORDER BY {} LIMIT ", table.order));
            qb.push_bind(limit);
            let rows = qb.build().fetch_all(&self.pool).await.map_err(db::<DB>)?;
            rows.iter()
                .map(|row| {
                    table
                        .columns
                        .iter()
                        .map(|(name, kind)| match kind {
                            ColumnKind::Int => row.try_get(*name).map(Cell::Int),
                            ColumnKind::Text => row.try_get(*name).map(Cell::Text),
                        })
                        .collect::<Result<Vec<_>, _>>()
                        .map_err(db::<DB>)
                })
                .collect()
        }

        /// Inserts rows of a table exactly as they are.
        pub(super) async fn insert_cells(
            conn: &mut DB::Connection,
            table: &Table,
            rows: Vec<Vec<Cell>>,
        ) -> Result<(), StoreError> {
            if rows.is_empty() {
                return Ok(());
            }
            let mut qb: QueryBuilder<DB> = QueryBuilder::new(format!(
                "INSERT INTO {} ({}) ",
                table.name,
                table.column_list()
            ));
            qb.push_values(rows, |mut values, row| {
                for cell in row {
                    match cell {
                        Cell::Int(value) => values.push_bind(value),
                        Cell::Text(value) => values.push_bind(value),
                    };
                }
            });
            qb.build().execute(&mut *conn).await.map_err(db::<DB>)?;
            Ok(())
        }

        pub(super) async fn copy_from(&self, source: &dyn Store) -> Result<CopyReport, StoreError> {
            const PAGE: u64 = 500;
            let (mut tx, head) = self.begin_write().await?;
            let operations: i64 = sqlx::query("SELECT count(*) AS n FROM operations")
                .fetch_one(&mut *tx)
                .await
                .map_err(db::<DB>)?
                .try_get("n")
                .map_err(db::<DB>)?;
            if head.seq > 0 || operations > 0 {
                tx.rollback().await.map_err(db::<DB>)?;
                return Err(StoreError::Other(format!(
                    "{} already holds data; copy into a new, empty store",
                    self.location
                )));
            }
            for sql in Self::set_aside("DISABLE") {
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                    .execute(&mut *tx)
                    .await
                    .map_err(db::<DB>)?;
            }
            let mut report = CopyReport::default();
            for table in TABLES {
                let mut copied = 0;
                // The next page is read while this one is written: two pages
                // in memory at most.
                let mut rows = source.table_rows(table, None, PAGE).await?;
                loop {
                    let n = rows.len() as u64;
                    copied += n;
                    if n < PAGE {
                        Self::insert_cells(&mut tx, table, rows).await?;
                        break;
                    }
                    let after = rows.last().map(|row| table.key_of(row));
                    let (written, next) = tokio::join!(
                        Self::insert_cells(&mut tx, table, rows),
                        source.table_rows(table, after.as_deref(), PAGE)
                    );
                    written?;
                    rows = next?;
                }
                report.tables.push((table.name, copied));
            }
            for &sql in DB::AFTER_COPY {
                sqlx::query(sql).execute(&mut *tx).await.map_err(db::<DB>)?;
            }
            for sql in Self::set_aside("ENABLE") {
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                    .execute(&mut *tx)
                    .await
                    .map_err(db::<DB>)?;
            }
            tx.commit().await.map_err(db::<DB>)?;
            for &sql in DB::AFTER_COPY_COMMIT {
                sqlx::raw_sql(sqlx::AssertSqlSafe(sql))
                    .execute(&self.pool)
                    .await
                    .map_err(db::<DB>)?;
            }
            Ok(report)
        }

        /// One `ALTER TABLE … {verb} TRIGGER …` statement per table whose
        /// triggers a copy sets aside ([`Backend::COPY_SETS_ASIDE`]).
        ///
        /// [`Backend::COPY_SETS_ASIDE`]: super::Backend::COPY_SETS_ASIDE
        fn set_aside(verb: &str) -> Vec<String> {
            DB::COPY_SETS_ASIDE
                .iter()
                .map(|(table, triggers)| {
                    let actions: Vec<String> = triggers
                        .iter()
                        .map(|trigger| format!("{verb} TRIGGER {trigger}"))
                        .collect();
                    format!("ALTER TABLE {table} {}", actions.join(", "))
                })
                .collect()
        }
    }
}
