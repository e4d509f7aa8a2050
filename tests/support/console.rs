//! A harness that drives the console the way the loop does: messages into
//! `update`, effects run against a real store, their answers fed back, until
//! nothing is left to do; and the screen drawn into a test backend.

use std::collections::VecDeque;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseEvent, MouseEventKind};
use holdfast::console::app::{App, Effect, Message, Options, PromptState};
use holdfast::console::bulk::BulkDialog;
use holdfast::console::review::ReviewDialog;
use holdfast::console::runner::{Lookups, perform_with};
use holdfast::console::view;
use holdfast::core::clock::parse_instant;
use holdfast::core::rules::Actor;
use holdfast::store::{IngestMode, Link, Live, Session, Store};
use holdfast::wire::parse_stream;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

use super::stores::{self, Fresh};

/// The console fixture: holds of every kind, in the vocabulary of the seed.
pub const PACKET: &str = include_str!("../fixtures/console.jsonl");

/// The demo packet `holdfast demo` loads.
pub const DEMO: &str = holdfast::DEMO_PACKET;

/// The frozen instant the fixture tests run at.
pub fn now() -> DateTime<Utc> {
    parse_instant("2026-09-05T10:04:00Z").unwrap()
}

/// The demo's own instant (its latest record), which `holdfast demo` freezes.
pub fn demo_now() -> DateTime<Utc> {
    parse_instant("2026-09-05T11:40:00Z").unwrap()
}

pub fn options(color: bool) -> Options {
    options_at(color, now())
}

pub fn options_at(color: bool, now: DateTime<Utc>) -> Options {
    Options {
        actor: Actor::local("rev:ana", Some("RP03".into())),
        claimed: false,
        now,
        frozen: true,
        color,
        log_path: Some("/var/log/holdfast/holdfast.log".into()),
    }
}

/// Loads wire-format text into `store` as another process would.
pub async fn ingest(store: &dyn Store, text: &str) {
    ingest_at(store, text, now()).await;
}

async fn ingest_at(store: &dyn Store, text: &str, now: DateTime<Utc>) {
    let parsed = parse_stream(text.as_bytes(), &mut |_| {}).unwrap();
    assert!(parsed.errors.is_empty(), "{:?}", parsed.errors);
    let report = store
        .ingest(parsed.records, IngestMode::Strict, "test-feed", now)
        .await
        .unwrap();
    assert!(report.rejected.is_empty(), "{:?}", report.rejected);
}

/// The console as the tests read it: the app itself (through `Deref`), plus
/// the screens drawn over it as fields, taken from its one modal slot after
/// every message.
pub struct Probe {
    app: App,
    /// The review dialog, open under the help overlay or not.
    pub review: Option<ReviewDialog>,
    /// The bulk dialog, open under the help overlay or not.
    pub bulk: Option<BulkDialog>,
    pub prompt: Option<PromptState>,
    /// Whether the help overlay is open.
    pub help: bool,
}

impl Probe {
    fn new(app: App) -> Self {
        let mut probe = Probe {
            app,
            review: None,
            bulk: None,
            prompt: None,
            help: false,
        };
        probe.read();
        probe
    }

    fn read(&mut self) {
        self.review = self.app.review().cloned();
        self.bulk = self.app.bulk().cloned();
        self.prompt = self.app.prompt().cloned();
        self.help = self.app.help_open();
    }

    pub fn init(&mut self) -> Vec<Effect> {
        let effects = self.app.init();
        self.read();
        effects
    }

    pub fn update(&mut self, message: Message) -> Vec<Effect> {
        let effects = self.app.update(message);
        self.read();
        effects
    }
}

impl std::ops::Deref for Probe {
    type Target = App;

    fn deref(&self) -> &App {
        &self.app
    }
}

pub struct Harness {
    pub app: Probe,
    pub fresh: Fresh,
    /// The frozen now of this console.
    pub now: DateTime<Utc>,
    /// Whether the console asked to quit.
    pub quit: bool,
    /// The `[lookup]` config the console's `o` runs under.
    pub lookup: holdfast::lookup::LookupSettings,
}

impl Harness {
    /// A console on a fresh store loaded with `packet`, first page shown.
    pub async fn new(packet: &str, width: u16, height: u16) -> Self {
        Self::at(packet, now(), width, height).await
    }

    /// The same, with the clock frozen at `now`.
    pub async fn at(packet: &str, now: DateTime<Utc>, width: u16, height: u16) -> Self {
        Self::with(packet, options_at(true, now), width, height).await
    }

    /// The same, started with `options`.
    pub async fn with(packet: &str, options: Options, width: u16, height: u16) -> Self {
        let fresh = stores::sqlite().await;
        if !packet.is_empty() {
            ingest_at(fresh.store.as_ref(), packet, options.now).await;
        }
        Self::over(fresh, options, width, height).await
    }

    /// A console started with `options` on `fresh` as others left it.
    pub async fn over(fresh: Fresh, options: Options, width: u16, height: u16) -> Self {
        let now = options.now;
        let mut harness = Harness {
            app: Probe::new(App::new(options, Rect::new(0, 0, width, height))),
            fresh,
            now,
            quit: false,
            lookup: holdfast::lookup::LookupSettings::default(),
        };
        let effects = harness.app.init();
        harness.settle(effects).await;
        harness.poll().await;
        harness
    }

