//! The MCP gateway end to end (DESIGN §10.2): a real MCP client (the official
//! SDK's) talks to `holdfast gateway`, which starts the fixture server
//! (`examples/mcp_fixture.rs`, the same SDK); the store is read back, and the
//! fixture's own record of applied effects says what really happened.

mod support;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use holdfast::core::ids::OperationId;
use holdfast::core::model::{Phase, State};
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
use serde_json::{Value, json};
use support::stores::{self, Kind};

const SERVER: &str = "pay";

/// The fixture server's binary, built on demand (a plain `cargo test` builds
/// the examples already).
fn fixture() -> PathBuf {
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
struct Heard(Arc<Mutex<Vec<ServerNotification>>>);

impl Service<RoleClient> for Heard {
    async fn handle_request(
        &self,
        request: ServerRequest,
        _context: RequestContext<RoleClient>,
    ) -> Result<ClientResult, ErrorData> {
        match request {
            ServerRequest::PingRequest(_) => Ok(ClientResult::empty(())),
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
struct Rig {
    dir: tempfile::TempDir,
    url: String,
}

impl Rig {
    fn new(url: &str) -> Rig {
        Rig {
            dir: tempfile::tempdir().expect("temp dir"),
            url: url.to_owned(),
        }
    }

    fn effects(&self) -> PathBuf {
        self.dir.path().join("effects.log")
    }

    fn fail_once(&self) -> PathBuf {
        self.dir.path().join("fail-once")
    }

    fn config(&self, text: &str) {
        std::fs::write(self.dir.path().join("config.toml"), text).unwrap();
    }

    /// How many effects the server applied.
    fn applied(&self) -> usize {
        std::fs::read_to_string(self.effects())
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_holdfast"));
        command
            .env_remove("HOLDFAST_DB")
            .env_remove("HOLDFAST_NOW")
            .env_remove("HOLDFAST_AS")
            .env("HOLDFAST_DATA_DIR", self.dir.path())
            .env("HOLDFAST_CONFIG", self.dir.path().join("config.toml"))
            .env("MCP_FIXTURE_EFFECTS", self.effects())
            .env("MCP_FIXTURE_FAIL_ONCE", self.fail_once())
            .arg("--database-url")
            .arg(&self.url)
            .args(["gateway", "--name", SERVER, "--"])
            .arg(fixture());
        command
    }

    /// A client connected through a new gateway.
    async fn connect(&self) -> (RunningService<RoleClient, Heard>, Heard) {
        let heard = Heard::default();
        let transport = TokioChildProcess::new(self.command()).expect("start the gateway");
        let client = heard
            .clone()
            .serve(transport)
            .await
            .expect("the gateway initializes");
        (client, heard)
    }

    /// A client connected to the fixture directly.
    async fn direct(&self) -> RunningService<RoleClient, Heard> {
        let mut command = tokio::process::Command::new(fixture());
        command.env("MCP_FIXTURE_EFFECTS", self.effects());
        Heard::default()
            .serve(TokioChildProcess::new(command).expect("start the fixture"))
            .await
            .expect("the fixture initializes")
    }
}

fn arguments(value: Value) -> serde_json::Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => panic!("arguments are an object"),
    }
}

/// Calls `tool` with `args`, giving up (and cancelling) after `timeout`.
async fn call(
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

fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

const PATIENT: Duration = Duration::from_secs(20);

/// The operations of `tool` with `args`, newest first.
async fn same(store: &dyn Store, tool: &str, args: &Value) -> Vec<(OperationId, State)> {
    store
        .same_calls(&format!("{SERVER}/{tool}"), &hash_arguments(args), None)
        .await
        .unwrap()
        .into_iter()
        .map(|s| (s.id, s.state))
        .collect()
}

/// Waits until the one operation of `tool` with `args` is in `state`.
async fn settled(store: &dyn Store, tool: &str, args: &Value, state: State) -> OperationId {
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
fn holdfast(rig: &Rig, args: &[&str]) -> std::process::Output {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .env_remove("HOLDFAST_DB")
        .env_remove("HOLDFAST_NOW")
        .env("HOLDFAST_DATA_DIR", rig.dir.path())
        .env("HOLDFAST_CONFIG", rig.dir.path().join("config.toml"))
        .arg("--database-url")
        .arg(&rig.url)
        .arg("--as")
        .arg("maya")
        .args(args)
        .output()
        .expect("run holdfast");
    assert!(
        output.status.success(),
        "holdfast {args:?}: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

fn review(rig: &Rig, id: &OperationId, action: &[&str]) {
    let mut args = vec!["review", id.as_str()];
    args.extend_from_slice(action);
    args.extend_from_slice(&["--rationale", "checked the payment provider by hand"]);
    holdfast(rig, &args);
}

async fn reads_pass_and_the_list_is_unchanged(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let rig = Rig::new(&fresh.url);
    rig.config("[[gateway.tool]]\nname = \"pay/lookup\"\nmethod = \"GET\"\nowner = \"payments\"\n");
    let direct = rig.direct().await;
    let (client, heard) = rig.connect().await;
    let listed = client.list_all_tools().await.unwrap();
    assert_eq!(
        serde_json::to_value(&listed).unwrap(),
        serde_json::to_value(direct.list_all_tools().await.unwrap()).unwrap(),
        "tools/list passes unchanged"
    );
    let info = client.peer_info().expect("server info");
    assert_eq!(info.instructions.as_deref(), Some("fixture server"));

    let result = call(&client, "lookup", json!({"order": "A1"}), PATIENT)
        .await
        .unwrap();
    assert_eq!(text(&result), "found");
    assert!(
        same(fresh.store.as_ref(), "lookup", &json!({"order": "A1"}))
            .await
            .is_empty(),
        "a read by its contract passes without a hold"
    );
    // Without a contract, an untrusted server's read-only hint is not believed.
    let _ = call(&client, "progress", json!({}), PATIENT).await.unwrap();
    assert_eq!(
        same(fresh.store.as_ref(), "progress", &json!({})).await[0].1,
        State::Succeeded
    );
    let _ = heard;
    client.cancel().await.unwrap();
    direct.cancel().await.unwrap();
}

#[tokio::test]
async fn tools_list_and_server_info_pass_unchanged() {
    reads_pass_and_the_list_is_unchanged(Kind::Sqlite).await;
}

#[tokio::test]
async fn tools_list_and_server_info_pass_unchanged_postgres() {
    skip_without_postgres!();
    reads_pass_and_the_list_is_unchanged(Kind::Postgres).await;
}

#[tokio::test]
async fn progress_and_log_notifications_reach_the_agent() {
    let fresh = stores::sqlite().await;
    let rig = Rig::new(&fresh.url);
    rig.config("[gateway]\ntrusted = [\"pay\"]\n");
    let (client, heard) = rig.connect().await;
    let _ = client.list_all_tools().await.unwrap();
    let params = CallToolRequestParams::new("progress").with_arguments(arguments(json!({})));
    let handle = client
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::with_timeout(PATIENT),
        )
        .await
        .unwrap();
    let token = handle.progress_token.clone();
    let ServerResult::CallToolResult(result) = handle.await_response().await.unwrap() else {
        panic!("a tool result");
    };
    assert_eq!(text(&result), "progressed");
    // Notifications travel beside the answer: wait for them (a loaded machine
    // may deliver them after it), up to a bound.
    let progress_of = |heard: &[ServerNotification]| -> Vec<f64> {
        heard
            .iter()
            .filter_map(|n| match n {
                ServerNotification::ProgressNotification(p) if p.params.progress_token == token => {
                    Some(p.params.progress)
                }
                _ => None,
            })
            .collect()
    };
    let listed = |heard: &[ServerNotification]| {
        heard
            .iter()
            .any(|n| matches!(n, ServerNotification::ToolListChangedNotification(_)))
    };
    let waited = std::time::Instant::now();
    let heard = loop {
        let now = heard.0.lock().unwrap().clone();
        if (progress_of(&now).len() >= 2 && listed(&now)) || waited.elapsed() > PATIENT {
            break now;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // The SDK hands each notification to its handler on a task of its own, on
    // the agent's side as on the gateway's, so their order of arrival is not
    // kept even without a gateway; progress values increase, which orders them.
    let mut progress = progress_of(&heard);
    progress.sort_by(f64::total_cmp);
    assert_eq!(
        progress,
        vec![1.0, 2.0],
        "progress under the agent's own token"
    );
    assert!(listed(&heard), "the list-changed notification passes");
    assert!(
        same(fresh.store.as_ref(), "progress", &json!({}))
            .await
            .is_empty(),
        "a read of a trusted server is not held"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_write_that_hangs_past_the_timeout_is_unknown_and_its_repeat_refused() {
    let fresh = stores::sqlite().await;
    let rig = Rig::new(&fresh.url);
    let (client, _) = rig.connect().await;
    let args = json!({"order": "A7", "amount": 40, "hang_ms": 1500});
    let first = call(&client, "refund", args.clone(), Duration::from_millis(300)).await;
    assert!(
        matches!(first, Err(ServiceError::Timeout { .. })),
        "{first:?}"
    );
    let id = settled(fresh.store.as_ref(), "refund", &args, State::Unknown).await;

    let repeat = call(&client, "refund", args.clone(), PATIENT)
        .await
        .unwrap();
    assert_eq!(repeat.is_error, Some(true));
    let said = text(&repeat);
    assert!(
        said.contains(id.as_str()) && said.contains("UNKNOWN"),
        "{said}"
    );
    assert!(said.contains("Do not retry"), "{said}");
    let again = call(&client, "refund", args.clone(), PATIENT)
        .await
        .unwrap();
    assert_eq!(again.is_error, Some(true));

    // The late answer is kept as evidence; the server applied the refund once.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(rig.applied(), 1);
    let detail = fresh.store.detail(&id).await.unwrap();
    let refused = detail
        .attempts
        .iter()
        .filter(|a| a.phase == Phase::NotSent)
        .count();
    assert_eq!(refused, 2, "each refused repeat is a not_sent attempt");
    assert!(
        detail
            .attempts
            .iter()
            .any(|a| a.error_type.as_deref() == Some("cancelled_by_client")),
        "{:?}",
        detail.attempts
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn outcomes_move_the_operation() {
    let fresh = stores::sqlite().await;
    let rig = Rig::new(&fresh.url);
    let (client, _) = rig.connect().await;
    let store = fresh.store.as_ref();

    let ok = json!({"order": "B1", "amount": 5});
    let result = call(&client, "refund", ok.clone(), PATIENT).await.unwrap();
    assert_eq!(text(&result), "refunded");
    settled(store, "refund", &ok, State::Succeeded).await;

    let rejected = json!({"order": "B2"});
    let result = call(&client, "reject", rejected.clone(), PATIENT)
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true), "the error result is delivered");
    settled(store, "reject", &rejected, State::Failed).await;

    let bad = json!({"code": -32602});
    let error = call(&client, "explode", bad.clone(), PATIENT).await;
    assert!(
        matches!(error, Err(ServiceError::McpError(ref e)) if e.code.0 == -32602),
        "{error:?}"
    );
    settled(store, "explode", &bad, State::Failed).await;

    let internal = json!({"code": -32603});
    let error = call(&client, "explode", internal.clone(), PATIENT).await;
    assert!(
        matches!(error, Err(ServiceError::McpError(ref e)) if e.code.0 == -32603),
        "{error:?}"
    );
    settled(store, "explode", &internal, State::Unknown).await;

    // A FAILED call was not applied: the same call again is a new operation.
    let result = call(&client, "reject", rejected.clone(), PATIENT)
        .await
        .unwrap();
    assert_eq!(result.is_error, Some(true));
    assert_eq!(same(store, "reject", &rejected).await.len(), 2);
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn authorize_retry_lets_one_identical_call_through_then_the_record_answers() {
    let fresh = stores::sqlite().await;
    let rig = Rig::new(&fresh.url);
    std::fs::write(rig.fail_once(), "").unwrap();
    rig.config("[gateway.approval]\nby = \"rev:ops-lead\"\npolicy = \"AGENT-REFUNDS-1\"\n");
    let (client, _) = rig.connect().await;
    let store = fresh.store.as_ref();
    let args = json!({"order": "C3", "amount": 12});

    let first = call(&client, "refund", args.clone(), PATIENT).await;
    assert!(matches!(first, Err(ServiceError::McpError(_))), "{first:?}");
    let id = settled(store, "refund", &args, State::Unknown).await;
    assert_eq!(rig.applied(), 0);

    review(
        &rig,
        &id,
        &["reconcile", "--not-found", "--reference", "PAY-1"],
    );
    review(&rig, &id, &["authorize-retry"]);
    let retried = call(&client, "refund", args.clone(), PATIENT)
        .await
        .unwrap();
    assert_eq!(text(&retried), "refunded");
    assert_eq!(
        rig.applied(),
        1,
        "the authorized retry reached the server once"
    );
    let same_op = settled(store, "refund", &args, State::Succeeded).await;
    assert_eq!(same_op, id, "the retry is the held operation's attempt");

    let answered = call(&client, "refund", args.clone(), PATIENT)
        .await
        .unwrap();
    assert_ne!(answered.is_error, Some(true));
    let said = text(&answered);
    assert!(
        said.contains("already SUCCEEDED") && said.contains(id.as_str()),
        "{said}"
    );
    assert_eq!(rig.applied(), 1, "answered from the record, not sent");
    client.cancel().await.unwrap();
}

async fn killed_mid_call_then_restarted(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let rig = Rig::new(&fresh.url);
    let args = json!({"order": "K9", "amount": 70, "hang_ms": 5000});
    let mut command = rig.command();
    command.kill_on_drop(true);
    let child_transport = TokioChildProcess::new(command).expect("start the gateway");
    let pid = child_transport.id().expect("the gateway's pid");
    let client = Heard::default().serve(child_transport).await.unwrap();
    let params = CallToolRequestParams::new("refund").with_arguments(arguments(args.clone()));
    let pending = client
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::no_options(),
        )
        .await
        .unwrap();
    let store = fresh.store.as_ref();
    let id = settled(store, "refund", &args, State::Sent).await;
    for _ in 0..100 {
        if rig.applied() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(pending.await_response().await.is_err());
    drop(client);

    let (again, _) = rig.connect().await;
    let repeat = call(&again, "refund", args.clone(), PATIENT).await.unwrap();
    assert_eq!(repeat.is_error, Some(true));
    assert!(text(&repeat).contains(id.as_str()), "{}", text(&repeat));
    // The restarted gateway found the call its killed predecessor left SENT.
    assert_eq!(settled(store, "refund", &args, State::Unknown).await, id);
    let detail = store.detail(&id).await.unwrap();
    assert!(
        detail
            .attempts
            .iter()
            .any(|a| a.error_type.as_deref() == Some("gateway_stopped")
                && a.phase == Phase::RequestSent),
        "{:?}",
        detail.attempts
    );
    assert_eq!(rig.applied(), 1);
    again.cancel().await.unwrap();
}

#[tokio::test]
async fn sigkill_mid_call_sqlite() {
    killed_mid_call_then_restarted(Kind::Sqlite).await;
}

#[tokio::test]
async fn sigkill_mid_call_postgres() {
    skip_without_postgres!();
    killed_mid_call_then_restarted(Kind::Postgres).await;
}

#[tokio::test]
async fn two_gateways_on_one_postgres_store_share_holds() {
    skip_without_postgres!();
    let fresh = stores::postgres().await;
    let one = Rig::new(&fresh.url);
    let two = Rig::new(&fresh.url);
    let (a, _) = one.connect().await;
    let (b, _) = two.connect().await;
    let args = json!({"order": "D4", "amount": 9, "hang_ms": 1500});
    let first = call(&a, "refund", args.clone(), Duration::from_millis(300)).await;
    assert!(
        matches!(first, Err(ServiceError::Timeout { .. })),
        "{first:?}"
    );
    let id = settled(fresh.store.as_ref(), "refund", &args, State::Unknown).await;
    let other = call(&b, "refund", args.clone(), PATIENT).await.unwrap();
    assert_eq!(other.is_error, Some(true));
    assert!(text(&other).contains(id.as_str()));
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(one.applied() + two.applied(), 1);
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
}

#[tokio::test]
async fn two_racing_identical_calls_after_one_authorize_retry_forward_once() {
    let fresh = stores::sqlite().await;
    let rig = Rig::new(&fresh.url);
    std::fs::write(rig.fail_once(), "").unwrap();
    rig.config("[gateway.approval]\nby = \"rev:ops-lead\"\npolicy = \"AGENT-REFUNDS-1\"\n");
    let (a, _) = rig.connect().await;
    let (b, _) = rig.connect().await;
    let store = fresh.store.as_ref();
    let args = json!({"order": "E5", "amount": 30});
    assert!(call(&a, "refund", args.clone(), PATIENT).await.is_err());
    let id = settled(store, "refund", &args, State::Unknown).await;
    review(
        &rig,
        &id,
        &["reconcile", "--not-found", "--reference", "PAY-2"],
    );
    review(&rig, &id, &["authorize-retry"]);
    let (one, two) = tokio::join!(
        call(&a, "refund", args.clone(), PATIENT),
        call(&b, "refund", args.clone(), PATIENT)
    );
    let answers = [one.unwrap(), two.unwrap()];
    let refused = answers.iter().filter(|r| r.is_error == Some(true)).count();
    assert_eq!(rig.applied(), 1, "one of the two reached the server");
    assert_eq!(
        refused,
        1,
        "{:?}",
        answers.iter().map(text).collect::<Vec<_>>()
    );
    a.cancel().await.unwrap();
    b.cancel().await.unwrap();
}
