//! The `holdfast` binary: everything lives in the library; this only runs the CLI.
//! A reader that stops early (`holdfast show F09 | head -1`) closes the pipe;
//! that ends the program quietly instead of with a panic message and exit 101.

use std::panic::PanicHookInfo;

/// The allocator of the binary: ingest and the store make and drop several small
/// strings per record and per bound value, where the system allocator took about
/// a third of an ingest's time.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    quiet_on_closed_pipe();
    holdfast::run_command_line()
}

/// Installs a panic hook that exits with 0 when the panic is a write to a closed
/// pipe (the standard library's "failed printing to stdout" that every `println!`
/// ends in, or a library's own write, as shell completions do), and leaves every
/// other panic to the previous hook.
fn quiet_on_closed_pipe() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if is_closed_pipe(info) {
            std::process::exit(0);
        }
        previous(info);
    }));
}

fn is_closed_pipe(info: &PanicHookInfo<'_>) -> bool {
    let payload = info.payload();
    let text = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    text.contains("Broken pipe") || text.contains("BrokenPipe")
}
