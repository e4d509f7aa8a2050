//! The simulated provider of the drill: the case file it is scripted by, and the
//! loopback HTTP server that keeps authoritative records and counts what happened.

pub mod case;
pub mod provider;

pub use case::{Case, parse_case, parse_cases};
pub use provider::{Counters, Provider, Running, serve};
