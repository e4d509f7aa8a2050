//! Pages of whole-table reads for verification, written on a thread of their
//! own straight from an SQLite file.
//!
//! `audit verify` reads every audit row, operation and record of the store.
//! Through the pool, each value of each row is copied into a value of its own
//! and handed across the driver's worker thread; SQL that joins a page of rows
//! into one text value instead spends most of the time in SQLite building
//! text. On an SQLite store the same pages are built here, on a dedicated
//! thread with its own read-only connection: one statement stepped from the
//! first row to the last, each column read in place and appended to the page.
//! On PostgreSQL the same pages come from a binary `COPY` stream.
//!
//! A page is the values of its rows one after the other, each a big-endian
//! `i32` length and that many bytes: `-1` for `NULL`, `-2` for a value of
//! another type than its column takes, an integer as its eight big-endian
//! bytes, a text as its bytes. That is how PostgreSQL's binary `COPY` writes a
//! row's values, so its rows are copied into a page as they arrive, with no
//! value written again; [`Values`] reads them back, checking each text is
//! UTF-8 and each integer eight bytes, so a page that holds something
//! unexpected is told apart exactly as a page SQL joined as text would be.

use std::path::Path;

use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags};
use tokio::sync::mpsc;

use super::StoreError;

/// How a column of a page is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// A text column that may be `NULL`.
    Text(&'static str),
    /// An integer column.
    Integer(&'static str),
    /// A column the table does not have: always written as `NULL`.
    Absent,
}

impl Column {
    /// The expression a plain `SELECT` reads for this column.
    pub fn select(self) -> &'static str {
        match self {
            Column::Text(name) | Column::Integer(name) => name,
            Column::Absent => "NULL",
        }
    }
}

/// One page: how many rows it holds and their values, in the format above.
#[derive(Debug)]
pub struct Page {
    pub rows: i64,
    pub bytes: Vec<u8>,
}

/// The length that marks `NULL`.
const NULL: i32 = -1;
/// The length that marks a value of another type than its column takes.
const OTHER: i32 = -2;

/// Reads the values of a page back, in the order they were written; each read
/// is `None` where the page does not hold what is asked for (a value of
/// another type, a text that is not UTF-8, an integer that is not eight bytes,
/// or the end of the page).
#[derive(Debug, Clone)]
pub struct Values<'a> {
    rest: &'a [u8],
}

impl<'a> Values<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Values { rest: bytes }
    }

    /// The next value's bytes, `Some(None)` for `NULL`.
    fn value(&mut self) -> Option<Option<&'a [u8]>> {
        let (len, rest) = self.rest.split_first_chunk::<4>()?;
        let len = i32::from_be_bytes(*len);
        if len == NULL {
            self.rest = rest;
            return Some(None);
        }
        let (value, rest) = rest.split_at_checked(usize::try_from(len).ok()?)?;
        self.rest = rest;
        Some(Some(value))
    }
}

/// The values of a page's rows, read in the order they were written: one of
/// these pages ([`Values`]) or a page SQL joined as text (the verifier's
/// `Fields`). Each read is `None` wherever the page does not hold what is
/// asked for.
pub(crate) trait PageFields<'a> {
    /// An integer column: never `NULL`.
    fn integer(&mut self) -> Option<i64>;
    /// A text column that may be `NULL`.
    fn text(&mut self) -> Option<Option<&'a str>>;
    /// Whether every value has been read.
    fn done(&self) -> bool;

    /// A text column that is never `NULL`.
    fn required(&mut self) -> Option<&'a str> {
        self.text()?
    }
}

impl<'a> PageFields<'a> for Values<'a> {
    fn integer(&mut self) -> Option<i64> {
        let bytes = self.value()??;
        Some(i64::from_be_bytes(<[u8; 8]>::try_from(bytes).ok()?))
    }

    fn text(&mut self) -> Option<Option<&'a str>> {
        match self.value()? {
            None => Some(None),
            Some(bytes) => std::str::from_utf8(bytes).ok().map(Some),
        }
    }

    fn done(&self) -> bool {
        self.rest.is_empty()
    }
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
fn read_failed(error: &dyn std::fmt::Display) -> StoreError {
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
    let mut pager = Pager::new(rows_per_page);
    while let Some(row) = rows.next()? {
        for (index, column) in columns.iter().enumerate() {
            write_value(&mut pager.page.bytes, *column, row.get_ref(index)?);
        }
        if let Some(full) = pager.row_done()
            && sender.blocking_send(Ok(full)).is_err()
        {
            return Ok(());
        }
    }
    if let Some(page) = pager.last() {
        let _ = sender.blocking_send(Ok(page));
    }
    Ok(())
}

