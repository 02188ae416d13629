//! `roce-gen ingest PATH... [--plan PLAN] [--format FMT] [-o FILE]`: the results the bundles
//! wrote become one cluster report. Loads the plan, collects and reads the files
//! (`ingest::collect`), builds the report (`ingest::verdict`), renders it and prints or writes it
//! atomically. Exit 0 when every planned host passed, 1 when a host failed, is missing or stale,
//! a file is unreadable or the plan is invalid, 2 when ingest could not run. `--format prometheus
//! -o FILE` exits 0 once the file is written whatever the verdict: the file is a node_exporter
//! textfile a systemd timer refreshes, the verdict is in it (`roce_gen_ok`), and a failed unit
//! would only report the same failure a second time, as a broken timer.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use crate::cli::{PlanArg, ReportFormat};
use crate::cmd::{console, invalid_plan, load};
use crate::ingest::intake::{PlanView, PlannedHost, PlannedPort};
use crate::ingest::report::{ClusterReport, Require};
use crate::ingest::{intake, render, verdict};

/// What the command line asked for.
#[derive(Debug)]
pub(crate) struct Options<'a> {
    /// Result files, folders and archives.
    pub paths: &'a [PathBuf],
    /// The plan the bundles were made from.
    pub plan: Option<&'a Path>,
    /// The output format.
    pub format: ReportFormat,
    /// Where to write the report instead of stdout.
    pub output: Option<&'a Path>,
    /// What a host must show to be ready.
    pub require: Require,
}

/// Runs `ingest`: exit 0 when the report passes, 1 when it does not, except that a Prometheus
/// file written with `-o` is exit 0 (its `roce_gen_ok` carries the verdict).
pub(crate) fn run(opts: &Options<'_>) -> Result<ExitCode> {
    let plan = match opts.plan {
        Some(path) => {
            let loaded = load(&PlanArg {
                path: Some(path.to_path_buf()),
                sample: false,
            })?;
            match &loaded.outcome {
                Ok((plan, _warnings)) => Some(PlanView {
                    file: loaded.name.clone(),
                    sha256: loaded.sha256.clone(),
                    file_sha256: loaded.file_sha256.clone(),
                    cluster: plan.cluster.cluster_name.to_string(),
                    hosts: plan
                        .hosts
                        .iter()
                        .map(|h| PlannedHost {
                            name: h.hostname.to_string(),
                            mgmt_ip: h.mgmt_ip.to_string(),
                            ports: h
                                .nics
                                .iter()
                                .map(|n| PlannedPort {
                                    ib_dev: n.ib_dev.to_string(),
                                    rail: crate::generate::fabric::rail_of(n),
                                    switch: n.switch.as_ref().map(|s| {
                                        n.switch_port
                                            .as_ref()
                                            .map_or_else(|| s.to_string(), |p| format!("{s} {p}"))
                                    }),
                                })
                                .collect(),
                        })
                        .collect(),
                }),
                Err(report) => return invalid_plan(&loaded.name, report, Some("no report made")),
            }
        }
        None => None,
    };

    // Files are read and folded in on every core as they are found; only the newest result of
    // each host and run kind stays in memory.
    // Ingest's clock, against results that claim to have finished after it; a clock that cannot
    // be read flags none.
    let now =
        jiff::Timestamp::try_from(std::time::SystemTime::now()).unwrap_or(jiff::Timestamp::MAX);
    let taking = intake::Taking::new(plan.as_ref(), now);
    crate::ingest::collect::collect(opts.paths, &|found| taking.add(found))?;
    let report = verdict::build(plan.as_ref(), taking.finish()?, opts.require);

    let to_terminal = opts.output.is_none() && std::io::stdout().is_terminal();
    let text = match opts.format {
        ReportFormat::Text => render::text::render(&report, crate::cmd::ui().colored(to_terminal)),
        ReportFormat::Json => crate::cmd::console::json(&render::json::document(&report))?,
        ReportFormat::Markdown => render::markdown::render(&report),
        ReportFormat::Junit => render::junit::render(&report)?,
        ReportFormat::Prometheus => render::prometheus::render(&report),
        ReportFormat::Html => render::html::render(&report)?,
    };

    match opts.output {
        Some(path) => {
            crate::files::write_file_atomic(path, text.as_bytes(), true)
                .with_context(|| format!("{}: could not write the report", path.display()))?;
            tell_stderr(&report, opts.format);
            if !crate::cmd::ui().quiet {
                println!(
                    "wrote {}: {}",
                    render::clean(&path.display().to_string()),
                    render::hosts_line(&report.totals)
                );
            }
        }
        None => {
            if opts.format != ReportFormat::Text {
                tell_stderr(&report, opts.format);
            }
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
    }
    tell_files(&report);
    let verdict_in_file = opts.output.is_some() && opts.format == ReportFormat::Prometheus;
    let ok = report.ok;
    // The process ends right after this: freeing every host's report one allocation at a
    // time would take a tenth of the run on a large cluster, for nothing.
    std::mem::forget(report);
    std::mem::forget(text);
    Ok(if ok || verdict_in_file {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// When the report goes to a file or is for a machine, the unreadable files still reach the
/// person running ingest, on stderr (the text report lists them itself).
fn tell_stderr(report: &ClusterReport, format: ReportFormat) {
    for f in &report.problems {
        console::error(&format!("{}: {}", f.path, f.reason));
    }
    if format != ReportFormat::Text && report.hosts.is_empty() && report.problems.is_empty() {
        console::error("no result files under the paths given");
    }
}

/// With `-v`, every result read and what became of it, on stderr: the one each host's state
/// and runs come from, and each superseded one with why (the text report counts them).
fn tell_files(report: &ClusterReport) {
    if !crate::cmd::ui().verbose {
        return;
    }
    for h in &report.hosts {
        for run in &h.runs {
            console::detail(&format!("used: {}: {} of {}", run.path, run.name, h.host));
        }
    }
    for f in &report.superseded {
        console::detail(&format!("superseded: {}: {}", f.path, f.reason));
    }
}
