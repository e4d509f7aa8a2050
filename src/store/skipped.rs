//! Rows a read could not decode. One damaged row (a record no longer parses, an
//! instant out of range) must not take a whole listing, report or export down:
//! reads keep every row they can decode and note each one they skip here, by
//! table and key, for the command to warn about.

use std::sync::{Arc, Mutex, PoisonError};

use super::StoreError;

/// The rows skipped since the last [`Skipped::take`]; clones share the list.
#[derive(Debug, Clone, Default)]
pub struct Skipped(Arc<Mutex<Vec<String>>>);

impl Skipped {
    /// Decodes each row, keeping those that decode and noting the others as
    /// `TABLE KEY: reason` (the key from `key`, `?` when even it cannot be read).
    pub fn keep<R, T>(
        &self,
        table: &str,
        rows: &[R],
        key: impl Fn(&R) -> Option<String>,
        decode: impl Fn(&R) -> Result<T, StoreError>,
    ) -> Vec<T> {
        let mut kept = Vec::with_capacity(rows.len());
        for row in rows {
            match decode(row) {
                Ok(value) => kept.push(value),
                Err(e) => {
                    let key = key(row).unwrap_or_else(|| "?".to_owned());
                    self.note(format!("{table} {key}: {e}"));
                }
            }
        }
        kept
    }

    fn note(&self, what: String) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(what);
    }

    /// The rows skipped so far, emptying the list.
    pub fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_what_decodes_and_names_what_does_not() {
        let skipped = Skipped::default();
        let rows = [("F1", "1"), ("F2", "x"), ("F3", "3")];
        let kept = skipped.keep(
            "operation",
            &rows,
            |(id, _)| Some((*id).to_owned()),
            |(_, n)| {
                n.parse::<u32>()
                    .map_err(|_| StoreError::Other("not a number".into()))
            },
        );
        assert_eq!(kept, [1, 3]);
        assert_eq!(
            skipped.clone().take(),
            ["operation F2: store error: not a number"]
        );
        assert!(skipped.take().is_empty());
    }
}
