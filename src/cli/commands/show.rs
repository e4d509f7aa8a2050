//! `holdfast show` and `holdfast timeline`: one operation's evidence bundle, or
//! its attempts in order, as the acting identity may see it.

use crate::cli::{Context, exit, parse_id, render, review};
use crate::core::rules::Actor;

/// One operation as the acting identity may see it (G7), with that actor.
async fn load(
    ctx: &Context,
    id: &str,
) -> anyhow::Result<(crate::core::detail::OperationDetail, Actor)> {
    let id = parse_id(id)?;
    let session = ctx.session().await?;
    let detail = crate::review::load(&session, &id)
        .await
        .map_err(review::failure)?;
    super::warn_skipped(&session);
    Ok((detail, session.actor().clone()))
}

pub(crate) async fn show(ctx: &Context, id: &str, json: bool) -> anyhow::Result<u8> {
    let (detail, actor) = load(ctx, id).await?;
    let bundle = crate::core::evidence::bundle(&detail, &actor, ctx.now());
    if json {
        println!("{}", crate::cli::json::pretty(&bundle)?);
    } else {
        print!(
            "{}{}{}",
            render::actor_header(&actor),
            render::bundle(&bundle, ctx.now()),
            render::redactions(&detail.redactions)
        );
    }
    Ok(exit::OK)
}

pub(crate) async fn timeline(ctx: &Context, id: &str, json: bool) -> anyhow::Result<u8> {
    let (detail, _) = load(ctx, id).await?;
    if json {
        let rows: Vec<serde_json::Value> = detail
            .attempts
            .iter()
            .map(|a| crate::wire::to_value(&crate::wire::Record::Attempt(a.clone())))
            .collect();
        println!("{}", crate::cli::json::pretty(&rows)?);
    } else {
        print!("{}", render::timeline(&detail, ctx.now()));
    }
    Ok(exit::OK)
}
