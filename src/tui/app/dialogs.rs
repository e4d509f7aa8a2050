//! The review, lookup and bulk triage dialogs' part of `update`: opening a
//! dialog, and taking the runner's answers to what a dialog asked (the status
//! line, the marks, everything read again). Marking is the queue's
//! (`screens/queue.rs`).

use super::{App, Effect};
use crate::core::ids::OperationId;
use crate::core::triage::TriageLine;
use crate::tui::layout::Pane;
use crate::tui::screens::Modal;
use crate::tui::screens::bulk::BulkDialog;
use crate::tui::screens::lookup::{LookupScreen, LookupShown};
use crate::tui::screens::review::{ReviewDialog, Verdict};

impl App {
    /// `r`: the review dialog on the operation open (or selected).
    pub(super) fn open_review(&mut self) -> Vec<Effect> {
        if self.chain_refuses() {
            return Vec::new();
        }
        if let Some(screen) = self.page_screen()
            && self.focus == Pane::Queue
        {
            let text = format!(
                "r reviews an open operation: Enter opens one from {}",
                screen.name()
            );
            self.say(&text, false);
            return Vec::new();
        }
        let Some(loaded) = self.detail.current() else {
            self.say("nothing to review: select a hold first", false);
            return Vec::new();
        };
        let dialog = ReviewDialog::new(loaded.detail.clone(), &self.actor, self.now);
        if dialog.allowed() == 0 {
            self.say(
                &format!(
                    "no action is allowed on {} now; the dialog lists why",
                    dialog.id()
                ),
                true,
            );
        }
        self.modal = Some(Modal::Review(Box::new(dialog)));
        Vec::new()
    }

    /// Whether a broken, unacknowledged audit chain refuses a dialog that could
    /// write a transition; says why when it does.
    fn chain_refuses(&mut self) -> bool {
        let Some((seq, _)) = self.chain.broken().filter(|_| self.chain.refuses()) else {
            return false;
        };
        let text = format!(
            "refused: the audit chain is broken at seq {seq}; an owner acknowledges it (holdfast audit acknowledge {seq} --reason …), then R"
        );
        self.say(&text, true);
        true
    }

    /// The apply answered: the verdict shows in the dialog, and the queue and the
    /// detail are asked for again (the operation changed, by us or by someone else).
    pub(super) fn reviewed(&mut self, generation: u64, verdict: Verdict) -> Vec<Effect> {
        if !self.review_mut().is_some_and(|d| d.answered(generation)) {
            return Vec::new();
        }
        let (text, alert) = match &verdict {
            Verdict::Applied(applied) => {
                let done = if applied.effect.proposal_only {
                    "proposal opened for"
                } else {
                    "applied to"
                };
                let text = format!(
                    "{} {done} {} (audit #{})",
                    applied.effect.action, applied.audit.draft.operation, applied.audit.seq
                );
                (text, false)
            }
            Verdict::Refused { rule, reason } => (format!("refused: {rule}: {reason}"), true),
            Verdict::Conflict { by, at, .. } => (
                format!(
                    "refused: G8: changed by {by} at {}; reloaded",
                    crate::core::clock::human_instant(*at)
                ),
                true,
            ),
            Verdict::Failed(e) => (e.clone(), true),
        };
        self.say(&text, alert);
        if let Some(dialog) = self.review_mut() {
            dialog.finish(verdict);
        }
        self.review_reload = true;
        self.refresh()
    }

