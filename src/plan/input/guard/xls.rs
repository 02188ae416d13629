//! The guard for `.xls`: an OLE compound file whose `Workbook` stream is a list of BIFF records.
//! calamine reads every sheet when it opens the file, reserving what a DIMENSION record claims
//! and allocating the area from the first cell to the last, with a copy of a shared string in
//! every cell that uses it. So the stream is found here the way calamine finds it and its
//! records are walked first, under the same limits as a zip workbook's parts.

use anyhow::{Result, bail};

use super::{
    Area, MAX_CELL_TEXT_BYTES, MAX_SHARED_STRING_BYTES, MAX_SHARED_STRINGS, MAX_SHEET_CELLS,
    MAX_STRING_CHARS, MAX_WORKBOOK_CELLS, cell_name, check_area, thousands,
};

/// The signature of an OLE compound file.
pub(super) const MAGIC: [u8; 8] = [0xD0, 0xCF, 0x11, 0xE0, 0xA1, 0xB1, 0x1A, 0xE1];

/// End of a sector chain, and the first of the values that are no sector.
const END_OF_CHAIN: u32 = 0xFFFF_FFFE;
const MAX_SECTOR: u32 = 0xFFFF_FFFA;

/// A cell's text as UTF-8 is at most 3 bytes per character (BIFF stores UTF-16 or a codepage).
const UTF8_PER_CHAR: u64 = 3;
/// A formula's text as calamine writes it is at most ~52 characters per byte of its tokens (a
/// 5-byte name token becomes a name of up to 255 characters).
const FORMULA_TEXT_PER_BYTE: u64 = 52;

pub(super) fn check(bytes: &[u8]) -> Result<()> {
    // A compound file this reader cannot follow is one calamine refuses too.
    let Some(stream) = workbook_stream(bytes) else {
        return Ok(());
    };
    check_biff(&stream)
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

/// The `Workbook` (or older `Book`) stream, read the way calamine's compound-file reader does.
fn workbook_stream(bytes: &[u8]) -> Option<Vec<u8>> {
    let sector_size: usize = match u16_at(bytes, 30)? {
        9 => 512,
        12 => 4096,
        _ => return None,
    };
    let sector = |id: u32| -> Option<&[u8]> {
        let start = (id as usize).checked_add(1)?.checked_mul(sector_size)?;
        bytes.get(start..start.checked_add(sector_size)?)
    };
    let sectors = bytes.len() / sector_size;
    let words = |data: &[u8]| -> Vec<u32> {
        data.chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect()
    };
    // The FAT's sectors: 109 in the header, then a chain of DIFAT sectors.
    let mut difat = words(bytes.get(76..512)?);
    let mut next = u32_at(bytes, 68)?;
    let mut steps = 0;
    while next < MAX_SECTOR {
        steps += 1;
        if steps > sectors {
            return None;
        }
        let mut more = words(sector(next)?);
        next = more.pop()?;
        difat.extend(more);
    }
    let mut fat = Vec::new();
    for id in difat.into_iter().filter(|&id| id < MAX_SECTOR) {
        fat.extend(words(sector(id)?));
    }
    let chain = |start: u32, table: &[u32], limit: usize| -> Option<Vec<u32>> {
        let mut ids = Vec::new();
        let mut id = start;
        while id != END_OF_CHAIN {
            if id >= MAX_SECTOR || ids.len() > limit {
                return None;
            }
            ids.push(id);
            id = *table.get(id as usize)?;
        }
        Some(ids)
    };
    let read = |ids: &[u32]| -> Option<Vec<u8>> {
        let mut out = Vec::with_capacity(ids.len() * sector_size);
        for &id in ids {
            out.extend_from_slice(sector(id)?);
        }
        Some(out)
    };
    let directory = read(&chain(u32_at(bytes, 48)?, &fat, sectors)?)?;
    let entries: Vec<&[u8]> = directory.chunks_exact(128).collect();
    let name_of = |e: &[u8]| -> String {
        let len = usize::from(u16_at(e, 64).unwrap_or(0)).min(64);
        let units: Vec<u16> = e[..len]
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .take_while(|&u| u != 0)
            .collect();
        String::from_utf16_lossy(&units)
    };
    let entry = ["Workbook", "Book"].iter().find_map(|want| {
        entries
            .iter()
            .find(|e| name_of(e).eq_ignore_ascii_case(want))
    })?;
    let (start, size) = (u32_at(entry, 116)?, u32_at(entry, 120)? as usize);
    if size < 4096 {
        // A small stream lives in the mini stream: 64-byte sectors inside the root's stream.
        let root = entries.first()?;
        let mini = read(&chain(u32_at(root, 116)?, &fat, sectors)?)?;
        let mini_fat = words(&read(&chain(u32_at(bytes, 60)?, &fat, sectors)?)?);
        let mut out = Vec::new();
        for id in chain(start, &mini_fat, sectors * 8)? {
            let at = (id as usize).checked_mul(64)?;
            out.extend_from_slice(mini.get(at..at + 64)?);
        }
        out.truncate(size);
        Some(out)
    } else {
        let mut out = read(&chain(start, &fat, sectors)?)?;
        out.truncate(size);
        Some(out)
    }
}

/// A BIFF record: its type and its data, with the data of the CONTINUE records after it.
struct Record<'a> {
    typ: u16,
    data: &'a [u8],
    more: Vec<&'a [u8]>,
}

