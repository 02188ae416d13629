//! The plan as read, before any rule is applied: three tables of cells, each cell with its
//! location. Both readers produce this, so one validator serves workbooks and JSON alike.

use std::collections::BTreeMap;

use crate::plan::diagnostic::Report;
use crate::plan::location::Location;

/// What a cell holds, with the reader's types already left behind.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Nothing (also a formula with no cached value).
    Empty,
    /// Text, as written (not trimmed).
    Text(String),
    /// A number; Excel stores integers as floats.
    Number(f64),
    /// A boolean cell.
    Bool(bool),
    /// A date or time cell, shown as the reader prints it.
    Date(String),
    /// A cell that holds no usable value: an error such as `#N/A`, a formula with no saved
    /// result, a JSON object. The text completes "COLUMN is …".
    Error(String),
    /// A cell of a problem the reader reported once for a whole range (formulas with no saved
    /// result): no usable value, and nothing more to say about it.
    Reported,
}

/// One cell.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell {
    /// Its content.
    pub value: Value,
    /// Where it is.
    pub location: Location,
}

/// One data row: the cells of the plan's columns that the sheet has, by canonical column name.
/// A column the sheet has is always present, empty or not, so its location can be reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Row {
    /// Cells by canonical column name.
    pub cells: BTreeMap<&'static str, Cell>,
    /// For a NIC listed under its host (JSON plans): the index of that host's row in
    /// `servers`, so the link does not depend on the host's name being valid or unique.
    pub owner: Option<usize>,
}

/// One sheet of the plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Where the table as a whole is (the sheet, or the JSON member).
    pub location: Location,
    /// Data rows, empty ones already skipped.
    pub rows: Vec<Row>,
}

/// The three tables of a plan, each absent when its sheet was not found (already reported).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawPlan {
    /// Key/value rows of `Cluster` (columns `key` and `value`).
    pub cluster: Option<Table>,
    /// Rows of `Servers`.
    pub servers: Option<Table>,
    /// Rows of `NICs`.
    pub nics: Option<Table>,
    /// What the reader found wrong or noteworthy (missing sheets and columns, ignored columns).
    pub report: Report,
}

impl Value {
    /// True when the cell holds nothing, or only spaces.
    pub fn is_blank(&self) -> bool {
        match self {
            Value::Empty => true,
            Value::Text(t) => t.trim().is_empty(),
            _ => false,
        }
    }
}
