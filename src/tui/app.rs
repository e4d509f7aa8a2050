//! The console's state and its one `update` function. Every key, mouse event,
//! resize, poll and store answer arrives as a [`Message`]; `update` changes the
//! state and returns the [`Effect`]s to run (store queries, quitting). Nothing here
//! awaits, draws or touches the store, so every flow can be driven by a test.

use std::time::Duration;

use chrono::{DateTime, Utc};
use crossterm::event::{KeyEvent, KeyEventKind, MouseEvent, MouseEventKind};
use ratatui::layout::Rect;

mod tabs;

pub use tabs::Page;

use super::audit_tab::{AuditPage, AuditState};
use super::bulk::{self, BulkDialog};
use super::detail::{Applied as DetailApplied, DetailState, Loaded};
use super::filter;
use super::keymap::{self, Command, Context};
use super::layout::{self, Areas, Pane};
use super::metrics_tab::MetricsState;
use super::queue::{ListQuery, Listing, QueueState, SORTS, Tab};
use super::review::{Keyed, Request, ReviewDialog, Verdict, dialog_key};
use super::theme::Theme;
use super::view;
use super::widgets::{Prompt, max_scroll};
use crate::core::ids::OperationId;
use crate::core::metrics::Report;
use crate::core::model::OperationDetail;
use crate::core::rules::{Action, Actor, Rationale};
use crate::core::sanitize::Clean;
use crate::core::triage::TriageLine;
use crate::store::{Link, Live, OperationFilter};

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
    /// The newest audit rows and the chain's status, answering the request
    /// tagged `generation`.
    Audit {
        generation: u64,
        result: Result<Box<AuditPage>, String>,
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
    /// Every operation matching the queue's filter and search, on every page,
    /// answering the mark-all request tagged `generation`.
    Selected {
        generation: u64,
        result: Result<Vec<OperationId>, String>,
    },
    /// The marked operations read for the bulk dialog, with the ones that could
    /// not be read (and why), answering the request tagged `generation`.
    BulkLoaded {
        generation: u64,
        result: Result<(Vec<OperationDetail>, Vec<String>), String>,
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
    /// Compute the metrics report over the operations of `tenants` (all when
    /// `None`, G7) at `now`.
    Metrics {
        generation: u64,
        tenants: Option<Vec<String>>,
        now: DateTime<Utc>,
    },
    /// Read the newest audit rows (of `tenants`' operations when given, G7) and
    /// verify the chain.
    Audit {
        generation: u64,
        tenants: Option<Vec<String>>,
    },
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
        actor: Box<Actor>,
        rationale: Rationale,
        expected: i64,
        now: DateTime<Utc>,
    },
    /// Select every operation matching `filter` that `actor` may see (G7), on
    /// every page; answered by [`Message::Selected`].
    SelectAll {
        generation: u64,
        filter: Box<OperationFilter>,
        actor: Box<Actor>,
        now: DateTime<Utc>,
    },
    /// Read the marked operations for the bulk dialog; answered by
    /// [`Message::BulkLoaded`].
    BulkLoad {
        generation: u64,
        ids: Vec<OperationId>,
        actor: Box<Actor>,
    },
    /// Apply one action to every operation of a bulk selection, one audited
    /// transition each; answered by [`Message::BulkApplied`].
    BulkApply {
        generation: u64,
        selection: Vec<OperationDetail>,
        action: Box<Action>,
        actor: Box<Actor>,
        rationale: Rationale,
        now: DateTime<Utc>,
    },
    /// Leave the console.
    Quit,
}

/// Which prompt is open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptKind {
    Search,
    Filter,
}

/// An open prompt, with the text it started from (restored on cancel).
#[derive(Debug, Clone)]
pub struct PromptState {
    pub kind: PromptKind,
    pub input: Prompt,
    before: String,
    /// The search was changed while the prompt was open.
    touched: bool,
}

/// A one-line message in the status bar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    pub text: Clean,
    /// Something went wrong or needs attention.
    pub alert: bool,
}

/// How the console starts.
#[derive(Debug, Clone)]
pub struct Options {
    pub actor: Actor,
    /// The identity is only claimed (`--as`, `HOLDFAST_AS` or the config file on a
    /// store without logins), not the OS user's or a database login: the header
    /// says so, since nothing checked it.
    pub claimed: bool,
    pub now: DateTime<Utc>,
    /// The clock is frozen (`--now`, the demo): shown in the header.
    pub frozen: bool,
    pub color: bool,
    /// Where the logs go, shown in the help overlay.
    pub log_path: Option<String>,
}

