//! The review form's inputs: what each holds and how its text becomes part of an
//! action (an owner, a time, a reconcile lookup). Bulk triage reads its one
//! input the same way.

use chrono::{DateTime, Utc};

use crate::core::cause::RootCause;
use crate::core::clock::TimeSpec;
use crate::core::detail::OperationDetail;
use crate::core::ids::Sha256;
use crate::core::model::{Matches, ObservationSource, State};
use crate::core::rules::catalog::{self, Param, Params};
use crate::core::rules::{Action, ActionKind, FoundField, ReconcileInput};
use crate::tui::widgets::Prompt;

/// What an input of the form holds, and how its text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldKind {
    Owner,
    At,
    RepairRef,
    /// The root-cause layer a classify sets.
    Layer,
    Found,
    MatchTarget,
    MatchPayload,
    MatchOwner,
    MatchVersion,
    EffectCount,
    ProviderRequestId,
    Source,
    Reference,
    /// The hash of the raw response looked at, so that the observation is
    /// complete evidence.
    RawHash,
    Rationale,
}

impl FieldKind {
    pub fn label(self) -> &'static str {
        match self {
            FieldKind::Owner => typed(Param::Owner),
            FieldKind::At => typed(Param::At),
            FieldKind::RepairRef => typed(Param::RepairRef),
            FieldKind::Layer => typed(Param::Layer),
            FieldKind::Found => "found (y/n)",
            FieldKind::MatchTarget => "target matches (y/n, ? unknown)",
            FieldKind::MatchPayload => "payload hash matches (y/n, ? unknown)",
            FieldKind::MatchOwner => "owner matches (y/n, ? unknown)",
            FieldKind::MatchVersion => "version matches (y/n, ? unknown)",
            FieldKind::EffectCount => "effect count (a number, ? unknown)",
            FieldKind::ProviderRequestId => "provider request id",
            FieldKind::Source => "source (← → choose)",
            FieldKind::Reference => "reference (where you looked)",
            FieldKind::RawHash => "raw response hash (sha256:…)",
            FieldKind::Rationale => "rationale",
        }
    }

    /// The inputs an action needs, the rationale last: those of the
    /// parameters its catalog spec names.
    pub fn for_action(kind: ActionKind) -> Vec<FieldKind> {
        let mut fields: Vec<FieldKind> = catalog::spec(kind)
            .params
            .iter()
            .flat_map(|&p| FieldKind::of(p))
            .copied()
            .collect();
        fields.push(FieldKind::Rationale);
        fields
    }

    /// The inputs that give `param`.
    fn of(param: Param) -> &'static [FieldKind] {
        use FieldKind as F;
        match param {
            // The option picked names the state.
            Param::To => &[],
            Param::Owner => &[F::Owner],
            Param::At => &[F::At],
            Param::RepairRef => &[F::RepairRef],
            Param::Layer => &[F::Layer],
            Param::Lookup => &[
                F::Found,
                F::MatchTarget,
                F::MatchPayload,
                F::MatchOwner,
                F::MatchVersion,
                F::EffectCount,
                F::ProviderRequestId,
                F::Source,
                F::Reference,
                F::RawHash,
            ],
        }
    }
}

/// The label of the input that reads `param` as one line of text.
fn typed(param: Param) -> &'static str {
    param.input().unwrap_or_default()
}

/// The observation sources a reviewer's reconcile may name: the source input
/// offers these and nothing else (a typo cannot become a source no rule
/// recognises). `status_lookup` is not among them: only a lookup holdfast made
/// itself (`o`) records that source, with the lag rules it carries.
pub(crate) const SOURCES: &[ObservationSource] = &[
    ObservationSource::ProviderStatus,
    ObservationSource::BusinessKey,
    ObservationSource::Downstream,
    ObservationSource::Validator,
    ObservationSource::TargetRecord,
];

