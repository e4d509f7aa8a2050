//! Keybindings as data: one table of (context, key, command, description). The same
//! table answers "what does this key do here" and fills the `?` overlay, so the
//! help can never disagree with the keys.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Where the keyboard focus is, which decides what a key means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Context {
    /// Keys that work everywhere outside a prompt.
    Global,
    Queue,
    Detail,
    /// The metrics tab: figures and the operations behind one.
    Metrics,
    /// The audit tab: transitions, newest first.
    Audit,
    /// The tools tab: one row per tool, the selected one's inventory.
    Tools,
    Help,
    /// Typing into the search or filter prompt: every other key is text.
    Prompt,
    /// The review dialog: its inputs take every other key as text.
    Review,
    /// The bulk triage dialog: its rationale takes every other key as text.
    Bulk,
    /// A hold's lookup result.
    Lookup,
}

/// What a key asks the console to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Command {
    Quit,
    Help,
    Up,
    Down,
    Top,
    Bottom,
    PageUp,
    PageDown,
    NextPane,
    PrevPane,
    Open,
    Back,
    Search,
    Filter,
    ClearQuery,
    Sort,
    SwitchTab,
    /// Show the tab whose key this is (the tabs are registered in
    /// [`crate::tui::screens::TABS`]).
    Show(char),
    Reload,
    NextLink,
    PrevLink,
    /// Open the review dialog on the selected operation.
    Review,
    /// Look the selected hold up at the provider now.
    LookUp,
    /// Mark or unmark the selected operation for bulk triage.
    Mark,
    /// Mark every operation matching the filter and search, on every page.
    MarkAll,
    /// Unmark everything.
    ClearMarks,
    /// Open the bulk triage dialog on the marked operations.
    Bulk,
    /// Acknowledge a broken audit chain, so that transitions are offered again.
    AcknowledgeChain,
    /// Keep what was typed into the prompt and close it.
    Accept,
    /// Drop what was typed into the prompt and close it.
    Cancel,
    /// Apply what a dialog previewed (a key distinct from `Enter`).
    Apply,
    /// Open the `:` command prompt (a tab by its name, `:q`, `:help`).
    Colon,
    /// Complete what is typed at the `:` prompt.
    Complete,
    /// Show the repeated errors (owner × root cause × tool) in the metrics tab.
    RepeatedErrors,
}

impl Command {
    /// How many rows a movement key moves a selection or scroll by, `page`
    /// rows to a page (`Top` and `Bottom` as far as any list goes, clamped by
    /// the pane); `None` for any other command.
    pub(crate) fn movement(self, page: i64) -> Option<i64> {
        match self {
            Command::Up => Some(-1),
            Command::Down => Some(1),
            Command::PageUp => Some(-page),
            Command::PageDown => Some(page),
            Command::Top => Some(i64::MIN / 2),
            Command::Bottom => Some(i64::MAX / 2),
            _ => None,
        }
    }
}

/// One binding: in `context`, `key` (shown as `label`) runs `command`.
pub(crate) struct Binding {
    pub context: Context,
    pub key: KeyCode,
    pub label: &'static str,
    pub command: Command,
    pub help: &'static str,
}

const fn bind(
    context: Context,
    key: KeyCode,
    label: &'static str,
    command: Command,
    help: &'static str,
) -> Binding {
    Binding {
        context,
        key,
        label,
        command,
        help,
    }
}

use Command as C;
use Context::{Audit, Bulk, Detail, Global, Help, Lookup, Metrics, Prompt, Queue, Review, Tools};
use KeyCode as K;

