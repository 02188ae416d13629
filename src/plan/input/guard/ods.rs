//! An ods `<table:table>`: its rows and cells with their repeats, laid out as calamine lays them
//! (each row from column A), and the text each repeated cell is copied with.

use anyhow::Result;
use quick_xml::events::BytesStart;

use super::xml::{attr, digits};
use super::{Area, Tally, add_cell_text, check_area};

/// An ods `<table:table>` being scanned.
#[derive(Default)]
pub(super) struct OdsTable {
    pub(super) name: String,
    pub(super) row: u64,
    pub(super) row_repeats: u64,
    pub(super) col: u64,
    pub(super) area: Area,
    /// The current cell: its column repeats, whether it holds a value, its text.
    pub(super) cell: Option<(u64, bool, u64)>,
}

/// An element opened inside the table.
pub(super) fn start(table: &mut OdsTable, e: &BytesStart<'_>) {
    match e.name().as_ref() {
        "table:table-row" => {
            table.row_repeats = attr(e, "table:number-rows-repeated")
                .and_then(|v| digits(&v))
                .unwrap_or(1);
            table.col = 0;
        }
        "table:table-cell" | "table:covered-table-cell" => {
            let repeats = attr(e, "table:number-columns-repeated")
                .and_then(|v| digits(&v))
                .unwrap_or(1);
            // A cell holds a value when it has a type, a value or a formula (as calamine reads
            // it); the text it is copied with is its string attributes and its paragraphs.
            let mut value = false;
            let mut text = 0u64;
            for a in e.attributes().flatten() {
                match a.key.as_ref() {
                    "office:string-value"
                    | "office:date-value"
                    | "office:time-value"
                    | "table:formula" => {
                        value = true;
                        text = text.saturating_add(a.value.len() as u64);
                    }
                    "office:value"
                    | "office:boolean-value"
                    | "office:value-type"
                    | "calcext:value-type" => value = true,
                    _ => {}
                }
            }
            table.cell = Some((repeats, value, text));
        }
        // Runs of spaces, tabs and line breaks that calamine writes out.
        "text:s" => {
            let spaces = attr(e, "text:c").and_then(|v| digits(&v)).unwrap_or(1);
            if let Some((_, _, text)) = &mut table.cell {
                *text = text.saturating_add(spaces);
            }
        }
        "text:p" | "text:tab" | "text:line-break" => {
            if let Some((_, _, text)) = &mut table.cell {
                *text = text.saturating_add(1);
            }
        }
        _ => {}
    }
}

/// An element closed inside the table (not the table itself).
pub(super) fn end(table: &mut OdsTable, qname: &str, part: &str, tally: &mut Tally) -> Result<()> {
    let label = || {
        if table.name.is_empty() {
            format!("part {part}")
        } else {
            format!("sheet `{}` (part {part})", table.name)
        }
    };
    match qname {
        "table:table-row" => {
            table.row = table.row.saturating_add(table.row_repeats.max(1));
        }
        "table:table-cell" | "table:covered-table-cell" => {
            let Some((repeats, value, text)) = table.cell.take() else {
                return Ok(());
            };
            let first = (table.row, table.col);
            table.col = table.col.saturating_add(repeats);
            if !value || repeats == 0 || table.row_repeats == 0 {
                return Ok(());
            }
            let last = (
                table.row.saturating_add(table.row_repeats - 1),
                table.col - 1,
            );
            // calamine keeps each row from column A until it knows the used columns.
            let cells = table.area.add(first, last, true);
            let copies = repeats.saturating_mul(table.row_repeats);
            check_area(&label(), &table.area, cells)?;
            add_cell_text(tally, text.saturating_mul(copies), &label(), last)?;
        }
        _ => {}
    }
    Ok(())
}
