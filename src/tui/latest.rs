//! Generation-tagged answers: a request gets a fresh tag, and its answer is taken
//! only while that request is still the latest one asked. Every pane, dialog and
//! debounce that waits on the runner holds one [`Latest`] instead of its own
//! counter and comparison.

use std::sync::atomic::{AtomicU64, Ordering};

/// Tags are unique in the process, so an answer can never be taken for another
/// slot's request, nor for a request of a dialog closed and opened again.
static NEXT: AtomicU64 = AtomicU64::new(1);

/// The one request in flight for a slot, with what it was about (`T`), so that
/// the answer can be applied the way it was asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Latest<T> {
    waiting: Option<(u64, T)>,
}

impl<T> Default for Latest<T> {
    fn default() -> Self {
        Latest { waiting: None }
    }
}

impl<T> Latest<T> {
    /// Records a new request about `about`, replacing any in flight; returns the
    /// tag its answer will carry.
    pub fn request(&mut self, about: T) -> u64 {
        let generation = NEXT.fetch_add(1, Ordering::Relaxed);
        self.waiting = Some((generation, about));
        generation
    }

    /// Takes the answer tagged `generation`: what its request was about, or
    /// `None` when a newer request replaced it (or none was waiting).
    pub fn answer(&mut self, generation: u64) -> Option<T> {
        self.waiting
            .take_if(|(g, _)| *g == generation)
            .map(|(_, about)| about)
    }

    /// Stops waiting: any answer still to come is dropped. Returns what the
    /// request in flight was about, if one was.
    pub fn cancel(&mut self) -> Option<T> {
        self.waiting.take().map(|(_, about)| about)
    }

    /// Whether the request tagged `generation` is the one in flight.
    pub fn awaits(&self, generation: u64) -> bool {
        self.waiting.as_ref().is_some_and(|(g, _)| *g == generation)
    }

    pub fn is_waiting(&self) -> bool {
        self.waiting.is_some()
    }

    /// What the request in flight is about.
    pub fn waiting(&self) -> Option<&T> {
        self.waiting.as_ref().map(|(_, about)| about)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_latest_request_is_answered() {
        let mut slot = Latest::default();
        let old = slot.request("first");
        let new = slot.request("second");
        assert_ne!(old, new);
        assert_eq!(slot.answer(old), None, "a replaced request is dropped");
        assert_eq!(slot.answer(new), Some("second"));
        assert_eq!(slot.answer(new), None, "an answer is taken once");
    }

    #[test]
    fn a_cancelled_request_is_not_answered() {
        let mut slot = Latest::default();
        let tag = slot.request(());
        assert_eq!(slot.cancel(), Some(()));
        assert!(!slot.is_waiting());
        assert_eq!(slot.answer(tag), None);
    }

    #[test]
    fn two_slots_never_share_a_tag() {
        let mut a = Latest::default();
        let mut b = Latest::default();
        let tag = a.request(());
        b.request(());
        assert_eq!(b.answer(tag), None);
    }
}