/// Every binding of the console.
pub(crate) const BINDINGS: &[Binding] = &[
    bind(Global, K::Char('q'), "q", C::Quit, "quit"),
    bind(Global, K::Char('?'), "?", C::Help, "this help"),
    bind(
        Global,
        K::Char('r'),
        "r",
        C::Review,
        "review: the actions allowed now, their effect, confirm",
    ),
    bind(
        Global,
        K::Tab,
        "Tab",
        C::NextPane,
        "next pane (queue, evidence, timeline, items)",
    ),
    bind(Global, K::BackTab, "S-Tab", C::PrevPane, "previous pane"),
    bind(
        Global,
        K::Char('R'),
        "R",
        C::Reload,
        "reload now and show a change flagged ⚠",
    ),
    bind(
        Global,
        K::Char('t'),
        "t",
        C::SwitchTab,
        "switch tab: held queue / all operations",
    ),
    bind(
        Global,
        K::Char('o'),
        "o",
        C::LookUp,
        "look the hold up at the provider now; shows the answer and what it allows",
    ),
    bind(Global, K::Char('1'), "1", C::Show('1'), "held queue"),
    bind(Global, K::Char('2'), "2", C::Show('2'), "all operations"),
    bind(
        Global,
        K::Char('3'),
        "3",
        C::Show('3'),
        "metrics and release gate",
    ),
    bind(
        Global,
        K::Char('4'),
        "4",
        C::Show('4'),
        "audit log and chain status",
    ),
    bind(
        Global,
        K::Char('5'),
        "5",
        C::Show('5'),
        "tools: contract, autonomy, lookup, holds, last drill, inventory",
    ),
    bind(
        Global,
        K::Char('A'),
        "A",
        C::AcknowledgeChain,
        "how to acknowledge a broken audit chain (transitions are refused until an owner does)",
    ),
    bind(
        Global,
        K::Char(':'),
        ":",
        C::Colon,
        "command: :held :all :metrics :audit :tools (a tab by its name), :help, :q; Tab completes",
    ),
    bind(Global, K::Char('j'), "j ↓", C::Down, "down"),
    bind(Global, K::Down, "", C::Down, ""),
    bind(Global, K::Char('k'), "k ↑", C::Up, "up"),
    bind(Global, K::Up, "", C::Up, ""),
    bind(Global, K::Char('g'), "g Home", C::Top, "first"),
    bind(Global, K::Home, "", C::Top, ""),
    bind(Global, K::Char('G'), "G End", C::Bottom, "last"),
    bind(Global, K::End, "", C::Bottom, ""),
    bind(Global, K::PageUp, "PgUp", C::PageUp, "page up"),
    bind(Global, K::PageDown, "PgDn", C::PageDown, "page down"),
    bind(Queue, K::Enter, "Enter", C::Open, "open the selected hold"),
    bind(
        Queue,
        K::Char('/'),
        "/",
        C::Search,
        "search ids, keys and the columns shown",
    ),
    bind(
        Queue,
        K::Char('f'),
        "f",
        C::Filter,
        "filter: state: tenant: owner: tool: mode: risk:",
    ),
    bind(
        Queue,
        K::Char('s'),
        "s",
        C::Sort,
        "sort: urgency, age, id, deadline",
    ),
    bind(
        Queue,
        K::Esc,
        "Esc",
        C::ClearQuery,
        "clear search and filter",
    ),
    bind(
        Queue,
        K::Char(' '),
        "space",
        C::Mark,
        "mark / unmark for bulk",
    ),
    bind(Queue, K::Char('a'), "a", C::MarkAll, "mark all matching"),
    bind(Queue, K::Char('u'), "u", C::ClearMarks, "unmark all"),
    bind(
        Queue,
        K::Char('b'),
        "b",
        C::Bulk,
        "bulk triage of the marked",
    ),
    bind(
        Detail,
        K::Enter,
        "Enter",
        C::Open,
        "follow the selected link",
    ),
    bind(
        Detail,
        K::Char('/'),
        "/",
        C::Search,
        "search the queue (back to it)",
    ),
    bind(
        Detail,
        K::Char('f'),
        "f",
        C::Filter,
        "filter the queue (back to it)",
    ),
    bind(
        Detail,
        K::Char('n'),
        "n",
        C::NextLink,
        "select next parent/child link",
    ),
    bind(
        Detail,
        K::Char('p'),
        "p",
        C::PrevLink,
        "select previous link",
    ),
    bind(
        Detail,
        K::Esc,
        "Esc",
        C::Back,
        "back (to the operation you came from)",
    ),
    bind(
        Metrics,
        K::Enter,
        "Enter",
        C::Open,
        "list the operations behind a figure / open one",
    ),
    bind(Metrics, K::Esc, "Esc", C::Back, "back to the figures"),
    bind(
        Metrics,
        K::Char('e'),
        "e",
        C::RepeatedErrors,
        "repeated errors by owner × root cause × tool, most in the last week first (Enter opens a group's newest) / back",
    ),
    bind(
        Metrics,
        K::Tab,
        "Tab",
        C::NextPane,
        "figures / operations behind",
    ),
    bind(
        Audit,
        K::Enter,
        "Enter",
        C::Open,
        "open the row's operation",
    ),
    bind(
        Tools,
        K::Enter,
        "Enter",
        C::Open,
        "the held queue of the selected tool (filter tool:NAME; Esc there clears it)",
    ),
    bind(
        Tools,
        K::PageDown,
        "PgDn",
        C::PageDown,
        "scroll the inventory down",
    ),
    bind(
        Tools,
        K::PageUp,
        "PgUp",
        C::PageUp,
        "scroll the inventory up",
    ),
    bind(Help, K::Char('j'), "j k", C::Down, "scroll these keys"),
    bind(Help, K::Down, "", C::Down, ""),
    bind(Help, K::Char('k'), "", C::Up, ""),
    bind(Help, K::Up, "", C::Up, ""),
    bind(Help, K::PageDown, "", C::PageDown, ""),
    bind(Help, K::PageUp, "", C::PageUp, ""),
    bind(Help, K::Char('g'), "", C::Top, ""),
    bind(Help, K::Home, "", C::Top, ""),
    bind(Help, K::Char('G'), "", C::Bottom, ""),
    bind(Help, K::End, "", C::Bottom, ""),
    bind(Help, K::Esc, "Esc", C::Help, "close help"),
    bind(Help, K::Char('?'), "?", C::Help, "close help"),
    bind(Help, K::Char('q'), "q", C::Help, "close help"),
    bind(
        Review,
        K::Enter,
        "Enter",
        C::Accept,
        "pick the action / preview its effect / confirm what changes no state",
    ),
    bind(
        Review,
        K::Char('y'),
        "y",
        C::Apply,
        "confirm and apply a state change (high/critical: type the id)",
    ),
    bind(Review, K::Esc, "Esc", C::Cancel, "one step back; closes"),
    bind(Review, K::Tab, "Tab", C::NextPane, "next input"),
    bind(Review, K::BackTab, "S-Tab", C::PrevPane, "previous input"),
    bind(Review, K::Up, "↑", C::Up, "previous allowed action"),
    bind(Review, K::Down, "↓", C::Down, "next allowed action"),
    bind(
        Bulk,
        K::Enter,
        "Enter",
        C::Accept,
        "pick the action / dry run / close",
    ),
    bind(
        Bulk,
        K::Char('y'),
        "y",
        C::Apply,
        "apply to all after the dry run",
    ),
    bind(Bulk, K::Tab, "Tab", C::NextPane, "next input"),
    bind(Bulk, K::BackTab, "S-Tab", C::PrevPane, "previous input"),
    bind(Bulk, K::Esc, "Esc", C::Cancel, "one step back; closes"),
    bind(Bulk, K::Up, "↑", C::Up, "previous action / scroll"),
    bind(Bulk, K::Down, "↓", C::Down, "next action / scroll"),
    bind(Lookup, K::Enter, "Enter", C::Accept, "close"),
    bind(Lookup, K::Esc, "Esc", C::Cancel, "close"),
    bind(Prompt, K::Enter, "Enter", C::Accept, "keep"),
    bind(Prompt, K::Esc, "Esc", C::Cancel, "cancel"),
    bind(
        Prompt,
        K::Tab,
        "Tab",
        C::Complete,
        "complete a command (at the : prompt)",
    ),
];

