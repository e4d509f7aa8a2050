//! Redaction at ingest, the same for every backend: every text value of every
//! record passes the active redactor ([`crate::core::redact`], the config's
//! `[[redact]]` patterns included) before the record is planned, so the store holds
//! `‹redacted:KIND›` markers where a source sent a secret. What was redacted is
//! kept per value as a [`RedactionRow`]: the record and field, the kinds, the
//! SHA-256 of the value as received and as stored, a protected sample and the
//! SHA-256 of the line it came from. The record's hash covers the record as
//! stored, so `audit verify` checks it like any other; redacting is deterministic
//! and a marker is left alone by a second pass, so ingesting the same line again,
//! or its redacted form, finds the record already stored.

use crate::core::redact::{active, redact_value_sampled};
use crate::wire::{LineError, Numbered, parse_line, to_value, write_line};

use super::ingest::{Lookups, RecordKey, lookups, own_operation, wire_hashes};
use crate::core::ids::Sha256;

/// One value ingest redacted, as the `redactions` table keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedactionRow {
    /// The input line the record came from (not stored).
    pub line: usize,
    /// The record's type (`attempt`, `observation`, …).
    pub record: String,
    /// The record's key in words: its id, `OP:INDEX` for an item, `OP` for an
    /// expectation, `OP:FROM:TO:AT_MS` for a transition, the tool for a contract.
    pub record_key: String,
    pub operation: Option<String>,
    /// The field path in the record (`response_excerpt`, `approval.by`, `evidence[1]`).
    pub path: String,
    /// The kinds found, comma-separated.
    pub kinds: String,
    /// The SHA-256 of the value as received.
    pub value_sha256: String,
    /// The SHA-256 of the value as stored (with its markers).
    pub stored_sha256: String,
    /// What the secrets were, without them (see [`crate::core::redact::sample`]).
    pub sample: String,
    /// The SHA-256 of the line as received, when the record came from a file.
    pub line_sha256: Option<String>,
}

/// The key of a record as the `redactions` table names it.
pub fn key_text(key: &RecordKey) -> String {
    match key {
        RecordKey::Contract(id)
        | RecordKey::Operation(id)
        | RecordKey::Attempt(id)
        | RecordKey::Observation(id)
        | RecordKey::Expectation(id) => id.clone(),
        RecordKey::Item(op, index) => format!("{op}:{index}"),
        RecordKey::Transition(op, from, to, at) => format!("{op}:{from}:{to}:{at}"),
    }
}

/// A batch after redaction.
#[derive(Debug, Default, Clone)]
pub struct Redacted {
    /// Every record, redacted; a refused one as received (it is never written).
    pub records: Vec<Numbered>,
    /// The canonical wire line of each record of `records`, in the same order:
    /// written once here, then hashed and stored as it is.
    pub wires: Vec<String>,
    /// What was redacted, record by record in line order.
    pub rows: Vec<RedactionRow>,
    /// Records whose redacted form is not a valid record (a secret in a field
    /// that cannot hold a marker, such as an id): refused by line and field.
    pub refused: Vec<LineError>,
    /// What planning works out from the records alone, when it was worked out
    /// ahead ([`Redacted::prepared`]); planning works it out itself otherwise.
    pub prepared: Option<Prepared>,
}

/// What planning a batch needs of its records alone, read from nothing
/// stored: worked out on the thread that reads and redacts the input while
/// the batch before is planned and written.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The SHA-256 of each of the batch's wire lines, in order.
    pub hashes: Vec<Sha256>,
    /// The keys to look up in the store ([`lookups`]).
    pub lookups: Lookups,
}

impl Redacted {
    /// Records in the batch.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// This batch followed by `other`, as if both had been redacted together.
    pub fn then(mut self, other: Redacted) -> Redacted {
        self.records.extend(other.records);
        self.wires.extend(other.wires);
        self.rows.extend(other.rows);
        self.refused.extend(other.refused);
        self.prepared = match (self.prepared, other.prepared) {
            (Some(mut first), Some(second)) => {
                first.hashes.extend(second.hashes);
                first.lookups.merge(second.lookups);
                Some(first)
            }
            _ => None,
        };
        self
    }

    /// The batch with what planning needs of its records alone worked out
    /// ([`Prepared`]), so that the thread that plans and writes it does not.
    pub fn prepared(mut self) -> Redacted {
        self.prepared = Some(Prepared::of(&self.records, &self.wires));
        self
    }
}

impl Prepared {
    /// What planning needs of `records`, whose wire lines are `wires`.
    pub fn of(records: &[Numbered], wires: &[String]) -> Prepared {
        Prepared {
            hashes: wire_hashes(wires),
            lookups: lookups(records),
        }
    }
}

