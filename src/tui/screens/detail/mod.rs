//! The detail side's own state: the operations opened, as a navigation stack
//! (following a parent, child, dependency or key-conflict link pushes one, `Esc`
//! pops it), each with the evidence bundle the core computed for it, its scroll
//! positions and its selected link. A newer version of an operation being read is
//! held back and flagged rather than swapped in under the reviewer's eyes. Its
//! keys scroll the focused pane, select and follow links and go back; the
//! answers to its loads come back to it ([`Screen::answer`]); its drawing is in
//! `draw.rs`.

mod draw;
mod items;

use chrono::{DateTime, Utc};
use crossterm::event::KeyEvent;
use ratatui::layout::Rect;

use super::{Asker, Ctx, Outcome, Screen};
use crate::core::detail::OperationDetail;
use crate::core::evidence;
use crate::core::ids::OperationId;
use crate::core::rules::Actor;
use crate::tui::doc;
use crate::tui::keymap::{self, Command, Context};
use crate::tui::latest::Latest;
use crate::tui::layout::{self, Pane};
use crate::tui::message::{Answer, Effect, Tag};
pub(crate) use crate::tui::opened::{Frame, Loaded};
use crate::tui::widgets::max_scroll;

/// What a detail answer did to the frame it was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Shown (first load, or nothing the reviewer was reading changed).
    Shown,
    /// The operation changed while being read: held back and flagged.
    Flagged,
    /// The load failed; the error is on the frame.
    Failed,
}

#[derive(Debug, Clone, Default)]
pub struct DetailState {
    /// The operations opened, the root (the queue's selection) first.
    pub stack: Vec<Frame>,
    /// The queue's first page has arrived: with nothing open the panes say
    /// "select a hold" rather than "loading".
    pub queue_loaded: bool,
    /// A write of this console just answered: the reload it caused replaces
    /// the operation shown instead of being flagged as someone else's change.
    pub reload_expected: bool,
    pending: Latest<OperationId>,
}

impl DetailState {
    pub fn top(&self) -> Option<&Frame> {
        self.stack.last()
    }

    pub fn top_mut(&mut self) -> Option<&mut Frame> {
        self.stack.last_mut()
    }

    /// The loaded version of the operation on top.
    pub fn current(&self) -> Option<&Loaded> {
        self.top().and_then(|f| f.loaded.as_ref())
    }

    pub fn is_loading(&self) -> bool {
        self.pending.is_waiting()
    }

    /// Makes `id` the root, dropping any links followed; returns whether it must
    /// be loaded (it was not the root already).
    pub fn set_root(&mut self, id: &OperationId) -> bool {
        if self.stack.len() == 1 && self.stack[0].id == *id {
            return false;
        }
        if self.stack.first().is_some_and(|f| f.id == *id) {
            self.stack.truncate(1);
            return false;
        }
        self.stack = vec![Frame::new(id.clone())];
        true
    }

    pub fn clear(&mut self) {
        self.stack.clear();
        self.pending.cancel();
    }

    /// Opens `id` on top of the stack (following a link).
    pub fn push(&mut self, id: OperationId) {
        self.stack.push(Frame::new(id));
    }

    /// Goes back to the operation the current one was opened from; `false` at the
    /// root.
    pub fn pop(&mut self) -> bool {
        if self.stack.len() > 1 {
            self.stack.pop();
            true
        } else {
            false
        }
    }

    /// Records that a load of `id` is in flight; returns its tag.
    pub fn expect(&mut self, id: OperationId) -> u64 {
        self.pending.request(id)
    }

