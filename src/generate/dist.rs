//! What `generate` writes into the output folder besides the tarballs: `index.json` (every
//! bundle with its checksums), `SHA256SUMS`, and the context of the folder's own templates.
//! The chain of trust runs from one anchor, the sha256 of `run-here.sh` (or the site's
//! signature over it), to `SHA256SUMS`, whose sha256 run-here.sh carries, to every tarball and
//! Ansible file that SHA256SUMS lists. Pure: [`crate::generate::output`] writes it.

use std::collections::{BTreeMap, HashMap};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::digest::sha256_hex;
use crate::generate::archive::Packed;
use crate::generate::bundle::pretty_json;
use crate::generate::fabric::Rail;
use crate::plan::model::{Host, Plan};

/// Schema tag of `index.json`.
pub(crate) const INDEX_SCHEMA: &str = "roce-gen/index/v1";
/// The index file's name.
pub(crate) const INDEX: &str = "index.json";

/// The checksums of every file roce-gen wrote in the output folder.
pub(crate) const SUMS: &str = "SHA256SUMS";

/// `index.json`: the cluster and every bundle with its checksums.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Index {
    /// Always [`INDEX_SCHEMA`].
    pub schema: String,
    /// roce-gen's version.
    pub tool_version: String,
    pub cluster: String,
    /// The plan's identity: the sha256 of the normalized plan (`roce-gen plan`).
    pub plan_sha256: String,
    /// The trust anchor: the sha256 of `run-here.sh`, which carries every tarball's sha256 and
    /// size. Given to the hosts by another channel than the folder (docs/delivery.md).
    #[serde(default)]
    pub run_here_sha256: String,
    /// Every bundle, in plan order.
    pub hosts: Vec<IndexHost>,
    /// The fabric test's rings, one per rail, in plan order.
    #[serde(default)]
    pub fabric: Vec<Rail>,
}

/// One bundle in the index.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct IndexHost {
    pub host: String,
    /// The tarball's file name.
    pub bundle: String,
    /// sha256 of the `.tar.gz`.
    pub sha256: String,
    /// sha256 of the uncompressed `.tar` (stable across compressor versions).
    pub tar_sha256: String,
    /// Size of the `.tar.gz` in bytes: run-here.sh copies no more (`--from`: downloads no more).
    #[serde(default)]
    pub size: u64,
    /// Management address, to find a host's bundle when its name is not set yet.
    pub mgmt_ip: String,
    /// The planned MACs of its RoCE ports, for the same purpose.
    pub macs: Vec<String>,
    /// The plan this bundle was made from, when it is not the index's: a bundle kept from an
    /// earlier run (`generate --hosts`, or a host the plan no longer has).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan_sha256: Option<String>,
}

impl IndexHost {
    /// The index entry of `host`'s packed bundle.
    pub(crate) fn new(host: &Host, packed: &Packed) -> Self {
        IndexHost {
            host: host.hostname.to_string(),
            bundle: bundle_name(host),
            sha256: sha256_hex(&packed.tar_gz),
            tar_sha256: packed.tar_sha256.clone(),
            size: packed.tar_gz.len() as u64,
            mgmt_ip: host.mgmt_ip.to_string(),
            macs: host
                .nics
                .iter()
                .filter_map(|n| n.mac.as_ref().map(ToString::to_string))
                .collect(),
            plan_sha256: None,
        }
    }
}

/// The tarball name of a host's bundle.
pub(crate) fn bundle_name(host: &Host) -> String {
    format!("{}.tar.gz", host.hostname)
}

/// The output folder's `SHA256SUMS`: every tarball and the folder's other files that the chain
/// of trust covers (`ansible/…`), sorted by name. `run-here.sh` is not in it: it carries this
/// file's sha256 instead ([`DistContext::sums_sha256`]), so that the one anchor, its own sha256,
/// pins everything.
pub(crate) fn sums(hosts: &[IndexHost], others: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut listed: Vec<(String, String)> = hosts
        .iter()
        .map(|h| (h.bundle.clone(), h.sha256.clone()))
        .collect();
    listed.extend(
        others
            .iter()
            .map(|(name, bytes)| (name.clone(), sha256_hex(bytes))),
    );
    listed.sort();
    listed
        .iter()
        .map(|(name, sum)| format!("{sum}  {name}\n"))
        .collect::<String>()
        .into_bytes()
}

