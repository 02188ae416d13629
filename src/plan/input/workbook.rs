//! Reads a workbook (`.xlsx`, `.xlsm`, `.xls`, `.ods`) with calamine into a [`RawPlan`]. This is
//! the only module that sees calamine types. It finds the sheets and header rows through the
//! aliases of [`crate::plan::layout`], maps columns, skips empty rows and fills merged cells; it judges
//! no value.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{Cursor, Read, Seek};

use anyhow::{Context, Result};
use calamine::{Data, Dimensions, Range, Reader, SheetVisible, Sheets, open_workbook_auto_from_rs};

use crate::plan::diagnostic::{Diagnostic, Report, quoted};
use crate::plan::input::guard::{self, Checked, MAX_SHEET_CELLS, thousands};
use crate::plan::input::raw::{Cell, RawPlan, Row, Table, Value};
use crate::plan::layout::{self, Column, SHEETS, Sheet};
use crate::plan::location::{Location, a1};

/// How many rows from the top of a sheet are searched for its header row (title rows above the
/// header are common in planning workbooks).
const HEADER_SEARCH_ROWS: u32 = 20;

/// Reads the plan's three sheets from workbook bytes: the guard first, then calamine. Fails only
/// when the bytes are not a workbook calamine can open or the guard refuses them; everything
/// else is a diagnostic in the returned plan.
pub(crate) fn read(bytes: &[u8]) -> Result<RawPlan> {
    let checked = guard::check(bytes)?;
    read_book(open(Cursor::new(bytes))?, &checked)
}

fn open<RS: Read + Seek + Clone>(reader: RS) -> Result<Sheets<RS>> {
    open_workbook_auto_from_rs(reader)
        .map_err(|e| anyhow::anyhow!("not a readable workbook (.xlsx, .xlsm, .xls or .ods): {e}"))
}

/// Reads the plan from an opened workbook the guard has accepted.
fn read_book<RS: Read + Seek>(mut book: Sheets<RS>, checked: &Checked) -> Result<RawPlan> {
    let visibility: BTreeMap<String, SheetVisible> = book
        .sheets_metadata()
        .iter()
        .map(|m| (m.name.clone(), m.visible))
        .collect();
    let names = book.sheet_names();
    let mut plan = RawPlan::default();
    for spec in SHEETS {
        let mut found: Vec<&String> = names.iter().filter(|n| spec.is_named(n)).collect();
        let hidden = |n: &String| {
            visibility
                .get(n)
                .is_some_and(|v| *v != SheetVisible::Visible)
        };
        // A visible sheet is the one the user sees and edits: a hidden one beside it (an old copy
        // put away) is ignored, said once.
        if found.len() > 1 && found.iter().filter(|n| !hidden(n)).count() == 1 {
            let visible = found.iter().find(|n| !hidden(n)).map(|n| quoted(n));
            for n in found.iter().filter(|n| hidden(n)) {
                plan.report.push(Diagnostic::warning(
                    Location::File,
                    format!(
                        "sheet {} is hidden in the workbook and is ignored; the visible sheet {} \
                         is read as the plan's `{}` sheet",
                        quoted(n),
                        visible.clone().unwrap_or_default(),
                        spec.name
                    ),
                ));
            }
            found.retain(|n| !hidden(n));
        }
        let table = match found.as_slice() {
            [] => {
                plan.report
                    .push(Diagnostic::error(Location::File, missing_sheet(spec)));
                None
            }
            [name] => {
                if let Some(how) = visibility.get(*name).and_then(|v| hidden_how(*v)) {
                    plan.report.push(Diagnostic::warning(
                        Location::Sheet {
                            sheet: name.as_str().into(),
                        },
                        format!(
                            "sheet {} is hidden in the workbook ({how}); it is read as the \
                             plan's `{}` sheet",
                            quoted(name),
                            spec.name
                        ),
                    ));
                }
                let range = book
                    .worksheet_range(name)
                    .with_context(|| format!("could not read sheet {}", quoted(name)))?;
                let regions = if checked.may_have_merges(name) {
                    merged_regions(&mut book, name)
                } else {
                    Vec::new()
                };
                let merges = merged_cells(&regions, &range)
                    .with_context(|| format!("sheet {}", quoted(name)))?;
                // Formulas are read only to explain empty cells: a formula whose result was never
                // saved (workbooks written by scripts) reads as empty. The guard saw whether any
                // cell is one; reading them parses the sheet's XML a second time.
                let formulas = checked
                    .uncached_formulas
                    .then(|| book.worksheet_formula(name).ok())
                    .flatten();
                let sheet = SheetCells {
                    range: &range,
                    merges: &merges,
                    formulas: formulas.as_ref(),
                };
                read_table(spec, name, &sheet, &mut plan.report)
            }
            [first, rest @ ..] => {
                let others: Vec<String> = rest.iter().map(|n| quoted(n)).collect();
                plan.report.push(Diagnostic::error(
                    Location::File,
                    format!(
                        "sheets {} and {} all name the `{}` sheet; keep one",
                        quoted(first),
                        others.join(", "),
                        spec.name
                    ),
                ));
                None
            }
        };
        match spec.name {
            "Cluster" => plan.cluster = table,
            "Servers" => plan.servers = table,
            _ => plan.nics = table,
        }
    }
    Ok(plan)
}

