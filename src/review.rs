//! Reviewer actions through a [`Session`], as plain async functions that the
//! console's review dialog, the command line and bulk triage all call: load what
//! the session's actor may see (G7, applied by the store), decide with [`rules::decide`], commit the decided effect, and
//! report an effect, a refusal naming its rule, or a G8 conflict saying who changed
//! the operation and when. None of them re-implements a rule.
//!
//! [`actor`] and [`identify`] read the store's grants and login before there
//! is a session: they make the actor a session is made from.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::core::access::{self, GrantChange, GrantRequest};
use crate::core::audit::AuditRow;
use crate::core::detail::OperationDetail;
use crate::core::export;
use crate::core::ids::OperationId;
use crate::core::rules::{self, Action, Actor, Effect, Rationale, Refusal, Rule};
use crate::core::triage::{self, TriageLine};
use crate::store::{OperationFilter, Page, Session, SortOrder, Store, StoreError};

/// Why an action was not applied.
#[derive(Debug, thiserror::Error)]
pub enum ReviewError {
    /// No such operation, or none the actor may see (G7 hides other tenants'
    /// operations entirely; `visible` is then the actor's tenants).
    #[error("{}{}", hidden_message(.id, .visible.as_deref()), did_you_mean(.suggestion.as_ref()))]
    NotFound {
        id: OperationId,
        /// The actor's tenants, when grants restrict what it sees.
        visible: Option<Vec<String>>,
        /// A visible id one typo away (`F09` for `f09`): ids stay exact.
        suggestion: Option<OperationId>,
    },
    /// A guard refused the action.
    #[error("refused: {}: {}", .0.rule, .0.reason)]
    Refused(Refusal),
    /// Someone else changed the operation first (G8); nothing was applied.
    #[error(
        "refused: G8: {id} was changed by {by} at {} (version {expected} → {current}); reload and decide again",
        crate::core::clock::human_instant(*.at)
    )]
    Conflict {
        id: OperationId,
        by: String,
        at: DateTime<Utc>,
        expected: i64,
        current: i64,
    },
    #[error(transparent)]
    Store(StoreError),
}

fn hidden_message(id: &OperationId, visible: Option<&[String]>) -> String {
    match visible {
        None => format!("no operation {id}"),
        Some([]) => format!("refused: G7: no operation {id} is visible to you: you hold no grant"),
        Some(tenants) => format!(
            "refused: G7: no operation {id} in the tenants granted to you ({})",
            tenants.join(", ")
        ),
    }
}

fn did_you_mean(suggestion: Option<&OperationId>) -> String {
    suggestion.map_or_else(String::new, |id| format!("; did you mean {id}?"))
}

impl ReviewError {
    /// The rule behind a refusal or a conflict. An operation hidden by grants is a
    /// G7 refusal, worded the same whether it exists in another tenant or not at
    /// all, so that nothing leaks across tenants.
    pub fn rule(&self) -> Option<Rule> {
        match self {
            ReviewError::Refused(r) => Some(r.rule),
            ReviewError::Conflict { .. } => Some(Rule::G8),
            ReviewError::NotFound {
                visible: Some(_), ..
            } => Some(Rule::G7),
            ReviewError::NotFound { visible: None, .. } | ReviewError::Store(_) => None,
        }
    }
}

impl From<StoreError> for ReviewError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::Conflict {
                id,
                expected,
                current,
                by,
                at,
            } => ReviewError::Conflict {
                id,
                by,
                at,
                expected,
                current,
            },
            StoreError::NotFound(id) => ReviewError::NotFound {
                id,
                visible: None,
                suggestion: None,
            },
            other => ReviewError::Store(other),
        }
    }
}

/// An applied action: its effect, exactly as decided, and the audit row written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Applied {
    pub effect: Effect,
    pub audit: AuditRow,
}

/// The acting identity as the store's grants define it (single-user mode when the
/// store has none).
pub async fn actor(
    store: &dyn Store,
    identity: &str,
    policy: Option<String>,
) -> Result<Actor, StoreError> {
    Ok(Actor::from_grants(identity, policy, &store.grants().await?))
}

