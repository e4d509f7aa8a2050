//! The write side at scale, each figure beside a floor measured in the same run:
//! streamed ingest (rate and peak memory) against `sqlite3`'s `.import` of the same
//! records into an indexed WAL / synchronous=FULL table and against the store's
//! own schema floor, the ingest a user runs (judged for the metrics) and the
//! first report after it (ready), then `audit verify`
//! rows/s, marking every held operation (mark-all), a filtered export and a
//! `db copy` into a fresh store.
//!
//! ```text
//! cargo build --release --bin holdfast
//! cargo run --release --example bench_write -- --ops 100000 [--dir DIR] [--postgres URL]
//! ```
//!
//! The input is generated with a fixed seed: about 5 % of operations held, about
//! 2.3 attempts per operation. Every timed step runs the release `holdfast` binary
//! as its own process; peak memory is the child's maximum resident set (read from
//! `/proc/PID/status` `VmHWM` while it runs, and from `/usr/bin/time` when present).

use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[path = "common/shape.rs"]
mod shape;

/// The seed of the generated file: every run writes the same records.
const SEED: u64 = 0x5EED;

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// Writes `ops` operations of the shared shape; returns the number of records.
fn generate(path: &Path, ops: u64) -> Result<u64> {
    let mut out = BufWriter::new(std::fs::File::create(path)?);
    let records = shape::write_lines(&mut out, 0, ops, SEED)?;
    out.flush()?;
    Ok(records)
}

/// A finished child: wall time and peak resident memory in KiB.
struct Run {
    elapsed: Duration,
    peak_kib: u64,
    stdout: String,
}

