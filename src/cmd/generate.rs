//! `roce-gen generate PLAN [-o DIR] [--hosts NAME,...] [--templates DIR]`: one bundle per host,
//! `index.json` and `SHA256SUMS`, written all at once or not at all. The summary line and the
//! progress bar are the only things here that read the clock.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use std::io::{IsTerminal, Write};

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
    /// Remove the bundles of hosts the plan no longer has.
    pub prune: bool,
    /// `json`: what was written, as one JSON document on stdout.
    pub format: crate::cli::Format,
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
    let built: Vec<IndexHost> = written.into_iter().map(|(e, _)| e).collect();
    let previous = Previous::read(opts.out);
    let merged = merge(plan, built, &previous, &loaded.sha256, opts);
    for line in &merged.said {
        eprintln!("{line}");
    }
    let removed = merged.removed;
    let entries = merged.entries;
    let built_hosts: BTreeSet<String> = hosts.iter().map(|h| h.hostname.to_string()).collect();
    let report = Written {
        schema: GENERATE_SCHEMA,
        cluster: plan.cluster.cluster_name.as_str(),
        plan_sha256: &loaded.sha256,
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
        removed,
    };
    // What the previous output owned is replaced, except the bundles kept in the new index.
    let kept: BTreeSet<String> = entries.iter().map(|e| e.bundle.clone()).collect();
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
    staging.commit(&|name| previous.owned.contains(name) && !kept.contains(name))?;
    let ui = crate::cmd::ui();
    if ui.verbose {
        for b in &report.written {
            eprintln!("wrote {} (sha256 {})", b.bundle, b.sha256);
        }
        for host in &report.kept {
            eprintln!("kept the bundle of {host}");
        }
    }
    if opts.format == crate::cli::Format::Json {
        let mut out = std::io::stdout().lock();
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    }
    if !ui.quiet {
        eprintln!(
            "generated {} bundle{} for cluster {} in {} ({bytes} bytes, {:.2} s)",
            hosts.len(),
            if hosts.len() == 1 { "" } else { "s" },
            plan.cluster.cluster_name,
            opts.out.display(),
            started.elapsed().as_secs_f64()
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Schema of `generate --format json`.
pub const GENERATE_SCHEMA: &str = "roce-gen/generate/v1";

/// What `generate --format json` prints.
#[derive(Debug, serde::Serialize)]
struct Written<'a> {
    schema: &'static str,
    cluster: &'a str,
    plan_sha256: &'a str,
    output: String,
    /// The bundles this run wrote, in plan order.
    written: Vec<WrittenBundle>,
    /// Hosts whose earlier bundle stays in the folder.
    kept: Vec<String>,
    /// Hosts whose bundle `--prune` removed.
    removed: Vec<String>,
}

#[derive(Debug, serde::Serialize)]
struct WrittenBundle {
    host: String,
    bundle: String,
    sha256: String,
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
        let list: Vec<String> = unknown
            .iter()
            .map(|n| match did_you_mean(n, hosts) {
                Some(near) => format!("{n:?} (did you mean {near}?)"),
                None => format!("{n:?}"),
            })
            .collect();
        bail!("--hosts: no host {} in the plan", list.join(", "));
    }
    Ok(hosts
        .iter()
        .filter(|h| wanted.contains(&h.hostname.folded()))
        .collect())
}

/// The plan's host name nearest to `name`, when it is near enough to be a typo.
fn did_you_mean<'p>(name: &str, hosts: &'p [Host]) -> Option<&'p str> {
    // One edit from 4 characters, two from 8: `gpu-0005` finds `gpu-005`; in short names one
    // character is the whole difference (`h9` is not a typo of `h1`).
    let most = match name.chars().count() {
        0..4 => return None,
        4..8 => 1,
        _ => 2,
    };
    hosts
        .iter()
        .map(|h| {
            let distance = strsim::damerau_levenshtein(name, &h.hostname.folded());
            (distance, h.hostname.as_str())
        })
        .filter(|(distance, _)| *distance <= most)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, host)| host)
}

/// The folder's previous output, as its index and checksums describe it.
#[derive(Debug, Default)]
struct Previous {
    /// Its index entries whose tarball is still in the folder.
    entries: Vec<IndexHost>,
    /// The plan its index names.
    plan_sha256: String,
    /// Every file it wrote: what its `SHA256SUMS` lists, its bundles, and those two files.
    owned: BTreeSet<String>,
}

