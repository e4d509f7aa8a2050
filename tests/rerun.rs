//! Rerun after material change (DESIGN §9.4): a new contract version is
//! accepted and recorded; a material one, or a recorded change outside the
//! contract (`holdfast tools changed`), makes the tool's drill stale and drops
//! its autonomy to manual, the system's audited act; the raise waits for a
//! drill on the new version (`holdfast drill --changed`) and an owner.

use crate::support;

use std::process::Command;
use std::sync::Arc;

use holdfast::autonomy::{Snapshot, record_change, record_drill, record_lookup_check, set_level};
use holdfast::core::access::{GrantOp, GrantRequest};
use holdfast::core::audit::{AuditRow, ChainStatus};
use holdfast::core::autonomy::{DrillResult, LevelRequest, LookupCheck, lookup_fingerprint};
use holdfast::core::ladder::Level;
use holdfast::core::model::{FailureMode, Role};
use holdfast::core::refusal::{Refusal, Rule};
use holdfast::core::rules::{Actor, Rationale};
use holdfast::review::ReviewError;
use holdfast::store::{IngestMode, Session, Store};
use support::review::{local, now, records};
use support::stores::{self, Fresh, Kind};

/// T06 at version IC09 with a §9.1 lookup the drill's provider emulates.
const T06: &str = r#"{"type":"contract","tool":"T06","version":"IC09","action":"refund.issue","method":"POST","idempotency":{"supported":true,"scope":"account","retention_hours":24},"status_lookup":{"method":"GET","url":"http://127.0.0.1:9/v2/refunds/{business_key}/status?tenant={tenant}","timeout_ms":2000,"lag_seconds":0,"not_found_status":[404],"fields":{"target":"/data/target","payload_hash":"/data/hash","tenant":"/data/owner/tenant","version":"/data/rev","effect_count":"/meta/applied","provider_request_id":"/data/rid"}},"retryable":["connection_reset","dns_failure","http_503","http_429"],"compensation":"refund.reverse","owner":"payments","max_attempts":3,"budget_seconds":900,"path":"/v2/refunds","response":{"record_id":"/refund/id","target":"/refund/target","tenant":"/refund/owner/tenant","payload_hash":"/refund/hash","version":"/refund/rev","items":"/refund/lines"}}
"#;

/// T06's contract with `from` replaced by `to` (each exactly once).
fn t06_with(edits: &[(&str, &str)]) -> String {
    let mut text = T06.to_owned();
    for (from, to) in edits {
        assert_eq!(text.matches(from).count(), 1, "{from}");
        text = text.replace(from, to);
    }
    text
}

async fn with_t06(kind: Kind) -> Fresh {
    let fresh = stores::fresh(kind).await;
    ingest(&fresh, T06).await;
    fresh
}

/// Ingests `text`, strict; the lines refused, as `line: reason`.
async fn ingest(fresh: &Fresh, text: &str) -> Vec<String> {
    let report = fresh
        .store
        .ingest(records(text), IngestMode::Strict, "loader", now())
        .await
        .unwrap();
    report
        .rejected
        .iter()
        .map(|e| format!("{}: {}: {}", e.line, e.field, e.reason))
        .collect()
}

fn rationale() -> Rationale {
    Rationale::parse("the gates hold; the owner decides").unwrap()
}

fn as_session(store: &Arc<dyn Store>, actor: &Actor) -> Session {
    Session::new(Arc::clone(store), actor.clone())
}

async fn raise(store: &Arc<dyn Store>, actor: &Actor, level: Level) -> Result<bool, Refusal> {
    let request = LevelRequest {
        tool: "T06".into(),
        level,
    };
    match set_level(&as_session(store, actor), &request, &rationale(), now()).await {
        Ok(changed) => Ok(changed.is_some()),
        Err(ReviewError::Refused(r)) => Err(r),
        Err(other) => panic!("not a refusal: {other}"),
    }
}

