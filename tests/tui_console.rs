//! The console over a real SQLite store: every screen as an `insta` snapshot at
//! 80x24, 160x48 and 200x50 with the clock frozen, and the flows a reviewer goes
//! through driven by key events (open and close, follow a link and come back,
//! search, filter, sort, tabs, resize, the mouse wheel, live changes).

use crate::support;

use crossterm::event::KeyCode;
use holdfast::console::layout::Pane;
use ratatui::style::Color;
use support::console::{DEMO, Harness, PACKET, demo_now, ingest, now};

const SIZES: [(u16, u16); 3] = [(80, 24), (160, 48), (200, 50)];

/// Opens `id` and focuses `pane`.
async fn open(h: &mut Harness, id: &str, pane: Pane) {
    h.select_id(id).await;
    h.key(KeyCode::Enter).await;
    while h.app.focus != pane {
        h.key(KeyCode::Tab).await;
    }
}

#[tokio::test]
async fn snapshots_of_every_screen_of_the_demo_at_every_size() {
    for (w, hgt) in SIZES {
        let size = format!("{w}x{hgt}");
        let mut h = Harness::at(DEMO, demo_now(), w, hgt).await;
        insta::assert_snapshot!(format!("queue_{size}"), h.render());

        open(&mut h, "F09", Pane::Evidence).await;
        insta::assert_snapshot!(format!("evidence_{size}"), h.render());

        h.key(KeyCode::Esc).await;
        open(&mut h, "F15", Pane::Timeline).await;
        insta::assert_snapshot!(format!("timeline_{size}"), h.render());

        h.key(KeyCode::Esc).await;
        h.key(KeyCode::Esc).await;
        open(&mut h, "F23", Pane::Items).await;
        insta::assert_snapshot!(format!("items_{size}"), h.render());

        h.key(KeyCode::Char('?')).await;
        insta::assert_snapshot!(format!("help_detail_{size}"), h.render());
        h.key(KeyCode::Esc).await;
        while h.app.focus != Pane::Queue {
            h.key(KeyCode::Esc).await;
        }
        h.key(KeyCode::Char('?')).await;
        insta::assert_snapshot!(format!("help_queue_{size}"), h.render());
        h.key(KeyCode::Char('?')).await;

        h.key(KeyCode::Char('f')).await;
        h.keys("state:blocked risk:low,medium").await;
        h.key(KeyCode::Enter).await;
        insta::assert_snapshot!(format!("filter_{size}"), h.render());

        h.key(KeyCode::Esc).await;
        h.key(KeyCode::Char('t')).await;
        insta::assert_snapshot!(format!("all_{size}"), h.render());

        let empty = Harness::at("", demo_now(), w, hgt).await;
        insta::assert_snapshot!(format!("empty_{size}"), empty.render());
    }
}

#[tokio::test]
async fn at_120_columns_the_queue_shows_owner_and_tenant_and_no_empty_flags_column() {
    let h = Harness::at(DEMO, demo_now(), 120, 40).await;
    let screen = h.screen();
    let header = screen
        .lines()
        .find(|l| l.contains("STATE") && l.contains("RISK"))
        .unwrap_or_else(|| panic!("a header:\n{screen}"));
    for column in [
        "TENANT",
        "TOOL/ACTION",
        "MODE",
        "OWNER",
        "HELD",
        "NEXT OBS",
        "LEFT",
    ] {
        assert!(header.contains(column), "{column} missing: {header}");
    }
    // No hold of the demo has a flag: the column would only hold blanks.
    assert!(!header.contains("FLAGS"), "{header}");
    let f08 = screen.lines().find(|l| l.contains("F08")).unwrap();
    assert!(f08.contains("validation_failed "), "a mode whole: {f08}");
    assert!(f08.contains("billing"), "its owner: {f08}");
}

