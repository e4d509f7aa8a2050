//! Taking the terminal over and giving it back: raw mode, the alternate screen and
//! mouse capture on the way in; all three undone on the way out, whether the
//! console quits, fails or panics (a panic hook restores it before the message is
//! printed, so the message stays readable).

use std::io::{self, Stdout};
use std::sync::Once;

use crossterm::event::{DisableMouseCapture, EnableMouseCapture};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

/// Restores the terminal when dropped.
pub(crate) struct Guard(());

impl Drop for Guard {
    fn drop(&mut self) {
        restore();
    }
}

/// Takes the terminal over; it is given back when the guard drops or on panic.
pub(crate) fn enter() -> io::Result<(Terminal<CrosstermBackend<Stdout>>, Guard)> {
    install_panic_hook();
    enable_raw_mode()?;
    let guard = Guard(());
    execute!(io::stdout(), EnterAlternateScreen, EnableMouseCapture)?;
    let terminal = Terminal::new(CrosstermBackend::new(io::stdout()))?;
    Ok((terminal, guard))
}

/// Gives the terminal back: every step is tried even if one fails.
pub(crate) fn restore() {
    let raw = disable_raw_mode();
    let screen = execute!(
        io::stdout(),
        DisableMouseCapture,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    if let Err(e) = raw.and(screen) {
        tracing::warn!(error = %e, "restoring the terminal failed");
    }
}

/// Installs, once per process, a hook that restores the terminal and logs the
/// panic before the previous hook prints it.
fn install_panic_hook() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            tracing::error!(panic = %info, "the console panicked");
            previous(info);
        }));
    });
}
