//! Any bytes as one wire-format line: the parser never panics, and a line it
//! accepts round-trips: written back and parsed again, it is the same record.
#![no_main]

use holdfast::wire::{parse_line, write_line};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(record) = parse_line(data, 1) {
        let again = parse_line(write_line(&record).as_bytes(), 1);
        assert!(
            again.as_ref().is_ok_and(|r| *r == record),
            "a written record does not parse back the same: {again:?}"
        );
    }
});