async fn level(store: &Arc<dyn Store>) -> Level {
    store
        .autonomy_levels()
        .await
        .unwrap()
        .into_iter()
        .find(|l| l.tool == "T06")
        .map_or(Level::Manual, |l| l.level)
}

/// Records a check of T06's lookup that found a record known to exist (A1).
async fn checked(store: &Arc<dyn Store>, actor: &Actor) {
    let contract = store
        .contracts()
        .await
        .unwrap()
        .into_iter()
        .find(|c| c.tool == "T06")
        .unwrap();
    let check = LookupCheck {
        tool: "T06".into(),
        known: "R-1".into(),
        found: true,
        lookup: lookup_fingerprint(contract.status_lookup.spec().unwrap()),
        answer: "HTTP 200, found".into(),
        by: String::new(),
        at: now(),
    };
    record_lookup_check(&as_session(store, actor), check, now())
        .await
        .unwrap();
}

/// Records a full passing drill of T06 under `version`.
async fn drilled(store: &Arc<dyn Store>, actor: &Actor, version: &str) {
    let result = DrillResult {
        tool: "T06".into(),
        at: now(),
        cases: 16,
        passed: 16,
        modes: FailureMode::ALL.to_vec(),
        failed: Vec::new(),
        drill_store: "sqlite:/tmp/elsewhere.db".into(),
        by: String::new(),
        contract_version: Some(version.into()),
    };
    record_drill(&as_session(store, actor), result, now())
        .await
        .unwrap();
}

/// `holdfast tools changed T06 --what WHAT` as `actor`.
async fn changed(
    store: &Arc<dyn Store>,
    actor: &Actor,
    what: &str,
) -> Result<Vec<AuditRow>, ReviewError> {
    let why =
        Rationale::parse("the provider moved us to its v2 API; token sk_live_abcdefghijklmnop1234")
            .unwrap();
    record_change(&as_session(store, actor), "T06", what, &why, now()).await
}

async fn audit(store: &Arc<dyn Store>) -> Vec<AuditRow> {
    store.audit(1, 10_000).await.unwrap()
}

/// The `autonomy-set` rows, as `by role: evidence | rationale`.
async fn level_rows(store: &Arc<dyn Store>) -> Vec<String> {
    audit(store)
        .await
        .iter()
        .filter(|r| r.draft.action == "autonomy-set")
        .map(|r| {
            format!(
                "{} {}: {} | {}",
                r.draft.by,
                r.draft.role,
                r.draft.evidence.join(" "),
                r.draft.rationale.as_deref().unwrap_or_default()
            )
        })
        .collect()
}

async fn intact(store: &dyn Store) {
    let status = store.verify().await.unwrap();
    assert!(matches!(status, ChainStatus::Intact { .. }), "{status:?}");
}

