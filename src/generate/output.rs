//! The output folder, replaced as a whole: a staging folder beside it is filled, then takes its
//! place in one step (or two renames where the file system cannot exchange folders), so a failed
//! or interrupted run leaves the old output or the new one, never a mix.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// The prefix of a staging folder: `<prefix><target>-<random>` beside the target.
const STAGING: &str = ".roce-gen-staging-";

/// Where the previous output waits while the new one takes its place on file systems that
/// cannot exchange two folders in one step: `<prefix><target>` beside the target.
const PREVIOUS: &str = ".roce-gen-previous-";

/// Staging folders of this process, removed when a signal stops it (see [`on_signals`]).
static LIVE: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Held shared while a file is put into a staging folder, and taken for good by the signal
/// handler before it removes the folders: a write in progress ends first and none starts after,
/// so no file lands in a folder being removed (which would leave it behind).
static WRITES: std::sync::RwLock<()> = std::sync::RwLock::new(());

/// `LIVE`, also after a panic elsewhere: every change to it is one push or one removal.
fn live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A shared hold on `WRITES` for one write into a staging folder.
fn writing() -> std::sync::RwLockReadGuard<'static, ()> {
    WRITES
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Installs the handler that removes this process's staging folders when SIGINT, SIGTERM or
/// SIGHUP stops it, then exits with 128 + the signal. The folder swap holds `LIVE`, so a
/// signal waits for a swap in progress to finish: the output is then old or new, never torn.
/// SIGKILL cannot be caught: the next run sweeps what it leaves ([`Staging::new`]).
pub(crate) fn on_signals() -> Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};

    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])
        .context("could not install the signal handler")?;
    std::thread::spawn(move || {
        if let Some(signal) = signals.forever().next() {
            // Never released: the process exits holding it.
            let _writes = WRITES
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let live = live();
            for dir in live.iter() {
                let _ = std::fs::remove_dir_all(dir);
            }
            std::process::exit(128 + signal);
        }
    });
    Ok(())
}

/// An output folder being written. Every file goes into a staging folder beside it; nothing in
/// the target changes until [`Staging::commit`], which replaces the folder as a whole:
///
/// - the files of the previous output that are not roce-gen's (results collected there, notes)
///   are linked (copied where the file system has no hard links) into the staging folder;
/// - the staging folder and the target are then exchanged in one `renameat2(RENAME_EXCHANGE)`
///   (ext4, XFS, Btrfs, tmpfs): a kill at any instant leaves the old or the new folder;
/// - where the file system cannot exchange (vfat, exFAT, NFS), the old folder is renamed to
///   `.roce-gen-previous-<target>` and the new one into place: two renames, between which the
///   target does not exist. The next run finds the old folder there and puts it back before it
///   does anything else, so the folder is again the old or the new output.
///
/// A failure, or a signal, removes the staging folder; after SIGKILL the next run into the same
/// parent folder sweeps it.
#[derive(Debug)]
pub(crate) struct Staging {
    target: PathBuf,
    dir: PathBuf,
    /// The parent folder, locked for the run (`flock`): two runs into one parent folder take
    /// turns, and the sweep never removes a live run's staging folder.
    _lock: Option<std::fs::File>,
}

impl Staging {
    /// Starts writing `target`: resolves it, locks its parent folder, sweeps debris of runs
    /// that were killed, and creates the staging folder.
    pub(crate) fn new(target: &Path) -> Result<Self> {
        let given = target;
        let target = resolve(target)?;
        refuse_enclosing(given, &target)?;
        let (parent, name) = split(&target)?;
        std::fs::create_dir_all(&parent)
            .with_context(|| format!("{}: could not create", parent.display()))?;
        let lock = lock(&parent);
        sweep(&parent, &name)?;
        // Created and listed under one lock, so a signal never finds the folder unlisted.
        let dir = {
            let mut live = live();
            let dir = tempfile::Builder::new()
                .prefix(&format!("{STAGING}{name}-"))
                .tempdir_in(&parent)
                .with_context(|| {
                    format!("{}: could not create a staging folder", parent.display())
                })?
                .keep();
            live.push(dir.clone());
            dir
        };
        set_mode(&dir, 0o755)?;
        Ok(Self {
            target,
            dir,
            _lock: lock,
        })
    }

