//! The `holdfast` binary: everything lives in the library; this only runs the CLI.

fn main() -> std::process::ExitCode {
    holdfast::cli::main()
}
