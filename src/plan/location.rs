//! Where a value came from: a workbook cell (`NICs!D14`), a whole sheet, or a place in a JSON plan.
//!
//! Every diagnostic carries one of these so that an engineer can go straight to the cell.

use std::fmt;
use std::sync::Arc;

/// A place in the plan's source.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Location {
    /// The file as a whole (a missing sheet, a host with no NIC when no row exists).
    File,
    /// A sheet as a whole (a missing column).
    Sheet {
        /// The sheet's name as the workbook spells it (shared: every cell of a sheet has one).
        sheet: Arc<str>,
    },
    /// One cell, 0-based row and column as calamine counts them.
    Cell {
        /// The sheet's name as the workbook spells it (shared: every cell of a sheet has one).
        sheet: Arc<str>,
        /// 0-based row.
        row: u32,
        /// 0-based column.
        col: u32,
    },
    /// A rectangle of cells (`C2:C40`), 0-based and inclusive: one problem shared by every cell
    /// of it, said once.
    Range {
        /// The sheet's name as the workbook spells it (shared: every cell of a sheet has one).
        sheet: Arc<str>,
        /// Top-left cell: 0-based row and column.
        from: (u32, u32),
        /// Bottom-right cell.
        to: (u32, u32),
    },
    /// A path inside a JSON plan, such as `hosts[2].nics[0].ip`.
    Json {
        /// Dotted path with list indexes.
        path: String,
    },
}

impl Location {
    /// The sheet this location is on, if any.
    pub fn sheet(&self) -> Option<&str> {
        match self {
            Location::Sheet { sheet }
            | Location::Cell { sheet, .. }
            | Location::Range { sheet, .. } => Some(sheet),
            Location::File | Location::Json { .. } => None,
        }
    }

    /// The A1 reference of a cell or range location (`D14`, `C2:C40`), if this is one.
    pub fn cell(&self) -> Option<String> {
        match self {
            Location::Cell { row, col, .. } => Some(a1(*row, *col)),
            Location::Range { from, to, .. } => {
                Some(format!("{}:{}", a1(from.0, from.1), a1(to.0, to.1)))
            }
            _ => None,
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::File => Ok(()),
            Location::Sheet { sheet } => write!(f, "{}", sheet_ref(sheet)),
            Location::Cell { sheet, row, col } => {
                write!(f, "{}!{}", sheet_ref(sheet), a1(*row, *col))
            }
            Location::Range { sheet, .. } => {
                write!(
                    f,
                    "{}!{}",
                    sheet_ref(sheet),
                    self.cell().unwrap_or_default()
                )
            }
            Location::Json { path } => f.write_str(path),
        }
    }
}

/// Quotes a sheet name the way Excel does in references when it is not a plain word.
fn sheet_ref(sheet: &str) -> String {
    if sheet.chars().all(|c| c.is_alphanumeric() || c == '_') {
        sheet.to_string()
    } else {
        format!("'{}'", sheet.replace('\'', "''"))
    }
}

/// Converts 0-based row and column to an A1 reference (`0, 0` is `A1`, `9, 26` is `AA10`).
pub(crate) fn a1(row: u32, col: u32) -> String {
    let mut letters = Vec::new();
    let mut n = u64::from(col) + 1;
    while n > 0 {
        let rem = ((n - 1) % 26) as u8;
        letters.push(char::from(b'A' + rem));
        n = (n - 1) / 26;
    }
    letters.reverse();
    format!(
        "{}{}",
        letters.into_iter().collect::<String>(),
        u64::from(row) + 1
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a1_references() {
        assert_eq!(a1(0, 0), "A1");
        assert_eq!(a1(13, 3), "D14");
        assert_eq!(a1(9, 25), "Z10");
        assert_eq!(a1(9, 26), "AA10");
        assert_eq!(a1(0, 701), "ZZ1");
        assert_eq!(a1(0, 702), "AAA1");
        assert_eq!(a1(u32::MAX, u32::MAX), "MWLQKWV4294967296");
    }

    #[test]
    fn sheet_names_with_spaces_are_quoted() {
        let loc = Location::Cell {
            sheet: "RoCE NICs".into(),
            row: 1,
            col: 1,
        };
        assert_eq!(loc.to_string(), "'RoCE NICs'!B2");
        let loc = Location::Cell {
            sheet: "网卡".into(),
            row: 0,
            col: 2,
        };
        assert_eq!(loc.to_string(), "网卡!C1");
        let loc = Location::Range {
            sheet: "RoCE NICs".into(),
            from: (1, 2),
            to: (39, 2),
        };
        assert_eq!(loc.to_string(), "'RoCE NICs'!C2:C40");
        assert_eq!(loc.cell().as_deref(), Some("C2:C40"));
    }
}