#[tokio::test]
async fn the_queue_is_held_operations_by_urgency_with_counts_and_overdue() {
    let h = Harness::new(PACKET, 200, 50).await;
    assert_eq!(h.ids(), ["F21", "F09", "F30", "F41", "F12", "F10", "F44"]);
    let screen = h.screen();
    assert!(screen.contains("UNKNOWN 2 PARTIAL 1 BLOCKED 3"), "{screen}");
    assert!(screen.contains("overdue 2"), "{screen}");
    assert!(screen.contains("by dependency 1"), "{screen}");
    assert!(
        screen.contains("!2m00s"),
        "F09's next observation is overdue"
    );
    assert!(
        screen.contains("APPROVED*"),
        "F10 is held by its dependency"
    );
    assert!(!screen.contains("F51"), "terminal operations are not held");
}

#[tokio::test]
async fn enter_opens_the_detail_and_esc_closes_it() {
    let mut h = Harness::new(PACKET, 80, 24).await;
    h.select_id("F09").await;
    h.key(KeyCode::Enter).await;
    assert_eq!(h.app.focus, Pane::Evidence);
    let screen = h.screen();
    assert!(screen.contains("F09 UNKNOWN"), "{screen}");
    assert!(
        !screen.contains("│STATE "),
        "the queue is stacked away at 80 columns"
    );
    h.key(KeyCode::Tab).await;
    assert_eq!(h.app.focus, Pane::Timeline);
    assert!(h.screen().contains("1 logical operation F09"));
    h.key(KeyCode::Esc).await;
    assert_eq!(h.app.focus, Pane::Queue);
    assert!(h.screen().contains("│STATE "));
    assert_eq!(h.selected().as_deref(), Some("F09"), "the selection stays");
    h.key(KeyCode::Char('q')).await;
    assert!(h.quit);
}

#[tokio::test]
async fn a_child_link_is_followed_and_esc_comes_back_where_it_was() {
    let mut h = Harness::new(PACKET, 80, 24).await;
    open(&mut h, "F21", Pane::Evidence).await;
    h.key(KeyCode::Char('j')).await;
    h.key(KeyCode::Char('j')).await;
    let scroll = h.app.detail.top().unwrap().scroll.evidence;
    assert_eq!(scroll, 2);
    h.key(KeyCode::Char('n')).await;
    h.key(KeyCode::Enter).await;
    assert_eq!(h.open().as_deref(), Some("F23"));
    let screen = h.screen();
    assert!(screen.contains("F23 APPROVED"), "{screen}");
    assert!(screen.contains("F21 › F23"), "the trail shows the way back");

    h.key(KeyCode::Enter).await;
    assert_eq!(
        h.open().as_deref(),
        Some("F23"),
        "its parent is already open further back"
    );

    h.key(KeyCode::Esc).await;
    assert_eq!(h.open().as_deref(), Some("F21"));
    let frame = h.app.detail.top().unwrap();
    assert_eq!(frame.scroll.evidence, 2, "scroll position restored");
    assert_eq!(frame.link, 1, "selected link restored");
    assert_eq!(h.app.focus, Pane::Evidence);
    h.key(KeyCode::Esc).await;
    assert_eq!(h.app.focus, Pane::Queue);
    assert_eq!(h.selected().as_deref(), Some("F21"));
}

#[tokio::test]
async fn search_narrows_as_you_type_and_esc_restores() {
    let mut h = Harness::new(PACKET, 80, 24).await;
    h.key(KeyCode::Char('/')).await;
    h.keys("req_9").await;
    assert_eq!(h.app.queue.total, 1, "provider request ids are searched");
    assert_eq!(h.selected().as_deref(), Some("F12"));
    for _ in "req_9".chars() {
        h.key(KeyCode::Backspace).await;
    }
    h.keys("case-44").await;
    assert_eq!(h.app.queue.total, 1, "business keys are searched");
    assert_eq!(h.selected().as_deref(), Some("F09"));
    h.key(KeyCode::Enter).await;
    assert!(h.app.prompt.is_none());
    assert!(
        h.screen().contains("search \"case-44\""),
        "the search stays visible"
    );

    h.key(KeyCode::Char('/')).await;
    h.keys("zzz").await;
    assert_eq!(h.app.queue.total, 0);
    assert!(
        h.screen().contains("No operation you can see matches"),
        "{}",
        h.screen()
    );
    h.key(KeyCode::Esc).await;
    assert_eq!(
        h.app.queue.search, "case-44",
        "cancel restores the search before"
    );
    assert_eq!(h.app.queue.total, 1);

    h.key(KeyCode::Esc).await;
    assert_eq!(
        h.app.queue.total, 7,
        "Esc on the queue clears search and filter"
    );
}