/// The records from the start of `stream`, as calamine splits them; stops where it would fail.
fn records(mut stream: &[u8]) -> impl Iterator<Item = Record<'_>> {
    std::iter::from_fn(move || {
        let typ = u16_at(stream, 0)?;
        let len = usize::from(u16_at(stream, 2)?);
        let data = stream.get(4..4 + len)?;
        stream = &stream[4 + len..];
        let mut more = Vec::new();
        while u16_at(stream, 0) == Some(0x003C) {
            let len = usize::from(u16_at(stream, 2)?);
            more.push(stream.get(4..4 + len)?);
            stream = &stream[4 + len..];
        }
        Some(Record { typ, data, more })
    })
}

fn check_biff(stream: &[u8]) -> Result<()> {
    let mut sheets = Vec::new();
    let mut lens: Vec<u64> = Vec::new();
    for r in records(stream) {
        match r.typ {
            // BoundSheet8: where a sheet's records start, and its name.
            0x0085 => {
                let name = sheet_name(r.data);
                let Some(pos) = u32_at(r.data, 0).filter(|_| r.data.len() >= 6) else {
                    bail!("the workbook stream has a sheet record (BoundSheet8) that is cut short");
                };
                if pos as usize > stream.len() {
                    bail!(
                        "the workbook stream's sheet record for `{}` points past its end",
                        name.trim()
                    );
                }
                sheets.push((pos as usize, name));
            }
            0x00FC => lens = shared_strings(&r)?,
            0x000A => break,
            _ => {}
        }
    }
    let mut text = 0u64;
    let mut total = 0u64;
    for (pos, name) in sheets {
        let cells = check_sheet(&stream[pos..], name.trim(), &lens, &mut text)?;
        total = total.saturating_add(cells);
        if total > MAX_WORKBOOK_CELLS {
            bail!(
                "the sheets' used areas together come to more than {} cells (limit), reached at \
                 sheet `{}`",
                thousands(MAX_WORKBOOK_CELLS),
                name.trim()
            );
        }
    }
    Ok(())
}

/// Reads across a record and its CONTINUE records.
struct Chunks<'a> {
    rest: std::vec::IntoIter<&'a [u8]>,
    cur: &'a [u8],
}

impl<'a> Chunks<'a> {
    /// Moves to the next CONTINUE record; `None` at the end.
    fn next_chunk(&mut self) -> Option<&'a [u8]> {
        self.cur = self.rest.next()?;
        Some(self.cur)
    }

    /// Skips `n` bytes, across records; `None` past the end.
    fn skip(&mut self, mut n: usize) -> Option<()> {
        loop {
            let k = n.min(self.cur.len());
            self.cur = &self.cur[k..];
            n -= k;
            if n == 0 {
                return Some(());
            }
            self.next_chunk()?;
        }
    }

    /// `N` bytes within the current record, taken.
    fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let bytes = self.cur.get(..N)?.try_into().ok()?;
        self.cur = &self.cur[N..];
        Some(bytes)
    }
}

