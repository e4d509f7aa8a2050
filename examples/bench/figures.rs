//! One function per figure of the table. Each measures one thing a user waits
//! for, together with the floor it is compared with when it has one, on the same
//! store in the same run. A figure that does not finish within `LIMIT` is
//! reported as such rather than waited for.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use holdfast::console::app::{App, Effect, Message, Options};
use holdfast::console::runner::{Lookups, perform_with};
use holdfast::core::rules::Actor;
use holdfast::store::{OperationFilter, Page, Session, SortOrder, Store};
use ratatui::layout::Rect;

use crate::memory;

/// How long one figure may take before it is reported as not finished.
pub const LIMIT: Duration = Duration::from_secs(120);
/// Runs of a fast figure; the median is reported.
const RUNS: usize = 7;

/// One line of the table.
pub struct Row {
    pub what: String,
    pub measured: String,
    pub floor: String,
    pub verdict: String,
}

/// What one timed figure came to.
pub enum Took {
    In(Duration),
    Unfinished,
}

impl Took {
    pub fn text(&self) -> String {
        match self {
            Took::In(d) => ms(*d),
            Took::Unfinished => format!("nothing after {} s", LIMIT.as_secs()),
        }
    }
}

pub fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms >= 1000.0 {
        format!("{:.2} s", ms / 1000.0)
    } else {
        format!("{ms:.1} ms")
    }
}

/// `measured` against `limit × floor`.
fn within(measured: &Took, floor: Duration, times: f64) -> String {
    match measured {
        Took::In(d) => {
            let ratio = d.as_secs_f64() / floor.as_secs_f64().max(1e-9);
            let mark = if ratio <= times { "met" } else { "MISSED" };
            format!("{ratio:.1}× floor (target ≤ {times}×): {mark}")
        }
        Took::Unfinished => format!("target ≤ {times}× floor: MISSED"),
    }
}

fn median(mut all: Vec<Duration>) -> Duration {
    all.sort();
    all.get(all.len() / 2).copied().unwrap_or_default()
}

/// The bench's console: its options, fixed at one `now`.
pub struct Bench {
    pub session: Session,
    /// The lookup client, built once as the console builds it before its
    /// first frame (not once per effect).
    pub lookups: Lookups,
    pub options: Options,
    pub size: Rect,
}

impl Bench {
    pub fn new(store: Arc<dyn Store>) -> Bench {
        let actor = Actor::local("bench", None);
        Bench {
            session: Session::new(store, actor.clone()),
            lookups: Lookups::new(holdfast::lookup::LookupSettings::default())
                .expect("the lookup client"),
            options: Options {
                actor,
                claimed: false,
                now: Utc::now(),
                frozen: true,
                color: true,
                log_path: None,
            },
            size: Rect::new(0, 0, 200, 50),
        }
    }

    fn app(&self) -> App {
        App::new(self.options.clone(), self.size)
    }

    /// Runs `effects` and feeds their answers back until none is left. The
    /// chain's verification is left out: the console runs it on a task of its
    /// own and draws without waiting for it (the audit tab says "verifying…").
    async fn settle(&self, app: &mut App, effects: Vec<Effect>) {
        self.settle_holding(app, effects, |_| false).await;
    }

    /// [`Bench::settle`], but the effects `hold` picks are set aside and
    /// returned instead of run: what fills in after the frame being timed.
    async fn settle_holding(
        &self,
        app: &mut App,
        effects: Vec<Effect>,
        hold: fn(&Effect) -> bool,
    ) -> Vec<Effect> {
        let mut queue = effects;
        let mut held = Vec::new();
        while let Some(effect) = queue.pop() {
            if matches!(effect, Effect::Verify { .. }) {
                continue;
            }
            if hold(&effect) {
                held.push(effect);
                continue;
            }
            if let Some(message) = perform_with(&self.session, &self.lookups, &effect).await {
                queue.extend(app.update(message));
            }
        }
        held
    }

    async fn settle_within(&self, app: &mut App, effects: Vec<Effect>) -> Took {
        let start = Instant::now();
        match tokio::time::timeout(LIMIT, self.settle(app, effects)).await {
            Ok(()) => Took::In(start.elapsed()),
            Err(_) => Took::Unfinished,
        }
    }

    /// A console that has drawn its first frame.
    async fn started(&self) -> App {
        let mut app = self.app();
        let effects = app.init();
        self.settle(&mut app, effects).await;
        app
    }

    fn key(app: &mut App, c: char) -> Vec<Effect> {
        app.update(Message::Key(KeyEvent::new(
            KeyCode::Char(c),
            KeyModifiers::NONE,
        )))
    }
}

