//! The seeded store: the shared shape's lines (`examples/common/shape.rs`),
//! committed through `Store::ingest` in batches so the rows are exactly what
//! `holdfast ingest` would write.

use std::time::Instant;

use chrono::Utc;
use holdfast::store::{IngestMode, Store};
use holdfast::wire::Numbered;
use holdfast::wire::parse_line;

#[path = "../common/shape.rs"]
mod shape;

use shape::{CONTRACT, operation_lines};

/// Operations committed per `Store::ingest` call.
const BATCH: u64 = 10_000;

/// Parses generated lines into numbered records; a generator bug is an error.
fn parse(lines: &[String], first_line: usize) -> anyhow::Result<Vec<Numbered>> {
    lines
        .iter()
        .enumerate()
        .map(|(i, text)| {
            parse_line(text.as_bytes(), first_line + i)
                .map(|record| Numbered {
                    line: first_line + i,
                    record,
                    line_sha256: None,
                })
                .map_err(|e| anyhow::anyhow!("generated line {}: {e:?}", first_line + i))
        })
        .collect()
}

/// Fills `store` with `ops` operations from `seed`, in batches; returns the
/// records committed.
pub async fn fill(store: &dyn Store, ops: u64, seed: u64) -> anyhow::Result<u64> {
    let started = Instant::now();
    let mut records = 0u64;
    let mut line = 1usize;
    let mut first = 0u64;
    while first < ops {
        let last = (first + BATCH).min(ops);
        let mut lines = Vec::new();
        if first == 0 {
            lines.push(CONTRACT.to_owned());
        }
        for n in first..last {
            operation_lines(n, seed, &mut lines);
        }
        let batch = parse(&lines, line)?;
        line += lines.len();
        records += u64::try_from(batch.len()).unwrap_or(0);
        let report = store
            .ingest(batch, IngestMode::Strict, "bench", Utc::now())
            .await?;
        if let Some(bad) = report.rejected.first() {
            anyhow::bail!("the generated store was refused: {bad:?}");
        }
        first = last;
        eprintln!(
            "generated {first}/{ops} operations, {records} records, {:.0} s",
            started.elapsed().as_secs_f64()
        );
    }
    Ok(records)
}
