//! The console's protocol: every [`Message`] that reaches `update` (keys, polls,
//! the runner's answers) and every [`Effect`] `update` asks the runner for. Each
//! answer carries the tag its request got from a [`Latest`](super::latest::Latest).

use std::time::Duration;

use chrono::{DateTime, Utc};
use crossterm::event::{KeyEvent, MouseEvent};

use super::screens::audit::AuditPage;
use super::screens::lookup::LookupShown;
use super::screens::queue::{ListQuery, Listing};
use super::screens::review::Verdict;
use crate::core::audit::ChainStatus;
use crate::core::detail::OperationDetail;
use crate::core::ids::OperationId;
use crate::core::metrics::Report;
use crate::core::rules::{Action, Rationale};
use crate::core::triage::TriageLine;
use crate::review::Planned;
use crate::store::{Live, OperationFilter};

/// Everything that can happen to the console.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A key the reviewer pressed.
    Key(KeyEvent),
    /// A mouse event: the wheel scrolls the pane under the pointer.
    Mouse(MouseEvent),
    /// The terminal now has this many columns and rows.
    Resize(u16, u16),
    /// The store's live status (the newest audit `seq`, a cheap change marker,
    /// and whether the connection holds), sent when it moves and on every clock
    /// tick with the time now.
    Poll {
        live: Result<Live, String>,
        now: DateTime<Utc>,
    },
    /// The metrics report, answering the request tagged `generation`.
    Metrics {
        generation: u64,
        result: Result<Box<Report>, String>,
    },
    /// One page of audit rows, answering the request tagged `generation`.
    Audit {
        generation: u64,
        result: Result<Box<AuditPage>, String>,
    },
    /// The audit chain's status, answering the verify tagged `generation`.
    Verified {
        generation: u64,
        result: Result<ChainStatus, String>,
        /// An owner acknowledged the break the store records (audited).
        acknowledged: bool,
    },
    /// A page of the queue, answering the request tagged `generation`.
    Listed {
        generation: u64,
        result: Result<Listing, String>,
    },
    /// One operation in full, answering the request tagged `generation`.
    Loaded {
        generation: u64,
        result: Result<Box<OperationDetail>, String>,
    },
    /// The pause asked for by the [`Effect::Debounce`] tagged `generation` is
    /// over: if nothing was typed since, the search runs.
    Debounced { generation: u64 },
    /// The answer of the review apply tagged `generation`.
    Reviewed { generation: u64, verdict: Verdict },
    /// The lookup tagged `generation`, recorded (or why it could not be).
    LookedUp {
        generation: u64,
        result: Result<Box<LookupShown>, String>,
    },
    /// Every operation matching the queue's filter and search, on every page,
    /// answering the mark-all request tagged `generation`.
    Selected {
        generation: u64,
        result: Result<Vec<OperationId>, String>,
    },
    /// The marked operations that could be read for the bulk dialog, by id,
    /// with the ones that could not (and why), answering the request tagged
    /// `generation`.
    BulkLoaded {
        generation: u64,
        result: Result<(Vec<OperationId>, Vec<String>), String>,
    },
    /// The bulk dialog's dry run, in its order, with the marked operations that
    /// could no longer be read, answering the request tagged `generation`.
    BulkJudged {
        generation: u64,
        result: Result<(Vec<Planned>, Vec<String>), String>,
    },
    /// Each operation's result of the bulk apply tagged `generation`.
    BulkApplied {
        generation: u64,
        results: Vec<(TriageLine, Verdict)>,
    },
}

/// Work for the effects runner; its answers come back as messages carrying the
/// same generation, so an answer to a request since replaced is dropped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Fetch one page of the queue and the header counts.
    List {
        generation: u64,
        query: Box<ListQuery>,
    },
    /// Compute the metrics report over the session's operations at `now`.
    Metrics { generation: u64, now: DateTime<Utc> },
    /// Read one page of the session's audit rows: the newest, or those below
    /// `before`.
    Audit {
        generation: u64,
        before: Option<i64>,
    },
    /// Verify the audit chain (at start and whenever the store moves), so that
    /// a broken chain shows on every screen.
    Verify { generation: u64 },
    /// Fetch everything stored about one operation.
    Load { generation: u64, id: OperationId },
    /// Answer with [`Message::Debounced`] after `delay`, so that a search runs
    /// once typing pauses rather than once per key.
    Debounce { generation: u64, delay: Duration },
    /// Apply a reviewer action confirmed in the dialog, against the version shown
    /// (`expected`); answered by [`Message::Reviewed`].
    Review {
        generation: u64,
        id: OperationId,
        action: Box<Action>,
        rationale: Rationale,
        expected: i64,
        now: DateTime<Utc>,
    },
    /// Look one hold up at its provider and record it as a reconcile, dated on
    /// the console's clock (`frozen` at `now`, or the system's); answered by
    /// [`Message::LookedUp`].
    LookUp {
        generation: u64,
        id: OperationId,
        now: DateTime<Utc>,
        frozen: bool,
    },
    /// Select every operation matching `filter` in the session's tenants (G7),
    /// on every page; answered by [`Message::Selected`].
    SelectAll {
        generation: u64,
        filter: Box<OperationFilter>,
    },
    /// Read the marked operations for the bulk dialog, one at a time, keeping
    /// only which can be read; answered by [`Message::BulkLoaded`].
    BulkLoad {
        generation: u64,
        ids: Vec<OperationId>,
    },
    /// The dry run of a bulk action: each of `ids` read and judged one at a
    /// time, its detail dropped once judged; answered by [`Message::BulkJudged`].
    BulkJudge {
        generation: u64,
        ids: Vec<OperationId>,
        action: Box<Action>,
        rationale: Rationale,
        now: DateTime<Utc>,
    },
    /// Apply one action to every operation of a dry run, one audited
    /// transition each, against the version the dry run read; answered by
    /// [`Message::BulkApplied`].
    BulkApply {
        generation: u64,
        planned: Vec<Planned>,
        action: Box<Action>,
        rationale: Rationale,
        now: DateTime<Utc>,
    },
    /// Leave the console.
    Quit,
}
