//! Bulk triage in the console, over a real SQLite store: marking operations one by
//! one and by filter, the dry run split by bucket with each operation's decision,
//! the confirm, each operation's result, the audit rows written, and `insta`
//! snapshots of the dry run at 80x24 and 200x50.

use crate::support;

use crossterm::event::KeyCode;
use holdfast::console::bulk::{KINDS, Step};
use holdfast::console::review::Verdict;
use holdfast::core::ids::OperationId;
use holdfast::core::model::{Grant, Role, State};
use holdfast::core::rules::{ActionKind, Actor};
use holdfast::store::OperationFilter;
use holdfast::store::Scope;
use support::console::{DEMO, Harness, PACKET, demo_now, now, options};

fn step(h: &Harness) -> &Step {
    &h.app.bulk.as_ref().expect("the bulk dialog is open").step
}

async fn audit_rows(h: &Harness) -> usize {
    h.store().audit(0, u64::MAX / 2).await.unwrap().len()
}

async fn state_of(h: &Harness, id: &str) -> State {
    h.store()
        .detail(&Scope::Every, &OperationId::parse(id).unwrap())
        .await
        .unwrap()
        .row
        .operation
        .state
}

/// Marks `ids` with `space`, opens the dialog, picks `kind`, types the rationale
/// and asks for the dry run.
async fn dry_run(h: &mut Harness, ids: &[&str], kind: ActionKind) {
    for id in ids {
        h.select_id(id).await;
        h.key(KeyCode::Char(' ')).await;
    }
    h.key(KeyCode::Char('b')).await;
    assert!(matches!(step(h), Step::Pick), "{}", h.screen());
    let at = KINDS.iter().position(|k| *k == kind).unwrap();
    // The dialog opens on no action: the first ↓ lands on the first.
    for _ in 0..=at {
        h.key(KeyCode::Down).await;
    }
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(h), Step::Rationale(_)));
    h.keys("provider outage, hold these until the status page clears")
        .await;
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(h), Step::DryRun { .. }), "{}", h.screen());
}

