//! The action vocabulary: a reviewer action with its parameters, what a reconcile
//! records, and the rationale every action carries.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::core::cause::RootCause;
use crate::core::ids::Sha256;
use crate::core::lookup::LookupInput;
use crate::core::model::{ActionKind, Matches, Observation, ObservationSource, State};

/// What a status lookup showed, as a reviewer enters it for `reconcile`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ReconcileInput {
    pub source: ObservationSource,
    pub found: bool,
    pub matches: Option<Matches>,
    pub effect_count: Option<u32>,
    pub provider_request_id: Option<String>,
    /// Where the reviewer looked (a ticket, a console URL, a query id).
    pub reference: Option<String>,
    pub raw_hash: Option<Sha256>,
    /// Fields of a found answer the reviewer records as unknown, by choice: a
    /// found reconcile gives every field of [`ReconcileInput::not_given`] or
    /// names it here, so that incomplete evidence is never entered by a blank.
    pub unknown: Vec<FoundField>,
    /// The observation's own id, when it came as a wire-format line; else one is
    /// made up from the operation id.
    pub id: Option<String>,
    /// When the lookup was made, when known; else the decision's `now`.
    pub observed_at: Option<DateTime<Utc>>,
}

impl ReconcileInput {
    /// A lookup at `source` that found nothing, with nothing else said.
    pub fn not_found(source: ObservationSource) -> ReconcileInput {
        ReconcileInput {
            source,
            found: false,
            matches: None,
            effect_count: None,
            provider_request_id: None,
            reference: None,
            raw_hash: None,
            unknown: Vec::new(),
            id: None,
            observed_at: None,
        }
    }

    /// What a stored or received observation showed, as a reconcile input: the
    /// same record counts whether it arrives by ingest or by a reviewer.
    /// A field the line leaves out is recorded as the line gives it: unknown.
    pub fn from_observation(o: &Observation) -> ReconcileInput {
        let mut input = ReconcileInput {
            source: o.source,
            found: o.found,
            matches: o.matches.clone(),
            effect_count: o.effect_count,
            provider_request_id: None,
            reference: o.note.clone(),
            raw_hash: o.raw_hash.clone(),
            unknown: Vec::new(),
            id: Some(o.id.clone()),
            observed_at: Some(o.observed_at),
        };
        input.unknown = input.not_given();
        input
    }

    /// The fields a found answer needs for complete evidence that this input
    /// leaves out: each `matches` field its source compares
    /// ([`crate::core::lookup::compared_fields`]) and the effect count. A
    /// not-found answer needs none.
    pub fn not_given(&self) -> Vec<FoundField> {
        if !self.found {
            return Vec::new();
        }
        let m = self.matches.clone().unwrap_or_default();
        let lookup = self.source == crate::core::lookup::SOURCE;
        [
            (FoundField::Target, m.target.is_some()),
            (FoundField::PayloadHash, m.payload_hash.is_some()),
            (FoundField::Owner, m.owner.is_some()),
            (FoundField::Version, lookup || m.version.is_some()),
            (FoundField::EffectCount, self.effect_count.is_some()),
        ]
        .into_iter()
        .filter(|(_, given)| !given)
        .map(|(field, _)| field)
        .collect()
    }

    /// The fields left out and not recorded as unknown either.
    pub fn undeclared(&self) -> Vec<FoundField> {
        self.not_given()
            .into_iter()
            .filter(|f| !self.unknown.contains(f))
            .collect()
    }
}

/// A field of a found answer: a comparison with the intent, or the effect count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FoundField {
    Target,
    PayloadHash,
    Owner,
    Version,
    EffectCount,
}

impl FoundField {
    pub const ALL: [FoundField; 5] = [
        FoundField::Target,
        FoundField::PayloadHash,
        FoundField::Owner,
        FoundField::Version,
        FoundField::EffectCount,
    ];

