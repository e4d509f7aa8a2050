//! A strict JSON tree for one wire line: objects keep their keys in order, a key
//! given twice anywhere is refused with its path, and nesting is capped. Strings
//! borrow from the line when they contain no escapes, so a typical line costs only
//! the vectors of its objects.

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;

/// The deepest nesting of arrays and objects a line may have (the line's own
/// object counts as level 1).
pub const MAX_DEPTH: usize = 64;

/// Objects with more keys than this check duplicates with a hash set instead of a
/// scan, so a hostile line of many keys stays linear.
const SCAN_LIMIT: usize = 16;

/// One JSON value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Node<'a> {
    Null,
    Bool(bool),
    UInt(u64),
    Int(i64),
    Float(f64),
    Str(Cow<'a, str>),
    Array(Vec<Node<'a>>),
    Object(Vec<(Cow<'a, str>, Node<'a>)>),
}

impl Node<'_> {
    /// The JSON type in words, for error messages.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Node::Null => "null",
            Node::Bool(_) => "a boolean",
            Node::UInt(_) | Node::Int(_) => "an integer",
            Node::Float(_) => "a number with a fraction",
            Node::Str(_) => "a string",
            Node::Array(_) => "an array",
            Node::Object(_) => "an object",
        }
    }
}

/// Why a line is not an acceptable JSON tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TreeError {
    /// Not JSON at all; the column is 1-based, in bytes.
    Syntax { column: usize, message: String },
    /// A key appears twice in one object; `path` names the second occurrence.
    DuplicateKey { path: String },
    /// Arrays and objects nested deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// Parses one line of JSON text into a [`Node`], refusing duplicate keys at any
/// depth, nesting deeper than [`MAX_DEPTH`] and anything after the value.
pub(crate) fn parse(text: &str) -> Result<Node<'_>, TreeError> {
    let mut ctx = Ctx::default();
    let mut de = serde_json::Deserializer::from_str(text);
    let node = NodeSeed { ctx: &mut ctx }
        .deserialize(&mut de)
        .and_then(|node| de.end().map(|()| node));
    node.map_err(|e| match ctx.fault.take() {
        Some(Fault::TooDeep) => TreeError::TooDeep,
        Some(Fault::Duplicate(mut segments)) => {
            segments.reverse();
            TreeError::DuplicateKey {
                path: join_path(&segments),
            }
        }
        None => TreeError::Syntax {
            column: e.column(),
            message: syntax_message(&e),
        },
    })
}

/// serde_json's message without its own " at line 1 column N" suffix.
fn syntax_message(e: &serde_json::Error) -> String {
    let full = e.to_string();
    match full.rfind(" at line ") {
        Some(cut) => full[..cut].to_owned(),
        None => full,
    }
}

enum Segment {
    Key(String),
    Index(usize),
}

fn join_path(segments: &[Segment]) -> String {
    let mut path = String::new();
    for segment in segments {
        match segment {
            Segment::Key(key) => {
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
            }
            Segment::Index(i) => {
                path.push('[');
                path.push_str(&i.to_string());
                path.push(']');
            }
        }
    }
    path
}

enum Fault {
    TooDeep,
    /// Path segments from the offending key outward.
    Duplicate(Vec<Segment>),
}

#[derive(Default)]
struct Ctx {
    depth: usize,
    fault: Option<Fault>,
}

impl Ctx {
    /// Records where an error raised below came from while it unwinds.
    fn on_the_way_out(&mut self, segment: impl FnOnce() -> Segment) {
        if let Some(Fault::Duplicate(segments)) = &mut self.fault {
            segments.push(segment());
        }
    }

    fn enter<E: de::Error>(&mut self) -> Result<(), E> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            self.fault = Some(Fault::TooDeep);
            return Err(E::custom("nesting too deep"));
        }
        Ok(())
    }
}

struct NodeSeed<'c> {
    ctx: &'c mut Ctx,
}

