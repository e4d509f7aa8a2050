//! How far a report's judging of the operations the store has not judged yet
//! has got ([`Judging`]), told on one watch channel ([`Progress`]) that the
//! judging call is handed: the console's metrics tab and `holdfast report`
//! both read it. The figures are the store's: the total is counted once before
//! the first page is judged, and the count moves as each page is.
//!
//! An ingest judges what it wrote before it ends ([`keep_current`]), so that
//! a store is ready for the metrics the moment the ingest ends, not when its
//! first reader has judged it.

use std::fmt;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use tokio::sync::watch;

use super::{Store, StoreError};

use crate::core::clock::human_duration;
use crate::core::names::grouped;

/// How far judging has got: `judged` of `total` operations, `elapsed` since
/// the total was counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Judging {
    pub judged: u64,
    pub total: u64,
    pub elapsed: Duration,
}

impl Judging {
    /// Operations judged per second so far; `None` before the first is.
    pub fn rate(&self) -> Option<f64> {
        let seconds = self.elapsed.as_secs_f64();
        (self.judged > 0 && seconds > 0.0).then(|| self.judged as f64 / seconds)
    }

    /// How long the rest would take at [`Self::rate`].
    pub fn left(&self) -> Option<Duration> {
        let rest = self.total.saturating_sub(self.judged) as f64;
        self.rate().map(|rate| Duration::from_secs_f64(rest / rate))
    }

    /// The share judged, in percent.
    pub fn percent(&self) -> f64 {
        if self.total == 0 {
            100.0
        } else {
            self.judged as f64 * 100.0 / self.total as f64
        }
    }
}

impl Judging {
    /// The count without its words: `12,500 of 200,000 (6.2%) · 2,410/s ·
    /// about 1m18s left`, for where the words are already said.
    pub fn figures(&self) -> String {
        let count = format!(
            "{} of {} ({:.1}%)",
            grouped(self.judged),
            grouped(self.total),
            self.percent()
        );
        match (self.rate(), self.left()) {
            (Some(rate), Some(left)) => {
                // Rounded up: "0s left" only once nothing is.
                let seconds = i64::try_from(left.as_secs() + u64::from(left.subsec_nanos() > 0))
                    .unwrap_or(i64::MAX);
                format!(
                    "{count} · {}/s · about {} left",
                    grouped(rate.round() as u64),
                    human_duration(seconds)
                )
            }
            _ => format!("{count} · measuring the rate"),
        }
    }
}

impl fmt::Display for Judging {
    /// `Judging the operations the store has not judged yet: 12,500 of
    /// 200,000 (6.2%) · 2,410/s · about 1m18s left`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Judging the operations the store has not judged yet: {}",
            self.figures()
        )
    }
}

/// Where a judging call tells how far it has got: each run's first count and
/// its latest on a watch channel, `None` until judging starts. A watch keeps
/// only its latest value, so a run that ends before its follower first looks
/// would otherwise lose its first count; keeping the first beside the latest
/// lets [`follow`] tell both. A call with nothing to judge tells nothing. A
/// caller that does not listen passes `Progress::default()`.
#[derive(Debug, Clone)]
pub struct Progress(watch::Sender<Option<Told>>);

/// What a [`Progress`] holds: the `run`th judging call's first count and its
/// latest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Told {
    run: u64,
    first: Judging,
    latest: Judging,
}

impl Told {
    /// The latest count of the latest run.
    pub fn latest(&self) -> Judging {
        self.latest
    }
}

impl Default for Progress {
    fn default() -> Self {
        Progress(watch::Sender::new(None))
    }
}

impl Progress {
    /// A receiver of every count told from now on, for [`follow`].
    pub fn subscribe(&self) -> watch::Receiver<Option<Told>> {
        self.0.subscribe()
    }

