//! The walk of one zip part's XML: the workbook and its relationships (sheet names, for
//! messages), an xlsx's shared strings, and its worksheets' cells, formulas, used areas and merged
//! regions. An ods `<table:table>` met in a part is handed to [`super::ods`].

use std::collections::HashMap;

use anyhow::{Result, bail};
use quick_xml::events::BytesStart;

use super::ods::{self, OdsTable};
use super::xml::{
    attr, cell_name, chars, digits, malformed, parse_cell, parse_range, parse_row, shared_index,
    unescape_attr,
};
use super::{
    Area, MAX_SHARED_FORMULA_INDEX, MAX_SHARED_STRING_BYTES, MAX_SHARED_STRINGS, MAX_STRING_CHARS,
    MAX_WORKBOOK_CELLS, Tally, add_cell_text, check_area, thousands,
};

/// Sheet names and relationship targets met in the workbook parts, to name sheets in messages.
#[derive(Default)]
pub(super) struct Links {
    /// `r:id` → sheet name, from `workbook.xml`.
    sheets: Vec<(String, String)>,
    /// (folder of the `.rels` part's source, `Id`, `Target`).
    targets: Vec<(String, String, String)>,
}

impl Links {
    /// Names each sheet's part path, once the workbook and its relationships are read.
    pub(super) fn resolve(&self, names: &mut HashMap<String, String>) {
        for (id, sheet) in &self.sheets {
            for (folder, rel_id, target) in &self.targets {
                if rel_id == id {
                    let path = match target.strip_prefix('/') {
                        Some(absolute) => absolute.to_string(),
                        None => format!("{folder}{target}"),
                    };
                    names.insert(path, sheet.clone());
                }
            }
        }
    }
}

/// The state of one part's scan.
pub(super) struct Part<'a> {
    name: &'a str,
    /// The part as messages name it: the sheet's name where it is known.
    pub(super) label: String,
    tally: &'a mut Tally,
    links: &'a mut Links,
    /// Folder of the part a `.rels` part describes (`xl/` for `xl/_rels/workbook.xml.rels`).
    rels_folder: Option<String>,
    /// Inside `<sst>`: the next string's index; inside `<si>`: its characters and bytes.
    pub(super) sst: Option<u64>,
    pub(super) si: Option<(u64, u64)>,
    sheet: Option<Sheet>,
    table: Option<OdsTable>,
}

/// An xlsx `<sheetData>` being scanned.
#[derive(Default)]
struct Sheet {
    row: u64,
    col: u64,
    area: Area,
    cell: Option<XlsxCell>,
    /// Text length of each shared formula's master, by index.
    masters: HashMap<u64, u64>,
}

#[derive(Default)]
struct XlsxCell {
    pos: (u64, u64),
    content: bool,
    shared_string: bool,
    /// Bytes of the shared string its `<v>` names, as calamine reads the index (the most of
    /// any `<v>` in the cell; calamine keeps the last one's).
    shared: u64,
    in_v: bool,
    /// Inside a `<v>` whose first event is still to come: calamine reads a shared-string
    /// index from that event alone.
    v_first: bool,
    text: u64,
    /// Inside `<f>`: the shared formula's index and whether this cell is its master.
    formula: Option<(Option<u64>, bool, u64)>,
    /// The cell has an `<f>`.
    has_formula: bool,
    /// Bytes of text inside its `<v>`.
    value_text: u64,
}

impl<'a> Part<'a> {
    pub(super) fn new(name: &'a str, tally: &'a mut Tally, links: &'a mut Links) -> Self {
        // `xl/_rels/workbook.xml.rels` describes `xl/workbook.xml`: targets are relative to `xl/`.
        let rels_folder = name.strip_suffix(".rels").map(|source| {
            let source = source.replace("_rels/", "");
            match source.rfind('/') {
                Some(i) => source[..=i].to_string(),
                None => String::new(),
            }
        });
        let label = match tally.sheet_names.get(name) {
            Some(sheet) => format!("sheet `{sheet}` (part {name})"),
            None => format!("part {name}"),
        };
        Self {
            name,
            label,
            tally,
            links,
            rels_folder,
            sst: None,
            si: None,
            sheet: None,
            table: None,
        }
    }

