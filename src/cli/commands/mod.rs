//! The commands' bodies, one command (or a tight group) per file; their
//! arguments are defined with the rest of the command line in [`super`].

pub(crate) mod audit;
pub(crate) mod autonomy;
pub(crate) mod console;
pub(crate) mod copy;
pub(crate) mod drill;
pub(crate) mod gateway;
pub(crate) mod ingest;
pub(crate) mod list;
pub(crate) mod lookup;
pub(crate) mod observe;
pub(crate) mod report;
pub(crate) mod review;
pub(crate) mod serve;
pub(crate) mod show;
pub(crate) mod tools;
pub(crate) mod tools_changed;
pub(crate) mod tools_circuit;
pub(crate) mod work;

/// Warns on stderr about every row the command's reads skipped as unreadable.
pub(crate) fn warn_skipped(session: &crate::store::Session) {
    for what in session.take_skipped() {
        eprintln!(
            "warning: skipped unreadable {}; run `holdfast audit verify`",
            crate::core::sanitize::sanitize(&what)
        );
    }
}
