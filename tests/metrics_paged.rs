//! The report as every surface computes it — the store read in keyset pages, each
//! page judged with its relatives' records and folded into counts — agrees with
//! the rules over the whole dataset (`core::metrics::report`, which
//! tests/metrics.rs pins rule by rule), on seeded stores of many shapes: copies of
//! the demo packet under two tenants, records dropped at random, dependencies and
//! parents pointed across copies and tenants; every scope, pages of one operation
//! up to all of them. The only difference allowed is the one the report states:
//! each list keeps its first `LISTED` entries beside its count.

use crate::support;

use chrono::{DateTime, Duration, Utc};
use holdfast::core::clock::parse_instant;
use holdfast::core::metrics::report;
use holdfast::store::{IngestMode, Scope, Store};
use holdfast::wire::Numbered;
use support::packets::{Rng, TENANTS, cut, generate};
use support::stores::{self, Kind};

fn instant(text: &str) -> DateTime<Utc> {
    parse_instant(text).expect("a test instant")
}

/// Every scope over `seed`'s store on `kind`, at two instants, in pages of
/// several sizes: the paged report equals the rules over the whole dataset.
async fn agrees(kind: Kind, seed: u64) {
    let fresh = stores::fresh(kind).await;
    let store: &dyn Store = fresh.store.as_ref();
    let ingested = instant("2026-09-05T12:00:00Z");
    store
        .ingest(generate(seed), IngestMode::Quarantine, "test", ingested)
        .await
        .expect("ingest");
    let scopes = [
        Scope::Every,
        Scope::Tenants(vec![TENANTS[0].to_owned()]),
        Scope::Tenants(vec![TENANTS[1].to_owned()]),
    ];
    let mut rng = Rng::new(seed ^ 0xA5A5);
    for now in [ingested, ingested + Duration::hours(30)] {
        for scope in &scopes {
            let data = store.dataset(scope).await.expect("dataset");
            let whole = cut(report(&data, now));
            for page in [1, 2 + rng.below(6), 1000] {
                let paged = holdfast::report::compute_in(
                    &stores::session_in(&fresh.store, scope),
                    now,
                    page,
                )
                .await
                .expect("paged report");
                assert_eq!(
                    paged, whole,
                    "seed {seed}, {scope:?}, pages of {page}, at {now}: the paged report differs"
                );
            }
        }
    }
}

#[tokio::test]
async fn the_paged_report_agrees_with_the_rules_on_generated_sqlite_stores() {
    for seed in 0..16 {
        agrees(Kind::Sqlite, seed).await;
    }
}

#[tokio::test]
async fn the_paged_report_agrees_with_the_rules_on_generated_postgres_stores() {
    if stores::postgres_skipped().await {
        return;
    }
    for seed in [0, 3, 7] {
        agrees(Kind::Postgres, seed).await;
    }
}

/// The generator makes the shapes the agreement is worth checking on: several
/// tenants, links across them, and stores larger than a listing.
#[test]
fn the_generator_makes_many_shapes() {
    let records: Vec<Numbered> = (1..16).flat_map(generate).collect();
    let text = format!("{records:?}");
    for tenant in TENANTS {
        assert!(text.contains(tenant), "no operation of {tenant}");
    }
    assert!(
        (1..16).any(|seed| generate(seed).len() > 4 * 100),
        "no store larger than a listing"
    );
}
