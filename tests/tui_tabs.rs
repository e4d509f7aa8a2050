//! The console's metrics and audit tabs over a real SQLite store: snapshots on the
//! demo packet at 80x24 and 200x50 with the clock frozen, a figure followed to an
//! operation and back, the repeated errors (at 80x24 and 160x45) with a group's
//! newest opened, the figures moving when the store changes, a tampered
//! audit log shown broken, and the banner while the connection is lost; the
//! tools tab (at 160x45 and 80x24), a tool's holds listed from it, and its
//! figures moving with the store.

use crate::support;

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use holdfast::console::app::{Effect, Message, Page};
use holdfast::console::layout::Pane;
use holdfast::console::metrics_tab::MetricsFocus;
use holdfast::core::metrics::MetricId;
use holdfast::store::{Judging, Link};
use support::console::{DEMO, Harness, demo_now, ingest};

const SIZES: [(u16, u16); 2] = [(80, 24), (200, 50)];

#[tokio::test]
async fn snapshots_of_the_metrics_and_audit_tabs_of_the_demo() {
    for (w, hgt) in SIZES {
        let size = format!("{w}x{hgt}");
        let mut h = Harness::at(DEMO, demo_now(), w, hgt).await;
        h.key(KeyCode::Char('3')).await;
        insta::assert_snapshot!(format!("metrics_{size}"), h.render());
        h.key(KeyCode::Enter).await;
        insta::assert_snapshot!(format!("metrics_behind_{size}"), h.render());
        h.key(KeyCode::Char('4')).await;
        insta::assert_snapshot!(format!("audit_{size}"), h.render());
    }
}

/// While the report is computed, the tab shows how far the store's judging
/// has got, as the runner hears it; the other tabs answer meanwhile, coming
/// back asks for no second report beside it, and the report replaces the
/// count once it comes.
#[tokio::test]
async fn the_metrics_tab_shows_how_far_judging_has_got_until_the_report_comes() {
    let mut h = Harness::at(DEMO, demo_now(), 160, 30).await;
    let asked = h.app.update(Message::Key(KeyEvent::new(
        KeyCode::Char('3'),
        KeyModifiers::NONE,
    )));
    let generation = asked
        .iter()
        .find_map(|effect| match effect {
            Effect::Metrics { generation, .. } => Some(*generation),
            _ => None,
        })
        .expect("the tab asks for its report");
    let judging = |judged| Judging {
        judged,
        total: 200_000,
        elapsed: Duration::from_millis(5_187),
    };
    h.send(Message::Judging {
        generation,
        progress: judging(12_500),
    })
    .await;
    let screen = h.screen();
    assert!(
        screen.contains(
            "Judging the operations the store has not judged yet: 12,500 of 200,000 (6.2%) \
             · 2,410/s · about 1m18s left"
        ),
        "{screen}"
    );
    insta::assert_snapshot!("metrics_judging_160x30", h.render());

    h.key(KeyCode::Char('4')).await;
    assert_eq!(h.app.page, Page::Audit, "another tab answers while judging");
    h.key(KeyCode::Char('3')).await;
    assert_eq!(h.app.page, Page::Metrics);
    // Back on the tab, no second report is asked for beside the one judging.
    assert!(
        h.app.metrics.report.is_none(),
        "the first request still judges"
    );
    h.send(Message::Judging {
        generation,
        progress: judging(25_000),
    })
    .await;
    let screen = h.screen();
    assert!(screen.contains("25,000 of 200,000"), "{screen}");
    h.settle(asked).await;
    let screen = h.screen();
    assert!(!screen.contains("Judging"), "{screen}");
    assert!(screen.contains("logical operations"), "{screen}");
}

#[tokio::test]
async fn snapshots_of_the_repeated_errors_of_the_demo() {
    for (w, hgt) in [(80, 24), (160, 45)] {
        let mut h = Harness::at(DEMO, demo_now(), w, hgt).await;
        h.key(KeyCode::Char('3')).await;
        h.key(KeyCode::Char('e')).await;
        insta::assert_snapshot!(format!("metrics_repeated_{w}x{hgt}"), h.render());
    }
}