/// `index.json` of the output folder, from the bundles' index entries (in plan order) and the
/// trust anchor.
pub(crate) fn index(
    plan: &Plan,
    hosts: Vec<IndexHost>,
    fabric: Vec<Rail>,
    tool_version: &str,
    plan_sha256: &str,
    run_here_sha256: &str,
) -> Result<Vec<u8>> {
    pretty_json(&Index {
        schema: INDEX_SCHEMA.into(),
        tool_version: tool_version.into(),
        cluster: plan.cluster.cluster_name.to_string(),
        plan_sha256: plan_sha256.into(),
        run_here_sha256: run_here_sha256.into(),
        hosts,
        fabric,
    })
}

/// The output folder's entry point on the hosts, and the trust anchor.
pub(crate) const RUN_HERE: &str = "run-here.sh";

/// The output folder's README: the anchor and how to check it.
pub(crate) const README: &str = "README.txt";

/// What the output folder's own templates see: the cluster, every bundle, and the hosts by
/// the plan's group (Ansible groups).
#[derive(Debug, Serialize)]
pub(crate) struct DistContext<'a> {
    cluster: &'a str,
    hosts: &'a [IndexHost],
    groups: Vec<DistGroup<'a>>,
    ungrouped: Vec<&'a IndexHost>,
    /// The sha256 of the folder's `SHA256SUMS`, which `run-here.sh` carries: set once the files
    /// it lists are rendered.
    pub(crate) sums_sha256: String,
    /// The trust anchor, for the folder's README.txt: set once `run-here.sh` is rendered.
    pub(crate) run_here_sha256: String,
    /// Whether `run-here.sh` is signed (`run-here.sh.sig` beside it).
    pub(crate) signed: bool,
}

/// One Ansible group.
#[derive(Debug, Serialize)]
struct DistGroup<'a> {
    name: String,
    hosts: Vec<&'a IndexHost>,
}

impl<'a> DistContext<'a> {
    /// The context for the bundles `entries` of `plan`.
    pub(crate) fn new(plan: &'a Plan, entries: &'a [IndexHost]) -> Self {
        let mut groups: BTreeMap<String, Vec<&IndexHost>> = BTreeMap::new();
        let mut ungrouped = Vec::new();
        // By name: a scan of the plan per entry is quadratic (0.15 s at 10,000 hosts).
        let group_of: HashMap<&str, &str> = plan
            .hosts
            .iter()
            .filter_map(|h| Some((h.hostname.as_str(), h.group.as_ref()?.as_str())))
            .collect();
        for entry in entries {
            match group_of.get(entry.host.as_str()) {
                Some(g) => groups.entry(ansible_group(g)).or_default().push(entry),
                None => ungrouped.push(entry),
            }
        }
        DistContext {
            cluster: plan.cluster.cluster_name.as_str(),
            hosts: entries,
            groups: groups
                .into_iter()
                .map(|(name, hosts)| DistGroup { name, hosts })
                .collect(),
            ungrouped,
            sums_sha256: String::new(),
            run_here_sha256: String::new(),
            signed: false,
        }
    }
}

/// An Ansible group name for a plan group: letters, digits and `_`, not starting with a digit
/// (`rack-a` → `rack_a`, `1st floor` → `g_1st_floor`, `机架` → `u673au67b6`, so that distinct
/// non-ASCII names stay distinct).
pub(crate) fn ansible_group(group: &str) -> String {
    let name: String = group
        .chars()
        .map(|c| match c {
            c if c.is_ascii_alphanumeric() || c == '_' => c.to_string(),
            c if c.is_ascii() => "_".to_string(),
            c => format!("u{:x}", u32::from(c)),
        })
        .collect();
    if name.starts_with(|c: char| c.is_ascii_digit()) || name.is_empty() {
        format!("g_{name}")
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn ansible_group_names() {
        assert_eq!(super::ansible_group("rack-a"), "rack_a");
        assert_eq!(super::ansible_group("1st floor"), "g_1st_floor");
        assert_eq!(super::ansible_group("机架"), "u673au67b6");
        assert_eq!(super::ansible_group(""), "g_");
    }
}
