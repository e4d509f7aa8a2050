//! The filter language of the console (after `f`) and of the command line
//! (`review --filter`, `export --filter`): space-separated `field:value[,value]`
//! terms over state, tenant, owner, failure mode and risk, parsed into the store's
//! [`OperationFilter`] and described back in one line that stays on screen.

use crate::core::model::{FailureMode, Risk, State};
use crate::store::OperationFilter;

/// The filter fields the console knows, for the prompt and errors.
pub const FIELDS: &str = "state, tenant, owner, mode, risk";

/// Parses filter text; an empty text is no filter. The error says which term is
/// wrong and what is accepted.
pub fn parse(text: &str) -> Result<OperationFilter, String> {
    let mut filter = OperationFilter::default();
    for term in text.split_whitespace() {
        let (field, values) = term
            .split_once(':')
            .ok_or_else(|| format!("`{term}` is not field:value (fields: {FIELDS})"))?;
        for value in values.split(',').filter(|v| !v.is_empty()) {
            match field {
                "state" => filter.states.push(
                    State::parse(&value.to_ascii_uppercase())
                        .ok_or_else(|| format!("state `{value}`: one of {}", State::expected()))?,
                ),
                "tenant" => filter.tenants.push(value.to_owned()),
                "owner" => filter.owners.push(value.to_owned()),
                "mode" => filter.modes.push(FailureMode::parse(value).ok_or_else(|| {
                    format!("mode `{value}`: one of {}", FailureMode::expected())
                })?),
                "risk" => filter.risks.push(
                    Risk::parse(value)
                        .ok_or_else(|| format!("risk `{value}`: one of {}", Risk::expected()))?,
                ),
                other => return Err(format!("unknown field `{other}` (fields: {FIELDS})")),
            }
        }
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
    term(&mut out, "mode", &filter.modes);
    term(&mut out, "risk", &filter.risks);
    out.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_parse_and_describe_back() {
        let f = parse("state:unknown,PARTIAL risk:high tenant:pinehaven").unwrap();
        assert_eq!(f.states, [State::Unknown, State::Partial]);
        assert_eq!(f.risks, [Risk::High]);
        assert_eq!(
            describe(&f),
            "state:UNKNOWN,PARTIAL tenant:pinehaven risk:high"
        );
        assert_eq!(parse("").unwrap(), OperationFilter::default());
    }

    #[test]
    fn bad_terms_say_what_is_accepted() {
        assert!(parse("colour:red").unwrap_err().contains("unknown field"));
        assert!(parse("risk:extreme").unwrap_err().contains("critical"));
        assert!(parse("unknown").unwrap_err().contains("field:value"));
    }
}