    /// Stages one file (mode 0644). Safe to call from several threads for different names.
    pub(crate) fn write(&self, name: &str, bytes: &[u8]) -> Result<()> {
        let _writing = writing();
        let path = self.dir.join(name);
        // A bundle sits in the folder itself, which exists: no look-up of its parent per file.
        if name.contains('/')
            && let Some(parent) = path.parent()
        {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("{}: could not create", parent.display()))?;
        }
        let mut f = std::fs::File::create(&path)
            .with_context(|| format!("{}: could not write", path.display()))?;
        f.write_all(bytes)
            .with_context(|| format!("{}: could not write", path.display()))?;
        // Through the open file (fchmod), not the path again.
        use std::os::unix::fs::PermissionsExt;
        f.set_permissions(std::fs::Permissions::from_mode(0o644))
            .with_context(|| format!("{}: could not set its mode", path.display()))
    }

    /// Makes the staged files the target folder, keeping the files of the previous output that
    /// `owned` does not claim (paths relative to the folder, `/`-separated).
    pub(crate) fn commit(self, owned: &dyn Fn(&str) -> bool) -> Result<()> {
        let target = self.target.clone();
        if std::fs::symlink_metadata(&target).is_ok() {
            let _writing = writing();
            carry_over(&target, &self.dir, owned)?;
            if let Ok(meta) = std::fs::metadata(&target) {
                let _ = std::fs::set_permissions(&self.dir, meta.permissions());
            }
        }
        // Every file is on the disk before the folder that holds it takes the target's name
        // (one syncfs for the whole file system rather than one fsync per file).
        if let Ok(dir) = std::fs::File::open(&self.dir) {
            let _ = rustix::fs::syncfs(&dir);
        }
        let old = {
            let _swap = live();
            swap(&self.dir, &target)?
        };
        if let Some(old) = old {
            std::fs::remove_dir_all(&old)
                .with_context(|| format!("{}: could not remove the old output", old.display()))?;
        }
        if let Ok(parent) = std::fs::File::open(target.parent().unwrap_or(Path::new("."))) {
            let _ = parent.sync_all();
        }
        Ok(())
    }
}

impl Drop for Staging {
    /// A staging folder that was not committed (an error on the way) goes.
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        live().retain(|d| d != &self.dir);
    }
}

/// The folder a target names: a symbolic link to a folder is followed (the link stays, the
/// folder it points to is replaced); a dangling one is an error before anything is written.
fn resolve(target: &Path) -> Result<PathBuf> {
    match std::fs::symlink_metadata(target) {
        Err(_) => Ok(target.to_path_buf()),
        Ok(meta) if meta.file_type().is_symlink() => {
            let real = std::fs::canonicalize(target).map_err(|_| {
                anyhow::anyhow!(
                    "{}: is a symbolic link to {}, which does not exist",
                    target.display(),
                    std::fs::read_link(target)
                        .map_or_else(|_| "?".into(), |p| p.display().to_string())
                )
            })?;
            if !real.is_dir() {
                anyhow::bail!("{}: exists and is not a folder", target.display());
            }
            Ok(real)
        }
        Ok(meta) if meta.is_dir() => std::fs::canonicalize(target)
            .with_context(|| format!("{}: could not read", target.display())),
        Ok(_) => anyhow::bail!("{}: exists and is not a folder", target.display()),
    }
}

/// Refuses an output folder that is the working folder or holds it (`-o .`, `-o ..`, a link to
/// either): the swap would leave the user's shell in the old folder, removed, where `ls` shows
/// nothing until `cd .`. `target` is [`resolve`]d; both sides are compared canonical.
fn refuse_enclosing(given: &Path, target: &Path) -> Result<()> {
    let (Ok(cwd), Ok(target)) = (
        std::env::current_dir().and_then(std::fs::canonicalize),
        std::fs::canonicalize(target),
    ) else {
        // A folder that does not exist yet holds nothing.
        return Ok(());
    };
    if !cwd.starts_with(&target) {
        return Ok(());
    }
    let what = if cwd == target {
        "is the working folder".to_string()
    } else {
        format!("holds the working folder ({})", cwd.display())
    };
    anyhow::bail!(
        "-o {}: {what}; generate replaces its output folder as a whole, which would leave this \
         shell in a removed folder; nothing was written: write to a subfolder instead, such as \
         -o dist",
        given.display()
    )
}

/// The parent folder and the file name of a target.
fn split(target: &Path) -> Result<(PathBuf, String)> {
    let name = target
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty())
        .ok_or_else(|| anyhow::anyhow!("{}: not a folder name to write", target.display()))?;
    let parent = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((parent, name.to_string()))
}