    /// The name a reviewer types (`payload_hash`).
    pub fn as_str(self) -> &'static str {
        match self {
            FoundField::Target => "target",
            FoundField::PayloadHash => "payload_hash",
            FoundField::Owner => "owner",
            FoundField::Version => "version",
            FoundField::EffectCount => "effect_count",
        }
    }

    pub fn parse(text: &str) -> Option<FoundField> {
        FoundField::ALL.into_iter().find(|f| f.as_str() == text)
    }

    /// Names joined with commas, as a reviewer types them.
    pub fn list(fields: &[FoundField]) -> String {
        fields
            .iter()
            .map(|f| f.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// A reviewer action with its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum Action {
    Reconcile(ReconcileInput),
    /// A reconcile by a lookup holdfast made itself (or the end of lookups).
    Lookup(LookupInput),
    Resolve {
        to: State,
    },
    AuthorizeRetry,
    ApproveCompensation,
    ApproveResume,
    MarkCompensated,
    MarkResumed,
    Revalidate,
    /// VALIDATED → APPROVED by a person: the approval of this exact call.
    Approve,
    Accept {
        repair_ref: String,
    },
    Block,
    Assign {
        owner: String,
    },
    Schedule {
        at: DateTime<Utc>,
    },
    Comment,
    /// Sets the root-cause layer of a failed or held operation.
    Classify {
        layer: RootCause,
    },
    Confirm,
    Reject,
}

impl Action {
    pub fn kind(&self) -> ActionKind {
        match self {
            Action::Reconcile(_) | Action::Lookup(_) => ActionKind::Reconcile,
            Action::Resolve { .. } => ActionKind::Resolve,
            Action::AuthorizeRetry => ActionKind::AuthorizeRetry,
            Action::ApproveCompensation => ActionKind::ApproveCompensation,
            Action::ApproveResume => ActionKind::ApproveResume,
            Action::MarkCompensated => ActionKind::MarkCompensated,
            Action::MarkResumed => ActionKind::MarkResumed,
            Action::Revalidate => ActionKind::Revalidate,
            Action::Approve => ActionKind::Approve,
            Action::Accept { .. } => ActionKind::Accept,
            Action::Block => ActionKind::Block,
            Action::Assign { .. } => ActionKind::Assign,
            Action::Schedule { .. } => ActionKind::Schedule,
            Action::Comment => ActionKind::Comment,
            Action::Classify { .. } => ActionKind::Classify,
            Action::Confirm => ActionKind::Confirm,
            Action::Reject => ActionKind::Reject,
        }
    }

    /// The action with every text a reviewer typed (a reconcile's reference and
    /// provider request id, an accept's repair reference, an assign's owner)
    /// redacted by the one redactor ingest uses ([`crate::core::redact::redact`]),
    /// so a secret pasted into a flag is never stored, shown or exported.
    pub fn redacted(&self) -> Action {
        let clean = |text: &str| crate::core::redact::redact(text).into_owned();
        match self {
            Action::Reconcile(input) => Action::Reconcile(ReconcileInput {
                reference: input.reference.as_deref().map(clean),
                provider_request_id: input.provider_request_id.as_deref().map(clean),
                ..input.clone()
            }),
            Action::Accept { repair_ref } => Action::Accept {
                repair_ref: clean(repair_ref),
            },
            Action::Assign { owner } => Action::Assign {
                owner: clean(owner),
            },
            other => other.clone(),
        }
    }

    /// The action to evaluate for a proposal's stored kind; `None` for a kind
    /// that cannot be proposed (its plan does not run through
    /// `Plan::proposable`). Every kind is named, so that a new one is placed.
    pub fn from_proposal(kind: ActionKind) -> Option<Action> {
        use ActionKind as K;
        match kind {
            K::AuthorizeRetry => Some(Action::AuthorizeRetry),
            K::ApproveCompensation => Some(Action::ApproveCompensation),
            K::ApproveResume => Some(Action::ApproveResume),
            K::Approve => Some(Action::Approve),
            K::Reconcile
            | K::Resolve
            | K::MarkCompensated
            | K::MarkResumed
            | K::Revalidate
            | K::Accept
            | K::Block
            | K::Assign
            | K::Schedule
            | K::Comment
            | K::Classify
            | K::Confirm
            | K::Reject => None,
        }
    }
}

/// Why a reviewer acts, as they typed it: at least 10 characters of text, with
/// every secret in it redacted (the one redactor ingest uses) before it is kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rationale(String);

impl Rationale {
    pub const MIN_CHARS: usize = 10;
    pub const MAX_CHARS: usize = 4000;

    pub fn parse(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        let count = trimmed.chars().count();
        if count < Self::MIN_CHARS {
            return Err(format!(
                "the rationale must be at least {} characters (it has {count}); say why",
                Self::MIN_CHARS
            ));
        }
        if count > Self::MAX_CHARS {
            return Err(format!(
                "the rationale must be at most {} characters (it has {count})",
                Self::MAX_CHARS
            ));
        }
        if let Some(c) = trimmed
            .chars()
            .find(|c| c.is_control() && *c != '\n' && *c != '\t')
        {
            return Err(format!(
                "the rationale contains the control character U+{:04X}",
                u32::from(c)
            ));
        }
        Ok(Rationale(crate::core::redact::redact(trimmed).into_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The rationale of a preview nobody typed: `options` decides every
    /// action with it.
    pub(super) fn preview() -> Rationale {
        Rationale("preview of the effect".into())
    }
}
