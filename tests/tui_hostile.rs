//! G10 end to end: hostile strings rendered through the real crossterm backend into
//! a byte buffer never put a byte of a hostile sequence on the wire.

use crate::support;

use holdfast::core::sanitize::{Clean, sanitize};
use ratatui::backend::{CrosstermBackend, TestBackend};
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use ratatui::{Terminal, TerminalOptions, Viewport};
use support::hostile::{CORPUS, Sink, forbidden, replay};

const WIDTH: u16 = 120;

/// Draws one line per string with `draw`, through crossterm into bytes and through
/// the test backend into a buffer.
fn render_both(lines: &[String]) -> (Vec<u8>, TestBackend) {
    let height = lines.len() as u16;
    let paragraph = || {
        Paragraph::new(
            lines
                .iter()
                .map(|l| Line::raw(l.clone()))
                .collect::<Vec<_>>(),
        )
    };
    let options = TerminalOptions {
        viewport: Viewport::Fixed(Rect::new(0, 0, WIDTH, height)),
    };
    let sink = Sink::default();
    let mut crossterm =
        Terminal::with_options(CrosstermBackend::new(sink.clone()), options).unwrap();
    crossterm
        .draw(|f| f.render_widget(paragraph(), f.area()))
        .unwrap();
    let bytes = sink.bytes();
    let mut test = Terminal::new(TestBackend::new(WIDTH, height)).unwrap();
    test.draw(|f| f.render_widget(paragraph(), f.area()))
        .unwrap();
    (bytes, test.backend().clone())
}

#[test]
fn corpus_covers_every_class_with_at_least_forty_strings() {
    assert!(CORPUS.len() >= 40, "{} strings", CORPUS.len());
    for (class, text) in CORPUS {
        assert!(text.chars().any(forbidden), "{class} holds nothing hostile");
    }
}

#[test]
fn sanitized_corpus_reaches_the_terminal_only_as_visible_text() {
    let lines: Vec<String> = CORPUS
        .iter()
        .map(|(_, text)| Clean::new(text).into_string())
        .collect();
    let (bytes, test) = render_both(&lines);
    let screen = replay(&bytes).unwrap_or_else(|e| panic!("{e}"));
    for (y, (class, text)) in CORPUS.iter().enumerate() {
        let expected: String = test.buffer().content[y * WIDTH as usize..(y + 1) * WIDTH as usize]
            .iter()
            .map(|c| c.symbol())
            .collect::<String>();
        assert_eq!(screen.row(y as u16, WIDTH), expected.trim_end(), "{class}");
        let marked = sanitize(text);
        assert!(marked.chars().all(|c| !forbidden(c)), "{class}");
    }
}

#[test]
fn osc_payloads_are_shown_inside_a_marker_not_left_bare() {
    let lines = vec![Clean::new("\u{1b}]52;c;QUFB\u{7}after").into_string()];
    let (bytes, _) = render_both(&lines);
    let screen = replay(&bytes).unwrap();
    assert_eq!(screen.row(0, WIDTH), "⟦␛]52;c;QUFB␇⟧after");
}

#[test]
fn unsanitized_text_would_leak_which_is_why_the_sanitizer_exists() {
    for raw in ["ok\u{e0049}\u{e0067}", "x\u{e0100}"] {
        let (bytes, _) = render_both(&[raw.to_owned()]);
        assert!(
            replay(&bytes).is_err(),
            "{raw:?} did not leak raw; the checker is blind"
        );
    }
    let (bytes, _) = render_both(&["\u{1b}]52;c;QUFB\u{7}".to_owned()]);
    let screen = replay(&bytes).unwrap();
    assert_eq!(
        screen.row(0, WIDTH),
        "]52;c;QUFB",
        "ratatui leaves the body bare"
    );
}

mod screens {
    //! The real console screens, fed an operation whose every field that came from
    //! outside holds a hostile string, drawn through the crossterm backend.