/// Who acts on `store`. Where the store knows its users by their database login
/// (PostgreSQL), the login acts, and `asked` (`--as`, `HOLDFAST_AS`, the config
/// file's identity) may name someone else only when the login holds `delegate`
/// ([`access::act_for`]); otherwise `asked`, else `local_user`, acts as the
/// store's grants define it.
pub async fn identify(
    store: &dyn Store,
    asked: Option<&str>,
    local_user: &str,
    policy: Option<String>,
) -> Result<Actor, ReviewError> {
    match store.login().await? {
        Some(login) => access::act_for(&store.grants().await?, &login, asked, policy)
            .map_err(ReviewError::Refused),
        None => Ok(actor(store, asked.unwrap_or(local_user), policy).await?),
    }
}

/// How many ids sharing the typed id's first characters a near-miss hint looks at.
const NEAR_ID_CANDIDATES: u64 = 500;

/// A visible operation id one typo away from `id`, for a hint. Only ids the
/// session may see are candidates, so a hint never leaks another tenant's id.
async fn near_id(session: &Session, id: &OperationId) -> Option<OperationId> {
    let typed = id.as_str();
    let stem: String = typed.chars().take(2).collect();
    let filter = OperationFilter {
        search: Some(stem),
        ..OperationFilter::default()
    };
    let page = Page::first(NEAR_ID_CANDIDATES);
    let (rows, _) = session.list(&filter, SortOrder::Id, page).await.ok()?;
    let ids: Vec<&str> = rows.iter().map(|r| r.operation.id.as_str()).collect();
    crate::core::names::nearest(typed, ids.iter().copied())
        .and_then(|near| OperationId::parse(near).ok())
}

/// One operation, if the session's actor may see it (G7).
pub async fn load(session: &Session, id: &OperationId) -> Result<OperationDetail, ReviewError> {
    match session.detail(id).await {
        Ok(detail) => Ok(detail),
        Err(StoreError::NotFound(_)) => Err(ReviewError::NotFound {
            id: id.clone(),
            visible: session.actor().visible_tenants(),
            suggestion: near_id(session, id).await,
        }),
        Err(e) => Err(e.into()),
    }
}

/// The G8 conflict for a decision made against `expected` when the operation is at
/// another version now, naming the last change from its audit rows.
fn stale(detail: &OperationDetail, expected: i64) -> ReviewError {
    let last = detail.audit.last();
    ReviewError::Conflict {
        id: detail.row.operation.id.clone(),
        by: last.map_or_else(|| "another process".into(), |r| r.draft.by.clone()),
        at: last.map_or(detail.row.state_since, |r| r.draft.at),
        expected,
        current: detail.row.version,
    }
}

/// Decides `action` on an already loaded operation, against the version the
/// reviewer saw (`expected`, default the loaded one), and commits the effect. The
/// store re-checks the version in the same transaction (G8).
pub async fn apply_decided(
    session: &Session,
    detail: &OperationDetail,
    action: &Action,
    rationale: &Rationale,
    expected: Option<i64>,
    now: DateTime<Utc>,
) -> Result<Applied, ReviewError> {
    let expected = expected.unwrap_or(detail.row.version);
    if expected != detail.row.version {
        return Err(stale(detail, expected));
    }
    let effect = rules::decide(detail, action, session.actor(), rationale, expected, now)
        .map_err(ReviewError::Refused)?;
    let audit = session.commit(effect.commit.clone()).await?;
    Ok(Applied { effect, audit })
}

/// The one call for a reviewer action on operation `id`: load it fresh, decide
/// against the version the reviewer saw (`expected`; `None` takes the version just
/// loaded), commit, and return the effect with its audit row — or the refusal
/// (naming its rule) or the conflict (naming who changed it and when).
pub async fn apply(
    session: &Session,
    id: &OperationId,
    action: &Action,
    rationale: &Rationale,
    expected: Option<i64>,
    now: DateTime<Utc>,
) -> Result<Applied, ReviewError> {
    let detail = load(session, id).await?;
    apply_decided(session, &detail, action, rationale, expected, now).await
}

