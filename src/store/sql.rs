//! SQL text both backends share: the `WHERE` clause of a listing and its `ORDER BY`,
//! built over the same column names so that a filter means the same on either, and
//! the console's hot reads (the first page, the header counts, an audit page), each
//! built behind a `prefix` so that `tests/query_plans.rs` can `EXPLAIN` exactly the
//! statement the store runs.

use sqlx::{Database, Encode, QueryBuilder, Type};

use super::plan::codec::risk_rank;
use super::plan::rows::prefix_range;
use super::{OperationFilter, Scope, SortOrder};
use crate::core::model::{Risk, State};

/// The held states as an SQL list literal (they are fixed identifiers, not input).
pub fn held_states_sql() -> String {
    let states: Vec<String> = State::HELD
        .iter()
        .map(|s| format!("'{}'", s.as_str()))
        .collect();
    states.join(", ")
}

/// Appends ` AND column IN (…)` for a non-empty list.
pub(crate) fn push_in<'a, DB, T>(
    qb: &mut QueryBuilder<DB>,
    column: &str,
    values: impl IntoIterator<Item = T>,
) where
    DB: Database,
    T: Encode<'a, DB> + Type<DB> + 'a,
{
    let values: Vec<T> = values.into_iter().collect();
    if values.is_empty() {
        return;
    }
    qb.push(format_args!(" AND {column}"));
    push_in_list(qb, values);
}

/// Appends ` IN (…)` of a non-empty list.
fn push_in_list<'a, DB, T>(qb: &mut QueryBuilder<DB>, values: impl IntoIterator<Item = T>)
where
    DB: Database,
    T: Encode<'a, DB> + Type<DB> + 'a,
{
    qb.push(" IN (");
    let mut list = qb.separated(", ");
    for value in values {
        list.push_bind(value);
    }
    list.push_unseparated(")");
}

/// The owner an operation over `o` goes to at `now_ms`, as `core::routing`
/// routes it: a hold whose owner no reviewer assigned goes to the contract's
/// owner for the role its kept route names (`operations.route`, which the
/// store's triggers derive from the evidence), or, with none, for `incident`
/// when it is UNKNOWN or PARTIAL past its observation window; the operation's
/// own owner when the contract names nobody for that role, and for everything
/// else.
pub fn push_routed_owner<'a, DB>(qb: &mut QueryBuilder<DB>, now_ms: i64)
where
    DB: Database,
    i64: Encode<'a, DB> + Type<DB>,
{
    let held = held_states_sql();
    qb.push(format_args!(
        "(CASE WHEN o.state IN ({held}) AND COALESCE(o.route, '') <> 'assigned' THEN COALESCE(\
         (SELECT co.owner FROM contract_owners co WHERE co.tool = o.tool AND co.role = \
         COALESCE(o.route, CASE WHEN o.state IN ('UNKNOWN', 'PARTIAL') \
         AND COALESCE(o.next_observation_ms, o.deadline_ms) <= "
    ));
    qb.push_bind(now_ms);
    qb.push(" THEN 'incident' END)), o.owner) ELSE o.owner END)");
}

/// Appends the filter as ` AND …` terms over the operations table aliased `o`
/// (after a `WHERE 1=1`).
pub fn push_filter<'a, DB>(qb: &mut QueryBuilder<DB>, filter: &OperationFilter)
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    if filter.queue {
        qb.push(" AND o.queued = 1");
    }
    push_in(
        qb,
        "o.state",
        filter.states.iter().map(|s| s.as_str().to_owned()),
    );
    push_in(qb, "o.tenant", filter.tenants.iter().cloned());
    if !filter.owners.is_empty() {
        qb.push(" AND ");
        push_routed_owner(qb, filter.now_ms());
        push_in_list(qb, filter.owners.iter().cloned());
    }
    push_in(qb, "o.tool", filter.tools.iter().cloned());
    push_in(
        qb,
        "o.failure_mode",
        filter.modes.iter().map(|m| m.as_str().to_owned()),
    );
    push_in(
        qb,
        "o.risk_rank",
        filter.risks.iter().map(|r| risk_rank(*r)),
    );
    push_tenants(qb, "o.tenant", &filter.scope);
    if let Some(search) = filter.search.as_deref().filter(|s| !s.trim().is_empty()) {
        let (low, high) = prefix_range(search);
        qb.push(" AND (o.id IN (SELECT s.operation FROM search_terms s WHERE s.term >= ");
        qb.push_bind(low);
        qb.push(" AND s.term < ");
        qb.push_bind(high);
        qb.push(")");
        let pattern = word_pattern(search);
        for column in VISIBLE_COLUMNS {
            qb.push(format_args!(" OR {} LIKE ", words(column)));
            qb.push_bind(pattern.clone());
            qb.push(" ESCAPE '!'");
        }
        let needle = search.trim();
        let risks: Vec<i64> = Risk::ALL
            .iter()
            .filter(|r| r.as_str().starts_with(&needle.to_ascii_lowercase()))
            .map(|r| risk_rank(*r))
            .collect();
        if !risks.is_empty() {
            qb.push(" OR o.risk_rank");
            push_in_list(qb, risks);
        }
        qb.push(")");
    }
}