    /// Applies a detail answer to the frame on top, if it is still the one asked
    /// for. `reading` says whether the detail is on screen: a change to an
    /// operation being read is flagged, one off screen simply replaces it.
    pub fn apply(
        &mut self,
        generation: u64,
        result: Result<OperationDetail, String>,
        actor: &Actor,
        now: DateTime<Utc>,
        reading: bool,
    ) -> Option<Applied> {
        let id = self.pending.answer(generation)?;
        let frame = self.stack.last_mut().filter(|f| f.id == id)?;
        let detail = match result {
            Ok(detail) if actor.sees(&detail.row.operation.tenant) => detail,
            Ok(_) => {
                frame.error = Some(format!(
                    "operation {id} belongs to a tenant you have not been granted"
                ));
                return Some(Applied::Failed);
            }
            Err(e) => {
                frame.error = Some(e);
                return Some(Applied::Failed);
            }
        };
        frame.error = None;
        let fresh = Loaded::new(detail, actor, now);
        let applied = match &frame.loaded {
            Some(old) if old.detail != fresh.detail && reading => {
                frame.changed = Some(fresh);
                Applied::Flagged
            }
            _ => {
                frame.loaded = Some(fresh);
                frame.changed = None;
                Applied::Shown
            }
        };
        Some(applied)
    }

    /// Shows the held-back version of the operation on top; `false` if none.
    pub fn accept_change(&mut self) -> bool {
        match self.top_mut() {
            Some(frame) if frame.changed.is_some() => {
                frame.loaded = frame.changed.take();
                frame.link = 0;
                true
            }
            _ => false,
        }
    }

    /// Recomputes every bundle for a new `now` (the system clock moved).
    pub fn retime(&mut self, actor: &Actor, now: DateTime<Utc>) {
        for frame in &mut self.stack {
            for loaded in [&mut frame.loaded, &mut frame.changed]
                .into_iter()
                .flatten()
            {
                loaded.bundle = evidence::bundle(&loaded.detail, actor, now);
            }
        }
    }
}

impl DetailState {
    /// A request for the operation on top of the stack.
    pub fn load_top(&mut self) -> Vec<Effect> {
        let Some(id) = self.top().map(|f| f.id.clone()) else {
            return Vec::new();
        };
        let generation = Tag {
            by: Asker::Detail,
            serial: self.expect(id.clone()),
        };
        vec![Effect::Load { generation, id }]
    }

    /// A load answered: shown, or held back and flagged while being read, or
    /// its error said.
    fn loaded(
        &mut self,
        generation: u64,
        result: Result<OperationDetail, String>,
        ctx: &Ctx,
    ) -> Outcome {
        let reading = layout::shows_detail(ctx.size) || ctx.focus != Pane::Queue;
        match self.apply(generation, result, ctx.actor, ctx.now, reading) {
            Some(Applied::Flagged) if std::mem::take(&mut self.reload_expected) => {
                self.accept_change();
                Outcome::done()
            }
            Some(Applied::Flagged) => {
                let id = self.top().map(|f| f.id.to_string()).unwrap_or_default();
                Outcome::say(
                    format!(
                        "⚠ {id} changed in the store while you were reading it: R shows the new version"
                    ),
                    true,
                    Vec::new(),
                )
            }
            Some(Applied::Failed) => {
                let error = self.top().and_then(|f| f.error.clone()).unwrap_or_default();
                Outcome::say(error, true, Vec::new())
            }
            Some(Applied::Shown) => Outcome::done(),
            None => Outcome::Pass,
        }
    }

    /// Whether the operation open has an items pane.
    pub fn has_items(&self) -> bool {
        self.current().is_some_and(Loaded::has_items)
    }

    /// The largest scroll offset of a text pane, from the height of what it shows.
    pub fn scroll_limit(&self, pane: Pane, ctx: &Ctx) -> u16 {
        let items = self.has_items();
        let Some(area) = layout::areas(ctx.size, ctx.focus, items)
            .pane(pane)
            .or_else(|| layout::areas(ctx.size, pane, items).pane(pane))
        else {
            return 0;
        };
        let inner = layout::inner(area);
        let height = self.top().map_or(0, |frame| {
            doc::height(ctx.theme, frame, pane, inner.width, ctx.now)
        });
        max_scroll(height, inner.height)
    }