    pub(super) fn start(&mut self, e: &BytesStart<'_>) -> Result<()> {
        let local = e.local_name();
        let local = local.as_ref();
        if let Some(table) = &mut self.table {
            ods::start(table, e);
            return Ok(());
        }
        if self.sheet.is_some() {
            return self.sheet_start(e, local);
        }
        match local {
            "sst" => {
                // calamine reserves room for the count the part declares.
                if let Some(n) = attr(e, "uniqueCount").and_then(|v| digits(&v))
                    && n > MAX_SHARED_STRINGS
                {
                    bail!(
                        "{} declares {} shared strings (limit: {})",
                        self.label,
                        thousands(n),
                        thousands(MAX_SHARED_STRINGS)
                    );
                }
                self.sst = Some(0);
            }
            "si" if self.sst.is_some() => {
                self.tally.shared_strings += 1;
                if self.tally.shared_strings > MAX_SHARED_STRINGS {
                    bail!(
                        "{} has more than {} shared strings (limit)",
                        self.label,
                        thousands(MAX_SHARED_STRINGS)
                    );
                }
                self.si = Some((0, 0));
            }
            "sheetData" => self.sheet = Some(Sheet::default()),
            "dimension" | "mergeCell" => {
                if let Some(r) = attr(e, "ref")
                    && parse_range(&r).is_none()
                {
                    bail!(malformed(&self.label, &r, local));
                }
                if local == "mergeCell" {
                    match self.tally.sheet_names.get(self.name) {
                        Some(sheet) => {
                            self.tally.merged_sheets.insert(sheet.clone());
                        }
                        None => self.tally.merges_unplaced = true,
                    }
                }
            }
            "sheet" => {
                let id = e.attributes().flatten().find_map(|a| {
                    (a.key.local_name().as_ref() == "id").then(|| a.value.into_owned())
                });
                if let (Some(id), Some(name)) = (id, attr(e, "name")) {
                    self.links.sheets.push((id, unescape_attr(&name)));
                }
            }
            "Relationship" => {
                if let (Some(folder), Some(id), Some(target)) =
                    (&self.rels_folder, attr(e, "Id"), attr(e, "Target"))
                {
                    self.links
                        .targets
                        .push((folder.clone(), id.into_owned(), target.into_owned()));
                }
            }
            _ => {}
        }
        if e.name().as_ref() == "table:table" {
            // ods cells are not looked into for formulas: calamine reads them all.
            self.tally.uncached_formulas = true;
            self.table = Some(OdsTable {
                name: attr(e, "table:name")
                    .map(|n| unescape_attr(&n))
                    .unwrap_or_default(),
                ..OdsTable::default()
            });
        }
        Ok(())
    }