/// How a sheet is hidden, in words; `None` when it is visible.
fn hidden_how(visible: SheetVisible) -> Option<&'static str> {
    match visible {
        SheetVisible::Visible => None,
        SheetVisible::Hidden => Some("hidden: Unhide in Excel or LibreOffice shows it"),
        SheetVisible::VeryHidden => Some("very hidden: only a macro or the VBA editor shows it"),
    }
}

/// The cells of merged regions within `range`, each mapped to its region's top-left cell. The
/// regions may cover at most [`MAX_SHEET_CELLS`] cells of the range, so that a workbook cannot
/// make this map larger than calamine's own range.
fn merged_cells(
    regions: &[Dimensions],
    range: &Range<Data>,
) -> Result<HashMap<(u32, u32), (u32, u32)>> {
    let mut cells = HashMap::new();
    let (Some((top, left)), Some((bottom, right))) = (range.start(), range.end()) else {
        return Ok(cells);
    };
    let mut covered = 0u64;
    for m in regions {
        let (rows, cols) = (
            m.start.0.max(top)..=m.end.0.min(bottom),
            m.start.1.max(left)..=m.end.1.min(right),
        );
        if rows.is_empty() || cols.is_empty() {
            continue;
        }
        covered +=
            u64::from(rows.end() - rows.start() + 1) * u64::from(cols.end() - cols.start() + 1);
        if covered > MAX_SHEET_CELLS {
            anyhow::bail!(
                "its merged regions cover more than {} cells in use (limit)",
                thousands(MAX_SHEET_CELLS)
            );
        }
        for row in rows {
            for col in cols.clone() {
                if (row, col) != m.start {
                    cells.insert((row, col), m.start);
                }
            }
        }
    }
    Ok(cells)
}

fn missing_sheet(spec: &Sheet) -> String {
    format!(
        "no sheet `{}` (also accepted: {})",
        spec.name,
        spec.aliases.join(", ")
    )
}

/// Merged regions where calamine knows them (xlsx, xls); ods merges read as the top-left only.
fn merged_regions<RS: Read + Seek>(book: &mut Sheets<RS>, name: &str) -> Vec<Dimensions> {
    match book {
        Sheets::Xlsx(x) => x.merge_cells_by_sheet_name(name).unwrap_or_default(),
        Sheets::Xls(x) => x.merge_cells_by_sheet_name(name).unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// A sheet's cells as calamine read them, with its merged regions and formulas.
struct SheetCells<'a> {
    range: &'a Range<Data>,
    merges: &'a HashMap<(u32, u32), (u32, u32)>,
    formulas: Option<&'a Range<String>>,
}

impl SheetCells<'_> {
    /// The value at an absolute position; a cell inside a merged region reads as its top-left.
    fn data(&self, row: u32, col: u32) -> &Data {
        let (row, col) = self.merges.get(&(row, col)).copied().unwrap_or((row, col));
        self.range.get_value((row, col)).unwrap_or(&Data::Empty)
    }

    /// The formula of a cell that has one but no saved result at all (a saved result that is
    /// the empty string is a result).
    fn unsaved_formula(&self, row: u32, col: u32) -> Option<&str> {
        let formula = self
            .formulas
            .and_then(|f| f.get_value((row, col)))
            .filter(|f| !f.is_empty())?;
        (*self.data(row, col) == Data::Empty).then_some(formula.trim_start_matches('='))
    }

    /// The cell as a [`Value`]. A formula cell with no saved result at all is flagged rather
    /// than read as empty; one whose saved result is the empty string stays empty.
    fn value(&self, row: u32, col: u32) -> Value {
        match self.unsaved_formula(row, col) {
            Some(f) => Value::Error(format!(
                "a formula with no saved result (`={f}`); open and save the workbook in Excel or LibreOffice"
            )),
            None => value_of(self.data(row, col)),
        }
    }
}