    /// Starts counting `total` operations to judge (told at once when there
    /// are any).
    pub(crate) fn start(&self, total: u64) -> Meter<'_> {
        let run = self.0.borrow().map_or(0, |told| told.run + 1);
        let meter = Meter {
            progress: self,
            run,
            started: Instant::now(),
            judged: 0,
            total,
        };
        meter.tell();
        meter
    }
}

/// Follows `seen` until its [`Progress`] is dropped, handing `tell` the
/// judging as it moves: each run's first count at once (even where the run
/// has moved on before the follower looked), then at most one every `every`
/// (the latest, once `every` has passed since the last told), and the last
/// one (every operation judged) always.
pub async fn follow(
    mut seen: watch::Receiver<Option<Told>>,
    every: Duration,
    mut tell: impl FnMut(Judging),
) {
    let mut run: Option<u64> = None;
    let mut told: Option<tokio::time::Instant> = None;
    let mut held: Option<Judging> = None;
    loop {
        let due = told.map_or_else(tokio::time::Instant::now, |at| at + every);
        tokio::select! {
            changed = seen.changed() => {
                if changed.is_err() {
                    break;
                }
                let Some(now) = *seen.borrow_and_update() else { continue };
                if run != Some(now.run) {
                    run = Some(now.run);
                    tell(now.first);
                    told = Some(tokio::time::Instant::now());
                    held = None;
                    if now.latest == now.first {
                        continue;
                    }
                }
                let judging = now.latest;
                let done = judging.judged >= judging.total;
                if done || told.is_none_or(|at| at.elapsed() >= every) {
                    tell(judging);
                    told = Some(tokio::time::Instant::now());
                    held = None;
                } else {
                    held = Some(judging);
                }
            }
            () = tokio::time::sleep_until(due), if held.is_some() => {
                if let Some(judging) = held.take() {
                    tell(judging);
                    told = Some(tokio::time::Instant::now());
                }
            }
        }
    }
}

/// Runs `judge` with a [`Progress`] of its own, handing `tell` what it tells
/// as [`follow`] paces it (at most every `every`), and answers what `judge`
/// answers once it is done. `judge` owns the progress: dropping it when done
/// ends the following.
pub async fn telling<T, F>(
    every: Duration,
    tell: impl FnMut(Judging),
    judge: impl FnOnce(Progress) -> F,
) -> T
where
    F: Future<Output = T>,
{
    let progress = Progress::default();
    let seen = progress.subscribe();
    tokio::join!(judge(progress), follow(seen, every, tell)).0
}

/// Judges at `now` what the writes before made stale, with their relatives,
/// telling `progress` how far it has got: what an ingest does once it has
/// committed, so that the metrics tab and `report` find the store judged.
/// Keeping the facts current belongs to the write that changes them, not to
/// the first reader. Returns how many operations were judged (relatives
/// included); `None` where the store's login may not keep the facts
/// (PostgreSQL's application group), whose reports judge what is stale
/// without writing it.
pub async fn keep_current(
    store: &dyn Store,
    now: DateTime<Utc>,
    progress: &Progress,
) -> Result<Option<u64>, StoreError> {
    if !store.keeps_facts().await? {
        return Ok(None);
    }
    store.refresh_facts(now, progress).await.map(Some)
}

/// The count of one judging call, told on its [`Progress`] as it moves.
pub(crate) struct Meter<'a> {
    progress: &'a Progress,
    run: u64,
    started: Instant,
    judged: u64,
    total: u64,
}

