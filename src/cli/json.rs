//! Every JSON document the command line prints: pretty, and safe for the terminal
//! it lands on (see [`crate::core::sanitize::json_for_terminal`]).

use serde::Serialize;

/// `value` as pretty JSON that holds no raw control or invisible code point.
pub fn pretty<T: Serialize>(value: &T) -> anyhow::Result<String> {
    let text = serde_json::to_string_pretty(value)?;
    Ok(crate::core::sanitize::json_for_terminal(&text).into_owned())
}
