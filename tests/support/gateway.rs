//! The MCP gateway rig: the fixture server (`examples/mcp_fixture.rs`, built
//! with the official SDK), a client of the same SDK that starts `holdfast
//! gateway` in front of it, and the store read back.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use holdfast::core::ids::OperationId;
use holdfast::core::model::State;
use holdfast::otlp::map::hash_arguments;
use holdfast::store::Store;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest, ClientResult, ErrorData,
    Implementation, InitializeRequestParams, ServerNotification, ServerRequest, ServerResult,
};
use rmcp::service::{
    NotificationContext, PeerRequestOptions, RequestContext, RoleClient, RunningService, Service,
    ServiceError, ServiceExt,
};
use rmcp::transport::TokioChildProcess;
use serde_json::Value;

pub const SERVER: &str = "pay";

/// The one root the test client answers `roots/list` with.
pub const AGENT_ROOT: &str = "file:///srv/agent-workspace";

/// The fixture server's binary, built on demand (a plain `cargo test` builds
/// the examples already).
pub fn fixture() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_holdfast"));
    let dir = bin.parent().expect("the target dir");
    let path = dir.join("examples").join("mcp_fixture");
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        if !path.exists() {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let status = std::process::Command::new(cargo)
                .args(["build", "--example", "mcp_fixture"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("run cargo build --example mcp_fixture");
            assert!(status.success(), "building the fixture server failed");
        }
    });
    path
}

/// What the client heard from the server besides answers.
#[derive(Clone, Default)]
pub struct Heard(pub Arc<Mutex<Vec<ServerNotification>>>);

impl Service<RoleClient> for Heard {
    async fn handle_request(
        &self,
        request: ServerRequest,
        _context: RequestContext<RoleClient>,
    ) -> Result<ClientResult, ErrorData> {
        match request {
            ServerRequest::PingRequest(_) => Ok(ClientResult::empty(())),
            // A request from the server: the client's roots.
            #[allow(deprecated)]
            ServerRequest::ListRootsRequest(_) => Ok(ClientResult::ListRootsResult(
                rmcp::model::ListRootsResult::new(vec![rmcp::model::Root::new(AGENT_ROOT)]),
            )),
            _ => Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                "no such method",
                None,
            )),
        }
    }

    async fn handle_notification(
        &self,
        notification: ServerNotification,
        _context: NotificationContext<RoleClient>,
    ) -> Result<(), ErrorData> {
        self.0.lock().unwrap().push(notification);
        Ok(())
    }

    fn get_info(&self) -> InitializeRequestParams {
        InitializeRequestParams::new(
            Default::default(),
            Implementation::new("gateway-test", "1.0.0"),
        )
    }
}

/// One gateway over one store, with the fixture's files.
pub struct Rig {
    pub dir: tempfile::TempDir,
    pub url: String,
}

impl Rig {
    pub fn new(url: &str) -> Rig {
        Rig {
            dir: tempfile::tempdir().expect("temp dir"),
            url: url.to_owned(),
        }
    }

    pub fn effects(&self) -> PathBuf {
        self.dir.path().join("effects.log")
    }

    pub fn fail_once(&self) -> PathBuf {
        self.dir.path().join("fail-once")
    }

    pub fn config(&self, text: &str) {
        std::fs::write(self.dir.path().join("config.toml"), text).unwrap();
    }

    /// How many effects the server applied.
    pub fn applied(&self) -> usize {
        std::fs::read_to_string(self.effects())
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    /// `holdfast --database-url URL` on the rig's store, with its own data dir
    /// and config and nothing of the caller's environment that names another.
    pub fn holdfast(&self) -> std::process::Command {
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_holdfast"));
        command
            .env_remove("HOLDFAST_DB")
            .env_remove("HOLDFAST_NOW")
            .env_remove("HOLDFAST_AS")
            .env("HOLDFAST_DATA_DIR", self.dir.path())
            .env("HOLDFAST_CONFIG", self.dir.path().join("config.toml"))
            .arg("--database-url")
            .arg(&self.url);
        command
    }

    pub fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::from(self.holdfast());
        command
            .env("MCP_FIXTURE_EFFECTS", self.effects())
            .env("MCP_FIXTURE_FAIL_ONCE", self.fail_once())
            .args(["gateway", "--name", SERVER, "--"])
            .arg(fixture());
        command
    }

