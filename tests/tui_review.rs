//! The review dialog and bulk triage in the console, over a real SQLite store:
//! key-driven flows from opening the dialog to the audited transition, refusals
//! with their rule, a short rationale, a G8 conflict from a second writer, and
//! `insta` snapshots of the dialog at 80x24 and 200x50.

use crate::support;

use crossterm::event::KeyCode;
use holdfast::console::review::Step;
use holdfast::core::ids::OperationId;
use holdfast::core::model::State;
use holdfast::core::rules::{Action, Actor, Rationale};
use holdfast::review;
use holdfast::store::Scope;
use holdfast::store::Session;
use support::console::{DEMO, Harness, demo_now};

/// Opens the dialog on `id` and highlights the allowed action labelled `label`.
async fn pick(h: &mut Harness, id: &str, label: &str) {
    h.select_id(id).await;
    h.key(KeyCode::Char('r')).await;
    let dialog = h.app.review.as_ref().expect("the dialog opens");
    let at = dialog
        .options
        .iter()
        .position(|o| o.label == label)
        .unwrap_or_else(|| panic!("{label} is not offered"));
    assert!(dialog.options[at].outcome.is_ok(), "{label} is refused");
    for _ in 0..at {
        h.key(KeyCode::Down).await;
    }
    assert_eq!(h.app.review.as_ref().unwrap().cursor, at);
}

fn step(h: &Harness) -> &Step {
    &h.app.review.as_ref().expect("the dialog is open").step
}

async fn state_of(h: &Harness, id: &str) -> (State, i64, usize) {
    let detail = h
        .store()
        .detail(&Scope::Every, &OperationId::parse(id).unwrap())
        .await
        .unwrap();
    (
        detail.row.operation.state,
        detail.row.version,
        detail.audit.len(),
    )
}

#[tokio::test]
async fn block_from_the_dialog_previews_confirms_and_audits() {
    let mut h = Harness::at(DEMO, demo_now(), 200, 50).await;
    let (before, _, audits) = state_of(&h, "F09").await;
    assert_eq!(before, State::Unknown);
    pick(&mut h, "F09", "block").await;
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(&h), Step::Form { .. }));
    h.keys("held until the provider answers the status query")
        .await;
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(&h), Step::Confirm { .. }), "{}", h.screen());
    let screen = h.screen();
    assert!(screen.contains("UNKNOWN → BLOCKED"), "{screen}");
    assert!(screen.contains("audit row"), "{screen}");
    assert!(screen.contains("rev:ana"), "{screen}");
    assert_eq!(
        state_of(&h, "F09").await.0,
        State::Unknown,
        "nothing written before the confirm"
    );
    // F09 is high risk: the confirm is its id typed, then Enter.
    h.keys("F09").await;
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(&h), Step::Done(_)), "{}", h.screen());
    let (after, _, now_audits) = state_of(&h, "F09").await;
    assert_eq!(after, State::Blocked);
    assert_eq!(now_audits, audits + 1);
    let screen = h.screen();
    assert!(screen.contains("applied"), "{screen}");
    // The queue and the detail followed: F09 is BLOCKED there too.
    assert_eq!(h.row_state("F09"), Some(State::Blocked));
    h.key(KeyCode::Esc).await;
    assert!(h.app.review.is_none());
}

#[tokio::test]
async fn the_dialog_title_shows_the_version_the_apply_left() {
    let mut h = Harness::at(DEMO, demo_now(), 200, 50).await;
    let (_, version, _) = state_of(&h, "F26").await;
    pick(&mut h, "F26", "comment").await;
    h.key(KeyCode::Enter).await;
    h.keys("the provider console shows the ticket twice").await;
    h.key(KeyCode::Enter).await;
    if matches!(step(&h), Step::Confirm { .. }) {
        h.key(KeyCode::Char('y')).await;
    }
    assert!(matches!(step(&h), Step::Done(_)), "{}", h.screen());
    let (_, now, _) = state_of(&h, "F26").await;
    assert_eq!(now, version + 1);
    let title = h
        .screen()
        .lines()
        .find(|l| l.contains(" Review F26 "))
        .unwrap_or_default()
        .to_owned();
    assert!(
        title.contains(&format!("version {version} → {now}")),
        "{title}"
    );
}

