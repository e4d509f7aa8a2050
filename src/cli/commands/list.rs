//! `holdfast list`: one page of operations under a filter, as a table or JSON.

use crate::cli::{Context, Failure, ListArgs, SortArg, exit, parse_id, render};
use crate::core::model::{FailureMode, Risk, State};
use crate::store::{OperationFilter, Page, SortOrder, Start};

/// Parses repeated `--WHAT` values in any case; a near miss names the value meant.
fn parse_list<T: std::fmt::Display>(
    values: &[String],
    what: &str,
    parse: fn(&str) -> Option<T>,
    nearest: fn(&str) -> Option<T>,
    expected: String,
) -> anyhow::Result<Vec<T>> {
    values
        .iter()
        .map(|v| {
            parse(v).ok_or_else(|| {
                let hint = nearest(v).map_or_else(String::new, |n| format!("did you mean {n}? "));
                Failure::bad_input(format!("--{what} {v}: {hint}must be one of: {expected}"))
            })
        })
        .collect()
}

pub(crate) async fn list(ctx: &Context, args: ListArgs) -> anyhow::Result<u8> {
    let words: Vec<String> = args.state.iter().map(|s| s.to_ascii_lowercase()).collect();
    let (queue, states) = match words
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        [] | ["held"] => (true, Vec::new()),
        ["all"] => (false, Vec::new()),
        given if given.contains(&"all") => {
            return Err(Failure::bad_input(
                "--state all: all states already; give it alone or name the states",
            ));
        }
        _ => {
            // `held` beside other states stands for the held ones.
            let named: Vec<String> = args
                .state
                .iter()
                .filter(|s| !s.eq_ignore_ascii_case("held"))
                .cloned()
                .collect();
            let mut states = parse_list(
                &named,
                "state",
                State::parse_any_case,
                State::nearest,
                format!("held, all, {}", State::expected()),
            )?;
            if named.len() < args.state.len() {
                for held in State::HELD {
                    if !states.contains(held) {
                        states.push(*held);
                    }
                }
            }
            (false, states)
        }
    };
    let filter = OperationFilter {
        queue,
        states,
        tenants: args.tenant.clone(),
        owners: args.owner.clone(),
        tools: args.tool.clone(),
        modes: parse_list(
            &args.mode,
            "mode",
            FailureMode::parse_any_case,
            FailureMode::nearest,
            FailureMode::expected(),
        )?,
        risks: parse_list(
            &args.risk,
            "risk",
            Risk::parse_any_case,
            Risk::nearest,
            Risk::expected(),
        )?,
        search: args.search.clone(),
        now: Some(ctx.now()),
        ..OperationFilter::default()
    };
    let sort = match args.sort {
        SortArg::Urgency => SortOrder::Urgency,
        SortArg::Age => SortOrder::Age,
        SortArg::Id => SortOrder::Id,
        SortArg::Deadline => SortOrder::Deadline,
    };
    let session = ctx.session().await?;
    let actor = session.actor();
    let start = match &args.after {
        Some(id) => Start::After(parse_id(id)?),
        None => Start::First,
    };
    let page = Page {
        start,
        limit: args.limit.min(10_000),
    };
    let (rows, total) = session.list(&filter, sort, page.clone()).await?;
    super::warn_skipped(&session);
    if args.json {
        let ops: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| crate::wire::to_value(&crate::wire::Record::Operation(r.operation.clone())))
            .collect();
        println!("{}", crate::cli::json::pretty(&ops)?);
    } else if page.limit == 0 {
        // Only the count, as a script reading it wants it: no header, no rows.
        println!("{total}");
    } else {
        print!(
            "{}{}",
            render::actor_header(actor),
            render::list(&rows, total, ctx.now())
        );
        if let Some(last) = rows.last()
            && rows.len() as u64 == page.limit
            && page.limit < total
        {
            println!(
                "the next page: the same command with --after {last}",
                last = last.operation.id
            );
        }
    }
    Ok(exit::OK)
}