/// `VmHWM` of a running process, in KiB.
fn hwm(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// Runs a command, sampling its peak memory until it exits. With `/usr/bin/time`
/// available the kernel's own maximum is used instead of the samples.
fn run(program: &Path, args: &[&str], stdin: Option<&Path>) -> Result<Run> {
    let gnu_time = Path::new("/usr/bin/time").exists();
    let report = std::env::temp_dir().join(format!("bench-write-{}.time", std::process::id()));
    let mut command = if gnu_time {
        let mut c = Command::new("/usr/bin/time");
        c.arg("-f").arg("%M").arg("-o").arg(&report).arg(program);
        c
    } else {
        Command::new(program)
    };
    command
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(path) = stdin {
        command.stdin(std::fs::File::open(path)?);
    }
    let started = Instant::now();
    let mut child = command.spawn()?;
    // Drained as the child writes: a report's JSON outgrows a pipe's buffer,
    // and a child blocked on a full pipe never exits.
    let drain = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let stderr = drain(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
    );
    let mut peak = 0;
    let out = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if let Some(kib) = hwm(child.id()) {
            peak = peak.max(kib);
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let elapsed = started.elapsed();
    let stdout = stdout.join().unwrap_or_default();
    let stderr = stderr.join().unwrap_or_default();
    if !out.success() {
        return Err(format!(
            "{} {} failed: {}",
            program.display(),
            args.join(" "),
            String::from_utf8_lossy(&stderr)
        )
        .into());
    }
    if gnu_time && let Ok(text) = std::fs::read_to_string(&report) {
        if let Some(kib) = text.lines().last().and_then(|l| l.trim().parse().ok()) {
            peak = kib;
        }
        let _ = std::fs::remove_file(&report);
    }
    Ok(Run {
        elapsed,
        peak_kib: peak,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
    })
}

/// The floor: the same records as one JSON text column into an indexed table.
fn floor(dir: &Path, input: &Path) -> Result<Run> {
    let db = dir.join("floor.db");
    let _ = std::fs::remove_file(&db);
    let script = dir.join("floor.sql");
    // The column separator is the 0x1F byte itself: the sqlite3 shell reads `\n` in
    // a quoted argument but not `\x1f`, and refuses a separator of several characters.
    std::fs::write(
        &script,
        format!(
            "PRAGMA journal_mode=WAL;\nPRAGMA synchronous=FULL;\n\
             CREATE TABLE records (line TEXT NOT NULL);\n\
             CREATE INDEX records_line ON records (line);\n\
             .mode ascii\n.separator \"\x1f\" \"\\n\"\n.import {} records\n",
            input.display()
        ),
    )?;
    let sqlite = Path::new("/usr/bin/sqlite3");
    let db_arg = db.display().to_string();
    let init = format!(".read {}", script.display());
    run(sqlite, &[&db_arg, &init], None)
}

/// The store's own floor: the rows the ingest wrote (every table, index and
/// trigger of the store's schema, the audit chain and search terms included),
/// copied by SQLite alone from the ingested store into an empty store of the same
/// schema in one transaction. What SQLite itself costs for exactly these rows,
/// with no parsing, validation, hashing or planning: the most any ingest into this
/// schema could reach.
fn schema_floor(binary: &Path, dir: &Path, store: &Path) -> Result<Run> {
    let db = dir.join("schema-floor.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(dir.join(format!("schema-floor.db{suffix}")));
    }
    let db_arg = db.display().to_string();
    run(binary, &["--db", &db_arg, "db", "migrate"], None)?;
    let tables = Command::new("/usr/bin/sqlite3")
        .arg(store)
        .arg(
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_sqlx%' \
             AND name NOT IN ('metric_stale', 'operation_counts', 'due_counts') ORDER BY name",
        )
        .output()?;
    let mut script = format!(
        "PRAGMA synchronous=FULL;\nATTACH '{}' AS ingested;\nBEGIN;\n",
        store.display()
    );
    // The tables the triggers fill (stale marks, counts, due days) are left to
    // the triggers.
    for table in String::from_utf8_lossy(&tables.stdout).lines() {
        script.push_str(&format!(
            "INSERT INTO main.{table} SELECT * FROM ingested.{table};\n"
        ));
    }
    script.push_str("COMMIT;\n");
    let path = dir.join("schema-floor.sql");
    std::fs::write(&path, script)?;
    let read = format!(".read {}", path.display());
    run(
        Path::new("/usr/bin/sqlite3"),
        &["-bail", &db_arg, &read],
        None,
    )
}

fn seconds(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

fn mib(kib: u64) -> String {
    format!("{:.0} MiB", kib as f64 / 1024.0)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let ops: u64 = value("--ops")
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000);
    let dir = value("--dir")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join(format!("bench-write-{ops}")));
    let postgres = value("--postgres");
    std::fs::create_dir_all(&dir)?;
    let binary = std::env::current_exe()?
        .parent()
        .and_then(Path::parent)
        .map(|release| release.join("holdfast"))
        .ok_or("cannot find target/release")?;
    if !binary.exists() {
        return Err("build the binary first: cargo build --release --bin holdfast".into());
    }

    let input = dir.join("input.jsonl");
    let records = generate(&input, ops)?;
    let size = std::fs::metadata(&input)?.len();
    println!(
        "# bench_write — {ops} operations, {records} records, {:.0} MB, {} cores, {}",
        size as f64 / 1e6,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        chrono::Utc::now().format("%Y-%m-%d %H:%M UTC")
    );
    println!("| what | measured | floor in the same run | ratio |");
    println!("|---|---|---|---|");

    let floor = floor(&dir, &input)?;
    let floor_rate = records as f64 / floor.elapsed.as_secs_f64();

    let store_path = dir.join("store.db");
    let _ = std::fs::remove_file(&store_path);
    for suffix in ["-wal", "-shm"] {
        let _ = std::fs::remove_file(dir.join(format!("store.db{suffix}")));
    }
    let store = format!("sqlite:{}", store_path.display());
    let db = store_path.display().to_string();
    let input_arg = input.display().to_string();
    // The writing alone: the judging for the metrics left to the first reader.
    let deferred_path = dir.join("deferred.db");
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(dir.join(format!("deferred.db{suffix}")));
    }
    let deferred_db = deferred_path.display().to_string();
    let ingest = run(
        &binary,
        &[
            "--db",
            &deferred_db,
            "ingest",
            "--defer-judging",
            &input_arg,
        ],
        None,
    )?;
    let rate = records as f64 / ingest.elapsed.as_secs_f64();
    println!(
        "| ingest alone (SQLite, strict, `--defer-judging`) | {} ({:.0} records/s), peak {} | `sqlite3 .import`: {} ({:.0} records/s), peak {} | {:.2}× the floor's rate |",
        seconds(ingest.elapsed),
        rate,
        mib(ingest.peak_kib),
        seconds(floor.elapsed),
        floor_rate,
        mib(floor.peak_kib),
        rate / floor_rate
    );
    // The ingest as a user runs it: ready for the metrics tab when it ends.
    let ready = run(&binary, &["--db", &db, "ingest", &input_arg], None)?;
    let first_report = run(&binary, &["--db", &db, "report", "--json"], None)?;
    let ready_total = ready.elapsed + first_report.elapsed;

    let schema = schema_floor(&binary, &dir, &store_path)?;
    let schema_rate = records as f64 / schema.elapsed.as_secs_f64();
    println!(
        "| the same rows by SQLite alone (the store's schema floor, kept facts included) | {} ({:.0} records/s), peak {} | `sqlite3 .import`: {} | {:.2}× the `.import` floor's rate; ingest alone is {:.2}× this floor's (target ≥ 0.5×) |",
        seconds(schema.elapsed),
        schema_rate,
        mib(schema.peak_kib),
        seconds(floor.elapsed),
        schema_rate / floor_rate,
        rate / schema_rate
    );
    println!(
        "| ingest, judged for the metrics (SQLite, the default) | {}, peak {} | schema floor: {} | {:.2}× the floor's time |",
        seconds(ready.elapsed),
        mib(ready.peak_kib),
        seconds(schema.elapsed),
        ready.elapsed.as_secs_f64() / schema.elapsed.as_secs_f64()
    );
    println!(
        "| ready: that ingest, then the first `report` | {} ({} the report), peak {} | schema floor: {} | {:.2}× the floor's time (target ≤ 3×) |",
        seconds(ready_total),
        seconds(first_report.elapsed),
        mib(first_report.peak_kib),
        seconds(schema.elapsed),
        ready_total.as_secs_f64() / schema.elapsed.as_secs_f64()
    );

    let verify = run(&binary, &["--db", &db, "audit", "verify"], None)?;
    // "audit chain intact: N rows, head …": the rows the walk covered.
    let audit_rows: u64 = verify
        .stdout
        .split_whitespace()
        .skip_while(|w| *w != "intact:")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .ok_or("audit verify did not say how many rows it walked")?;
    println!(
        "| audit verify (SQLite: the chain, the stored records, and the kept facts against the records judged anew) | {} ({:.0} rows/s over {audit_rows} rows) | — | target 300,000 rows/s |",
        seconds(verify.elapsed),
        audit_rows as f64 / verify.elapsed.as_secs_f64()
    );

    let export_path = dir.join("export.json");
    let export_arg = export_path.display().to_string();
    let export = run(
        &binary,
        &[
            "--db",
            &db,
            "export",
            "--filter",
            "state:UNKNOWN",
            "--out",
            &export_arg,
        ],
        None,
    );
    match export {
        Ok(export) => println!(
            "| export --filter state:UNKNOWN (SQLite) | {}, peak {} | — | — |",
            seconds(export.elapsed),
            mib(export.peak_kib)
        ),
        Err(e) => println!("| export --filter (SQLite) | failed: {e} | — | — |"),
    }

    if let Some(url) = postgres {
        let copy = run(
            &binary,
            &["db", "copy", "--from", &store, "--to", &url],
            None,
        )?;
        println!(
            "| db copy SQLite → PostgreSQL | {}, peak {} | — | — |",
            seconds(copy.elapsed),
            mib(copy.peak_kib)
        );
    } else {
        let copy_path = dir.join("copy.db");
        let _ = std::fs::remove_file(&copy_path);
        let copy_store = format!("sqlite:{}", copy_path.display());
        let copy = run(
            &binary,
            &["db", "copy", "--from", &store, "--to", &copy_store],
            None,
        )?;
        println!(
            "| db copy SQLite → SQLite | {}, peak {} | — | — |",
            seconds(copy.elapsed),
            mib(copy.peak_kib)
        );
    }
    let _ = ingest.stdout;
    Ok(())
}
