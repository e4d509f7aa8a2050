//! The executor's clock: the system clock with real waits, or the drill's
//! deterministic clock, where waiting only moves the clock forward.

use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Duration, Utc};

/// Where the executor (and the simulated provider beside it) reads the time.
#[derive(Debug, Clone)]
pub enum ExecClock {
    /// Real time; waits sleep.
    System,
    /// A deterministic clock shared by everything in one drill case; waits
    /// advance it without sleeping.
    Simulated(Arc<Mutex<DateTime<Utc>>>),
}

impl ExecClock {
    /// A deterministic clock starting at `start`.
    pub fn simulated(start: DateTime<Utc>) -> Self {
        ExecClock::Simulated(Arc::new(Mutex::new(start)))
    }

    pub fn now(&self) -> DateTime<Utc> {
        match self {
            ExecClock::System => Utc::now(),
            ExecClock::Simulated(at) => *at.lock().unwrap_or_else(PoisonError::into_inner),
        }
    }

    /// Lets `by` pass: sleeps on the system clock, moves a simulated one.
    pub async fn wait(&self, by: Duration) {
        if by <= Duration::zero() {
            return;
        }
        match self {
            ExecClock::System => {
                if let Ok(std) = by.to_std() {
                    tokio::time::sleep(std).await;
                }
            }
            ExecClock::Simulated(at) => {
                let mut at = at.lock().unwrap_or_else(PoisonError::into_inner);
                *at += by;
            }
        }
    }

    /// Waits until `instant` (no wait when it has passed).
    pub async fn wait_until(&self, instant: DateTime<Utc>) {
        let by = instant - self.now();
        self.wait(by).await;
    }

    pub fn is_simulated(&self) -> bool {
        matches!(self, ExecClock::Simulated(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_simulated_wait_moves_the_clock_without_sleeping() {
        let start = Utc::now() - Duration::days(1);
        let clock = ExecClock::simulated(start);
        let real = std::time::Instant::now();
        clock.wait(Duration::hours(2)).await;
        assert_eq!(clock.now(), start + Duration::hours(2));
        clock.wait_until(start + Duration::hours(1)).await;
        assert_eq!(clock.now(), start + Duration::hours(2));
        assert!(real.elapsed() < std::time::Duration::from_secs(1));
    }
}