/// The text columns the console's queue shows, which a search also matches by
/// the start of any of their words (the id, target and keys are matched the same
/// way through the `search_terms` index; these are short and few per operation).
const VISIBLE_COLUMNS: [&str; 5] = ["o.state", "o.tenant", "o.tool", "o.owner", "o.failure_mode"];

/// Characters that start a word, as in the search terms index.
const SEPARATORS: [char; 6] = ['_', '-', '.', ':', '/', '@'];

/// `column` as SQL text of space-separated words with a space in front,
/// lowercased: `duplicate_replay` reads ` duplicate replay`.
fn words(column: &str) -> String {
    let mut sql = format!("LOWER({column})");
    for sep in SEPARATORS {
        sql = format!("REPLACE({sql}, '{sep}', ' ')");
    }
    format!("(' ' || {sql})")
}

/// The `LIKE … ESCAPE '!'` pattern of a word start over [`words`]: `% needle%`,
/// the needle lowercased, its separators spaces, its wildcards escaped.
fn word_pattern(needle: &str) -> String {
    let mut pattern = String::from("% ");
    for c in needle.trim().to_lowercase().chars() {
        match c {
            c if SEPARATORS.contains(&c) => pattern.push(' '),
            '%' | '!' => {
                pattern.push('!');
                pattern.push(c);
            }
            c => pattern.push(c),
        }
    }
    pattern.push('%');
    pattern
}

/// The `ORDER BY` of a listing; every order ends on the id so pages are stable.
pub fn order_by(sort: SortOrder) -> &'static str {
    match sort {
        SortOrder::Urgency => " ORDER BY o.risk_rank DESC, o.observe_order, o.state_since_ms, o.id",
        SortOrder::Age => " ORDER BY o.state_since_ms, o.id",
        SortOrder::Id => " ORDER BY o.id",
        SortOrder::Deadline => " ORDER BY o.deadline_ms IS NULL, o.deadline_ms, o.id",
    }
}

/// Appends ` AND` the tenant scope (G7) over `column`, a tenant column: nothing
/// for [`Scope::Every`], a condition no row meets for no tenants at all.
pub fn push_tenants<'a, DB>(qb: &mut QueryBuilder<DB>, column: &str, scope: &Scope)
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
{
    match scope {
        Scope::Every => {}
        Scope::Tenants(tenants) if tenants.is_empty() => {
            qb.push(" AND 1 = 0");
        }
        Scope::Tenants(tenants) => push_in(qb, column, tenants.iter().cloned()),
    }
}

/// Appends ` AND` the tenant scope (G7) over `column`, an operation id: the rows
/// of operations in the scope's tenants. Ids that name no operation (the
/// `holdfast:grants` rows of the audit log) are in [`Scope::Every`] only.
pub fn push_operations_of<'a, DB>(qb: &mut QueryBuilder<DB>, column: &str, scope: &Scope)
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
{
    if let Scope::Tenants(_) = scope {
        qb.push(format_args!(
            " AND {column} IN (SELECT t.id FROM operations t WHERE 1 = 1"
        ));
        push_tenants(qb, "t.tenant", scope);
        qb.push(")");
    }
}

