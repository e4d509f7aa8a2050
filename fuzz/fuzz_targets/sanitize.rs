//! Any text through the sanitizer: it never panics, nothing it returns is a
//! control character, and sanitizing again changes nothing.
#![no_main]

use holdfast::core::sanitize::sanitize;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let clean = sanitize(&text);
    assert!(
        !clean.chars().any(char::is_control),
        "a control character survived: {clean:?}"
    );
    assert_eq!(sanitize(&clean), clean, "sanitizing is not idempotent");
});