/// The effect `action` would have now, without writing anything: the preview the
/// dialog shows before its second step, and `review --dry-run`.
pub async fn preview(
    session: &Session,
    id: &OperationId,
    action: &Action,
    rationale: &Rationale,
    now: DateTime<Utc>,
) -> Result<(OperationDetail, Effect), ReviewError> {
    let detail = load(session, id).await?;
    let actor = session.actor();
    let effect = rules::decide(&detail, action, actor, rationale, detail.row.version, now)
        .map_err(ReviewError::Refused)?;
    Ok((detail, effect))
}

/// How many operations a bulk selection reads per page.
pub const SELECT_PAGE: u64 = 500;

/// Every operation matching `filter` that the session's actor may see, in urgency
/// order, with its full detail: the selection of bulk triage and of a filtered
/// export.
pub async fn select(
    session: &Session,
    filter: &OperationFilter,
) -> Result<Vec<OperationDetail>, ReviewError> {
    select_in_pages(session, filter, SELECT_PAGE).await
}

/// [`select`], read `page` keys at a time: each page resumes after the key of
/// the last row of the one before (the queue's order, the id breaking ties), so
/// no row is read twice or skipped and no page costs more than the first.
pub async fn select_in_pages(
    session: &Session,
    filter: &OperationFilter,
    page: u64,
) -> Result<Vec<OperationDetail>, ReviewError> {
    let mut details = Vec::new();
    each_in_pages(session, filter, page, |detail| details.push(detail)).await?;
    Ok(details)
}

/// Hands every operation of the selection to `each`, in urgency order, reading
/// `page` keys at a time; each detail is dropped once handed over, so what stays
/// in memory is what `each` keeps, not the selection.
async fn each_in_pages(
    session: &Session,
    filter: &OperationFilter,
    page: u64,
    mut each: impl FnMut(OperationDetail),
) -> Result<(), ReviewError> {
    let page = page.max(1);
    let mut after = None;
    loop {
        let keys = session.urgency_page(filter, after.as_ref(), page).await?;
        for key in &keys {
            each(load(session, &crate::store::plan::codec::parse_id(&key.id)?).await?);
        }
        let full = keys.len() as u64 == page;
        match keys.into_iter().last() {
            Some(last) if full => after = Some(last),
            _ => return Ok(()),
        }
    }
}

/// How an export is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportForm {
    Json,
    Markdown,
}

/// `export --filter`: the operations matching `filter` exported to `out` as they
/// are read, a bundle at a time, so memory follows the page, not the selection.
/// JSON is written in one pass (the hash comes last). Markdown names the hash
/// and the count first, so the selection is read twice: once to hash it, once to
/// write it, and a selection that changed in between is an error, not a document
/// whose hash does not match. Returns the document without its bundles, and how
/// many there were.
pub async fn export_in_pages(
    session: &Session,
    filter: &OperationFilter,
    page: u64,
    form: ExportForm,
    now: DateTime<Utc>,
    out: &mut dyn std::io::Write,
) -> anyhow::Result<(export::Export, usize)> {
    let actor = session.actor();
    let mut written: std::io::Result<()> = Ok(());
    let mut write = |text: &str| {
        if written.is_ok() {
            written = out.write_all(text.as_bytes());
        }
    };
    let mut stream = export::Stream::new(actor, now);
    let expected = match form {
        ExportForm::Json => {
            let (head, _) = export::json_around_bundles(&export::Stream::new(actor, now).finish());
            write(&head);
            each_in_pages(session, filter, page, |detail| {
                let first = stream.is_empty();
                let (_, exported) = stream.push(&detail);
                write(&export::json_bundle(&exported, first));
            })
            .await?;
            None
        }
        ExportForm::Markdown => {
            let mut hashed = export::Stream::new(actor, now);
            each_in_pages(session, filter, page, |detail| {
                hashed.push(&detail);
            })
            .await?;
            let n = hashed.len();
            let first = hashed.finish();
            write(&export::markdown_head(&first, n));
            each_in_pages(session, filter, page, |detail| {
                write(&export::markdown_bundle(&stream.push(&detail).0));
            })
            .await?;
            Some(first.content_hash)
        }
    };
    let n = stream.len();
    let document = stream.finish();
    if form == ExportForm::Json {
        let (_, tail) = export::json_around_bundles(&document);
        write(export::json_after_bundles(n));
        write(&tail);
        write("\n");
    }
    written?;
    if let Some(hash) = expected
        && hash != document.content_hash
    {
        anyhow::bail!(
            "the selection changed while it was exported (hash {hash}, then {}); nothing written is evidence: export again",
            document.content_hash
        );
    }
    Ok((document, n))
}

