//! The audit tab's own state: the newest transitions (newest first) and the
//! chain's verification status, both read by the runner, with the row under the
//! cursor. Asked for again whenever the store changes.

use crate::core::audit::{AuditRow, ChainStatus};
use crate::core::ids::OperationId;
use crate::tui::latest::Latest;

/// How many of the newest audit rows the tab holds.
pub const AUDIT_WINDOW: u64 = 500;

/// What the runner read for the tab.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditPage {
    /// Newest first.
    pub rows: Vec<AuditRow>,
    /// Rows in the log (the newest `seq`).
    pub head: i64,
    pub chain: ChainStatus,
}

/// The state of the audit tab.
#[derive(Debug, Clone, Default)]
pub struct AuditState {
    pub page: Option<AuditPage>,
    /// Why the last read failed, in words.
    pub error: Option<String>,
    pub selected: usize,
    pending: Latest<()>,
}

impl AuditState {
    /// Records a new request as the one to wait for; returns its tag.
    pub fn expect(&mut self) -> u64 {
        self.pending.request(())
    }

    /// Takes the answer to the request tagged `generation`, keeping the cursor on
    /// the same row when it is still there; `false` when the request was replaced.
    pub fn apply(&mut self, generation: u64, result: Result<AuditPage, String>) -> bool {
        if self.pending.answer(generation).is_none() {
            return false;
        }
        match result {
            Ok(page) => {
                let seq = self.selected_row().map(|r| r.seq);
                self.selected = seq
                    .and_then(|seq| page.rows.iter().position(|r| r.seq == seq))
                    .unwrap_or(0);
                self.page = Some(page);
                self.error = None;
            }
            Err(e) => self.error = Some(e),
        }
        true
    }

    pub fn rows(&self) -> &[AuditRow] {
        self.page.as_ref().map_or(&[], |p| p.rows.as_slice())
    }

    pub fn selected_row(&self) -> Option<&AuditRow> {
        self.rows().get(self.selected)
    }

    /// The operation of the row under the cursor.
    pub fn selected_operation(&self) -> Option<OperationId> {
        self.selected_row().map(|r| r.draft.operation.clone())
    }

    /// Moves the cursor by `delta`, within the rows.
    pub fn step(&mut self, delta: i64) {
        let last = i64::try_from(self.rows().len().saturating_sub(1)).unwrap_or(0);
        let to = i64::try_from(self.selected)
            .unwrap_or(0)
            .saturating_add(delta)
            .clamp(0, last);
        self.selected = usize::try_from(to).unwrap_or(0);
    }
}
