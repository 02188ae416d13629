//! What `generate` writes into the output folder besides the tarballs: `index.json` (every
//! bundle with its checksums) and `SHA256SUMS`. Pure: [`crate::output`] writes it.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::archive::Packed;
use crate::bundle::pretty_json;
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

impl IndexHost {
    /// The index entry of `host`'s packed bundle.
    pub fn new(host: &Host, packed: &Packed) -> Self {
        IndexHost {
            host: host.hostname.to_string(),
            bundle: bundle_name(host),
            sha256: sha256_hex(&packed.tar_gz),
            tar_sha256: sha256_hex(&packed.tar),
            mgmt_ip: host.mgmt_ip.to_string(),
            macs: host
                .nics
                .iter()
                .filter_map(|n| n.mac.as_ref().map(ToString::to_string))
                .collect(),
        }
    }
}

/// The tarball name of a host's bundle.
pub fn bundle_name(host: &Host) -> String {
    format!("{}.tar.gz", host.hostname)
}

/// `index.json` and `SHA256SUMS` of the output folder, from the bundles' index entries (in plan
/// order); the tarballs themselves are written as they are made.
pub fn index_files(
    plan: &Plan,
    hosts: Vec<IndexHost>,
    tool_version: &str,
    plan_sha256: &str,
) -> Result<BTreeMap<String, Vec<u8>>> {
    let mut by_name: Vec<&IndexHost> = hosts.iter().collect();
    by_name.sort_by(|a, b| a.bundle.cmp(&b.bundle));
    let sums: String = by_name
        .iter()
        .map(|h| format!("{}  {}\n", h.sha256, h.bundle))
        .collect();
    let index = Index {
        schema: INDEX_SCHEMA.into(),
        tool_version: tool_version.into(),
        cluster: plan.cluster.cluster_name.to_string(),
        plan_sha256: plan_sha256.into(),
        hosts,
    };
    Ok(BTreeMap::from([
        (INDEX.to_string(), pretty_json(&index)?),
        ("SHA256SUMS".to_string(), sums.into_bytes()),
    ]))
}
