//! The drill's case file (DESIGN §9.3): JSON Lines of `{"type":"case",…}`, each a
//! contract, an operation, the provider's script and the expected outcome, parsed
//! strictly into typed cases with `line N: field: reason` errors.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::core::contract::Contract;
use crate::core::lookup::LookupSpec;
use crate::core::model::{FailureMode, State};
use crate::wire::{LineError, Record, parse_line};

/// A `status_lookup` object as a case file writes it.
pub type RawLookup = serde_json::Map<String, Value>;

/// The placeholder a case's URLs use for the simulated provider's base URL.
pub const SIM_PLACEHOLDER: &str = "{sim}";

/// One fault-injection case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    pub id: String,
    pub mode: FailureMode,
    pub name: String,
    /// Why the case is shaped as it is, where the seed leaves a choice open.
    pub note: Option<String>,
    pub contract: Contract,
    /// How to look an operation up (DESIGN §9.1): the contract's `status_lookup`
    /// object as written, `{sim}` still in its URL (see [`Case::lookup_spec`]).
    pub lookup: Option<RawLookup>,
    pub operation: CaseOperation,
    pub provider: Vec<Rule>,
    pub expect: Expect,
    /// A holdout (DESIGN §9.3): the drill reports it by its id and pass or
    /// fail only, never its script, answers or expectation.
    pub protected: bool,
}

impl Case {
    /// The case's status lookup with `{sim}` replaced by `base`, read by the
    /// wire format's own `status_lookup` parser (the one ingest uses).
    pub fn lookup_spec(&self, base: &str) -> Result<Option<LookupSpec>, Vec<LineError>> {
        self.lookup
            .as_ref()
            .map(|raw| lookup_spec(raw, base, 0))
            .transpose()
    }
}

/// Reads a `status_lookup` object, `{sim}` in its URL replaced by `base`. The
/// drill asks only its simulated provider: a URL that does not start with
/// `{sim}` followed by a path or query, or that leads anywhere but `base`'s
/// origin once filled, is refused — a case file never points a lookup elsewhere.
fn lookup_spec(raw: &RawLookup, base: &str, line: usize) -> Result<LookupSpec, Vec<LineError>> {
    let mut raw = raw.clone();
    let refused = || {
        vec![error(
            line,
            "contract.status_lookup.url",
            format!(
                "must start with {SIM_PLACEHOLDER} followed by a path or query: the drill calls only its simulated provider, never a case's own host"
            ),
        )]
    };
    match raw.get_mut("url") {
        Some(Value::String(url)) => {
            let rest = url.strip_prefix(SIM_PLACEHOLDER).ok_or_else(refused)?;
            if !(rest.is_empty() || rest.starts_with(['/', '?'])) || rest.contains(SIM_PLACEHOLDER)
            {
                return Err(refused());
            }
            *url = format!("{base}{rest}");
        }
        _ => return Err(refused()),
    }
    let record = serde_json::json!({
        "type": "contract", "tool": "lookup", "version": "-", "action": "-", "method": "GET",
        "idempotency": {"supported": false}, "status_lookup": raw, "owner": "-",
        "max_attempts": 1, "budget_seconds": 1,
    });
    let relabel = |errors: Vec<LineError>| -> Vec<LineError> {
        errors
            .into_iter()
            .map(|e| LineError {
                field: format!("contract.{}", e.field),
                ..e
            })
            .collect()
    };
    match parse_line(record.to_string().as_bytes(), line) {
        Ok(Record::Contract(contract))
            if contract.status_lookup.spec().is_some_and(|s| {
                s.url.origin().map(|u| u.origin()) != url::Url::parse(base).ok().map(|u| u.origin())
            }) =>
        {
            Err(refused())
        }
        Ok(Record::Contract(contract)) => contract.status_lookup.spec().cloned().ok_or_else(|| {
            vec![error(
                line,
                "contract.status_lookup",
                "must be a lookup object",
            )]
        }),
        Ok(_) => Err(vec![error(
            line,
            "contract.status_lookup",
            "not a lookup object",
        )]),
        Err(errors) => Err(relabel(errors)),
    }
}

