//! Where a streamed ingest may cut its input into batches. A batch is committed
//! in a transaction of its own, so a cut must never separate records that are
//! judged together: every record of one operation (its attempts, transitions,
//! items, observations, expectation), the operations it names as parent or
//! dependency, every record that reuses an attempt or observation id, and every
//! record a transition cites as its evidence. A
//! first pass over the input notes, for each such tie, the last line it appears
//! on ([`Reach::note`]); the second pass cuts only at a line past the reach of
//! everything in the current batch ([`Batcher`]). Contracts belong to no
//! operation and are committed before everything else, so they tie nothing.
//!
//! Ties are kept as 64-bit hashes: two ids that happen to collide only make a
//! batch longer, never split one that must stay whole.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, DefaultHasher, Hash, Hasher};

use crate::wire::{Numbered, Record};

/// One tie of a record, hashed.
fn tie(kind: u8, id: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    kind.hash(&mut hasher);
    id.hash(&mut hasher);
    hasher.finish()
}

/// Every tie of a record: its operation, the operations it names, its own id
/// when that id is global (attempts, observations), and what a transition cites.
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
        Record::Transition(t) => {
            // What it cites is judged with it: a cited record refused in one batch
            // must not let its transition commit in another.
            let mut out = vec![tie(OPERATION, t.operation.as_str())];
            for cited in &t.evidence {
                out.extend([
                    tie(ATTEMPT, cited),
                    tie(OBSERVATION, cited),
                    tie(OPERATION, cited),
                ]);
            }
            out
        }
        Record::Expectation(e) => vec![tie(OPERATION, e.operation.as_str())],
    }
}

/// The last line each tie appears on, gathered by a first pass over the input,
/// kept only for the ties that appear on more than one line: a tie seen once
/// reaches no further than its own line, which [`Reached::of`] counts anyway.
/// Most ties are seen once (an attempt's or an observation's own id), so
/// whether a tie was seen before is asked of a filter of fixed size ([`Seen`])
/// rather than of a map of every tie, which for a 2.3 GB file held 4.5 M ties
/// (140 MiB). A tie the filter wrongly takes for seen is kept with its own
/// line: the same reach, one entry more. Once the pass is over,
/// [`Reach::finish`] hands on what the later passes read.
#[derive(Debug)]
pub struct Reach {
    seen: Seen,
    /// The ties are hashes already: the map spreads them as they are.
    last: HashMap<u64, u32, BuildHasherDefault<Spread>>,
}

impl Default for Reach {
    fn default() -> Self {
        Reach::for_input(0)
    }
}

/// A line number as [`Reach`] keeps it: past `u32::MAX` (a file of over four
/// billion lines) a tie reaches the end of the input, which keeps everything
/// after it in one batch rather than ever splitting it.
fn kept_line(line: usize) -> u32 {
    u32::try_from(line).unwrap_or(u32::MAX)
}

impl Reach {
    /// A reach for an input of `bytes` bytes, its filter sized for about one
    /// tie per 512 bytes (the records of the bench's shape hold one per 230).
    pub fn for_input(bytes: u64) -> Self {
        Reach {
            seen: Seen::for_ties(bytes / 512),
            last: HashMap::default(),
        }
    }

    /// Notes a record read on its line (lines come in increasing order).
    pub fn note(&mut self, numbered: &Numbered) {
        for key in ties(&numbered.record) {
            if self.seen.mark(key) {
                self.last.insert(key, kept_line(numbered.line));
            }
        }
    }

    /// What the passes after the first read: the kept ties in order, without
    /// the filter, at 12 bytes a tie (the map took about 20, and the filter
    /// is of no use once every line is noted). At 1 M operations of the
    /// bench's shape that is about 2 M ties: 24 MiB instead of 84.
    pub fn finish(self) -> Reached {
        let Reach { seen, last } = self;
        drop(seen);
        let mut pairs: Vec<(u64, u32)> = last.into_iter().collect();
        pairs.sort_unstable_by_key(|(key, _)| *key);
        // About four ties to a bucket of the index.
        let bits = (usize::BITS - (pairs.len() / 4).leading_zeros()).min(24);
        let mut starts = Vec::with_capacity((1usize << bits) + 1);
        let mut at = 0;
        for bucket in 0..(1u64 << bits) {
            while at < pairs.len() && bucket_of(pairs[at].0, bits) < bucket {
                at += 1;
            }
            starts.push(u32::try_from(at).unwrap_or(u32::MAX));
        }
        starts.push(u32::try_from(pairs.len()).unwrap_or(u32::MAX));
        let keys = pairs.iter().map(|(key, _)| *key).collect();
        let lines = pairs.iter().map(|(_, line)| *line).collect();
        Reached {
            keys,
            lines,
            starts,
            bits,
        }
    }
}

