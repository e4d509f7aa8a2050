//! Verification: the walk over the audit chain, the replay of every recorded
//! decision through the rules ([`crate::core::lawful`]), then the comparison of
//! what is stored — each operation's state, owner, version and the columns a
//! decision reads, every record against its `record_hash`, the records, the
//! dependencies, contracts and kept metric facts against what the chain added,
//! the grants, the autonomy levels and drill results — with what the chain
//! says, so that an edit made behind the store's back, or a correctly hashed
//! row recording a decision the rules refuse, is found wherever it was made.
//!
//! The audit rows, the operations and the records are read in keyset pages of
//! [`PAGE_ROWS`] rows, and each row is checked from slices of its page. A page
//! that holds something other than text where text belongs is read again row
//! by row, so such a row is reported exactly as a row-by-row read reports it.
//!
//! On an SQLite store the pages are built on threads of their own, each with
//! a read-only connection to the file ([`crate::store::pages`]), one statement
//! stepped from the first row to the last: SQLite then only reads, and the
//! pages arrive while the previous ones are checked. On PostgreSQL the audit
//! rows and the operations come as one binary `COPY` stream each, whose rows
//! are copied into pages of the same format as they arrive, and the records
//! are hashed by the database itself ([`Backend::DIGEST`]): only a record that
//! does not match its `record_hash` crosses the connection. Measured on a
//! million operations, that took `audit verify` from 20.6 s to about 7 s, and
//! keeping the stream's own value format in the page (rather than writing each
//! value again as text to be parsed again) to about 6 s. Where neither source
//! can be had, SQL joins a page's columns into one text value (see [`field`]),
//! so the driver copies one value per page instead of a dozen per row.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use futures_util::TryStreamExt;
use futures_util::future::join;
use sqlx::{AssertSqlSafe, Row};
use tokio::task::JoinHandle;

use super::{AUDIT_COLUMNS, Backend, db};
use crate::core::audit::{ChainStatus, ChainVerifier, ENCODING, hashes_to};
use crate::core::ids::Sha256;
use crate::core::lawful::{self, StatesBySeq, Surroundings};
use crate::core::ledger::{Divergence, Ledger, NAMED_TABLES, Stored};
use crate::core::model::State;
use crate::store::StoreError;
use crate::store::pages::{self, Column, Page, PageFields};
use crate::store::plan::codec::{self, AuditColumns, CreatedFacts};

/// A stored table whose records carry a `record_hash` of their `wire`.
struct RecordTable {
    table: &'static str,
    /// The text key the pages follow and a report names.
    key: &'static str,
    /// The integer second key, for a table keyed by two columns; a report names
    /// the record `key#index`.
    index: Option<&'static str>,
    /// The operation the record belongs to, for a table whose records have one.
    operation: Option<&'static str>,
}

const RECORD_TABLES: &[RecordTable] = &[
    RecordTable {
        table: "contracts",
        key: "tool",
        index: None,
        operation: None,
    },
    RecordTable {
        table: "attempts",
        key: "id",
        index: None,
        operation: Some("operation"),
    },
    RecordTable {
        table: "observations",
        key: "id",
        index: None,
        operation: Some("operation"),
    },
    RecordTable {
        table: "items",
        key: "operation",
        index: Some("idx"),
        operation: Some("operation"),
    },
    RecordTable {
        table: "expectations",
        key: "operation",
        index: None,
        operation: Some("operation"),
    },
];

impl RecordTable {
    /// The key columns in the order the pages follow.
    fn keys(&self) -> String {
        match self.index {
            Some(index) => format!("{}, {index}", self.key),
            None => self.key.to_owned(),
        }
    }

    /// The columns of a page of this table, as [`StoredRecord::read`] reads them.
    fn columns(&self) -> Vec<Column> {
        let mut columns = vec![Column::Text(self.key)];
        columns.extend(self.index.map(Column::Integer));
        columns.push(self.operation.map_or(Column::Absent, Column::Text));
        columns.extend([Column::Text("wire"), Column::Text("record_hash")]);
        columns
    }

    /// The SQL of the name a report gives a record.
    fn record_key(&self) -> String {
        match self.index {
            Some(index) => format!("{} || '#' || CAST({index} AS TEXT)", self.key),
            None => self.key.to_owned(),
        }
    }

    /// The name a report gives the record with these keys.
    fn name(&self, key: &str, index: Option<i64>) -> String {
        match index {
            Some(index) => format!("{key}#{index}"),
            None => key.to_owned(),
        }
    }
}

/// What a record table's scan in place ([`pages::visit`]) stops at.
enum Visited {
    /// The first record whose wire does not hash to its `record_hash`.
    Altered(Altered),
    /// A record with a value of another type than its column's: the table is
    /// read again through the pool, row by row.
    Unreadable,
}

/// Checks one record of `table` in place, its columns in the order of
/// [`RecordTable::columns`]: `None` when its wire hashes to its
/// `record_hash`. Only a record that does not is read further, so the wire is
/// hashed as stored and never copied: one that hashes holds the very bytes
/// ingest hashed.
fn visit_record(row: &rusqlite::Row<'_>, table: &'static RecordTable) -> Option<Visited> {
    use rusqlite::types::ValueRef;
    let text = |index: usize| match row.get_ref(index) {
        Ok(ValueRef::Text(bytes)) => std::str::from_utf8(bytes).ok().map(Some),
        Ok(ValueRef::Null) => Some(None),
        _ => None,
    };
    let wire_at = 2 + usize::from(table.index.is_some());
    if let (Ok(ValueRef::Text(wire)), Ok(ValueRef::Text(hash))) =
        (row.get_ref(wire_at), row.get_ref(wire_at + 1))
        && std::str::from_utf8(hash).is_ok_and(|hash| Sha256::is_digest_of(hash, wire))
    {
        return None;
    }
    // The wire or hash no longer the text that was hashed (another type, or
    // bytes that are not UTF-8) is an altered record like any other; only a
    // key that cannot be read sends the table to the row-by-row read.
    let read = || -> Option<Altered> {
        let key = text(0)??;
        let index = match table.index {
            Some(_) => match row.get_ref(1) {
                Ok(ValueRef::Integer(n)) => Some(n),
                _ => return None,
            },
            None => None,
        };
        let operation = text(wire_at - 1)?;
        Some(Altered {
            table: table.table,
            name: table.name(key, index),
            operation: operation.map(str::to_owned),
        })
    };
    Some(read().map_or(Visited::Unreadable, Visited::Altered))
}

/// A record whose stored wire no longer matches its `record_hash`: its table,
/// the name a report gives it and the operation it belongs to.
struct Altered {
    table: &'static str,
    name: String,
    operation: Option<String>,
}

impl Altered {
    /// The divergence a report names: the last row of the record's operation.
    fn divergence(&self, ledger: &Ledger) -> Divergence {
        Divergence {
            seq: ledger.last_seq_of(self.operation.as_deref().unwrap_or_default()),
            reason: format!(
                "{} {}: its stored record no longer matches its record_hash",
                self.table, self.name
            ),
        }
    }
}

/// Rows per page of the walk and of the comparison.
const PAGE_ROWS: i64 = 1024;

/// The SQL that writes text column `column` into a page: `-` for `NULL`, `!`
/// for a value that is not text, else its length in bytes, `:` and the text.
/// It is two arguments of the page row's `concat`, the text on its own (`NULL`
/// adds nothing), so the value is copied once.
fn field<DB: Backend>(column: &str) -> String {
    let is_text = DB::IS_TEXT.replace("{c}", column);
    format!(
        "CASE WHEN {column} IS NULL THEN '-' WHEN {is_text} \
         THEN CAST(octet_length({column}) AS TEXT) || ':' ELSE '!' END, \
         CASE WHEN {is_text} THEN {column} END"
    )
}

/// The SQL that writes integer column `column` into a page: its digits and
/// `,`, or `!,` for `NULL` or a value that is not an integer (two arguments of
/// the row's `concat`, as [`field`]).
fn integer<DB: Backend>(column: &str) -> String {
    let is_integer = DB::IS_INTEGER.replace("{c}", column);
    format!(
        "CASE WHEN {column} IS NULL THEN '!' WHEN {is_integer} \
         THEN CAST({column} AS TEXT) ELSE '!' END, ','"
    )
}