    /// Keeps every scroll offset within what the panes show now.
    pub fn clamp_scrolls(&mut self, ctx: &Ctx) {
        let evidence = self.scroll_limit(Pane::Evidence, ctx);
        let timeline = self.scroll_limit(Pane::Timeline, ctx);
        let items = self.current().map_or(0, |l| l.detail.items.len());
        if let Some(frame) = self.top_mut() {
            frame.scroll.evidence = frame.scroll.evidence.min(evidence);
            frame.scroll.timeline = frame.scroll.timeline.min(timeline);
            frame.scroll.items = frame.scroll.items.min(items.saturating_sub(1));
        }
    }

    /// Scrolls `pane` by `delta` lines (rows of the items table).
    pub fn scroll(&mut self, pane: Pane, delta: i64, ctx: &Ctx) {
        match pane {
            Pane::Evidence | Pane::Timeline => {
                let limit = self.scroll_limit(pane, ctx);
                if let Some(frame) = self.top_mut() {
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
            }
            Pane::Items => {
                let count = self.current().map_or(0, |l| l.detail.items.len());
                if let Some(frame) = self.top_mut() {
                    let last = i64::try_from(count.saturating_sub(1)).unwrap_or(0);
                    let to = i64::try_from(frame.scroll.items)
                        .unwrap_or(0)
                        .saturating_add(delta)
                        .clamp(0, last);
                    frame.scroll.items = usize::try_from(to).unwrap_or(0);
                }
            }
            Pane::Queue => {}
        }
    }

    /// Rows of the focused pane, for paging.
    fn pane_rows(&self, ctx: &Ctx) -> i64 {
        match layout::areas(ctx.size, ctx.focus, self.has_items()).pane(ctx.focus) {
            Some(area) => i64::from(layout::inner(area).height.max(1)),
            None => i64::from(layout::page_rows(ctx.size)),
        }
    }

    /// `Enter`: follows the selected link.
    fn follow(&mut self) -> Outcome {
        let Some(frame) = self.top() else {
            return Outcome::done();
        };
        let links = frame.links();
        let Some(link) = links.get(frame.link).or_else(|| links.first()) else {
            return Outcome::say("this operation links to no other", false, Vec::new());
        };
        let id = link.id.clone();
        let from = frame.id.clone();
        if self.stack.iter().any(|f| f.id == id) {
            return Outcome::say(
                format!("{id} is already open further back: Esc returns to it"),
                false,
                Vec::new(),
            );
        }
        self.push(id.clone());
        let load = self.load_top();
        Outcome::say(
            format!("opened {id} from {from}; Esc goes back"),
            false,
            load,
        )
    }

    /// `n` / `p`: selects the next or previous link.
    fn step_link(&mut self, delta: i64) {
        if let Some(frame) = self.top_mut() {
            let count = frame.links().len();
            if count > 0 {
                let at = i64::try_from(frame.link).unwrap_or(0) + delta;
                frame.link = usize::try_from(at.rem_euclid(count as i64)).unwrap_or(0);
            }
        }
    }
}

impl Screen for DetailState {
    fn context(&self) -> Context {
        Context::Detail
    }

    /// The detail's own keys (scrolling the focused pane, links, back); the
    /// console's pass. `Esc` at the first operation closes the detail back to
    /// the queue.
    fn key(&mut self, key: KeyEvent, ctx: &Ctx) -> Outcome {
        let Some(command) = keymap::lookup(Context::Detail, key) else {
            return Outcome::Pass;
        };
        let rows = self.pane_rows(ctx);
        if let Some(delta) = command.movement(rows) {
            self.scroll(ctx.focus, delta, ctx);
            return Outcome::done();
        }
        match command {
            Command::NextLink => {
                self.step_link(1);
                Outcome::done()
            }
            Command::PrevLink => {
                self.step_link(-1);
                Outcome::done()
            }
            Command::Open => self.follow(),
            Command::Back if self.pop() => Outcome::Done(self.load_top()),
            Command::Back => Outcome::Close,
            _ => Outcome::Pass,
        }
    }

    fn answer(&mut self, generation: u64, answer: Answer, ctx: &Ctx) -> Outcome {
        match answer {
            Answer::Loaded(result) => self.loaded(generation, result.map(|d| *d), ctx),
            _ => Outcome::Pass,
        }
    }