/// The signature a binary `COPY` stream opens with.
const COPY_SIGNATURE: &[u8] = b"PGCOPY\n\xff\r\n\0";

/// Starts `statement` (a `COPY (SELECT …) TO STDOUT (FORMAT binary)` of
/// `columns`, in their order: each text column cast to `text`, each integer
/// column to `int8`) on a connection of `pool`, on a task of its own, and
/// sends its rows in pages of `rows_per_page` as [`spawn`] does. PostgreSQL
/// then writes each row once, in its own binary form, with no expression per
/// column and no aggregate, and streams the next rows while this side checks
/// the last. The task stops at the last row, at the first error (sent as the
/// last item), or when the receiver is dropped: the connection, with the rest
/// of the stream unread, is then closed rather than given back.
pub(crate) fn copy_out(
    pool: sqlx::PgPool,
    statement: String,
    columns: Vec<Column>,
    rows_per_page: usize,
) -> mpsc::Receiver<Result<Page, StoreError>> {
    let (sender, receiver) = mpsc::channel(AHEAD);
    tokio::spawn(async move {
        if let Err(error) = stream(&pool, &statement, &columns, rows_per_page, &sender).await {
            let _ = sender.send(Err(read_failed(&error))).await;
        }
    });
    receiver
}

/// Reads the copy stream of [`copy_out`] into pages; returns early, without
/// an error, once nobody receives.
async fn stream(
    pool: &sqlx::PgPool,
    statement: &str,
    columns: &[Column],
    rows_per_page: usize,
    sender: &mpsc::Sender<Result<Page, StoreError>>,
) -> Result<(), String> {
    use futures_util::StreamExt;
    let mut connection = pool.acquire().await.map_err(|e| e.to_string())?;
    let mut chunks = connection
        .copy_out_raw(statement)
        .await
        .map_err(|e| e.to_string())?;
    let mut tuples = Tuples::default();
    let mut pager = Pager::new(rows_per_page);
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| e.to_string())?;
        let mut full = Vec::new();
        tuples.read(&chunk, columns, &mut pager, &mut full)?;
        for page in full {
            if sender.send(Ok(page)).await.is_err() {
                drop(chunks);
                // The stream was not read to its end: the connection cannot
                // serve another statement until it is, so it is closed.
                drop(connection.detach());
                return Ok(());
            }
        }
    }
    drop(chunks);
    if !tuples.ended {
        return Err("the copy stream ended before its trailer".into());
    }
    if let Some(page) = pager.last() {
        let _ = sender.send(Ok(page)).await;
    }
    Ok(())
}

/// The reading state of a binary copy stream: the bytes of a row cut across
/// two chunks are kept until the rest arrives.
#[derive(Default)]
struct Tuples {
    pending: Vec<u8>,
    header: bool,
    ended: bool,
}

/// What [`tuple`] made of the bytes at hand.
enum Step {
    /// A whole row, written into the page: how many bytes it took.
    Row(usize),
    /// The trailer that ends the stream.
    Trailer,
    /// The row goes on in the next chunk.
    More,
}

