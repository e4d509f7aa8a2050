//! The reviewer commands: `review` on one operation or, with `--filter`, bulk
//! triage with its dry run; `grant`, `revoke` and `grants`; and `export`. Each one
//! parses its arguments into core types and calls [`crate::review`], which asks
//! [`crate::core::rules::decide`]; nothing here re-implements a rule.

use anyhow::Context as _;
use chrono::{DateTime, Utc};
use clap::{Args, ValueEnum};
use std::io::Write as _;
use std::path::PathBuf;

use crate::cli::{Context, Failure, exit, parse_id, render};
use crate::core::access::{self, GrantOp, GrantRequest};
use crate::core::cause::RootCause;
use crate::core::clock::TimeSpec;
use crate::core::ids::{OperationId, Sha256};
use crate::core::model::{Matches, ObservationSource, Role, State};
use crate::core::rules::catalog::{self, Param, Params};
use crate::core::rules::{Action, ActionKind, FoundField, Rationale, ReconcileInput};
use crate::core::triage::TriageLine;
use crate::review::{self as service, ReviewError};
use crate::store::OperationFilter;
use crate::wire::Record;

/// `holdfast review`.
#[derive(Debug, Args)]
pub(crate) struct ReviewArgs {
    /// `ID ACTION`, or only `ACTION` with `--filter`. ACTION is one of: reconcile,
    /// resolve, authorize-retry, approve-compensation, approve-resume,
    /// mark-compensated, mark-resumed, revalidate, approve, accept, block, assign,
    /// schedule, comment, classify, confirm, reject.
    #[arg(value_name = "ID ACTION", num_args = 1..=2, required = true)]
    pub words: Vec<String>,
    /// Why (at least 10 characters); recorded on the audit row. Required unless
    /// `--dry-run`.
    #[arg(long, value_name = "TEXT")]
    pub rationale: Option<String>,
    /// Act on every operation matching this filter (`state:UNKNOWN mode:timeout_unknown
    /// risk:high tenant:T owner:O`); without a `state:` term, on the held queue.
    #[arg(long, value_name = "FILTER")]
    pub filter: Option<String>,
    /// Show the exact effect (or, with `--filter`, the triage split) and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// `resolve`: the state to resolve to (SUCCEEDED, FAILED, PARTIAL).
    #[arg(long, value_name = "STATE")]
    pub to: Option<String>,
    /// `assign`: the new owner.
    #[arg(long, value_name = "OWNER")]
    pub owner: Option<String>,
    /// `schedule`: when to observe next (RFC 3339, or relative to now: `+30m`).
    #[arg(long, value_name = "TIME", value_parser = TimeSpec::parse, allow_hyphen_values = true)]
    pub at: Option<TimeSpec>,
    /// `accept`: the manual-repair reference (ticket, runbook).
    #[arg(long, value_name = "REF")]
    pub repair_ref: Option<String>,
    /// `classify`: the root-cause layer (model_selection, argument_generation,
    /// authorization, integration, provider, parser, queue, policy, reviewer).
    #[arg(long, value_name = "LAYER")]
    pub layer: Option<String>,
    /// `reconcile`: make the lookup the contract's `status_lookup` describes now,
    /// and record its attempt and observation.
    #[arg(long)]
    pub lookup: bool,
    /// `reconcile`: wire-format observation line(s) for this operation, one reconcile each.
    #[arg(long, value_name = "FILE")]
    pub observation: Option<PathBuf>,
    /// `reconcile`: the lookup found the effect.
    #[arg(long, conflicts_with = "not_found")]
    pub found: bool,
    /// `reconcile`: the lookup did not find it.
    #[arg(long)]
    pub not_found: bool,
    /// `reconcile`: where the lookup was made (default provider_status; also
    /// business_key, downstream, validator, target_record).
    #[arg(long, value_name = "SOURCE", value_parser = ObservationSource::parse_hinted)]
    pub source: Option<ObservationSource>,
    /// `reconcile`: fields that matched the intent (target, payload_hash, owner,
    /// version, or `all`); comma-separated or repeated.
    #[arg(long = "match", value_name = "FIELDS", value_delimiter = ',')]
    pub matched: Vec<String>,
    /// `reconcile`: fields that did not match.
    #[arg(long = "mismatch", value_name = "FIELDS", value_delimiter = ',')]
    pub mismatched: Vec<String>,
    /// `reconcile`: how many effects the lookup found.
    #[arg(long, value_name = "N")]
    pub effect_count: Option<u32>,
    /// `reconcile --found`: fields the lookup did not show, recorded as unknown
    /// (target, payload_hash, owner, version, effect_count); the observation is
    /// then incomplete evidence. Comma-separated or repeated.
    #[arg(long, value_name = "FIELDS", value_delimiter = ',')]
    pub unknown: Vec<String>,
    /// `reconcile`: the provider's request id the lookup showed.
    #[arg(long, value_name = "ID")]
    pub provider_request_id: Option<String>,
    /// `reconcile`: where you looked (a ticket, console URL or query id).
    #[arg(long, value_name = "REF")]
    pub reference: Option<String>,
    /// `reconcile`: hash of the raw lookup response (`sha256:…`).
    #[arg(long, value_name = "HASH")]
    pub raw_hash: Option<String>,
    /// Refuse (G8) unless the operation is still at this version, as shown by `show`.
    #[arg(long, value_name = "N")]
    pub expected_version: Option<i64>,
    /// Print JSON instead of text, for scripts.
    #[arg(long)]
    pub json: bool,
}

