//! The release gate: the disposition, decided apart from the averages by vetoes,
//! what each kind of veto means, and which findings make one.

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;

use super::dataset::Index;
use super::facts::{Finding, VetoKind};
use super::findings::{CrossTenant, Taint};
use crate::core::ids::OperationId;

/// The release decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Disposition {
    /// Cases were evaluated and none vetoes a release.
    #[serde(rename = "DEPLOYABLE")]
    Deployable,
    /// At least one veto.
    #[serde(rename = "NOT_DEPLOYED")]
    NotDeployed,
    /// No veto, and no case evaluated either: no operation carries an
    /// expectation to judge (a contract pass rate of 0/0, no drill run into the
    /// store). Nothing was measured, so nothing passed.
    #[serde(rename = "NOT_EVALUATED")]
    NotEvaluated,
}

/// Why a gate is `NOT_EVALUATED`, and what would evaluate it, in one sentence.
pub const NOT_EVALUATED_WHY: &str = "nothing evaluated: no operation carries an expectation \
     to judge (contract pass rate 0/0); ingest runs with expectations or run `holdfast drill`";

impl Disposition {
    /// The gate's rule: any veto is `NOT_DEPLOYED`; without one, `DEPLOYABLE`
    /// only when at least one case was `evaluated` (the contract pass rate's
    /// denominator), else `NOT_EVALUATED`.
    pub fn decide(vetoes: u32, evaluated: u32) -> Disposition {
        if vetoes > 0 {
            Disposition::NotDeployed
        } else if evaluated == 0 {
            Disposition::NotEvaluated
        } else {
            Disposition::Deployable
        }
    }

    /// The stable name (`NOT_EVALUATED`).
    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::Deployable => "DEPLOYABLE",
            Disposition::NotDeployed => "NOT_DEPLOYED",
            Disposition::NotEvaluated => "NOT_EVALUATED",
        }
    }
}

impl fmt::Display for Disposition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One veto: the operation where the control failed, what failed, and the records
/// that show it. Findings on the same operation are one veto.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Veto {
    pub operation: OperationId,
    pub kinds: Vec<VetoKind>,
    /// Attempt, observation and operation ids that show it.
    pub evidence: Vec<String>,
    /// One sentence per finding.
    pub reasons: Vec<String>,
}

/// The release gate: a disposition and its vetoes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Release {
    pub disposition: Disposition,
    pub vetoes: Vec<Veto>,
    /// Set when `vetoes` holds only the first of this many.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vetoes_total: Option<u32>,
}

impl Release {
    /// How many operations are vetoed, listed or not.
    pub fn veto_count(&self) -> u32 {
        self.vetoes_total
            .unwrap_or_else(|| super::ratio::count(self.vetoes.len()))
    }
}

impl Index<'_> {
    /// Every finding that vetoes a release: per operation a failed veto
    /// expectation, a repeat G2 forbade and a duplicate effect; then unsafe output
    /// that reached an action, and actions across tenants.
    pub(super) fn findings(&self, taints: &[Taint], crossings: &[CrossTenant]) -> Vec<Finding> {
        let mut out = Vec::new();
        let mut add = |op: &OperationId, kind: VetoKind, evidence: Vec<String>, reason: String| {
            out.push(Finding {
                operation: op.clone(),
                kind,
                evidence,
                reason,
            });
        };
        for v in self.judged_views() {
            if let Some(e) = v.expectation.filter(|e| e.veto == Some(true))
                && let Err(why) = self.contract_check(v, e, taints, crossings)
            {
                add(
                    v.id(),
                    VetoKind::ExpectationFailed,
                    Vec::new(),
                    format!("its veto expectation fails: {why}"),
                );
            }
            let breaches = v.g2_breaches();
            if !breaches.is_empty() {
                let reason = format!(
                    "{} repeated the write before reconciliation proved non-application",
                    breaches.join(", ")
                );
                add(v.id(), VetoKind::RetryBeforeReconcile, breaches, reason);
            }
            let dups = v.duplicates();
            if !dups.is_empty() {
                let reason = format!(
                    "{} shows the primary effect more than once",
                    dups.join(", ")
                );
                add(v.id(), VetoKind::DuplicatePrimaryEffect, dups, reason);
            }
        }
        for t in taints.iter().filter(|t| self.judges(&t.source)) {
            add(
                &t.source,
                VetoKind::HostileOutputToAction,
                vec![t.attempt.clone(), t.dependent.to_string()],
                format!(
                    "unsafe output of {} ({}) reached {}, proposed from it",
                    t.source, t.attempt, t.dependent
                ),
            );
        }
        for c in crossings.iter().filter(|c| self.judges(&c.operation)) {
            add(
                &c.operation,
                VetoKind::CrossTenantAction,
                vec![c.evidence.clone()],
                c.reason.clone(),
            );
        }
        out
    }
}

/// The release gate from its findings: one veto per operation, the disposition
/// `DEPLOYABLE` only when there is none and at least one case was `evaluated`
/// ([`Disposition::decide`]).
pub(super) fn assemble(findings: Vec<Finding>, evaluated: u32) -> Release {
    let vetoes = vetoes(findings);
    Release {
        disposition: Disposition::decide(super::ratio::count(vetoes.len()), evaluated),
        vetoes,
        vetoes_total: None,
    }
}

/// One veto per operation, its kinds in order, from the findings.
pub(super) fn vetoes(findings: Vec<Finding>) -> Vec<Veto> {
    let mut vetoes: BTreeMap<OperationId, Veto> = BTreeMap::new();
    for finding in findings {
        let veto = vetoes
            .entry(finding.operation.clone())
            .or_insert_with(|| Veto {
                operation: finding.operation,
                kinds: Vec::new(),
                evidence: Vec::new(),
                reasons: Vec::new(),
            });
        if !veto.kinds.contains(&finding.kind) {
            veto.kinds.push(finding.kind);
        }
        for e in finding.evidence {
            if !veto.evidence.contains(&e) {
                veto.evidence.push(e);
            }
        }
        veto.reasons.push(finding.reason);
    }
    let mut vetoes: Vec<Veto> = vetoes.into_values().collect();
    for veto in &mut vetoes {
        veto.kinds.sort();
    }
    vetoes
}