#[tokio::test]
async fn mark_two_dry_run_confirm_and_each_result_is_reported() {
    let mut h = Harness::at(DEMO, demo_now(), 200, 50).await;
    let before = audit_rows(&h).await;
    assert_eq!(state_of(&h, "F09").await, State::Unknown);
    assert_eq!(state_of(&h, "F32").await, State::Blocked);

    h.select_id("F09").await;
    h.key(KeyCode::Char(' ')).await;
    h.select_id("F32").await;
    h.key(KeyCode::Char(' ')).await;
    assert_eq!(h.app.queue.marked.len(), 2);
    let screen = h.screen();
    assert!(screen.contains("2 marked"), "{screen}");
    assert!(screen.contains("✓F09"), "{screen}");
    assert!(screen.contains("✓F32"), "{screen}");
    // space moves down after marking, as in a mail reader; on a marked one it
    // unmarks.
    assert_ne!(h.selected().as_deref(), Some("F32"));
    h.select_id("F32").await;
    h.key(KeyCode::Char(' ')).await;
    assert_eq!(h.app.queue.marked.len(), 1);
    h.select_id("F32").await;
    h.key(KeyCode::Char(' ')).await;
    assert_eq!(h.app.queue.marked.len(), 2);

    dry_run(&mut h, &[], ActionKind::Block).await;
    let Step::DryRun { lines, .. } = step(&h) else {
        unreachable!()
    };
    assert_eq!(lines.len(), 2);
    let allowed = lines.iter().filter(|l| l.line.outcome.is_ok()).count();
    let refused = lines.iter().filter(|l| l.line.outcome.is_err()).count();
    assert!(allowed >= 1 && refused >= 1, "{lines:?}");
    let screen = h.screen();
    for title in [
        "retry eligible (",
        "needs reconciliation (",
        "needs compensation (",
        "blocked (",
    ] {
        assert!(screen.contains(title), "{title} missing:\n{screen}");
    }
    assert!(screen.contains("dry run, nothing written"), "{screen}");
    assert!(screen.contains("✓ allowed: UNKNOWN → BLOCKED"), "{screen}");
    assert!(screen.contains("✗ refused G"), "{screen}");
    assert_eq!(
        audit_rows(&h).await,
        before,
        "nothing written by the dry run"
    );
    // `?` lists the dialog's own keys from the keymap.
    h.key(KeyCode::Char('?')).await;
    let help = h.screen();
    assert!(help.contains("Keys · bulk triage"), "{help}");
    assert!(help.contains("pick the action / dry run / close"), "{help}");
    h.key(KeyCode::Char('?')).await;
    assert!(!h.app.help);
    assert!(matches!(step(&h), Step::DryRun { .. }));
    assert_eq!(state_of(&h, "F09").await, State::Unknown);

    h.key(KeyCode::Char('y')).await;
    let Step::Done(results) = step(&h) else {
        panic!("not done:\n{}", h.screen())
    };
    assert_eq!(results.len(), 2);
    let applied = results
        .iter()
        .filter(|(_, v)| matches!(v, Verdict::Applied(_)))
        .count();
    assert_eq!(applied, allowed);
    assert!(
        results
            .iter()
            .any(|(line, v)| line.id.as_str() == "F32" && matches!(v, Verdict::Refused { .. }))
    );
    assert_eq!(audit_rows(&h).await, before + applied);
    assert_eq!(state_of(&h, "F09").await, State::Blocked);
    let screen = h.screen();
    assert!(
        screen.contains("1 applied · 1 not applied, of 2"),
        "{screen}"
    );
    assert!(
        screen.contains("applied  UNKNOWN → BLOCKED, audit #"),
        "{screen}"
    );
    assert!(screen.contains("refused  G"), "{screen}");
    // The queue reloaded: F09 shows BLOCKED there; the refused one stays marked.
    assert_eq!(h.row_state("F09"), Some(State::Blocked));
    let marked: Vec<&str> = h.app.queue.marked.iter().map(|id| id.as_str()).collect();
    assert_eq!(marked, ["F32"]);
    h.key(KeyCode::Enter).await;
    assert!(h.app.bulk.is_none());
}

#[tokio::test]
async fn mark_all_takes_every_match_not_only_the_page_and_u_clears() {
    // 24 rows leave room for fewer operations than the queue holds.
    let mut h = Harness::at(DEMO, demo_now(), 80, 24).await;
    h.key(KeyCode::Char('t')).await;
    let page = h.app.queue.rows.len() as u64;
    let total = h.app.queue.total;
    assert!(total > page, "{total} fit on one page of {page}");
    h.key(KeyCode::Char('a')).await;
    assert_eq!(h.app.queue.marked.len() as u64, total);
    assert!(h.screen().contains(&format!("{total} marked")));
    h.key(KeyCode::Char('?')).await;
    let help = h.screen();
    for key in [
        "space",
        "mark all matching",
        "unmark all",
        "bulk triage of the marked",
    ] {
        assert!(help.contains(key), "{key} missing:\n{help}");
    }
    h.key(KeyCode::Char('?')).await;
    h.key(KeyCode::Char('u')).await;
    assert!(h.app.queue.marked.is_empty());
    // With a filter, only its matches are marked.
    h.key(KeyCode::Char('f')).await;
    h.keys("state:unknown").await;
    h.key(KeyCode::Enter).await;
    h.key(KeyCode::Char('a')).await;
    let marked: Vec<&str> = h.app.queue.marked.iter().map(|id| id.as_str()).collect();
    assert_eq!(marked.len() as u64, h.app.queue.total);
    assert!(marked.contains(&"F09"), "{marked:?}");
    for id in &h.app.queue.marked {
        assert_eq!(state_of(&h, id.as_str()).await, State::Unknown);
    }
}

