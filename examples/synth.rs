//! Writes a large synthetic wire-format v1 file for benchmarks: N operations of the
//! shape every benchmark shares (`examples/common/shape.rs`), so that the queue,
//! its counts and search have real work.
//!
//! `cargo run --release --example synth -- COUNT [FIRST] > part.jsonl` writes
//! operations FIRST..FIRST+COUNT, so a large store can be built from several files.

use std::io::{self, BufWriter, Write};

#[path = "common/shape.rs"]
mod shape;

/// The seed of the generated stream: every run writes the same records.
const SEED: u64 = 12;

fn main() -> io::Result<()> {
    let count: u64 = std::env::args()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(100_000);
    let first: u64 = std::env::args()
        .nth(2)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    let out = io::stdout();
    let mut out = BufWriter::new(out.lock());
    shape::write_lines(&mut out, first, count, SEED)?;
    out.flush()
}
