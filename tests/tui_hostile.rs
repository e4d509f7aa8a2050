//! G10 end to end: hostile strings rendered through the real crossterm backend into
//! a byte buffer never put a byte of a hostile sequence on the wire.

mod support;

use holdfast::core::sanitize::{Clean, sanitize};
use ratatui::backend::{CrosstermBackend, TestBackend};
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;
use ratatui::{Terminal, TerminalOptions, Viewport};
use support::hostile::{CORPUS, Sink, forbidden, replay};

const WIDTH: u16 = 120;

/// Draws one line per string with `draw`, through crossterm into bytes and through
/// the test backend into a buffer.
fn render_both(lines: &[String]) -> (Vec<u8>, TestBackend) {
    let height = lines.len() as u16;
    let paragraph = || {
        Paragraph::new(
            lines
                .iter()
                .map(|l| Line::raw(l.clone()))
                .collect::<Vec<_>>(),
        )
    };
    let options = TerminalOptions {
        viewport: Viewport::Fixed(Rect::new(0, 0, WIDTH, height)),
    };
    let sink = Sink::default();
    let mut crossterm =
        Terminal::with_options(CrosstermBackend::new(sink.clone()), options).unwrap();
    crossterm
        .draw(|f| f.render_widget(paragraph(), f.area()))
        .unwrap();
    let bytes = sink.bytes();
    let mut test = Terminal::new(TestBackend::new(WIDTH, height)).unwrap();
    test.draw(|f| f.render_widget(paragraph(), f.area()))
        .unwrap();
    (bytes, test.backend().clone())
}

#[test]
fn corpus_covers_every_class_with_at_least_forty_strings() {
    assert!(CORPUS.len() >= 40, "{} strings", CORPUS.len());
    for (class, text) in CORPUS {
        assert!(text.chars().any(forbidden), "{class} holds nothing hostile");
    }
}

#[test]
fn sanitized_corpus_reaches_the_terminal_only_as_visible_text() {
    let lines: Vec<String> = CORPUS
        .iter()
        .map(|(_, text)| Clean::new(text).into_string())
        .collect();
    let (bytes, test) = render_both(&lines);
    let screen = replay(&bytes).unwrap_or_else(|e| panic!("{e}"));
    for (y, (class, text)) in CORPUS.iter().enumerate() {
        let expected: String = test.buffer().content[y * WIDTH as usize..(y + 1) * WIDTH as usize]
            .iter()
            .map(|c| c.symbol())
            .collect::<String>();
        assert_eq!(screen.row(y as u16, WIDTH), expected.trim_end(), "{class}");
        let marked = sanitize(text);
        assert!(marked.chars().all(|c| !forbidden(c)), "{class}");
    }
}

#[test]
fn osc_payloads_are_shown_inside_a_marker_not_left_bare() {
    let lines = vec![Clean::new("\u{1b}]52;c;QUFB\u{7}after").into_string()];
    let (bytes, _) = render_both(&lines);
    let screen = replay(&bytes).unwrap();
    assert_eq!(screen.row(0, WIDTH), "⟦␛]52;c;QUFB␇⟧after");
}

#[test]
fn unsanitized_text_would_leak_which_is_why_the_sanitizer_exists() {
    for raw in ["ok\u{e0049}\u{e0067}", "x\u{e0100}"] {
        let (bytes, _) = render_both(&[raw.to_owned()]);
        assert!(
            replay(&bytes).is_err(),
            "{raw:?} did not leak raw; the checker is blind"
        );
    }
    let (bytes, _) = render_both(&["\u{1b}]52;c;QUFB\u{7}".to_owned()]);
    let screen = replay(&bytes).unwrap();
    assert_eq!(
        screen.row(0, WIDTH),
        "]52;c;QUFB",
        "ratatui leaves the body bare"
    );
}