#[tokio::test]
async fn mark_all_stays_within_the_granted_tenants() {
    let grant = Grant {
        identity: "rev:ana".into(),
        role: Role::Reviewer,
        tenant: "northwind".into(),
        granted_by: "own:lee".into(),
        granted_at: now(),
    };
    let mut options = options(true);
    options.actor = Actor::from_grants("rev:ana", Some("RP03".into()), &[grant]);
    let mut h = Harness::with(PACKET, options, 200, 50).await;
    h.key(KeyCode::Char('t')).await;
    h.key(KeyCode::Char('a')).await;
    let marked: Vec<OperationId> = h.app.queue.marked.iter().cloned().collect();
    assert_eq!(marked.len() as u64, h.app.queue.total);
    assert!(!marked.is_empty());
    let store = h.store();
    let stored = store.count(&OperationFilter::default()).await.unwrap();
    assert!(
        stored > marked.len() as u64,
        "other tenants hold operations"
    );
    for id in &marked {
        let detail = store.detail(&Scope::Every, id).await.unwrap();
        assert_eq!(detail.row.operation.tenant, "northwind", "{id}");
    }
}

#[tokio::test]
async fn an_action_with_an_input_asks_for_it_once_for_all() {
    let mut h = Harness::at(DEMO, demo_now(), 80, 24).await;
    for id in ["F09", "F27"] {
        h.select_id(id).await;
        h.key(KeyCode::Char(' ')).await;
    }
    h.key(KeyCode::Char('b')).await;
    let at = KINDS.iter().position(|k| *k == ActionKind::Assign).unwrap();
    // The dialog opens on no action: the first ↓ lands on the first.
    for _ in 0..=at {
        h.key(KeyCode::Down).await;
    }
    assert!(h.screen().contains("asks: new owner"), "{}", h.screen());
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(&h), Step::Input(_)));
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(&h), Step::Input(_)));
    assert!(
        h.screen().contains("the new owner is required"),
        "{}",
        h.screen()
    );
    h.keys("oncall-b").await;
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(&h), Step::Rationale(_)));
    h.keys("incident 4411 goes to the second shift").await;
    h.key(KeyCode::Enter).await;
    let Step::DryRun { lines, .. } = step(&h) else {
        panic!("no dry run:\n{}", h.screen())
    };
    assert!(lines.iter().all(|l| l.line.outcome.is_ok()), "{lines:?}");
    h.key(KeyCode::Char('y')).await;
    assert!(matches!(step(&h), Step::Done(_)), "{}", h.screen());
    for id in ["F09", "F27"] {
        let detail = h
            .store()
            .detail(&Scope::Every, &OperationId::parse(id).unwrap())
            .await
            .unwrap();
        assert_eq!(detail.row.operation.owner, "oncall-b", "{id}");
    }
}

#[tokio::test]
async fn a_short_rationale_is_refused_and_nothing_marked_opens_nothing() {
    let mut h = Harness::at(DEMO, demo_now(), 80, 24).await;
    h.key(KeyCode::Char('b')).await;
    assert!(h.app.bulk.is_none());
    assert!(h.screen().contains("nothing marked"), "{}", h.screen());
    h.select_id("F09").await;
    h.key(KeyCode::Char(' ')).await;
    h.key(KeyCode::Char('b')).await;
    h.key(KeyCode::Down).await;
    h.key(KeyCode::Enter).await;
    h.keys("too short").await;
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(&h), Step::Rationale(_)));
    assert!(h.screen().contains("at least 10"), "{}", h.screen());
    h.key(KeyCode::Esc).await;
    h.key(KeyCode::Esc).await;
    assert!(h.app.bulk.is_none());
}

#[tokio::test]
async fn snapshots_of_the_dry_run() {
    for (width, height) in [(80, 24), (200, 50)] {
        let mut h = Harness::at(DEMO, demo_now(), width, height).await;
        dry_run(&mut h, &["F09", "F23", "F32"], ActionKind::Block).await;
        insta::assert_snapshot!(format!("bulk_dry_run_{width}x{height}"), h.render());
    }
}
