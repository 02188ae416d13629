//! What `generate` writes into the output folder, as bytes: one `<host>.tar.gz` per host,
//! `index.json` and `SHA256SUMS`. Pure: [`crate::output`] writes it.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::archive::Packed;
use crate::bundle::{pretty_json, sha256sums};
use crate::digest::sha256_hex;
use crate::model::{Host, Plan};

/// Schema tag of `index.json`.
pub const INDEX_SCHEMA: &str = "roce-gen/index/v1";
/// The index file's name.
pub const INDEX: &str = "index.json";

/// `index.json`: the cluster and every bundle with its checksums.
#[derive(Debug, Serialize, Deserialize)]
pub struct Index {
    /// Always [`INDEX_SCHEMA`].
    pub schema: String,
    /// roce-gen's version.
    pub tool_version: String,
    /// The cluster.
    pub cluster: String,
    /// sha256 of the plan file.
    pub plan_sha256: String,
    /// Every bundle, in plan order.
    pub hosts: Vec<IndexHost>,
}

/// One bundle in the index.
#[derive(Debug, Serialize, Deserialize)]
pub struct IndexHost {
    /// The host.
    pub host: String,
    /// The tarball's file name.
    pub bundle: String,
    /// sha256 of the `.tar.gz`.
    pub sha256: String,
    /// sha256 of the uncompressed `.tar` (stable across compressor versions).
    pub tar_sha256: String,
    /// Management address, to find a host's bundle when its name is not set yet.
    pub mgmt_ip: String,
    /// The planned MACs of its RoCE ports, for the same purpose.
    pub macs: Vec<String>,
}

/// The output folder's files: name → bytes, sorted.
pub fn files(
    plan: &Plan,
    packed: &[(&Host, Packed)],
    tool_version: &str,
    plan_sha256: &str,
) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut out = BTreeMap::new();
    let mut hosts = Vec::new();
    for (host, p) in packed {
        let bundle = format!("{}.tar.gz", host.hostname);
        hosts.push(IndexHost {
            host: host.hostname.to_string(),
            bundle: bundle.clone(),
            sha256: sha256_hex(&p.tar_gz),
            tar_sha256: sha256_hex(&p.tar),
            mgmt_ip: host.mgmt_ip.to_string(),
            macs: host
                .nics
                .iter()
                .filter_map(|n| n.mac.as_ref().map(ToString::to_string))
                .collect(),
        });
        out.insert(bundle, p.tar_gz.clone());
    }
    let sums = sha256sums(out.iter().map(|(n, b)| (n.as_str(), b.as_slice())));
    let index = Index {
        schema: INDEX_SCHEMA.into(),
        tool_version: tool_version.into(),
        cluster: plan.cluster.cluster_name.to_string(),
        plan_sha256: plan_sha256.into(),
        hosts,
    };
    out.insert(INDEX.into(), pretty_json(&index)?);
    out.insert("SHA256SUMS".into(), sums.into_bytes());
    Ok(out)
}