/// One input of the form: the shared text-area wrapper with its meaning.
#[derive(Debug, Clone)]
pub struct Field {
    pub kind: FieldKind,
    pub input: Prompt,
}

impl Field {
    /// Takes one key: typed into a text input; on a pick list (the source),
    /// `←`/`→` (or space) move through its values and other keys do nothing.
    pub fn key(&mut self, key: crossterm::event::KeyEvent) {
        use crossterm::event::KeyCode;
        if self.kind != FieldKind::Source {
            self.input.input(key);
            return;
        }
        let delta: i64 = match key.code {
            KeyCode::Right | KeyCode::Char(' ') => 1,
            KeyCode::Left => -1,
            _ => return,
        };
        let text = self.input.text();
        let at = SOURCES.iter().position(|s| s.as_str() == text).unwrap_or(0) as i64;
        let next = (at + delta).rem_euclid(SOURCES.len() as i64);
        let value = SOURCES[usize::try_from(next).unwrap_or(0)];
        self.input = Prompt::new(self.kind.label(), value.as_str());
    }
}

/// The one input `kind` needs besides the rationale when it is the same for
/// every operation (bulk triage), if any.
pub(crate) fn input_label(kind: ActionKind) -> Option<&'static str> {
    match catalog::spec(kind).params {
        [param] => param.input(),
        _ => None,
    }
}

/// One line of text typed for an action's one parameter.
struct OneLine<'a> {
    text: &'a str,
    now: DateTime<Utc>,
}

impl<'a> OneLine<'a> {
    /// `text`, trimmed.
    fn new(text: &'a str, now: DateTime<Utc>) -> Self {
        OneLine {
            text: text.trim(),
            now,
        }
    }
}

impl Params for OneLine<'_> {
    type Error = String;
    fn to(&mut self) -> Result<State, String> {
        let text = self.text;
        crate::core::rules::resolve_target(text).map_err(|e| format!("resolve to {text:?}: {e}"))
    }
    fn owner(&mut self) -> Result<String, String> {
        required(self.text, "the new owner")
    }
    fn at(&mut self) -> Result<DateTime<Utc>, String> {
        read_instant(self.text, self.now)
    }
    fn repair_ref(&mut self) -> Result<String, String> {
        required(self.text, "the manual repair reference")
    }
    fn lookup(&mut self) -> Result<ReconcileInput, String> {
        Err("reconcile records one lookup of one operation: review it on its own".into())
    }
    fn layer(&mut self) -> Result<RootCause, String> {
        RootCause::parse_hinted(self.text).map_err(|e| format!("root-cause layer: {e}"))
    }
}

/// The action `kind` with its one input read from `text` (see [`input_label`]);
/// kinds without an input ignore it. `reconcile` takes a form of its own.
pub(crate) fn action_from_input(
    kind: ActionKind,
    text: &str,
    now: DateTime<Utc>,
) -> Result<Action, String> {
    catalog::action(kind, &mut OneLine::new(text, now))
}

/// The review form's inputs, read for the option picked.
pub(crate) struct Form<'a> {
    /// The text of an input, trimmed.
    pub text: &'a dyn Fn(FieldKind) -> String,
    /// The option picked: it names the state a resolve moves to.
    pub picked: &'a Action,
    pub now: DateTime<Utc>,
}

impl Params for Form<'_> {
    type Error = String;
    fn to(&mut self) -> Result<State, String> {
        match self.picked {
            Action::Resolve { to } => Ok(*to),
            _ => Err("pick the state to resolve to from the list".into()),
        }
    }
    fn owner(&mut self) -> Result<String, String> {
        let text = (self.text)(FieldKind::Owner);
        OneLine::new(&text, self.now).owner()
    }
    fn at(&mut self) -> Result<DateTime<Utc>, String> {
        let text = (self.text)(FieldKind::At);
        OneLine::new(&text, self.now).at()
    }
    fn repair_ref(&mut self) -> Result<String, String> {
        let text = (self.text)(FieldKind::RepairRef);
        OneLine::new(&text, self.now).repair_ref()
    }
    fn lookup(&mut self) -> Result<ReconcileInput, String> {
        reconcile_input(self.text)
    }
    fn layer(&mut self) -> Result<RootCause, String> {
        let text = (self.text)(FieldKind::Layer);
        OneLine::new(&text, self.now).layer()
    }
}

