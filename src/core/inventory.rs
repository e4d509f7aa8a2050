//! A tool's inventory (DESIGN §5 "The inventory fields"; the seed's first step):
//! each field the seed lists, present or missing in the tool's contract, and for
//! a missing field what its lack limits in words. Each limit says what the rules
//! of this crate do today without the field — the matrix (`matrix.rs`), the
//! autonomy gates (`autonomy.rs`) and the plans (`rules/plan/`) — and the tests
//! below hold each one to the rule it names.

use serde::Serialize;

use super::contract::{Contract, Schema};
use super::lookup::StatusLookup;

/// One field of the inventory as a tool's contract gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Entry {
    /// The field's name as the seed lists it (`status lookup`).
    pub field: &'static str,
    /// Where the contract holds it (`status_lookup`), for a reader who adds it.
    pub wire: &'static str,
    /// The field's value in one line (contract text: outside content, to be
    /// neutralized on display); `None` when the contract lacks it.
    pub value: Option<String>,
    /// What the field's lack (or its partial form) limits, in words; `None`
    /// when nothing is limited.
    pub limit: Option<&'static str>,
}

impl Entry {
    pub fn missing(&self) -> bool {
        self.value.is_none()
    }
}

/// What a contract without a status lookup limits: the matrix holds a write that
/// may have crossed the boundary for its owner (no lookup to reconcile by), and
/// gate A1 refuses every raise above `manual`.
pub const NO_STATUS_LOOKUP: &str = "reconciliation by hand only: a write that may have crossed the execution boundary is held for its owner, and autonomy is capped at manual (gate A1 refuses every raise)";
/// A lookup declared only as `true`: the same cap, since holdfast cannot make it.
pub const LOOKUP_BY_HAND: &str = "a person makes every lookup: autonomy is capped at manual until the contract gives the lookup object of DESIGN §9.1 (gate A1)";
/// No compensating action: approve-compensation is refused (G1).
pub const NO_COMPENSATION: &str =
    "a PARTIAL operation can only be resumed or accepted: approve-compensation is refused (G1)";
/// No idempotency: nothing lets the provider recognise a repeat.
pub const NO_IDEMPOTENCY: &str = "the provider cannot recognise a repeat (no idempotency key is sent): a retry after a request that may have crossed the execution boundary needs reconciliation proving non-application first (G2), and no key protects it";
/// No rate-limit scope: a 429 cannot be charged to anyone's quota.
pub const NO_RATE_LIMITS: &str = "a 429 cannot be charged to a tenant, account or key: it is retried only after its own Retry-After within the deadline, and without one it goes to the owner";
/// No retryable error types: the matrix's allowlist is empty.
pub const NO_RETRY_GUIDANCE: &str = "no error is on the retry allowlist: a transient error that never crossed the execution boundary is held for the owner instead of retried (only a timeout is retried)";
/// No tenant on the contract.
pub const NO_TENANT: &str =
    "not bound to a tenant: the one contract of the tool governs every tenant's calls of it";
/// No endpoint (`path`).
pub const NO_ENDPOINT: &str =
    "where the call goes is not recorded: the executor and the drill send it to the default /ops";
/// No schema.
pub const NO_SCHEMA: &str =
    "the arguments' shape is undocumented: a validation failure cannot be traced to a schema";
/// No business rules.
pub const NO_BUSINESS_RULES: &str =
    "the rules a call must respect are not written down: a reviewer judges from the call alone";
/// No side effects.
pub const NO_SIDE_EFFECTS: &str =
    "what else a call changes is not recorded: reviewers see only its own target";
/// No downstream chain.
pub const NO_DOWNSTREAM: &str =
    "the calls this one sets going are not named: a hold's downstream reach is unknown";

