//! Grants: who holds which role on which tenant (G6, G7), the decision on a grant
//! or revoke, and who acts when a store knows its users by their database login.
//! A grant change is audited like a reviewer action: its row sits in the same hash
//! chain, under the reserved ledger id [`LEDGER`], so that `audit verify` covers who
//! was given which rights as well as what they did.

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::audit::{self, AuditDraft};
use super::ids::{OperationId, Sha256};
use super::model::{ActionKind, Grant, Role};
use super::refusal::{Refusal, Rule};
use super::rules::Rationale;
use super::rules::actor::{Actor, permits};
use super::{autonomy, work};

/// The audit rows of grant changes carry this in their `operation` column. The
/// `holdfast:` prefix is reserved: ingest refuses operation ids that start with it,
/// so no operation ever shares these rows.
pub const LEDGER: &str = "holdfast:grants";

/// The reserved prefix of ids that only holdfast itself writes.
pub const RESERVED_PREFIX: &str = "holdfast:";

/// The id the grant ledger's audit rows carry.
pub fn ledger_id() -> OperationId {
    OperationId::parse(LEDGER).unwrap_or_else(|_| unreachable!("the ledger id is a valid id"))
}

/// The roles a grant may give; `system` and `local` are never granted.
pub const GRANTABLE: &[Role] = &[
    Role::Viewer,
    Role::Reviewer,
    Role::Approver,
    Role::Owner,
    Role::Delegate,
    Role::Ingest,
    Role::Worker,
    Role::DomainLegal,
    Role::DomainFinancial,
    Role::DomainEmployment,
    Role::DomainPrivacy,
    Role::DomainSecurity,
];

/// The reviewer actions that may open a child operation (a compensation, a
/// resume): its `create` row carries the role of the action that opened it.
const OPENS_CHILDREN: &[ActionKind] = &[
    ActionKind::ApproveCompensation,
    ActionKind::ApproveResume,
    ActionKind::Confirm,
];

/// Every (role, action) an audit row may record once a store has grants: the
/// reviewer actions each granted role permits ([`permits`]), the `create` rows
/// of the children they open, the rows of wire records under `ingest` and
/// `worker`, the work protocol's steps under `worker`, and the ledgers' rows
/// (grants, autonomy levels, drills) under `owner`. On PostgreSQL the
/// `role_actions` table holds exactly these pairs and the `audit_within_grants`
/// trigger refuses any other row a login of the application group appends.
pub fn role_actions() -> Vec<(Role, &'static str)> {
    let mut pairs = Vec::new();
    for &role in GRANTABLE {
        for &kind in ActionKind::ALL {
            if permits(role, kind) {
                pairs.push((role, kind.as_str()));
            }
        }
        if OPENS_CHILDREN.iter().any(|&kind| permits(role, kind)) {
            pairs.push((role, audit::CREATE));
        }
    }
    for role in [Role::Ingest, Role::Worker] {
        pairs.extend(audit::WIRE_ACTIONS.iter().map(|&action| (role, action)));
    }
    for action in [work::CLAIM, work::HEARTBEAT, work::COMPLETE, work::RELEASE] {
        pairs.push((Role::Worker, action));
    }
    for action in [
        GrantOp::Grant.as_str(),
        GrantOp::Revoke.as_str(),
        autonomy::SET_ACTION,
        autonomy::DRILL_ACTION,
        autonomy::LOOKUP_CHECK_ACTION,
        super::chain::ACKNOWLEDGE_ACTION,
        super::rerun::TOOL_CHANGED_ACTION,
    ] {
        pairs.push((Role::Owner, action));
    }
    pairs
}

/// Checks an identity or tenant name: 1 to 128 characters, no whitespace, no
/// control or invisible characters.
pub fn parse_name(text: &str) -> Result<String, String> {
    let count = text.chars().count();
    if count == 0 {
        return Err("must not be empty".into());
    }
    if count > 128 {
        return Err(format!(
            "is {count} characters long; at most 128 are allowed"
        ));
    }
    if text.chars().any(char::is_whitespace) || super::sanitize::sanitize(text) != text {
        return Err("has spaces, control or invisible characters; names have none".into());
    }
    Ok(text.to_owned())
}

