//! Tests of the wire reader and writer: the DESIGN §5 examples, round trips, and one
//! bad line per rule, each checked for its line, field and reason.

use super::*;
use crate::core::ids::OperationId;
use crate::core::model::{Attempt, AttemptKind, Outcome, Phase, State};
use proptest::prelude::*;
use std::io::{BufReader, Cursor};

const HASH: &str = "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";

/// The DESIGN §5 example lines, placeholders filled in.
fn examples() -> Vec<String> {
    [
        r#"{"type":"contract","tool":"T03","version":"IC07","action":"ticket.create","method":"POST","idempotency":{"supported":true,"scope":"account","retention_hours":24},"status_lookup":true,"retryable":["connection_reset","http_503","http_429"],"compensation":"ticket.delete","owner":"integrations","max_attempts":3,"budget_seconds":120}"#,
        r#"{"type":"operation","id":"F09","tenant":"pinehaven","actor":"svc:relay-desk","tool":"T03","action":"ticket.create","target":"ticket-queue:7","payload_hash":"HASH","intent_hash":"HASH","risk":"high","approval":{"by":"rev:maya","policy":"RP03","at":"2026-09-05T10:00:00Z","payload_hash":"HASH","expires_at":"2026-09-05T11:00:00Z"},"idempotency_key":"k-F09","business_key":"case-4411","correlation_id":"c-77","owner":"integrations","max_attempts":3,"deadline":"2026-09-05T10:05:00Z","failure_mode":"timeout_unknown","state":"UNKNOWN","next_observation_at":"2026-09-05T10:02:00Z","depends_on":[],"parent":null,"relation":null,"created_at":"2026-09-05T10:00:00Z"}"#,
        r#"{"type":"attempt","id":"A017","operation":"F09","seq":1,"kind":"request","layer":"orchestrator","started_at":"2026-09-05T10:00:01Z","ended_at":"2026-09-05T10:00:31Z","phase":"request_sent","outcome":"timeout","http_status":null,"error_type":"read_timeout","retry_after":null,"provider_request_id":null,"request_hash":"HASH","response_hash":null,"resend_count":0,"replayed":null,"trace_id":"tr-0917","response_excerpt":null}"#,
        r#"{"type":"item","operation":"F21","index":1,"label":"line 1","state":"succeeded","authoritative_id":"inv-88"}"#,
        r#"{"type":"observation","id":"O05","operation":"F09","observed_at":"2026-09-05T10:02:00Z","source":"provider_status","found":true,"matches":{"target":true,"payload_hash":true,"owner":true,"version":true},"effect_count":1,"raw_hash":"HASH","note":"ticket 7-118 exists"}"#,
        r#"{"type":"transition","operation":"F09","from":"SENT","to":"UNKNOWN","by":"svc:orchestrator","role":"system","at":"2026-09-05T10:00:31Z","reason":"read timeout after request_sent","evidence":["A017"]}"#,
        r#"{"type":"expectation","operation":"F09","expected_state":"SUCCEEDED","requires_reconciliation":true,"duplicate_risk":false,"prohibited":["retry_before_reconcile"],"veto":true}"#,
    ]
    .iter()
    .map(|line| line.replace("HASH", HASH))
    .collect()
}

fn example(type_name: &str) -> String {
    examples()
        .into_iter()
        .find(|l| l.starts_with(&format!("{{\"type\":\"{type_name}\"")))
        .unwrap()
}

/// The example of `type_name` with `field` set to the JSON text `value`
/// (`None` removes it); a field not in the example is appended.
fn with(type_name: &str, field: &str, value: Option<&str>) -> String {
    let line = example(type_name);
    let object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&line).unwrap();
    let mut text = String::from("{");
    let mut done = false;
    for (k, v) in &object {
        let v = if k == field {
            done = true;
            match value {
                Some(value) => value.to_owned(),
                None => continue,
            }
        } else {
            v.to_string()
        };
        if text.len() > 1 {
            text.push(',');
        }
        text.push_str(&format!("{}:{v}", serde_json::Value::from(k.as_str())));
    }
    if !done && let Some(value) = value {
        text.push_str(&format!(",\"{field}\":{value}"));
    }
    text.push('}');
    text
}

fn errors(line: &str) -> Vec<LineError> {
    match parse_line(line.as_bytes(), 7) {
        Ok(record) => panic!("accepted {line}: {record:?}"),
        Err(errors) => errors,
    }
}

/// Asserts that the line is refused with exactly one error on `field` whose reason
/// contains `reason`.
fn refused(line: &str, field: &str, reason: &str) {
    let errors = errors(line);
    assert_eq!(errors.len(), 1, "{errors:#?}");
    let e = &errors[0];
    assert_eq!(e.line, 7);
    assert_eq!(e.field, field, "{e}");
    assert!(e.reason.contains(reason), "{e}");
}

#[test]
fn every_design_example_parses_to_its_record_type() {
    for line in examples() {
        let record = parse_line(line.as_bytes(), 1).unwrap();
        assert!(line.starts_with(&format!("{{\"type\":\"{}\"", record.type_name())));
    }
    let Ok(Record::Operation(op)) = parse_line(example("operation").as_bytes(), 1) else {
        panic!("not an operation")
    };
    assert_eq!(op.id.as_str(), "F09");
    assert_eq!(op.state, State::Unknown);
    let approval = op.approval.unwrap();
    assert_eq!(approval.by, "rev:maya");
    assert_eq!(approval.payload_hash.unwrap().as_str(), HASH);
    let Ok(Record::Attempt(a)) = parse_line(example("attempt").as_bytes(), 1) else {
        panic!("not an attempt")
    };
    assert_eq!(a.phase, Phase::RequestSent);
    assert_eq!(a.outcome, Outcome::Timeout);
    assert_eq!(a.provider_request_id, None);
}

#[test]
fn write_then_parse_gives_back_every_record_type() {
    for line in examples() {
        let record = parse_line(line.as_bytes(), 1).unwrap();
        let written = write_line(&record);
        assert!(
            written.starts_with(&format!("{{\"type\":\"{}\",", record.type_name())),
            "{written}"
        );
        assert_eq!(parse_line(written.as_bytes(), 1).unwrap(), record);
    }
}

