//! The console tells the truth and sets no trap for a tired hand: a distinct
//! confirm key, the status line naming what really happened and keeping the
//! keys that matter, help closing on `q`, and cut text marked as cut.

use crate::support;

use crossterm::event::KeyCode;
use holdfast::console::review::Step;
use holdfast::core::ids::OperationId;
use holdfast::core::model::State;
use holdfast::store::Scope;
use support::console::{DEMO, Harness, demo_now};

/// Opens the dialog on `id`, picks the allowed action labelled `label` and
/// previews it with `rationale`.
async fn preview(h: &mut Harness, id: &str, label: &str, rationale: &str) {
    form(h, id, label).await;
    h.keys(rationale).await;
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(h), Step::Confirm { .. }), "{}", h.screen());
}

fn step(h: &Harness) -> &Step {
    &h.app.review.as_ref().expect("the dialog is open").step
}

async fn state_of(h: &Harness, id: &str) -> State {
    let id = OperationId::parse(id).unwrap();
    detail(h, &id).await.row.operation.state
}

/// `id`'s detail as the store holds it.
async fn detail(h: &Harness, id: &OperationId) -> holdfast::core::detail::OperationDetail {
    h.store().detail(&Scope::Every, id).await.unwrap()
}

#[tokio::test]
async fn a_double_enter_does_not_change_state_and_y_does() {
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    assert_eq!(state_of(&h, "F23").await, State::Partial);
    preview(&mut h, "F23", "block", "held until the owner answers").await;
    assert!(h.screen().contains("y confirm and apply"), "{}", h.screen());
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(&h), Step::Confirm { .. }));
    assert_eq!(state_of(&h, "F23").await, State::Partial, "Enter applied");
    assert!(h.screen().contains("press y to apply"), "{}", h.screen());
    h.key(KeyCode::Char('y')).await;
    assert!(matches!(step(&h), Step::Done(_)), "{}", h.screen());
    assert_eq!(state_of(&h, "F23").await, State::Blocked);
}

#[tokio::test]
async fn a_high_risk_change_applies_only_once_its_id_is_typed() {
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    preview(&mut h, "F09", "block", "held until the provider answers").await;
    assert!(h.screen().contains("type the id"), "{}", h.screen());
    h.key(KeyCode::Char('y')).await;
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(&h), Step::Confirm { .. }));
    assert_eq!(state_of(&h, "F09").await, State::Unknown);
    assert!(h.screen().contains("type F09 exactly"), "{}", h.screen());
    h.key(KeyCode::Backspace).await;
    h.keys("F09").await;
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(&h), Step::Done(_)), "{}", h.screen());
    assert_eq!(state_of(&h, "F09").await, State::Blocked);
}

#[tokio::test]
async fn opening_a_proposal_says_proposal_opened_not_applied() {
    let fixture = include_str!("fixtures/review.jsonl");
    let now = holdfast::core::clock::parse_instant("2026-09-05T10:10:00Z").unwrap();
    let mut h = Harness::at(fixture, now, 160, 45).await;
    h.key(KeyCode::Char('2')).await;
    preview(
        &mut h,
        "U3",
        "authorize-retry",
        "the provider shows no request",
    )
    .await;
    h.keys("U3").await;
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(&h), Step::Done(_)), "{}", h.screen());
    let status = h.app.status.as_ref().unwrap().text.to_string();
    assert!(status.contains("proposal opened for U3"), "{status}");
    assert!(!status.contains("applied"), "{status}");
}

#[tokio::test]
async fn the_status_line_keeps_review_help_and_quit_at_80_columns() {
    let mut h = Harness::at(DEMO, demo_now(), 80, 24).await;
    let screen = h.screen();
    let status = screen.lines().last().unwrap();
    assert!(status.ends_with("r review · ? help · q quit"), "{status}");
    assert!(status.contains(" … "), "cut in the middle: {status}");
    h.key(KeyCode::Enter).await;
    let screen = h.screen();
    let status = screen.lines().last().unwrap();
    assert!(status.ends_with("r review · ? help · q quit"), "{status}");
}

#[tokio::test]
async fn q_in_help_closes_help_and_does_not_quit() {
    let mut h = Harness::at(DEMO, demo_now(), 80, 24).await;
    h.key(KeyCode::Char('?')).await;
    assert!(h.app.help);
    h.key(KeyCode::Char('q')).await;
    assert!(!h.app.help, "help closed");
    assert!(!h.quit, "the console is still open");
    h.key(KeyCode::Char('q')).await;
    assert!(h.quit, "q outside help quits");
}