/// A rectangle of cells, 0-based (row, column), inclusive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rect {
    from: (u32, u32),
    to: (u32, u32),
}

/// The cells of the plan's columns in `rows` that hold a formula with no saved result, as
/// rectangles: runs of adjacent columns within a row, joined with the same run of the rows below.
/// A workbook written by a script has whole columns of them, which one message per range says
/// better than one per cell. Only a run per mapped column is open at a time, so this takes no
/// memory beyond the rectangles found.
fn unsaved_formula_ranges(
    cells: &SheetCells<'_>,
    columns: &BTreeMap<u32, &'static Column>,
    rows: std::ops::RangeInclusive<u32>,
) -> Vec<Rect> {
    let mut done = Vec::new();
    let mut open: Vec<Rect> = Vec::new();
    for row in rows {
        let mut runs: Vec<(u32, u32)> = Vec::new();
        for &col in columns.keys() {
            if cells.unsaved_formula(row, col).is_none() {
                continue;
            }
            match runs.last_mut() {
                Some(run) if run.1.checked_add(1) == Some(col) => run.1 = col,
                _ => runs.push((col, col)),
            }
        }
        let mut still_open = Vec::with_capacity(runs.len());
        for (left, right) in runs {
            let above = open.iter().position(|r| {
                r.from.1 == left && r.to.1 == right && r.to.0.checked_add(1) == Some(row)
            });
            match above {
                Some(i) => {
                    let mut r = open.swap_remove(i);
                    r.to.0 = row;
                    still_open.push(r);
                }
                None => still_open.push(Rect {
                    from: (row, left),
                    to: (row, right),
                }),
            }
        }
        done.append(&mut open);
        open = still_open;
    }
    done.append(&mut open);
    done.sort_by_key(|r| r.from);
    done
}

/// Reports each range of more than one formula cell with no saved result once, naming its
/// columns and its first formula; returns the cells so reported. A single such cell is left to
/// read as an error of its own, which names its column (or Cluster key) as every cell error does.
fn report_unsaved_formulas(
    sheet: &str,
    cells: &SheetCells<'_>,
    columns: &BTreeMap<u32, &'static Column>,
    rows: std::ops::RangeInclusive<u32>,
    report: &mut Report,
) -> HashSet<(u32, u32)> {
    let mut reported = HashSet::new();
    for r in unsaved_formula_ranges(cells, columns, rows) {
        let count = u64::from(r.to.0 - r.from.0 + 1) * u64::from(r.to.1 - r.from.1 + 1);
        if count < 2 {
            continue;
        }
        let names: Vec<&str> = columns
            .range(r.from.1..=r.to.1)
            .map(|(_, c)| c.name)
            .collect();
        let first = cells
            .unsaved_formula(r.from.0, r.from.1)
            .unwrap_or_default();
        report.push(Diagnostic::error(
            Location::Range {
                sheet: sheet.into(),
                from: r.from,
                to: r.to,
            },
            format!(
                "{} formulas with no saved result in {} {} (the first is `={first}`); open \
                 and save the workbook in Excel or LibreOffice",
                thousands(count),
                if names.len() == 1 {
                    "column"
                } else {
                    "columns"
                },
                names.join(", "),
            ),
        ));
        for row in r.from.0..=r.to.0 {
            for col in r.from.1..=r.to.1 {
                reported.insert((row, col));
            }
        }
    }
    reported
}

