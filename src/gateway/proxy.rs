//! The MCP proxy (DESIGN §10.2): an MCP server towards the agent on stdio, an
//! MCP client towards the real server it starts; every message passes through
//! unchanged except `tools/call`, which goes through the [`Gate`] first. Both
//! sides are the official SDK's (`rmcp`): the gateway speaks no JSON-RPC of
//! its own. The real server is started when the agent initializes, with the
//! agent's own initialize parameters, so capabilities pass both ways.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, CancelledNotificationParam, ClientNotification,
    ClientRequest, ContentBlock, CustomNotification, ErrorData, InitializeResult, ProgressToken,
    ServerNotification, ServerRequest, ServerResult,
};
use rmcp::service::{
    NotificationContext, Peer, PeerRequestOptions, RequestContext, RoleClient, RoleServer,
    RunningService, Service, ServiceError, ServiceExt,
};
use rmcp::transport::TokioChildProcess;
use tokio::sync::Mutex as AsyncMutex;

use super::gate::{Admission, Call, Ending, Gate, SETTLE_AFTER, Ticket, lock};

/// How long a request's progress token stays mapped after its answer, for a
/// notification sent before the answer but handled after it.
const PROGRESS_GRACE: std::time::Duration = std::time::Duration::from_secs(5);
/// How long an answer that comes after the agent cancelled is waited for, to
/// be kept as evidence.
pub const LATE_ANSWER_WAIT: Duration = Duration::from_secs(60);

/// The command that starts the real server.
#[derive(Debug, Clone)]
pub struct Command {
    pub program: String,
    pub args: Vec<String>,
}

/// What both sides of the proxy share.
struct Shared {
    gate: Gate,
    command: Command,
    /// The real server, once the agent initialized.
    upstream: AsyncMutex<Option<RunningService<RoleClient, Upstream>>>,
    /// The agent, for what the real server sends it.
    agent: OnceLock<Peer<RoleServer>>,
    /// The real server's progress tokens, to the agent's.
    progress: Mutex<HashMap<ProgressToken, ProgressToken>>,
    /// What each tool's `readOnlyHint` says, from the last `tools/list`.
    read_only: Mutex<HashMap<String, bool>>,
}

/// The answer to the agent's request may still come after it cancelled.
type Answer = tokio::sync::oneshot::Receiver<Result<ServerResult, ServiceError>>;

/// How waiting for an answer ended.
enum Waited {
    Answer(Box<Result<Result<ServerResult, ServiceError>, tokio::sync::oneshot::error::RecvError>>),
    Cancelled(Answer),
}

/// The side facing the agent.
#[derive(Clone)]
pub struct Gateway {
    shared: Arc<Shared>,
}

/// The side facing the real server.
struct Upstream {
    shared: Arc<Shared>,
    info: rmcp::model::ClientConfig,
}