    /// Every detail pane the layout shows, the focused one highlighted.
    fn draw(&self, frame: &mut ratatui::Frame, _area: Rect, ctx: &Ctx) {
        let areas = layout::areas(ctx.size, ctx.focus, self.has_items());
        for pane in [Pane::Evidence, Pane::Timeline, Pane::Items] {
            if let Some(area) = areas.pane(pane) {
                self.draw_pane(frame, area, pane, ctx, ctx.focus == pane, self.queue_loaded);
            }
        }
    }

    fn name(&self) -> &'static str {
        "the detail"
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyCode;

    use super::*;
    use crate::core::model::{ChildLink, Relation, State};
    use crate::tui::screens::fixture::{self, char, detail, id, key};

    /// `name`, held, with a child operation for each of `children`.
    fn with_children(name: &str, children: &[&str]) -> OperationDetail {
        let mut held = detail(name, State::Unknown);
        held.children = children
            .iter()
            .map(|child| ChildLink {
                id: id(child),
                relation: Relation::CompensationOf,
                state: State::Failed,
                items: Vec::new(),
            })
            .collect();
        held
    }

    /// The load in `effects`: its serial, after checking the detail asked for `name`.
    fn load_of(effects: &[Effect], name: &str) -> u64 {
        let tag = fixture::tag(effects);
        assert_eq!(tag.by, Asker::Detail, "the detail asked");
        assert!(
            matches!(&effects[0], Effect::Load { id: asked, .. } if *asked == id(name)),
            "{effects:?}"
        );
        tag.serial
    }

    fn loaded(answer: OperationDetail) -> Answer {
        Answer::Loaded(Ok(Box::new(answer)))
    }

    /// The detail with `shown` open at its root, loaded.
    fn open(ctx: &Ctx, shown: OperationDetail) -> DetailState {
        let mut state = DetailState::default();
        let root = shown.row.operation.id.clone();
        assert!(state.set_root(&root));
        let serial = load_of(&state.load_top(), root.as_str());
        assert_eq!(state.answer(serial, loaded(shown), ctx), Outcome::done());
        state
    }