/// Reads one sheet: header row, column mapping, data rows. `None` when the sheet has no usable
/// header row (reported), so that no rule runs on rows that could not be read.
fn read_table(
    spec: &'static Sheet,
    sheet: &str,
    cells: &SheetCells<'_>,
    report: &mut Report,
) -> Option<Table> {
    // One name shared by every cell's location.
    let name: std::sync::Arc<str> = sheet.into();
    let table = |rows| Table {
        location: Location::Sheet {
            sheet: name.clone(),
        },
        rows,
    };
    let (Some((top, left)), Some((bottom, right))) = (cells.range.start(), cells.range.end())
    else {
        report.push(Diagnostic::error(
            Location::Sheet {
                sheet: name.clone(),
            },
            format!(
                "sheet is empty; it needs a header row with {}",
                required_list(spec)
            ),
        ));
        return None;
    };
    let cell_at = |row: u32, col: u32| cells.data(row, col);
    let loc = |row: u32, col: u32| Location::Cell {
        sheet: name.clone(),
        row,
        col,
    };

    // The header row is the first row that names the sheet's leading column (`hostname`, `key`).
    let leading = spec.columns[0].name;
    let header = (top..=bottom.min(top.saturating_add(HEADER_SEARCH_ROWS - 1))).find(|&row| {
        (left..=right)
            .filter_map(|col| header_text(cell_at(row, col)))
            .any(|h| spec.column(&h).is_some_and(|c| c.name == leading))
    });

    // A header over two rows (merged cells, or a group label above some names): the row below
    // the header names columns the header row does not. Each column then takes the name of
    // whichever of the two rows names a column, the lower first, and the data starts below both.
    let known = |h: &str| spec.column(h).is_some();
    let second = header.filter(|&row| {
        row < bottom
            && (left..=right).any(|col| {
                header_text(cell_at(row + 1, col)).is_some_and(|below| {
                    known(&below)
                        && !(left..=right).any(|c| {
                            header_text(cell_at(row, c)).is_some_and(|h| {
                                spec.column(&h).map(|c| c.name)
                                    == spec.column(&below).map(|c| c.name)
                            })
                        })
                })
            })
    });
    let (columns, first_data_row) =
        match header {
            Some(row) if second.is_some() => {
                let header_at = |col| {
                    let below = header_text(cell_at(row + 1, col)).filter(|h| known(h));
                    below.or_else(|| header_text(cell_at(row, col)))
                };
                report.push(Diagnostic::note(
                    loc(row, left),
                    format!(
                        "the header spans rows {} and {}: read as one",
                        row + 1,
                        row + 2
                    ),
                ));
                (
                    map_header(spec, row, left..=right, &header_at, &loc, report),
                    row + 2,
                )
            }
            Some(row) => {
                let header_at = |col| header_text(cell_at(row, col));
                (
                    map_header(spec, row, left..=right, &header_at, &loc, report),
                    row + 1,
                )
            }
            // A key/value sheet without headers is still unambiguous: key in the first column,
            // value in the second.
            None if spec.name == layout::CLUSTER.name => {
                report.push(Diagnostic::note(
                    Location::Sheet {
                        sheet: name.clone(),
                    },
                    "no `key`/`value` header row; reading the first two columns as key and value",
                ));
                let cols = BTreeMap::from([(left, &spec.columns[0]), (left + 1, &spec.columns[1])]);
                (cols, top)
            }
            None => {
                report.push(Diagnostic::error(
                Location::Sheet { sheet: name.clone() },
                format!(
                    "no header row: none of the first {HEADER_SEARCH_ROWS} rows has a `{}` column",
                    spec.columns[0].name
                ),
            ));
                return None;
            }
        };

    let reported = report_unsaved_formulas(sheet, cells, &columns, first_data_row..=bottom, report);
    let mut rows = Vec::new();
    for row in first_data_row..=bottom {
        let cells: BTreeMap<&'static str, Cell> = columns
            .iter()
            .map(|(&col, column)| {
                (
                    column.name,
                    Cell {
                        value: if reported.contains(&(row, col)) {
                            Value::Reported
                        } else {
                            cells.value(row, col)
                        },
                        location: loc(row, col),
                    },
                )
            })
            .collect();
        if !cells.values().all(|c| c.value.is_blank()) {
            rows.push(Row { cells, owner: None });
        }
    }
    Some(table(rows))
}

/// Maps the header row's cells to the plan's columns, reporting unknown, duplicate and missing
/// columns.
fn map_header(
    spec: &'static Sheet,
    row: u32,
    cols: std::ops::RangeInclusive<u32>,
    header_at: &dyn Fn(u32) -> Option<String>,
    loc: &dyn Fn(u32, u32) -> Location,
    report: &mut Report,
) -> BTreeMap<u32, &'static Column> {
    let mut mapped: BTreeMap<u32, &'static Column> = BTreeMap::new();
    for col in cols {
        let Some(text) = header_at(col) else { continue };
        match spec.column(&text) {
            Some(column) => {
                if let Some((&first, _)) = mapped.iter().find(|(_, c)| c.name == column.name) {
                    report.push(Diagnostic::error(
                        loc(row, col),
                        format!(
                            "column {} gives `{}` again (already at {}); keep one",
                            quoted(&text),
                            column.name,
                            a1(row, first)
                        ),
                    ));
                } else {
                    mapped.insert(col, column);
                }
            }
            // A column near a known one is likely a typo of it: a warning that says which;
            // any other column (a sheet's own notes, rack, U position) is a note.
            None => match crate::plan::layout::suggest(
                &text,
                spec.columns.iter().map(|c| (c.name, c.aliases)),
            ) {
                Some(meant) => report.push(Diagnostic::warning(
                    loc(row, col),
                    format!(
                        "column {} is not part of the plan and is ignored; did you mean {meant}?",
                        quoted(&text)
                    ),
                )),
                None => report.push(Diagnostic::note(
                    loc(row, col),
                    format!(
                        "column {} is not part of the plan and is ignored",
                        quoted(&text)
                    ),
                )),
            },
        }
    }
    for column in spec.columns.iter().filter(|c| c.required) {
        if !mapped.values().any(|c| c.name == column.name) {
            let sheet = loc(row, 0).sheet().unwrap_or_default().to_string();
            report.push(Diagnostic::error(
                Location::Sheet {
                    sheet: sheet.into(),
                },
                format!(
                    "no column `{}` in the header row {} (also accepted: {})",
                    column.name,
                    row + 1,
                    column.aliases.join(", ")
                ),
            ));
        }
    }
    mapped
}