#[tokio::test]
async fn the_repeated_errors_open_a_group_s_newest_and_follow_the_store() {
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    h.key(KeyCode::Char('3')).await;
    h.key(KeyCode::Char('e')).await;
    assert_eq!(h.app.metrics.focus, MetricsFocus::Repeated);
    let screen = h.screen();
    assert!(screen.contains("Repeated errors · 14 groups"), "{screen}");
    let groups = h.app.metrics.groups().to_vec();
    assert_eq!(
        (
            groups[0].owner.as_str(),
            groups[0].layer.as_str(),
            groups[0].tool.as_str()
        ),
        ("integrations", "argument_generation", "T03")
    );
    h.key(KeyCode::Char('j')).await;
    h.key(KeyCode::Enter).await;
    assert_eq!(h.app.focus, Pane::Evidence);
    assert_eq!(h.open().as_deref(), Some(groups[1].newest.as_str()));
    h.key(KeyCode::Esc).await;
    assert_eq!(h.app.page, Page::Metrics, "Esc comes back to the tab");
    assert_eq!(h.app.metrics.focus, MetricsFocus::Repeated);

    // One more unclassified timeout on T03: its group grows and leads.
    let store = h.store();
    ingest(
        store.as_ref(),
        concat!(
            r#"{"type":"operation","id":"F61","tenant":"pinehaven","actor":"svc:relay-desk","tool":"T03","action":"ticket.create","target":"ticket-queue:9","payload_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000061","risk":"critical","owner":"integrations","state":"UNKNOWN","failure_mode":"timeout_unknown","created_at":"2026-09-05T11:30:00Z"}"#,
            "\n"
        ),
    )
    .await;
    h.poll().await;
    let grown = h
        .app
        .metrics
        .groups()
        .iter()
        .find(|g| {
            (g.owner.as_str(), g.layer.as_str(), g.tool.as_str())
                == ("integrations", "unclassified", "T03")
        })
        .cloned()
        .expect("the group");
    assert_eq!((grown.total, grown.newest.as_str()), (2, "F61"));
    assert!(h.screen().contains("F61"), "{}", h.screen());
    h.key(KeyCode::Char('e')).await;
    assert_eq!(h.app.metrics.focus, MetricsFocus::Figures);
}

#[tokio::test]
async fn a_store_without_expectations_is_not_evaluated_on_the_metrics_tab() {
    // The review fixture holds no expectation, no drill and no veto: nothing
    // measured, so the gate must not read as a pass.
    const REVIEW: &str = include_str!("fixtures/review.jsonl");
    assert!(!REVIEW.contains("\"expectation\""));
    let now = holdfast::core::clock::parse_instant(support::cli::NOW).unwrap();
    let mut h = Harness::at(REVIEW, now, 200, 50).await;
    h.key(KeyCode::Char('3')).await;
    let screen = h.screen();
    assert!(screen.contains("NOT_EVALUATED"), "{screen}");
    assert!(!screen.contains("DEPLOYABLE"), "{screen}");
    assert!(screen.contains("nothing evaluated"), "{screen}");
    let report = h.app.metrics.report.clone().unwrap();
    assert_eq!(
        report
            .metric(MetricId::ContractPassRate)
            .map(|m| m.denominator),
        Some(0)
    );
    assert!(report.release.vetoes.is_empty());
}

