//! Stored text made safe to print: control characters escaped.
//!
//! Much of what jitterlab prints was typed by someone else or written by
//! another program: run and spec names, configuration, scenario and
//! neighbour names, command lines, a neighbour's stderr, notes and failure
//! messages kept in the results database — which may come from another
//! machine, or be edited by hand. Printed raw, an ESC sequence in any of
//! them recolours or rewrites the reader's terminal, and a newline forges
//! a line of the report (`runs` printed both before this module).
//!
//! [`shown`](crate::output::shown) (in `crate::output`, the one path every layer uses) is the
//! one convention, used by every renderer of text and
//! Markdown (the run listing, the run summary, the tables, their
//! explanations and footnotes, the comparison), by the bench's live notes
//! and by `main`'s error line: each control character (Unicode `Cc`: C0,
//! DEL, C1) and each bidirectional-formatting character (which can reorder
//! what a terminal shows, "Trojan Source") is written as Rust writes it in
//! a string literal — `\n`, `\r`, `\t`, `\0`, else `\u{1b}` — and every
//! other character as it is. Text without such characters is returned
//! unchanged, without a copy. CSV fields get the same treatment (a spreadsheet
//! needs no terminal escapes either); JSON keeps every string exact, as
//! JSON's own escapes already write control characters as `\u001b`.
//! [`escape`] is HTML's: the HTML page and the tables it holds apply it on
//! top of `shown`.

/// Text made safe for HTML text and quoted attribute values: `&`, `<`,
/// `>`, `"` and `'` as XML's own escapes.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use crate::output::shown;
    use std::borrow::Cow;

    #[test]
    fn control_characters_are_written_as_in_a_rust_literal() {
        assert_eq!(shown("evil\u{1b}[31m\nrun"), "evil\\u{1b}[31m\\nrun");
        assert_eq!(
            shown("a\tb\rc\0d\u{7f}e\u{9b}f"),
            "a\\tb\\rc\\0d\\u{7f}e\\u{9b}f"
        );
        assert_eq!(shown("abc\u{202e}cba"), "abc\\u{202e}cba");
        // Printable text, µ and – included, is left alone and not copied.
        assert!(matches!(
            shown("tuned/cpu/host 57.9 µs – ok"),
            Cow::Borrowed(_)
        ));
        assert_eq!(shown("C:\\path \"quoted\""), "C:\\path \"quoted\"");
    }
}
