//! The detail side's own state: the operations opened, as a navigation stack
//! (following a parent, child, dependency or key-conflict link pushes one, `Esc`
//! pops it), each with the evidence bundle the core computed for it, its scroll
//! positions and its selected link. A newer version of an operation being read is
//! held back and flagged rather than swapped in under the reviewer's eyes.

mod draw;
mod items;

use chrono::{DateTime, Utc};

use crate::core::evidence;
use crate::core::ids::OperationId;
use crate::core::model::OperationDetail;
use crate::core::rules::Actor;
use crate::tui::latest::Latest;
pub use crate::tui::opened::{Frame, Link, LinkKind, Loaded, Scroll, links};

/// What a detail answer did to the frame it was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Shown (first load, or nothing the reviewer was reading changed).
    Shown,
    /// The operation changed while being read: held back and flagged.
    Flagged,
    /// The load failed; the error is on the frame.
    Failed,
}

#[derive(Debug, Clone, Default)]
pub struct DetailState {
    /// The operations opened, the root (the queue's selection) first.
    pub stack: Vec<Frame>,
    pending: Latest<OperationId>,
}

impl DetailState {
    pub fn top(&self) -> Option<&Frame> {
        self.stack.last()
    }

    pub fn top_mut(&mut self) -> Option<&mut Frame> {
        self.stack.last_mut()
    }

    /// The loaded version of the operation on top.
    pub fn current(&self) -> Option<&Loaded> {
        self.top().and_then(|f| f.loaded.as_ref())
    }

    pub fn is_loading(&self) -> bool {
        self.pending.is_waiting()
    }

    /// Makes `id` the root, dropping any links followed; returns whether it must
    /// be loaded (it was not the root already).
    pub fn set_root(&mut self, id: &OperationId) -> bool {
        if self.stack.len() == 1 && self.stack[0].id == *id {
            return false;
        }
        if self.stack.first().is_some_and(|f| f.id == *id) {
            self.stack.truncate(1);
            return false;
        }
        self.stack = vec![Frame::new(id.clone())];
        true
    }

    pub fn clear(&mut self) {
        self.stack.clear();
        self.pending.cancel();
    }

    /// Opens `id` on top of the stack (following a link).
    pub fn push(&mut self, id: OperationId) {
        self.stack.push(Frame::new(id));
    }

    /// Goes back to the operation the current one was opened from; `false` at the
    /// root.
    pub fn pop(&mut self) -> bool {
        if self.stack.len() > 1 {
            self.stack.pop();
            true
        } else {
            false
        }
    }

    /// Records that a load of `id` is in flight; returns its tag.
    pub fn expect(&mut self, id: OperationId) -> u64 {
        self.pending.request(id)
    }

    /// Applies a detail answer to the frame on top, if it is still the one asked
    /// for. `reading` says whether the detail is on screen: a change to an
    /// operation being read is flagged, one off screen simply replaces it.
    pub fn apply(
        &mut self,
        generation: u64,
        result: Result<OperationDetail, String>,
        actor: &Actor,
        now: DateTime<Utc>,
        reading: bool,
    ) -> Option<Applied> {
        let id = self.pending.answer(generation)?;
        let frame = self.stack.last_mut().filter(|f| f.id == id)?;
        let detail = match result {
            Ok(detail) if actor.sees(&detail.row.operation.tenant) => detail,
            Ok(_) => {
                frame.error = Some(format!(
                    "operation {id} belongs to a tenant you have not been granted"
                ));
                return Some(Applied::Failed);
            }
            Err(e) => {
                frame.error = Some(e);
                return Some(Applied::Failed);
            }
        };
        frame.error = None;
        let fresh = Loaded::new(detail, actor, now);
        let applied = match &frame.loaded {
            Some(old) if old.detail != fresh.detail && reading => {
                frame.changed = Some(fresh);
                Applied::Flagged
            }
            _ => {
                frame.loaded = Some(fresh);
                frame.changed = None;
                Applied::Shown
            }
        };
        Some(applied)
    }

    /// Shows the held-back version of the operation on top; `false` if none.
    pub fn accept_change(&mut self) -> bool {
        match self.top_mut() {
            Some(frame) if frame.changed.is_some() => {
                frame.loaded = frame.changed.take();
                frame.link = 0;
                true
            }
            _ => false,
        }
    }

    /// Recomputes every bundle for a new `now` (the system clock moved).
    pub fn retime(&mut self, actor: &Actor, now: DateTime<Utc>) {
        for frame in &mut self.stack {
            for loaded in [&mut frame.loaded, &mut frame.changed]
                .into_iter()
                .flatten()
            {
                loaded.bundle = evidence::bundle(&loaded.detail, actor, now);
            }
        }
    }
}
