//! The search and filter prompt in the query line: what is typed, the text it
//! started from (restored on cancel), and the pause a typed search waits on. Its
//! keys change the queue's query, so the queue's part of `update` takes them.

use crate::tui::latest::Latest;
use crate::tui::widgets::Prompt;

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
    pub before: String,
    /// The search was changed while the prompt was open.
    pub touched: bool,
    /// The pause a typed search waits on before it runs.
    pub pause: Latest<()>,
}

impl PromptState {
    pub fn new(kind: PromptKind, label: &'static str, before: String) -> Self {
        PromptState {
            kind,
            input: Prompt::new(label, &before),
            before,
            touched: false,
            pause: Latest::default(),
        }
    }
}
