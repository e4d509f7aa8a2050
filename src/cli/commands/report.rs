//! `holdfast report`: the seven figures with the operations behind them, the
//! release disposition with its vetoes, and the operational figures — as a table
//! to read or, with `--json`, as one object for scripts.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use crate::cli::{Context, exit};
use crate::core::metrics::text::render;
use crate::core::metrics::{Disposition, Report};
use crate::store::Progress;
use crate::store::judging::{Judging, telling};

/// How often the judging line is rewritten on a terminal.
const ON_A_TERMINAL: Duration = Duration::from_millis(250);

/// How often a judging line is written to stderr that is no terminal (a log).
const TO_A_LOG: Duration = Duration::from_secs(5);

/// Computes the report over the tenants the acting identity sees (the whole store
/// in single-user mode, G7) at the context's clock and prints it. While the
/// store judges what it has not judged yet, how far it has got goes to stderr.
pub(crate) async fn run(ctx: &Context, json: bool) -> anyhow::Result<u8> {
    let session = ctx.session().await?;
    let actor = session.actor();
    let seen = &session;
    let report = judging_on_stderr(|progress| async move {
        crate::report::compute(seen, ctx.now(), &progress).await
    })
    .await?;
    super::warn_skipped(&session);
    if json {
        println!("{}", crate::cli::json::pretty(&report)?);
    } else {
        print!(
            "{}{}",
            crate::cli::render::actor_header(actor),
            render(&report)
        );
    }
    Ok(code(&report))
}

/// Runs `judge` with a [`Progress`] whose judging goes to stderr as
/// [`judging_line`] tells it: `report`'s and `ingest`'s.
pub(super) async fn judging_on_stderr<T, F>(judge: impl FnOnce(Progress) -> F) -> T
where
    F: Future<Output = T>,
{
    let terminal = std::io::stderr().is_terminal();
    let every = if terminal { ON_A_TERMINAL } else { TO_A_LOG };
    telling(every, move |judging| judging_line(judging, terminal), judge).await
}

/// Judges what the store has not judged yet before a command reads the kept
/// facts (`tools`, `autonomy list`: the open vetoes), how far it has got on
/// stderr as `report` tells it, instead of a wait without a word.
pub(super) async fn judge_first(
    session: &crate::store::Session,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<()> {
    judging_on_stderr(|progress| async move { session.keep_current(now, &progress).await }).await?;
    Ok(())
}

/// One judging line on stderr: rewritten in place on a terminal (the last
/// one left standing), its figures alone when the words do not fit and cut
/// to the width so that it never wraps (a wrapped line is not rewritten
/// whole); one line each otherwise.
fn judging_line(judging: Judging, terminal: bool) {
    let done = judging.judged >= judging.total;
    let mut err = std::io::stderr().lock();
    let _ = if terminal {
        let room = crossterm::terminal::size()
            .map_or(usize::MAX, |(w, _)| usize::from(w))
            .saturating_sub(1);
        let mut text = judging.to_string();
        if text.chars().count() > room {
            text = format!("judging {}", judging.figures());
        }
        let text: String = text.chars().take(room).collect();
        write!(err, "\r{text}\x1b[K{}", if done { "\n" } else { "" })
    } else {
        writeln!(err, "{judging}")
    };
    let _ = err.flush();
}

/// The exit code of a report: a gate that evaluated nothing is not a pass, so a
/// script that reads exit 0 as one never reads it so.
fn code(report: &Report) -> u8 {
    if report.release.disposition == Disposition::NotEvaluated {
        exit::NOT_EVALUATED
    } else {
        exit::OK
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::detail::Dataset;
    use crate::core::ids::OperationId;

    #[test]
    fn an_empty_store_reads_as_nothing_measured_and_not_evaluated() {
        let now = crate::core::clock::parse_instant("2026-09-05T12:00:00Z");
        let Ok(now) = now else {
            panic!("a fixed instant parses");
        };
        let report = crate::core::metrics::report(&Dataset::default(), now);
        let text = render(&report);
        assert!(text.contains("Contract pass rate"));
        assert!(text.contains("0/0"));
        assert!(text.contains("RELEASE: NOT_EVALUATED (0 vetoes)"), "{text}");
        assert!(!text.contains("DEPLOYABLE"), "{text}");
        assert!(text.contains("nothing evaluated"), "{text}");
        assert!(text.contains("proposals     0 pending"));
        assert_eq!(code(&report), exit::NOT_EVALUATED);
    }

    /// A report folded from more operations than a list keeps prints the first
    /// of each list, the full counts, and how many it left out.
    #[test]
    fn a_long_list_prints_its_first_entries_and_how_many_more() {
        use crate::core::metrics::{
            Facts, FigureFacts, Finding, LISTED, MetricId, OperationalFacts, Tally, Verdict,
            VetoKind,
        };
        let Ok(now) = crate::core::clock::parse_instant("2026-09-05T12:00:00Z") else {
            panic!("a fixed instant parses");
        };
        let ops: Vec<OperationId> = (0..LISTED + 20)
            .map(|n| OperationId::parse(&format!("P{n:04}")))
            .collect::<Result<_, _>>()
            .unwrap_or_else(|e| panic!("an id: {e}"));
        let mut tally = Tally::default();
        for page in ops.chunks(7) {
            tally.add(Facts {
                figures: vec![FigureFacts {
                    id: MetricId::DuplicateEffectContainment,
                    rows: page
                        .iter()
                        .map(|op| (op.clone(), Verdict::Short("twice".into())))
                        .collect(),
                }],
                findings: page
                    .iter()
                    .map(|op| Finding {
                        operation: op.clone(),
                        kind: VetoKind::DuplicatePrimaryEffect,
                        evidence: vec![format!("O-{op}")],
                        reason: "twice".into(),
                    })
                    .collect(),
                operational: OperationalFacts {
                    logical_operations: u32::try_from(page.len()).unwrap_or(0),
                    overdue: page.to_vec(),
                    ..OperationalFacts::default()
                },
            });
        }
        let report = tally.finish(now);
        let text = render(&report);
        let m = report.metric(MetricId::DuplicateEffectContainment);
        assert_eq!(m.map(|m| (m.numerator, m.denominator)), Some((0, 120)));
        assert_eq!(m.map(|m| m.shortfalls.len()), Some(LISTED));
        assert!(text.contains("Duplicate-effect containment"));
        assert!(text.contains("0/120"), "{text}");
        assert!(text.contains(" … and 20 more\n"), "{text}");
        assert!(
            text.contains("RELEASE: NOT_DEPLOYED (120 vetoes)"),
            "{text}"
        );
        assert!(!text.contains("P0119"), "{text}");
        assert!(text.contains("P0099"), "{text}");
        let Ok(json) = serde_json::to_value(&report) else {
            panic!("the report serializes");
        };
        assert_eq!(json["release"]["vetoes_total"], 120);
        assert_eq!(json["operational"]["unknown_age"]["overdue_total"], 120);
        assert_eq!(json["metrics"][4]["listed_at_most"], 100);
    }
}
