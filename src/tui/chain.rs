//! The audit chain as the whole console sees it: its status, verified at start
//! and whenever the store moves (what the verify finds is recorded for every
//! door), and whether an owner acknowledged the break (audited, on the command line).
//! While the chain is broken and not acknowledged, every screen says so and no
//! dialog that could write a transition opens.

use super::latest::Latest;
use crate::core::audit::ChainStatus;

/// The chain's last verified status and its acknowledgement.
#[derive(Debug, Clone, Default)]
pub struct Chain {
    /// The last answer (`None` until the first verify answers).
    pub status: Option<ChainStatus>,
    /// An owner acknowledged the break the store records (`holdfast audit
    /// acknowledge`, audited); a new break asks again.
    pub acknowledged: bool,
    pending: Latest<()>,
}

impl Chain {
    /// Tags a new verify request.
    pub fn request(&mut self) -> u64 {
        self.pending.request(())
    }

    /// Takes the answer tagged `generation`, if it is the newest; returns the
    /// status it moved to when it moved (intact again, or a new break).
    pub fn apply(
        &mut self,
        generation: u64,
        result: Result<ChainStatus, String>,
        acknowledged: bool,
    ) -> bool {
        if self.pending.answer(generation).is_none() {
            return false;
        }
        let Ok(status) = result else {
            return false;
        };
        let moved = match (&self.status, &status) {
            (Some(ChainStatus::Broken { seq: a, .. }), ChainStatus::Broken { seq: b, .. }) => {
                a != b
            }
            (Some(ChainStatus::Intact { .. }), ChainStatus::Intact { .. }) => false,
            _ => true,
        };
        self.acknowledged = acknowledged && matches!(status, ChainStatus::Broken { .. });
        self.status = Some(status);
        moved
    }

    /// The break, when the chain is broken: (`seq`, reason).
    pub fn broken(&self) -> Option<(i64, &str)> {
        match &self.status {
            Some(ChainStatus::Broken { seq, reason }) => Some((*seq, reason.as_str())),
            _ => None,
        }
    }

    /// Whether transitions are refused now (broken and not acknowledged).
    pub fn refuses(&self) -> bool {
        self.broken().is_some() && !self.acknowledged
    }
}
