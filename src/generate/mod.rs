//! Generation: a checked plan becomes the output folder. Each selected host's files are rendered
//! ([`render`], with [`escape`] for every value that reaches a script), gathered with their
//! manifest ([`bundle`]) and packed into a reproducible tarball ([`archive`]) on every core; the
//! folder's index, checksums and delivery files ([`dist`]) follow, and the whole folder replaces
//! the previous one at once ([`output`]). `hosts.rs` decides which earlier bundles stay;
//! [`verify`] checks a folder or tarball later. Nothing here reads the environment or prints:
//! `cmd/generate.rs` does.

pub(crate) mod archive;
pub(crate) mod bundle;
pub(crate) mod dist;
pub(crate) mod escape;
pub(crate) mod fabric;
mod hosts;
pub(crate) mod output;
pub(crate) mod render;
pub(crate) mod verify;

use std::collections::BTreeSet;
use std::path::Path;

use anyhow::Result;
use rayon::prelude::*;

use crate::digest::sha256_hex;
use crate::plan::model::Plan;
use dist::IndexHost;
use output::Staging;
use render::{Meta, Renderer};

/// The version written into every bundle and result.
pub(crate) const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");

/// What to generate, and where.
pub(crate) struct Options<'a> {
    /// The output folder.
    pub out: &'a Path,
    /// Only these hosts (case-insensitive), or all.
    pub hosts: Option<&'a [String]>,
    /// A customised template folder.
    pub templates: Option<&'a Path>,
    /// Remove the bundles of hosts the plan no longer has.
    pub prune: bool,
    /// The mtime of every archive entry.
    pub mtime: u64,
    /// Signs `run-here.sh` (`--sign KEY`): its bytes to their signature.
    pub sign: Option<Signer<'a>>,
}

/// What signs `run-here.sh` with the site's key (the edge's: it runs openssl).
pub(crate) type Signer<'a> = &'a (dyn Fn(&[u8]) -> Result<Vec<u8>> + Sync);

/// What a run wrote: its report, the bytes written and the notes for the user.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// What `generate --format json` prints.
    pub written: Written,
    /// The number of bundles built.
    pub built: usize,
    /// Bytes written into the folder.
    pub bytes: usize,
    /// Warnings and notes about the bundles kept or removed, one line each.
    pub said: Vec<hosts::Said>,
}

