//! The bulk triage dialog drawn over the console: the action to apply to every
//! marked operation, the rationale box, the dry run split by bucket with each
//! operation's reason and whether the action is allowed for it, and each
//! operation's result — all from the dialog's state.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph};

use super::review::{shell, short};
use crate::core::clock::format_instant;
use crate::core::sanitize::Clean;
use crate::core::triage::{Bucket, TriageLine};
use crate::tui::app::App;
use crate::tui::bulk::{BulkDialog, KINDS, Step};
use crate::tui::review::Verdict;
use crate::tui::review::input_label;
use crate::tui::theme::Theme;
use crate::tui::widgets::{Doc, line, max_scroll, span};

/// The buckets in the order the dry run lists them.
const BUCKETS: [Bucket; 4] = [
    Bucket::RetryEligible,
    Bucket::NeedsReconciliation,
    Bucket::NeedsCompensation,
    Bucket::Blocked,
];

/// Width of the id column of the dry run and the results.
const ID_WIDTH: usize = 10;

pub fn draw(frame: &mut Frame, app: &App, dialog: &BulkDialog) {
    let theme = app.theme;
    let title = format!(
        " Bulk triage · {} marked · {} ",
        dialog.ids.len(),
        dialog.kind()
    );
    let hint = match &dialog.step {
        Step::Loading => "reading the marked operations… · Esc close",
        Step::Pick => "↑↓ choose the action · Enter rationale · Esc close",
        Step::Input(_) => "Enter on to the rationale · Esc back to the actions",
        Step::Rationale(_) => "Enter dry run (nothing is written) · Esc back",
        Step::DryRun { .. } => "Enter confirm and apply to all · ↑↓ scroll · Esc back",
        Step::Applying => "applying…",
        Step::Done(_) => "↑↓ scroll · Enter or Esc close",
    };
    let body = shell(frame, app, &title, dialog.error.as_deref(), hint);
    let doc = match &dialog.step {
        Step::Loading => {
            let mut doc = Doc::default();
            doc.blank();
            doc.push(line(vec![span(
                Clean::new(&format!(
                    "reading the {} marked operations…",
                    dialog.ids.len()
                )),
                theme.dim(),
            )]));
            doc
        }
        Step::Pick => pick(theme, dialog),
        Step::Input(input) | Step::Rationale(input) => {
            let [head, field] =
                Layout::vertical([Constraint::Length(3), Constraint::Length(3)]).areas(body);
            let mut doc = Doc::default();
            doc.blank();
            doc.push(action_line(theme, dialog));
            frame.render_widget(Paragraph::new(doc.wrap(head.width)), head);
            let block = Block::default()
                .borders(Borders::ALL)
                .border_style(theme.focused_border())
                .title(span(
                    Clean::new(&match &dialog.step {
                        Step::Input(_) => format!("› {} ", input.label),
                        _ => "› rationale (required, at least 10 characters) ".to_owned(),
                    }),
                    theme.focused_border(),
                ));
            let box_inner = block.inner(field);
            frame.render_widget(block, field);
            input.draw_aligned(frame, box_inner, theme, 0);
            return;
        }
        Step::DryRun { lines, .. } => dry_run(theme, dialog, lines),
        Step::Applying => {
            let mut doc = Doc::default();
            doc.blank();
            doc.push(line(vec![span(
                Clean::new(&format!(
                    "applying {} to {} operations, one audited transition each…",
                    dialog.kind(),
                    dialog.selection.len()
                )),
                theme.dim(),
            )]));
            doc
        }
        Step::Done(results) => done(theme, results),
    };
    draw_scrolled(frame, body, doc.wrap(body.width), dialog.scroll);
}

/// Lines scrolled by `scroll`, never past the last one.
fn draw_scrolled(frame: &mut Frame, area: Rect, lines: Vec<Line<'static>>, scroll: u16) {
    let scroll = scroll.min(max_scroll(lines.len(), area.height));
    frame.render_widget(Paragraph::new(lines).scroll((scroll, 0)), area);
}

/// `action block on 3 operations`.
fn action_line(theme: Theme, dialog: &BulkDialog) -> Line<'static> {
    line(vec![
        span(Clean::new("action "), theme.dim()),
        span(Clean::new(dialog.kind().as_str()), theme.title()),
        span(
            Clean::new(&format!(" on {} operations", dialog.selection.len())),
            theme.dim(),
        ),
    ])
}

