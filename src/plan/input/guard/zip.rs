//! A zip workbook's parts, each read once as a stream: decompressed bytes are metered against
//! [`MAX_UNZIPPED_BYTES`] and [`MAX_XML_EVENT_BYTES`] as they are read (so no part and no XML
//! event is held whole), and every part is walked in an order that names sheets in messages,
//! whatever its name, since a relationship can point a sheet at any part.

use std::cell::Cell;
use std::io::{BufReader, Cursor, Read};

use anyhow::{Result, bail};
use quick_xml::events::Event;

use super::xlsx::{Links, Part, long_string};
use super::{Checked, MAX_UNZIPPED_BYTES, MAX_XML_EVENT_BYTES, Tally};

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

/// Checks every part of a zip workbook.
pub(super) fn check(mut archive: ::zip::ZipArchive<Cursor<&[u8]>>) -> Result<Checked> {
    // Every part is checked, whatever its name: a relationship can point a sheet at any part.
    // The workbook and its relationships come first (sheet names for messages), then the shared
    // strings (their lengths, for the cells that use them), then the rest, worksheets last.
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
    for (rank, index, name) in order {
        // An entry that cannot be opened (an unsupported method, encryption) cannot be read by
        // calamine either.
        let Ok(file) = archive.by_index(index) else {
            continue;
        };
        if file.is_dir() {
            continue;
        }
        meter.part.set(0);
        meter.event_start.set(0);
        let reader = BufReader::new(Metered {
            inner: file,
            meter: &meter,
        });
        let mut part = Part::new(&name, &mut tally, &mut links);
        scan_xml(reader, &mut part, &meter)?;
        if rank == 0 {
            links.resolve(&mut tally.sheet_names);
        }
    }
    Ok(Checked {
        uncached_formulas: tally.uncached_formulas,
        merged_sheets: (!tally.merges_unplaced).then_some(tally.merged_sheets),
    })
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