/// What an input starts with: the values the core's own default would use.
pub(crate) fn default_text(kind: FieldKind, detail: &OperationDetail) -> String {
    match kind {
        FieldKind::Owner => detail.row.operation.owner.clone(),
        FieldKind::Source => ObservationSource::ProviderStatus.to_string(),
        _ => String::new(),
    }
}

/// An instant typed as an offset from `now` (`+30m`, `-2h`) or in RFC 3339.
/// A next observation: only a time after now is one (the review service
/// refuses any other), so the error offers only such times.
pub(crate) fn read_instant(text: &str, now: DateTime<Utc>) -> Result<DateTime<Utc>, String> {
    let later = "a time after now: +30m, +2h, +1d or an RFC 3339 instant";
    let at = TimeSpec::parse(text)
        .and_then(|spec| spec.resolve(now))
        .map_err(|_| format!("next observation {text:?} is not a time; write {later}"))?;
    if at <= now {
        return Err(format!(
            "next observation {text:?} is not after now; write {later}"
        ));
    }
    Ok(at)
}

fn required(text: &str, what: &str) -> Result<String, String> {
    if text.is_empty() {
        Err(format!("{what} is required"))
    } else {
        Ok(text.to_owned())
    }
}

/// What one input of a found answer says: a value, "unknown" (`?`) chosen on
/// purpose, or nothing typed.
enum Said<T> {
    Value(T),
    Unknown,
    Blank,
}

impl<T> Said<T> {
    /// The value, if one was given; `field` is recorded as unknown when `?` was
    /// typed.
    fn value(self, field: FoundField, unknown: &mut Vec<FoundField>) -> Option<T> {
        match self {
            Said::Value(v) => Some(v),
            Said::Unknown => {
                unknown.push(field);
                None
            }
            Said::Blank => None,
        }
    }
}

/// `y`/`yes`, `n`/`no`, `?` for unknown, or blank.
fn yes_no(text: &str, what: &str) -> Result<Said<bool>, String> {
    match text.to_ascii_lowercase().as_str() {
        "" => Ok(Said::Blank),
        "?" => Ok(Said::Unknown),
        "y" | "yes" => Ok(Said::Value(true)),
        "n" | "no" => Ok(Said::Value(false)),
        other => Err(format!("{what}: {other:?} is not y, n or ? (unknown)")),
    }
}

