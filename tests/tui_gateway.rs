//! The console over a store the MCP gateway wrote (DESIGN §10.2): a write the
//! fixture server left hanging past the agent's timeout is held UNKNOWN, the
//! agent's identical repeats are refused, and a reviewer opening the console
//! sees the hold, its tool as `SERVER/TOOL`, and every try the agent made.
//!
//! No snapshot: the gateway's operation ids name its host, process and start,
//! and its records carry the wall clock, so the screen is asserted in parts.

use crate::support;

use chrono::Utc;
use crossterm::event::KeyCode;
use holdfast::console::layout::Pane;
use holdfast::core::model::State;
use serde_json::json;
use support::console::{Harness, options_at};
use support::gateway::{PATIENT, Rig, SERVER, call, settled, timed_out};
use support::stores;

/// The lines of `screen` that mention `needle`.
fn lines_with<'a>(screen: &'a str, needle: &str) -> Vec<&'a str> {
    screen.lines().filter(|l| l.contains(needle)).collect()
}

#[tokio::test]
async fn the_console_shows_a_hold_the_gateway_made_with_its_refused_repeats() {
    let fresh = stores::sqlite().await;
    let rig = Rig::new(&fresh.url);
    rig.config(
        "[[gateway.tool]]\nname = \"pay/refund\"\nmethod = \"POST\"\nowner = \"payments\"\nbusiness_key = \"/order\"\n",
    );
    let (client, _) = rig.connect().await;
    let args = json!({"order": "A7", "amount": 40, "hang_ms": 1500});
    let id = timed_out(&client, fresh.store.as_ref(), "refund", &args).await;
    for _ in 0..2 {
        let refused = call(&client, "refund", args.clone(), PATIENT)
            .await
            .unwrap();
        assert_eq!(refused.is_error, Some(true), "the repeat is refused");
    }
    client.cancel().await.unwrap();
    assert_eq!(
        settled(fresh.store.as_ref(), "refund", &args, State::Unknown).await,
        id,
        "the repeats made no operation of their own"
    );

    let mut h = Harness::over(fresh, options_at(true, Utc::now()), 160, 45).await;
    let queue = h.screen();
    assert!(!queue.contains("AUDIT CHAIN BROKEN"), "{queue}");
    assert_eq!(h.ids(), [id.to_string()], "the one hold is in the queue");
    let header = lines_with(&queue, "│STATE ");
    let header = header.first().unwrap_or_else(|| panic!("{queue}"));
    let row = lines_with(&queue, id.as_str());
    let row = row.first().unwrap_or_else(|| panic!("{queue}"));
    assert!(row.contains("UNKNOWN"), "{row}");
    assert!(row.contains(&format!("{SERVER}/refund ")), "{row}");
    // Its contract declares no action (the name stands in for it): the tool
    // is not shown twice.
    assert!(!row.contains(&format!("{SERVER}/refund/{SERVER}")), "{row}");
    assert!(row.contains("payments"), "the contract's owner: {row}");
    // Of the agent's three tries one reached the server: the two the gateway
    // refused spend nothing of the contract's three attempts (G5).
    let att = header.find(" ATT ").expect("an ATT column") + 1;
    assert_eq!(row.get(att..att + 3), Some("1/3"), "{header}\n{row}");

    h.select_id(id.as_str()).await;
    h.key(KeyCode::Enter).await;
    let evidence = h.screen();
    assert!(evidence.contains(&format!("{id} UNKNOWN")), "{evidence}");
    assert!(
        evidence.contains("the agent cancelled the call before an answer"),
        "{evidence}"
    );
    // The budget, further down the pane: the refused tries counted apart.
    let mut budget = String::new();
    let mut tool = Vec::new();
    for _ in 0..40 {
        let screen = h.screen();
        tool.extend(
            lines_with(&screen, "│tool / action ")
                .iter()
                .map(|l| (*l).to_owned()),
        );
        if let Some(line) = lines_with(&screen, "│attempts ")
            .iter()
            .find(|l| l.contains(" used"))
        {
            budget = (*line).to_owned();
        }
        if !budget.is_empty() && !tool.is_empty() {
            break;
        }
        h.key(KeyCode::Char('j')).await;
    }
    assert!(
        tool.first()
            .is_some_and(|l| l.contains(&format!(" {SERVER}/refund / - "))),
        "no action known, none shown: {tool:?}\n{}",
        h.screen()
    );
    assert!(
        budget.contains("1 of 3 used · 2 refused by the gateway, not counted"),
        "the budget with the refused tries apart: {budget:?}\n{}",
        h.screen()
    );

    while h.app.focus != Pane::Timeline {
        h.key(KeyCode::Tab).await;
    }
    let timeline = h.screen();
    // The pane's first line, wrapped at its width: the tries at a glance.
    assert!(
        timeline.contains(&format!("{id} · 3 physical: 1 request + 2"))
            && timeline.contains("not sent (1 of 3 attempts used) + 0 status queries"),
        "the tries at a glance: {timeline}"
    );
    let first_try = lines_with(&timeline, "-a1 request via gateway");
    assert_eq!(first_try.len(), 1, "{timeline}");
    assert!(first_try[0].contains("→ timeout"), "{}", first_try[0]);
    assert_eq!(
        lines_with(
            &timeline,
            "phase request_sent · HTTP - · error cancelled_by_client"
        )
        .len(),
        1,
        "the forwarded try: {timeline}"
    );
    // The refused repeats, further down the pane.
    for _ in 0..12 {
        h.key(KeyCode::Char('j')).await;
    }
    let scrolled = h.screen();
    assert_eq!(
        lines_with(&scrolled, "phase not_sent · HTTP - · error held_by_gateway").len(),
        2,
        "each refused repeat is a try not sent: {scrolled}"
    );
    assert_eq!(rig.applied(), 1, "the server applied the refund once");
}
