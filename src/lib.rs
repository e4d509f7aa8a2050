//! holdfast: a terminal console for held operations of AI-agent tool calls.
#![forbid(unsafe_code)]

pub mod cli;
pub mod core;
pub mod drill;
pub mod executor;
pub mod ingest;
pub mod lookup;
pub mod report;
pub mod review;
pub mod sim;
pub mod store;
pub mod tui;
pub mod wire;
pub mod work;
