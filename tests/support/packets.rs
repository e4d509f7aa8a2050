//! Seeded stores of many shapes for the report's agreement tests: copies of
//! the demo packet under two tenants, records dropped at random, dependencies
//! and parents pointed across copies and tenants; and a full report cut to the
//! lists a paged or kept report states.

use holdfast::core::metrics::{LISTED, Report};
use holdfast::wire::{Numbered, parse_stream};
use proptest::prelude::Rng as _;
use proptest::test_runner::{RngAlgorithm, TestRng};
use serde_json::Value;

pub const PACKET: &str = include_str!("../../assets/demo/tc094.jsonl");
pub const TENANTS: [&str; 2] = ["pinehaven", "northwind"];

/// A seeded, reproducible stream of numbers below a bound.
pub struct Rng(TestRng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        Rng(TestRng::from_seed(RngAlgorithm::ChaCha, &bytes))
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.0.next_u64() % n
    }
}

/// The fields that name an operation, attempt or observation.
const ID_FIELDS: [&str; 5] = ["id", "operation", "parent", "depends_on", "evidence"];

/// The demo packet's operations again under new ids, each record renamed.
pub fn renamed_demo(prefix: &str) -> Vec<Numbered> {
    let lines: Vec<String> = PACKET
        .lines()
        .filter(|l| !l.contains(r#""type":"contract""#))
        .map(|line| {
            let mut record: Value = serde_json::from_str(line).expect("a demo line is JSON");
            rename(&mut record, prefix, None);
            record.to_string()
        })
        .collect();
    parse(&lines.join("\n"))
}

/// Prefixes every id `record` names with `prefix`, so copies never collide.
pub fn rename(value: &mut Value, prefix: &str, key: Option<&str>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                rename(v, prefix, Some(k.as_str()));
            }
        }
        Value::Array(list) => list.iter_mut().for_each(|v| rename(v, prefix, key)),
        Value::String(text) if key.is_some_and(|k| ID_FIELDS.contains(&k)) => {
            *text = format!("{prefix}{text}");
        }
        _ => {}
    }
}

/// A store's lines from `seed`: 1 to 4 copies of the demo packet, each under a
/// tenant, with some of its records dropped and some links pointed at another
/// copy. Seed 0 is the demo packet itself.
pub fn generate(seed: u64) -> Vec<Numbered> {
    if seed == 0 {
        return parse(PACKET);
    }
    let mut rng = Rng::new(seed);
    let copies = 1 + rng.below(4);
    let mut lines: Vec<String> = PACKET
        .lines()
        .filter(|l| l.contains(r#""type":"contract""#))
        .map(str::to_owned)
        .collect();
    for copy in 0..copies {
        let drop_percent = rng.below(30);
        let tenant = TENANTS[usize::try_from(copy % 2).unwrap_or(0)];
        for line in PACKET.lines() {
            let mut record: Value = serde_json::from_str(line).expect("a demo line is JSON");
            let kind = record["type"].as_str().unwrap_or_default().to_owned();
            if kind == "contract" {
                continue;
            }
            if kind != "operation" && rng.below(100) < drop_percent {
                continue;
            }
            rename(&mut record, &format!("G{copy}-"), None);
            if kind == "operation" {
                record["tenant"] = Value::String(tenant.to_owned());
                if copies > 1 && rng.below(8) == 0 {
                    let other = (copy + 1 + rng.below(copies - 1)) % copies;
                    let target = format!("G{other}-F{:02}", 1 + rng.below(32));
                    match rng.below(3) {
                        0 => record["parent"] = Value::String(target),
                        _ => record["depends_on"] = Value::Array(vec![Value::String(target)]),
                    }
                }
            }
            lines.push(record.to_string());
        }
    }
    parse(&lines.join("\n"))
}

pub fn parse(text: &str) -> Vec<Numbered> {
    parse_stream(text.as_bytes(), &mut |_| {})
        .expect("read the lines")
        .records
}

/// `full` as the paged report states it: each list cut to its first `LISTED`
/// entries, the count of a cut list beside it.
pub fn cut(mut full: Report) -> Report {
    fn first<T>(list: &mut Vec<T>) -> Option<u32> {
        let total = u32::try_from(list.len()).unwrap_or(u32::MAX);
        (list.len() > LISTED).then(|| {
            list.truncate(LISTED);
            total
        })
    }
    for m in &mut full.metrics {
        let cuts = [
            first(&mut m.numerator_ids),
            first(&mut m.denominator_ids),
            first(&mut m.unverified_ids),
            first(&mut m.shortfalls),
        ];
        if cuts.iter().any(Option::is_some) {
            m.listed_at_most = u32::try_from(LISTED).ok();
        }
    }
    full.release.vetoes_total = first(&mut full.release.vetoes);
    let o = &mut full.operational;
    o.unknown_age.overdue_total = first(&mut o.unknown_age.overdue);
    first(&mut o.throttled.attempt_ids);
    o.partial_total = first(&mut o.partial_in_progress);
    o.pending_total = first(&mut o.pending_proposals);
    o.repeated.groups_total = first(&mut o.repeated.groups);
    full
}
