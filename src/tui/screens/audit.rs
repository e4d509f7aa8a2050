//! The audit tab: its state (the transitions read so far, newest first, a page
//! at a time by keyset on `seq`, with the row under the cursor, and the chain's
//! status as the console last verified it), its keys, and its drawing — the
//! chain status above a table of the transitions. The first page is asked for
//! again whenever the store changes; moving near the end of the rows read asks
//! for the next older page. The pages come back to the tab ([`Screen::answer`]).

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph};

use super::{Asker, Ctx, Outcome, Page, Screen};
use crate::core::audit::{AuditRow, ChainStatus};
use crate::core::clock::human_instant;
use crate::core::ids::OperationId;
use crate::core::sanitize::Clean;
use crate::tui::keymap::{self, Command, Context};
use crate::tui::latest::Latest;
use crate::tui::layout;
use crate::tui::message::{Answer, Effect, Tag};
use crate::tui::theme::Theme;
use crate::tui::widgets::{self, Column, DataTable, line, message, span};

/// How many audit rows one read of the tab brings.
pub(crate) const AUDIT_PAGE: u64 = 200;

/// What the runner read for the tab: one page, or the rows read so far once
/// the tab has taken it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditPage {
    /// Newest first.
    pub rows: Vec<AuditRow>,
    /// Rows in the log (the newest `seq`).
    pub head: i64,
    /// The page was read below this `seq` (`None`: the newest page).
    pub before: Option<i64>,
    /// Older rows in scope remain to be read.
    pub more: bool,
}

/// The state of the audit tab.
#[derive(Debug, Clone, Default)]
pub struct AuditState {
    pub page: Option<AuditPage>,
    /// The chain's status as the console last verified it (at start and
    /// whenever the store moves); `None` until the first verify answers.
    pub chain: Option<ChainStatus>,
    /// Why the last read failed, in words.
    pub error: Option<String>,
    pub selected: usize,
    pending: Latest<()>,
    /// An older page is being read.
    reading_older: bool,
}

impl AuditState {
    /// Takes the answer to the request tagged `generation`, keeping the cursor on
    /// the same row when it is still there; `false` when the request was replaced.
    pub fn apply(&mut self, generation: u64, result: Result<AuditPage, String>) -> bool {
        if self.pending.answer(generation).is_none() {
            return false;
        }
        self.reading_older = false;
        match result {
            Ok(page) => {
                let oldest = self.rows().last().map(|r| r.seq);
                match (&mut self.page, page.before) {
                    (Some(shown), Some(before)) if oldest == Some(before) => {
                        shown.rows.extend(page.rows);
                        shown.more = page.more;
                        shown.head = page.head;
                    }
                    (_, Some(_)) => {}
                    (_, None) => {
                        let seq = self.selected_row().map(|r| r.seq);
                        self.selected = seq
                            .and_then(|seq| page.rows.iter().position(|r| r.seq == seq))
                            .unwrap_or(0);
                        self.page = Some(page);
                    }
                }
                self.error = None;
            }
            Err(e) => self.error = Some(e),
        }
        true
    }

    pub fn rows(&self) -> &[AuditRow] {
        self.page.as_ref().map_or(&[], |p| p.rows.as_slice())
    }

    pub fn selected_row(&self) -> Option<&AuditRow> {
        self.rows().get(self.selected)
    }

    /// The operation of the row under the cursor.
    pub fn selected_operation(&self) -> Option<OperationId> {
        self.selected_row().map(|r| r.draft.operation.clone())
    }

    /// The read of the next older page, when the cursor is within `margin` rows
    /// of the end of the rows read and older ones remain.
    fn older(&mut self, margin: usize) -> Option<Effect> {
        let page = self.page.as_ref()?;
        let oldest = page.rows.last()?.seq;
        let near_end = self.selected + margin >= page.rows.len();
        if !page.more || !near_end || self.reading_older {
            return None;
        }
        self.reading_older = true;
        Some(self.read(Some(oldest)))
    }

