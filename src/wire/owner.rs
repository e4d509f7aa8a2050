//! The operation a refused line names, read leniently, so that quarantine can hold
//! back the rest of that operation's history with it.

use super::tree::{self, Node};

/// The operation id a line names when it is a JSON object: its `id` for an
/// operation record, its `operation` otherwise; `None` for a contract or a line
/// that is not a JSON object.
pub fn operation_named(bytes: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(bytes).ok()?;
    let Node::Object(entries) = tree::parse(text).ok()? else {
        return None;
    };
    let get = |name: &str| {
        entries.iter().find_map(|(k, v)| match v {
            Node::Str(s) if k == name => Some(s.to_string()),
            _ => None,
        })
    };
    match get("type").as_deref() {
        Some("contract") => None,
        Some("operation") => get("id"),
        _ => get("operation"),
    }
    // A padded id is refused, but still names the operation it was meant for: its
    // history is withheld with it.
    .map(|id| id.trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_operation_of_any_record_but_a_contract() {
        let attempt = br#"{"type":"attempt","id":"A1","operation":"F09","error_type":"x"}"#;
        assert_eq!(operation_named(attempt), Some("F09".into()));
        let op = br#"{"type":"operation","id":"F10","state":"bogus"}"#;
        assert_eq!(operation_named(op), Some("F10".into()));
        assert_eq!(
            operation_named(br#"{"type":"contract","tool":"T03"}"#),
            None
        );
        assert_eq!(operation_named(b"not json"), None);
        assert_eq!(operation_named(b"[\"F09\"]"), None);
    }
}