/// The whole state of the console.
#[derive(Debug, Clone)]
pub struct App {
    pub theme: Theme,
    pub actor: Actor,
    /// See [`Options::claimed`].
    pub claimed: bool,
    pub now: DateTime<Utc>,
    pub frozen: bool,
    pub size: Rect,
    pub focus: Pane,
    pub help: bool,
    pub prompt: Option<PromptState>,
    pub queue: QueueState,
    pub detail: DetailState,
    pub status: Option<Status>,
    pub log_path: Option<Clean>,
    /// The review dialog, when open.
    pub review: Option<ReviewDialog>,
    /// The apply the dialog waits on.
    review_pending: Option<u64>,
    /// An apply just answered: the reload it caused replaces the detail shown
    /// instead of being flagged as someone else's change.
    review_reload: bool,
    /// The bulk triage dialog, when open.
    pub bulk: Option<BulkDialog>,
    /// The bulk load or apply the dialog waits on.
    bulk_pending: Option<u64>,
    /// The mark-all selection waited on.
    select_pending: Option<u64>,
    /// The queue or another tab; an operation opened from a tab shows in the
    /// detail panes and `Esc` comes back to the tab.
    pub page: Page,
    pub metrics: MetricsState,
    pub audit: AuditState,
    /// Whether the store's connection holds (a banner shows while it does not).
    pub link: Link,
    head: Option<i64>,
    /// The debounce a typed search waits on.
    search_pending: Option<u64>,
    /// The last poll could not reach the store (its message is on screen).
    unreachable: bool,
    generation: u64,
}

/// Lines the mouse wheel scrolls a text pane by.
const WHEEL_LINES: i64 = 3;

/// How long typing must pause before the search runs.
pub const SEARCH_PAUSE: Duration = Duration::from_millis(150);

impl App {
    pub fn new(options: Options, size: Rect) -> Self {
        App {
            theme: Theme {
                color: options.color,
            },
            queue: QueueState::new(options.actor.visible_tenants()),
            actor: options.actor,
            claimed: options.claimed,
            now: options.now,
            frozen: options.frozen,
            size,
            focus: Pane::Queue,
            help: false,
            prompt: None,
            detail: DetailState::default(),
            status: None,
            log_path: options.log_path.as_deref().map(Clean::new),
            review: None,
            review_pending: None,
            review_reload: false,
            bulk: None,
            bulk_pending: None,
            select_pending: None,
            page: Page::Queue,
            metrics: MetricsState::default(),
            audit: AuditState::default(),
            link: Link::Connected,
            head: None,
            search_pending: None,
            unreachable: false,
            generation: 0,
        }
    }

    /// The first effects: the first page of the queue.
    pub fn init(&mut self) -> Vec<Effect> {
        self.list(None, true)
    }

    /// Applies one message; returns the effects to run.
    pub fn update(&mut self, message: Message) -> Vec<Effect> {
        match message {
            Message::Key(key) if key.kind == KeyEventKind::Press => self.key(key),
            Message::Key(_) => Vec::new(),
            Message::Mouse(mouse) => self.mouse(mouse),
            Message::Resize(width, height) => {
                self.size = Rect::new(0, 0, width, height);
                let mut effects = Vec::new();
                if self.queue.scroll_to_selection(self.page_rows()) {
                    effects.extend(self.list(self.queue.selected_id.clone(), false));
                }
                self.clamp_scrolls();
                effects
            }
            Message::Poll { live, now } => self.poll(live, now),
            Message::Metrics { generation, result } => {
                self.metrics.apply(generation, result.map(|r| *r));
                Vec::new()
            }
            Message::Audit { generation, result } => {
                self.audit.apply(generation, result.map(|p| *p));
                Vec::new()
            }
            Message::Listed { generation, result } => self.listed(generation, result),
            Message::Loaded { generation, result } => self.loaded(generation, result),
            Message::Debounced { generation } => {
                if self.search_pending != Some(generation) {
                    return Vec::new();
                }
                self.search_pending = None;
                self.queue.restart();
                self.list(None, false)
            }
            Message::Reviewed {
                generation,
                verdict,
            } => self.reviewed(generation, verdict),
            Message::Selected { generation, result } => self.selected_all(generation, result),
            Message::BulkLoaded { generation, result } => {
                if self.bulk_pending.take_if(|g| *g == generation).is_none() {
                    return Vec::new();
                }
                if let Some(dialog) = self.bulk.as_mut() {
                    match result {
                        Ok((selection, missing)) => dialog.loaded(selection, missing),
                        Err(e) => dialog.failed(e),
                    }
                }
                Vec::new()
            }
            Message::BulkApplied {
                generation,
                results,
            } => self.bulk_applied(generation, results),
        }
    }