impl<'de> DeserializeSeed<'de> for NodeSeed<'_> {
    type Value = Node<'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for NodeSeed<'_> {
    type Value = Node<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Node::Null)
    }

    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Node::Bool(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Node::UInt(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(Node::Int(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
        Ok(Node::Float(v))
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Node::Str(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Node::Str(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Node::Str(Cow::Owned(v)))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        self.ctx.enter()?;
        let mut items = Vec::new();
        loop {
            match seq.next_element_seed(NodeSeed {
                ctx: &mut *self.ctx,
            }) {
                Ok(Some(item)) => items.push(item),
                Ok(None) => break,
                Err(e) => {
                    let index = items.len();
                    self.ctx.on_the_way_out(|| Segment::Index(index));
                    return Err(e);
                }
            }
        }
        self.ctx.depth -= 1;
        Ok(Node::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        self.ctx.enter()?;
        let mut entries: Vec<(Cow<'de, str>, Node<'de>)> = Vec::new();
        let mut seen: Option<HashSet<Cow<'de, str>>> = None;
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let duplicate = match &mut seen {
                Some(set) => !set.insert(key.clone()),
                None => {
                    let dup = entries.iter().any(|(k, _)| *k == key);
                    if entries.len() >= SCAN_LIMIT {
                        let mut set: HashSet<Cow<'de, str>> =
                            entries.iter().map(|(k, _)| k.clone()).collect();
                        set.insert(key.clone());
                        seen = Some(set);
                    }
                    dup
                }
            };
            if duplicate {
                self.ctx.fault = Some(Fault::Duplicate(vec![Segment::Key(key.into_owned())]));
                return Err(de::Error::custom("duplicate key"));
            }
            match map.next_value_seed(NodeSeed {
                ctx: &mut *self.ctx,
            }) {
                Ok(value) => entries.push((key, value)),
                Err(e) => {
                    self.ctx
                        .on_the_way_out(|| Segment::Key(key.clone().into_owned()));
                    return Err(e);
                }
            }
        }
        self.ctx.depth -= 1;
        Ok(Node::Object(entries))
    }
}

/// Reads an object key, borrowing it from the line when it has no escapes.
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Cow<'de, str>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Cow::Borrowed(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Cow::Owned(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(depth: usize) -> String {
        format!(
            "{{\"a\":{}0{}}}",
            "[".repeat(depth - 1),
            "]".repeat(depth - 1)
        )
    }

    #[test]
    fn keeps_key_order_and_borrows_plain_strings() {
        let node = parse(r#"{"b":1,"a":"x","c":[true,null,-2,1.5]}"#).unwrap();
        let Node::Object(entries) = node else {
            panic!("not an object")
        };
        let keys: Vec<&str> = entries.iter().map(|(k, _)| k.as_ref()).collect();
        assert_eq!(keys, ["b", "a", "c"]);
        assert!(matches!(&entries[1].1, Node::Str(Cow::Borrowed("x"))));
        assert_eq!(
            entries[2].1,
            Node::Array(vec![
                Node::Bool(true),
                Node::Null,
                Node::Int(-2),
                Node::Float(1.5)
            ])
        );
    }

    #[test]
    fn duplicate_keys_are_refused_with_their_path() {
        assert_eq!(
            parse(r#"{"a":1,"a":2}"#),
            Err(TreeError::DuplicateKey { path: "a".into() })
        );
        assert_eq!(
            parse(r#"{"x":{"y":[0,{"k":1,"k":1}]}}"#),
            Err(TreeError::DuplicateKey {
                path: "x.y[1].k".into()
            })
        );
        assert_eq!(
            parse(r#"{"a\u0062":1,"ab":2}"#),
            Err(TreeError::DuplicateKey { path: "ab".into() })
        );
    }

    #[test]
    fn duplicates_among_many_keys_are_found() {
        let mut text = String::from("{");
        for i in 0..100 {
            text.push_str(&format!("\"k{i}\":0,"));
        }
        text.push_str("\"k3\":1}");
        assert_eq!(
            parse(&text),
            Err(TreeError::DuplicateKey { path: "k3".into() })
        );
    }

    #[test]
    fn a_duplicate_of_the_key_that_switches_to_the_set_is_found() {
        for keys in [SCAN_LIMIT, SCAN_LIMIT + 1, SCAN_LIMIT + 2] {
            let mut text = String::from("{");
            for i in 0..keys {
                text.push_str(&format!("\"k{i}\":0,"));
            }
            let last = keys - 1;
            text.push_str(&format!("\"k{last}\":1}}"));
            assert_eq!(
                parse(&text),
                Err(TreeError::DuplicateKey {
                    path: format!("k{last}")
                }),
                "{keys} keys"
            );
        }
    }

    #[test]
    fn nesting_is_capped_at_64_levels() {
        assert!(parse(&nested(MAX_DEPTH)).is_ok());
        assert_eq!(parse(&nested(MAX_DEPTH + 1)), Err(TreeError::TooDeep));
        assert_eq!(parse(&nested(100_000)), Err(TreeError::TooDeep));
    }

    #[test]
    fn syntax_errors_carry_their_column() {
        let Err(TreeError::Syntax { column, message }) = parse(r#"{"a":tru}"#) else {
            panic!("expected a syntax error")
        };
        assert_eq!(column, 9);
        assert!(!message.contains("line"), "{message}");
        assert!(matches!(
            parse(r#"{"a":1} x"#),
            Err(TreeError::Syntax { column: 9, .. })
        ));
    }
}