/// The SQL that writes `column` into a page row: [`field`], [`integer`], or
/// the `NULL` marker for a column the table does not have.
fn page_column<DB: Backend>(column: &Column) -> String {
    match *column {
        Column::Text(name) => field::<DB>(name),
        Column::Integer(name) => integer::<DB>(name),
        Column::Absent => "'-'".to_owned(),
    }
}

/// The pages of `table` in the order of `keys`, from the first row or from
/// `from` on (`from.0` a condition on the keys with `$1`, standing for the
/// integer `from.1`), read on a task of their own: straight from the store's
/// file where its backend allows ([`Backend::paged_file`]), else streamed by
/// the database ([`Backend::streamed_pages`]); `None` where they are built by
/// SQL through the pool.
fn own_pages<DB: Backend>(
    pool: &sqlx::Pool<DB>,
    location: &str,
    table: &str,
    keys: &str,
    columns: &[Column],
    from: Option<(&str, i64)>,
) -> Option<tokio::sync::mpsc::Receiver<Result<Page, StoreError>>> {
    let rows = usize::try_from(PAGE_ROWS).unwrap_or(1024);
    let Some(path) = DB::paged_file(location) else {
        // An integer written into the condition: a stream takes no parameters.
        let condition = from.map(|(c, v)| c.replace("$1", &v.to_string()));
        return DB::streamed_pages(pool, table, condition.as_deref(), keys, columns, rows);
    };
    let select: Vec<&str> = columns.iter().map(|c| c.select()).collect();
    let condition = from.map(|(c, _)| format!("WHERE {c}")).unwrap_or_default();
    let sql = format!(
        "SELECT {} FROM {table} {condition} ORDER BY {keys}",
        select.join(", ")
    );
    pages::spawn(path, sql, from.map(|(_, v)| v), columns.to_vec(), rows)
}

/// A page of `table`: the number of rows (`n`) and their `row`s joined in the
/// order of `keys` (`page`), from the rows after the key values `after` names
/// (a condition on `keys`), or from the first row. Each row is one `concat`,
/// which writes it once, where a chain of `||` copies it again at each column.
fn page_sql<DB: Backend>(table: &str, keys: &str, row: &[String], after: Option<&str>) -> String {
    let after = after.map(|a| format!("WHERE {a}")).unwrap_or_default();
    let order = if DB::AGGREGATES_IN_ORDER {
        String::new()
    } else {
        format!(" ORDER BY {keys}")
    };
    format!(
        "SELECT count(*) AS n, string_agg(r, ''{order}) AS page FROM \
         (SELECT {keys}, concat({}) AS r FROM {table} {after} ORDER BY {keys} LIMIT {PAGE_ROWS}) AS rows_of_page",
        row.join(", ")
    )
}

/// Whether `keys` rise strictly: a page whose rows are not in key order (see
/// [`Backend::AGGREGATES_IN_ORDER`]) is read again row by row.
fn rising<K: PartialOrd>(keys: impl IntoIterator<Item = K>) -> bool {
    let mut last = None;
    keys.into_iter().all(|key| {
        let rises = last.as_ref().is_none_or(|l| *l < key);
        last = Some(key);
        rises
    })
}

/// Reads `rows` rows of `fields` with `read`: `None` when the page does not
/// hold exactly that many.
fn read_rows<'a, F: PageFields<'a>, T>(
    mut fields: F,
    rows: i64,
    mut read: impl FnMut(&mut F) -> Option<T>,
) -> Option<Vec<T>> {
    let mut out = Vec::with_capacity(usize::try_from(rows).ok()?);
    while !fields.done() {
        out.push(read(&mut fields)?);
    }
    (i64::try_from(out.len()).ok()? == rows).then_some(out)
}

/// The rows of one of the store's own pages ([`own_pages`]).
fn page_rows<'a, T>(
    page: &'a Page,
    read: impl FnMut(&mut pages::Values<'a>) -> Option<T>,
) -> Option<Vec<T>> {
    read_rows(pages::Values::new(&page.bytes), page.rows, read)
}

/// The fields of a page SQL joined as text, read in the order SQL wrote them
/// (see [`field`] and [`integer`]).
struct Fields<'a> {
    rest: &'a str,
}

impl<'a> PageFields<'a> for Fields<'a> {
    fn integer(&mut self) -> Option<i64> {
        let (digits, rest) = self.rest.split_once(',')?;
        self.rest = rest;
        digits.parse().ok()
    }

    fn text(&mut self) -> Option<Option<&'a str>> {
        if let Some(rest) = self.rest.strip_prefix('-') {
            self.rest = rest;
            return Some(None);
        }
        let (len, rest) = self.rest.split_once(':')?;
        let len: usize = len.parse().ok()?;
        let value = rest.get(..len)?;
        self.rest = rest.get(len..)?;
        Some(Some(value))
    }

    fn done(&self) -> bool {
        self.rest.is_empty()
    }
}

impl<'a> Fields<'a> {
    /// Reads `rows` rows of the text `page` with `read`.
    fn rows<T>(
        page: &'a str,
        rows: i64,
        read: impl FnMut(&mut Self) -> Option<T>,
    ) -> Option<Vec<T>> {
        read_rows(Fields { rest: page }, rows, read)
    }
}

/// One audit row from a page.
fn audit_columns<'a>(fields: &mut impl PageFields<'a>) -> Option<AuditColumns<&'a str>> {
    Some(AuditColumns {
        seq: fields.integer()?,
        encoding: fields.integer()?,
        operation: fields.required()?,
        action: fields.required()?,
        from_state: fields.text()?,
        to_state: fields.text()?,
        by_identity: fields.required()?,
        role: fields.required()?,
        policy: fields.text()?,
        on_behalf_of: fields.text()?,
        rationale: fields.text()?,
        evidence: fields.required()?,
        at: fields.required()?,
        prev_hash: fields.required()?,
        hash: fields.required()?,
    })
}

/// The columns of an audit page, as [`audit_columns`] reads them.
const AUDIT_PAGE: &[Column] = &[
    Column::Integer("seq"),
    Column::Integer("encoding"),
    Column::Text("operation"),
    Column::Text("action"),
    Column::Text("from_state"),
    Column::Text("to_state"),
    Column::Text("by_identity"),
    Column::Text("role"),
    Column::Text("policy"),
    Column::Text("on_behalf_of"),
    Column::Text("rationale"),
    Column::Text("evidence"),
    Column::Text("at"),
    Column::Text("prev_hash"),
    Column::Text("hash"),
];

/// The page of audit rows from `seq >= $1`, written as [`audit_columns`] reads it.
fn audit_page_sql<DB: Backend>() -> String {
    let row: Vec<String> = AUDIT_PAGE.iter().map(page_column::<DB>).collect();
    page_sql::<DB>("audit", "seq", &row, Some("seq >= $1"))
}

/// The divergence of an operation whose stored record is no longer the one
/// its `record_hash` was taken of.
fn altered_operation(ledger: &Ledger, id: &str) -> Divergence {
    Divergence {
        seq: ledger.last_seq_of(id),
        reason: format!("operation {id}: its stored record no longer matches its record_hash"),
    }
}

/// One stored operation, as the comparison reads it.
struct StoredOperation<'a> {
    id: &'a str,
    state: &'a str,
    owner: &'a str,
    version: i64,
    wire: &'a str,
    record_hash: Option<&'a str>,
    /// The columns a decision reads besides state, owner and version, as
    /// [`codec::OPERATION_FACTS`] joins them.
    facts: &'a str,
}

/// What the comparison of the operations gathers for the checks after it.
#[derive(Default)]
struct Tally {
    /// How many dependencies the operations' records name.
    dependencies: u64,
    /// Each tool an operation names, with the least such operation.
    tools: BTreeMap<String, String>,
    /// Each tool's tenants: those of its operations.
    tenants: BTreeMap<String, BTreeSet<String>>,
}

/// The names of the fields of [`CreatedFacts::columns`], in its order.
const FACT_NAMES: [&str; 7] = [
    "risk",
    "max_attempts",
    "deadline",
    "queue flag",
    "tool",
    "parent",
    "tenant",
];

