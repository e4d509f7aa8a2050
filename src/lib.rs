//! holdfast: a terminal console for held operations of AI-agent tool calls.
#![forbid(unsafe_code)]

pub mod cli;
pub mod core;
pub mod ingest;
pub mod lookup;
pub mod review;
pub mod store;
pub mod tui;
pub mod wire;
