//! Reading a plan file: the I/O edge of the pipeline. It loads the bytes once (they are also
//! hashed for `plan_sha256`), picks the reader by extension and returns a [`RawPlan`].

mod guard;
mod json;
pub(crate) mod raw;
mod unwind;
mod workbook;

use std::path::Path;

use anyhow::{Context, Result, bail};

pub(crate) use raw::RawPlan;

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
const MAX_PLAN_BYTES: u64 = 64 << 20;

/// Reads and parses a plan file. Errors mean the file could not be read at all (exit 2).
pub(crate) fn read_plan_file(path: &Path) -> Result<Source> {
    let format = Format::of(path)?;
    let bytes = crate::files::read_regular_file(path, MAX_PLAN_BYTES, "plan")?;
    read_plan_bytes(&path.display().to_string(), format, &bytes)
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
