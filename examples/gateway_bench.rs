//! Measures the MCP gateway (DESIGN §10.2) in one run: the per-call latency of
//! 1,000 sequential calls of a trivial tool made directly to the fixture server
//! and through `holdfast gateway` (a read that passes, and a write that is
//! recorded before and after it is forwarded), and the race of identical calls
//! after one `authorize-retry`: per trial, a write fails with -32603 (UNKNOWN),
//! a reviewer reconciles and authorizes a retry, then two agents, each behind
//! its own gateway on the same store, send the identical call at once; the
//! fixture's own record says how many reached it.
//!
//! ```text
//! cargo build --release --bin holdfast --example mcp_fixture --example gateway_bench
//! target/release/examples/gateway_bench [CALLS] [TRIALS] [DATABASE_URL]
//! ```
//! Without a URL the store is a fresh SQLite file in a temp dir; a PostgreSQL
//! URL must name an empty, migrated database. With `GATEWAY_BENCH_KEEP` set
//! the temp dir (store, config, the gateways' log) is kept and named; with
//! `HOLDFAST_LOG=sqlx=debug` that log times every statement.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use holdfast::core::model::State;
use holdfast::otlp::map::hash_arguments;
use rmcp::model::{
    CallToolRequestParams, ClientResult, ErrorCode, ErrorData, Implementation,
    InitializeRequestParams, ServerNotification, ServerRequest,
};
use rmcp::service::{
    NotificationContext, RequestContext, RoleClient, RunningService, Service, ServiceExt,
};
use rmcp::transport::TokioChildProcess;
use serde_json::{Value, json};

/// A client that hears nothing of interest.
#[derive(Clone)]
struct Agent;

impl Service<RoleClient> for Agent {
    async fn handle_request(
        &self,
        _request: ServerRequest,
        _context: RequestContext<RoleClient>,
    ) -> Result<ClientResult, ErrorData> {
        Err(ErrorData::new(
            ErrorCode::METHOD_NOT_FOUND,
            "no such method",
            None,
        ))
    }

    async fn handle_notification(
        &self,
        _notification: ServerNotification,
        _context: NotificationContext<RoleClient>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    fn get_info(&self) -> InitializeRequestParams {
        InitializeRequestParams::new(Default::default(), Implementation::new("bench", "1.0.0"))
    }
}

type Client = RunningService<RoleClient, Agent>;

struct Places {
    dir: tempfile::TempDir,
    url: String,
    bin: PathBuf,
    fixture: PathBuf,
}

impl Places {
    fn effects(&self) -> PathBuf {
        self.dir.path().join("effects.log")
    }

    fn fail_once(&self) -> PathBuf {
        self.dir.path().join("fail-once")
    }

    fn fixture(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.fixture);
        command
            .env("MCP_FIXTURE_EFFECTS", self.effects())
            .env("MCP_FIXTURE_FAIL_ONCE", self.fail_once());
        command
    }

    fn holdfast(&self) -> std::process::Command {
        let mut command = std::process::Command::new(&self.bin);
        command
            .env_remove("HOLDFAST_DB")
            .env_remove("HOLDFAST_NOW")
            .env("HOLDFAST_DATA_DIR", self.dir.path())
            .env("HOLDFAST_CONFIG", self.dir.path().join("config.toml"))
            .arg("--database-url")
            .arg(&self.url);
        command
    }

    fn gateway(&self) -> tokio::process::Command {
        let mut command = self.holdfast();
        command
            .env("MCP_FIXTURE_EFFECTS", self.effects())
            .env("MCP_FIXTURE_FAIL_ONCE", self.fail_once())
            .args(["gateway", "--name", "pay", "--"])
            .arg(&self.fixture);
        tokio::process::Command::from(command)
    }
}

async fn connect(command: tokio::process::Command) -> anyhow::Result<Client> {
    Ok(Agent.serve(TokioChildProcess::new(command)?).await?)
}

async fn call(
    client: &Client,
    tool: &str,
    args: Value,
) -> anyhow::Result<rmcp::model::CallToolResult> {
    let Value::Object(map) = args else {
        anyhow::bail!("arguments are an object");
    };
    Ok(client
        .call_tool(CallToolRequestParams::new(tool.to_owned()).with_arguments(map))
        .await?)
}

/// Latencies of `calls` sequential calls of `tool`, each with `args(i)`.
async fn timed(
    client: &Client,
    tool: &str,
    calls: usize,
    args: impl Fn(usize) -> Value,
) -> anyhow::Result<Vec<Duration>> {
    // Warm up the path (connections, caches) before timing.
    for i in 0..20 {
        call(client, tool, args(calls + i)).await?;
    }
    let mut out = Vec::with_capacity(calls);
    for i in 0..calls {
        let start = Instant::now();
        let result = call(client, tool, args(i)).await?;
        out.push(start.elapsed());
        anyhow::ensure!(result.is_error != Some(true), "{tool} answered an error");
    }
    out.sort();
    Ok(out)
}

fn percentile(sorted: &[Duration], p: usize) -> Duration {
    sorted[(sorted.len() * p / 100).min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.3}", d.as_secs_f64() * 1000.0)
}

