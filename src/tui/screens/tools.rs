//! The tools tab: its state (every tool the store knows, each with its whole
//! inventory, as the runner read them with [`crate::tools::inventories`], and
//! the tool under the cursor), its keys, and its drawing — a table of the
//! tools (contract version, autonomy, the status lookup and what its checks
//! showed, the holds and the UNKNOWN ones of them, the newest drill and
//! whether it is current, the missing inventory fields) with the selected
//! tool's inventory beside it on a wide screen or under it on a narrow one.
//! The tools are asked for again whenever the store changes; `Enter` lists the
//! selected tool's holds in the held queue (the `tool:` filter).

use crossterm::event::KeyEvent;
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::Line;

use super::{Asker, Ctx, Outcome, Page, Screen};
use crate::core::circuit::Position;
use crate::core::sanitize::Clean;
use crate::store::OperationFilter;
use crate::tools::{ToolInventory, ToolRow};
use crate::tui::keymap::{self, Command, Context};
use crate::tui::latest::Latest;
use crate::tui::layout;
use crate::tui::message::{Answer, Effect, Tag};
use crate::tui::theme::Theme;
use crate::tui::widgets::{self, Column, DataTable, Doc, line, message, span};

/// The state of the tools tab.
#[derive(Debug, Clone, Default)]
pub struct ToolsState {
    /// Every tool, by name, as last read; `None` until the first answer.
    pub tools: Option<Vec<ToolInventory>>,
    /// Why the last read failed, in words.
    pub error: Option<String>,
    pub selected: usize,
    /// How far the inventory pane is scrolled.
    pub scroll: u16,
    pending: Latest<()>,
}

impl ToolsState {
    /// Takes the answer to the request tagged `generation`, keeping the cursor
    /// on the same tool when it is still there; `false` when the request was
    /// replaced.
    pub fn apply(&mut self, generation: u64, result: Result<Vec<ToolInventory>, String>) -> bool {
        if self.pending.answer(generation).is_none() {
            return false;
        }
        match result {
            Ok(tools) => {
                let name = self.selected_tool().map(|t| t.row.tool.clone());
                let kept = name.and_then(|n| tools.iter().position(|t| t.row.tool == n));
                if kept != Some(self.selected) {
                    self.scroll = 0;
                }
                self.selected = kept.unwrap_or(0);
                self.tools = Some(tools);
                self.error = None;
            }
            Err(e) => self.error = Some(e),
        }
        true
    }

    pub fn rows(&self) -> &[ToolInventory] {
        self.tools.as_deref().unwrap_or(&[])
    }

    pub fn selected_tool(&self) -> Option<&ToolInventory> {
        self.rows().get(self.selected)
    }

    /// Moves the cursor by `delta`, within the tools.
    fn step(&mut self, delta: i64) {
        let last = i64::try_from(self.rows().len().saturating_sub(1)).unwrap_or(0);
        let to = i64::try_from(self.selected)
            .unwrap_or(0)
            .saturating_add(delta)
            .clamp(0, last);
        let to = usize::try_from(to).unwrap_or(0);
        if to != self.selected {
            self.scroll = 0;
        }
        self.selected = to;
    }

    fn read(&mut self, ctx: &Ctx) -> Effect {
        Effect::Tools {
            generation: Tag {
                by: Asker::Tab(Page::Tools),
                serial: self.pending.request(()),
            },
            now: ctx.now,
        }
    }
}

impl Screen for ToolsState {
    fn context(&self) -> Context {
        Context::Tools
    }

    fn key(&mut self, key: KeyEvent, ctx: &Ctx) -> Outcome {
        let Some(command) = keymap::lookup(Context::Tools, key) else {
            return Outcome::Pass;
        };
        let page = i64::from(layout::page_rows(ctx.size));
        match command {
            // The list of tools is short: the page keys scroll the inventory.
            Command::PageDown => self.scroll = self.scroll.saturating_add(page_u16(page)),
            Command::PageUp => self.scroll = self.scroll.saturating_sub(page_u16(page)),
            Command::SwitchTab => return Outcome::Show(super::HELD.key),
            Command::Open => {
                return self.selected_tool().map_or_else(Outcome::done, |t| {
                    Outcome::Queue(Box::new(OperationFilter {
                        tools: vec![t.row.tool.clone()],
                        ..OperationFilter::default()
                    }))
                });
            }
            Command::NextPane | Command::PrevPane => {}
            command => match command.movement(page) {
                Some(delta) => self.step(delta),
                None => return Outcome::Pass,
            },
        }
        Outcome::done()
    }

