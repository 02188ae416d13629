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

/// Replaces the files roce-gen owns in `dir` with `files`, all or nothing as far as the file
/// system allows: every file is first written to a staging folder beside `dir`, so a failure
/// leaves `dir` exactly as it was. When `dir` does not exist, the staging folder becomes it in one
/// rename; otherwise each file is renamed into place (`index.json` last) and bundles that the
/// previous index listed but this run did not write are removed. Other files in `dir` (results
/// collected there, a README) are left alone.
pub fn replace_dir_files(
    dir: &Path,
    files: &std::collections::BTreeMap<String, Vec<u8>>,
    stale: &[String],
) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;

    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if dir.exists() && !dir.is_dir() {
        anyhow::bail!("{}: exists and is not a folder", dir.display());
    }
    std::fs::create_dir_all(parent)
        .with_context(|| format!("{}: could not create", parent.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".roce-gen-staging-")
        .tempdir_in(parent)
        .with_context(|| format!("{}: could not create a staging folder", parent.display()))?;
    for (name, bytes) in files {
        let path = staging.path().join(name);
        let mut f = std::fs::File::create(&path)
            .with_context(|| format!("{}: could not write", path.display()))?;
        f.write_all(bytes)
            .and_then(|()| f.sync_all())
            .with_context(|| format!("{}: could not write", path.display()))?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
    }
    std::fs::set_permissions(staging.path(), std::fs::Permissions::from_mode(0o755))?;
    if !dir.exists() {
        let staged = staging.keep();
        return std::fs::rename(&staged, dir)
            .with_context(|| format!("{}: could not create", dir.display()));
    }
    let last = crate::dist::INDEX;
    let order = files
        .keys()
        .filter(|n| n.as_str() != last)
        .chain(files.keys().filter(|n| n.as_str() == last));
    for name in order {
        let to = dir.join(name);
        std::fs::rename(staging.path().join(name), &to)
            .with_context(|| format!("{}: could not replace", to.display()))?;
    }
    for name in stale.iter().filter(|n| !files.contains_key(*n)) {
        let path = dir.join(name);
        if path.is_file() {
            std::fs::remove_file(&path).with_context(|| {
                format!("{}: could not remove the stale bundle", path.display())
            })?;
        }
    }
    Ok(())
}
