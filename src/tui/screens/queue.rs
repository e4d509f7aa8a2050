//! The queue pane: its state (which tab, sort, filter and search are active, the
//! one page of rows on screen, the selection, the marks), its keys (moving the
//! selection, sort, tab, clearing the query, marks for bulk triage) and its
//! table, one row per operation of the page, columns dropped from the least
//! important when the pane is narrow. Only the visible page is ever fetched, by
//! keyset: next to a row on screen, or at the top or bottom of the listing,
//! never by skipping rows. The selection is a position in the listing plus the
//! id it points at, so that a refresh can keep it on the same operation; a
//! position below the top page is counted from the pages walked to reach it.
//! The answers to its list and mark-all requests come back to it
//! ([`Screen::answer`]).

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;

use crossterm::event::KeyEvent;

use super::{Asker, Ctx, Outcome, Screen};
use crate::core::circuit::Circuit;
use crate::core::clock::human_duration;
use crate::core::ids::OperationId;
use crate::core::model::{OperationRow, State};
use crate::core::sanitize::Clean;
use crate::store::{OperationFilter, Page, QueueCounts, SortOrder, Start};
use crate::tui::keymap::{self, Command, Context};
use crate::tui::latest::Latest;
use crate::tui::layout::{self, Pane};
use crate::tui::message::{Answer, Effect, Tag};
use crate::tui::theme::Theme;
use crate::tui::widgets::{self, Column, DataTable, message, span};

/// The two listings of the console.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    /// UNKNOWN, PARTIAL and BLOCKED operations, and those held by a dependency.
    Held,
    /// Every operation the reviewer may see.
    All,
}

impl Tab {
    pub fn title(self) -> &'static str {
        match self {
            Tab::Held => "Held queue",
            Tab::All => "All operations",
        }
    }

    /// The title on narrow screens.
    pub fn short_title(self) -> &'static str {
        match self {
            Tab::Held => "Held",
            Tab::All => "All",
        }
    }
}

/// The sort orders `s` cycles through, in order.
pub(crate) const SORTS: [SortOrder; 4] = [
    SortOrder::Urgency,
    SortOrder::Age,
    SortOrder::Id,
    SortOrder::Deadline,
];

/// The name a sort order is shown under.
pub(crate) fn sort_name(sort: SortOrder) -> &'static str {
    match sort {
        SortOrder::Urgency => "urgency",
        SortOrder::Age => "age",
        SortOrder::Id => "id",
        SortOrder::Deadline => "deadline",
    }
}

/// One query for the queue: a page of the listing plus the header counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListQuery {
    pub filter: OperationFilter,
    /// The filter for the header counts: tenant scope only, so the header always
    /// tells the whole picture whatever is filtered. `None` when only the view of
    /// the listing changed (page, sort, filter, search): the counts stay.
    pub counts: Option<OperationFilter>,
    pub sort: SortOrder,
    pub page: Page,
    pub now: DateTime<Utc>,
}

/// What a list request was for, to apply its answer the right way.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Pending {
    /// Where the page starts in the listing, as far as the console knows.
    offset: u64,
    /// Where the page starts by keyset, and its rows at most.
    start: Start,
    limit: u64,
    /// Keep the selection on this operation if it is on the page.
    keep: Option<OperationId>,
    /// The listing asked for: its rows are the keys later pages start from.
    listing: (OperationFilter, SortOrder),
}

/// The result of one list request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub rows: Vec<OperationRow>,
    pub total: u64,
    /// Fresh header counts, when they were asked for.
    pub counts: Option<QueueCounts>,
    /// When a search matched nothing here: how many operations it matches in
    /// each state with no tab or filter (tenant scope still applies), so the
    /// queue can say which filter finds them.
    pub elsewhere: Option<Vec<(State, u64)>>,
    /// The circuits not closed (DESIGN §9.5), read with the header counts.
    pub circuits: Option<Vec<Circuit>>,
}

#[derive(Debug, Clone)]
pub struct QueueState {
    pub tab: Tab,
    pub sort: SortOrder,
    /// The terms typed after `f` (search kept apart).
    pub filter: OperationFilter,
    pub search: String,
    /// The page on screen and where it starts in the listing.
    pub rows: Vec<OperationRow>,
    pub rows_offset: u64,
    /// How many operations match.
    pub total: u64,
    pub counts: Option<QueueCounts>,
    /// The circuits not closed as of the last header counts: the header
    /// names their tools on every screen.
    pub circuits: Vec<Circuit>,
    /// See [`Listing::elsewhere`]; for the listing on screen.
    pub elsewhere: Option<Vec<(State, u64)>>,
    /// Absolute position of the selection in the listing.
    pub selected: u64,
    pub selected_id: Option<OperationId>,
    /// Operations marked for bulk triage; they stay marked across pages, filters
    /// and tabs until unmarked or applied.
    pub marked: BTreeSet<OperationId>,
    /// The mark-all selection waited on.
    pub marking: Latest<()>,
    /// First row the next page should start at.
    offset: u64,
    pending: Latest<Pending>,
    /// The filter and order the rows on screen were listed by: a page next to
    /// them starts from one of their keys only in the same listing.
    shown: Option<(OperationFilter, SortOrder)>,
}