/// Which operations a read of their records covers: those of a tenant scope
/// (G7), or the operations a list of ids names.
pub(crate) enum Covering<'a> {
    Scope(&'a Scope),
    Ids(&'a [String]),
}

impl Covering<'_> {
    /// Appends ` AND` the covering over the operations table: `tenant` names its
    /// tenant column, `id` its id column.
    pub(crate) fn push<'q, DB>(&self, qb: &mut QueryBuilder<DB>, tenant: &str, id: &str)
    where
        DB: Database,
        String: Encode<'q, DB> + Type<DB>,
    {
        match self {
            Covering::Scope(scope) => push_tenants(qb, tenant, scope),
            Covering::Ids(ids) => Self::push_ids(qb, id, ids),
        }
    }

    /// Appends ` AND` the covering over `column`, an operation id.
    pub(crate) fn push_operations<'q, DB>(&self, qb: &mut QueryBuilder<DB>, column: &str)
    where
        DB: Database,
        String: Encode<'q, DB> + Type<DB>,
    {
        match self {
            Covering::Scope(scope) => push_operations_of(qb, column, scope),
            Covering::Ids(ids) => Self::push_ids(qb, column, ids),
        }
    }

    fn push_ids<'q, DB>(qb: &mut QueryBuilder<DB>, column: &str, ids: &[String])
    where
        DB: Database,
        String: Encode<'q, DB> + Type<DB>,
    {
        if ids.is_empty() {
            qb.push(" AND 1 = 0");
        } else {
            push_in(qb, column, ids.iter().cloned());
        }
    }
}

/// The columns of a listing row, before the filter. The held dependencies a row
/// names are those in `scope` (G7): another tenant's hold is not shown. With
/// `now_ms`, the row carries the owner it is routed to then
/// ([`push_routed_owner`]); without, none.
pub fn row_select<'a, DB>(prefix: &str, scope: &Scope, now_ms: Option<i64>) -> QueryBuilder<DB>
where
    DB: sqlx::Database,
    String: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
    i64: sqlx::Encode<'a, DB> + sqlx::Type<DB>,
{
    let held = held_states_sql();
    let mut qb = QueryBuilder::new(format!(
        "{prefix}SELECT o.id, o.state, o.owner, o.next_observation_ms, o.version, o.state_since_ms, o.wire, \
         COALESCE(o.max_attempts, c.max_attempts) AS max_attempts, \
         (SELECT count(*) FROM attempts a WHERE a.operation = o.id AND a.kind = 'request' AND a.refused = 0) AS used, \
         (SELECT string_agg(d.depends_on, ' ') FROM dependencies d \
            JOIN operations p ON p.id = d.depends_on \
            WHERE d.operation = o.id AND p.state IN ({held})"
    ));
    push_tenants(&mut qb, "p.tenant", scope);
    qb.push(") AS held_deps, ");
    match now_ms {
        Some(now_ms) => push_routed_owner(&mut qb, now_ms),
        None => {
            qb.push("CAST(NULL AS TEXT)");
        }
    }
    qb.push(
        " AS routed_owner, \
         EXISTS (SELECT 1 FROM proposals pr WHERE pr.operation = o.id AND pr.status = 'pending') AS pending \
         FROM operations o LEFT JOIN contracts c ON c.tool = o.tool WHERE 1 = 1",
    );
    qb
}

/// The start of a statement over the operations table aliased `o`:
/// `{prefix}SELECT {columns} FROM operations o WHERE 1 = 1`, ready for `AND` terms.
pub fn operations_query<DB: Database>(prefix: &str, columns: &str) -> QueryBuilder<DB> {
    QueryBuilder::new(format!(
        "{prefix}SELECT {columns} FROM operations o WHERE 1 = 1"
    ))
}

/// The reverse of [`order_by`]: the same rows, last first.
pub fn order_by_reversed(sort: SortOrder) -> &'static str {
    match sort {
        SortOrder::Urgency => {
            " ORDER BY o.risk_rank, o.observe_order DESC, o.state_since_ms DESC, o.id DESC"
        }
        SortOrder::Age => " ORDER BY o.state_since_ms DESC, o.id DESC",
        SortOrder::Id => " ORDER BY o.id DESC",
        SortOrder::Deadline => {
            " ORDER BY o.deadline_ms IS NULL DESC, o.deadline_ms DESC, o.id DESC"
        }
    }
}

/// Where an operation stands in every order (see [`order_by`]): the key a
/// keyset page starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortKey {
    pub risk_rank: i64,
    pub observe_order: i64,
    pub state_since_ms: i64,
    pub deadline_ms: Option<i64>,
    pub id: String,
}