    use super::support::console::options;
    use super::support::hostile::{CORPUS, Sink, replay};
    use chrono::{DateTime, Duration, Utc};
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use holdfast::console::app::{App, Effect, Message};
    use holdfast::console::layout::Pane;
    use holdfast::console::queue::Listing;
    use holdfast::console::view;
    use holdfast::core::clock::parse_instant;
    use holdfast::core::contract::{Contract, IdempotencyContract};
    use holdfast::core::detail::OperationDetail;
    use holdfast::core::ids::{OperationId, Sha256};
    use holdfast::core::model::*;
    use holdfast::store::QueueCounts;
    use ratatui::layout::Rect;
    use ratatui::{Terminal, TerminalOptions, Viewport};

    fn t(seconds: i64) -> DateTime<Utc> {
        parse_instant("2026-09-05T10:00:00Z").unwrap() + Duration::seconds(seconds)
    }

    /// Hands out the corpus strings one by one, round and round, each followed by
    /// a letter carrying a tag character, which ratatui passes through: a field
    /// drawn without the sanitizer is caught whichever string it got.
    struct Hostile(usize);

    impl Hostile {
        fn next(&mut self) -> String {
            let (_, text) = CORPUS[self.0 % CORPUS.len()];
            self.0 += 1;
            format!("{text}z\u{e0049}")
        }
    }

    fn id(text: &str) -> OperationId {
        OperationId::parse(text).unwrap()
    }

    fn hostile_detail(h: &mut Hostile) -> OperationDetail {
        let op = Operation {
            id: id("F99"),
            tenant: h.next(),
            actor: h.next(),
            tool: h.next(),
            action: h.next(),
            target: h.next(),
            payload_hash: Sha256::of(b"payload"),
            intent_hash: Some(Sha256::of(b"intent")),
            risk: Risk::Critical,
            approval: Some(Approval {
                by: h.next(),
                policy: h.next(),
                at: Some(t(0)),
                payload_hash: Some(Sha256::of(b"payload")),
                expires_at: Some(t(3600)),
            }),
            idempotency_key: Some(h.next()),
            business_key: Some(h.next()),
            correlation_id: Some(h.next()),
            owner: h.next(),
            max_attempts: Some(3),
            deadline: Some(t(600)),
            failure_mode: Some(FailureMode::PartialWrite),
            state: State::Partial,
            next_observation_at: Some(t(120)),
            depends_on: vec![id("F98")],
            parent: Some(id("F97")),
            relation: Some(Relation::ResumeOf),
            created_at: t(0),
        };
        let attempts = (1..=3)
            .map(|seq| Attempt {
                id: h.next(),
                operation: op.id.clone(),
                seq,
                kind: if seq == 2 {
                    AttemptKind::StatusQuery
                } else {
                    AttemptKind::Request
                },
                layer: Some(Layer::Gateway),
                started_at: t(i64::from(seq) * 40),
                ended_at: Some(t(i64::from(seq) * 40 + 20)),
                phase: Phase::ResponseReceived,
                outcome: Outcome::HttpError,
                http_status: Some(429),
                error_type: Some(h.next()),
                retry_after: Some(t(i64::from(seq) * 40 + 30)),
                provider_request_id: Some(h.next()),
                request_hash: None,
                response_hash: Some(Sha256::of(b"response")),
                resend_count: Some(seq),
                replayed: Some(true),
                trace_id: Some(h.next()),
                response_excerpt: Some(format!("{}\n{}\r\n{}", h.next(), h.next(), h.next())),
                url: None,
            })
            .collect();
        let items = (1..=6)
            .map(|index| Item {
                operation: op.id.clone(),
                index,
                label: Some(h.next()),
                state: ItemState::ALL[usize::try_from(index - 1).unwrap()],
                authoritative_id: Some(h.next()),
            })
            .collect();
        let observations = (1..=2)
            .map(|n| Observation {
                id: h.next(),
                operation: op.id.clone(),
                observed_at: t(200 + n),
                source: ObservationSource::ALL[usize::from(n % 2 == 0)],
                found: n == 1,
                matches: Some(Matches {
                    target: Some(true),
                    payload_hash: Some(false),
                    owner: None,
                    version: Some(true),
                }),
                effect_count: Some(2),
                raw_hash: None,
                note: Some(format!("{}\n{}", h.next(), h.next())),
            })
            .collect();
        let contract = Contract {
            tool: h.next(),
            version: h.next(),
            action: h.next(),
            method: "POST".into(),
            idempotency: IdempotencyContract {
                supported: true,
                scope: Some(h.next()),
                retention_hours: Some(1),
            },
            status_lookup: holdfast::core::lookup::StatusLookup::ByHand,
            retryable: vec![h.next()],
            compensation: Some(h.next()),
            owner: h.next(),
            max_attempts: 3,
            budget_seconds: 600,
            path: None,
            response: None,
            inventory: Default::default(),
            owners: None,
            domain_review: None,
            circuit: None,
        };
        OperationDetail {
            row: OperationRow {
                operation: op.clone(),
                version: 7,
                attempts_used: 2,
                max_attempts: Some(3),
                state_since: t(30),
                held_dependencies: vec![id("F98")],
                pending_proposal: true,
                routed_owner: None,
            },
            contract: Some(contract),
            attempts,
            items,
            observations,
            audit: vec![],
            expectation: None,
            children: vec![ChildLink {
                id: id("F96"),
                relation: Relation::CompensationOf,
                state: State::Failed,
                items: vec![Item {
                    operation: id("F96"),
                    index: 2,
                    label: Some(h.next()),
                    state: ItemState::Failed,
                    authoritative_id: Some(h.next()),
                }],
            }],
            dependencies: vec![(id("F98"), State::Unknown)],
            proposals: vec![Proposal {
                id: 1,
                operation: op.id.clone(),
                action: ActionKind::AuthorizeRetry,
                proposed_by: h.next(),
                proposed_at: t(100),
                rationale: h.next(),
                status: ProposalStatus::Pending,
            }],
            key_conflicts: vec![id("F95")],
            autonomy: holdfast::core::ladder::Level::Manual,
            redactions: Vec::new(),
            lookup_unchecked: None,
        }
    }

