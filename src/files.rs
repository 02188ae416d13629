//! Whole files at the edges: a file read only when it is a regular one, up to a cap whatever its
//! size claims, and a file written to a temporary beside it then renamed into place, so a failed
//! or interrupted run never leaves it half-written.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, bail};

/// Why [`open_regular`] did not open a file.
#[derive(Debug)]
pub(crate) enum OpenError {
    /// It could not be opened or looked at.
    Io(std::io::Error),
    /// It is not a regular file: what it is, in words ("a FIFO (named pipe)").
    NotRegular(&'static str),
}

/// Opens `path` for reading only when it is a regular file. O_NONBLOCK: opening a FIFO without a
/// writer returns at once instead of waiting for one (forever); the type is then checked on what
/// was opened, so a swap after any earlier check changes nothing. Reads of a regular file do not
/// heed O_NONBLOCK.
pub(crate) fn open_regular(path: &Path) -> Result<std::fs::File, OpenError> {
    use std::os::unix::fs::OpenOptionsExt;

    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed())
        .open(path)
        .map_err(OpenError::Io)?;
    let meta = file.metadata().map_err(OpenError::Io)?;
    if meta.is_file() {
        Ok(file)
    } else {
        Err(OpenError::NotRegular(kind_of(&meta.file_type())))
    }
}

/// Reads a regular file of at most `max` bytes. A FIFO, a device or a folder is refused before
/// it is read (a FIFO would block, `/dev/zero` would never end), and a larger file after `max`
/// bytes, whatever its size claims. `what` names the file in messages.
pub(crate) fn read_regular_file(path: &Path, max: u64, what: &str) -> Result<Vec<u8>> {
    use std::io::Read;

    let name = path.display();
    let file = match open_regular(path) {
        Ok(file) => file,
        Err(OpenError::Io(e)) => {
            return Err(e).with_context(|| format!("{name}: could not read the {what}"));
        }
        Err(OpenError::NotRegular(kind)) => {
            bail!("{name}: is {kind}, not a file: a {what} must be a regular file")
        }
    };
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("{name}: could not read the {what}"))?;
    if bytes.len() as u64 > max {
        // In MiB for a plan or config cap, in bytes for a small one (a key file).
        let most = if max >= 1 << 20 {
            format!("{} MiB", max >> 20)
        } else {
            format!("{max} bytes")
        };
        bail!("{name}: is larger than {most}, the most a {what} may be");
    }
    Ok(bytes)
}

/// What a file that is not a regular file is, in words.
pub(crate) fn kind_of(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a folder"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Writes `bytes` to `path` atomically. Without `overwrite`, an existing file is an error.
pub(crate) fn write_file_atomic(path: &Path, bytes: &[u8], overwrite: bool) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".roce-gen-")
        .tempfile_in(dir)
        .with_context(|| format!("{}: could not create a temporary file", dir.display()))?;
    // A temporary file is private (0600); what roce-gen writes is for others to read.
    let readable = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o644);
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().set_permissions(readable))
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("{}: could not write", path.display()))?;
    if overwrite {
        tmp.persist(path)
            .map(drop)
            .with_context(|| format!("{}: could not write", path.display()))
    } else {
        // The OS error alone: tempfile's error would print it twice (its text and its source).
        match tmp.persist_noclobber(path) {
            Ok(_) => Ok(()),
            Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => {
                anyhow::bail!("{} exists; use --force to overwrite", path.display())
            }
            Err(e) => Err(e.error).with_context(|| format!("{}: could not write", path.display())),
        }
    }
}
