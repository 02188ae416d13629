//! Typed reading of one row's cells: each accessor turns a cell into a checked value or reports
//! why not (with the cell's location, the column and the value), so that rule code stays short.

use crate::plan::diagnostic::{Diagnostic, Report, quoted};
use crate::plan::input::raw::{Cell, Row, Value};
use crate::plan::layout::ascii_forms;
use crate::plan::location::Location;
use crate::plan::model::parse_integer;

/// The text of a cell as the rules see it: trimmed, numbers without a needless `.0`, `None`
/// when blank. An error cell is reported and reads as `None`.
pub(crate) fn text_of(cell: &Cell, column: &str, report: &mut Report) -> Option<String> {
    match &cell.value {
        Value::Empty | Value::Reported => None,
        Value::Text(t) => Some(ascii_forms(t).trim().to_string()).filter(|t| !t.is_empty()),
        Value::Number(f) => Some(match crate::plan::model::integer_from_float(*f) {
            Some(i) => i.to_string(),
            None => f.to_string(),
        }),
        Value::Bool(b) => Some(b.to_string()),
        Value::Date(d) => Some(d.clone()),
        Value::Error(e) => {
            report.push(Diagnostic::error(
                cell.location.clone(),
                format!("{column} is {e}"),
            ));
            None
        }
    }
}

/// Reads the cells of one row.
pub(crate) struct RowReader<'a> {
    row: &'a Row,
    report: &'a mut Report,
}

impl<'a> RowReader<'a> {
    /// A reader over `row` that reports into `report`.
    pub(crate) fn new(row: &'a Row, report: &'a mut Report) -> Self {
        Self { row, report }
    }

    /// Reports a problem of this row that no single parse found.
    pub(crate) fn push(&mut self, diagnostic: crate::plan::diagnostic::Diagnostic) {
        self.report.push(diagnostic);
    }

    /// Where the cell of `column` is (the sheet's column exists whenever this is asked).
    pub(crate) fn location(&self, column: &str) -> Option<Location> {
        self.row.cells.get(column).map(|c| c.location.clone())
    }

    /// The trimmed text of `column`, `None` when blank or absent.
    pub(crate) fn text(&mut self, column: &str) -> Option<String> {
        let cell = self.row.cells.get(column)?;
        text_of(cell, column, self.report)
    }

    /// A required value: reports an empty cell, or a value `parse` rejects. A column the sheet
    /// lacks was reported by the reader and is not reported again per row.
    pub(crate) fn required<T>(
        &mut self,
        column: &str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Option<T> {
        let cell = self.row.cells.get(column)?;
        match text_of(cell, column, self.report) {
            Some(text) => self.check(column, &text, parse),
            None => {
                self.missing(column);
                None
            }
        }
    }

    /// Reports `column` as empty when its cell is blank (an error cell was reported already).
    pub(crate) fn missing(&mut self, column: &str) {
        if let Some(cell) = self.row.cells.get(column)
            && cell.value.is_blank()
        {
            let location = cell.location.clone();
            self.report.push(Diagnostic::error(
                location,
                format!("{column} is empty (required)"),
            ));
        }
    }

    /// An optional value: `None` when blank, reported when `parse` rejects it.
    pub(crate) fn optional<T>(
        &mut self,
        column: &str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Option<T> {
        let text = self.text(column)?;
        self.check(column, &text, parse)
    }

    /// An optional integer-valued column (`4200`, `4200.0` or `"4200"`).
    pub(crate) fn optional_int<T>(
        &mut self,
        column: &str,
        make: impl Fn(i64) -> Result<T, String>,
    ) -> Option<T> {
        self.optional(column, |s| int_then(s, &make))
    }

    /// Reports an error at `column`'s cell (or nowhere better, the row's first cell).
    pub(crate) fn error_at(&mut self, column: &str, message: String) {
        let location = self
            .location(column)
            .or_else(|| self.row.cells.values().next().map(|c| c.location.clone()))
            .unwrap_or(Location::File);
        self.report.push(Diagnostic::error(location, message));
    }

    fn check<T>(
        &mut self,
        column: &str,
        text: &str,
        parse: impl Fn(&str) -> Result<T, String>,
    ) -> Option<T> {
        match parse(text) {
            Ok(v) => Some(v),
            Err(why) => {
                self.error_at(column, format!("{column} {} {why}", quoted(text)));
                None
            }
        }
    }
}

/// Parses an integer, then builds a value from it; the error names the expected kind.
pub(crate) fn int_then<T>(s: &str, make: impl Fn(i64) -> Result<T, String>) -> Result<T, String> {
    match parse_integer(s) {
        Some(n) => make(n),
        // Let the constructor word the message by giving it a value that is out of any range.
        None => make(i64::MIN)
            .map_err(|why| why.replacen("is not", "is not a whole number, expected", 1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::model::Mtu;

    #[test]
    fn full_width_forms_read_as_ascii() {
        assert_eq!(ascii_forms("２６"), "26");
        assert_eq!(ascii_forms("１７２．１６．１．１１"), "172.16.1.11");
        assert_eq!(ascii_forms("ｄｓｃｐ\u{3000}"), "dscp ");
        assert_eq!(ascii_forms("集群名称 lab"), "集群名称 lab");
        assert!(matches!(
            ascii_forms("plain"),
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn int_then_words_both_failures() {
        assert_eq!(int_then("4200.0", Mtu::new).map(Mtu::get), Ok(4200));
        assert_eq!(
            int_then("9500", Mtu::new).unwrap_err(),
            "is not an MTU (1280 to 9216)"
        );
        assert_eq!(
            int_then("big", Mtu::new).unwrap_err(),
            "is not a whole number, expected an MTU (1280 to 9216)"
        );
    }
}
