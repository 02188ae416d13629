//! Decides whether calamine may read a workbook. calamine allocates what a workbook claims: a
//! cell at `XFD1048576` makes it allocate every cell up to there, a shared string is copied into
//! every cell that uses it, an ods cell repeated 16,384 times is stored 16,384 times. So before
//! calamine sees the bytes, this module walks the workbook as a stream (never holding a
//! decompressed part) and refuses one whose parts, strings, cells or text exceed the limits
//! below. Each refusal is an error naming the limit and the part (the caller adds the file).
//!
//! Zip workbooks (`.xlsx`, `.xlsm`, `.ods`) are checked part by part; `.xls` (an OLE compound
//! file) in [`xls`]. Anything else is left to calamine, which refuses it. While a zip workbook
//! is walked, calamine may read each part the walk has checked, and an xlsx's worksheets right
//! behind the walk ([`gate`]), keeping nothing it sizes from them until the walk accepts.

pub(crate) mod gate;
mod xls;

use std::borrow::Cow;
use std::cell::Cell;
use std::collections::{HashMap, HashSet};
use std::io::{BufReader, Read};

use anyhow::{Result, bail};
use quick_xml::events::{BytesStart, Event};

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

/// Excel's last row and column (1-based): `XFD1048576`.
const LAST_ROW: u64 = 1_048_576;
const LAST_COL: u64 = 16_384;

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
    check_gated(bytes, None)
}

/// [`check`], telling `gate` how far the walk has got so that calamine can read behind it. The
/// gate is ended when this returns (or panics): released whole if the workbook is accepted,
/// refused otherwise.
pub(crate) fn check_gated(bytes: &[u8], gate: Option<&gate::Gate>) -> Result<Checked> {
    let _ending = gate.map(gate::Gate::ending);
    let checked = walk(bytes, gate)?;
    if let Some(gate) = gate {
        gate.end(true);
    }
    Ok(checked)
}

fn walk(bytes: &[u8], gate: Option<&gate::Gate>) -> Result<Checked> {
    let unknown = Checked {
        uncached_formulas: true,
        merged_sheets: None,
    };
    if bytes.starts_with(&xls::MAGIC) {
        return xls::check(bytes).map(|()| unknown);
    }
    // The zip reader finds the archive from its end, as calamine's does, so a file that does not
    // start like a zip may still be one.
    match zip::ZipArchive::new(gate::Tracked::new(bytes, gate)) {
        Ok(archive) => check_zip(archive, gate),
        // Not a zip: calamine refuses it too.
        Err(_) => Ok(unknown),
    }
}

/// Decompressed bytes, counted as they are read.
#[derive(Default)]
struct Meter {
    /// Decompressed bytes of the parts read so far, the current one included.
    unzipped: Cell<u64>,
    /// Decompressed bytes of the current part.
    part: Cell<u64>,
    /// `part` where the current XML event began.
    event_start: Cell<u64>,
    /// The limit a read stopped at, for the message.
    tripped: Cell<Option<Trip>>,
}

/// What the limits have counted so far, across parts.
#[derive(Default)]
struct Tally {
    shared_strings: u64,
    shared_string_bytes: u64,
    /// Byte length of each shared string, by index (the longest where parts disagree).
    shared_lens: Vec<u32>,
    cell_text: u64,
    cells: u64,
    /// Sheet names by part path (`xl/worksheets/sheet1.xml`), for messages.
    sheet_names: HashMap<String, String>,
    /// An xlsx cell with a formula and no saved value, or an ods table, was met.
    uncached_formulas: bool,
    /// Sheets with a `<mergeCell>`, by name.
    merged_sheets: HashSet<String>,
    /// A `<mergeCell>` was met in a part whose sheet name is not known.
    merges_unplaced: bool,
}

#[derive(Clone, Copy, Debug)]
enum Trip {
    Unzipped,
    Event,
}

/// A part's decompressed bytes, counted against [`MAX_UNZIPPED_BYTES`] and
/// [`MAX_XML_EVENT_BYTES`] as they are read, so neither is ever held whole.
struct Metered<'t, R> {
    inner: R,
    meter: &'t Meter,
}