/// `holdfast grant` and `holdfast revoke`.
#[derive(Debug, Args)]
pub(crate) struct GrantArgs {
    /// The identity (as given by `--as`, the config file or the OS user; on
    /// PostgreSQL, the database login).
    #[arg(value_parser = access::parse_name)]
    pub identity: String,
    /// viewer, reviewer, approver, owner, or delegate (the login may act for others
    /// on the tenant: on PostgreSQL, `--as NAME` acts with NAME's grants there).
    #[arg(long, value_parser = parse_role)]
    pub role: Role,
    #[arg(long, value_parser = access::parse_name)]
    pub tenant: String,
    /// Why; recorded on the audit row.
    #[arg(long, value_name = "TEXT")]
    pub rationale: Option<String>,
    /// Print JSON instead of text, for scripts.
    #[arg(long)]
    pub json: bool,
}

/// What an export to a file reports on stderr.
fn wrote(path: &std::path::Path, bundles: usize, hash: &Sha256) {
    eprintln!(
        "wrote {bundles} bundle{} to {}; content hash {hash}",
        if bundles == 1 { "" } else { "s" },
        path.display(),
    );
}

/// `holdfast export --filter`: written as the selection is read, a page at a
/// time. A file is written beside its destination and renamed into place only
/// when whole, so a failed export leaves nothing half-written behind.
async fn export_filtered(
    session: &crate::store::Session,
    filter: &OperationFilter,
    args: &ExportArgs,
    now: DateTime<Utc>,
) -> anyhow::Result<u8> {
    let form = match args.format {
        ExportFormat::Json => service::ExportForm::Json,
        ExportFormat::Markdown => service::ExportForm::Markdown,
    };
    let reviewed = |e: anyhow::Error| match e.downcast::<ReviewError>() {
        Ok(e) => failure(e),
        Err(e) => e,
    };
    match &args.out {
        Some(path) => {
            let mut partial = path.as_os_str().to_owned();
            partial.push(".partial");
            let partial = PathBuf::from(partial);
            let written = async {
                let file = std::fs::File::create(&partial)
                    .with_context(|| format!("cannot write {}", partial.display()))?;
                let mut out = std::io::BufWriter::new(file);
                let done = service::export_in_pages(
                    session,
                    filter,
                    service::SELECT_PAGE,
                    form,
                    now,
                    &mut out,
                )
                .await
                .map_err(reviewed)?;
                out.into_inner()
                    .map_err(|e| e.into_error())
                    .and_then(|f| f.sync_all())
                    .with_context(|| format!("cannot write {}", partial.display()))?;
                std::fs::rename(&partial, path)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                anyhow::Ok(done)
            }
            .await;
            let (document, n) = written.inspect_err(|_| {
                let _ = std::fs::remove_file(&partial);
            })?;
            super::warn_skipped(session);
            wrote(path, n, &document.content_hash);
        }
        None => {
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            service::export_in_pages(session, filter, service::SELECT_PAGE, form, now, &mut out)
                .await
                .map_err(reviewed)?;
            out.flush()?;
            super::warn_skipped(session);
        }
    }
    Ok(exit::OK)
}

/// `holdfast export`.
#[derive(Debug, Args)]
pub(crate) struct ExportArgs {
    /// The operations to export.
    #[arg(value_name = "ID")]
    pub ids: Vec<String>,
    /// Export every operation matching this filter instead (without a `state:`
    /// term, the held queue).
    #[arg(long, value_name = "FILTER", conflicts_with = "ids")]
    pub filter: Option<String>,
    #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
    pub format: ExportFormat,
    /// Write to this file instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExportFormat {
    Json,
    Markdown,
}

