//! Deterministic archives: a [`Bundle`] becomes a `.tar` and a `.tar.gz` whose bytes depend only
//! on the bundle and the timestamp given. Entries are sorted under one top folder, every header
//! is written field by field (mode from the file kind, uid/gid 0, no user names, fixed mtime),
//! and the gzip header carries no time and no name. Pure: bytes in, bytes out.

use std::io::Write;

use anyhow::{Context, Result};
use flate2::{Compress, Compression, FlushCompress, Status};
use sha2::{Digest, Sha256};

use crate::generate::bundle::{Bundle, Entry};

/// The mtime when `SOURCE_DATE_EPOCH` is not set: one fixed, recent date (2026-01-01 00:00 UTC),
/// so that the same plan gives the same bytes and a listing does not read as two decades old;
/// not 0, which confuses some tools. The bundle's README.txt says why its dates are fixed.
pub(crate) const DEFAULT_MTIME: u64 = 1_767_225_600;

/// The latest mtime a ustar header holds in its 11 octal digits; GNU tar's base-256 form for
/// larger values is not read by every tar (busybox's among them).
pub(crate) const MAX_MTIME: u64 = 0o777_7777_7777;

/// The compression level of the per-host parts, chosen by measurement (benches/scale.sh): a
/// host's own parts are small (its plan values, manifest and tar headers) and the shell files
/// are spliced in from the shared parts, compressed once at level 9; level 1 makes a bundle 2.4%
/// larger than level 6 and takes a third less of generation's CPU.
const LEVEL: u32 = 1;

thread_local! {
    /// The per-host parts' compressor of this thread.
    static COMPRESSOR: std::cell::RefCell<Compress> =
        std::cell::RefCell::new(Compress::new(Compression::new(LEVEL), false));
}

/// A bundle packed: its `.tar.gz`, and the sha256 of the `.tar` inside.
#[derive(Debug, Clone)]
pub(crate) struct Packed {
    /// sha256 of the uncompressed tar, lowercase hex (it does not depend on the compressor's
    /// version).
    pub tar_sha256: String,
    /// The gzip-compressed tar.
    pub tar_gz: Vec<u8>,
}

/// Files that every bundle of a run carries unchanged (`lib.sh`), compressed once. Deflate
/// output that ends in a sync flush is byte-aligned and refers to nothing before it, so it can be
/// spliced into each bundle's stream between its own compressed parts: one ordinary gzip member,
/// as `gzip -t` and every reader see it; a host compresses only its own parts.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shared {
    files: Vec<SharedFile>,
}

#[derive(Debug, Clone)]
struct SharedFile {
    name: String,
    sha256: String,
    /// Its data in a tar: the content and the zero padding to a whole block.
    padded: Vec<u8>,
    /// The raw deflate of `padded`, ending in a sync flush.
    deflated: Vec<u8>,
}

impl Shared {
    /// Compresses the shared files once.
    pub(crate) fn new(entries: &[(String, Entry)]) -> Result<Self> {
        let mut best = Compress::new(Compression::best(), false);
        let files = entries
            .iter()
            .map(|(name, e)| {
                let mut padded = e.bytes.to_vec();
                padded.resize(padded_len(padded.len()), 0);
                let mut deflated = Vec::new();
                deflate(&mut best, &padded, false, &mut deflated)?;
                Ok(SharedFile {
                    name: name.clone(),
                    sha256: e.sha256.clone(),
                    padded,
                    deflated,
                })
            })
            .collect::<Result<_>>()?;
        Ok(Self { files })
    }

    fn find(&self, name: &str, sha256: &str) -> Option<&SharedFile> {
        self.files
            .iter()
            .find(|f| f.name == name && f.sha256 == sha256)
    }
}

/// Where the tar builder writes: the tar is never held whole. Every byte goes into the tar's
/// sha256 and CRC; a host's own bytes wait in `pending` to be compressed, and a shared file's
/// data is added by [`Sink::splice`] in its compressed form.
struct Sink<'c> {
    sha: Sha256,
    crc: crc32fast::Hasher,
    len: u64,
    pending: Vec<u8>,
    body: Vec<u8>,
    compressor: &'c mut Compress,
}

