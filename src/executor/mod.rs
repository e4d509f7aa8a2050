//! The reference executor: carries out one operation under its contract as the
//! seed prescribes, and records every attempt, observation, item and transition.

pub mod clock;
pub mod lookup;
pub mod run;
pub mod transport;

pub use clock::ExecClock;
pub use run::{Context, Credential, Executor, Job, Run, RunOutcome, Settings};