fn parse_role(text: &str) -> Result<Role, String> {
    Role::parse(text)
        .filter(|r| access::GRANTABLE.contains(r))
        .ok_or_else(|| {
            let names: Vec<&str> = access::GRANTABLE.iter().map(|r| r.as_str()).collect();
            format!("one of {}", names.join(", "))
        })
}

/// Turns a reviewer-facing error into the exit code it documents: 3 for a
/// refusal or a G8 conflict, 1 for anything else.
pub(crate) fn failure(error: ReviewError) -> anyhow::Error {
    let code = if matches!(
        error,
        ReviewError::Store(crate::store::StoreError::ChainBroken(_))
    ) {
        exit::INTEGRITY
    } else if error.rule().is_some() {
        exit::REFUSED
    } else {
        exit::ERROR
    };
    Failure::new(code, render::clean(&error.to_string())).into()
}

/// The rationale, required for anything that writes.
fn rationale(args: &ReviewArgs) -> anyhow::Result<Rationale> {
    match (&args.rationale, args.dry_run) {
        (Some(text), _) => {
            Rationale::parse(text).map_err(|e| Failure::bad_input(format!("--rationale: {e}")))
        }
        (None, true) => {
            Ok(Rationale::parse("dry run: nothing is written").map_err(anyhow::Error::msg)?)
        }
        (None, false) => Err(Failure::bad_input(
            "--rationale TEXT is required: say why (at least 10 characters)",
        )),
    }
}

