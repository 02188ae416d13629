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
        tmp.persist_noclobber(path).map(drop).with_context(|| {
            format!(
                "{}: could not write (it exists? use --force to replace it)",
                path.display()
            )
        })
    }
}

/// An output folder being written: every file goes first into a staging folder beside it, so a
/// failure (the staging folder is dropped) leaves the folder exactly as it was. [`Staging::commit`]
/// then makes the staged files the folder's: when the folder does not exist the staging folder
/// becomes it in one rename; otherwise each file is renamed into place (`index.json` last) and the
/// bundles a previous index listed but this run did not write are removed. Other files in the
/// folder (results collected there, a README) are left alone.
#[derive(Debug)]
pub struct Staging {
    target: std::path::PathBuf,
    dir: tempfile::TempDir,
}

impl Staging {
    /// Starts writing `target`.
    pub fn new(target: &Path) -> Result<Self> {
        use std::os::unix::fs::PermissionsExt;

        if target.exists() && !target.is_dir() {
            anyhow::bail!("{}: exists and is not a folder", target.display());
        }
        let parent = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        std::fs::create_dir_all(parent)
            .with_context(|| format!("{}: could not create", parent.display()))?;
        let dir = tempfile::Builder::new()
            .prefix(".roce-gen-staging-")
            .tempdir_in(parent)
            .with_context(|| format!("{}: could not create a staging folder", parent.display()))?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
        Ok(Self {
            target: target.to_path_buf(),
            dir,
        })
    }

    /// Stages one file (mode 0644). Safe to call from several threads for different names.
    pub fn write(&self, name: &str, bytes: &[u8]) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;

        let path = self.dir.path().join(name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("{}: could not create", parent.display()))?;
        }
        let mut f = std::fs::File::create(&path)
            .with_context(|| format!("{}: could not write", path.display()))?;
        f.write_all(bytes)
            .with_context(|| format!("{}: could not write", path.display()))?;
        f.set_permissions(std::fs::Permissions::from_mode(0o644))?;
        Ok(())
    }

    /// Moves the staged files `names` into the target folder and removes `stale` bundles there.
    pub fn commit(self, names: &[String], stale: &[String]) -> Result<()> {
        if !self.target.exists() {
            let staged = self.dir.keep();
            return std::fs::rename(&staged, &self.target)
                .with_context(|| format!("{}: could not create", self.target.display()));
        }
        let last = crate::dist::INDEX;
        let order = names
            .iter()
            .filter(|n| n.as_str() != last)
            .chain(names.iter().filter(|n| n.as_str() == last));
        for name in order {
            let to = self.target.join(name);
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("{}: could not create", parent.display()))?;
            }
            std::fs::rename(self.dir.path().join(name), &to)
                .with_context(|| format!("{}: could not replace", to.display()))?;
        }
        for name in stale.iter().filter(|n| !names.contains(n)) {
            let path = self.target.join(name);
            if path.is_file() {
                std::fs::remove_file(&path).with_context(|| {
                    format!("{}: could not remove the stale bundle", path.display())
                })?;
            }
        }
        Ok(())
    }
}
