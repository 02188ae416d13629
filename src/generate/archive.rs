//! Deterministic archives: a [`Bundle`] becomes a `.tar` and a `.tar.gz` whose bytes depend only
//! on the bundle and the timestamp given. Entries are sorted under one top folder, every header
//! is written field by field (mode from the file kind, uid/gid 0, no user names, fixed mtime),
//! and the gzip header carries no time and no name. Pure: bytes in, bytes out.

use anyhow::{Context, Result};
use flate2::{Compress, Compression, FlushCompress, Status};

use crate::generate::bundle::{Bundle, Entry};

/// The mtime when `SOURCE_DATE_EPOCH` is not set: tar's own deterministic timestamp, not 0,
/// because a zero mtime confuses some tools.
pub(crate) const DEFAULT_MTIME: u64 = 1_153_704_088;

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

/// A bundle packed both ways.
#[derive(Debug, Clone)]
pub(crate) struct Packed {
    /// The uncompressed tar (its hash does not depend on the compressor's version).
    pub tar: Vec<u8>,
    /// The gzip-compressed tar.
    pub tar_gz: Vec<u8>,
}

/// Files that every bundle of a run carries unchanged (`lib.sh`), compressed once. Deflate
/// output that ends in a sync flush is byte-aligned and refers to nothing before it, so it can be
/// spliced into each bundle's stream between its own compressed parts: one ordinary gzip member,
/// as `gzip -t` and every reader see it, for a third of the compression work.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shared {
    /// File name, its sha256, and the raw deflate of its tar data (content and padding).
    files: Vec<(String, String, Vec<u8>)>,
}

impl Shared {
    /// Compresses the shared files once.
    pub(crate) fn new(entries: &[(String, Entry)]) -> Result<Self> {
        let mut best = Compress::new(Compression::best(), false);
        let files = entries
            .iter()
            .map(|(name, e)| {
                let mut data = e.bytes.to_vec();
                data.resize(padded(data.len()), 0);
                let mut out = Vec::new();
                deflate(&mut best, &data, false, &mut out)?;
                Ok((name.clone(), e.sha256.clone(), out))
            })
            .collect::<Result<_>>()?;
        Ok(Self { files })
    }

    fn find(&self, name: &str, sha256: &str) -> Option<&[u8]> {
        self.files
            .iter()
            .find(|(n, h, _)| n == name && h == sha256)
            .map(|(_, _, d)| d.as_slice())
    }
}

/// Packs `bundle` under `<host>/` with every mtime set to `mtime`; files found in `shared` reuse
/// their compressed form.
pub(crate) fn pack(bundle: &Bundle, mtime: u64, shared: &Shared) -> Result<Packed> {
    let mut builder = tar::Builder::new(Vec::new());
    let top = format!("{}/", bundle.host);
    let mut dir = header(tar::EntryType::Directory, 0, 0o755, mtime);
    builder
        .append_data(&mut dir, &top, std::io::empty())
        .context("tar")?;
    // (start, end, deflated) of each file's data in the tar that has a shared compressed form.
    let mut spliced: Vec<(usize, usize, &[u8])> = Vec::new();
    // BTreeMap iteration is sorted by name.
    for (name, entry) in &bundle.files {
        let mut h = header(
            tar::EntryType::Regular,
            entry.bytes.len() as u64,
            entry.mode,
            mtime,
        );
        builder
            .append_data(&mut h, format!("{top}{name}"), &entry.bytes[..])
            .context("tar")?;
        if let Some(deflated) = shared.find(name, &entry.sha256) {
            let end = builder.get_ref().len();
            spliced.push((end - padded(entry.bytes.len()), end, deflated));
        }
    }
    let tar = builder.into_inner().context("tar")?;
    let mut body = Vec::with_capacity(tar.len() / 3);
    let mut at = 0;
    // One compressor per thread for the whole run: every part starts from a reset, so the bytes
    // are those of a new one, without allocating and clearing its tables for every bundle.
    COMPRESSOR.with_borrow_mut(|c| -> Result<()> {
        for (start, end, deflated) in spliced {
            deflate(c, &tar[at..start], false, &mut body)?;
            body.extend_from_slice(deflated);
            at = end;
        }
        // The tar ends in two zero blocks, so this last part is never empty.
        deflate(c, &tar[at..], true, &mut body)
    })?;
    let mut crc = crc32fast::Hasher::new();
    crc.update(&tar);
    // gzip (RFC 1952): no file name, no time (0), no extra flags, OS "unknown" (255).
    let mut tar_gz = Vec::with_capacity(body.len() + 18);
    tar_gz.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255]);
    tar_gz.extend_from_slice(&body);
    tar_gz.extend_from_slice(&crc.finalize().to_le_bytes());
    // ISIZE is the length modulo 2^32 by definition.
    #[allow(clippy::cast_possible_truncation)]
    tar_gz.extend_from_slice(&(tar.len() as u32).to_le_bytes());
    Ok(Packed { tar, tar_gz })
}

/// The size of a file's data in a tar: whole 512-byte blocks.
fn padded(len: usize) -> usize {
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
        let mut archive = tar::Archive::new(packed.tar.as_slice());
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
        let mut tar = Vec::new();
        flate2::read::GzDecoder::new(gz.as_slice())
            .read_to_end(&mut tar)
            .unwrap();
        assert_eq!(tar, packed.tar);
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
        let shared = Shared::new(&[("lib.sh".to_string(), library.clone())]).unwrap();
        for host in ["h1", "h2"] {
            let plain = pack(&with_library(host, &library), 1, &Shared::default()).unwrap();
            let spliced = pack(&with_library(host, &library), 1, &shared).unwrap();
            assert_eq!(plain.tar, spliced.tar);
            assert_ne!(
                plain.tar_gz, spliced.tar_gz,
                "the shared part was not spliced"
            );
            let mut tar = Vec::new();
            flate2::read::GzDecoder::new(spliced.tar_gz.as_slice())
                .read_to_end(&mut tar)
                .unwrap();
            assert_eq!(tar, spliced.tar);
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
            assert_eq!(out.stdout, spliced.tar);
        }
        // A changed library is not taken from the cache.
        let other = Entry::new(b"other\n".to_vec(), 0o644);
        let packed = pack(&with_library("h1", &other), 1, &shared).unwrap();
        let mut tar = Vec::new();
        flate2::read::GzDecoder::new(packed.tar_gz.as_slice())
            .read_to_end(&mut tar)
            .unwrap();
        assert_eq!(tar, packed.tar);
    }
}