impl Tuples {
    /// Writes every whole row of `chunk` (after what was pending) into
    /// `pager`, pushing each page filled onto `full`.
    fn read(
        &mut self,
        chunk: &[u8],
        columns: &[Column],
        pager: &mut Pager,
        full: &mut Vec<Page>,
    ) -> Result<(), String> {
        if self.ended {
            return Err("the copy stream goes on after its trailer".into());
        }
        self.pending.extend_from_slice(chunk);
        let mut at = 0;
        if !self.header {
            match header_len(&self.pending)? {
                Some(len) => {
                    at = len;
                    self.header = true;
                }
                None => return Ok(()),
            }
        }
        loop {
            match tuple(&self.pending[at..], columns, &mut pager.page.bytes)? {
                Step::More => break,
                Step::Trailer => {
                    at += 2;
                    self.ended = true;
                    break;
                }
                Step::Row(len) => {
                    at += len;
                    full.extend(pager.row_done());
                }
            }
        }
        if self.ended && at < self.pending.len() {
            return Err("the copy stream goes on after its trailer".into());
        }
        self.pending.drain(..at);
        Ok(())
    }
}

/// The length of the binary copy header at the start of `bytes`, `None` until
/// it has all arrived.
fn header_len(bytes: &[u8]) -> Result<Option<usize>, String> {
    let fixed = COPY_SIGNATURE.len() + 8;
    let Some(head) = bytes.get(..fixed) else {
        return Ok(None);
    };
    if !head.starts_with(COPY_SIGNATURE) {
        return Err("the copy stream does not open with the binary signature".into());
    }
    let extension = be_u32(&head[fixed - 4..]);
    let len = fixed + usize::try_from(extension).map_err(|e| e.to_string())?;
    Ok((bytes.len() >= len).then_some(len))
}

fn be_u32(bytes: &[u8]) -> u32 {
    let mut four = [0u8; 4];
    four.copy_from_slice(&bytes[..4]);
    u32::from_be_bytes(four)
}

/// Reads one row of a binary copy stream from the start of `bytes` and
/// appends its values, as they are, to `page`: `columns` says only how many
/// there are, since the stream writes each in the page's own format (an `int8`
/// as eight bytes, a `text` as its bytes). A row not yet whole leaves `page` as
/// it was.
fn tuple(bytes: &[u8], columns: &[Column], page: &mut Vec<u8>) -> Result<Step, String> {
    let Some(count) = bytes.get(..2) else {
        return Ok(Step::More);
    };
    let count = i16::from_be_bytes([count[0], count[1]]);
    if count == -1 {
        return Ok(Step::Trailer);
    }
    if usize::try_from(count).ok() != Some(columns.len()) {
        return Err(format!(
            "a copied row of {count} columns where {} were asked for",
            columns.len()
        ));
    }
    let mut at = 2;
    for _ in columns {
        let Some(len) = bytes.get(at..at + 4) else {
            return Ok(Step::More);
        };
        let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
        at += 4;
        match usize::try_from(len) {
            Ok(len) if bytes.len() < at + len => return Ok(Step::More),
            Ok(len) => at += len,
            Err(_) if len == NULL => {}
            Err(_) => return Err(format!("a copied value of length {len}")),
        }
    }
    page.extend_from_slice(&bytes[2..at]);
    Ok(Step::Row(at))
}

/// Appends the length of a value, then the value.
fn push_value(page: &mut Vec<u8>, value: &[u8]) {
    let len = i32::try_from(value.len()).unwrap_or(OTHER);
    page.extend_from_slice(&len.to_be_bytes());
    if len >= 0 {
        page.extend_from_slice(value);
    }
}

/// Appends one value SQLite read as the page format writes a `column` of its
/// kind; the reader checks that a text is UTF-8.
fn write_value(page: &mut Vec<u8>, column: Column, value: ValueRef<'_>) {
    match (column, value) {
        (Column::Integer(_), ValueRef::Integer(n)) => push_value(page, &n.to_be_bytes()),
        (Column::Text(_), ValueRef::Text(bytes)) => push_value(page, bytes),
        (Column::Text(_) | Column::Absent, ValueRef::Null) => {
            page.extend_from_slice(&NULL.to_be_bytes())
        }
        _ => page.extend_from_slice(&OTHER.to_be_bytes()),
    }
}

/// Pages filled row by row and handed on once full.
struct Pager {
    page: Page,
    rows_per_page: i64,
    capacity: usize,
}

impl Pager {
    fn new(rows_per_page: usize) -> Self {
        Pager {
            page: Page {
                rows: 0,
                bytes: Vec::new(),
            },
            rows_per_page: i64::try_from(rows_per_page).unwrap_or(i64::MAX),
            capacity: 0,
        }
    }