/// A BoundSheet8 record's sheet name (BIFF8: a length, a flags byte, Latin-1 or UTF-16).
fn sheet_name(d: &[u8]) -> String {
    let len = usize::from(d.get(6).copied().unwrap_or(0));
    let wide = d.get(7).is_some_and(|f| f & 1 != 0);
    let chars = d.get(8..).unwrap_or_default();
    let name: String = if wide {
        let units: Vec<u16> = chars
            .chunks_exact(2)
            .take(len)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        String::from_utf16_lossy(&units)
    } else {
        chars.iter().take(len).map(|&b| char::from(b)).collect()
    };
    name.chars().filter(|c| !c.is_control()).collect()
}

/// The SST record: each string's length as UTF-8 at most, checked against the limits.
fn shared_strings(r: &Record<'_>) -> Result<Vec<u64>> {
    let mut c = Chunks {
        rest: r.more.clone().into_iter(),
        cur: r.data.get(8..).unwrap_or_default(),
    };
    let mut lens = Vec::new();
    let mut stored = 0u64;
    loop {
        if c.cur.is_empty() && c.next_chunk().is_none() {
            break;
        }
        let Some([lo, hi, flags]) = c.take::<3>() else {
            break;
        };
        let chars = u64::from(u16::from_le_bytes([lo, hi]));
        let runs = if flags & 0x8 == 0 {
            0
        } else {
            c.take::<2>()
                .map_or(0, |n| usize::from(u16::from_le_bytes(n)) * 4)
        };
        let ext = if flags & 0x4 == 0 {
            0
        } else {
            c.take::<4>().map_or(0, |n| u32::from_le_bytes(n) as usize)
        };
        if lens.len() as u64 >= MAX_SHARED_STRINGS {
            bail!(
                "the workbook has more than {} shared strings (limit)",
                thousands(MAX_SHARED_STRINGS)
            );
        }
        if chars > MAX_STRING_CHARS {
            bail!(
                "shared string {} is longer than {} characters, the most a cell holds (limit)",
                lens.len(),
                thousands(MAX_STRING_CHARS)
            );
        }
        // The characters: one or two bytes each; where a CONTINUE record splits them, it starts
        // with a new flags byte.
        let mut left = usize::from(u16::from_le_bytes([lo, hi]));
        let mut wide = flags & 1 != 0;
        loop {
            let width: usize = if wide { 2 } else { 1 };
            let take = left.min(c.cur.len() / width);
            c.cur = &c.cur[take * width..];
            stored += (take * width) as u64;
            left -= take;
            if left == 0 {
                break;
            }
            let Some(next) = c.next_chunk() else { break };
            wide = next.first().is_some_and(|f| f & 1 != 0);
            c.cur = next.get(1..).unwrap_or_default();
        }
        if stored > MAX_SHARED_STRING_BYTES {
            bail!(
                "the shared strings hold more than {} MiB of text (limit)",
                MAX_SHARED_STRING_BYTES >> 20
            );
        }
        lens.push(chars * UTF8_PER_CHAR);
        if left > 0 || c.skip(runs + ext).is_none() {
            break;
        }
    }
    Ok(lens)
}