impl Default for QueueState {
    fn default() -> Self {
        Self::new()
    }
}

impl QueueState {
    pub fn new() -> Self {
        QueueState {
            tab: Tab::Held,
            sort: SortOrder::Urgency,
            filter: OperationFilter::default(),
            search: String::new(),
            rows: Vec::new(),
            rows_offset: 0,
            total: 0,
            counts: None,
            elsewhere: None,
            circuits: Vec::new(),
            selected: 0,
            selected_id: None,
            marked: BTreeSet::new(),
            marking: Latest::default(),
            offset: 0,
            pending: Latest::default(),
            shown: None,
        }
    }

    /// Whether the first answer has arrived.
    pub fn is_loaded(&self) -> bool {
        self.counts.is_some()
    }

    pub fn is_loading(&self) -> bool {
        self.pending.is_waiting()
    }

    /// Whether a filter or search narrows the listing.
    pub fn is_narrowed(&self) -> bool {
        self.filter != OperationFilter::default() || !self.search.is_empty()
    }

    /// The row under the selection, when it is on the page.
    pub fn selected_row(&self) -> Option<&OperationRow> {
        let index = self.selected.checked_sub(self.rows_offset)?;
        self.rows.get(usize::try_from(index).ok()?)
    }

    /// A request for the page starting at the current offset, `page_rows` long;
    /// `keep` asks for the selection to stay on that operation, `recount` for the
    /// header counts too (the first time they are always asked for).
    pub fn request(
        &mut self,
        page_rows: u16,
        keep: Option<OperationId>,
        recount: bool,
        now: DateTime<Utc>,
    ) -> (u64, ListQuery) {
        let counts = (recount || self.counts.is_none()).then(OperationFilter::default);
        let filter = self.matching();
        let limit = u64::from(page_rows.max(1));
        let (start, offset) = self.start(&filter, limit);
        let generation = self.pending.request(Pending {
            offset,
            start: start.clone(),
            limit,
            keep,
            listing: (filter.clone(), self.sort),
        });
        let query = ListQuery {
            filter,
            counts,
            sort: self.sort,
            page: Page { start, limit },
            now,
        };
        (generation, query)
    }

    /// Where the page at the current offset starts by keyset, and the offset
    /// it starts at: the top or the bottom of the listing, or next to a row on
    /// screen (after the row above it, before the row below it, at its first
    /// row). A page out of reach of the rows on screen is the next one on the
    /// way there; its answer brings the next (see [`Applied::refetch`]), so
    /// no row is ever skipped by count.
    fn start(&self, filter: &OperationFilter, limit: u64) -> (Start, u64) {
        let offset = self.offset;
        if offset == 0 {
            return (Start::First, 0);
        }
        if offset.saturating_add(limit) >= self.total {
            return (Start::Last, self.total.saturating_sub(limit));
        }
        if self.shown.as_ref() != Some(&(filter.clone(), self.sort)) {
            return (Start::First, 0);
        }
        let id_at = |at: u64| {
            let index = usize::try_from(at.checked_sub(self.rows_offset)?).ok()?;
            self.rows.get(index).map(|r| r.operation.id.clone())
        };
        if let Some(id) = offset.checked_sub(1).and_then(id_at) {
            return (Start::After(id), offset);
        }
        if let Some(id) = id_at(offset + limit) {
            return (Start::Before(id), offset);
        }
        if let Some(id) = id_at(offset) {
            return (Start::At(id), offset);
        }
        let end = self.rows_offset + self.rows.len() as u64;
        match (self.rows.first(), self.rows.last()) {
            (_, Some(last)) if offset >= end => (Start::After(last.operation.id.clone()), end),
            (Some(first), _) if self.rows_offset > limit => (
                Start::Before(first.operation.id.clone()),
                self.rows_offset - limit,
            ),
            _ => (Start::First, 0),
        }
    }

    /// Marks the selected operation, or unmarks it; `None` when nothing is selected.
    pub fn toggle_mark(&mut self) -> Option<bool> {
        let id = self.selected_id.clone()?;
        if self.marked.remove(&id) {
            Some(false)
        } else {
            self.marked.insert(id);
            Some(true)
        }
    }

