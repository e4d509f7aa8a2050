//! `holdfast gateway [--name SERVER] -- COMMAND ARGS…`: the MCP gateway on
//! stdio, writing as `svc:mcp-gateway` (or the identity asked for). Standard
//! output is the protocol: everything else goes to the log file.

use std::sync::Arc;

use crate::cli::Context;
use crate::gateway::GATEWAY_IDENTITY;
use crate::gateway::gate::{Gate, Now};
use crate::gateway::proxy::{Command, Gateway};
use crate::store::Ingester;

pub(crate) async fn gateway(
    ctx: &Context,
    name: Option<String>,
    command: Vec<String>,
) -> anyhow::Result<u8> {
    let mut words = command.into_iter();
    let program = words.next().ok_or_else(|| {
        crate::cli::Failure::bad_input("gateway: name the server's COMMAND after --")
    })?;
    let server = name.unwrap_or_else(|| {
        std::path::Path::new(&program)
            .file_stem()
            .map_or_else(|| program.clone(), |s| s.to_string_lossy().into_owned())
    });
    if server.is_empty() || server.contains(|c: char| c.is_control() || c == '/') {
        return Err(crate::cli::Failure::bad_input(format!(
            "gateway: --name {server:?} must be a name without `/` or control characters"
        )));
    }
    let store = ctx.create_store().await?;
    let actor = ctx.service_actor(store.as_ref(), GATEWAY_IDENTITY).await?;
    let mut ingester = Ingester::of(&actor);
    ingester.contracts_optional = true;
    let clock = ctx.clock;
    let now: Now = Arc::new(move || clock.now());
    let gate = Gate::open(store, ingester, ctx.config.gateway.clone(), &server, now).await?;
    for id in gate.sweep().await? {
        tracing::warn!(
            operation = id.as_str(),
            "a call an ended gateway left without its answer is now UNKNOWN"
        );
    }
    tracing::info!(%server, %program, "gateway started");
    let gateway = Gateway::new(
        gate,
        Command {
            program,
            args: words.collect(),
        },
    );
    gateway.run_stdio().await?;
    Ok(crate::cli::exit::OK)
}
