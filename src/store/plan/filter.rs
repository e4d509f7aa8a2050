//! The filter language of the console (after `f`) and of the command line
//! (`review --filter`, `export --filter`): space-separated `field:value[,value]`
//! terms over state, tenant, owner, tool, failure mode and risk, parsed into the store's
//! [`OperationFilter`] and described back in one line that stays on screen.

use crate::core::model::{FailureMode, Risk, State};
use crate::store::OperationFilter;

/// The filter fields the console knows, for the prompt and errors.
pub const FIELDS: &str = "state, tenant, owner, tool, mode, risk";

/// The field names, for the nearest one to a typo.
const FIELD_NAMES: [&str; 6] = ["state", "tenant", "owner", "tool", "mode", "risk"];

/// The words a `state:` term takes besides the states: the held queue, and
/// every state (as `list --state held|all`).
const STATE_WORDS: [&str; 2] = ["held", "all"];

/// ` did you mean X?` for a near miss among `known`, else nothing.
fn hint<'a>(typed: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    crate::core::names::nearest(typed, known)
        .map_or_else(String::new, |n| format!(" did you mean `{n}`?"))
}

/// A value of an enumeration in any case; a near miss is named.
fn value<T: Copy>(
    field: &str,
    value: &str,
    all: &[T],
    name: fn(T) -> &'static str,
) -> Result<T, String> {
    all.iter()
        .copied()
        .find(|v| name(*v).eq_ignore_ascii_case(value))
        .ok_or_else(|| {
            let names: Vec<&str> = all.iter().map(|v| name(*v)).collect();
            format!(
                "{field} `{value}` is not one of the values:{} one of {}",
                hint(value, names.iter().copied()),
                names.join(", ")
            )
        })
}

/// Parses filter text; an empty text is no filter. The error says which term is
/// wrong, the name probably meant and what is accepted. `state:held` narrows
/// to the held queue and `state:all` names every state.
pub fn parse(text: &str) -> Result<OperationFilter, String> {
    let mut filter = OperationFilter::default();
    for term in text.split_whitespace() {
        let (field, values) = term
            .split_once(':')
            .ok_or_else(|| format!("`{term}` is not field:value (fields: {FIELDS})"))?;
        let field = field.to_ascii_lowercase();
        if !FIELD_NAMES.contains(&field.as_str()) {
            return Err(format!(
                "unknown field `{field}`:{} fields: {FIELDS}",
                hint(&field, FIELD_NAMES)
            ));
        }
        for v in values.split(',').filter(|v| !v.is_empty()) {
            match field.as_str() {
                "state" if v.eq_ignore_ascii_case("held") => filter.queue = true,
                "state" if v.eq_ignore_ascii_case("all") => {}
                "state" => {
                    let state = State::parse_any_case(v).ok_or_else(|| {
                        let words = STATE_WORDS
                            .into_iter()
                            .chain(State::ALL.iter().map(|s| s.as_str()));
                        format!(
                            "state `{v}` is not one of the values:{} one of {}, {}",
                            hint(v, words),
                            STATE_WORDS.join(", "),
                            State::expected()
                        )
                    })?;
                    filter.states.push(state);
                }
                "tenant" => filter.tenants.push(v.to_owned()),
                "owner" => filter.owners.push(v.to_owned()),
                "tool" => filter.tools.push(v.to_owned()),
                "mode" => {
                    filter
                        .modes
                        .push(value("mode", v, FailureMode::ALL, FailureMode::as_str)?)
                }
                _ => filter
                    .risks
                    .push(value("risk", v, Risk::ALL, Risk::as_str)?),
            }
        }
    }
    Ok(filter)
}

/// A selection typed on the command line (`review --filter`, `export
/// --filter`): without a `state:` term it is the held queue, as `list` is.
pub fn selection(text: &str) -> Result<OperationFilter, String> {
    let mut filter = parse(text)?;
    let names_states = text.split_whitespace().any(|t| {
        t.split_once(':')
            .is_some_and(|(f, _)| f.eq_ignore_ascii_case("state"))
    });
    if !names_states {
        filter.queue = true;
    }
    Ok(filter)
}

/// The filter in the same `field:value` form it is typed in; empty for none.
pub fn describe(filter: &OperationFilter) -> String {
    fn term<T: ToString>(out: &mut Vec<String>, name: &str, values: &[T]) {
        if !values.is_empty() {
            let joined: Vec<String> = values.iter().map(ToString::to_string).collect();
            out.push(format!("{name}:{}", joined.join(",")));
        }
    }
    let mut out = Vec::new();
    term(&mut out, "state", &filter.states);
    term(&mut out, "tenant", &filter.tenants);
    term(&mut out, "owner", &filter.owners);
    term(&mut out, "tool", &filter.tools);
    term(&mut out, "mode", &filter.modes);
    term(&mut out, "risk", &filter.risks);
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_parse_and_describe_back() {
        let f = parse("state:unknown,PARTIAL risk:high tool:T06 tenant:pinehaven").unwrap();
        assert_eq!(f.states, [State::Unknown, State::Partial]);
        assert_eq!(f.risks, [Risk::High]);
        assert_eq!(f.tools, ["T06"]);
        assert_eq!(
            describe(&f),
            "state:UNKNOWN,PARTIAL tenant:pinehaven tool:T06 risk:high"
        );
        assert_eq!(parse("").unwrap(), OperationFilter::default());
    }

    #[test]
    fn near_misses_name_the_field_or_value_meant() {
        let e = parse("stat:unknown").unwrap_err();
        assert!(e.contains("did you mean `state`?"), "{e}");
        let e = parse("state:unknwon").unwrap_err();
        assert!(e.contains("did you mean `UNKNOWN`?"), "{e}");
        assert!(e.contains("held, all"), "{e}");
        let e = parse("mode:timeout_unknwn").unwrap_err();
        assert!(e.contains("did you mean `timeout_unknown`?"), "{e}");
        let e = parse("risk:hgh").unwrap_err();
        assert!(e.contains("did you mean `high`?"), "{e}");
        assert_eq!(
            parse("MODE:TIMEOUT_UNKNOWN").unwrap().modes,
            [FailureMode::TimeoutUnknown]
        );
    }

    #[test]
    fn a_selection_is_the_queue_unless_it_names_states_and_all_means_every_one() {
        assert!(selection("risk:high").unwrap().queue);
        assert!(selection("state:held").unwrap().queue);
        let all = selection("state:all").unwrap();
        assert!(!all.queue && all.states.is_empty(), "{all:?}");
        let unknown = selection("state:unknown").unwrap();
        assert!(!unknown.queue);
        assert_eq!(unknown.states, [State::Unknown]);
    }

    #[test]
    fn bad_terms_say_what_is_accepted() {
        assert!(parse("colour:red").unwrap_err().contains("unknown field"));
        assert!(parse("risk:extreme").unwrap_err().contains("critical"));
        assert!(parse("unknown").unwrap_err().contains("field:value"));
    }
}
