//! The review dialog drawn over the console: the actions allowed now and the
//! refused ones with their rule, the inputs and the rationale box, the exact
//! effect before the confirm, and the verdict — all from the dialog's state.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Paragraph};

use super::form::FieldKind;
use super::{Confirm, ReviewDialog, Step, Verdict};
use crate::core::clock::human_instant;
use crate::core::rules::Effect;
use crate::core::sanitize::Clean;
use crate::tui::screens::Ctx;
use crate::tui::screens::dialog::shell;
use crate::tui::theme::Theme;
use crate::tui::widgets::{Doc, line, span};

/// Width of the labels of the form's inputs.
const INPUT_LABEL: u16 = 40;

pub(super) fn draw(frame: &mut Frame, ctx: &Ctx, dialog: &ReviewDialog) {
    let theme = ctx.theme;
    let op = &dialog.detail.row;
    let title = match dialog.after {
        Some((state, version)) if version != op.version => {
            let states = if state == op.operation.state {
                state.to_string()
            } else {
                format!("{} → {state}", op.operation.state)
            };
            format!(
                " Review {} · {states} · version {} → {version} ",
                op.operation.id, op.version
            )
        }
        _ => format!(
            " Review {} · {} · version {} ",
            op.operation.id, op.operation.state, op.version
        ),
    };
    let hint = match &dialog.step {
        Step::Pick => "↑↓ choose · Enter inputs and rationale · Esc close",
        Step::Form { .. } => "Tab next input · Enter preview the effect · Esc back to the actions",
        Step::Confirm { confirm, .. } => confirm.hint(),
        Step::Applying { .. } => "applying…",
        Step::Done(_) if dialog.follow_up.is_some() => {
            "Enter set the next observation (audited) · Esc skip and close"
        }
        Step::Done(_) => "Enter or Esc close",
    };
    let body = shell(frame, ctx, &title, dialog.error.as_deref(), hint);
    match &dialog.step {
        Step::Pick => draw_lines(
            frame,
            body,
            pick(theme, dialog, body.width),
            dialog_cursor_row(dialog),
        ),
        Step::Form { fields, focus } => {
            let label = dialog
                .options
                .get(dialog.cursor)
                .map_or(String::new(), |o| o.label.clone());
            let rows = u16::try_from(fields.len()).unwrap_or(0);
            let [head, inputs, rationale] = Layout::vertical([
                Constraint::Length(2),
                Constraint::Length(rows.saturating_sub(1)),
                Constraint::Length(3),
            ])
            .areas(body);
            frame.render_widget(
                Paragraph::new(line(vec![
                    span(Clean::new("action "), theme.dim()),
                    span(Clean::new(&label), theme.title()),
                ])),
                head,
            );
            let label_width = INPUT_LABEL.min(inputs.width / 2);
            let mut row = inputs.y;
            for (i, field) in fields.iter().enumerate() {
                let marker = if i == *focus { "›" } else { " " };
                if field.kind == FieldKind::Rationale {
                    let title = format!("{marker} rationale (required, at least 10 characters) ");
                    let style = if i == *focus {
                        theme.focused_border()
                    } else {
                        theme.dim()
                    };
                    let block = Block::default()
                        .borders(Borders::ALL)
                        .border_style(style)
                        .title(span(Clean::new(&title), style));
                    let box_inner = block.inner(rationale);
                    frame.render_widget(block, rationale);
                    field.input.draw_aligned(frame, box_inner, theme, 0);
                    continue;
                }
                if row >= inputs.bottom() {
                    break;
                }
                let at = Rect::new(inputs.x, row, inputs.width, 1);
                let [mark, input] =
                    Layout::horizontal([Constraint::Length(2), Constraint::Min(1)]).areas(at);
                frame.render_widget(
                    Paragraph::new(span(Clean::new(marker), theme.title())),
                    mark,
                );
                field.input.draw_aligned(frame, input, theme, label_width);
                row += 1;
            }
        }
        Step::Confirm {
            effect,
            rationale,
            confirm,
            ..
        } => {
            let mut doc = effect_doc(theme, effect);
            doc.field(
                theme,
                "rationale",
                Clean::new(rationale.as_str()),
                theme.plain(),
            );
            let typed_rows = u16::from(matches!(confirm, Confirm::TypeId(_)));
            let [effect_area, typed_area] =
                Layout::vertical([Constraint::Min(0), Constraint::Length(typed_rows)]).areas(body);
            draw_lines(frame, effect_area, doc.wrap(body.width), 0);
            if let Confirm::TypeId(typed) = confirm {
                typed.draw(frame, typed_area, theme);
            }
        }
        Step::Applying { effect } => {
            draw_lines(frame, body, effect_doc(theme, effect).wrap(body.width), 0);
        }
        Step::Done(verdict) => {
            let mut doc = verdict_doc(theme, verdict);
            let prompt_rows = u16::from(dialog.follow_up.is_some());
            if dialog.follow_up.is_some() {
                doc.blank();
                doc.push(line(vec![span(
                    Clean::new(
                        "a reconcile does not move the next observation: set it now (an overdue mark goes), or Esc to keep it",
                    ),
                    theme.warn(),
                )]));
            }
            let [verdict_area, _, prompt_area] = Layout::vertical([
                Constraint::Min(0),
                Constraint::Length(prompt_rows),
                Constraint::Length(prompt_rows),
            ])
            .areas(body);
            draw_lines(frame, verdict_area, doc.wrap(body.width), 0);
            if let Some(follow_up) = &dialog.follow_up {
                follow_up.at.draw(frame, prompt_area, theme);
            }
        }
    }
}

