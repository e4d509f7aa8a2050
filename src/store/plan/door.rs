//! Ingest as a door (G7): which records of a batch the ingesting identity may
//! write at all, by the tenant of the operation each belongs to, before anything
//! else is judged.

use std::collections::{BTreeSet, HashMap};

use crate::wire::{LineError, Numbered, Record};

/// The operation a record belongs to, and the field that names it; `None` for a
/// contract, which belongs to no tenant.
fn operation_of(record: &Record) -> Option<(&str, &'static str)> {
    match record {
        Record::Contract(_) => None,
        Record::Operation(op) => Some((op.id.as_str(), "tenant")),
        Record::Attempt(a) => Some((a.operation.as_str(), "operation")),
        Record::Observation(o) => Some((o.operation.as_str(), "operation")),
        Record::Item(i) => Some((i.operation.as_str(), "operation")),
        Record::Transition(t) => Some((t.operation.as_str(), "operation")),
        Record::Expectation(e) => Some((e.operation.as_str(), "operation")),
    }
}

/// The operation ids the batch's records belong to, to look up their tenants.
pub fn operations(records: &[Numbered]) -> Vec<String> {
    let ids: BTreeSet<&str> = records
        .iter()
        .filter_map(|n| operation_of(&n.record).map(|(id, _)| id))
        .collect();
    ids.into_iter().map(str::to_owned).collect()
}

/// Every record `by` may not ingest when it may ingest only into `tenants`: an
/// operation of another tenant, a record of such an operation (its tenant as
/// `stored` holds it, else as the batch declares it), and a contract when `by`
/// may ingest nowhere.
pub fn refused(
    records: &[Numbered],
    stored: &HashMap<String, String>,
    by: &str,
    tenants: &[String],
) -> Vec<LineError> {
    let declared: HashMap<&str, &str> = records
        .iter()
        .filter_map(|n| match &n.record {
            Record::Operation(op) => Some((op.id.as_str(), op.tenant.as_str())),
            _ => None,
        })
        .collect();
    let allowed = |tenant: &str| tenants.iter().any(|t| t == tenant);
    let mut out = Vec::new();
    for n in records {
        let refusal = match operation_of(&n.record) {
            None if tenants.is_empty() => Some((
                "type",
                format!(
                    "G7: {by} holds the ingest role on no tenant, so it may not ingest contracts"
                ),
            )),
            None => None,
            Some((id, field)) => {
                let tenant = stored
                    .get(id)
                    .map(String::as_str)
                    .or_else(|| declared.get(id).copied());
                match tenant {
                    Some(tenant) if !allowed(tenant) => Some((
                        field,
                        format!(
                            "G7: {by} may not ingest into tenant {tenant} (operation {id}); \
                             that takes the ingest role there"
                        ),
                    )),
                    _ => None,
                }
            }
        };
        if let Some((field, reason)) = refusal {
            out.push(LineError {
                line: n.line,
                field: field.to_owned(),
                reason,
            });
        }
    }
    out
}