impl Meter<'_> {
    /// `n` more operations judged. One marked for judging after the total was
    /// counted (a write while judging) raises the total with it.
    pub(crate) fn add(&mut self, n: u64) {
        self.judged = self.judged.saturating_add(n);
        self.total = self.total.max(self.judged);
        self.tell();
    }

    /// The walk is over: every operation counted was judged, by name or as
    /// the relative of one judged before it.
    pub(crate) fn finish(mut self) {
        if self.judged < self.total {
            self.judged = self.total;
            self.tell();
        }
    }

    fn tell(&self) {
        if self.total > 0 {
            let latest = Judging {
                judged: self.judged,
                total: self.total,
                elapsed: self.started.elapsed(),
            };
            self.progress.0.send_modify(|told| {
                let first = match told {
                    Some(told) if told.run == self.run => told.first,
                    _ => latest,
                };
                *told = Some(Told {
                    run: self.run,
                    first,
                    latest,
                });
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_reads_with_its_share_rate_and_what_is_left() {
        let judging = Judging {
            judged: 12_500,
            total: 200_000,
            elapsed: Duration::from_millis(5_187),
        };
        assert_eq!(
            judging.to_string(),
            "Judging the operations the store has not judged yet: 12,500 of 200,000 (6.2%) \
             · 2,410/s · about 1m18s left"
        );
        let first = Judging {
            judged: 0,
            total: 1_000_000,
            elapsed: Duration::ZERO,
        };
        assert_eq!(
            first.to_string(),
            "Judging the operations the store has not judged yet: 0 of 1,000,000 (0.0%) \
             · measuring the rate"
        );
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_000), "1,000");
    }

    #[test]
    fn a_meter_tells_its_count_and_reaches_its_total_when_finished() {
        let progress = Progress::default();
        let seen = progress.subscribe();
        progress.start(0).finish();
        assert_eq!(*seen.borrow(), None, "nothing to judge tells nothing");
        let mut meter = progress.start(3);
        assert_eq!(
            seen.borrow().map(|t| (t.latest().judged, t.latest().total)),
            Some((0, 3))
        );
        meter.add(1);
        assert_eq!(
            seen.borrow().map(|t| (t.latest().judged, t.latest().total)),
            Some((1, 3))
        );
        meter.finish();
        assert_eq!(
            seen.borrow().map(|t| (t.latest().judged, t.latest().total)),
            Some((3, 3))
        );
        let mut meter = progress.start(1);
        meter.add(2);
        assert_eq!(
            seen.borrow().map(|t| (t.latest().judged, t.latest().total)),
            Some((2, 2))
        );
    }

    /// A follower that tells what it hears into a list.
    fn follower(progress: &Progress, every: Duration) -> tokio::task::JoinHandle<Vec<u64>> {
        let seen = progress.subscribe();
        tokio::spawn(async move {
            let mut told = Vec::new();
            follow(seen, every, |j| told.push(j.judged)).await;
            told
        })
    }

    #[tokio::test]
    async fn a_run_over_before_its_follower_looks_still_tells_its_first_count() {
        let progress = Progress::default();
        let seen = progress.subscribe();
        for total in [5, 2] {
            let mut meter = progress.start(total);
            meter.add(1);
            meter.finish();
        }
        drop(progress);
        let mut told = Vec::new();
        follow(seen, Duration::from_secs(60), |j| {
            told.push((j.judged, j.total))
        })
        .await;
        assert_eq!(
            told,
            [(0, 2), (2, 2)],
            "the latest run's first count, then its last"
        );
    }

    #[tokio::test]
    async fn a_follower_tells_the_first_the_last_and_at_most_one_between_per_interval() {
        let progress = Progress::default();
        let slow = follower(&progress, Duration::from_secs(60));
        let quick = follower(&progress, Duration::from_millis(20));
        let mut meter = progress.start(4);
        tokio::task::yield_now().await;
        meter.add(1);
        meter.add(1);
        tokio::time::sleep(Duration::from_millis(200)).await;
        meter.add(1);
        meter.finish();
        drop(progress);
        let slow = slow.await.unwrap();
        let quick = quick.await.unwrap();
        assert_eq!(slow, [0, 4], "nothing between within the interval");
        assert_eq!(quick.first(), Some(&0));
        assert!(
            quick.ends_with(&[2, 4]) || quick.ends_with(&[2, 3, 4]),
            "the latest held is told once the interval is over: {quick:?}"
        );
    }
}