fn draw_lines(frame: &mut Frame, area: Rect, lines: Vec<Line<'static>>, keep: u16) {
    let scroll = keep.saturating_sub(area.height.saturating_sub(1));
    frame.render_widget(Paragraph::new(lines).scroll((scroll, 0)), area);
}

/// The row of the highlighted action in the pick list (the list's heading first).
fn dialog_cursor_row(dialog: &ReviewDialog) -> u16 {
    u16::try_from(dialog.cursor + 2).unwrap_or(u16::MAX)
}

/// The allowed actions with their effect in short, then the refused ones greyed
/// with their rule and reason.
fn pick(theme: Theme, dialog: &ReviewDialog, width: u16) -> Vec<Line<'static>> {
    let allowed = dialog.allowed();
    let mut doc = Doc::default();
    doc.blank();
    doc.push(line(vec![span(
        Clean::new(&format!("allowed now ({allowed})")),
        theme.title(),
    )]));
    if allowed == 0 {
        doc.push(line(vec![span(
            Clean::new("  none: every action is refused, see why below"),
            theme.warn(),
        )]));
    }
    let label_width = dialog
        .options
        .iter()
        .map(|o| o.label.chars().count())
        .max()
        .unwrap_or(0)
        + 2;
    for (i, option) in dialog.options.iter().enumerate() {
        if i == allowed {
            doc.blank();
            doc.push(line(vec![span(
                Clean::new(&format!("refused now ({})", dialog.options.len() - allowed)),
                theme.title(),
            )]));
        }
        let label = format!("{:<label_width$}", option.label);
        match &option.outcome {
            Ok(effect) => {
                let selected = i == dialog.cursor;
                let (marker, style) = if selected {
                    ("› ", theme.selected())
                } else {
                    ("  ", theme.plain())
                };
                doc.push(line(vec![
                    span(Clean::new(marker), theme.title()),
                    span(Clean::new(&label), style),
                    span(Clean::new(&short(effect)), theme.dim()),
                ]));
            }
            Err(refusal) => {
                doc.push_indented(
                    line(vec![
                        span(Clean::new("  "), theme.dim()),
                        span(Clean::new(&label), theme.dim()),
                        span(
                            Clean::new(&format!("{}: {}", refusal.rule, refusal.reason)),
                            theme.dim(),
                        ),
                    ]),
                    u16::try_from(label_width + 2).unwrap_or(0),
                );
            }
        }
    }
    doc.wrap(width)
}