    #[test]
    fn a_load_answered_is_shown_and_a_replaced_one_dropped() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 160, 45, Pane::Evidence);
        let mut state = DetailState::default();
        state.set_root(&id("F01"));
        let old = load_of(&state.load_top(), "F01");
        let new = load_of(&state.load_top(), "F01");
        let answer = loaded(detail("F01", State::Unknown));
        assert_eq!(state.answer(old, answer.clone(), &ctx), Outcome::Pass);
        assert!(state.current().is_none() && state.is_loading());
        assert_eq!(state.answer(new, answer, &ctx), Outcome::done());
        let shown = state.current().map(|l| l.detail.row.operation.id.clone());
        assert_eq!(shown, Some(id("F01")));
        assert!(!state.is_loading());
    }

    #[test]
    fn a_change_while_reading_is_held_back_and_said() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 160, 45, Pane::Evidence);
        let mut state = open(&ctx, detail("F01", State::Unknown));
        let mut changed = detail("F01", State::Succeeded);
        changed.row.version = 4;
        let serial = load_of(&state.load_top(), "F01");
        assert_eq!(
            state.answer(serial, loaded(changed), &ctx),
            Outcome::say(
                "⚠ F01 changed in the store while you were reading it: R shows the new version",
                true,
                Vec::new()
            )
        );
        assert_eq!(state.current().map(|l| l.detail.row.version), Some(3));
        assert!(state.accept_change());
        assert_eq!(state.current().map(|l| l.detail.row.version), Some(4));
    }

    #[test]
    fn after_a_write_of_ours_the_reload_replaces_it_unflagged() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 160, 45, Pane::Evidence);
        let mut state = open(&ctx, detail("F01", State::Unknown));
        state.reload_expected = true;
        let mut changed = detail("F01", State::Succeeded);
        changed.row.version = 4;
        let serial = load_of(&state.load_top(), "F01");
        assert_eq!(state.answer(serial, loaded(changed), &ctx), Outcome::done());
        assert_eq!(state.current().map(|l| l.detail.row.version), Some(4));
        assert!(!state.reload_expected, "the next change is someone else's");
    }

    #[test]
    fn off_screen_a_change_simply_replaces_it() {
        let actor = fixture::actor();
        // 80×24 with the queue in focus: the detail is not drawn.
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Queue);
        let mut state = open(&ctx, detail("F01", State::Unknown));
        let mut changed = detail("F01", State::Failed);
        changed.row.version = 5;
        let serial = load_of(&state.load_top(), "F01");
        assert_eq!(state.answer(serial, loaded(changed), &ctx), Outcome::done());
        assert_eq!(state.current().map(|l| l.detail.row.version), Some(5));
    }

    #[test]
    fn a_failed_load_says_why_on_the_frame_and_the_status_line() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 160, 45, Pane::Evidence);
        let mut state = DetailState::default();
        state.set_root(&id("F01"));
        let serial = load_of(&state.load_top(), "F01");
        let outcome = state.answer(serial, Answer::Loaded(Err("F01 is gone".into())), &ctx);
        assert_eq!(outcome, Outcome::say("F01 is gone", true, Vec::new()));
        assert_eq!(
            state.top().and_then(|f| f.error.as_deref()),
            Some("F01 is gone")
        );
    }

    #[test]
    fn links_are_selected_followed_and_esc_goes_back_then_closes() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 160, 45, Pane::Evidence);
        let mut state = open(&ctx, with_children("F01", &["F02", "F03"]));
        assert_eq!(state.key(char('n'), &ctx), Outcome::done());
        assert_eq!(state.top().map(|f| f.link), Some(1));
        state.key(char('n'), &ctx);
        assert_eq!(state.top().map(|f| f.link), Some(0), "wraps around");
        state.key(char('p'), &ctx);
        assert_eq!(state.top().map(|f| f.link), Some(1));
        let Outcome::Say { text, effects, .. } = state.key(key(KeyCode::Enter), &ctx) else {
            panic!("Enter follows the link");
        };
        assert_eq!(text, "opened F03 from F01; Esc goes back");
        load_of(&effects, "F03");
        assert_eq!(state.stack.len(), 2);
        let Outcome::Done(effects) = state.key(key(KeyCode::Esc), &ctx) else {
            panic!("Esc goes back");
        };
        load_of(&effects, "F01");
        assert_eq!(state.stack.len(), 1);
        assert_eq!(state.key(key(KeyCode::Esc), &ctx), Outcome::Close);
    }

    #[test]
    fn a_link_to_an_operation_open_further_back_is_not_opened_twice() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 160, 45, Pane::Evidence);
        let mut state = open(&ctx, with_children("F01", &["F02"]));
        let Outcome::Say { effects, .. } = state.key(key(KeyCode::Enter), &ctx) else {
            panic!("Enter follows the link");
        };
        let serial = load_of(&effects, "F02");
        let back = with_children("F02", &["F01"]);
        assert_eq!(state.answer(serial, loaded(back), &ctx), Outcome::done());
        assert_eq!(
            state.key(key(KeyCode::Enter), &ctx),
            Outcome::say(
                "F01 is already open further back: Esc returns to it",
                false,
                Vec::new()
            )
        );
        assert_eq!(state.stack.len(), 2);
    }

    #[test]
    fn an_operation_without_links_says_so_and_the_consoles_keys_pass() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 160, 45, Pane::Evidence);
        let mut state = open(&ctx, detail("F01", State::Unknown));
        assert_eq!(
            state.key(key(KeyCode::Enter), &ctx),
            Outcome::say("this operation links to no other", false, Vec::new())
        );
        for k in [
            char('r'),
            char('/'),
            char('o'),
            key(KeyCode::Tab),
            char('q'),
        ] {
            assert_eq!(state.key(k, &ctx), Outcome::Pass, "{k:?}");
        }
    }
}
