//! The pure core: states, transitions, guards, the retry decision matrix, the
//! evidence bundle, metrics and audit hashing. No I/O, no database, no terminal.

pub mod audit;
pub mod clock;
pub mod ids;
pub mod model;
pub mod sanitize;