impl<'a> StoredOperation<'a> {
    fn read(fields: &mut impl PageFields<'a>) -> Option<Self> {
        Some(StoredOperation {
            id: fields.required()?,
            state: fields.required()?,
            owner: fields.required()?,
            version: fields.integer()?,
            wire: fields.required()?,
            record_hash: fields.text()?,
            facts: fields.required()?,
        })
    }

    /// Compares the operation with what `ledger` says of it.
    fn check(&self, ledger: &Ledger, tally: &mut Tally) -> Result<(), Divergence> {
        let id = self.id;
        let diverged = |reason: String| {
            Err(Divergence {
                seq: ledger.last_seq_of(id),
                reason,
            })
        };
        // A record whose hash checks holds the bytes ingest stored, which
        // decoded then: only the fields compared are read. One without a hash
        // is decoded whole.
        let decoded;
        let created = match self.record_hash {
            Some(h) if !Sha256::is_digest_of(h, self.wire.as_bytes()) => {
                return Err(altered_operation(ledger, id));
            }
            Some(_) => codec::created_facts(self.wire),
            None => match codec::operation(self.wire) {
                Ok(op) => {
                    decoded = op;
                    Ok(CreatedFacts::of(&decoded))
                }
                Err(e) => Err(e),
            },
        };
        let Ok(created) = created else {
            return diverged(format!("operation {id}: its stored record does not parse"));
        };
        let created_owner = &created.owner;
        let Ok(state) = codec::parse_state(self.state) else {
            return diverged(format!(
                "operation {id}: unknown stored state {:?}",
                self.state
            ));
        };
        ledger.check(&Stored {
            id,
            state,
            owner: self.owner,
            created_owner,
            version: self.version,
        })?;
        // The queue flag the chain leaves: a held state, or a held dependency.
        let queued = state.is_held()
            || created
                .depends_on
                .iter()
                .any(|d| ledger.state_of(d).is_some_and(State::is_held));
        let Some(expected) = created.columns(queued) else {
            return diverged(format!("operation {id}: its stored record does not parse"));
        };
        if expected != self.facts {
            let stored: Vec<&str> = self.facts.splitn(FACT_NAMES.len(), '|').collect();
            let chain: Vec<&str> = expected.splitn(FACT_NAMES.len(), '|').collect();
            let differs = FACT_NAMES
                .iter()
                .enumerate()
                .find(|(i, _)| stored.get(*i) != chain.get(*i))
                .map_or(("columns", self.facts, expected.as_str()), |(i, name)| {
                    (
                        *name,
                        stored.get(i).copied().unwrap_or("nothing"),
                        chain.get(i).copied().unwrap_or("nothing"),
                    )
                });
            return diverged(format!(
                "operation {id}: the stored {} is {} but its record and audit rows say {}",
                differs.0, differs.1, differs.2
            ));
        }
        tally.dependencies += u64::try_from(created.depends_on.len()).unwrap_or(0);
        // A tool needs a stored contract once any of its operations was
        // created with one; one created where contracts are optional and its
        // tool had none says so on its ingest row.
        if !ledger.uncontracted(id) && !tally.tools.contains_key(created.tool.as_ref()) {
            tally.tools.insert(created.tool.to_string(), id.to_owned());
        }
        match tally.tenants.get_mut(created.tool.as_ref()) {
            Some(tenants) => {
                if !tenants.contains(created.tenant.as_ref()) {
                    tenants.insert(created.tenant.to_string());
                }
            }
            None => {
                tally.tenants.insert(
                    created.tool.to_string(),
                    BTreeSet::from([created.tenant.to_string()]),
                );
            }
        }
        Ok(())
    }
}

/// The columns of a page of operations, as [`StoredOperation::read`] reads them.
const OPERATION_PAGE: &[Column] = &[
    Column::Text("id"),
    Column::Text("state"),
    Column::Text("owner"),
    Column::Integer("version"),
    Column::Text("wire"),
    Column::Text("record_hash"),
    Column::Text(codec::OPERATION_FACTS),
];

/// The page of operations after `id > $1` (or the first, without `after`),
/// written as [`StoredOperation::read`] reads it.
fn operation_page_sql<DB: Backend>(after: bool) -> String {
    let row: Vec<String> = OPERATION_PAGE.iter().map(page_column::<DB>).collect();
    page_sql::<DB>("operations", "id", &row, after.then_some("id > $1"))
}

/// One stored record of a [`RecordTable`]: its keys, its operation, its wire
/// and its record hash.
struct StoredRecord<'a> {
    key: &'a str,
    index: Option<i64>,
    operation: Option<&'a str>,
    wire: &'a str,
    record_hash: &'a str,
}

impl<'a> StoredRecord<'a> {
    fn read(fields: &mut impl PageFields<'a>, indexed: bool) -> Option<Self> {
        Some(StoredRecord {
            key: fields.required()?,
            index: if indexed {
                Some(fields.integer()?)
            } else {
                None
            },
            operation: fields.text()?,
            wire: fields.required()?,
            record_hash: fields.required()?,
        })
    }
}

/// The page of `table`'s records after the keys bound as `$1` (and `$2`), or
/// the first, written as [`StoredRecord::read`] reads it.
fn record_page_sql<DB: Backend>(table: &RecordTable, after: bool) -> String {
    let row: Vec<String> = table.columns().iter().map(page_column::<DB>).collect();
    let condition = match table.index {
        Some(index) => format!("({}, {index}) > ($1, $2)", table.key),
        None => format!("{} > $1", table.key),
    };
    page_sql::<DB>(
        table.table,
        &table.keys(),
        &row,
        after.then_some(condition.as_str()),
    )
}

/// A comparison that needs nothing from the chain (the records' hashes,
/// [`super::SqlStore::first_altered`]; the tables' counts,
/// [`super::SqlStore::counted`]) running on a task of its own beside the
/// walk; dropped unfinished, when the walk breaks first, it is stopped.
struct Beside<T>(JoinHandle<Result<T, StoreError>>);

impl<T> Beside<T> {
    async fn result(mut self) -> Result<T, StoreError> {
        (&mut self.0)
            .await
            .map_err(|e| StoreError::Other(format!("the record comparison stopped: {e}")))?
    }
}

impl<T> Drop for Beside<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What the store holds of the tables the chain counts: the records of each
/// of [`NAMED_TABLES`], the dependencies, the contracts' tools, and the kept
/// metric facts' reach (see `kept_coverage`).
struct Counted {
    tables: [u64; 4],
    dependencies: u64,
    contracts: HashSet<String>,
    coverage: (u64, u64, u64),
}

/// Checks one audit row and feeds it to `verifier` and `ledger`.
fn push_columns(
    columns: &AuditColumns<&str>,
    verifier: &mut ChainVerifier,
    ledger: Option<&mut Ledger>,
) -> Result<(), ChainStatus> {
    let checked = columns.check().map_err(|e| ChainStatus::Broken {
        seq: columns.seq,
        reason: format!("the row cannot be read: {e}"),
    })?;
    let view = columns.view(&checked);
    verifier.push_view(&view, columns.prev_hash, columns.hash)?;
    if let Some(ledger) = ledger {
        ledger.push_view(&view);
    }
    Ok(())
}