    /// The filter of the listing as shown (tab, filter, search), for every page:
    /// what "mark all matching" selects.
    pub fn matching(&self) -> OperationFilter {
        let search = self.search.trim();
        OperationFilter {
            queue: self.tab == Tab::Held,
            search: (!search.is_empty()).then(|| search.to_owned()),
            ..self.filter.clone()
        }
    }

    /// Starts the listing over at its first row (new tab, sort, filter or search).
    pub fn restart(&mut self) {
        self.offset = 0;
        self.selected = 0;
    }

    /// Moves the selection to `to` (clamped) and scrolls so that it is on a page of
    /// `page_rows`; returns whether a new page must be fetched.
    pub fn select(&mut self, to: i64, page_rows: u16) -> bool {
        let last = self.total.saturating_sub(1);
        self.selected = u64::try_from(to.max(0)).unwrap_or(0).min(last);
        self.selected_id = self.selected_row().map(|r| r.operation.id.clone());
        self.scroll_to_selection(page_rows)
    }

    /// Adjusts the offset so the selection is on a page of `page_rows`; returns
    /// whether that page differs from the one on screen (or being fetched).
    pub fn scroll_to_selection(&mut self, page_rows: u16) -> bool {
        let rows = u64::from(page_rows.max(1));
        if self.selected < self.offset {
            self.offset = self.selected;
        } else if self.selected >= self.offset + rows {
            self.offset = self.selected + 1 - rows;
        }
        let last_page = self.total.saturating_sub(rows);
        self.offset = self.offset.min(last_page);
        let showing = self
            .pending
            .waiting()
            .map_or(self.rows_offset, |p| p.offset);
        let shown_rows = self.rows.len() as u64;
        showing != self.offset || (shown_rows < rows && self.offset + shown_rows < self.total)
    }

    /// Applies a list answer; `None` when it answers a request that was since
    /// replaced (a stale generation).
    pub fn apply(&mut self, generation: u64, listing: Listing, page_rows: u16) -> Option<Applied> {
        let pending = self.pending.answer(generation)?;
        let len = listing.rows.len() as u64;
        self.rows = listing.rows;
        self.total = listing.total;
        self.rows_offset = match pending.start {
            Start::First => 0,
            Start::Last => self.total.saturating_sub(len),
            // Fewer rows than asked before a key: they are the first ones.
            Start::Before(_) if len < pending.limit => 0,
            _ => pending.offset.min(self.total.saturating_sub(len)),
        };
        self.shown = Some(pending.listing);
        self.elsewhere = listing.elsewhere;
        if let Some(counts) = listing.counts {
            self.counts = Some(counts);
        }
        if let Some(circuits) = listing.circuits {
            self.circuits = circuits;
        }
        let mut lost = None;
        if let Some(keep) = pending.keep {
            match self.rows.iter().position(|r| r.operation.id == keep) {
                Some(pos) => self.selected = self.rows_offset + pos as u64,
                None => lost = Some(keep),
            }
        }
        self.selected = self.selected.min(self.total.saturating_sub(1));
        let refetch = self.scroll_to_selection(page_rows);
        self.selected_id = self.selected_row().map(|r| r.operation.id.clone());
        Some(Applied { lost, refetch })
    }

    /// Forgets the request in flight (its answer failed).
    pub fn fail(&mut self, generation: u64) -> bool {
        self.pending.answer(generation).is_some()
    }
}

impl QueueState {
    /// A request for the page at the current offset, as many rows as the screen
    /// shows; `keep` keeps the selection on that operation, `recount` asks for
    /// the header counts too.
    pub fn list(&mut self, ctx: &Ctx, keep: Option<OperationId>, recount: bool) -> Effect {
        let (serial, query) = self.request(layout::page_rows(ctx.size), keep, recount, ctx.now);
        Effect::List {
            generation: Tag {
                by: Asker::Queue,
                serial,
            },
            query: Box::new(query),
        }
    }

    /// Moves the selection by `delta` rows; the page it lands on is asked for
    /// when it is not the one on screen.
    pub fn step(&mut self, delta: i64, ctx: &Ctx) -> Vec<Effect> {
        let to = i64::try_from(self.selected)
            .unwrap_or(i64::MAX)
            .saturating_add(delta);
        if self.select(to, layout::page_rows(ctx.size)) {
            vec![self.list(ctx, None, false)]
        } else {
            Vec::new()
        }
    }

    /// `t`: the other listing, from its first row.
    pub fn switch_tab(&mut self, ctx: &Ctx) -> Vec<Effect> {
        self.tab = match self.tab {
            Tab::Held => Tab::All,
            Tab::All => Tab::Held,
        };
        self.restart();
        vec![self.list(ctx, None, false)]
    }

