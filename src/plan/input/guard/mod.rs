//! Decides whether calamine may read a workbook. calamine allocates what a workbook claims: a
//! cell at `XFD1048576` makes it allocate every cell up to there, a shared string is copied into
//! every cell that uses it, an ods cell repeated 16,384 times is stored 16,384 times. So before
//! calamine sees the bytes, this module walks the workbook as a stream (never holding a
//! decompressed part) and refuses one whose parts, strings, cells or text exceed the limits
//! below. Each refusal is an error naming the limit and the part (the caller adds the file).
//!
//! Zip workbooks (`.xlsx`, `.xlsm`, `.ods`) are checked part by part ([`zip`]): each part's XML
//! ([`xml`] reads it as calamine does) is walked for an xlsx's strings, cells and formulas
//! ([`xlsx`]) or an ods table's cells ([`ods`]); `.xls` (an OLE compound file) in [`xls`].
//! Anything else is left to calamine, which refuses it. calamine reads the workbook only once
//! the walk has accepted it whole.

mod ods;
mod xls;
mod xlsx;
mod xml;
mod zip;

use std::collections::{HashMap, HashSet};

use anyhow::{Result, bail};

use xml::cell_name;

/// Decompressed bytes of all parts together: a 10,000-host plan is ~30 MiB of XML.
pub(crate) const MAX_UNZIPPED_BYTES: u64 = 256 << 20;
/// One XML tag or run of text, which the XML reader holds whole: a cell's text is at most
/// 32,767 characters, ~128 KiB escaped.
pub(crate) const MAX_XML_EVENT_BYTES: u64 = 1 << 20;
/// Shared strings in a workbook: calamine keeps each one (and reserves what the part declares).
pub(crate) const MAX_SHARED_STRINGS: u64 = 1_000_000;
/// Text of all shared strings together, in bytes.
pub(crate) const MAX_SHARED_STRING_BYTES: u64 = 64 << 20;
/// Characters of one string: Excel's own limit for a cell, so a plan cell never needs more.
pub(crate) const MAX_STRING_CHARS: u64 = 32_767;
/// Cells of one sheet's used area (rows × columns from the first cell to the last, which calamine
/// allocates whole): a 10,000-host plan has 80,000 NIC rows × ~15 columns = 1.2 M.
pub(crate) const MAX_SHEET_CELLS: u64 = 4_000_000;
/// Cells of all sheets' used areas together (an ods workbook is read whole).
pub(crate) const MAX_WORKBOOK_CELLS: u64 = 8_000_000;
/// Text the cells hold once each shared string, shared formula and repeated cell is counted in
/// every cell that uses it (calamine copies it into each): a 10,000-host plan has ~15 MiB.
pub(crate) const MAX_CELL_TEXT_BYTES: u64 = 128 << 20;
/// Index of a shared formula: calamine sizes a table by the largest (Excel numbers them from 0).
pub(crate) const MAX_SHARED_FORMULA_INDEX: u64 = 1_000_000;

/// What the walk learnt beside the limits.
#[derive(Debug, Clone)]
pub(crate) struct Checked {
    /// Some xlsx cell holds a formula with no saved value (or the workbook is not xlsx, whose
    /// cells this walk does not look into): only then are formulas worth reading, since a sheet's
    /// formulas are a second parse of its whole XML.
    pub uncached_formulas: bool,
    /// The sheets (by name) that have merged regions, when the walk could tell each part's
    /// sheet; `None` when it could not. calamine finds a sheet's merged regions by parsing its
    /// whole XML again, which is worth doing only for these.
    pub merged_sheets: Option<HashSet<String>>,
}

impl Checked {
    /// Whether the sheet `name` may have merged regions.
    pub(crate) fn may_have_merges(&self, name: &str) -> bool {
        self.merged_sheets.as_ref().is_none_or(|s| s.contains(name))
    }
}

/// Checks workbook bytes against the limits before calamine reads them.
pub(crate) fn check(bytes: &[u8]) -> Result<Checked> {
    let unknown = Checked {
        uncached_formulas: true,
        merged_sheets: None,
    };
    if bytes.starts_with(&xls::MAGIC) {
        return xls::check(bytes).map(|()| unknown);
    }
    // The zip reader finds the archive from its end, as calamine's does, so a file that does not
    // start like a zip may still be one.
    match ::zip::ZipArchive::new(std::io::Cursor::new(bytes)) {
        Ok(archive) => zip::check(archive),
        // Not a zip: calamine refuses it too.
        Err(_) => Ok(unknown),
    }
}