impl<R: Read> Read for Metered<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let t = self.meter;
        t.unzipped.set(t.unzipped.get() + n as u64);
        t.part.set(t.part.get() + n as u64);
        let trip = if t.unzipped.get() > MAX_UNZIPPED_BYTES {
            Some(Trip::Unzipped)
        } else if t.part.get() - t.event_start.get() > MAX_XML_EVENT_BYTES {
            Some(Trip::Event)
        } else {
            None
        };
        if let Some(trip) = trip {
            t.tripped.set(Some(trip));
            return Err(std::io::Error::other("workbook limit reached"));
        }
        Ok(n)
    }
}

fn check_zip(
    mut archive: zip::ZipArchive<gate::Tracked<'_>>,
    gate: Option<&gate::Gate>,
) -> Result<Checked> {
    // Every part is checked, whatever its name: a relationship can point a sheet at any part.
    // The workbook and its relationships come first (sheet names for messages), then the shared
    // strings (their lengths, for the cells that use them), then the rest, worksheets last so
    // that the parts calamine reads when it opens the workbook (styles) are not held behind
    // them.
    let mut order: Vec<(u8, usize, String)> = (0..archive.len())
        .filter_map(|i| {
            let name = archive.name_for_index(i)?.ok()?.into_owned();
            let lower = name.to_ascii_lowercase().replace('\\', "/");
            let rank = if lower.ends_with(".rels") || lower.ends_with("workbook.xml") {
                0
            } else if lower.ends_with("sharedstrings.xml") {
                1
            } else if lower.contains("worksheets/") {
                3
            } else {
                2
            };
            Some((rank, i, name))
        })
        .collect();
    // calamine would read an Excel binary workbook too, whose binary parts this walk cannot
    // bound; it is not a plan format.
    if let Some((_, _, name)) = order
        .iter()
        .find(|(_, _, n)| n.to_ascii_lowercase().ends_with("workbook.bin"))
    {
        bail!(
            "part {name} makes this an Excel binary workbook (.xlsb), which is not a plan format; \
             save it as .xlsx"
        );
    }
    order.sort();
    let meter = Meter::default();
    let mut tally = Tally::default();
    let mut links = Links::default();
    // A part checked or skipped may be read whole by calamine.
    let pass = |index| {
        if let Some(gate) = gate {
            gate.passed(index);
        }
    };
    for (rank, index, name) in order {
        // An entry that cannot be opened (an unsupported method, encryption) cannot be read by
        // calamine either.
        let Ok(file) = archive.by_index(index) else {
            pass(index);
            continue;
        };
        if file.is_dir() {
            pass(index);
            continue;
        }
        // calamine may trail the walk only in a part the workbook names as a sheet.
        if let Some(gate) = gate {
            gate.begin(index, rank == 3 && tally.sheet_names.contains_key(&name));
        }
        meter.part.set(0);
        meter.event_start.set(0);
        let reader = BufReader::new(Metered {
            inner: file,
            meter: &meter,
        });
        let mut part = Part::new(&name, &mut tally, &mut links);
        scan_xml(reader, &mut part, &meter)?;
        pass(index);
        if rank == 0 {
            links.resolve(&mut tally.sheet_names);
        }
    }
    Ok(Checked {
        uncached_formulas: tally.uncached_formulas,
        merged_sheets: (!tally.merges_unplaced).then_some(tally.merged_sheets),
    })
}

/// Sheet names and relationship targets met in the workbook parts, to name sheets in messages.
#[derive(Default)]
struct Links {
    /// `r:id` → sheet name, from `workbook.xml`.
    sheets: Vec<(String, String)>,
    /// (folder of the `.rels` part's source, `Id`, `Target`).
    targets: Vec<(String, String, String)>,
}