    /// Space: marks or unmarks the selected operation, and moves down.
    fn mark(&mut self, ctx: &Ctx) -> Outcome {
        let text = match self.toggle_mark() {
            Some(marked) => {
                let id = self
                    .selected_id
                    .as_ref()
                    .map(ToString::to_string)
                    .unwrap_or_default();
                let verb = if marked { "marked" } else { "unmarked" };
                format!("{id} {verb}; {} marked", self.marked.len())
            }
            None => "nothing to mark: the list is empty".to_owned(),
        };
        Outcome::say(text, false, self.step(1, ctx))
    }

    /// A page answered: shown, with the next page asked for when the selection
    /// is off it; the operation the selection was kept on, gone, is said.
    fn listed(&mut self, generation: u64, result: Result<Listing, String>, ctx: &Ctx) -> Outcome {
        let listing = match result {
            Ok(listing) => listing,
            Err(e) if self.fail(generation) => {
                return Outcome::say(format!("cannot list operations: {e}"), true, Vec::new());
            }
            Err(_) => return Outcome::Pass,
        };
        let Some(applied) = self.apply(generation, listing, layout::page_rows(ctx.size)) else {
            return Outcome::Pass;
        };
        let effects = if applied.refetch {
            vec![self.list(ctx, None, false)]
        } else {
            Vec::new()
        };
        match applied.lost {
            Some(lost) if self.selected_id.as_ref() != Some(&lost) => {
                let now_on = self
                    .selected_id
                    .as_ref()
                    .map_or_else(|| "nothing".to_owned(), ToString::to_string);
                Outcome::Left {
                    text: format!(
                        "{lost} is no longer on this page (it changed or left the list); the selection moved to {now_on}"
                    ),
                    id: lost,
                    effects,
                }
            }
            _ => Outcome::Done(effects),
        }
    }

    /// The mark-all selection answered: every match is marked too.
    fn selected_all(
        &mut self,
        generation: u64,
        result: Result<Vec<OperationId>, String>,
    ) -> Outcome {
        if self.marking.answer(generation).is_none() {
            return Outcome::Pass;
        }
        match result {
            Ok(ids) => {
                let matched = ids.len();
                self.marked.extend(ids);
                let text = format!(
                    "{matched} matching marked; {} marked in all",
                    self.marked.len()
                );
                Outcome::say(text, false, Vec::new())
            }
            Err(e) => Outcome::say(format!("cannot mark the matches: {e}"), true, Vec::new()),
        }
    }
}

impl Screen for QueueState {
    fn context(&self) -> Context {
        Context::Queue
    }

    /// The queue's own keys; the console's (open, search, review, panes…) pass.
    fn key(&mut self, key: KeyEvent, ctx: &Ctx) -> Outcome {
        let Some(command) = keymap::lookup(Context::Queue, key) else {
            return Outcome::Pass;
        };
        let page = i64::from(layout::page_rows(ctx.size));
        if let Some(delta) = command.movement(page) {
            return Outcome::Done(self.step(delta, ctx));
        }
        match command {
            Command::ClearQuery => {
                if !self.is_narrowed() {
                    return Outcome::done();
                }
                self.filter = OperationFilter::default();
                self.search.clear();
                self.restart();
                Outcome::Done(vec![self.list(ctx, None, false)])
            }
            Command::Sort => {
                let at = SORTS.iter().position(|s| *s == self.sort).unwrap_or(0);
                self.sort = SORTS[(at + 1) % SORTS.len()];
                self.restart();
                Outcome::Done(vec![self.list(ctx, None, false)])
            }
            Command::SwitchTab => Outcome::Done(self.switch_tab(ctx)),
            Command::Mark => self.mark(ctx),
            Command::MarkAll => {
                let select = Effect::SelectAll {
                    generation: Tag {
                        by: Asker::Queue,
                        serial: self.marking.request(()),
                    },
                    // Routed at the console's clock, as the rows on screen are.
                    filter: Box::new(OperationFilter {
                        now: Some(ctx.now),
                        ..self.matching()
                    }),
                };
                Outcome::say("marking every operation that matches…", false, vec![select])
            }
            Command::ClearMarks => {
                let count = std::mem::take(&mut self.marked).len();
                self.marking.cancel();
                Outcome::say(format!("{count} unmarked"), false, Vec::new())
            }
            _ => Outcome::Pass,
        }
    }

    fn answer(&mut self, generation: u64, answer: Answer, ctx: &Ctx) -> Outcome {
        match answer {
            Answer::Listed(result) => self.listed(generation, result, ctx),
            Answer::Selected(result) => self.selected_all(generation, result),
            _ => Outcome::Pass,
        }
    }

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        draw(self, frame, area, ctx, ctx.focus == Pane::Queue);
    }

    fn name(&self) -> &'static str {
        "the queue"
    }
}

/// What applying a list answer changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The operation the selection was kept on, gone from the listing.
    pub lost: Option<OperationId>,
    /// The selection is off the page returned: fetch the page it is on.
    pub refetch: bool,
}

