//! The action catalog: one spec per reviewer action — the parameters it takes
//! (with their command-line flags and console input), the roles that may take
//! it and its place in bulk triage — and the one builder that turns a kind and
//! its parameters into an [`Action`]. Who may act ([`crate::core::rules::actor::permits`]),
//! the options the evidence pane lists ([`super::options`]), bulk triage's list,
//! the command line's flags and the console's forms are all read from here, so
//! an action is described once. [`spec`] and [`action`] match every kind: a new
//! [`ActionKind`] without a spec does not compile.

use chrono::{DateTime, Utc};

use super::{Action, ReconcileInput};
use crate::core::cause::RootCause;
use crate::core::model::{ActionKind, Role, State};

/// The recovery actions (DESIGN §2, G13): those that repeat, undo, resume or
/// close out a held call's effect — a retry, a compensation and its marking
/// done, a resume and its marking done, and the owner's acceptance. On a tool
/// whose contract names a `domain_review`, each also needs that domain's grant;
/// a `confirm` of one of them is judged as the action it confirms.
pub const RECOVERY: &[ActionKind] = &[
    ActionKind::AuthorizeRetry,
    ActionKind::ApproveCompensation,
    ActionKind::MarkCompensated,
    ActionKind::ApproveResume,
    ActionKind::MarkResumed,
    ActionKind::Accept,
];

/// One parameter an action takes, read from a command-line flag (or several)
/// and a console input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Param {
    /// The state `resolve` moves a hold to. The evidence pane lists one option
    /// per state ([`super::RESOLVE_TARGETS`]), so the review form asks for none.
    To,
    /// The new owner.
    Owner,
    /// When to observe next.
    At,
    /// The manual-repair reference (ticket, runbook).
    RepairRef,
    /// What a lookup showed: a form of its own in the console, a dozen flags
    /// (or an observation file) on the command line.
    Lookup,
    /// The root-cause layer `classify` sets.
    Layer,
}

/// A command-line flag and the name of the value it takes, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Flag {
    /// `--to`.
    pub name: &'static str,
    /// `STATE`, as the help text names it; `None` for a switch.
    pub value: Option<&'static str>,
}

impl Param {
    /// The command-line flags that give this parameter, the one it needs first.
    pub const fn flags(self) -> &'static [Flag] {
        match self {
            Param::To => &[Flag {
                name: "--to",
                value: Some("STATE"),
            }],
            Param::Owner => &[Flag {
                name: "--owner",
                value: Some("OWNER"),
            }],
            Param::At => &[Flag {
                name: "--at",
                value: Some("TIME"),
            }],
            Param::RepairRef => &[Flag {
                name: "--repair-ref",
                value: Some("REF"),
            }],
            Param::Layer => &[Flag {
                name: "--layer",
                value: Some("LAYER"),
            }],
            Param::Lookup => &[
                Flag {
                    name: "--lookup",
                    value: None,
                },
                Flag {
                    name: "--observation",
                    value: Some("FILE"),
                },
                Flag {
                    name: "--found",
                    value: None,
                },
                Flag {
                    name: "--not-found",
                    value: None,
                },
                Flag {
                    name: "--source",
                    value: Some("SOURCE"),
                },
                Flag {
                    name: "--match",
                    value: Some("FIELDS"),
                },
                Flag {
                    name: "--mismatch",
                    value: Some("FIELDS"),
                },
                Flag {
                    name: "--effect-count",
                    value: Some("N"),
                },
                Flag {
                    name: "--unknown",
                    value: Some("FIELDS"),
                },
                Flag {
                    name: "--provider-request-id",
                    value: Some("ID"),
                },
                Flag {
                    name: "--reference",
                    value: Some("REF"),
                },
                Flag {
                    name: "--raw-hash",
                    value: Some("HASH"),
                },
            ],
        }
    }

    /// What a command that lacks this parameter is told it needs: `--to STATE`.
    pub fn usage(self) -> String {
        let first = self.flags()[0];
        match first.value {
            Some(value) => format!("{} {value}", first.name),
            None => first.name.to_owned(),
        }
    }

    /// The label of the one console input that reads this parameter as text
    /// (bulk triage's input, and the review form's where it asks for it);
    /// `None` for a lookup, which takes a form of its own.
    pub const fn input(self) -> Option<&'static str> {
        match self {
            Param::To => Some("resolve to (SUCCEEDED, FAILED, PARTIAL)"),
            Param::Owner => Some("new owner"),
            Param::At => Some("next observation (+30m, +2h, +1d or a later RFC 3339 time)"),
            Param::RepairRef => Some("manual repair reference"),
            // Short enough for the form's label column; a value that is not a
            // layer is answered with the list of them.
            Param::Layer => Some("root-cause layer (e.g. provider)"),
            Param::Lookup => None,
        }
    }
}