#[tokio::test]
async fn filter_applies_on_enter_is_always_visible_and_reports_bad_terms() {
    let mut h = Harness::new(PACKET, 80, 24).await;
    h.key(KeyCode::Char('f')).await;
    h.keys("risk:extreme").await;
    h.key(KeyCode::Enter).await;
    assert!(h.app.prompt.is_some(), "a bad filter keeps the prompt open");
    assert!(
        h.screen().contains("critical"),
        "the error lists what is accepted"
    );
    for _ in 0.."risk:extreme".len() {
        h.key(KeyCode::Backspace).await;
    }
    h.keys("tenant:northwind").await;
    h.key(KeyCode::Enter).await;
    assert!(h.app.prompt.is_none());
    assert_eq!(h.ids(), ["F41", "F12"]);
    assert!(h.screen().contains("filter tenant:northwind"));
    h.key(KeyCode::Char('t')).await;
    assert_eq!(
        h.app.queue.total, 3,
        "the filter holds on the all-operations tab"
    );
    assert!(h.screen().contains("filter tenant:northwind"));
}

#[tokio::test]
async fn sort_cycles_through_the_orders() {
    let mut h = Harness::new(PACKET, 80, 24).await;
    h.key(KeyCode::Char('s')).await;
    assert!(h.screen().contains("sort age"));
    assert_eq!(h.ids()[0], "F10", "the oldest in its state first");
    h.key(KeyCode::Char('s')).await;
    assert_eq!(h.ids(), ["F09", "F10", "F12", "F21", "F30", "F41", "F44"]);
    h.key(KeyCode::Char('s')).await;
    h.key(KeyCode::Char('s')).await;
    assert!(h.screen().contains("sort urgency"));
}

#[tokio::test]
async fn only_the_visible_page_is_fetched_and_paging_follows_the_selection() {
    let mut h = Harness::new(PACKET, 80, 10).await;
    let page = usize::from(h.app.page_rows());
    assert!(page < 7, "the test needs a page shorter than the queue");
    assert_eq!(h.app.queue.rows.len(), page);
    h.key(KeyCode::Char('G')).await;
    assert_eq!(h.selected().as_deref(), Some("F44"));
    assert_eq!(h.app.queue.rows.len(), page);
    assert_eq!(h.app.queue.rows_offset as usize, 7 - page);
    h.key(KeyCode::Char('g')).await;
    assert_eq!(h.selected().as_deref(), Some("F21"));
    assert_eq!(h.app.queue.rows_offset, 0);
}

