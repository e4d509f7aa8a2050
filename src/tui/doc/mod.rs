//! Documents of one operation that do not depend on the console's state: the
//! evidence and the timeline, built from a loaded operation as wrapped text.
//! `update` measures them (scroll limits) and the view draws them, so both
//! reach them here without going through each other.

pub(crate) mod evidence;
pub(crate) mod timeline;

use chrono::{DateTime, Utc};

use super::layout::Pane;
use super::opened::Frame;
use super::theme::Theme;
use crate::core::clock::{human_duration, human_instant};
use crate::core::sanitize::Clean;

/// Height in wrapped lines of what a text pane shows of `frame` at `width`
/// columns (0 for a pane that is not text, or an operation not loaded yet).
pub(crate) fn height(
    theme: Theme,
    frame: &Frame,
    pane: Pane,
    width: u16,
    now: DateTime<Utc>,
) -> usize {
    let Some(loaded) = &frame.loaded else {
        return 0;
    };
    match pane {
        Pane::Evidence => evidence::doc(theme, frame, loaded, now).wrap(width).len(),
        Pane::Timeline => timeline::doc(theme, loaded, now, width).wrap(width).len(),
        Pane::Queue | Pane::Items => 0,
    }
}

/// `in 2m00s` or `3m05s ago`.
fn relative(at: DateTime<Utc>, now: DateTime<Utc>) -> String {
    let seconds = (at - now).num_seconds();
    if seconds >= 0 {
        format!("in {}", human_duration(seconds))
    } else {
        format!("{} ago", human_duration(-seconds))
    }
}

/// An instant with how far it is from now: `2026-09-05T10:02:00Z (3m ago)`.
fn when_relative(at: Option<DateTime<Utc>>, now: DateTime<Utc>) -> String {
    at.map_or_else(
        || "-".to_owned(),
        |t| format!("{} ({})", human_instant(t), relative(t, now)),
    )
}

/// Untrusted optional text, sanitized, or `-`.
fn opt(text: Option<&str>) -> Clean {
    text.map_or_else(|| Clean::new("-"), Clean::new)
}
