//! The write side at scale, each figure beside a floor measured in the same run:
//! streamed ingest (rate and peak memory) against `sqlite3`'s `.import` of the same
//! records into an indexed WAL / synchronous=FULL table and against the store's
//! own schema floor, the ingest a user runs (judged for the metrics) and the
//! first report after it (ready), then `audit verify`
//! rows/s, a filtered export and a `db copy` into a fresh store (judged when it
//! ends). With `--postgres URL` the same packet is also ingested into fresh
//! PostgreSQL databases on that server (made and dropped with `psql`): the
//! writing alone against SQLite's, and the ready time.
//!
//! ```text
//! cargo build --release --bin holdfast
//! cargo run --release --example bench_write -- --ops 100000 [--dir DIR] [--postgres URL]
//! cargo run --release --example bench_write -- --ops 100000,300000,1000000 \
//!     [--postgres URL [--postgres-max OPS]]
//! ```
//!
//! Several sizes are measured one after the other, each in `DIR/OPS`, and end
//! with one table of every figure at every size and its growth from one size to
//! the next (the time's growth over the size's: 1.00 is linear). Each size's
//! stores but the ingested one are removed once measured.
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

/// Runs of the store's own floor per size; the ratios take their median.
const FLOOR_RUNS: usize = 3;

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

/// One figure of one size: what it is, its time, and its ratio to the floor it
/// is held to (with the target's words) where it has one.
struct Figure {
    what: &'static str,
    elapsed: Duration,
    ratio: Option<(f64, &'static str)>,
}

/// Every figure of one size, with the machine's load around them.
struct Size {
    ops: u64,
    figures: Vec<Figure>,
    load: (String, String),
    peak_kib: u64,
}

/// The 1-, 5- and 15-minute load averages, as `/proc/loadavg` gives them.
fn load() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}

/// A fresh PostgreSQL database named `name` on the server of `url`, as a URL.
fn fresh_postgres(url: &str, name: &str) -> Result<String> {
    let (server, _) = url
        .rsplit_once('/')
        .ok_or("--postgres: expected postgres://USER@HOST:PORT/DATABASE")?;
    let status = Command::new("psql")
        .arg(url)
        .args(["-q", "-v", "ON_ERROR_STOP=1", "-c"])
        .arg(format!("DROP DATABASE IF EXISTS {name}"))
        .arg("-c")
        .arg(format!("CREATE DATABASE {name}"))
        .env("PGOPTIONS", "--client-min-messages=warning")
        .stdout(Stdio::null())
        .status()?;
    if !status.success() {
        return Err(format!("psql {url}: cannot create the database {name}").into());
    }
    Ok(format!("{server}/{name}"))
}

/// Drops a database [`fresh_postgres`] made, once measured.
fn drop_postgres(url: &str, name: &str) {
    let _ = Command::new("psql")
        .arg(url)
        .args(["-q", "-c"])
        .arg(format!("DROP DATABASE IF EXISTS {name}"))
        .stdout(Stdio::null())
        .status();
}

/// Removes a SQLite store and its WAL files.
fn remove_store(path: &Path) {
    for suffix in ["", "-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let _ = std::fs::remove_file(PathBuf::from(name));
    }
}

