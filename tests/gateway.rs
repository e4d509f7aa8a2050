//! The MCP gateway end to end (DESIGN §10.2): a real MCP client (the official
//! SDK's) talks to `holdfast gateway`, which starts the fixture server
//! (`examples/mcp_fixture.rs`, the same SDK); the store is read back, and the
//! fixture's own record of applied effects says what really happened.

use crate::support;

use std::time::Duration;

use holdfast::core::model::{Phase, State};
use holdfast::store::Scope;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ServerNotification, ServerResult,
};
use rmcp::service::{PeerRequestOptions, ServiceError, ServiceExt};
use rmcp::transport::TokioChildProcess;
use serde_json::json;
use support::gateway::{
    Heard, PATIENT, Rig, arguments, attempt, call, holdfast, review, same, settled, text, timed_out,
};
use support::review::put_at_level;
use support::stores::{self, Kind};

/// A reviewer's reconcile (not found at the provider, under `reference`),
/// then authorize-retry of `id`.
fn authorize(rig: &Rig, id: &holdfast::core::ids::OperationId, reference: &str) {
    review(
        rig,
        id,
        &["reconcile", "--not-found", "--reference", reference],
    );
    review(rig, id, &["authorize-retry"]);
}

/// Calls `tool` with `args` and checks that the gateway refused it, naming
/// held operation `id` and its `state`; returns what the agent read.
async fn refused(
    client: &rmcp::service::RunningService<rmcp::service::RoleClient, Heard>,
    tool: &str,
    args: &serde_json::Value,
    id: &holdfast::core::ids::OperationId,
    state: State,
) -> String {
    let repeat = call(client, tool, args.clone(), PATIENT).await.unwrap();
    assert_eq!(repeat.is_error, Some(true), "{}", text(&repeat));
    let said = text(&repeat);
    assert!(
        said.contains(id.as_str()) && said.contains(&state.to_string()),
        "the refusal names {id} and {state}: {said}"
    );
    said
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
    settled(
        fresh.store.as_ref(),
        "progress",
        &json!({}),
        State::Succeeded,
    )
    .await;
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
    let id = timed_out(&client, fresh.store.as_ref(), "refund", &args).await;

    let said = refused(&client, "refund", &args, &id, State::Unknown).await;
    assert!(said.contains("Do not retry"), "{said}");
    let again = call(&client, "refund", args.clone(), PATIENT)
        .await
        .unwrap();
    assert_eq!(again.is_error, Some(true));

    // The late answer is kept as evidence; the server applied the refund once.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(rig.applied(), 1);
    let detail = fresh.store.detail(&Scope::Every, &id).await.unwrap();
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

    authorize(&rig, &id, "PAY-1");
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

/// A settled outcome may be written after its answer, with the gateway's next
/// write: an identical call made at once is still judged on that outcome (a
/// success answers from the record, a failure goes out again), and an outcome
/// with no write after it reaches the store by itself.
async fn a_repeat_at_once_is_judged_on_the_outcome_answered(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let rig = Rig::new(&fresh.url);
    let (client, _) = rig.connect().await;
    let store = fresh.store.as_ref();

    let args = json!({"order": "Q1", "amount": 8});
    let first = call(&client, "refund", args.clone(), PATIENT)
        .await
        .unwrap();
    assert_eq!(text(&first), "refunded");
    let again = call(&client, "refund", args.clone(), PATIENT)
        .await
        .unwrap();
    assert_ne!(again.is_error, Some(true), "{again:?}");
    assert!(
        text(&again).contains("already SUCCEEDED"),
        "{}",
        text(&again)
    );
    assert_eq!(rig.applied(), 1, "answered from the record, not sent");

    let rejected = json!({"order": "Q2"});
    for _ in 0..2 {
        let result = call(&client, "reject", rejected.clone(), PATIENT)
            .await
            .unwrap();
        assert_eq!(result.is_error, Some(true));
        assert!(!text(&result).contains("holdfast"), "{}", text(&result));
    }
    let last = json!({"order": "Q3", "amount": 2});
    call(&client, "refund", last.clone(), PATIENT)
        .await
        .unwrap();
    settled(store, "refund", &last, State::Succeeded).await;
    let failed = same(store, "reject", &rejected).await;
    assert_eq!(failed.len(), 2, "{failed:?}");
    assert!(
        failed.iter().all(|(_, s)| *s == State::Failed),
        "{failed:?}"
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_repeat_at_once_is_judged_on_the_outcome_answered_sqlite() {
    a_repeat_at_once_is_judged_on_the_outcome_answered(Kind::Sqlite).await;
}

#[tokio::test]
async fn a_repeat_at_once_is_judged_on_the_outcome_answered_postgres() {
    skip_without_postgres!();
    a_repeat_at_once_is_judged_on_the_outcome_answered(Kind::Postgres).await;
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
    let detail = store.detail(&Scope::Every, &id).await.unwrap();
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
    let id = timed_out(&a, fresh.store.as_ref(), "refund", &args).await;
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
    authorize(&rig, &id, "PAY-2");
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

/// Two gateways taking one authorization in the same millisecond (their
/// clocks at one instant, so every race is that close): their forwards are
/// two records, not one stored twice, and only one is the forward.
#[tokio::test]
async fn two_gateways_taking_an_authorization_in_one_millisecond_forward_once() {
    let fresh = stores::sqlite().await;
    let rig = Rig::new(&fresh.url);
    std::fs::write(rig.fail_once(), "").unwrap();
    rig.config("[gateway.approval]\nby = \"rev:ops-lead\"\npolicy = \"AGENT-REFUNDS-1\"\n");
    let (a, _) = rig.connect().await;
    let store = fresh.store.as_ref();
    let args = json!({"order": "E6", "amount": 31});
    assert!(call(&a, "refund", args.clone(), PATIENT).await.is_err());
    let id = settled(store, "refund", &args, State::Unknown).await;
    authorize(&rig, &id, "PAY-3");
    let instant = (chrono::Utc::now() + chrono::Duration::minutes(1))
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    let (c, d) = tokio::join!(rig.connect_at(&instant), rig.connect_at(&instant));
    let (one, two) = tokio::join!(
        call(&c, "refund", args.clone(), PATIENT),
        call(&d, "refund", args.clone(), PATIENT)
    );
    let answers = [one.unwrap(), two.unwrap()];
    assert_eq!(rig.applied(), 1, "one of the two reached the server");
    assert_eq!(
        answers.iter().filter(|r| r.is_error == Some(true)).count(),
        1,
        "{:?}",
        answers.iter().map(text).collect::<Vec<_>>()
    );
    for client in [a, c, d] {
        client.cancel().await.unwrap();
    }
}

/// `manual` autonomy holds a write for approval: with
/// `hold_writes_for_approval`, a write of a tool with no raised level is
/// recorded BLOCKED and never sent; repeats are refused, and only a reviewer's
/// revalidation on a fresh validation, then approval of that exact call, lets
/// the next identical call through, once.
async fn manual_autonomy_holds_a_write_for_approval(kind: Kind) {
    let fresh = stores::fresh(kind).await;
    let rig = Rig::new(&fresh.url);
    rig.config("policy = \"RP-AGENT-7\"\n[gateway]\nhold_writes_for_approval = true\n");
    let (client, _) = rig.connect().await;
    let store = fresh.store.as_ref();
    let args = json!({"order": "M1", "amount": 40, "note": "password: hunter2"});

    let held = call(&client, "refund", args.clone(), PATIENT)
        .await
        .unwrap();
    let said = text(&held);
    assert_eq!(held.is_error, Some(true), "{said}");
    let id = settled(store, "refund", &args, State::Blocked).await;
    assert!(
        said.contains("did NOT send")
            && said.contains("approval")
            && said.contains(id.as_str())
            && said.contains("Do not retry"),
        "{said}"
    );
    assert_eq!(rig.applied(), 0, "the held call never reached the server");

    let shown = holdfast(&rig, &["show", id.as_str(), "--json"]);
    let bundle: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    let why = &bundle["why_held"];
    assert_eq!(why["to"], "BLOCKED", "{why}");
    assert!(
        why["reason"]
            .as_str()
            .is_some_and(|r| r.starts_with("awaiting approval: autonomy manual")),
        "{why}"
    );
    let evidence = why["evidence"].to_string();
    let payload = holdfast::otlp::map::hash_arguments(&args);
    assert!(
        evidence.contains(&format!("payload:{payload}")),
        "{evidence}"
    );
    assert!(
        evidence.contains("arguments:") && evidence.contains("\\\"order\\\":\\\"M1\\\""),
        "{evidence}"
    );
    assert!(
        !evidence.contains("hunter2") && evidence.contains("redacted"),
        "the excerpt is redacted: {evidence}"
    );

    let repeat = call(&client, "refund", args.clone(), PATIENT)
        .await
        .unwrap();
    assert_eq!(repeat.is_error, Some(true));
    assert!(text(&repeat).contains(id.as_str()));

    // The approval comes after a fresh validation, never instead of it.
    let early = attempt(
        &rig,
        &[
            "review",
            id.as_str(),
            "approve",
            "--rationale",
            "looks fine to me",
        ],
    );
    assert_eq!(early.status.code(), Some(3), "refused");
    assert!(
        String::from_utf8_lossy(&early.stdout).contains("revalidate it first")
            || String::from_utf8_lossy(&early.stderr).contains("revalidate it first"),
        "{early:?}"
    );
    review(
        &rig,
        &id,
        &[
            "reconcile",
            "--source",
            "validator",
            "--found",
            "--match",
            "all",
            "--unknown",
            "effect_count",
            "--reference",
            "arguments read: order M1, 40",
        ],
    );
    review(&rig, &id, &["revalidate"]);
    let validated = call(&client, "refund", args.clone(), PATIENT)
        .await
        .unwrap();
    assert_eq!(validated.is_error, Some(true), "validated is not approved");
    assert!(
        text(&validated).contains("VALIDATED") && text(&validated).contains("approval"),
        "{}",
        text(&validated)
    );
    assert_eq!(rig.applied(), 0);

    review(&rig, &id, &["approve"]);
    let sent = call(&client, "refund", args.clone(), PATIENT)
        .await
        .unwrap();
    assert_eq!(text(&sent), "refunded");
    assert_eq!(
        rig.applied(),
        1,
        "the approved call reached the server once"
    );
    assert_eq!(
        settled(store, "refund", &args, State::Succeeded).await,
        id,
        "the forward is the held operation's"
    );

    let further = call(&client, "refund", args.clone(), PATIENT)
        .await
        .unwrap();
    assert!(text(&further).contains("already SUCCEEDED"));
    assert_eq!(
        rig.applied(),
        1,
        "no second forward without another approval"
    );

    // A different call of the same tool is a new hold.
    let other = json!({"order": "M2", "amount": 5});
    let next = call(&client, "refund", other.clone(), PATIENT)
        .await
        .unwrap();
    assert_eq!(next.is_error, Some(true));
    settled(store, "refund", &other, State::Blocked).await;
    assert_eq!(rig.applied(), 1);

    let verify = holdfast(&rig, &["audit", "verify", "--json"]);
    let verified: serde_json::Value = serde_json::from_slice(&verify.stdout).unwrap();
    assert_eq!(verified["ok"], true, "{verified}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn manual_autonomy_holds_a_write_for_approval_sqlite() {
    manual_autonomy_holds_a_write_for_approval(Kind::Sqlite).await;
}

#[tokio::test]
async fn manual_autonomy_holds_a_write_for_approval_postgres() {
    skip_without_postgres!();
    manual_autonomy_holds_a_write_for_approval(Kind::Postgres).await;
}

#[tokio::test]
async fn a_tool_raised_above_manual_passes_and_one_lowered_is_held_from_its_next_write() {
    use holdfast::core::ladder::Level;
    let fresh = stores::sqlite().await;
    let rig = Rig::new(&fresh.url);
    rig.config("[gateway]\nhold_writes_for_approval = true\n");
    let store = fresh.store.as_ref();
    put_at_level(store, "pay/refund", Level::Native).await;
    let (client, _) = rig.connect().await;

    let args = json!({"order": "N1", "amount": 3});
    let done = call(&client, "refund", args.clone(), PATIENT)
        .await
        .unwrap();
    assert_eq!(text(&done), "refunded");
    assert_eq!(rig.applied(), 1, "a native tool's write is forwarded");
    settled(store, "refund", &args, State::Succeeded).await;

    put_at_level(store, "pay/refund", Level::Manual).await;
    let later = json!({"order": "N2", "amount": 4});
    let held = call(&client, "refund", later.clone(), PATIENT)
        .await
        .unwrap();
    assert_eq!(held.is_error, Some(true), "{}", text(&held));
    settled(store, "refund", &later, State::Blocked).await;
    assert_eq!(rig.applied(), 1, "lowered to manual, the next write waits");
    client.cancel().await.unwrap();
}

/// A fresh SQLite store, a rig over it with `config`, and a client through
/// its gateway.
async fn over_sqlite(
    config: &str,
) -> (
    stores::Fresh,
    Rig,
    rmcp::service::RunningService<rmcp::service::RoleClient, Heard>,
) {
    let fresh = stores::sqlite().await;
    let rig = Rig::new(&fresh.url);
    rig.config(config);
    let (client, _) = rig.connect().await;
    (fresh, rig, client)
}

/// `holdfast show ID --json` on the rig's store.
fn shown(rig: &Rig, id: &holdfast::core::ids::OperationId) -> serde_json::Value {
    let out = support::gateway::holdfast(rig, &["show", id.as_str(), "--json"]);
    serde_json::from_slice(&out.stdout).expect("show --json is JSON")
}

#[tokio::test]
async fn refused_repeats_spend_no_attempt_so_the_retry_stays_possible() {
    let (fresh, rig, client) = over_sqlite(
        "[gateway.approval]\nby = \"rev:ops-lead\"\npolicy = \"AGENT-REFUNDS-1\"\n\
         [[gateway.tool]]\nname = \"pay/refund\"\nmethod = \"POST\"\nowner = \"payments\"\n\
         max_attempts = 3\nbudget_seconds = 3600\n",
    )
    .await;
    std::fs::write(rig.fail_once(), "").unwrap();
    let store = fresh.store.as_ref();
    let args = json!({"order": "G1", "amount": 15});
    assert!(
        call(&client, "refund", args.clone(), PATIENT)
            .await
            .is_err()
    );
    let id = settled(store, "refund", &args, State::Unknown).await;
    for _ in 0..2 {
        refused(&client, "refund", &args, &id, State::Unknown).await;
    }

    // One request reached the server; the two refused tries are counted apart.
    let bundle = shown(&rig, &id);
    assert_eq!(bundle["budget"]["attempts_used"], 1, "{bundle:#}");
    assert_eq!(bundle["budget"]["max_attempts"], 3, "{bundle:#}");
    assert_eq!(bundle["budget"]["refused_by_gateway"], 2, "{bundle:#}");
    assert!(bundle["budget"]["exhausted"].is_null(), "{bundle:#}");
    assert_eq!(
        store
            .detail(&Scope::Every, &id)
            .await
            .unwrap()
            .row
            .attempts_used,
        1
    );
    let human =
        String::from_utf8(support::gateway::holdfast(&rig, &["show", id.as_str()]).stdout).unwrap();
    assert!(
        human.contains("1 of 3 used, 2 tries refused by the gateway (not counted)"),
        "{human}"
    );

    authorize(&rig, &id, "PAY-7");
    let retried = call(&client, "refund", args.clone(), PATIENT)
        .await
        .unwrap();
    assert_eq!(text(&retried), "refunded");
    assert_eq!(rig.applied(), 1, "the authorized retry was forwarded once");
    assert_eq!(settled(store, "refund", &args, State::Succeeded).await, id);
    let bundle = shown(&rig, &id);
    assert_eq!(bundle["budget"]["attempts_used"], 2, "{bundle:#}");
    assert_eq!(bundle["budget"]["refused_by_gateway"], 2, "{bundle:#}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn an_identical_call_meeting_one_in_flight_is_refused_naming_it() {
    let (fresh, rig, client) = over_sqlite("").await;
    let store = fresh.store.as_ref();
    let args = json!({"order": "H2", "amount": 8, "hang_ms": 2000});
    let params = CallToolRequestParams::new("refund").with_arguments(arguments(args.clone()));
    let first = client
        .send_request_with_option(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            PeerRequestOptions::with_timeout(PATIENT),
        )
        .await
        .unwrap();
    let id = settled(store, "refund", &args, State::Sent).await;

    refused(&client, "refund", &args, &id, State::Sent).await;
    let ServerResult::CallToolResult(answer) = first.await_response().await.unwrap() else {
        panic!("a tool result");
    };
    assert_eq!(text(&answer), "refunded", "the call in flight is answered");
    assert_eq!(settled(store, "refund", &args, State::Succeeded).await, id);
    assert_eq!(rig.applied(), 1, "the server applied the refund once");
    let detail = store.detail(&Scope::Every, &id).await.unwrap();
    assert_eq!(
        detail
            .attempts
            .iter()
            .filter(|a| a.refused_by_gateway())
            .count(),
        1,
        "{:?}",
        detail.attempts
    );
    client.cancel().await.unwrap();
}

/// Reads through a gateway with `record_reads` as given: a read by contract,
/// a read refused with -32602, one failing with -32603, and the same read twice.
async fn reads_with_record_reads(record: bool) {
    let (fresh, _rig, client) = over_sqlite(&format!(
        "[gateway]\nrecord_reads = {record}\n\
         [[gateway.tool]]\nname = \"pay/lookup\"\nmethod = \"GET\"\nowner = \"payments\"\n\
         [[gateway.tool]]\nname = \"pay/explode\"\nmethod = \"GET\"\nowner = \"payments\"\n"
    ))
    .await;
    let store = fresh.store.as_ref();
    let found = json!({"order": "R1"});
    for _ in 0..2 {
        let result = call(&client, "lookup", found.clone(), PATIENT)
            .await
            .unwrap();
        assert_eq!(text(&result), "found", "a read is never refused");
    }
    let refused = json!({"code": -32602});
    assert!(
        call(&client, "explode", refused.clone(), PATIENT)
            .await
            .is_err()
    );
    let broken = json!({"code": -32603});
    assert!(
        call(&client, "explode", broken.clone(), PATIENT)
            .await
            .is_err()
    );

    if !record {
        for (tool, args) in [
            ("lookup", &found),
            ("explode", &refused),
            ("explode", &broken),
        ] {
            assert!(
                same(store, tool, args).await.is_empty(),
                "{tool} {args}: without record_reads a read leaves no record"
            );
        }
        client.cancel().await.unwrap();
        return;
    }
    let lookups = same(store, "lookup", &found).await;
    assert_eq!(lookups.len(), 2, "each read is its own operation");
    assert!(
        lookups.iter().all(|(_, s)| *s == State::Succeeded),
        "{lookups:?}"
    );
    let detail = store.detail(&Scope::Every, &lookups[0].0).await.unwrap();
    assert_eq!(detail.row.operation.tool, "pay/lookup");
    assert_eq!(detail.attempts.len(), 1, "{:?}", detail.attempts);
    assert_eq!(detail.attempts[0].phase, Phase::ResponseReceived);
    assert_eq!(
        detail.attempts[0].layer,
        Some(holdfast::core::model::Layer::Gateway)
    );
    for args in [&refused, &broken] {
        let ops = same(store, "explode", args).await;
        assert_eq!(ops.len(), 1, "{args}: {ops:?}");
        assert_eq!(ops[0].1, State::Failed, "{args}: a read is never held");
    }
    let held = store
        .detail(&Scope::Every, &same(store, "explode", &broken).await[0].0)
        .await
        .unwrap();
    assert_eq!(
        held.attempts[0].error_type.as_deref(),
        Some("jsonrpc_-32603"),
        "{:?}",
        held.attempts
    );
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn reads_are_recorded_never_held_when_configured() {
    reads_with_record_reads(true).await;
}

#[tokio::test]
async fn reads_leave_no_record_by_default() {
    reads_with_record_reads(false).await;
}

/// Sends `request` and waits for its answer, as it came.
async fn ask(
    client: &rmcp::service::RunningService<rmcp::service::RoleClient, Heard>,
    request: ClientRequest,
) -> Result<ServerResult, ServiceError> {
    client
        .send_request_with_option(request, PeerRequestOptions::with_timeout(PATIENT))
        .await?
        .await_response()
        .await
}

#[tokio::test]
async fn resources_prompts_and_a_server_request_pass_unchanged() {
    use rmcp::model::{
        GetPromptRequest, GetPromptRequestParams, ListPromptsRequest, ListResourcesRequest,
        ReadResourceRequest, ReadResourceRequestParams,
    };
    let (fresh, rig, client) = over_sqlite("[gateway]\ntrusted = [\"pay\"]\n").await;
    let direct = rig.direct().await;
    let requests = || {
        vec![
            ClientRequest::ListResourcesRequest(ListResourcesRequest::default()),
            ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
                ReadResourceRequestParams::new("fixture://orders/A1"),
            )),
            ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
                ReadResourceRequestParams::new("fixture://orders/Z9"),
            )),
            ClientRequest::ListPromptsRequest(ListPromptsRequest::default()),
            ClientRequest::GetPromptRequest(GetPromptRequest::new(
                GetPromptRequestParams::new("apology")
                    .with_arguments(arguments(json!({"order": "A1"}))),
            )),
            ClientRequest::GetPromptRequest(GetPromptRequest::new(GetPromptRequestParams::new(
                "apology",
            ))),
        ]
    };
    let mut answered = 0;
    for (through, straight) in requests().into_iter().zip(requests()) {
        let method = through.method().to_owned();
        let via = ask(&client, through).await;
        let direct_answer = ask(&direct, straight).await;
        match (via, direct_answer) {
            (Ok(via), Ok(direct_answer)) => {
                answered += 1;
                assert_eq!(
                    serde_json::to_value(&via).unwrap(),
                    serde_json::to_value(&direct_answer).unwrap(),
                    "{method} passes unchanged"
                );
            }
            (Err(ServiceError::McpError(via)), Err(ServiceError::McpError(direct_error))) => {
                assert_eq!(via.code, direct_error.code, "{method}: the error passes");
                assert_eq!(via.message, direct_error.message, "{method}");
            }
            other => panic!("{method}: {other:?}"),
        }
    }
    assert_eq!(answered, 4, "two lists, a read and a prompt answered");
    let read = ask(
        &client,
        ClientRequest::ReadResourceRequest(ReadResourceRequest::new(
            ReadResourceRequestParams::new("fixture://orders/A1"),
        )),
    )
    .await
    .unwrap();
    assert!(
        serde_json::to_string(&read).unwrap().contains("40.00 EUR"),
        "{read:?}"
    );

    // The server asks the agent for its roots while serving a call: the
    // request reaches the agent through the gateway and its answer goes back.
    let _ = client.list_all_tools().await.unwrap();
    let roots = call(&client, "roots", json!({}), PATIENT).await.unwrap();
    assert_ne!(roots.is_error, Some(true), "{}", text(&roots));
    assert_eq!(text(&roots), support::gateway::AGENT_ROOT);
    let straight = call(&direct, "roots", json!({}), PATIENT).await.unwrap();
    assert_eq!(text(&straight), text(&roots), "as without the gateway");
    assert!(
        same(fresh.store.as_ref(), "roots", &json!({}))
            .await
            .is_empty(),
        "a read of a trusted server is not held"
    );
    client.cancel().await.unwrap();
    direct.cancel().await.unwrap();
}

/// The first line of `text` holding `label`.
fn lines_of(text: &str, label: &str) -> String {
    text.lines()
        .find(|l| l.contains(label))
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test]
async fn secrets_and_escapes_in_arguments_are_stored_redacted_and_shown_neutralized() {
    let (fresh, rig, client) = over_sqlite(
        "[[gateway.tool]]\nname = \"pay/echo\"\nmethod = \"POST\"\nowner = \"payments\"\n\
         business_key = \"/order\"\n",
    )
    .await;
    let store = fresh.store.as_ref();
    let bearer = "tok9Xq2LmZ81vR4pW7sB";
    let password = "hunter2-Very-Secret";
    let userinfo = "s3cr3t-Pw-4410";
    let args = json!({
        "order": "S1\u{1b}[2J\u{1b}]8;;https://evil.example/\u{7}click\u{1b}]8;;\u{7}\u{9b}31m",
        "authorization": format!("Bearer {bearer}"),
        "password": password,
        "callback": format!("https://ops:{userinfo}@hooks.example.com/refund"),
    });
    let result = call(&client, "echo", args.clone(), PATIENT).await.unwrap();
    assert!(
        text(&result).contains(password),
        "the agent reads the server's answer as it came"
    );

    // Found by the hash of the exact arguments, secrets and escapes included.
    let id = settled(store, "echo", &args, State::Succeeded).await;
    let detail = store.detail(&Scope::Every, &id).await.unwrap();
    assert_eq!(
        detail.row.operation.payload_hash,
        holdfast::otlp::map::hash_arguments(&args)
    );
    let stored = serde_json::to_string(&detail).unwrap();
    for secret in [bearer, password, userinfo] {
        assert!(!stored.contains(secret), "{secret} stored: {stored}");
    }
    assert!(stored.contains("‹redacted:"), "{stored}");
    // The business key is evidence the caller gave: kept byte-exact.
    assert_eq!(
        detail.row.operation.business_key.as_deref(),
        args["order"].as_str()
    );

    for command in ["show", "timeline"] {
        let out = support::gateway::holdfast(&rig, &[command, id.as_str()]);
        let shown = String::from_utf8(out.stdout).unwrap();
        assert!(shown.contains(id.as_str()), "{shown}");
        if command == "show" {
            let key = lines_of(&shown, "business key");
            assert!(key.contains("S1") && key.contains("click"), "{key:?}");
            let tool = lines_of(&shown, "tool / action");
            assert!(tool.ends_with(" pay/echo / -"), "no action known: {tool:?}");
        }
        for secret in [bearer, password, userinfo] {
            assert!(!shown.contains(secret), "{command} shows {secret}: {shown}");
        }
        assert!(
            !shown
                .chars()
                .any(|c| c == '\u{1b}' || c == '\u{7}' || c == '\u{9b}'),
            "{command} passes a terminal escape: {shown:?}"
        );
    }
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_refused_repeat_does_not_stand_in_for_the_request_g2_judges() {
    let (fresh, rig, client) = over_sqlite(
        "[gateway.approval]\nby = \"rev:ops-lead\"\npolicy = \"AGENT-REFUNDS-1\"\n\
         [[gateway.tool]]\nname = \"pay/refund\"\nmethod = \"POST\"\nowner = \"payments\"\n\
         budget_seconds = 3600\n",
    )
    .await;
    let args = json!({"order": "G2", "amount": 3, "hang_ms": 1500});
    let id = timed_out(&client, fresh.store.as_ref(), "refund", &args).await;
    refused(&client, "refund", &args, &id, State::Unknown).await;

    // The last request that left timed out after it was sent: until an
    // observation says it was not applied, no retry, whatever tries came after.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .env_remove("HOLDFAST_DB")
        .env_remove("HOLDFAST_NOW")
        .env("HOLDFAST_DATA_DIR", rig.dir.path())
        .env("HOLDFAST_CONFIG", rig.dir.path().join("config.toml"))
        .args([
            "--database-url",
            &rig.url,
            "--as",
            "maya",
            "review",
            id.as_str(),
        ])
        .args(["authorize-retry", "--rationale", "the agent asked again"])
        .output()
        .unwrap();
    let said =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(said.contains("G2"), "{said}");
    client.cancel().await.unwrap();
}

#[tokio::test]
async fn a_business_key_holding_a_secret_still_finds_the_held_call() {
    let (fresh, rig, client) = over_sqlite(
        "[[gateway.tool]]\nname = \"pay/refund\"\nmethod = \"POST\"\nowner = \"payments\"\n\
         business_key = \"/callback\"\n",
    )
    .await;
    let callback = "https://ops:s3cr3t-Pw-4410@hooks.example.com/refund/K7";
    let first = json!({"order": "K7", "amount": 20, "hang_ms": 1500, "callback": callback});
    let id = timed_out(&client, fresh.store.as_ref(), "refund", &first).await;
    let stored = fresh
        .store
        .detail(&Scope::Every, &id)
        .await
        .unwrap()
        .row
        .operation;
    assert!(
        stored
            .business_key
            .as_deref()
            .is_some_and(|k| !k.contains("s3cr3t-Pw-4410")),
        "{:?}",
        stored.business_key
    );

    // Another payload, the same business intent: held by the key.
    let other = json!({"order": "K7", "amount": 21, "callback": callback});
    refused(&client, "refund", &other, &id, State::Unknown).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(
        rig.applied(),
        1,
        "the second refund never reached the server"
    );
    client.cancel().await.unwrap();
}

/// The gateway as a login of the application group on PostgreSQL (the
/// operations guide's grants, row-level security on): with only an ingest grant
/// on its tenant it records a write that succeeds and one that hangs past the
/// agent's timeout, in the login's own name, refuses the hung call's repeat, and
/// the owner's `audit verify` holds. Without the grant it refuses every write
/// rather than forward one it could not record (fail closed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_application_login_records_and_gates_in_its_own_name() {
    crate::skip_without_postgres!();
    let team = stores::ApplicationLogin::new("hf_gw").await;
    let (fresh, login, owner) = (&team.fresh, &team.login, &team.owner);
    let as_owner = Rig::new(&fresh.url);
    as_owner.config("[gateway]\ntenant = \"pinehaven\"\n");
    let grant = |who: &str, role: &str| {
        holdfast(
            &as_owner,
            &["grant", who, "--role", role, "--tenant", "pinehaven"],
        );
    };
    grant(owner, "owner");

    let rig = Rig::new(&team.url());
    rig.config("[gateway]\ntenant = \"pinehaven\"\n");
    let (client, _) = rig.connect().await;
    let first = json!({"order": "L0", "amount": 1});
    let refused_here = call(&client, "refund", first.clone(), PATIENT)
        .await
        .unwrap();
    assert_eq!(refused_here.is_error, Some(true), "{}", text(&refused_here));
    assert_eq!(rig.applied(), 0, "a call it could not record is not sent");
    client.cancel().await.unwrap();

    grant(&login.name, "ingest");
    let (client, _) = rig.connect().await;
    let store = fresh.store.as_ref();
    let ok = json!({"order": "L1", "amount": 5});
    let done = call(&client, "refund", ok.clone(), PATIENT).await.unwrap();
    assert_eq!(text(&done), "refunded");
    settled(store, "refund", &ok, State::Succeeded).await;

    let hung = json!({"order": "L2", "amount": 7, "hang_ms": 1500});
    let id = timed_out(&client, store, "refund", &hung).await;
    refused(&client, "refund", &hung, &id, State::Unknown).await;
    tokio::time::sleep(Duration::from_millis(2000)).await;
    assert_eq!(
        rig.applied(),
        2,
        "the hung refund applied once, its repeat never"
    );

    let rows = store.audit(1, 500).await.unwrap();
    let mine: Vec<_> = rows.iter().filter(|r| r.draft.operation == id).collect();
    assert!(!mine.is_empty());
    for row in mine {
        assert_eq!(row.draft.by, login.name, "{row:?}");
    }
    let verified = attempt(&as_owner, &["audit", "verify"]);
    assert!(
        verified.status.success(),
        "{}",
        String::from_utf8_lossy(&verified.stdout)
    );
    client.cancel().await.unwrap();
    fresh.close().await;
}