#[test]
fn writer_keeps_the_model_field_order_and_writes_absent_fields_as_null() {
    let written = write_line(&parse_line(example("attempt").as_bytes(), 1).unwrap());
    assert_eq!(written, example("attempt"));
    let minimal = r#"{"type":"item","operation":"F21","index":0,"state":"unknown"}"#;
    let written = write_line(&parse_line(minimal.as_bytes(), 1).unwrap());
    assert_eq!(
        written,
        r#"{"type":"item","operation":"F21","index":0,"label":null,"state":"unknown","authoritative_id":null}"#
    );
}

#[test]
fn times_with_offsets_are_written_back_in_utc() {
    let line = with("transition", "at", Some(r#""2026-09-05T12:00:31+02:00""#));
    let written = write_line(&parse_line(line.as_bytes(), 1).unwrap());
    assert!(
        written.contains(r#""at":"2026-09-05T10:00:31Z""#),
        "{written}"
    );
}

#[test]
fn to_value_puts_type_first() {
    let record = parse_line(example("observation").as_bytes(), 1).unwrap();
    let value = to_value(&record);
    let keys: Vec<&String> = value.as_object().unwrap().keys().collect();
    assert_eq!(keys[0], "type");
    assert_eq!(keys[1], "id");
    assert_eq!(value["matches"]["version"], true);
}

fn attempt_strategy() -> impl Strategy<Value = Attempt> {
    // Inner spaces are part of an id; at either end they are refused.
    let key = "[a-zA-Z0-9:._-]([a-zA-Z0-9:._ -]{0,38}[a-zA-Z0-9:._-])?";
    (
        (
            key,
            "[A-Za-z0-9._:-]{1,20}",
            1u32..,
            0i64..4_000_000_000,
            proptest::option::of(0i64..100_000),
            proptest::option::of(100u16..600),
        ),
        (
            proptest::option::of(key),
            proptest::option::of(any::<String>()),
            proptest::option::of(any::<u32>()),
            proptest::option::of(any::<bool>()),
            proptest::sample::select(Phase::ALL),
            proptest::sample::select(Outcome::ALL),
        ),
    )
        .prop_map(
            |(
                (id, op, seq, start, duration, status),
                (trace, excerpt, resend, replayed, phase, outcome),
            )| {
                let started_at = chrono::DateTime::from_timestamp(start, 0).unwrap();
                Attempt {
                    id,
                    operation: OperationId::parse(&op).unwrap(),
                    seq,
                    kind: AttemptKind::StatusQuery,
                    layer: None,
                    started_at,
                    ended_at: duration.map(|d| started_at + chrono::Duration::milliseconds(d)),
                    phase,
                    outcome,
                    http_status: status,
                    error_type: None,
                    retry_after: None,
                    provider_request_id: trace.clone(),
                    request_hash: None,
                    response_hash: None,
                    resend_count: resend,
                    replayed,
                    trace_id: trace,
                    response_excerpt: excerpt,
                    url: None,
                }
            },
        )
}

proptest! {
    #[test]
    fn attempts_survive_a_round_trip(attempt in attempt_strategy()) {
        let record = Record::Attempt(attempt);
        let line = write_line(&record);
        prop_assert_eq!(parse_line(line.as_bytes(), 1), Ok(record));
    }
}

/// One edit of a line: overwrite, insert or delete a byte, or cut the line short.
#[derive(Debug, Clone)]
enum Edit {
    Set(usize, u8),
    Insert(usize, u8),
    Delete(usize),
    Cut(usize),
}

fn edit_strategy() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Edit::Set(at, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Edit::Insert(at, b)),
        any::<usize>().prop_map(Edit::Delete),
        any::<usize>().prop_map(Edit::Cut),
    ]
}

/// The example line `which` (mod the number of examples) with `edits` applied.
fn mutated(which: usize, edits: &[Edit]) -> Vec<u8> {
    let all = examples();
    let mut bytes = all[which % all.len()].clone().into_bytes();
    for edit in edits {
        let len = bytes.len().max(1);
        match *edit {
            Edit::Set(at, b) if !bytes.is_empty() => bytes[at % len] = b,
            Edit::Insert(at, b) => bytes.insert(at % (bytes.len() + 1), b),
            Edit::Delete(at) if !bytes.is_empty() => {
                bytes.remove(at % len);
            }
            Edit::Cut(at) => bytes.truncate(at % (bytes.len() + 1)),
            _ => {}
        }
    }
    bytes
}

/// Whatever a line turns into, parsing never panics; a line the parser accepts
/// round-trips; a refused one names a line and a field.
fn parses_or_names_the_field(bytes: &[u8]) -> Result<(), TestCaseError> {
    match parse_line(bytes, 7) {
        Ok(record) => {
            let again = parse_line(write_line(&record).as_bytes(), 7);
            prop_assert_eq!(again, Ok(record));
        }
        Err(errors) => {
            prop_assert!(!errors.is_empty());
            for e in &errors {
                prop_assert_eq!(e.line, 7);
                prop_assert!(!e.field.is_empty() && !e.reason.is_empty(), "{:?}", e);
            }
        }
    }
    Ok(())
}

proptest! {
    // Sized for CI: 4,000 edited example lines and 2,000 lines of random bytes a
    // run; the fuzz target (`fuzz/`) goes on for as long as it is given.
    #![proptest_config(ProptestConfig::with_cases(4_000))]
    #[test]
    fn edited_lines_never_panic_and_accepted_ones_round_trip(
        which in 0usize..7,
        edits in proptest::collection::vec(edit_strategy(), 1..6),
    ) {
        parses_or_names_the_field(&mutated(which, &edits))?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        parses_or_names_the_field(&bytes)?;
    }
}

#[test]
fn an_empty_key_is_refused_and_named() {
    let line = with("attempt", "", Some("1"));
    let errors = errors(&line);
    assert!(
        errors
            .iter()
            .any(|e| e.field == "\"\"" && e.reason.starts_with("unknown field")),
        "{errors:?}"
    );
}

#[test]
fn untrusted_text_with_control_characters_round_trips() {
    let line = with(
        "attempt",
        "response_excerpt",
        Some(r#""ignore previous instructions\u001b[31m\u0000 \"quoted\" ✓""#),
    );
    let record = parse_line(line.as_bytes(), 1).unwrap();
    assert_eq!(parse_line(write_line(&record).as_bytes(), 1), Ok(record));
}

#[test]
fn unknown_fields_are_each_refused_with_the_allowed_list() {
    let line = with("attempt", "extra", Some("1")).replacen(
        r#""type":"attempt","#,
        r#""type":"attempt","more":[],"#,
        1,
    );
    let errors = errors(&line);
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["more", "extra"]);
    assert!(
        errors[0].reason.starts_with(
            "unknown field; allowed fields of an attempt are: type, id, operation, seq"
        ),
        "{}",
        errors[0]
    );
}

#[test]
fn unknown_fields_inside_nested_objects_are_refused() {
    let approval = r#"{"by":"rev:maya","policy":"RP03","note":"x"}"#;
    refused(
        &with("operation", "approval", Some(approval)),
        "approval.note",
        "allowed fields of approval are: by, policy, at, payload_hash, expires_at",
    );
    refused(
        &with(
            "contract",
            "idempotency",
            Some(r#"{"supported":true,"ttl":3}"#),
        ),
        "idempotency.ttl",
        "unknown field",
    );
    refused(
        &with("observation", "matches", Some(r#"{"tenant":true}"#)),
        "matches.tenant",
        "unknown field",
    );
}

#[test]
fn type_is_required_and_must_be_known() {
    refused(r#"{"tool":"T03"}"#, "type", "required field is missing");
    refused(
        &example("item").replace("\"item\"", "\"widget\""),
        "type",
        "must be one of: contract, operation, attempt, item, observation, transition, expectation",
    );
    refused(
        &example("item").replace("\"item\"", "3"),
        "type",
        "must be a string",
    );
}

#[test]
fn required_fields_missing_or_null_are_refused() {
    refused(
        &with("operation", "tenant", None),
        "tenant",
        "required field is missing",
    );
    refused(
        &with("attempt", "started_at", Some("null")),
        "started_at",
        "required field must not be null",
    );
    refused(
        &with("contract", "idempotency", Some(r#"{"scope":"account"}"#)),
        "idempotency.supported",
        "required field is missing",
    );
    refused(
        &with("contract", "idempotency", None),
        "idempotency",
        "required field is missing",
    );
    refused(
        &with(
            "operation",
            "approval",
            Some(r#"{"by":"rev:maya","policy":null}"#),
        ),
        "approval.policy",
        "required field must not be null",
    );
    let errors = errors(r#"{"type":"expectation"}"#);
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["operation", "expected_state"]);
}

#[test]
fn optional_fields_may_be_null_or_absent() {
    let line = r#"{"type":"transition","operation":"F09","from":"SENT","to":"UNKNOWN","by":"svc:o","at":"2026-09-05T10:00:31Z","role":null,"evidence":null}"#;
    let Ok(Record::Transition(t)) = parse_line(line.as_bytes(), 1) else {
        panic!("refused")
    };
    assert!(t.evidence.is_empty());
    assert_eq!(t.role, None);
    assert!(
        parse_line(
            with("operation", "failure_mode", Some("null")).as_bytes(),
            1
        )
        .is_ok()
    );
}

/// Sets `field` of the `type_name` example to each JSON `value` and expects one
/// error on that field whose reason contains `reason`.
fn refused_each(cases: &[(&str, &str, &str, &str)]) {
    for (type_name, field, value, reason) in cases {
        refused(&with(type_name, field, Some(value)), field, reason);
    }
}

#[test]
fn wrong_json_types_are_refused() {
    refused_each(&[
        (
            "attempt",
            "seq",
            r#""1""#,
            "must be an integer, not a string",
        ),
        ("attempt", "seq", "1.5", "must be an integer"),
        ("observation", "found", r#""yes""#, "must be a boolean"),
        ("contract", "tool", "5", "must be a string, not an integer"),
        (
            "transition",
            "evidence",
            r#""A017""#,
            "must be an array of strings",
        ),
        (
            "operation",
            "approval",
            r#""rev:maya""#,
            "must be an object",
        ),
    ]);
    refused(
        &with("transition", "evidence", Some(r#"["A017",3]"#)),
        "evidence[1]",
        "must be a string",
    );
}

#[test]
fn enumerations_list_their_values() {
    let cases = [
        (
            "operation",
            "state",
            "must be one of: PLANNED, VALIDATED, APPROVED, SENT",
        ),
        (
            "operation",
            "failure_mode",
            "must be one of: auth_denied, validation_failed",
        ),
        (
            "operation",
            "risk",
            "must be one of: low, medium, high, critical",
        ),
        (
            "operation",
            "relation",
            "must be one of: compensation_of, resume_of",
        ),
        (
            "attempt",
            "phase",
            "must be one of: not_sent, dns, connected, request_sent",
        ),
        (
            "attempt",
            "outcome",
            "must be one of: ok, timeout, connection_reset",
        ),
        ("attempt", "kind", "must be one of: request, status_query"),
        (
            "attempt",
            "layer",
            "must be one of: sdk, gateway, queue, orchestrator, agent",
        ),
        (
            "item",
            "state",
            "must be one of: succeeded, failed, unknown, skipped",
        ),
        (
            "transition",
            "role",
            "must be one of: system, viewer, reviewer",
        ),
        ("transition", "from", "must be one of: PLANNED"),
        ("expectation", "expected_state", "must be one of: PLANNED"),
    ];
    for (type_name, field, reason) in cases {
        let line = with(type_name, field, Some(r#""Unknown""#));
        let errors = errors(&line);
        assert!(
            errors
                .iter()
                .any(|e| e.field == field && e.reason.contains(reason)),
            "{type_name}.{field}: {errors:#?}"
        );
    }
}

#[test]
fn state_names_are_the_exact_uppercase_ones() {
    refused(
        &with("operation", "state", Some(r#""unknown""#)),
        "state",
        "UNKNOWN",
    );
}

#[test]
fn times_need_rfc_3339_with_an_offset() {
    let reason = "must be an RFC 3339 time with an offset, like 2026-09-05T10:00:00Z";
    refused(
        &with("attempt", "started_at", Some(r#""2026-09-05T10:00:01""#)),
        "started_at",
        reason,
    );
    refused(
        &with(
            "operation",
            "approval",
            Some(r#"{"by":"rev:maya","policy":"RP03","expires_at":"tomorrow"}"#),
        ),
        "approval.expires_at",
        reason,
    );
    refused(
        &with("observation", "observed_at", Some("1757066520")),
        "observed_at",
        "must be a string",
    );
}

#[test]
fn hashes_need_the_sha256_form() {
    let reason = "must be `sha256:` followed by 64 lowercase hex digits";
    refused(
        &with(
            "operation",
            "payload_hash",
            Some(&format!("\"{}\"", HASH.to_uppercase())),
        ),
        "payload_hash",
        reason,
    );
    refused(
        &with("observation", "raw_hash", Some(r#""sha256:abc""#)),
        "raw_hash",
        reason,
    );
}

#[test]
fn operation_references_must_be_operation_ids() {
    refused(
        &with("attempt", "operation", Some(r#""F 09""#)),
        "operation",
        "operation id contains ' '",
    );
    refused(
        &with("operation", "id", Some(r#""""#)),
        "id",
        "operation id must not be empty",
    );
    refused(
        &with("operation", "depends_on", Some(r#"["F01","F/2"]"#)),
        "depends_on[1]",
        "operation id contains '/'",
    );
    let line = with("operation", "parent", Some(r#""F\u001b08""#))
        .replace(r#""relation":null"#, r#""relation":"resume_of""#);
    refused(&line, "parent", "operation id contains '\\u{1b}'");
}

#[test]
fn integers_must_be_in_range() {
    let cases = [
        (
            "attempt",
            "seq",
            "0",
            "must be an integer from 1 to 4294967295",
        ),
        ("attempt", "seq", "4294967296", "from 1 to 4294967295"),
        (
            "attempt",
            "http_status",
            "99",
            "must be an integer from 100 to 599",
        ),
        ("attempt", "http_status", "600", "from 100 to 599"),
        ("attempt", "resend_count", "-1", "from 0 to 4294967295"),
        ("item", "index", "-1", "from 0 to 4294967295"),
        ("contract", "max_attempts", "0", "from 1 to 4294967295"),
        ("contract", "budget_seconds", "0", "from 1 to 4294967295"),
        ("operation", "max_attempts", "0", "from 1 to 4294967295"),
        ("observation", "effect_count", "-3", "from 0 to 4294967295"),
        (
            "observation",
            "effect_count",
            "18446744073709551616",
            "must be an integer",
        ),
    ];
    refused_each(&cases);
    refused(
        &with(
            "contract",
            "idempotency",
            Some(r#"{"supported":true,"retention_hours":-1}"#),
        ),
        "idempotency.retention_hours",
        "from 0 to 4294967295",
    );
}

#[test]
fn records_must_agree_with_themselves() {
    refused(
        &with("attempt", "ended_at", Some(r#""2026-09-05T10:00:00Z""#)),
        "ended_at",
        "must not be before started_at",
    );
    refused(
        &with(
            "operation",
            "approval",
            Some(
                r#"{"by":"r","policy":"p","at":"2026-09-05T10:00:00Z","expires_at":"2026-09-05T10:00:00Z"}"#,
            ),
        ),
        "approval.expires_at",
        "must be after approval.at",
    );
    refused(
        &with("operation", "parent", Some(r#""F01""#)),
        "relation",
        "parent and relation must both be set or both be null",
    );
    refused(
        &with("operation", "relation", Some(r#""resume_of""#)),
        "parent",
        "parent and relation must both be set or both be null",
    );
    refused(
        &with("operation", "depends_on", Some(r#"["F01","F09"]"#)),
        "depends_on[1]",
        "an operation may not depend on itself",
    );
    refused(
        &with("transition", "to", Some(r#""SENT""#)),
        "to",
        "must differ from `from`",
    );
    let child = with("operation", "parent", Some(r#""F01""#))
        .replace(r#""relation":null"#, r#""relation":"compensation_of""#);
    assert!(parse_line(child.as_bytes(), 1).is_ok());
}

#[test]
fn text_ids_and_keys_are_capped_and_clean() {
    let long_text = format!("\"{}\"", "x".repeat(MAX_TEXT_BYTES + 1));
    let long_key = format!("\"{}\"", "k".repeat(MAX_KEY_CHARS + 1));
    refused_each(&[
        ("item", "label", &long_text, "at most 65536 bytes"),
        ("observation", "note", &long_text, "at most 65536 bytes"),
        (
            "attempt",
            "response_excerpt",
            &long_text,
            "at most 65536 bytes",
        ),
        (
            "attempt",
            "id",
            &long_key,
            "is 129 characters long; at most 128",
        ),
        (
            "operation",
            "idempotency_key",
            r#""k\u0007""#,
            "control characters",
        ),
        ("transition", "by", r#""""#, "must not be empty"),
    ]);
    let note = with("observation", "note", Some(r#""bell\u0007\nline""#));
    assert!(parse_line(note.as_bytes(), 1).is_ok());
}

#[test]
fn every_error_of_a_line_is_reported() {
    let line = r#"{"type":"attempt","id":"A1","operation":"F09","seq":0,"kind":"push","started_at":"now","phase":"request_sent","outcome":"ok","extra":true}"#;
    let errors = errors(line);
    let fields: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["seq", "kind", "started_at", "extra"]);
    assert!(errors.iter().all(|e| e.line == 7));
}

#[test]
fn a_line_of_many_errors_lists_the_first_ones_and_counts_the_rest() {
    let mut line = example("item").trim_end_matches('}').to_owned();
    for i in 0..100 {
        line.push_str(&format!(",\"x{i}\":0"));
    }
    line.push('}');
    let errors = errors(&line);
    assert_eq!(errors.len(), read::MAX_ERRORS_PER_LINE + 1);
    assert_eq!(
        errors.last().unwrap().reason,
        "68 more errors on this line are not listed"
    );
}

#[test]
fn duplicate_keys_are_refused_at_any_depth() {
    refused(
        &example("item").replacen('{', r#"{"index":2,"#, 1),
        "index",
        "duplicate key",
    );
    refused(
        &with(
            "operation",
            "approval",
            Some(r#"{"by":"rev:maya","policy":"RP03","by":"rev:eve"}"#),
        ),
        "approval.by",
        "duplicate key",
    );
}

#[test]
fn whole_line_faults_are_reported_on_dash() {
    refused(r#"{"type":"item","#, "-", "not valid JSON at column 15");
    refused(
        r#"["item"]"#,
        "-",
        "each line must be one JSON object, not an array",
    );
    refused(r#"{"type":"item"} {}"#, "-", "not valid JSON at column 17");
    let deep = format!(
        "{{\"type\":\"item\",\"label\":{}1{}}}",
        "[".repeat(MAX_DEPTH),
        "]".repeat(MAX_DEPTH)
    );
    refused(&deep, "-", "nested deeper than 64 levels");
    let errors = parse_line(b"{\"type\":\"it\xffem\"}", 3).unwrap_err();
    assert_eq!(errors.len(), 1);
    assert_eq!((errors[0].line, errors[0].field.as_str()), (3, "-"));
    assert!(
        errors[0].reason.contains("invalid UTF-8 at byte offset 11"),
        "{}",
        errors[0]
    );
}

#[test]
fn a_line_over_one_mib_is_refused_before_parsing() {
    let mut line = with("item", "label", Some("\"\"")).into_bytes();
    line.extend(std::iter::repeat_n(b' ', MAX_LINE_BYTES + 1 - line.len()));
    assert_eq!(line.len(), MAX_LINE_BYTES + 1);
    let errors = parse_line(&line, 9).unwrap_err();
    assert_eq!(errors[0].field, "-");
    assert!(
        errors[0]
            .reason
            .contains("line is 1048577 bytes long; at most 1048576")
    );
    line.pop();
    assert!(parse_line(&line, 9).is_ok());
}

fn stream(bytes: &[u8], capacity: usize) -> ParsedStream {
    let mut seen = Vec::new();
    let parsed = parse_stream(
        BufReader::with_capacity(capacity, Cursor::new(bytes)),
        &mut |n| seen.push(n),
    )
    .unwrap();
    assert_eq!(seen.last(), Some(&(bytes.len() as u64)));
    assert!(seen.windows(2).all(|w| w[0] <= w[1]));
    parsed
}

#[test]
fn a_stream_reports_every_bad_line_and_keeps_the_good_ones() {
    let mut file = Vec::new();
    file.extend_from_slice(example("contract").as_bytes());
    file.extend_from_slice(b"\r\n   \t\r\n");
    file.extend_from_slice(with("item", "index", Some("-1")).as_bytes());
    file.extend_from_slice(b"\r\n");
    file.extend_from_slice(example("operation").as_bytes());
    file.extend_from_slice(b"\n\n{\"type\":\"x\xfe\"}\n");
    file.extend_from_slice(example("expectation").as_bytes());
    for capacity in [8, 64, 8192] {
        let parsed = stream(&file, capacity);
        assert_eq!(parsed.lines, 7);
        let good: Vec<(usize, &str)> = parsed
            .records
            .iter()
            .map(|n| (n.line, n.record.type_name()))
            .collect();
        assert_eq!(
            good,
            [(1, "contract"), (4, "operation"), (7, "expectation")]
        );
        let bad: Vec<(usize, &str)> = parsed
            .errors
            .iter()
            .map(|e| (e.line, e.field.as_str()))
            .collect();
        assert_eq!(bad, [(3, "index"), (6, "-")]);
        assert_eq!(parsed.bad_lines.len(), 2);
        assert_eq!(parsed.bad_lines[0].0, 3);
        assert_eq!(
            parsed.bad_lines[0].1,
            format!("{}\r", with("item", "index", Some("-1"))).into_bytes()
        );
        assert_eq!(parsed.bad_lines[1], (6, b"{\"type\":\"x\xfe\"}".to_vec()));
        assert!(parsed.unkept.is_empty());
    }
}

#[test]
fn a_stream_refuses_long_lines_keeping_them_verbatim_up_to_the_limit() {
    let long = vec![b'x'; MAX_LINE_BYTES + 10];
    let huge = vec![b'y'; KEEP_LIMIT + 1];
    let mut file = example("item").into_bytes();
    file.push(b'\n');
    file.extend_from_slice(&long);
    file.push(b'\n');
    file.extend_from_slice(&huge);
    file.push(b'\n');
    file.extend_from_slice(example("item").as_bytes());
    let parsed = stream(&file, 8192);
    assert_eq!(parsed.lines, 4);
    assert_eq!(parsed.records.len(), 2);
    assert_eq!(parsed.records[1].line, 4);
    let reasons: Vec<(usize, &str)> = parsed
        .errors
        .iter()
        .map(|e| (e.line, e.reason.as_str()))
        .collect();
    assert_eq!(
        reasons,
        [
            (
                2,
                "line is 1048586 bytes long; at most 1048576 bytes (1 MiB) are allowed"
            ),
            (
                3,
                "line is 16777217 bytes long; at most 1048576 bytes (1 MiB) are allowed"
            ),
        ]
    );
    assert_eq!(parsed.bad_lines, [(2, long)]);
    assert_eq!(parsed.unkept, [3]);
}

#[test]
fn type_must_be_the_first_field() {
    let line = r#"{"operation":"F21","type":"item","index":0,"state":"unknown"}"#;
    refused(line, "type", "must be the first field of the line");
}

#[test]
fn instants_outside_the_readme_form_or_the_storable_years_are_refused() {
    for (value, reason) in [
        (r#""2026-09-05 10:00:01Z""#, "must be an RFC 3339 time"),
        (
            r#""2026-09-05T10:00:01.0000000001Z""#,
            "at most 9 (nanoseconds)",
        ),
        (r#""0000-01-01T00:00:00Z""#, "years 0001 to 9999"),
        (r#""9999-12-31T23:59:59-23:59""#, "years 0001 to 9999"),
    ] {
        refused(
            &with("attempt", "started_at", Some(value)),
            "started_at",
            reason,
        );
    }
}

#[test]
fn a_duplicate_of_an_objects_seventeenth_key_is_refused() {
    let deadline = r#""2026-09-05T10:05:00Z","deadline":"2026-09-05T12:00:00Z""#;
    let line = with("operation", "deadline", Some(deadline));
    refused(&line, "deadline", "duplicate key");
}

#[test]
fn provider_originated_text_is_kept_byte_exact() {
    let hostile = "x\u{1b}]52;c;AAAA\u{7}\u{9b}2J\r\u{202e}";
    let json = serde_json::Value::from(hostile).to_string();
    for (kind, field) in [
        ("operation", "target"),
        ("operation", "business_key"),
        ("attempt", "error_type"),
        ("attempt", "provider_request_id"),
        ("attempt", "response_excerpt"),
        ("observation", "note"),
    ] {
        let line = with(kind, field, Some(&json));
        let record = parse_line(line.as_bytes(), 1).unwrap_or_else(|e| panic!("{field}: {e:?}"));
        let value = to_value(&record);
        assert_eq!(value[field], hostile, "{field}");
        assert_eq!(parse_line(write_line(&record).as_bytes(), 1), Ok(record));
    }
}

/// The DESIGN §9.1 example of a `status_lookup` object.
const LOOKUP: &str = r#"{"method":"GET","url":"http://127.0.0.1:8710/v1/records?business_key={business_key}","auth":{"header":"Authorization","prefix":"Bearer ","env":"T06_STATUS_TOKEN"},"timeout_ms":2000,"lag_seconds":60,"not_found_status":[404],"fields":{"target":"/record/target","payload_hash":"/record/payload_hash","tenant":"/record/tenant","version":"/record/version","effect_count":"/count","provider_request_id":"/record/request_id"}}"#;

/// The contract example with `status_lookup` set to the lookup object with `field`
/// (a dotted path one level deep at most) set to `value`, or removed.
fn with_lookup(field: &str, value: Option<&str>) -> String {
    let mut lookup: serde_json::Value = serde_json::from_str(LOOKUP).unwrap();
    let (object, key) = match field.split_once('.') {
        Some((outer, inner)) => (&mut lookup[outer], inner),
        None => (&mut lookup, field),
    };
    let map = object.as_object_mut().unwrap();
    match value {
        Some(v) => {
            map.insert(key.to_owned(), serde_json::from_str(v).unwrap());
        }
        None => {
            map.remove(key);
        }
    }
    with("contract", "status_lookup", Some(&lookup.to_string()))
}

#[test]
fn a_lookup_may_name_its_binding_and_only_by_a_binding_name() {
    let named = LOOKUP.replacen(
        r#""url":"http://127.0.0.1:8710/v1/records?business_key={business_key}","#,
        r#""url":"http://127.0.0.1:8710/v1/records?business_key={business_key}","provider":"payments","#,
        1,
    );
    let line = with("contract", "status_lookup", Some(&named));
    let Ok(Record::Contract(c)) = parse_line(line.as_bytes(), 1) else {
        panic!("not a contract")
    };
    assert_eq!(
        c.status_lookup.spec().unwrap().provider.as_deref(),
        Some("payments")
    );
    let written = write_line(&Record::Contract(c.clone()));
    assert_eq!(written, line, "written back where it stood");
    let without = with("contract", "status_lookup", Some(LOOKUP));
    let Ok(plain) = parse_line(without.as_bytes(), 1) else {
        panic!("not a contract")
    };
    assert!(
        !write_line(&plain).contains(r#""provider":"#),
        "a lookup without a binding keeps its bytes"
    );
    refused(
        &with(
            "contract",
            "status_lookup",
            Some(&named.replace(r#""payments""#, r#""Pay Ments""#)),
        ),
        "status_lookup.provider",
        "is not a binding name",
    );
}

#[test]
fn status_lookup_takes_the_design_object_and_writes_it_back() {
    let line = with("contract", "status_lookup", Some(LOOKUP));
    let Ok(Record::Contract(c)) = parse_line(line.as_bytes(), 1) else {
        panic!("not a contract")
    };
    let spec = c.status_lookup.spec().unwrap();
    assert_eq!(spec.method, "GET");
    assert_eq!(spec.timeout_ms(), 2000);
    assert_eq!(spec.lag_seconds(), 60);
    assert_eq!(spec.auth.as_ref().unwrap().env, "T06_STATUS_TOKEN");
    assert_eq!(
        spec.fields.effect_count.as_ref().unwrap().as_str(),
        "/count"
    );
    assert_eq!(spec.origin(), "http://127.0.0.1:8710");
    assert!(c.status_lookup.exists());
    let written = write_line(&Record::Contract(c.clone()));
    assert_eq!(
        written, line,
        "the canonical form of a full object is itself"
    );
    assert_eq!(
        parse_line(written.as_bytes(), 1).unwrap(),
        Record::Contract(c)
    );
}

#[test]
fn status_lookup_booleans_still_ingest_byte_exact() {
    for flag in ["true", "false"] {
        let line = with("contract", "status_lookup", Some(flag));
        let record = parse_line(line.as_bytes(), 1).unwrap();
        let Record::Contract(c) = &record else {
            panic!("not a contract")
        };
        assert_eq!(c.status_lookup.exists(), flag == "true");
        assert!(c.status_lookup.spec().is_none());
        assert_eq!(write_line(&record), line);
    }
}

#[test]
fn a_minimal_lookup_object_round_trips_with_absent_fields_as_null() {
    let minimal = r#"{"method":"GET","url":"https://status.example/ops/{operation}"}"#;
    let line = with("contract", "status_lookup", Some(minimal));
    let record = parse_line(line.as_bytes(), 1).unwrap();
    let written = write_line(&record);
    assert!(
        written.contains(r#""status_lookup":{"method":"GET","url":"https://status.example/ops/{operation}","auth":null,"timeout_ms":null,"lag_seconds":null,"not_found_status":null,"fields":{"target":null,"#),
        "{written}"
    );
    assert_eq!(parse_line(written.as_bytes(), 1).unwrap(), record);
    let Record::Contract(c) = record else {
        panic!("not a contract")
    };
    let spec = c.status_lookup.spec().unwrap();
    assert_eq!(spec.timeout_ms(), 2000);
    assert!(spec.is_not_found(404) && !spec.is_not_found(410));
}

#[test]
fn bad_lookup_objects_are_refused_field_by_field() {
    let cases: &[(&str, Option<&str>, &str, &str)] = &[
        (
            "url",
            Some(r#""http://x/{business_key""#),
            "status_lookup.url",
            "unmatched `{`",
        ),
        (
            "url",
            Some(r#""http://x/a}b""#),
            "status_lookup.url",
            "unmatched `}`",
        ),
        (
            "url",
            Some(r#""http://x/{account}""#),
            "status_lookup.url",
            "unknown placeholder {account}",
        ),
        (
            "url",
            Some(r#""ftp://x/{operation}""#),
            "status_lookup.url",
            "scheme \"ftp\" is not allowed",
        ),
        (
            "url",
            Some(r#""x/{operation}""#),
            "status_lookup.url",
            "must start with http:// or https://",
        ),
        (
            "url",
            Some(r#""http://{tenant}.example/a""#),
            "status_lookup.url",
            "only in the path or query",
        ),
        (
            "url",
            Some(r#""http://u:pw@x/a""#),
            "status_lookup.url",
            "must not carry credentials",
        ),
        (
            "url",
            Some(r#""http://x/a b""#),
            "status_lookup.url",
            "spaces",
        ),
        (
            "url",
            Some(r#""http://[::1/a""#),
            "status_lookup.url",
            "is not a valid URL",
        ),
        (
            "url",
            None,
            "status_lookup.url",
            "required field is missing",
        ),
        (
            "method",
            Some(r#""POST""#),
            "status_lookup.method",
            "only reads",
        ),
        (
            "timeout_ms",
            Some("0"),
            "status_lookup.timeout_ms",
            "from 1 to 120000",
        ),
        (
            "timeout_ms",
            Some("-5"),
            "status_lookup.timeout_ms",
            "from 1 to 120000",
        ),
        (
            "lag_seconds",
            Some("-1"),
            "status_lookup.lag_seconds",
            "from 0 to",
        ),
        (
            "not_found_status",
            Some("[404, 99]"),
            "status_lookup.not_found_status[1]",
            "from 200 to 599",
        ),
        (
            "not_found_status",
            Some(r#""404""#),
            "status_lookup.not_found_status",
            "an array of HTTP statuses",
        ),
        (
            "fields.target",
            Some(r#""record/target""#),
            "status_lookup.fields.target",
            "is not a JSON Pointer",
        ),
        (
            "fields.count",
            Some(r#""/count""#),
            "status_lookup.fields.count",
            "unknown field",
        ),
        (
            "fields.tenant",
            Some(r#""/a/~2""#),
            "status_lookup.fields.tenant",
            "must be followed by 0 or 1",
        ),
        (
            "auth.env",
            Some(r#""1TOKEN""#),
            "status_lookup.auth.env",
            "not an environment variable name",
        ),
        (
            "auth.header",
            Some(r#""Author ization""#),
            "status_lookup.auth.header",
            "not an HTTP header name",
        ),
        (
            "auth.env",
            None,
            "status_lookup.auth.env",
            "required field is missing",
        ),
        (
            "secret",
            Some(r#""abc""#),
            "status_lookup.secret",
            "unknown field",
        ),
    ];
    for (field, value, path, reason) in cases {
        let line = with_lookup(field, *value);
        let errors = errors(&line);
        assert_eq!(errors.len(), 1, "{field}: {errors:#?}");
        let e = &errors[0];
        assert_eq!(e.field, *path, "{e}");
        assert!(e.reason.contains(reason), "{field}: {e}");
        assert!(e.to_string().starts_with("line 7: status_lookup."), "{e}");
    }
    refused(
        &with("contract", "status_lookup", Some("\"yes\"")),
        "status_lookup",
        "a boolean or a lookup object",
    );
}

#[test]
fn every_placeholder_is_accepted_and_rendered_percent_encoded() {
    use crate::core::lookup::{Placeholder, Unfillable, UrlTemplate};
    let all: Vec<String> = Placeholder::ALL
        .iter()
        .map(|p| format!("{}={{{}}}", p.name(), p.name()))
        .collect();
    let template = UrlTemplate::parse(&format!("http://x/q?{}", all.join("&"))).unwrap();
    assert_eq!(template.placeholders().count(), 6);
    let Ok(Record::Operation(mut op)) = parse_line(example("operation").as_bytes(), 1) else {
        panic!("not an operation")
    };
    op.target = "ticket-queue:7/a b&c".into();
    let url = template.render(&op, Some("req 1")).unwrap();
    assert_eq!(
        url,
        "http://x/q?provider_request_id=req%201&idempotency_key=k-F09&business_key=case-4411&target=ticket-queue%3A7%2Fa%20b%26c&operation=F09&tenant=pinehaven"
    );
    op.business_key = None;
    assert_eq!(
        template.render(&op, Some("r")),
        Err(Unfillable::Missing(Placeholder::BusinessKey))
    );
    assert_eq!(
        template.render(&op, None),
        Err(Unfillable::Missing(Placeholder::ProviderRequestId))
    );
}

#[test]
fn a_contract_may_declare_its_call_path_and_response_shape_and_old_lines_keep_their_bytes() {
    let old = example("contract");
    let written = write_line(&parse_line(old.as_bytes(), 1).unwrap());
    assert!(!written.contains("\"path\"") && !written.contains("\"response\""));
    assert_eq!(
        parse_line(written.as_bytes(), 1).unwrap(),
        parse_line(old.as_bytes(), 1).unwrap()
    );
    let mut line = with("contract", "path", Some(r#""/v2/tickets/{business_key}""#));
    line.pop();
    line.push_str(r#","response":{"record_id":"/id","tenant":"/owner/tenant"}}"#);
    let Ok(Record::Contract(contract)) = parse_line(line.as_bytes(), 1) else {
        panic!("{line}")
    };
    assert_eq!(
        contract.path.as_ref().map(|p| p.as_str()),
        Some("/v2/tickets/{business_key}")
    );
    let response = contract.response.clone().unwrap();
    assert_eq!(response.record_id.unwrap().as_str(), "/id");
    assert!(response.target.is_none());
    let again = write_line(&Record::Contract(contract.clone()));
    assert_eq!(
        parse_line(again.as_bytes(), 1).unwrap(),
        Record::Contract(contract)
    );
    refused(
        &with("contract", "path", Some(r#""http://evil.invalid/x""#)),
        "path",
        "single `/`",
    );
    refused(
        &with("contract", "response", Some(r#"{"record":"/id"}"#)),
        "response.record",
        "unknown",
    );
    refused(
        &with("contract", "response", Some(r#"{"tenant":"owner"}"#)),
        "response.tenant",
        "JSON Pointer",
    );
}

#[test]
fn a_contract_may_carry_the_inventory_fields_and_old_lines_keep_their_bytes() {
    let old = example("contract");
    let written = write_line(&parse_line(old.as_bytes(), 1).unwrap());
    assert_eq!(written, old, "a contract without them keeps its bytes");
    let mut line = old.clone();
    line.pop();
    line.push_str(concat!(
        r#","tenant":"pinehaven","schema":{"type":"object","required":["queue"],"max":1.5},"#,
        r#""business_rules":["one ticket per case"],"side_effects":["pages the on-call"],"#,
        r#""downstream":["T04"],"rate_limits":[{"scope":"tenant","limit":100,"per_seconds":60}]}"#
    ));
    let Ok(Record::Contract(contract)) = parse_line(line.as_bytes(), 1) else {
        panic!("{line}")
    };
    let inv = &contract.inventory;
    assert_eq!(inv.tenant.as_deref(), Some("pinehaven"));
    assert_eq!(inv.business_rules, ["one ticket per case"]);
    assert_eq!(inv.downstream, ["T04"]);
    assert_eq!(inv.rate_limits[0].scope.as_str(), "tenant");
    assert_eq!(write_line(&Record::Contract(contract.clone())), line);
    let reference = with(
        "contract",
        "schema",
        Some(r#""https://schemas.example/t.json""#),
    );
    let Ok(Record::Contract(by_ref)) = parse_line(reference.as_bytes(), 1) else {
        panic!("{reference}")
    };
    assert!(matches!(
        by_ref.inventory.schema,
        Some(crate::core::contract::Schema::Reference(ref r)) if r == "https://schemas.example/t.json"
    ));
    // (field, value, the error's field, what its reason says)
    let rate = |entry: &str| format!("[{entry}]");
    for (field, value, at, reason) in [
        (
            "schema",
            "[1]".to_owned(),
            "schema",
            "a string (a reference) or an object",
        ),
        ("schema", r#""""#.to_owned(), "schema", "must not be empty"),
        ("tenant", "7".to_owned(), "tenant", "a string"),
        (
            "business_rules",
            r#""one""#.to_owned(),
            "business_rules",
            "array",
        ),
        ("downstream", "[1]".to_owned(), "downstream[0]", "a string"),
        (
            "rate_limits",
            rate(r#"{"scope":"galaxy","limit":1,"per_seconds":1}"#),
            "rate_limits[0].scope",
            "tenant, account, key, global",
        ),
        (
            "rate_limits",
            rate(r#"{"scope":"key","limit":0,"per_seconds":1}"#),
            "rate_limits[0].limit",
            "from 1",
        ),
        (
            "rate_limits",
            rate(r#"{"scope":"key","per_seconds":1}"#),
            "rate_limits[0].limit",
            "required",
        ),
        (
            "rate_limits",
            rate(r#"{"scope":"key","limit":1,"per_seconds":1,"burst":2}"#),
            "rate_limits[0].burst",
            "unknown field; allowed fields of a rate limit",
        ),
        (
            "rate_limits",
            "[3]".to_owned(),
            "rate_limits[0]",
            "an object",
        ),
        (
            "rate_limits",
            "{}".to_owned(),
            "rate_limits",
            "an array of rate-limit objects",
        ),
    ] {
        refused(&with("contract", field, Some(&value)), at, reason);
    }
}

#[test]
fn a_contract_may_name_owners_per_state_and_a_domain_review_and_old_lines_keep_their_bytes() {
    let old = example("contract");
    let written = write_line(&parse_line(old.as_bytes(), 1).unwrap());
    assert!(!written.contains("\"owners\"") && !written.contains("\"domain_review\""));
    let mut line = with(
        "contract",
        "owners",
        Some(r#"{"security":"team:security","incident":"team:incident"}"#),
    );
    line.pop();
    line.push_str(r#","domain_review":"financial"}"#);
    let Ok(Record::Contract(contract)) = parse_line(line.as_bytes(), 1) else {
        panic!("{line}")
    };
    let owners = contract.owners.clone().unwrap();
    assert_eq!(owners.security.as_deref(), Some("team:security"));
    assert_eq!(owners.incident.as_deref(), Some("team:incident"));
    assert!(owners.integration.is_none() && owners.business.is_none());
    assert_eq!(
        contract.domain_review,
        Some(crate::core::contract::DomainReview::Financial)
    );
    let again = write_line(&Record::Contract(contract.clone()));
    assert!(again.ends_with(
        r#""owners":{"security":"team:security","incident":"team:incident"},"domain_review":"financial"}"#
    ));
    assert_eq!(
        parse_line(again.as_bytes(), 1).unwrap(),
        Record::Contract(contract)
    );
    refused(
        &with("contract", "owners", Some(r#"{"legal":"team:legal"}"#)),
        "owners.legal",
        "unknown field; allowed fields of owners are: integration, security, business, incident",
    );
    refused(
        &with("contract", "owners", Some(r#"{"security":7}"#)),
        "owners.security",
        "must be a string",
    );
    refused(
        &with("contract", "owners", Some(r#""team:security""#)),
        "owners",
        "must be an object",
    );
    refused(
        &with("contract", "domain_review", Some(r#""medical""#)),
        "domain_review",
        "must be one of: legal, financial, employment, privacy, security",
    );
}

#[test]
fn a_domain_grant_is_never_a_role_a_transition_is_made_under() {
    refused(
        &with("transition", "role", Some(r#""domain:legal""#)),
        "role",
        "must be one of: system, viewer, reviewer, approver, owner, local, delegate, ingest, worker",
    );
}
