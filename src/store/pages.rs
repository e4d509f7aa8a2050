//! Pages of whole-table reads for verification, written on a thread of their
//! own straight from an SQLite file.
//!
//! `audit verify` reads every audit row, operation and record of the store.
//! Through the pool, each value of each row is copied into a value of its own
//! and handed across the driver's worker thread; SQL that joins a page of rows
//! into one text value instead spends most of the time in SQLite building
//! text. On an SQLite store the same pages are built here, on a dedicated
//! thread with its own read-only connection: one statement stepped from the
//! first row to the last, each column read in place and appended to the page
//! in the format the page reader of [`super::engine`] takes (`-` for `NULL`,
//! `!` for a value of another type, a text's length in bytes, `:` and the
//! text; an integer's digits and `,`), so a page that holds something
//! unexpected is told apart there exactly as a page SQL wrote would be.

use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use tokio::sync::mpsc;

use super::StoreError;

/// How a column of a page is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Column {
    /// A text column that may be `NULL`.
    Text(&'static str),
    /// An integer column.
    Integer(&'static str),
    /// A column the table does not have: always written as `NULL`.
    Absent,
}

impl Column {
    /// The expression a plain `SELECT` reads for this column.
    pub(crate) fn select(self) -> &'static str {
        match self {
            Column::Text(name) | Column::Integer(name) => name,
            Column::Absent => "NULL",
        }
    }
}

/// One page: how many rows it holds and their columns, joined.
#[derive(Debug)]
pub(crate) struct Page {
    pub rows: i64,
    pub text: String,
}

/// Pages read ahead of the reader: the thread builds the next while this one
/// is checked.
const AHEAD: usize = 2;

/// Starts reading `sql` (a plain `SELECT` of `columns`, in their order, with
/// `bind` as `?1` where given) from the SQLite file at `path` on a thread of
/// its own, `rows_per_page` rows a page. `None` when the file cannot be opened
/// for reading this way: the caller reads through the pool instead. The thread
/// stops at the last row, at the first error (sent as the last item), or when
/// the receiver is dropped.
pub(crate) fn spawn(
    path: &Path,
    sql: String,
    bind: Option<i64>,
    columns: Vec<Column>,
    rows_per_page: usize,
) -> Option<mpsc::Receiver<Result<Page, StoreError>>> {
    let connection = open(path)?;
    let (sender, receiver) = mpsc::channel(AHEAD);
    let spawned = std::thread::Builder::new()
        .name("holdfast-pages".into())
        .spawn(move || {
            if let Err(error) = read(&connection, &sql, bind, &columns, rows_per_page, &sender) {
                let _ = sender.blocking_send(Err(read_failed(&error)));
            }
        });
    match spawned {
        Ok(_) => Some(receiver),
        Err(error) => {
            tracing::warn!(%error, "cannot start the paged reader; reading through the pool");
            None
        }
    }
}

/// A read-only connection to the SQLite file at `path` that waits for a
/// writer as the store's own connections do; `None`, logged, when it cannot be
/// opened.
fn open(path: &Path) -> Option<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let opened = Connection::open_with_flags(path, flags).and_then(|connection| {
        connection.busy_timeout(std::time::Duration::from_secs(30))?;
        Ok(connection)
    });
    match opened {
        Ok(connection) => Some(connection),
        Err(error) => {
            tracing::warn!(%error, path = %path.display(), "cannot open the store for paged reading; reading through the pool");
            None
        }
    }
}

/// The error a paged read that failed midway reports (and logs).
fn read_failed(error: &rusqlite::Error) -> StoreError {
    tracing::error!(%error, "paged read failed");
    StoreError::Other(format!("the store cannot be read: {error}"))
}