/// What every cell needs besides its row.
struct Cells {
    now: DateTime<Utc>,
    theme: Theme,
    /// The marked operations of the page on screen.
    marked: Vec<OperationId>,
}

/// Columns of the queue; `priority` 0 is never dropped.
const COLUMNS: &[Column<OperationRow, Cells>] = &[
    Column {
        header: "STATE",
        width: 12,
        priority: 0,
        cut: true,
        cell: |r, c| {
            let state = r.operation.state;
            let dep = if r.held_dependencies.is_empty() {
                ""
            } else {
                "*"
            };
            (Clean::new(&format!("{state}{dep}")), c.theme.state(state))
        },
    },
    Column {
        header: " ID",
        width: 9,
        priority: 0,
        cut: false,
        // `✓` before the id marks it for bulk triage.
        cell: |r, c| {
            if c.marked.contains(&r.operation.id) {
                (Clean::new(&format!("✓{}", r.operation.id)), c.theme.title())
            } else {
                (Clean::new(&format!(" {}", r.operation.id)), c.theme.plain())
            }
        },
    },
    Column {
        header: "TENANT",
        width: 11,
        priority: 5,
        cut: true,
        cell: |r, c| (Clean::new(&r.operation.tenant), c.theme.plain()),
    },
    Column {
        header: "TOOL/ACTION",
        width: 20,
        priority: 4,
        cut: true,
        cell: |r, c| {
            let text = crate::core::names::tool_and_action(&r.operation.tool, &r.operation.action);
            (Clean::new(&text), c.theme.plain())
        },
    },
    Column {
        header: "MODE",
        // The longest failure mode, `validation_failed`, whole.
        width: 17,
        priority: 1,
        cut: true,
        cell: |r, c| {
            let mode = r.operation.failure_mode.map_or("-", |m| m.as_str());
            (Clean::new(mode), c.theme.plain())
        },
    },
    Column {
        header: "RISK",
        width: 8,
        priority: 1,
        cut: true,
        cell: |r, c| {
            let risk = r.operation.risk;
            (Clean::new(risk.as_str()), c.theme.risk(risk))
        },
    },
    Column {
        header: "OWNER",
        width: 13,
        priority: 6,
        cut: true,
        cell: |r, c| (Clean::new(r.owner()), c.theme.plain()),
    },
    Column {
        header: "HELD",
        width: 6,
        priority: 3,
        cut: false,
        cell: |r, c| {
            let held = human_duration((c.now - r.state_since).num_seconds());
            (Clean::new(&held), c.theme.plain())
        },
    },
    Column {
        header: "NEXT OBS",
        width: 8,
        priority: 2,
        cut: false,
        cell: |r, c| match r.operation.next_observation_at {
            Some(t) if t < c.now && r.operation.state.is_held() => {
                let late = human_duration((c.now - t).num_seconds());
                (Clean::new(&format!("!{late}")), c.theme.alert())
            }
            Some(t) => {
                let wait = human_duration((t - c.now).num_seconds());
                (Clean::new(&wait), c.theme.plain())
            }
            None => (Clean::new("-"), c.theme.dim()),
        },
    },
    Column {
        header: "ATT",
        width: 5,
        priority: 2,
        cut: false,
        cell: |r, c| {
            let max = r
                .max_attempts
                .map_or_else(|| "-".to_owned(), |m| m.to_string());
            let spent = r.max_attempts.is_some_and(|m| r.attempts_used >= m);
            let style = if spent {
                c.theme.alert()
            } else {
                c.theme.plain()
            };
            (Clean::new(&format!("{}/{max}", r.attempts_used)), style)
        },
    },
    Column {
        header: "LEFT",
        width: 7,
        priority: 3,
        cut: false,
        cell: |r, c| match r.operation.deadline {
            _ if r.operation.state.is_terminal() => (Clean::new("-"), c.theme.dim()),
            Some(d) if d <= c.now => (Clean::new("passed"), c.theme.alert()),
            Some(d) => (
                Clean::new(&human_duration((d - c.now).num_seconds())),
                c.theme.plain(),
            ),
            None => (Clean::new("-"), c.theme.dim()),
        },
    },
    Column {
        header: "FLAGS",
        width: 9,
        priority: 4,
        cut: true,
        cell: |r, c| {
            let mut flags = Vec::new();
            if !r.held_dependencies.is_empty() {
                flags.push("dep");
            }
            if r.pending_proposal {
                flags.push("2nd-eye");
            }
            (Clean::new(&flags.join(",")), c.theme.warn())
        },
    },
];

