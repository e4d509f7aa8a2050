//! The queue and detail part of `update`: the console's own keys (selection,
//! paging, panes, following links and going back), the queue's list requests
//! and answers, and the detail's loads, with the detail following the queue's
//! selection while the queue has the focus.

use super::{App, Effect, PromptKind};
use crate::core::ids::OperationId;
use crate::core::model::OperationDetail;
use crate::tui::doc;
use crate::tui::keymap::Command;
use crate::tui::layout::{self, Pane};
use crate::tui::screens::detail::{Applied as DetailApplied, Loaded};
use crate::tui::screens::queue::{Listing, SORTS, Tab};
use crate::tui::widgets::max_scroll;

impl App {
    /// A request for the queue page, keeping the selection on `keep`; `recount`
    /// asks for the header counts too (the store or the time changed).
    pub(super) fn list(&mut self, keep: Option<OperationId>, recount: bool) -> Vec<Effect> {
        let page_rows = self.page_rows();
        let (generation, query) = self.queue.request(page_rows, keep, recount, self.now);
        vec![Effect::List {
            generation,
            query: Box::new(query),
        }]
    }

    /// A request for the operation on top of the detail stack.
    pub(super) fn load_top(&mut self) -> Vec<Effect> {
        let Some(id) = self.detail.top().map(|f| f.id.clone()) else {
            return Vec::new();
        };
        let generation = self.detail.expect(id.clone());
        vec![Effect::Load { generation, id }]
    }

    /// With the queue in focus the detail follows its selection.
    pub(super) fn sync_root(&mut self) -> Vec<Effect> {
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

    pub(super) fn listed(
        &mut self,
        generation: u64,
        result: Result<Listing, String>,
    ) -> Vec<Effect> {
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
            // The panes showed the operation that left: they follow the new
            // selection, so what is shown and what `r` reviews agree.
            if self.detail.stack.first().is_some_and(|f| f.id == lost) {
                self.focus = Pane::Queue;
            }
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

    pub(super) fn loaded(
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

    pub(super) fn command(&mut self, command: Command) -> Vec<Effect> {
        if let Command::Show(screen) = command {
            return self.show(screen);
        }
        let page = i64::from(self.page_rows());
        match command {
            Command::Quit => vec![Effect::Quit],
            Command::Help => {
                self.open_help();
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
            Command::Search => self.open_prompt(PromptKind::Search),
            Command::Filter => self.open_prompt(PromptKind::Filter),
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
            Command::LookUp => self.look_up(),
            Command::AcknowledgeChain => {
                match self.chain.broken() {
                    Some((seq, _)) => {
                        self.chain.acknowledged = true;
                        let text = format!(
                            "acknowledged: the audit chain stays broken at seq {seq}; transitions are offered again (holdfast audit verify shows the break)"
                        );
                        self.say(&text, true);
                    }
                    None => self.say("the audit chain is intact: nothing to acknowledge", false),
                }
                Vec::new()
            }
            Command::Mark => self.mark(),
            Command::MarkAll => self.mark_all(),
            Command::ClearMarks => self.clear_marks(),
            Command::Bulk => self.open_bulk(),
            Command::Accept | Command::Cancel | Command::Apply | Command::Show(_) => Vec::new(),
        }
    }

    /// Rows of the focused detail pane, for paging (the queue's page otherwise).
    pub(super) fn pane_rows(&self, queue_page: i64) -> i64 {
        match self.areas().pane(self.focus) {
            Some(area) if self.focus != Pane::Queue => i64::from(layout::inner(area).height.max(1)),
            _ => queue_page,
        }
    }

    /// Moves the selection or scroll of the focused pane by `delta`.
    pub(super) fn step(&mut self, delta: i64) -> Vec<Effect> {
        self.scroll(self.focus, delta)
    }

    pub(super) fn scroll(&mut self, pane: Pane, delta: i64) -> Vec<Effect> {
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
    pub(super) fn scroll_limit(&self, pane: Pane) -> u16 {
        let areas = self.areas();
        let Some(area) = areas
            .pane(pane)
            .or_else(|| layout::areas(self.size, pane, self.has_items()).pane(pane))
        else {
            return 0;
        };
        let inner = layout::inner(area);
        let height = self.detail.top().map_or(0, |frame| {
            doc::height(self.theme, frame, pane, inner.width, self.now)
        });
        max_scroll(height, inner.height)
    }

    /// Keeps every scroll offset within what the panes show now.
    pub(super) fn clamp_scrolls(&mut self) {
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
    pub(super) fn leave_missing_items(&mut self) {
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

    pub(super) fn cycle_pane(&mut self, delta: i64) -> Vec<Effect> {
        let panes = self.panes();
        let at = panes.iter().position(|p| *p == self.focus).unwrap_or(0);
        let next = (at as i64 + delta).rem_euclid(panes.len() as i64);
        self.focus = panes[usize::try_from(next).unwrap_or(0)];
        let effects = self.sync_root();
        self.clamp_scrolls();
        effects
    }

    /// `Enter` on the queue: into the detail of the selected hold.
    pub(super) fn open(&mut self) -> Vec<Effect> {
        if self.detail.top().is_none() {
            return Vec::new();
        }
        self.focus = Pane::Evidence;
        self.clamp_scrolls();
        Vec::new()
    }

    /// `Enter` in the detail: follow the selected link.
    pub(super) fn follow(&mut self) -> Vec<Effect> {
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
    pub(super) fn back(&mut self) -> Vec<Effect> {
        if self.detail.pop() {
            self.leave_missing_items();
            return self.load_top();
        }
        self.focus = Pane::Queue;
        self.sync_root()
    }
}
