//! Deterministic archives: a [`Bundle`] becomes a `.tar` and a `.tar.gz` whose bytes depend only
//! on the bundle and the timestamp given. Entries are sorted under one top folder, every header
//! is written field by field (mode from the file kind, uid/gid 0, no user names, fixed mtime),
//! and the gzip header carries no time and no name. Pure: bytes in, bytes out.

use std::io::Write;

use anyhow::{Context, Result};
use flate2::{Compression, GzBuilder};

use crate::bundle::Bundle;

/// The mtime when `SOURCE_DATE_EPOCH` is not set: tar's own deterministic timestamp, not 0,
/// because a zero mtime confuses some tools.
pub const DEFAULT_MTIME: u64 = 1_153_704_088;

/// A bundle packed both ways.
#[derive(Debug, Clone)]
pub struct Packed {
    /// The uncompressed tar (its hash does not depend on the compressor's version).
    pub tar: Vec<u8>,
    /// The gzip-compressed tar.
    pub tar_gz: Vec<u8>,
}

/// Packs `bundle` under `<host>/` with every mtime set to `mtime`.
pub fn pack(bundle: &Bundle, mtime: u64) -> Result<Packed> {
    let mut builder = tar::Builder::new(Vec::new());
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
        builder
            .append_data(&mut h, format!("{top}{name}"), entry.bytes.as_slice())
            .context("tar")?;
    }
    let tar = builder.into_inner().context("tar")?;
    let mut gz = GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(Vec::new(), Compression::default());
    gz.write_all(&tar).context("gzip")?;
    let tar_gz = gz.finish().context("gzip")?;
    Ok(Packed { tar, tar_gz })
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
    use crate::bundle::Entry;

    fn two_files() -> Bundle {
        let mut files = BTreeMap::new();
        files.insert(
            "b.sh".to_string(),
            Entry {
                bytes: b"echo b\n".to_vec(),
                mode: 0o755,
            },
        );
        files.insert(
            "a.json".to_string(),
            Entry {
                bytes: b"{}\n".to_vec(),
                mode: 0o644,
            },
        );
        Bundle {
            host: "h1".into(),
            files,
        }
    }

    #[test]
    fn headers_are_fixed_and_entries_sorted() {
        let packed = pack(&two_files(), 1_700_000_000).unwrap();
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
        let packed = pack(&two_files(), DEFAULT_MTIME).unwrap();
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
            pack(&two_files(), 1).unwrap().tar_gz,
            pack(&two_files(), 1).unwrap().tar_gz
        );
        assert_ne!(
            pack(&two_files(), 1).unwrap().tar_gz,
            pack(&two_files(), 2).unwrap().tar_gz
        );
    }
}
