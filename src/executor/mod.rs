//! The reference executor: carries out one operation under its contract as the
//! seed prescribes, and records every attempt, observation, item and transition.

pub mod clock;
