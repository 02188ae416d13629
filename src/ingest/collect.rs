//! Finding the files `ingest` reads (the I/O end of the pipeline): every `*.json` under the given
//! paths, recursively, and inside `.tar.gz`/`.tgz`/`.tar` archives (also archives in archives, a
//! few levels deep). Nothing here judges contents; a file that cannot be read is recorded with
//! the reason, never fatal. Only a path given on the command line that does not exist stops
//! `ingest` (exit 2).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::ingest::result::MAX_RESULT_BYTES;

/// An archive inside an archive is read into memory; past this size it is reported instead.
const MAX_NESTED_ARCHIVE_BYTES: u64 = 256 << 20;

/// How deep archives in archives are opened.
const MAX_ARCHIVE_DEPTH: usize = 3;

/// One file found. `origin` names it for people: the path as reached from the argument, and
/// inside an archive `archive.tar.gz:member/path.json`.
#[derive(Debug)]
pub enum Found {
    /// A candidate result and its bytes.
    File {
        /// Where it is.
        origin: String,
        /// Its content.
        bytes: Vec<u8>,
    },
    /// A candidate that could not be read (a problem).
    Unreadable {
        /// Where it is.
        origin: String,
        /// Why.
        reason: String,
    },
    /// A file passed over with a note (an archive format roce-gen does not read).
    Ignored {
        /// Where it is.
        origin: String,
        /// Why.
        reason: String,
    },
}

/// What kind of file a name says it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Json,
    TarGz,
    Tar,
    OtherArchive,
    Other,
}

fn kind_of(name: &str) -> Kind {
    let name = name.to_ascii_lowercase();
    if name.ends_with(".json") {
        Kind::Json
    } else if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        Kind::TarGz
    } else if name.ends_with(".tar") {
        Kind::Tar
    } else if [
        ".zip", ".7z", ".rar", ".tar.xz", ".txz", ".tar.bz2", ".tbz2", ".tar.zst", ".tzst",
    ]
    .iter()
    .any(|ext| name.ends_with(ext))
    {
        Kind::OtherArchive
    } else {
        Kind::Other
    }
}

const OTHER_ARCHIVE: &str =
    "an archive format ingest does not read; unpack it, or pack results as .tar.gz";

/// Every candidate under `paths`, in argument order and, within a folder, by file name.
/// `Err` when a path given does not exist or cannot be opened at all.
pub fn collect(paths: &[PathBuf]) -> Result<Vec<Found>> {
    let mut found = Vec::new();
    for path in paths {
        let meta = std::fs::metadata(path)
            .with_context(|| format!("{}: could not read", path.display()))?;
        if meta.is_dir() {
            walk(path, &mut found);
        } else {
            // A file named on the command line is read whatever its name: by content.
            let kind = match kind_of(&path.to_string_lossy()) {
                Kind::Other => sniff(path),
                k => k,
            };
            file(path, kind, &mut found);
        }
    }
    Ok(found)
}

fn walk(dir: &Path, found: &mut Vec<Found>) {
    for entry in walkdir::WalkDir::new(dir)
        .follow_links(true)
        .sort_by_file_name()
    {
        match entry {
            Ok(e) if e.file_type().is_file() => {
                let kind = kind_of(&e.file_name().to_string_lossy());
                file(e.path(), kind, found);
            }
            Ok(_) => {}
            Err(e) => found.push(Found::Unreadable {
                origin: e
                    .path()
                    .map_or_else(|| dir.display().to_string(), |p| p.display().to_string()),
                reason: format!("could not read: {}", walk_error(&e)),
            }),
        }
    }
}

/// walkdir's own message repeats the path; the cause alone reads better after it.
fn walk_error(e: &walkdir::Error) -> String {
    if let Some(ancestor) = e.loop_ancestor() {
        return format!("symbolic link loop back to {}", ancestor.display());
    }
    e.io_error()
        .map_or_else(|| e.to_string(), std::string::ToString::to_string)
}

