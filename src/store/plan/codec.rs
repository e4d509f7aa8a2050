//! How records live in a store, the same for every backend: each record keeps its
//! canonical wire line, decoded with the same strict parser ingest uses, so that a
//! row can never hold something the wire format could not say.

use std::borrow::Cow;

use chrono::{DateTime, TimeZone, Utc};

use crate::core::audit::{AuditDraft, AuditRow, RowView};
use crate::core::clock::{format_instant, is_formatted_instant, parse_instant};
use crate::core::contract::Contract;
use crate::core::ids::{OperationId, Sha256};
use crate::core::model::{
    ActionKind, Attempt, Expectation, Item, Observation, Operation, ProposalStatus, Risk, Role,
    State,
};
use crate::store::StoreError;
use crate::wire::{Record, parse_line, write_line};

/// Milliseconds since the epoch, the unit of every ordering column.
pub fn ms(at: DateTime<Utc>) -> i64 {
    at.timestamp_millis()
}

/// The instant of an ordering column.
pub fn from_ms(value: i64) -> Result<DateTime<Utc>, StoreError> {
    Utc.timestamp_millis_opt(value)
        .single()
        .ok_or_else(|| corrupt(format!("instant {value} out of range")))
}

/// The ordering column for a next observation: unscheduled sorts last.
pub fn observe_order(at: Option<DateTime<Utc>>) -> i64 {
    at.map_or(i64::MAX, ms)
}

/// Higher is more urgent.
pub fn risk_rank(risk: Risk) -> i64 {
    match risk {
        Risk::Low => 0,
        Risk::Medium => 1,
        Risk::High => 2,
        Risk::Critical => 3,
    }
}

/// The text stored in a `wire` column.
pub fn encode(record: &Record) -> String {
    write_line(record)
}

pub fn corrupt(what: String) -> StoreError {
    StoreError::Other(format!(
        "stored data is damaged ({what}); run `holdfast audit verify`"
    ))
}

fn decode(wire: &str) -> Result<Record, StoreError> {
    parse_line(wire.as_bytes(), 0).map_err(|errors| {
        let reasons: Vec<String> = errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.reason))
            .collect();
        corrupt(format!(
            "a stored record no longer parses: {}",
            reasons.join("; ")
        ))
    })
}

macro_rules! decoder {
    ($name:ident, $variant:ident, $ty:ty) => {
        /// Decodes a stored wire line of this record type.
        pub fn $name(wire: &str) -> Result<$ty, StoreError> {
            match decode(wire)? {
                Record::$variant(value) => Ok(value),
                other => Err(corrupt(format!(
                    "expected a {} record, found {}",
                    stringify!($variant),
                    other.type_name()
                ))),
            }
        }
    };
}

decoder!(contract, Contract, Contract);
decoder!(operation, Operation, Operation);
decoder!(attempt, Attempt, Attempt);
decoder!(item, Item, Item);
decoder!(observation, Observation, Observation);
decoder!(expectation, Expectation, Expectation);

/// The `owner` an operation's stored record was created with, read without
/// decoding the rest of the record: for a record whose bytes are known to be
/// the ones ingest stored (its `record_hash` checks), which decoded then.
pub fn created_owner(wire: &str) -> Result<std::borrow::Cow<'_, str>, StoreError> {
    #[derive(serde::Deserialize)]
    struct OwnerOf<'a> {
        #[serde(borrow)]
        owner: std::borrow::Cow<'a, str>,
    }
    serde_json::from_str::<OwnerOf<'_>>(wire)
        .map(|o| o.owner)
        .map_err(|e| corrupt(format!("a stored operation names no owner: {e}")))
}

/// What verification holds an operation's columns to, read from its stored
/// record without decoding the rest (see [`created_owner`]).
#[derive(serde::Deserialize)]
pub struct CreatedFacts<'a> {
    #[serde(borrow)]
    pub owner: Cow<'a, str>,
    #[serde(borrow)]
    pub tenant: Cow<'a, str>,
    #[serde(borrow)]
    pub tool: Cow<'a, str>,
    #[serde(borrow)]
    pub risk: Cow<'a, str>,
    #[serde(default)]
    pub max_attempts: Option<i64>,
    #[serde(default, borrow)]
    pub deadline: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub parent: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub depends_on: Vec<Cow<'a, str>>,
}