/// The floor: the first page of the queue, the query `holdfast list` makes.
pub async fn first_page_floor(bench: &Bench) -> anyhow::Result<(Duration, Row)> {
    let filter = OperationFilter {
        queue: true,
        ..OperationFilter::default()
    };
    let page = Page::first(u64::from(bench.size.height));
    let mut all = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        bench
            .session
            .list(&filter, SortOrder::Urgency, page.clone())
            .await?;
        all.push(start.elapsed());
    }
    let floor = median(all);
    Ok((
        floor,
        Row {
            what: "first page query of the queue (the floor)".into(),
            measured: ms(floor),
            floor: "—".into(),
            verdict: "floor".into(),
        },
    ))
}

/// Console start to the first frame: the queue's rows and the header counts
/// (one `List` effect, the page and the counts read side by side). The selected
/// operation's detail is asked for once the rows are in and fills in after that
/// frame, as on a terminal: it is timed as a row of its own.
pub async fn console_first_frame(bench: &Bench, floor: Duration) -> Vec<Row> {
    let mut frames = Vec::new();
    let mut details = Vec::new();
    let mut shown = true;
    let mut unfinished = false;
    for _ in 0..RUNS {
        let mut app = bench.app();
        let effects = app.init();
        let start = Instant::now();
        let frame = tokio::time::timeout(
            LIMIT,
            bench.settle_holding(&mut app, effects, |e| matches!(e, Effect::Load { .. })),
        )
        .await;
        let Ok(held) = frame else {
            unfinished = true;
            break;
        };
        frames.push(start.elapsed());
        shown &= app.queue.is_loaded() && !app.queue.rows.is_empty();
        let start = Instant::now();
        if let Took::Unfinished = bench.settle_within(&mut app, held).await {
            unfinished = true;
            break;
        }
        details.push(start.elapsed());
        shown &= app.detail.current().is_some();
    }
    let (frame, detail) = if unfinished {
        (Took::Unfinished, Took::Unfinished)
    } else {
        (Took::In(median(frames)), Took::In(median(details)))
    };
    let verdict = |took: &Took| {
        if shown {
            within(took, floor, 4.0)
        } else {
            "nothing shown: the bench store's queue is empty".into()
        }
    };
    vec![
        Row {
            what: "console start → first frame (queue rows + header counts)".into(),
            measured: frame.text(),
            floor: ms(floor),
            verdict: verdict(&frame),
        },
        Row {
            what: "  then the selected operation's detail filled in".into(),
            measured: detail.text(),
            floor: "—".into(),
            verdict: if shown {
                "after the first frame: no target".into()
            } else {
                verdict(&detail)
            },
        },
    ]
}

/// The queue header's counts alone, under the filter the console gives them:
/// the session's tenant scope and nothing else.
pub async fn header_counts(bench: &Bench, floor: Duration) -> anyhow::Result<Row> {
    let filter = OperationFilter::default();
    let mut all = Vec::new();
    for _ in 0..RUNS {
        let start = Instant::now();
        bench.session.counts(&filter, bench.options.now).await?;
        all.push(start.elapsed());
    }
    let took = Took::In(median(all));
    Ok(Row {
        what: "queue header counts".into(),
        measured: took.text(),
        floor: ms(floor),
        verdict: within(&took, floor, 4.0),
    })
}

/// The kept metric facts judged for every operation written since they were
/// last judged: on a freshly generated store, the whole store, once. The
/// metrics tab and the report after it read what this kept.
pub async fn judge_facts(bench: &Bench) -> Row {
    memory::reset_peak();
    let start = Instant::now();
    let done = tokio::time::timeout(
        LIMIT * 10,
        bench
            .session
            .refresh_facts(bench.options.now, &Default::default()),
    )
    .await;
    let (took, judged) = match &done {
        Ok(Ok(n)) => (Took::In(start.elapsed()), *n),
        _ => (Took::Unfinished, 0),
    };
    let peak = memory::peak_mib();
    Row {
        what: "metric facts judged after ingest (once per write)".into(),
        measured: format!(
            "{} · {judged} operations · peak RSS {peak} MiB",
            took.text()
        ),
        floor: "—".into(),
        verdict: "backfill".into(),
    }
}

/// Key `3` on a started console until the metrics tab shows figures, and the
/// peak memory while it computes.
pub async fn metrics_tab(bench: &Bench) -> Row {
    let mut app = bench.started().await;
    memory::reset_peak();
    let effects = Bench::key(&mut app, '3');
    let took = bench.settle_within(&mut app, effects).await;
    let peak = memory::peak_mib();
    let shown = app.metrics.report.is_some();
    Row {
        what: "metrics tab (key 3) → figures shown".into(),
        measured: format!("{} · peak RSS {peak} MiB", took.text()),
        floor: "—".into(),
        verdict: target(&took, Duration::from_secs(1), peak, shown),
    }
}

fn target(took: &Took, limit: Duration, peak: u64, shown: bool) -> String {
    let fast = matches!(took, Took::In(d) if *d <= limit);
    let mark = if fast && peak < 200 && shown {
        "met"
    } else {
        "MISSED"
    };
    format!("target ≤ {} · < 200 MiB: {mark}", ms(limit))
}

