//! `roce-gen verify DIR_OR_TARBALL... [--anchor SHA256] [--public-key FILE]`: checks tarballs,
//! unpacked bundles and output folders against their SHA256SUMS and manifests, and an output
//! folder's run-here.sh against the trust anchor or the site's signature, naming every file that
//! does not match.

use std::collections::BTreeMap;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::cmd::console;
use crate::generate::dist::{INDEX, Index, RUN_HERE, SUMS};
use crate::generate::verify::{Files, check, read_tarball};
use crate::signature::SIGNATURE;

/// Schema of `verify --format json`.
const VERIFY_SCHEMA: &str = "roce-gen/verify/v1";

#[derive(serde::Serialize)]
struct Verified {
    schema: &'static str,
    ok: bool,
    paths: Vec<VerifiedPath>,
}

#[derive(serde::Serialize)]
struct VerifiedPath {
    path: String,
    ok: bool,
    problems: Vec<String>,
    /// An output folder's: whether run-here.sh was checked against `--anchor` or
    /// `--public-key` (not only against the folder itself).
    #[serde(skip_serializing_if = "Option::is_none")]
    anchored: Option<bool>,
}

/// Runs `verify`: exit 0 when everything verifies, 1 when anything does not.
pub(crate) fn run(args: &crate::cli::VerifyArgs) -> Result<ExitCode> {
    let (paths, format) = (&args.paths, args.format);
    let trust = Trust::new(args)?;
    let mut failed = false;
    let mut unanchored = Vec::new();
    let mut doc = Verified {
        schema: VERIFY_SCHEMA,
        ok: true,
        paths: Vec::new(),
    };
    let ui = crate::cmd::ui();
    let mut out = std::io::stdout().lock();
    for path in paths {
        let Outcome {
            problems,
            checked,
            anchored,
        } = verify_path(path, &trust)?;
        if anchored == Some(false) {
            unanchored.push(path.display().to_string());
        }
        failed |= !problems.is_empty();
        let shown = path.display().to_string();
        if format == crate::cli::Format::Json {
            doc.paths.push(VerifiedPath {
                path: shown,
                ok: problems.is_empty(),
                problems,
                anchored,
            });
        } else if problems.is_empty() {
            if ui.verbose {
                for file in checked {
                    console::print(&mut out, &format!("ok: {shown}: {file}"))?;
                }
            }
            if !ui.quiet {
                console::print(&mut out, &format!("ok: {shown}"))?;
            }
        } else {
            for p in problems {
                console::print(&mut out, &format!("FAILED: {shown}: {p}"))?;
            }
        }
    }
    if format == crate::cli::Format::Json {
        doc.ok = !failed;
        out.write_all(console::json(&doc)?.as_bytes())?;
    }
    out.flush()?;
    // Said, not failed: a folder checked against itself is all a verify without an anchor can do.
    for path in unanchored.iter().filter(|_| !ui.quiet) {
        console::tell(
            crate::plan::diagnostic::Severity::Warning,
            &format!(
                "{path}: run-here.sh was checked against nothing but the folder itself: give \
                 --anchor (the sha256 generate printed) or --public-key to check where it came from"
            ),
        );
    }
    // What to do now, as every command says (on stderr, so that stdout stays the list).
    if format != crate::cli::Format::Json && !ui.quiet && !paths.is_empty() {
        console::say(if failed {
            "next: generate the bundles again from the plan (or copy them again from where they \
             were made), then verify again; never run a bundle that does not verify"
        } else {
            "next: run `bash run-here.sh precheck` on each host (or `./precheck.sh` in a bundle's \
             folder)"
        });
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What verifying one path found: every problem, and the files it checked (all of them
/// verified when there is no problem; listed with `-v`).
#[derive(Default)]
struct Outcome {
    problems: Vec<String>,
    checked: Vec<String>,
    /// An output folder's: whether its run-here.sh was checked against an anchor or signature.
    anchored: Option<bool>,
}

/// What an output folder's run-here.sh is checked against, from the command line.
struct Trust<'a> {
    /// The sha256 it must have.
    anchor: Option<String>,
    /// The public key its signature (`run-here.sh.sig`) must be by.
    public_key: Option<&'a Path>,
}

impl<'a> Trust<'a> {
    fn new(args: &'a crate::cli::VerifyArgs) -> Result<Self> {
        let anchor = match &args.anchor {
            Some(a) if crate::digest::is_sha256_hex(a) => Some(a.to_ascii_lowercase()),
            Some(a) => bail!(
                "--anchor {:?} is not a sha256 (64 hexadecimal digits, as generate prints it)",
                crate::text::clean(&crate::text::cap(a, 80))
            ),
            None => None,
        };
        Ok(Trust {
            anchor,
            public_key: args.public_key.as_deref(),
        })
    }

    /// The problems of the folder's `run-here.sh` (`bytes`) against the anchor and the
    /// signature, and whether either was given.
    fn check(&self, dir: &Path, bytes: &[u8]) -> Result<(Vec<String>, bool)> {
        let mut problems = Vec::new();
        if let Some(want) = &self.anchor {
            let have = crate::digest::sha256_hex(bytes);
            if &have != want {
                problems.push(format!(
                    "{RUN_HERE}: sha256 {have} is not the trust anchor {want}: the folder is not \
                     the one generate made, or was altered; run nothing from it"
                ));
            }
        }
        if let Some(key) = self.public_key {
            match std::fs::read(dir.join(SIGNATURE)) {
                Err(_) => problems.push(format!(
                    "{SIGNATURE}: missing; run-here.sh is not signed (generate --sign KEY signs it)"
                )),
                Ok(sig) => {
                    if let Some(why) = crate::signature::check(key, &sig, bytes)? {
                        problems.push(format!(
                            "{SIGNATURE}: not run-here.sh's signature by {} ({why}): the folder \
                             is not the one the site signed, or was altered; run nothing from it",
                            key.display()
                        ));
                    }
                }
            }
        }
        Ok((problems, self.anchor.is_some() || self.public_key.is_some()))
    }
}

fn verify_path(path: &Path, trust: &Trust<'_>) -> Result<Outcome> {
    if path.is_dir() && path.join(INDEX).is_file() {
        return verify_output_dir(path, trust);
    }
    if path.is_dir() && path.join("manifest.json").is_file() {
        let (files, mut problems) = read_folder(path)?;
        problems.extend(check(&files));
        return Ok(Outcome {
            problems,
            checked: files.into_keys().collect(),
            anchored: None,
        });
    }
    if path.is_file() {
        let bytes =
            std::fs::read(path).with_context(|| format!("{}: could not read", path.display()))?;
        return Ok(match read_tarball(&bytes) {
            Ok(files) => Outcome {
                problems: check(&files),
                checked: files.into_keys().collect(),
                anchored: None,
            },
            Err(e) => Outcome {
                problems: vec![format!("not a bundle tarball: {e:#}")],
                checked: Vec::new(),
                anchored: None,
            },
        });
    }
    bail!(
        "{}: not a bundle tarball, a bundle folder or an output folder of roce-gen generate",
        path.display()
    )
}

/// An output folder: run-here.sh against the anchor or signature given and SHA256SUMS against
/// run-here.sh (the chain of trust), then SHA256SUMS and the index against the tarballs, then
/// each tarball.
fn verify_output_dir(dir: &Path, trust: &Trust<'_>) -> Result<Outcome> {
    let mut problems = Vec::new();
    let mut checked = vec![INDEX.to_string()];
    let index_bytes = std::fs::read(dir.join(INDEX))
        .with_context(|| format!("{}: could not read", dir.join(INDEX).display()))?;
    let index: Index = match serde_json::from_slice(&index_bytes) {
        Ok(i) => i,
        Err(e) => {
            return Ok(Outcome {
                problems: vec![format!("{INDEX}: not an index: {e}")],
                checked,
                anchored: None,
            });
        }
    };
    let mut top: Files = BTreeMap::new();
    if let Ok(sums) = std::fs::read(dir.join(SUMS)) {
        top.insert(SUMS.into(), (sums, None));
    }
    for h in &index.hosts {
        if h.bundle.contains('/') {
            problems.push(format!(
                "{INDEX}: bundle name {:?} is not a file name",
                h.bundle
            ));
            continue;
        }
        let Ok(bytes) = std::fs::read(dir.join(&h.bundle)) else {
            problems.push(format!("{}: listed in {INDEX} but missing", h.bundle));
            continue;
        };
        if crate::digest::sha256_hex(&bytes) != h.sha256 {
            problems.push(format!("{}: sha256 does not match {INDEX}", h.bundle));
        }
        match read_tarball(&bytes) {
            Ok(files) => {
                problems.extend(
                    check(&files)
                        .into_iter()
                        .map(|p| format!("{}: {p}", h.bundle)),
                );
                checked.extend(files.keys().map(|f| format!("{}: {f}", h.bundle)));
            }
            Err(e) => problems.push(format!("{}: not a bundle tarball: {e:#}", h.bundle)),
        }
        top.insert(h.bundle.clone(), (bytes, None));
    }
    // The head of the chain: run-here.sh against what the command line gives, and the
    // SHA256SUMS whose sha256 it carries.
    let anchored = match std::fs::read(dir.join(RUN_HERE)) {
        Err(_) => {
            problems.push(format!("{RUN_HERE}: missing"));
            false
        }
        Ok(run_here) => {
            let (found, anchored) = trust.check(dir, &run_here)?;
            problems.extend(found);
            checked.push(RUN_HERE.into());
            match (carried_sums_sha256(&run_here), top.get(SUMS)) {
                (None, _) => problems.push(format!(
                    "{RUN_HERE}: carries no sha256 of {SUMS} (RG_SUMS_SHA256): it is not a \
                     run-here.sh of this roce-gen; generate again"
                )),
                (Some(want), Some((sums, _))) if crate::digest::sha256_hex(sums) != want => {
                    problems.push(format!(
                        "{SUMS}: its sha256 is not the one {RUN_HERE} carries: one of them is \
                         stale or was altered"
                    ));
                }
                _ => {}
            }
            anchored
        }
    };
    // The folder's SHA256SUMS lists the tarballs (read above) and the Ansible files, read here;
    // a name that would leave the folder is refused.
    let Some((sums, _)) = top.get(SUMS) else {
        problems.push(format!("{SUMS}: missing"));
        return Ok(Outcome {
            problems,
            checked,
            anchored: Some(anchored),
        });
    };
    checked.push(SUMS.into());
    for line in String::from_utf8_lossy(sums).lines() {
        let Some((hash, name)) = line.split_once("  ") else {
            problems.push(format!("SHA256SUMS: {line:?} is not `<sha256>  <file>`"));
            continue;
        };
        let inside = !name.starts_with('/') && !name.split('/').any(|part| part == "..");
        let actual = match top.get(name) {
            Some((bytes, _)) => Some(crate::digest::sha256_hex(bytes)),
            None if inside => std::fs::read(dir.join(name))
                .ok()
                .map(|b| crate::digest::sha256_hex(&b)),
            None => None,
        };
        match actual {
            Some(sum) if sum == hash => checked.push(name.to_string()),
            Some(_) => problems.push(format!("{name}: sha256 does not match SHA256SUMS")),
            None => problems.push(format!("{name}: listed in SHA256SUMS but missing")),
        }
    }
    Ok(Outcome {
        problems,
        checked,
        anchored: Some(anchored),
    })
}

/// The sha256 of SHA256SUMS that a run-here.sh carries (its `RG_SUMS_SHA256=` line).
fn carried_sums_sha256(run_here: &[u8]) -> Option<String> {
    String::from_utf8_lossy(run_here).lines().find_map(|l| {
        let v = l.trim().strip_prefix("RG_SUMS_SHA256=")?;
        crate::digest::is_sha256_hex(v).then(|| v.to_string())
    })
}

/// The files of an unpacked bundle folder, and what in it cannot be a bundle's file: a symbolic
/// link, an empty folder, a device or pipe (a bundle holds regular files only; the regular files
/// it does not list are [`check`]'s to name). `results/`, where the scripts write, is not part of
/// it.
fn read_folder(dir: &Path) -> Result<(Files, Vec<String>)> {
    let mut files = Files::new();
    let mut odd = Vec::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name().min_depth(1) {
        let entry = entry.with_context(|| format!("{}: could not read", dir.display()))?;
        let rel = entry
            .path()
            .strip_prefix(dir)
            .unwrap_or(entry.path())
            .display()
            .to_string();
        if rel == "results" || rel.starts_with("results/") {
            continue;
        }
        let kind = entry.file_type();
        if kind.is_symlink() {
            let to = std::fs::read_link(entry.path())
                .map_or_else(|_| "?".into(), |t| t.display().to_string());
            odd.push(format!(
                "{rel}: a symbolic link (to {to}); a bundle holds only the files manifest.json lists"
            ));
        } else if kind.is_dir() {
            let empty = std::fs::read_dir(entry.path())
                .with_context(|| format!("{}: could not read", entry.path().display()))?
                .next()
                .is_none();
            if empty {
                odd.push(format!("{rel}/: an empty folder, not in manifest.json"));
            }
        } else if kind.is_file() {
            let bytes = std::fs::read(entry.path())
                .with_context(|| format!("{}: could not read", entry.path().display()))?;
            let mode = entry.metadata().ok().map(|m| m.permissions().mode());
            files.insert(rel, (bytes, mode));
        } else {
            odd.push(format!(
                "{rel}: not a regular file; a bundle holds only the files manifest.json lists"
            ));
        }
    }
    Ok((files, odd))
}