impl CreatedFacts<'_> {
    /// The facts of a decoded operation record.
    pub fn of(op: &Operation) -> CreatedFacts<'_> {
        CreatedFacts {
            owner: Cow::Borrowed(&op.owner),
            tenant: Cow::Borrowed(&op.tenant),
            tool: Cow::Borrowed(&op.tool),
            risk: Cow::Borrowed(op.risk.as_str()),
            max_attempts: op.max_attempts.map(i64::from),
            deadline: op
                .deadline
                .map(|d| Cow::Owned(crate::core::clock::format_instant(d))),
            parent: op.parent.as_ref().map(|p| Cow::Borrowed(p.as_str())),
            depends_on: op
                .depends_on
                .iter()
                .map(|d| Cow::Borrowed(d.as_str()))
                .collect(),
        }
    }

    /// The columns as [`OPERATION_FACTS`] writes them, for an operation whose
    /// queue flag is `queued`; `None` when the record holds a risk or deadline
    /// that does not parse.
    pub fn columns(&self, queued: bool) -> Option<String> {
        let risk = risk_rank(crate::core::model::Risk::parse(&self.risk)?);
        let deadline = match &self.deadline {
            Some(d) => ms(crate::core::clock::parse_instant(d).ok()?).to_string(),
            None => "-".to_owned(),
        };
        let max = self
            .max_attempts
            .map_or_else(|| "-".to_owned(), |m| m.to_string());
        let parent = self
            .parent
            .as_ref()
            .map_or_else(|| "-".to_owned(), |p| format!("{}:{p}", p.chars().count()));
        Some(format!(
            "{risk}|{max}|{deadline}|{}|{}:{}|{parent}|{}",
            u8::from(queued),
            self.tool.chars().count(),
            self.tool,
            self.tenant
        ))
    }
}

/// The SQL of an operation's columns a decision reads besides its state, owner
/// and version, joined as one text in the order of [`CreatedFacts::columns`]
/// (the text columns but the last written with their length in characters,
/// so no two rows join alike).
pub const OPERATION_FACTS: &str = "(CAST(risk_rank AS TEXT) || '|' || \
     COALESCE(CAST(max_attempts AS TEXT), '-') || '|' || \
     COALESCE(CAST(deadline_ms AS TEXT), '-') || '|' || CAST(queued AS TEXT) || '|' || \
     CAST(length(tool) AS TEXT) || ':' || tool || '|' || \
     COALESCE(CAST(length(parent) AS TEXT) || ':' || parent, '-') || '|' || tenant)";

/// The facts an operation's stored record was created with (see
/// [`CreatedFacts`]), for a record whose `record_hash` checks.
pub fn created_facts(wire: &str) -> Result<CreatedFacts<'_>, StoreError> {
    serde_json::from_str::<CreatedFacts<'_>>(wire)
        .map_err(|e| corrupt(format!("a stored operation cannot be read: {e}")))
}

/// The entries of `text` where it is a list of strings written exactly as
/// the canonical encoding writes one and no entry holds an escape: `[]` or
/// `["a","b"]`, read without a JSON parser (the chain's walk reads two
/// million of them). Such a text is valid JSON whose entries are these very
/// slices. `None` for any other text, which the parser reads.
fn canonical_list(text: &str) -> Option<Vec<Cow<'_, str>>> {
    if text == "[]" {
        return Some(Vec::new());
    }
    let inner = text.strip_prefix("[\"")?.strip_suffix("\"]")?;
    if inner.bytes().any(|b| b == b'\\' || b < 0x20) {
        return None;
    }
    let list: Vec<Cow<'_, str>> = inner.split("\",\"").map(Cow::Borrowed).collect();
    list.iter()
        .all(|entry| !entry.contains('"'))
        .then_some(list)
}

/// The mutable columns of an operation, laid over its stored record.
pub struct Current<'a> {
    pub state: &'a str,
    pub owner: &'a str,
    pub next_observation_ms: Option<i64>,
}

/// An operation as it is now: its record with the columns reviewer actions change.
pub fn current_operation(wire: &str, now: Current<'_>) -> Result<Operation, StoreError> {
    let mut op = operation(wire)?;
    op.state = parse_state(now.state)?;
    now.owner.clone_into(&mut op.owner);
    op.next_observation_at = now.next_observation_ms.map(from_ms).transpose()?;
    Ok(op)
}

pub fn parse_state(text: &str) -> Result<State, StoreError> {
    State::parse(text).ok_or_else(|| corrupt(format!("unknown state {text:?}")))
}

pub fn parse_action(text: &str) -> Result<ActionKind, StoreError> {
    ActionKind::parse(text).ok_or_else(|| corrupt(format!("unknown action {text:?}")))
}