/// The operation a case executes, and how it reaches the executor.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseOperation {
    #[serde(default = "default_risk")]
    pub risk: String,
    #[serde(default)]
    pub idempotency_key: Option<String>,
    #[serde(default)]
    pub business_key: Option<String>,
    /// Batch items (0: a single write).
    #[serde(default)]
    pub items: u32,
    #[serde(default = "default_tenant")]
    pub tenant: String,
    /// The target; by default `record:<case id>`.
    #[serde(default)]
    pub target: Option<String>,
    /// The business payload sent (its hash is the operation's payload hash).
    #[serde(default = "default_payload")]
    pub payload: Value,
    /// Payload fields the local schema requires; a missing one is rejected before
    /// any network attempt.
    #[serde(default)]
    pub required: Vec<String>,
    /// The record version the write must produce (freshness check).
    #[serde(default = "one")]
    pub version: u64,
    /// How many dependent operations wait on this one (each must stay unsent while
    /// it is held).
    #[serde(default)]
    pub dependents: u32,
    /// How many executors receive the operation at the same instant (locking).
    #[serde(default = "one_u32")]
    pub concurrent: u32,
    /// Later deliveries of the same intent or of its key.
    #[serde(default)]
    pub deliveries: Vec<Delivery>,
    /// What the owner approves when the operation ends PARTIAL.
    #[serde(default)]
    pub recovery: Option<Recovery>,
}

fn default_risk() -> String {
    "medium".to_owned()
}

fn default_tenant() -> String {
    "pinehaven".to_owned()
}

fn default_payload() -> Value {
    serde_json::json!({"amount": 100, "currency": "EUR"})
}

fn one() -> u64 {
    1
}

fn one_u32() -> u32 {
    1
}

/// A later delivery: the same operation again, or a new operation reusing its key.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Delivery {
    /// `same` (the same operation id, redelivered), `conflict` (a new operation
    /// with the same key and another payload), `replay` (a new operation with the
    /// same key, business key and payload).
    pub kind: DeliveryKind,
    /// The layer that delivered it (`queue`, `gateway`, `agent`, …).
    #[serde(default = "default_layer")]
    pub layer: String,
    /// Seconds after the previous delivery.
    #[serde(default)]
    pub after_seconds: u64,
}

fn default_layer() -> String {
    "queue".to_owned()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryKind {
    Same,
    Conflict,
    Replay,
}

/// The owner's recovery decision for a PARTIAL outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Recovery {
    /// Resume only the items that did not commit.
    Resume,
    /// Compensate the committed items through the contract's inverse operation.
    Compensate,
}

/// What the provider does on the `n`th request, status query or batch item.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    pub on: On,
    pub n: u32,
    /// Whether the request's effect is applied before responding.
    #[serde(default)]
    pub commit: bool,
    pub respond: Respond,
    /// For `item` rules: only in this request (1-based); any request when absent.
    #[serde(default)]
    pub request: Option<u32>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum On {
    Request,
    Status,
    Item,
}

/// The provider's answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Respond {
    Word(Word),
    Answer(Answer),
}

/// The answers named by a word.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Word {
    /// Close the connection without answering (before reading the request when
    /// nothing is committed: the request never reached the provider).
    Drop,
    /// The committed record as a status body (404 when there is none).
    Record,
    /// Answer only after the client's timeout.
    Hang,
    /// The name lookup fails: the request never leaves the client.
    DnsFailure,
}

/// An explicit HTTP answer.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    pub status: u16,
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A JSON body, or a string sent verbatim (a truncated body, say).
    #[serde(default)]
    pub body: Option<Value>,
    /// Send the committed record with these fields replaced (a wrong tenant, a
    /// stale version, an instruction in a note).
    #[serde(default)]
    pub record: Option<RawLookup>,
}

/// What the case expects, counted at the provider. Every figure is optional:
/// only those given are checked.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    #[serde(default)]
    pub state: Option<State>,
    #[serde(default)]
    pub requests: Option<u32>,
    #[serde(default)]
    pub status_queries: Option<u32>,
    #[serde(default)]
    pub effects: Option<u32>,
    #[serde(default)]
    pub retried_before_reconcile: Option<bool>,
    /// Requests the provider could not route (no route at that method and path).
    #[serde(default)]
    pub unrouted: Option<u32>,
    /// Distinct identities seen on credentials (no substitution: 1).
    #[serde(default)]
    pub identities: Option<u32>,
    /// Requests the dependents made (stopped: 0).
    #[serde(default)]
    pub dependent_requests: Option<u32>,
    /// The largest number of times any one batch item was applied (1: committed
    /// items never replayed).
    #[serde(default)]
    pub max_item_effects: Option<u32>,
    /// The final state of a recovery child (a failed compensation: not SUCCEEDED).
    #[serde(default)]
    pub recovery_state: Option<State>,
    /// The final state of the operation behind each later delivery, in order.
    #[serde(default)]
    pub deliveries: Option<Vec<State>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    #[serde(rename = "type")]
    kind: String,
    id: String,
    mode: String,
    name: String,
    #[serde(default)]
    note: Option<String>,
    contract: RawLookup,
    operation: CaseOperation,
    #[serde(default)]
    provider: Vec<Rule>,
    #[serde(default)]
    expect: Expect,
    #[serde(default)]
    protected: bool,
}

