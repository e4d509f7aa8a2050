//! The console: a triage TUI for held operations. The shape is a loop over one
//! message channel: `app::App::update` turns each [`app::Message`] into state
//! changes and [`app::Effect`]s, the [`runner`] does the store I/O on tasks and
//! answers with messages, and [`view::draw`] paints from the state alone, once the
//! queued messages are handled.

pub(crate) mod app;
pub(crate) mod chain;
pub(crate) mod doc;
pub(crate) mod filter;
pub(crate) mod keymap;
pub(crate) mod latest;
pub(crate) mod layout;
pub(crate) mod message;
pub(crate) mod opened;
pub(crate) mod runner;
pub(crate) mod screens;
pub(crate) mod terminal;
pub(crate) mod theme;
pub(crate) mod view;
pub(crate) mod widgets;

/// The screens under the names they had before they moved to `screens/`.
pub(crate) use screens::audit as audit_tab;
pub(crate) use screens::{queue, review};

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use ratatui::layout::Rect;
use tokio::sync::mpsc;

use crate::core::clock::Clock;
use crate::core::rules::Actor;
use crate::store::Session;
use app::{App, Options};
use runner::{Input, Runner};

/// How the command line starts the console.
#[derive(Debug, Clone)]
pub(crate) struct Console {
    /// Who is reviewing (role and granted tenants decide what is shown and allowed).
    pub actor: Actor,
    /// The identity was only claimed with `--as` (see [`app::Options::claimed`]).
    pub claimed: bool,
    /// Where "now" comes from: frozen for the demo and `--now`.
    pub clock: Clock,
    /// `NO_COLOR` or a monochrome theme: no colour, only bold/reverse/underline.
    pub no_color: bool,
    /// The log file, named in the help overlay.
    pub log_path: Option<PathBuf>,
    /// The `[lookup]` config: `o` reads bodies up to its limit and paces each
    /// provider at its rate, like `observe` and `review --lookup`.
    pub lookup: crate::lookup::LookupSettings,
}

/// Runs the console on `session` (the reviewer's) until the reviewer quits. The
/// terminal is restored on return, on error and on panic.
pub(crate) async fn run(session: Session, console: Console) -> anyhow::Result<()> {
    let (mut terminal, _guard) = terminal::enter().context("cannot take over the terminal")?;
    let size = terminal.size().context("cannot read the terminal size")?;
    let (tx, mut rx) = mpsc::unbounded_channel();
    let _input = Input::spawn(tx.clone()).context("cannot read the terminal")?;
    let session = Arc::new(session);
    let poller = runner::spawn_poller(Arc::clone(&session), console.clock, tx.clone());
    let lookups = Arc::new(runner::Lookups::new(console.lookup.clone())?);
    let runner = Runner::new(session, lookups, tx);
    let mut app = App::new(
        Options {
            actor: console.actor,
            claimed: console.claimed,
            now: console.clock.now(),
            frozen: console.clock.is_frozen(),
            color: !console.no_color,
            log_path: console.log_path.map(|p| p.display().to_string()),
        },
        Rect::new(0, 0, size.width, size.height),
    );
    tracing::info!("console started");
    let mut effects = app.init();
    let result = loop {
        if !effects.drain(..).all(|e| runner.run(e)) {
            break Ok(());
        }
        if let Err(e) = terminal.draw(|frame| view::draw(frame, &app)) {
            break Err(anyhow::Error::new(e).context("cannot draw on the terminal"));
        }
        let Some(first) = rx.recv().await else {
            break Ok(());
        };
        effects = app.update(first);
        while let Ok(next) = rx.try_recv() {
            effects.extend(app.update(next));
        }
    };
    poller.abort();
    tracing::info!("console stopped");
    result
}