#[tokio::test]
async fn text_cut_to_its_column_ends_in_an_ellipsis() {
    let mut h = Harness::at(DEMO, demo_now(), 80, 24).await;
    h.key(KeyCode::Char('2')).await;
    let screen = h.screen();
    let header = screen.lines().next().unwrap();
    assert!(header.trim_end().ends_with('…'), "{header}");
    let cells_cut = screen.lines().skip(3).filter(|l| l.contains('…')).count();
    assert!(cells_cut > 0, "{screen}");
    assert!(!screen.contains("validation_faile "), "{screen}");
}

#[tokio::test]
async fn g_and_shift_g_move_through_the_review_list() {
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    h.select_id("F09").await;
    h.key(KeyCode::Char('r')).await;
    let allowed = h.app.review.as_ref().unwrap().allowed();
    assert!(allowed > 1);
    h.key(KeyCode::Char('G')).await;
    assert_eq!(h.app.review.as_ref().unwrap().cursor, allowed - 1);
    h.key(KeyCode::Char('g')).await;
    assert_eq!(h.app.review.as_ref().unwrap().cursor, 0);
}

#[tokio::test]
async fn the_bulk_dialog_opens_on_no_action_and_tab_moves_between_its_inputs() {
    use holdfast::console::bulk::Step as BulkStep;
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    h.select_id("F09").await;
    h.key(KeyCode::Char(' ')).await;
    h.key(KeyCode::Char('b')).await;
    let bulk = h.app.bulk.as_ref().unwrap();
    assert_eq!(bulk.cursor, None);
    assert!(bulk.kind().is_none());
    h.key(KeyCode::Enter).await;
    let bulk = h.app.bulk.as_ref().unwrap();
    assert!(matches!(bulk.step, BulkStep::Pick), "Enter picks nothing");
    assert!(
        bulk.error
            .as_deref()
            .unwrap_or("")
            .contains("choose the action")
    );
    // Down to `assign`, which asks for an owner before the rationale.
    let at = holdfast::console::bulk::KINDS
        .iter()
        .position(|k| *k == holdfast::core::rules::ActionKind::Assign)
        .unwrap();
    for _ in 0..=at {
        h.key(KeyCode::Down).await;
    }
    h.key(KeyCode::Enter).await;
    assert!(matches!(
        h.app.bulk.as_ref().unwrap().step,
        BulkStep::Input(_)
    ));
    h.keys("oncall-b").await;
    h.key(KeyCode::Tab).await;
    assert!(matches!(
        h.app.bulk.as_ref().unwrap().step,
        BulkStep::Rationale(_)
    ));
    h.key(KeyCode::BackTab).await;
    assert!(matches!(
        h.app.bulk.as_ref().unwrap().step,
        BulkStep::Input(_)
    ));
}

#[tokio::test]
async fn after_accepting_f32_the_panes_and_r_follow_the_queue_selection() {
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    h.select_id("F32").await;
    h.key(KeyCode::Enter).await;
    h.key(KeyCode::Char('r')).await;
    let dialog = h.app.review.as_ref().expect("the dialog opens");
    let at = dialog
        .options
        .iter()
        .position(|o| o.label == "accept" && o.outcome.is_ok())
        .expect("accept is allowed on F32");
    for _ in 0..at {
        h.key(KeyCode::Down).await;
    }
    h.key(KeyCode::Enter).await;
    h.keys("REPAIR-7781").await;
    h.key(KeyCode::Tab).await;
    h.keys("repaired by hand, ticket REPAIR-7781").await;
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(&h), Step::Confirm { .. }), "{}", h.screen());
    h.keys("F32").await;
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(&h), Step::Done(_)), "{}", h.screen());
    h.key(KeyCode::Esc).await;
    assert_eq!(state_of(&h, "F32").await, State::Accepted);
    let selected = h.selected().expect("the queue selects another hold");
    assert_ne!(selected, "F32");
    assert_eq!(
        h.open(),
        Some(selected.clone()),
        "the panes show the selection"
    );
    h.key(KeyCode::Char('r')).await;
    let review = h.app.review.as_ref().expect("r opens a dialog");
    assert_eq!(
        review.id().as_str(),
        selected,
        "r reviews the selected hold"
    );
}