/// The inventory of `contract`, in the seed's order.
pub fn inventory(c: &Contract) -> Vec<Entry> {
    let inv = &c.inventory;
    let joined = |items: &[String]| (!items.is_empty()).then(|| items.join("; "));
    let (lookup, lookup_limit) = match &c.status_lookup {
        StatusLookup::None => (None, Some(NO_STATUS_LOOKUP)),
        StatusLookup::ByHand => (Some("by hand".to_owned()), Some(LOOKUP_BY_HAND)),
        StatusLookup::Http(spec) => (Some(format!("{} {}", spec.method, spec.url)), None),
    };
    let idempotency = c.idempotency.supported.then(|| {
        let mut out = "supported".to_owned();
        if let Some(scope) = &c.idempotency.scope {
            out.push_str(&format!(", scope {scope}"));
        }
        if let Some(hours) = c.idempotency.retention_hours {
            out.push_str(&format!(", kept {hours} h"));
        }
        out
    });
    let rate_limits = (!inv.rate_limits.is_empty()).then(|| {
        inv.rate_limits
            .iter()
            .map(|r| format!("{} per {} s per {}", r.limit, r.per_seconds, r.scope))
            .collect::<Vec<_>>()
            .join("; ")
    });
    let retry = (!c.retryable.is_empty()).then(|| {
        format!(
            "retry on {}; at most {} attempts within {} s",
            c.retryable.join(", "),
            c.max_attempts,
            c.budget_seconds
        )
    });
    let schema = inv.schema.as_ref().map(|s| match s {
        Schema::Reference(r) => r.clone(),
        Schema::Inline(v) => v.to_string(),
    });
    let entry = |field, wire, value: Option<String>, limit| Entry {
        field,
        wire,
        limit: if value.is_none() { limit } else { None },
        value,
    };
    vec![
        entry(
            "identity",
            "tool, version, action",
            Some(format!("{} v{} ({})", c.tool, c.version, c.action)),
            None,
        ),
        entry("tenant", "tenant", inv.tenant.clone(), Some(NO_TENANT)),
        entry("method", "method", Some(c.method.clone()), None),
        entry(
            "endpoint",
            "path",
            c.path.as_ref().map(|p| p.as_str().to_owned()),
            Some(NO_ENDPOINT),
        ),
        entry("schema", "schema", schema, Some(NO_SCHEMA)),
        entry(
            "business rules",
            "business_rules",
            joined(&inv.business_rules),
            Some(NO_BUSINESS_RULES),
        ),
        entry(
            "side effects",
            "side_effects",
            joined(&inv.side_effects),
            Some(NO_SIDE_EFFECTS),
        ),
        entry(
            "downstream chains",
            "downstream",
            joined(&inv.downstream),
            Some(NO_DOWNSTREAM),
        ),
        Entry {
            field: "status lookup",
            wire: "status_lookup",
            value: lookup,
            limit: lookup_limit,
        },
        entry(
            "idempotency behavior",
            "idempotency",
            idempotency,
            Some(NO_IDEMPOTENCY),
        ),
        entry(
            "rate limits",
            "rate_limits",
            rate_limits,
            Some(NO_RATE_LIMITS),
        ),
        entry(
            "retry guidance",
            "retryable",
            retry,
            Some(NO_RETRY_GUIDANCE),
        ),
        entry(
            "compensation",
            "compensation",
            c.compensation.clone(),
            Some(NO_COMPENSATION),
        ),
        entry("owner", "owner", Some(c.owner.clone()), None),
    ]
}

/// The status lookup's kind in one word: `none`, `by hand` or `http`.
pub fn lookup_kind(lookup: &StatusLookup) -> &'static str {
    match lookup {
        StatusLookup::None => "none",
        StatusLookup::ByHand => "by hand",
        StatusLookup::Http(_) => "http",
    }
}

#[cfg(test)]
mod tests {
    use chrono::{DateTime, Utc};

    use super::*;
    use crate::core::autonomy::{Gates, LevelRequest, decide_level};
    use crate::core::contract::IdempotencyContract;
    use crate::core::ladder::Level;
    use crate::core::matrix::{Decision, Observed, RetryInput, recommend};
    use crate::core::model::{FailureMode, Outcome, Phase};
    use crate::core::refusal::Rule;
    use crate::core::rules::Rationale;
    use crate::core::rules::actor::Actor;

