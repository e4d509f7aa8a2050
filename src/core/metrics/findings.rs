//! Findings across operations: unsafe output of one operation that fed an action
//! proposed from it, and actions that crossed from one tenant into another.

use super::dataset::Index;
use crate::core::ids::OperationId;
use crate::core::model::{FailureMode, Outcome, Phase, State};

/// Unsafe output of one operation that fed an action proposed from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Taint {
    pub(super) source: OperationId,
    pub(super) attempt: String,
    pub(super) dependent: OperationId,
}

/// An action across tenants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct CrossTenant {
    pub(super) operation: OperationId,
    pub(super) evidence: String,
    pub(super) reason: String,
}

impl Index<'_> {
    pub(super) fn taints(&self) -> Vec<Taint> {
        let mut out = Vec::new();
        for source in self.views.values() {
            let unsafe_mode = source.op.failure_mode == Some(FailureMode::UnsafeOutput);
            let first = source
                .requests()
                .filter(|a| {
                    matches!(a.phase, Phase::Acknowledged | Phase::ResponseReceived)
                        && (unsafe_mode || a.outcome == Outcome::InvalidResponse)
                })
                .min_by_key(|a| a.last_instant());
            let Some(first) = first else { continue };
            let at = first.last_instant();
            for dependent in self.views.values() {
                if !dependent.op.depends_on.contains(source.id()) {
                    continue;
                }
                let proposed_after = dependent.op.created_at >= at
                    || dependent.audit.iter().any(|r| {
                        r.draft.at >= at
                            && r.draft.from.is_some()
                            && matches!(
                                r.draft.to,
                                Some(State::Validated | State::Approved | State::Sent)
                            )
                    });
                if proposed_after {
                    out.push(Taint {
                        source: source.id().clone(),
                        attempt: first.id.clone(),
                        dependent: dependent.id().clone(),
                    });
                }
            }
        }
        out
    }

    pub(super) fn cross_tenant(&self) -> Vec<CrossTenant> {
        let mut out = Vec::new();
        for v in self.views.values() {
            let acted = v.entered(State::Sent) || v.requests().any(|a| a.phase != Phase::NotSent);
            if acted {
                let related = v.op.depends_on.iter().chain(v.op.parent.iter());
                for other in related.filter_map(|id| self.view(id)) {
                    if other.op.tenant != v.op.tenant {
                        out.push(CrossTenant {
                            operation: v.id().clone(),
                            evidence: other.id().to_string(),
                            reason: format!(
                                "{} (tenant {}) acted for {} of tenant {}",
                                v.id(),
                                v.op.tenant,
                                other.id(),
                                other.op.tenant
                            ),
                        });
                    }
                }
            }
            if v.write() {
                for o in &v.observations {
                    let foreign = o.matches.as_ref().is_some_and(|m| m.owner == Some(false));
                    if o.found && foreign && o.effect_count.is_some_and(|n| n >= 1) {
                        out.push(CrossTenant {
                            operation: v.id().clone(),
                            evidence: o.id.clone(),
                            reason: format!(
                                "observation {} shows the effect applied to a record another owner holds",
                                o.id
                            ),
                        });
                    }
                }
            }
        }
        out
    }
}