#[tokio::test]
async fn below_140_columns_a_tall_screen_stacks_the_detail_under_the_queue() {
    let mut h = Harness::at(DEMO, demo_now(), 139, 60).await;
    let selected = h.selected().unwrap();
    let screen = h.screen();
    assert!(
        screen.contains(&format!("Evidence · {selected}")),
        "{screen}"
    );
    assert!(screen.contains("Held queue"), "{screen}");
    let blank = screen.lines().filter(|l| l.trim().is_empty()).count();
    assert!(blank < 5, "{blank} blank rows:\n{screen}");
    h.key(KeyCode::Tab).await;
    let screen = h.screen();
    assert!(screen.contains("Held queue"), "the queue stays:\n{screen}");
    assert!(h.app.areas().evidence.is_some() && h.app.areas().queue.is_some());
    h.key(KeyCode::Char('j')).await;
    // An 80x24 screen still gives the body to one pane at a time.
    h.resize(80, 24).await;
    h.key(KeyCode::Esc).await;
    assert!(h.app.areas().evidence.is_none());
}

#[tokio::test]
async fn a_broken_audit_chain_shows_on_every_screen_and_refuses_review_until_acknowledged() {
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    assert!(!h.screen().contains("CHAIN BROKEN"));
    h.tamper_audit().await;
    h.key(KeyCode::Char('R')).await;
    for tab in ['1', '2', '3', '4', '1'] {
        h.key(KeyCode::Char(tab)).await;
        let screen = h.screen();
        let header = screen.lines().next().unwrap();
        assert!(
            header.contains("AUDIT CHAIN BROKEN at seq 3"),
            "{tab}: {header}"
        );
    }
    h.select_id("F09").await;
    h.key(KeyCode::Char('r')).await;
    assert!(
        h.app.review.is_none(),
        "no review while the break is unacknowledged"
    );
    assert!(
        h.screen().contains("refused: the audit chain is broken"),
        "{}",
        h.screen()
    );
    h.key(KeyCode::Char(' ')).await;
    h.key(KeyCode::Char('b')).await;
    assert!(h.app.bulk.is_none(), "no bulk triage either");
    // A key alone acknowledges nothing: it says how an owner does, audited.
    h.key(KeyCode::Char('A')).await;
    assert!(
        h.screen().contains("holdfast audit acknowledge 3 --reason"),
        "{}",
        h.screen()
    );
    assert!(
        !h.screen()
            .lines()
            .next()
            .unwrap()
            .contains("(acknowledged)")
    );
    // The verify recorded the break for every door: the store refuses a commit.
    let store = h.store();
    let comment = support::review::comment(store.as_ref(), "F09", "a look while broken").await;
    assert!(matches!(
        store.commit(comment).await,
        Err(holdfast::store::StoreError::ChainBroken(b)) if b.seq == 3
    ));
    // An owner acknowledges it (an audit row); the console follows the store.
    let reason =
        holdfast::core::rules::Rationale::parse("restored from last night's backup").unwrap();
    let draft = holdfast::core::chain::acknowledgement(
        "maya",
        holdfast::core::model::Role::Local,
        None,
        3,
        &reason,
        demo_now(),
    );
    let row = store.acknowledge_break(3, draft).await.unwrap();
    assert_eq!(row.draft.action, "acknowledge-break");
    h.key(KeyCode::Char('R')).await;
    assert!(
        h.screen()
            .lines()
            .next()
            .unwrap()
            .contains("(acknowledged)"),
        "{}",
        h.screen()
    );
    h.select_id("F09").await;
    h.key(KeyCode::Char('r')).await;
    assert!(
        h.app.review.is_some(),
        "acknowledged: review is offered again"
    );
}

/// Opens the dialog on `id` at the form of the allowed action `label`.
async fn form(h: &mut Harness, id: &str, label: &str) {
    h.select_id(id).await;
    h.key(KeyCode::Char('r')).await;
    let dialog = h.app.review.as_ref().expect("the dialog opens");
    let at = dialog
        .options
        .iter()
        .position(|o| o.label == label && o.outcome.is_ok())
        .unwrap_or_else(|| panic!("{label} is not allowed on {id}"));
    for _ in 0..at {
        h.key(KeyCode::Down).await;
    }
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(h), Step::Form { .. }), "{}", h.screen());
}

