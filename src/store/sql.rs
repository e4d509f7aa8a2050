//! SQL text both backends share: the `WHERE` clause of a listing and its `ORDER BY`,
//! built over the same column names so that a filter means the same on either.

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
    qb.push(format_args!(" AND {column} IN ("));
    let mut list = qb.separated(", ");
    for value in values {
        list.push_bind(value);
    }
    list.push_unseparated(")");
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
    push_in(qb, "o.owner", filter.owners.iter().cloned());
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
    if let Some(visible) = &filter.visible_tenants {
        push_tenants(qb, "o.tenant", &Scope::Tenants(visible.clone()));
    }
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
            qb.push(" OR o.risk_rank IN (");
            let mut list = qb.separated(", ");
            for rank in risks {
                list.push_bind(rank);
            }
            list.push_unseparated(")");
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