/// Draws the page on screen in `area`, the selection highlighted.
pub(crate) fn draw(queue: &QueueState, frame: &mut Frame, area: Rect, ctx: &Ctx, focused: bool) {
    let theme = ctx.theme;
    let mut title = format!(" {} · {} ", queue.tab.title(), match_count(queue));
    if !queue.marked.is_empty() {
        title.push_str(&format!("· {} marked ", queue.marked.len()));
    }
    if queue.is_loading() {
        title.push_str("· loading… ");
    }
    let block = widgets::pane(theme, Clean::new(&title), focused).title_bottom(
        Line::from(span(
            Clean::new(&format!(
                " sort: {} · * held by dependency · ! overdue ",
                sort_name(queue.sort)
            )),
            theme.dim(),
        ))
        .right_aligned(),
    );
    if let Some(text) = queue.empty_hint() {
        message(frame, area, block, theme, &text);
        return;
    }
    let selected = queue
        .selected
        .checked_sub(queue.rows_offset)
        .and_then(|i| usize::try_from(i).ok())
        .filter(|i| *i < queue.rows.len());
    let table = DataTable {
        columns: COLUMNS,
        rows: &queue.rows,
        context: &Cells {
            now: ctx.now,
            theme,
            marked: queue
                .rows
                .iter()
                .map(|r| &r.operation.id)
                .filter(|id| queue.marked.contains(*id))
                .cloned()
                .collect(),
        },
        selected,
    };
    table.draw(frame, area, block, theme);
}

/// `9 match · 1–20` for the title.
fn match_count(queue: &QueueState) -> String {
    if !queue.is_loaded() {
        return "…".to_owned();
    }
    if queue.total == 0 {
        return "0 match".to_owned();
    }
    let first = queue.rows_offset + 1;
    let last = queue.rows_offset + queue.rows.len() as u64;
    format!(
        "{} match · {first}–{last} · #{}",
        queue.total,
        queue.selected + 1
    )
}

impl QueueState {
    /// What to say instead of an empty table.
    pub fn empty_hint(&self) -> Option<String> {
        empty_hint(self)
    }
}

fn empty_hint(queue: &QueueState) -> Option<String> {
    let counts = queue.counts.as_ref()?;
    if queue.total > 0 {
        return None;
    }
    let stored: u64 = counts.by_state.iter().map(|(_, n)| n).sum();
    Some(if stored == 0 {
        "The store is empty. Load records with `holdfast ingest FILE`, or run `holdfast demo` to open the TC094 demo packet.".to_owned()
    } else if let Some(text) = search_elsewhere(queue) {
        text
    } else if queue.is_narrowed() {
        "Nothing matches the filter and search. Esc clears them.".to_owned()
    } else if queue.tab == Tab::Held {
        "Nothing is held right now. t lists all operations.".to_owned()
    } else {
        "No operation is visible to you.".to_owned()
    })
}

