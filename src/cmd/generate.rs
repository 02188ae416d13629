//! `roce-gen generate PLAN [-o DIR] [--hosts NAME,...] [--templates DIR]`: one bundle per host,
//! `index.json` and `SHA256SUMS`, written all at once or not at all. The summary line and the
//! progress bar are the only things here that read the clock.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use rayon::prelude::*;

use crate::archive;
use crate::cli::PlanArg;
use crate::cmd::{invalid_plan, load, print_diagnostics};
use crate::dist::{self, INDEX, Index, IndexHost};
use crate::model::Host;
use crate::output::Staging;
use crate::render::{Meta, Renderer};

/// The version written into every bundle and result.
pub const TOOL_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Options of `generate`.
#[derive(Debug)]
pub struct Options<'a> {
    /// The output folder.
    pub out: &'a Path,
    /// Only these hosts (case-insensitive), or all.
    pub hosts: Option<&'a [String]>,
    /// A customised template folder.
    pub templates: Option<&'a Path>,
    /// The mtime of every archive entry.
    pub mtime: u64,
}

/// Runs `generate`: exit 0 with the bundles written, 1 for an invalid plan (nothing written).
pub fn run(arg: &PlanArg, opts: &Options<'_>) -> Result<ExitCode> {
    let loaded = load(arg)?;
    let (plan, report) = match &loaded.outcome {
        Ok(ok) => ok,
        Err(report) => return invalid_plan(&loaded.name, report, Some("nothing was written")),
    };
    print_diagnostics(&loaded.name, report)?;
    let started = std::time::Instant::now();
    let hosts = select(&plan.hosts, opts.hosts)?;
    let renderer = Renderer::new(opts.templates)?;
    let meta = Meta {
        tool_version: TOOL_VERSION,
        plan_sha256: &loaded.sha256,
    };
    let shared = crate::bundle::shared_entries(renderer.render_shared(plan, &meta)?);
    let compressed = archive::Shared::new(&shared)?;
    crate::output::on_signals()?;
    let staging = Staging::new(opts.out)?;
    let progress = progress_bar(hosts.len());
    // Hosts are built, packed and written on every core; each worker holds one bundle at a
    // time. `collect` keeps plan order, so the index does not depend on the scheduling.
    let written: Vec<(IndexHost, usize)> = hosts
        .par_iter()
        .map(|host| {
            let bundle = crate::bundle::build(&renderer, &shared, plan, host, &meta)?;
            let packed = archive::pack(&bundle, opts.mtime, &compressed)?;
            let entry = IndexHost::new(host, &packed);
            staging.write(&entry.bundle, &packed.tar_gz)?;
            progress.inc(1);
            Ok((entry, packed.tar_gz.len()))
        })
        .collect::<Vec<Result<_>>>()
        .into_iter()
        // The first failure in plan order, whichever thread met it first.
        .collect::<Result<_>>()?;
    progress.finish_and_clear();
    let mut bytes: usize = written.iter().map(|(_, n)| n).sum();
    let entries: Vec<IndexHost> = written.into_iter().map(|(e, _)| e).collect();
    // The stick's run-here.sh and the Ansible files: they carry the tarballs' checksums.
    let others: Vec<(String, Vec<u8>)> = renderer
        .render_dist(&dist::DistContext::new(plan, &entries))?
        .into_iter()
        .map(|r| (r.name.to_string(), r.text.into_bytes()))
        .collect();
    let index = dist::index_files(plan, entries, &others, TOOL_VERSION, &loaded.sha256)?;
    for (name, content) in others
        .iter()
        .map(|(n, c)| (n.clone(), c.clone()))
        .chain(index)
    {
        staging.write(&name, &content)?;
        bytes += content.len();
    }
    let owned = previous_output(opts.out);
    staging.commit(&|name| owned.contains(name))?;
    eprintln!(
        "generated {} bundle{} for cluster {} in {} ({bytes} bytes, {:.2} s)",
        hosts.len(),
        if hosts.len() == 1 { "" } else { "s" },
        plan.cluster.cluster_name,
        opts.out.display(),
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// A progress bar on stderr for long runs, only when stderr is a terminal.
fn progress_bar(len: usize) -> ProgressBar {
    if len < 200 || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} bundles, {eta} left") {
        bar.set_style(style);
    }
    bar
}

/// The hosts `--hosts` names, in plan order; an unknown name is an error.
fn select<'p>(hosts: &'p [Host], names: Option<&[String]>) -> Result<Vec<&'p Host>> {
    let Some(names) = names else {
        return Ok(hosts.iter().collect());
    };
    let wanted: Vec<String> = names
        .iter()
        .map(|n| n.trim().to_ascii_lowercase())
        .filter(|n| !n.is_empty())
        .collect();
    let unknown: Vec<&String> = wanted
        .iter()
        .filter(|w| !hosts.iter().any(|h| h.hostname.folded() == **w))
        .collect();
    if !unknown.is_empty() {
        let list: Vec<String> = unknown.iter().map(|n| format!("{n:?}")).collect();
        bail!("--hosts: no host {} in the plan", list.join(", "));
    }
    Ok(hosts
        .iter()
        .filter(|h| wanted.contains(&h.hostname.folded()))
        .collect())
}

/// The files of the folder's previous output: what its `SHA256SUMS` lists, its index's
/// bundles, and those two files. The rest of the folder (results collected there, notes) is the
/// user's and is kept.
fn previous_output(dir: &Path) -> BTreeSet<String> {
    let mut owned = BTreeSet::from([INDEX.to_string(), dist::SUMS.to_string()]);
    if let Ok(sums) = std::fs::read_to_string(dir.join(dist::SUMS)) {
        owned.extend(
            sums.lines()
                .filter_map(|l| l.split_once("  "))
                .map(|(_, name)| name.to_string()),
        );
    }
    if let Ok(index) = std::fs::read(dir.join(INDEX))
        .map_err(anyhow::Error::from)
        .and_then(|b| Ok(serde_json::from_slice::<Index>(&b)?))
    {
        owned.extend(index.hosts.into_iter().map(|h| h.bundle));
    }
    owned
}

/// The archive mtime: `SOURCE_DATE_EPOCH` when set (strictly a whole number of seconds, at most
/// [`archive::MAX_MTIME`]), else a fixed default. `validate` checks it too, so that it accepts
/// only what `generate` can write. Read once, here, so the rest of the pipeline reads no environment.
pub fn mtime_from_env() -> Result<u64> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Err(std::env::VarError::NotPresent) => Ok(archive::DEFAULT_MTIME),
        Err(e) => Err(e).context("SOURCE_DATE_EPOCH"),
        Ok(v) if v.trim().is_empty() => Ok(archive::DEFAULT_MTIME),
        Ok(v) => {
            let secs = v.parse::<u64>().with_context(|| {
                format!("SOURCE_DATE_EPOCH {v:?} is not a whole number of seconds since 1970")
            })?;
            if secs > archive::MAX_MTIME {
                bail!(
                    "SOURCE_DATE_EPOCH {secs} is past {} (the year 2242), the latest time a tar \
                     header holds in the form every tar reads",
                    archive::MAX_MTIME
                );
            }
            Ok(secs)
        }
    }
}
