//! `roce-gen generate PLAN [-o DIR] [--hosts NAME,...] [--templates DIR]`: one bundle per host,
//! `index.json` and `SHA256SUMS`, written all at once or not at all.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::archive::{self, Packed};
use crate::cli::PlanArg;
use crate::cmd::{load, print_diagnostics};
use crate::dist::{self, INDEX, Index};
use crate::model::Host;
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
        Err(report) => {
            print_diagnostics(&loaded.name, report)?;
            eprintln!(
                "error: {}: invalid plan: {}; nothing was written",
                loaded.name,
                report.summary()
            );
            return Ok(ExitCode::from(1));
        }
    };
    print_diagnostics(&loaded.name, report)?;
    let hosts = select(&plan.hosts, opts.hosts)?;
    let renderer = Renderer::new(opts.templates)?;
    let meta = Meta {
        tool_version: TOOL_VERSION,
        plan_sha256: &loaded.sha256,
    };
    let shared = renderer.render_shared(&meta)?;
    let packed: Vec<(&Host, Packed)> = hosts
        .into_iter()
        .map(|host| {
            let bundle = crate::bundle::build(&renderer, &shared, plan, host, &meta)?;
            Ok((host, archive::pack(&bundle, opts.mtime)?))
        })
        .collect::<Result<_>>()?;
    let files = dist::files(plan, &packed, TOOL_VERSION, &loaded.sha256)?;
    let stale = previous_bundles(opts.out);
    crate::output::replace_dir_files(opts.out, &files, &stale)?;
    let bytes: usize = files.values().map(Vec::len).sum();
    eprintln!(
        "generated {} bundle{} for cluster {} in {} ({bytes} bytes)",
        packed.len(),
        if packed.len() == 1 { "" } else { "s" },
        plan.cluster.cluster_name,
        opts.out.display()
    );
    Ok(ExitCode::SUCCESS)
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

/// Bundles the folder's previous index lists, so that a host dropped from the plan does not
/// leave its old bundle behind. Only plain `*.tar.gz` file names are taken from it.
fn previous_bundles(dir: &Path) -> Vec<String> {
    let Ok(bytes) = std::fs::read(dir.join(INDEX)) else {
        return Vec::new();
    };
    let Ok(index) = serde_json::from_slice::<Index>(&bytes) else {
        return Vec::new();
    };
    index
        .hosts
        .into_iter()
        .map(|h| h.bundle)
        .filter(|b| b.ends_with(".tar.gz") && !b.contains('/') && !b.starts_with('.'))
        .collect()
}

/// The archive mtime: `SOURCE_DATE_EPOCH` when set (strictly a whole number of seconds), else a
/// fixed default. Read once, here, so the rest of the pipeline reads no environment.
pub fn mtime_from_env() -> Result<u64> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Err(std::env::VarError::NotPresent) => Ok(archive::DEFAULT_MTIME),
        Err(e) => Err(e).context("SOURCE_DATE_EPOCH"),
        Ok(v) if v.trim().is_empty() => Ok(archive::DEFAULT_MTIME),
        Ok(v) => v.parse::<u64>().with_context(|| {
            format!("SOURCE_DATE_EPOCH {v:?} is not a whole number of seconds since 1970")
        }),
    }
}
