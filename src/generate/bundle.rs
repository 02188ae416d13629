//! A host's bundle as files in memory: the rendered scripts and unit, `host.json`,
//! `manifest.json` and `SHA256SUMS`. Pure: the archive and the output folder are other modules.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{Context, Result};
use serde::Serialize;

use crate::digest::sha256_hex;
use crate::generate::fabric::PortPairs;
use crate::generate::render::{Meta, Rendered};
use crate::plan::model::{Cluster, Host, Plan};

/// Schema tag of `manifest.json`.
pub(crate) const MANIFEST_SCHEMA: &str = "roce-gen/manifest/v1";
/// Schema tag of `host.json`.
pub(crate) const HOST_SCHEMA: &str = "roce-gen/host/v1";

/// One file of a bundle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// Contents, shared: every bundle of a run holds the same shell files, not a copy each.
    pub bytes: Arc<[u8]>,
    /// Unix mode: 0755 for scripts, 0644 otherwise.
    pub mode: u32,
    /// sha256 of the contents, computed once for the manifest and SHA256SUMS.
    pub sha256: String,
}

impl Entry {
    /// A file with its hash.
    pub(crate) fn new(bytes: Vec<u8>, mode: u32) -> Self {
        let sha256 = sha256_hex(&bytes);
        Self {
            bytes: bytes.into(),
            mode,
            sha256,
        }
    }
}

/// The files every bundle shares, hashed once for the whole run.
pub(crate) fn shared_entries(rendered: Vec<Rendered>) -> Vec<(String, Entry)> {
    rendered
        .into_iter()
        .map(|r| (r.name.to_string(), Entry::new(r.text.into_bytes(), r.mode)))
        .collect()
}

/// A host's bundle: file name (inside the `<host>/` folder) → entry, sorted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Bundle {
    /// The host, which is also the bundle's top folder.
    pub host: String,
    /// Every file, `SHA256SUMS` and `manifest.json` included.
    pub files: BTreeMap<String, Entry>,
}

/// `host.json`: the host's slice of the plan.
#[derive(Debug, Serialize)]
struct HostJson<'a> {
    schema: &'static str,
    tool_version: &'a str,
    plan_sha256: &'a str,
    cluster: &'a Cluster,
    host: &'a Host,
    /// The fabric test's pairs of each planned port.
    fabric: &'a [PortPairs],
}

/// `manifest.json`.
#[derive(Debug, Serialize)]
pub(crate) struct Manifest<'a> {
    schema: &'static str,
    tool_version: &'a str,
    plan_sha256: &'a str,
    cluster: &'a str,
    host: &'a str,
    files: Vec<ManifestFile>,
}

/// One file in the manifest.
#[derive(Debug, Serialize, serde::Deserialize, PartialEq, Eq)]
pub(crate) struct ManifestFile {
    /// File name inside the bundle folder.
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// Octal mode such as `0755`.
    pub mode: String,
    /// sha256, lowercase hex.
    pub sha256: String,
}

/// Builds `host`'s bundle from its own rendered files and the `shared` ones.
pub(crate) fn build(
    rendered: Vec<Rendered>,
    shared: &[(String, Entry)],
    plan: &Plan,
    host: &Host,
    fabric: &[PortPairs],
    meta: &Meta<'_>,
) -> Result<Bundle> {
    let mut files: BTreeMap<String, Entry> = shared.iter().cloned().collect();
    for r in rendered {
        files.insert(r.name.to_string(), Entry::new(r.text.into_bytes(), r.mode));
    }
    let host_json = HostJson {
        schema: HOST_SCHEMA,
        tool_version: meta.tool_version,
        plan_sha256: meta.plan_sha256,
        cluster: &plan.cluster,
        host,
        fabric,
    };
    files.insert(
        "host.json".into(),
        Entry::new(pretty_json(&host_json)?, 0o644),
    );
    let manifest = Manifest {
        schema: MANIFEST_SCHEMA,
        tool_version: meta.tool_version,
        plan_sha256: meta.plan_sha256,
        cluster: plan.cluster.cluster_name.as_str(),
        host: host.hostname.as_str(),
        files: files
            .iter()
            .map(|(path, e)| ManifestFile {
                path: path.clone(),
                size: e.bytes.len() as u64,
                mode: format!("{:04o}", e.mode),
                sha256: e.sha256.clone(),
            })
            .collect(),
    };
    files.insert(
        "manifest.json".into(),
        Entry::new(pretty_json(&manifest)?, 0o644),
    );
    let sums: String = files
        .iter()
        .map(|(p, e)| format!("{}  {p}\n", e.sha256))
        .collect();
    files.insert("SHA256SUMS".into(), Entry::new(sums.into_bytes(), 0o644));
    Ok(Bundle {
        host: host.hostname.to_string(),
        files,
    })
}

/// Pretty JSON with a final newline, as every JSON file roce-gen writes.
pub(crate) fn pretty_json<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(value).context("JSON")?;
    bytes.push(b'\n');
    Ok(bytes)
}