/// The sections of a case line, for naming the field at fault.
const SECTIONS: &[&str] = &[
    "type",
    "id",
    "mode",
    "name",
    "note",
    "contract",
    "operation",
    "provider",
    "expect",
    "protected",
];

fn error(line: usize, field: impl Into<String>, reason: impl Into<String>) -> LineError {
    LineError {
        line,
        field: field.into(),
        reason: reason.into(),
    }
}

/// Names the field a serde error is about: the section, and the array index for
/// the provider script.
fn locate(line: usize, text: &str, whole: serde_json::Error) -> LineError {
    let Ok(Value::Object(map)) = serde_json::from_str::<Value>(text) else {
        return error(line, "-", format!("not a JSON object: {whole}"));
    };
    for key in map.keys() {
        if !SECTIONS.contains(&key.as_str()) {
            return error(
                line,
                key.clone(),
                format!("unknown field; expected one of {}", SECTIONS.join(", ")),
            );
        }
    }
    let check = |field: &str, value: &Value| -> Option<LineError> {
        let result = match field {
            "operation" => serde_json::from_value::<CaseOperation>(value.clone()).err(),
            "expect" => serde_json::from_value::<Expect>(value.clone()).err(),
            "contract" => serde_json::from_value::<RawLookup>(value.clone()).err(),
            _ => None,
        };
        result.map(|e| error(line, field, e.to_string()))
    };
    for (key, value) in &map {
        if key == "provider" {
            let Value::Array(rules) = value else {
                return error(line, "provider", "must be an array of rules");
            };
            for (index, rule) in rules.iter().enumerate() {
                if let Err(e) = serde_json::from_value::<Rule>(rule.clone()) {
                    return error(line, format!("provider[{index}]"), e.to_string());
                }
            }
        } else if let Some(found) = check(key, value) {
            return found;
        }
    }
    let reason = whole.to_string();
    let field = SECTIONS
        .iter()
        .find(|s| reason.contains(&format!("`{s}`")))
        .map_or("-", |s| s);
    error(line, field, reason)
}

/// Refuses counts past the case file's bounds (docs/security.md, "Bounded inputs"): each
/// of them is memory, tasks or connections the drill would spend.
fn check_bounds(raw: &RawCase, line: usize, errors: &mut Vec<LineError>) {
    use crate::bounded::{
        MAX_CASE_AFTER_SECONDS, MAX_CASE_CONCURRENT, MAX_CASE_DELIVERIES, MAX_CASE_DEPENDENTS,
        MAX_CASE_ITEMS, MAX_CASE_RULES,
    };
    let op = &raw.operation;
    let mut over = |field: String, value: u64, limit: u64| {
        if value > limit {
            errors.push(error(
                line,
                field,
                format!("{value} is more than the limit of {limit}"),
            ));
        }
    };
    over(
        "operation.items".into(),
        op.items.into(),
        MAX_CASE_ITEMS.into(),
    );
    over(
        "operation.dependents".into(),
        op.dependents.into(),
        MAX_CASE_DEPENDENTS.into(),
    );
    over(
        "operation.concurrent".into(),
        op.concurrent.into(),
        MAX_CASE_CONCURRENT.into(),
    );
    over(
        "operation.deliveries".into(),
        op.deliveries.len() as u64,
        MAX_CASE_DELIVERIES as u64,
    );
    for (index, delivery) in op.deliveries.iter().enumerate() {
        over(
            format!("operation.deliveries[{index}].after_seconds"),
            delivery.after_seconds,
            MAX_CASE_AFTER_SECONDS,
        );
    }
    over(
        "provider".into(),
        raw.provider.len() as u64,
        MAX_CASE_RULES as u64,
    );
}