impl Links {
    fn resolve(&self, names: &mut HashMap<String, String>) {
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
struct Part<'a> {
    name: &'a str,
    /// The part as messages name it: the sheet's name where it is known.
    label: String,
    tally: &'a mut Tally,
    links: &'a mut Links,
    /// Folder of the part a `.rels` part describes (`xl/` for `xl/_rels/workbook.xml.rels`).
    rels_folder: Option<String>,
    /// Inside `<sst>`: the next string's index; inside `<si>`: its characters and bytes.
    sst: Option<u64>,
    si: Option<(u64, u64)>,
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
    index: Option<u64>,
    in_v: bool,
    text: u64,
    /// Inside `<f>`: the shared formula's index and whether this cell is its master.
    formula: Option<(Option<u64>, bool, u64)>,
    /// The cell has an `<f>`.
    has_formula: bool,
    /// Bytes of text inside its `<v>`.
    value_text: u64,
}

/// An ods `<table:table>` being scanned.
#[derive(Default)]
struct OdsTable {
    name: String,
    row: u64,
    row_repeats: u64,
    col: u64,
    area: Area,
    /// The current cell: its column repeats, whether it holds a value, its text.
    cell: Option<(u64, bool, u64)>,
}

/// The used area of a sheet: the smallest and largest row and column of the cells with content.
#[derive(Default, Clone, Copy)]
struct Area {
    bounds: Option<(u64, u64, u64, u64)>,
    /// The cell that last moved the bottom or right edge out: a stray value is usually there.
    far: (u64, u64),
}

impl Area {
    /// Adds the cells from `first` to `last`; the area's cell count after it.
    fn add(&mut self, first: (u64, u64), last: (u64, u64), from_col_a: bool) -> u64 {
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

    fn cells(&self) -> u64 {
        self.bounds.map_or(0, |(r0, c0, r1, c1)| {
            (r1 - r0 + 1).saturating_mul(c1 - c0 + 1)
        })
    }

    fn describe(&self) -> String {
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

impl<'a> Part<'a> {
    fn new(name: &'a str, tally: &'a mut Tally, links: &'a mut Links) -> Self {
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

    fn start(&mut self, e: &BytesStart<'_>) -> Result<()> {
        let local = e.local_name();
        let local = local.as_ref();
        if let Some(table) = &mut self.table {
            ods_start(table, e);
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
                "v" => cell.in_v = true,
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

    fn end(&mut self, local: &str, qname: &str) -> Result<()> {
        if let Some(table) = &mut self.table {
            if qname == "table:table" {
                let cells = table.area.cells();
                self.table = None;
                return self.add_sheet_cells(cells);
            }
            return ods_end(table, qname, self.name, self.tally);
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
            (Some(cell), "v") => cell.in_v = false,
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
                let shared = if cell.shared_string {
                    cell.index
                        .and_then(|i| usize::try_from(i).ok())
                        .and_then(|i| self.tally.shared_lens.get(i))
                        .map_or(0, |&l| u64::from(l))
                } else {
                    0
                };
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
    fn text(&mut self, text: &str) -> Result<()> {
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
                if cell.in_v && cell.shared_string {
                    cell.index = digits(text);
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

fn long_string(label: &str, index: u64) -> String {
    format!(
        "{label}: shared string {index} is longer than {} characters, the most a cell holds (limit)",
        thousands(MAX_STRING_CHARS)
    )
}

fn ods_start(table: &mut OdsTable, e: &BytesStart<'_>) {
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

fn ods_end(table: &mut OdsTable, qname: &str, part: &str, tally: &mut Tally) -> Result<()> {
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

fn add_cell_text(tally: &mut Tally, bytes: u64, label: &str, at: (u64, u64)) -> Result<()> {
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

fn check_area(label: &str, area: &Area, cells: u64) -> Result<()> {
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

fn malformed(label: &str, reference: &str, element: &str) -> String {
    let reference: String = reference.chars().take(40).collect();
    format!(
        "{label}: malformed cell reference `{reference}` in <{}>: a reference is a column A to \
         XFD and a row 1 to 1048576, like `B7`",
        element
    )
}

/// Reads one part as XML with calamine's settings, so that the events are the ones calamine
/// would see; where calamine's reader would fail, the scan stops (calamine then refuses it).
fn scan_xml<R: Read>(
    reader: BufReader<Metered<'_, R>>,
    part: &mut Part<'_>,
    meter: &Meter,
) -> Result<()> {
    let mut xml = quick_xml::Reader::from_reader(reader);
    let config = xml.config_mut();
    config.check_end_names = false;
    config.trim_text(false);
    config.check_comments = false;
    config.expand_empty_elements = true;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let event = match xml.read_event_into(&mut buf) {
            Ok(event) => event,
            Err(_) => {
                return match meter.tripped.take() {
                    Some(Trip::Unzipped) => bail!(
                        "the workbook's parts decompress to more than {} MiB (limit), reached in \
                         {}",
                        MAX_UNZIPPED_BYTES >> 20,
                        part.label
                    ),
                    Some(Trip::Event) => match (part.si, part.sst) {
                        (Some(_), Some(index)) => bail!(long_string(&part.label, index)),
                        _ => bail!(
                            "{} has an XML tag or text longer than {} MiB (limit)",
                            part.label,
                            MAX_XML_EVENT_BYTES >> 20
                        ),
                    },
                    None => Ok(()),
                };
            }
        };
        match event {
            Event::Eof => return Ok(()),
            Event::DocType(_) => bail!(
                "{} has a document type declaration (<!DOCTYPE …>), which can define entities \
                 that expand without bound; Excel and LibreOffice never write one",
                part.label
            ),
            Event::Start(e) => part.start(&e)?,
            Event::End(e) => part.end(e.local_name().as_ref(), e.name().as_ref())?,
            Event::Text(t) => part.text(&t)?,
            Event::CData(t) => part.text(&t)?,
            // An entity or character reference: one character of at most 4 bytes.
            Event::GeneralRef(_) => part.text("\u{10000}")?,
            _ => {}
        }
        meter.event_start.set(xml.buffer_position());
    }
}

fn chars(text: &str) -> u64 {
    text.chars().count() as u64
}

/// An attribute's raw value, as text.
fn attr<'e>(e: &'e BytesStart<'_>, key: &str) -> Option<Cow<'e, str>> {
    e.attributes()
        .with_checks(false)
        .flatten()
        .find(|a| a.key.as_ref() == key)
        .map(|a| a.value)
}

/// An attribute value with the five XML entities replaced (names in messages).
fn unescape_attr(value: &str) -> String {
    quick_xml::escape::unescape(value)
        .map_or_else(|_| value.to_string(), std::borrow::Cow::into_owned)
}

/// A decimal number made of digits only (surrounding spaces allowed), saturating.
fn digits(text: &str) -> Option<u64> {
    let text = text.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some(text.bytes().fold(0u64, |n, d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

/// A row number `1`–`1048576`, 0-based.
fn parse_row(text: &str) -> Option<u64> {
    (1..=7)
        .contains(&text.len())
        .then(|| digits(text))
        .flatten()
        .filter(|r| (1..=LAST_ROW).contains(r))
        .map(|r| r - 1)
}

/// A cell reference `[A-Z]{1,3}[0-9]{1,7}` within `XFD1048576`, 0-based (row, column).
fn parse_cell(text: &str) -> Option<(u64, u64)> {
    let letters = text.bytes().take_while(u8::is_ascii_uppercase).count();
    if !(1..=3).contains(&letters) {
        return None;
    }
    let col = text
        .bytes()
        .take(letters)
        .fold(0u64, |n, c| n * 26 + u64::from(c - b'A') + 1);
    let row = parse_row(&text[letters..])?;
    (col <= LAST_COL).then_some((row, col - 1))
}

/// `A1` or `A1:B2`, its first cell not after its last.
fn parse_range(text: &str) -> Option<((u64, u64), (u64, u64))> {
    let (first, last) = text.split_once(':').unwrap_or((text, text));
    let (first, last) = (parse_cell(first)?, parse_cell(last)?);
    (first.0 <= last.0 && first.1 <= last.1).then_some((first, last))
}

/// A 0-based position in A1 style (columns past `XFD` continue the letters).
fn cell_name(row: u64, col: u64) -> String {
    let mut letters = Vec::new();
    let mut n = col.saturating_add(1);
    while n > 0 {
        letters.push(char::from(b'A' + ((n - 1) % 26) as u8));
        n = (n - 1) / 26;
    }
    letters.iter().rev().collect::<String>() + &row.saturating_add(1).to_string()
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
        let checked = check(&fixture("sample-libreoffice.xlsx")).unwrap();
        assert_eq!(checked.merged_sheets, Some(HashSet::new()));
        // The walk does not look into .xls sheets: calamine is asked for every one.
        assert!(
            check(&fixture("sample.xls"))
                .unwrap()
                .may_have_merges("NICs")
        );
    }

    #[test]
    fn references() {
        assert_eq!(parse_cell("A1"), Some((0, 0)));
        assert_eq!(parse_cell("XFD1048576"), Some((1_048_575, 16_383)));
        for bad in [
            "XFE1",
            "A1048577",
            "A0",
            "1A",
            "A99999999999",
            "a1",
            "AAAA1",
            "A",
            "",
        ] {
            assert_eq!(parse_cell(bad), None, "{bad}");
        }
        assert_eq!(parse_range("B2:A1"), None);
        assert_eq!(parse_range("A1"), Some(((0, 0), (0, 0))));
        assert_eq!(cell_name(1_048_575, 16_383), "XFD1048576");
        assert_eq!(thousands(17_179_869_184), "17,179,869,184");
        assert_eq!(thousands(999), "999");
    }
}
