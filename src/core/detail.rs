//! What the store hands back whole: one operation with everything stored about
//! it ([`OperationDetail`], for the evidence bundle and the rules) and every stored
//! record ([`Dataset`], for computations that need the whole picture). Both sit
//! above the model, the audit row and the contract, which they hold and which
//! never name them.

use serde::Serialize;

use super::audit::AuditRow;
use super::contract::Contract;
use super::ids::OperationId;
use super::model::{
    Attempt, ChildLink, Expectation, Item, Observation, Operation, OperationRow, Proposal, State,
};

/// Every stored record, for computations that need the whole picture.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Dataset {
    pub contracts: Vec<Contract>,
    pub operations: Vec<Operation>,
    pub attempts: Vec<Attempt>,
    pub items: Vec<Item>,
    pub observations: Vec<Observation>,
    pub audit: Vec<AuditRow>,
    pub expectations: Vec<Expectation>,
    /// Every proposal, open or closed (the pending ones are an operational figure).
    pub proposals: Vec<Proposal>,
}

/// Everything stored about one operation, for the evidence bundle and the rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OperationDetail {
    pub row: OperationRow,
    pub contract: Option<Contract>,
    /// In `seq` order.
    pub attempts: Vec<Attempt>,
    /// In `index` order.
    pub items: Vec<Item>,
    /// In `observed_at` order.
    pub observations: Vec<Observation>,
    /// This operation's audit rows, in `seq` order.
    pub audit: Vec<AuditRow>,
    pub expectation: Option<Expectation>,
    pub children: Vec<ChildLink>,
    /// Every operation it depends on, with its state.
    pub dependencies: Vec<(OperationId, State)>,
    pub proposals: Vec<Proposal>,
    /// Other operations with the same idempotency key (same tenant) but a different
    /// payload hash (G3).
    pub key_conflicts: Vec<OperationId>,
    /// The tool's autonomy level (DESIGN §9.4), capped at `manual` while its
    /// status lookup is unchecked.
    pub autonomy: super::ladder::Level,
    /// The values of its records that ingest redacted.
    pub redactions: Vec<super::redact::IngestRedaction>,
    /// Why the tool's status lookup is unchecked (never proven to find a record
    /// known to exist, `holdfast lookup check`), when it is: flagged in the
    /// evidence bundle, and the reason `autonomy` is capped.
    pub lookup_unchecked: Option<String>,
}