/// Writes the output folder for `plan` (whose identity is `plan_sha256`). `each_host` is called
/// once per bundle written, from any thread, with the number of bundles selected (a progress
/// bar).
pub(crate) fn generate(
    plan: &Plan,
    plan_sha256: &str,
    opts: &Options<'_>,
    each_host: &(dyn Fn(usize) + Sync),
) -> Result<Outcome> {
    let hosts = hosts::select(&plan.hosts, opts.hosts)?;
    let renderer = Renderer::new(opts.templates)?;
    let meta = Meta {
        tool_version: TOOL_VERSION,
        plan_sha256,
    };
    let shared = bundle::shared_entries(renderer.render_shared(plan, &meta)?);
    // The fabric test's pairs come from the whole plan, whichever hosts are built.
    let pairs = fabric::pairs(plan);
    let compressed = archive::Shared::new(&shared)?;
    output::on_signals()?;
    let staging = Staging::new(opts.out)?;
    // Hosts are built, packed and written on every core; each worker holds one bundle at a
    // time. `collect` keeps plan order, so the index does not depend on the scheduling.
    let written: Vec<(IndexHost, usize)> = hosts
        .par_iter()
        .map(|host| {
            let rendered = renderer.render_host(plan, host, pairs.of(host), &meta)?;
            let bundle = bundle::build(rendered, &shared, plan, host, pairs.of(host), &meta)?;
            let packed = archive::pack(&bundle, opts.mtime, &compressed)?;
            let entry = IndexHost::new(host, &packed);
            staging.write(&entry.bundle, &packed.tar_gz)?;
            each_host(hosts.len());
            Ok((entry, packed.tar_gz.len()))
        })
        .collect::<Vec<Result<_>>>()
        .into_iter()
        // The first failure in plan order, whichever thread met it first.
        .collect::<Result<_>>()?;
    let mut bytes: usize = written.iter().map(|(_, n)| n).sum();
    let built: Vec<IndexHost> = written.into_iter().map(|(e, _)| e).collect();
    let previous = hosts::Previous::read(opts.out);
    let merged = hosts::merge(plan, built, &previous, plan_sha256, opts);
    let entries = merged.entries;
    let built_hosts: BTreeSet<String> = hosts.iter().map(|h| h.hostname.to_string()).collect();
    let report = Written {
        schema: GENERATE_SCHEMA,
        cluster: plan.cluster.cluster_name.to_string(),
        plan_sha256: plan_sha256.to_string(),
        run_here_sha256: String::new(),
        signature: None,
        output: opts.out.display().to_string(),
        written: entries
            .iter()
            .filter(|e| built_hosts.contains(&e.host))
            .map(|e| WrittenBundle {
                host: e.host.clone(),
                bundle: e.bundle.clone(),
                sha256: e.sha256.clone(),
            })
            .collect(),
        kept: entries
            .iter()
            .filter(|e| !built_hosts.contains(&e.host))
            .map(|e| e.host.clone())
            .collect(),
        removed: merged.removed,
    };
    // What the previous output owned is replaced, except the bundles kept in the new index.
    let kept: BTreeSet<String> = entries.iter().map(|e| e.bundle.clone()).collect();
    // The chain of trust, made from its end: the Ansible files and the tarballs are listed in
    // SHA256SUMS, whose sha256 run-here.sh carries; run-here.sh's own sha256 (or the site's
    // signature over it) is the anchor the hosts are given by another channel.
    let mut ctx = dist::DistContext::new(plan, &entries);
    let ansible = renderer.render_dist(&render::ANSIBLE_FILES, &ctx)?;
    let sums = dist::sums(&entries, &ansible);
    ctx.sums_sha256 = sha256_hex(&sums);
    let run_here = renderer.render_dist_file(&render::RUN_HERE_SH, &ctx)?;
    let anchor = sha256_hex(&run_here.1);
    let signature = opts.sign.map(|sign| sign(&run_here.1)).transpose()?;
    let signature_file = signature
        .as_ref()
        .map(|_| crate::signature::SIGNATURE.to_string());
    ctx.run_here_sha256.clone_from(&anchor);
    ctx.signed = signature.is_some();
    let readme = renderer.render_dist_file(&render::DIST_README, &ctx)?;
    drop(ctx);
    let index = dist::index(
        plan,
        entries,
        pairs.rails,
        TOOL_VERSION,
        plan_sha256,
        &anchor,
    )?;
    let folder = ansible
        .into_iter()
        .chain([run_here, readme])
        .chain(signature_file.clone().zip(signature))
        .chain([
            (dist::SUMS.to_string(), sums),
            (dist::INDEX.to_string(), index),
        ]);
    for (name, content) in folder {
        staging.write(&name, &content)?;
        bytes += content.len();
    }
    staging.commit(&|name| previous.owned.contains(name) && !kept.contains(name))?;
    Ok(Outcome {
        written: Written {
            run_here_sha256: anchor,
            signature: signature_file,
            ..report
        },
        built: hosts.len(),
        bytes,
        said: merged.said,
    })
}

/// Schema of `generate --format json`.
pub(crate) const GENERATE_SCHEMA: &str = "roce-gen/generate/v1";

/// What `generate --format json` prints.
#[derive(Debug, serde::Serialize)]
pub(crate) struct Written {
    /// `roce-gen/generate/v1`.
    pub schema: &'static str,
    /// The plan's cluster name.
    pub cluster: String,
    /// The plan's identity.
    pub plan_sha256: String,
    /// The trust anchor: the sha256 of the folder's `run-here.sh`.
    pub run_here_sha256: String,
    /// The file of the site's signature over `run-here.sh` (`generate --sign`), when signed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
    /// The output folder.
    pub output: String,
    /// The bundles this run wrote, in plan order.
    pub written: Vec<WrittenBundle>,
    /// Hosts whose earlier bundle stays in the folder.
    pub kept: Vec<String>,
    /// Hosts whose bundle `--prune` removed.
    pub removed: Vec<String>,
}

#[derive(Debug, serde::Serialize)]
pub(crate) struct WrittenBundle {
    pub host: String,
    /// The tarball's file name.
    pub bundle: String,
    /// The tarball's sha256.
    pub sha256: String,
}
