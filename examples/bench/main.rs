//! The scale benchmark: builds (or reuses) a seeded store of N operations and
//! measures what a user waits for on it, each figure beside its floor from the
//! same run, then prints one table with the machine and the date.
//!
//! ```text
//! cargo run --release --example bench -- --ops 100000
//! cargo run --release --example bench -- --ops 100000 --postgres postgres://postgres@127.0.0.1:5432/bench
//! ```
//!
//! The SQLite store is `--store PATH` (default `/tmp/holdfast-bench-N.db`); a store
//! that already holds N operations is reused, an empty one is filled. BENCHMARKS.md
//! says how to read the table. One function per figure lives in `figures.rs`;
//! `--skip NAME` (console, audit, verify, mark-all, judge, metrics, report, profile) leaves
//! one out, e.g. the profile (the whole dataset read into memory), which exhausts
//! the machine's memory on a large store.

mod figures;
mod generate;
mod memory;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use holdfast::store::{Location, OperationFilter};

use figures::{Bench, Row};

struct Args {
    ops: u64,
    seed: u64,
    store: Option<PathBuf>,
    postgres: Option<String>,
    /// Figures not to measure (`metrics`, `report`, `audit`, `verify`, `mark-all`, `console`).
    skip: Vec<String>,
}

fn args() -> anyhow::Result<Args> {
    let mut args = Args {
        ops: 100_000,
        seed: 12,
        store: None,
        postgres: None,
        skip: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .ok_or_else(|| anyhow::anyhow!("{flag} needs a value"))
        };
        match flag.as_str() {
            "--ops" => args.ops = value()?.parse()?,
            "--seed" => args.seed = value()?.parse()?,
            "--store" => args.store = Some(PathBuf::from(value()?)),
            "--postgres" => args.postgres = Some(value()?),
            "--skip" => args.skip.push(value()?),
            other => anyhow::bail!(
                "unknown argument {other}; usage: bench --ops N [--seed S] [--store PATH] [--postgres URL] [--skip FIGURE]…"
            ),
        }
    }
    Ok(args)
}

/// The machine in one line: CPU model, cores, memory.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpu
        .lines()
        .find_map(|l| l.strip_prefix("model name"))
        .map(|m| m.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let mem = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let total = mem
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb / 1024 / 1024);
    format!("{model}, {cores} cores, {total} GiB")
}

fn print(rows: &[Row], header: &str) {
    println!("{header}");
    println!();
    println!("| what | measured | floor (same run) | against the target |");
    println!("|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {} | {} | {} |",
            r.what, r.measured, r.floor, r.verdict
        );
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let location = match &args.postgres {
        Some(url) => Location::Postgres(url.clone()),
        None => Location::Sqlite(
            args.store
                .clone()
                .unwrap_or_else(|| PathBuf::from(format!("/tmp/holdfast-bench-{}.db", args.ops))),
        ),
    };
    let store = location.open().await?;
    let have = store.count(&OperationFilter::default()).await?;
    if have == 0 {
        let start = Instant::now();
        let records = generate::fill(store.as_ref(), args.ops, args.seed).await?;
        eprintln!(
            "generated {} operations ({records} records) in {}",
            args.ops,
            figures::ms(start.elapsed())
        );
    } else if have != args.ops {
        anyhow::bail!(
            "{location} holds {have} operations, not {}; name another store",
            args.ops
        );
    }
    let held = store
        .count(&OperationFilter {
            queue: true,
            ..OperationFilter::default()
        })
        .await?;
    let bench = Bench::new(Arc::clone(&store));

    let (floor, floor_row) = figures::first_page_floor(&bench).await?;
    let mut rows = vec![floor_row];
    let wanted = |name: &str| !args.skip.iter().any(|s| s == name);
    if wanted("console") {
        rows.extend(figures::console_first_frame(&bench, floor).await);
        rows.push(figures::header_counts(&bench, floor).await?);
    }
    if wanted("audit") {
        rows.push(figures::audit_tab(&bench, floor).await);
    }
    if wanted("verify") {
        rows.push(figures::audit_verify(&bench).await);
    }
    if wanted("mark-all") {
        let held = OperationFilter {
            queue: true,
            ..OperationFilter::default()
        };
        rows.push(figures::mark_all(&bench, held, "the held queue").await?);
        let every = OperationFilter::default();
        rows.push(figures::mark_all(&bench, every, "every operation").await?);
    }
    if wanted("judge") {
        rows.push(figures::judge_facts(&bench).await);
    }
    if wanted("metrics") {
        rows.push(figures::metrics_tab(&bench).await);
    }
    if wanted("report") {
        rows.push(figures::report(&bench).await);
    }
    if wanted("profile") {
        rows.extend(figures::report_profile(&bench).await);
    }

    let backend = if args.postgres.is_some() {
        "PostgreSQL"
    } else {
        "SQLite"
    };
    print(
        &rows,
        &format!(
            "holdfast bench · {backend} · {} operations ({held} held) · {} · {} · {}",
            args.ops,
            location,
            machine(),
            chrono::Utc::now().format("%Y-%m-%d %H:%M UTC")
        ),
    );
    Ok(())
}