/// Moves the form's focus to the input of `kind` and returns its text.
async fn focus(h: &mut Harness, kind: holdfast::console::review::FieldKind) {
    for _ in 0..20 {
        if let Step::Form { fields, focus } = step(h)
            && fields[*focus].kind == kind
        {
            return;
        }
        h.key(KeyCode::Tab).await;
    }
    panic!("no {kind:?} input");
}

fn field_text(h: &Harness, kind: holdfast::console::review::FieldKind) -> String {
    let Step::Form { fields, .. } = step(h) else {
        panic!("not on the form")
    };
    fields.iter().find(|f| f.kind == kind).unwrap().input.text()
}

#[tokio::test]
async fn the_reconcile_source_is_picked_from_its_values_never_typed() {
    use holdfast::console::review::FieldKind;
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    form(&mut h, "F09", "reconcile").await;
    focus(&mut h, FieldKind::Source).await;
    assert_eq!(field_text(&h, FieldKind::Source), "provider_status");
    h.keys("downstrem").await;
    assert_eq!(field_text(&h, FieldKind::Source), "provider_status");
    h.key(KeyCode::Right).await;
    assert_eq!(field_text(&h, FieldKind::Source), "business_key");
    h.key(KeyCode::Left).await;
    h.key(KeyCode::Left).await;
    assert_eq!(field_text(&h, FieldKind::Source), "target_record");
}

#[tokio::test]
async fn the_reconcile_dialog_takes_a_raw_response_hash() {
    use holdfast::console::review::FieldKind;
    use holdfast::core::rules::Action;
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    form(&mut h, "F09", "reconcile").await;
    h.keys("n").await;
    focus(&mut h, FieldKind::RawHash).await;
    h.keys("sha256:nothex").await;
    focus(&mut h, FieldKind::Rationale).await;
    h.keys("the provider shows no such request").await;
    h.key(KeyCode::Enter).await;
    let error = h.review_error();
    assert!(error.contains("raw response hash"), "{error}");
    let hash = format!("sha256:{}", "ab".repeat(32));
    focus(&mut h, FieldKind::RawHash).await;
    for _ in 0.."sha256:nothex".len() {
        h.key(KeyCode::Backspace).await;
    }
    h.keys(&hash).await;
    h.key(KeyCode::Enter).await;
    let Step::Confirm { action, .. } = step(&h) else {
        panic!("no preview:\n{}", h.screen())
    };
    let Action::Reconcile(input) = action.as_ref() else {
        panic!("{action:?}")
    };
    assert_eq!(input.raw_hash.as_ref().map(ToString::to_string), Some(hash));
}

#[tokio::test]
async fn the_next_observation_takes_a_relative_time() {
    use holdfast::core::rules::Action;
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    form(&mut h, "F09", "schedule").await;
    h.keys("+30m").await;
    h.key(KeyCode::Tab).await;
    h.keys("provider asked us to wait half an hour").await;
    h.key(KeyCode::Enter).await;
    let Step::Confirm { action, .. } = step(&h) else {
        panic!("no preview:\n{}", h.screen())
    };
    let Action::Schedule { at } = action.as_ref() else {
        panic!("{action:?}")
    };
    assert_eq!(*at, demo_now() + chrono::TimeDelta::minutes(30));
}

#[tokio::test]
async fn search_and_filter_work_from_inside_a_hold() {
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    h.select_id("F09").await;
    h.key(KeyCode::Enter).await;
    h.key(KeyCode::Char('f')).await;
    assert!(h.app.prompt.is_some(), "f opens the filter inside a hold");
    h.keys("risk:low").await;
    h.key(KeyCode::Enter).await;
    assert!(h.app.prompt.is_none());
    assert!(h.app.queue.total > 0);
    assert!(!h.ids().contains(&"F09".to_owned()), "{:?}", h.ids());
    assert_eq!(
        h.open(),
        h.selected(),
        "the panes follow the narrowed queue"
    );
    h.key(KeyCode::Enter).await;
    h.key(KeyCode::Char('/')).await;
    assert!(h.app.prompt.is_some(), "/ opens the search inside a hold");
}

