//! The circuit service (DESIGN §9.5) for a person's side: the circuits as the
//! store holds them, and an owner's closing of one by hand, decided by
//! `core::circuit` and committed with its audit row through the acting
//! identity's [`Session`]. The senders (the MCP gateway) decide their own moves
//! with the same rules where they send.

use chrono::{DateTime, Utc};

use crate::core::audit::AuditRow;
use crate::core::circuit::{self, Circuit, CircuitChange};
use crate::core::rules::Rationale;
use crate::review::ReviewError;
use crate::store::{Session, StoreError};

/// How often a close is decided again when another move landed first.
const ATTEMPTS: usize = 3;

/// Every stored circuit that is not closed, by tool: what `holdfast circuits`
/// and the console's header show.
pub async fn not_closed(session: &Session) -> Result<Vec<Circuit>, StoreError> {
    Ok(session
        .circuits()
        .await?
        .into_iter()
        .filter(|c| c.position != circuit::Position::Closed)
        .collect())
}

/// Closes `tool`'s circuit as the session's actor (an owner's decision, G6);
/// `Ok(None)` when it is closed already.
pub async fn close(
    session: &Session,
    tool: &str,
    rationale: &Rationale,
    now: DateTime<Utc>,
) -> Result<Option<(CircuitChange, AuditRow)>, ReviewError> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let current = session.circuit(tool).await?;
        let tenants = session.tool_tenants(tool).await?;
        let Some(change) = circuit::decide_close(
            session.actor(),
            tool,
            current.as_ref(),
            &tenants,
            rationale,
            now,
        )
        .map_err(ReviewError::Refused)?
        else {
            return Ok(None);
        };
        match session.move_circuit(change.clone()).await {
            Ok(row) => return Ok(Some((change, row))),
            Err(StoreError::CircuitChanged { .. }) if attempt < ATTEMPTS => continue,
            Err(e) => return Err(e.into()),
        }
    }
}