    /// Answers the console's effects from the hostile fixture.
    fn answer(app: &mut App, effects: Vec<Effect>, detail: &OperationDetail) {
        let mut queue = effects;
        while let Some(effect) = queue.pop() {
            let message = match effect {
                Effect::List { generation, .. } => Message::Listed {
                    generation,
                    result: Ok(Listing {
                        rows: vec![detail.row.clone()],
                        total: 1,
                        counts: Some(QueueCounts {
                            by_state: vec![(State::Partial, 1)],
                            overdue: 1,
                            held_by_dependency: 1,
                            pending_proposals: 1,
                        }),
                        elsewhere: None,
                        // A hostile tool name in the header's circuit warning.
                        circuits: Some(vec![holdfast::core::circuit::Circuit {
                            tool: detail.row.operation.tool.to_string(),
                            position: holdfast::core::circuit::Position::Open,
                            since: detail.row.operation.created_at,
                            reason: "3 failures".into(),
                            failures: 3,
                            probe: None,
                            by: "svc:gateway".into(),
                        }]),
                    }),
                },
                Effect::Load { generation, .. } => Message::Loaded {
                    generation,
                    result: Ok(Box::new(detail.clone())),
                },
                Effect::Debounce { generation, .. } => Message::Debounced { generation },
                Effect::Review { generation, .. } => Message::Reviewed {
                    generation,
                    verdict: holdfast::console::review::Verdict::Failed(
                        "\u{1b}[2Jstore says \u{202e}no".into(),
                    ),
                },
                Effect::LookUp { generation, .. } => Message::LookedUp {
                    generation,
                    result: Err("\u{1b}[2Jprovider says \u{202e}no".into()),
                },
                Effect::SelectAll { generation, .. } => Message::Selected {
                    generation,
                    result: Ok(vec![detail.row.operation.id.clone()]),
                },
                Effect::BulkLoad { generation, .. } => Message::BulkLoaded {
                    generation,
                    result: Ok((vec![detail.row.operation.id.clone()], Vec::new())),
                },
                Effect::BulkJudge {
                    generation,
                    action,
                    rationale,
                    now,
                    ..
                } => Message::BulkJudged {
                    generation,
                    result: Ok((
                        vec![holdfast::review::Planned {
                            line: holdfast::core::triage::line(
                                detail, &action, &app.actor, &rationale, now,
                            ),
                            version: detail.row.version,
                        }],
                        Vec::new(),
                    )),
                },
                Effect::BulkApply {
                    generation,
                    planned,
                    ..
                } => Message::BulkApplied {
                    generation,
                    results: planned
                        .into_iter()
                        .map(|p| {
                            let verdict = holdfast::console::review::Verdict::Failed(
                                "\u{1b}[2Jstore says \u{202e}no".into(),
                            );
                            (p.line, verdict)
                        })
                        .collect(),
                },
                // The hostile fixture is one operation on the queue; the tabs
                // are not opened here (the tools tab's outside text is in
                // `tui_tabs.rs`).
                Effect::Quit
                | Effect::Metrics { .. }
                | Effect::Audit { .. }
                | Effect::Tools { .. }
                | Effect::Verify { .. } => continue,
            };
            queue.extend(app.update(message));
        }
    }