/// Every flag that belongs to one action only, with whether it was given. The
/// action each belongs to is the one whose parameters name it in the catalog.
fn given(args: &ReviewArgs) -> [(&'static str, bool); 17] {
    [
        ("--to", args.to.is_some()),
        ("--owner", args.owner.is_some()),
        ("--at", args.at.is_some()),
        ("--repair-ref", args.repair_ref.is_some()),
        ("--layer", args.layer.is_some()),
        ("--lookup", args.lookup),
        ("--observation", args.observation.is_some()),
        ("--found", args.found),
        ("--not-found", args.not_found),
        ("--source", args.source.is_some()),
        ("--match", !args.matched.is_empty()),
        ("--mismatch", !args.mismatched.is_empty()),
        ("--effect-count", args.effect_count.is_some()),
        ("--unknown", !args.unknown.is_empty()),
        ("--provider-request-id", args.provider_request_id.is_some()),
        ("--reference", args.reference.is_some()),
        ("--raw-hash", args.raw_hash.is_some()),
    ]
}

/// The flags given that belong to one action only, with that action.
fn action_flags(args: &ReviewArgs) -> Vec<(&'static str, ActionKind)> {
    given(args)
        .into_iter()
        .filter(|(_, on)| *on)
        .filter_map(|(flag, _)| Some((flag, catalog::flag_owner(flag)?)))
        .collect()
}

/// Per-field matches from `--match` and `--mismatch`.
fn matches(args: &ReviewArgs) -> anyhow::Result<Option<Matches>> {
    if args.matched.is_empty() && args.mismatched.is_empty() {
        return Ok(None);
    }
    let mut m = Matches::default();
    for (names, value) in [(&args.matched, true), (&args.mismatched, false)] {
        for name in names.iter().map(|n| n.trim()) {
            let slots: Vec<&mut Option<bool>> = match name {
                "target" => vec![&mut m.target],
                "payload_hash" => vec![&mut m.payload_hash],
                "owner" => vec![&mut m.owner],
                "version" => vec![&mut m.version],
                "all" => vec![
                    &mut m.target,
                    &mut m.payload_hash,
                    &mut m.owner,
                    &mut m.version,
                ],
                other => {
                    return Err(Failure::bad_input(format!(
                        "--match/--mismatch {other}: fields are target, payload_hash, owner, version or all"
                    )));
                }
            };
            for slot in slots {
                if slot.is_some_and(|v| v != value) {
                    return Err(Failure::bad_input(format!(
                        "field {name} is given both as a match and as a mismatch"
                    )));
                }
                *slot = Some(value);
            }
        }
    }
    Ok(Some(m))
}

/// The fields `--unknown` names.
fn unknown_fields(args: &ReviewArgs) -> anyhow::Result<Vec<FoundField>> {
    let mut fields = Vec::new();
    for name in args.unknown.iter().map(|n| n.trim()) {
        let field = FoundField::parse(name).ok_or_else(|| {
            Failure::bad_input(format!(
                "--unknown {name}: fields are {}",
                FoundField::list(&FoundField::ALL)
            ))
        })?;
        if !fields.contains(&field) {
            fields.push(field);
        }
    }
    Ok(fields)
}

/// `input` when every field a found answer needs is given or recorded as
/// unknown, and only such fields are recorded as unknown; else what to add.
fn declared(input: ReconcileInput) -> anyhow::Result<ReconcileInput> {
    if !input.found && !input.unknown.is_empty() {
        return Err(Failure::bad_input(
            "--unknown names fields of a found answer; --not-found has none",
        ));
    }
    let not_given = input.not_given();
    if let Some(given) = input.unknown.iter().find(|f| !not_given.contains(f)) {
        return Err(Failure::bad_input(format!(
            "--unknown {}: the field is given (or not compared for this source); record as unknown only what the lookup did not show",
            given.as_str()
        )));
    }
    let undeclared = input.undeclared();
    if !undeclared.is_empty() {
        let list = FoundField::list(&undeclared);
        return Err(Failure::bad_input(format!(
            "--found needs what the lookup showed for every field: {list} not given. Give them (--match/--mismatch FIELDS, --effect-count N), or record them as unknown with --unknown {}; an unknown field leaves the observation incomplete evidence",
            list.replace(", ", ",")
        )));
    }
    Ok(input)
}

/// The reconcile inputs: one per observation line of `--observation`, or one from
/// the flags.
fn reconcile_inputs(
    args: &ReviewArgs,
    id: Option<&OperationId>,
) -> anyhow::Result<Vec<ReconcileInput>> {
    if args.lookup {
        return Err(Failure::bad_input(
            "--lookup makes the lookup itself: give it alone with --rationale",
        ));
    }
    let Some(path) = &args.observation else {
        if args.found == args.not_found {
            return Err(Failure::bad_input(
                "reconcile needs what the lookup showed: --found or --not-found (or --observation FILE)",
            ));
        }
        let raw_hash = args
            .raw_hash
            .as_deref()
            .map(|h| {
                Sha256::parse(h).map_err(|e| Failure::bad_input(format!("--raw-hash {h}: {e}")))
            })
            .transpose()?;
        let input = ReconcileInput {
            source: args.source.unwrap_or(ObservationSource::ProviderStatus),
            found: args.found,
            matches: matches(args)?,
            effect_count: args.effect_count,
            provider_request_id: args.provider_request_id.clone(),
            reference: args.reference.clone(),
            raw_hash,
            unknown: unknown_fields(args)?,
            id: None,
            observed_at: None,
        };
        return Ok(vec![declared(input)?]);
    };
    if let Some((flag, _)) = action_flags(args)
        .into_iter()
        .find(|(flag, _)| *flag != "--observation")
    {
        return Err(Failure::bad_input(format!(
            "{flag} and --observation exclude each other: the file says what the lookup showed"
        )));
    }
    let parsed = crate::bounded::read_records(path, "observation file").map_err(|e| match e {
        crate::bounded::BoundError::Read { .. } => anyhow::anyhow!("{e}"),
        other => Failure::bad_input(other.to_string()),
    })?;
    if !parsed.errors.is_empty() {
        let lines: Vec<String> = parsed
            .errors
            .iter()
            .map(|e| render::clean(&e.to_string()))
            .collect();
        return Err(Failure::bad_input(format!(
            "observation file {}:\n{}",
            path.display(),
            lines.join("\n")
        )));
    }
    let mut inputs = Vec::new();
    for numbered in &parsed.records {
        let line = numbered.line;
        match &numbered.record {
            Record::Observation(o) if id.is_none_or(|id| &o.operation == id) => {
                inputs.push(ReconcileInput::from_observation(o));
            }
            Record::Observation(o) => {
                return Err(Failure::bad_input(format!(
                    "observation file line {line}: operation: names {}, not the operation under review",
                    render::clean(o.operation.as_str())
                )));
            }
            other => {
                return Err(Failure::bad_input(format!(
                    "observation file line {line}: type: a `{}` record; only observation lines belong here",
                    other.type_name()
                )));
            }
        }
    }
    if inputs.is_empty() {
        return Err(Failure::bad_input(format!(
            "observation file {} has no observation line",
            path.display()
        )));
    }
    Ok(inputs)
}

/// The action(s) the arguments describe; several only for an observation file with
/// several lines.
fn actions(
    kind: ActionKind,
    args: &ReviewArgs,
    id: Option<&OperationId>,
    now: DateTime<Utc>,
) -> anyhow::Result<Vec<Action>> {
    if let Some((flag, owner)) = action_flags(args).into_iter().find(|(_, k)| *k != kind) {
        return Err(Failure::bad_input(format!(
            "{flag} belongs to `{owner}`, not to `{kind}`"
        )));
    }
    let mut flags = Flags {
        kind,
        args,
        id,
        now,
        more: Vec::new(),
    };
    let first = catalog::action(kind, &mut flags)?;
    Ok(std::iter::once(first)
        .chain(flags.more.into_iter().map(Action::Reconcile))
        .collect())
}

/// The parameters of `kind` as the flags give them.
struct Flags<'a> {
    kind: ActionKind,
    args: &'a ReviewArgs,
    id: Option<&'a OperationId>,
    now: DateTime<Utc>,
    /// The reconcile inputs of an observation file after its first line.
    more: Vec<ReconcileInput>,
}