/// Parses one case line.
pub fn parse_case(text: &str, line: usize) -> Result<Case, Vec<LineError>> {
    let raw: RawCase = serde_json::from_str(text).map_err(|e| vec![locate(line, text, e)])?;
    let mut errors = Vec::new();
    if raw.kind != "case" {
        errors.push(error(
            line,
            "type",
            format!("`{}`: expected `case`", raw.kind),
        ));
    }
    if raw.id.trim().is_empty() || raw.id.len() > 40 || raw.id.contains(char::is_whitespace) {
        errors.push(error(line, "id", "1–40 characters without spaces"));
    }
    let mode = FailureMode::parse(&raw.mode);
    if mode.is_none() {
        errors.push(error(
            line,
            "mode",
            format!(
                "`{}`: expected one of {}",
                raw.mode,
                FailureMode::expected()
            ),
        ));
    }
    if crate::core::model::Risk::parse(&raw.operation.risk).is_none() {
        errors.push(error(
            line,
            "operation.risk",
            format!("expected one of {}", crate::core::model::Risk::expected()),
        ));
    }
    if !raw.operation.payload.is_object() {
        errors.push(error(line, "operation.payload", "must be a JSON object"));
    }
    if raw.operation.concurrent == 0 {
        errors.push(error(line, "operation.concurrent", "at least 1"));
    }
    check_bounds(&raw, line, &mut errors);
    for (index, rule) in raw.provider.iter().enumerate() {
        if rule.n == 0 {
            errors.push(error(line, format!("provider[{index}].n"), "counts from 1"));
        }
        if rule.request.is_some() && rule.on != On::Item {
            errors.push(error(
                line,
                format!("provider[{index}].request"),
                "only `item` rules name a request",
            ));
        }
        if matches!(rule.respond, Respond::Word(Word::DnsFailure)) && rule.on == On::Item {
            errors.push(error(
                line,
                format!("provider[{index}].respond"),
                "an item cannot fail name resolution",
            ));
        }
    }
    let (contract, lookup) = match read_contract(&raw.contract, line) {
        Ok(found) => found,
        Err(mut more) => {
            errors.append(&mut more);
            return Err(errors);
        }
    };
    let budget_limit = crate::bounded::MAX_CASE_BUDGET_SECONDS;
    if contract.budget_seconds > budget_limit {
        errors.push(error(
            line,
            "contract.budget_seconds",
            format!(
                "{} is more than the limit of {budget_limit} (the drill's deadline is now plus the budget)",
                contract.budget_seconds
            ),
        ));
    }
    match mode {
        Some(mode) if errors.is_empty() => Ok(Case {
            id: raw.id,
            mode,
            name: raw.name,
            note: raw.note,
            contract,
            lookup,
            operation: raw.operation,
            provider: raw.provider,
            expect: raw.expect,
            protected: raw.protected,
        }),
        _ => Err(errors),
    }
}

/// Reads the case's contract as a wire-format contract record (the same parser as
/// ingest), taking a `status_lookup` object apart first.
fn read_contract(
    map: &RawLookup,
    line: usize,
) -> Result<(Contract, Option<RawLookup>), Vec<LineError>> {
    let mut record = serde_json::Map::new();
    record.insert("type".into(), Value::String("contract".into()));
    let mut lookup = None;
    for (key, value) in map {
        if key == "type" {
            continue;
        }
        if key == "status_lookup"
            && let Value::Object(raw) = value
        {
            // Checked now, as the simulated provider's URL will make it.
            lookup_spec(raw, "http://127.0.0.1:1/cases/check", line)?;
            lookup = Some(raw.clone());
            record.insert(key.clone(), Value::Bool(true));
            continue;
        }
        record.insert(key.clone(), value.clone());
    }
    let text = Value::Object(record).to_string();
    match parse_line(text.as_bytes(), line) {
        Ok(Record::Contract(contract)) => Ok((contract, lookup)),
        Ok(other) => Err(vec![error(
            line,
            "contract",
            format!("read as a {} record", other.type_name()),
        )]),
        Err(errors) => Err(errors
            .into_iter()
            .map(|e| LineError {
                field: format!("contract.{}", e.field),
                ..e
            })
            .collect()),
    }
}

/// Parses a whole case file; every bad line is reported, and nothing is returned
/// unless every line is good. Blank lines are skipped.
pub fn parse_cases(text: &str) -> Result<Vec<Case>, Vec<LineError>> {
    let mut cases = Vec::new();
    let mut errors = Vec::new();
    use crate::bounded::{CASE_LINE_BYTES, MAX_CASES};
    let mut seen = 0usize;
    for (index, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if line.len() > CASE_LINE_BYTES {
            errors.push(error(
                index + 1,
                "-",
                format!(
                    "line is {} bytes long; at most {CASE_LINE_BYTES} bytes (256 KiB) are allowed",
                    line.len()
                ),
            ));
            continue;
        }
        seen += 1;
        if seen > MAX_CASES {
            errors.push(error(
                index + 1,
                "-",
                format!("more than {MAX_CASES} cases; a case file holds at most {MAX_CASES}"),
            ));
            break;
        }
        match parse_case(line, index + 1) {
            Ok(case) => {
                if cases.iter().any(|c: &Case| c.id == case.id) {
                    errors.push(error(
                        index + 1,
                        "id",
                        format!("case {} appears twice", case.id),
                    ));
                } else {
                    cases.push(case);
                }
            }
            Err(mut more) => errors.append(&mut more),
        }
    }
    if errors.is_empty() {
        Ok(cases)
    } else {
        Err(errors)
    }
}
