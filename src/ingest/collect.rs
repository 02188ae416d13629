//! Finding and reading the files `ingest` reads (the I/O end of the pipeline): every `*.json`
//! under the given paths, recursively, and inside `.tar.gz`/`.tgz`/`.tar` archives (also archives
//! in archives, a few levels deep). Symbolic links in a folder are followed only to files inside
//! it (see `Feed::walk`). Nothing here judges contents; a file that cannot be read is
//! recorded with the reason, never fatal. Only regular files are opened, and without waiting
//! (see [`files::open_regular`]): a FIFO, socket or device, named or met in a folder, is skipped
//! with a note, never read (a FIFO would block `ingest` for good). Only a path given on the
//! command line that does not exist stops `ingest` (exit 2).
//!
//! The files are a stream, not a list: this thread walks the folders and unpacks the archives
//! (a gzip stream is read in order), workers on every core read the files and hand each one to
//! the caller, whose work (parsing) is done there, and its bytes are dropped as soon as it
//! returns. Bytes read and not yet handed over are at most [`IN_FLIGHT_BYTES`] (a file larger
//! than that goes alone), so memory does not grow with the number or size of the files. The
//! order files reach the caller in is not fixed.

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};

use anyhow::{Context, Result};

use crate::files::{self, OpenError};
use crate::ingest::result::{MAX_RESULT_BYTES, capped};

/// How deep archives in archives are opened.
const MAX_ARCHIVE_DEPTH: usize = 3;

/// Bytes read ahead of the workers, at most: files waiting in the queue and being parsed.
pub(crate) const IN_FLIGHT_BYTES: usize = 64 << 20;

/// Batches queued for the workers, at most, whatever their size.
const QUEUE: usize = 64;

/// Files handed to a worker at once, at most, and their bytes: a batch, not a file, pays for
/// the hand-over (a lock, a wake-up), which costs as much as reading a small file.
const BATCH_FILES: usize = 32;
const BATCH_BYTES: usize = 1 << 20;