    /// A request for the page below `before` (the newest with `None`).
    fn read(&mut self, before: Option<i64>) -> Effect {
        Effect::Audit {
            generation: Tag {
                by: Asker::Tab(Page::Audit),
                serial: self.pending.request(()),
            },
            before,
        }
    }

    /// Moves the cursor by `delta`, within the rows.
    pub fn step(&mut self, delta: i64) {
        let last = i64::try_from(self.rows().len().saturating_sub(1)).unwrap_or(0);
        let to = i64::try_from(self.selected)
            .unwrap_or(0)
            .saturating_add(delta)
            .clamp(0, last);
        self.selected = usize::try_from(to).unwrap_or(0);
    }
}

impl Screen for AuditState {
    fn context(&self) -> Context {
        Context::Audit
    }

    fn key(&mut self, key: KeyEvent, ctx: &Ctx) -> Outcome {
        let rows = i64::from(layout::page_rows(ctx.size));
        let Some(command) = keymap::lookup(Context::Audit, key) else {
            return Outcome::Pass;
        };
        let Some(delta) = command.movement(rows) else {
            return match command {
                Command::SwitchTab => Outcome::Show(super::HELD.key),
                Command::Open => self
                    .selected_operation()
                    .map_or_else(Outcome::done, Outcome::Open),
                Command::NextPane | Command::PrevPane => Outcome::done(),
                _ => Outcome::Pass,
            };
        };
        self.step(delta);
        let margin = usize::try_from(rows).unwrap_or(0);
        Outcome::Done(self.older(margin).into_iter().collect())
    }

    fn refresh(&mut self, _ctx: &Ctx) -> Vec<Effect> {
        self.reading_older = false;
        vec![self.read(None)]
    }

    fn answer(&mut self, generation: u64, answer: Answer, _ctx: &Ctx) -> Outcome {
        let Answer::Audit(result) = answer else {
            return Outcome::Pass;
        };
        Outcome::answered(self.apply(generation, result.map(|p| *p)))
    }

    fn summary(&self, ctx: &Ctx) -> Option<Line<'static>> {
        Some(summary(self, ctx.theme))
    }

    fn name(&self) -> &'static str {
        "the audit tab"
    }

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        draw(frame, self, area, ctx.theme);
    }
}

fn state_name(state: Option<crate::core::model::State>) -> &'static str {
    state.map_or("-", |s| s.as_str())
}

const COLUMNS: &[Column<AuditRow, Theme>] = &[
    Column {
        header: "SEQ",
        // Seven digits: a store of a million operations has seqs in the millions,
        // and a seq cut short names no row.
        width: 7,
        priority: 0,
        cut: false,
        cell: |r, _| (Clean::new(&r.seq.to_string()), Style::new()),
    },
    Column {
        header: "TIME",
        width: 20,
        priority: 5,
        cut: false,
        cell: |r, _| (Clean::new(&human_instant(r.draft.at)), Style::new()),
    },
    Column {
        header: "WHO",
        width: 16,
        priority: 4,
        cut: true,
        // The identity whose act it is, as `show` headlines it; a delegate
        // that wrote the row for someone comes after them (`maya via relay`).
        cell: |r, _| (Clean::new(&r.draft.author().name()), Style::new()),
    },
    Column {
        header: "ROLE",
        width: 8,
        priority: 6,
        cut: true,
        cell: |r, theme| (Clean::new(r.draft.author().role.as_str()), theme.dim()),
    },
    Column {
        header: "ACTION",
        width: 20,
        priority: 1,
        cut: true,
        cell: |r, theme| (Clean::new(&r.draft.action), theme.title()),
    },
    Column {
        header: "FROM → TO",
        width: 22,
        priority: 3,
        cut: true,
        cell: |r, _| {
            let text = match (r.draft.from, r.draft.to) {
                (None, None) => "-".to_owned(),
                // An action that changes no state records the state it left as is.
                (Some(state), None) => format!("{} (unchanged)", state.as_str()),
                (from, to) => format!("{} → {}", state_name(from), state_name(to)),
            };
            (Clean::new(&text), Style::new())
        },
    },
    Column {
        header: "OPERATION",
        width: 9,
        priority: 2,
        cut: false,
        cell: |r, _| (Clean::new(r.draft.operation.as_str()), Style::new()),
    },
    Column {
        header: "RATIONALE",
        width: 88,
        priority: 7,
        cut: true,
        cell: |r, theme| match &r.draft.rationale {
            Some(text) => (Clean::new(text), Style::new()),
            None => (Clean::new("-"), theme.dim()),
        },
    },
];