impl Flags<'_> {
    fn missing(&self, param: Param) -> anyhow::Error {
        Failure::bad_input(format!("`{}` needs {}", self.kind, param.usage()))
    }
}

impl Params for Flags<'_> {
    type Error = anyhow::Error;
    fn to(&mut self) -> anyhow::Result<State> {
        let text = self
            .args
            .to
            .as_deref()
            .ok_or_else(|| self.missing(Param::To))?;
        crate::core::rules::resolve_target(text)
            .map_err(|e| Failure::bad_input(format!("--to {text}: {e}")))
    }
    fn owner(&mut self) -> anyhow::Result<String> {
        self.args
            .owner
            .clone()
            .ok_or_else(|| self.missing(Param::Owner))
    }
    fn at(&mut self) -> anyhow::Result<DateTime<Utc>> {
        self.args
            .at
            .ok_or_else(|| self.missing(Param::At))?
            .resolve(self.now)
            .map_err(|e| Failure::bad_input(format!("--at: {e}")))
    }
    fn repair_ref(&mut self) -> anyhow::Result<String> {
        self.args
            .repair_ref
            .clone()
            .ok_or_else(|| self.missing(Param::RepairRef))
    }
    fn layer(&mut self) -> anyhow::Result<RootCause> {
        let text = self
            .args
            .layer
            .as_deref()
            .ok_or_else(|| self.missing(Param::Layer))?;
        RootCause::parse_hinted(text).map_err(|e| Failure::bad_input(format!("--layer: {e}")))
    }
    fn lookup(&mut self) -> anyhow::Result<ReconcileInput> {
        let mut inputs = reconcile_inputs(self.args, self.id)?.into_iter();
        let first = inputs
            .next()
            .ok_or_else(|| Failure::bad_input("reconcile needs what the lookup showed"))?;
        self.more = inputs.collect();
        Ok(first)
    }
}

fn parse_kind(text: &str) -> anyhow::Result<ActionKind> {
    ActionKind::parse(text).ok_or_else(|| {
        let names: Vec<&str> = ActionKind::ALL.iter().map(|k| k.as_str()).collect();
        let hint =
            ActionKind::nearest(text).map_or_else(String::new, |k| format!(" did you mean `{k}`?"));
        Failure::bad_input(format!(
            "unknown action {text:?}:{hint} one of {}",
            names.join(", ")
        ))
    })
}

/// Prints a refusal or conflict on stderr (and as JSON on stdout with `--json`)
/// and gives its exit code; any other error is returned.
/// Prints the JSON answer of a grant or level change: whether it changed
/// anything, what was asked (`asked`'s fields), then the change's consequences
/// and audit row, both `null` when nothing changed.
pub(crate) fn print_change(
    asked: serde_json::Value,
    changed: Option<(&[String], &crate::core::audit::AuditRow)>,
) {
    let mut doc = serde_json::Map::new();
    doc.insert("changed".into(), changed.is_some().into());
    if let serde_json::Value::Object(fields) = asked {
        doc.extend(fields);
    }
    doc.insert(
        "consequences".into(),
        serde_json::json!(changed.map(|(c, _)| c)),
    );
    doc.insert(
        "audit".into(),
        serde_json::json!(changed.map(|(_, row)| row)),
    );
    println!("{}", serde_json::Value::Object(doc));
}

pub(crate) fn report_refusal(error: ReviewError, json: bool) -> anyhow::Result<u8> {
    let Some(rule) = error.rule() else {
        return Err(failure(error));
    };
    let text = render::clean(&error.to_string());
    if json {
        println!(
            "{}",
            serde_json::json!({"applied": false, "refused": {"rule": rule, "message": text}})
        );
    }
    eprintln!("{text}");
    Ok(exit::REFUSED)
}