/// Runs the `holdfast` binary on `fresh`'s store (single-user), with the
/// clock at the fixture's now; (exit code, stdout, stderr).
fn holdfast(fresh: &Fresh, args: &[&str]) -> (i32, String, String) {
    let home = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_holdfast"))
        .env_remove("HOLDFAST_DB")
        .env_remove("HOLDFAST_DATABASE_URL")
        .env_remove("HOLDFAST_NOW")
        .env_remove("HOLDFAST_AS")
        .env("HOLDFAST_DATA_DIR", home.path())
        .env("HOLDFAST_CONFIG", home.path().join("no-config.toml"))
        .env("NO_COLOR", "1")
        .args([
            "--database-url",
            &fresh.url,
            "--now",
            "2026-09-05T10:03:00Z",
        ])
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// A version bump that changes only the owner and the budget leaves the level
/// as it was; one that changes the retry guidance drops it, as the system,
/// naming the change; the raise then waits for a drill on the new version,
/// which `drill --changed` runs (and raises nothing); the same version with
/// other content is still refused.
async fn a_material_version_drops_autonomy_until_drill_changed_passes(kind: Kind) {
    let fresh = with_t06(kind).await;
    let store = &fresh.store;
    let maya = local();
    checked(store, &maya).await;
    let (code, out, err) = holdfast(&fresh, &["drill", "--tool", "T06"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("under contract version IC09"), "{out}");
    assert_eq!(raise(store, &maya, Level::Automation).await, Ok(true));

    // Not material: owner and budget.
    let quiet = t06_with(&[
        ("\"IC09\"", "\"IC10\""),
        ("\"owner\":\"payments\"", "\"owner\":\"refunds\""),
        ("\"budget_seconds\":900", "\"budget_seconds\":600"),
    ]);
    assert!(ingest(&fresh, &quiet).await.is_empty());
    assert_eq!(level(store).await, Level::Automation, "not material");
    let stored = store.contracts().await.unwrap();
    assert_eq!((stored.len(), stored[0].version.as_str()), (1, "IC10"));
    assert_eq!(
        stored[0].owner, "refunds",
        "the new version is the current one"
    );
    let snapshot = Snapshot::read(&as_session(store, &maya), now())
        .await
        .unwrap();
    let last = snapshot.last_drill("T06").expect("a drill");
    assert!(last.current(), "{last:?}");
    assert_eq!(last.version.as_deref(), Some("IC09"));

    // The same version with other content: refused, nothing changed.
    let conflicting = t06_with(&[
        ("\"IC09\"", "\"IC10\""),
        ("\"owner\":\"payments\"", "\"owner\":\"refunds\""),
        ("\"budget_seconds\":900", "\"budget_seconds\":600"),
        ("\"method\":\"POST\"", "\"method\":\"PUT\""),
    ]);
    let refused = ingest(&fresh, &conflicting).await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].contains("already stored at this version with different content"),
        "{refused:?}"
    );
    assert_eq!(store.contracts().await.unwrap()[0].method, "POST");

    // Material: the retry guidance.
    let loud = t06_with(&[
        ("\"IC09\"", "\"IC11\""),
        (
            "\"retryable\":[\"connection_reset\",\"dns_failure\",\"http_503\",\"http_429\"]",
            "\"retryable\":[\"connection_reset\",\"dns_failure\",\"http_503\",\"http_429\",\"http_502\"]",
        ),
    ]);
    assert!(ingest(&fresh, &loud).await.is_empty());
    assert_eq!(level(store).await, Level::Manual, "dropped");
    let rows = level_rows(store).await;
    let drop = rows.last().unwrap();
    assert!(
        drop.starts_with("loader system: tool:T06 from:automation level:manual | "),
        "{drop}"
    );
    assert!(drop.contains("IC10 → IC11 changed retryable"), "{drop}");
    let versions: Vec<String> = audit(store)
        .await
        .iter()
        .filter(|r| r.draft.action == "contract-version")
        .map(|r| format!("{} {}", r.draft.by, r.draft.evidence.join(" ")))
        .collect();
    assert_eq!(
        versions,
        [
            "loader tool:T06 from:IC09 version:IC10 material:",
            "loader tool:T06 from:IC10 version:IC11 material:retryable",
        ]
    );

    // The stale drill does not open A2, and the refusal names the version.
    let refused = raise(store, &maya, Level::Native).await.unwrap_err();
    assert_eq!(refused.rule, Rule::A2, "{refused:?}");
    assert!(
        refused.reason.contains("stale") && refused.reason.contains("contract version IC11"),
        "{}",
        refused.reason
    );

    // `drill --changed` reruns T06 (and says why), raising nothing.
    let (code, out, err) = holdfast(&fresh, &["drill", "--changed"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("tool T06: drill stale: contract version IC10 → IC11 changed retryable"),
        "{out}"
    );
    assert!(out.contains("under contract version IC11"), "{out}");
    assert_eq!(level(store).await, Level::Manual, "a drill raises nothing");
    assert_eq!(raise(store, &maya, Level::Native).await, Ok(true));
    let (code, out, _) = holdfast(&fresh, &["drill", "--changed"]);
    assert_eq!(code, 0);
    assert!(out.contains("no tool has stale drill results"), "{out}");
    intact(store.as_ref()).await;
    let (code, out, err) = holdfast(&fresh, &["audit", "verify"]);
    assert_eq!(code, 0, "{out}\n{err}");
}

/// A recorded change outside the contract is an owner's act (G6); it makes
/// the drill stale and drops the tool, as the system; a new drill under the
/// current version lets the owner raise it again.
async fn a_recorded_change_drops_autonomy_and_is_an_owners_act(kind: Kind) {
    let fresh = with_t06(kind).await;
    let store = &fresh.store;
    let maya = local();
    let session = as_session(store, &maya);
    for (who, role) in [("maya", Role::Owner), ("bo", Role::Approver)] {
        let request = GrantRequest {
            op: GrantOp::Grant,
            identity: who.into(),
            role,
            tenant: "pinehaven".into(),
        };
        holdfast::review::change_grant(&session, "maya", None, &request, None, now())
            .await
            .unwrap();
    }
    let grants = store.grants().await.unwrap();
    let as_ = |who: &str| Actor::from_grants(who, None, &grants);
    checked(store, &as_("maya")).await;
    drilled(store, &as_("maya"), "IC09").await;
    assert_eq!(
        raise(store, &as_("maya"), Level::Automation).await,
        Ok(true)
    );

    let refused = changed(store, &as_("bo"), "provider API v2").await;
    assert!(
        matches!(&refused, Err(ReviewError::Refused(r)) if r.rule == Rule::G6),
        "{refused:?}"
    );
    assert_eq!(level(store).await, Level::Automation, "nothing written");

    let rows = changed(store, &as_("maya"), "provider API v2")
        .await
        .unwrap();
    assert_eq!(rows.len(), 2, "the change and the drop");
    assert_eq!(rows[0].draft.action, "tool-changed");
    assert_eq!(
        (rows[0].draft.by.as_str(), rows[0].draft.role),
        ("maya", Role::Owner)
    );
    assert!(
        !rows[0]
            .draft
            .rationale
            .as_deref()
            .unwrap()
            .contains("abcdefghijklmnop1234"),
        "redacted: {:?}",
        rows[0].draft.rationale
    );
    assert_eq!(level(store).await, Level::Manual);
    let drop = level_rows(store).await.pop().unwrap();
    assert!(
        drop.starts_with("maya system: tool:T06 from:automation level:manual")
            && drop.contains("recorded change: provider API v2"),
        "{drop}"
    );
    let refused = raise(store, &as_("maya"), Level::Native).await.unwrap_err();
    assert_eq!(refused.rule, Rule::A2);
    assert!(
        refused.reason.contains("provider API v2"),
        "{}",
        refused.reason
    );
    // A second change while manual: recorded, nothing to drop.
    let rows = changed(store, &as_("maya"), "retry library 3.0")
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    drilled(store, &as_("maya"), "IC09").await;
    assert_eq!(raise(store, &as_("maya"), Level::Native).await, Ok(true));
    intact(store.as_ref()).await;
}

holdfast_on_both_backends!(
    a_material_version_drops_autonomy_until_drill_changed_passes,
    a_recorded_change_drops_autonomy_and_is_an_owners_act,
);

/// `holdfast tools changed` on the command line: a bad `--what` is refused
/// before anything is written; a good one is recorded.
#[test]
fn tools_changed_on_the_command_line() {
    let cli = support::cli::Cli::with("tool_t06.jsonl");
    let changed = |tool: &str, what: &str, why: &str, code: i32| {
        cli.run(
            "owner",
            &[
                "tools",
                "changed",
                tool,
                "--what",
                what,
                "--rationale",
                why,
                "--json",
            ],
        )
        .expect_code(code)
    };
    let bad = changed("T06", "x", "the provider moved", 2);
    assert!(bad.stderr.contains("--what"), "{}", bad.stderr);
    let unknown = changed("T99", "queue v2", "the queue moved on", 1);
    assert!(
        unknown.stderr.contains("no contract for tool T99"),
        "{}",
        unknown.stderr
    );
    let run = changed("T06", "model v5", "the model was upgraded", 0);
    let out = run.json();
    assert_eq!(out["what"], "model v5");
    assert!(out["dropped_to"].is_null(), "T06 was at manual: {out}");
    cli.run("auditor", &["audit", "verify"]).expect_code(0);
}

/// On PostgreSQL, a login of the application group holding only `ingest` on
/// its tenant writes the system's rows of the reserved ledgers in its own name:
/// a tool's material new version it ingests (the `contract-version` row and
/// the stale drop to manual) and the move of the tool's circuit a sender saw.
/// A level row it writes to anything but manual is still refused, and the
/// owner's `audit verify` holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_an_ingest_login_writes_the_system_s_ledger_rows_in_its_own_name() {
    crate::skip_without_postgres!();
    let team = stores::ApplicationLogin::new("hf_rerun").await;
    let admin = &team.fresh.store;
    ingest(&team.fresh, T06).await;
    support::review::put_at_level(admin.as_ref(), "T06", Level::Automation).await;
    let login = team.login.name.clone();
    for (who, role) in [("maya", Role::Owner), (login.as_str(), Role::Ingest)] {
        let change = holdfast::core::access::decide_grant(
            &admin.grants().await.unwrap(),
            "maya",
            None,
            &GrantRequest {
                op: GrantOp::Grant,
                identity: who.into(),
                role,
                tenant: "pinehaven".into(),
            },
            Some(&rationale()),
            now(),
        )
        .unwrap()
        .unwrap();
        admin.change_grant(change).await.unwrap();
    }
    let door: Arc<dyn Store> = Arc::new(
        holdfast::store::postgres::PgStore::connect(&team.url())
            .await
            .unwrap(),
    );
    let loud = t06_with(&[
        ("\"IC09\"", "\"IC11\""),
        ("\"max_attempts\":3", "\"max_attempts\":2"),
    ]);
    let report = door
        .ingest(records(&loud), IngestMode::Strict, &login, now())
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
    assert_eq!(level(admin).await, Level::Manual, "dropped");
    let rows = audit(admin).await;
    let ledger: Vec<&AuditRow> = rows
        .iter()
        .filter(|r| r.draft.operation.as_str().starts_with("holdfast:"))
        .filter(|r| r.draft.role == Role::System)
        .collect();
    assert_eq!(ledger.len(), 2, "{ledger:?}");
    assert!(ledger.iter().all(|r| r.draft.by == login), "{ledger:?}");

    support::review::open_circuit(door.as_ref(), "T06", &login, now()).await;
    assert!(admin.circuit("T06").await.unwrap().is_some());

    // Never a raise: a system level row to anything but manual is refused.
    let raise =
        holdfast::core::rerun::stale_drop("T06", Level::Agent, "x", &login, now()).expect("a drop");
    let mut forged = raise.clone();
    forged.from = Level::Manual;
    forged.to.level = Level::Agent;
    forged.audit.evidence = vec![
        "tool:T06".into(),
        "from:manual".into(),
        "level:agent".into(),
    ];
    let refused = door.set_autonomy(forged).await.unwrap_err().to_string();
    assert!(refused.contains("within the writer's grants"), "{refused}");
    assert_eq!(level(admin).await, Level::Manual);
    // Nor may it change a contract without its version's row.
    use sqlx::Connection;
    let mut raw = sqlx::PgConnection::connect(&team.url()).await.unwrap();
    let silent = sqlx::query("UPDATE contracts SET max_attempts = 9 WHERE tool = 'T06'")
        .execute(&mut raw)
        .await
        .unwrap_err()
        .to_string();
    assert!(silent.contains("no contract-version audit row"), "{silent}");
    raw.close().await.unwrap();
    assert_eq!(admin.contracts().await.unwrap()[0].max_attempts, 2);
    intact(admin.as_ref()).await;
}