shared! {
    impl {
        /// Walks the chain, then compares the store with it. The first row that
        /// does not check, or the first stored value the chain does not account
        /// for, is named with the `seq` of the row it disagrees with.
        pub(super) async fn read_verify(&self) -> Result<ChainStatus, StoreError> {
            let lowest: Option<i64> = sqlx::query("SELECT MIN(seq) AS lowest FROM audit")
                .fetch_one(&self.pool)
                .await
                .map_err(db::<DB>)?
                .try_get("lowest")
                .map_err(db::<DB>)?;
            if let Some(seq) = lowest.filter(|s| *s < 1) {
                return Ok(ChainStatus::Broken {
                    seq,
                    reason: "a row below seq 1 is outside the chain (inserted behind the store's back)"
                        .into(),
                });
            }
            // The records' hashes need nothing from the chain: they are checked
            // on their own task, on the other core, while the chain is walked.
            let store = self.clone();
            let records = Beside(tokio::spawn(async move { store.first_altered().await }));
            let store = self.clone();
            let counted = Beside(tokio::spawn(async move { store.counted().await }));
            let mut verifier = ChainVerifier::default();
            // The counts kept by every write say how many operations the
            // chain will name: only a size hint, never trusted for the check.
            let hint = match self.pool.acquire().await {
                Ok(mut conn) => Self::kept_counts(&mut conn, &crate::store::Scope::Every)
                    .await
                    .map_or(0, |kept| kept.iter().map(|(_, _, n)| *n).sum::<u64>()),
                Err(_) => 0,
            };
            let hint = usize::try_from(hint).unwrap_or(0);
            let mut ledger = Ledger::with_capacity(hint.min(1 << 26));
            if let Err(broken) = self.walk(1, &mut verifier, Some(&mut ledger)).await? {
                return Ok(broken);
            }
            let replayed = self.replay_decided(&ledger).await?;
            let unlawful = ledger
                .unlawful()
                .into_iter()
                .chain(replayed.divergence.as_ref())
                .min_by_key(|d| d.seq);
            if let Some(Divergence { seq, reason }) = unlawful {
                return Ok(ChainStatus::Broken {
                    seq: *seq,
                    reason: reason.clone(),
                });
            }
            Ok(match self.compare(&ledger, records, counted, &replayed).await? {
                Ok(()) => verifier.finish(),
                Err(Divergence { seq, reason }) => ChainStatus::Broken { seq, reason },
            })
        }

        /// Walks the chain after a saved digest: row `seq` must still hash to
        /// `hash`, from its stored `prev_hash` and its content; the rows after it
        /// are walked as [`Self::read_verify`] walks them. The rows before it and
        /// the store comparison are not checked.
        pub(super) async fn read_verify_from(
            &self,
            seq: i64,
            hash: &Sha256,
        ) -> Result<ChainStatus, StoreError> {
            self.walk_after(seq, hash, "the saved digest").await
        }

        /// Walks the chain after row `seq`, which must still be there with
        /// `hash` and hash to it from its content; `what` names where `seq` and
        /// `hash` came from (a saved digest, the chain checkpoint) in a break.
        pub(super) async fn walk_after(
            &self,
            seq: i64,
            hash: &Sha256,
            what: &str,
        ) -> Result<ChainStatus, StoreError> {
            let row = sqlx::query(AssertSqlSafe(format!(
                "SELECT {AUDIT_COLUMNS} FROM audit WHERE seq = $1"
            )))
            .bind(seq)
            .fetch_optional(&self.pool)
            .await
            .map_err(db::<DB>)?;
            let broken = |reason: String| Ok(ChainStatus::Broken { seq, reason });
            let Some(row) = row else {
                return broken(format!(
                    "{what} names seq {seq}, which the chain no longer has (rows were removed)"
                ));
            };
            let columns = match Self::audit_columns::<&str>(&row) {
                Ok(columns) => columns,
                Err(e) => return broken(format!("the row cannot be read: {e}")),
            };
            let checked = match columns.check() {
                Ok(checked) => checked,
                Err(e) => return broken(format!("the row cannot be read: {e}")),
            };
            if columns.hash != hash.as_str() {
                return broken(format!(
                    "{what} does not match: seq {seq} now has another hash (the chain was rewritten)"
                ));
            }
            let view = columns.view(&checked);
            if !(1..=ENCODING).contains(&view.encoding)
                || !hashes_to(&mut String::new(), columns.prev_hash, &view, hash.as_str())
            {
                return broken(
                    "hash does not match the row's content (the row was changed)".into(),
                );
            }
            let mut verifier = ChainVerifier::after(seq, hash, view.encoding);
            Ok(match self.walk(seq + 1, &mut verifier, None).await? {
                Ok(()) => verifier.finish(),
                Err(broken) => broken,
            })
        }

        /// Feeds every row from `seq` on, a page at a time, to `verifier` and
        /// `ledger`; the first row that does not check ends it. A page is
        /// checked whole before any of its rows is fed, so a page that cannot
        /// be read is walked again by [`Self::walk_rows`] from its first row.
        pub(super) async fn walk(
            &self,
            from: i64,
            verifier: &mut ChainVerifier,
            mut ledger: Option<&mut Ledger>,
        ) -> Result<Result<(), ChainStatus>, StoreError> {
            if let Some(mut pages) =
                own_pages::<DB>(&self.pool, &self.location, "audit", "seq", AUDIT_PAGE, Some(("seq >= $1", from)))
            {
                let mut from = from;
                while let Some(page) = pages.recv().await.transpose()? {
                    let Some(columns) = page_rows(&page, audit_columns)
                        .filter(|c| rising(c.iter().map(|row| row.seq)))
                    else {
                        drop(pages);
                        return self.walk_rows(from, verifier, ledger).await;
                    };
                    if let Err(broken) = columns
                        .iter()
                        .try_for_each(|row| push_columns(row, verifier, ledger.as_deref_mut()))
                    {
                        return Ok(Err(broken));
                    }
                    if let Some(last) = columns.last() {
                        from = last.seq + 1;
                    }
                }
                return Ok(Ok(()));
            }
            let sql = audit_page_sql::<DB>();
            let fetch = |from: i64| {
                sqlx::query(AssertSqlSafe(sql.clone()))
                    .bind(from)
                    .fetch_one(&self.pool)
            };
            let mut from = from;
            let mut page = fetch(from).await.map_err(db::<DB>)?;
            loop {
                let rows: i64 = page.try_get("n").map_err(db::<DB>)?;
                if rows == 0 {
                    return Ok(Ok(()));
                }
                let text: Option<&str> = page.try_get("page").ok().flatten();
                let Some(columns) = text
                    .and_then(|t| Fields::rows(t, rows, audit_columns))
                    .filter(|c| rising(c.iter().map(|row| row.seq)))
                else {
                    return self.walk_rows(from, verifier, ledger).await;
                };
                let next = columns
                    .last()
                    .filter(|_| rows == PAGE_ROWS)
                    .map(|last| last.seq + 1);
                // The next page is asked for first, so the database builds it
                // while this one is checked.
                let (fetched, checked) = join(
                    async {
                        match next {
                            Some(from) => Some(fetch(from).await),
                            None => None,
                        }
                    },
                    async {
                        columns
                            .iter()
                            .try_for_each(|row| push_columns(row, verifier, ledger.as_deref_mut()))
                    },
                )
                .await;
                if let Err(broken) = checked {
                    return Ok(Err(broken));
                }
                match (next, fetched) {
                    (Some(next), Some(fetched)) => {
                        from = next;
                        page = fetched.map_err(db::<DB>)?;
                    }
                    _ => return Ok(Ok(())),
                }
            }
        }

        /// Feeds every row from `seq` on, in one streamed statement, to
        /// `verifier` and `ledger`, each row read column by column: the walk of
        /// a page that holds a value of another type than its column's.
        async fn walk_rows(
            &self,
            from: i64,
            verifier: &mut ChainVerifier,
            mut ledger: Option<&mut Ledger>,
        ) -> Result<Result<(), ChainStatus>, StoreError> {
            let mut rows = sqlx::query(AssertSqlSafe(format!(
                "SELECT {AUDIT_COLUMNS} FROM audit WHERE seq >= $1 ORDER BY seq"
            )))
            .bind(from)
            .fetch(&self.pool);
            while let Some(row) = rows.try_next().await.map_err(db::<DB>)? {
                let seq: i64 = row.try_get("seq").map_err(db::<DB>)?;
                let columns = match Self::audit_columns::<&str>(&row) {
                    Ok(columns) => columns,
                    Err(e) => {
                        return Ok(Err(ChainStatus::Broken {
                            seq,
                            reason: format!("the row cannot be read: {e}"),
                        }));
                    }
                };
                if let Err(broken) = push_columns(&columns, verifier, ledger.as_deref_mut()) {
                    return Ok(Err(broken));
                }
            }
            Ok(Ok(()))
        }

        /// Compares the stored operations, records (as `records` found them)
        /// and grants with `ledger`.
        async fn compare(
            &self,
            ledger: &Ledger,
            records: Beside<Option<Altered>>,
            counted: Beside<Counted>,
            replayed: &Replayed,
        ) -> Result<Result<(), Divergence>, StoreError> {
            // Every stored operation that checks is one the chain made, and ids
            // are unique: when as many check as the chain made, none is missing.
            let mut tally = Tally::default();
            let checked = match self.compare_operations(ledger, &mut tally).await? {
                Ok(checked) => checked,
                Err(divergence) => return Ok(Err(divergence)),
            };
            if checked != ledger.operations() {
                let mut ids = sqlx::query("SELECT id FROM operations").fetch(&self.pool);
                let mut seen: HashSet<String> = HashSet::new();
                while let Some(row) = ids.try_next().await.map_err(db::<DB>)? {
                    seen.insert(Self::text(&row, "id")?);
                }
                if let Err(divergence) = ledger.check_none_missing(|id| seen.contains(id)) {
                    return Ok(Err(divergence));
                }
            }
            if let Some(altered) = records.result().await? {
                return Ok(Err(altered.divergence(ledger)));
            }
            let counted = counted.result().await?;
            if let Err(divergence) = self.compare_evidence(ledger, &tally, &counted, replayed).await? {
                return Ok(Err(divergence));
            }
            let mut conn = self.pool.acquire().await.map_err(db::<DB>)?;
            if let Err(divergence) = ledger.check_leases(&Self::read_all_leases(&mut conn).await?) {
                return Ok(Err(divergence));
            }
            if let Err(divergence) = ledger.check_grants(&Self::all_grants(&mut conn).await?) {
                return Ok(Err(divergence));
            }
            if let Err(divergence) = ledger.check_levels(&Self::all_levels(&mut conn).await?) {
                return Ok(Err(divergence));
            }
            if let Err(divergence) = ledger.check_circuits(&self.read_circuits().await?) {
                return Ok(Err(divergence));
            }
            Ok(ledger.check_drills(&self.read_drills(None).await?))
        }

        /// Compares every stored operation, in id order a page at a time, with
        /// `ledger`: how many check, or the first that does not.
        async fn compare_operations(
            &self,
            ledger: &Ledger,
            tally: &mut Tally,
        ) -> Result<Result<usize, Divergence>, StoreError> {
            if let Some(mut pages) =
                own_pages::<DB>(&self.pool, &self.location, "operations", "id", OPERATION_PAGE, None)
            {
                let mut checked = 0;
                while let Some(page) = pages.recv().await.transpose()? {
                    let Some(operations) = page_rows(&page, StoredOperation::read)
                            .filter(|o| rising(o.iter().map(|op| op.id)))
                    else {
                        drop(pages);
                        *tally = Tally::default();
                        return self.compare_operation_rows(ledger, tally).await;
                    };
                    if let Err(divergence) = operations.iter().try_for_each(|op| op.check(ledger, tally)) {
                        return Ok(Err(divergence));
                    }
                    checked += operations.len();
                }
                return Ok(Ok(checked));
            }
            let first = operation_page_sql::<DB>(false);
            let next = operation_page_sql::<DB>(true);
            let fetch = |after: Option<String>| {
                match after {
                    None => sqlx::query(AssertSqlSafe(first.clone())),
                    Some(id) => sqlx::query(AssertSqlSafe(next.clone())).bind(id),
                }
                .fetch_one(&self.pool)
            };
            let mut page = fetch(None).await.map_err(db::<DB>)?;
            let mut checked = 0;
            loop {
                let rows: i64 = page.try_get("n").map_err(db::<DB>)?;
                if rows == 0 {
                    return Ok(Ok(checked));
                }
                let text: Option<&str> = page.try_get("page").ok().flatten();
                let Some(operations) = text
                    .and_then(|t| Fields::rows(t, rows, StoredOperation::read))
                    .filter(|o| !DB::AGGREGATES_IN_ORDER || rising(o.iter().map(|op| op.id)))
                else {
                    *tally = Tally::default();
                    return self.compare_operation_rows(ledger, tally).await;
                };
                let after = operations
                    .last()
                    .filter(|_| rows == PAGE_ROWS)
                    .map(|last| last.id.to_owned());
                let (fetched, compared) = join(
                    async {
                        match after {
                            Some(id) => Some(fetch(Some(id)).await),
                            None => None,
                        }
                    },
                    async { operations.iter().try_for_each(|op| op.check(ledger, &mut *tally)) },
                )
                .await;
                if let Err(divergence) = compared {
                    return Ok(Err(divergence));
                }
                checked += operations.len();
                match fetched {
                    Some(fetched) => page = fetched.map_err(db::<DB>)?,
                    None => return Ok(Ok(checked)),
                }
            }
        }

        /// [`Self::compare_operations`] reading each operation column by
        /// column, for a store with a value of another type than its column's.
        async fn compare_operation_rows(
            &self,
            ledger: &Ledger,
            tally: &mut Tally,
        ) -> Result<Result<usize, Divergence>, StoreError> {
            let mut checked = 0;
            let mut rows = sqlx::query(AssertSqlSafe(format!(
                "SELECT id, state, owner, version, wire, record_hash, {} AS facts \
                 FROM operations ORDER BY id",
                codec::OPERATION_FACTS
            )))
            .fetch(&self.pool);
            while let Some(row) = rows.try_next().await.map_err(db::<DB>)? {
                let id = Self::text(&row, "id")?;
                // A wire or hash of another type than text is no longer what
                // was hashed: altered, not unreadable.
                let (Ok(wire), Ok(record_hash)) = (
                    row.try_get::<String, _>("wire"),
                    row.try_get::<Option<String>, _>("record_hash"),
                ) else {
                    return Ok(Err(altered_operation(ledger, &id)));
                };
                let state = Self::text(&row, "state")?;
                let owner = Self::text(&row, "owner")?;
                let facts = Self::text(&row, "facts")?;
                let operation = StoredOperation {
                    id: &id,
                    state: &state,
                    owner: &owner,
                    version: row.try_get("version").map_err(db::<DB>)?,
                    wire: &wire,
                    record_hash: record_hash.as_deref(),
                    facts: &facts,
                };
                if let Err(divergence) = operation.check(ledger, tally) {
                    return Ok(Err(divergence));
                }
                checked += 1;
            }
            Ok(Ok(checked))
        }

        /// The first record of any [`RECORD_TABLES`] table whose stored wire
        /// no longer matches its `record_hash`, the tables in their order.
        async fn first_altered(&self) -> Result<Option<Altered>, StoreError> {
            for table in RECORD_TABLES {
                if let Some(altered) = self.altered_in(table).await? {
                    return Ok(Some(altered));
                }
            }
            Ok(None)
        }

        /// Hashes every record of `table`, in key order a page at a time: the
        /// first that does not match its `record_hash`.
        async fn altered_in(&self, table: &'static RecordTable) -> Result<Option<Altered>, StoreError> {
            let indexed = table.index.is_some();
            let scan = DB::paged_file(&self.location).and_then(|path| {
                let select: Vec<&str> = table.columns().iter().map(|c| c.select()).collect();
                let sql = format!(
                    "SELECT {} FROM {} ORDER BY {}",
                    select.join(", "),
                    table.table,
                    table.keys()
                );
                pages::visit(path, sql, move |row| visit_record(row, table))
            });
            if let Some(scan) = scan {
                let visited = scan
                    .await
                    .map_err(|e| StoreError::Other(format!("the record comparison stopped: {e}")))??;
                return match visited {
                    None => Ok(None),
                    Some(Visited::Altered(altered)) => Ok(Some(altered)),
                    Some(Visited::Unreadable) => self.altered_row_in(table).await,
                };
            }
            if let Some(digest) = DB::DIGEST {
                // Hashed where the records are stored: only the first that
                // does not match, if any, crosses the connection. The records
                // that do not match are set apart first and only they are
                // sorted, so the table is read in one sequential pass rather
                // than through its key index (2.9 s against 3.7 s for 2.3 M
                // attempts).
                let (index, order) = match table.index {
                    Some(index) => (format!(", {index} AS index_key"), "first_key, index_key"),
                    None => (String::new(), "first_key"),
                };
                let first = sqlx::query(AssertSqlSafe(format!(
                    "WITH altered AS MATERIALIZED (SELECT {} AS first_key{index}, {} AS record_key, \
                     {} AS operation FROM {} WHERE record_hash IS DISTINCT FROM {}) \
                     SELECT record_key, operation FROM altered ORDER BY {order} LIMIT 1",
                    table.key,
                    table.record_key(),
                    table.operation.unwrap_or("NULL"),
                    table.table,
                    digest.replace("{c}", "wire"),
                )))
                .fetch_optional(&self.pool)
                .await
                .map_err(db::<DB>)?;
                return match first {
                    None => Ok(None),
                    Some(row) => Ok(Some(Altered {
                        table: table.table,
                        name: Self::text(&row, "record_key")?,
                        operation: row.try_get("operation").map_err(db::<DB>)?,
                    })),
                };
            }
            let first = record_page_sql::<DB>(table, false);
            let next = record_page_sql::<DB>(table, true);
            let fetch = |after: Option<(String, Option<i64>)>| {
                match after {
                    None => sqlx::query(AssertSqlSafe(first.clone())),
                    Some((key, None)) => sqlx::query(AssertSqlSafe(next.clone())).bind(key),
                    Some((key, Some(index))) => sqlx::query(AssertSqlSafe(next.clone()))
                        .bind(key)
                        .bind(index),
                }
                .fetch_one(&self.pool)
            };
            let mut page = fetch(None).await.map_err(db::<DB>)?;
            loop {
                let rows: i64 = page.try_get("n").map_err(db::<DB>)?;
                if rows == 0 {
                    return Ok(None);
                }
                let text: Option<&str> = page.try_get("page").ok().flatten();
                let Some(records) = text
                    .and_then(|t| Fields::rows(t, rows, |f| StoredRecord::read(f, indexed)))
                    .filter(|r| {
                        !DB::AGGREGATES_IN_ORDER || rising(r.iter().map(|rec| (rec.key, rec.index)))
                    })
                else {
                    return self.altered_row_in(table).await;
                };
                let after = records
                    .last()
                    .filter(|_| rows == PAGE_ROWS)
                    .map(|last| (last.key.to_owned(), last.index));
                let (fetched, altered) = join(
                    async {
                        match after {
                            Some(after) => Some(fetch(Some(after)).await),
                            None => None,
                        }
                    },
                    async {
                        records.iter().find(|record| {
                            !Sha256::is_digest_of(record.record_hash, record.wire.as_bytes())
                        })
                    },
                )
                .await;
                if let Some(record) = altered {
                    return Ok(Some(Altered {
                        table: table.table,
                        name: table.name(record.key, record.index),
                        operation: record.operation.map(str::to_owned),
                    }));
                }
                match fetched {
                    Some(fetched) => page = fetched.map_err(db::<DB>)?,
                    None => return Ok(None),
                }
            }
        }

        /// [`Self::altered_in`] reading each record column by column, for a
        /// store with a value of another type than its column's.
        async fn altered_row_in(
            &self,
            table: &'static RecordTable,
        ) -> Result<Option<Altered>, StoreError> {
            let mut rows = sqlx::query(AssertSqlSafe(format!(
                "SELECT {} AS record_key, {} AS operation, wire, record_hash FROM {} ORDER BY {}",
                table.record_key(),
                table.operation.unwrap_or("NULL"),
                table.table,
                table.keys(),
            )))
            .fetch(&self.pool);
            while let Some(row) = rows.try_next().await.map_err(db::<DB>)? {
                // A wire or hash of another type than text is no longer what
                // was hashed: altered, not unreadable.
                let wire: Option<String> = row.try_get("wire").ok();
                let hash: Option<String> = row.try_get("record_hash").ok();
                let hashes = wire
                    .zip(hash)
                    .is_some_and(|(wire, hash)| Sha256::is_digest_of(&hash, wire.as_bytes()));
                if !hashes {
                    return Ok(Some(Altered {
                        table: table.table,
                        name: Self::text(&row, "record_key")?,
                        operation: row.try_get("operation").map_err(db::<DB>)?,
                    }));
                }
            }
            Ok(None)
        }
    }
}