#[tokio::test]
async fn a_short_rationale_is_refused_with_its_message() {
    let mut h = Harness::at(DEMO, demo_now(), 80, 24).await;
    pick(&mut h, "F09", "comment").await;
    h.key(KeyCode::Enter).await;
    h.keys("too short").await;
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(&h), Step::Form { .. }));
    let error = h.review_error();
    assert!(error.contains("at least 10 characters"), "{error}");
    assert!(h.screen().contains("at least 10"), "{}", h.screen());
}

#[tokio::test]
async fn refused_actions_are_listed_with_their_rule_and_cannot_be_picked() {
    let mut h = Harness::at(DEMO, demo_now(), 200, 50).await;
    h.select_id("F09").await;
    h.key(KeyCode::Char('r')).await;
    let dialog = h.app.review.as_ref().unwrap();
    let refused: Vec<_> = dialog
        .options
        .iter()
        .filter_map(|o| o.outcome.as_ref().err().map(|r| (o.label.clone(), r.rule)))
        .collect();
    assert!(!refused.is_empty());
    let screen = h.screen();
    for (label, rule) in &refused {
        assert!(
            screen.contains(label.as_str()),
            "{label} missing:\n{screen}"
        );
        assert!(
            screen.contains(&format!("{rule}: ")),
            "{rule} missing:\n{screen}"
        );
    }
    // The highlight stays on the allowed ones.
    for _ in 0..40 {
        h.key(KeyCode::Down).await;
    }
    let dialog = h.app.review.as_ref().unwrap();
    assert!(dialog.options[dialog.cursor].outcome.is_ok());
}

#[tokio::test]
async fn a_second_writer_between_preview_and_confirm_is_a_g8_conflict() {
    let mut h = Harness::at(DEMO, demo_now(), 200, 50).await;
    pick(&mut h, "F09", "comment").await;
    h.key(KeyCode::Enter).await;
    h.keys("looked at the provider console, nothing yet").await;
    h.key(KeyCode::Enter).await;
    assert!(matches!(step(&h), Step::Confirm { .. }));
    let other = Actor::local("rev:bo", Some("RP03".into()));
    let id = OperationId::parse("F09").unwrap();
    review::apply(
        &Session::new(h.store(), other),
        &id,
        &Action::Comment,
        &Rationale::parse("second console, first to write").unwrap(),
        None,
        demo_now(),
    )
    .await
    .unwrap();
    let (_, version, audits) = state_of(&h, "F09").await;
    h.key(KeyCode::Enter).await;
    let screen = h.screen();
    assert!(screen.contains("G8"), "{screen}");
    assert!(screen.contains("rev:bo"), "{screen}");
    assert_eq!(
        state_of(&h, "F09").await,
        (State::Unknown, version, audits),
        "nothing applied twice"
    );
    // The view reloaded: the detail shows the new version.
    let shown = h.app.detail.current().map(|l| l.detail.row.version);
    assert_eq!(shown, Some(version));
}

#[tokio::test]
async fn snapshots_of_the_dialog() {
    for (w, hgt) in [(80u16, 24u16), (200, 50)] {
        let size = format!("{w}x{hgt}");
        let mut h = Harness::at(DEMO, demo_now(), w, hgt).await;
        h.select_id("F09").await;
        h.key(KeyCode::Char('r')).await;
        insta::assert_snapshot!(format!("review_pick_{size}"), h.render());
        pick_again(&mut h, "block").await;
        h.key(KeyCode::Enter).await;
        h.keys("held until the provider answers").await;
        insta::assert_snapshot!(format!("review_form_{size}"), h.render());
        h.key(KeyCode::Enter).await;
        insta::assert_snapshot!(format!("review_preview_{size}"), h.render());
    }
}

/// Highlights `label` in the dialog already open.
async fn pick_again(h: &mut Harness, label: &str) {
    while h
        .app
        .review
        .as_ref()
        .is_some_and(|d| d.options[d.cursor].label != label)
    {
        let before = h.app.review.as_ref().map(|d| d.cursor);
        h.key(KeyCode::Down).await;
        assert_ne!(
            before,
            h.app.review.as_ref().map(|d| d.cursor),
            "{label} not allowed"
        );
    }
}