    pub fn store(&self) -> Arc<dyn Store> {
        Arc::clone(&self.fresh.store)
    }

    /// Runs effects and feeds their answers back until none is left.
    pub async fn settle(&mut self, effects: Vec<Effect>) {
        let mut queue: VecDeque<Effect> = effects.into();
        while let Some(effect) = queue.pop_front() {
            match effect {
                Effect::Quit => {
                    self.quit = true;
                    continue;
                }
                // The harness owns time: a pause in typing is over at once.
                Effect::Debounce { generation, .. } => {
                    queue.extend(self.app.update(Message::Debounced { generation }));
                    continue;
                }
                _ => {}
            }
            let session = Session::new(self.store(), self.app.actor.clone());
            let lookups = Lookups::new(self.lookup.clone()).unwrap();
            if let Some(message) = perform_with(&session, &lookups, &effect).await {
                queue.extend(self.app.update(message));
            }
        }
    }

    pub async fn send(&mut self, message: Message) {
        let effects = self.app.update(message);
        self.settle(effects).await;
    }

    /// The watcher's report of the store: its head now, connected.
    pub async fn poll(&mut self) {
        self.poll_link(Link::Connected).await;
    }

    /// The watcher's report of the store's head now, with the connection `link`.
    pub async fn poll_link(&mut self, link: Link) {
        let live = self
            .store()
            .head_seq()
            .await
            .map(|head| Live { head, link })
            .map_err(|e| e.to_string());
        let now = self.now;
        self.send(Message::Poll { live, now }).await;
    }

    /// Rewrites audit row 3 behind the store's back (its append-only trigger
    /// dropped first), as a tampered database would hold it.
    pub async fn tamper_audit(&self) {
        self.fresh
            .execute("DROP TRIGGER audit_no_update")
            .await
            .unwrap();
        self.fresh
            .execute("UPDATE audit SET rationale = 'nothing happened' WHERE seq = 3")
            .await
            .unwrap();
    }

    /// What the review dialog says is wrong with what was typed ("" if nothing).
    pub fn review_error(&self) -> String {
        self.app
            .review
            .as_ref()
            .expect("the dialog is open")
            .error
            .clone()
            .unwrap_or_default()
    }

    /// The state the queue shows for `id`, if it is on the page.
    pub fn row_state(&self, id: &str) -> Option<holdfast::core::model::State> {
        self.app
            .queue
            .rows
            .iter()
            .find(|r| r.operation.id.as_str() == id)
            .map(|r| r.operation.state)
    }

    /// Moves the queue selection onto `id`.
    pub async fn select_id(&mut self, id: &str) {
        self.key(KeyCode::Char('g')).await;
        for _ in 0..self.app.queue.total {
            if self.selected().as_deref() == Some(id) {
                return;
            }
            self.key(KeyCode::Char('j')).await;
        }
        assert_eq!(
            self.selected().as_deref(),
            Some(id),
            "{id} is not in the queue"
        );
    }

    pub async fn key(&mut self, code: KeyCode) {
        self.send(Message::Key(KeyEvent::new(code, KeyModifiers::NONE)))
            .await;
    }

    /// Types each character as a key.
    pub async fn keys(&mut self, text: &str) {
        for c in text.chars() {
            self.key(KeyCode::Char(c)).await;
        }
    }

    pub async fn wheel(&mut self, down: bool, column: u16, row: u16) {
        let kind = if down {
            MouseEventKind::ScrollDown
        } else {
            MouseEventKind::ScrollUp
        };
        self.send(Message::Mouse(MouseEvent {
            kind,
            column,
            row,
            modifiers: KeyModifiers::NONE,
        }))
        .await;
    }

    pub async fn resize(&mut self, width: u16, height: u16) {
        self.send(Message::Resize(width, height)).await;
    }

    /// The screen as the test backend holds it.
    pub fn render(&self) -> TestBackend {
        render(&self.app)
    }

    /// The screen as plain text, one line per row.
    pub fn screen(&self) -> String {
        text(self.render().buffer())
    }

    /// The id under the queue's selection.
    pub fn selected(&self) -> Option<String> {
        self.app.queue.selected_id.as_ref().map(ToString::to_string)
    }

    /// The ids of the queue page on screen, in order.
    pub fn ids(&self) -> Vec<String> {
        self.app
            .queue
            .rows
            .iter()
            .map(|r| r.operation.id.to_string())
            .collect()
    }

    /// The id of the operation open on top of the detail stack.
    pub fn open(&self) -> Option<String> {
        self.app.detail.top().map(|f| f.id.to_string())
    }
}

/// Draws `app` at its own size.
pub fn render(app: &App) -> TestBackend {
    let mut terminal = Terminal::new(TestBackend::new(app.size.width, app.size.height)).unwrap();
    terminal.draw(|frame| view::draw(frame, app)).unwrap();
    terminal.backend().clone()
}

/// A buffer as text, trailing blanks trimmed.
pub fn text(buffer: &Buffer) -> String {
    let width = usize::from(buffer.area.width);
    buffer
        .content
        .chunks(width.max(1))
        .map(|row| {
            let line: String = row.iter().map(|c| c.symbol()).collect();
            line.trim_end().to_owned()
        })
        .collect::<Vec<_>>()
        .join("\n")
}