/// Draws the tab in `area`.
fn draw(frame: &mut Frame, state: &AuditState, area: Rect, theme: Theme) {
    let Some(page) = &state.page else {
        let block = widgets::pane(theme, Clean::new(" Audit "), true);
        let text = state.error.as_deref().map_or_else(
            || "Reading the audit log…".to_owned(),
            |e| format!("cannot read the audit log: {e}"),
        );
        message(frame, area, block, theme, &text);
        return;
    };
    let shown = page.rows.len();
    let title = if page.more {
        format!(
            " Audit · newest {shown} of {} transitions read (more as you scroll) · Enter opens the operation ",
            page.head
        )
    } else {
        format!(" Audit · {shown} transitions, newest first · Enter opens the operation ")
    };
    let block = widgets::pane(theme, Clean::new(&title), true);
    let inner = layout::inner(area);
    frame.render_widget(block, area);
    let [status, table] =
        Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(inner);
    let (text, style) = match &state.chain {
        None => ("verifying the chain…".to_owned(), theme.dim()),
        Some(ChainStatus::Intact { rows, head }) => (
            match head {
                Some((seq, hash)) => format!(
                    "chain intact · {rows} rows verified · head seq {seq} {}…",
                    hash.short(12)
                ),
                None => "chain intact · the log is empty".to_owned(),
            },
            theme.good(),
        ),
        Some(ChainStatus::Broken { seq, reason }) => (
            format!("✗ CHAIN BROKEN at seq {seq}: {reason} (holdfast audit verify names it too)"),
            theme.alert(),
        ),
    };
    frame.render_widget(
        Paragraph::new(line(vec![span(Clean::new(&text), style)])),
        status,
    );
    if page.rows.is_empty() {
        frame.render_widget(
            Paragraph::new(line(vec![span(
                Clean::new("No transition recorded yet."),
                theme.dim(),
            )])),
            table,
        );
        return;
    }
    DataTable {
        columns: COLUMNS,
        rows: &page.rows,
        context: &theme,
        selected: Some(state.selected),
    }
    .draw(frame, table, Block::new(), theme);
}

