//! A small MCP server on stdio, built with the official SDK, that the gateway's
//! tests and benchmark put behind `holdfast gateway`. Its tools:
//!
//! - `lookup` (read-only): answers at once.
//! - `refund` (write): applies its effect (a line appended to the file named by
//!   `MCP_FIXTURE_EFFECTS`), then, when `hang_ms` is given, waits that long
//!   before answering (ignoring a cancellation, as a handler that committed
//!   does). While the file named by `MCP_FIXTURE_FAIL_ONCE` exists, the next
//!   call removes it and fails with -32603 before applying anything.
//! - `reject` (write): answers with an `isError` result; nothing applied.
//! - `echo` (write): answers with its arguments as JSON text, as a server that
//!   repeats what it was given does.
//! - `explode` (write): answers with the JSON-RPC error `code` it is given.
//! - `progress` (read-only): sends two progress notifications and a
//!   tool-list-changed notification, then answers.
//! - `roots` (read-only): asks the client for its roots (`roots/list`, a
//!   request from the server) and answers with their URIs, one a line.
//!
//! It also serves one resource (`fixture://orders/A1`, listed and read) and one
//! prompt (`apology`, listed and got with an `order` argument).
//!
//! Run it with `cargo run --example mcp_fixture`; it speaks only on stdio.

use std::io::Write as _;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientNotification, ClientRequest, ContentBlock,
    ErrorCode, ErrorData, InitializeResult, ListToolsResult, ProgressNotificationParam,
    ServerCapabilities, ServerResult, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, Service, ServiceExt};

#[derive(Clone)]
struct Fixture;

fn tool(name: &'static str, read_only: bool) -> Tool {
    let schema: serde_json::Map<String, serde_json::Value> =
        serde_json::from_value(serde_json::json!({"type": "object", "additionalProperties": true}))
            .unwrap_or_default();
    let mut tool = Tool::new(
        name,
        format!("fixture tool {name}"),
        std::sync::Arc::new(schema),
    );
    let mut annotations = ToolAnnotations::new();
    annotations.read_only_hint = Some(read_only);
    tool.annotations = Some(annotations);
    tool
}

fn tools() -> Vec<Tool> {
    vec![
        tool("lookup", true),
        tool("refund", false),
        tool("reject", false),
        tool("echo", false),
        tool("explode", false),
        tool("progress", true),
        tool("roots", true),
    ]
}

/// The fixture's resource and prompt answers, as the protocol writes them.
fn answer<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, ErrorData> {
    serde_json::from_value(value)
        .map_err(|e| ErrorData::internal_error(format!("fixture answer: {e}"), None))
}

fn resources() -> Result<ServerResult, ErrorData> {
    answer(serde_json::json!({"resources": [{
        "uri": "fixture://orders/A1", "name": "order A1", "mimeType": "text/plain"
    }]}))
    .map(ServerResult::ListResourcesResult)
}

fn read_resource(uri: &str) -> Result<ServerResult, ErrorData> {
    if uri != "fixture://orders/A1" {
        return Err(ErrorData::resource_not_found(
            format!("no resource {uri}"),
            None,
        ));
    }
    answer(serde_json::json!({"contents": [{
        "uri": uri, "mimeType": "text/plain", "text": "order A1: 40.00 EUR, paid"
    }]}))
    .map(ServerResult::ReadResourceResult)
}

fn prompts() -> Result<ServerResult, ErrorData> {
    answer(serde_json::json!({"prompts": [{
        "name": "apology", "description": "an apology for a late refund",
        "arguments": [{"name": "order", "required": true}]
    }]}))
    .map(ServerResult::ListPromptsResult)
}

fn prompt(
    name: &str,
    arguments: Option<&serde_json::Map<String, serde_json::Value>>,
) -> Result<ServerResult, ErrorData> {
    let order = arguments
        .and_then(|a| a.get("order"))
        .and_then(serde_json::Value::as_str);
    match (name, order) {
        ("apology", Some(order)) => answer(serde_json::json!({
            "description": "an apology for a late refund",
            "messages": [{"role": "user", "content": {
                "type": "text", "text": format!("Apologise for the late refund of order {order}.")
            }}]
        }))
        .map(ServerResult::GetPromptResult),
        _ => Err(ErrorData::invalid_params(
            format!("no prompt {name} with an order"),
            None,
        )),
    }
}