fn required_list(spec: &Sheet) -> String {
    let names: Vec<String> = spec
        .columns
        .iter()
        .filter(|c| c.required)
        .map(|c| format!("`{}`", c.name))
        .collect();
    names.join(", ")
}

fn header_text(data: &Data) -> Option<String> {
    match data {
        Data::String(s) if !s.trim().is_empty() => Some(s.clone()),
        _ => None,
    }
}

fn value_of(data: &Data) -> Value {
    match data {
        Data::Empty => Value::Empty,
        Data::String(s) => Value::Text(s.clone()),
        Data::Float(f) => Value::Number(*f),
        #[allow(clippy::cast_precision_loss)] // cell integers in a plan are far below 2^53
        Data::Int(i) => Value::Number(*i as f64),
        Data::Bool(b) => Value::Bool(*b),
        Data::DateTime(d) => Value::Date(d.to_string()),
        Data::DateTimeIso(s) | Data::DurationIso(s) => Value::Date(s.clone()),
        Data::Error(e) => Value::Error(format!("the error value {e}, not a value")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ranges of a sheet whose formula cells are `cells` (none with a saved result), with
    /// every column from A to F mapped but D.
    fn ranges(cells: &[(u32, u32)]) -> Vec<String> {
        let mut formulas: Range<String> = Range::new((0, 0), (9, 5));
        for &(row, col) in cells {
            formulas.set_value((row, col), "=1+1".to_string());
        }
        let data: Range<Data> = Range::new((0, 0), (9, 5));
        let merges = HashMap::new();
        let sheet = SheetCells {
            range: &data,
            merges: &merges,
            formulas: Some(&formulas),
        };
        let columns: BTreeMap<u32, &'static Column> = [0, 1, 2, 4, 5]
            .into_iter()
            .map(|c| (c, &layout::NICS.columns[0]))
            .collect();
        unsaved_formula_ranges(&sheet, &columns, 1..=9)
            .iter()
            .map(|r| format!("{}:{}", a1(r.from.0, r.from.1), a1(r.to.0, r.to.1)))
            .collect()
    }

    #[test]
    fn a_refused_workbook_ends_with_the_guards_message() {
        // Rows enough that the guard walks a while through the sheet, then a cell at the last
        // row and column: refused when the guard reaches it, before calamine reads anything.
        let mut book = rust_xlsxwriter::Workbook::new();
        let nics = book.add_worksheet().set_name("NICs").unwrap();
        for row in 0..30_000u32 {
            for col in 0..4u16 {
                nics.write_number(row, col, f64::from(row) * 7.1 + f64::from(col))
                    .unwrap();
            }
        }
        nics.write_string(1_048_575, 16_383, "stray").unwrap();
        let bytes = book.save_to_buffer().unwrap();
        let expected = guard::check(&bytes).unwrap_err().to_string();
        assert!(expected.contains("XFD1048576"), "{expected}");
        let got = read(&bytes).unwrap_err().to_string();
        assert_eq!(got, expected);
    }

    #[test]
    fn unsaved_formulas_group_into_column_runs_and_blocks() {
        // A column run, and a block of two columns.
        let mut cells: Vec<(u32, u32)> = (1..=8).map(|r| (r, 2)).collect();
        cells.extend((3..=5).flat_map(|r| [(r, 4), (r, 5)]));
        assert_eq!(ranges(&cells), ["C2:C9", "E4:F6"]);
        // An L: the row that is wider starts a new block; a cell across an unmapped column (D)
        // and one in the header row are not joined or counted.
        let cells = [(1, 0), (2, 0), (3, 0), (3, 1), (2, 4), (0, 0)];
        assert_eq!(ranges(&cells), ["A2:A3", "E3:E3", "A4:B4"]);
        // Nothing to report.
        assert!(ranges(&[]).is_empty());
    }
}
