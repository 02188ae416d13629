//! What the commands print for people and tools, in one place so that every line is made the
//! same way: text from the input (paths, cell values, tarball member names, checksum lines,
//! server answers) escaped by [`crate::text::clean`], and the `error:`/`warning:`/`note:` label
//! coloured when `--color` asks for it on stderr.

use std::fmt::Write as _;
use std::io::{IsTerminal, Write};

use anstyle::{AnsiColor, Style};
use anyhow::Result;

use crate::plan::diagnostic::Severity;
use crate::text::{clean, needs_escape};

/// Prints `severity: message` to stderr, the message escaped, the label coloured when asked.
pub(crate) fn tell(severity: Severity, message: &str) {
    let label = format!("{severity}:");
    let style = match severity {
        Severity::Error => AnsiColor::Red.on_default().bold(),
        Severity::Warning => AnsiColor::Yellow.on_default().bold(),
        Severity::Note => Style::new().bold(),
    };
    let label = if crate::cmd::ui().colored(std::io::stderr().is_terminal()) {
        format!("{}{label}{}", style.render(), style.render_reset())
    } else {
        label
    };
    eprintln!("{label} {}", clean(message));
}

/// Prints `error: message` to stderr.
pub(crate) fn error(message: &str) {
    tell(Severity::Error, message);
}

/// Prints `warning: message` to stderr.
pub(crate) fn warning(message: &str) {
    tell(Severity::Warning, message);
}

/// Prints a line for people (what was written, the next step) to stderr, escaped; nothing with
/// `-q`.
pub(crate) fn say(message: &str) {
    if !crate::cmd::ui().quiet {
        eprintln!("{}", clean(message));
    }
}

/// Prints a line for people to stderr, escaped, only with `-v`.
pub(crate) fn detail(message: &str) {
    if crate::cmd::ui().verbose {
        eprintln!("{}", clean(message));
    }
}

/// Writes a line of the command's own output (what was asked for) to `out`, escaped.
pub(crate) fn print(out: &mut impl Write, message: &str) -> Result<()> {
    writeln!(out, "{}", clean(message))?;
    Ok(())
}

/// A path as a word to paste into a shell command (quoted when it must be).
pub(crate) fn shell_word(path: &std::path::Path) -> String {
    let p = path.display().to_string();
    shlex::try_quote(&p).map_or_else(|_| p.clone(), std::borrow::Cow::into_owned)
}

/// `value` as pretty JSON with a trailing newline, every character [`crate::text::clean`]
/// would escape written as a `\u` escape: the document means the same, and no DEL, C1 or bidi
/// control reaches a terminal raw (serde_json escapes only the C0 ones).
pub(crate) fn json(value: &impl serde::Serialize) -> Result<String> {
    let text = serde_json::to_string_pretty(value)?;
    let mut out = String::with_capacity(text.len() + 1);
    for c in text.chars() {
        // Outside strings the document is ASCII and its only control is the newline between
        // lines; inside them serde_json has already escaped C0, newlines included.
        if needs_escape(c) && c != '\n' {
            let _ = write!(out, "\\u{:04x}", u32::from(c));
        } else {
            out.push(c);
        }
    }
    out.push('\n');
    Ok(out)
}

/// Writes [`json`] of `value` to stdout.
pub(crate) fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(json(value)?.as_bytes())?;
    out.flush()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escapes_what_clean_escapes_and_stays_the_same_document() {
        let value = serde_json::json!({"name": "a\u{1b}[31m\u{7f}\u{85}\u{202e}b\nc 主机"});
        let text = json(&value).unwrap();
        assert!(
            !text.chars().any(|c| needs_escape(c) && c != '\n'),
            "{text:?}"
        );
        assert!(
            text.contains(r"\u001b[31m\u007f\u0085\u202eb\nc 主机"),
            "{text}"
        );
        let back: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(back, value);
    }
}