    /// A client connected through a new gateway.
    pub async fn connect(&self) -> (RunningService<RoleClient, Heard>, Heard) {
        let heard = Heard::default();
        let transport = TokioChildProcess::new(self.command()).expect("start the gateway");
        let client = heard
            .clone()
            .serve(transport)
            .await
            .expect("the gateway initializes");
        (client, heard)
    }

    /// A client connected through a new gateway whose clock stands at `now`
    /// (RFC 3339): gateways at one instant write their records at the same
    /// millisecond.
    pub async fn connect_at(&self, now: &str) -> RunningService<RoleClient, Heard> {
        let mut command = self.command();
        command.env("HOLDFAST_NOW", now);
        Heard::default()
            .serve(TokioChildProcess::new(command).expect("start the gateway"))
            .await
            .expect("the gateway initializes")
    }

    /// A client connected to the fixture directly.
    pub async fn direct(&self) -> RunningService<RoleClient, Heard> {
        let mut command = tokio::process::Command::new(fixture());
        command.env("MCP_FIXTURE_EFFECTS", self.effects());
        Heard::default()
            .serve(TokioChildProcess::new(command).expect("start the fixture"))
            .await
            .expect("the fixture initializes")
    }
}

pub fn arguments(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("arguments are an object"),
    }
}

/// Calls `tool` with `args`, giving up (and cancelling) after `timeout`.
pub async fn call(
    client: &RunningService<RoleClient, Heard>,
    tool: &str,
    args: Value,
    timeout: Duration,
) -> Result<CallToolResult, ServiceError> {
    let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments(args));
    let handle = client
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::with_timeout(timeout),
        )
        .await?;
    match handle.await_response().await? {
        ServerResult::CallToolResult(result) => Ok(result),
        other => panic!("not a tool result: {other:?}"),
    }
}

pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

pub const PATIENT: Duration = Duration::from_secs(20);

/// The operations of `tool` with `args`, newest first.
pub async fn same(store: &dyn Store, tool: &str, args: &Value) -> Vec<(OperationId, State)> {
    store
        .same_calls(&format!("{SERVER}/{tool}"), &hash_arguments(args), None)
        .await
        .unwrap()
        .into_iter()
        .map(|s| (s.id, s.state))
        .collect()
}

/// Waits until the one operation of `tool` with `args` is in `state`.
pub async fn settled(store: &dyn Store, tool: &str, args: &Value, state: State) -> OperationId {
    for _ in 0..200 {
        let found = same(store, tool, args).await;
        if let Some((id, s)) = found.first()
            && *s == state
        {
            return id.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "no {tool} operation reached {state}: {:?}",
        same(store, tool, args).await
    );
}

/// Runs `holdfast ARGS` on the rig's store as a reviewer.
pub fn holdfast(rig: &Rig, args: &[&str]) -> std::process::Output {
    let output = attempt(rig, args);
    assert!(
        output.status.success(),
        "holdfast {args:?}: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Runs `holdfast ARGS` on the rig's store as a reviewer, whatever its outcome:
/// `maya` on SQLite, the database login on PostgreSQL (the login acts there).
pub fn attempt(rig: &Rig, args: &[&str]) -> std::process::Output {
    let mut command = rig.holdfast();
    if !rig.url.starts_with("postgres") {
        command.args(["--as", "maya"]);
    }
    command.args(args).output().expect("run holdfast")
}

pub fn review(rig: &Rig, id: &OperationId, action: &[&str]) {
    let mut args = vec!["review", id.as_str()];
    args.extend_from_slice(action);
    args.extend_from_slice(&["--rationale", "checked the payment provider by hand"]);
    holdfast(rig, &args);
}

/// Calls `tool` with `args` (which make the fixture hang) and gives up after
/// 300 ms, as an agent's request timeout does; returns the operation once the
/// gateway has held it UNKNOWN.
pub async fn timed_out(
    client: &RunningService<RoleClient, Heard>,
    store: &dyn Store,
    tool: &str,
    args: &Value,
) -> OperationId {
    let first = call(client, tool, args.clone(), Duration::from_millis(300)).await;
    assert!(
        matches!(first, Err(ServiceError::Timeout { .. })),
        "{first:?}"
    );
    settled(store, tool, args, State::Unknown).await
}
