//! The console's protocol: every [`Message`] that reaches `update` (keys, polls,
//! the runner's answers) and every [`Effect`] `update` asks the runner for. A
//! screen's request carries a [`Tag`]: the screen that asked, and the serial its
//! [`Latest`](super::latest::Latest) gave it. The answer carries the same tag
//! back; `App` hands it, as an [`Answer`], to the screen that asked.

use std::time::Duration;

use chrono::{DateTime, Utc};
use crossterm::event::{KeyEvent, MouseEvent};

use super::screens::Asker;
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
use crate::store::{Judging, Live, OperationFilter};
use crate::tools::ToolInventory;

/// Which screen asked for an effect, and which of its requests it is: the
/// effect carries it to the runner, its answer carries it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tag {
    /// The screen the answer goes back to.
    pub by: Asker,
    /// The request's serial from the screen's [`Latest`](super::latest::Latest):
    /// an answer to a request since replaced is dropped by the screen.
    pub serial: u64,
}

/// An effect's answer as the screen that asked takes it
/// ([`Screen::answer`](super::screens::Screen::answer)), its tag left with the
/// console that routed it. One variant per answering [`Message`].
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A page of the queue ([`Message::Listed`]).
    Listed(Result<Listing, String>),
    /// One operation in full ([`Message::Loaded`]).
    Loaded(Result<Box<OperationDetail>, String>),
    /// The metrics report ([`Message::Metrics`]).
    Metrics(Result<Box<Report>, String>),
    /// How far the report asked for has got judging ([`Message::Judging`]).
    Judging(Judging),
    /// A page of audit rows ([`Message::Audit`]).
    Audit(Result<Box<AuditPage>, String>),
    /// Every tool with its inventory ([`Message::Tools`]).
    Tools(Result<Vec<ToolInventory>, String>),
    /// A pause in typing is over ([`Message::Debounced`]).
    Debounced,
    /// An apply's verdict ([`Message::Reviewed`]).
    Reviewed(Verdict),
    /// A lookup, recorded or not ([`Message::LookedUp`]).
    LookedUp(Result<Box<LookupShown>, String>),
    /// Every match of the mark-all request ([`Message::Selected`]).
    Selected(Result<Vec<OperationId>, String>),
    /// The marked operations that can be read ([`Message::BulkLoaded`]).
    BulkLoaded(Result<(Vec<OperationId>, Vec<String>), String>),
    /// The bulk dry run ([`Message::BulkJudged`]).
    BulkJudged(Result<(Vec<Planned>, Vec<String>), String>),
    /// Each operation's result of the bulk apply ([`Message::BulkApplied`]).
    BulkApplied(Vec<(TriageLine, Verdict)>),
}

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
        generation: Tag,
        result: Result<Box<Report>, String>,
    },
    /// How far the report asked for by the request tagged `generation` has
    /// got judging the operations the store has not judged yet (sent while it
    /// is computed, before [`Message::Metrics`]).
    Judging { generation: Tag, progress: Judging },
    /// One page of audit rows, answering the request tagged `generation`.
    Audit {
        generation: Tag,
        result: Result<Box<AuditPage>, String>,
    },
    /// Every tool the store knows with its inventory, answering the request
    /// tagged `generation`.
    Tools {
        generation: Tag,
        result: Result<Vec<ToolInventory>, String>,
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
        generation: Tag,
        result: Result<Listing, String>,
    },
    /// One operation in full, answering the request tagged `generation`.
    Loaded {
        generation: Tag,
        result: Result<Box<OperationDetail>, String>,
    },
    /// The pause asked for by the [`Effect::Debounce`] tagged `generation` is
    /// over: if nothing was typed since, the search runs.
    Debounced { generation: Tag },
    /// The answer of the review apply tagged `generation`.
    Reviewed { generation: Tag, verdict: Verdict },
    /// The lookup tagged `generation`, recorded (or why it could not be).
    LookedUp {
        generation: Tag,
        result: Result<Box<LookupShown>, String>,
    },
    /// Every operation matching the queue's filter and search, on every page,
    /// answering the mark-all request tagged `generation`.
    Selected {
        generation: Tag,
        result: Result<Vec<OperationId>, String>,
    },
    /// The marked operations that could be read for the bulk dialog, by id,
    /// with the ones that could not (and why), answering the request tagged
    /// `generation`.
    BulkLoaded {
        generation: Tag,
        result: Result<(Vec<OperationId>, Vec<String>), String>,
    },
    /// The bulk dialog's dry run, in its order, with the marked operations that
    /// could no longer be read, answering the request tagged `generation`.
    BulkJudged {
        generation: Tag,
        result: Result<(Vec<Planned>, Vec<String>), String>,
    },
    /// Each operation's result of the bulk apply tagged `generation`.
    BulkApplied {
        generation: Tag,
        results: Vec<(TriageLine, Verdict)>,
    },
}

/// Work for the effects runner; its answers come back as messages carrying the
/// same tag (`generation`), so that each goes to the screen that asked and an
/// answer to a request since replaced is dropped. The chain's verify is the
/// console's own request, tagged by the console's serial alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// Fetch one page of the queue and the header counts.
    List {
        generation: Tag,
        query: Box<ListQuery>,
    },
    /// Compute the metrics report over the session's operations at `now`.
    Metrics { generation: Tag, now: DateTime<Utc> },
    /// Read one page of the session's audit rows: the newest, or those below
    /// `before`.
    Audit {
        generation: Tag,
        before: Option<i64>,
    },
    /// Read every tool the store knows, each with its holds counted at `now`
    /// and its whole inventory.
    Tools { generation: Tag, now: DateTime<Utc> },
    /// Verify the audit chain (at start and whenever the store moves), so that
    /// a broken chain shows on every screen.
    Verify { generation: u64 },
    /// Fetch everything stored about one operation.
    Load { generation: Tag, id: OperationId },
    /// Answer with [`Message::Debounced`] after `delay`, so that a search runs
    /// once typing pauses rather than once per key.
    Debounce { generation: Tag, delay: Duration },
    /// Apply a reviewer action confirmed in the dialog, against the version shown
    /// (`expected`); answered by [`Message::Reviewed`].
    Review {
        generation: Tag,
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
        generation: Tag,
        id: OperationId,
        now: DateTime<Utc>,
        frozen: bool,
    },
    /// Select every operation matching `filter` in the session's tenants (G7),
    /// on every page; answered by [`Message::Selected`].
    SelectAll {
        generation: Tag,
        filter: Box<OperationFilter>,
    },
    /// Read the marked operations for the bulk dialog, one at a time, keeping
    /// only which can be read; answered by [`Message::BulkLoaded`].
    BulkLoad {
        generation: Tag,
        ids: Vec<OperationId>,
    },
    /// The dry run of a bulk action: each of `ids` read and judged one at a
    /// time, its detail dropped once judged; answered by [`Message::BulkJudged`].
    BulkJudge {
        generation: Tag,
        ids: Vec<OperationId>,
        action: Box<Action>,
        rationale: Rationale,
        now: DateTime<Utc>,
    },
    /// Apply one action to every operation of a dry run, one audited
    /// transition each, against the version the dry run read; answered by
    /// [`Message::BulkApplied`].
    BulkApply {
        generation: Tag,
        planned: Vec<Planned>,
        action: Box<Action>,
        rationale: Rationale,
        now: DateTime<Utc>,
    },
    /// Leave the console.
    Quit,
}