impl Gateway {
    pub fn new(gate: Gate, command: Command) -> Gateway {
        Gateway {
            shared: Arc::new(Shared {
                gate,
                command,
                upstream: AsyncMutex::new(None),
                agent: OnceLock::new(),
                progress: Mutex::new(HashMap::new()),
                read_only: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// Serves the agent on stdin/stdout until it leaves or the server ends.
    pub async fn run_stdio(self) -> anyhow::Result<()> {
        let running = self
            .clone()
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| anyhow::anyhow!("the agent did not initialize: {e}"))?;
        let reason = running.waiting().await;
        tracing::info!(?reason, "the agent left");
        self.shared.gate.settle().await;
        if let Some(mut upstream) = self.shared.upstream.lock().await.take() {
            let _ = upstream.close().await;
        }
        Ok(())
    }

    async fn upstream_peer(&self) -> Result<Peer<RoleClient>, ErrorData> {
        match self.shared.upstream.lock().await.as_ref() {
            Some(running) => Ok(running.peer().clone()),
            None => Err(ErrorData::internal_error(
                "holdfast gateway: the server is not started (initialize first)",
                None,
            )),
        }
    }

    async fn initialize(
        &self,
        params: rmcp::model::InitializeRequestParams,
    ) -> Result<ServerResult, ErrorData> {
        let mut command = tokio::process::Command::new(&self.shared.command.program);
        command.args(&self.shared.command.args);
        let transport = TokioChildProcess::new(command).map_err(|e| {
            ErrorData::internal_error(
                format!(
                    "holdfast gateway: cannot start the server {}: {e}",
                    self.shared.command.program
                ),
                None,
            )
        })?;
        let upstream = Upstream {
            shared: self.shared.clone(),
            info: params,
        };
        let running = upstream.serve(transport).await.map_err(|e| {
            ErrorData::internal_error(
                format!("holdfast gateway: the server did not initialize: {e}"),
                None,
            )
        })?;
        let info = running.peer().peer_info().ok_or_else(|| {
            ErrorData::internal_error(
                "holdfast gateway: the server sent no initialize result",
                None,
            )
        })?;
        let result: InitializeResult = serde_json::to_value(info.as_ref())
            .and_then(serde_json::from_value)
            .map_err(|e| {
                ErrorData::internal_error(
                    format!("holdfast gateway: the server's initialize result: {e}"),
                    None,
                )
            })?;
        *self.shared.upstream.lock().await = Some(running);
        Ok(ServerResult::InitializeResult(result))
    }

    /// Forwards a request as it came, with its metadata; the agent's progress
    /// token is mapped to the one the client side sends.
    async fn forward(
        &self,
        request: ClientRequest,
        context: &RequestContext<RoleServer>,
    ) -> Result<rmcp::service::RequestHandle<RoleClient>, ErrorData> {
        let peer = self.upstream_peer().await?;
        let agent_token = context.meta.get_progress_token();
        let handle = peer
            .send_request_with_option(
                request,
                PeerRequestOptions::no_options().with_meta(context.meta.clone()),
            )
            .await
            .map_err(|e| service_error(&e))?;
        if let Some(token) = agent_token {
            lock(&self.shared.progress).insert(handle.progress_token.clone(), token);
        }
        Ok(handle)
    }

    async fn pass(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let handle = self.forward(request, &context).await?;
        let Waited::Answer(answer) = self.wait(handle, &context).await else {
            return Err(cancelled());
        };
        let result = match *answer {
            Ok(result) => result.map_err(|e| service_error(&e))?,
            Err(_) => return Err(closed()),
        };
        if let ServerResult::ListToolsResult(list) = &result {
            let mut hints = lock(&self.shared.read_only);
            for tool in &list.tools {
                if let Some(hint) = tool.annotations.as_ref().and_then(|a| a.read_only_hint) {
                    hints.insert(tool.name.to_string(), hint);
                }
            }
        }
        Ok(result)
    }

    /// Waits for the real server's answer, or for the agent to cancel (then
    /// the server is told, and the answer still to come is handed back).
    async fn wait(
        &self,
        handle: rmcp::service::RequestHandle<RoleClient>,
        context: &RequestContext<RoleServer>,
    ) -> Waited {
        let token = handle.progress_token.clone();
        let id = handle.id.clone();
        let peer = handle.peer.clone();
        let mut rx = handle.rx;
        let waited = tokio::select! {
            answer = &mut rx => Waited::Answer(Box::new(answer)),
            () = context.ct.cancelled() => {
                cancel_upstream(&peer, id).await;
                Waited::Cancelled(rx)
            }
        };
        // The SDK hands each notification to its handler on a task of its own,
        // so a progress notification the server sent before its answer may be
        // handled after it: the mapping stays a moment longer for it.
        let shared = Arc::clone(&self.shared);
        tokio::spawn(async move {
            tokio::time::sleep(PROGRESS_GRACE).await;
            lock(&shared.progress).remove(&token);
        });
        waited
    }

    async fn call_tool(
        &self,
        params: CallToolRequestParams,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let call = Call {
            name: params.name.to_string(),
            arguments: params.arguments.clone(),
            read_only_hint: lock(&self.shared.read_only)
                .get(params.name.as_ref())
                .copied(),
        };
        let ticket = match self.shared.gate.admit(&call).await {
            Ok(Admission::Pass) => return self.pass(request, context).await,
            Ok(Admission::Forward(ticket)) => ticket,
            Ok(Admission::Refuse(text)) => {
                tracing::info!(tool = %call.name, "a repeat of a held call refused");
                return Ok(ServerResult::CallToolResult(CallToolResult::error(vec![
                    ContentBlock::text(text),
                ])));
            }
            Ok(Admission::Answer(text)) => {
                tracing::info!(tool = %call.name, "a repeat of a succeeded call answered from the record");
                return Ok(ServerResult::CallToolResult(CallToolResult::success(vec![
                    ContentBlock::text(text),
                ])));
            }
            Err(e) => {
                tracing::error!(error = %e, tool = %call.name, "a call could not be recorded; not sent");
                return Ok(ServerResult::CallToolResult(CallToolResult::error(vec![
                    ContentBlock::text(format!(
                        "holdfast could not record this call, so it did NOT send it to the server \
                         (nothing was done): {e}. The store must be reachable before tool calls \
                         can go through."
                    )),
                ])));
            }
        };
        let handle = match self.forward(request, &context).await {
            Ok(handle) => handle,
            Err(e) => {
                self.record(&ticket, &Ending::Dropped(e.message.to_string()))
                    .await;
                return Err(e);
            }
        };
        let answer = match self.wait(handle, &context).await {
            Waited::Answer(answer) => *answer,
            Waited::Cancelled(rx) => {
                self.record(&ticket, &Ending::Cancelled).await;
                let gateway = self.clone();
                tokio::spawn(async move { gateway.late_answer(ticket, rx).await });
                return Err(cancelled());
            }
        };
        match answer {
            Ok(Ok(ServerResult::CallToolResult(result))) => {
                let text = serde_json::to_string(&result).unwrap_or_default();
                let ending = Ending::Result {
                    is_error: result.is_error == Some(true),
                    text,
                };
                self.record(&ticket, &ending).await;
                Ok(ServerResult::CallToolResult(result))
            }
            Ok(Ok(other)) => {
                let text = serde_json::to_string(&other).unwrap_or_default();
                self.record(
                    &ticket,
                    &Ending::Result {
                        is_error: false,
                        text,
                    },
                )
                .await;
                Ok(other)
            }
            Ok(Err(ServiceError::McpError(error))) => {
                self.record(
                    &ticket,
                    &Ending::Error {
                        code: error.code.0,
                        message: error.message.to_string(),
                    },
                )
                .await;
                Err(error)
            }
            Ok(Err(other)) => {
                self.record(&ticket, &Ending::Dropped(other.to_string()))
                    .await;
                Err(service_error(&other))
            }
            Err(_) => {
                self.record(
                    &ticket,
                    &Ending::Dropped("the server closed the connection".into()),
                )
                .await;
                Err(closed())
            }
        }
    }

    /// Records how a forwarded call ended; a store error is logged (the call
    /// already went out: its operation stays SENT, which the gate holds).
    async fn record(&self, ticket: &Ticket, ending: &Ending) {
        match self.shared.gate.finish(ticket, ending).await {
            Ok(finished) => {
                let state = finished.state;
                tracing::info!(operation = ticket.operation.as_str(), tool = %ticket.tool, %state, "call recorded");
                if finished.settle {
                    let shared = Arc::clone(&self.shared);
                    tokio::spawn(async move {
                        tokio::time::sleep(SETTLE_AFTER).await;
                        shared.gate.settle().await;
                    });
                }
            }
            Err(e) => {
                tracing::error!(operation = ticket.operation.as_str(), error = %e, "the outcome of a call could not be recorded")
            }
        }
    }

    async fn late_answer(&self, ticket: Ticket, rx: Answer) {
        let Ok(Ok(Ok(result))) = tokio::time::timeout(LATE_ANSWER_WAIT, rx).await else {
            return;
        };
        let is_error =
            matches!(&result, ServerResult::CallToolResult(r) if r.is_error == Some(true));
        let text = serde_json::to_string(&result).unwrap_or_default();
        if let Err(e) = self.shared.gate.late(&ticket, is_error, &text).await {
            tracing::error!(operation = ticket.operation.as_str(), error = %e, "a late answer could not be recorded");
        } else {
            tracing::info!(
                operation = ticket.operation.as_str(),
                "a late answer recorded as evidence"
            );
        }
    }
}

/// Tells the real server the call is cancelled, as the agent told the
/// gateway. Sent as the protocol's own notification, but not through the
/// SDK's cancel (which would drop the request's answer): a late answer is
/// evidence the gateway keeps.
async fn cancel_upstream(peer: &Peer<RoleClient>, id: rmcp::model::RequestId) {
    let params = CancelledNotificationParam::new(Some(id), Some("cancelled by the client".into()));
    let notification =
        CustomNotification::new("notifications/cancelled", serde_json::to_value(params).ok());
    let _ = peer
        .send_notification(ClientNotification::CustomNotification(notification))
        .await;
}

fn cancelled() -> ErrorData {
    ErrorData::internal_error("cancelled by the client", None)
}

fn closed() -> ErrorData {
    ErrorData::internal_error("holdfast gateway: the server closed the connection", None)
}

fn service_error(error: &ServiceError) -> ErrorData {
    match error {
        ServiceError::McpError(e) => e.clone(),
        other => ErrorData::internal_error(format!("holdfast gateway: {other}"), None),
    }
}

impl Service<RoleServer> for Gateway {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, ErrorData> {
        let _ = self.shared.agent.set(context.peer.clone());
        match request {
            ClientRequest::InitializeRequest(init) => self.initialize(init.params).await,
            ClientRequest::CallToolRequest(call) => {
                let params = call.params.clone();
                self.call_tool(params, ClientRequest::CallToolRequest(call), context)
                    .await
            }
            other => self.pass(other, context).await,
        }
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let _ = self.shared.agent.set(context.peer.clone());
        match notification {
            // A cancellation is carried by the request it cancels; the client
            // side sent its own `initialized` when it connected.
            ClientNotification::CancelledNotification(_)
            | ClientNotification::InitializedNotification(_) => Ok(()),
            other => {
                if let Ok(peer) = self.upstream_peer().await {
                    let _ = peer.send_notification(other).await;
                }
                Ok(())
            }
        }
    }

    fn get_info(&self) -> rmcp::model::ServerConfig {
        rmcp::model::ServerConfig::default()
    }
}

impl Service<RoleClient> for Upstream {
    async fn handle_request(
        &self,
        request: ServerRequest,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ClientResult, ErrorData> {
        let Some(agent) = self.shared.agent.get() else {
            return Err(ErrorData::internal_error(
                "holdfast gateway: no agent connected",
                None,
            ));
        };
        agent
            .send_request(request)
            .await
            .map_err(|e| service_error(&e))
    }

    async fn handle_notification(
        &self,
        notification: ServerNotification,
        _context: NotificationContext<RoleClient>,
    ) -> Result<(), ErrorData> {
        let Some(agent) = self.shared.agent.get() else {
            return Ok(());
        };
        let notification = match notification {
            ServerNotification::ProgressNotification(mut progress) => {
                let mapped = lock(&self.shared.progress)
                    .get(&progress.params.progress_token)
                    .cloned();
                let Some(token) = mapped else {
                    return Ok(());
                };
                progress.params.progress_token = token;
                ServerNotification::ProgressNotification(progress)
            }
            // The real server's own cancellation of a request the gateway
            // forwarded from the agent: the agent's request is the one to name,
            // which the SDK does not expose; the answer to the agent ends it.
            ServerNotification::CancelledNotification(_) => return Ok(()),
            other => other,
        };
        let _ = agent.send_notification(notification).await;
        Ok(())
    }

    fn get_info(&self) -> rmcp::model::ClientConfig {
        self.info.clone()
    }
}
