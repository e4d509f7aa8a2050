//! `holdfast audit verify` and `holdfast audit digest`: walk the chain, compare
//! it with a saved head, or print the head to keep elsewhere.

use std::io::Write as _;

use crate::cli::{AuditCommand, Context, Failure, exit, render};
use crate::core::audit::ChainStatus;
use crate::core::chain::{BY_VERIFY, acknowledgement};
use crate::core::ids::Sha256;
use crate::core::model::Role;
use crate::core::refusal::{Refusal, Rule};
use crate::core::rules::Rationale;
use crate::core::rules::actor::Actor;

/// A saved chain head: `SEQ HASH`.
fn read_digest(path: &std::path::Path) -> anyhow::Result<(i64, Sha256)> {
    // A bounded prefix only: `SEQ HASH` is under 100 bytes, and a digest file
    // that is not one (`/dev/zero`) is refused after 4 KiB.
    let text = crate::bounded::read_text(path, "digest file", crate::bounded::DIGEST_BYTES)
        .map_err(|e| Failure::new(exit::BAD_INPUT, e.to_string()))?;
    let mut parts = text.split_whitespace();
    let bad = || {
        Failure::new(
            exit::BAD_INPUT,
            format!(
                "digest file {}: expected `SEQ HASH` as printed by `holdfast audit digest`",
                path.display()
            ),
        )
    };
    let seq = parts.next().and_then(|s| s.parse().ok()).ok_or_else(bad)?;
    let hash = parts
        .next()
        .and_then(|h| Sha256::parse(h).ok())
        .ok_or_else(bad)?;
    Ok((seq, hash))
}

/// The role that acknowledges a break: the local user in single-user mode, else
/// an owner (of any tenant: the chain is the whole store's), in its own name.
fn owner_role(actor: &Actor) -> Result<Role, Refusal> {
    if actor.on_behalf_of.is_some() {
        crate::core::rules::actor::own_name(actor, "acknowledging a break of the audit chain")?;
    }
    match &actor.grants {
        None => Ok(Role::Local),
        Some(grants) if grants.iter().any(|g| g.role == Role::Owner) => Ok(Role::Owner),
        Some(_) => Err(Refusal {
            rule: Rule::G6,
            reason: format!(
                "acknowledging a break of the audit chain is an owner's decision; {} is an owner nowhere",
                actor.identity
            ),
        }),
    }
}

async fn acknowledge(ctx: &Context, seq: i64, reason: &str, json: bool) -> anyhow::Result<u8> {
    let reason =
        Rationale::parse(reason).map_err(|e| Failure::bad_input(format!("--reason: {e}")))?;
    let session = ctx.session().await?;
    let actor = session.actor();
    let role = owner_role(actor).map_err(|r| {
        crate::cli::commands::review::failure(crate::review::ReviewError::Refused(r))
    })?;
    let draft = acknowledgement(
        &actor.identity,
        role,
        actor.policy.clone(),
        seq,
        &reason,
        ctx.now(),
    );
    let row = session
        .acknowledge_break(seq, draft)
        .await
        .map_err(|e| Failure::new(exit::BAD_INPUT, render::clean(&e.to_string())))?;
    if json {
        println!("{}", serde_json::json!({"acknowledged": seq, "audit": row}));
    } else {
        println!(
            "acknowledged the break at seq {seq} (audit row {}): writes go on; the chain stays broken there and `audit verify` still names it",
            row.seq
        );
    }
    Ok(exit::OK)
}

/// Records what a full verify found, for the write doors (docs/security.md).
async fn record(ctx: &Context, session: &crate::store::Session, status: &ChainStatus) {
    if let Err(e) = session.record_chain(status, BY_VERIFY, ctx.now()).await {
        tracing::warn!(error = %e, "recording the verified chain failed");
    }
}