/// Steps `sql` (a plain `SELECT`) over the SQLite file at `path` on a thread
/// of the blocking pool, handing each row to `visit` in place, until `visit`
/// returns something: that, or `None` after the last row. For a check that
/// needs nothing but the row itself (a record's hash), so no page is written
/// and no value copied. `None` when the file cannot be opened for reading
/// this way: the caller reads through the pool instead.
pub(crate) fn visit<T, F>(
    path: &Path,
    sql: String,
    mut visit: F,
) -> Option<tokio::task::JoinHandle<Result<Option<T>, StoreError>>>
where
    T: Send + 'static,
    F: FnMut(&rusqlite::Row<'_>) -> Option<T> + Send + 'static,
{
    let connection = open(path)?;
    Some(tokio::task::spawn_blocking(move || {
        let mut step = || -> rusqlite::Result<Option<T>> {
            let mut statement = connection.prepare(&sql)?;
            let mut rows = statement.query([])?;
            while let Some(row) = rows.next()? {
                if let Some(found) = visit(row) {
                    return Ok(Some(found));
                }
            }
            Ok(None)
        };
        step().map_err(|error| read_failed(&error))
    }))
}

/// Steps `sql` and sends its rows in pages; returns early, without an error,
/// once nobody receives.
fn read(
    connection: &Connection,
    sql: &str,
    bind: Option<i64>,
    columns: &[Column],
    rows_per_page: usize,
    sender: &mpsc::Sender<Result<Page, StoreError>>,
) -> rusqlite::Result<()> {
    let mut statement = connection.prepare(sql)?;
    let mut rows = match bind {
        Some(value) => statement.query([value])?,
        None => statement.query([])?,
    };
    let mut page = Page {
        rows: 0,
        text: String::new(),
    };
    let mut capacity = 0;
    while let Some(row) = rows.next()? {
        for (index, column) in columns.iter().enumerate() {
            write_value(&mut page.text, *column, row.get_ref(index)?);
        }
        page.rows += 1;
        if page.rows == i64::try_from(rows_per_page).unwrap_or(i64::MAX) {
            capacity = capacity.max(page.text.len());
            let full = std::mem::replace(
                &mut page,
                Page {
                    rows: 0,
                    text: String::with_capacity(capacity),
                },
            );
            if sender.blocking_send(Ok(full)).is_err() {
                return Ok(());
            }
        }
    }
    if page.rows > 0 {
        let _ = sender.blocking_send(Ok(page));
    }
    Ok(())
}

/// Appends the decimal digits of `n`: the formatting machinery costs more than
/// the rest of a short column.
fn push_digits(page: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    page.push_str(std::str::from_utf8(&digits[at..]).unwrap_or_default());
}

/// Appends one value as the page format writes a `column` of its kind.
fn write_value(page: &mut String, column: Column, value: ValueRef<'_>) {
    match (column, value) {
        (Column::Integer(_), ValueRef::Integer(n)) => {
            if n < 0 {
                page.push('-');
            }
            push_digits(page, n.unsigned_abs());
            page.push(',');
        }
        (Column::Integer(_), _) => page.push_str("!,"),
        (Column::Text(_) | Column::Absent, ValueRef::Null) => page.push('-'),
        (Column::Text(_), ValueRef::Text(bytes)) => match std::str::from_utf8(bytes) {
            Ok(text) => {
                push_digits(page, text.len() as u64);
                page.push(':');
                page.push_str(text);
            }
            Err(_) => page.push('!'),
        },
        (Column::Text(_) | Column::Absent, _) => page.push('!'),
    }
}

#[cfg(test)]
mod tests {
    use super::{Column, spawn};

    /// Every kind of value is written as the page reader expects, a page cut
    /// every two rows, and a row of the wrong type is marked, not skipped.
    #[tokio::test]
    async fn pages_carry_every_value_as_the_format_says() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("pages.db");
        let connection = rusqlite::Connection::open(&path).expect("open");
        connection
            .execute_batch(
                "CREATE TABLE t (k, a, b);
                 INSERT INTO t VALUES (1, 'é:x', NULL), (2, '', 'y'), (3, 7, 'z'), ('4', 'w', x'ff'),
                   (-9223372036854775808, NULL, NULL), (10, '0123456789', '');",
            )
            .expect("fill");
        let columns = vec![
            Column::Integer("k"),
            Column::Text("a"),
            Column::Text("b"),
            Column::Absent,
        ];
        let sql = "SELECT k, a, b, NULL FROM t WHERE rowid >= ?1 ORDER BY rowid".to_owned();
        let mut pages = spawn(&path, sql, Some(1), columns, 2).expect("reader");
        let mut got = Vec::new();
        while let Some(page) = pages.recv().await {
            let page = page.expect("page");
            got.push((page.rows, page.text));
        }
        assert_eq!(
            got,
            vec![
                (2, "1,4:é:x--2,0:1:y-".to_owned()),
                (2, "3,!1:z-!,1:w!-".to_owned()),
                (2, "-9223372036854775808,---10,10:01234567890:-".to_owned()),
            ]
        );
    }

    #[test]
    fn a_file_that_cannot_be_opened_leaves_the_read_to_the_pool() {
        let dir = tempfile::tempdir().expect("temp dir");
        let missing = dir.path().join("none").join("missing.db");
        assert!(spawn(&missing, "SELECT 1".into(), None, vec![], 1).is_none());
    }
}