    fn refresh(&mut self, ctx: &Ctx) -> Vec<Effect> {
        vec![self.read(ctx)]
    }

    fn answer(&mut self, generation: u64, answer: Answer, _ctx: &Ctx) -> Outcome {
        let Answer::Tools(result) = answer else {
            return Outcome::Pass;
        };
        Outcome::answered(self.apply(generation, result))
    }

    fn summary(&self, ctx: &Ctx) -> Option<Line<'static>> {
        Some(summary(self, ctx.theme))
    }

    fn name(&self) -> &'static str {
        "the tools tab"
    }

    fn draw(&self, frame: &mut Frame, area: Rect, ctx: &Ctx) {
        draw(frame, self, area, ctx);
    }
}

fn page_u16(page: i64) -> u16 {
    u16::try_from(page.max(1)).unwrap_or(u16::MAX)
}

/// `http · 2/3 found`, `http · unchecked`, `by hand`, `none`, `-` without a
/// contract.
fn lookup(r: &ToolRow) -> String {
    let Some(kind) = r.lookup else {
        return "-".to_owned();
    };
    // Only a lookup holdfast makes itself (`http`) is checked.
    let checks = r.checks.answered + r.checks.failed;
    match (kind, checks) {
        ("http", 0) => format!("{kind} · unchecked"),
        ("http", n) => format!("{kind} · {}/{n} found", r.checks.answered),
        _ => kind.to_owned(),
    }
}

fn lookup_style(r: &ToolRow, theme: Theme) -> Style {
    match r.lookup {
        Some("none") => theme.alert(),
        Some("http") if r.checks.failed > 0 => theme.alert(),
        Some("http") if r.checks.answered == 0 => theme.warn(),
        _ => theme.plain(),
    }
}

/// The newest drill in words, or `none`.
fn drill(r: &ToolRow) -> String {
    r.drill
        .as_ref()
        .map_or_else(|| "none".to_owned(), crate::tools::LastDrill::summary)
}

fn drill_style(r: &ToolRow, theme: Theme) -> Style {
    match &r.drill {
        None => theme.dim(),
        Some(d) if !d.pass => theme.alert(),
        Some(d) if !d.current => theme.warn(),
        Some(_) => theme.good(),
    }
}

/// A count, dimmed at zero and in `busy` otherwise.
fn count(n: u64, busy: Style, theme: Theme) -> (Clean, Style) {
    let style = if n == 0 { theme.dim() } else { busy };
    (Clean::new(&n.to_string()), style)
}

const COLUMNS: &[Column<ToolInventory, Theme>] = &[
    Column {
        header: "TOOL",
        width: 20,
        priority: 0,
        cut: true,
        cell: |t, theme| (Clean::new(&t.row.tool), theme.title()),
    },
    Column {
        header: "VERSION",
        width: 10,
        priority: 7,
        cut: true,
        cell: |t, _| {
            (
                Clean::new(t.row.version.as_deref().unwrap_or("-")),
                Style::new(),
            )
        },
    },
    Column {
        header: "AUTONOMY",
        width: 12,
        priority: 3,
        cut: false,
        cell: |t, _| (Clean::new(t.row.autonomy.as_str()), Style::new()),
    },
    Column {
        header: "LOOKUP",
        width: 18,
        priority: 6,
        cut: true,
        cell: |t, theme| (Clean::new(&lookup(&t.row)), lookup_style(&t.row, *theme)),
    },
    Column {
        header: "HOLDS",
        width: 6,
        priority: 1,
        cut: false,
        cell: |t, theme| count(t.row.holds, theme.warn(), *theme),
    },
    Column {
        header: "UNKNOWN",
        width: 7,
        priority: 2,
        cut: false,
        cell: |t, theme| count(t.row.unknowns, theme.alert(), *theme),
    },
    Column {
        header: "CIRCUIT",
        width: 9,
        priority: 3,
        cut: false,
        cell: |t, theme| {
            let style = match t.row.circuit {
                Some(Position::Open | Position::HalfOpen) => theme.alert(),
                Some(Position::Closed) => Style::new(),
                None => theme.dim(),
            };
            (Clean::new(crate::tools::circuit_words(&t.row)), style)
        },
    },
    Column {
        header: "LAST DRILL",
        width: 52,
        priority: 4,
        cut: true,
        cell: |t, theme| (Clean::new(&drill(&t.row)), drill_style(&t.row, *theme)),
    },
    Column {
        header: "MISSING",
        width: 7,
        priority: 5,
        cut: false,
        cell: |t, theme| {
            let n = u64::try_from(t.row.missing).unwrap_or(u64::MAX);
            count(n, theme.warn(), *theme)
        },
    },
];