/// The marked operations as read, the ones that could not be, and the actions.
fn pick(theme: Theme, dialog: &BulkDialog) -> Doc {
    let mut doc = Doc::default();
    doc.blank();
    let ids: Vec<&str> = dialog
        .selection
        .iter()
        .map(|d| d.row.operation.id.as_str())
        .collect();
    doc.field(
        theme,
        "selection",
        Clean::new(&format!("{} operations: {}", ids.len(), ids.join(" "))),
        theme.plain(),
    );
    for missing in &dialog.missing {
        doc.push_indented(
            line(vec![span(
                Clean::new(&format!("not included: {missing}")),
                theme.warn(),
            )]),
            2,
        );
    }
    doc.blank();
    doc.push(line(vec![span(
        Clean::new("action for all of them (the dry run shows where it is refused)"),
        theme.title(),
    )]));
    for (i, kind) in KINDS.iter().enumerate() {
        let (marker, style) = if i == dialog.cursor {
            ("› ", theme.selected())
        } else {
            ("  ", theme.plain())
        };
        let asks = input_label(*kind).map_or(String::new(), |l| format!("  asks: {l}"));
        doc.push(line(vec![
            span(Clean::new(marker), theme.title()),
            span(Clean::new(kind.as_str()), style),
            span(Clean::new(&asks), theme.dim()),
        ]));
    }
    doc
}

/// The dry run: a summary, then each bucket with its operations, the reason they
/// are there, and the action's effect or refusal for each.
fn dry_run(theme: Theme, dialog: &BulkDialog, lines: &[TriageLine]) -> Doc {
    let allowed = lines.iter().filter(|l| l.outcome.is_ok()).count();
    let mut doc = Doc::default();
    doc.blank();
    doc.push(line(vec![span(
        Clean::new(&format!(
            "dry run, nothing written: {} on {} operations · {allowed} allowed · {} refused",
            dialog.kind(),
            lines.len(),
            lines.len() - allowed
        )),
        theme.title(),
    )]));
    for bucket in BUCKETS {
        let members: Vec<&TriageLine> = lines.iter().filter(|l| l.bucket == bucket).collect();
        doc.blank();
        doc.push(line(vec![span(
            Clean::new(&format!("{} ({})", bucket.title(), members.len())),
            theme.title(),
        )]));
        for member in members {
            doc.push_indented(
                row(
                    theme,
                    member.id.as_str(),
                    (
                        format!("{:<11} ", member.state.as_str()),
                        theme.state(member.state),
                    ),
                    (member.why.clone(), theme.dim()),
                ),
                u16::try_from(ID_WIDTH + 2).unwrap_or(0),
            );
            let (text, style) = match &member.outcome {
                Ok(effect) => (format!("✓ allowed: {}", short(effect)), theme.good()),
                Err(refusal) => (
                    format!("✗ refused {}: {}", refusal.rule, refusal.reason),
                    theme.alert(),
                ),
            };
            doc.push_indented(
                line(vec![
                    span(Clean::new(&format!("  {:<ID_WIDTH$}", "")), theme.plain()),
                    span(Clean::new(&text), style),
                ]),
                u16::try_from(ID_WIDTH + 4).unwrap_or(0),
            );
        }
    }
    doc
}

/// Each operation's result, after a summary.
fn done(theme: Theme, results: &[(TriageLine, Verdict)]) -> Doc {
    let applied = results
        .iter()
        .filter(|(_, v)| matches!(v, Verdict::Applied(_)))
        .count();
    let mut doc = Doc::default();
    doc.blank();
    doc.push(line(vec![span(
        Clean::new(&format!(
            "{applied} applied · {} not applied, of {}",
            results.len() - applied,
            results.len()
        )),
        theme.title(),
    )]));
    doc.blank();
    for (member, verdict) in results {
        let (text, style) = match verdict {
            Verdict::Applied(a) => (
                format!("applied  {}, audit #{}", short(&a.effect), a.audit.seq),
                theme.good(),
            ),
            Verdict::Refused { rule, reason } => {
                (format!("refused  {rule}: {reason}"), theme.alert())
            }
            Verdict::Conflict { by, at, .. } => (
                format!(
                    "conflict G8: changed by {by} at {}; nothing applied",
                    format_instant(*at)
                ),
                theme.alert(),
            ),
            Verdict::Failed(message) => (format!("failed   {message}"), theme.alert()),
        };
        doc.push_indented(
            row(
                theme,
                member.id.as_str(),
                (format!("{:<21} ", member.bucket.title()), theme.dim()),
                (text, style),
            ),
            u16::try_from(ID_WIDTH + 24).unwrap_or(0),
        );
    }
    doc
}

/// One operation's line: its id, a column, and the text that wraps after them.
fn row(
    theme: Theme,
    id: &str,
    (column, column_style): (String, Style),
    (text, style): (String, Style),
) -> Line<'static> {
    line(vec![
        span(Clean::new(&format!("  {id:<ID_WIDTH$}")), theme.plain()),
        span(Clean::new(&column), column_style),
        span(Clean::new(&text), style),
    ])
}
