//! The pure core: states, transitions, guards, the retry decision matrix, the
//! evidence bundle, metrics and audit hashing. No I/O, no database, no terminal.

pub mod access;
pub mod audit;
pub mod autonomy;
pub mod bundle;
pub mod cause;
pub mod chain;
pub mod circuit;
pub mod clock;
pub mod contract;
pub mod detail;
pub mod evidence;
pub mod export;
pub mod ids;
pub mod inventory;
pub mod ladder;
pub mod lawful;
pub mod ledger;
pub mod lookup;
pub mod matrix;
pub mod metrics;
pub mod model;
pub mod names;
pub mod redact;
pub mod refusal;
pub mod rerun;
pub mod routing;
pub mod rules;
pub mod sanitize;
pub mod triage;
pub mod work;