/// What the catalog says of one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionSpec {
    /// The parameters it takes, as [`action`] reads them.
    pub params: &'static [Param],
    /// The granted roles that may take it (G6); the local user of a store
    /// without grants may take every action.
    pub roles: &'static [Role],
    /// Its place in bulk triage's list, when bulk triage offers it.
    pub bulk: Option<usize>,
}

/// Reviewers reconcile, resolve, revalidate, block, comment, classify, schedule, mark
/// compensations and resumes done, and *propose* retries, compensations,
/// resumes and the approval of a call; approvers may do all that too.
const REVIEWERS: &[Role] = &[Role::Reviewer, Role::Approver];
/// Only approvers confirm or reject a proposal.
const APPROVERS: &[Role] = &[Role::Approver];
/// Owners accept a manual repair and assign.
const OWNERS: &[Role] = &[Role::Owner];

const fn plain(roles: &'static [Role], bulk: Option<usize>) -> ActionSpec {
    ActionSpec {
        params: &[],
        roles,
        bulk,
    }
}

/// The spec of `kind`.
pub const fn spec(kind: ActionKind) -> ActionSpec {
    use ActionKind as K;
    match kind {
        // Bulk triage does not offer `reconcile`, which records one lookup of
        // one operation.
        K::Reconcile => ActionSpec {
            params: &[Param::Lookup],
            roles: REVIEWERS,
            bulk: None,
        },
        K::Resolve => ActionSpec {
            params: &[Param::To],
            roles: REVIEWERS,
            bulk: Some(8),
        },
        K::AuthorizeRetry => plain(REVIEWERS, Some(3)),
        K::ApproveCompensation => plain(REVIEWERS, Some(4)),
        K::ApproveResume => plain(REVIEWERS, Some(5)),
        K::MarkCompensated => plain(REVIEWERS, Some(6)),
        K::MarkResumed => plain(REVIEWERS, Some(7)),
        K::Revalidate => plain(REVIEWERS, Some(2)),
        // Nor `approve`, which approves one exact call a person has read the
        // arguments of (G11).
        K::Approve => plain(REVIEWERS, None),
        K::Accept => ActionSpec {
            params: &[Param::RepairRef],
            roles: OWNERS,
            bulk: Some(9),
        },
        K::Block => plain(REVIEWERS, Some(0)),
        K::Assign => ActionSpec {
            params: &[Param::Owner],
            roles: OWNERS,
            bulk: Some(10),
        },
        K::Schedule => ActionSpec {
            params: &[Param::At],
            roles: REVIEWERS,
            bulk: Some(11),
        },
        K::Comment => plain(REVIEWERS, Some(1)),
        // A failed operation can be classified too: it is the one action
        // besides a comment that a terminal state still takes.
        K::Classify => ActionSpec {
            params: &[Param::Layer],
            roles: REVIEWERS,
            bulk: Some(14),
        },
        K::Confirm => plain(APPROVERS, Some(12)),
        K::Reject => plain(APPROVERS, Some(13)),
    }
}

/// How many actions bulk triage offers.
const fn bulk_count() -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < ActionKind::ALL.len() {
        if spec(ActionKind::ALL[i]).bulk.is_some() {
            n += 1;
        }
        i += 1;
    }
    n
}

/// The actions bulk triage offers, each at its place: a place beyond the list
/// or taken twice fails the build.
const fn bulk_order<const N: usize>() -> [ActionKind; N] {
    let mut out = [ActionKind::Comment; N];
    let mut taken = [false; N];
    let mut i = 0;
    while i < ActionKind::ALL.len() {
        let kind = ActionKind::ALL[i];
        if let Some(at) = spec(kind).bulk {
            assert!(at < N, "a bulk place beyond the list of bulk actions");
            assert!(!taken[at], "two actions share one bulk place");
            out[at] = kind;
            taken[at] = true;
        }
        i += 1;
    }
    out
}

/// The actions bulk triage offers, in its order.
pub const BULK: [ActionKind; bulk_count()] = bulk_order();

/// The action whose parameters include the flag `name` (`--owner`), if any.
pub fn flag_owner(name: &str) -> Option<ActionKind> {
    ActionKind::ALL.iter().copied().find(|&kind| {
        spec(kind)
            .params
            .iter()
            .any(|p| p.flags().iter().any(|f| f.name == name))
    })
}

/// Where the values of an action's parameters come from: the command line's
/// flags, a console input or form, an audit row replayed, or the defaults the
/// evidence pane previews with. Each reads and checks a value its own way and
/// says what is missing in its own words.
pub trait Params {
    type Error;
    /// [`Param::To`].
    fn to(&mut self) -> Result<State, Self::Error>;
    /// [`Param::Owner`].
    fn owner(&mut self) -> Result<String, Self::Error>;
    /// [`Param::At`].
    fn at(&mut self) -> Result<DateTime<Utc>, Self::Error>;
    /// [`Param::RepairRef`].
    fn repair_ref(&mut self) -> Result<String, Self::Error>;
    /// [`Param::Lookup`].
    fn lookup(&mut self) -> Result<ReconcileInput, Self::Error>;
    /// [`Param::Layer`].
    fn layer(&mut self) -> Result<RootCause, Self::Error>;
}

