//! Repeated errors: the seed's "review repeated errors by owner and root-cause
//! layer". Every failed or held operation counts once, in the group of its owner,
//! its root-cause layer ([`crate::core::cause`], `unclassified` until the evidence
//! or a reviewer decides it) and its tool, at the instant it entered its state
//! ([`crate::core::cause::since`]). A group says how many of its operations
//! arrived in the last day, the last week and ever, and names the newest; the
//! most frequent in the last week come first, so remediation goes first where
//! the same defect keeps coming back.

use std::collections::BTreeMap;

use chrono::{DateTime, SubsecRound, Utc};

use super::facts::{Repeated, RepeatedError};
use super::ratio::count;
use crate::core::ids::OperationId;

/// The shorter window, in milliseconds: the last day.
pub const DAY_MS: i64 = 24 * 3_600_000;
/// The longer window, in milliseconds: the last week.
pub const WEEK_MS: i64 = 7 * DAY_MS;

/// Whether an operation that entered its state at `since_ms` counts in the
/// last day and in the last week at `now_ms` (all in milliseconds): the one
/// window rule of every producer and of a store's sums.
pub fn windows(since_ms: i64, now_ms: i64) -> (u32, u32) {
    (
        u32::from(since_ms >= now_ms - DAY_MS),
        u32::from(since_ms >= now_ms - WEEK_MS),
    )
}

/// Where an operation's root cause counts: owner, layer, tool.
pub type GroupKey = (String, String, String);

/// One failed or held operation as a group of one, at `now`. The instant is
/// kept to the millisecond, as a store keeps it with the operation's other
/// facts, so every producer names the same newest at the same instant.
pub(super) fn one(
    key: GroupKey,
    operation: &OperationId,
    since: DateTime<Utc>,
    now: DateTime<Utc>,
) -> RepeatedError {
    let since = since.trunc_subsecs(3);
    let (last_day, last_week) = windows(since.timestamp_millis(), now.timestamp_millis());
    let (owner, layer, tool) = key;
    RepeatedError {
        owner,
        layer,
        tool,
        last_day,
        last_week,
        total: 1,
        newest: operation.clone(),
        newest_since: since,
    }
}

/// Groups folded from any number of parts, each possibly already a group of
/// many (a page's, or a store's sums).
#[derive(Debug, Default)]
pub struct Groups(BTreeMap<GroupKey, RepeatedError>);

impl Groups {
    /// Adds `part` to its group.
    pub fn add(&mut self, part: RepeatedError) {
        let key = (part.owner.clone(), part.layer.clone(), part.tool.clone());
        match self.0.get_mut(&key) {
            None => {
                self.0.insert(key, part);
            }
            Some(group) => {
                group.last_day = group.last_day.saturating_add(part.last_day);
                group.last_week = group.last_week.saturating_add(part.last_week);
                group.total = group.total.saturating_add(part.total);
                if (part.newest_since, &part.newest) > (group.newest_since, &group.newest) {
                    group.newest = part.newest;
                    group.newest_since = part.newest_since;
                }
            }
        }
    }

    /// The groups, in no particular order: one part each.
    pub fn into_parts(self) -> Vec<RepeatedError> {
        self.0.into_values().collect()
    }

    /// The groups in the order they are read, the first `at_most` when given.
    pub fn finish(self, at_most: Option<usize>) -> Repeated {
        let mut groups: Vec<RepeatedError> = self.0.into_values().collect();
        groups.sort_by(|a, b| {
            (b.last_week, b.total, b.newest_since)
                .cmp(&(a.last_week, a.total, a.newest_since))
                .then_with(|| (&a.owner, &a.layer, &a.tool).cmp(&(&b.owner, &b.layer, &b.tool)))
        });
        let all = groups.len();
        let kept = at_most.unwrap_or(all);
        groups.truncate(kept);
        Repeated {
            groups_total: (all > kept).then(|| count(all)),
            groups,
        }
    }
}

impl FromIterator<RepeatedError> for Groups {
    fn from_iter<I: IntoIterator<Item = RepeatedError>>(parts: I) -> Self {
        let mut groups = Groups::default();
        for part in parts {
            groups.add(part);
        }
        groups
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::metrics::LISTED;
    use chrono::{Duration, TimeZone};

    fn at(hours_ago: i64) -> DateTime<Utc> {
        now() - Duration::hours(hours_ago)
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 3, 1, 12, 0, 0).unwrap()
    }

    fn key(owner: &str, layer: &str, tool: &str) -> GroupKey {
        (owner.into(), layer.into(), tool.into())
    }