    /// Counts the row just written: the page, once it is full.
    fn row_done(&mut self) -> Option<Page> {
        self.page.rows += 1;
        if self.page.rows < self.rows_per_page {
            return None;
        }
        self.capacity = self.capacity.max(self.page.bytes.len());
        Some(std::mem::replace(
            &mut self.page,
            Page {
                rows: 0,
                bytes: Vec::with_capacity(self.capacity),
            },
        ))
    }

    /// The last page, unless it is empty.
    fn last(self) -> Option<Page> {
        (self.page.rows > 0).then_some(self.page)
    }
}

#[cfg(test)]
mod tests {
    use super::{Column, PageFields, Values, spawn};

    /// A page as text, one value after another: an integer's digits and `,`
    /// (`!,` for anything else), `-` for a `NULL` text, a text's length, `:`
    /// and the text, `!` for a value of another type or bytes that are not
    /// UTF-8; so what each row holds reads at a glance.
    fn shown(page: &[u8], columns: &[Column]) -> String {
        let mut out = String::new();
        let mut rest = page;
        while !rest.is_empty() {
            for column in columns {
                let (len, after) = rest.split_first_chunk::<4>().expect("a length");
                rest = after;
                let value = usize::try_from(i32::from_be_bytes(*len)).ok().map(|n| {
                    let (value, after) = rest.split_at(n);
                    rest = after;
                    value
                });
                match (column, value) {
                    (Column::Integer(_), Some(bytes)) if bytes.len() == 8 => {
                        let n = i64::from_be_bytes(bytes.try_into().expect("eight"));
                        out.push_str(&format!("{n},"));
                    }
                    (Column::Integer(_), _) => out.push_str("!,"),
                    (_, None) if i32::from_be_bytes(*len) == -1 => out.push('-'),
                    (_, Some(bytes)) => match std::str::from_utf8(bytes) {
                        Ok(text) => out.push_str(&format!("{}:{text}", text.len())),
                        Err(_) => out.push('!'),
                    },
                    (_, None) => out.push('!'),
                }
            }
        }
        out
    }

