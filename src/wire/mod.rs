//! Wire format v1 (DESIGN §5): JSON Lines records, `"type"` first, parsed strictly
//! into the core's typed records and written back in the same shape.

mod owner;
mod read;
mod stream;
#[cfg(test)]
mod tests;
pub(crate) mod tree;
mod write;

pub use owner::operation_named;
pub use read::{MAX_KEY_CHARS, MAX_LINE_BYTES, MAX_TEXT_BYTES, TYPES, parse_line};
pub use stream::{KEEP_LIMIT, Line, ParsedStream, each_line, each_line_hashed, parse_stream};
pub use tree::MAX_DEPTH;
pub use write::{to_value, write_line};

use crate::core::contract::Contract;
use crate::core::model::{Attempt, Expectation, Item, Observation, Operation, TransitionRecord};

/// One record of wire format v1.
#[allow(
    clippy::large_enum_variant,
    reason = "records are built once and moved into a Vec; boxing the operation would add an allocation per ingested line"
)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    Contract(Contract),
    Operation(Operation),
    Attempt(Attempt),
    Item(Item),
    Observation(Observation),
    Transition(TransitionRecord),
    Expectation(Expectation),
}

impl Record {
    /// The `"type"` value of this record.
    pub fn type_name(&self) -> &'static str {
        match self {
            Record::Contract(_) => "contract",
            Record::Operation(_) => "operation",
            Record::Attempt(_) => "attempt",
            Record::Item(_) => "item",
            Record::Observation(_) => "observation",
            Record::Transition(_) => "transition",
            Record::Expectation(_) => "expectation",
        }
    }
}

/// A record with the 1-based line it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Numbered {
    pub line: usize,
    pub record: Record,
    /// The SHA-256 of the line as received (without its newline), when it came
    /// from a file: kept beside what ingest redacts from it, so that a source can
    /// show which line it sent.
    pub line_sha256: Option<crate::core::ids::Sha256>,
}

/// One reason a line is refused: `line N: field: reason`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct LineError {
    pub line: usize,
    /// The field path (`approval.expires_at`), or `-` when the whole line is at fault.
    pub field: String,
    pub reason: String,
}

impl std::fmt::Display for LineError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}: {}", self.line, self.field, self.reason)
    }
}
