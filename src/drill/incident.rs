//! Verified incidents as drill cases (DESIGN §9.3, `holdfast drill case-from`):
//! a resolved operation's recorded attempts and answers around the commit
//! boundary become the simulated provider's script, and what its resolution
//! proved becomes the case's expectation.
//!
//! Pure: it reads an [`OperationDetail`] the caller loaded through its session
//! and returns the case line, parsed back by the drill's own case reader before
//! it is handed out, so a written case is always one the drill runs.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value, json};

use crate::core::detail::OperationDetail;
use crate::core::lookup::StatusLookup;
use crate::core::model::{Attempt, AttemptKind, ItemState, Outcome, Phase, Relation, Role, State};
use crate::sim::case::{RawLookup, SIM_PLACEHOLDER, parse_case};
use crate::wire::{Record, write_line};

/// The rule that makes an operation a case: its outcome is verified.
pub const RULE: &str = "only a verified outcome is a case";

/// The states whose outcome a resolution verified: applied (SUCCEEDED), not
/// applied (FAILED), or applied and then reversed (COMPENSATED).
pub const VERIFIED: &[State] = &[State::Succeeded, State::Failed, State::Compensated];

/// The prefix of a case written from an operation (`I-F10`): it never takes
/// the operation's own id in a store that holds the operation.
pub const CASE_PREFIX: &str = "I-";

/// Why an operation cannot become a case.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotACase {
    #[error(
        "operation {id} is {state}, not resolved: {RULE} (SUCCEEDED, FAILED or COMPENSATED); {why}"
    )]
    Unresolved {
        id: String,
        state: State,
        why: &'static str,
    },
    #[error("operation {id} cannot be reproduced by the simulated provider: {missing}")]
    Unreproducible { id: String, missing: String },
}