pub fn parse_proposal_status(text: &str) -> Result<ProposalStatus, StoreError> {
    ProposalStatus::parse(text).ok_or_else(|| corrupt(format!("unknown proposal status {text:?}")))
}

pub fn parse_id(text: &str) -> Result<OperationId, StoreError> {
    OperationId::parse(text).map_err(|e| corrupt(format!("bad operation id {text:?}: {e}")))
}

/// The columns of one audit row, as every backend stores them: owned
/// (`String`), or borrowed from the driver's row (`&str`) for a walk over the
/// chain that builds no [`AuditRow`].
pub struct AuditColumns<S = String> {
    pub seq: i64,
    pub operation: S,
    pub action: S,
    pub from_state: Option<S>,
    pub to_state: Option<S>,
    pub by_identity: S,
    pub role: S,
    pub policy: Option<S>,
    pub on_behalf_of: Option<S>,
    pub rationale: Option<S>,
    pub evidence: S,
    pub at: S,
    /// The canonical encoding the hash is over ([`crate::core::audit::ENCODING`]).
    pub encoding: i64,
    pub prev_hash: S,
    pub hash: S,
}

/// What a borrowed row's [`RowView`] needs besides its columns: the states and
/// role read, the evidence list parsed and the instant as the canonical
/// encoding writes it, each checked as [`AuditColumns::into_row`] checks it.
pub struct Checked<'a> {
    from: Option<State>,
    to: Option<State>,
    role: Role,
    evidence: Vec<Cow<'a, str>>,
    /// The stored evidence text, where it is the canonical list as it stands.
    evidence_json: Option<&'a str>,
    at: Cow<'a, str>,
}

impl<'a> AuditColumns<&'a str> {
    /// Checks the row as [`AuditColumns::into_row`] does, in the same order and
    /// with the same messages, borrowing what it can.
    pub fn check(&self) -> Result<Checked<'a>, StoreError> {
        let seq = self.seq;
        let mut evidence_json = None;
        let bad = |what: &str| corrupt(format!("audit row {seq}: {what}"));
        let state = |text: Option<&str>| -> Result<Option<State>, StoreError> {
            text.map(|t| State::parse(t).ok_or_else(|| bad("unknown state")))
                .transpose()
        };
        // A list in canonical form is read as it stands and hashed as stored;
        // any other (escapes, spaces) is parsed, and written again to be hashed.
        let evidence: Vec<Cow<'a, str>> = if let Some(list) = canonical_list(self.evidence) {
            evidence_json = Some(self.evidence);
            list
        } else {
            match serde_json::from_str::<Vec<&'a str>>(self.evidence) {
                Ok(list) => list.into_iter().map(Cow::Borrowed).collect(),
                Err(_) => serde_json::from_str::<Vec<String>>(self.evidence)
                    .map_err(|_| bad("evidence is not a list"))?
                    .into_iter()
                    .map(Cow::Owned)
                    .collect(),
            }
        };
        OperationId::check(self.operation).map_err(|_| bad("operation id"))?;
        let from = state(self.from_state)?;
        let to = state(self.to_state)?;
        let role = Role::parse(self.role).ok_or_else(|| bad("unknown role"))?;
        let at = parse_instant(self.at).map_err(|_| bad("time"))?;
        let at = if is_formatted_instant(self.at) {
            Cow::Borrowed(self.at)
        } else {
            Cow::Owned(format_instant(at))
        };
        Sha256::check(self.prev_hash).map_err(|_| bad("prev_hash"))?;
        Sha256::check(self.hash).map_err(|_| bad("hash"))?;
        Ok(Checked {
            from,
            to,
            role,
            evidence,
            evidence_json,
            at,
        })
    }

    /// The row's fields for the chain and the ledger, from what [`Self::check`]
    /// made of it.
    pub fn view<'v>(&'v self, checked: &'v Checked<'a>) -> RowView<'v, Cow<'a, str>> {
        RowView {
            seq: self.seq,
            encoding: self.encoding,
            operation: self.operation,
            action: self.action,
            from: checked.from,
            to: checked.to,
            by: self.by_identity,
            role: checked.role,
            policy: self.policy,
            on_behalf_of: self.on_behalf_of,
            rationale: self.rationale,
            evidence: &checked.evidence,
            evidence_json: checked.evidence_json,
            at: &checked.at,
        }
    }
}