/// The chain's status in a few words.
fn summary(state: &AuditState, theme: Theme) -> Line<'static> {
    let Some(chain) = &state.chain else {
        return line(vec![span(Clean::new(" verifying…"), theme.dim())]);
    };
    let (text, style) = match chain {
        ChainStatus::Intact { rows, .. } => (format!("intact, {rows} rows"), theme.good()),
        ChainStatus::Broken { seq, .. } => (format!("BROKEN at seq {seq}"), theme.alert()),
    };
    line(vec![
        span(Clean::new(" chain "), theme.label()),
        span(Clean::new(&text), style),
    ])
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyCode;

    use super::*;
    use crate::core::model::State;
    use crate::tui::layout::Pane;
    use crate::tui::screens::fixture::{self, char, id, key};

    /// The audit row `seq`, a reconcile of operation F`seq`.
    fn row(seq: i64) -> AuditRow {
        fixture::audit_row(
            seq,
            &format!("F{seq:02}"),
            "reconcile",
            State::Unknown,
            None,
        )
    }

    /// Rows `from` down to `to`, newest first, read below `before`.
    fn page(from: i64, to: i64, before: Option<i64>, more: bool) -> Answer {
        Answer::Audit(Ok(Box::new(AuditPage {
            rows: (to..=from).rev().map(row).collect(),
            head: 99,
            before,
            more,
        })))
    }

    /// The audit request in `effects`: its serial, and the `seq` it reads below.
    fn request(effects: &[Effect]) -> (u64, Option<i64>) {
        let tag = fixture::tag(effects);
        assert_eq!(tag.by, Asker::Tab(Page::Audit), "the audit tab asked");
        let Effect::Audit { before, .. } = effects[0] else {
            panic!("{effects:?}");
        };
        (tag.serial, before)
    }

    #[test]
    fn the_newest_page_answered_is_shown_and_an_older_request_dropped() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Queue);
        let mut tab = AuditState::default();
        let (old, _) = request(&tab.refresh(&ctx));
        let (new, before) = request(&tab.refresh(&ctx));
        assert_eq!(before, None, "the newest page first");
        assert_eq!(
            tab.answer(old, page(99, 60, None, true), &ctx),
            Outcome::Pass
        );
        assert!(tab.page.is_none());
        assert_eq!(
            tab.answer(new, page(99, 60, None, true), &ctx),
            Outcome::done()
        );
        assert_eq!(tab.rows().len(), 40);
        assert_eq!(tab.selected_operation(), Some(id("F99")));
    }

    #[test]
    fn moving_near_the_end_reads_the_older_page_once_and_appends_it() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Queue);
        let mut tab = AuditState::default();
        let (serial, _) = request(&tab.refresh(&ctx));
        tab.answer(serial, page(99, 60, None, true), &ctx);
        assert_eq!(
            tab.key(char('j'), &ctx),
            Outcome::done(),
            "far from the end"
        );
        let Outcome::Done(effects) = tab.key(char('G'), &ctx) else {
            panic!("G moves");
        };
        let (older, before) = request(&effects);
        assert_eq!(before, Some(60), "below the oldest row read");
        assert_eq!(
            tab.key(char('k'), &ctx),
            Outcome::done(),
            "one older read at a time"
        );
        assert_eq!(
            tab.answer(older, page(59, 40, Some(60), false), &ctx),
            Outcome::done()
        );
        assert_eq!(tab.rows().len(), 60);
        assert_eq!(tab.rows().last().map(|r| r.seq), Some(40));
        tab.key(char('G'), &ctx);
        assert_eq!(
            tab.key(char('k'), &ctx),
            Outcome::done(),
            "nothing older remains"
        );
    }

    #[test]
    fn a_refresh_keeps_the_cursor_on_its_row() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Queue);
        let mut tab = AuditState::default();
        let (serial, _) = request(&tab.refresh(&ctx));
        tab.answer(serial, page(99, 60, None, true), &ctx);
        tab.key(char('j'), &ctx);
        tab.key(char('j'), &ctx);
        assert_eq!(tab.selected_operation(), Some(id("F97")));
        let (serial, _) = request(&tab.refresh(&ctx));
        tab.answer(serial, page(101, 62, None, true), &ctx);
        assert_eq!(tab.selected_operation(), Some(id("F97")));
        assert_eq!(tab.selected, 4);
    }

    #[test]
    fn a_failed_read_is_kept_to_say_and_enter_opens_the_rows_operation() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Queue);
        let mut tab = AuditState::default();
        assert_eq!(tab.key(key(KeyCode::Enter), &ctx), Outcome::done());
        let (serial, _) = request(&tab.refresh(&ctx));
        let failed = Answer::Audit(Err("no route".into()));
        assert_eq!(tab.answer(serial, failed, &ctx), Outcome::done());
        assert_eq!(tab.error.as_deref(), Some("no route"));
        let (serial, _) = request(&tab.refresh(&ctx));
        tab.answer(serial, page(12, 10, None, false), &ctx);
        assert_eq!(tab.error, None);
        tab.key(char('j'), &ctx);
        assert_eq!(tab.key(key(KeyCode::Enter), &ctx), Outcome::Open(id("F11")));
        assert_eq!(tab.key(char('t'), &ctx), Outcome::Show('1'));
        assert_eq!(tab.key(key(KeyCode::Tab), &ctx), Outcome::done());
        assert_eq!(tab.key(char('r'), &ctx), Outcome::Pass);
    }
}
