//! The commands' bodies, one command (or a tight group) per file; their
//! arguments are defined with the rest of the command line in [`super`].

pub mod audit;
pub mod console;
pub mod copy;
pub mod drill;
pub mod ingest;
pub mod list;
pub mod observe;
pub mod report;
pub mod review;
pub mod show;
pub mod work;

/// Warns on stderr about every row the command's reads skipped as unreadable.
pub fn warn_skipped(session: &crate::store::Session) {
    for what in session.take_skipped() {
        eprintln!(
            "warning: skipped unreadable {}; run `holdfast audit verify`",
            crate::core::sanitize::sanitize(&what)
        );
    }
}
