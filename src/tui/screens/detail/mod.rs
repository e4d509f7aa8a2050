//! The detail side's own state: the operations opened, as a navigation stack
//! (following a parent, child, dependency or key-conflict link pushes one, `Esc`
//! pops it), each with the evidence bundle the core computed for it, its scroll
//! positions and its selected link. A newer version of an operation being read is
//! held back and flagged rather than swapped in under the reviewer's eyes.

mod draw;
mod items;

use chrono::{DateTime, Utc};

use crate::core::evidence::{self, EvidenceBundle};
use crate::core::ids::OperationId;
use crate::core::model::{OperationDetail, Relation, State};
use crate::core::rules::Actor;
use crate::tui::latest::Latest;

/// One operation as loaded, with its bundle computed by the core for the
/// reviewer at the console's `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Loaded {
    pub detail: OperationDetail,
    pub bundle: EvidenceBundle,
}

impl Loaded {
    pub fn new(detail: OperationDetail, actor: &Actor, now: DateTime<Utc>) -> Self {
        let bundle = evidence::bundle(&detail, actor, now);
        Loaded { detail, bundle }
    }

    /// Whether there is an item ledger or a linked child to show in the items pane.
    pub fn has_items(&self) -> bool {
        !self.detail.items.is_empty() || !self.detail.children.is_empty()
    }
}

/// How a linked operation relates to the one open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkKind {
    /// This operation compensates or resumes the linked one.
    Parent(Relation),
    /// The linked operation compensates or resumes this one.
    Child(Relation, State),
    /// This operation waits on the linked one (G9).
    Dependency(State),
    /// The linked operation uses the same idempotency key with another payload (G3).
    KeyConflict,
}

/// An operation the reviewer can follow from the one open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    pub id: OperationId,
    pub kind: LinkKind,
}

impl Link {
    /// The link in words: `child F22 (resume_of, APPROVED)`.
    pub fn describe(&self) -> String {
        match &self.kind {
            LinkKind::Parent(relation) => format!("parent {} ({relation})", self.id),
            LinkKind::Child(relation, state) => {
                format!("child {} ({relation}, {state})", self.id)
            }
            LinkKind::Dependency(state) => format!("held by {} ({state})", self.id),
            LinkKind::KeyConflict => format!("same key {} (other payload)", self.id),
        }
    }
}

/// Every link of a bundle, parent first.
pub fn links(bundle: &EvidenceBundle) -> Vec<Link> {
    let parent = bundle.parent.iter().map(|(id, relation)| Link {
        id: id.clone(),
        kind: LinkKind::Parent(*relation),
    });
    let children = bundle.children.iter().map(|c| Link {
        id: c.id.clone(),
        kind: LinkKind::Child(c.relation, c.state),
    });
    let held_by = bundle.held_by.iter().map(|(id, state)| Link {
        id: id.clone(),
        kind: LinkKind::Dependency(*state),
    });
    let conflicts = bundle
        .idempotency
        .iter()
        .flat_map(|k| k.conflicts.iter())
        .map(|id| Link {
            id: id.clone(),
            kind: LinkKind::KeyConflict,
        });
    parent
        .chain(children)
        .chain(held_by)
        .chain(conflicts)
        .collect()
}

/// Scroll positions of the detail panes of one operation.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scroll {
    pub evidence: u16,
    pub timeline: u16,
    /// The item row under the cursor.
    pub items: usize,
}

/// One operation on the navigation stack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub id: OperationId,
    pub loaded: Option<Loaded>,
    /// A newer version that arrived while this one was being read.
    pub changed: Option<Loaded>,
    /// Why the last load failed, in words.
    pub error: Option<String>,
    pub scroll: Scroll,
    /// Index of the selected link.
    pub link: usize,
}

impl Frame {
    fn new(id: OperationId) -> Self {
        Frame {
            id,
            loaded: None,
            changed: None,
            error: None,
            scroll: Scroll::default(),
            link: 0,
        }
    }

    pub fn links(&self) -> Vec<Link> {
        self.loaded
            .as_ref()
            .map_or_else(Vec::new, |l| links(&l.bundle))
    }
}

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
