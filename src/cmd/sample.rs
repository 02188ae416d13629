//! `roce-gen sample [-o FILE]`: writes the embedded sample plan as a workbook to fill in.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Result, bail};

use crate::cmd::console;

/// Runs `sample`. Refuses to replace an existing file unless `force`.
pub(crate) fn run(output: &Path, force: bool) -> Result<ExitCode> {
    let ext = output
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    if ext.as_deref() != Some("xlsx") {
        bail!(
            "{}: the sample is an .xlsx workbook; name the file *.xlsx",
            output.display()
        );
    }
    let bytes = crate::plan::sample::workbook()?;
    crate::files::write_file_atomic(output, &bytes, force)?;
    console::say(&format!(
        "wrote {} ({} bytes)",
        output.display(),
        bytes.len()
    ));
    console::say(&format!(
        "next: fill it in, then run `roce-gen validate {}`",
        console::shell_word(output)
    ));
    Ok(ExitCode::SUCCESS)
}