/// Measures one size, printing its own table as it goes.
fn measure(binary: &Path, dir: &Path, ops: u64, postgres: Option<&str>) -> Result<Size> {
    std::fs::create_dir_all(dir)?;
    let load_before = load();
    let input = dir.join("input.jsonl");
    let records = generate(&input, ops)?;
    let size = std::fs::metadata(&input)?.len();
    println!(
        "# bench_write — {ops} operations, {records} records, {:.0} MB, {} cores, {}, load {load_before}",
        size as f64 / 1e6,
        std::thread::available_parallelism().map_or(1, |n| n.get()),
        chrono::Utc::now().format("%Y-%m-%d %H:%M UTC")
    );
    println!("| what | measured | floor in the same run | ratio |");
    println!("|---|---|---|---|");
    let mut figures = Vec::new();
    let mut peak_kib = 0;
    let mut seen = |run: &Run| peak_kib = peak_kib.max(run.peak_kib);

    let floor = floor(dir, &input)?;
    let floor_rate = records as f64 / floor.elapsed.as_secs_f64();

    let store_path = dir.join("store.db");
    remove_store(&store_path);
    let store = format!("sqlite:{}", store_path.display());
    let db = store_path.display().to_string();
    let input_arg = input.display().to_string();
    // The writing alone: the judging for the metrics left to the first reader.
    let deferred_path = dir.join("deferred.db");
    remove_store(&deferred_path);
    let deferred_db = deferred_path.display().to_string();
    let ingest = run(
        binary,
        &[
            "--db",
            &deferred_db,
            "ingest",
            "--defer-judging",
            &input_arg,
        ],
        None,
    )?;
    seen(&ingest);
    remove_store(&deferred_path);
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
    let ready = run(binary, &["--db", &db, "ingest", &input_arg], None)?;
    seen(&ready);
    let first_report = run(binary, &["--db", &db, "report", "--json"], None)?;
    seen(&first_report);
    let ready_total = ready.elapsed + first_report.elapsed;

    // The floor is a disk-bound copy whose time moves by a third from one run
    // to the next on a shared machine: the median of three is the one the
    // ratios are held to, with the three beside it.
    let mut floors = Vec::with_capacity(FLOOR_RUNS);
    for _ in 0..FLOOR_RUNS {
        floors.push(schema_floor(binary, dir, &store_path)?);
        remove_store(&dir.join("schema-floor.db"));
    }
    floors.sort_by_key(|run| run.elapsed);
    let spread = floors
        .iter()
        .map(|run| seconds(run.elapsed))
        .collect::<Vec<_>>()
        .join(", ");
    let schema = floors.swap_remove(FLOOR_RUNS / 2);
    let schema_rate = records as f64 / schema.elapsed.as_secs_f64();
    println!(
        "| the same rows by SQLite alone (the store's schema floor, kept facts included; the median of {FLOOR_RUNS}: {spread}) | {} ({:.0} records/s), peak {} | `sqlite3 .import`: {} | {:.2}× the `.import` floor's rate; ingest alone is {:.2}× this floor's (target ≥ 0.5×) |",
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
    let ready_ratio = ready_total.as_secs_f64() / schema.elapsed.as_secs_f64();
    println!(
        "| ready: that ingest, then the first `report` | {} ({} the report), peak {} | schema floor: {} | {:.2}× the floor's time (target ≤ 3×) |",
        seconds(ready_total),
        seconds(first_report.elapsed),
        mib(first_report.peak_kib),
        seconds(schema.elapsed),
        ready_ratio
    );
    let schema_secs = schema.elapsed.as_secs_f64();
    figures.push(Figure {
        what: "`sqlite3 .import` floor",
        elapsed: floor.elapsed,
        ratio: None,
    });
    figures.push(Figure {
        what: "schema floor (SQLite alone, kept facts included)",
        elapsed: schema.elapsed,
        ratio: None,
    });
    figures.push(Figure {
        what: "ingest alone (`--defer-judging`)",
        elapsed: ingest.elapsed,
        ratio: Some((
            schema_secs / ingest.elapsed.as_secs_f64(),
            "× the floor's rate, target ≥ 0.5",
        )),
    });
    figures.push(Figure {
        what: "ingest, judged (the default)",
        elapsed: ready.elapsed,
        ratio: Some((
            ready.elapsed.as_secs_f64() / schema_secs,
            "× the floor's time",
        )),
    });
    figures.push(Figure {
        what: "first `report` after it",
        elapsed: first_report.elapsed,
        ratio: None,
    });
    figures.push(Figure {
        what: "ready: judged ingest + first report",
        elapsed: ready_total,
        ratio: Some((ready_ratio, "× the floor's time, target ≤ 3")),
    });

    let verify = run(binary, &["--db", &db, "audit", "verify"], None)?;
    seen(&verify);
    // "audit chain intact: N rows, head …": the rows the walk covered.
    let audit_rows: u64 = verify
        .stdout
        .split_whitespace()
        .skip_while(|w| *w != "intact:")
        .nth(1)
        .and_then(|n| n.parse().ok())
        .ok_or("audit verify did not say how many rows it walked")?;
    let verify_rate = audit_rows as f64 / verify.elapsed.as_secs_f64();
    println!(
        "| audit verify (SQLite: the chain, the stored records, and the kept facts against the records judged anew) | {} ({:.0} rows/s over {audit_rows} rows) | — | target 300,000 rows/s |",
        seconds(verify.elapsed),
        verify_rate
    );
    figures.push(Figure {
        what: "`audit verify` (chain, records, kept facts)",
        elapsed: verify.elapsed,
        ratio: Some((verify_rate / 1000.0, "k audit rows/s, target ≥ 300")),
    });

    let export_path = dir.join("export.json");
    let export_arg = export_path.display().to_string();
    let export = run(
        binary,
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
    )?;
    seen(&export);
    println!(
        "| export --filter state:UNKNOWN (SQLite) | {}, peak {} | — | — |",
        seconds(export.elapsed),
        mib(export.peak_kib)
    );
    figures.push(Figure {
        what: "`export --filter state:UNKNOWN`",
        elapsed: export.elapsed,
        ratio: None,
    });

    let copy_path = dir.join("copy.db");
    remove_store(&copy_path);
    let copy_store = format!("sqlite:{}", copy_path.display());
    let copy = run(
        binary,
        &["db", "copy", "--from", &store, "--to", &copy_store],
        None,
    )?;
    seen(&copy);
    remove_store(&copy_path);
    println!(
        "| db copy SQLite → SQLite (judged when it ends) | {}, peak {} | — | — |",
        seconds(copy.elapsed),
        mib(copy.peak_kib)
    );
    figures.push(Figure {
        what: "`db copy` SQLite → SQLite, judged",
        elapsed: copy.elapsed,
        ratio: None,
    });

    if let Some(url) = postgres {
        // The same packet into fresh PostgreSQL databases, as into SQLite
        // above: the writing alone, then the ingest a user runs and the first
        // report after it.
        let name = format!("bench_write_{ops}");
        let alone_url = fresh_postgres(url, &name)?;
        let pg_alone = run(
            binary,
            &[
                "--database-url",
                &alone_url,
                "ingest",
                "--defer-judging",
                &input_arg,
            ],
            None,
        )?;
        seen(&pg_alone);
        let pg_ratio = ingest.elapsed.as_secs_f64() / pg_alone.elapsed.as_secs_f64();
        println!(
            "| ingest alone (PostgreSQL, `--defer-judging`) | {}, peak {} | SQLite: {} | {:.2}× SQLite's rate (target ≥ 0.5×) |",
            seconds(pg_alone.elapsed),
            mib(pg_alone.peak_kib),
            seconds(ingest.elapsed),
            pg_ratio
        );
        let ready_url = fresh_postgres(url, &name)?;
        let pg_ready = run(
            binary,
            &["--database-url", &ready_url, "ingest", &input_arg],
            None,
        )?;
        seen(&pg_ready);
        let pg_report = run(
            binary,
            &["--database-url", &ready_url, "report", "--json"],
            None,
        )?;
        seen(&pg_report);
        drop_postgres(url, &name);
        let pg_total = pg_ready.elapsed + pg_report.elapsed;
        let pg_ready_ratio = ready_total.as_secs_f64() / pg_total.as_secs_f64();
        println!(
            "| ready (PostgreSQL): judged ingest, then the first `report` | {} ({} the report), peak {} | SQLite: {} | {:.2}× SQLite's rate |",
            seconds(pg_total),
            seconds(pg_report.elapsed),
            mib(pg_ready.peak_kib.max(pg_report.peak_kib)),
            seconds(ready_total),
            pg_ready_ratio
        );
        figures.push(Figure {
            what: "ingest alone into PostgreSQL",
            elapsed: pg_alone.elapsed,
            ratio: Some((pg_ratio, "× SQLite's rate, target ≥ 0.5")),
        });
        figures.push(Figure {
            what: "ready on PostgreSQL: judged ingest + first report",
            elapsed: pg_total,
            ratio: Some((pg_ready_ratio, "× SQLite's rate")),
        });
    }
    let load_after = load();
    println!("load after: {load_after}\n");
    Ok(Size {
        ops,
        figures,
        load: (load_before, load_after),
        peak_kib,
    })
}

/// The figures of every size in one table: each size's time and ratio, and
/// the growth from one size to the next (the time's growth over the size's: 1.00
/// is linear, above it faster than linear).
fn summary(sizes: &[Size]) {
    let label = |ops: u64| match ops {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    };
    let mut header = String::from("| figure |");
    let mut rule = String::from("|---|");
    for size in sizes {
        header.push_str(&format!(" {} ops |", label(size.ops)));
        rule.push_str("---|");
    }
    for pair in sizes.windows(2) {
        header.push_str(&format!(
            " growth {}→{} |",
            label(pair[0].ops),
            label(pair[1].ops)
        ));
        rule.push_str("---|");
    }
    println!("# across sizes: time (ratio to its floor); growth = time's growth ÷ size's growth");
    println!("{header}\n{rule}");
    for (i, figure) in sizes[0].figures.iter().enumerate() {
        let mut line = format!("| {} |", figure.what);
        for size in sizes {
            match size.figures.get(i) {
                Some(f) => {
                    line.push_str(&format!(" {}", seconds(f.elapsed)));
                    if let Some((ratio, words)) = f.ratio {
                        line.push_str(&format!(" ({ratio:.2}{words})"));
                    }
                    line.push_str(" |");
                }
                None => line.push_str(" — |"),
            }
        }
        for pair in sizes.windows(2) {
            match (pair[0].figures.get(i), pair[1].figures.get(i)) {
                (Some(a), Some(b)) => {
                    let time = b.elapsed.as_secs_f64() / a.elapsed.as_secs_f64();
                    let size = pair[1].ops as f64 / pair[0].ops as f64;
                    line.push_str(&format!(" {:.2} |", time / size));
                }
                _ => line.push_str(" — |"),
            }
        }
        println!("{line}");
    }
    let mut line = String::from("| peak RSS of any step |");
    for size in sizes {
        line.push_str(&format!(" {} |", mib(size.peak_kib)));
    }
    println!("{line}{}", " — |".repeat(sizes.len().saturating_sub(1)));
    let mut line = String::from("| load average (1, 5, 15 min), before → after |");
    for size in sizes {
        line.push_str(&format!(" {} → {} |", size.load.0, size.load.1));
    }
    println!("{line}{}", " — |".repeat(sizes.len().saturating_sub(1)));
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
    };
    // One size or several, smallest first: `--ops 100000,300000,1000000`.
    let mut sizes: Vec<u64> = value("--ops")
        .unwrap_or_else(|| "100000".into())
        .split(',')
        .map(|n| n.trim().replace('_', "").parse())
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| format!("--ops: a size or a comma-separated list of sizes: {e}"))?;
    sizes.sort_unstable();
    sizes.dedup();
    let dir = value("--dir")
        .map(PathBuf::from)
        .unwrap_or_else(|| std::env::temp_dir().join("bench-write"));
    let postgres = value("--postgres");
    // PostgreSQL measured up to this size only (a 1 M ingest there is long).
    let postgres_max: u64 = value("--postgres-max")
        .map(|n| n.replace('_', "").parse())
        .transpose()
        .map_err(|e| format!("--postgres-max: a number of operations: {e}"))?
        .unwrap_or(u64::MAX);
    let binary = std::env::current_exe()?
        .parent()
        .and_then(Path::parent)
        .map(|release| release.join("holdfast"))
        .ok_or("cannot find target/release")?;
    if !binary.exists() {
        return Err("build the binary first: cargo build --release --bin holdfast".into());
    }
    let several = sizes.len() > 1;
    let mut measured = Vec::new();
    for ops in sizes {
        let size_dir = if several {
            dir.join(ops.to_string())
        } else {
            dir.clone()
        };
        let postgres = postgres.as_deref().filter(|_| ops <= postgres_max);
        measured.push(measure(&binary, &size_dir, ops, postgres)?);
    }
    if measured.len() > 1 {
        summary(&measured);
    }
    Ok(())
}
