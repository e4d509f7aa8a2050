//! Names as a tired reviewer types and reads them: the nearest known name to a
//! near miss, for "did you mean" hints on ids, actions and enumerations alike, and
//! a count with its noun in the right number or its thousands grouped, and a tool's action when one is
//! known.

/// `1 line`, `3 lines`, `1 status query`: a count with its noun in the right number.
pub fn count<N: std::fmt::Display + PartialEq + From<u8>>(n: N, one: &str, many: &str) -> String {
    if n == N::from(1) {
        format!("{n} {one}")
    } else {
        format!("{n} {many}")
    }
}

/// `12500` as `12,500`: a count with its thousands separated by commas.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The action of a call of `tool`, for display: `None` when `action` only
/// repeats the tool's name. Wire format v1 requires an action, so a door that
/// knows none (a tool without a contract, through the MCP gateway or
/// OpenTelemetry) writes the tool's name there; showing it again
/// (`pay/refund/pay/refund`) would claim an action nobody declared.
pub fn known_action<'a>(tool: &str, action: &'a str) -> Option<&'a str> {
    (action != tool).then_some(action)
}

/// `tool/action` as a row shows them, or the tool alone when no action is
/// known ([`known_action`]).
pub fn tool_and_action(tool: &str, action: &str) -> String {
    match known_action(tool, action) {
        Some(action) => format!("{tool}/{action}"),
        None => tool.to_owned(),
    }
}

/// The known name closest to `typed`, ignoring ASCII case, when it is close
/// enough to be a typo (at most one edit in three characters, and at least one
/// allowed); `None` for an exact match or nothing near.
pub fn nearest<'a>(typed: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let typed_lower = typed.to_ascii_lowercase();
    let budget = (typed.chars().count() / 3).max(1);
    known
        .into_iter()
        .filter(|k| *k != typed)
        .map(|k| (distance(&typed_lower, &k.to_ascii_lowercase()), k))
        .filter(|(d, _)| *d <= budget)
        .min_by_key(|(d, k)| (*d, *k))
        .map(|(_, k)| k)
}

/// Edit distance (insertions, deletions, substitutions and swaps of neighbours)
/// between two strings, by characters.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut rows = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in rows.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in rows[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (rows[i - 1][j] + 1)
                .min(rows[i][j - 1] + 1)
                .min(rows[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(rows[i - 2][j - 2] + 1);
            }
            rows[i][j] = best;
        }
    }
    rows[a.len()][b.len()]
}

/// Declares a closed enumeration with its stable text form, used on the wire, in the
/// store and on screen alike. With a leading `@snake_names`, serde writes the
/// variant names in snake_case instead (`authorize_retry`), as the rest of the
/// JSON output is written, and the stable text form stays the command-line word.
macro_rules! text_enum {
    (@methods $name:ident { $($variant:ident => $text:literal),+ }) => {
        impl $name {
            /// Every variant, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stable text form.
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }

            /// Parses the stable text form; `None` for anything else.
            pub fn parse(text: &str) -> Option<Self> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }

            /// Parses the text form in any ASCII case (`unknown` for `UNKNOWN`):
            /// how people type it.
            pub fn parse_any_case(text: &str) -> Option<Self> {
                Self::ALL
                    .iter()
                    .copied()
                    .find(|v| v.as_str().eq_ignore_ascii_case(text.trim()))
            }

            /// The accepted value nearest to a mistyped one, for a hint.
            pub fn nearest(text: &str) -> Option<Self> {
                crate::core::names::nearest(text, Self::ALL.iter().map(|v| v.as_str()))
                    .and_then(Self::parse)
            }

            /// Parses the text form in any case; the error names the accepted
            /// values and, for a near miss, the one meant.
            pub fn parse_hinted(text: &str) -> Result<Self, String> {
                Self::parse_any_case(text).ok_or_else(|| {
                    let hint = Self::nearest(text)
                        .map_or_else(String::new, |v| format!("did you mean {v}? "));
                    format!("{:?} is not one of the values: {hint}one of {}", text.trim(), Self::expected())
                })
            }

            /// The accepted values, for error messages.
            pub fn expected() -> String {
                [$($text),+].join(", ")
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
    (@snake_names $(#[$m:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $($variant),+
        }

        text_enum!(@methods $name { $($variant => $text),+ });
    };
    ($(#[$m:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum $name {
            $(#[serde(rename = $text)] $variant),+
        }

        text_enum!(@methods $name { $($variant => $text),+ });
    };
}
pub(crate) use text_enum;

#[cfg(test)]
mod tests {
    use super::{count, known_action, nearest, tool_and_action};

    #[test]
    fn an_action_that_repeats_the_tool_is_not_shown() {
        assert_eq!(tool_and_action("T03", "ticket.create"), "T03/ticket.create");
        assert_eq!(tool_and_action("pay/refund", "pay/refund"), "pay/refund");
        assert_eq!(known_action("pay/refund", "pay/refund"), None);
        assert_eq!(known_action("pay/refund", "refund"), Some("refund"));
    }

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(count(1u32, "line", "lines"), "1 line");
        assert_eq!(count(0usize, "line", "lines"), "0 lines");
        assert_eq!(
            count(2u64, "status query", "status queries"),
            "2 status queries"
        );
    }

    #[test]
    fn a_near_miss_finds_its_name_and_a_stranger_finds_none() {
        let actions = ["authorize-retry", "accept", "block"];
        assert_eq!(nearest("authorise-retry", actions), Some("authorize-retry"));
        assert_eq!(nearest("f09", ["F09", "F10"]), Some("F09"));
        assert_eq!(nearest("F9", ["F09", "F19"]), Some("F09"));
        assert_eq!(nearest("zebra", actions), None);
        assert_eq!(nearest("block", actions), None);
    }
}
