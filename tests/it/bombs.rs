//! Workbooks built to exhaust the reader: each is made here (a hand-written zip whose repeated
//! content is compressed once and repeated, so a gigabyte of XML takes a megabyte and a moment),
//! and each must end with exit 2, a message naming the limit and the file, and a peak memory
//! far below what the workbook asks for. The run has an address-space cap too, so that a reader
//! that does allocate what it is asked fails at once instead of taking the machine's memory.

use std::io::Write;
use std::path::Path;
use std::process::Command;

use flate2::{Compress, Compression, FlushCompress};

use crate::common::{Book, Run, require, roce_gen, tmp};

/// The most a bomb's run may use at its peak (KiB).
const PEAK_KIB: u64 = 1 << 20;
/// The address space a run gets (KiB): a reader that allocates what a bomb claims fails.
const ADDRESS_SPACE_KIB: u64 = 4 << 20;

/// One zip entry: `head`, then `body` `times` times, then `tail`.
struct Entry {
    name: &'static str,
    head: Vec<u8>,
    body: Vec<u8>,
    times: u64,
    tail: Vec<u8>,
}

fn entry(name: &'static str, content: impl Into<Vec<u8>>) -> Entry {
    Entry {
        name,
        head: content.into(),
        body: Vec::new(),
        times: 0,
        tail: Vec::new(),
    }
}

fn repeated(
    name: &'static str,
    head: impl Into<Vec<u8>>,
    body: impl Into<Vec<u8>>,
    times: u64,
    tail: impl Into<Vec<u8>>,
) -> Entry {
    Entry {
        name,
        head: head.into(),
        body: body.into(),
        times,
        tail: tail.into(),
    }
}

/// Raw deflate of `data`, flushed to a byte boundary and not final: a fresh compressor refers to
/// nothing before it, so such pieces can be laid one after another.
fn deflate_piece(data: &[u8]) -> Vec<u8> {
    let mut c = Compress::new(Compression::best(), false);
    let mut out = Vec::with_capacity(data.len() + 1024);
    let mut consumed = 0;
    loop {
        let before = c.total_in();
        c.compress_vec(&data[consumed..], &mut out, FlushCompress::Sync)
            .unwrap();
        consumed += usize::try_from(c.total_in() - before).unwrap();
        if consumed == data.len() && out.len() < out.capacity() {
            return out;
        }
        out.reserve(out.capacity());
    }
}

fn crc_of(data: &[u8]) -> crc32fast::Hasher {
    let mut h = crc32fast::Hasher::new();
    h.update(data);
    h
}

/// The CRC of `body` repeated `times` times, by doubling.
fn crc_repeated(body: &[u8], mut times: u64) -> crc32fast::Hasher {
    let mut result = crc32fast::Hasher::new();
    let mut power = crc_of(body);
    while times > 0 {
        if times & 1 == 1 {
            result.combine(&power);
        }
        let copy = power.clone();
        power.combine(&copy);
        times >>= 1;
    }
    result
}

