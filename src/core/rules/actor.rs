//! The acting identity: who acts, for whom, with which grants, and whether a role
//! permits an action at all (G6, G7).

use serde::Serialize;

use super::catalog;
use crate::core::model::{ActionKind, Grant, Role};
use crate::core::refusal::{Refusal, Rule, refuse};

/// Whether `role` may take an action of `kind` at all (G6): the roles its
/// [`crate::core::rules::catalog::spec`] names. Viewers read; reviewers
/// reconcile, resolve, revalidate, block, comment, schedule, mark compensations
/// and resumes done, and *propose* retries, compensations, resumes and the
/// approval of a call (`approve`); approvers may do all that, apply those
/// directly (below high risk) and confirm or reject proposals; owners accept and
/// assign. The local user of a store without grants may do everything.
pub fn permits(role: Role, kind: ActionKind) -> bool {
    role == Role::Local || catalog::spec(kind).roles.contains(&role)
}

/// The order in which an identity's roles on one tenant are tried for an action:
/// the role that may apply a proposable action directly comes before the one that
/// only proposes it.
const ROLE_PREFERENCE: &[Role] = &[Role::Approver, Role::Reviewer, Role::Owner, Role::Viewer];

/// The acting identity and what it may do where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Actor {
    /// Who acts: the audit row's `by`. On PostgreSQL, the database login.
    pub identity: String,
    /// The review policy version in force, recorded on every row (G6).
    pub policy: Option<String>,
    /// The identity this actor acts for, when delegated
    /// ([`crate::core::access::act_for`]): the audit row's `on_behalf_of`, whose
    /// grants apply and who counts as the proposer or confirmer for four eyes.
    pub on_behalf_of: Option<String>,
    /// The grants that apply (G6, G7): the identity's own, or, when delegated,
    /// those of the identity acted for on the tenants the delegation covers;
    /// `None` is single-user mode: the store has no grants at all, and the local
    /// user may do everything on every tenant.
    pub grants: Option<Vec<Grant>>,
}

impl Actor {
    /// The local user of a store without grants.
    pub fn local(identity: &str, policy: Option<String>) -> Actor {
        Actor {
            identity: identity.to_owned(),
            policy,
            on_behalf_of: None,
            grants: None,
        }
    }

    /// `identity` as the store's grants define it: single-user mode when there are
    /// none at all, else only what this identity was granted. A `delegate` grant
    /// lets its holder act for others and permits nothing of its own, so it is
    /// not among them.
    pub fn from_grants(identity: &str, policy: Option<String>, all: &[Grant]) -> Actor {
        let grants = (!all.is_empty()).then(|| {
            all.iter()
                .filter(|g| g.identity == identity && g.role != Role::Delegate)
                .cloned()
                .collect()
        });
        Actor {
            identity: identity.to_owned(),
            policy,
            on_behalf_of: None,
            grants,
        }
    }

    /// The person whose decision this is: the identity acted for when delegated,
    /// else the acting identity itself. Proposals and approvals carry this name,
    /// and four eyes compares it.
    pub fn principal(&self) -> &str {
        self.on_behalf_of.as_deref().unwrap_or(&self.identity)
    }

    /// The actor in words: `maya`, or `relay for maya` when delegated.
    pub fn name(&self) -> String {
        match &self.on_behalf_of {
            Some(person) => format!("{} for {person}", self.identity),
            None => self.identity.clone(),
        }
    }

    /// Whether the store is in single-user mode for this actor.
    pub fn single_user(&self) -> bool {
        self.grants.is_none()
    }

    /// The tenants this actor may see (G7), sorted; `None` means every tenant.
    pub fn visible_tenants(&self) -> Option<Vec<String>> {
        self.grants.as_ref().map(|grants| {
            let mut tenants: Vec<String> = grants.iter().map(|g| g.tenant.clone()).collect();
            tenants.sort();
            tenants.dedup();
            tenants
        })
    }

    /// The tenants this actor may ingest into: those it holds the `ingest` role
    /// on, sorted; `None` means every tenant (single-user mode).
    pub fn ingest_tenants(&self) -> Option<Vec<String>> {
        self.tenants_with(Role::Ingest)
    }

    /// The tenants this actor may claim work in: those it holds the `worker`
    /// role on, sorted; `None` means every tenant (single-user mode).
    pub fn work_tenants(&self) -> Option<Vec<String>> {
        self.tenants_with(Role::Worker)
    }