/// Grant or revoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantOp {
    Grant,
    Revoke,
}

impl GrantOp {
    /// The stable action name in the audit log.
    pub fn as_str(self) -> &'static str {
        match self {
            GrantOp::Grant => "grant",
            GrantOp::Revoke => "revoke",
        }
    }
}

/// What someone asks: give or take `role` on `tenant` to or from `identity`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrantRequest {
    pub op: GrantOp,
    pub identity: String,
    pub role: Role,
    pub tenant: String,
}

/// An allowed grant change, ready for the store: the row to insert or delete, the
/// grant set it was decided on and its audit row, in one transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GrantChange {
    pub op: GrantOp,
    pub grant: Grant,
    /// [`basis`] of the grants the decision was made on; the store refuses the
    /// change when they moved in between.
    pub basis: Sha256,
    /// Consequences in words (`bob may now review on pinehaven`, single-user mode
    /// ending, …).
    pub consequences: Vec<String>,
    pub audit: AuditDraft,
}

/// A digest of the grant set (identity, role, tenant), independent of order.
pub fn basis(all: &[Grant]) -> Sha256 {
    let mut lines: Vec<String> = all
        .iter()
        .map(|g| format!("{}\t{}\t{}", g.identity, g.role, g.tenant))
        .collect();
    lines.sort();
    Sha256::of(lines.join("\n").as_bytes())
}

fn holds(all: &[Grant], identity: &str, role: Role, tenant: &str) -> bool {
    all.iter()
        .any(|g| g.identity == identity && g.role == role && g.tenant == tenant)
}

