//! Times the console's work on a large store: the first page with its header
//! counts, one operation's detail, a keystroke of incremental search, a step past
//! the page edge, a live refresh, and one full draw at 200x50. The store is one
//! made by `holdfast ingest` from the `synth` example's output.
//!
//! ```text
//! cargo run --release --example synth -- 100000 > /tmp/big.jsonl
//! holdfast --db /tmp/big.db ingest /tmp/big.jsonl
//! cargo run --release --example console_bench -- /tmp/big.db
//! ```

use std::path::PathBuf;
use std::time::{Duration, Instant};

use chrono::Utc;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use holdfast::console::app::{App, Effect, Message, Options};
use holdfast::console::runner::{Lookups, perform_with};
use holdfast::console::view;
use holdfast::core::rules::Actor;
use holdfast::store::Session;
use holdfast::store::sqlite::SqliteStore;
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::layout::Rect;

/// The lookup client, built once as the console builds it before its first
/// frame: [`holdfast::console::runner::perform`] would build one per effect and
/// time that too.
fn lookups() -> &'static Lookups {
    static LOOKUPS: std::sync::OnceLock<Lookups> = std::sync::OnceLock::new();
    LOOKUPS.get_or_init(|| {
        Lookups::new(holdfast::lookup::LookupSettings::default()).expect("the lookup client")
    })
}

/// Runs `effects` and feeds the answers back until none is left.
async fn settle(app: &mut App, store: &Session, effects: Vec<Effect>) {
    let mut queue = effects;
    while let Some(effect) = queue.pop() {
        if let Some(message) = perform_with(store, lookups(), &effect).await {
            queue.extend(app.update(message));
        }
    }
}

async fn key(app: &mut App, store: &Session, code: KeyCode) {
    let effects = app.update(Message::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    settle(app, store, effects).await;
}

/// Median and worst of a set of timings.
fn spread(mut all: Vec<Duration>) -> (Duration, Duration) {
    all.sort();
    (all[all.len() / 2], all[all.len() - 1])
}

fn report(name: &str, (median, worst): (Duration, Duration)) {
    println!(
        "{name:<40} median {:>9.2} ms   worst {:>9.2} ms",
        median.as_secs_f64() * 1000.0,
        worst.as_secs_f64() * 1000.0
    );
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let path = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .ok_or_else(|| anyhow::anyhow!("usage: console_bench STORE.db"))?;
    let actor = Actor::local("bench", None);
    let store = Session::new(
        std::sync::Arc::new(SqliteStore::open(&path).await?),
        actor.clone(),
    );
    let store = &store;
    let options = Options {
        actor,
        claimed: false,
        now: Utc::now(),
        frozen: true,
        color: true,
        log_path: None,
    };
    let size = Rect::new(0, 0, 200, 50);
    let fresh = || App::new(options.clone(), size);
    const RUNS: usize = 20;

    let mut app = fresh();
    let mut first = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        app = fresh();
        let effects = app.init();
        settle(&mut app, store, effects).await;
        first.push(start.elapsed());
    }
    println!(
        "store {} · {} held · {}",
        path.display(),
        app.queue.total,
        Utc::now().format("%Y-%m-%d")
    );
    report("first page + counts + selected detail", spread(first));

    let mut terminal = Terminal::new(TestBackend::new(size.width, size.height))?;
    let mut draw = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        terminal.draw(|frame| view::draw(frame, &app))?;
        draw.push(start.elapsed());
    }
    report("one full draw at 200x50", spread(draw));

    let mut refresh = Vec::new();
    for n in 0..RUNS {
        let start = Instant::now();
        let now = app.now;
        let live = Ok(holdfast::store::Live {
            head: i64::try_from(n).unwrap_or(0) + 1,
            link: holdfast::store::Link::Connected,
        });
        let effects = app.update(Message::Poll { live, now });
        settle(&mut app, store, effects).await;
        refresh.push(start.elapsed());
    }
    report("live refresh (page, counts, detail)", spread(refresh));

    let rows = app.page_rows();
    let mut page_edge = Vec::new();
    for _ in 0..RUNS {
        key(&mut app, store, KeyCode::Char('g')).await;
        let start = Instant::now();
        for _ in 0..rows {
            key(&mut app, store, KeyCode::Char('j')).await;
        }
        page_edge.push(start.elapsed() / u32::from(rows.max(1)));
    }
    report("one j (page edge included), per key", spread(page_edge));

    key(&mut app, store, KeyCode::Char('/')).await;
    let mut search = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        key(&mut app, store, KeyCode::Char('7')).await;
        search.push(start.elapsed());
        key(&mut app, store, KeyCode::Backspace).await;
    }
    report("one search keystroke (pause + listing)", spread(search));
    Ok(())
}