    /// The reader gives back what was written, and `None` wherever the page
    /// holds another type, an integer of another width, a text that is not
    /// UTF-8, or ends early.
    #[test]
    fn values_read_back_what_the_page_holds() {
        let mut page = Vec::new();
        super::push_value(&mut page, &7i64.to_be_bytes());
        page.extend_from_slice(&super::NULL.to_be_bytes());
        super::push_value(&mut page, "é:x".as_bytes());
        let mut values = Values::new(&page);
        assert_eq!(values.integer(), Some(7));
        assert_eq!(values.text(), Some(None));
        assert_eq!(values.text(), Some(Some("é:x")));
        assert!(values.done());
        assert_eq!(values.text(), None);

        let read = |bytes: &[u8], integer: bool| {
            let mut page = Vec::new();
            super::push_value(&mut page, bytes);
            let mut values = Values::new(&page);
            if integer {
                values.integer().map(|n| n.to_string())
            } else {
                values.text().map(|t| t.unwrap_or("NULL").to_owned())
            }
        };
        assert_eq!(read(&[0, 1], true), None);
        assert_eq!(read(&[0xff], false), None);
        assert_eq!(Values::new(&super::OTHER.to_be_bytes()).text(), None);
        assert_eq!(Values::new(&super::NULL.to_be_bytes()).integer(), None);
        // A length past the end of the page.
        assert_eq!(Values::new(&[0, 0, 0, 9, b'a']).text(), None);
    }

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
        let mut pages = spawn(&path, sql, Some(1), columns.clone(), 2).expect("reader");
        let mut got = Vec::new();
        while let Some(page) = pages.recv().await {
            let page = page.expect("page");
            got.push((page.rows, shown(&page.bytes, &columns)));
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

    /// A binary copy stream of `rows` (each value `None` for NULL, else its
    /// bytes) as PostgreSQL writes one, with a header extension of `extension`
    /// bytes.
    fn copy_stream(rows: &[Vec<Option<&[u8]>>], extension: usize) -> Vec<u8> {
        let mut out = super::COPY_SIGNATURE.to_vec();
        out.extend(0u32.to_be_bytes());
        out.extend(u32::try_from(extension).expect("small").to_be_bytes());
        out.extend(std::iter::repeat_n(7u8, extension));
        for row in rows {
            out.extend(i16::try_from(row.len()).expect("few").to_be_bytes());
            for value in row {
                match value {
                    None => out.extend((-1i32).to_be_bytes()),
                    Some(bytes) => {
                        out.extend(i32::try_from(bytes.len()).expect("short").to_be_bytes());
                        out.extend_from_slice(bytes);
                    }
                }
            }
        }
        out.extend((-1i16).to_be_bytes());
        out
    }

    /// Reads `stream` cut into chunks of `cut` bytes: the pages, or the error.
    fn read_copy(
        stream: &[u8],
        cut: usize,
        columns: &[Column],
    ) -> Result<Vec<(i64, String)>, String> {
        let mut tuples = super::Tuples::default();
        let mut pager = super::Pager::new(2);
        let mut full = Vec::new();
        for chunk in stream.chunks(cut) {
            tuples.read(chunk, columns, &mut pager, &mut full)?;
        }
        if !tuples.ended {
            return Err("no trailer".into());
        }
        full.extend(pager.last());
        Ok(full
            .into_iter()
            .map(|p| (p.rows, shown(&p.bytes, columns)))
            .collect())
    }

    /// A copy stream read in chunks of any size, a row or the header cut
    /// anywhere, gives the pages the file reader gives for the same values.
    #[test]
    fn a_copy_stream_cut_anywhere_gives_the_same_pages() {
        let columns = [
            Column::Integer("k"),
            Column::Text("a"),
            Column::Text("b"),
            Column::Absent,
        ];
        let one = 1i64.to_be_bytes();
        let minus = (-9i64).to_be_bytes();
        let rows = vec![
            vec![Some(&one[..]), Some("é:x".as_bytes()), None, None],
            vec![Some(&minus[..]), Some(&b""[..]), Some(&b"y"[..]), None],
            vec![None, Some(&[0xffu8][..]), Some(&[1u8, 2][..]), None],
        ];
        let want = vec![
            (2, "1,4:é:x---9,0:1:y-".to_owned()),
            (1, "!,!2:\u{1}\u{2}-".to_owned()),
        ];
        for extension in [0, 3] {
            let stream = copy_stream(&rows, extension);
            for cut in 1..=stream.len() {
                assert_eq!(
                    read_copy(&stream, cut, &columns),
                    Ok(want.clone()),
                    "cut {cut}"
                );
            }
        }
        // An integer of another width is a value of another type.
        let short = vec![vec![Some(&[0u8, 1][..]), None, None, None]];
        assert_eq!(
            read_copy(&copy_stream(&short, 0), 5, &columns),
            Ok(vec![(1, "!,---".to_owned())])
        );
    }

    #[test]
    fn a_copy_stream_that_is_not_whole_or_not_the_asked_shape_is_refused() {
        let columns = [Column::Text("a")];
        let stream = copy_stream(&[vec![Some(&b"x"[..])]], 0);
        // No trailer.
        assert!(read_copy(&stream[..stream.len() - 2], 4, &columns).is_err());
        // Bytes after the trailer.
        let mut longer = stream.clone();
        longer.extend([0, 1]);
        assert!(read_copy(&longer, 4, &columns).is_err());
        // Another signature.
        let mut other = stream.clone();
        other[0] = b'Q';
        assert!(read_copy(&other, 64, &columns).is_err());
        // A row of two columns where one was asked for.
        let two = copy_stream(&[vec![Some(&b"x"[..]), None]], 0);
        assert!(read_copy(&two, 64, &columns).is_err());
    }

    #[test]
    fn a_file_that_cannot_be_opened_leaves_the_read_to_the_pool() {
        let dir = tempfile::tempdir().expect("temp dir");
        let missing = dir.path().join("none").join("missing.db");
        assert!(spawn(&missing, "SELECT 1".into(), None, vec![], 1).is_none());
    }
}