impl Previous {
    fn read(dir: &Path) -> Self {
        let mut owned = BTreeSet::from([INDEX.to_string(), dist::SUMS.to_string()]);
        if let Ok(sums) = std::fs::read_to_string(dir.join(dist::SUMS)) {
            owned.extend(
                sums.lines()
                    .filter_map(|l| l.split_once("  "))
                    .map(|(_, name)| name.to_string()),
            );
        }
        let index = std::fs::read(dir.join(INDEX))
            .ok()
            .and_then(|b| serde_json::from_slice::<Index>(&b).ok());
        let Some(index) = index else {
            return Previous {
                owned,
                ..Previous::default()
            };
        };
        owned.extend(index.hosts.iter().map(|h| h.bundle.clone()));
        // Only plain tarball names in the folder itself, and only those still there.
        let entries = index
            .hosts
            .into_iter()
            .filter(|h| {
                h.bundle.ends_with(".tar.gz")
                    && !h.bundle.contains('/')
                    && !h.bundle.starts_with('.')
                    && dir.join(&h.bundle).is_file()
            })
            .collect();
        Previous {
            entries,
            plan_sha256: index.plan_sha256,
            owned,
        }
    }
}

/// The new index's entries, and what to tell the user about the bundles kept or removed.
struct Merged {
    entries: Vec<IndexHost>,
    said: Vec<String>,
    /// Hosts whose bundle `--prune` removed.
    removed: Vec<String>,
}

/// The bundles just built, in plan order, with those of the previous output kept: hosts of the
/// plan that `--hosts` left out, and hosts the plan no longer has unless `--prune`. A kept
/// bundle made from another plan says so in its entry.
fn merge(
    plan: &crate::model::Plan,
    built: Vec<IndexHost>,
    previous: &Previous,
    plan_sha256: &str,
    opts: &Options<'_>,
) -> Merged {
    let in_plan = |host: &str| {
        plan.hosts
            .iter()
            .any(|h| h.hostname.folded() == host.to_ascii_lowercase())
    };
    let mut by_host: std::collections::BTreeMap<String, IndexHost> = previous
        .entries
        .iter()
        .map(|e| {
            (
                e.host.to_ascii_lowercase(),
                clone_entry(e, &previous.plan_sha256, plan_sha256),
            )
        })
        .collect();
    let mut said = Vec::new();
    let mut removed = Vec::new();
    let gone: Vec<String> = by_host
        .values()
        .filter(|e| !in_plan(&e.host))
        .map(|e| e.host.clone())
        .collect();
    if !gone.is_empty() {
        if opts.prune {
            for host in &gone {
                by_host.remove(&host.to_ascii_lowercase());
            }
            removed.clone_from(&gone);
            said.push(format!(
                "removed the bundles of {} the plan no longer has: {}",
                plural(gone.len(), "host", "hosts"),
                gone.join(", ")
            ));
        } else {
            said.push(format!(
                "warning: kept the bundles of {} the plan no longer has: {} (--prune removes them)",
                plural(gone.len(), "host", "hosts"),
                gone.join(", ")
            ));
        }
    }
    for e in built {
        by_host.insert(e.host.to_ascii_lowercase(), e);
    }
    // Plan order first, then the hosts outside the plan by name.
    let mut entries = Vec::with_capacity(by_host.len());
    for h in &plan.hosts {
        if let Some(e) = by_host.remove(&h.hostname.folded()) {
            entries.push(e);
        }
    }
    entries.extend(by_host.into_values());
    let older = entries.iter().filter(|e| e.plan_sha256.is_some()).count();
    if older > 0 && opts.hosts.is_some() {
        said.push(format!(
            "note: {} in the folder {} made from an earlier plan; their results will show as stale \
             against this one (generate without --hosts to refresh them)",
            plural(older, "bundle", "bundles"),
            if older == 1 { "is" } else { "are" }
        ));
    }
    Merged {
        entries,
        said,
        removed,
    }
}

/// A previous entry, marked with its plan when that is not the new index's.
fn clone_entry(e: &IndexHost, index_plan: &str, plan_sha256: &str) -> IndexHost {
    let made_from = e.plan_sha256.as_deref().unwrap_or(index_plan);
    IndexHost {
        plan_sha256: (made_from != plan_sha256).then(|| made_from.to_string()),
        ..e.clone()
    }
}

/// `1 host`, `3 hosts`.
fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
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