    fn sheet_start(&mut self, e: &BytesStart<'_>, local: &str) -> Result<()> {
        let label = &self.label;
        let Some(sheet) = &mut self.sheet else {
            return Ok(());
        };
        if let Some(cell) = &mut sheet.cell {
            // Any element inside a cell is a value, an inline string or a formula.
            cell.content = true;
            match local {
                "v" => {
                    cell.in_v = true;
                    cell.v_first = true;
                }
                "f" => {
                    let shared = attr(e, "t").as_deref() == Some("shared");
                    let index = if shared {
                        attr(e, "si").and_then(|v| digits(&v))
                    } else {
                        None
                    };
                    if let Some(si) = index.filter(|&si| si > MAX_SHARED_FORMULA_INDEX) {
                        bail!(
                            "{label}: cell {} uses shared formula {} (limit: {})",
                            cell_name(cell.pos.0, cell.pos.1),
                            thousands(si),
                            thousands(MAX_SHARED_FORMULA_INDEX)
                        );
                    }
                    let master = match attr(e, "ref") {
                        Some(r) if parse_range(&r).is_none() => {
                            bail!(malformed(label, &r, "f"))
                        }
                        Some(_) => true,
                        None => false,
                    };
                    cell.formula = Some((index, master, 0));
                    cell.has_formula = true;
                }
                _ => {}
            }
            return Ok(());
        }
        match local {
            "row" => {
                if let Some(r) = attr(e, "r") {
                    let Some(row) = parse_row(&r) else {
                        bail!(malformed(label, &r, "row"));
                    };
                    sheet.row = row;
                }
            }
            "c" => {
                let pos = match attr(e, "r") {
                    Some(r) => {
                        let Some(pos) = parse_cell(&r) else {
                            bail!(malformed(label, &r, "c"));
                        };
                        sheet.col = pos.1;
                        pos
                    }
                    None => (sheet.row, sheet.col),
                };
                sheet.cell = Some(XlsxCell {
                    pos,
                    shared_string: attr(e, "t").as_deref() == Some("s"),
                    ..XlsxCell::default()
                });
            }
            _ => {}
        }
        Ok(())
    }

    pub(super) fn end(&mut self, local: &str, qname: &str) -> Result<()> {
        if let Some(table) = &mut self.table {
            if qname == "table:table" {
                let cells = table.area.cells();
                self.table = None;
                return self.add_sheet_cells(cells);
            }
            return ods::end(table, qname, self.name, self.tally);
        }
        if self.sheet.is_some() {
            return self.sheet_end(local);
        }
        match local {
            "si" => {
                if let (Some(index), Some((_, bytes))) = (self.sst, self.si.take()) {
                    let len = u32::try_from(bytes).unwrap_or(u32::MAX);
                    let lens = &mut self.tally.shared_lens;
                    match usize::try_from(index).ok().and_then(|i| lens.get_mut(i)) {
                        Some(old) => *old = (*old).max(len),
                        None => lens.push(len),
                    }
                    self.sst = Some(index + 1);
                }
            }
            "sst" => self.sst = None,
            _ => {}
        }
        Ok(())
    }

