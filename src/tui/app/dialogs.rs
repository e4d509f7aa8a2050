//! The review, lookup and bulk triage dialogs' part of `update`: opening a
//! dialog, or saying why none opens. The answers to what a dialog asked go to
//! the dialog itself (`Screen::answer`); what they come to across the console
//! (the status line, the marks, everything read again) is `Outcome::Wrote`.
//! Marking is the queue's (`screens/queue.rs`).

use super::{App, Effect};
use crate::core::ids::OperationId;
use crate::tui::layout::Pane;
use crate::tui::screens::Modal;
use crate::tui::screens::bulk::BulkDialog;
use crate::tui::screens::lookup::LookupScreen;
use crate::tui::screens::review::ReviewDialog;

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
        self.say(&format!("looking {id} up at the provider…"), false);
        let (screen, effect) = LookupScreen::start(id, self.now, self.frozen);
        self.modal = Some(Modal::Lookup(Box::new(screen)));
        vec![effect]
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
}