    /// The areas of the screen as it is now.
    pub fn areas(&self) -> Areas {
        layout::areas(self.size, self.focus, self.has_items())
    }

    /// Whether the operation open has an items pane.
    pub fn has_items(&self) -> bool {
        self.detail.current().is_some_and(Loaded::has_items)
    }

    /// Whether the detail is on screen (side by side, or opened).
    pub fn detail_visible(&self) -> bool {
        layout::is_wide(self.size) || self.focus != Pane::Queue
    }

    /// Where the keys go now.
    pub fn context(&self) -> Context {
        if self.prompt.is_some() {
            Context::Prompt
        } else if self.help {
            Context::Help
        } else {
            self.help_context()
        }
    }

    /// The context the help overlay describes (the one under it).
    pub fn help_context(&self) -> Context {
        if self.review.is_some() {
            Context::Review
        } else if self.bulk.is_some() {
            Context::Bulk
        } else if self.focus == Pane::Queue && self.page == Page::Metrics {
            Context::Metrics
        } else if self.focus == Pane::Queue && self.page == Page::Audit {
            Context::Audit
        } else if self.focus == Pane::Queue {
            Context::Queue
        } else {
            Context::Detail
        }
    }

    /// Rows of the queue table (its page size).
    pub fn page_rows(&self) -> u16 {
        layout::areas(self.size, Pane::Queue, false)
            .queue
            .map_or(1, |r| layout::inner(r).height.saturating_sub(1).max(1))
    }

    fn next_generation(&mut self) -> u64 {
        self.generation += 1;
        self.generation
    }

    fn say(&mut self, text: &str, alert: bool) {
        self.status = Some(Status {
            text: Clean::new(text),
            alert,
        });
    }

    /// A request for the queue page, keeping the selection on `keep`; `recount`
    /// asks for the header counts too (the store or the time changed).
    fn list(&mut self, keep: Option<OperationId>, recount: bool) -> Vec<Effect> {
        let generation = self.next_generation();
        let page_rows = self.page_rows();
        let query = self
            .queue
            .request(generation, page_rows, keep, recount, self.now);
        vec![Effect::List {
            generation,
            query: Box::new(query),
        }]
    }

    /// A request for the operation on top of the detail stack.
    fn load_top(&mut self) -> Vec<Effect> {
        let Some(id) = self.detail.top().map(|f| f.id.clone()) else {
            return Vec::new();
        };
        let generation = self.next_generation();
        self.detail.expect(generation, id.clone());
        vec![Effect::Load { generation, id }]
    }

    /// With the queue in focus the detail follows its selection.
    fn sync_root(&mut self) -> Vec<Effect> {
        if self.focus != Pane::Queue {
            return Vec::new();
        }
        match self.queue.selected_id.clone() {
            Some(id) if self.detail.set_root(&id) => self.load_top(),
            Some(_) => Vec::new(),
            None => {
                self.detail.clear();
                Vec::new()
            }
        }
    }

    /// Everything on screen, asked for again (the store changed).
    fn refresh(&mut self) -> Vec<Effect> {
        let mut effects = self.list(self.queue.selected_id.clone(), true);
        effects.extend(self.load_top());
        effects.extend(self.page_effects());
        effects
    }

    fn poll(&mut self, live: Result<Live, String>, now: DateTime<Utc>) -> Vec<Effect> {
        let mut effects = Vec::new();
        let back = self.link_moved(live.as_ref().map(|l| l.link).ok());
        let head = live.map(|l| l.head);
        if now.timestamp() != self.now.timestamp() {
            let requery = now.timestamp() / 10 != self.now.timestamp() / 10;
            self.now = now;
            self.detail.retime(&self.actor, now);
            if requery {
                effects.extend(self.list(self.queue.selected_id.clone(), true));
                effects.extend(self.page_effects());
            }
        }
        if head.is_ok() && self.unreachable {
            self.unreachable = false;
            self.say("the store answers again", false);
        }
        match head {
            Ok(head) if self.head != Some(head) => {
                let first = self.head.is_none();
                self.head = Some(head);
                if first {
                    effects.extend(self.list(self.queue.selected_id.clone(), true));
                } else {
                    effects = self.refresh();
                }
            }
            Ok(_) if back => effects = self.refresh(),
            Ok(_) => {}
            Err(e) => {
                self.unreachable = true;
                self.say(&format!("cannot reach the store: {e}"), true);
            }
        }
        effects
    }