impl Write for Sink<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.sha.update(buf);
        self.crc.update(buf);
        self.len += buf.len() as u64;
        self.pending.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Sink<'_> {
    /// Adds a shared file's data (its header was just written): the host's bytes before it are
    /// compressed as one part, then the shared part follows as it is.
    fn splice(&mut self, file: &SharedFile) -> Result<()> {
        if self.pending.len() <= HEADERS_ONLY {
            stored(&self.pending, &mut self.body);
        } else {
            deflate(self.compressor, &self.pending, false, &mut self.body)?;
        }
        self.pending.clear();
        self.body.extend_from_slice(&file.deflated);
        self.sha.update(&file.padded);
        self.crc.update(&file.padded);
        self.len += file.padded.len() as u64;
        Ok(())
    }
}

/// Packs `bundle` under `<host>/` with every mtime set to `mtime`; files found in `shared` reuse
/// their compressed form.
pub(crate) fn pack(bundle: &Bundle, mtime: u64, shared: &Shared) -> Result<Packed> {
    // One compressor per thread for the whole run: every part starts from a reset, so the bytes
    // are those of a new one, without allocating and clearing its tables for every bundle.
    COMPRESSOR.with_borrow_mut(|compressor| {
        let sink = Sink {
            sha: Sha256::new(),
            crc: crc32fast::Hasher::new(),
            len: 0,
            pending: Vec::with_capacity(32 << 10),
            body: Vec::with_capacity(64 << 10),
            compressor,
        };
        let mut builder = tar::Builder::new(sink);
        let top = format!("{}/", bundle.host);
        let mut dir = header(tar::EntryType::Directory, 0, 0o755, mtime);
        builder
            .append_data(&mut dir, &top, std::io::empty())
            .context("tar")?;
        // BTreeMap iteration is sorted by name.
        for (name, entry) in &bundle.files {
            let mut h = header(
                tar::EntryType::Regular,
                entry.bytes.len() as u64,
                entry.mode,
                mtime,
            );
            let path = format!("{top}{name}");
            match shared.find(name, &entry.sha256) {
                // The builder writes the header (and a long-name entry when the path needs one)
                // and pads what it copies; the data and its padding come from the shared part.
                Some(file) => {
                    builder
                        .append_data(&mut h, path, std::io::empty())
                        .context("tar")?;
                    builder.get_mut().splice(file)?;
                }
                None => builder
                    .append_data(&mut h, path, &entry.bytes[..])
                    .context("tar")?,
            }
        }
        // The tar ends in two zero blocks, so the last part is never empty.
        let mut sink = builder.into_inner().context("tar")?;
        deflate(sink.compressor, &sink.pending, true, &mut sink.body)?;
        // gzip (RFC 1952): no file name, no time (0), no extra flags, OS "unknown" (255).
        let mut tar_gz = Vec::with_capacity(sink.body.len() + 18);
        tar_gz.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]);
        tar_gz.extend_from_slice(&sink.body);
        tar_gz.extend_from_slice(&sink.crc.finalize().to_le_bytes());
        // ISIZE is the length modulo 2^32 by definition.
        #[allow(clippy::cast_possible_truncation)]
        tar_gz.extend_from_slice(&(sink.len as u32).to_le_bytes());
        Ok(Packed {
            tar_sha256: hex::encode(sink.sha.finalize()),
            tar_gz,
        })
    })
}

/// Parts no longer than this are tar headers alone (an entry's, with a GNU long-name entry or the
/// folder's before it), between two shared files.
const HEADERS_ONLY: usize = 3 * 512;