/// Paging far by keyset: moving down row by row and page by page to the end
/// of the listing, then back up, and jumping to either end, the page on screen
/// is always the listing's rows at the page's position and the selection the
/// row at its position, in every order.
#[tokio::test]
async fn paging_far_by_keyset_keeps_the_page_where_the_listing_has_it() {
    let mut h = Harness::at(DEMO, demo_now(), 80, 10).await;
    let page = usize::from(h.app.page_rows());
    for _ in 0..4 {
        let filter = h.app.queue.matching();
        let sort = h.app.queue.sort;
        let (rows, total) = h
            .store()
            .list(&filter, sort, holdfast::store::Page::first(10_000))
            .await
            .unwrap();
        let whole: Vec<String> = rows.iter().map(|r| r.operation.id.to_string()).collect();
        assert!(whole.len() > 2 * page, "{sort:?}: several pages");
        let check = |h: &Harness, what: &str| {
            let at = h.app.queue.rows_offset as usize;
            assert_eq!(h.app.queue.total, total, "{sort:?} {what}");
            assert_eq!(
                h.ids(),
                whole[at..(at + page).min(whole.len())],
                "{sort:?} {what}"
            );
            let selected = h.app.queue.selected as usize;
            assert_eq!(
                h.selected().as_deref(),
                Some(whole[selected].as_str()),
                "{sort:?} {what}"
            );
        };
        for _ in 0..whole.len() {
            h.key(KeyCode::Char('j')).await;
            check(&h, "down");
        }
        assert_eq!(h.selected().as_deref(), whole.last().map(String::as_str));
        for _ in 0..whole.len() {
            h.key(KeyCode::Char('k')).await;
            check(&h, "up");
        }
        for _ in 0..whole.len() / page + 1 {
            h.key(KeyCode::PageDown).await;
            check(&h, "page down");
        }
        for _ in 0..whole.len() / page + 1 {
            h.key(KeyCode::PageUp).await;
            check(&h, "page up");
        }
        h.key(KeyCode::Char('G')).await;
        check(&h, "bottom");
        h.key(KeyCode::Char('g')).await;
        check(&h, "top");
        h.key(KeyCode::Char('s')).await;
    }
}

#[tokio::test]
async fn the_wheel_scrolls_the_pane_under_the_pointer() {
    let mut h = Harness::new(PACKET, 200, 50).await;
    let areas = h.app.areas();
    let evidence = areas.evidence.unwrap();
    h.wheel(true, evidence.x + 2, evidence.y + 2).await;
    assert_eq!(h.app.detail.top().unwrap().scroll.evidence, 3);
    let queue = areas.queue.unwrap();
    h.wheel(true, queue.x + 2, queue.y + 2).await;
    assert_eq!(h.selected().as_deref(), Some("F09"));
    h.wheel(false, queue.x + 2, queue.y + 2).await;
    assert_eq!(h.selected().as_deref(), Some("F21"));
    assert_eq!(h.open().as_deref(), Some("F21"), "the detail follows");

    h.key(KeyCode::Enter).await;
    h.key(KeyCode::Enter).await;
    assert_eq!(h.open().as_deref(), Some("F22"), "a child followed");
    h.wheel(true, queue.x + 2, queue.y + 2).await;
    assert_eq!(
        h.app.focus,
        Pane::Queue,
        "the wheel over the queue browses it"
    );
    assert_eq!(h.open().as_deref(), Some("F09"));
}

#[tokio::test]
async fn resizing_to_any_size_never_panics() {
    let mut h = Harness::new(PACKET, 200, 50).await;
    open(&mut h, "F21", Pane::Items).await;
    for (w, hgt) in [
        (0, 0),
        (1, 1),
        (2, 3),
        (10, 4),
        (80, 2),
        (3, 80),
        (139, 24),
        (140, 24),
        (80, 24),
        (300, 100),
    ] {
        h.resize(w, hgt).await;
        let _ = h.render();
        for pane in 0..5 {
            h.key(KeyCode::Char('G')).await;
            h.key(KeyCode::Char('j')).await;
            h.key(if pane % 2 == 0 {
                KeyCode::Tab
            } else {
                KeyCode::BackTab
            })
            .await;
            let _ = h.render();
        }
        h.key(KeyCode::Char('?')).await;
        let _ = h.render();
        h.key(KeyCode::Char('?')).await;
    }
}

