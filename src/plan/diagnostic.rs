//! Problems found in a plan: each with a severity, a location and a message, collected into a
//! [`Report`] so that every problem is shown at once rather than one per run.

use std::fmt;

use serde::Serialize;

use crate::plan::location::Location;

/// How bad a problem is. Only errors stop generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The plan is wrong; nothing is generated.
    Error,
    /// Probably a mistake; generation goes on.
    Warning,
    /// Information only (an ignored column, for example).
    Note,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Note => "note",
        })
    }
}

/// One problem in the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// How bad it is.
    pub severity: Severity,
    /// Where it is.
    pub location: Location,
    /// What is wrong, starting with the column or key and the offending value.
    pub message: String,
}

impl Diagnostic {
    /// An error at `location`.
    pub fn error(location: Location, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            location,
            message: message.into(),
        }
    }

    /// A warning at `location`.
    pub fn warning(location: Location, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            location,
            message: message.into(),
        }
    }

    /// A note at `location`.
    pub fn note(location: Location, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Note,
            location,
            message: message.into(),
        }
    }

    /// The diagnostic as a line prefixed with its file: `plan.xlsx: NICs!D14: ip "…" is not …`.
    pub fn display_in<'a>(&'a self, file: &'a str) -> impl fmt::Display + 'a {
        DisplayIn {
            diagnostic: self,
            file,
        }
    }
}

struct DisplayIn<'a> {
    diagnostic: &'a Diagnostic,
    file: &'a str,
}

impl fmt::Display for DisplayIn<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.diagnostic.location {
            Location::File => write!(f, "{}: {}", self.file, self.diagnostic.message),
            loc => write!(f, "{}: {}: {}", self.file, loc, self.diagnostic.message),
        }
    }
}

/// Every problem found in one plan, in the order found (sheet by sheet, row by row, then the
/// rules that span rows).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    diagnostics: Vec<Diagnostic>,
}

impl Report {
    /// Adds a problem.
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.diagnostics.push(diagnostic);
    }

    /// Adds every problem of another report.
    pub fn extend(&mut self, other: Report) {
        self.diagnostics.extend(other.diagnostics);
    }

    /// All problems, in order.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// How many problems of this severity.
    pub fn count(&self, severity: Severity) -> usize {
        self.diagnostics
            .iter()
            .filter(|d| d.severity == severity)
            .count()
    }

    /// True when the plan cannot be used.
    pub fn has_errors(&self) -> bool {
        self.count(Severity::Error) > 0
    }

    /// A phrase such as `2 errors, 1 warning` for the closing line.
    pub fn summary(&self) -> String {
        let part = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
        format!(
            "{}, {}, {}",
            part(self.count(Severity::Error), "error"),
            part(self.count(Severity::Warning), "warning"),
            part(self.count(Severity::Note), "note")
        )
    }
}

/// Quotes a value from the plan for a message, escaping control characters and shortening it so
/// that a hostile or huge cell cannot garble the terminal.
pub(crate) fn quoted(value: &str) -> String {
    const MAX: usize = 80;
    let shown: String = value.chars().take(MAX).collect();
    let mut out = format!("{shown:?}");
    if value.chars().count() > MAX {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnostic_line_names_file_and_cell() {
        let d = Diagnostic::error(
            Location::Cell {
                sheet: "NICs".into(),
                row: 13,
                col: 3,
            },
            format!(
                "ip {} is not an address with a prefix length",
                quoted("10.0.0.300/24")
            ),
        );
        assert_eq!(
            d.display_in("plan.xlsx").to_string(),
            "plan.xlsx: NICs!D14: ip \"10.0.0.300/24\" is not an address with a prefix length"
        );
    }

    #[test]
    fn quoted_escapes_and_truncates() {
        assert_eq!(quoted("a\nb\"c"), "\"a\\nb\\\"c\"");
        assert_eq!(quoted("主机"), "\"主机\"");
        let long = "x".repeat(100);
        assert_eq!(quoted(&long), format!("\"{}\"…", "x".repeat(80)));
    }

    #[test]
    fn summary_counts_each_severity() {
        let mut r = Report::default();
        r.push(Diagnostic::error(Location::File, "a"));
        r.push(Diagnostic::warning(Location::File, "b"));
        r.push(Diagnostic::warning(Location::File, "c"));
        assert_eq!(r.summary(), "1 error, 2 warnings, 0 notes");
        assert!(r.has_errors());
    }
}