    fn id(s: &str) -> OperationId {
        OperationId::parse(s).unwrap()
    }

    #[test]
    fn a_group_counts_each_window_and_names_the_newest() {
        let groups: Groups = [
            one(key("pay", "provider", "T1"), &id("A"), at(2), now()),
            one(key("pay", "provider", "T1"), &id("B"), at(30), now()),
            one(key("pay", "provider", "T1"), &id("C"), at(24 * 9), now()),
        ]
        .into_iter()
        .collect();
        let r = groups.finish(Some(LISTED));
        assert_eq!(r.groups.len(), 1);
        let g = &r.groups[0];
        assert_eq!((g.last_day, g.last_week, g.total), (1, 2, 3));
        assert_eq!(g.newest.as_str(), "A");
        assert_eq!(g.newest_since, at(2));
        assert_eq!(r.groups_total, None);
    }

    #[test]
    fn the_instant_is_kept_to_the_millisecond_as_a_store_keeps_it() {
        let exact = now() - Duration::nanoseconds(1_234_567);
        let g = one(key("o", "queue", "T"), &id("A"), exact, now());
        assert_eq!(g.newest_since.timestamp_millis(), exact.timestamp_millis());
        assert_eq!(g.newest_since.timestamp_subsec_nanos() % 1_000_000, 0);
    }

    #[test]
    fn exactly_a_day_old_is_inside_the_day_and_equals_break_on_the_id() {
        let g = one(key("o", "parser", "T"), &id("X"), at(24), now());
        assert_eq!((g.last_day, g.last_week), (1, 1));
        let late = now() - Duration::hours(24) - Duration::milliseconds(1);
        let g = one(key("o", "parser", "T"), &id("X"), late, now());
        assert_eq!((g.last_day, g.last_week), (0, 1));
        let groups: Groups = [
            one(key("o", "parser", "T"), &id("B"), at(1), now()),
            one(key("o", "parser", "T"), &id("C"), at(1), now()),
            one(key("o", "parser", "T"), &id("A"), at(1), now()),
        ]
        .into_iter()
        .collect();
        assert_eq!(groups.finish(Some(LISTED)).groups[0].newest.as_str(), "C");
    }

    #[test]
    fn the_most_frequent_in_the_week_come_first_then_in_all_then_the_newest() {
        let mut parts = vec![
            // two old ones: most in all, none this week
            one(key("a", "queue", "T1"), &id("Q1"), at(24 * 30), now()),
            one(key("a", "queue", "T1"), &id("Q2"), at(24 * 30), now()),
            // one this week
            one(key("b", "provider", "T2"), &id("P1"), at(48), now()),
            // two this week
            one(key("c", "authorization", "T3"), &id("Z1"), at(5), now()),
            one(key("c", "authorization", "T3"), &id("Z2"), at(6), now()),
            // one this week, newer than b's
            one(key("d", "parser", "T4"), &id("R1"), at(1), now()),
        ];
        parts.reverse();
        let order: Vec<String> = parts
            .into_iter()
            .collect::<Groups>()
            .finish(Some(LISTED))
            .groups
            .into_iter()
            .map(|g| g.owner)
            .collect();
        assert_eq!(order, ["c", "d", "b", "a"]);
    }

    #[test]
    fn folding_pages_equals_folding_the_operations() {
        let ops: Vec<RepeatedError> = (0..7)
            .map(|i| {
                let layer = if i % 2 == 0 { "provider" } else { "parser" };
                one(
                    key("o", layer, "T"),
                    &id(&format!("op{i}")),
                    at(i * 20),
                    now(),
                )
            })
            .collect();
        let whole = ops.iter().cloned().collect::<Groups>().finish(Some(LISTED));
        let page_a: Groups = ops[..3].iter().cloned().collect();
        let page_b: Groups = ops[3..].iter().cloned().collect();
        let mut folded = Groups::default();
        for part in page_a.0.into_values().chain(page_b.0.into_values()) {
            folded.add(part);
        }
        assert_eq!(folded.finish(Some(LISTED)), whole);
    }

    #[test]
    fn more_groups_than_listed_are_cut_and_counted() {
        let groups: Groups = (0..LISTED + 3)
            .map(|i| one(key(&format!("o{i}"), "queue", "T"), &id("A"), at(1), now()))
            .collect();
        let r = groups.finish(Some(LISTED));
        assert_eq!(r.groups.len(), LISTED);
        assert_eq!(r.groups_total, Some(count(LISTED + 3)));
    }
}
