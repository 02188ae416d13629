//! Checking a bundle's files against its own `SHA256SUMS` and `manifest.json`: every listed file
//! present with the recorded hash (and size and mode), and no file that neither lists. Pure: the
//! caller reads the bytes of a tarball (unpacked here by [`read_tarball`]) or a folder's files.

use std::collections::BTreeMap;
use std::io::Read;

use anyhow::{Context, Result, bail};

use crate::digest::sha256_hex;
use crate::generate::bundle::{MANIFEST_SCHEMA, ManifestFile};

/// A bundle's files as found: name inside the bundle folder → (bytes, mode if known).
pub(crate) type Files = BTreeMap<String, (Vec<u8>, Option<u32>)>;

/// Every problem found, each naming the file; empty when the bundle verifies.
pub(crate) fn check(files: &Files) -> Vec<String> {
    let mut problems = Vec::new();
    let listed = match files.get("SHA256SUMS") {
        None => {
            problems.push("SHA256SUMS: missing".to_string());
            BTreeMap::new()
        }
        Some((bytes, _)) => parse_sums(bytes, &mut problems),
    };
    for (name, want) in &listed {
        match files.get(name) {
            None => problems.push(format!("{name}: listed in SHA256SUMS but missing")),
            Some((bytes, _)) if sha256_hex(bytes) != *want => {
                problems.push(format!("{name}: sha256 does not match SHA256SUMS"));
            }
            Some(_) => {}
        }
    }
    for name in files
        .keys()
        .filter(|n| *n != "SHA256SUMS" && !listed.contains_key(*n))
    {
        problems.push(format!("{name}: not listed in SHA256SUMS"));
    }
    check_manifest(files, &mut problems);
    problems
}

fn parse_sums(bytes: &[u8], problems: &mut Vec<String>) -> BTreeMap<String, String> {
    let mut listed = BTreeMap::new();
    for (n, line) in String::from_utf8_lossy(bytes).lines().enumerate() {
        let parsed = line.split_once("  ").or_else(|| line.split_once(" *"));
        match parsed {
            Some((hash, name)) if crate::digest::is_sha256_hex(hash) => {
                listed.insert(name.to_string(), hash.to_ascii_lowercase());
            }
            _ => problems.push(format!(
                "SHA256SUMS: line {} is not `<sha256>  <file>`",
                n + 1
            )),
        }
    }
    listed
}

#[derive(serde::Deserialize)]
struct ManifestDoc {
    schema: String,
    files: Vec<ManifestFile>,
}

fn check_manifest(files: &Files, problems: &mut Vec<String>) {
    let Some((bytes, _)) = files.get("manifest.json") else {
        problems.push("manifest.json: missing".to_string());
        return;
    };
    let doc: ManifestDoc = match serde_json::from_slice(bytes) {
        Ok(doc) => doc,
        Err(e) => {
            problems.push(format!("manifest.json: not a manifest: {e}"));
            return;
        }
    };
    if doc.schema != MANIFEST_SCHEMA {
        problems.push(format!(
            "manifest.json: schema is {:?}, expected {MANIFEST_SCHEMA:?}",
            doc.schema
        ));
    }
    for f in &doc.files {
        let Some((bytes, mode)) = files.get(&f.path) else {
            problems.push(format!("{}: listed in manifest.json but missing", f.path));
            continue;
        };
        if bytes.len() as u64 != f.size || sha256_hex(bytes) != f.sha256 {
            problems.push(format!(
                "{}: size or sha256 does not match manifest.json",
                f.path
            ));
        }
        if let Some(mode) = mode
            && format!("{:04o}", mode & 0o7777) != f.mode
        {
            problems.push(format!(
                "{}: mode {:04o}, manifest.json says {}",
                f.path,
                mode & 0o7777,
                f.mode
            ));
        }
    }
    for name in files
        .keys()
        .filter(|n| *n != "SHA256SUMS" && *n != "manifest.json")
    {
        if !doc.files.iter().any(|f| &f.path == name) {
            problems.push(format!("{name}: not listed in manifest.json"));
        }
    }
}

/// The files of a bundle tarball, by name inside its one top folder.
pub fn read_tarball(bytes: &[u8]) -> Result<Files> {
    let mut tar = Vec::new();
    flate2::read::GzDecoder::new(bytes)
        .read_to_end(&mut tar)
        .context("not gzip")?;
    let mut archive = tar::Archive::new(tar.as_slice());
    let mut files = Files::new();
    let mut top: Option<String> = None;
    for entry in archive.entries().context("not a tar archive")? {
        let mut entry = entry.context("not a tar archive")?;
        let path = entry
            .path()
            .context("bad entry name")?
            .display()
            .to_string();
        let (first, rest) = path.split_once('/').unwrap_or((path.as_str(), ""));
        match &top {
            None => top = Some(first.to_string()),
            Some(t) if t != first => bail!("more than one top folder: {t}/ and {first}/"),
            Some(_) => {}
        }
        let rest = rest.trim_end_matches('/').to_string();
        match entry.header().entry_type() {
            tar::EntryType::Directory if rest.is_empty() => {}
            tar::EntryType::Regular => {
                let mode = entry.header().mode().ok();
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).context("truncated entry")?;
                files.insert(rest, (bytes, mode));
            }
            other => bail!("{path}: unexpected entry of type {other:?}"),
        }
    }
    Ok(files)
}
