//! The filter the reviewer types after `f`; the parser is shared with the command
//! line's bulk triage and export, in [`crate::store::filter`].

pub(crate) use crate::store::filter::{FIELDS, describe, parse};