/// Decides a grant change by `by` at `now`. `Ok(None)` means there is nothing to
/// change (the grant is already held, or already absent).
///
/// - In single-user mode (no grants at all) the local user may grant, but the first
///   grant must make that user an owner, or the store would lock them out.
/// - Otherwise only an owner of the tenant grants and revokes there; a tenant that
///   has no owner yet may be opened by an owner of any tenant.
/// - The last owner of a tenant cannot be revoked while others hold grants there,
///   and the last grant of the store cannot be revoked: that would return the store
///   to single-user mode, where anyone who opens it may do everything.
pub fn decide_grant(
    all: &[Grant],
    by: &str,
    policy: Option<String>,
    request: &GrantRequest,
    rationale: Option<&Rationale>,
    now: DateTime<Utc>,
) -> Result<Option<GrantChange>, Refusal> {
    let refuse = |rule: Rule, reason: String| Err(Refusal { rule, reason });
    let GrantRequest {
        op,
        identity,
        role,
        tenant,
    } = request;
    if !GRANTABLE.contains(role) {
        return refuse(
            Rule::G6,
            format!(
                "role {role} cannot be granted; grant viewer, reviewer, approver, owner, delegate, ingest, worker or a domain:… review grant"
            ),
        );
    }
    let single_user = all.is_empty();
    let by_role = if single_user {
        if *op == GrantOp::Grant && !(identity == by && *role == Role::Owner) {
            return refuse(
                Rule::G6,
                format!(
                    "the store is in single-user mode; the first grant ends it, so it must make you an owner or you would lock yourself out: `holdfast grant {by} --role owner --tenant {tenant}` first"
                ),
            );
        }
        Role::Local
    } else if holds(all, by, Role::Owner, tenant) {
        Role::Owner
    } else {
        let tenant_owned = all
            .iter()
            .any(|g| g.role == Role::Owner && &g.tenant == tenant);
        let owner_somewhere = all
            .iter()
            .any(|g| g.identity == by && g.role == Role::Owner);
        if tenant_owned || !owner_somewhere || *op == GrantOp::Revoke {
            return refuse(
                Rule::G6,
                format!(
                    "{by} is not an owner of tenant {tenant}; only its owners grant and revoke there"
                ),
            );
        }
        Role::Owner
    };
    let held = holds(all, identity, *role, tenant);
    let mut consequences = Vec::new();
    match op {
        GrantOp::Grant if held => return Ok(None),
        GrantOp::Revoke if !held => return Ok(None),
        GrantOp::Grant => {
            consequences.push(format!("{identity} holds {role} on tenant {tenant}"));
            if single_user {
                consequences.push(
                    "single-user mode ends: from now on every identity acts only on the tenants and roles granted to it".into(),
                );
            }
        }
        GrantOp::Revoke => {
            if all.len() == 1 {
                return refuse(
                    Rule::G6,
                    "this is the last grant of the store; revoking it would return the store to single-user mode, where anyone who opens it may do everything".into(),
                );
            }
            let owners = all
                .iter()
                .filter(|g| g.role == Role::Owner && &g.tenant == tenant)
                .count();
            let others = all
                .iter()
                .filter(|g| &g.tenant == tenant && !(g.identity == *identity && g.role == *role))
                .count();
            if *role == Role::Owner && owners == 1 && others > 0 {
                return refuse(
                    Rule::G6,
                    format!(
                        "{identity} is the last owner of tenant {tenant} while others hold grants there; grant another owner first"
                    ),
                );
            }
            consequences.push(format!(
                "{identity} no longer holds {role} on tenant {tenant}"
            ));
        }
    }
    let grant = Grant {
        identity: identity.clone(),
        role: *role,
        tenant: tenant.clone(),
        granted_by: by.to_owned(),
        granted_at: now,
    };
    let audit = AuditDraft {
        operation: ledger_id(),
        action: op.as_str().to_owned(),
        from: None,
        to: None,
        by: by.to_owned(),
        role: by_role,
        policy,
        on_behalf_of: None,
        rationale: rationale.map(|r| r.as_str().to_owned()),
        evidence: vec![
            format!("identity:{identity}"),
            format!("role:{role}"),
            format!("tenant:{tenant}"),
        ],
        at: now,
    };
    Ok(Some(GrantChange {
        op: *op,
        grant,
        basis: basis(all),
        consequences,
        audit,
    }))
}