fn row(what: &str, direct: &[Duration], through: &[Duration]) {
    let (d50, d99) = (percentile(direct, 50), percentile(direct, 99));
    let (g50, g99) = (percentile(through, 50), percentile(through, 99));
    println!(
        "| {what} | {} | {} | {} | {} | {} | {} |",
        ms(d50),
        ms(d99),
        ms(g50),
        ms(g99),
        ms(g50.saturating_sub(d50)),
        ms(g99.saturating_sub(d99)),
    );
}

fn applied(path: &Path, order: &str) -> usize {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains(&format!("\"{order}\"")))
        .count()
}

fn run(command: &mut std::process::Command) -> anyhow::Result<String> {
    let output = command.output()?;
    anyhow::ensure!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let calls: usize = args.next().map_or(Ok(1000), |a| a.parse())?;
    let trials: usize = args.next().map_or(Ok(50), |a| a.parse())?;
    let dir = tempfile::tempdir()?;
    let url = args
        .next()
        .unwrap_or_else(|| format!("sqlite:{}", dir.path().join("store.db").display()));
    let exe = std::env::current_exe()?;
    let release = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| anyhow::anyhow!("cannot find the target dir from {}", exe.display()))?;
    let places = Places {
        url,
        bin: release.join("holdfast"),
        fixture: release.join("examples").join("mcp_fixture"),
        dir,
    };
    std::fs::write(
        places.dir.path().join("config.toml"),
        "[gateway.approval]\nby = \"rev:ops-lead\"\npolicy = \"BENCH-1\"\n\n\
         [[gateway.tool]]\nname = \"pay/lookup\"\nmethod = \"GET\"\nowner = \"payments\"\n\n\
         [[gateway.tool]]\nname = \"pay/refund\"\nmethod = \"POST\"\nowner = \"payments\"\n",
    )?;
    run(places.holdfast().args(["db", "migrate"]))?;
    println!("store: {}", places.url);
    println!();
    println!(
        "| tool ({calls} sequential calls) | direct p50 ms | direct p99 ms | gateway p50 ms | gateway p99 ms | overhead p50 ms | overhead p99 ms |"
    );
    println!("|---|---|---|---|---|---|---|");

    let direct = connect(places.fixture()).await?;
    let through = connect(places.gateway()).await?;
    let read = |i: usize| json!({"order": format!("R{i}")});
    let direct_reads = timed(&direct, "lookup", calls, read).await?;
    let gateway_reads = timed(&through, "lookup", calls, read).await?;
    row(
        "`lookup` (read by contract: passes)",
        &direct_reads,
        &gateway_reads,
    );
    let direct_writes = timed(
        &direct,
        "refund",
        calls,
        |i| json!({"order": format!("D{i}"), "amount": 1}),
    )
    .await?;
    let gateway_writes = timed(
        &through,
        "refund",
        calls,
        |i| json!({"order": format!("G{i}"), "amount": 1}),
    )
    .await?;
    row(
        "`refund` (write: recorded before it is sent)",
        &direct_writes,
        &gateway_writes,
    );
    direct.cancel().await?;

    // The race: one authorize-retry, two agents behind two gateways.
    let store = holdfast::store::Location::parse(&places.url)?
        .open_existing()
        .await?;
    let other = connect(places.gateway()).await?;
    let mut reached = Vec::with_capacity(trials);
    for trial in 0..trials {
        let order = format!("RACE{trial}");
        let args = json!({"order": order, "amount": 3});
        std::fs::write(places.fail_once(), "")?;
        let first = call(&through, "refund", args.clone()).await;
        anyhow::ensure!(
            first.is_err(),
            "trial {trial}: the first call should fail with -32603"
        );
        let found = store
            .same_calls("pay/refund", &hash_arguments(&args), None)
            .await?;
        let id = found
            .iter()
            .find(|s| s.state == State::Unknown)
            .map(|s| s.id.as_str().to_owned())
            .ok_or_else(|| anyhow::anyhow!("trial {trial}: no UNKNOWN refund"))?;
        for action in [
            vec!["reconcile", "--not-found", "--reference", "BENCH"],
            vec!["authorize-retry"],
        ] {
            let mut review = places.holdfast();
            // On PostgreSQL the database login is the one who acts.
            if !places.url.starts_with("postgres") {
                review.args(["--as", "maya"]);
            }
            review
                .args(["review", &id])
                .args(&action)
                .args(["--rationale", "checked the provider by hand"]);
            run(&mut review)?;
        }
        let (a, b) = tokio::join!(
            call(&through, "refund", args.clone()),
            call(&other, "refund", args.clone())
        );
        let refused = [a?, b?].iter().filter(|r| r.is_error == Some(true)).count();
        reached.push((applied(&places.effects(), &order), refused));
    }
    through.cancel().await?;
    other.cancel().await?;
    let once = reached.iter().filter(|(n, _)| *n == 1).count();
    let twice = reached.iter().filter(|(n, _)| *n > 1).count();
    let none = reached.iter().filter(|(n, _)| *n == 0).count();
    let refused: usize = reached.iter().map(|(_, r)| r).sum();
    println!();
    println!(
        "race after one authorize-retry, {trials} trials of two identical calls through two gateways: \
         reached the server once in {once}, twice or more in {twice}, never in {none}; {refused} calls refused"
    );
    if std::env::var_os("GATEWAY_BENCH_KEEP").is_some() {
        // Kept for reading: the store and the gateways' log (`HOLDFAST_LOG`).
        println!("kept: {}", places.dir.keep().display());
    }
    Ok(())
}