/// One line of a bulk triage plan: the dry run's line and the version the
/// selection read, which the apply checks against (G8).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub line: TriageLine,
    pub version: i64,
}

/// The dry run of `action` over the operations matching `filter`, in the dry
/// run's order (bucket, then id): read a page at a time, each detail judged and
/// dropped, so memory follows the lines (a few hundred bytes each), not the
/// details behind them.
pub async fn triage_plan(
    session: &Session,
    filter: &OperationFilter,
    action: &Action,
    rationale: &Rationale,
    now: DateTime<Utc>,
) -> Result<Vec<Planned>, ReviewError> {
    triage_plan_in_pages(session, filter, action, rationale, now, SELECT_PAGE).await
}

/// [`triage_plan`], reading `page` keys at a time.
pub async fn triage_plan_in_pages(
    session: &Session,
    filter: &OperationFilter,
    action: &Action,
    rationale: &Rationale,
    now: DateTime<Utc>,
    page: u64,
) -> Result<Vec<Planned>, ReviewError> {
    let actor = session.actor();
    let mut plan = Vec::new();
    each_in_pages(session, filter, page, |detail| {
        plan.push(Planned {
            line: triage::line(&detail, action, actor, rationale, now),
            version: detail.row.version,
        });
    })
    .await?;
    plan.sort_by(|a, b| triage::order(&a.line, &b.line));
    Ok(plan)
}

/// One planned line applied: the operation loaded fresh, decided and committed
/// against the version the plan read, so a change since then is a conflict, not
/// a decision on what nobody saw. Only this operation's detail is in memory.
pub async fn triage_apply_planned(
    session: &Session,
    planned: &Planned,
    action: &Action,
    rationale: &Rationale,
    now: DateTime<Utc>,
) -> Result<Applied, ReviewError> {
    apply(
        session,
        &planned.line.id,
        action,
        rationale,
        Some(planned.version),
        now,
    )
    .await
}

/// How often a grant change is decided again when another one landed first.
const GRANT_ATTEMPTS: usize = 3;

/// Grants or revokes one role on one tenant as `by`; `Ok(None)` when there was
/// nothing to change. A change decided on grants that moved meanwhile is decided
/// again on the new ones.
pub async fn change_grant(
    session: &Session,
    by: &str,
    policy: Option<String>,
    request: &GrantRequest,
    rationale: Option<&Rationale>,
    now: DateTime<Utc>,
) -> Result<Option<(GrantChange, AuditRow)>, ReviewError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let grants = session.all_grants().await?;
        let Some(change) =
            access::decide_grant(&grants, by, policy.clone(), request, rationale, now)
                .map_err(ReviewError::Refused)?
        else {
            return Ok(None);
        };
        match session.change_grant(change.clone()).await {
            Ok(row) => return Ok(Some((change, row))),
            Err(StoreError::GrantsChanged) if attempt < GRANT_ATTEMPTS => continue,
            Err(e) => return Err(e.into()),
        }
    }
}