/// The actor on a store that knows its users by their database login
/// (PostgreSQL's `session_user`): the login itself, unless `asked` names another
/// identity. Acting for another identity takes the `delegate` role: on each tenant
/// where the login holds it, the login acts with that identity's grants there, and
/// every other tenant stays hidden (G7). The audit row then records the login in
/// `by` and the identity acted for in `on_behalf_of`. A login without the role —
/// and any login in single-user mode, where nobody holds it — is refused (G6).
pub fn act_for(
    all: &[Grant],
    login: &str,
    asked: Option<&str>,
    policy: Option<String>,
) -> Result<Actor, Refusal> {
    let Some(person) = asked.filter(|asked| *asked != login) else {
        return Ok(Actor::from_grants(login, policy, all));
    };
    let delegated: Vec<&str> = all
        .iter()
        .filter(|g| g.identity == login && g.role == Role::Delegate)
        .map(|g| g.tenant.as_str())
        .collect();
    if delegated.is_empty() {
        return Err(Refusal {
            rule: Rule::G6,
            reason: format!(
                "the database login is {login}, which may not act for {person}: acting for others takes the delegate role on a tenant, and {login} holds it nowhere; connect with {person}'s own login, or act as {login} (no --as, HOLDFAST_AS or config identity)"
            ),
        });
    }
    let mut actor = Actor::from_grants(person, policy, all);
    if let Some(grants) = &mut actor.grants {
        grants.retain(|g| delegated.contains(&g.tenant.as_str()));
    }
    actor.on_behalf_of = Some(actor.identity.clone());
    actor.identity = login.to_owned();
    Ok(actor)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rules::actor::own_name;

    fn at() -> DateTime<Utc> {
        super::super::clock::parse_instant("2026-09-05T10:00:00Z").expect("instant")
    }

    fn g(identity: &str, role: Role, tenant: &str) -> Grant {
        Grant {
            identity: identity.into(),
            role,
            tenant: tenant.into(),
            granted_by: "maya".into(),
            granted_at: at(),
        }
    }

    fn ask(
        all: &[Grant],
        by: &str,
        op: GrantOp,
        who: &str,
        role: Role,
        tenant: &str,
    ) -> Result<bool, Rule> {
        let request = GrantRequest {
            op,
            identity: who.into(),
            role,
            tenant: tenant.into(),
        };
        decide_grant(all, by, None, &request, None, at())
            .map(|c| c.is_some())
            .map_err(|r| r.rule)
    }

    #[test]
    fn the_first_grant_makes_the_local_user_an_owner() {
        assert_eq!(
            ask(&[], "maya", GrantOp::Grant, "bo", Role::Reviewer, "p"),
            Err(Rule::G6)
        );
        assert_eq!(
            ask(&[], "maya", GrantOp::Grant, "maya", Role::Viewer, "p"),
            Err(Rule::G6)
        );
        assert_eq!(
            ask(&[], "maya", GrantOp::Grant, "maya", Role::Owner, "p"),
            Ok(true)
        );
        assert_eq!(
            ask(&[], "maya", GrantOp::Grant, "maya", Role::Local, "p"),
            Err(Rule::G6)
        );
    }

    #[test]
    fn only_owners_grant_and_nobody_locks_the_store() {
        let all = [g("maya", Role::Owner, "p"), g("bo", Role::Approver, "p")];
        assert_eq!(
            ask(&all, "bo", GrantOp::Grant, "bo", Role::Owner, "p"),
            Err(Rule::G6)
        );
        assert_eq!(
            ask(&all, "maya", GrantOp::Grant, "bo", Role::Approver, "p"),
            Ok(false)
        );
        assert_eq!(
            ask(&all, "maya", GrantOp::Grant, "kai", Role::Owner, "h"),
            Ok(true),
            "an unowned tenant"
        );
        assert_eq!(
            ask(&all, "bo", GrantOp::Grant, "bo", Role::Owner, "h"),
            Err(Rule::G6)
        );
        assert_eq!(
            ask(&all, "maya", GrantOp::Revoke, "maya", Role::Owner, "p"),
            Err(Rule::G6)
        );
        assert_eq!(
            ask(&all, "maya", GrantOp::Revoke, "bo", Role::Approver, "p"),
            Ok(true)
        );
        assert_eq!(
            ask(&all, "maya", GrantOp::Revoke, "bo", Role::Viewer, "p"),
            Ok(false)
        );
        let last = [g("maya", Role::Owner, "p")];
        assert_eq!(
            ask(&last, "maya", GrantOp::Revoke, "maya", Role::Owner, "p"),
            Err(Rule::G6)
        );
        let owned = [g("maya", Role::Owner, "p"), g("kai", Role::Owner, "h")];
        assert_eq!(
            ask(&owned, "maya", GrantOp::Grant, "maya", Role::Viewer, "h"),
            Err(Rule::G6)
        );
    }

    /// The `(role, action)` pairs a migration inserts into `role_actions`.
    fn migration_pairs(sql: &str) -> Vec<(String, String)> {
        let values = sql
            .split("INSERT INTO role_actions (role, action) VALUES")
            .nth(1)
            .and_then(|rest| rest.split(';').next())
            .expect("the migration fills role_actions");
        values
            .split("),")
            .map(|pair| {
                let fields: Vec<String> = pair
                    .split(',')
                    .map(|f| {
                        f.trim()
                            .trim_matches(['(', ')'])
                            .trim_matches('\'')
                            .to_owned()
                    })
                    .collect();
                assert_eq!(fields.len(), 2, "{pair}");
                (fields[0].clone(), fields[1].clone())
            })
            .collect()
    }

    #[test]
    fn the_databases_role_actions_are_the_permission_table() {
        let sql = include_str!("../../migrations/postgres/20261201000041_audit_within_grants.sql");
        let mut stored = migration_pairs(sql);
        stored.extend(migration_pairs(include_str!(
            "../../migrations/postgres/20261202000013_lookup_check_role.sql"
        )));
        stored.extend(migration_pairs(include_str!(
            "../../migrations/postgres/20261203000028_chain_checks.sql"
        )));
        stored.extend(migration_pairs(include_str!(
            "../../migrations/postgres/20261203000040_approve_action.sql"
        )));
        stored.extend(migration_pairs(include_str!(
            "../../migrations/postgres/20261204000070_classify_action.sql"
        )));
        stored.extend(migration_pairs(include_str!(
            "../../migrations/postgres/20261205000030_rerun.sql"
        )));
        stored.sort();
        let mut rust: Vec<(String, String)> = role_actions()
            .into_iter()
            .map(|(role, action)| (role.as_str().to_owned(), action.to_owned()))
            .collect();
        rust.sort();
        assert_eq!(
            stored, rust,
            "role_actions in the migration = access::role_actions()"
        );
        assert!(rust.contains(&("owner".into(), "accept".into())));
        assert!(
            !rust
                .iter()
                .any(|(role, _)| role == "viewer" || role == "local")
        );
    }

    #[test]
    fn the_basis_ignores_order_and_names_are_plain() {
        let a = [g("maya", Role::Owner, "p"), g("bo", Role::Approver, "p")];
        let b = [a[1].clone(), a[0].clone()];
        assert_eq!(basis(&a), basis(&b));
        assert_ne!(basis(&a), basis(&a[..1]));
        assert!(parse_name("rev:maya").is_ok());
        assert!(parse_name("").is_err());
        assert!(parse_name("two words").is_err());
        assert!(parse_name("bidi\u{202e}").is_err());
        assert_eq!(ledger_id().as_str(), LEDGER);
    }

    #[test]
    fn a_login_acts_for_others_only_where_it_holds_delegate() {
        let all = [
            g("maya", Role::Owner, "p"),
            g("bo", Role::Approver, "p"),
            g("bo", Role::Reviewer, "h"),
            g("relay", Role::Delegate, "p"),
        ];
        let own = act_for(&all, "bo", None, None).unwrap();
        assert_eq!((own.identity.as_str(), own.principal()), ("bo", "bo"));
        assert_eq!(own.on_behalf_of, None);
        assert_eq!(
            act_for(&all, "bo", Some("bo"), None).unwrap(),
            own,
            "asking for oneself is no delegation"
        );
        let refused = act_for(&all, "bo", Some("maya"), None).unwrap_err();
        assert_eq!(refused.rule, Rule::G6);
        assert!(
            refused.reason.contains("may not act for maya"),
            "{refused:?}"
        );
        assert_eq!(
            act_for(&[], "bo", Some("maya"), None).map_err(|r| r.rule),
            Err(Rule::G6),
            "single-user mode delegates to nobody"
        );

        let relay = act_for(&all, "relay", Some("bo"), Some("p1".into())).unwrap();
        assert_eq!(relay.identity, "relay");
        assert_eq!(relay.on_behalf_of.as_deref(), Some("bo"));
        assert_eq!(
            (relay.principal(), relay.name().as_str()),
            ("bo", "relay for bo")
        );
        assert_eq!(relay.visible_tenants(), Some(vec!["p".to_owned()]));
        assert_eq!(relay.roles_on("p"), vec![Role::Approver]);
        assert!(!relay.sees("h"), "bo's other tenant is not delegated");
        let alone = act_for(&all, "relay", None, None).unwrap();
        assert_eq!(
            alone.visible_tenants(),
            Some(vec![]),
            "delegate permits nothing of its own"
        );

        assert_eq!(own_name(&own, "ingest"), Ok("bo"));
        assert_eq!(
            own_name(&relay, "a grant change").map_err(|r| r.rule),
            Err(Rule::G6)
        );
    }
}