/// Whether `found` holds for any string of `json`, a JSON text as serde_json
/// writes it (every `"` inside a string escaped): keys and values alike, each
/// decoded from its escapes before it is asked.
fn each_string(json: &str, mut found: impl FnMut(&str) -> bool) -> bool {
    let bytes = json.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'"' {
            at += 1;
            continue;
        }
        let start = at + 1;
        let (mut end, mut escaped) = (start, false);
        while end < bytes.len() && bytes[end] != b'"' {
            if bytes[end] == b'\\' {
                escaped = true;
                end += 1;
            }
            end += 1;
        }
        let end = end.min(bytes.len());
        let hit = if escaped {
            match serde_json::from_str::<String>(&json[at..(end + 1).min(json.len())]) {
                Ok(text) => found(&text),
                // Not a string serde_json wrote: ask the slow path.
                Err(_) => true,
            }
        } else {
            found(&json[start..end])
        };
        if hit {
            return true;
        }
        at = end + 1;
    }
    false
}

/// Redacts every text value of every record of `records`.
pub fn redact(records: Vec<Numbered>) -> Redacted {
    let mut out = Redacted {
        records: Vec::with_capacity(records.len()),
        wires: Vec::with_capacity(records.len()),
        ..Redacted::default()
    };
    let redactor = active();
    for numbered in records {
        // Almost every record holds no secret: its canonical line is written
        // once, and when none of its strings (keys included, a superset of the
        // values the redactor walks) could hold one, that line is the record as
        // stored. Otherwise the record is walked value by value.
        let wire = write_line(&numbered.record);
        if !each_string(&wire, |text| redactor.may_find(text)) {
            out.wires.push(wire);
            out.records.push(numbered);
            continue;
        }
        let mut value = to_value(&numbered.record);
        let found = redact_value_sampled(&mut value);
        if found.is_empty() {
            // Nothing changed: the line written above is the record as stored.
            out.wires.push(wire);
            out.records.push(numbered);
            continue;
        }
        let record = match parse_line(value.to_string().as_bytes(), numbered.line) {
            Ok(record) => record,
            Err(errors) => {
                let kinds: Vec<&str> = found
                    .iter()
                    .flat_map(|s| s.redaction.kinds.iter().map(String::as_str))
                    .collect();
                out.refused.extend(errors.into_iter().map(|e| LineError {
                    reason: format!(
                        "holds a secret ({}) that ingest redacts, and the field cannot hold \
                         its ‹redacted:…› marker: {}",
                        kinds.join(", "),
                        e.reason
                    ),
                    ..e
                }));
                out.wires.push(wire);
                out.records.push(numbered);
                continue;
            }
        };
        let key = key_text(&RecordKey::of(&record));
        let operation = own_operation(&record).map(str::to_owned);
        let line_sha256 = numbered.line_sha256.as_ref().map(|h| h.as_str().to_owned());
        for s in found {
            out.rows.push(RedactionRow {
                line: numbered.line,
                record: record.type_name().to_owned(),
                record_key: key.clone(),
                operation: operation.clone(),
                path: s.redaction.path,
                kinds: s.redaction.kinds.join(","),
                value_sha256: s.redaction.original_sha256.as_str().to_owned(),
                stored_sha256: s.redacted_sha256.as_str().to_owned(),
                sample: s.sample,
                line_sha256: line_sha256.clone(),
            });
        }
        out.wires.push(write_line(&record));
        out.records.push(Numbered {
            line: numbered.line,
            record,
            line_sha256: numbered.line_sha256,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::each_string;

    fn strings(json: &str) -> Vec<String> {
        let mut out = Vec::new();
        each_string(json, |s| {
            out.push(s.to_owned());
            false
        });
        out
    }

    #[test]
    fn every_string_is_asked_decoded_keys_included() {
        let json = serde_json::json!({
            "id": "op-1",
            "note": "line one\nline \"two\" \\ end",
            "n": 3,
            "list": ["a\u{1}b", "ünï"],
            "nested": {"k": null, "deep": "x"},
        })
        .to_string();
        assert_eq!(
            strings(&json),
            [
                "id",
                "op-1",
                "note",
                "line one\nline \"two\" \\ end",
                "n",
                "list",
                "a\u{1}b",
                "ünï",
                "nested",
                "k",
                "deep",
                "x"
            ]
        );
    }

    #[test]
    fn the_first_hit_stops_the_walk() {
        let mut asked = 0;
        let hit = each_string(r#"{"a":"b","c":"d"}"#, |s| {
            asked += 1;
            s == "b"
        });
        assert!(hit);
        assert_eq!(asked, 2);
        assert!(!each_string(r#"{"a":1}"#, |s| s == "b"));
    }
}