/// The command `key` runs in `context`, looking at the context's own bindings first
/// and then the global ones. The help overlay takes only its own keys (`q`
/// closes it, as `Esc` does; `Ctrl-C` still quits).
pub(crate) fn lookup(context: Context, key: KeyEvent) -> Option<Command> {
    if key.modifiers.contains(KeyModifiers::CONTROL) {
        return matches!(key.code, K::Char('c')).then_some(C::Quit);
    }
    let found = |ctx: Context| {
        BINDINGS
            .iter()
            .find(|b| b.context == ctx && b.key == key.code)
            .map(|b| b.command)
    };
    match context {
        Help | Prompt | Review | Bulk => found(context),
        ctx => found(ctx).or_else(|| found(Global)),
    }
}

/// The key shown for `command` in `context` (its own bindings, then the global
/// ones), for the hints in the status bar.
pub(crate) fn label(context: Context, command: Command) -> Option<&'static str> {
    let find = |ctx: Context| {
        BINDINGS
            .iter()
            .find(|b| b.context == ctx && b.command == command && !b.label.is_empty())
            .map(|b| b.label)
    };
    find(context).or_else(|| find(Global))
}

/// The lines of the help overlay for `context`: its own keys, then the global ones.
pub fn help(context: Context) -> Vec<(&'static str, &'static str)> {
    let own = BINDINGS.iter().filter(|b| b.context == context);
    let global = BINDINGS
        .iter()
        .filter(|b| b.context == Global && !matches!(context, Help | Prompt | Review | Bulk));
    own.chain(global)
        .filter(|b| !b.label.is_empty())
        .map(|b| (b.label, b.help))
        .collect()
}

