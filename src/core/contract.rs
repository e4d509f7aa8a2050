//! A tool's operation contract (DESIGN §5 `contract`): what a provider documents
//! of one tool — its method, idempotency, status lookup, retry guidance,
//! compensation and owner. It sits above the model and the lookup types, which it
//! names and which never name it.

use serde::{Deserialize, Serialize};

use super::lookup::{PathTemplate, ResponseShape, StatusLookup};

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
    /// When the tool's circuit opens (DESIGN §9.5). Optional: without it the
    /// tool has no circuit and every sender sends as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub circuit: Option<CircuitConfig>,
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