pub(crate) async fn audit(ctx: &Context, command: AuditCommand) -> anyhow::Result<u8> {
    if let AuditCommand::Acknowledge { seq, reason, json } = &command {
        return acknowledge(ctx, *seq, reason, *json).await;
    }
    let session = ctx.session().await?;
    match command {
        AuditCommand::Acknowledge { .. } => unreachable!("taken above"),
        AuditCommand::Digest { json } => {
            let status = session.verify().await?;
            match status {
                ChainStatus::Intact { rows, head } => {
                    let (seq, hash) = head.map_or((0, crate::core::audit::genesis()), |h| h);
                    if json {
                        println!(
                            "{}",
                            serde_json::json!({"seq": seq, "hash": hash, "rows": rows})
                        );
                    } else {
                        println!("{seq} {hash}");
                    }
                    Ok(exit::OK)
                }
                ChainStatus::Broken { seq, reason } => Err(Failure::new(
                    exit::INTEGRITY,
                    format!("audit chain broken at seq {seq}: {reason}; no digest printed"),
                )
                .into()),
            }
        }
        AuditCommand::Verify {
            digest: Some(path),
            from: Some(from),
            json,
        } => {
            let (seq, hash) = read_digest(&path)?;
            if seq != from {
                return Err(Failure::new(
                    exit::BAD_INPUT,
                    format!(
                        "--from {from}: the digest in {} is of seq {seq}; give --from {seq}",
                        path.display()
                    ),
                )
                .into());
            }
            let status = session.verify_from(seq, &hash).await?;
            let verdict = match &status {
                ChainStatus::Intact { rows, head } => Ok(format!(
                    "audit chain intact after the saved digest (seq {seq} {hash}): {rows} rows after it, head {}; \
                     the rows before seq {seq} and the stored values were not checked (`audit verify` checks them)",
                    head.as_ref()
                        .map_or_else(|| format!("{seq} {hash}"), |(s, h)| format!("{s} {h}"))
                )),
                ChainStatus::Broken { seq, reason } => {
                    Err(format!("audit chain broken at seq {seq}: {reason}"))
                }
            };
            if json {
                let _ = writeln!(
                    std::io::stdout(),
                    "{}",
                    serde_json::json!({"status": status, "digest_checked": true, "from": seq, "ok": verdict.is_ok()})
                );
            }
            finish(verdict, json)
        }
        AuditCommand::Verify { digest, json, .. } => {
            let status = session.verify().await?;
            record(ctx, &session, &status).await;
            let saved = digest.as_deref().map(read_digest).transpose()?;
            let mut verdict = match &status {
                ChainStatus::Intact { rows, head } => Ok(format!(
                    "audit chain intact: {rows} rows, head {}",
                    head.as_ref()
                        .map_or_else(|| "empty".into(), |(s, h)| format!("{s} {h}"))
                )),
                ChainStatus::Broken { seq, reason } => {
                    Err(format!("audit chain broken at seq {seq}: {reason}"))
                }
            };
            // The kept metric facts are held to the records they were judged
            // from: the release gate never rests on facts changed behind the
            // store's back.
            if verdict.is_ok()
                && let Some(difference) =
                    crate::report::kept_facts_differ(&session, ctx.now()).await?
            {
                verdict = Err(format!(
                    "the kept metric facts differ from the records (the metric tables were changed behind the store's back): {difference}"
                ));
            }
            if let (Some((seq, hash)), Ok(_)) = (&saved, &verdict) {
                match session.chain_link_from(*seq).await? {
                    Some((found, link)) if found == *seq && &link == hash => {
                        verdict = verdict.map(|text| {
                            format!("{text}; matches the saved digest (seq {seq} {hash})")
                        });
                    }
                    Some(_) => {
                        verdict = Err(format!(
                            "the saved digest does not match: seq {seq} now has another hash (the chain was rewritten)"
                        ))
                    }
                    None => {
                        verdict = Err(format!(
                            "the saved digest names seq {seq}, which the chain no longer has (rows were removed)"
                        ))
                    }
                }
            }
            if json {
                let _ = writeln!(
                    std::io::stdout(),
                    "{}",
                    serde_json::json!({"status": status, "digest_checked": saved.is_some(), "ok": verdict.is_ok()})
                );
            }
            finish(verdict, json)
        }
    }
}

/// The verdict of a verification printed (unless the JSON was), as an exit code.
fn finish(verdict: Result<String, String>, json: bool) -> anyhow::Result<u8> {
    match verdict {
        Ok(text) => {
            if !json {
                println!("{text}");
            }
            Ok(exit::OK)
        }
        Err(text) => Err(Failure::new(exit::INTEGRITY, text).into()),
    }
}
