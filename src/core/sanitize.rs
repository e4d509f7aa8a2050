//! The one choke point for untrusted text (G10). Everything that came from outside
//! (ids, targets, keys, labels, notes, excerpts, provider ids, tenants, owners) passes
//! [`sanitize`] before it reaches a terminal cell, so that no control character,
//! escape sequence or invisible code point is ever emitted raw.
//!
//! Every hostile piece becomes visible marker text made only of printable
//! characters:
//! - a C0 control becomes its Control Picture (`␀`…`␟`), DEL becomes `␡`, so a tab
//!   reads `␉`, a bare CR `␍` and a newline `␊`;
//! - a whole escape sequence (CSI, OSC — OSC 52 clipboard writes and OSC 8 links
//!   included — DCS, SOS, PM, APC, and the short `ESC x` forms) is kept as text inside
//!   `⟦…⟧`, with its ESC, BEL and any other control inside made visible, so
//!   `ESC ] 52 ; c ; … BEL` reads `⟦␛]52;c;…␇⟧` rather than leaving `]52;c;…` bare;
//! - the same holds for the 8-bit C1 introducers (U+009B CSI, U+009D OSC, …);
//! - any other C1 control and every invisible or direction-changing code point
//!   (bidi overrides and isolates, marks, zero-width characters, BOM, Unicode tag
//!   characters, other format characters, line/paragraph separators, fillers and
//!   noncharacters) becomes `⟨U+XXXX⟩`.
//!
//! Secrets are redacted on the same way out ([`super::redact`]), so no credential
//! a provider echoed reaches a terminal either.
//!
//! The marker characters are themselves printable, so sanitizing is idempotent, and
//! text without any of the above comes back borrowed and unchanged.

use std::borrow::Cow;
use std::fmt::Write as _;

const ESC: char = '\u{1b}';
const BEL: char = '\u{07}';
/// The 8-bit String Terminator.
const ST8: char = '\u{9c}';
const OPEN: char = '⟦';
const CLOSE: char = '⟧';

/// Returns `text` with every secret replaced by its `‹redacted:KIND›` marker
/// ([`super::redact`]) and every control character, escape sequence and invisible
/// code point replaced by visible marker text (see the module header).
pub fn sanitize(text: &str) -> Cow<'_, str> {
    match super::redact::redact(text) {
        Cow::Borrowed(text) => neutralize(text),
        Cow::Owned(redacted) => Cow::Owned(neutralize(&redacted).into_owned()),
    }
}

/// The control-character half of [`sanitize`], for text whose secrets are
/// redacted on its own way out (a JSON document redacted as a whole).
pub fn neutralize(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_marking) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match sequence_kind(c, chars.peek().copied()) {
            Some(kind) => {
                out.push(OPEN);
                push_visible(&mut out, c);
                let intro = if c == ESC { chars.next() } else { None };
                if let Some(intro) = intro {
                    push_visible(&mut out, intro);
                }
                consume_body(kind, intro, &mut chars, &mut out);
                out.push(CLOSE);
            }
            None => push_visible(&mut out, c),
        }
    }
    Cow::Owned(out)
}

/// Splits untrusted multi-line text (notes, excerpts) into lines on `\n` or `\r\n`
/// and sanitizes each; a CR anywhere else stays a visible `␍`.
/// Secrets are redacted in the whole text first, so that a block spread over lines
/// (a PEM key) is found as one.
pub fn sanitize_lines(text: &str) -> Vec<Cow<'_, str>> {
    match super::redact::redact(text) {
        Cow::Borrowed(text) => split_lines(text).map(neutralize).collect(),
        Cow::Owned(redacted) => split_lines(&redacted)
            .map(|line| Cow::Owned(neutralize(line).into_owned()))
            .collect(),
    }
}

fn split_lines(text: &str) -> impl Iterator<Item = &str> {
    text.split('\n')
        .map(|line| line.strip_suffix('\r').unwrap_or(line))
}

