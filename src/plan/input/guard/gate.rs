//! Lets calamine read a zip workbook while the guard is still walking it, never ahead of what
//! the guard has checked by more than a bounded window.
//!
//! The [`Gate`] knows each zip entry's compressed bytes (its span). calamine reads the workbook
//! through [`Gated`], which hands out only bytes that are released and waits for the rest:
//! bytes outside every span (headers, the central directory) are free, a span is released whole
//! once the guard has checked its part, and everything once the guard accepts the workbook. When
//! the guard refuses (or fails in any way), every read fails, so calamine stops.
//!
//! While calamine reads worksheets, the gate may *trail* the guard inside a worksheet part: the
//! guard's zip reader tells the gate how far into the file it has read (`pos`), and the span is
//! released up to `pos - MARGIN`. The guard's inflater has consumed all but its 8 KiB buffer of
//! what it read, so calamine's inflater is given less compressed input than the guard's has
//! taken, and so decompresses no further than the guard. What the guard has decompressed but not
//! yet checked is its 8 KiB buffer plus the XML event being read, at most
//! [`MAX_XML_EVENT_BYTES`](super::MAX_XML_EVENT_BYTES): so calamine sees at most ~1 MiB of XML
//! the guard has not judged. That is harmless: the cells reader borrows shared strings rather
//! than copying them, the caller's own limits bound the cells and text it keeps, and the dense
//! range calamine would allocate for a far cell is built only once the guard has accepted the
//! whole workbook. Trailing is off while calamine opens the workbook, because opening reserves
//! and expands what the parts declare (the shared strings' count, ods repeated cells).

use std::io::{Cursor, Read, Seek, SeekFrom};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

/// How far behind the guard's read position calamine is held inside a worksheet part: well
/// beyond the 8 KiB buffer zip puts between the file and the inflater.
const MARGIN: u64 = 64 << 10;

/// The guard's progress, shared between its thread and calamine's reader.
pub(crate) struct Gate {
    len: u64,
    state: Mutex<State>,
    changed: Condvar,
}

struct State {
    /// Each zip entry's compressed bytes, by entry index.
    spans: Vec<Span>,
    /// The entry the guard is scanning, and whether calamine may trail it there.
    current: Option<(usize, bool)>,
    /// calamine is past opening the workbook: worksheet parts may be released as the guard goes.
    trailing: bool,
    outcome: Outcome,
}

#[derive(Clone, Copy)]
struct Span {
    start: u64,
    end: u64,
    /// Bytes before this are released.
    released: u64,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Running,
    Accepted,
    Refused,
}

impl Gate {
    /// A gate for a zip workbook; `None` for anything else (an `.xls`, not a zip, or a zip whose
    /// entries cannot all be located), which is read only after the guard.
    pub(crate) fn new(bytes: &[u8]) -> Option<Self> {
        if bytes.starts_with(&super::xls::MAGIC) {
            return None;
        }
        let len = bytes.len() as u64;
        let mut archive = zip::ZipArchive::new(Cursor::new(bytes)).ok()?;
        let spans = (0..archive.len())
            .map(|i| {
                let entry = archive.by_index_raw(i).ok()?;
                let start = entry.data_start()?.min(len);
                let end = start.saturating_add(entry.compressed_size()).min(len);
                Some(Span {
                    start,
                    end,
                    released: start,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            len,
            state: Mutex::new(State {
                spans,
                current: None,
                trailing: false,
                outcome: Outcome::Running,
            }),
            changed: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic elsewhere cannot leave the state half-changed: every change is one assignment.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The guard starts scanning entry `index`; `sheet` when it is a worksheet part, which
    /// calamine may trail.
    pub(super) fn begin(&self, index: usize, sheet: bool) {
        self.lock().current = Some((index, sheet));
    }

    /// The guard's zip reader is at `pos` in the file.
    pub(super) fn advance(&self, pos: u64) {
        let mut state = self.lock();
        let (Some((index, true)), true) = (state.current, state.trailing) else {
            return;
        };
        let Some(span) = state.spans.get_mut(index) else {
            return;
        };
        let to = pos.saturating_sub(MARGIN).clamp(span.start, span.end);
        if to > span.released {
            span.released = to;
            drop(state);
            self.changed.notify_all();
        }
    }

    /// The guard has checked (or skipped) entry `index`: calamine may read all of it.
    pub(super) fn passed(&self, index: usize) {
        let mut state = self.lock();
        if let Some(span) = state.spans.get_mut(index) {
            span.released = span.end;
        }
        state.current = None;
        drop(state);
        self.changed.notify_all();
    }

    /// calamine has opened the workbook: worksheet parts may be read behind the guard.
    pub(crate) fn trail(&self) {
        self.lock().trailing = true;
        self.changed.notify_all();
    }

    /// The guard has ended: every byte is released, or every read fails.
    pub(super) fn end(&self, accepted: bool) {
        let mut state = self.lock();
        if state.outcome == Outcome::Running {
            state.outcome = if accepted {
                Outcome::Accepted
            } else {
                Outcome::Refused
            };
        }
        drop(state);
        self.changed.notify_all();
    }

    /// Ends the gate as refused when dropped before the guard accepted: an early return or a
    /// panic in the guard must not leave calamine waiting.
    pub(super) fn ending(&self) -> Ending<'_> {
        Ending(self)
    }

    /// Waits until some bytes at `pos` are released; the end of what may be read from there.
    fn readable(&self, pos: u64) -> std::io::Result<u64> {
        let mut state = self.lock();
        loop {
            if pos >= self.len {
                return Ok(pos);
            }
            match state.outcome {
                Outcome::Accepted => return Ok(self.len),
                Outcome::Refused => {
                    return Err(std::io::Error::other(
                        "the workbook was refused while it was being read",
                    ));
                }
                Outcome::Running => {}
            }
            let mut limit = self.len;
            for span in state.spans.iter().filter(|s| s.released < s.end) {
                if pos < span.start {
                    limit = limit.min(span.start);
                } else if pos < span.end {
                    limit = limit.min(span.released.max(pos));
                }
            }
            if limit > pos {
                return Ok(limit);
            }
            state = self
                .changed
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// See [`Gate::ending`].
pub(super) struct Ending<'g>(&'g Gate);

impl Drop for Ending<'_> {
    fn drop(&mut self) {
        self.0.end(false);
    }
}

/// The workbook's bytes as calamine may read them: reads return only released bytes, waiting
/// for them (short reads are fine for [`Read`]).
#[derive(Clone)]
pub(crate) struct Gated<'a> {
    inner: Cursor<&'a [u8]>,
    gate: &'a Gate,
}

impl<'a> Gated<'a> {
    pub(crate) fn new(bytes: &'a [u8], gate: &'a Gate) -> Self {
        Self {
            inner: Cursor::new(bytes),
            gate,
        }
    }
}

impl Read for Gated<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let pos = self.inner.position();
        let released = self.gate.readable(pos)?.saturating_sub(pos);
        let n = usize::try_from(released).map_or(buf.len(), |r| r.min(buf.len()));
        self.inner.read(&mut buf[..n])
    }
}

impl Seek for Gated<'_> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(to)
    }
}