/// The bucket of the index a tie falls in: its top `bits` bits.
fn bucket_of(key: u64, bits: u32) -> u64 {
    key.checked_shr(u64::BITS - bits).unwrap_or(0)
}

/// A hasher for keys that are hashes already: it keeps the key as it is.
#[derive(Debug, Default)]
struct Spread(u64);

impl Hasher for Spread {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// The last line of every tie seen on more than one line, read-only: what
/// [`Batcher`] asks while a pass cuts its batches. The ties are sorted, with an
/// index of where each value of their top bits starts, so a question is a
/// short search among about four.
#[derive(Debug, Default)]
pub struct Reached {
    keys: Vec<u64>,
    /// The last line of `keys[i]`, at the same index.
    lines: Vec<u32>,
    /// `keys[starts[b]..starts[b + 1]]` are the ties of bucket `b`.
    starts: Vec<u32>,
    bits: u32,
}

impl Reached {
    /// The last line `key` appears on, where it appears on more than one.
    fn last(&self, key: u64) -> Option<usize> {
        let bucket = usize::try_from(bucket_of(key, self.bits)).ok()?;
        let (from, to) = (*self.starts.get(bucket)?, *self.starts.get(bucket + 1)?);
        let (from, to) = (from as usize, to as usize);
        let at = self.keys[from..to].binary_search(&key).ok()?;
        let line = self.lines[from + at];
        Some(if line == u32::MAX {
            usize::MAX
        } else {
            line as usize
        })
    }

    /// The last line of anything `numbered` is tied to (at least its own line).
    pub fn of(&self, numbered: &Numbered) -> usize {
        ties(&numbered.record)
            .into_iter()
            .filter_map(|key| self.last(key))
            .fold(numbered.line, usize::max)
    }

    /// How many ties are kept.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.keys.len()
    }
}

/// A Bloom filter of ties: [`Seen::mark`] never says a tie is new when it was
/// marked before; it may, rarely, say one was seen that was not.
#[derive(Debug)]
struct Seen {
    bits: Vec<u64>,
    mask: u64,
}

impl Seen {
    /// Bits per expected tie: with three probes, about one new tie in a
    /// thousand is taken for seen.
    const BITS_PER_TIE: u64 = 24;
    const FEWEST_BITS: u64 = 1 << 16;
    /// 64 MiB: past about 22 M ties the filter answers "seen" more often, and
    /// the map grows as it did before the filter.
    const MOST_BITS: u64 = 1 << 29;

    fn for_ties(ties: u64) -> Self {
        let bits = ties
            .saturating_mul(Self::BITS_PER_TIE)
            .clamp(Self::FEWEST_BITS, Self::MOST_BITS)
            .next_power_of_two();
        // A power of two of at least 2^16 bits: whole 64-bit words.
        Seen {
            bits: vec![0; 1usize << (bits.trailing_zeros() - 6)],
            mask: bits - 1,
        }
    }

    /// Marks `tie` (already a hash); whether it may have been marked before.
    fn mark(&mut self, tie: u64) -> bool {
        // Double hashing: the probes step through the bits by an odd stride
        // taken from the tie's other half.
        let stride = tie.rotate_left(32) | 1;
        let mut before = true;
        for probe in 0..3u64 {
            let bit = tie.wrapping_add(probe.wrapping_mul(stride)) & self.mask;
            let (word, mask) = ((bit >> 6) as usize, 1u64 << (bit & 63));
            before &= self.bits[word] & mask != 0;
            self.bits[word] |= mask;
        }
        before
    }
}

/// Gathers records into batches of about `target` records, cutting only where no
/// tie crosses the cut.
#[derive(Debug)]
pub struct Batcher<'r> {
    reach: &'r Reached,
    target: usize,
    current: Vec<Numbered>,
    /// The last line the current batch must reach before it may be cut.
    until: usize,
}