#[tokio::test]
async fn a_figure_lists_its_operations_one_opens_and_esc_comes_back() {
    let mut h = Harness::at(DEMO, demo_now(), 80, 24).await;
    h.key(KeyCode::Char('3')).await;
    assert_eq!(h.app.page, Page::Metrics);
    let screen = h.screen();
    assert!(screen.contains("26/32"), "{screen}");
    assert!(screen.contains("NOT_DEPLOYED"), "{screen}");

    h.key(KeyCode::Char('j')).await;
    let metric = h.app.metrics.metric().unwrap().clone();
    assert_eq!(metric.id, MetricId::OutcomeClassificationCompleteness);
    h.key(KeyCode::Enter).await;
    assert_eq!(h.app.metrics.focus, MetricsFocus::Operations);
    let first = h.app.metrics.behind()[0].clone();
    assert!(!first.counted, "operations short of the figure come first");
    assert!(h.screen().contains(first.id.as_str()));

    h.key(KeyCode::Enter).await;
    assert_eq!(h.app.focus, Pane::Evidence);
    assert_eq!(h.open().as_deref(), Some(first.id.as_str()));
    let screen = h.screen();
    assert!(
        screen.contains(&format!("Evidence · {}", first.id)),
        "{screen}"
    );

    h.key(KeyCode::Esc).await;
    assert_eq!(h.app.focus, Pane::Queue);
    assert_eq!(h.app.page, Page::Metrics, "Esc comes back to the tab");
    assert_eq!(h.app.metrics.focus, MetricsFocus::Operations);
    h.key(KeyCode::Esc).await;
    assert_eq!(h.app.metrics.focus, MetricsFocus::Figures);
    assert!(h.screen().contains("Outcome-classification"));

    h.key(KeyCode::Char('1')).await;
    assert_eq!(h.app.page, Page::Queue);
    assert!(h.screen().contains("Held queue"));
}

#[tokio::test]
async fn the_figures_move_when_the_store_changes() {
    let mut h = Harness::at(DEMO, demo_now(), 200, 50).await;
    h.key(KeyCode::Char('3')).await;
    let before = h.app.metrics.report.clone().unwrap();
    assert!(h.screen().contains("32 logical operations"));

    let store = h.store();
    ingest(
        store.as_ref(),
        concat!(
            r#"{"type":"operation","id":"F60","tenant":"pinehaven","actor":"svc:relay-desk","tool":"T03","action":"ticket.create","target":"ticket-queue:9","payload_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000060","risk":"critical","owner":"integrations","state":"UNKNOWN","failure_mode":"timeout_unknown","created_at":"2026-09-05T10:03:00Z"}"#,
            "\n"
        ),
    )
    .await;
    h.poll().await;

    let after = h.app.metrics.report.clone().unwrap();
    assert_eq!(after.operational.logical_operations, 33);
    let moved: Vec<MetricId> = before
        .metrics
        .iter()
        .zip(&after.metrics)
        .filter(|(b, a)| b.denominator != a.denominator)
        .map(|(b, _)| b.id)
        .collect();
    assert!(!moved.is_empty(), "a denominator moved");
    let screen = h.screen();
    assert!(screen.contains("33 logical operations"), "{screen}");
    let m = after.metric(moved[0]).unwrap();
    assert!(
        screen.contains(&format!("{}/{}", m.numerator, m.denominator)),
        "{screen}"
    );
}

#[tokio::test]
async fn the_audit_tab_shows_transitions_newest_first_and_a_tampered_chain() {
    let mut h = Harness::at(DEMO, demo_now(), 200, 50).await;
    h.key(KeyCode::Char('4')).await;
    let rows = h.app.audit.rows().to_vec();
    assert!(rows.len() > 3);
    assert!(rows.windows(2).all(|w| w[0].seq > w[1].seq), "newest first");
    let screen = h.screen();
    assert!(screen.contains("chain intact"), "{screen}");

    h.tamper_audit().await;
    h.key(KeyCode::Char('R')).await;
    let screen = h.screen();
    assert!(screen.contains("CHAIN BROKEN at seq 3"), "{screen}");
    assert!(screen.contains("BROKEN at seq 3"), "{screen}");

    h.key(KeyCode::Char('G')).await;
    let oldest = h.app.audit.selected_row().unwrap().clone();
    h.key(KeyCode::Enter).await;
    assert_eq!(h.open().as_deref(), Some(oldest.draft.operation.as_str()));
    h.key(KeyCode::Esc).await;
    assert_eq!(h.app.page, Page::Audit);
}

#[tokio::test]
async fn a_lost_connection_shows_a_banner_and_its_return_reads_everything_again() {
    let mut h = Harness::at(DEMO, demo_now(), 80, 24).await;
    h.key(KeyCode::Char('3')).await;
    h.poll_link(Link::Reconnecting { attempt: 2 }).await;
    let screen = h.screen();
    assert!(
        screen.contains("connection to the store lost: reconnecting (attempt 2)"),
        "{screen}"
    );
    h.poll().await;
    let screen = h.screen();
    assert!(!screen.contains("connection to the store lost"), "{screen}");
    assert!(
        screen.contains("connection to the store is back"),
        "{screen}"
    );
}

