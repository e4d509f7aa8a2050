//! The `[otlp]` table of the config file: defaults for what spans do not say
//! (tenant, owner, risk), the tools declared by the operator (`[[otlp.tool]]`, a
//! contract each), how long a span may wait for its tool span, and the
//! receiver's limits.

use serde::Deserialize;

use crate::core::contract::{Contract, IdempotencyContract};
use crate::core::lookup::StatusLookup;
use crate::core::model::Risk;

/// How long an HTTP span waits for its `execute_tool` span before it becomes an
/// operation of tool `unknown`.
pub const DEFAULT_PENDING_SECONDS: u64 = 300;
/// The largest request body the receiver accepts (after gzip).
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// The receiver's default address (the OTLP/HTTP port).
pub const DEFAULT_LISTEN: &str = "127.0.0.1:4318";
/// The identity the receiver's records are written as.
pub const RECEIVER_IDENTITY: &str = "svc:otlp";

/// `[otlp]`; every key is optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OtlpSettings {
    /// Tenant of an operation whose span and tool name none.
    pub tenant: Option<String>,
    /// Owner of an operation whose tool has no contract.
    pub owner: Option<String>,
    /// Risk of an operation whose tool names none.
    pub risk: Option<Risk>,
    /// Seconds an HTTP span waits for its tool span (default 300).
    pub pending_seconds: Option<u64>,
    /// The receiver's body limit in bytes (default 4 MiB).
    pub max_body_bytes: Option<usize>,
    /// The environment variable holding the receiver's bearer token.
    pub token_env: Option<String>,
    /// The receiver's address (default 127.0.0.1:4318).
    pub listen: Option<String>,
    /// Milliseconds a request may wait for the store before the receiver
    /// answers 503 with `Retry-After` (default 5000).
    pub busy_ms: Option<u64>,
    /// Tools declared here rather than by contract records.
    #[serde(default)]
    pub tool: Vec<ToolSettings>,
}

/// `[[otlp.tool]]`: the contract of one tool, and where its operations belong.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolSettings {
    /// `gen_ai.tool.name`.
    pub name: String,
    pub method: String,
    pub owner: String,
    pub action: Option<String>,
    pub version: Option<String>,
    #[serde(default)]
    pub idempotency: bool,
    pub max_attempts: Option<u32>,
    pub budget_seconds: Option<u32>,
    #[serde(default)]
    pub retryable: Vec<String>,
    pub tenant: Option<String>,
    pub risk: Option<Risk>,
    /// A JSON pointer (RFC 6901) into the call's arguments whose value is the
    /// operation's business key: two calls with the same key are the same
    /// business intent, whatever else differs.
    pub business_key: Option<String>,
    /// Whether the tool may report an error after its effect was committed: an
    /// error result then leaves the operation UNKNOWN rather than FAILED.
    #[serde(default)]
    pub errors_may_commit: bool,
}

impl ToolSettings {
    /// The business key the contract's pointer finds in `arguments`: a string as
    /// it is, any other value as its JSON text; `None` without a pointer, or
    /// when it finds nothing or `null`.
    pub fn business_key(&self, arguments: Option<&serde_json::Value>) -> Option<String> {
        let pointer = self.business_key.as_deref()?;
        match arguments?.pointer(pointer)? {
            serde_json::Value::Null => None,
            serde_json::Value::String(text) => Some(text.clone()),
            other => Some(other.to_string()),
        }
    }

    /// The contract record this table declares.
    pub fn contract(&self) -> Contract {
        Contract {
            tool: self.name.clone(),
            version: self.version.clone().unwrap_or_else(|| "otlp-config".into()),
            action: self.action.clone().unwrap_or_else(|| self.name.clone()),
            method: self.method.to_ascii_uppercase(),
            idempotency: IdempotencyContract {
                supported: self.idempotency,
                scope: None,
                retention_hours: None,
            },
            status_lookup: StatusLookup::None,
            retryable: self.retryable.clone(),
            compensation: None,
            owner: self.owner.clone(),
            max_attempts: self.max_attempts.unwrap_or(3),
            budget_seconds: self.budget_seconds.unwrap_or(120),
            path: None,
            response: None,
            inventory: Default::default(),
            owners: None,
            domain_review: None,
            circuit: None,
        }
    }
}

impl OtlpSettings {
    pub fn tool(&self, name: &str) -> Option<&ToolSettings> {
        self.tool.iter().find(|t| t.name == name)
    }

    pub fn pending_window(&self) -> chrono::Duration {
        let secs = self.pending_seconds.unwrap_or(DEFAULT_PENDING_SECONDS);
        chrono::Duration::seconds(i64::try_from(secs).unwrap_or(i64::MAX / 1000))
    }

    pub fn max_body_bytes(&self) -> usize {
        self.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES)
    }
}

/// For each table of `tools` (config `[[TABLE]]`) whose tool already has a stored
/// contract with other content, a warning naming the fields that differ. The
/// stored contract is the one every door uses: a contract, once stored, does not
/// change, so an edited table would otherwise be ignored without a word.
pub fn drift(table: &str, tools: &[ToolSettings], stored: &[Contract]) -> Vec<String> {
    let mut out = Vec::new();
    for tool in tools {
        let Some(kept) = stored.iter().find(|c| c.tool == tool.name) else {
            continue;
        };
        let declared = tool.contract();
        if &declared == kept {
            continue;
        }
        let fields = differing_fields(kept, &declared);
        out.push(format!(
            "[[{table}]] {}: differs from the stored contract in {}; the stored contract is the one used (a stored contract does not change)",
            crate::core::sanitize::sanitize(&tool.name),
            fields.join(", ")
        ));
    }
    out
}

/// The top-level fields in which two contracts differ, by their wire names.
fn differing_fields(a: &Contract, b: &Contract) -> Vec<String> {
    let (serde_json::Value::Object(a), serde_json::Value::Object(b)) = (
        serde_json::to_value(a).unwrap_or_default(),
        serde_json::to_value(b).unwrap_or_default(),
    ) else {
        return vec!["its content".to_owned()];
    };
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(owner: &str) -> ToolSettings {
        ToolSettings {
            name: "create_ticket".into(),
            method: "POST".into(),
            owner: owner.into(),
            action: None,
            version: None,
            idempotency: false,
            max_attempts: None,
            budget_seconds: None,
            retryable: Vec::new(),
            tenant: None,
            risk: None,
            business_key: None,
            errors_may_commit: false,
        }
    }

    #[test]
    fn an_edited_table_is_named_with_the_fields_that_differ() {
        let stored = vec![table("integrations").contract()];
        assert!(drift("otlp.tool", &[table("integrations")], &stored).is_empty());
        let mut edited = table("payments");
        edited.max_attempts = Some(5);
        let warnings = drift("otlp.tool", &[edited], &stored);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(
            warnings[0].starts_with("[[otlp.tool]] create_ticket: differs from the stored contract in max_attempts, owner;"),
            "{}",
            warnings[0]
        );
        // A table whose tool has no stored contract is not a drift: it is recorded.
        let mut other = table("integrations");
        other.name = "refund".into();
        assert!(drift("otlp.tool", &[other], &stored).is_empty());
    }
}
