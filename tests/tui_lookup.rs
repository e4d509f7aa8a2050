//! `o` in the console: the selected hold is looked up at a real provider on
//! 127.0.0.1, the answer shows field by field with what it now allows, and the
//! evidence pane's allowed actions follow (snapshots at 80x24 and 200x50).

use crate::support;

use crossterm::event::KeyCode;
use holdfast::core::clock::parse_instant;
use holdfast::core::model::State;
use holdfast::core::rules::{Action, options};
use holdfast::store::Scope;
use support::console::Harness;
use support::provider::{Provider, contract_with, holds};

/// A store with holds whose tool's lookup needs no secret (the console reads
/// secrets from its own environment, which a test leaves alone).
/// The operator's binding of the provider, carrying no secret (as the contract).
fn bound(p: &Provider) -> holdfast::lookup::LookupSettings {
    let mut settings = p.settings();
    if let Some(b) = settings.bindings.get_mut("test") {
        b.env = None;
    }
    settings
}

fn packet(p: &Provider) -> String {
    let lookup = format!(
        r#"{{"method":"GET","url":"{}/v1/records?business_key={{business_key}}","timeout_ms":2000,"lag_seconds":60,"fields":{{"target":"/record/target","payload_hash":"/record/payload_hash","tenant":"/record/tenant","effect_count":"/count","provider_request_id":"/record/request_id"}}}}"#,
        p.base
    );
    format!(
        "{}\n{}",
        contract_with("T06", &lookup),
        holds(
            "T06",
            &[("L-match", "match:1"), ("L-tenant", "tenant:1")],
            "2026-09-05T10:02:00Z"
        )
    )
}

/// The screen with what varies between runs masked: the provider's port (width
/// kept), and each line that gives milliseconds without its digits and with its
/// runs of spaces collapsed (the duration's width varies).
fn masked(screen: &str, p: &Provider) -> String {
    let port = p.base.rsplit(':').next().unwrap_or_default();
    screen
        .replace(
            &format!("127.0.0.1:{port}"),
            &format!("127.0.0.1:{}", "#".repeat(port.len())),
        )
        .lines()
        .map(|l| {
            if l.contains(" ms") {
                let digitless: String = l.chars().filter(|c| !c.is_ascii_digit()).collect();
                digitless.split_whitespace().collect::<Vec<_>>().join(" ")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn allowed(h: &Harness, label: &str) -> bool {
    let loaded = h.app.detail.current().expect("a hold is open");
    options(&loaded.detail, &h.app.actor, h.now)
        .into_iter()
        .find(|o| o.label == label)
        .is_some_and(|o| o.outcome.is_ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o_looks_the_hold_up_and_shows_what_it_now_allows() {
    let p = Provider::start("").await;
    let now = parse_instant("2026-09-05T10:10:00Z").unwrap();
    for (w, hgt) in [(80u16, 24u16), (200, 50)] {
        let size = format!("{w}x{hgt}");
        let mut h = Harness::at(&packet(&p), now, w, hgt).await;
        h.lookup = bound(&p);
        h.select_id("L-match").await;
        assert!(
            !allowed(&h, "resolve --to SUCCEEDED"),
            "nothing proves the effect yet"
        );
        h.key(KeyCode::Char('o')).await;
        let screen = h.render().to_string();
        assert!(
            screen.contains("allows now: resolve --to SUCCEEDED"),
            "{screen}"
        );
        insta::assert_snapshot!(format!("lookup_found_{size}"), masked(&screen, &p));
        h.key(KeyCode::Esc).await;
        assert!(
            allowed(&h, "resolve --to SUCCEEDED"),
            "the lookup proves the effect"
        );
        let detail = h
            .store()
            .detail(&Scope::Every, &support::review::id("L-match"))
            .await
            .unwrap();
        assert_eq!(detail.row.operation.state, State::Unknown);
        assert_eq!(detail.audit.last().unwrap().draft.action, "reconcile");
        assert_eq!(detail.audit.last().unwrap().draft.by, "rev:ana");

        h.select_id("L-tenant").await;
        h.key(KeyCode::Char('o')).await;
        let screen = h.render().to_string();
        assert!(screen.contains("ANOTHER TENANT"), "{screen}");
        if w == 200 {
            insta::assert_snapshot!(format!("lookup_wrong_tenant_{size}"), masked(&screen, &p));
        }
        h.key(KeyCode::Esc).await;
        assert!(!allowed(&h, "resolve --to SUCCEEDED"));
        let refusal = options(&h.app.detail.current().unwrap().detail, &h.app.actor, h.now)
            .into_iter()
            .find(|o| {
                matches!(
                    o.action,
                    Action::Resolve {
                        to: State::Succeeded
                    }
                )
            })
            .and_then(|o| o.outcome.err())
            .unwrap();
        assert_eq!(refusal.rule.to_string(), "G7");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn o_reads_answers_under_the_lookup_config_like_the_command_line() {
    let p = Provider::start("").await;
    let now = parse_instant("2026-09-05T10:10:00Z").unwrap();
    let mut h = Harness::at(&packet(&p), now, 200, 50).await;
    // The same answer that resolves L-match under the default limit is over a
    // 64-byte `[lookup] body_limit_bytes`: an attempt, and nothing proved.
    h.lookup = bound(&p);
    h.lookup.body_limit_bytes = Some(64);
    h.select_id("L-match").await;
    h.key(KeyCode::Char('o')).await;
    let screen = h.render().to_string();
    assert!(screen.contains("body_too_large"), "{screen}");
    assert!(!screen.contains("resolve --to SUCCEEDED"), "{screen}");
    let detail = h
        .store()
        .detail(
            &Scope::Every,
            &holdfast::core::ids::OperationId::parse("L-match").unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(detail.observations.len(), 0);
    assert_eq!(
        detail.attempts.last().and_then(|a| a.error_type.as_deref()),
        Some("body_too_large")
    );
}

#[tokio::test]
async fn o_on_a_tool_without_a_lookup_says_why_in_the_dialog() {
    use support::console::{DEMO, demo_now};
    let mut h = Harness::at(DEMO, demo_now(), 80, 24).await;
    h.select_id("F09").await;
    let id = support::review::id("F09");
    let attempts = h
        .store()
        .detail(&Scope::Every, &id)
        .await
        .unwrap()
        .attempts
        .len();
    h.key(KeyCode::Char('o')).await;
    let screen = h.screen();
    // The dialog, without the status line under it.
    let lines: Vec<&str> = screen.lines().collect();
    let dialog = lines[..lines.len() - 1].join(" ");
    let words: String = dialog
        .split(|c: char| c.is_whitespace() || c == '│')
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    for needle in [
        "no status lookup holdfast can make",
        "a person looks it up",
        "r → reconcile",
        "nothing was recorded",
    ] {
        assert!(words.contains(needle), "{needle}:\n{screen}");
    }
    assert_eq!(
        h.store()
            .detail(&Scope::Every, &id)
            .await
            .unwrap()
            .attempts
            .len(),
        attempts,
        "nothing was asked or recorded"
    );
}
