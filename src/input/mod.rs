//! Reading a plan file: the I/O edge of the pipeline. It loads the bytes once (they are also
//! hashed for `plan_sha256`), picks the reader by extension and returns a [`RawPlan`].

mod guard;
mod json;
pub mod raw;
mod unwind;
mod workbook;

use std::path::Path;

use anyhow::{Context, Result, bail};

pub use raw::RawPlan;

/// A plan as read from a file, with what identifies it.
#[derive(Debug)]
pub struct Source {
    /// The path as the user gave it, for messages.
    pub name: String,
    /// sha256 of the file's bytes, lowercase hex.
    pub sha256: String,
    /// The tables as read.
    pub raw: RawPlan,
}

/// The plan formats, by extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `.xlsx`, `.xlsm`, `.xls`, `.ods` (the content decides which; calamine sniffs it).
    Workbook,
    /// `.json`, the normalized plan.
    Json,
}

impl Format {
    /// The format a file name asks for.
    pub fn of(path: &Path) -> Result<Self> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        match ext.as_deref() {
            Some("xlsx" | "xlsm" | "xls" | "ods") => Ok(Self::Workbook),
            Some("json") => Ok(Self::Json),
            _ => bail!(
                "{}: unsupported plan format (expected .xlsx, .xlsm, .xls, .ods or .json)",
                path.display()
            ),
        }
    }
}

/// The largest plan file read: a 10,000-host workbook is a few MB.
pub const MAX_PLAN_BYTES: u64 = 64 << 20;

/// Reads and parses a plan file. Errors mean the file could not be read at all (exit 2).
pub fn read_plan_file(path: &Path) -> Result<Source> {
    let format = Format::of(path)?;
    let bytes = read_regular_file(path, MAX_PLAN_BYTES, "plan")?;
    read_plan_bytes(&path.display().to_string(), format, &bytes)
}

/// Reads a regular file of at most `max` bytes. A FIFO, a device or a folder is refused before
/// it is read (a FIFO would block, `/dev/zero` would never end), and a larger file after `max`
/// bytes, whatever its size claims. `what` names the file in messages.
pub fn read_regular_file(path: &Path, max: u64, what: &str) -> Result<Vec<u8>> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;

    let name = path.display();
    // O_NONBLOCK: opening a FIFO without a writer returns at once instead of waiting for one;
    // the type is then checked on what was opened, so a swap after the check changes nothing.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed())
        .open(path)
        .with_context(|| format!("{name}: could not read the {what}"))?;
    let meta = file
        .metadata()
        .with_context(|| format!("{name}: could not read the {what}"))?;
    if !meta.is_file() {
        let kind = kind_of(&meta.file_type());
        bail!("{name}: is {kind}, not a file: a {what} must be a regular file");
    }
    let mut bytes = Vec::new();
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("{name}: could not read the {what}"))?;
    if bytes.len() as u64 > max {
        bail!(
            "{name}: is larger than {} MiB, the most a {what} may be",
            max >> 20
        );
    }
    Ok(bytes)
}

/// What a file that is not a regular file is, in words.
fn kind_of(t: &std::fs::FileType) -> &'static str {
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

/// Parses plan bytes already in memory (a file, or the embedded sample).
pub fn read_plan_bytes(name: &str, format: Format, bytes: &[u8]) -> Result<Source> {
    if bytes.is_empty() {
        bail!("{name}: the file is empty");
    }
    let raw = match format {
        // calamine panics on some damaged files; that is contained and reported.
        Format::Workbook => unwind::contain("the workbook reader", || workbook::read(bytes)),
        Format::Json => json::read(bytes),
    }
    .with_context(|| format!("{name}: could not read the plan"))?;
    Ok(Source {
        name: name.to_string(),
        sha256: crate::digest::sha256_hex(bytes),
        raw,
    })
}