/// A file named on the command line without a telling extension: gzip is an archive, the rest
/// is tried as JSON.
fn sniff(path: &Path) -> Kind {
    let mut magic = [0u8; 2];
    match File::open(path).and_then(|mut f| f.read_exact(&mut magic)) {
        Ok(()) if magic == [0x1f, 0x8b] => Kind::TarGz,
        _ => Kind::Json,
    }
}

fn file(path: &Path, kind: Kind, found: &mut Vec<Found>) {
    let origin = path.display().to_string();
    match kind {
        Kind::Json => found.push(match read_capped(path) {
            Ok(bytes) => Found::File { origin, bytes },
            Err(reason) => Found::Unreadable { origin, reason },
        }),
        Kind::TarGz | Kind::Tar => match File::open(path) {
            Ok(f) => {
                let reader: Box<dyn Read> = if kind == Kind::TarGz {
                    Box::new(flate2::read::GzDecoder::new(BufReader::new(f)))
                } else {
                    Box::new(BufReader::new(f))
                };
                archive(&origin, reader, 1, found);
            }
            Err(e) => found.push(Found::Unreadable {
                origin,
                reason: format!("could not read: {e}"),
            }),
        },
        Kind::OtherArchive => found.push(Found::Ignored {
            origin,
            reason: OTHER_ARCHIVE.into(),
        }),
        Kind::Other => {}
    }
}

fn read_capped(path: &Path) -> Result<Vec<u8>, String> {
    let f = File::open(path).map_err(|e| format!("could not read: {e}"))?;
    let mut bytes = Vec::new();
    f.take(MAX_RESULT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("could not read: {e}"))?;
    if bytes.len() as u64 > MAX_RESULT_BYTES {
        return Err(format!(
            "larger than {} MiB, not a result",
            MAX_RESULT_BYTES >> 20
        ));
    }
    Ok(bytes)
}

/// Reads every `.json` member of a tar stream; a damaged archive keeps what was read before the
/// damage and is reported.
fn archive(origin: &str, reader: Box<dyn Read + '_>, depth: usize, found: &mut Vec<Found>) {
    let mut tar = tar::Archive::new(reader);
    let entries = match tar.entries() {
        Ok(entries) => entries,
        Err(e) => {
            found.push(Found::Unreadable {
                origin: origin.to_string(),
                reason: format!("not a readable archive: {e}"),
            });
            return;
        }
    };
    for entry in entries {
        let mut entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                found.push(Found::Unreadable {
                    origin: origin.to_string(),
                    reason: format!("not a readable archive: {e}"),
                });
                return;
            }
        };
        if !entry.header().entry_type().is_file() {
            continue;
        }
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let member = format!("{origin}:{name}");
        let kind = kind_of(&name);
        let limit = match kind {
            Kind::Json => MAX_RESULT_BYTES,
            Kind::TarGz | Kind::Tar => MAX_NESTED_ARCHIVE_BYTES,
            Kind::OtherArchive => {
                found.push(Found::Ignored {
                    origin: member,
                    reason: OTHER_ARCHIVE.into(),
                });
                continue;
            }
            Kind::Other => continue,
        };
        if entry.size() > limit {
            found.push(Found::Unreadable {
                origin: member,
                reason: format!("larger than {} MiB, not read", limit >> 20),
            });
            continue;
        }
        let mut bytes = Vec::new();
        if let Err(e) = (&mut entry).take(limit).read_to_end(&mut bytes) {
            found.push(Found::Unreadable {
                origin: member,
                reason: format!("truncated archive member: {e}"),
            });
            // The stream is broken past this point; the next read would fail again.
            return;
        }
        match kind {
            Kind::Json => found.push(Found::File {
                origin: member,
                bytes,
            }),
            _ if depth >= MAX_ARCHIVE_DEPTH => found.push(Found::Ignored {
                origin: member,
                reason: format!("archive nested more than {MAX_ARCHIVE_DEPTH} deep, not opened"),
            }),
            Kind::TarGz => archive(
                &member,
                Box::new(flate2::read::GzDecoder::new(bytes.as_slice())),
                depth + 1,
                found,
            ),
            _ => archive(&member, Box::new(bytes.as_slice()), depth + 1, found),
        }
    }
}