/// The columns of a [`SortKey`], over the operations table aliased `o`.
pub const SORT_KEY_COLUMNS: &str =
    "o.id, o.risk_rank, o.observe_order, o.state_since_ms, o.deadline_ms";

/// Which side of a [`SortKey`] a keyset page reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The key's operation (when it matches) and the rows after it.
    At,
    /// The rows after the key.
    After,
    /// The rows before the key, nearest first (the statement reads the order
    /// reversed; the store turns the rows back).
    Before,
}

/// One statement of a keyset page. An order sorts first by a band (the risk
/// tier; whether a deadline is set) and then by columns one index holds in
/// order, so a page past a key is read as two index ranges, each a seek: the
/// rest of the key's band, then the bands past it from their start. (One
/// condition `band < x OR (band = x AND …)` would be read from the top of the
/// index and filtered up to the key.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leg {
    /// The key's band past the key (with no key: the whole order).
    Band,
    /// The bands past the key's, from their start.
    Later,
}

/// Appends ` AND` the range of `leg` past `key` on `side` of it in `sort`
/// order; `false` when the leg is empty (the order has no band past the key's).
fn push_seek<'a, DB>(
    qb: &mut QueryBuilder<DB>,
    sort: SortOrder,
    key: &SortKey,
    side: Side,
    leg: Leg,
) -> bool
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let (past, later_band) = match side {
        Side::At => (">=", "<"),
        Side::After => (">", "<"),
        Side::Before => ("<", ">"),
    };
    let forward = side != Side::Before;
    match (sort, leg) {
        (SortOrder::Urgency, Leg::Band) => {
            qb.push(" AND o.risk_rank = ");
            qb.push_bind(key.risk_rank);
            push_past(
                qb,
                "o.observe_order, o.state_since_ms, o.id",
                past,
                &[key.observe_order, key.state_since_ms],
                &key.id,
            );
        }
        // Risk descends: the later tiers are the lower ranks.
        (SortOrder::Urgency, Leg::Later) => {
            qb.push(format_args!(" AND o.risk_rank {later_band} "));
            qb.push_bind(key.risk_rank);
        }
        (SortOrder::Age, Leg::Band) => {
            push_past(
                qb,
                "o.state_since_ms, o.id",
                past,
                &[key.state_since_ms],
                &key.id,
            );
        }
        (SortOrder::Id, Leg::Band) => push_past(qb, "o.id", past, &[], &key.id),
        (SortOrder::Age | SortOrder::Id, Leg::Later) => return false,
        // Operations with a deadline first, by it; then those without, by id.
        (SortOrder::Deadline, Leg::Band) => match key.deadline_ms {
            Some(deadline) => {
                qb.push(" AND o.deadline_ms IS NOT NULL");
                push_past(qb, "o.deadline_ms, o.id", past, &[deadline], &key.id);
            }
            None => {
                qb.push(" AND o.deadline_ms IS NULL");
                push_past(qb, "o.id", past, &[], &key.id);
            }
        },
        (SortOrder::Deadline, Leg::Later) => match (key.deadline_ms, forward) {
            (Some(_), true) => {
                qb.push(" AND o.deadline_ms IS NULL");
            }
            (None, false) => {
                qb.push(" AND o.deadline_ms IS NOT NULL");
            }
            _ => return false,
        },
    }
    true
}

/// Appends ` AND (columns) {op} (ints…, id)`: a row-value comparison with a
/// key, which an index on those columns seeks to.
fn push_past<'a, DB>(qb: &mut QueryBuilder<DB>, columns: &str, op: &str, ints: &[i64], id: &str)
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    qb.push(format_args!(" AND ({columns}) {op} ("));
    for int in ints {
        qb.push_bind(*int);
        qb.push(", ");
    }
    qb.push_bind(id.to_owned());
    qb.push(")");
}

/// Where a keyset page starts: the first or the last rows of the order, or a
/// side of a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seek<'k> {
    First,
    Last,
    From(&'k SortKey, Side),
}

impl Seek<'_> {
    /// Whether the statement reads the order reversed.
    pub fn backward(self) -> bool {
        matches!(self, Seek::Last | Seek::From(_, Side::Before))
    }

    /// The statements of a page, in the order they are read until it is full.
    pub fn legs(self) -> &'static [Leg] {
        match self {
            Seek::First | Seek::Last => &[Leg::Band],
            Seek::From(..) => &[Leg::Band, Leg::Later],
        }
    }
}

