//! `holdfast serve`: the OTLP/HTTP receiver on the configured store, writing as
//! `svc:otlp` (or the identity asked for), until interrupted.

use std::sync::Arc;

use crate::cli::Context;
use crate::otlp::receiver::{Receiver, serve as run};
use crate::otlp::settings::{DEFAULT_LISTEN, RECEIVER_IDENTITY};
use crate::store::Ingester;

pub(crate) async fn serve(ctx: &Context, listen: Option<String>) -> anyhow::Result<u8> {
    let settings = ctx.config.otlp.clone();
    let store = ctx.create_store().await?;
    let actor = ctx.service_actor(store.as_ref(), RECEIVER_IDENTITY).await?;
    warn_of_drift(store.as_ref(), &settings).await?;
    let mut ingester = Ingester::of(&actor);
    ingester.contracts_optional = true;
    let token = match &settings.token_env {
        Some(var) => Some(std::env::var(var).map_err(|_| {
            crate::cli::Failure::bad_input(format!(
                "the config names {var} as the receiver's token, and it is not set"
            ))
        })?)
        .filter(|t| !t.is_empty()),
        None => None,
    };
    let address = listen
        .or_else(|| settings.listen.clone())
        .unwrap_or_else(|| DEFAULT_LISTEN.to_owned());
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {address}: {e}"))?;
    let bound = listener.local_addr()?;
    eprintln!(
        "holdfast: receiving OTLP/HTTP traces on http://{bound}/v1/traces into {} as {}{}",
        store.location(),
        ingester.by,
        if token.is_some() {
            " (bearer token required)"
        } else {
            ""
        }
    );
    let clock = ctx.clock;
    let now: Arc<dyn Fn() -> chrono::DateTime<chrono::Utc> + Send + Sync> =
        Arc::new(move || clock.now());
    let receiver = Arc::new(Receiver::new(store, settings, ingester, token, now));
    tokio::select! {
        served = run(listener, receiver) => served?,
        _ = tokio::signal::ctrl_c() => {}
    }
    Ok(crate::cli::exit::OK)
}

/// Prints (and logs) a warning for each `[[otlp.tool]]` table that differs from
/// the contract the store already holds for its tool: that table is not used.
pub(crate) async fn warn_of_drift(
    store: &dyn crate::store::Store,
    settings: &crate::otlp::OtlpSettings,
) -> anyhow::Result<()> {
    let stored = store.contracts().await?;
    for warning in crate::otlp::settings::drift("otlp.tool", &settings.tool, &stored) {
        tracing::warn!("{warning}");
        eprintln!("warning: {warning}");
    }
    Ok(())
}