/// The action `kind` with its parameters read from `params`: exactly those of
/// its [`spec`].
pub fn action<P: Params>(kind: ActionKind, params: &mut P) -> Result<Action, P::Error> {
    use ActionKind as K;
    Ok(match kind {
        K::Reconcile => Action::Reconcile(params.lookup()?),
        K::Resolve => Action::Resolve { to: params.to()? },
        K::AuthorizeRetry => Action::AuthorizeRetry,
        K::ApproveCompensation => Action::ApproveCompensation,
        K::ApproveResume => Action::ApproveResume,
        K::MarkCompensated => Action::MarkCompensated,
        K::MarkResumed => Action::MarkResumed,
        K::Revalidate => Action::Revalidate,
        K::Approve => Action::Approve,
        K::Accept => Action::Accept {
            repair_ref: params.repair_ref()?,
        },
        K::Block => Action::Block,
        K::Assign => Action::Assign {
            owner: params.owner()?,
        },
        K::Schedule => Action::Schedule { at: params.at()? },
        K::Comment => Action::Comment,
        K::Classify => Action::Classify {
            layer: params.layer()?,
        },
        K::Confirm => Action::Confirm,
        K::Reject => Action::Reject,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::model::ObservationSource;

    /// Gives every parameter and notes which were read.
    #[derive(Default)]
    struct Recorder(Vec<Param>);

    impl Params for Recorder {
        type Error = std::convert::Infallible;
        fn to(&mut self) -> Result<State, Self::Error> {
            self.0.push(Param::To);
            Ok(State::Failed)
        }
        fn owner(&mut self) -> Result<String, Self::Error> {
            self.0.push(Param::Owner);
            Ok("oncall".into())
        }
        fn at(&mut self) -> Result<DateTime<Utc>, Self::Error> {
            self.0.push(Param::At);
            Ok(DateTime::<Utc>::UNIX_EPOCH)
        }
        fn repair_ref(&mut self) -> Result<String, Self::Error> {
            self.0.push(Param::RepairRef);
            Ok("REF".into())
        }
        fn lookup(&mut self) -> Result<ReconcileInput, Self::Error> {
            self.0.push(Param::Lookup);
            Ok(ReconcileInput::not_found(ObservationSource::ProviderStatus))
        }
        fn layer(&mut self) -> Result<RootCause, Self::Error> {
            self.0.push(Param::Layer);
            Ok(RootCause::Provider)
        }
    }

    #[test]
    fn every_action_reads_exactly_the_parameters_of_its_spec() {
        for &kind in ActionKind::ALL {
            let mut read = Recorder::default();
            let Ok(action) = action(kind, &mut read);
            assert_eq!(action.kind(), kind);
            assert_eq!(read.0, spec(kind).params, "{kind}");
        }
    }

    #[test]
    fn bulk_offers_every_action_but_reconcile_and_approve_in_its_order() {
        use ActionKind as K;
        assert_eq!(
            BULK,
            [
                K::Block,
                K::Comment,
                K::Revalidate,
                K::AuthorizeRetry,
                K::ApproveCompensation,
                K::ApproveResume,
                K::MarkCompensated,
                K::MarkResumed,
                K::Resolve,
                K::Accept,
                K::Assign,
                K::Schedule,
                K::Confirm,
                K::Reject,
                K::Classify,
            ]
        );
        // An action bulk triage offers reads at most one input, typed once for
        // every operation.
        for kind in BULK {
            let params = spec(kind).params;
            assert!(
                params.is_empty() || matches!(params, [p] if p.input().is_some()),
                "{kind}"
            );
        }
    }

    #[test]
    fn only_decision_roles_take_actions_and_every_flag_has_one_action() {
        for &kind in ActionKind::ALL {
            let roles = spec(kind).roles;
            assert!(!roles.is_empty(), "{kind}");
            assert!(
                roles
                    .iter()
                    .all(|r| matches!(r, Role::Reviewer | Role::Approver | Role::Owner)),
                "{kind}"
            );
        }
        let mut flags: Vec<&str> = ActionKind::ALL
            .iter()
            .flat_map(|&k| spec(k).params)
            .flat_map(|p| p.flags())
            .map(|f| f.name)
            .collect();
        let all = flags.len();
        flags.sort_unstable();
        flags.dedup();
        assert_eq!(flags.len(), all, "a flag names one parameter of one action");
        assert_eq!(flag_owner("--owner"), Some(ActionKind::Assign));
        assert_eq!(flag_owner("--found"), Some(ActionKind::Reconcile));
        assert_eq!(flag_owner("--rationale"), None);
    }
}