/// `holdfast review`.
pub(crate) async fn review(ctx: &Context, args: ReviewArgs) -> anyhow::Result<u8> {
    match (args.filter.clone(), args.words.as_slice()) {
        (Some(filter), [action]) => bulk(ctx, &filter, parse_kind(action)?, &args).await,
        (Some(_), _) => Err(Failure::bad_input(
            "with --filter give only the ACTION: `holdfast review --filter TEXT ACTION`",
        )),
        (None, [id, action]) => one(ctx, parse_id(id)?, parse_kind(action)?, &args).await,
        (None, _) => Err(Failure::bad_input(
            "give the operation and the action: `holdfast review ID ACTION --rationale TEXT`",
        )),
    }
}

async fn one(
    ctx: &Context,
    id: OperationId,
    kind: ActionKind,
    args: &ReviewArgs,
) -> anyhow::Result<u8> {
    if kind == ActionKind::Reconcile && args.lookup {
        return lookup(ctx, &id, args).await;
    }
    let actions = actions(kind, args, Some(&id), ctx.now())?;
    let rationale = rationale(args)?;
    let session = ctx.session().await?;
    let now = ctx.now();
    for (n, action) in actions.iter().enumerate() {
        if args.dry_run {
            match service::preview(&session, &id, action, &rationale, now).await {
                Ok((_, effect)) => {
                    if args.json {
                        println!(
                            "{}",
                            serde_json::json!({"applied": false, "dry_run": true, "effect": effect})
                        );
                    } else {
                        print!("{}", render::effect(&effect, None));
                    }
                }
                Err(e) => return report_refusal(e, args.json),
            }
            continue;
        }
        let expected = if n == 0 { args.expected_version } else { None };
        match service::apply(&session, &id, action, &rationale, expected, now).await {
            Ok(applied) => {
                if args.json {
                    println!(
                        "{}",
                        serde_json::json!({"applied": true, "effect": applied.effect, "audit": applied.audit})
                    );
                } else {
                    print!("{}", render::effect(&applied.effect, Some(&applied.audit)));
                }
            }
            Err(e) => return report_refusal(e, args.json),
        }
    }
    Ok(exit::OK)
}

/// `review ID reconcile --lookup`: one lookup now, recorded as a reconcile.
async fn lookup(ctx: &Context, id: &OperationId, args: &ReviewArgs) -> anyhow::Result<u8> {
    if let Some((flag, _)) = action_flags(args)
        .into_iter()
        .find(|(flag, _)| *flag != "--lookup")
    {
        return Err(Failure::bad_input(format!(
            "{flag} and --lookup exclude each other: the lookup says what it showed"
        )));
    }
    if args.dry_run || args.expected_version.is_some() {
        return Err(Failure::bad_input(
            "--lookup asks the provider and records what it said; it has no dry run and checks the version it loads",
        ));
    }
    let rationale = rationale(args)?;
    let session = ctx.session().await?;
    let looker = crate::lookup::Looker::new(ctx.config.lookup.client())
        .map_err(|e| Failure::new(exit::ERROR, e.to_string()))?;
    let limiter = crate::lookup::RateLimiter::new(ctx.config.lookup.clone());
    let recorded = crate::lookup::look_up_paced(
        &session,
        &looker,
        Some(&limiter),
        &crate::lookup::EnvSecrets,
        ctx.clock,
        id,
        &rationale,
    )
    .await;
    match recorded {
        Ok(r) => {
            if args.json {
                println!(
                    "{}",
                    serde_json::json!({"applied": true, "lookup": r.call, "effect": r.applied.effect, "audit": r.applied.audit})
                );
            } else {
                print!(
                    "{}{}",
                    render::lookup(&r.call),
                    render::effect(&r.applied.effect, Some(&r.applied.audit))
                );
            }
            Ok(exit::OK)
        }
        Err(crate::lookup::LookupError::Review(e)) => report_refusal(e, args.json),
        Err(crate::lookup::LookupError::Impossible(e)) => {
            Err(Failure::new(exit::ERROR, render::clean(&e.to_string())).into())
        }
    }
}

/// A filter typed on the command line; without a state term it means the queue.
/// Its `owner:` names the routed owner at `now`, the command's clock.
fn selection_filter(text: &str, now: DateTime<Utc>) -> anyhow::Result<OperationFilter> {
    let filter = crate::store::filter::selection(text)
        .map_err(|e| Failure::bad_input(format!("--filter: {e}")))?;
    Ok(OperationFilter {
        now: Some(now),
        ..filter
    })
}