/// Appends `data` as one stored (uncompressed) deflate block, RFC 1951 3.2.4: the stream is
/// byte-aligned here (every part ends in a sync flush), so the block is a zero byte (not final,
/// type 00), LEN and its complement, then the bytes. A compressor reset clears a 128 KiB hash
/// table; for a header between two shared files that costs more than the header saves.
fn stored(data: &[u8], out: &mut Vec<u8>) {
    debug_assert!(data.len() <= usize::from(u16::MAX));
    #[allow(clippy::cast_possible_truncation)]
    let len = data.len() as u16;
    out.push(0);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&(!len).to_le_bytes());
    out.extend_from_slice(data);
}

/// The size of a file's data in a tar: whole 512-byte blocks.
fn padded_len(len: usize) -> usize {
    len.div_ceil(512) * 512
}

/// Appends the raw deflate of `data` to `out`: ending in a sync flush (byte-aligned, stream open)
/// or, when `last`, in the final block.
/// `c` is reset first: each part refers to nothing before it, so that shared parts can sit
/// between them; reusing one compressor saves its setup, which dominated bundles of many parts.
fn deflate(c: &mut Compress, data: &[u8], last: bool, out: &mut Vec<u8>) -> Result<()> {
    c.reset();
    let flush = if last {
        FlushCompress::Finish
    } else {
        FlushCompress::Sync
    };
    let mut input = data;
    loop {
        out.reserve(input.len() / 2 + 4096);
        let before = c.total_in();
        let status = c.compress_vec(input, out, flush).context("deflate")?;
        let used = usize::try_from(c.total_in() - before).context("deflate")?;
        input = &input[used..];
        let done = match status {
            Status::StreamEnd => true,
            // A sync flush is complete once all input is in and the output did not fill up.
            Status::Ok | Status::BufError => {
                !last && input.is_empty() && out.len() < out.capacity()
            }
        };
        if done {
            return Ok(());
        }
    }
}

