//! A tool's operation contract (DESIGN §5 `contract`): what a provider documents
//! of one tool — its method, idempotency, status lookup, retry guidance,
//! compensation and owner. It sits above the model and the lookup types, which it
//! names and which never name it.

use serde::{Deserialize, Serialize};
use std::fmt;

use super::lookup::{PathTemplate, ResponseShape, StatusLookup};
use super::model::Role;
use super::names::text_enum;

/// Idempotency semantics a provider documents for one tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdempotencyContract {
    pub supported: bool,
    pub scope: Option<String>,
    pub retention_hours: Option<u32>,
}

/// The operation contract of one tool (DESIGN §5 `contract`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Contract {
    pub tool: String,
    pub version: String,
    pub action: String,
    pub method: String,
    pub idempotency: IdempotencyContract,
    pub status_lookup: StatusLookup,
    pub retryable: Vec<String>,
    pub compensation: Option<String>,
    pub owner: String,
    pub max_attempts: u32,
    pub budget_seconds: u32,
    /// Where the tool's call goes at its provider: a path (and query) with the
    /// placeholders of a lookup URL, each filled from the operation. Optional;
    /// the drill's simulated provider serves the call there.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<PathTemplate>,
    /// What the provider's 2xx answer is declared to carry: the only parts of
    /// it an executor checks. Optional: without it a 2xx is checked for nothing
    /// but instruction-like text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<ResponseShape>,
    /// The rest of the tool inventory (DESIGN §5 "The inventory fields"), all
    /// optional: a contract without them is written and hashed as before.
    #[serde(flatten)]
    pub inventory: Inventory,
    /// Owners per unresolved state (DESIGN §5): who a hold is routed to by
    /// its state and failure mode ([`crate::core::routing`]). Optional; without
    /// it every hold goes to the operation's owner.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owners: Option<Owners>,
    /// The qualified review recovery on the tool's holds needs (DESIGN §2,
    /// G13): a reviewer taking a recovery action also holds `domain:X` on the
    /// tenant. Optional; without it no domain grant is asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain_review: Option<DomainReview>,
    /// When the tool's circuit opens (DESIGN §9.5). Optional: without it the
    /// tool has no circuit and every sender sends as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub circuit: Option<CircuitConfig>,
}

/// The owner a contract names for each kind of unresolved state, each optional
/// (DESIGN §5 `owners`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Owners {
    /// Schema and provider contracts: validation failures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integration: Option<String>,
    /// Access and identity: `auth_denied`, another tenant's record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub security: Option<String>,
    /// Record truth: a lookup found the record, but not as expected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub business: Option<String>,
    /// Partial or ambiguous effects past their observation window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incident: Option<String>,
}

text_enum!(
    /// The domain whose qualified review recovery on a tool's holds needs.
    DomainReview {
        Legal => "legal",
        Financial => "financial",
        Employment => "employment",
        Privacy => "privacy",
        Security => "security",
    }
);

impl DomainReview {
    /// The grant a reviewer holds on the tenant to recover this domain's holds.
    pub fn grant(self) -> Role {
        match self {
            DomainReview::Legal => Role::DomainLegal,
            DomainReview::Financial => Role::DomainFinancial,
            DomainReview::Employment => Role::DomainEmployment,
            DomainReview::Privacy => Role::DomainPrivacy,
            DomainReview::Security => Role::DomainSecurity,
        }
    }
}

/// A contract's `circuit` (DESIGN §9.5): the circuit opens once `failures` of
/// the tool's attempts failed (5xx, timeout, UNKNOWN outcome) within
/// `window_seconds`; `probe_after_seconds` after it opened, one call is let
/// through as the probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CircuitConfig {
    pub failures: u32,
    pub window_seconds: u32,
    pub probe_after_seconds: u32,
}

impl Contract {
    /// Whether the tool changes state somewhere (anything but a read method).
    pub fn is_write(&self) -> bool {
        !matches!(
            self.method.to_ascii_uppercase().as_str(),
            "GET" | "HEAD" | "OPTIONS"
        )
    }
}

/// The fields of the seed's tool inventory that the operation contract above
/// does not already hold (identity, method, status lookup, idempotency, retry
/// guidance, compensation and owner are its own; the endpoint is its `path`).
/// Every one is optional and written only when set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Inventory {
    /// The tenant the tool is exposed to (a contract is still one per tool).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The shape of the call's arguments: a reference (a URL or a name) or an
    /// inline JSON object.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<Schema>,
    /// The business rules a call must respect, in words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub business_rules: Vec<String>,
    /// What else the call changes besides its target, in words.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub side_effects: Vec<String>,
    /// The tools or systems the call sets going after it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub downstream: Vec<String>,
    /// The provider's rate limits and whose quota each counts.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rate_limits: Vec<RateLimit>,
}

/// A tool's argument schema as its contract gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum Schema {
    /// Where the schema is kept: a URL or a name.
    Reference(String),
    /// The schema itself, a JSON object.
    Inline(serde_json::Value),
}

text_enum!(
    /// Whose quota a rate limit counts.
    RateScope {
        Tenant => "tenant",
        Account => "account",
        Key => "key",
        Global => "global",
    }
);

/// One documented rate limit: at most `limit` calls per `per_seconds`, counted
/// per `scope`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RateLimit {
    pub scope: RateScope,
    pub limit: u32,
    pub per_seconds: u32,
}