    fn listed(&mut self, generation: u64, result: Result<Listing, String>) -> Vec<Effect> {
        let listing = match result {
            Ok(listing) => listing,
            Err(e) => {
                if self.queue.fail(generation) {
                    self.say(&format!("cannot list operations: {e}"), true);
                }
                return Vec::new();
            }
        };
        let page_rows = self.page_rows();
        let Some(applied) = self.queue.apply(generation, listing, page_rows) else {
            return Vec::new();
        };
        let mut effects = Vec::new();
        if let Some(lost) = applied.lost
            && self.queue.selected_id.as_ref() != Some(&lost)
        {
            let now_on = self
                .queue
                .selected_id
                .as_ref()
                .map_or_else(|| "nothing".to_owned(), ToString::to_string);
            self.say(
                &format!(
                    "{lost} is no longer on this page (it changed or left the list); the selection moved to {now_on}"
                ),
                true,
            );
        }
        if applied.refetch {
            effects.extend(self.list(None, false));
        }
        effects.extend(self.sync_root());
        effects
    }

    fn loaded(
        &mut self,
        generation: u64,
        result: Result<Box<OperationDetail>, String>,
    ) -> Vec<Effect> {
        let reading = self.detail_visible();
        match self.detail.apply(
            generation,
            result.map(|d| *d),
            &self.actor,
            self.now,
            reading,
        ) {
            Some(DetailApplied::Flagged) if std::mem::take(&mut self.review_reload) => {
                self.detail.accept_change();
            }
            Some(DetailApplied::Flagged) => {
                let id = self
                    .detail
                    .top()
                    .map(|f| f.id.to_string())
                    .unwrap_or_default();
                self.say(
                    &format!("⚠ {id} changed in the store while you were reading it: R shows the new version"),
                    true,
                );
            }
            Some(DetailApplied::Failed) => {
                let error = self
                    .detail
                    .top()
                    .and_then(|f| f.error.clone())
                    .unwrap_or_default();
                self.say(&error, true);
            }
            Some(DetailApplied::Shown) | None => {}
        }
        self.leave_missing_items();
        self.clamp_scrolls();
        Vec::new()
    }