async fn bulk(
    ctx: &Context,
    filter_text: &str,
    kind: ActionKind,
    args: &ReviewArgs,
) -> anyhow::Result<u8> {
    if kind == ActionKind::Reconcile {
        return Err(Failure::bad_input(
            "reconcile records one lookup of one operation: run `holdfast review ID reconcile` for each",
        ));
    }
    if kind == ActionKind::Approve {
        return Err(Failure::bad_input(
            "approve approves one exact call whose arguments you read (G11): run `holdfast review ID approve` for each",
        ));
    }
    if args.expected_version.is_some() {
        return Err(Failure::bad_input(
            "--expected-version names one operation's version; bulk triage checks each against the selection it read",
        ));
    }
    let filter = selection_filter(filter_text, ctx.now())?;
    let action = actions(kind, args, None, ctx.now())?
        .pop()
        .ok_or_else(|| Failure::bad_input("no action"))?;
    let rationale = rationale(args)?;
    let session = ctx.session().await?;
    let now = ctx.now();
    let plan = service::triage_plan(&session, &filter, &action, &rationale, now)
        .await
        .map_err(failure)?;
    let described = crate::store::filter::describe(&filter);
    if args.dry_run {
        let lines: Vec<TriageLine> = plan.into_iter().map(|p| p.line).collect();
        if args.json {
            println!(
                "{}",
                serde_json::json!({"dry_run": true, "filter": described, "action": kind, "lines": lines})
            );
        } else {
            print!("{}", render::triage(&described, kind, &lines));
        }
        return Ok(exit::OK);
    }
    // Each operation is applied and written as it goes: the plan's lines are
    // all that is held, never the results or the details behind them.
    let mut out = std::io::stdout().lock();
    if args.json {
        let head = serde_json::json!({"filter": described, "action": kind}).to_string();
        write!(
            out,
            "{},\"results\":[",
            head.strip_suffix('}').unwrap_or(&head)
        )?;
    } else {
        write!(
            out,
            "{}",
            render::triage_applied_header(&described, kind, plan.len())
        )?;
    }
    let mut applied = 0;
    for (n, planned) in plan.iter().enumerate() {
        let result =
            service::triage_apply_planned(&session, planned, &action, &rationale, now).await;
        applied += usize::from(result.is_ok());
        let line = &planned.line;
        if args.json {
            let row = match &result {
                Ok(applied) => serde_json::json!({
                    "id": line.id, "bucket": line.bucket, "applied": true,
                    "effect": applied.effect, "audit": applied.audit
                }),
                Err(e) => serde_json::json!({
                    "id": line.id, "bucket": line.bucket, "applied": false,
                    "rule": e.rule(), "message": render::clean(&e.to_string())
                }),
            };
            write!(out, "{}{row}", if n == 0 { "" } else { "," })?;
        } else {
            write!(out, "{}", render::triage_applied_line(line, &result))?;
        }
    }
    if args.json {
        writeln!(out, "]}}")?;
    } else {
        write!(
            out,
            "{}",
            render::triage_applied_totals(applied, plan.len() - applied)
        )?;
    }
    Ok(if applied == plan.len() {
        exit::OK
    } else {
        exit::REFUSED
    })
}

/// `holdfast grant` and `holdfast revoke`.
pub(crate) async fn grant(ctx: &Context, op: GrantOp, args: GrantArgs) -> anyhow::Result<u8> {
    let rationale = args
        .rationale
        .as_deref()
        .map(|t| Rationale::parse(t).map_err(|e| Failure::bad_input(format!("--rationale: {e}"))))
        .transpose()?;
    let request = GrantRequest {
        op,
        identity: args.identity,
        role: args.role,
        tenant: args.tenant,
    };
    let session = ctx.session().await?;
    let by = crate::cli::own_name(session.actor(), "a grant change")?;
    let result = service::change_grant(
        &session,
        &by,
        ctx.config.policy.clone(),
        &request,
        rationale.as_ref(),
        ctx.now(),
    )
    .await;
    match result {
        Ok(changed) => {
            if args.json {
                print_change(
                    serde_json::json!({ "request": request }),
                    changed
                        .as_ref()
                        .map(|(c, row)| (c.consequences.as_slice(), row)),
                );
            } else {
                print!("{}", render::grant_change(&request, changed.as_ref()));
            }
            Ok(exit::OK)
        }
        Err(e) => report_refusal(e, args.json),
    }
}

/// `holdfast grants`: the grants on the tenants the acting identity sees.
pub(crate) async fn grants(ctx: &Context, json: bool) -> anyhow::Result<u8> {
    let session = ctx.session().await?;
    let actor = session.actor();
    let shown = session.grants().await?;
    let single_user = actor.single_user();
    if json {
        println!("{}", crate::cli::json::pretty(&shown)?);
    } else {
        print!(
            "{}{}",
            render::actor_header(actor),
            render::grants(&shown, single_user)
        );
    }
    Ok(exit::OK)
}