/// Draws the tab in `area`: the tools, and the selected one's inventory beside
/// them (wide) or under them (narrow).
fn draw(frame: &mut Frame, state: &ToolsState, area: Rect, ctx: &Ctx) {
    let theme = ctx.theme;
    let Some(tools) = &state.tools else {
        let block = widgets::pane(theme, Clean::new(" Tools "), true);
        let text = state.error.as_deref().map_or_else(
            || "Reading the tools…".to_owned(),
            |e| format!("cannot read the tools: {e}"),
        );
        message(frame, area, block, theme, &text);
        return;
    };
    let title = format!(
        " Tools · {} known · Enter lists a tool's holds in the queue ",
        tools.len()
    );
    let block = widgets::pane(theme, Clean::new(&title), true);
    if tools.is_empty() {
        message(
            frame,
            area,
            block,
            theme,
            "No tool: the store holds no contract, level or drill.",
        );
        return;
    }
    let (list, detail) = if layout::is_wide(ctx.size) {
        let [list, detail] =
            Layout::horizontal([Constraint::Percentage(58), Constraint::Percentage(42)])
                .areas(area);
        (list, detail)
    } else {
        // The table's rows, its header and borders, at most half the body.
        let wanted = u16::try_from(tools.len())
            .unwrap_or(u16::MAX)
            .saturating_add(3);
        let [list, detail] = Layout::vertical([
            Constraint::Length(wanted.min(area.height / 2).max(4)),
            Constraint::Min(0),
        ])
        .areas(area);
        (list, detail)
    };
    DataTable {
        columns: COLUMNS,
        rows: tools,
        context: &theme,
        selected: Some(state.selected),
    }
    .draw(frame, list, block, theme);
    if let Some(tool) = state.selected_tool() {
        inventory(frame, tool, state.scroll, detail, theme);
    }
}

/// The selected tool's whole inventory: its row in words, then each field
/// present (its value, neutralized) or flagged MISSING with what it limits.
fn inventory(frame: &mut Frame, tool: &ToolInventory, scroll: u16, area: Rect, theme: Theme) {
    let inner = layout::inner(area);
    let doc = inventory_doc(tool, theme);
    let title = format!(
        " Inventory · {} · {} of {} missing · PgDn/PgUp scroll ",
        tool.row.tool,
        tool.row.missing,
        tool.inventory.len()
    );
    let block = widgets::pane(theme, Clean::new(&title), false);
    widgets::draw_lines(frame, area, block, doc.wrap(inner.width), scroll);
}

/// Width of the inventory's labels: its longest field name and a space.
const LABEL: usize = 21;

/// `label value`, the value wrapping under itself.
fn entry(doc: &mut Doc, theme: Theme, label: &str, value: Clean, style: Style) {
    doc.push_indented(
        line(vec![
            span(Clean::new(&format!("{label:<LABEL$}")), theme.label()),
            span(value, style),
        ]),
        u16::try_from(LABEL).unwrap_or(0),
    );
}

fn inventory_doc(tool: &ToolInventory, theme: Theme) -> Doc {
    let r = &tool.row;
    let mut doc = Doc::default();
    let version = r.version.as_deref().unwrap_or("no contract");
    entry(
        &mut doc,
        theme,
        "version",
        Clean::new(version),
        theme.plain(),
    );
    let autonomy = Clean::new(r.autonomy.as_str());
    entry(&mut doc, theme, "autonomy", autonomy, theme.plain());
    let lookup_text = Clean::new(&lookup(r));
    entry(
        &mut doc,
        theme,
        "lookup",
        lookup_text,
        lookup_style(r, theme),
    );
    let holds = format!("{} held, {} of them UNKNOWN", r.holds, r.unknowns);
    entry(&mut doc, theme, "holds", Clean::new(&holds), theme.plain());
    let circuit = Clean::new(crate::tools::circuit_words(r));
    entry(&mut doc, theme, "circuit", circuit, theme.plain());
    let drill_text = Clean::new(&drill(r));
    entry(
        &mut doc,
        theme,
        "last drill",
        drill_text,
        drill_style(r, theme),
    );
    if let Some(why) = r.drill.as_ref().and_then(|d| d.stale.as_deref()) {
        entry(&mut doc, theme, "  stale", Clean::new(why), theme.warn());
    }
    doc.blank();
    if tool.inventory.is_empty() {
        doc.push(line(vec![span(
            Clean::new("No contract stored: the inventory is the contract's."),
            theme.dim(),
        )]));
    }
    for e in &tool.inventory {
        match &e.value {
            Some(value) => entry(&mut doc, theme, e.field, Clean::new(value), theme.plain()),
            None => {
                let missing = Clean::new(&format!("MISSING ({})", e.wire));
                entry(&mut doc, theme, e.field, missing, theme.alert());
            }
        }
        if let Some(limit) = e.limit {
            entry(&mut doc, theme, "  limits", Clean::new(limit), theme.dim());
        }
    }
    doc
}