#[tokio::test]
async fn the_evidence_pane_says_why_a_hold_is_blocked_first() {
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    h.select_id("F32").await;
    h.key(KeyCode::Enter).await;
    let screen = h.screen();
    let why = screen.find("Why held").expect("a why-held section");
    let reason = screen
        .find("G10/G11: recipient and wording come from quarantined")
        .expect("the reason of the move into BLOCKED");
    let decision = screen.find("Decision").expect("the decision section");
    assert!(why < reason && reason < decision, "{screen}");
    // The identity that ingested made the move; the line's author is a claim.
    assert!(
        screen.contains("VALIDATED → BLOCKED by test-feed"),
        "{screen}"
    );
    assert!(screen.contains("(the source reports"), "{screen}");
    assert!(screen.contains("A047"), "{screen}");
}

/// Types `text` after `/` and closes the prompt with Enter.
async fn search(h: &mut Harness, text: &str) {
    h.key(KeyCode::Char('/')).await;
    h.keys(text).await;
    h.key(KeyCode::Enter).await;
}

#[tokio::test]
async fn search_finds_an_owner_shown_in_the_queue() {
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    search(&mut h, "billing").await;
    let mut ids = h.ids();
    ids.sort();
    assert_eq!(ids, ["F08", "F15", "F27"], "{}", h.screen());
    search(&mut h, "BLOCK").await;
    assert!(
        h.app
            .queue
            .rows
            .iter()
            .all(|r| r.operation.state == State::Blocked),
        "{:?}",
        h.ids()
    );
}

#[tokio::test]
async fn a_search_with_no_match_here_says_where_it_matches() {
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    search(&mut h, "knowledge").await;
    assert_eq!(h.app.queue.total, 0);
    assert_eq!(
        h.app.queue.empty_hint().as_deref(),
        Some(
            "No match for “knowledge” in the held queue; 1 match in state SUCCEEDED (1): press 2 for all operations."
        )
    );
    assert!(
        h.screen().contains("No match for “knowledge”"),
        "{}",
        h.screen()
    );
    h.key(KeyCode::Char('2')).await;
    assert_eq!(h.ids(), ["F31"], "the key it names finds it");

    h.key(KeyCode::Esc).await;
    assert!(h.app.queue.search.is_empty(), "Esc clears the search");
    search(&mut h, "nowhere-at-all").await;
    assert_eq!(
        h.app.queue.empty_hint().as_deref(),
        Some(
            "No operation you can see matches “nowhere-at-all” in any state. Esc clears the search."
        )
    );
}

#[tokio::test]
async fn a_found_reconcile_in_the_dialog_takes_each_field_or_a_named_unknown() {
    use holdfast::console::review::FieldKind;
    use holdfast::core::rules::{Action, FoundField};
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    form(&mut h, "F09", "reconcile").await;
    h.keys("y").await;
    focus(&mut h, FieldKind::Reference).await;
    h.keys("INC-7").await;
    focus(&mut h, FieldKind::Rationale).await;
    h.keys("the provider console shows the ticket").await;
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(&h), Step::Form { .. }), "{}", h.screen());
    let error = h.review_error();
    assert!(
        error.contains("target, payload_hash, owner, version, effect_count"),
        "{error}"
    );
    for (kind, text) in [
        (FieldKind::MatchTarget, "y"),
        (FieldKind::MatchPayload, "y"),
        (FieldKind::MatchOwner, "?"),
        (FieldKind::MatchVersion, "?"),
        (FieldKind::EffectCount, "?"),
    ] {
        focus(&mut h, kind).await;
        h.keys(text).await;
    }
    h.key(KeyCode::Enter).await;
    let Step::Confirm { action, .. } = step(&h) else {
        panic!("no preview:\n{}", h.screen())
    };
    let Action::Reconcile(input) = action.as_ref() else {
        panic!("{action:?}")
    };
    assert_eq!(
        input.unknown,
        vec![
            FoundField::Owner,
            FoundField::Version,
            FoundField::EffectCount
        ]
    );
    let screen = h.screen();
    assert!(
        screen.contains("records owner, version, effect_count as unknown"),
        "{screen}"
    );
}

/// Records a reconcile on `id` (not found, the default source) and confirms it.
async fn reconcile(h: &mut Harness, id: &str) {
    use holdfast::console::review::FieldKind;
    form(h, id, "reconcile").await;
    h.keys("n").await;
    focus(h, FieldKind::Rationale).await;
    h.keys("the provider shows no such request").await;
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(h), Step::Confirm { .. }), "{}", h.screen());
    h.key(KeyCode::Char('y')).await;
    assert!(matches!(step(h), Step::Done(_)), "{}", h.screen());
}