    /// `o`: looks the operation open (or selected) up at its provider now.
    pub(super) fn look_up(&mut self) -> Vec<Effect> {
        let Some(loaded) = self.detail.current() else {
            self.say("nothing to look up: select a hold first", false);
            return Vec::new();
        };
        let id = loaded.detail.row.operation.id.clone();
        if let Err(impossible) = crate::lookup::spec_of(&loaded.detail) {
            // Nothing to ask: the dialog says why, and what is left instead.
            let how = loaded.detail.contract.as_ref().map_or_else(
                || "unknown: no contract is stored for its tool".to_owned(),
                |c| c.status_lookup.describe(),
            );
            let why = format!(
                "{impossible}. Its status lookup: {how}. Nothing was sent; r → reconcile records what you find by hand."
            );
            self.say(&why, true);
            self.modal = Some(Modal::Lookup(Box::new(LookupScreen::impossible(id, why))));
            return Vec::new();
        }
        let (screen, generation) = LookupScreen::start(id.clone());
        self.say(&format!("looking {id} up at the provider…"), false);
        self.modal = Some(Modal::Lookup(Box::new(screen)));
        vec![Effect::LookUp {
            generation,
            id,
            now: self.now,
            frozen: self.frozen,
        }]
    }

    /// The lookup answered: its screen shows the result, and everything is read
    /// again (the lookup added an attempt and maybe an observation).
    pub(super) fn looked_up(
        &mut self,
        generation: u64,
        result: Result<LookupShown, String>,
    ) -> Vec<Effect> {
        let (text, alert) = match &result {
            Ok(_) => (
                "lookup recorded; the evidence shows what it allows".to_owned(),
                false,
            ),
            Err(e) => (e.clone(), true),
        };
        let taken = match self.modal.as_mut().map(Modal::base_mut) {
            Some(Modal::Lookup(screen)) => screen.answered(generation, result),
            _ => false,
        };
        if !taken {
            return Vec::new();
        }
        self.say(&text, alert);
        self.review_reload = true;
        self.refresh()
    }

    /// The mark-all selection answered: every match is marked too.
    pub(super) fn selected_all(
        &mut self,
        generation: u64,
        result: Result<Vec<OperationId>, String>,
    ) -> Vec<Effect> {
        if self.queue.marking.answer(generation).is_none() {
            return Vec::new();
        }
        match result {
            Ok(ids) => {
                let matched = ids.len();
                self.queue.marked.extend(ids);
                self.say(
                    &format!(
                        "{matched} matching marked; {} marked in all",
                        self.queue.marked.len()
                    ),
                    false,
                );
            }
            Err(e) => self.say(&format!("cannot mark the matches: {e}"), true),
        }
        Vec::new()
    }

    /// `b`: the bulk dialog on the marked operations, read fresh.
    pub(super) fn open_bulk(&mut self) -> Vec<Effect> {
        if self.chain_refuses() {
            return Vec::new();
        }
        if self.queue.marked.is_empty() {
            self.say(
                "nothing marked: space marks the selected operation, a all matching",
                false,
            );
            return Vec::new();
        }
        let ids: Vec<OperationId> = self.queue.marked.iter().cloned().collect();
        let (dialog, load) = BulkDialog::open(ids);
        self.modal = Some(Modal::Bulk(Box::new(dialog)));
        vec![load]
    }

    /// The bulk apply answered: each result shows in the dialog, the applied
    /// operations are unmarked, and everything on screen is asked for again.
    pub(super) fn bulk_applied(
        &mut self,
        generation: u64,
        results: Vec<(TriageLine, Verdict)>,
    ) -> Vec<Effect> {
        if !self.bulk_mut().is_some_and(|d| d.answered(generation)) {
            return Vec::new();
        }
        let applied: Vec<&OperationId> = results
            .iter()
            .filter(|(_, v)| matches!(v, Verdict::Applied(_)))
            .map(|(line, _)| &line.id)
            .collect();
        for id in &applied {
            self.queue.marked.remove(*id);
        }
        let refused = results.len() - applied.len();
        let text = match refused {
            0 => format!("bulk: all {} applied", applied.len()),
            n => format!(
                "bulk: {} applied, {n} not applied (still marked)",
                applied.len()
            ),
        };
        self.say(&text, refused > 0);
        if let Some(dialog) = self.bulk_mut() {
            dialog.finish(results);
        }
        self.review_reload = true;
        self.refresh()
    }
}