/// What a keyset page reads of each operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Columns {
    /// A listing's rows (see [`row_select`]).
    Rows,
    /// Sort keys only, from the operations table alone: what bulk triage
    /// walks its selection by.
    Keys,
}

/// One statement of a keyset page: `columns` of the operations matching
/// `filter` in `sort` order (reversed when reading backward) in `leg` of
/// `seek`, at most `limit`; `None` when the leg is empty. No row is skipped by
/// count: each statement starts with an index seek, so a page far down costs
/// what the first does.
pub fn keyset_page<'a, DB>(
    prefix: &str,
    columns: Columns,
    filter: &OperationFilter,
    sort: SortOrder,
    seek: Seek<'_>,
    leg: Leg,
    limit: u64,
) -> Option<QueryBuilder<DB>>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut qb = match columns {
        Columns::Rows => row_select(prefix, &filter.scope, Some(filter.now_ms())),
        Columns::Keys => operations_query(prefix, SORT_KEY_COLUMNS),
    };
    push_filter(&mut qb, filter);
    if let Seek::From(key, side) = seek
        && !push_seek(&mut qb, sort, key, side, leg)
    {
        return None;
    }
    qb.push(if seek.backward() {
        order_by_reversed(sort)
    } else {
        order_by(sort)
    });
    qb.push(" LIMIT ");
    qb.push_bind(i64::try_from(limit).unwrap_or(i64::MAX));
    Some(qb)
}

/// The ids of every operation matching `filter`, in `sort` order, in one
/// statement over the operations table alone (mark-all): streamed, not paged.
pub fn matching_ids<'a, DB>(
    prefix: &str,
    filter: &OperationFilter,
    sort: SortOrder,
) -> QueryBuilder<DB>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut qb = operations_query(prefix, "o.id");
    push_filter(&mut qb, filter);
    qb.push(order_by(sort));
    qb
}

/// The sort key of one operation in `scope` (G7), by its primary key: one
/// outside it has none, the same as one that does not exist.
pub fn sort_key<'a, DB>(prefix: &str, id: &str, scope: &Scope) -> QueryBuilder<DB>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
{
    let mut qb = operations_query(prefix, SORT_KEY_COLUMNS);
    qb.push(" AND o.id = ");
    qb.push_bind(id.to_owned());
    push_tenants(&mut qb, "o.tenant", scope);
    qb
}

/// The operations of `tool` identical to a call (DESIGN §10.2): the same
/// payload hash, or the same business key; newest first. Two halves, each
/// read through its own index on the tool and the hash or key: an `OR` of the
/// two is read through the tool's index alone, every operation of the tool.
pub fn same_calls<'a, DB>(
    prefix: &str,
    tool: &str,
    payload_hash: &str,
    business_key: Option<&str>,
) -> QueryBuilder<DB>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
    Option<String>: Encode<'a, DB> + Type<DB>,
{
    const COLUMNS: &str = "o.id, o.state, o.payload_hash, o.created_ms";
    let mut qb = operations_query(prefix, COLUMNS);
    qb.push(" AND o.tool = ");
    qb.push_bind(tool.to_owned());
    qb.push(" AND o.payload_hash = ");
    qb.push_bind(payload_hash.to_owned());
    qb.push(format!(
        " UNION SELECT {COLUMNS} FROM operations o WHERE o.tool = "
    ));
    qb.push_bind(tool.to_owned());
    qb.push(" AND o.business_key = ");
    qb.push_bind(business_key.map(str::to_owned));
    qb.push(" ORDER BY created_ms DESC, id DESC");
    qb
}

/// The scope of a filter that narrows by nothing but the tenant scope (G7),
/// whose counts the `operation_counts` table keeps; `None` for any other filter.
pub fn kept_scope(filter: &OperationFilter) -> Option<Scope> {
    let scope_only = OperationFilter {
        scope: filter.scope.clone(),
        now: filter.now,
        ..OperationFilter::default()
    };
    (*filter == scope_only).then(|| filter.scope.clone())
}