/// Where each context's keys are documented, in the order `docs/console.md`
/// lists them, with the heading each table sits under.
#[cfg(test)]
const DOCUMENTED: &[(Context, &str)] = &[
    (Global, "Everywhere (outside a prompt or dialog)"),
    (Queue, "The queue"),
    (Detail, "A hold"),
    (Metrics, "The metrics tab"),
    (Audit, "The audit tab"),
    (Tools, "The tools tab"),
    (Lookup, "A lookup's result"),
    (Review, "The review dialog"),
    (Bulk, "The bulk triage dialog"),
    (Prompt, "Search and filter prompts"),
    (Help, "The help overlay"),
];

/// The keys of every context as Markdown tables, one per context, read from
/// the same bindings as the console and its `?` overlay: `docs/console.md`
/// carries this text, and a test holds the two equal.
#[cfg(test)]
fn markdown_tables() -> String {
    let mut out = String::new();
    for (context, heading) in DOCUMENTED {
        out.push_str(&format!("### {heading}\n\n| key | does |\n|---|---|\n"));
        for b in BINDINGS
            .iter()
            .filter(|b| b.context == *context && !b.label.is_empty())
        {
            let key = b.label.replace('|', "\\|");
            out.push_str(&format!("| `{key}` | {} |\n", b.help.replace('|', "\\|")));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/console.md` lists exactly the keys the console binds, between its
    /// `keys:begin`/`keys:end` markers. `HOLDFAST_UPDATE_DOCS=1 cargo test
    /// --lib keymap` writes the tables anew after a binding changes.
    #[test]
    fn the_console_guide_lists_every_key_the_console_binds() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/console.md");
        let text = std::fs::read_to_string(path).unwrap();
        let (begin, end) = ("<!-- keys:begin -->\n", "<!-- keys:end -->");
        let start = text
            .find(begin)
            .expect("docs/console.md has a keys:begin marker")
            + begin.len();
        let stop = text
            .find(end)
            .expect("docs/console.md has a keys:end marker");
        let tables = markdown_tables();
        if text[start..stop] != tables && std::env::var_os("HOLDFAST_UPDATE_DOCS").is_some() {
            let updated = format!("{}{tables}{}", &text[..start], &text[stop..]);
            std::fs::write(path, updated).unwrap();
            return;
        }
        assert_eq!(
            text[start..stop],
            tables,
            "docs/console.md's key tables differ from the bindings; \
             rerun with HOLDFAST_UPDATE_DOCS=1 to write them"
        );
    }

    #[test]
    fn every_context_with_keys_is_documented() {
        for b in BINDINGS.iter().filter(|b| !b.label.is_empty()) {
            assert!(
                DOCUMENTED.iter().any(|(c, _)| *c == b.context),
                "{:?} has keys but no table in docs/console.md",
                b.context
            );
        }
    }

    fn key(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    #[test]
    fn context_keys_win_over_global_ones() {
        assert_eq!(lookup(Queue, key(K::Enter)), Some(C::Open));
        assert_eq!(lookup(Detail, key(K::Esc)), Some(C::Back));
        assert_eq!(lookup(Queue, key(K::Esc)), Some(C::ClearQuery));
        assert_eq!(lookup(Detail, key(K::Char('j'))), Some(C::Down));
        assert_eq!(lookup(Detail, key(K::Char('/'))), Some(C::Search));
        assert_eq!(lookup(Detail, key(K::Char('s'))), None);
        assert_eq!(lookup(Help, key(K::Char('j'))), Some(C::Down));
        assert_eq!(lookup(Help, key(K::Char('x'))), None);
        assert_eq!(
            lookup(Queue, KeyEvent::new(K::Char('c'), KeyModifiers::CONTROL)),
            Some(C::Quit)
        );
    }

    #[test]
    fn help_lists_every_labelled_key_of_the_context() {
        let queue = help(Queue);
        assert!(queue.iter().any(|(k, _)| *k == "/"));
        assert!(queue.iter().any(|(k, _)| *k == "q"));
        assert!(!help(Detail).iter().any(|(k, _)| *k == "s"));
    }
}