    fn key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if self.prompt.is_some() {
            return self.prompt_key(key);
        }
        if self.review.is_some() && !self.help {
            return self.review_key(key);
        }
        if self.bulk.is_some() && !self.help {
            return self.bulk_key(key);
        }
        let Some(command) = keymap::lookup(self.context(), key) else {
            return Vec::new();
        };
        self.status = None;
        self.command(command)
    }

    fn command(&mut self, command: Command) -> Vec<Effect> {
        if let Some(effects) = self.tab_command(command) {
            return effects;
        }
        let page = i64::from(self.page_rows());
        match command {
            Command::Quit => vec![Effect::Quit],
            Command::Help => {
                self.help = !self.help;
                Vec::new()
            }
            Command::Up => self.step(-1),
            Command::Down => self.step(1),
            Command::PageUp => self.step(-self.pane_rows(page)),
            Command::PageDown => self.step(self.pane_rows(page)),
            Command::Top => self.step(i64::MIN / 2),
            Command::Bottom => self.step(i64::MAX / 2),
            Command::NextPane => self.cycle_pane(1),
            Command::PrevPane => self.cycle_pane(-1),
            Command::Open if self.focus == Pane::Queue => self.open(),
            Command::Open => self.follow(),
            Command::Back => self.back(),
            Command::Search | Command::Filter => {
                let kind = if command == Command::Search {
                    PromptKind::Search
                } else {
                    PromptKind::Filter
                };
                let before = match kind {
                    PromptKind::Search => self.queue.search.clone(),
                    PromptKind::Filter => filter::describe(&self.queue.filter),
                };
                let label = match kind {
                    PromptKind::Search => "search",
                    PromptKind::Filter => "filter",
                };
                self.prompt = Some(PromptState {
                    kind,
                    input: Prompt::new(label, &before),
                    before,
                    touched: false,
                });
                if kind == PromptKind::Filter {
                    self.say(
                        &format!(
                            "fields: {}; e.g. state:unknown,partial risk:high",
                            filter::FIELDS
                        ),
                        false,
                    );
                }
                Vec::new()
            }
            Command::ClearQuery => {
                if !self.queue.is_narrowed() {
                    return Vec::new();
                }
                self.queue.filter = Default::default();
                self.queue.search.clear();
                self.queue.restart();
                self.list(None, false)
            }
            Command::Sort => {
                let at = SORTS
                    .iter()
                    .position(|s| *s == self.queue.sort)
                    .unwrap_or(0);
                self.queue.sort = SORTS[(at + 1) % SORTS.len()];
                self.queue.restart();
                self.list(None, false)
            }
            Command::SwitchTab => {
                self.queue.tab = match self.queue.tab {
                    Tab::Held => Tab::All,
                    Tab::All => Tab::Held,
                };
                self.queue.restart();
                self.list(None, false)
            }
            Command::Reload => {
                if self.detail.accept_change() {
                    self.say("showing the new version", false);
                }
                self.refresh()
            }
            Command::NextLink | Command::PrevLink => {
                let delta = if command == Command::NextLink { 1 } else { -1 };
                if let Some(frame) = self.detail.top_mut() {
                    let count = frame.links().len();
                    if count > 0 {
                        let at = i64::try_from(frame.link).unwrap_or(0) + delta;
                        frame.link = usize::try_from(at.rem_euclid(count as i64)).unwrap_or(0);
                    }
                }
                Vec::new()
            }
            Command::Review => self.open_review(),
            Command::Mark => {
                match self.queue.toggle_mark() {
                    Some(marked) => {
                        let id = self
                            .queue
                            .selected_id
                            .as_ref()
                            .map(ToString::to_string)
                            .unwrap_or_default();
                        let verb = if marked { "marked" } else { "unmarked" };
                        self.say(
                            &format!("{id} {verb}; {} marked", self.queue.marked.len()),
                            false,
                        );
                    }
                    None => self.say("nothing to mark: the list is empty", false),
                }
                self.step(1)
            }
            Command::MarkAll => {
                let generation = self.next_generation();
                self.select_pending = Some(generation);
                self.say("marking every operation that matches…", false);
                vec![Effect::SelectAll {
                    generation,
                    filter: Box::new(self.queue.matching()),
                    actor: Box::new(self.actor.clone()),
                    now: self.now,
                }]
            }
            Command::ClearMarks => {
                let count = std::mem::take(&mut self.queue.marked).len();
                self.select_pending = None;
                self.say(&format!("{count} unmarked"), false);
                Vec::new()
            }
            Command::Bulk => self.open_bulk(),
            Command::Accept | Command::Cancel | Command::Show(_) => Vec::new(),
        }
    }

    /// Rows of the focused detail pane, for paging (the queue's page otherwise).
    fn pane_rows(&self, queue_page: i64) -> i64 {
        match self.areas().pane(self.focus) {
            Some(area) if self.focus != Pane::Queue => i64::from(layout::inner(area).height.max(1)),
            _ => queue_page,
        }
    }

    /// Moves the selection or scroll of the focused pane by `delta`.
    fn step(&mut self, delta: i64) -> Vec<Effect> {
        self.scroll(self.focus, delta)
    }

    fn scroll(&mut self, pane: Pane, delta: i64) -> Vec<Effect> {
        match pane {
            Pane::Queue => {
                let to = i64::try_from(self.queue.selected)
                    .unwrap_or(i64::MAX)
                    .saturating_add(delta);
                let mut effects = Vec::new();
                if self.queue.select(to, self.page_rows()) {
                    effects.extend(self.list(None, false));
                }
                effects.extend(self.sync_root());
                effects
            }
            Pane::Evidence | Pane::Timeline => {
                let limit = self.scroll_limit(pane);
                if let Some(frame) = self.detail.top_mut() {
                    let at = if pane == Pane::Evidence {
                        &mut frame.scroll.evidence
                    } else {
                        &mut frame.scroll.timeline
                    };
                    let to = i64::from(*at)
                        .saturating_add(delta)
                        .clamp(0, i64::from(limit));
                    *at = u16::try_from(to).unwrap_or(limit);
                }
                Vec::new()
            }
            Pane::Items => {
                let count = self.detail.current().map_or(0, |l| l.detail.items.len());
                if let Some(frame) = self.detail.top_mut() {
                    let last = i64::try_from(count.saturating_sub(1)).unwrap_or(0);
                    let to = i64::try_from(frame.scroll.items)
                        .unwrap_or(0)
                        .saturating_add(delta)
                        .clamp(0, last);
                    frame.scroll.items = usize::try_from(to).unwrap_or(0);
                }
                Vec::new()
            }
        }
    }

    /// The largest scroll offset of a text pane, from the height of what it shows.
    fn scroll_limit(&self, pane: Pane) -> u16 {
        let areas = self.areas();
        let Some(area) = areas
            .pane(pane)
            .or_else(|| layout::areas(self.size, pane, self.has_items()).pane(pane))
        else {
            return 0;
        };
        let inner = layout::inner(area);
        let height = view::content_height(self, pane, inner.width);
        max_scroll(height, inner.height)
    }

    /// Keeps every scroll offset within what the panes show now.
    fn clamp_scrolls(&mut self) {
        let evidence = self.scroll_limit(Pane::Evidence);
        let timeline = self.scroll_limit(Pane::Timeline);
        let items = self.detail.current().map_or(0, |l| l.detail.items.len());
        if let Some(frame) = self.detail.top_mut() {
            frame.scroll.evidence = frame.scroll.evidence.min(evidence);
            frame.scroll.timeline = frame.scroll.timeline.min(timeline);
            frame.scroll.items = frame.scroll.items.min(items.saturating_sub(1));
        }
    }

    /// Moves the focus off the items pane of an operation known to have none.
    /// One still loading keeps it (an answer for another operation says nothing
    /// about it).
    fn leave_missing_items(&mut self) {
        if self.focus == Pane::Items && self.detail.current().is_some_and(|l| !l.has_items()) {
            self.focus = Pane::Evidence;
        }
    }

    /// The panes `Tab` visits now. While the operation is still loading its items
    /// pane is visited too: keys typed ahead must not wrap back to the queue (if
    /// it turns out to have no items, the focus moves to the evidence).
    pub fn panes(&self) -> Vec<Pane> {
        let mut panes = vec![Pane::Queue];
        if let Some(top) = self.detail.top() {
            panes.extend([Pane::Evidence, Pane::Timeline]);
            if top.loaded.as_ref().is_none_or(Loaded::has_items) {
                panes.push(Pane::Items);
            }
        }
        panes
    }

    fn cycle_pane(&mut self, delta: i64) -> Vec<Effect> {
        let panes = self.panes();
        let at = panes.iter().position(|p| *p == self.focus).unwrap_or(0);
        let next = (at as i64 + delta).rem_euclid(panes.len() as i64);
        self.focus = panes[usize::try_from(next).unwrap_or(0)];
        let effects = self.sync_root();
        self.clamp_scrolls();
        effects
    }

    /// `Enter` on the queue: into the detail of the selected hold.
    fn open(&mut self) -> Vec<Effect> {
        if self.detail.top().is_none() {
            return Vec::new();
        }
        self.focus = Pane::Evidence;
        self.clamp_scrolls();
        Vec::new()
    }

    /// `Enter` in the detail: follow the selected link.
    fn follow(&mut self) -> Vec<Effect> {
        let Some(frame) = self.detail.top() else {
            return Vec::new();
        };
        let links = frame.links();
        let Some(link) = links.get(frame.link).or_else(|| links.first()) else {
            self.say("this operation links to no other", false);
            return Vec::new();
        };
        let id = link.id.clone();
        let from = frame.id.clone();
        if self.detail.stack.iter().any(|f| f.id == id) {
            self.say(
                &format!("{id} is already open further back: Esc returns to it"),
                false,
            );
            return Vec::new();
        }
        self.detail.push(id.clone());
        if self.focus == Pane::Queue {
            self.focus = Pane::Evidence;
        }
        self.say(&format!("opened {id} from {from}; Esc goes back"), false);
        self.load_top()
    }

    /// `Esc` in the detail: back along the links followed, then to the queue.
    fn back(&mut self) -> Vec<Effect> {
        if self.detail.pop() {
            self.leave_missing_items();
            return self.load_top();
        }
        self.focus = Pane::Queue;
        self.sync_root()
    }

    fn prompt_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Some(prompt) = self.prompt.as_mut() else {
            return Vec::new();
        };
        let kind = prompt.kind;
        match keymap::lookup(Context::Prompt, key) {
            Some(Command::Quit) => vec![Effect::Quit],
            Some(Command::Accept) => {
                let text = prompt.input.text();
                if kind == PromptKind::Search {
                    self.prompt = None;
                    if self.search_pending.take().is_some() {
                        self.queue.restart();
                        return self.list(None, false);
                    }
                    return Vec::new();
                }
                match filter::parse(&text) {
                    Ok(parsed) => {
                        self.prompt = None;
                        self.status = None;
                        if parsed == self.queue.filter {
                            return Vec::new();
                        }
                        self.queue.filter = parsed;
                        self.queue.restart();
                        self.list(None, false)
                    }
                    Err(e) => {
                        self.say(&e, true);
                        Vec::new()
                    }
                }
            }
            Some(Command::Cancel) => {
                let before = prompt.before.clone();
                let touched = prompt.touched;
                self.prompt = None;
                self.status = None;
                self.search_pending = None;
                if kind == PromptKind::Search && touched {
                    self.queue.search = before;
                    self.queue.restart();
                    return self.list(None, false);
                }
                Vec::new()
            }
            _ => {
                if !prompt.input.input(key) || kind != PromptKind::Search {
                    return Vec::new();
                }
                prompt.touched = true;
                self.queue.search = prompt.input.text();
                let generation = self.next_generation();
                self.search_pending = Some(generation);
                vec![Effect::Debounce {
                    generation,
                    delay: SEARCH_PAUSE,
                }]
            }
        }
    }

    /// `r`: the review dialog on the operation open (or selected).
    fn open_review(&mut self) -> Vec<Effect> {
        let Some(loaded) = self.detail.current() else {
            self.say("nothing to review: select a hold first", false);
            return Vec::new();
        };
        let dialog = ReviewDialog::new(loaded.detail.clone(), &self.actor, self.now);
        if dialog.allowed() == 0 {
            self.say(
                &format!(
                    "no action is allowed on {} now; the dialog lists why",
                    dialog.id()
                ),
                true,
            );
        }
        self.review = Some(dialog);
        Vec::new()
    }

    /// Handles what a dialog hands back to the console (quit, help); the rest is
    /// the dialog's own request, or the effects to run at once.
    fn dialog_request<R>(&mut self, keyed: Keyed<R>) -> Result<Option<R>, Vec<Effect>> {
        match keyed {
            Keyed::Request(request) => Ok(request),
            Keyed::Quit => Err(vec![Effect::Quit]),
            Keyed::Help => {
                self.help = true;
                Ok(None)
            }
        }
    }

    fn review_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Some(dialog) = self.review.as_mut() else {
            return Vec::new();
        };
        let keyed = dialog_key(dialog, key, &self.actor, self.now);
        let request = match self.dialog_request(keyed) {
            Ok(request) => request,
            Err(effects) => return effects,
        };
        match request {
            None => Vec::new(),
            Some(Request::Close) => {
                self.review = None;
                self.review_pending = None;
                Vec::new()
            }
            Some(Request::Apply {
                id,
                action,
                rationale,
                expected,
            }) => {
                let generation = self.next_generation();
                self.review_pending = Some(generation);
                vec![Effect::Review {
                    generation,
                    id,
                    action,
                    actor: Box::new(self.actor.clone()),
                    rationale,
                    expected,
                    now: self.now,
                }]
            }
        }
    }

    /// The apply answered: the verdict shows in the dialog, and the queue and the
    /// detail are asked for again (the operation changed, by us or by someone else).
    fn reviewed(&mut self, generation: u64, verdict: Verdict) -> Vec<Effect> {
        if self.review_pending != Some(generation) {
            return Vec::new();
        }
        self.review_pending = None;
        let (text, alert) = match &verdict {
            Verdict::Applied(applied) => (
                format!(
                    "{} applied to {} (audit #{})",
                    applied.effect.action, applied.audit.draft.operation, applied.audit.seq
                ),
                false,
            ),
            Verdict::Refused { rule, reason } => (format!("refused: {rule}: {reason}"), true),
            Verdict::Conflict { by, at, .. } => (
                format!(
                    "refused: G8: changed by {by} at {}; reloaded",
                    crate::core::clock::format_instant(*at)
                ),
                true,
            ),
            Verdict::Failed(e) => (e.clone(), true),
        };
        self.say(&text, alert);
        if let Some(dialog) = self.review.as_mut() {
            dialog.finish(verdict);
        }
        self.review_reload = true;
        self.refresh()
    }

    /// The mark-all selection answered: every match is marked too.
    fn selected_all(
        &mut self,
        generation: u64,
        result: Result<Vec<OperationId>, String>,
    ) -> Vec<Effect> {
        if self.select_pending.take_if(|g| *g == generation).is_none() {
            return Vec::new();
        }
        match result {
            Ok(ids) => {
                let matched = ids.len();
                self.queue.marked.extend(ids);
                self.say(
                    &format!(
                        "{matched} matching marked; {} marked in all",
                        self.queue.marked.len()
                    ),
                    false,
                );
            }
            Err(e) => self.say(&format!("cannot mark the matches: {e}"), true),
        }
        Vec::new()
    }

    /// `b`: the bulk dialog on the marked operations, read fresh.
    fn open_bulk(&mut self) -> Vec<Effect> {
        if self.queue.marked.is_empty() {
            self.say(
                "nothing marked: space marks the selected operation, a all matching",
                false,
            );
            return Vec::new();
        }
        let ids: Vec<OperationId> = self.queue.marked.iter().cloned().collect();
        self.bulk = Some(BulkDialog::new(ids.clone()));
        let generation = self.next_generation();
        self.bulk_pending = Some(generation);
        vec![Effect::BulkLoad {
            generation,
            ids,
            actor: Box::new(self.actor.clone()),
        }]
    }

    fn bulk_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        let Some(dialog) = self.bulk.as_mut() else {
            return Vec::new();
        };
        let keyed = dialog_key(dialog, key, &self.actor, self.now);
        let request = match self.dialog_request(keyed) {
            Ok(request) => request,
            Err(effects) => return effects,
        };
        match request {
            None => Vec::new(),
            Some(bulk::Request::Close) => {
                self.bulk = None;
                self.bulk_pending = None;
                Vec::new()
            }
            Some(bulk::Request::Apply {
                selection,
                action,
                rationale,
            }) => {
                let generation = self.next_generation();
                self.bulk_pending = Some(generation);
                vec![Effect::BulkApply {
                    generation,
                    selection,
                    action,
                    actor: Box::new(self.actor.clone()),
                    rationale,
                    now: self.now,
                }]
            }
        }
    }

    /// The bulk apply answered: each result shows in the dialog, the applied
    /// operations are unmarked, and everything on screen is asked for again.
    fn bulk_applied(
        &mut self,
        generation: u64,
        results: Vec<(TriageLine, Verdict)>,
    ) -> Vec<Effect> {
        if self.bulk_pending.take_if(|g| *g == generation).is_none() {
            return Vec::new();
        }
        let applied: Vec<&OperationId> = results
            .iter()
            .filter(|(_, v)| matches!(v, Verdict::Applied(_)))
            .map(|(line, _)| &line.id)
            .collect();
        for id in &applied {
            self.queue.marked.remove(*id);
        }
        let refused = results.len() - applied.len();
        let text = match refused {
            0 => format!("bulk: all {} applied", applied.len()),
            n => format!(
                "bulk: {} applied, {n} not applied (still marked)",
                applied.len()
            ),
        };
        self.say(&text, refused > 0);
        if let Some(dialog) = self.bulk.as_mut() {
            dialog.finish(results);
        }
        self.review_reload = true;
        self.refresh()
    }

    fn mouse(&mut self, mouse: MouseEvent) -> Vec<Effect> {
        let delta = match mouse.kind {
            MouseEventKind::ScrollDown => 1,
            MouseEventKind::ScrollUp => -1,
            _ => return Vec::new(),
        };
        if self.help || self.prompt.is_some() || self.review.is_some() || self.bulk.is_some() {
            return Vec::new();
        }
        let pane = self.areas().pane_at(mouse.column, mouse.row);
        if pane == Some(Pane::Queue) && self.focus != Pane::Queue {
            // Browsing the queue again: the detail follows its selection.
            self.focus = Pane::Queue;
        }
        match pane {
            Some(pane @ (Pane::Evidence | Pane::Timeline)) => {
                self.scroll(pane, delta * WHEEL_LINES)
            }
            Some(pane) => self.scroll(pane, delta),
            None => Vec::new(),
        }
    }
}