/// Operations per (state, queued) in `scope`, from the counts the triggers keep.
pub fn kept_counts<'a, DB>(prefix: &str, scope: &Scope) -> QueryBuilder<DB>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
{
    let mut qb: QueryBuilder<DB> = QueryBuilder::new(format!(
        "{prefix}SELECT state, CAST(queued AS BIGINT) AS queued, CAST(SUM(n) AS BIGINT) AS n \
         FROM operation_counts WHERE n > 0"
    ));
    push_tenants(&mut qb, "tenant", scope);
    qb.push(" GROUP BY state, queued");
    qb
}

/// Held operations matching `filter` whose next observation is at or before
/// `now_ms`: a range of the due index.
pub fn overdue_count<'a, DB>(
    prefix: &str,
    filter: &OperationFilter,
    now_ms: i64,
) -> QueryBuilder<DB>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut qb = operations_query(prefix, "count(*) AS n");
    qb.push(" AND o.queued = 1 AND o.next_observation_ms <= ");
    qb.push_bind(now_ms);
    push_filter(&mut qb, filter);
    qb
}

/// Milliseconds in a day: the buckets of `due_counts`.
pub const DUE_DAY_MS: i64 = 86_400_000;

/// [`overdue_count`] for a filter that narrows by the tenant scope alone
/// ([`kept_scope`]): the days before today from the counts the triggers keep
/// (`due_counts`), plus today's part up to `now_ms` from the due index — a
/// read of a few rows per tenant and day, and one short range, however many
/// operations are held.
pub fn kept_overdue_count<'a, DB>(prefix: &str, scope: &Scope, now_ms: i64) -> QueryBuilder<DB>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let today = now_ms.div_euclid(DUE_DAY_MS);
    let mut qb: QueryBuilder<DB> = QueryBuilder::new(format!(
        "{prefix}SELECT CAST(COALESCE((SELECT SUM(d.n) FROM due_counts d WHERE d.due_day < "
    ));
    qb.push_bind(today);
    push_tenants(&mut qb, "d.tenant", scope);
    qb.push("), 0) + (SELECT count(*) FROM operations o WHERE o.queued = 1 AND o.next_observation_ms >= ");
    qb.push_bind(today * DUE_DAY_MS);
    qb.push(" AND o.next_observation_ms <= ");
    qb.push_bind(now_ms);
    push_tenants(&mut qb, "o.tenant", scope);
    qb.push(") AS BIGINT) AS n");
    qb
}

/// Operations matching `filter` with a pending proposal: the pending proposals
/// by status, each operation by its key.
pub fn pending_count<'a, DB>(prefix: &str, filter: &OperationFilter) -> QueryBuilder<DB>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut qb = operations_query(prefix, "count(*) AS n");
    qb.push(" AND o.id IN (SELECT pr.operation FROM proposals pr WHERE pr.status = 'pending')");
    push_filter(&mut qb, filter);
    qb
}

/// One page of the audit log in `scope`, newest first, below `before`: a walk
/// down the `seq` key that checks each row's operation by its primary key, so a
/// page costs its rows, not the log.
pub fn audit_page<'a, DB>(
    prefix: &str,
    columns: &str,
    scope: &Scope,
    before: Option<i64>,
    limit: u64,
) -> QueryBuilder<DB>
where
    DB: Database,
    String: Encode<'a, DB> + Type<DB>,
    i64: Encode<'a, DB> + Type<DB>,
{
    let mut qb: QueryBuilder<DB> =
        QueryBuilder::new(format!("{prefix}SELECT {columns} FROM audit WHERE 1 = 1"));
    if let Some(before) = before {
        qb.push(" AND seq < ");
        qb.push_bind(before);
    }
    if let Scope::Tenants(_) = scope {
        qb.push(" AND EXISTS (SELECT 1 FROM operations t WHERE t.id = audit.operation");
        push_tenants(&mut qb, "t.tenant", scope);
        qb.push(")");
    }
    qb.push(" ORDER BY seq DESC LIMIT ");
    qb.push_bind(i64::try_from(limit).unwrap_or(i64::MAX));
    qb
}

#[cfg(test)]
mod tests {
    use super::{word_pattern, words};

    #[test]
    fn a_search_pattern_starts_a_word_and_escapes_like_wildcards() {
        assert_eq!(word_pattern(" Billing "), "% billing%");
        assert_eq!(word_pattern("duplicate_re"), "% duplicate re%");
        assert_eq!(word_pattern("50%!off"), "% 50!%!!off%");
        assert!(words("o.owner").starts_with("(' ' || REPLACE("));
    }
}