/// Locks the parent folder for the run, waiting for another run to finish. Where the file
/// system has no locks on folders (NFS), the run goes on unlocked.
fn lock(parent: &Path) -> Option<std::fs::File> {
    let dir = std::fs::File::open(parent).ok()?;
    dir.lock().ok()?;
    Some(dir)
}

/// Removes what killed runs left beside `name` in `parent`: staging folders of any target
/// (the parent is locked, so none is live), and puts a previous output waiting under its
/// temporary name back when the swap was cut between its two renames.
fn sweep(parent: &Path, name: &str) -> Result<()> {
    let previous = parent.join(format!("{PREVIOUS}{name}"));
    if std::fs::symlink_metadata(&previous).is_ok() {
        let target = parent.join(name);
        if std::fs::symlink_metadata(&target).is_ok() {
            std::fs::remove_dir_all(&previous)
        } else {
            std::fs::rename(&previous, &target)
        }
        .with_context(|| {
            format!(
                "{}: could not clear the output an interrupted run left",
                previous.display()
            )
        })?;
    }
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        if file_name.to_string_lossy().starts_with(STAGING)
            && entry.file_type().is_ok_and(|t| t.is_dir())
        {
            let path = entry.path();
            std::fs::remove_dir_all(&path).with_context(|| {
                format!(
                    "{}: could not remove what an interrupted run left",
                    path.display()
                )
            })?;
        }
    }
    Ok(())
}

/// Links (or copies) into `to` every file of `from` that `owned` does not claim, keeping the
/// folder structure.
fn carry_over(from: &Path, to: &Path, owned: &dyn Fn(&str) -> bool) -> Result<()> {
    for entry in walkdir::WalkDir::new(from).min_depth(1).sort_by_file_name() {
        let entry = entry.with_context(|| format!("{}: could not read", from.display()))?;
        let Ok(rel) = entry.path().strip_prefix(from) else {
            continue;
        };
        let rel_name = rel.to_string_lossy().replace('\\', "/");
        let dest = to.join(rel);
        let kind = entry.file_type();
        if kind.is_dir() {
            if !dest.exists() {
                std::fs::create_dir_all(&dest)
                    .with_context(|| format!("{}: could not create", dest.display()))?;
                if let Ok(meta) = entry.metadata() {
                    let _ = std::fs::set_permissions(&dest, meta.permissions());
                }
            }
            continue;
        }
        if owned(&rel_name) || std::fs::symlink_metadata(&dest).is_ok() {
            continue;
        }
        if kind.is_symlink() {
            let link = std::fs::read_link(entry.path())
                .with_context(|| format!("{}: could not read", entry.path().display()))?;
            std::os::unix::fs::symlink(&link, &dest)
        } else {
            std::fs::hard_link(entry.path(), &dest)
                .or_else(|_| std::fs::copy(entry.path(), &dest).map(drop))
        }
        .with_context(|| {
            format!(
                "{}: could not keep it in the new output",
                entry.path().display()
            )
        })?;
    }
    // Folders that held only roce-gen's files and are now empty are left out.
    for entry in walkdir::WalkDir::new(to).min_depth(1).contents_first(true) {
        if let Ok(e) = entry
            && e.file_type().is_dir()
        {
            let _ = std::fs::remove_dir(e.path());
        }
    }
    Ok(())
}

/// Puts `staged` in the place of `target`; returns where the old folder now is, to remove.
fn swap(staged: &Path, target: &Path) -> Result<Option<PathBuf>> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};

    if std::fs::symlink_metadata(target).is_err() {
        std::fs::rename(staged, target)
            .with_context(|| format!("{}: could not create", target.display()))?;
        return Ok(None);
    }
    match renameat_with(CWD, staged, CWD, target, RenameFlags::EXCHANGE) {
        Ok(()) => return Ok(Some(staged.to_path_buf())),
        // Not supported by this file system or kernel: two renames.
        Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS | rustix::io::Errno::OPNOTSUPP) => {
        }
        Err(e) => {
            return Err(std::io::Error::from(e))
                .with_context(|| format!("{}: could not replace", target.display()));
        }
    }
    let (parent, name) = split(target)?;
    let previous = parent.join(format!("{PREVIOUS}{name}"));
    std::fs::rename(target, &previous)
        .with_context(|| format!("{}: could not replace", target.display()))?;
    std::fs::rename(staged, target).with_context(|| {
        format!(
            "{}: could not replace (the old output is in {})",
            target.display(),
            previous.display()
        )
    })?;
    Ok(Some(previous))
}

/// Sets a path's permission bits.
fn set_mode(path: &Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("{}: could not set its mode", path.display()))
}