/// The guard's view of the workbook: a cursor that tells the gate (if any) where it is after
/// every read.
pub(super) struct Tracked<'a> {
    inner: Cursor<&'a [u8]>,
    gate: Option<&'a Gate>,
}

impl<'a> Tracked<'a> {
    pub(super) fn new(bytes: &'a [u8], gate: Option<&'a Gate>) -> Self {
        Self {
            inner: Cursor::new(bytes),
            gate,
        }
    }
}

impl Read for Tracked<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(gate) = self.gate {
            gate.advance(self.inner.position());
        }
        Ok(n)
    }
}

impl Seek for Tracked<'_> {
    fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
        self.inner.seek(to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The margin holds only while zip reads ahead of its inflater by less than [`MARGIN`] (zip
    /// 9.8 puts an 8 KiB buffer there). Measured on the real crate, so that an upgrade that grows
    /// the buffer fails here instead of letting calamine read unchecked bytes.
    #[test]
    fn zip_reads_ahead_of_its_inflater_by_less_than_the_margin() {
        use std::cell::Cell;
        use std::io::Write;

        struct Watched<'a> {
            inner: Cursor<&'a [u8]>,
            furthest: &'a Cell<u64>,
        }
        impl Read for Watched<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let n = self.inner.read(buf)?;
                self.furthest
                    .set(self.furthest.get().max(self.inner.position()));
                Ok(n)
            }
        }
        impl Seek for Watched<'_> {
            fn seek(&mut self, to: SeekFrom) -> std::io::Result<u64> {
                self.inner.seek(to)
            }
        }

        // Incompressible data: deflate stores it, so the compressed offset of every output byte
        // is its own offset plus a few block headers, and any lead beyond that is read-ahead.
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let data: Vec<u8> = (0..1_000_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state.to_le_bytes()[0]
            })
            .collect();
        let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
        let options = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        zip.start_file("xl/worksheets/sheet1.xml", options).unwrap();
        zip.write_all(&data).unwrap();
        let bytes = zip.finish().unwrap().into_inner();

        let furthest = Cell::new(0);
        let reader = Watched {
            inner: Cursor::new(&bytes),
            furthest: &furthest,
        };
        let mut archive = zip::ZipArchive::new(reader).unwrap();
        let mut entry = archive.by_index(0).unwrap();
        let start = entry.data_start().unwrap();
        furthest.set(0);
        let (mut out, mut lead) = (0u64, 0u64);
        let mut buf = [0u8; 1000];
        loop {
            let n = entry.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            out += n as u64;
            lead = lead.max(furthest.get().saturating_sub(start + out));
        }
        assert_eq!(out, data.len() as u64);
        assert!(lead > 0, "no read-ahead measured");
        assert!(
            lead < MARGIN,
            "zip reads {lead} bytes ahead of its inflater, the margin is {MARGIN}"
        );
    }

    /// Reads of a span wait for the guard; outside spans they do not; a refusal fails them.
    #[test]
    fn reads_wait_for_releases_and_fail_on_refusal() {
        let bytes = vec![7u8; 300_000];
        let gate = Gate {
            len: bytes.len() as u64,
            state: Mutex::new(State {
                spans: vec![Span {
                    start: 100,
                    end: 250_000,
                    released: 100,
                }],
                current: None,
                trailing: false,
                outcome: Outcome::Running,
            }),
            changed: Condvar::new(),
        };
        let mut reader = Gated::new(&bytes, &gate);
        let mut buf = [0u8; 1000];
        // The bytes before the span are free, and a read stops at the span.
        assert_eq!(reader.read(&mut buf).unwrap(), 100);
        // Not trailing: the guard's progress releases nothing until the part is passed.
        gate.begin(0, true);
        gate.advance(200_000);
        assert_eq!(gate.lock().spans[0].released, 100);
        gate.trail();
        gate.advance(200_000);
        assert_eq!(gate.lock().spans[0].released, 200_000 - MARGIN);
        assert_eq!(reader.read(&mut buf).unwrap(), 1000);
        reader.seek(SeekFrom::Start(200_000 - MARGIN)).unwrap();
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(std::time::Duration::from_millis(50));
                gate.end(false);
            });
            // Waits, then fails once the guard refuses.
            assert!(reader.read(&mut buf).is_err());
        });
    }
}