#[tokio::test]
async fn help_on_the_metrics_and_audit_tabs_names_the_tab() {
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    h.key(KeyCode::Char('3')).await;
    h.key(KeyCode::Char('?')).await;
    let screen = h.screen();
    assert!(screen.contains("Keys · metrics"), "{screen}");
    assert!(!screen.contains("Keys · detail"), "{screen}");
    h.key(KeyCode::Esc).await;
    h.key(KeyCode::Char('4')).await;
    h.key(KeyCode::Char('?')).await;
    let screen = h.screen();
    assert!(screen.contains("Keys · audit"), "{screen}");
}

#[tokio::test]
async fn r_on_a_tab_opens_no_hidden_dialog_and_says_how_to_review() {
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    h.key(KeyCode::Char('4')).await;
    h.key(KeyCode::Char('r')).await;
    assert!(h.app.review.is_none(), "no dialog opens behind the tab");
    let screen = h.screen();
    assert!(screen.contains("Enter opens one from"), "{screen}");
    h.key(KeyCode::Enter).await;
    assert_eq!(h.app.focus, Pane::Evidence);
    h.key(KeyCode::Char('r')).await;
    let review = h
        .app
        .review
        .clone()
        .expect("the operation opened is reviewed");
    assert_eq!(Some(review.id().to_string()), h.open());
    assert!(h.screen().contains(&format!("Review {}", review.id())));
}

#[tokio::test]
async fn the_audit_tab_names_the_person_a_delegate_acted_for_before_the_delegate() {
    use holdfast::core::rules::{Action, Actor, Rationale};
    use holdfast::store::Session;
    let mut h = Harness::at(DEMO, demo_now(), 80, 24).await;
    // A login acting for maya, as PostgreSQL's delegate role makes it: the row's
    // `by` is the login, its `on_behalf_of` the person whose act it is.
    let mut relay = Actor::local("svc:team-relay-login", None);
    relay.on_behalf_of = Some("maya".into());
    let session = Session::new(h.store(), relay);
    let id = holdfast::core::ids::OperationId::parse("F09").unwrap();
    holdfast::review::apply(
        &session,
        &id,
        &Action::Comment,
        &Rationale::parse("paged the integrations owner").unwrap(),
        None,
        demo_now(),
    )
    .await
    .unwrap();
    h.key(KeyCode::Char('4')).await;
    h.key(KeyCode::Char('R')).await;
    let newest = h.screen();
    let row = newest
        .lines()
        .find(|l| l.contains("comment"))
        .unwrap_or_else(|| panic!("the comment row:\n{newest}"));
    assert!(row.contains("maya via svc:team"), "{row}");
    // Rows the importer wrote are its own, whatever the source claimed.
    assert!(newest.contains("test-feed"), "{newest}");
}

#[tokio::test]
async fn snapshots_of_the_tools_tab_of_the_demo() {
    for (w, hgt) in [(160, 45), (80, 24)] {
        let mut h = Harness::at(DEMO, demo_now(), w, hgt).await;
        h.key(KeyCode::Char('5')).await;
        assert_eq!(h.app.page, Page::Tools);
        insta::assert_snapshot!(format!("tools_{w}x{hgt}"), h.render());
    }
}

/// The tools tab's row of `tool`: its holds and UNKNOWN ones.
fn holds_of(h: &Harness, tool: &str) -> (u64, u64) {
    let row = &h
        .app
        .tools
        .rows()
        .iter()
        .find(|t| t.row.tool == tool)
        .unwrap_or_else(|| panic!("{tool} on the tools tab"))
        .row;
    (row.holds, row.unknowns)
}

