//! The store's pure half: everything both backends compute the same way in plain
//! Rust, without a database — how records are encoded in rows, what an ingest
//! batch becomes, the rows it writes, the console's filter language and the
//! table list a copy walks. The driver code in [`super::engine`] only binds and
//! runs what these produce.

pub mod chunk;
pub mod codec;
pub mod copy;
pub mod decisions;
pub mod door;
pub mod filter;
pub mod ingest;
pub mod redaction;
pub mod rows;
pub mod work;