impl<'r> Batcher<'r> {
    pub fn new(reach: &'r Reached, target: usize) -> Batcher<'r> {
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
        if self.current.capacity() == 0 {
            // A batch's records are sized for its target at once rather than
            // grown by doubling, which copied every record several times.
            self.current.reserve(self.target);
        }
        self.current.push(numbered);
        (self.current.len() >= self.target && line >= self.until)
            .then(|| std::mem::take(&mut self.current))
    }

    /// The first line of the batch being gathered, if it holds any.
    pub fn first_line(&self) -> Option<usize> {
        self.current.first().map(|n| n.line)
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
        let reach = reach.finish();
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

#[cfg(test)]
mod reach_tests {
    use super::*;
    use crate::wire::parse_stream;

    /// Every kept tie is found with its last line through the index, at
    /// every size of it, and a tie never kept is not found.
    #[test]
    fn the_finished_reach_finds_every_kept_tie_and_no_other() {
        for count in [0usize, 1, 3, 4, 5, 64, 1000, 50_000] {
            let mut reach = Reach::default();
            let mut want = HashMap::new();
            for n in 0..count {
                let key = tie(0, &format!("op-{n}"));
                // Kept whatever the filter says: the map is what is indexed.
                reach.last.insert(key, kept_line(n * 7));
                want.insert(key, n * 7);
            }
            let reached = reach.finish();
            assert_eq!(reached.len(), count);
            for (key, line) in &want {
                assert_eq!(reached.last(*key), Some(*line), "{count} ties");
            }
            for n in 0..100 {
                assert_eq!(
                    reached.last(tie(1, &format!("op-{n}"))),
                    None,
                    "{count} ties"
                );
            }
        }
        let mut far = Reach::default();
        let key = tie(0, "far");
        far.last.insert(key, kept_line(usize::MAX));
        assert_eq!(
            far.finish().last(key),
            Some(usize::MAX),
            "past u32: the end"
        );
    }

    /// With a filter far too small for its ties (most answers "seen"), and
    /// with one of the right size, every record reaches exactly as far as a
    /// map of every tie says: the filter only decides what is kept.
    #[test]
    fn the_filter_never_changes_a_reach() {
        let mut lines = Vec::new();
        for op in 0..3000 {
            let id = format!("op-{op}");
            lines.push(format!(
                r#"{{"type":"attempt","id":"A-{op}","operation":"{id}","seq":1,"kind":"request","layer":"sdk","started_at":"2026-09-05T10:00:01Z","ended_at":"2026-09-05T10:00:31Z","phase":"request_sent","outcome":"timeout","provider_request_id":"prq-{op}"}}"#
            ));
            // Every tenth operation's attempt id comes back far later.
            if op % 10 == 0 && op >= 1000 {
                let back = op - 1000;
                lines.push(format!(
                    r#"{{"type":"attempt","id":"A-{back}","operation":"op-{back}","seq":2,"kind":"request","layer":"sdk","started_at":"2026-09-05T10:00:01Z","ended_at":"2026-09-05T10:00:31Z","phase":"request_sent","outcome":"timeout","provider_request_id":"prq-{back}-2"}}"#
                ));
            }
        }
        let parsed = parse_stream(lines.join("\n").as_bytes(), &mut |_| {}).expect("read");
        assert!(parsed.is_clean(), "{:?}", parsed.errors.first());
        let mut every: HashMap<u64, usize> = HashMap::new();
        for n in &parsed.records {
            for key in ties(&n.record) {
                every.insert(key, n.line);
            }
        }
        for bytes in [0, 512 * 10_000] {
            let mut reach = Reach::for_input(bytes);
            parsed.records.iter().for_each(|n| reach.note(n));
            let reach = reach.finish();
            for n in &parsed.records {
                let want = ties(&n.record)
                    .into_iter()
                    .filter_map(|key| every.get(&key).copied())
                    .fold(n.line, usize::max);
                assert_eq!(reach.of(n), want, "line {} with {bytes} bytes", n.line);
            }
            if bytes > 0 {
                // Sized right, the map keeps little more than the ties seen twice.
                assert!(reach.len() < 3000 / 10 + 3000 / 10, "{}", reach.len());
            }
        }
    }
}