/// A zip of `entries`, deflated (sizes under 4 GiB: no zip64 needed).
fn zip(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for e in entries {
        let body = deflate_piece(&e.body);
        let mut data = deflate_piece(&e.head);
        for _ in 0..e.times {
            data.extend_from_slice(&body);
        }
        data.extend_from_slice(&deflate_piece(&e.tail));
        data.extend_from_slice(&[0x03, 0x00]); // an empty final block
        let mut crc = crc_of(&e.head);
        crc.combine(&crc_repeated(&e.body, e.times));
        crc.combine(&crc_of(&e.tail));
        let crc = crc.finalize();
        let size = e.head.len() as u64 + e.body.len() as u64 * e.times + e.tail.len() as u64;
        let size = u32::try_from(size).expect("under 4 GiB");
        let csize = u32::try_from(data.len()).unwrap();
        let offset = u32::try_from(out.len()).unwrap();
        let name = e.name.as_bytes();
        let name_len = u16::try_from(name.len()).unwrap();
        let common = |v: &mut Vec<u8>| {
            for x in [20u16, 0, 8, 0, 0x21] {
                v.extend_from_slice(&x.to_le_bytes()); // version, flags, deflate, time, date
            }
            for x in [crc, csize, size] {
                v.extend_from_slice(&x.to_le_bytes());
            }
            v.extend_from_slice(&name_len.to_le_bytes());
            v.extend_from_slice(&0u16.to_le_bytes()); // extra field
        };
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        common(&mut out);
        out.extend_from_slice(name);
        out.extend_from_slice(&data);
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&20u16.to_le_bytes()); // made by
        common(&mut central);
        for x in [0u16, 0, 0] {
            central.extend_from_slice(&x.to_le_bytes()); // comment, disk, internal attributes
        }
        central.extend_from_slice(&0u32.to_le_bytes()); // external attributes
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name);
    }
    let count = u16::try_from(entries.len()).unwrap();
    let cd_offset = u32::try_from(out.len()).unwrap();
    let cd_size = u32::try_from(central.len()).unwrap();
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    for x in [0u16, 0, count, count] {
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.extend_from_slice(&cd_size.to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

const SHEET_HEAD: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>"#;
const SHEET_TAIL: &str = "</sheetData></worksheet>";
const SST_HEAD: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">"#;

/// An xlsx whose one sheet, `Servers`, is `sheet`, with `extra` (its shared strings, or any
/// other part) added.
fn xlsx(sheet: Entry, extra: Option<Entry>) -> Vec<u8> {
    let mut entries = vec![
        entry(
            "[Content_Types].xml",
            r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>"#,
        ),
        entry(
            "_rels/.rels",
            r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/></Relationships>"#,
        ),
        entry(
            "xl/workbook.xml",
            r#"<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"><sheets><sheet name="Servers" sheetId="1" r:id="rId1"/></sheets></workbook>"#,
        ),
        entry(
            "xl/_rels/workbook.xml.rels",
            r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings" Target="sharedStrings.xml"/></Relationships>"#,
        ),
        sheet,
    ];
    entries.extend(extra);
    zip(&entries)
}

/// A sheet of the given `<row>` elements.
fn sheet(rows: &str) -> Entry {
    entry(
        "xl/worksheets/sheet1.xml",
        format!("{SHEET_HEAD}{rows}{SHEET_TAIL}"),
    )
}

/// A header row (`hostname`, `mgmt_ip`) as inline strings, then `more`.
fn plan_rows(more: &str) -> String {
    format!(
        r#"<row r="1"><c r="A1" t="inlineStr"><is><t>hostname</t></is></c><c r="B1" t="inlineStr"><is><t>mgmt_ip</t></is></c></row>{more}"#
    )
}

/// Runs `roce-gen validate FILE` under the address-space cap; the run and its peak RSS (KiB).
fn run_measured(dir: &Path, file: &str) -> (Run, u64) {
    measured(dir, ADDRESS_SPACE_KIB, &["validate", file])
}

/// Runs `roce-gen ARGS...` in `dir` with `address_space` KiB of address space and two worker
/// threads (so that thread stacks and malloc arenas do not grow with the machine); the run and
/// its peak RSS (KiB), as GNU time reads it from the child's rusage.
pub(crate) fn measured(dir: &Path, address_space: u64, args: &[&str]) -> (Run, u64) {
    require("/usr/bin/time");
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            r#"ulimit -v {address_space} && exec /usr/bin/time -f %M -o rss.txt "$0" "$@""#
        ))
        .arg(env!("CARGO_BIN_EXE_roce-gen"))
        .args(args)
        .current_dir(dir)
        .env("RAYON_NUM_THREADS", "2")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let rss = std::fs::read_to_string(dir.join("rss.txt")).unwrap();
    // GNU time writes "Command exited with non-zero status N" before the figure.
    let peak = rss.lines().last().unwrap().trim().parse().unwrap();
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    (run, peak)
}