fn apply(arguments: &serde_json::Value) {
    let Ok(path) = std::env::var("MCP_FIXTURE_EFFECTS") else {
        return;
    };
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(file, "{arguments}");
    }
}

/// The client's roots, asked of it (`roots/list`), one URI a line. Roots are
/// deprecated in the protocol's newest drafts but still what clients answer;
/// the point is a request from the server.
#[allow(deprecated)]
async fn roots(context: &RequestContext<RoleServer>) -> Result<String, ErrorData> {
    let listed = context
        .peer
        .list_roots()
        .await
        .map_err(|e| ErrorData::internal_error(format!("roots/list failed: {e}"), None))?;
    let uris: Vec<String> = listed.roots.into_iter().map(|r| r.uri).collect();
    Ok(uris.join("\n"))
}

impl Fixture {
    async fn call(
        &self,
        params: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let arguments = serde_json::Value::Object(params.arguments.clone().unwrap_or_default());
        let result = match params.name.as_ref() {
            "lookup" => CallToolResult::success(vec![ContentBlock::text("found")]),
            "refund" => {
                if let Ok(marker) = std::env::var("MCP_FIXTURE_FAIL_ONCE")
                    && std::fs::remove_file(&marker).is_ok()
                {
                    return Err(ErrorData::internal_error("failed before committing", None));
                }
                apply(&arguments);
                if let Some(ms) = arguments.get("hang_ms").and_then(serde_json::Value::as_u64) {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                CallToolResult::success(vec![ContentBlock::text("refunded")])
            }
            "reject" => CallToolResult::error(vec![ContentBlock::text("refused: no such order")]),
            "echo" => CallToolResult::success(vec![ContentBlock::text(arguments.to_string())]),
            "explode" => {
                let code = arguments
                    .get("code")
                    .and_then(serde_json::Value::as_i64)
                    .and_then(|c| i32::try_from(c).ok())
                    .unwrap_or(-32603);
                return Err(ErrorData::new(ErrorCode(code), "exploded", None));
            }
            "progress" => {
                if let Some(token) = context.meta.get_progress_token() {
                    for step in 1..=2 {
                        let _ = context
                            .peer
                            .notify_progress(
                                ProgressNotificationParam::new(token.clone(), f64::from(step))
                                    .with_total(2.0),
                            )
                            .await;
                    }
                }
                let _ = context.peer.notify_tool_list_changed().await;
                CallToolResult::success(vec![ContentBlock::text("progressed")])
            }
            "roots" => {
                // Roots are deprecated in the protocol's newest drafts but still
                // what clients answer; the point is a request from the server.
                CallToolResult::success(vec![ContentBlock::text(roots(&context).await?)])
            }
            other => {
                CallToolResult::error(vec![ContentBlock::text(format!("unknown tool {other}"))])
            }
        };
        Ok(ServerResult::CallToolResult(result))
    }
}

impl Service<RoleServer> for Fixture {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        match request {
            ClientRequest::InitializeRequest(_) => {
                Ok(ServerResult::InitializeResult(self.get_info()))
            }
            ClientRequest::ListToolsRequest(_) => Ok(ServerResult::ListToolsResult(
                ListToolsResult::with_all_items(tools()),
            )),
            ClientRequest::CallToolRequest(call) => self.call(call.params, context).await,
            ClientRequest::PingRequest(_) => Ok(ServerResult::empty(())),
            ClientRequest::ListResourcesRequest(_) => resources(),
            ClientRequest::ReadResourceRequest(read) => read_resource(&read.params.uri),
            ClientRequest::ListPromptsRequest(_) => prompts(),
            ClientRequest::GetPromptRequest(get) => {
                prompt(&get.params.name, get.params.arguments.as_ref())
            }
            other => Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("no method {}", other.method()),
                None,
            )),
        }
    }

    async fn handle_notification(
        &self,
        _notification: ClientNotification,
        _context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        Ok(())
    }

    fn get_info(&self) -> InitializeResult {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_resources()
            .enable_prompts()
            .build();
        InitializeResult::new(capabilities).with_instructions("fixture server")
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let running = Fixture.serve(rmcp::transport::stdio()).await?;
    running.waiting().await?;
    Ok(())
}