/// What replaying the operations with decisions found
/// ([`super::SqlStore::replay_decided`]).
#[derive(Default)]
struct Replayed {
    /// The first row the rules refuse, or the first record no row accounts for.
    divergence: Option<Divergence>,
    /// The operations replayed: their records were held to the chain one by one.
    operations: BTreeSet<String>,
    /// Over the operations replayed, per table of [`NAMED_TABLES`]: the records
    /// their `ingest` and `record` rows name, and the records stored.
    named: [u64; 4],
    stored: [u64; 4],
}

impl Replayed {
    fn found(&mut self, divergence: Divergence) {
        if self
            .divergence
            .as_ref()
            .is_none_or(|d| divergence.seq < d.seq)
        {
            self.divergence = Some(divergence);
        }
    }
}

/// The SQL key of a record of table `index` of [`NAMED_TABLES`], and the name
/// its `ingest` or `record` row gives it after the prefix.
const NAMED_KEYS: [&str; 4] = ["id", "id", "CAST(idx AS TEXT)", "''"];

shared! {
    impl {
        /// Replays the rows of every operation with a decision through the
        /// rules ([`lawful::replay`]), on the operation as its rows leave it
        /// before each: the first row they refuse, and how many records those
        /// operations hold.
        async fn replay_decided(&self, ledger: &Ledger) -> Result<Replayed, StoreError> {
            let mut out = Replayed::default();
            let grants_before = |seq: i64| ledger.grants_before(seq);
            for id in ledger.decided() {
                let Ok(key) = codec::parse_id(&id) else {
                    continue;
                };
                let detail = match self.read_detail(&crate::store::Scope::Every, &key).await {
                    Ok(detail) => detail,
                    // The comparison names an operation that is gone.
                    Err(StoreError::NotFound(_)) => continue,
                    Err(e) => {
                        out.found(Divergence {
                            seq: ledger.last_seq_of(&id),
                            reason: format!(
                                "operation {id}: its decisions cannot be replayed, it does not read back: {e}"
                            ),
                        });
                        continue;
                    }
                };
                let relatives = self.relatives_of(&detail).await?;
                for row in &detail.audit {
                    if matches!(row.draft.action.as_str(), crate::core::audit::INGEST | crate::core::audit::RECORD) {
                        for e in &row.draft.evidence {
                            if let Some(t) = NAMED_TABLES.iter().position(|(_, p)| e.starts_with(p)) {
                                out.named[t] += 1;
                            }
                        }
                    }
                }
                let held = [
                    detail.attempts.len(),
                    detail.observations.len(),
                    detail.items.len(),
                    usize::from(detail.expectation.is_some()),
                ];
                for (t, n) in held.into_iter().enumerate() {
                    out.stored[t] += u64::try_from(n).unwrap_or(u64::MAX);
                }
                let around = Surroundings {
                    relatives: &relatives,
                    grants_before: &grants_before,
                };
                if let Err(divergence) = lawful::replay(&detail, &around) {
                    out.found(divergence);
                }
                out.operations.insert(id);
            }
            Ok(out)
        }

        /// The states of the operations `detail` depends on and of its
        /// children, by the `seq` of each move: what its replay reads of them.
        async fn relatives_of(
            &self,
            detail: &crate::core::detail::OperationDetail,
        ) -> Result<BTreeMap<String, StatesBySeq>, StoreError> {
            let mut relatives: BTreeMap<String, StatesBySeq> = BTreeMap::new();
            let related = detail
                .row
                .operation
                .depends_on
                .iter()
                .chain(detail.children.iter().map(|c| &c.id));
            for other in related {
                relatives.insert(other.as_str().to_owned(), self.states_by_seq(other.as_str()).await?);
            }
            Ok(relatives)
        }

        /// The vetoes open on a raised tool's operations at each raise the
        /// chain records (gate A3), by the raise's `seq`: every operation of
        /// the tool as the chain left it just before that row
        /// ([`lawful::before`]: its state, the records earlier rows named),
        /// judged by [`crate::core::autonomy::open_vetoes`] at the row's
        /// instant, as the autonomy command judged them. The operations of a
        /// tool are read once, whatever the number of its raises.
        async fn vetoes_at_raises(
            &self,
            ledger: &Ledger,
        ) -> Result<Result<BTreeMap<i64, crate::core::autonomy::OpenVetoes>, Divergence>, StoreError> {
            type Judged = (crate::core::detail::OperationDetail, BTreeMap<String, StatesBySeq>);
            let grants_before = |seq: i64| ledger.grants_before(seq);
            let mut tools: BTreeMap<String, Vec<Judged>> = BTreeMap::new();
            let mut out = BTreeMap::new();
            for (row, _, _) in ledger.raises() {
                if !tools.contains_key(&row.tool) {
                    let ids = sqlx::query("SELECT id FROM operations WHERE tool = $1 ORDER BY id")
                        .bind(&row.tool)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(db::<DB>)?;
                    let mut judged = Vec::with_capacity(ids.len());
                    for id in &ids {
                        let Ok(key) = codec::parse_id(&Self::text(id, "id")?) else {
                            continue;
                        };
                        let detail = match self.read_detail(&crate::store::Scope::Every, &key).await {
                            Ok(detail) => detail,
                            // The comparison names an operation that is gone.
                            Err(StoreError::NotFound(_)) => continue,
                            Err(e) => return Err(e),
                        };
                        let relatives = self.relatives_of(&detail).await?;
                        judged.push((detail, relatives));
                    }
                    tools.insert(row.tool.clone(), judged);
                }
                let mut then = crate::core::detail::Dataset::default();
                for (detail, relatives) in tools.get(&row.tool).map_or(&[][..], Vec::as_slice) {
                    let around = Surroundings {
                        relatives,
                        grants_before: &grants_before,
                    };
                    let op = match lawful::before(detail, &around, row.seq) {
                        Ok(Some(op)) => op,
                        Ok(None) => continue,
                        Err(divergence) => return Ok(Err(divergence)),
                    };
                    if then.contracts.is_empty() {
                        then.contracts.extend(op.contract.clone());
                    }
                    then.operations.push(op.row.operation);
                    then.attempts.extend(op.attempts);
                    then.items.extend(op.items);
                    then.observations.extend(op.observations);
                    then.audit.extend(op.audit);
                    then.expectations.extend(op.expectation);
                    then.proposals.extend(op.proposals);
                }
                let at = crate::core::clock::parse_instant(&row.at).unwrap_or_default();
                out.insert(row.seq, crate::core::autonomy::open_vetoes(&then, &row.tool, at));
            }
            Ok(Ok(out))
        }

        /// The states `operation` passed through, by the `seq` of each move.
        async fn states_by_seq(&self, operation: &str) -> Result<StatesBySeq, StoreError> {
            let rows = sqlx::query(
                "SELECT seq, to_state FROM audit WHERE operation = $1 AND to_state IS NOT NULL ORDER BY seq",
            )
            .bind(operation)
            .fetch_all(&self.pool)
            .await
            .map_err(db::<DB>)?;
            let mut states = Vec::with_capacity(rows.len());
            for row in &rows {
                let seq: i64 = row.try_get("seq").map_err(db::<DB>)?;
                let state = Self::text(row, "to_state")?;
                states.push((seq, codec::parse_state(&state)?));
            }
            Ok(StatesBySeq(states))
        }

        /// Holds the tables a decision reads besides the operations to the
        /// chain: as many records in each record table as the rows added, the
        /// dependencies the operations' records name, a contract for every
        /// tool an operation names, and kept metric facts for every operation.
        async fn compare_evidence(
            &self,
            ledger: &Ledger,
            tally: &Tally,
            counted: &Counted,
            replayed: &Replayed,
        ) -> Result<Result<(), Divergence>, StoreError> {
            let named = ledger.named();
            for (t, (&stored, &added)) in counted.tables.iter().zip(&named).enumerate() {
                let expected = added - replayed.named[t].min(added) + replayed.stored[t];
                if stored != expected {
                    return Ok(Err(self.first_unaccounted(ledger, t, replayed, stored, expected).await?));
                }
            }
            let stored = counted.dependencies;
            if stored != tally.dependencies {
                return Ok(Err(self.first_dependency_off(ledger, stored, tally.dependencies).await?));
            }
            let tools = &counted.contracts;
            if let Some((tool, op)) = tally.tools.iter().find(|(tool, _)| !tools.contains(*tool)) {
                return Ok(Err(Divergence {
                    seq: ledger.last_seq_of(op),
                    reason: format!(
                        "contracts: the contract of tool {tool} (of operation {op} and any other of that tool) is no longer stored; ingest stored one before any operation of it"
                    ),
                }));
            }
            if let Err(divergence) = self.compare_level_changes(ledger, tally).await? {
                return Ok(Err(divergence));
            }
            let vetoes = match self.vetoes_at_raises(ledger).await? {
                Ok(vetoes) => vetoes,
                Err(divergence) => return Ok(Err(divergence)),
            };
            let vetoes_at = |seq: i64| vetoes.get(&seq).cloned().unwrap_or_default();
            if let Err(divergence) = ledger.check_raise_gates(&vetoes_at) {
                return Ok(Err(divergence));
            }
            Ok(Self::compare_metric_facts(ledger, counted.coverage))
        }

        /// Counts what [`Counted`] holds, on a task beside the walk.
        async fn counted(&self) -> Result<Counted, StoreError> {
            let mut tables = [0; 4];
            for (t, (table, _)) in NAMED_TABLES.iter().enumerate() {
                tables[t] = self.count_of(&format!("SELECT count(*) AS n FROM {table}")).await?;
            }
            let dependencies = self.count_of("SELECT count(*) AS n FROM dependencies").await?;
            let contracts = sqlx::query("SELECT tool FROM contracts")
                .fetch_all(&self.pool)
                .await
                .map_err(db::<DB>)?
                .iter()
                .map(|row| Self::text(row, "tool"))
                .collect::<Result<_, _>>()?;
            Ok(Counted {
                tables,
                dependencies,
                contracts,
                coverage: self.kept_coverage().await?,
            })
        }

        /// Every `autonomy-set` row is an owner's decision on every tenant the
        /// tool's operations belonged to at that row (G6, asked of
        /// [`crate::core::autonomy::owner_role`] with the grants the chain
        /// left there): an owner of one tenant does not set the level of
        /// another's tool.
        async fn compare_level_changes(
            &self,
            ledger: &Ledger,
            tally: &Tally,
        ) -> Result<Result<(), Divergence>, StoreError> {
            for row in ledger.level_rows() {
                // The system's own act: only ever the drop of a tool whose
                // drill went stale, to the stale floor (DESIGN §9.4).
                if row.role == crate::core::model::Role::System {
                    if row.level == crate::core::rerun::STALE_FLOOR.as_str() {
                        continue;
                    }
                    return Ok(Err(Divergence {
                        seq: row.seq,
                        reason: format!(
                            "autonomy: {} set tool {} to {} as the system, which only ever drops a tool with a stale drill to {}",
                            row.by, row.tool, row.level, crate::core::rerun::STALE_FLOOR
                        ),
                    }));
                }
                let grants = ledger.grants_before(row.seq);
                let principal = row.on_behalf_of.as_deref().unwrap_or(&row.by);
                let mut actor = crate::core::rules::actor::Actor::from_grants(principal, None, &grants);
                actor.identity.clone_from(&row.by);
                actor.on_behalf_of.clone_from(&row.on_behalf_of);
                let now: Vec<String> = tally
                    .tenants
                    .get(&row.tool)
                    .map(|t| t.iter().cloned().collect())
                    .unwrap_or_default();
                if crate::core::autonomy::owner_role(&actor, &row.tool, &now, "changing autonomy").is_ok() {
                    continue;
                }
                // The tenants its operations had then: those created before the row.
                let then: Vec<String> = sqlx::query(
                    "SELECT DISTINCT o.tenant FROM operations o JOIN audit a ON a.operation = o.id \
                     WHERE o.tool = $1 AND a.action IN ('ingest', 'create') AND a.seq < $2 ORDER BY o.tenant",
                )
                .bind(&row.tool)
                .bind(row.seq)
                .fetch_all(&self.pool)
                .await
                .map_err(db::<DB>)?
                .iter()
                .map(|r| Self::text(r, "tenant"))
                .collect::<Result<_, _>>()?;
                if let Err(refusal) =
                    crate::core::autonomy::owner_role(&actor, &row.tool, &then, "changing autonomy")
                {
                    return Ok(Err(Divergence {
                        seq: row.seq,
                        reason: format!(
                            "autonomy: {} set tool {} to {}, which the rules refuse ({}: {})",
                            row.by, row.tool, row.level, refusal.rule, refusal.reason
                        ),
                    }));
                }
            }
            Ok(Ok(()))
        }

        /// The one integer column `n` of `sql`.
        async fn count_of(&self, sql: &str) -> Result<u64, StoreError> {
            let n: i64 = sqlx::query(AssertSqlSafe(sql.to_owned()))
                .fetch_one(&self.pool)
                .await
                .map_err(db::<DB>)?
                .try_get("n")
                .map_err(db::<DB>)?;
            Ok(u64::try_from(n).unwrap_or(0))
        }

        /// Which record of table `t` of [`NAMED_TABLES`] the chain and the
        /// store disagree on, when their counts differ: one the rows added and
        /// the store no longer holds, else one stored that no row added. Read
        /// only when the counts differ, so its cost is only that of a broken store.
        async fn first_unaccounted(
            &self,
            ledger: &Ledger,
            t: usize,
            replayed: &Replayed,
            stored: u64,
            expected: u64,
        ) -> Result<Divergence, StoreError> {
            let (table, prefix) = NAMED_TABLES[t];
            let mut added: BTreeMap<(String, String), i64> = BTreeMap::new();
            let mut rows = sqlx::query(
                "SELECT seq, operation, evidence FROM audit WHERE action IN ('ingest', 'record') ORDER BY seq",
            )
            .fetch(&self.pool);
            while let Some(row) = rows.try_next().await.map_err(db::<DB>)? {
                let operation = Self::text(&row, "operation")?;
                if replayed.operations.contains(&operation) {
                    continue;
                }
                let seq: i64 = row.try_get("seq").map_err(db::<DB>)?;
                let evidence = Self::text(&row, "evidence")?;
                let entries: Vec<String> = serde_json::from_str(&evidence).unwrap_or_default();
                for e in entries {
                    if let Some(key) = e.strip_prefix(prefix) {
                        added.entry((operation.clone(), key.to_owned())).or_insert(seq);
                    }
                }
            }
            drop(rows);
            let mut held: BTreeSet<(String, String)> = BTreeSet::new();
            let mut rows = sqlx::query(AssertSqlSafe(format!(
                "SELECT operation, {} AS record_key FROM {table}",
                NAMED_KEYS[t]
            )))
            .fetch(&self.pool);
            while let Some(row) = rows.try_next().await.map_err(db::<DB>)? {
                let operation = Self::text(&row, "operation")?;
                if !replayed.operations.contains(&operation) {
                    held.insert((operation, Self::text(&row, "record_key")?));
                }
            }
            drop(rows);
            let name = |(op, key): &(String, String)| match t {
                3 => format!("the expectation of {op}"),
                2 => format!("item {key} of {op}"),
                _ => format!("{key} of {op}"),
            };
            if let Some((record, seq)) = added.iter().find(|(r, _)| !held.contains(*r)) {
                return Ok(Divergence {
                    seq: *seq,
                    reason: format!(
                        "{table}: {} was added by this row but is no longer stored",
                        name(record)
                    ),
                });
            }
            if let Some(record) = held.iter().find(|r| !added.contains_key(*r)) {
                return Ok(Divergence {
                    seq: ledger.last_seq_of(&record.0),
                    reason: format!("{table}: {} is stored but no audit row added it", name(record)),
                });
            }
            Ok(Divergence {
                seq: ledger.last_seq_of(""),
                reason: format!(
                    "{table}: {stored} records are stored but the audit rows added {expected}"
                ),
            })
        }

        /// The operation whose stored dependencies are not the ones its record
        /// names, when their counts differ.
        async fn first_dependency_off(
            &self,
            ledger: &Ledger,
            stored: u64,
            expected: u64,
        ) -> Result<Divergence, StoreError> {
            let mut held: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
            for row in sqlx::query("SELECT operation, depends_on FROM dependencies")
                .fetch_all(&self.pool)
                .await
                .map_err(db::<DB>)?
            {
                held.entry(Self::text(&row, "operation")?)
                    .or_default()
                    .insert(Self::text(&row, "depends_on")?);
            }
            let mut rows = sqlx::query("SELECT id, wire FROM operations ORDER BY id").fetch(&self.pool);
            while let Some(row) = rows.try_next().await.map_err(db::<DB>)? {
                let id = Self::text(&row, "id")?;
                let wire = Self::text(&row, "wire")?;
                let Ok(created) = codec::created_facts(&wire) else {
                    continue;
                };
                let named: BTreeSet<String> = created.depends_on.iter().map(|d| d.to_string()).collect();
                let stored_deps = held.remove(&id).unwrap_or_default();
                if stored_deps != named {
                    let list = |s: &BTreeSet<String>| {
                        if s.is_empty() {
                            "none".to_owned()
                        } else {
                            s.iter().cloned().collect::<Vec<_>>().join(", ")
                        }
                    };
                    return Ok(Divergence {
                        seq: ledger.last_seq_of(&id),
                        reason: format!(
                            "dependencies: operation {id} depends on {} as stored, but its record names {}",
                            list(&stored_deps),
                            list(&named)
                        ),
                    });
                }
            }
            Ok(Divergence {
                seq: ledger.last_seq_of(""),
                reason: format!(
                    "dependencies: {stored} are stored but the operations' records name {expected}"
                ),
            })
        }

        /// The kept metric facts cover every operation the chain made: each
        /// has its `metric_facts` row or is marked for judging, and the kept
        /// counts hold one state row for each `metric_facts` row. (The facts
        /// themselves are judged again from the records whenever a report runs
        /// and finds them missing; see `read_metric_report`.)
        fn compare_metric_facts(
            ledger: &Ledger,
            (facts, unjudged, states): (u64, u64, u64),
        ) -> Result<(), Divergence> {
            let operations = u64::try_from(ledger.operations()).unwrap_or(u64::MAX);
            let head = ledger.last_seq_of("");
            if facts + unjudged != operations {
                return Err(Divergence {
                    seq: head,
                    reason: format!(
                        "metric_facts: kept facts or a mark to judge them cover {} of the {operations} operations the chain made (the metric tables were changed behind the store's back)",
                        facts + unjudged
                    ),
                });
            }
            if states != facts {
                return Err(Divergence {
                    seq: head,
                    reason: format!(
                        "metric_counts: the kept counts hold {states} operations' states but {facts} operations have kept facts (the metric tables were changed behind the store's back)"
                    ),
                });
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Fields, PageFields, rising};

    #[test]
    fn a_page_whose_keys_do_not_rise_is_told_apart() {
        assert!(rising([1, 2, 5]));
        assert!(rising(Vec::<i64>::new()));
        assert!(!rising([1, 3, 2]));
        assert!(!rising([1, 1]));
        assert!(rising([("a", Some(1)), ("a", Some(2)), ("b", None)]));
        assert!(!rising([("b", Some(1)), ("a", Some(2))]));
    }

    fn row<'a>(fields: &mut Fields<'a>) -> Option<(i64, Option<&'a str>, &'a str)> {
        Some((fields.integer()?, fields.text()?, fields.required()?))
    }

    #[test]
    fn a_page_reads_back_the_columns_sql_joined() {
        let page = "7,-3:a:b12,5:x\ny\u{e9}2:-!";
        assert_eq!(
            Fields::rows(page, 2, row),
            Some(vec![(7, None, "a:b"), (12, Some("x\ny\u{e9}"), "-!")])
        );
    }

    #[test]
    fn a_page_with_a_value_of_another_type_or_a_row_missing_is_not_read() {
        assert_eq!(Fields::rows("!,-3:abc", 1, row), None);
        assert_eq!(Fields::rows("7,!3:abc", 1, row), None);
        assert_eq!(Fields::rows("7,-9:abc", 1, row), None);
        assert_eq!(Fields::rows("7,--", 1, row), None);
        assert_eq!(Fields::rows("7,-3:abc", 2, row), None);
        // A length that ends inside a character.
        assert_eq!(Fields::rows("7,-1:\u{e9}", 1, row), None);
    }
}