/// Writes `bytes` as `file` and checks the run: exit 2, one line naming the file and `limit`.
fn expect_refused(file: &str, bytes: &[u8], limit: &str) {
    assert!(bytes.len() < 64 << 20, "{file} is {} bytes", bytes.len());
    let dir = tmp();
    std::fs::write(dir.path().join(file), bytes).unwrap();
    let (run, peak) = run_measured(dir.path(), file);
    assert_eq!(run.code, 2, "{file}: {}", run.transcript());
    let prefix = format!("error: {file}: could not read the plan: ");
    assert!(run.stderr.starts_with(&prefix), "{}", run.stderr);
    assert!(run.stderr.contains(limit), "{file}: {}", run.stderr);
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
    assert!(
        peak < PEAK_KIB,
        "{file}: peak RSS {peak} KiB: {}",
        run.stderr
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_10_mb_shared_string_in_3000_cells() {
    let strings = repeated(
        "xl/sharedStrings.xml",
        format!("{SST_HEAD}<si><t>"),
        vec![b'x'; 1 << 20],
        10,
        "</t></si></sst>",
    );
    let cells: String = (2..3002)
        .map(|r| format!(r#"<row r="{r}"><c r="A{r}" t="s"><v>0</v></c></row>"#))
        .collect();
    expect_refused(
        "plan.xlsx",
        &xlsx(sheet(&plan_rows(&cells)), Some(strings)),
        "part xl/sharedStrings.xml: shared string 0 is longer than 32,767 characters, the most a \
         cell holds (limit)",
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_long_shared_string_in_many_cells_exceeds_the_cell_text() {
    // Each string is within a cell's limit; copied into 10,000 cells it is 300 MB.
    let strings = entry(
        "xl/sharedStrings.xml",
        format!("{SST_HEAD}<si><t>{}</t></si></sst>", "y".repeat(30_000)),
    );
    let cells: String = (2..10_002)
        .map(|r| format!(r#"<row r="{r}"><c r="A{r}" t="s"><v>0</v></c></row>"#))
        .collect();
    expect_refused(
        "plan.xlsx",
        &xlsx(sheet(&plan_rows(&cells)), Some(strings)),
        "comes to more than 128 MiB at cell A",
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_shared_string_index_that_is_not_a_number_is_string_0() {
    // calamine reads `<v>x</v>` in a `t="s"` cell as shared string 0 (not as an error): here the
    // longest a cell may hold, 32,767 four-byte characters (128 KiB), in 6,000 cells of a 32 KB
    // file, 1.5 GB to calamine if the guard let it through.
    let strings = entry(
        "xl/sharedStrings.xml",
        format!(
            "{SST_HEAD}<si><t>{}</t></si></sst>",
            "\u{1D11E}".repeat(32_767)
        ),
    );
    let cells: String = (2..6_002)
        .map(|r| format!(r#"<row r="{r}"><c r="A{r}" t="s"><v>x</v></c></row>"#))
        .collect();
    expect_refused(
        "plan.xlsx",
        &xlsx(sheet(&plan_rows(&cells)), Some(strings)),
        "comes to more than 128 MiB at cell A",
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_hundred_million_tiny_shared_strings() {
    let one = b"<si><t>a</t></si>";
    let body: Vec<u8> = one
        .iter()
        .copied()
        .cycle()
        .take(one.len() * 61_681)
        .collect();
    let strings = repeated("xl/sharedStrings.xml", SST_HEAD, body, 1_622, "</sst>");
    let bytes = xlsx(sheet(&plan_rows("")), Some(strings));
    assert!(bytes.len() < 8 << 20, "{}", bytes.len());
    expect_refused(
        "plan.xlsx",
        &bytes,
        "part xl/sharedStrings.xml has more than 1,000,000 shared strings (limit)",
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_shared_string_table_that_declares_ten_billion_strings() {
    let strings = entry(
        "xl/sharedStrings.xml",
        r#"<?xml version="1.0"?><sst uniqueCount="10000000000"><si><t>a</t></si></sst>"#,
    );
    expect_refused(
        "plan.xlsx",
        &xlsx(sheet(&plan_rows("")), Some(strings)),
        "declares 10,000,000,000 shared strings (limit: 1,000,000)",
    );
}

/// Two broken limits, the sheet's first in the file: the guard walks the parts calamine opens
/// the workbook with (the shared strings among them) before the sheets it reads behind the
/// guard, so the refusal names the shared strings, whatever the order of the parts in the zip.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_workbook_that_breaks_two_limits_is_refused_for_its_shared_strings_first() {
    let strings = entry(
        "xl/sharedStrings.xml",
        r#"<?xml version="1.0"?><sst uniqueCount="10000000000"><si><t>a</t></si></sst>"#,
    );
    let far = r#"<row r="1048576"><c r="XFD1048576"><v>1</v></c></row>"#;
    let bytes = xlsx(sheet(&plan_rows(far)), Some(strings));
    // The names of the local file headers, in the order of the file.
    let names: Vec<String> = (0..bytes.len().saturating_sub(30))
        .filter(|&i| bytes[i..].starts_with(b"PK\x03\x04"))
        .map(|i| {
            let len = usize::from(u16::from_le_bytes([bytes[i + 26], bytes[i + 27]]));
            String::from_utf8_lossy(&bytes[i + 30..i + 30 + len]).into_owned()
        })
        .collect();
    let at = |name: &str| names.iter().position(|n| n == name).unwrap();
    assert!(
        at("xl/worksheets/sheet1.xml") < at("xl/sharedStrings.xml"),
        "{names:?}"
    );
    expect_refused(
        "plan.xlsx",
        &bytes,
        "declares 10,000,000,000 shared strings (limit: 1,000,000)",
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_unused_1_gb_shared_string() {
    let strings = repeated(
        "xl/sharedStrings.xml",
        format!("{SST_HEAD}<si><t>"),
        vec![b'z'; 1 << 20],
        1024,
        "</t></si></sst>",
    );
    let bytes = xlsx(sheet(&plan_rows("")), Some(strings));
    assert!(bytes.len() < 4 << 20, "{}", bytes.len());
    expect_refused("plan.xlsx", &bytes, "longer than 32,767 characters");
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_value_in_the_last_cell_of_the_sheet() {
    let far = r#"<row r="1048576"><c r="XFD1048576"><v>1</v></c></row>"#;
    expect_refused(
        "plan.xlsx",
        &xlsx(sheet(&plan_rows(far)), None),
        "sheet `Servers` (part xl/worksheets/sheet1.xml): the cells in use span A1:XFD1048576, \
         1,048,576 rows × 16,384 columns = 17,179,869,184 cells (limit: 4,000,000 cells per \
         sheet); the far one is XFD1048576: delete it if it is a stray value",
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_value_in_the_last_column_of_row_5000() {
    let far = r#"<row r="5000"><c r="XFD5000"><v>1</v></c></row>"#;
    expect_refused(
        "plan.xlsx",
        &xlsx(sheet(&plan_rows(far)), None),
        "the cells in use span A1:XFD5000, 5,000 rows × 16,384 columns = 81,920,000 cells \
         (limit: 4,000,000 cells per sheet); the far one is XFD5000",
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn malformed_cell_references() {
    for (reference, row) in [
        ("A99999999999", "2"),
        ("1A", "2"),
        ("AAAAAAAAAAAAAAAAAAAA2", "2"),
        ("XFE2", "2"),
    ] {
        let rows = format!(r#"<row r="{row}"><c r="{reference}"><v>1</v></c></row>"#);
        expect_refused(
            "plan.xlsx",
            &xlsx(sheet(&plan_rows(&rows)), None),
            &format!("malformed cell reference `{reference}` in <c>"),
        );
    }
    let rows = r#"<row r="99999999999"><c><v>1</v></c></row>"#;
    expect_refused(
        "plan.xlsx",
        &xlsx(sheet(&plan_rows(rows)), None),
        "malformed cell reference `99999999999` in <row>",
    );
    // A dimension or merged region whose first cell is after its last.
    let dims = entry(
        "xl/worksheets/sheet1.xml",
        format!(
            r#"{}<dimension ref="B2:A1"/><sheetData>{}{SHEET_TAIL}"#,
            SHEET_HEAD.trim_end_matches("<sheetData>"),
            plan_rows("")
        ),
    );
    expect_refused(
        "plan.xlsx",
        &xlsx(dims, None),
        "malformed cell reference `B2:A1` in <dimension>",
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_shared_formula_index_of_four_billion() {
    let rows = r#"<row r="2"><c r="A2"><f t="shared" si="4000000000" ref="A2:A3">1+1</f><v>2</v></c></row>"#;
    expect_refused(
        "plan.xlsx",
        &xlsx(sheet(&plan_rows(rows)), None),
        "cell A2 uses shared formula 4,000,000,000 (limit: 1,000,000)",
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn billion_laughs() {
    let mut dtd = String::from(r#"<!DOCTYPE sst [<!ENTITY lol0 "lol">"#);
    for i in 1..10 {
        let prev = format!("&lol{};", i - 1).repeat(10);
        dtd.push_str(&format!(r#"<!ENTITY lol{i} "{prev}">"#));
    }
    dtd.push(']');
    dtd.push('>');
    let strings = entry(
        "xl/sharedStrings.xml",
        format!(
            r#"<?xml version="1.0"?>{dtd}<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><si><t>&lol9;</t></si></sst>"#
        ),
    );
    expect_refused(
        "plan.xlsx",
        &xlsx(sheet(&plan_rows("")), Some(strings)),
        "part xl/sharedStrings.xml has a document type declaration (<!DOCTYPE …>)",
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn three_hundred_mb_of_xml_in_a_part_calamine_never_reads() {
    // Every part counts: a relationship can point a sheet at any part of the zip.
    let mut chunk = vec![b' '; 1 << 16];
    chunk[..4].copy_from_slice(b"<b/>");
    let body = chunk.repeat(16);
    let filler = repeated("xl/media/filler.xml", "<a>", body, 300, "</a>");
    expect_refused(
        "plan.xlsx",
        &xlsx(sheet(&plan_rows("")), Some(filler)),
        "the workbook's parts decompress to more than 256 MiB (limit), reached in part \
         xl/media/filler.xml",
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn two_mb_of_whitespace_between_two_tags() {
    let filler = repeated("xl/media/filler.xml", "<a>", vec![b' '; 1 << 20], 2, "</a>");
    expect_refused(
        "plan.xlsx",
        &xlsx(sheet(&plan_rows("")), Some(filler)),
        "part xl/media/filler.xml has an XML tag or text longer than 1 MiB (limit)",
    );
}

/// An ods whose one table, `Servers`, has the given rows.
fn ods(rows: Entry) -> Vec<u8> {
    let head = r#"<?xml version="1.0" encoding="UTF-8"?><office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.3"><office:body><office:spreadsheet><table:table table:name="Servers"><table:table-row><table:table-cell office:value-type="string"><text:p>hostname</text:p></table:table-cell><table:table-cell office:value-type="string"><text:p>mgmt_ip</text:p></table:table-cell></table:table-row>"#;
    let tail = "</table:table></office:spreadsheet></office:body></office:document-content>";
    let content = Entry {
        name: "content.xml",
        head: [head.as_bytes(), &rows.head].concat(),
        body: rows.body,
        times: rows.times,
        tail: [&rows.tail[..], tail.as_bytes()].concat(),
    };
    zip(&[
        entry("mimetype", "application/vnd.oasis.opendocument.spreadsheet"),
        entry(
            "META-INF/manifest.xml",
            r#"<?xml version="1.0" encoding="UTF-8"?><manifest:manifest xmlns:manifest="urn:oasis:names:tc:opendocument:xmlns:manifest:1.0" manifest:version="1.3"><manifest:file-entry manifest:full-path="/" manifest:media-type="application/vnd.oasis.opendocument.spreadsheet"/><manifest:file-entry manifest:full-path="content.xml" manifest:media-type="text/xml"/></manifest:manifest>"#,
        ),
        content,
    ])
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_ods_cell_repeated_across_every_column_of_a_million_rows() {
    let rows = entry(
        "content.xml",
        r#"<table:table-row table:number-rows-repeated="1000000"><table:table-cell table:number-columns-repeated="16384" office:value-type="string"><text:p>x</text:p></table:table-cell></table:table-row>"#,
    );
    expect_refused(
        "plan.ods",
        &ods(rows),
        "sheet `Servers` (part content.xml): the cells in use span A1:XFD1000001, 1,000,001 rows × \
         16,384 columns",
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_ods_run_of_two_billion_spaces() {
    let rows = entry(
        "content.xml",
        r#"<table:table-row><table:table-cell office:value-type="string"><text:p>a<text:s text:c="2000000000"/>b</text:p></table:table-cell></table:table-row>"#,
    );
    expect_refused(
        "plan.ods",
        &ods(rows),
        "sheet `Servers` (part content.xml): the cells' text, with each shared string, shared \
         formula and repeated cell counted in every cell that uses it, comes to more than 128 MiB \
         at cell A2 (limit)",
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_ods_string_repeated_in_many_cells_exceeds_the_cell_text() {
    // 1,000 columns × 2,000 rows = 2 M cells (within the area), each a copy of 100 bytes.
    let rows = entry(
        "content.xml",
        format!(
            r#"<table:table-row table:number-rows-repeated="2000"><table:table-cell table:number-columns-repeated="1000" office:value-type="string"><text:p>{}</text:p></table:table-cell></table:table-row>"#,
            "w".repeat(100)
        ),
    );
    expect_refused("plan.ods", &ods(rows), "comes to more than 128 MiB");
}

#[test]
fn the_bomb_makers_make_readable_workbooks() {
    // The same makers with harmless content give workbooks that are read (a plan with errors,
    // exit 1), so the refusals above are the limits' and not a broken file's.
    let dir = tmp();
    let strings = entry(
        "xl/sharedStrings.xml",
        format!("{SST_HEAD}<si><t>gpu-001</t></si></sst>"),
    );
    let rows = plan_rows(r#"<row r="2"><c r="A2" t="s"><v>0</v></c><c r="B2"><v>1</v></c></row>"#);
    std::fs::write(
        dir.path().join("plan.xlsx"),
        xlsx(sheet(&rows), Some(strings)),
    )
    .unwrap();
    let rows = entry(
        "content.xml",
        r#"<table:table-row><table:table-cell office:value-type="string"><text:p>gpu-001</text:p></table:table-cell></table:table-row>"#,
    );
    std::fs::write(dir.path().join("plan.ods"), ods(rows)).unwrap();
    for file in ["plan.xlsx", "plan.ods"] {
        let run = roce_gen(dir.path(), &["validate", file]);
        assert_eq!(run.code, 1, "{file}: {}", run.transcript());
        assert!(
            run.stderr.contains("Servers!B2"),
            "{file}: {}",
            run.transcript()
        );
        assert!(
            run.stderr.contains("no sheet `Cluster`"),
            "{}",
            run.transcript()
        );
    }
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_saved_fixtures_pass_the_limits() {
    // formats.rs checks that they read exactly like the sample; here, that they are read at all
    // and in little memory.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures");
    let dir = tmp();
    for file in ["sample.ods", "sample.xls", "sample-libreoffice.xlsx"] {
        std::fs::copy(fixtures.join(file), dir.path().join(file)).unwrap();
        let (run, peak) = run_measured(dir.path(), file);
        assert_eq!(run.code, 0, "{file}: {}", run.transcript());
        assert!(peak < 200 << 10, "{file}: peak RSS {peak} KiB");
    }
}

#[test]
fn a_hidden_plan_sheet_is_read_with_a_warning() {
    let dir = tmp();
    Book::base().write_with(dir.path(), "hidden.xlsx", |name, ws| {
        if name == "Servers" {
            ws.set_very_hidden(true);
        } else if name == "NICs" {
            ws.set_hidden(true);
        }
    });
    let run = roce_gen(dir.path(), &["validate", "hidden.xlsx"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(
        all.contains(
            "sheet \"Servers\" is hidden in the workbook (very hidden: only a macro or the VBA \
             editor shows it); it is read as the plan's `Servers` sheet"
        ),
        "{all}"
    );
    assert!(
        all.contains("sheet \"NICs\" is hidden in the workbook (hidden: Unhide in Excel or"),
        "{all}"
    );
}

#[test]
fn a_hidden_copy_beside_the_visible_sheet_is_ignored() {
    let dir = tmp();
    let mut book = Book::base();
    let mut old = book.sheet("Servers").clone();
    old.name = "Hosts".into();
    old.rows[1][0] = crate::common::s("not a host!");
    book.sheets.push(old);
    book.write_with(dir.path(), "plan.xlsx", |name, ws| {
        if name == "Hosts" {
            ws.set_hidden(true);
        }
    });
    let run = roce_gen(dir.path(), &["validate", "plan.xlsx"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let all = format!("{}{}", run.stdout, run.stderr);
    assert!(
        all.contains(
            "sheet \"Hosts\" is hidden in the workbook and is ignored; the visible sheet \
             \"Servers\" is read as the plan's `Servers` sheet"
        ),
        "{all}"
    );
}

#[test]
fn json_plans_with_a_byte_order_mark() {
    let dir = tmp();
    let json = crate::common::plan_json(&Book::base());
    let mut utf8 = vec![0xEF, 0xBB, 0xBF];
    utf8.extend_from_slice(json.as_bytes());
    std::fs::write(dir.path().join("bom.json"), &utf8).unwrap();
    let run = roce_gen(dir.path(), &["validate", "bom.json"]);
    assert_eq!(run.code, 0, "{}", run.transcript());

    for (file, bom, be) in [
        ("le.json", [0xFF, 0xFE], false),
        ("be.json", [0xFE, 0xFF], true),
    ] {
        let mut f = std::fs::File::create(dir.path().join(file)).unwrap();
        f.write_all(&bom).unwrap();
        for unit in json.encode_utf16() {
            let bytes = if be {
                unit.to_be_bytes()
            } else {
                unit.to_le_bytes()
            };
            f.write_all(&bytes).unwrap();
        }
        drop(f);
        let run = roce_gen(dir.path(), &["validate", file]);
        assert_eq!(run.code, 2, "{}", run.transcript());
        assert_eq!(
            run.stderr,
            format!(
                "error: {file}: could not read the plan: the file is saved as UTF-16; save it \
                 as UTF-8\n"
            )
        );
    }
}

/// The LibreOffice-saved sample `.xls`, with `patch` applied to its bytes.
fn xls(patch: impl Fn(&mut Vec<u8>)) -> Vec<u8> {
    let mut bytes =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/fixtures/sample.xls"))
            .unwrap();
    patch(&mut bytes);
    bytes
}

/// Where the first record that starts with `head` (type and length) is.
fn record(bytes: &[u8], head: &[u8]) -> usize {
    bytes
        .windows(head.len())
        .position(|w| w == head)
        .expect("record in the sample")
}

/// The first DIMENSION record of the sample (BIFF8: 14 bytes).
const DIMENSION: [u8; 4] = [0x00, 0x02, 0x0E, 0x00];

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_xls_dimension_record_of_four_billion_rows() {
    let bytes = xls(|b| {
        let at = record(b, &DIMENSION) + 4;
        b[at + 4..at + 8].copy_from_slice(&u32::MAX.to_le_bytes());
    });
    expect_refused(
        "plan.xls",
        &bytes,
        "its DIMENSION record declares A1:B4294967295, 4,294,967,295 rows × 2 columns",
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_xls_dimension_record_that_ends_before_it_starts() {
    let bytes = xls(|b| {
        let at = record(b, &DIMENSION) + 4;
        b[at..at + 4].copy_from_slice(&100u32.to_le_bytes());
        b[at + 4..at + 8].copy_from_slice(&5u32.to_le_bytes());
    });
    expect_refused(
        "plan.xls",
        &bytes,
        "its DIMENSION record is malformed (rows 100 to 5, columns 0 to 2)",
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_xls_cell_in_the_last_row_and_column() {
    let bytes = xls(|b| {
        // A LabelSst record (a shared string in a cell): its row and column.
        let at = record(b, &[0xFD, 0x00, 0x0A, 0x00]) + 4;
        b[at..at + 2].copy_from_slice(&u16::MAX.to_le_bytes());
        b[at + 2..at + 4].copy_from_slice(&255u16.to_le_bytes());
    });
    expect_refused(
        "plan.xls",
        &bytes,
        "sheet `Cluster`: the cells in use span B1:IV65536, 65,536 rows × 255 columns = \
         16,711,680 cells (limit: 4,000,000 cells per sheet); the far one is IV65536",
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_excel_binary_workbook_named_xlsx() {
    let bytes = zip(&[
        entry(
            "_rels/.rels",
            r#"<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.bin"/></Relationships>"#,
        ),
        entry("xl/workbook.bin", vec![0x83, 0x01, 0x00]),
    ]);
    expect_refused(
        "plan.xlsx",
        &bytes,
        "part xl/workbook.bin makes this an Excel binary workbook (.xlsb), which is not a plan \
         format; save it as .xlsx",
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn merged_regions_laid_over_each_other() {
    // Two million cells in use, each merged region covers them all: three of them make six
    // million cells to fill.
    let far = r#"<row r="2000"><c r="ALL2000"><v>1</v></c></row>"#;
    let merges = r#"<mergeCells count="3"><mergeCell ref="A1:ALL2000"/><mergeCell ref="A1:ALL2000"/><mergeCell ref="A1:ALL2000"/></mergeCells>"#;
    let part = entry(
        "xl/worksheets/sheet1.xml",
        format!(
            "{SHEET_HEAD}{}</sheetData>{merges}</worksheet>",
            plan_rows(far)
        ),
    );
    expect_refused(
        "plan.xlsx",
        &xlsx(part, None),
        "sheet \"Servers\": its merged regions cover more than 4,000,000 cells in use (limit)",
    );
}
