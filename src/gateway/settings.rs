//! The `[gateway]` table of the config file: who the calls are recorded as and
//! where they belong, which servers' read-only hints are believed, whether a
//! `manual` tool's writes wait for approval, and the tools declared by the
//! operator (`[[gateway.tool]]`, a contract each, named
//! `SERVER/TOOL`; the same table as `[[otlp.tool]]`).

use serde::Deserialize;

use crate::core::model::Risk;
use crate::otlp::ToolSettings;

/// The identity the gateway's records are written as.
pub const GATEWAY_IDENTITY: &str = "svc:mcp-gateway";

/// `[gateway]`; every key is optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewaySettings {
    /// Tenant of an operation whose tool names none (default `default`).
    pub tenant: Option<String>,
    /// Owner of an operation whose tool has no contract (default `unassigned`).
    pub owner: Option<String>,
    /// Risk of an operation whose tool names none (default `medium`).
    pub risk: Option<Risk>,
    /// The actor of the operations (default `agent:SERVER`).
    pub actor: Option<String>,
    /// Servers (by `--name`) whose `readOnlyHint` is believed: their tools that
    /// say they only read pass without a hold.
    #[serde(default)]
    pub trusted: Vec<String>,
    /// The operator's standing approval of the agent's calls through the
    /// gateway, recorded on each operation bound to its payload hash (G11):
    /// without it a reviewer cannot authorize a retry of a held call, only
    /// resolve or accept it.
    pub approval: Option<StandingApproval>,
    /// Hold for a reviewer's approval every write call of a tool whose
    /// autonomy level in the store is `manual` (a tool with no recorded level
    /// is, DESIGN §9.4): the call is recorded BLOCKED and not forwarded; an
    /// approval lets the next identical call through once. Off, the gateway
    /// records and forwards writes whatever the level (default off).
    #[serde(default)]
    pub hold_writes_for_approval: bool,
    /// Whether reads (tools that pass without a hold) are recorded too, each
    /// as an operation written once it ends, SUCCEEDED or FAILED and never
    /// held (default false: reads pass without a record).
    #[serde(default)]
    pub record_reads: bool,
    /// Tools declared here, named `SERVER/TOOL`.
    #[serde(default)]
    pub tool: Vec<ToolSettings>,
}

/// `[gateway.approval]`: who approved the agent's calls, under which policy,
/// for how long after each call.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StandingApproval {
    pub by: String,
    pub policy: String,
    /// Hours each call's approval stays valid (default 24).
    pub hours: Option<u32>,
}

impl StandingApproval {
    /// The approval of one call with `payload` made at `at`.
    pub fn of_call(
        &self,
        payload: &crate::core::ids::Sha256,
        at: chrono::DateTime<chrono::Utc>,
    ) -> crate::core::model::Approval {
        crate::core::model::Approval {
            by: self.by.clone(),
            policy: self.policy.clone(),
            at: Some(at),
            payload_hash: Some(payload.clone()),
            expires_at: Some(at + chrono::Duration::hours(i64::from(self.hours.unwrap_or(24)))),
        }
    }
}

impl GatewaySettings {
    pub fn tool(&self, name: &str) -> Option<&ToolSettings> {
        self.tool.iter().find(|t| t.name == name)
    }

    pub fn trusts(&self, server: &str) -> bool {
        self.trusted.iter().any(|s| s == server)
    }
}