/// A search that matched nothing here, with where it does match: `No match for
/// “billing” here; 3 match in state ACCEPTED (2), FAILED (1): press 2 for all
/// operations, f for state:accepted,failed.` Only what the counts show.
fn search_elsewhere(queue: &QueueState) -> Option<String> {
    let search = queue.search.trim();
    let found: Vec<(State, u64)> = queue
        .elsewhere
        .as_ref()?
        .iter()
        .filter(|(_, n)| *n > 0)
        .copied()
        .collect();
    if search.is_empty() {
        return None;
    }
    let total: u64 = found.iter().map(|(_, n)| n).sum();
    if total == 0 {
        return Some(format!(
            "No operation you can see matches “{search}” in any state. Esc clears the search."
        ));
    }
    let states: Vec<String> = found.iter().map(|(s, n)| format!("{s} ({n})")).collect();
    let mut keys = Vec::new();
    if queue.tab == Tab::Held {
        keys.push("2 for all operations".to_owned());
    }
    if queue.filter != OperationFilter::default() {
        let names: Vec<String> = found
            .iter()
            .map(|(s, _)| s.as_str().to_ascii_lowercase())
            .collect();
        keys.push(format!("f to filter by state:{}", names.join(",")));
    }
    let here = match queue.tab {
        Tab::Held => "in the held queue",
        Tab::All => "with this filter",
    };
    let mut text = format!(
        "No match for “{search}” {here}; {total} match in state {}",
        states.join(", ")
    );
    if !keys.is_empty() {
        text.push_str(&format!(": press {}", keys.join(", ")));
    }
    text.push('.');
    Some(text)
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyCode;

    use super::*;
    use crate::core::model::State;
    use crate::tui::screens::fixture::{self, char, key, row};

    /// A console of 160×45 with the keys on the queue.
    fn on_queue<'a>(actor: &'a crate::core::rules::Actor) -> Ctx<'a> {
        fixture::ctx(actor, 160, 45, Pane::Queue)
    }

    /// The queue's request in `effects`: its tag, which must name the queue,
    /// and its query.
    fn list_request(effects: &[Effect]) -> (u64, ListQuery) {
        let tag = fixture::tag(effects);
        assert_eq!(tag.by, Asker::Queue, "the queue asked");
        match &effects[0] {
            Effect::List { query, .. } => (tag.serial, (**query).clone()),
            other => panic!("a page was expected, got {other:?}"),
        }
    }

    /// `total` held operations F01… of which `shown` are on the page.
    fn listing(total: u64, shown: u64) -> Listing {
        Listing {
            rows: (1..=shown)
                .map(|n| row(&format!("F{n:02}"), State::Unknown))
                .collect(),
            total,
            counts: Some(QueueCounts::default()),
            elsewhere: None,
            circuits: None,
        }
    }

    /// A queue showing the first page of `total` operations.
    fn shown(ctx: &Ctx, total: u64) -> QueueState {
        let mut queue = QueueState::new();
        let (serial, _) = list_request(&[queue.list(ctx, None, true)]);
        let page = u64::from(layout::page_rows(ctx.size)).min(total);
        let outcome = queue.answer(serial, Answer::Listed(Ok(listing(total, page))), ctx);
        assert_eq!(outcome, Outcome::done());
        queue
    }

    #[test]
    fn a_page_answered_is_shown_and_an_older_one_is_dropped() {
        let actor = fixture::actor();
        let ctx = on_queue(&actor);
        let mut queue = QueueState::new();
        let (old, _) = list_request(&[queue.list(&ctx, None, true)]);
        let (new, query) = list_request(&[queue.list(&ctx, None, true)]);
        assert!(query.counts.is_some(), "the first request counts too");
        assert_eq!(
            queue.answer(old, Answer::Listed(Ok(listing(9, 9))), &ctx),
            Outcome::Pass,
            "a replaced request's page is dropped"
        );
        assert!(queue.rows.is_empty() && !queue.is_loaded());
        assert_eq!(
            queue.answer(new, Answer::Listed(Ok(listing(2, 2))), &ctx),
            Outcome::done()
        );
        assert_eq!(queue.total, 2);
        assert_eq!(queue.selected_id, Some(fixture::id("F01")));
        assert!(queue.is_loaded() && !queue.is_loading());
    }

    #[test]
    fn a_failed_page_is_an_alert_once() {
        let actor = fixture::actor();
        let ctx = on_queue(&actor);
        let mut queue = QueueState::new();
        let (serial, _) = list_request(&[queue.list(&ctx, None, false)]);
        let outcome = queue.answer(serial, Answer::Listed(Err("down".into())), &ctx);
        assert_eq!(
            outcome,
            Outcome::say("cannot list operations: down", true, Vec::new())
        );
        assert_eq!(
            queue.answer(serial, Answer::Listed(Err("down".into())), &ctx),
            Outcome::Pass,
            "an answer is taken once"
        );
    }

    #[test]
    fn the_operation_kept_gone_from_the_page_is_said_and_names_it() {
        let actor = fixture::actor();
        let ctx = on_queue(&actor);
        let mut queue = shown(&ctx, 3);
        let kept = fixture::id("F07");
        let (serial, _) = list_request(&[queue.list(&ctx, Some(kept.clone()), false)]);
        match queue.answer(serial, Answer::Listed(Ok(listing(3, 3))), &ctx) {
            Outcome::Left { id, text, effects } => {
                assert_eq!(id, kept);
                assert!(
                    text.starts_with("F07 is no longer on this page")
                        && text.ends_with("the selection moved to F01"),
                    "{text}"
                );
                assert!(effects.is_empty(), "the selection is on the page");
            }
            other => panic!("the lost operation was not said: {other:?}"),
        }
    }

    #[test]
    fn moving_off_the_page_asks_for_the_next_one() {
        let actor = fixture::actor();
        let ctx = on_queue(&actor);
        let mut queue = shown(&ctx, 100);
        let page = u64::from(layout::page_rows(ctx.size));
        assert_eq!(queue.key(char('j'), &ctx), Outcome::done());
        assert_eq!(queue.selected, 1);
        assert_eq!(queue.selected_id, Some(fixture::id("F02")));
        let Outcome::Done(effects) = queue.key(char('G'), &ctx) else {
            panic!("G moves");
        };
        let (_, query) = list_request(&effects);
        assert_eq!(
            queue.selected, 99,
            "G goes to the last of all, not of the page"
        );
        assert_eq!(query.page.start, Start::Last);
        assert_eq!(query.page.limit, page);
        assert!(query.counts.is_none(), "moving does not recount");
    }

    #[test]
    fn sort_cycles_and_lists_again_from_the_top() {
        let actor = fixture::actor();
        let ctx = on_queue(&actor);
        let mut queue = shown(&ctx, 5);
        queue.key(char('j'), &ctx);
        let Outcome::Done(effects) = queue.key(char('s'), &ctx) else {
            panic!("s sorts");
        };
        let (_, query) = list_request(&effects);
        assert_eq!((queue.sort, query.sort), (SortOrder::Age, SortOrder::Age));
        assert_eq!(query.page.start, Start::First);
        assert_eq!(queue.selected, 0, "from the top");
        for _ in 0..3 {
            queue.key(char('s'), &ctx);
        }
        assert_eq!(queue.sort, SortOrder::Urgency, "back to the first order");
    }

    #[test]
    fn esc_clears_a_query_and_is_nothing_without_one() {
        let actor = fixture::actor();
        let ctx = on_queue(&actor);
        let mut queue = shown(&ctx, 5);
        assert_eq!(queue.key(key(KeyCode::Esc), &ctx), Outcome::done());
        queue.search = "billing".into();
        let Outcome::Done(effects) = queue.key(key(KeyCode::Esc), &ctx) else {
            panic!("Esc clears");
        };
        let (_, query) = list_request(&effects);
        assert!(queue.search.is_empty() && query.filter.search.is_none());
    }

    #[test]
    fn space_marks_and_unmarks_the_selection_and_moves_down() {
        let actor = fixture::actor();
        let ctx = on_queue(&actor);
        let mut queue = shown(&ctx, 3);
        assert_eq!(
            queue.key(char(' '), &ctx),
            Outcome::say("F01 marked; 1 marked", false, Vec::new())
        );
        assert_eq!(queue.selected_id, Some(fixture::id("F02")));
        queue.key(char('k'), &ctx);
        assert_eq!(
            queue.key(char(' '), &ctx),
            Outcome::say("F01 unmarked; 0 marked", false, Vec::new())
        );
        assert!(queue.marked.is_empty());
    }

    #[test]
    fn mark_all_asks_for_every_match_and_its_answer_marks_them() {
        let actor = fixture::actor();
        let ctx = on_queue(&actor);
        let mut queue = shown(&ctx, 3);
        queue.search = "refund".into();
        let Outcome::Say { text, effects, .. } = queue.key(char('a'), &ctx) else {
            panic!("a marks all");
        };
        assert_eq!(text, "marking every operation that matches…");
        let tag = fixture::tag(&effects);
        assert_eq!(tag.by, Asker::Queue);
        let Effect::SelectAll { filter, .. } = &effects[0] else {
            panic!("{effects:?}");
        };
        assert_eq!(filter.search.as_deref(), Some("refund"));
        assert!(filter.queue, "the held tab selects held operations only");
        let ids = vec![fixture::id("F01"), fixture::id("F09")];
        assert_eq!(
            queue.answer(tag.serial, Answer::Selected(Ok(ids)), &ctx),
            Outcome::say("2 matching marked; 2 marked in all", false, Vec::new())
        );
        assert!(queue.marked.contains(&fixture::id("F09")));
        assert_eq!(
            queue.key(char('u'), &ctx),
            Outcome::say("2 unmarked", false, Vec::new())
        );
    }

    #[test]
    fn unmarking_all_drops_the_mark_all_still_running() {
        let actor = fixture::actor();
        let ctx = on_queue(&actor);
        let mut queue = shown(&ctx, 3);
        let Outcome::Say { effects, .. } = queue.key(char('a'), &ctx) else {
            panic!("a marks all");
        };
        queue.key(char('u'), &ctx);
        let late = Answer::Selected(Ok(vec![fixture::id("F01")]));
        assert_eq!(
            queue.answer(fixture::tag(&effects).serial, late, &ctx),
            Outcome::Pass
        );
        assert!(queue.marked.is_empty());
    }

    #[test]
    fn the_consoles_keys_and_other_answers_pass() {
        let actor = fixture::actor();
        let ctx = on_queue(&actor);
        let mut queue = shown(&ctx, 3);
        for k in [
            key(KeyCode::Enter),
            char('r'),
            char('/'),
            char('b'),
            char('3'),
        ] {
            assert_eq!(queue.key(k, &ctx), Outcome::Pass, "{k:?}");
        }
        assert_eq!(queue.answer(1, Answer::Debounced, &ctx), Outcome::Pass);
    }

    #[test]
    fn t_switches_the_listing_and_lists_it_from_the_top() {
        let actor = fixture::actor();
        let ctx = on_queue(&actor);
        let mut queue = shown(&ctx, 3);
        let Outcome::Done(effects) = queue.key(char('t'), &ctx) else {
            panic!("t switches");
        };
        let (_, query) = list_request(&effects);
        assert_eq!(queue.tab, Tab::All);
        assert!(!query.filter.queue, "all operations, held or not");
    }
}