    fn bare() -> Contract {
        Contract {
            tool: "T01".into(),
            version: "1".into(),
            action: "refund.create".into(),
            method: "POST".into(),
            idempotency: IdempotencyContract {
                supported: false,
                scope: None,
                retention_hours: None,
            },
            status_lookup: StatusLookup::None,
            retryable: Vec::new(),
            compensation: None,
            owner: "payments".into(),
            max_attempts: 3,
            budget_seconds: 60,
            path: None,
            response: None,
            inventory: Default::default(),
            owners: None,
            domain_review: None,
            circuit: None,
        }
    }

    fn now() -> DateTime<Utc> {
        "2026-03-01T12:00:00Z".parse().expect("instant")
    }

    fn field<'a>(entries: &'a [Entry], name: &str) -> &'a Entry {
        entries.iter().find(|e| e.field == name).expect(name)
    }

    /// The value and the limit `c`'s inventory shows for `name`.
    fn shown(c: &Contract, name: &str) -> (Option<String>, Option<&'static str>) {
        let e = inventory(c);
        let f = field(&e, name);
        (f.value.clone(), f.limit)
    }

    /// A write that failed with `mode` after `phase`, for the matrix.
    fn input(mode: FailureMode, phase: Phase, outcome: Outcome) -> RetryInput {
        RetryInput {
            mode: Some(mode),
            phase: Some(phase),
            outcome: Some(outcome),
            write: true,
            idempotent: false,
            key_expired: false,
            key_conflict: false,
            status_lookup: false,
            retryable: false,
            retry_after: None,
            deadline: None,
            budget_exhausted: None,
            observed: Observed::Nothing,
            items_unknown: 0,
            token_expired_once: false,
            now: now(),
        }
    }

    #[test]
    fn every_field_the_seed_lists_is_named_in_its_order() {
        let names: Vec<&str> = inventory(&bare()).iter().map(|e| e.field).collect();
        assert_eq!(
            names,
            [
                "identity",
                "tenant",
                "method",
                "endpoint",
                "schema",
                "business rules",
                "side effects",
                "downstream chains",
                "status lookup",
                "idempotency behavior",
                "rate limits",
                "retry guidance",
                "compensation",
                "owner"
            ]
        );
        let missing: Vec<&str> = inventory(&bare())
            .iter()
            .filter(|e| e.missing())
            .map(|e| e.field)
            .collect();
        assert_eq!(missing.len(), 11, "{missing:?}");
        assert!(
            inventory(&bare())
                .iter()
                .all(|e| e.missing() == e.limit.is_some())
        );
    }

    #[test]
    fn no_status_lookup_caps_autonomy_at_manual_and_holds_a_crossed_write() {
        let c = bare();
        assert_eq!(shown(&c, "status lookup"), (None, Some(NO_STATUS_LOOKUP)));
        // The limit as the rules hold it: every raise is refused by gate A1…
        let owner = Actor::local("ana", None);
        let gates = Gates {
            contract: Some(&c),
            ..Gates::default()
        };
        for level in [Level::Native, Level::Automation, Level::Agent] {
            let refused = decide_level(
                &owner,
                Level::Manual,
                &LevelRequest {
                    tool: "T01".into(),
                    level,
                },
                &gates,
                &Rationale::parse("raise it to see the gate").expect("rationale"),
                now(),
            )
            .expect_err("refused");
            assert_eq!(refused.rule, Rule::A1, "{level}");
        }
        // …and a write that may have crossed the boundary goes to its owner.
        let r = recommend(&input(
            FailureMode::TimeoutUnknown,
            Phase::RequestSent,
            Outcome::Timeout,
        ));
        assert_eq!(r.decision, Decision::HoldForOwner, "{}", r.reason);
        let by_hand = Contract {
            status_lookup: StatusLookup::ByHand,
            ..bare()
        };
        let e = inventory(&by_hand);
        assert_eq!(field(&e, "status lookup").limit, Some(LOOKUP_BY_HAND));
        assert!(!field(&e, "status lookup").missing());
    }

    #[test]
    fn no_idempotency_means_a_crossed_retry_waits_for_reconciliation() {
        assert_eq!(
            shown(&bare(), "idempotency behavior"),
            (None, Some(NO_IDEMPOTENCY))
        );
        let mut crossed = input(
            FailureMode::TimeoutUnknown,
            Phase::RequestSent,
            Outcome::Timeout,
        );
        crossed.status_lookup = true;
        assert_eq!(recommend(&crossed).decision, Decision::ReconcileFirst);
        crossed.observed = Observed::NotApplied;
        assert_eq!(recommend(&crossed).decision, Decision::RetryNow);
        let supported = Contract {
            idempotency: IdempotencyContract {
                supported: true,
                scope: Some("tenant".into()),
                retention_hours: Some(24),
            },
            ..bare()
        };
        assert_eq!(
            shown(&supported, "idempotency behavior"),
            (Some("supported, scope tenant, kept 24 h".into()), None)
        );
    }

    #[test]
    fn no_rate_limit_scope_sends_a_429_without_retry_after_to_the_owner() {
        assert_eq!(shown(&bare(), "rate limits"), (None, Some(NO_RATE_LIMITS)));
        let throttled = input(
            FailureMode::RateLimited,
            Phase::ResponseReceived,
            Outcome::HttpError,
        );
        assert_eq!(recommend(&throttled).decision, Decision::HoldForOwner);
        let mut waiting = throttled.clone();
        waiting.retry_after = Some(now() + chrono::Duration::seconds(30));
        assert!(matches!(
            recommend(&waiting).decision,
            Decision::RetryAfter(_)
        ));
        let limited = Contract {
            inventory: crate::core::contract::Inventory {
                rate_limits: vec![crate::core::contract::RateLimit {
                    scope: crate::core::contract::RateScope::Tenant,
                    limit: 100,
                    per_seconds: 60,
                }],
                ..Default::default()
            },
            ..bare()
        };
        assert_eq!(
            shown(&limited, "rate limits"),
            (Some("100 per 60 s per tenant".into()), None)
        );
    }

    #[test]
    fn no_retry_guidance_holds_a_transient_error_for_the_owner() {
        assert_eq!(
            shown(&bare(), "retry guidance"),
            (None, Some(NO_RETRY_GUIDANCE))
        );
        let refused = input(
            FailureMode::TransientError,
            Phase::Connected,
            Outcome::ConnectionReset,
        );
        assert_eq!(recommend(&refused).decision, Decision::HoldForOwner);
        let mut allowed = refused;
        allowed.retryable = true;
        assert_eq!(recommend(&allowed).decision, Decision::RetryNow);
    }

    #[test]
    fn no_compensation_is_named_with_the_refusal_it_brings() {
        let e = inventory(&bare());
        assert_eq!(field(&e, "compensation").limit, Some(NO_COMPENSATION));
        let with = Contract {
            compensation: Some("refund.reverse".into()),
            ..bare()
        };
        assert_eq!(field(&inventory(&with), "compensation").limit, None);
    }

    #[test]
    fn the_descriptive_fields_are_shown_when_given() {
        let c = Contract {
            inventory: crate::core::contract::Inventory {
                tenant: Some("acme".into()),
                schema: Some(Schema::Reference(
                    "https://schemas.example/refund.json".into(),
                )),
                business_rules: vec![
                    "at most the captured amount".into(),
                    "once per order".into(),
                ],
                side_effects: vec!["emails the customer".into()],
                downstream: vec!["ledger.post".into()],
                rate_limits: Vec::new(),
            },
            ..bare()
        };
        let e = inventory(&c);
        assert_eq!(field(&e, "tenant").value.as_deref(), Some("acme"));
        assert_eq!(
            field(&e, "business rules").value.as_deref(),
            Some("at most the captured amount; once per order")
        );
        assert_eq!(
            field(&e, "downstream chains").value.as_deref(),
            Some("ledger.post")
        );
        assert!(field(&e, "schema").limit.is_none());
        assert_eq!(lookup_kind(&c.status_lookup), "none");
    }
}