#[tokio::test]
async fn enter_on_a_tool_lists_only_its_holds_and_esc_clears_the_filter() {
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    let everything = h.app.queue.total;
    h.keys(":tools").await;
    h.key(KeyCode::Enter).await;
    assert_eq!(h.app.page, Page::Tools, ":tools shows the tab");
    // The first tool with holds, some of its operations' peers not its own.
    while h.app.tools.selected_tool().unwrap().row.holds == 0 {
        let before = h.app.tools.selected;
        h.key(KeyCode::Char('j')).await;
        assert_ne!(h.app.tools.selected, before, "a tool of the demo holds");
    }
    let row = h.app.tools.selected_tool().unwrap().row.clone();
    assert!(
        row.holds < everything,
        "{} holds all {everything}",
        row.tool
    );
    let screen = h.screen();
    assert!(
        screen.contains(&format!("Inventory · {}", row.tool)),
        "{screen}"
    );
    h.key(KeyCode::Enter).await;
    assert_eq!(h.app.page, Page::Queue);
    assert_eq!(h.app.queue.filter.tools, std::slice::from_ref(&row.tool));
    assert_eq!(
        h.app.queue.total, row.holds,
        "the tab's count is the queue's"
    );
    assert_eq!(h.ids().len() as u64, row.holds);
    assert!(
        h.app
            .queue
            .rows
            .iter()
            .all(|r| r.operation.tool == row.tool),
        "only {}'s holds: {:?}",
        row.tool,
        h.ids()
    );
    let screen = h.screen();
    assert!(
        screen.contains(&format!("filter tool:{}", row.tool)),
        "{screen}"
    );
    h.key(KeyCode::Esc).await;
    assert!(h.app.queue.filter.tools.is_empty());
    assert_eq!(h.app.queue.total, everything);
    assert!(!h.screen().contains("tool:"), "{}", h.screen());
}

#[tokio::test]
async fn a_tool_s_holds_move_when_its_operations_change_and_outside_text_is_neutralized() {
    let mut h = Harness::at(DEMO, demo_now(), 160, 45).await;
    h.key(KeyCode::Char('5')).await;
    let (holds, unknowns) = holds_of(&h, "T03");
    let store = h.store();
    ingest(
        store.as_ref(),
        concat!(
            r#"{"type":"operation","id":"F62","tenant":"pinehaven","actor":"svc:relay-desk","tool":"T03","action":"ticket.create","target":"ticket-queue:9","payload_hash":"sha256:0000000000000000000000000000000000000000000000000000000000000062","risk":"critical","owner":"integrations","state":"UNKNOWN","failure_mode":"timeout_unknown","created_at":"2026-09-05T11:30:00Z"}"#,
            "\n"
        ),
    )
    .await;
    h.poll().await;
    assert_eq!(holds_of(&h, "T03"), (holds + 1, unknowns + 1));
    // F62 is blocked for its owner (UNKNOWN → BLOCKED): still held, no
    // longer UNKNOWN, and the figures follow.
    let session = holdfast::store::Session::new(
        h.store(),
        holdfast::core::rules::Actor::local("maya", Some("RP03".into())),
    );
    holdfast::review::apply(
        &session,
        &holdfast::core::ids::OperationId::parse("F62").unwrap(),
        &holdfast::core::rules::Action::Block,
        &holdfast::core::rules::Rationale::parse("the owner decides after the incident review")
            .unwrap(),
        None,
        demo_now(),
    )
    .await
    .unwrap();
    h.poll().await;
    assert_eq!(holds_of(&h, "T03"), (holds + 1, unknowns));

    // A contract whose text carries a bidi override: shown as a marker.
    ingest(
        store.as_ref(),
        concat!(
            r#"{"type":"contract","tool":"T09","version":"IC10","action":"refund.issue","method":"POST","idempotency":{"supported":true,"scope":"account","retention_hours":24},"status_lookup":true,"retryable":["http_503"],"compensation":"refund.reverse","owner":"payments","max_attempts":3,"budget_seconds":900,"business_rules":["at most the captured amount\u202e"]}"#,
            "\n"
        ),
    )
    .await;
    h.key(KeyCode::Char('R')).await;
    h.key(KeyCode::Char('G')).await;
    assert_eq!(h.app.tools.selected_tool().unwrap().row.tool, "T09");
    let screen = h.screen();
    assert!(screen.contains("business rules"), "{screen}");
    assert!(
        !screen.contains('\u{202e}'),
        "a bidi override reached the screen"
    );
    assert!(screen.contains("⟨U+202E⟩"), "{screen}");
    assert!(screen.contains("MISSING"), "{screen}");
}