/// `holdfast report`'s computation: the whole report, and the peak memory.
pub async fn report(bench: &Bench) -> Row {
    memory::reset_peak();
    let start = Instant::now();
    let now = bench.options.now;
    let done = tokio::time::timeout(
        LIMIT,
        holdfast::report::compute(&bench.session, now, &Default::default()),
    )
    .await;
    let took = match &done {
        Ok(Ok(_)) => Took::In(start.elapsed()),
        _ => Took::Unfinished,
    };
    let peak = memory::peak_mib();
    Row {
        what: "holdfast report (computed, not printed)".into(),
        measured: format!("{} · peak RSS {peak} MiB", took.text()),
        floor: "—".into(),
        verdict: target(&took, Duration::from_secs(1), peak, true),
    }
}

/// Key `4` on a started console until the audit tab shows its first page.
pub async fn audit_tab(bench: &Bench, floor: Duration) -> Row {
    let mut app = bench.started().await;
    let effects = Bench::key(&mut app, '4');
    let took = bench.settle_within(&mut app, effects).await;
    Row {
        what: "audit tab (key 4) → first page".into(),
        measured: took.text(),
        floor: ms(floor),
        verdict: within(&took, floor, 4.0),
    }
}

/// The reference path the paged report is tested against: every record in scope
/// read into one `Dataset`, then judged in memory — what the report did before it
/// read the store in pages, measured beside it.
pub async fn report_profile(bench: &Bench) -> Vec<Row> {
    memory::reset_peak();
    let start = Instant::now();
    let read = tokio::time::timeout(LIMIT, bench.session.dataset()).await;
    let Ok(Ok(data)) = read else {
        return vec![Row {
            what: "  reference, step 1: read every record in scope".into(),
            measured: Took::Unfinished.text(),
            floor: "—".into(),
            verdict: "profile".into(),
        }];
    };
    let loaded = start.elapsed();
    let peak_loaded = memory::peak_mib();
    let start = Instant::now();
    let report = holdfast::core::metrics::report(&data, bench.options.now);
    let judged = start.elapsed();
    let peak = memory::peak_mib();
    let ids: usize = report
        .metrics
        .iter()
        .map(|m| m.numerator_ids.len() + m.denominator_ids.len())
        .sum();
    vec![
        Row {
            what: "  reference, step 1: read every record in scope".into(),
            measured: format!("{} · peak RSS {peak_loaded} MiB", ms(loaded)),
            floor: "—".into(),
            verdict: "profile".into(),
        },
        Row {
            what: "  reference, step 2: judge in memory, assemble".into(),
            measured: format!(
                "{} · peak RSS {peak} MiB · {ids} operation ids listed",
                ms(judged)
            ),
            floor: "—".into(),
            verdict: "profile".into(),
        },
    ]
}

/// `holdfast audit verify`: the whole chain walked and the store compared with
/// it, as audit rows per second.
pub async fn audit_verify(bench: &Bench) -> Row {
    let start = Instant::now();
    let done = tokio::time::timeout(LIMIT, bench.session.verify()).await;
    let took = start.elapsed();
    let what = "holdfast audit verify (walk + store comparison)".to_owned();
    let target = 300_000.0;
    match done {
        Ok(Ok(holdfast::core::audit::ChainStatus::Intact { rows, .. })) => {
            let rate = rows as f64 / took.as_secs_f64().max(1e-9);
            let mark = if rate >= target { "met" } else { "MISSED" };
            Row {
                what,
                measured: format!("{rate:.0} rows/s ({rows} rows in {})", ms(took)),
                floor: "—".into(),
                verdict: format!("target ≥ {target:.0} rows/s: {mark}"),
            }
        }
        Ok(Ok(broken)) => Row {
            what,
            measured: format!("{broken:?}"),
            floor: "—".into(),
            verdict: "the bench store does not verify".into(),
        },
        _ => Row {
            what,
            measured: Took::Unfinished.text(),
            floor: "—".into(),
            verdict: format!("target ≥ {target:.0} rows/s: MISSED"),
        },
    }
}

/// Mark-all: the ids of every operation `filter` matches, in urgency order (the
/// held queue, or every operation for a count near issue 12's 50,000 held).
pub async fn mark_all(bench: &Bench, filter: OperationFilter, of: &str) -> anyhow::Result<Row> {
    let mut runs = Vec::with_capacity(RUNS);
    let mut marked = 0;
    for _ in 0..RUNS {
        let start = Instant::now();
        marked = bench
            .session
            .matching_ids(&filter, SortOrder::Urgency)
            .await?
            .len();
        runs.push(start.elapsed());
    }
    let took = median(runs);
    let mark = if took <= Duration::from_secs(2) {
        "met"
    } else {
        "MISSED"
    };
    Ok(Row {
        what: format!("mark-all of {of} ({marked} ids)"),
        measured: ms(took),
        floor: "—".into(),
        verdict: format!("target < 2 s (at 50,000 held): {mark}"),
    })
}