/// What the limits have counted so far, across parts.
#[derive(Default)]
pub(super) struct Tally {
    pub(super) shared_strings: u64,
    pub(super) shared_string_bytes: u64,
    /// Byte length of each shared string, by index (the longest where parts disagree).
    pub(super) shared_lens: Vec<u32>,
    pub(super) cell_text: u64,
    pub(super) cells: u64,
    /// Sheet names by part path (`xl/worksheets/sheet1.xml`), for messages.
    pub(super) sheet_names: HashMap<String, String>,
    /// An xlsx cell with a formula and no saved value, or an ods table, was met.
    pub(super) uncached_formulas: bool,
    /// Sheets with a `<mergeCell>`, by name.
    pub(super) merged_sheets: HashSet<String>,
    /// A `<mergeCell>` was met in a part whose sheet name is not known.
    pub(super) merges_unplaced: bool,
}

/// The used area of a sheet: the smallest and largest row and column of the cells with content.
#[derive(Default, Clone, Copy)]
pub(super) struct Area {
    pub(super) bounds: Option<(u64, u64, u64, u64)>,
    /// The cell that last moved the bottom or right edge out: a stray value is usually there.
    pub(super) far: (u64, u64),
}

impl Area {
    /// Adds the cells from `first` to `last`; the area's cell count after it.
    pub(super) fn add(&mut self, first: (u64, u64), last: (u64, u64), from_col_a: bool) -> u64 {
        let (r0, c0, r1, c1) = match self.bounds {
            None => (first.0, first.1, last.0, last.1),
            Some((r0, c0, r1, c1)) => (
                r0.min(first.0),
                c0.min(first.1),
                r1.max(last.0),
                c1.max(last.1),
            ),
        };
        let c0 = if from_col_a { 0 } else { c0 };
        if self
            .bounds
            .is_none_or(|(_, _, old_r1, old_c1)| r1 > old_r1 || c1 > old_c1)
        {
            self.far = last;
        }
        self.bounds = Some((r0, c0, r1, c1));
        self.cells()
    }

    pub(super) fn cells(&self) -> u64 {
        self.bounds.map_or(0, |(r0, c0, r1, c1)| {
            (r1 - r0 + 1).saturating_mul(c1 - c0 + 1)
        })
    }

    pub(super) fn describe(&self) -> String {
        let Some((r0, c0, r1, c1)) = self.bounds else {
            return String::new();
        };
        format!(
            "{}:{}, {} rows × {} columns = {} cells",
            cell_name(r0, c0),
            cell_name(r1, c1),
            thousands(r1 - r0 + 1),
            thousands(c1 - c0 + 1),
            thousands(self.cells())
        )
    }
}

pub(super) fn add_cell_text(
    tally: &mut Tally,
    bytes: u64,
    label: &str,
    at: (u64, u64),
) -> Result<()> {
    tally.cell_text = tally.cell_text.saturating_add(bytes);
    if tally.cell_text > MAX_CELL_TEXT_BYTES {
        bail!(
            "{label}: the cells' text, with each shared string, shared formula and repeated cell \
             counted in every cell that uses it, comes to more than {} MiB at cell {} (limit)",
            MAX_CELL_TEXT_BYTES >> 20,
            cell_name(at.0, at.1)
        );
    }
    Ok(())
}

pub(super) fn check_area(label: &str, area: &Area, cells: u64) -> Result<()> {
    if cells > MAX_SHEET_CELLS {
        bail!(
            "{label}: the cells in use span {} (limit: {} cells per sheet); the far one is {}: \
             delete it if it is a stray value",
            area.describe(),
            thousands(MAX_SHEET_CELLS),
            cell_name(area.far.0, area.far.1)
        );
    }
    Ok(())
}

/// `1234567` as `1,234,567`.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d);
    }
    out
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A file of the integration tests' fixtures.
    pub(in crate::plan::input) fn fixture(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures");
        std::fs::read(path.join(name)).unwrap()
    }

    #[test]
    fn formulas_are_worth_reading_only_where_a_result_is_missing() {
        let uncached = |name: &str| check(&fixture(name)).unwrap().uncached_formulas;
        // openpyxl leaves `<v></v>` in each formula cell; LibreOffice saved the results.
        assert!(uncached("formulas-no-cache.xlsx"));
        assert!(!uncached("formulas-recalculated.xlsx"));
        assert!(!uncached("sample-libreoffice.xlsx"));
        // Cells of other formats are not looked into.
        assert!(uncached("sample.ods"));
        assert!(uncached("sample.xls"));
    }

    #[test]
    fn thousands_are_grouped_by_three() {
        assert_eq!(thousands(17_179_869_184), "17,179,869,184");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
    }
}
