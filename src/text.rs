//! Making text from outside safe to print: result files, a Grafana server's answers, URLs that
//! carry a password. Every message built from such text goes through these before it reaches
//! a terminal.

use std::fmt::Write as _;

/// A string from outside made safe to print: control characters (C0, DEL and C1: escape
/// sequences, NUL, newlines inside a message), bidirectional controls (which reorder the text
/// around them on screen) and the noncharacters U+FFFE and U+FFFF become visible escapes such
/// as `\u{1b}` and `\u{202e}` (see [`needs_escape`]).
pub(crate) fn clean(s: &str) -> String {
    clean_but(s, None)
}

/// [`clean`], keeping one harmless control character (a newline, in markup).
pub(crate) fn clean_but(s: &str, keep: Option<char>) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if needs_escape(c) && Some(c) != keep {
            let _ = write!(out, "{}", c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    out
}

/// Whether `c` must not reach a screen as it is: a control character (Unicode's `Cc`: C0, DEL,
/// C1), a bidirectional formatting character (the embeddings, overrides and isolates, the
/// left-to-right, right-to-left and Arabic letter marks), or one of the noncharacters U+FFFE
/// and U+FFFF, which XML 1.0 forbids (one in a JUnit report makes the whole file unreadable)
/// and which render as nothing or a replacement glyph.
pub(crate) fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{200e}'
                | '\u{200f}'
                | '\u{061c}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{fffe}'
                | '\u{ffff}'
        )
}

/// The first `max` characters of `s`, with `…` when some were cut.
pub(crate) fn cap(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &s[..end]),
        None => s.to_string(),
    }
}

/// `s` with the password of every URL in it replaced by `***`: `http://user:pass@host/` becomes
/// `http://user:***@host/`. A URL ends where prose does (whitespace, a quote, `<`, `>`); its
/// userinfo is everything before its last `@`, so a password holding `/` or `@` is covered too.
pub(crate) fn redact_passwords(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("://") {
        let (head, tail) = rest.split_at(i + 3);
        out.push_str(head);
        let end = tail
            .find(|c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`'))
            .unwrap_or(tail.len());
        let url = &tail[..end];
        let password = url
            .rfind('@')
            .and_then(|at| url[..at].find(':').map(|colon| (colon + 1, at)));
        match password {
            Some((from, to)) => {
                out.push_str(&url[..from]);
                out.push_str("***");
                out.push_str(&url[to..]);
            }
            None => out.push_str(url),
        }
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_become_visible() {
        assert_eq!(clean("a\u{1b}[31mb\nc\0"), "a\\u{1b}[31mb\\u{a}c\\u{0}");
        assert_eq!(clean_but("a\nb\tc", Some('\n')), "a\nb\\u{9}c");
        assert_eq!(clean("gpu-001 ✅"), "gpu-001 ✅");
        assert_eq!(clean("a\u{7f}\u{85}\u{9b}b"), "a\\u{7f}\\u{85}\\u{9b}b");
    }

    #[test]
    fn bidi_controls_become_visible() {
        assert_eq!(clean("\u{202e}gnp.exe"), "\\u{202e}gnp.exe");
        for c in [
            '\u{200e}', '\u{200f}', '\u{061c}', '\u{202a}', '\u{202d}', '\u{2066}', '\u{2069}',
        ] {
            assert_eq!(clean(&c.to_string()), c.escape_unicode().to_string());
        }
        // Joiners and other format characters that reorder nothing stay as they are.
        assert_eq!(clean("a\u{200d}b\u{2070}"), "a\u{200d}b\u{2070}");
    }

    #[test]
    fn the_noncharacters_xml_forbids_become_visible() {
        assert_eq!(clean("a\u{fffe}b\u{ffff}"), "a\\u{fffe}b\\u{ffff}");
        // Those XML allows stay, as does the last character before them.
        assert_eq!(
            clean("\u{fdd0}\u{fffd}\u{1fffe}"),
            "\u{fdd0}\u{fffd}\u{1fffe}"
        );
    }

    #[test]
    fn cap_counts_characters_not_bytes() {
        assert_eq!(cap("ääää", 2), "ää…");
        assert_eq!(cap("abc", 3), "abc");
        assert_eq!(cap("", 0), "");
    }

    #[test]
    fn passwords_in_urls_are_redacted_and_nothing_else() {
        for (text, want) in [
            (
                "could not reach http://user:s3cret@127.0.0.1:1/api (GET)",
                "could not reach http://user:***@127.0.0.1:1/api (GET)",
            ),
            ("\"ftp://u:p@h\" is not", "\"ftp://u:***@h\" is not"),
            ("http://u:pa/ss@h/x", "http://u:***@h/x"),
            ("http://u:p@ss@h", "http://u:***@h"),
            (
                "a https://a:1@b and https://c:2@d",
                "a https://a:***@b and https://c:***@d",
            ),
            ("http://user@host:3000/", "http://user@host:3000/"),
            ("http://host:3000/api", "http://host:3000/api"),
            ("no url: here", "no url: here"),
            ("http://", "http://"),
            ("ünï http://ü:ß@ä", "ünï http://ü:***@ä"),
        ] {
            assert_eq!(redact_passwords(text), want, "{text}");
        }
    }
}
