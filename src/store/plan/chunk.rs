//! Where a streamed ingest may cut its input into batches. A batch is committed
//! in a transaction of its own, so a cut must never separate records that are
//! judged together: every record of one operation (its attempts, transitions,
//! items, observations, expectation), the operations it names as parent or
//! dependency, and every record that reuses an attempt or observation id. A
//! first pass over the input notes, for each such tie, the last line it appears
//! on ([`Reach::note`]); the second pass cuts only at a line past the reach of
//! everything in the current batch ([`Batcher`]). Contracts belong to no
//! operation and are committed before everything else, so they tie nothing.
//!
//! Ties are kept as 64-bit hashes: two ids that happen to collide only make a
//! batch longer, never split one that must stay whole.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use crate::wire::{Numbered, Record};

/// One tie of a record, hashed.
fn tie(kind: u8, id: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    kind.hash(&mut hasher);
    id.hash(&mut hasher);
    hasher.finish()
}

/// Every tie of a record: its operation, the operations it names, and its own id
/// when that id is global (attempts, observations).
fn ties(record: &Record) -> Vec<u64> {
    const OPERATION: u8 = 0;
    const ATTEMPT: u8 = 1;
    const OBSERVATION: u8 = 2;
    match record {
        Record::Contract(_) => Vec::new(),
        Record::Operation(o) => {
            let mut out = vec![tie(OPERATION, o.id.as_str())];
            out.extend(o.depends_on.iter().map(|d| tie(OPERATION, d.as_str())));
            out.extend(o.parent.iter().map(|p| tie(OPERATION, p.as_str())));
            out
        }
        Record::Attempt(a) => vec![tie(OPERATION, a.operation.as_str()), tie(ATTEMPT, &a.id)],
        Record::Observation(o) => vec![
            tie(OPERATION, o.operation.as_str()),
            tie(OBSERVATION, &o.id),
        ],
        Record::Item(i) => vec![tie(OPERATION, i.operation.as_str())],
        Record::Transition(t) => vec![tie(OPERATION, t.operation.as_str())],
        Record::Expectation(e) => vec![tie(OPERATION, e.operation.as_str())],
    }
}

/// The last line each tie appears on, gathered by a first pass over the input.
#[derive(Debug, Default)]
pub struct Reach {
    last: HashMap<u64, usize>,
}

impl Reach {
    /// Notes a record read on its line (lines come in increasing order).
    pub fn note(&mut self, numbered: &Numbered) {
        for key in ties(&numbered.record) {
            self.last.insert(key, numbered.line);
        }
    }

    /// The last line of anything `numbered` is tied to (at least its own line).
    pub fn of(&self, numbered: &Numbered) -> usize {
        ties(&numbered.record)
            .into_iter()
            .filter_map(|key| self.last.get(&key).copied())
            .fold(numbered.line, usize::max)
    }
}

/// Gathers records into batches of about `target` records, cutting only where no
/// tie crosses the cut.
#[derive(Debug)]
pub struct Batcher<'r> {
    reach: &'r Reach,
    target: usize,
    current: Vec<Numbered>,
    /// The last line the current batch must reach before it may be cut.
    until: usize,
}

impl<'r> Batcher<'r> {
    pub fn new(reach: &'r Reach, target: usize) -> Batcher<'r> {
        Batcher {
            reach,
            target: target.max(1),
            current: Vec::new(),
            until: 0,
        }
    }

    /// Adds a record; returns a finished batch when this record closes one.
    pub fn push(&mut self, numbered: Numbered) -> Option<Vec<Numbered>> {
        self.until = self.until.max(self.reach.of(&numbered));
        let line = numbered.line;
        self.current.push(numbered);
        (self.current.len() >= self.target && line >= self.until)
            .then(|| std::mem::take(&mut self.current))
    }

    /// The last batch, possibly empty.
    pub fn finish(self) -> Vec<Numbered> {
        self.current
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::parse_stream;

    const CONTRACT: &str = r#"{"type":"contract","tool":"S01","version":"IC01","action":"record.write","method":"POST","idempotency":{"supported":true,"scope":"tenant","retention_hours":24},"status_lookup":true,"retryable":["http_503"],"compensation":"record.delete","owner":"integrations","max_attempts":3,"budget_seconds":600}"#;

    fn operation(id: &str) -> String {
        let payload = crate::core::ids::Sha256::of(id.as_bytes());
        format!(
            r#"{{"type":"operation","id":"{id}","tenant":"tenant-a","actor":"svc:test","tool":"S01","action":"record.write","target":"record:{id}.invalid","payload_hash":"{payload}","risk":"low","idempotency_key":"k-{id}","business_key":"b-{id}","correlation_id":"c-{id}","owner":"team-a","max_attempts":3,"deadline":"2026-09-05T11:00:00Z","failure_mode":"timeout_unknown","state":"UNKNOWN","next_observation_at":"2026-09-05T10:05:00Z","created_at":"2026-09-05T10:00:00Z"}}"#
        )
    }

    fn attempt(id: &str, op: &str) -> String {
        format!(
            r#"{{"type":"attempt","id":"{id}","operation":"{op}","seq":1,"kind":"request","layer":"sdk","started_at":"2026-09-05T10:00:01Z","ended_at":"2026-09-05T10:00:31Z","phase":"request_sent","outcome":"timeout","provider_request_id":"prq-{id}"}}"#
        )
    }

    fn records(lines: &[String]) -> Vec<Numbered> {
        let parsed = parse_stream(lines.join("\n").as_bytes(), &mut |_| {}).expect("read");
        assert!(parsed.is_clean(), "{:?}", parsed.errors);
        parsed.records
    }

    fn batches(records: Vec<Numbered>, target: usize) -> Vec<Vec<usize>> {
        let mut reach = Reach::default();
        records.iter().for_each(|n| reach.note(n));
        let mut batcher = Batcher::new(&reach, target);
        let mut out = Vec::new();
        for n in records {
            if let Some(batch) = batcher.push(n) {
                out.push(batch.iter().map(|n| n.line).collect());
            }
        }
        let last = batcher.finish();
        if !last.is_empty() {
            out.push(last.iter().map(|n| n.line).collect());
        }
        out
    }

    #[test]
    fn an_operation_is_never_split_even_when_its_records_are_far_apart() {
        let lines = vec![
            CONTRACT.to_owned(),
            operation("F01"),
            operation("F02"),
            attempt("A1", "F02"),
            operation("F03"),
            attempt("A2", "F01"),
            operation("F04"),
        ];
        let got = batches(records(&lines), 1);
        // F01 spans lines 2..6, so nothing between may be cut off; the contract
        // (line 1) ties nothing and stands alone.
        assert_eq!(got, vec![vec![1], vec![2, 3, 4, 5, 6], vec![7]]);
    }

    #[test]
    fn a_reused_attempt_id_keeps_both_operations_together() {
        let lines = vec![
            operation("F01"),
            attempt("A1", "F01"),
            operation("F02"),
            attempt("A1", "F02"),
        ];
        let got = batches(records(&lines), 1);
        assert_eq!(got, vec![vec![1, 2, 3, 4]]);
    }

    #[test]
    fn batches_reach_the_target_before_they_are_cut() {
        let lines: Vec<String> = (0..10)
            .flat_map(|n| {
                let id = format!("F{n:02}");
                [operation(&id), attempt(&format!("A{n}"), &id)]
            })
            .collect();
        let got = batches(records(&lines), 5);
        assert_eq!(
            got.iter().map(Vec::len).collect::<Vec<_>>(),
            vec![6, 6, 6, 2]
        );
    }
}