/// The tools in a few words: how many, their holds, the UNKNOWN ones, the
/// stale drills.
fn summary(state: &ToolsState, theme: Theme) -> Line<'static> {
    let Some(tools) = &state.tools else {
        return line(vec![span(Clean::new(" reading the tools…"), theme.dim())]);
    };
    let holds: u64 = tools.iter().map(|t| t.row.holds).sum();
    let unknowns: u64 = tools.iter().map(|t| t.row.unknowns).sum();
    let stale = tools
        .iter()
        .filter(|t| t.row.drill.as_ref().is_some_and(|d| !d.current))
        .count();
    line(vec![
        span(Clean::new(" tools "), theme.label()),
        span(Clean::new(&tools.len().to_string()), theme.plain()),
        span(Clean::new("  holds "), theme.label()),
        span(Clean::new(&holds.to_string()), theme.plain()),
        span(Clean::new("  UNKNOWN "), theme.label()),
        span(Clean::new(&unknowns.to_string()), theme.plain()),
        span(Clean::new("  stale drills "), theme.label()),
        span(Clean::new(&stale.to_string()), theme.plain()),
    ])
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyCode;

    use super::*;
    use crate::core::ladder::Level;
    use crate::tools::LookupHealth;
    use crate::tui::layout::Pane;
    use crate::tui::screens::fixture::{self, char, key};

    fn tool(name: &str, holds: u64) -> ToolInventory {
        ToolInventory {
            row: ToolRow {
                tool: name.into(),
                version: Some("IC01".into()),
                autonomy: Level::Manual,
                lookup: Some("http"),
                checks: LookupHealth::default(),
                holds,
                unknowns: 0,
                drill: None,
                missing: 0,
                circuit: None,
            },
            inventory: Vec::new(),
        }
    }

    fn request(effects: &[Effect]) -> u64 {
        let tag = fixture::tag(effects);
        assert_eq!(tag.by, Asker::Tab(Page::Tools), "the tools tab asked");
        tag.serial
    }

    #[test]
    fn an_answer_keeps_the_cursor_on_its_tool_and_enter_narrows_the_queue_to_it() {
        let actor = fixture::actor();
        let ctx = fixture::ctx(&actor, 80, 24, Pane::Queue);
        let mut tab = ToolsState::default();
        assert_eq!(tab.key(key(KeyCode::Enter), &ctx), Outcome::done());
        let old = request(&tab.refresh(&ctx));
        let new = request(&tab.refresh(&ctx));
        let answer = |names: &[&str]| Answer::Tools(Ok(names.iter().map(|n| tool(n, 1)).collect()));
        assert_eq!(tab.answer(old, answer(&["T01"]), &ctx), Outcome::Pass);
        assert_eq!(
            tab.answer(new, answer(&["T01", "T03"]), &ctx),
            Outcome::done()
        );
        tab.key(char('j'), &ctx);
        assert_eq!(
            tab.selected_tool().map(|t| t.row.tool.as_str()),
            Some("T03")
        );
        let serial = request(&tab.refresh(&ctx));
        tab.answer(serial, answer(&["T00", "T01", "T03"]), &ctx);
        assert_eq!(tab.selected, 2, "the cursor stays on T03");
        let Outcome::Queue(filter) = tab.key(key(KeyCode::Enter), &ctx) else {
            panic!("Enter lists the tool's holds");
        };
        assert_eq!(filter.tools, ["T03"]);
        assert_eq!(tab.key(char('t'), &ctx), Outcome::Show('1'));
        let serial = request(&tab.refresh(&ctx));
        tab.answer(serial, Answer::Tools(Err("no route".into())), &ctx);
        assert_eq!(tab.error.as_deref(), Some("no route"));
        assert_eq!(tab.rows().len(), 3, "the tools read before stay");
    }
}
