//! holdfast: a terminal console for held operations of AI-agent tool calls.
//!
//! The library surface is what a program working with holds needs: the domain
//! types and rules (`core`), the wire format (`wire`), the operations store
//! (`store`), the one review service (`review`), ingest and status lookups, and
//! the drill, its simulated provider and the reference executor. The command line
//! and the console are the binary's: only their entry point and the small
//! [`console`] harness the console's flow tests drive are public.
#![forbid(unsafe_code)]
#![warn(unreachable_pub)]

pub mod autonomy;
pub mod bounded;
pub mod circuit;
mod cli;
pub mod core;
#[cfg(test)]
mod docs_links;
pub mod drill;
pub mod executor;
pub mod gateway;
pub mod ingest;
#[cfg(test)]
mod layering;
pub mod lookup;
pub mod otlp;
pub mod report;
pub mod review;
pub mod sim;
pub mod store;
pub mod tools;
mod tui;
pub mod wire;
pub mod work;

/// The fictional TC094 packet `holdfast demo` loads.
pub use cli::DEMO_PACKET;
/// The command line, as the `holdfast` binary runs it.
pub use cli::main as run_command_line;

/// What the console's flow tests and benchmarks drive: the state and its
/// `update`, the effects runner, the drawing, and the screens' types they read.
pub mod console {
    /// The console's state and its messages.
    pub mod app {
        pub use crate::tui::app::{App, Options};
        pub use crate::tui::message::{Effect, Message};
        pub use crate::tui::screens::Page;
        pub use crate::tui::screens::prompt::PromptState;
    }
    /// The effects runner.
    pub mod runner {
        pub use crate::tui::runner::{Lookups, audit_page, perform, perform_with};
    }
    /// Drawing the whole console.
    pub mod view {
        pub use crate::tui::view::draw;
    }
    /// The review dialog.
    pub mod review {
        pub use crate::tui::screens::review::form::FieldKind;
        pub use crate::tui::screens::review::{ReviewDialog, Step, Verdict};
    }
    /// The bulk triage dialog.
    pub mod bulk {
        pub use crate::tui::screens::bulk::{BulkDialog, KINDS, Step};
    }
    /// The queue's list answer.
    pub mod queue {
        pub use crate::tui::screens::queue::Listing;
    }
    /// The metrics tab's focus.
    pub mod metrics_tab {
        pub use crate::tui::screens::metrics::MetricsFocus;
    }
    /// The panes.
    pub mod layout {
        pub use crate::tui::layout::Pane;
    }
    /// The key table the help overlay reads.
    pub mod keymap {
        pub use crate::tui::keymap::{Context, help};
    }
}