/// `holdfast export`.
pub(crate) async fn export(ctx: &Context, args: ExportArgs) -> anyhow::Result<u8> {
    let session = ctx.session().await?;
    let actor = session.actor();
    let now = ctx.now();
    if let Some(text) = &args.filter {
        return export_filtered(&session, &selection_filter(text, now)?, &args, now).await;
    }
    if args.ids.is_empty() {
        return Err(Failure::bad_input(
            "name the operations to export (`holdfast export ID…`) or select them with --filter",
        ));
    }
    let mut details = Vec::with_capacity(args.ids.len());
    for id in &args.ids {
        details.push(
            service::load(&session, &parse_id(id)?)
                .await
                .map_err(failure)?,
        );
    }
    super::warn_skipped(&session);
    let export = crate::core::export::build(&details, actor, now);
    let text = match args.format {
        ExportFormat::Json => format!("{}\n", crate::core::export::json(&export)),
        ExportFormat::Markdown => crate::core::export::markdown(&export),
    };
    match &args.out {
        Some(path) => {
            std::fs::write(path, &text)
                .with_context(|| format!("cannot write {}", path.display()))?;
            wrote(path, export.bundles.len(), &export.content_hash);
        }
        None => print!("{text}"),
    }
    Ok(exit::OK)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Command, FromArgMatches as _};

    fn review(words: &[&str]) -> ReviewArgs {
        let command = ReviewArgs::augment_args(Command::new("review"));
        let matches = command
            .try_get_matches_from(std::iter::once("review").chain(words.iter().copied()))
            .unwrap();
        ReviewArgs::from_arg_matches(&matches).unwrap()
    }

    #[test]
    fn every_flag_of_the_catalog_is_a_review_flag_read_for_its_action() {
        let command = ReviewArgs::augment_args(Command::new("review"));
        let catalog: Vec<(catalog::Flag, ActionKind)> = ActionKind::ALL
            .iter()
            .flat_map(|&kind| {
                catalog::spec(kind)
                    .params
                    .iter()
                    .flat_map(|p| p.flags())
                    .map(move |f| (*f, kind))
            })
            .collect();
        let mut read: Vec<&str> = given(&review(&["x", "comment"]))
            .iter()
            .map(|(flag, _)| *flag)
            .collect();
        let mut named: Vec<&str> = catalog.iter().map(|(f, _)| f.name).collect();
        read.sort_unstable();
        named.sort_unstable();
        assert_eq!(read, named, "the flags read = the flags of the catalog");
        for (flag, kind) in catalog {
            let long = flag.name.trim_start_matches("--");
            let arg = command
                .get_arguments()
                .find(|a| a.get_long() == Some(long))
                .unwrap_or_else(|| panic!("{} is not a flag of review", flag.name));
            let value = arg
                .get_action()
                .takes_values()
                .then(|| arg.get_value_names().and_then(|v| v.first()))
                .flatten()
                .map(|n| n.as_str());
            assert_eq!(value, flag.value, "{}", flag.name);
            let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
            assert!(help.contains(&format!("`{kind}")), "{}: {help}", flag.name);
        }
    }

    #[test]
    fn the_help_names_every_action_in_order() {
        let command = ReviewArgs::augment_args(Command::new("review"));
        let words = command
            .get_arguments()
            .find(|a| a.get_id() == "words")
            .and_then(|a| a.get_help())
            .map(|h| h.to_string())
            .unwrap_or_default();
        let names: Vec<&str> = ActionKind::ALL.iter().map(|k| k.as_str()).collect();
        assert!(
            words.ends_with(&format!("one of: {}", names.join(", "))),
            "{words}"
        );
    }

    #[test]
    fn a_flag_of_another_action_is_refused_and_a_missing_one_named() {
        let now = DateTime::<Utc>::UNIX_EPOCH;
        let args = review(&["x", "resolve", "--owner", "kim"]);
        let e = actions(ActionKind::Resolve, &args, None, now).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--owner belongs to `assign`, not to `resolve`"
        );
        let e = actions(ActionKind::Assign, &review(&["x", "assign"]), None, now).unwrap_err();
        assert_eq!(e.to_string(), "`assign` needs --owner OWNER");
        let args = review(&["x", "assign", "--owner", "kim"]);
        assert_eq!(
            actions(ActionKind::Assign, &args, None, now).unwrap(),
            [Action::Assign {
                owner: "kim".into()
            }]
        );
    }
}
