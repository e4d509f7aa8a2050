//! The evidence bundle as one document: the rows a reviewer reads, in order, each
//! a label and the values behind it, grouped in sections. It is built once from
//! the [`EvidenceBundle`]; `holdfast show`, the Markdown export and the console's
//! evidence pane render it, each in its own layout, so a row added here reaches
//! all of them (a renderer that has no layout for a row prints it generically).
//!
//! Values are kept as they are stored: untrusted text is not sanitized here, each
//! renderer cleans or escapes it for its medium. An instant stays an instant, so a
//! renderer can add how far it is from now.

use chrono::{DateTime, Utc};

use super::clock::human_instant;
use super::evidence::EvidenceBundle;
use super::model::{Risk, State};
use super::names::count;

/// The fields an observation is compared on, each a value of its
/// [`Key::Observation`] row: `match`, `differs` or `unknown` (missing when the
/// observation compared nothing).
pub const COMPARED: [&str; 4] = ["target", "payload_hash", "owner", "version"];

/// What a value is, so that a renderer knows how to print it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// Untrusted text (names, notes, reasons): sanitized or escaped when printed.
    Text(String),
    /// An identifier from outside (operation, observation, request ids).
    Id(String),
    /// A content hash, printed as it is.
    Hash(String),
    /// A word or phrase holdfast itself chose (a relation, a decision, an effect).
    Word(String),
    /// A count or a version.
    Number(i64),
    /// An operation's state, which renderers may colour.
    State(State),
    /// The operation's risk, which renderers may colour.
    Risk(Risk),
    /// An instant; renderers add how far it is from now where they show that.
    Instant(DateTime<Utc>),
    /// Something a reviewer must not miss (an exhausted budget, an expired key).
    Warning(String),
    /// Nothing recorded.
    Missing,
}

impl Value {
    /// The value as plain text, unsanitized; `None` when missing.
    pub fn text(&self) -> Option<String> {
        match self {
            Value::Text(t) | Value::Id(t) | Value::Hash(t) | Value::Word(t) | Value::Warning(t) => {
                Some(t.clone())
            }
            Value::Number(n) => Some(n.to_string()),
            Value::State(state) => Some(state.to_string()),
            Value::Risk(risk) => Some(risk.to_string()),
            Value::Instant(at) => Some(human_instant(*at)),
            Value::Missing => None,
        }
    }

    /// The instant, for a value that is one.
    pub fn instant(&self) -> Option<DateTime<Utc>> {
        match self {
            Value::Instant(at) => Some(*at),
            _ => None,
        }
    }

    /// The number, for a value that is one.
    pub fn number(&self) -> Option<i64> {
        match self {
            Value::Number(n) => Some(*n),
            _ => None,
        }
    }

    fn opt(value: Option<Value>) -> Value {
        value.unwrap_or(Value::Missing)
    }
}

/// One named value of a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub value: Value,
}

/// Which row it is: renderers lay out the rows they know by this key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    Operation,
    WhyHeld,
    Evidence,
    StateSince,
    TenantActor,
    ToolAction,
    StatusLookup,
    Autonomy,
    Target,
    Risk,
    IntentHash,
    PayloadHash,
    Approval,
    IdempotencyKey,
    BusinessKey,
    CorrelationId,
    LastVerified,
    ProviderRequestIds,
    Attempts,
    Deadline,
    Owner,
    NextObservation,
    FailureMode,
    RootCause,
    Recommendation,
    Parent,
    Child,
    HeldBy,
    PendingProposal,
    Observation,
    Prohibited,
    Allowed,
    Refused,
}

/// One row: a label and its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub key: Key,
    pub label: String,
    pub fields: Vec<Field>,
}

impl Row {
    fn new(key: Key, label: &str) -> Self {
        Row {
            key,
            label: label.to_owned(),
            fields: Vec::new(),
        }
    }

    fn with(mut self, name: &'static str, value: Value) -> Self {
        self.fields.push(Field { name, value });
        self
    }

    /// The first value named `name`, or [`Value::Missing`].
    pub fn get(&self, name: &str) -> &Value {
        self.fields
            .iter()
            .find(|f| f.name == name)
            .map_or(&Value::Missing, |f| &f.value)
    }

    /// The text of the value named `name`, unsanitized.
    pub fn text(&self, name: &str) -> Option<String> {
        self.get(name).text()
    }

    /// Every value named `name`, in order, as text.
    pub fn all(&self, name: &str) -> Vec<String> {
        self.fields
            .iter()
            .filter(|f| f.name == name)
            .filter_map(|f| f.value.text())
            .collect()
    }