/// The reconcile the form describes. A found answer needs every comparison and
/// the effect count, each given or marked `?` (unknown, on purpose): a blank is
/// refused, so incomplete evidence is never entered by leaving a field empty.
pub(crate) fn reconcile_input(
    text: &dyn Fn(FieldKind) -> String,
) -> Result<ReconcileInput, String> {
    let found = match yes_no(&text(FieldKind::Found), "found")? {
        Said::Value(found) => found,
        _ => return Err("found: say what the lookup showed, y or n".to_owned()),
    };
    let mut unknown = Vec::new();
    let mut blank = Vec::new();
    let mut read = |kind: FieldKind, field: FoundField, what: &str| {
        let said = yes_no(&text(kind), what)?;
        if matches!(said, Said::Blank) {
            blank.push(field);
        }
        Ok::<_, String>(said.value(field, &mut unknown))
    };
    let matches = Matches {
        target: read(FieldKind::MatchTarget, FoundField::Target, "target matches")?,
        payload_hash: read(
            FieldKind::MatchPayload,
            FoundField::PayloadHash,
            "payload hash matches",
        )?,
        owner: read(FieldKind::MatchOwner, FoundField::Owner, "owner matches")?,
        version: read(
            FieldKind::MatchVersion,
            FoundField::Version,
            "version matches",
        )?,
    };
    let any = [
        matches.target,
        matches.payload_hash,
        matches.owner,
        matches.version,
    ]
    .iter()
    .any(Option::is_some);
    let count = text(FieldKind::EffectCount);
    let effect_count = match count.as_str() {
        "" => {
            blank.push(FoundField::EffectCount);
            None
        }
        "?" => {
            unknown.push(FoundField::EffectCount);
            None
        }
        _ => Some(count.parse::<u32>().map_err(|_| {
            format!("effect count {count:?} is not a whole number (or ? for unknown)")
        })?),
    };
    if found && !blank.is_empty() {
        return Err(format!(
            "found: say what the lookup showed for {} — y/n (a number for the effect count), or ? to record it as unknown (incomplete evidence)",
            FoundField::list(&blank)
        ));
    }
    if !found && !unknown.is_empty() {
        return Err(
            "not found: leave the comparisons and the effect count blank; ? is for a found answer"
                .to_owned(),
        );
    }
    let optional = |kind| Some(text(kind)).filter(|t: &String| !t.is_empty());
    Ok(ReconcileInput {
        source: ObservationSource::parse_hinted(&required(&text(FieldKind::Source), "the source")?)
            .map_err(|e| format!("source: {e}"))?,
        found,
        matches: any.then_some(matches),
        effect_count,
        provider_request_id: optional(FieldKind::ProviderRequestId),
        reference: optional(FieldKind::Reference),
        raw_hash: optional(FieldKind::RawHash)
            .map(|text| {
                Sha256::parse(&text).map_err(|e| format!("raw response hash {text:?}: {e}"))
            })
            .transpose()?,
        unknown,
        id: None,
        observed_at: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::clock::parse_instant;

    #[test]
    fn every_typed_input_has_its_label_from_the_catalog() {
        let typed_kinds = [
            FieldKind::Owner,
            FieldKind::At,
            FieldKind::RepairRef,
            FieldKind::Layer,
        ];
        for kind in typed_kinds {
            assert!(!kind.label().is_empty(), "{kind:?}");
        }
        for &kind in ActionKind::ALL {
            let typed = FieldKind::for_action(kind)
                .into_iter()
                .filter(|f| typed_kinds.contains(f))
                .map(FieldKind::label)
                .collect::<Vec<_>>();
            let asks: Vec<&str> = catalog::spec(kind)
                .params
                .iter()
                .filter(|p| **p != Param::To)
                .filter_map(|p| p.input())
                .collect();
            assert_eq!(typed, asks, "{kind}");
        }
    }

    #[test]
    fn the_schedule_input_offers_only_times_after_now() {
        let label = input_label(ActionKind::Schedule).unwrap();
        assert!(label.contains("+30m") && !label.contains("-2h"), "{label}");
        let now = parse_instant("2026-09-05T10:00:00Z").unwrap();
        for typed in ["-2h", "now", "2026-09-05T09:00:00Z", "yesterday"] {
            let e = action_from_input(ActionKind::Schedule, typed, now).unwrap_err();
            assert!(e.contains("+30m"), "{e}");
            assert!(!e.contains("-2h,") && !e.contains(", now"), "{e}");
        }
        assert!(action_from_input(ActionKind::Schedule, "+30m", now).is_ok());
    }

    #[test]
    fn resolve_takes_the_states_the_rules_resolve_to_with_a_hint() {
        let now = parse_instant("2026-09-05T10:00:00Z").unwrap();
        let e = action_from_input(ActionKind::Resolve, "ACCEPTED", now).unwrap_err();
        assert!(
            e.ends_with("resolve moves a hold to SUCCEEDED, FAILED, PARTIAL"),
            "{e}"
        );
        let e = action_from_input(ActionKind::Resolve, "faild", now).unwrap_err();
        assert!(e.contains("did you mean FAILED?"), "{e}");
    }
}
