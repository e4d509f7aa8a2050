//! Which concurrent changes a commit may overtake (G8): a decision made on an
//! older version is stale only when what changed meanwhile is something it relied
//! on. A comment relies on nothing and changes nothing a decision reads; a
//! schedule changes only the next observation time; a classification changes
//! only the root cause, which no other decision reads.

use crate::core::model::ActionKind;

/// Whether an action of `kind`, decided on an older version of its operation,
/// may still commit after the changes `since` (their audit `action` names, one
/// per version it missed) were committed by others.
pub fn may_overtake(kind: ActionKind, since: &[String]) -> bool {
    since.iter().all(|action| match action.as_str() {
        "comment" => true,
        "schedule" => kind != ActionKind::Schedule,
        "classify" => kind != ActionKind::Classify,
        _ => kind == ActionKind::Comment,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn since(actions: &[&str]) -> Vec<String> {
        actions.iter().map(|a| (*a).to_owned()).collect()
    }

    #[test]
    fn comments_never_conflict_and_decisions_conflict_with_decisions() {
        assert!(may_overtake(
            ActionKind::Comment,
            &since(&["resolve", "comment"])
        ));
        assert!(may_overtake(
            ActionKind::Resolve,
            &since(&["comment", "schedule"])
        ));
        assert!(may_overtake(ActionKind::Schedule, &since(&["comment"])));
        assert!(!may_overtake(ActionKind::Schedule, &since(&["schedule"])));
        assert!(!may_overtake(ActionKind::Resolve, &since(&["resolve"])));
        assert!(!may_overtake(ActionKind::Schedule, &since(&["assign"])));
        assert!(!may_overtake(ActionKind::Resolve, &since(&["transition"])));
        // A classification changes only the root cause: a decision made before
        // it still stands, another classification does not.
        assert!(may_overtake(ActionKind::Resolve, &since(&["classify"])));
        assert!(!may_overtake(ActionKind::Classify, &since(&["classify"])));
        assert!(!may_overtake(ActionKind::Classify, &since(&["resolve"])));
    }
}