    /// The row's values on one line, joined by `, `, untrusted text and
    /// identifiers passed through `escape`; `-` when nothing is recorded.
    pub fn plain(&self, escape: impl Fn(&str) -> String) -> String {
        let values: Vec<String> = self
            .fields
            .iter()
            .filter_map(|f| match &f.value {
                Value::Text(t) | Value::Id(t) => Some(escape(t)),
                other => other.text(),
            })
            .collect();
        if values.is_empty() {
            "-".to_owned()
        } else {
            values.join(", ")
        }
    }

    /// Whether the row records nothing: its values are all missing.
    pub fn is_empty(&self) -> bool {
        self.fields.iter().all(|f| f.value == Value::Missing)
    }
}

/// Which section it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SectionKey {
    /// The labelled fields of the operation.
    Fields,
    Observations,
    Prohibited,
    Actions,
}

/// A titled group of rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    pub key: SectionKey,
    pub title: &'static str,
    pub rows: Vec<Row>,
}

/// The bundle as sections of rows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    pub sections: Vec<Section>,
}

impl Document {
    /// Every row, in order.
    pub fn rows(&self) -> impl Iterator<Item = &Row> {
        self.sections.iter().flat_map(|s| s.rows.iter())
    }

    /// The first row with `key`.
    pub fn row(&self, key: Key) -> Option<&Row> {
        self.rows().find(|r| r.key == key)
    }

    /// Every row with `key`, in order.
    pub fn all(&self, key: Key) -> impl Iterator<Item = &Row> {
        self.rows().filter(move |r| r.key == key)
    }

    /// The section with `key`.
    pub fn section(&self, key: SectionKey) -> Option<&Section> {
        self.sections.iter().find(|s| s.key == key)
    }
}

fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

fn word(s: impl ToString) -> Value {
    Value::Word(s.to_string())
}

fn number(n: impl Into<i64>) -> Value {
    Value::Number(n.into())
}

/// `1 of 3 used, 0 status queries`, with the tries a gateway refused when there
/// were any and why the budget is spent when it is, from an [`Key::Attempts`] row.
pub fn attempts_summary(row: &Row) -> String {
    let refused = row.get("refused").number().unwrap_or(0);
    let refused = if refused == 0 {
        String::new()
    } else {
        format!(
            "{} (not counted), ",
            count(
                refused,
                "try refused by the gateway",
                "tries refused by the gateway"
            )
        )
    };
    format!(
        "{} of {} used, {refused}{}{}",
        row.get("used").number().unwrap_or(0),
        row.text("max").unwrap_or_else(|| "-".into()),
        count(
            row.get("status queries").number().unwrap_or(0),
            "status query",
            "status queries"
        ),
        row.text("exhausted")
            .map_or_else(String::new, |e| format!(" — {e}"))
    )
}