impl AuditColumns {
    pub fn from_row(row: &AuditRow) -> AuditColumns {
        let d = &row.draft;
        AuditColumns {
            seq: row.seq,
            operation: d.operation.as_str().to_owned(),
            action: d.action.clone(),
            from_state: d.from.map(|s| s.as_str().to_owned()),
            to_state: d.to.map(|s| s.as_str().to_owned()),
            by_identity: d.by.clone(),
            role: d.role.as_str().to_owned(),
            policy: d.policy.clone(),
            on_behalf_of: d.on_behalf_of.clone(),
            rationale: d.rationale.clone(),
            evidence: serde_json::Value::from(d.evidence.clone()).to_string(),
            at: crate::core::clock::format_instant(d.at),
            encoding: row.encoding,
            prev_hash: row.prev_hash.as_str().to_owned(),
            hash: row.hash.as_str().to_owned(),
        }
    }

    /// Decodes the row; the verifier reports a row that cannot be decoded as the
    /// place the chain breaks.
    pub fn into_row(self) -> Result<AuditRow, StoreError> {
        let seq = self.seq;
        let bad = |what: &str| corrupt(format!("audit row {seq}: {what}"));
        let state = |text: Option<String>| -> Result<Option<State>, StoreError> {
            text.map(|t| State::parse(&t).ok_or_else(|| bad("unknown state")))
                .transpose()
        };
        let evidence: Vec<String> =
            serde_json::from_str(&self.evidence).map_err(|_| bad("evidence is not a list"))?;
        Ok(AuditRow {
            seq,
            draft: AuditDraft {
                operation: OperationId::parse(&self.operation).map_err(|_| bad("operation id"))?,
                action: self.action,
                from: state(self.from_state)?,
                to: state(self.to_state)?,
                by: self.by_identity,
                role: Role::parse(&self.role).ok_or_else(|| bad("unknown role"))?,
                policy: self.policy,
                on_behalf_of: self.on_behalf_of,
                rationale: self.rationale,
                evidence,
                at: parse_instant(&self.at).map_err(|_| bad("time"))?,
            },
            encoding: self.encoding,
            prev_hash: Sha256::parse(&self.prev_hash).map_err(|_| bad("prev_hash"))?,
            hash: Sha256::parse(&self.hash).map_err(|_| bad("hash"))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::AuditColumns;
    use crate::core::audit::{ENCODING, RowView, write_canonical};

    fn canonical(view: &RowView<'_, std::borrow::Cow<'_, str>>) -> String {
        let mut out = String::new();
        write_canonical(&mut out, view);
        out
    }

    /// A stored evidence list is reused as it stands only where writing the
    /// list again would give the very same text: the walk hashes what it
    /// would have hashed, whatever the spacing or escapes.
    #[test]
    fn stored_evidence_is_reused_only_where_it_is_canonical() {
        let cases = [
            (r#"[]"#, true),
            (r#"["a"]"#, true),
            (r#"["hash:sha256:ab","owner:é ü","x/y"]"#, true),
            (r#"[ "a"]"#, false),
            (r#"["a", "b"]"#, false),
            (r#"["a\nb"]"#, false),
            (r#"["\u0061"]"#, false),
            (r#"["a\/b"]"#, false),
            ("[\"a\"]\n", false),
            (r#"[""]"#, true),
            (r#"["",""]"#, true),
            (r#"["a"," b",":"]"#, true),
            (r#"["a" ,"b"]"#, false),
            (r#"["a","b" ]"#, false),
            (r#"["\"]"]"#, false),
            ("[\"\u{7f}\"]", true),
        ];
        for (evidence, reused) in cases {
            let columns = AuditColumns {
                seq: 3,
                operation: "op-1",
                action: "record",
                from_state: None,
                to_state: Some("UNKNOWN"),
                by_identity: "ingest",
                role: "owner",
                policy: None,
                on_behalf_of: None,
                rationale: Some("line one\\\nline two\r"),
                evidence,
                at: "2026-09-05T10:00:00Z",
                encoding: ENCODING,
                prev_hash: "sha256:0000000000000000000000000000000000000000000000000000000000000000",
                hash: "sha256:0000000000000000000000000000000000000000000000000000000000000000",
            };
            let checked = columns.check().expect("a readable row");
            let view = columns.view(&checked);
            let parsed: Vec<String> = serde_json::from_str(evidence).expect("a list");
            let read: Vec<&str> = view.evidence.iter().map(AsRef::as_ref).collect();
            assert_eq!(read, parsed, "{evidence}");
            assert_eq!(view.evidence_json.is_some(), reused, "{evidence}");
            let written = RowView {
                evidence_json: None,
                ..view
            };
            assert_eq!(canonical(&view), canonical(&written), "{evidence}");
        }
    }
}
