//! Status lookups (DESIGN §9.1), the pure half: how a contract says to ask the
//! provider, what one lookup did, what its answer proves and when to ask again.
//! The asking itself (HTTP) lives in `crate::lookup`; nothing here does I/O.

mod call;
mod endpoint;
mod record;
mod spec;
mod verdict;

pub use call::{LookupAnswer, LookupCall, LookupInput};
pub use endpoint::{PathTemplate, ResponseShape};
pub use record::records;
pub use spec::{
    JsonPointer, LookupAuth, LookupFields, LookupSpec, Placeholder, StatusLookup, Unfillable,
    UrlTemplate,
};
pub use verdict::{
    Finding, Next, Verdict, backoff, compared_fields, jitter, judge, next_observation,
    proves_single_effect,
};

/// The observation source of a lookup holdfast made itself.
pub const SOURCE: crate::core::model::ObservationSource =
    crate::core::model::ObservationSource::StatusLookup;