/// A label or title as a heading: `Why held`, `Prohibited now`.
pub fn capitalized(title: &str) -> String {
    let mut chars = title.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// `(audit #12, transition)`: the audit row of a [`Key::WhyHeld`] row.
pub fn audit_reference(why: &Row) -> String {
    format!(
        "(audit #{}, {})",
        why.text("seq").unwrap_or_default(),
        why.text("action").unwrap_or_default()
    )
}

/// `VALIDATED → BLOCKED by … (audit #12, transition): reason; evidence A-1 (what), O-2`, from the
/// [`Key::WhyHeld`] row and the [`Key::Evidence`] rows after it; `None` when no
/// transition is recorded.
pub fn why_summary(doc: &Document) -> Option<String> {
    let why = doc.row(Key::WhyHeld)?;
    let mut text = format!("{} {}", why.text("transition")?, audit_reference(why));
    if let Some(reason) = why.text("reason") {
        text.push_str(&format!(": {reason}"));
    }
    let evidence: Vec<String> = doc
        .all(Key::Evidence)
        .map(|e| {
            let id = e.text("id").unwrap_or_default();
            match e.text("what") {
                Some(what) => format!("{id} ({what})"),
                None => id,
            }
        })
        .collect();
    if !evidence.is_empty() {
        text.push_str(&format!("; evidence {}", evidence.join(", ")));
    }
    Some(text)
}

/// The document of `b`.
pub fn document(b: &EvidenceBundle) -> Document {
    let mut fields = vec![
        Row::new(Key::Operation, "operation")
            .with("id", Value::Id(b.id.as_str().to_owned()))
            .with("state", Value::State(b.state))
            .with("version", number(b.version)),
    ];
    let why_label = if b.state.is_held() {
        "why held".to_owned()
    } else {
        format!("why {}", b.state)
    };
    match &b.why_held {
        Some(why) => {
            fields.push(
                Row::new(Key::WhyHeld, &why_label)
                    .with("transition", text(&why.headline()))
                    .with("seq", number(why.seq))
                    .with("action", text(&why.action))
                    .with("reason", Value::opt(why.reason.as_deref().map(text))),
            );
            fields.extend(why.evidence.iter().map(|e| {
                Row::new(Key::Evidence, "evidence")
                    .with("id", Value::Id(e.id.clone()))
                    .with("what", Value::opt(e.what.as_deref().map(text)))
            }));
        }
        None => fields.push(Row::new(Key::WhyHeld, &why_label).with("transition", Value::Missing)),
    }
    fields.push(
        Row::new(Key::StateSince, "in state since").with("since", Value::Instant(b.state_since)),
    );
    fields.push(
        Row::new(Key::TenantActor, "tenant / actor")
            .with("tenant", text(&b.tenant))
            .with("actor", text(&b.actor)),
    );
    fields.push(
        Row::new(Key::ToolAction, "tool / action")
            .with("tool", text(&b.tool))
            .with(
                "action",
                Value::opt(super::names::known_action(&b.tool, &b.action).map(text)),
            ),
    );
    fields
        .push(Row::new(Key::StatusLookup, "status lookup").with("lookup", text(&b.status_lookup)));
    fields.push(Row::new(Key::Autonomy, "autonomy").with("autonomy", text(&b.autonomy.describe())));
    fields.push(Row::new(Key::Target, "target").with("target", text(&b.target)));
    fields.push(Row::new(Key::Risk, "risk").with("risk", Value::Risk(b.risk)));
    fields.push(Row::new(Key::IntentHash, "intent hash").with(
        "hash",
        Value::opt(b.intent_hash.as_ref().map(|h| Value::Hash(h.to_string()))),
    ));
    fields.push(
        Row::new(Key::PayloadHash, "payload hash")
            .with("hash", Value::Hash(b.payload_hash.to_string())),
    );
    let approval = Row::new(Key::Approval, "approval");
    fields.push(match &b.approval {
        Some(a) => approval
            .with("by", text(&a.by))
            .with("policy", text(&a.policy))
            .with("at", Value::opt(a.at.map(Value::Instant)))
            .with(
                "binds",
                Value::opt(a.payload_hash.as_ref().map(|h| Value::Hash(h.to_string()))),
            )
            .with("expires", Value::opt(a.expires_at.map(Value::Instant)))
            .with("status", text(&a.status)),
        None => approval.with("by", Value::Missing),
    });
    let key = Row::new(Key::IdempotencyKey, "idempotency key");
    fields.push(match &b.idempotency {
        Some(k) => {
            let mut row = key
                .with("key", text(&k.key))
                .with("scope", Value::opt(k.scope.as_deref().map(text)))
                .with(
                    "retention",
                    Value::opt(k.retention_hours.map(|h| word(format!("{h}h")))),
                )
                .with("until", Value::opt(k.expires_at.map(Value::Instant)))
                .with(
                    "expired",
                    if k.expired {
                        Value::Warning("expired".into())
                    } else {
                        Value::Missing
                    },
                );
            for c in &k.conflicts {
                row = row.with("conflict", Value::Id(c.as_str().to_owned()));
            }
            row
        }
        None => key.with("key", Value::Missing),
    });
    fields.push(
        Row::new(Key::BusinessKey, "business key")
            .with("key", Value::opt(b.business_key.as_deref().map(text))),
    );
    fields.push(
        Row::new(Key::CorrelationId, "correlation id")
            .with("id", Value::opt(b.correlation_id.as_deref().map(text))),
    );
    let verified = Row::new(Key::LastVerified, "last verified");
    fields.push(match &b.last_verified {
        Some((what, at)) => verified
            .with("what", text(what))
            .with("at", Value::Instant(*at)),
        None => verified.with("what", Value::Missing),
    });
    let mut ids = Row::new(Key::ProviderRequestIds, "provider request ids");
    for id in &b.provider_request_ids {
        ids = ids.with("id", Value::Id(id.clone()));
    }
    fields.push(ids);
    let budget = &b.budget;
    fields.push(
        Row::new(Key::Attempts, "attempts")
            .with("used", number(budget.attempts_used))
            .with("max", Value::opt(budget.max_attempts.map(number)))
            .with("refused", number(budget.refused_by_gateway))
            .with("status queries", number(budget.status_queries))
            .with(
                "exhausted",
                Value::opt(budget.exhausted.clone().map(Value::Warning)),
            ),
    );
    fields.push(
        Row::new(Key::Deadline, "deadline")
            .with("at", Value::opt(budget.deadline.map(Value::Instant)))
            .with("seconds left", Value::opt(budget.seconds_left.map(number))),
    );
    fields.push(match &b.routed {
        None => Row::new(Key::Owner, "owner").with("owner", text(&b.owner)),
        Some(r) => {
            let row = Row::new(Key::Owner, "owner")
                .with("owner", text(&r.owner))
                .with("routed as", word(format!("{} ({})", r.role, r.why)));
            if r.owner == b.owner {
                row
            } else {
                row.with("operation's owner", text(&b.owner))
            }
        }
    });
    fields.push(
        Row::new(Key::NextObservation, "next observation")
            .with("at", Value::opt(b.next_observation_at.map(Value::Instant)))
            .with(
                "overdue",
                if b.next_observation_overdue {
                    Value::Warning("overdue".into())
                } else {
                    Value::Missing
                },
            ),
    );
    fields.push(
        Row::new(Key::FailureMode, "failure mode")
            .with("mode", Value::opt(b.failure_mode.map(|m| word(m.as_str())))),
    );
    if let Some(cause) = &b.root_cause {
        fields.push(
            Row::new(Key::RootCause, "root cause")
                .with("layer", word(cause.name()))
                .with("because", text(&cause.because())),
        );
    }
    fields.push(
        Row::new(Key::Recommendation, "recommendation")
            .with("decision", word(b.recommendation.decision))
            .with("reason", text(&b.recommendation.reason)),
    );
    if let Some((parent, relation)) = &b.parent {
        fields.push(
            Row::new(Key::Parent, "parent")
                .with("id", Value::Id(parent.as_str().to_owned()))
                .with("relation", word(relation)),
        );
    }
    fields.extend(b.children.iter().map(|c| {
        Row::new(Key::Child, "child")
            .with("id", Value::Id(c.id.as_str().to_owned()))
            .with("relation", word(c.relation))
            .with("state", Value::State(c.state))
    }));
    fields.extend(b.held_by.iter().map(|(id, state)| {
        Row::new(Key::HeldBy, "held by dependency")
            .with("id", Value::Id(id.as_str().to_owned()))
            .with("state", Value::State(*state))
    }));
    fields.push(Row::new(Key::PendingProposal, "pending proposal").with(
        "proposal",
        Value::opt(b.pending_proposal.as_deref().map(text)),
    ));

    let observations = b
        .observations
        .iter()
        .map(|o| {
            let mut row = Row::new(Key::Observation, "observation")
                .with("id", Value::Id(o.id.clone()))
                .with("at", Value::Instant(o.observed_at))
                .with("what", text(&o.describe()))
                .with("source", word(o.source))
                .with("found", word(if o.found { "found" } else { "not found" }))
                .with("effects", Value::opt(o.effect_count.map(number)));
            if let Some(m) = &o.matches {
                for (name, value) in
                    COMPARED
                        .into_iter()
                        .zip([m.target, m.payload_hash, m.owner, m.version])
                {
                    let mark = match value {
                        Some(true) => "match",
                        Some(false) => "differs",
                        None => "unknown",
                    };
                    row = row.with(name, word(mark));
                }
            }
            row.with("note", Value::opt(o.note.as_deref().map(text)))
        })
        .collect();
    let prohibited = b
        .prohibited
        .iter()
        .map(|p| Row::new(Key::Prohibited, "prohibited").with("what", text(p)))
        .collect();
    let actions = b
        .actions
        .iter()
        .map(|a| {
            if a.allowed {
                Row::new(Key::Allowed, &a.label)
                    .with("effect", Value::opt(a.effect.as_deref().map(word)))
            } else {
                Row::new(Key::Refused, &a.label)
                    .with("rule", Value::opt(a.rule.map(word)))
                    .with("reason", Value::opt(a.reason.as_deref().map(text)))
            }
        })
        .collect();
    Document {
        sections: vec![
            Section {
                key: SectionKey::Fields,
                title: "fields",
                rows: fields,
            },
            Section {
                key: SectionKey::Observations,
                title: "observations",
                rows: observations,
            },
            Section {
                key: SectionKey::Prohibited,
                title: "prohibited now",
                rows: prohibited,
            },
            Section {
                key: SectionKey::Actions,
                title: "actions",
                rows: actions,
            },
        ],
    }
}
