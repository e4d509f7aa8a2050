//! Identifier and hash types that carry their own validation, so that text which is
//! not one never reaches the store.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Why a piece of text is not a valid identifier or hash.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("must not be empty")]
    Empty,
    #[error("is {0} characters long; at most 128 are allowed")]
    TooLong(usize),
    #[error("contains {0:?}; only letters, digits and . _ : - are allowed")]
    BadChar(char),
    #[error("must be `sha256:` followed by 64 lowercase hex digits")]
    BadHash,
    #[error(
        "begins or ends with whitespace; ids are compared byte for byte, so `A1 ` and `A1` would be two records"
    )]
    Padded,
    #[error("must not contain control characters (found {0:?})")]
    Control(char),
}

/// The longest id, in characters.
pub const MAX_ID_CHARS: usize = 128;

/// The one rule for the id of a record and for every reference to one (an
/// attempt's or observation's id, a transition's `evidence`, a correlation id, an
/// identity): 1 to [`MAX_ID_CHARS`] characters, no control characters, and no
/// whitespace at either end. Every door reads ids through this function (the wire
/// reader, work completion files, observation files), so a padded id is refused
/// the same way wherever it comes in, instead of becoming a second record that
/// what cites the first one never finds.
pub fn check_id(text: &str) -> Result<(), IdError> {
    if text.is_empty() {
        return Err(IdError::Empty);
    }
    let count = text.chars().count();
    if count > MAX_ID_CHARS {
        return Err(IdError::TooLong(count));
    }
    if text.trim() != text {
        return Err(IdError::Padded);
    }
    if let Some(c) = text.chars().find(|c| c.is_control()) {
        return Err(IdError::Control(c));
    }
    Ok(())
}

/// The id of one logical operation (`F09`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct OperationId(String);

impl OperationId {
    pub fn parse(text: &str) -> Result<Self, IdError> {
        Self::check(text)?;
        Ok(OperationId(text.to_owned()))
    }

    /// Whether `text` is an operation id, without keeping it.
    pub fn check(text: &str) -> Result<(), IdError> {
        match check_id(text) {
            // Named below with the rest of what an operation id may not hold.
            Ok(()) | Err(IdError::Control(_)) => {}
            Err(e) => return Err(e),
        }
        if let Some(c) = text
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | ':' | '-')))
        {
            return Err(IdError::BadChar(c));
        }
        Ok(())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for OperationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for OperationId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for OperationId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        OperationId::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// A SHA-256 digest written `sha256:<64 lowercase hex>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sha256(String);

impl Sha256 {
    pub const PREFIX: &'static str = "sha256:";

    pub fn parse(text: &str) -> Result<Self, IdError> {
        Self::check(text)?;
        Ok(Sha256(text.to_owned()))
    }

    /// Whether `text` is a digest as this type writes it, without keeping it.
    pub fn check(text: &str) -> Result<(), IdError> {
        let hex = text.strip_prefix(Self::PREFIX).ok_or(IdError::BadHash)?;
        if hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            Ok(())
        } else {
            Err(IdError::BadHash)
        }
    }

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        use sha2::Digest;
        Self::from_digest(&sha2::Sha256::digest(bytes))
    }

    /// Whether `text` is the digest of `bytes` as [`Self::of`] writes it,
    /// computed without building the text.
    pub fn is_digest_of(text: &str, bytes: &[u8]) -> bool {
        use sha2::Digest;
        let mut hex = [0u8; 64];
        hex::encode_to_slice(sha2::Sha256::digest(bytes), &mut hex).is_ok()
            && text
                .strip_prefix(Self::PREFIX)
                .is_some_and(|h| h.as_bytes() == hex)
    }

    /// A digest computed elsewhere (a hasher fed in parts).
    pub fn from_digest(digest: &[u8]) -> Self {
        Sha256(format!("{}{}", Self::PREFIX, hex::encode(digest)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first `n` hex digits, for narrow columns.
    pub fn short(&self, n: usize) -> &str {
        let hex = &self.0[Self::PREFIX.len()..];
        &hex[..n.min(hex.len())]
    }
}

impl fmt::Display for Sha256 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Sha256 {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Sha256 {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        Sha256::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// The id the rows of a reserved ledger (autonomy, drills, the chain's own
/// acknowledgements) carry in their `operation` column.
pub fn ledger_id(ledger: &str) -> OperationId {
    OperationId::parse(ledger).unwrap_or_else(|_| unreachable!("ledger ids are valid ids"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_refuse_empty_long_and_odd_characters() {
        assert!(OperationId::parse("F09").is_ok());
        assert_eq!(OperationId::parse(""), Err(IdError::Empty));
        assert_eq!(
            OperationId::parse(&"x".repeat(129)),
            Err(IdError::TooLong(129))
        );
        assert_eq!(
            OperationId::parse("F\u{1b}9"),
            Err(IdError::BadChar('\u{1b}'))
        );
    }

    #[test]
    fn padded_ids_are_refused_by_the_one_rule() {
        for padded in ["A1 ", " A1", "A1\t", "\u{a0}A1", "A1\n"] {
            assert_eq!(check_id(padded), Err(IdError::Padded), "{padded:?}");
            assert_eq!(
                OperationId::parse(padded),
                Err(IdError::Padded),
                "{padded:?}"
            );
        }
        assert_eq!(check_id("A\u{7}1"), Err(IdError::Control('\u{7}')));
        assert!(check_id("A 1").is_ok(), "inner spaces are part of the id");
        assert_eq!(check_id(""), Err(IdError::Empty));
    }

    #[test]
    fn hashes_need_prefix_and_64_lowercase_hex() {
        let good = format!("sha256:{}", "a".repeat(64));
        assert!(Sha256::parse(&good).is_ok());
        assert!(Sha256::parse(&"a".repeat(64)).is_err());
        assert!(Sha256::parse(&format!("sha256:{}", "A".repeat(64))).is_err());
        assert!(Sha256::parse(&format!("sha256:{}", "a".repeat(63))).is_err());
        assert_eq!(Sha256::of(b"abc").short(8), "ba7816bf");
    }
}