/// JSON text made safe to print without changing what it says: every code point
/// above the C0 range that [`sanitize`] would mark (DEL, C1 controls such as the
/// 8-bit CSI U+009B, invisible and direction-changing code points) is written as
/// its `\uXXXX` escape, as a surrogate pair above U+FFFF. serde_json already
/// escapes C0 controls, and such code points only ever occur inside strings.
pub fn json_for_terminal(json: &str) -> Cow<'_, str> {
    let marked = |c: char| c > '\u{1f}' && needs_marking(c);
    if !json.chars().any(marked) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if marked(c) {
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{unit:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Text that has passed [`sanitize`]: the only kind of text the console draws.
/// It holds no control character, escape sequence or invisible code point, and
/// neither does any concatenation of such texts.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Clean(String);

impl Clean {
    /// Sanitizes `text`.
    pub fn new(text: &str) -> Self {
        Clean(sanitize(text).into_owned())
    }

    /// Sanitized lines of multi-line untrusted text (see [`sanitize_lines`]).
    pub fn lines(text: &str) -> Vec<Clean> {
        sanitize_lines(text)
            .into_iter()
            .map(|line| Clean(line.into_owned()))
            .collect()
    }

    /// Joins clean pieces; the result is clean because no piece holds a control.
    pub fn concat<'a>(parts: impl IntoIterator<Item = &'a Clean>) -> Clean {
        Clean(parts.into_iter().map(Clean::as_str).collect())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<&str> for Clean {
    fn from(text: &str) -> Self {
        Clean::new(text)
    }
}

impl From<String> for Clean {
    fn from(text: String) -> Self {
        match sanitize(&text) {
            Cow::Borrowed(_) => Clean(text),
            Cow::Owned(clean) => Clean(clean),
        }
    }
}

impl std::fmt::Display for Clean {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// How the body of an escape sequence ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SequenceKind {
    /// CSI: parameter and intermediate bytes, then one final byte `@`..`~`.
    Csi,
    /// OSC: ends at BEL or ST.
    Osc,
    /// DCS, SOS, PM, APC: end at ST (BEL accepted too, as some terminals do).
    String,
    /// `ESC` + intermediates + one final byte (`ESC c`, `ESC ( B`, `ESC 7`).
    Short,
}

/// Whether `c` (followed by `next`) opens an escape sequence, and which kind.
fn sequence_kind(c: char, next: Option<char>) -> Option<SequenceKind> {
    match c {
        ESC => match next? {
            '[' => Some(SequenceKind::Csi),
            ']' => Some(SequenceKind::Osc),
            'P' | 'X' | '^' | '_' => Some(SequenceKind::String),
            '\u{20}'..='\u{7e}' => Some(SequenceKind::Short),
            _ => None,
        },
        '\u{9b}' => Some(SequenceKind::Csi),
        '\u{9d}' => Some(SequenceKind::Osc),
        '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => Some(SequenceKind::String),
        _ => None,
    }
}

/// Copies the rest of one sequence into `out` as visible text, up to and including
/// its terminator. A new ESC that is not part of an ST ends the sequence without
/// being consumed: the caller opens a new marker for it.
fn consume_body(
    kind: SequenceKind,
    intro: Option<char>,
    chars: &mut std::iter::Peekable<std::str::Chars<'_>>,
    out: &mut String,
) {
    match kind {
        SequenceKind::Short => {
            // The introducer already taken was either the final byte or the first
            // intermediate; intermediates (0x20..0x2f) continue until a final byte.
            if !intro.is_some_and(|c| ('\u{20}'..='\u{2f}').contains(&c)) {
                return;
            }
            while let Some(&c) = chars.peek() {
                if !('\u{20}'..='\u{7e}').contains(&c) {
                    return;
                }
                chars.next();
                out.push(c);
                if !('\u{20}'..='\u{2f}').contains(&c) {
                    return;
                }
            }
        }
        SequenceKind::Csi => {
            while let Some(&c) = chars.peek() {
                if !('\u{20}'..='\u{7e}').contains(&c) {
                    return;
                }
                chars.next();
                out.push(c);
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    return;
                }
            }
        }
        SequenceKind::Osc | SequenceKind::String => {
            while let Some(&c) = chars.peek() {
                if c == ESC {
                    let mut ahead = chars.clone();
                    ahead.next();
                    if ahead.peek() == Some(&'\\') {
                        chars.next();
                        chars.next();
                        push_visible(out, ESC);
                        out.push('\\');
                    }
                    return;
                }
                chars.next();
                push_visible(out, c);
                if c == BEL || c == ST8 {
                    return;
                }
            }
        }
    }
}

/// Appends `c`, or its visible marker when it must not reach a terminal raw.
fn push_visible(out: &mut String, c: char) {
    match c {
        '\u{00}'..='\u{1f}' => {
            out.push(char::from_u32(0x2400 + c as u32).unwrap_or('\u{fffd}'));
        }
        '\u{7f}' => out.push('␡'),
        c if needs_marking(c) => {
            let _ = write!(out, "⟨U+{:04X}⟩", c as u32);
        }
        c => out.push(c),
    }
}

/// Whether `c` is a control, escape or invisible code point that must be marked.
fn needs_marking(c: char) -> bool {
    matches!(
        c,
        '\u{00}'..='\u{1f}'
            | '\u{7f}'..='\u{9f}'
            | '\u{ad}'
            | '\u{34f}'
            | '\u{61c}'
            | '\u{115f}'..='\u{1160}'
            | '\u{17b4}'..='\u{17b5}'
            | '\u{180b}'..='\u{180f}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{206f}'
            | '\u{3164}'
            | '\u{fe00}'..='\u{fe0f}'
            | '\u{feff}'
            | '\u{ffa0}'
            | '\u{fff0}'..='\u{fffb}'
            | '\u{fffe}'..='\u{ffff}'
            | '\u{600}'..='\u{605}'
            | '\u{6dd}'
            | '\u{70f}'
            | '\u{890}'..='\u{891}'
            | '\u{8e2}'
            | '\u{110bd}'
            | '\u{110cd}'
            | '\u{13430}'..='\u{1343f}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0000}'..='\u{e0fff}'
    ) || is_noncharacter(c)
}

/// The 66 Unicode noncharacters (U+FDD0..U+FDEF and the last two of every plane).
fn is_noncharacter(c: char) -> bool {
    let v = c as u32;
    (0xfdd0..=0xfdef).contains(&v) || (v & 0xfffe) == 0xfffe
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn json_for_terminal_escapes_c1_and_invisible_code_points_only() {
        let value = serde_json::json!({"e": "a\u{9b}2J\u{7f}\u{202e}\u{e0041}é\n"});
        let text = serde_json::to_string(&value).unwrap();
        let safe = json_for_terminal(&text);
        assert_eq!(safe, r#"{"e":"a\u009b2J\u007f\u202e\udb40\udc41é\n"}"#);
        let back: serde_json::Value = serde_json::from_str(&safe).unwrap();
        assert_eq!(back, value);
        assert!(matches!(
            json_for_terminal(r#"{"a":"é"}"#),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn whole_escape_sequences_become_visible_text() {
        assert_eq!(sanitize("a\u{1b}[31mred"), "a⟦␛[31m⟧red");
        assert_eq!(
            sanitize("\u{1b}]52;c;aGVsbG8=\u{07}x"),
            "⟦␛]52;c;aGVsbG8=␇⟧x"
        );
        assert_eq!(
            sanitize("\u{1b}]8;;https://e.invalid\u{1b}\\click\u{1b}]8;;\u{1b}\\"),
            "⟦␛]8;;https://e.invalid␛\\⟧click⟦␛]8;;␛\\⟧"
        );
        assert_eq!(sanitize("\u{1b}Pq#0\u{1b}\\"), "⟦␛Pq#0␛\\⟧");
        assert_eq!(sanitize("\u{1b}c"), "⟦␛c⟧");
        assert_eq!(sanitize("\u{1b}(B!"), "⟦␛(B⟧!");
        assert_eq!(sanitize("\u{9b}2J"), "⟦⟨U+009B⟩2J⟧");
        assert_eq!(sanitize("end\u{1b}"), "end␛");
        assert_eq!(sanitize("\u{1b}]0;title"), "⟦␛]0;title⟧");
    }

    #[test]
    fn controls_and_invisible_code_points_become_markers() {
        assert_eq!(sanitize("a\tb\rc\nd\u{7f}"), "a␉b␍c␊d␡");
        assert_eq!(sanitize("\u{202e}txt.exe"), "⟨U+202E⟩txt.exe");
        assert_eq!(sanitize("a\u{200b}b\u{feff}"), "a⟨U+200B⟩b⟨U+FEFF⟩");
        assert_eq!(sanitize("\u{e0041}"), "⟨U+E0041⟩");
        assert_eq!(sanitize("\u{85}"), "⟨U+0085⟩");
    }

    #[test]
    fn printable_text_is_borrowed_unchanged() {
        for text in ["F09", "ticket-queue:7", "Grüße, 世界 ⟦x⟧ ␛", "é 👍🏽", ""] {
            assert!(matches!(sanitize(text), Cow::Borrowed(t) if t == text));
        }
    }

    #[test]
    fn lines_split_on_lf_and_crlf_only() {
        let lines: Vec<String> = sanitize_lines("one\r\ntwo\rthree\nfour")
            .into_iter()
            .map(Cow::into_owned)
            .collect();
        assert_eq!(lines, ["one", "two␍three", "four"]);
    }

    proptest! {
        #[test]
        fn sanitizing_is_idempotent(text in any::<String>()) {
            let once = sanitize(&text).into_owned();
            prop_assert_eq!(sanitize(&once), once.as_str());
        }

        #[test]
        fn hostile_mixtures_are_idempotent_and_leave_no_marked_char(
            parts in proptest::collection::vec(
                prop_oneof![
                    Just("\u{1b}".to_owned()), Just("\u{1b}[".to_owned()),
                    Just("\u{1b}]52;c;".to_owned()), Just("\u{07}".to_owned()),
                    Just("\u{9b}".to_owned()), Just("\u{202e}".to_owned()),
                    Just("\u{e0041}".to_owned()), Just("\r".to_owned()),
                    Just("\u{1b}\\".to_owned()), "[ -~]{0,4}",
                ],
                0..12,
            )
        ) {
            let text: String = parts.concat();
            let once = sanitize(&text).into_owned();
            prop_assert!(!once.chars().any(needs_marking));
            prop_assert_eq!(sanitize(&once), once.as_str());
        }

        #[test]
        fn printable_text_is_left_alone(text in "\\PC*") {
            prop_assume!(!text.chars().any(needs_marking));
            prop_assert!(matches!(sanitize(&text), Cow::Borrowed(_)));
        }
    }
}