#[tokio::test]
async fn a_live_change_keeps_the_selection_and_flags_the_operation_being_read() {
    let mut h = Harness::new(PACKET, 200, 50).await;
    h.select_id("F12").await;
    h.key(KeyCode::Enter).await;
    h.key(KeyCode::Char('j')).await;
    let before = h.app.detail.current().unwrap().detail.clone();

    let store = h.store();
    ingest(
        store.as_ref(),
        concat!(
            r#"{"type":"operation","id":"F60","tenant":"pinehaven","actor":"svc:relay-desk","tool":"T03","action":"ticket.create","target":"ticket-queue:9","payload_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000060","risk":"critical","owner":"integrations","state":"UNKNOWN","failure_mode":"timeout_unknown","created_at":"2026-09-05T10:03:00Z"}"#,
            "\n",
            r#"{"type":"observation","id":"O20","operation":"F12","observed_at":"2026-09-05T10:03:50Z","source":"provider_status","found":true,"matches":{"target":true,"payload_hash":true,"owner":true,"version":true},"effect_count":1,"note":"plan change applied"}"#,
            "\n"
        ),
    )
    .await;
    h.poll().await;

    assert_eq!(h.app.queue.total, 8, "the new hold is listed");
    assert!(
        h.app
            .queue
            .rows
            .iter()
            .any(|r| r.operation.id.as_str() == "F60")
    );
    assert_eq!(
        h.selected().as_deref(),
        Some("F12"),
        "the selection follows F12"
    );
    let frame = h.app.detail.top().unwrap();
    assert_eq!(frame.loaded.as_ref().unwrap().detail, before, "not swapped");
    assert!(frame.changed.is_some(), "the change is held back");
    assert_eq!(frame.scroll.evidence, 1, "scroll kept");
    let screen = h.screen();
    assert!(screen.contains("changed in the store"), "{screen}");

    h.key(KeyCode::Char('R')).await;
    let frame = h.app.detail.top().unwrap();
    assert!(frame.changed.is_none());
    assert_eq!(
        frame.loaded.as_ref().unwrap().detail.observations.len(),
        2,
        "R shows the new version"
    );
    assert!(!h.screen().contains("changed in the store"));
}

#[tokio::test]
async fn an_operation_leaving_the_list_moves_the_selection_with_a_note() {
    let mut h = Harness::new(PACKET, 80, 24).await;
    h.select_id("F44").await;
    let store = h.store();
    ingest(
        store.as_ref(),
        r#"{"type":"transition","operation":"F44","from":"BLOCKED","to":"FAILED","by":"rev:ana","role":"reviewer","at":"2026-09-05T10:03:30Z","reason":"rejected before sending: nothing applied"}"#,
    )
    .await;
    h.poll().await;
    assert_eq!(h.app.queue.total, 6);
    assert_eq!(h.selected().as_deref(), Some("F10"));
    assert!(h.screen().contains("F44 is no longer on this page"));
}

#[tokio::test]
async fn no_color_draws_without_any_colour() {
    for color in [true, false] {
        let fresh = support::stores::sqlite().await;
        ingest(fresh.store.as_ref(), PACKET).await;
        let mut app = holdfast::console::app::App::new(
            support::console::options(color),
            ratatui::layout::Rect::new(0, 0, 200, 50),
        );
        let mut effects = app.init();
        let session = holdfast::store::Session::new(fresh.store.clone(), app.actor.clone());
        while let Some(effect) = effects.pop() {
            if let Some(message) = holdfast::console::runner::perform(&session, &effect).await {
                effects.extend(app.update(message));
            }
        }
        let backend = support::console::render(&app);
        let coloured = backend
            .buffer()
            .content
            .iter()
            .filter(|c| c.fg != Color::Reset || c.bg != Color::Reset)
            .count();
        assert_eq!(
            coloured == 0,
            !color,
            "colour={color}: {coloured} coloured cells"
        );
    }
}

#[tokio::test]
async fn times_are_relative_to_the_frozen_now() {
    let h = Harness::new(PACKET, 200, 50).await;
    assert_eq!(h.app.now, now());
    assert!(h.screen().contains("frozen 2026-09-05T10:04:00Z"));
}

