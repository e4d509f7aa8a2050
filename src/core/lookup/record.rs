//! What one lookup leaves in the record: always a `status_query` attempt, and an
//! observation when an answer came back. Ids and sequence numbers follow the
//! operation's own, so a lookup reads like any reconcile in the timeline.

use crate::core::ids::{OperationId, Sha256};
use crate::core::model::{Attempt, AttemptKind, Observation};

use super::LookupCall;

/// The attempt and, with an answer, the observation of one lookup of `operation`;
/// `seq` is the attempt's sequence number, `observation_id` the observation's id.
pub fn records(
    call: &LookupCall,
    operation: &OperationId,
    seq: u32,
    observation_id: &str,
) -> (Attempt, Option<Observation>) {
    let answer = call.answer.as_ref();
    let attempt = Attempt {
        id: format!("{operation}-Q{seq}"),
        operation: operation.clone(),
        seq,
        kind: AttemptKind::StatusQuery,
        layer: None,
        started_at: call.started_at,
        ended_at: Some(call.ended_at),
        phase: call.phase,
        outcome: call.outcome,
        http_status: call.http_status,
        error_type: call.error_type.clone(),
        retry_after: call.retry_after,
        provider_request_id: answer.and_then(|a| a.provider_request_id.clone()),
        request_hash: Some(Sha256::of(format!("GET {}", call.url).as_bytes())),
        response_hash: call.response_hash.clone(),
        resend_count: Some(0),
        replayed: None,
        trace_id: None,
        response_excerpt: call.excerpt.clone(),
        url: None,
    };
    let observation = answer.map(|a| {
        let mut note = format!(
            "GET {} → HTTP {} in {} ms",
            call.url,
            call.http_status
                .map_or_else(|| "-".to_owned(), |s| s.to_string()),
            call.duration_ms()
        );
        if let Some(v) = &a.version {
            note.push_str(&format!("; provider version {v}"));
        }
        if let Some(id) = &a.provider_request_id {
            note.push_str(&format!("; provider request {id}"));
        }
        Observation {
            id: observation_id.to_owned(),
            operation: operation.clone(),
            observed_at: call.ended_at,
            source: super::SOURCE,
            found: a.found,
            matches: Some(a.matches.clone()),
            effect_count: a.effect_count,
            raw_hash: Some(a.raw_hash.clone()),
            note: Some(note),
        }
    });
    (attempt, observation)
}