/// One sheet's records up to its end: its used area's cell count, after checking it.
fn check_sheet(stream: &[u8], name: &str, lens: &[u64], text: &mut u64) -> Result<u64> {
    let label = format!("sheet `{name}`");
    let mut area = Area::default();
    let mut seen_bof = false;
    let mut depth = 0usize;
    for r in records(stream) {
        if depth > 0 {
            match r.typ {
                0x0809 => depth += 1,
                0x000A => depth -= 1,
                _ => {}
            }
            continue;
        }
        let d = r.data;
        let at = || Some((u64::from(u16_at(d, 0)?), u64::from(u16_at(d, 2)?)));
        let (cells, bytes) = match r.typ {
            0x0809 if seen_bof => {
                depth += 1;
                continue;
            }
            0x0809 => {
                seen_bof = true;
                continue;
            }
            0x000A => break,
            0x0200 => {
                check_dimension(d, &label)?;
                continue;
            }
            // Number, BoolErr, RK: a value of a few bytes.
            0x0203 | 0x0205 | 0x027E => (at().map(|p| (p, p)), 0),
            // Label, RString: the text is in the record.
            0x0204 | 0x00D6 => (
                at().map(|p| (p, p)),
                u64::from(u16_at(d, 6).unwrap_or(0)) * UTF8_PER_CHAR,
            ),
            // LabelSst: a copy of a shared string.
            0x00FD => (
                at().map(|p| (p, p)),
                u32_at(d, 6)
                    .and_then(|i| lens.get(i as usize))
                    .copied()
                    .unwrap_or(0),
            ),
            // MulRk: a run of numbers from one column to another.
            0x00BD => {
                let last = d.len().checked_sub(2).and_then(|i| u16_at(d, i));
                (
                    at().zip(last)
                        .map(|((row, col), last)| ((row, col), (row, u64::from(last).max(col)))),
                    0,
                )
            }
            // Formula: its value and its text.
            0x0006 => (at().map(|p| (p, p)), d.len() as u64 * FORMULA_TEXT_PER_BYTE),
            _ => continue,
        };
        *text = text.saturating_add(bytes);
        let Some((first, last)) = cells else { continue };
        let cells = area.add(first, last, false);
        check_area(&label, &area, cells)?;
        if *text > MAX_CELL_TEXT_BYTES {
            bail!(
                "{label}: the cells' text, with each shared string counted in every cell that \
                 uses it, comes to more than {} MiB at cell {} (limit)",
                MAX_CELL_TEXT_BYTES >> 20,
                cell_name(last.0, last.1)
            );
        }
    }
    Ok(area.cells())
}

/// A DIMENSION record, read as calamine reads it: calamine reserves room for its whole area.
fn check_dimension(d: &[u8], label: &str) -> Result<()> {
    let (rf, rl, cf, cl) = match d.len() {
        10 => (
            u32::from(u16_at(d, 0).unwrap_or(0)),
            u32::from(u16_at(d, 2).unwrap_or(0)),
            u32::from(u16_at(d, 4).unwrap_or(0)),
            u32::from(u16_at(d, 6).unwrap_or(0)),
        ),
        14 | 16 => (
            u32_at(d, 0).unwrap_or(0),
            u32_at(d, 4).unwrap_or(0),
            u32::from(u16_at(d, 8).unwrap_or(0)),
            u32::from(u16_at(d, 10).unwrap_or(0)),
        ),
        // calamine refuses other lengths.
        _ => return Ok(()),
    };
    let cf = if cf > 0xFF || cl < cf { 0 } else { cf };
    if rl == 0 || cl == 0 {
        return Ok(());
    }
    // The record names the first row and column and one past the last.
    if rl <= rf || cl <= cf {
        bail!(
            "{label}: its DIMENSION record is malformed (rows {rf} to {rl}, columns {cf} to {cl}): \
             the last is before the first"
        );
    }
    let area = u64::from(rl - rf) * u64::from(cl - cf);
    if area > MAX_SHEET_CELLS {
        bail!(
            "{label}: its DIMENSION record declares {}:{}, {} rows × {} columns = {} cells (limit: \
             {} cells per sheet)",
            cell_name(u64::from(rf), u64::from(cf)),
            cell_name(u64::from(rl - 1), u64::from(cl - 1)),
            thousands(u64::from(rl - rf)),
            thousands(u64::from(cl - cf)),
            thousands(area),
            thousands(MAX_SHEET_CELLS)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_shared_strings_of_a_saved_workbook() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/fixtures/sample.xls");
        let bytes = std::fs::read(path).unwrap();
        let stream = workbook_stream(&bytes).expect("the Workbook stream");
        let sst = records(&stream).find(|r| r.typ == 0x00FC).unwrap();
        // The record says how many distinct strings it holds: every one is walked.
        let unique = u32_at(sst.data, 4).unwrap() as usize;
        let lens = shared_strings(&sst).unwrap();
        assert_eq!(lens.len(), unique);
        assert!(
            lens.contains(&(8 * UTF8_PER_CHAR)),
            "\"hostname\", 8 characters"
        );
        assert!(check_biff(&stream).is_ok());
    }
}