    fn sheet_end(&mut self, local: &str) -> Result<()> {
        let label = &self.label;
        let Some(sheet) = &mut self.sheet else {
            return Ok(());
        };
        match (&mut sheet.cell, local) {
            (Some(cell), "v") => {
                cell.in_v = false;
                cell.v_first = false;
            }
            (Some(cell), "f") => {
                if let Some((index, master, len)) = cell.formula.take() {
                    match (index, master) {
                        (Some(si), true) => {
                            sheet.masters.insert(si, len);
                        }
                        // A shared formula's other cells get the master's text, its references
                        // moved (which can lengthen them).
                        (Some(si), false) => {
                            cell.text = cell
                                .text
                                .saturating_add(sheet.masters.get(&si).map_or(0, |l| l * 2));
                        }
                        _ => {}
                    }
                }
            }
            (Some(_), "c") => {
                let cell = sheet.cell.take().unwrap_or_default();
                sheet.col = cell.pos.1 + 1;
                // An empty `<v/>` is what some writers leave for a formula never calculated.
                if cell.has_formula && cell.value_text == 0 {
                    self.tally.uncached_formulas = true;
                }
                if !cell.content {
                    return Ok(());
                }
                let shared = cell.shared;
                let far = cell.pos;
                let cells = sheet.area.add(far, far, false);
                let area = sheet.area;
                check_area(label, &area, cells)?;
                add_cell_text(self.tally, cell.text + shared, label, far)?;
            }
            (None, "row") => {
                sheet.row += 1;
                sheet.col = 0;
            }
            (None, "sheetData") => {
                let cells = sheet.area.cells();
                self.sheet = None;
                self.add_sheet_cells(cells)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn add_sheet_cells(&mut self, cells: u64) -> Result<()> {
        self.tally.cells = self.tally.cells.saturating_add(cells);
        if self.tally.cells > MAX_WORKBOOK_CELLS {
            bail!(
                "the sheets' used areas together come to more than {} cells (limit), reached at {}",
                thousands(MAX_WORKBOOK_CELLS),
                self.label
            );
        }
        Ok(())
    }

    /// Text, CDATA or a character reference.
    pub(super) fn text(&mut self, text: &str) -> Result<()> {
        let len = text.len() as u64;
        if let Some(table) = &mut self.table {
            if let Some((_, _, text)) = &mut table.cell {
                *text = text.saturating_add(len);
            }
            return Ok(());
        }
        if let Some(sheet) = &mut self.sheet {
            if let Some(cell) = &mut sheet.cell {
                cell.text = cell.text.saturating_add(len);
                if cell.in_v {
                    cell.value_text = cell.value_text.saturating_add(len);
                }
                if let Some((_, _, f)) = &mut cell.formula {
                    *f = f.saturating_add(len);
                }
                // Only the first event of a `<v>` is its index to calamine; any later one is
                // ignored there. (An entity or CDATA first is an empty cell to calamine: counting
                // it as an index only counts more.)
                if cell.in_v && cell.shared_string && std::mem::take(&mut cell.v_first) {
                    let len = shared_index(text)
                        .and_then(|i| self.tally.shared_lens.get(i))
                        .map_or(0, |&l| u64::from(l));
                    cell.shared = cell.shared.max(len);
                }
            }
            return Ok(());
        }
        if let Some((c, b)) = &mut self.si {
            *c += chars(text);
            *b += len;
            self.tally.shared_string_bytes += len;
            let index = self.sst.unwrap_or(0);
            if *c > MAX_STRING_CHARS {
                bail!(long_string(&self.label, index));
            }
            if self.tally.shared_string_bytes > MAX_SHARED_STRING_BYTES {
                bail!(
                    "{}: the shared strings hold more than {} MiB of text (limit)",
                    self.label,
                    MAX_SHARED_STRING_BYTES >> 20
                );
            }
        }
        Ok(())
    }
}

pub(super) fn long_string(label: &str, index: u64) -> String {
    format!(
        "{label}: shared string {index} is longer than {} characters, the most a cell holds (limit)",
        thousands(MAX_STRING_CHARS)
    )
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::super::check;

    /// A minimal xlsx: sheets "Servers" (sheet1.xml) and "NICs" (sheet2.xml), the second with a
    /// merged region.
    fn two_sheets_one_merged() -> Vec<u8> {
        use std::io::{Cursor, Write};
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let parts = [
            (
                "xl/workbook.xml",
                r#"<workbook xmlns:r="r"><sheets><sheet name="Servers" sheetId="1" r:id="rId1"/><sheet name="NICs" sheetId="2" r:id="rId2"/></sheets></workbook>"#,
            ),
            (
                "xl/_rels/workbook.xml.rels",
                r#"<Relationships><Relationship Id="rId1" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Target="worksheets/sheet2.xml"/></Relationships>"#,
            ),
            (
                "xl/worksheets/sheet1.xml",
                r#"<worksheet><sheetData><row r="1"><c r="A1"><v>1</v></c></row></sheetData></worksheet>"#,
            ),
            (
                "xl/worksheets/sheet2.xml",
                r#"<worksheet><sheetData><row r="1"><c r="A1"><v>1</v></c></row></sheetData><mergeCells count="1"><mergeCell ref="A1:A2"/></mergeCells></worksheet>"#,
            ),
        ];
        for (name, text) in parts {
            zip.start_file(name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(text.as_bytes()).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    /// An xlsx whose sheet `Servers` has `cells` cells `<c t="s"><v>{v}</v></c>` over the shared
    /// strings `strings`.
    fn shared_string_cells(strings: &[String], v: &str, cells: usize) -> Vec<u8> {
        use std::io::{Cursor, Write};
        let sst: String = strings
            .iter()
            .map(|s| format!("<si><t>{s}</t></si>"))
            .collect();
        let rows: String = (1..=cells)
            .map(|r| format!(r#"<row r="{r}"><c r="A{r}" t="s"><v>{v}</v></c></row>"#))
            .collect();
        let parts = [
            (
                "xl/workbook.xml",
                r#"<workbook xmlns:r="r"><sheets><sheet name="Servers" sheetId="1" r:id="rId1"/></sheets></workbook>"#.to_string(),
            ),
            (
                "xl/_rels/workbook.xml.rels",
                r#"<Relationships><Relationship Id="rId1" Target="worksheets/sheet1.xml"/></Relationships>"#.to_string(),
            ),
            ("xl/sharedStrings.xml", format!("<sst>{sst}</sst>")),
            (
                "xl/worksheets/sheet1.xml",
                format!("<worksheet><sheetData>{rows}</sheetData></worksheet>"),
            ),
        ];
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        for (name, text) in parts {
            zip.start_file(name, zip::write::SimpleFileOptions::default())
                .unwrap();
            zip.write_all(text.as_bytes()).unwrap();
        }
        zip.finish().unwrap().into_inner()
    }

    #[test]
    fn a_shared_string_index_counts_as_calamine_reads_it() {
        // 32,767 four-byte characters: the longest string a cell may hold, 128 KiB; 1,100 cells
        // of it are more than the 128 MiB of cell text.
        let long = "\u{1D11E}".repeat(32_767);
        let short = "a".to_string();
        let long_first = [long.clone(), short.clone()];
        let long_second = [short, long];
        let refused =
            |strings: &[String], v: &str| match check(&shared_string_cells(strings, v, 1_100)) {
                Ok(_) => panic!("<v>{v}</v> was let through"),
                Err(e) => e.to_string(),
            };
        // calamine reads an index that is not a `usize` in digits as string 0.
        for v in ["x", "+1", " 1", "1 ", "-1", "99999999999999999999999"] {
            let why = refused(&long_first, v);
            assert!(
                why.contains("comes to more than 128 MiB"),
                "<v>{v}</v>: {why}"
            );
        }
        // Leading zeros are skipped; only a `<v>`'s first text is the index; of two `<v>`
        // calamine keeps the last.
        for v in ["0001", "1<!-- -->0", "1&#48;", "0</v><v>1"] {
            let why = refused(&long_second, v);
            assert!(
                why.contains("comes to more than 128 MiB"),
                "<v>{v}</v>: {why}"
            );
        }
        // The short string, and an empty `<v>` (an empty cell to calamine), pass.
        assert!(check(&shared_string_cells(&long_first, "1", 1_100)).is_ok());
        assert!(check(&shared_string_cells(&long_first, "", 1_100)).is_ok());
    }

    #[test]
    fn merged_regions_are_looked_for_only_in_the_sheets_that_have_them() {
        let checked = check(&two_sheets_one_merged()).unwrap();
        assert_eq!(
            checked.merged_sheets,
            Some(HashSet::from(["NICs".to_string()]))
        );
        assert!(checked.may_have_merges("NICs"));
        assert!(!checked.may_have_merges("Servers"));
        // LibreOffice's copy of the sample has no merged region.
        let checked = check(&super::super::tests::fixture("sample-libreoffice.xlsx")).unwrap();
        assert_eq!(checked.merged_sheets, Some(HashSet::new()));
        // The walk does not look into .xls sheets: calamine is asked for every one.
        assert!(
            check(&super::super::tests::fixture("sample.xls"))
                .unwrap()
                .may_have_merges("NICs")
        );
    }
}
