//! Which lines a worker's completion may carry (DESIGN §9.2): attempts, items,
//! observations and transitions of the operation it holds the lease on. Anything
//! else is refused with its line, field and rule; the rest goes through ingest.

use crate::core::ids::OperationId;
use crate::wire::{LineError, Numbered, Record};

/// Splits `records` into those a completion of `operation` may carry and the
/// refusals of the others.
pub fn split(records: Vec<Numbered>, operation: &OperationId) -> (Vec<Numbered>, Vec<LineError>) {
    let mut kept = Vec::with_capacity(records.len());
    let mut refused = Vec::new();
    for numbered in records {
        let named = match &numbered.record {
            Record::Attempt(a) => Some(&a.operation),
            Record::Item(i) => Some(&i.operation),
            Record::Observation(o) => Some(&o.operation),
            Record::Transition(t) => Some(&t.operation),
            Record::Contract(_) | Record::Operation(_) | Record::Expectation(_) => None,
        };
        match named {
            None => refused.push(LineError {
                line: numbered.line,
                field: "type".into(),
                reason: format!(
                    "G8: a completion of {operation} carries attempt, item, observation and \
                     transition lines of it only, not a {} record",
                    numbered.record.type_name()
                ),
            }),
            Some(other) if other != operation => refused.push(LineError {
                line: numbered.line,
                field: "operation".into(),
                reason: format!(
                    "G8: the lease covers {operation} only; this line is for {other}, which \
                     this worker holds no lease on"
                ),
            }),
            Some(_) => kept.push(numbered),
        }
    }
    (kept, refused)
}