/// One file found. `origin` names it for people: the path as reached from the argument, and
/// inside an archive `archive.tar.gz:member/path.json`.
#[derive(Debug)]
pub(crate) enum Found {
    /// A candidate result and its bytes.
    File {
        /// Where it is.
        origin: String,
        /// Its content.
        bytes: Vec<u8>,
        /// Where the same bytes can be read again ([`read_again`]): the file's path, `None`
        /// inside an archive (a gzip stream is read once).
        again: Option<PathBuf>,
        /// Reached through a symbolic link in a folder: a copy of the file it points to is
        /// never the original (see `intake`).
        linked: bool,
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

/// Hands every candidate under `paths` to `each`, on worker threads, in no fixed order; returns
/// once every one was handled. `Err`, before anything is read, when a path given does not exist
/// or cannot be opened at all.
pub(crate) fn collect(paths: &[PathBuf], each: &(dyn Fn(Found) + Sync)) -> Result<()> {
    let mut args = Vec::with_capacity(paths.len());
    for path in paths {
        let meta = std::fs::metadata(path)
            .with_context(|| format!("{}: could not read", path.display()))?;
        args.push((path, meta));
    }
    let budget = Budget {
        left: Mutex::new(IN_FLIGHT_BYTES),
        freed: Condvar::new(),
    };
    let (tx, rx) = sync_channel::<Task>(QUEUE);
    let rx = Mutex::new(rx);
    std::thread::scope(|scope| {
        for _ in 0..rayon::current_num_threads().max(1) {
            scope.spawn(|| work(&rx, &budget, each));
        }
        let mut feed = Feed {
            tx,
            budget: &budget,
            batch: Vec::new(),
            cost: 0,
        };
        for (path, meta) in args {
            if meta.is_dir() {
                feed.walk(path);
            } else if !meta.is_file() {
                feed.found(Found::Ignored {
                    origin: path.display().to_string(),
                    reason: not_regular(files::kind_of(&meta.file_type())),
                });
            } else {
                // A file named on the command line is read whatever its name: by content.
                let kind = match kind_of(&path.to_string_lossy()) {
                    Kind::Other => sniff(path),
                    k => k,
                };
                feed.file(path, kind, meta.len(), false);
            }
        }
        feed.flush();
        // Dropping the sender ends the workers' loop once the queue is empty.
    });
    Ok(())
}

/// Files for a worker, with the bytes they hold of the budget.
struct Task {
    jobs: Vec<Job>,
    cost: usize,
}

/// A file for a worker: one to read, or what the walk or an archive made of one.
enum Job {
    /// A file, its size when it was found, and whether a symbolic link led to it.
    Read(PathBuf, u64, bool),
    Done(Found),
}

fn work(rx: &Mutex<Receiver<Task>>, budget: &Budget, each: &(dyn Fn(Found) + Sync)) {
    loop {
        let task = lock(rx).recv();
        let Ok(Task { jobs, cost }) = task else {
            return;
        };
        for job in jobs {
            each(match job {
                Job::Read(path, size, linked) => {
                    let origin = path.display().to_string();
                    match read_capped(&path, size) {
                        Ok(bytes) => Found::File {
                            origin,
                            bytes,
                            again: Some(path),
                            linked,
                        },
                        Err(NotRead::Skipped(reason)) => Found::Ignored { origin, reason },
                        Err(NotRead::Failed(reason)) => Found::Unreadable { origin, reason },
                    }
                }
                Job::Done(found) => found,
            });
        }
        budget.release(cost);
    }
}

/// A lock that a panicked holder does not make unusable (nothing it guards can be half made).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The bytes that may be read ahead of the workers: taken before a file is queued, given back
/// once it was handled.
struct Budget {
    left: Mutex<usize>,
    freed: Condvar,
}

impl Budget {
    /// Takes `want` bytes if they are free.
    fn try_take(&self, want: usize) -> bool {
        let mut left = lock(&self.left);
        let free = *left >= want;
        if free {
            *left -= want;
        }
        free
    }

    /// Waits until `want` bytes are free and takes them.
    fn take(&self, want: usize) {
        let mut left = lock(&self.left);
        while *left < want {
            left = self
                .freed
                .wait(left)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *left -= want;
    }

    fn release(&self, bytes: usize) {
        *lock(&self.left) += bytes;
        self.freed.notify_one();
    }
}

/// The walk's end of the queue: files are gathered into a batch, each taking its bytes of the
/// budget first.
struct Feed<'a> {
    tx: SyncSender<Task>,
    budget: &'a Budget,
    batch: Vec<Job>,
    cost: usize,
}

impl Feed<'_> {
    /// Takes `bytes` of the budget (at most all of it), waiting for the workers if need be.
    fn reserve(&mut self, bytes: u64) -> usize {
        let want = usize::try_from(bytes).map_or(IN_FLIGHT_BYTES, |b| b.min(IN_FLIGHT_BYTES));
        if !self.budget.try_take(want) {
            // What the batch holds is freed only once a worker has it.
            self.flush();
            self.budget.take(want);
        }
        want
    }

    /// Adds a file whose bytes were reserved to the batch.
    fn push(&mut self, job: Job, cost: usize) {
        self.batch.push(job);
        self.cost += cost;
        if self.batch.len() >= BATCH_FILES || self.cost >= BATCH_BYTES {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.batch.is_empty() {
            return;
        }
        let task = Task {
            jobs: std::mem::take(&mut self.batch),
            cost: std::mem::take(&mut self.cost),
        };
        // The workers outlive the sender; a send fails only if they all stopped, and then
        // there is no one to tell.
        let _ = self.tx.send(task);
    }

    /// Queues what needs no reading (a note).
    fn found(&mut self, found: Found) {
        self.push(Job::Done(found), 0);
    }

    /// Every file under `dir`. Symbolic links are not followed as folders (a loop cannot hang
    /// the walk); a link to a file is read when its target is inside `dir`, and passed over with
    /// a note otherwise: a results folder is not a way to read `/etc/passwd` or another folder.
    fn walk(&mut self, dir: &Path) {
        // The folder itself may be reached through a link: what is inside is what is under its
        // real path.
        let root = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
            match entry {
                Ok(e) if e.file_type().is_file() => {
                    let kind = kind_of(&e.file_name().to_string_lossy());
                    if kind == Kind::Json {
                        // The size only sets what the file holds of the budget; a file that
                        // cannot be looked at is read anyway and fails there, with the reason.
                        let size = e.metadata().map_or(0, |m| m.len());
                        self.file(e.path(), kind, size, false);
                    } else {
                        self.file(e.path(), kind, 0, false);
                    }
                }
                Ok(e) if e.path_is_symlink() && e.depth() > 0 => self.link(e.path(), &root),
                // A FIFO, socket or device named like a candidate: listed, never opened.
                Ok(e)
                    if !e.file_type().is_dir()
                        && !e.path_is_symlink()
                        && kind_of(&e.file_name().to_string_lossy()) != Kind::Other =>
                {
                    self.found(Found::Ignored {
                        origin: e.path().display().to_string(),
                        reason: not_regular(files::kind_of(&e.file_type())),
                    });
                }
                Ok(_) => {}
                Err(e) => self.found(Found::Unreadable {
                    origin: e
                        .path()
                        .map_or_else(|| dir.display().to_string(), |p| p.display().to_string()),
                    reason: format!("could not read: {}", walk_error(&e)),
                }),
            }
        }
    }

    /// A symbolic link met in the walk of `root`.
    fn link(&mut self, path: &Path, root: &Path) {
        let origin = path.display().to_string();
        let target = match std::fs::canonicalize(path) {
            Ok(target) => target,
            Err(e) => {
                // A dangling link, or a loop of links, named like a candidate.
                if kind_of(&path.to_string_lossy()) != Kind::Other {
                    self.found(Found::Unreadable {
                        origin,
                        reason: format!("could not read: {e}"),
                    });
                }
                return;
            }
        };
        let meta = std::fs::metadata(&target);
        let is_dir = meta.as_ref().is_ok_and(std::fs::Metadata::is_dir);
        if !target.starts_with(root) {
            if is_dir || kind_of(&path.to_string_lossy()) != Kind::Other {
                self.found(Found::Ignored {
                    origin,
                    reason: format!(
                        "a symbolic link to {}, outside {}: not followed",
                        target.display(),
                        root.display()
                    ),
                });
            }
            return;
        }
        if is_dir {
            // Inside the folder: its files are read under their own path.
            return;
        }
        let kind = kind_of(&path.to_string_lossy());
        let size = meta.map_or(0, |m| m.len());
        self.file(path, kind, size, true);
    }

    /// A file to read; `linked` when a symbolic link in a folder led to it.
    fn file(&mut self, path: &Path, kind: Kind, size: u64, linked: bool) {
        let origin = path.display().to_string();
        match kind {
            Kind::Json => {
                let cost = self.reserve(size.min(MAX_RESULT_BYTES + 1));
                self.push(Job::Read(path.to_path_buf(), size, linked), cost);
            }
            Kind::TarGz | Kind::Tar => match files::open_regular(path) {
                Ok(f) => {
                    let reader: Box<dyn Read> = if kind == Kind::TarGz {
                        Box::new(flate2::read::GzDecoder::new(BufReader::new(f)))
                    } else {
                        Box::new(BufReader::new(f))
                    };
                    self.archive(&origin, reader, 1);
                }
                Err(OpenError::NotRegular(what)) => self.found(Found::Ignored {
                    origin,
                    reason: not_regular(what),
                }),
                Err(OpenError::Io(e)) => self.found(Found::Unreadable {
                    origin,
                    reason: format!("could not read: {e}"),
                }),
            },
            Kind::OtherArchive => self.found(Found::Ignored {
                origin,
                reason: OTHER_ARCHIVE.into(),
            }),
            Kind::Other => {}
        }
    }

    /// Reads every `.json` member of a tar stream, and the archives in it as streams too; a
    /// damaged archive keeps what was read before the damage and is reported.
    fn archive(&mut self, origin: &str, reader: Box<dyn Read + '_>, depth: usize) {
        let mut tar = tar::Archive::new(reader);
        let entries = match tar.entries() {
            Ok(entries) => entries,
            Err(e) => {
                self.found(Found::Unreadable {
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
                    self.found(Found::Unreadable {
                        origin: origin.to_string(),
                        reason: format!("not a readable archive: {e}"),
                    });
                    return;
                }
            };
            if !entry.header().entry_type().is_file() {
                continue;
            }
            // A member's name can be as long as the archive makes it: it is kept capped.
            let member = capped(&format!(
                "{origin}:{}",
                String::from_utf8_lossy(&entry.path_bytes())
            ));
            match kind_of(&member) {
                Kind::Json => {}
                Kind::OtherArchive => {
                    self.found(Found::Ignored {
                        origin: member,
                        reason: OTHER_ARCHIVE.into(),
                    });
                    continue;
                }
                Kind::Other => continue,
                _ if depth >= MAX_ARCHIVE_DEPTH => {
                    self.found(Found::Ignored {
                        origin: member,
                        reason: format!(
                            "archive nested more than {MAX_ARCHIVE_DEPTH} deep, not opened"
                        ),
                    });
                    continue;
                }
                Kind::TarGz => {
                    let inner = flate2::read::GzDecoder::new(&mut entry);
                    self.archive(&member, Box::new(inner), depth + 1);
                    continue;
                }
                Kind::Tar => {
                    self.archive(&member, Box::new(&mut entry), depth + 1);
                    continue;
                }
            }
            if entry.size() > MAX_RESULT_BYTES {
                self.found(Found::Unreadable {
                    origin: member,
                    reason: format!("larger than {} MiB, not read", MAX_RESULT_BYTES >> 20),
                });
                continue;
            }
            let cost = self.reserve(entry.size());
            let mut bytes = Vec::new();
            if let Err(e) = (&mut entry).take(MAX_RESULT_BYTES).read_to_end(&mut bytes) {
                self.budget.release(cost);
                self.found(Found::Unreadable {
                    origin: member,
                    reason: format!("truncated archive member: {e}"),
                });
                // The stream is broken past this point; the next read would fail again.
                return;
            }
            self.push(
                Job::Done(Found::File {
                    origin: member,
                    bytes,
                    again: None,
                    linked: false,
                }),
                cost,
            );
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
    // Never blocks: what is not a regular file is tried as JSON, and skipped there.
    let mut magic = [0u8; 2];
    let read = files::open_regular(path)
        .ok()
        .is_some_and(|mut f| f.read_exact(&mut magic).is_ok());
    if read && magic == [0x1f, 0x8b] {
        Kind::TarGz
    } else {
        Kind::Json
    }
}

/// Why a file was not read: it is not a regular file (skipped), or reading it failed (a
/// problem). Each holds the reason.
enum NotRead {
    Skipped(String),
    Failed(String),
}

/// The reason a file that is not a regular one (`what` it is) is skipped.
fn not_regular(what: &str) -> String {
    format!("{what}, not a regular file: not read")
}

/// The bytes of a file read before, read again (see `intake`), with the same limit.
pub(crate) fn read_again(path: &Path) -> Result<Vec<u8>, String> {
    read_capped(path, 0).map_err(|(NotRead::Skipped(why) | NotRead::Failed(why))| why)
}

/// The file's bytes, when it is a regular file of at most [`MAX_RESULT_BYTES`]; `size` is what
/// it was found to hold (a hint).
fn read_capped(path: &Path, size: u64) -> Result<Vec<u8>, NotRead> {
    let f = files::open_regular(path).map_err(|e| match e {
        OpenError::NotRegular(what) => NotRead::Skipped(not_regular(what)),
        OpenError::Io(e) => NotRead::Failed(format!("could not read: {e}")),
    })?;
    // One allocation for the common case: the size found, and a byte to see the end.
    let hint = usize::try_from(size.min(MAX_RESULT_BYTES) + 1).unwrap_or(0);
    let mut bytes = Vec::with_capacity(hint);
    f.take(MAX_RESULT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| NotRead::Failed(format!("could not read: {e}")))?;
    if bytes.len() as u64 > MAX_RESULT_BYTES {
        return Err(NotRead::Failed(format!(
            "larger than {} MiB, not a result",
            MAX_RESULT_BYTES >> 20
        )));
    }
    Ok(bytes)
}