fn header(kind: tar::EntryType, size: u64, mode: u32, mtime: u64) -> tar::Header {
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(kind);
    h.set_size(size);
    h.set_mode(mode);
    h.set_uid(0);
    h.set_gid(0);
    h.set_mtime(mtime);
    h
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::io::Read;

    use super::*;
    use crate::generate::bundle::Entry;

    /// The tar inside a `.tar.gz`, checked against the sha256 that [`pack`] gave for it.
    fn untar(packed: &Packed) -> Vec<u8> {
        let mut tar = Vec::new();
        flate2::read::GzDecoder::new(packed.tar_gz.as_slice())
            .read_to_end(&mut tar)
            .unwrap();
        assert_eq!(crate::digest::sha256_hex(&tar), packed.tar_sha256);
        tar
    }

    fn two_files() -> Bundle {
        let mut files = BTreeMap::new();
        files.insert("b.sh".to_string(), Entry::new(b"echo b\n".to_vec(), 0o755));
        files.insert("a.json".to_string(), Entry::new(b"{}\n".to_vec(), 0o644));
        Bundle {
            host: "h1".into(),
            files,
        }
    }

    #[test]
    fn headers_are_fixed_and_entries_sorted() {
        let packed = pack(&two_files(), 1_700_000_000, &Shared::default()).unwrap();
        let tar = untar(&packed);
        let mut archive = tar::Archive::new(tar.as_slice());
        let mut seen = Vec::new();
        for entry in archive.entries().unwrap() {
            let entry = entry.unwrap();
            let h = entry.header();
            assert_eq!(h.mtime().unwrap(), 1_700_000_000);
            assert_eq!((h.uid().unwrap(), h.gid().unwrap()), (0, 0));
            assert_eq!(h.username().unwrap(), Some(""));
            assert_eq!(h.groupname().unwrap(), Some(""));
            seen.push((
                entry.path().unwrap().display().to_string(),
                h.mode().unwrap(),
            ));
        }
        assert_eq!(
            seen,
            vec![
                ("h1/".into(), 0o755),
                ("h1/a.json".into(), 0o644),
                ("h1/b.sh".into(), 0o755)
            ]
        );
    }

    #[test]
    fn gzip_header_has_no_time_and_no_name() {
        let packed = pack(&two_files(), DEFAULT_MTIME, &Shared::default()).unwrap();
        let gz = &packed.tar_gz;
        assert_eq!(&gz[4..8], &[0, 0, 0, 0], "mtime");
        assert_eq!(gz[3] & 0x08, 0, "no FNAME flag");
        assert_eq!(gz[9], 255, "OS unknown");
        // The trailer's CRC and length are checked by the decoder.
        assert!(!untar(&packed).is_empty());
    }

    #[test]
    fn same_bundle_same_bytes() {
        assert_eq!(
            pack(&two_files(), 1, &Shared::default()).unwrap().tar_gz,
            pack(&two_files(), 1, &Shared::default()).unwrap().tar_gz
        );
        assert_ne!(
            pack(&two_files(), 1, &Shared::default()).unwrap().tar_gz,
            pack(&two_files(), 2, &Shared::default()).unwrap().tar_gz
        );
    }

    /// A bundle with a large file shared between hosts, as lib.sh is.
    fn with_library(host: &str, library: &Entry) -> Bundle {
        let mut bundle = two_files();
        bundle.host = host.to_string();
        bundle.files.insert("lib.sh".to_string(), library.clone());
        // Right after lib.sh: its header alone separates the two shared parts.
        bundle.files.insert("lib2.sh".to_string(), library.clone());
        bundle.files.insert(
            "z.txt".to_string(),
            Entry::new(format!("{host}\n").into_bytes(), 0o644),
        );
        bundle
    }

    #[test]
    fn a_spliced_shared_part_gives_the_same_tar_in_one_standard_gzip_member() {
        let text: String = (0..3000)
            .map(|i| format!("line {i} of the library\n"))
            .collect();
        let library = Entry::new(text.into_bytes(), 0o644);
        let shared = Shared::new(&[
            ("lib.sh".to_string(), library.clone()),
            ("lib2.sh".to_string(), library.clone()),
        ])
        .unwrap();
        // The long name needs a GNU long-name entry before the shared file's header.
        for host in ["h1", "h2", &"h".repeat(120)] {
            let plain = pack(&with_library(host, &library), 1, &Shared::default()).unwrap();
            let spliced = pack(&with_library(host, &library), 1, &shared).unwrap();
            assert_eq!(plain.tar_sha256, spliced.tar_sha256);
            assert_ne!(
                plain.tar_gz, spliced.tar_gz,
                "the shared part was not spliced"
            );
            let tar = untar(&spliced);
            assert_eq!(tar, untar(&plain));
            let mut names = Vec::new();
            for entry in tar::Archive::new(tar.as_slice()).entries().unwrap() {
                let mut entry = entry.unwrap();
                let name = entry.path().unwrap().display().to_string();
                let mut content = Vec::new();
                entry.read_to_end(&mut content).unwrap();
                if name.ends_with("lib.sh") {
                    assert_eq!(content, &library.bytes[..]);
                }
                names.push(name);
            }
            assert_eq!(names.len(), 6);
            assert!(names.contains(&format!("{host}/lib.sh")), "{names:?}");
            // The header between the two shared files is stored, not compressed: its path is
            // in the .tar.gz as it is.
            let path = format!("{host}/lib2.sh");
            assert!(
                spliced
                    .tar_gz
                    .windows(path.len())
                    .any(|w| w == path.as_bytes()),
                "{path} not stored"
            );
            // gzip(1) checks the CRC and the length in the trailer too.
            let mut gzip = std::process::Command::new("gzip")
                .args(["-dc"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            std::io::Write::write_all(gzip.stdin.as_mut().unwrap(), &spliced.tar_gz).unwrap();
            let out = gzip.wait_with_output().unwrap();
            assert!(out.status.success());
            assert_eq!(out.stdout, tar);
        }
        // A changed library is not taken from the cache.
        let other = Entry::new(b"other\n".to_vec(), 0o644);
        let packed = pack(&with_library("h1", &other), 1, &shared).unwrap();
        let tar = untar(&packed);
        assert!(tar.windows(6).any(|w| w == b"other\n"));
    }
}
