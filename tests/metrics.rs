//! Metrics and the release gate over the TC094 demo packet and small changes to it.

use holdfast::wire::{Numbered, Record, parse_stream};

const PACKET: &str = include_str!("../assets/demo/tc094.jsonl");

fn records() -> Vec<Numbered> {
    let parsed = parse_stream(PACKET.as_bytes(), &mut |_| {}).expect("read the packet");
    assert!(
        parsed.is_clean(),
        "packet lines refused: {:?}",
        parsed.errors
    );
    parsed.records
}

#[test]
fn demo_packet_has_the_shape_of_the_run() {
    let records = records();
    let count = |name: &str| {
        records
            .iter()
            .filter(|n| n.record.type_name() == name)
            .count()
    };
    assert_eq!(count("contract"), 8);
    assert_eq!(count("operation"), 32);
    assert_eq!(count("attempt"), 47);
    assert_eq!(count("expectation"), 32);
    let mut per_mode = std::collections::BTreeMap::new();
    for n in &records {
        if let Record::Operation(o) = &n.record {
            *per_mode.entry(o.failure_mode).or_insert(0) += 1;
        }
    }
    assert_eq!(per_mode.len(), 8);
    assert!(per_mode.values().all(|n| *n == 4), "{per_mode:?}");
}
