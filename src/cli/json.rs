//! Every JSON document the command line prints: secrets redacted in every string
//! value ([`crate::core::redact`]), pretty, and safe for the terminal it lands on
//! (see [`crate::core::sanitize::json_for_terminal`]).

use serde::Serialize;

/// `value` as pretty JSON with every secret redacted and no raw control or
/// invisible code point.
pub(crate) fn pretty<T: Serialize>(value: &T) -> anyhow::Result<String> {
    let mut value = serde_json::to_value(value)?;
    crate::core::redact::redact_value(&mut value);
    let text = serde_json::to_string_pretty(&value)?;
    Ok(crate::core::sanitize::json_for_terminal(&text).into_owned())
}
