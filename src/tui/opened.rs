//! One operation as the console holds it once opened: loaded with its evidence
//! bundle, its links to other operations, and its place on the detail stack
//! (scroll positions, selected link). Plain data, so both the detail screen and
//! the documents built from it (`tui/doc`) use it without importing each other.

use chrono::{DateTime, Utc};

use crate::core::detail::OperationDetail;
use crate::core::evidence::{self, EvidenceBundle};
use crate::core::ids::OperationId;
use crate::core::model::{Relation, State};
use crate::core::rules::Actor;

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
pub(crate) fn links(bundle: &EvidenceBundle) -> Vec<Link> {
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
    /// Opened, not loaded yet.
    pub fn new(id: OperationId) -> Self {
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