/// An effect in one line: the state change, or that there is none.
pub(in crate::tui::screens) fn short(effect: &Effect) -> String {
    let change = match effect.to {
        Some(to) => format!("{} → {to}", effect.from),
        None => format!("state stays {}", effect.from),
    };
    if effect.proposal_only {
        format!("{change} (proposal: a second approver confirms)")
    } else {
        change
    }
}

/// The exact effect: the state change, the consequences, what stays prohibited,
/// and the audit row the commit writes.
fn effect_doc(theme: Theme, effect: &Effect) -> Doc {
    let mut doc = Doc::default();
    doc.blank();
    doc.push(line(vec![span(
        Clean::new("effect if confirmed"),
        theme.title(),
    )]));
    let state_style = effect.to.map_or(theme.plain(), |to| theme.state(to));
    doc.field(theme, "change", Clean::new(&short(effect)), state_style);
    for child in &effect.commit.children {
        doc.field(
            theme,
            "child operation",
            Clean::new(&format!(
                "{} created in {} ({})",
                child.id,
                child.state,
                child
                    .relation
                    .map_or_else(|| "linked".to_owned(), |r| r.to_string())
            )),
            theme.plain(),
        );
    }
    for consequence in &effect.consequences {
        doc.push_indented(
            line(vec![span(
                Clean::new(&format!("• {consequence}")),
                theme.plain(),
            )]),
            2,
        );
    }
    if !effect.still_prohibited.is_empty() {
        doc.blank();
        doc.push(line(vec![span(
            Clean::new("still prohibited"),
            theme.title(),
        )]));
        for rule in &effect.still_prohibited {
            doc.push_indented(
                line(vec![span(Clean::new(&format!("• {rule}")), theme.warn())]),
                2,
            );
        }
    }
    let audit = &effect.commit.audit;
    doc.blank();
    doc.push(line(vec![span(Clean::new("audit row"), theme.title())]));
    doc.field(theme, "who", Clean::new(&audit.by), theme.plain());
    doc.field(
        theme,
        "role",
        Clean::new(audit.role.as_str()),
        theme.plain(),
    );
    doc.field(
        theme,
        "policy",
        Clean::new(audit.policy.as_deref().unwrap_or("none")),
        theme.plain(),
    );
    doc.field(theme, "action", Clean::new(&audit.action), theme.plain());
    doc
}

/// The verdict of the apply, in place.
fn verdict_doc(theme: Theme, verdict: &Verdict) -> Doc {
    let mut doc = Doc::default();
    doc.blank();
    match verdict {
        Verdict::Applied(applied) => {
            doc.push(line(vec![span(Clean::new("applied"), theme.good())]));
            doc.field(
                theme,
                "change",
                Clean::new(&short(&applied.effect)),
                theme.plain(),
            );
            doc.field(
                theme,
                "audit row",
                Clean::new(&format!(
                    "#{} {} by {} ({}) at {}",
                    applied.audit.seq,
                    applied.audit.draft.action,
                    applied.audit.draft.by,
                    applied.audit.draft.role.as_str(),
                    human_instant(applied.audit.draft.at)
                )),
                theme.plain(),
            );
        }
        Verdict::Refused { rule, reason } => {
            doc.push(line(vec![span(
                Clean::new(&format!("refused by {rule}")),
                theme.alert(),
            )]));
            doc.push_indented(line(vec![span(Clean::new(reason), theme.plain())]), 2);
        }
        Verdict::Conflict {
            by,
            at,
            expected,
            current,
        } => {
            doc.push(line(vec![span(
                Clean::new("refused by G8: someone changed it first; nothing was applied"),
                theme.alert(),
            )]));
            doc.field(theme, "changed by", Clean::new(by), theme.plain());
            doc.field(theme, "at", Clean::new(&human_instant(*at)), theme.plain());
            doc.field(
                theme,
                "version",
                Clean::new(&format!("{expected} shown → {current} now")),
                theme.plain(),
            );
            doc.push(line(vec![span(
                Clean::new("the view reloaded: close and press r to decide again"),
                theme.dim(),
            )]));
        }
        Verdict::Failed(message) => {
            doc.push(line(vec![span(Clean::new(message), theme.alert())]));
        }
    }
    doc
}
