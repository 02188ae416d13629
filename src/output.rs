//! Writing files: always to a temporary file beside the target, then renamed into place, so a
//! failed or interrupted run never leaves a half-written file.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result};

/// Writes `bytes` to `path` atomically. Without `overwrite`, an existing file is an error.
pub fn write_file_atomic(path: &Path, bytes: &[u8], overwrite: bool) -> Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".roce-gen-")
        .tempfile_in(dir)
        .with_context(|| format!("{}: could not create a temporary file", dir.display()))?;
    tmp.write_all(bytes)
        .and_then(|()| tmp.as_file().sync_all())
        .with_context(|| format!("{}: could not write", path.display()))?;
    if overwrite {
        tmp.persist(path)
            .map(drop)
            .with_context(|| format!("{}: could not write", path.display()))
    } else {
        tmp.persist_noclobber(path).map(drop).with_context(|| {
            format!(
                "{}: could not write (it exists? use --force to replace it)",
                path.display()
            )
        })
    }
}