async fn next_observation(h: &Harness, id: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    let id = OperationId::parse(id).unwrap();
    detail(h, &id).await.row.operation.next_observation_at
}

#[tokio::test]
async fn after_a_reconcile_the_next_observation_is_offered_and_set_through_review() {
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    let before = next_observation(&h, "F09").await;
    assert!(before.is_some_and(|t| t < demo_now()), "F09 starts overdue");
    reconcile(&mut h, "F09").await;
    let screen = h.screen();
    assert!(screen.contains("next observation in"), "{screen}");
    assert!(screen.contains("+30m"), "{screen}");
    assert!(screen.contains("Esc skip"), "{screen}");
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(&h), Step::Done(_)), "{}", h.screen());
    assert!(h.app.review.as_ref().unwrap().follow_up.is_none());
    assert_eq!(
        next_observation(&h, "F09").await,
        Some(demo_now() + chrono::TimeDelta::minutes(30))
    );
    let id = OperationId::parse("F09").unwrap();
    let audit = detail(&h, &id).await.audit;
    let last = audit.last().unwrap();
    assert_eq!(last.draft.action, "schedule");
    assert!(
        last.draft
            .rationale
            .as_deref()
            .is_some_and(|r| r.contains("after the reconcile")),
        "{last:?}"
    );
    h.key(KeyCode::Esc).await;
    assert!(h.app.review.is_none());
    assert!(!h.screen().contains("OVERDUE"), "{}", h.screen());
}

#[tokio::test]
async fn esc_skips_the_next_observation_after_a_reconcile() {
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    let before = next_observation(&h, "F09").await;
    reconcile(&mut h, "F09").await;
    assert!(h.app.review.as_ref().unwrap().follow_up.is_some());
    h.key(KeyCode::Esc).await;
    assert!(h.app.review.is_none(), "Esc closes the dialog");
    assert_eq!(next_observation(&h, "F09").await, before);
}

#[tokio::test]
async fn at_80x24_help_shows_review_and_scrolls_to_every_key() {
    use holdfast::console::keymap::{self, Context};
    let mut h = Harness::at(DEMO, demo_now(), 80, 24).await;
    h.key(KeyCode::Char('?')).await;
    let first = h.screen();
    assert!(first.contains(" r       review: the actions"), "{first}");
    assert!(
        first.contains("more line"),
        "says that more is below:\n{first}"
    );
    let mut seen = first.clone();
    for _ in 0..40 {
        h.key(KeyCode::Char('j')).await;
        seen.push_str(&h.screen());
    }
    assert!(h.app.help, "j scrolls, it does not close help");
    for (key, what) in keymap::help(Context::Queue) {
        let first_words: String = what
            .split_whitespace()
            .take(2)
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            seen.contains(&format!(" {key} ")) && seen.contains(&first_words),
            "{key} ({what}) never shows:\n{seen}"
        );
    }
    assert!(h.screen().contains("above"), "{}", h.screen());
    h.key(KeyCode::Char('q')).await;
    assert!(!h.app.help);
    assert!(!h.quit);
}

#[tokio::test]
async fn an_intact_chain_at_start_is_not_announced_as_verifying_again() {
    use holdfast::console::app::{App, Effect, Message};
    use holdfast::core::audit::ChainStatus;
    use holdfast::store::{Link, Live};
    let mut app = App::new(
        support::console::options_at(true, demo_now()),
        ratatui::layout::Rect::new(0, 0, 160, 45),
    );
    let verify = app
        .init()
        .into_iter()
        .find_map(|e| match e {
            Effect::Verify { generation } => Some(generation),
            _ => None,
        })
        .expect("the chain is verified at start");
    // The watcher's first report can come before the verify answers.
    app.update(Message::Poll {
        live: Ok(Live {
            head: 3,
            link: Link::Connected,
        }),
        now: demo_now(),
    });
    app.update(Message::Verified {
        generation: verify,
        result: Ok(ChainStatus::Intact {
            rows: 3,
            head: None,
        }),
        acknowledged: false,
    });
    let said = app.status.as_ref().map(|s| s.text.to_string());
    assert!(
        !said.as_deref().unwrap_or("").contains("verifies again"),
        "{said:?}"
    );
}
