//! The planted secrets of `fixtures/planted_secrets.tsv` (every kind the redactor
//! knows) and a packet that puts each in every free-text field of a held
//! operation, for the tests that check no surface and no table holds one.

use holdfast::wire::MAX_KEY_CHARS;

const PLANTED: &str = include_str!("../fixtures/planted_secrets.tsv");
const CONTRACT: &str = r#"{"type":"contract","tool":"T03","version":"IC07","action":"ticket.create","method":"POST","idempotency":{"supported":true,"scope":"account","retention_hours":24},"status_lookup":true,"retryable":["connection_reset"],"compensation":"ticket.delete","owner":"integrations","max_attempts":3,"budget_seconds":120}"#;
pub const PAYLOAD: &str = "sha256:ca978112ca1bbdcafac231b39a23dc4da786eff8147c4e72b9807785afee48bb";
pub const TRACE: &str = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";

pub struct Planted {
    pub kind: &'static str,
    pub text: String,
    pub raws: Vec<&'static str>,
}

pub fn planted() -> Vec<Planted> {
    PLANTED
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let mut parts = l.split('\t');
            let kind = parts.next().expect("kind");
            let text = parts.next().expect("text").replace('⏎', "\n");
            Planted {
                kind,
                text,
                raws: parts.collect(),
            }
        })
        .collect()
}

/// The key form of a planted text: itself when it fits a key (every planted text
/// but the longest PEM and token ones), else none.
pub fn as_key(text: &str) -> Option<&str> {
    (text.chars().count() <= MAX_KEY_CHARS).then_some(text)
}

/// One held operation per planted text, with the text in its target and business
/// key, an attempt's excerpt, error type and provider request id, and an
/// observation's note.
pub fn packet(secrets: &[Planted]) -> String {
    let mut lines = vec![CONTRACT.to_owned()];
    for (i, p) in secrets.iter().enumerate() {
        let id = format!("S{i}");
        let key = as_key(&p.text);
        lines.push(
            serde_json::json!({
                "type": "operation", "id": id, "tenant": "pinehaven", "actor": "svc:relay-desk",
                "tool": "T03", "action": "ticket.create", "target": p.text,
                "payload_hash": PAYLOAD, "risk": "high", "business_key": key,
                "owner": "integrations", "state": "UNKNOWN",
                "failure_mode": "timeout_unknown", "created_at": "2026-09-05T10:00:00Z"
            })
            .to_string(),
        );
        lines.push(
            serde_json::json!({
                "type": "attempt", "id": format!("SA{i}"), "operation": id, "seq": 1,
                "kind": "request", "started_at": "2026-09-05T10:00:01Z",
                "phase": "request_sent", "outcome": "timeout", "error_type": key,
                "provider_request_id": key, "trace_id": TRACE, "response_excerpt": p.text
            })
            .to_string(),
        );
        lines.push(
            serde_json::json!({
                "type": "observation", "id": format!("SO{i}"), "operation": id,
                "observed_at": "2026-09-05T10:01:00Z", "source": "provider_status",
                "found": false, "note": p.text
            })
            .to_string(),
        );
    }
    lines.join("\n") + "\n"
}

/// Panics naming the surface when any raw secret appears in `text`.
pub fn no_raw(surface: &str, text: &str, secrets: &[Planted]) {
    for p in secrets {
        for raw in &p.raws {
            assert!(
                !text.contains(raw),
                "{surface}: raw {} secret {raw} shown",
                p.kind
            );
        }
    }
}