    /// The tenants this actor holds `role` on, sorted; `None` in single-user mode.
    fn tenants_with(&self, role: Role) -> Option<Vec<String>> {
        self.grants.as_ref().map(|grants| {
            let mut tenants: Vec<String> = grants
                .iter()
                .filter(|g| g.role == role)
                .map(|g| g.tenant.clone())
                .collect();
            tenants.sort();
            tenants.dedup();
            tenants
        })
    }

    /// Who is acting with which rights, for a header: `maya — single-user mode (no
    /// grants in this store): may do everything`, or `bob — approver on pinehaven;
    /// viewer on harborline` (`relay for bob — …` when delegated).
    pub fn describe(&self) -> String {
        match &self.grants {
            None => format!(
                "{} — single-user mode (no grants in this store): may do everything",
                self.name()
            ),
            Some(grants) if grants.is_empty() => format!(
                "{} — no grants: sees no tenant (ask an owner for a grant)",
                self.name()
            ),
            Some(_) => {
                let per_tenant: Vec<String> = self
                    .visible_tenants()
                    .unwrap_or_default()
                    .iter()
                    .map(|t| {
                        let roles: Vec<&str> =
                            self.roles_on(t).iter().map(|r| r.as_str()).collect();
                        format!("{} on {t}", roles.join("+"))
                    })
                    .collect();
                format!("{} — {}", self.name(), per_tenant.join("; "))
            }
        }
    }

    /// Whether this actor may see operations of `tenant` (G7).
    pub fn sees(&self, tenant: &str) -> bool {
        self.grants
            .as_ref()
            .is_none_or(|grants| grants.iter().any(|g| g.tenant == tenant))
    }

    /// Whether this actor holds `role` on `tenant`; in single-user mode the
    /// local user holds every role.
    pub fn holds(&self, tenant: &str, role: Role) -> bool {
        self.grants
            .as_ref()
            .is_none_or(|grants| grants.iter().any(|g| g.tenant == tenant && g.role == role))
    }

    /// The roles held on `tenant`, most able first; `[local]` in single-user mode.
    pub fn roles_on(&self, tenant: &str) -> Vec<Role> {
        match &self.grants {
            None => vec![Role::Local],
            Some(grants) => ROLE_PREFERENCE
                .iter()
                .copied()
                .filter(|r| grants.iter().any(|g| g.tenant == tenant && g.role == *r))
                .collect(),
        }
    }

    /// The role under which this actor takes `kind` on `tenant`, or the refusal:
    /// G7 without any grant on the tenant, G6 when no granted role permits it.
    pub fn role_for(&self, tenant: &str, kind: ActionKind) -> Result<Role, Refusal> {
        let roles = self.roles_on(tenant);
        if roles.is_empty() {
            // A system role (ingest, worker) on the tenant takes no decision.
            let mut held: Vec<&str> = self
                .grants
                .iter()
                .flatten()
                .filter(|g| g.tenant == tenant)
                .map(|g| g.role.as_str())
                .collect();
            held.sort_unstable();
            held.dedup();
            if !held.is_empty() {
                return refuse(
                    Rule::G6,
                    format!(
                        "{} holds {} on {tenant}, which may not {kind}; a decision takes a \
                         reviewer's, approver's or owner's role",
                        self.name(),
                        held.join(" and ")
                    ),
                );
            }
            return refuse(
                Rule::G7,
                format!(
                    "{} holds no grant for tenant {tenant}; ask an owner of {tenant} for one",
                    self.name()
                ),
            );
        }
        if let Some(role) = roles.iter().copied().find(|r| permits(*r, kind)) {
            return Ok(role);
        }
        let names: Vec<&str> = roles.iter().map(|r| r.as_str()).collect();
        refuse(
            Rule::G6,
            format!(
                "{} holds {} on {tenant}, which may not {kind}; ask someone who holds the right role",
                self.name(),
                names.join(" and ")
            ),
        )
    }
}

/// The acting identity for `what`, which is done only in one's own name (grant
/// changes, ingest): refused (G6) when the actor acts for someone else.
pub fn own_name<'a>(actor: &'a Actor, what: &str) -> Result<&'a str, Refusal> {
    match &actor.on_behalf_of {
        None => Ok(&actor.identity),
        Some(person) => Err(Refusal {
            rule: Rule::G6,
            reason: format!(
                "{what} is done in one's own name only: {} may act for {person} in reviewer actions, not here; run it without --as",
                actor.identity
            ),
        }),
    }
}
