//! The metrics tab's own state: the report the runner computed from the store
//! (the seven figures, the release disposition, the operational figures), which
//! figure is selected, and the operations behind it with the one under the cursor.
//! The report is asked for again whenever the store changes; an answer to a
//! request since replaced is dropped.

use crate::core::ids::OperationId;
use crate::core::metrics::{Metric, Report};
use crate::tui::latest::Latest;

/// Which half of the tab the keys move.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum MetricsFocus {
    /// The seven figures (and the summary under them).
    #[default]
    Figures,
    /// The operations behind the selected figure.
    Operations,
}

/// One operation behind a figure: whether it counts in the numerator and, when it
/// does not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Behind {
    pub id: OperationId,
    pub counted: bool,
    pub shortfall: Option<String>,
}

/// The state of the metrics tab.
#[derive(Debug, Clone, Default)]
pub struct MetricsState {
    pub report: Option<Report>,
    /// Why the last computation failed, in words.
    pub error: Option<String>,
    /// Index of the selected figure in the report's order.
    pub figure: usize,
    pub focus: MetricsFocus,
    /// Index of the selected operation behind the figure.
    pub operation: usize,
    /// Scroll of the summary (release, unknown age, amplification).
    pub scroll: u16,
    pending: Latest<()>,
}

impl MetricsState {
    /// Records a new request as the one to wait for; returns its tag.
    pub fn expect(&mut self) -> u64 {
        self.pending.request(())
    }

    /// Takes the answer to the request tagged `generation`; `false` when it was
    /// replaced by a newer one.
    pub fn apply(&mut self, generation: u64, result: Result<Report, String>) -> bool {
        if self.pending.answer(generation).is_none() {
            return false;
        }
        match result {
            Ok(report) => {
                self.report = Some(report);
                self.error = None;
                self.clamp();
            }
            Err(e) => self.error = Some(e),
        }
        true
    }

    /// The selected figure.
    pub fn metric(&self) -> Option<&Metric> {
        self.report.as_ref()?.metrics.get(self.figure)
    }

    /// The operations of the selected figure's denominator, those short of the
    /// numerator first (the ones a reviewer looks at), each with its reason.
    pub fn behind(&self) -> Vec<Behind> {
        let Some(metric) = self.metric() else {
            return Vec::new();
        };
        let mut rows: Vec<Behind> = metric
            .denominator_ids
            .iter()
            .map(|id| Behind {
                id: id.clone(),
                counted: metric.numerator_ids.contains(id),
                shortfall: metric
                    .shortfalls
                    .iter()
                    .find(|(op, _)| op == id)
                    .map(|(_, why)| why.clone()),
            })
            .collect();
        rows.sort_by_key(|b| b.counted);
        rows
    }

    /// The operation under the cursor, when the operations have the focus.
    pub fn selected_operation(&self) -> Option<OperationId> {
        self.behind().get(self.operation).map(|b| b.id.clone())
    }

    /// Moves the selection of the focused half by `delta`.
    pub fn step(&mut self, delta: i64) {
        let (at, count) = match self.focus {
            MetricsFocus::Figures => (
                &mut self.figure,
                self.report.as_ref().map_or(0, |r| r.metrics.len()),
            ),
            MetricsFocus::Operations => {
                let count = self.behind().len();
                (&mut self.operation, count)
            }
        };
        let last = i64::try_from(count.saturating_sub(1)).unwrap_or(0);
        let to = i64::try_from(*at)
            .unwrap_or(0)
            .saturating_add(delta)
            .clamp(0, last);
        let to = usize::try_from(to).unwrap_or(0);
        if self.focus == MetricsFocus::Figures && to != self.figure {
            self.operation = 0;
        }
        match self.focus {
            MetricsFocus::Figures => self.figure = to,
            MetricsFocus::Operations => self.operation = to,
        }
    }

    /// Keeps the selections within what the report holds now.
    fn clamp(&mut self) {
        let figures = self.report.as_ref().map_or(0, |r| r.metrics.len());
        self.figure = self.figure.min(figures.saturating_sub(1));
        self.operation = self.operation.min(self.behind().len().saturating_sub(1));
        if self.behind().is_empty() {
            self.focus = MetricsFocus::Figures;
        }
    }
}