    fn key(app: &mut App, code: KeyCode, detail: &OperationDetail) {
        let effects = app.update(Message::Key(KeyEvent::new(code, KeyModifiers::NONE)));
        answer(app, effects, detail);
    }

    /// Draws the app through crossterm; the bytes must replay cleanly. Returns
    /// the painted screen.
    fn draw(app: &App) -> String {
        let sink = Sink::default();
        let options = TerminalOptions {
            viewport: Viewport::Fixed(app.size),
        };
        let mut terminal = Terminal::with_options(
            ratatui::backend::CrosstermBackend::new(sink.clone()),
            options,
        )
        .unwrap();
        terminal.draw(|f| view::draw(f, app)).unwrap();
        let screen = replay(&sink.bytes()).unwrap_or_else(|e| panic!("{e}"));
        (0..app.size.height)
            .map(|y| screen.row(y, app.size.width))
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn hostile_text_in_every_external_field_reaches_the_screen_only_as_markers() {
        let mut hostile = Hostile(0);
        let detail = hostile_detail(&mut hostile);
        assert!(hostile.0 >= CORPUS.len(), "every corpus string is used");
        for (width, height) in [(80, 24), (200, 50)] {
            let mut app = App::new(options(true), Rect::new(0, 0, width, height));
            let effects = app.init();
            answer(&mut app, effects, &detail);
            let mut seen = draw(&app);
            key(&mut app, KeyCode::Enter, &detail);
            for pane in [Pane::Evidence, Pane::Timeline, Pane::Items] {
                while app.focus != pane {
                    key(&mut app, KeyCode::Tab, &detail);
                }
                for _ in 0..60 {
                    seen.push_str(&draw(&app));
                    key(&mut app, KeyCode::Char('j'), &detail);
                }
            }
            key(&mut app, KeyCode::Char('?'), &detail);
            seen.push_str(&draw(&app));
            if width < 200 {
                continue;
            }
            let bare = seen
                .match_indices("]52;")
                .filter(|(i, _)| !seen[..*i].ends_with('␛'));
            assert_eq!(
                bare.count(),
                0,
                "an OSC 52 body was drawn without its marker"
            );
            for marker in ["⟦␛]52;", "⟨U+202E", "⟨U+E0049⟩", "␍", "⟦␛[31m⟧", "⟦␛P"]
            {
                assert!(
                    seen.contains(marker),
                    "{marker} never drawn at {width}x{height}"
                );
            }
        }
    }

    #[test]
    fn bulk_triage_of_a_hostile_operation_draws_only_markers() {
        let mut hostile = Hostile(0);
        let detail = hostile_detail(&mut hostile);
        for (width, height) in [(80, 24), (200, 50)] {
            let mut app = App::new(options(true), Rect::new(0, 0, width, height));
            let effects = app.init();
            answer(&mut app, effects, &detail);
            key(&mut app, KeyCode::Char(' '), &detail);
            key(&mut app, KeyCode::Char('b'), &detail);
            let mut seen = draw(&app);
            key(&mut app, KeyCode::Down, &detail);
            key(&mut app, KeyCode::Enter, &detail);
            for c in "hostile packet triage".chars() {
                key(&mut app, KeyCode::Char(c), &detail);
            }
            key(&mut app, KeyCode::Enter, &detail);
            seen.push_str(&draw(&app));
            key(&mut app, KeyCode::Char('y'), &detail);
            let done = draw(&app);
            assert!(done.contains("⟦␛[2J⟧store says ⟨U+202E"), "{done}");
            seen.push_str(&done);
            assert!(
                seen.contains(&detail.row.operation.id.to_string()),
                "{seen}"
            );
        }
    }
}
