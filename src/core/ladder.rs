//! The autonomy ladder (DESIGN §9.4; seed 001's manual → native → automation →
//! agent): the levels, what each lets holdfast do on its own, and the refusal
//! (A4) of what a tool's level does not permit. The rules and the model read it;
//! the gates of a raise and the audited change are `autonomy.rs`'s.

use serde::{Deserialize, Serialize};
use std::fmt;

use super::names::text_enum;
use super::refusal::{Refusal, Rule};

text_enum!(
    /// How much holdfast does on its own for one tool, lowest first.
    Level {
        Manual => "manual",
        Native => "native",
        Automation => "automation",
        Agent => "agent",
    }
);

impl Level {
    /// The level's position on the ladder (0 for manual), as the store keeps it
    /// beside the name so a query can ask for "native or above".
    pub fn rank(self) -> i64 {
        match self {
            Level::Manual => 0,
            Level::Native => 1,
            Level::Automation => 2,
            Level::Agent => 3,
        }
    }

    /// What the level lets holdfast do on its own, in words.
    pub fn meaning(self) -> &'static str {
        match self {
            Level::Manual => "a person runs every lookup and every piece of work",
            Level::Native => "scheduled lookups run by themselves (reads only)",
            Level::Automation => "scheduled lookups run, and workers may claim approved work",
            Level::Agent => {
                "scheduled lookups run, workers claim approved work, and an agent identity may open proposals (a person still confirms)"
            }
        }
    }
}

/// Something holdfast (or a non-person identity) does for a tool without a
/// person asking for it this time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Capability {
    /// `observe --watch` looks the tool's holds up on their schedule.
    ScheduledLookup,
    /// A worker claims approved work (retries, compensations, resumes).
    ClaimWork,
    /// An agent identity opens a proposal on one of the tool's operations.
    AgentProposal,
}

impl Capability {
    /// The lowest level that permits it.
    pub fn needs(self) -> Level {
        match self {
            Capability::ScheduledLookup => Level::Native,
            Capability::ClaimWork => Level::Automation,
            Capability::AgentProposal => Level::Agent,
        }
    }

    fn words(self) -> &'static str {
        match self {
            Capability::ScheduledLookup => "scheduled lookups",
            Capability::ClaimWork => "workers claiming its work",
            Capability::AgentProposal => "an agent identity opening proposals",
        }
    }
}

/// Whether a tool at `level` permits `capability`.
pub fn permits(level: Level, capability: Capability) -> bool {
    level >= capability.needs()
}

/// [`permits`] as a refusal naming rule A4, for the doors that act on it (the
/// work protocol's claim, an agent's proposal).
pub fn require(tool: &str, level: Level, capability: Capability) -> Result<(), Refusal> {
    if permits(level, capability) {
        return Ok(());
    }
    Err(Refusal {
        rule: Rule::A4,
        reason: format!(
            "tool {tool} is at autonomy level {level}; {} needs {} or above (an owner raises it with `holdfast autonomy set {tool} {} --rationale …`)",
            capability.words(),
            capability.needs(),
            capability.needs()
        ),
    })
}

/// The prefix of identities that are agents rather than people or services.
pub const AGENT_PREFIX: &str = "agent:";

/// Whether `identity` names an agent.
pub fn is_agent(identity: &str) -> bool {
    identity.starts_with(AGENT_PREFIX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ladder_orders_and_bounds_capabilities() {
        assert!(Level::Manual < Level::Native && Level::Automation < Level::Agent);
        assert!(!permits(Level::Manual, Capability::ScheduledLookup));
        assert!(permits(Level::Native, Capability::ScheduledLookup));
        assert!(!permits(Level::Native, Capability::ClaimWork));
        assert!(permits(Level::Automation, Capability::ClaimWork));
        assert!(!permits(Level::Automation, Capability::AgentProposal));
        assert!(permits(Level::Agent, Capability::AgentProposal));
        assert_eq!(
            require("T06", Level::Native, Capability::ClaimWork)
                .unwrap_err()
                .rule,
            Rule::A4
        );
    }
}