/// The status lookup the simulated provider answers itself (its `/records`
/// query), for a tool whose lookup a person makes (`status_lookup: true`).
fn standard_lookup(by_business_key: bool) -> RawLookup {
    let query = if by_business_key {
        "business_key={business_key}"
    } else {
        "operation={operation}"
    };
    let value = json!({
        "method": "GET",
        "url": format!("{SIM_PLACEHOLDER}{}?{query}", crate::sim::provider::STANDARD_LOOKUP),
        "timeout_ms": 2000,
        "lag_seconds": 0,
        "not_found_status": [404],
        "fields": {"target": "/record/target", "payload_hash": "/record/payload_hash",
                   "tenant": "/record/tenant", "version": "/record/version",
                   "effect_count": "/count", "provider_request_id": "/record/request_id"},
    });
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// The answer shape of the simulated provider's records, for a contract that
/// declares none (the executor reads a write's answer only by a declared
/// shape). A read's record carries no payload hash and no items.
fn standard_response(write: bool) -> Value {
    if write {
        json!({"record_id": "/record/id", "target": "/record/target", "tenant": "/record/tenant",
               "payload_hash": "/record/payload_hash", "version": "/record/version",
               "items": "/items"})
    } else {
        json!({"record_id": "/record/id", "target": "/record/target", "tenant": "/record/tenant",
               "version": "/record/version"})
    }
}

/// The `Retry-After` header an attempt was answered with, in seconds from the
/// end of the attempt (the drill's clock is its own).
fn retry_after(attempt: &Attempt) -> Map<String, Value> {
    let mut headers = Map::new();
    if let Some(until) = attempt.retry_after {
        let from: DateTime<Utc> = attempt.ended_at.unwrap_or(attempt.started_at);
        let seconds = (until - from).num_seconds().max(0);
        headers.insert("Retry-After".into(), json!(seconds.to_string()));
    }
    headers
}

/// An explicit HTTP answer: the recorded status, its Retry-After and the
/// recorded error type as the body's `error`.
fn answer(attempt: &Attempt, status: u16) -> Value {
    let mut answer = Map::new();
    answer.insert("status".into(), json!(status));
    let headers = retry_after(attempt);
    if !headers.is_empty() {
        answer.insert("headers".into(), Value::Object(headers));
    }
    if let Some(error) = &attempt.error_type {
        answer.insert("body".into(), json!({"error": error}));
    }
    Value::Object(answer)
}

/// What the provider did on one request attempt: whether it applied the effect
/// and how it answered. `None` when the recorded attempt is one the simulated
/// provider cannot play (with what is missing).
fn request_rule(
    attempt: &Attempt,
    n: u32,
    applied_here: bool,
    batch: bool,
) -> Result<Value, String> {
    let crossed = attempt.phase.may_have_crossed_boundary();
    let rule = |commit: bool, respond: Value| json!({"on": "request", "n": n, "commit": commit, "respond": respond});
    if applied_here && batch && attempt.phase == Phase::ResponseReceived {
        // The items' own rules say which committed; the answer lists them.
        return Ok(rule(true, json!("record")));
    }
    Ok(match (attempt.outcome, attempt.http_status) {
        (Outcome::DnsFailure, _) => rule(false, json!("dns_failure")),
        (Outcome::Timeout | Outcome::ConnectionReset, _) if !crossed => rule(false, json!("drop")),
        (Outcome::Timeout, _) => rule(applied_here, json!("hang")),
        (Outcome::ConnectionReset, _) => rule(applied_here, json!("drop")),
        (Outcome::Ok, Some(status)) if (200..300).contains(&status) => rule(true, json!("record")),
        (Outcome::InvalidResponse, Some(status)) if (200..300).contains(&status) => {
            let body = match (&attempt.error_type, &attempt.response_excerpt) {
                (Some(kind), _) if kind.contains("truncat") => {
                    json!("{\"record\":{\"id\":\"rec-")
                }
                (_, Some(excerpt)) => json!(excerpt),
                _ => {
                    return Err(format!(
                        "attempt {} was answered {status} with output that failed validation, and neither its kind nor its body is recorded",
                        attempt.id
                    ));
                }
            };
            rule(applied_here, json!({"status": status, "body": body}))
        }
        (Outcome::HttpError | Outcome::Rejected | Outcome::Ok, Some(status))
            if status >= 400 && !applied_here =>
        {
            rule(false, answer(attempt, status))
        }
        _ => {
            return Err(format!(
                "attempt {} ({} after {}, status {}) has no scripted answer that reproduces it{}",
                attempt.id,
                attempt.outcome,
                attempt.phase,
                attempt
                    .http_status
                    .map_or_else(|| "none".to_owned(), |s| s.to_string()),
                if applied_here {
                    " while its effect was applied"
                } else {
                    ""
                }
            ));
        }
    })
}

/// What the provider answered on one status query.
fn status_rule(attempt: &Attempt, n: u32) -> Result<Value, String> {
    let rule = |respond: Value| json!({"on": "status", "n": n, "respond": respond});
    Ok(match (attempt.outcome, attempt.http_status) {
        (Outcome::DnsFailure, _) => rule(json!("dns_failure")),
        (Outcome::Timeout, _) => rule(json!("hang")),
        (Outcome::ConnectionReset, _) => rule(json!("drop")),
        // Found or not found: the provider answers from the records it holds,
        // which the request rules' commits reproduce.
        (Outcome::Ok, _) | (_, Some(404)) => rule(json!("record")),
        (_, Some(status)) if status >= 400 => rule(answer(attempt, status)),
        _ => {
            return Err(format!(
                "status query {} ({} after {}) has no scripted answer that reproduces it",
                attempt.id, attempt.outcome, attempt.phase
            ));
        }
    })
}

/// The request attempt whose effect the resolution verified: the last one
/// answered with a 2xx, else the last one that may have reached the provider
/// when an observation after it found the effect. `None` for an operation
/// whose effect was never applied (FAILED).
fn applying(detail: &OperationDetail, requests: &[&Attempt]) -> Option<String> {
    if detail.row.operation.state == State::Failed {
        return None;
    }
    // A batch's items were applied by the request that answered with them,
    // whatever the status of the whole.
    if detail
        .items
        .iter()
        .any(|i| matches!(i.state, ItemState::Succeeded | ItemState::Compensated))
        && let Some(answered) = requests
            .iter()
            .rev()
            .find(|a| a.phase == Phase::ResponseReceived)
    {
        return Some(answered.id.clone());
    }
    if let Some(ok) = requests
        .iter()
        .rev()
        .find(|a| a.http_status.is_some_and(|s| (200..300).contains(&s)))
    {
        return Some(ok.id.clone());
    }
    let found = detail
        .observations
        .iter()
        .filter(|o| o.found && o.effect_count.is_none_or(|n| n > 0))
        .map(|o| o.observed_at)
        .max()?;
    requests
        .iter()
        .rev()
        .find(|a| a.phase.may_have_crossed_boundary() && a.started_at <= found)
        .map(|a| a.id.clone())
}

/// The case reproducing `detail`'s operation, as one line of a case file,
/// `protected` marking it a holdout (DESIGN §9.3). Outside text (target, keys,
/// error types) is kept as stored; the line is safe for a terminal.
pub fn case_from(detail: &OperationDetail, protected: bool) -> Result<String, NotACase> {
    let op = &detail.row.operation;
    let id = op.id.as_str().to_owned();
    let missing = |what: String| NotACase::Unreproducible {
        id: id.clone(),
        missing: what,
    };
    if !VERIFIED.contains(&op.state) {
        let why = match op.state {
            State::Accepted => {
                "ACCEPTED is an owner's acceptance of an outcome left as it stood, not a verified one"
            }
            s if s.is_terminal() => "its outcome was not verified",
            _ => "it is still open",
        };
        return Err(NotACase::Unresolved {
            id,
            state: op.state,
            why,
        });
    }
    let Some(contract) = &detail.contract else {
        return Err(missing(format!(
            "the store holds no contract for tool {}",
            op.tool
        )));
    };
    let Some(mode) = op.failure_mode else {
        return Err(missing(
            "a failure mode: the operation names none, and every case is one mode's".to_owned(),
        ));
    };
    let case_id = format!("{CASE_PREFIX}{id}");
    let requests: Vec<&Attempt> = detail
        .attempts
        .iter()
        .filter(|a| a.kind == AttemptKind::Request && a.phase != Phase::NotSent)
        .collect();
    if requests.is_empty() {
        return Err(missing(
            "a request attempt: nothing reached the provider, so there is no provider answer to reproduce".to_owned(),
        ));
    }
    let queries: Vec<&Attempt> = detail
        .attempts
        .iter()
        .filter(|a| a.kind == AttemptKind::StatusQuery)
        .collect();
    if let Some(odd) = detail
        .observations
        .iter()
        .find(|o| o.found && o.matches.as_ref().is_some_and(|m| !m.all()))
    {
        return Err(missing(format!(
            "observation {} found a record that does not match the intent: the simulated provider answers only with the record it applied",
            odd.id
        )));
    }
    let applied = applying(detail, &requests);
    if matches!(op.state, State::Succeeded | State::Compensated) && applied.is_none() {
        return Err(missing(
            "the attempt that applied the effect: no request was answered 2xx and no observation found the effect after one"
                .to_owned(),
        ));
    }

    // Batch items: applied in order, the provider stopping at the first that
    // did not commit.
    let mut item_rules = Vec::new();
    let applied_n = requests
        .iter()
        .position(|a| Some(&a.id) == applied.as_ref())
        .map(|i| i + 1);
    let mut stopped = false;
    for item in &detail.items {
        let committed = matches!(item.state, ItemState::Succeeded | ItemState::Compensated);
        match (committed, stopped) {
            (true, false) => {}
            (true, true) => {
                return Err(missing(format!(
                    "item {} committed after an earlier item did not: the simulated provider applies items in order and stops at the first that does not commit",
                    item.index
                )));
            }
            (false, true) => {}
            (false, false) => {
                stopped = true;
                let respond = match item.state {
                    ItemState::Failed => {
                        let status = applied_n
                            .and_then(|n| requests[n - 1].http_status)
                            .filter(|s| *s >= 400)
                            .unwrap_or(422);
                        let mut answer = json!({"status": status});
                        if let Some(label) = &item.label {
                            answer["body"] = json!({"error": "item_failed", "item": label});
                        }
                        answer
                    }
                    ItemState::NotAttempted | ItemState::Skipped => json!("drop"),
                    other => {
                        return Err(missing(format!(
                            "a verified state for item {} (it is {other})",
                            item.index
                        )));
                    }
                };
                let mut rule = json!({"on": "item", "n": item.index, "respond": respond});
                if let Some(n) = applied_n {
                    rule["request"] = json!(n);
                }
                item_rules.push(rule);
            }
        }
    }

    let mut provider = Vec::new();
    for (index, attempt) in requests.iter().enumerate() {
        let n = u32::try_from(index + 1).unwrap_or(u32::MAX);
        let here = applied.as_ref() == Some(&attempt.id);
        provider.push(request_rule(attempt, n, here, !detail.items.is_empty()).map_err(&missing)?);
    }
    for (index, attempt) in queries.iter().enumerate() {
        let n = u32::try_from(index + 1).unwrap_or(u32::MAX);
        provider.push(status_rule(attempt, n).map_err(&missing)?);
    }
    provider.extend(item_rules);

    // The contract as stored, its lookup and answer shape the simulated
    // provider's where it has to emulate them.
    let line = write_line(&Record::Contract(contract.clone()));
    let Ok(Value::Object(mut written)) = serde_json::from_str::<Value>(&line) else {
        return Err(missing("a contract record that reads back".to_owned()));
    };
    written.remove("type");
    let lookup = match &contract.status_lookup {
        StatusLookup::Http(spec) => Some(super::emulated_lookup(spec)),
        StatusLookup::ByHand => Some(standard_lookup(op.business_key.is_some())),
        StatusLookup::None if !queries.is_empty() => {
            return Err(missing(format!(
                "a status lookup: tool {}'s contract declares none, yet the operation's status was queried",
                op.tool
            )));
        }
        StatusLookup::None => None,
    };
    if let Some(lookup) = lookup {
        written.insert("status_lookup".into(), Value::Object(lookup));
    }
    if written.get("response").is_none_or(Value::is_null) {
        written.insert("response".into(), standard_response(contract.is_write()));
    }

    // The recovery the owner approved for a PARTIAL, when a child did it.
    let recovery = detail
        .children
        .iter()
        .filter(|c| c.state == State::Succeeded)
        .find_map(|c| match (c.relation, op.state) {
            (Relation::ResumeOf, State::Succeeded) => Some("resume"),
            (Relation::CompensationOf, State::Compensated) => Some("compensate"),
            _ => None,
        });
    if op.state == State::Compensated && recovery.is_none() {
        return Err(missing(
            "the compensation that reversed it: no compensation child of it succeeded".to_owned(),
        ));
    }

    let mut operation = json!({
        "risk": op.risk.as_str(),
        "tenant": op.tenant,
        "target": op.target,
        "items": detail.items.len(),
    });
    if let Some(key) = &op.idempotency_key {
        operation["idempotency_key"] = json!(key);
    }
    if let Some(key) = &op.business_key {
        operation["business_key"] = json!(key);
    }
    if let Some(recovery) = recovery {
        operation["recovery"] = json!(recovery);
    }

    // What the resolution proved.
    let final_move = detail
        .audit
        .iter()
        .rev()
        .find(|r| r.draft.to == Some(op.state) && r.draft.from != Some(op.state));
    let by_system = final_move.is_none_or(|r| r.draft.role == Role::System);
    let mut expect = json!({"retried_before_reconcile": false});
    let mut played = "the system's own move";
    if op.state == State::Failed {
        played = "the system, which verified that nothing was applied; the reference executor holds a refused write for review rather than failing it, so the case checks that nothing was applied and not the state";
    } else if by_system || recovery.is_some() {
        expect["state"] = json!(op.state.as_str());
        if recovery.is_some() {
            played = "the owner's recovery, which the drill plays";
            expect["recovery_state"] = json!("SUCCEEDED");
        }
    } else {
        played = "a person's decision on the evidence, which the drill does not play, so the case checks the effects and not the state";
    }
    if contract.is_write() && op.state != State::Compensated {
        let effects = match op.state {
            State::Failed => 0,
            _ if detail.items.is_empty() => 1,
            _ => detail.items.len(),
        };
        expect["effects"] = json!(effects);
    }
    if !detail.items.is_empty() && op.state != State::Failed {
        expect["max_item_effects"] = json!(1);
    }

    let note = format!(
        "Reproduced from operation {id} (tenant {}, tool {} contract {}): its requests ({}) and status queries ({}) answered as recorded, the effect {}; resolved {} by {}.",
        op.tenant,
        op.tool,
        contract.version,
        requests.len(),
        queries.len(),
        match &applied {
            Some(attempt) => format!("applied at attempt {attempt}"),
            None => "never applied".to_owned(),
        },
        op.state,
        played,
    );
    let mut case = json!({
        "type": "case",
        "id": case_id,
        "mode": mode.as_str(),
        "name": format!("incident {id}: {} resolved {}", mode.as_str(), op.state),
        "note": note,
        "contract": Value::Object(written),
        "operation": operation,
        "provider": provider,
        "expect": expect,
    });
    if protected {
        case["protected"] = json!(true);
    }
    // The store holds secrets redacted already; nothing else gets through, and
    // the line says the same with every invisible or control code point escaped,
    // safe to print.
    crate::core::redact::redact_value(&mut case);
    let text = crate::core::sanitize::json_for_terminal(&case.to_string()).into_owned();
    parse_case(&text, 1).map_err(|errors| {
        missing(
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        )
    })?;
    Ok(text)
}