#[tokio::test]
async fn a_timeline_spanning_decades_draws_without_hanging() {
    let packet = format!(
        "{}\n{}\n{}\n",
        PACKET.lines().next().unwrap(),
        r#"{"type":"operation","id":"F70","tenant":"pinehaven","actor":"svc:relay-desk","tool":"T03","action":"ticket.create","target":"ticket-queue:1","payload_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000070","risk":"low","owner":"integrations","state":"UNKNOWN","deadline":"2090-01-01T00:00:00Z","next_observation_at":"1999-01-01T00:00:00Z","created_at":"2000-01-01T00:00:00Z"}"#,
        r#"{"type":"attempt","id":"A099","operation":"F70","seq":1,"kind":"request","started_at":"2026-09-05T10:00:00Z","phase":"request_sent","outcome":"timeout","retry_after":"2060-01-01T00:00:00Z"}"#,
    );
    let mut h = Harness::new(&packet, 80, 24).await;
    open(&mut h, "F70", Pane::Timeline).await;
    for width in [80, 160, 13, 12, 200] {
        h.resize(width, 40).await;
        let screen = h.screen();
        if width >= 80 {
            assert!(screen.contains("#1 req"), "{screen}");
        }
    }
}

#[tokio::test]
async fn an_unreachable_store_is_said_and_its_return_too() {
    let mut h = Harness::new(PACKET, 80, 24).await;
    h.send(holdfast::console::app::Message::Poll {
        live: Err("the store is busy (another process holds it); try again".into()),
        now: now(),
    })
    .await;
    assert!(
        h.screen()
            .contains("cannot reach the store: the store is busy")
    );
    assert_eq!(h.app.queue.total, 7, "what was shown stays");
    h.poll().await;
    assert!(h.screen().contains("the store answers again"));
}

#[tokio::test]
async fn a_search_runs_once_typing_pauses_not_once_per_key() {
    use crossterm::event::{KeyEvent, KeyModifiers};
    use holdfast::console::app::{Effect, Message};
    let mut h = Harness::new(PACKET, 80, 24).await;
    h.key(KeyCode::Char('/')).await;
    let mut pauses = Vec::new();
    for c in "F1".chars() {
        let effects = h.app.update(Message::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::NONE,
        )));
        match effects.as_slice() {
            [Effect::Debounce { generation, .. }] => pauses.push(*generation),
            other => panic!("a key asked for {other:?}"),
        }
    }
    let stale = h.app.update(Message::Debounced {
        generation: pauses[0],
    });
    assert!(stale.is_empty(), "a pause overtaken by typing runs nothing");
    let fresh = h.app.update(Message::Debounced {
        generation: pauses[1],
    });
    assert!(matches!(fresh.as_slice(), [Effect::List { .. }]));
    h.settle(fresh).await;
    assert_eq!(h.ids(), ["F12", "F10"], "search F1 matches F12 and F10");

    let typed = h.app.update(Message::Key(KeyEvent::new(
        KeyCode::Char('0'),
        KeyModifiers::NONE,
    )));
    assert!(matches!(typed.as_slice(), [Effect::Debounce { .. }]));
    let effects = h.app.update(Message::Key(KeyEvent::new(
        KeyCode::Enter,
        KeyModifiers::NONE,
    )));
    assert!(
        matches!(effects.as_slice(), [Effect::List { .. }]),
        "Enter runs a search still waiting for its pause"
    );
}

#[tokio::test]
async fn a_reviewer_sees_only_the_tenants_granted() {
    use holdfast::core::model::{Grant, Role};
    use holdfast::core::rules::Actor;
    let grant = Grant {
        identity: "rev:ana".into(),
        role: Role::Reviewer,
        tenant: "northwind".into(),
        granted_by: "owner:lee".into(),
        granted_at: now(),
    };
    let mut options = support::console::options(true);
    options.actor = Actor::from_grants("rev:ana", None, &[grant]);
    let mut h = Harness::with(PACKET, options, 200, 50).await;
    assert_eq!(h.ids(), ["F41", "F12"]);
    let screen = h.screen();
    assert!(
        screen.contains("rev:ana — reviewer on northwind"),
        "{screen}"
    );
    assert!(
        !screen.contains("pinehaven"),
        "no other tenant reaches the screen"
    );
    h.key(KeyCode::Char('t')).await;
    assert_eq!(h.app.queue.total, 3, "the all-operations tab is scoped too");
}

#[tokio::test]
async fn keys_typed_ahead_of_a_load_land_where_they_were_meant() {
    use crossterm::event::{KeyEvent, KeyModifiers};
    use holdfast::console::app::Message;
    let mut h = Harness::new(PACKET, 80, 24).await;
    let press = |code| Message::Key(KeyEvent::new(code, KeyModifiers::NONE));
    let mut pending = Vec::new();
    for code in [
        KeyCode::Char('j'),
        KeyCode::Enter,
        KeyCode::Tab,
        KeyCode::Tab,
    ] {
        pending.extend(h.app.update(press(code)));
    }
    assert_eq!(
        h.app.focus,
        Pane::Items,
        "Tab does not wrap to the queue while F09 loads"
    );
    h.settle(pending).await;
    assert_eq!(h.open().as_deref(), Some("F09"));
    assert_eq!(
        h.app.focus,
        Pane::Evidence,
        "F09 has no items: back to its evidence"
    );

    h.key(KeyCode::Esc).await;
    let mut pending = Vec::new();
    for code in [KeyCode::Char('k'), KeyCode::Char('j'), KeyCode::Char('k')] {
        pending.extend(h.app.update(press(code)));
    }
    for code in [KeyCode::Enter, KeyCode::Tab, KeyCode::Tab] {
        pending.extend(h.app.update(press(code)));
    }
    h.settle(pending).await;
    assert_eq!(h.open().as_deref(), Some("F21"));
    assert_eq!(
        h.app.focus,
        Pane::Items,
        "a stale answer for F09 arriving first does not move the focus off F21's items"
    );
}

#[tokio::test]
async fn a_claimed_identity_is_marked_in_the_header() {
    for claimed in [false, true] {
        let mut options = support::console::options(false);
        options.claimed = claimed;
        let app =
            holdfast::console::app::App::new(options, ratatui::layout::Rect::new(0, 0, 200, 50));
        let screen = support::console::text(support::console::render(&app).buffer());
        assert_eq!(
            screen.contains("rev:ana (--as, unchecked)"),
            claimed,
            "claimed={claimed}:\n{screen}"
        );
    }
}

#[tokio::test]
async fn reopening_search_selects_the_old_text_so_typing_replaces_it() {
    let mut h = Harness::new(PACKET, 80, 24).await;
    h.key(KeyCode::Char('/')).await;
    h.keys("case-44").await;
    h.key(KeyCode::Enter).await;
    h.key(KeyCode::Char('/')).await;
    h.keys("req_9").await;
    assert_eq!(
        h.app.queue.search, "req_9",
        "typing replaced the old search"
    );
    assert_eq!(h.selected().as_deref(), Some("F12"));
    h.key(KeyCode::Enter).await;
    // An arrow keeps the text and moves into it.
    h.key(KeyCode::Char('/')).await;
    h.key(KeyCode::End).await;
    h.keys("x").await;
    assert_eq!(h.app.queue.search, "req_9x");
}

#[tokio::test]
async fn colon_opens_a_command_line_for_tabs_by_name_help_and_quit() {
    use holdfast::console::app::Page;
    let mut h = Harness::at(DEMO, demo_now(), 120, 40).await;
    h.key(KeyCode::Char(':')).await;
    h.keys("audit").await;
    h.key(KeyCode::Enter).await;
    assert_eq!(h.app.page, Page::Audit);
    assert!(h.app.prompt.is_none());

    // Tab completes a unique start.
    h.key(KeyCode::Char(':')).await;
    h.keys("me").await;
    h.key(KeyCode::Tab).await;
    h.key(KeyCode::Enter).await;
    assert_eq!(h.app.page, Page::Metrics);

    h.key(KeyCode::Char(':')).await;
    h.keys("all").await;
    h.key(KeyCode::Enter).await;
    assert_eq!(h.app.page, Page::Queue);
    assert!(h.screen().contains("All operations"), "{}", h.screen());

    // An unknown command says so on the error line and the prompt stays open.
    h.key(KeyCode::Char(':')).await;
    h.keys("helld").await;
    h.key(KeyCode::Enter).await;
    assert!(h.app.prompt.is_some(), "the prompt stays open");
    let screen = h.screen();
    assert!(
        screen.contains("unknown command :helld. did you mean :held?"),
        "{screen}"
    );
    h.key(KeyCode::Esc).await;
    h.key(KeyCode::Char(':')).await;
    h.keys("held").await;
    h.key(KeyCode::Enter).await;
    assert!(h.screen().contains("Held queue"), "{}", h.screen());

    h.key(KeyCode::Char(':')).await;
    h.keys("q").await;
    h.key(KeyCode::Enter).await;
    assert!(h.quit);
}

/// An open circuit is named in the header on every screen, read from the store
/// with the counts; an owner's close clears it at the next change.
#[tokio::test]
async fn an_open_circuit_is_named_in_the_header_until_it_closes() {
    let mut h = Harness::new(PACKET, 160, 45).await;
    assert!(!h.screen().contains("circuit"), "{}", h.screen());
    support::review::open_circuit(h.store().as_ref(), "T03", "svc:gateway", now()).await;
    h.poll().await;
    assert!(h.screen().contains("⚠ circuit T03 open"), "{}", h.screen());
    h.keys("3").await;
    assert!(h.screen().contains("⚠ circuit T03 open"), "{}", h.screen());
    let owner =
        holdfast::store::Session::new(h.store(), holdfast::core::rules::Actor::local("maya", None));
    let rationale = holdfast::core::rules::Rationale::parse("provider recovered").unwrap();
    holdfast::circuit::close(&owner, "T03", &rationale, now())
        .await
        .unwrap()
        .expect("closed");
    h.poll().await;
    h.keys("1").await;
    assert!(!h.screen().contains("⚠ circuit"), "{}", h.screen());
}

/// The queue's OWNER column and `owner:` filter follow the route at the
/// console's clock: inside their windows F09 and F23 stay with their owners,
/// past them the incident owner's filter lists exactly the ambiguous and
/// partial holds, and F01 (auth_denied) stays with security throughout.
#[tokio::test]
async fn the_owner_column_and_filter_name_the_owner_the_hold_is_routed_to() {
    let packet = crate::owner_routing::packet();
    let row = |screen: &str, op: &str| {
        screen
            .lines()
            .find(|l| l.contains(&format!(" {op} ")))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("{op} listed:\n{screen}"))
    };
    let early = holdfast::core::clock::parse_instant("2026-09-05T10:10:00Z").unwrap();
    let h = Harness::at(&packet, early, 160, 45).await;
    let screen = h.screen();
    assert!(row(&screen, "F01").contains("team:security"), "{screen}");
    assert!(!row(&screen, "F09").contains("team:incident"), "{screen}");

    let late = holdfast::core::clock::parse_instant("2026-09-05T11:31:00Z").unwrap();
    let mut h = Harness::at(&packet, late, 160, 45).await;
    h.key(KeyCode::Char('f')).await;
    h.keys("owner:team:incident").await;
    h.key(KeyCode::Enter).await;
    let screen = h.screen();
    assert!(screen.contains("3 match"), "{screen}");
    for op in ["F09", "F27", "F23"] {
        assert!(row(&screen, op).contains("team:incident"), "{screen}");
    }
    assert!(!screen.contains(" F01 "), "{screen}");
}
