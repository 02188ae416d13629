//! roce-gen turns a cluster's RoCE plan into per-host configuration bundles.
//!
//! The pipeline, each stage its own module:
//!
//! 1. [`input`] reads a workbook or JSON plan into raw tables of located cells (the only I/O
//!    before output, and the only place calamine is used);
//! 2. [`validate`] applies every rule of the plan format and yields a [`model::Plan`] or a
//!    [`diagnostic::Report`] of every problem with its sheet and cell;
//! 3. the commands in [`cmd`] print, write or (later) render and pack the plan.
//!
//! [`layout`] holds the sheet, column and key tables with their aliases; [`location`] the A1
//! references; [`sample`] the embedded sample plan.

pub mod archive;
pub mod bundle;
pub mod cli;
pub mod cmd;
pub mod diagnostic;
pub mod digest;
pub mod dist;
pub mod escape;
pub mod ingest;
pub mod input;
pub mod layout;
pub mod location;
pub mod model;
pub mod output;
pub mod render;
pub mod sample;
pub mod validate;
pub mod verify;

use std::process::ExitCode;

/// Runs one command line. `Ok` carries the exit status for a command that ran (0 or 1); `Err`
/// means the command could not run (exit 2).
pub fn run(cli: cli::Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        cli::Command::Generate {
            plan,
            output,
            hosts,
            templates,
        } => {
            let opts = cmd::generate::Options {
                out: &output,
                hosts: hosts.as_deref(),
                templates: templates.as_deref(),
                mtime: cmd::generate::mtime_from_env()?,
            };
            cmd::generate::run(&plan, &opts)
        }
        cli::Command::Ingest {
            paths,
            plan,
            format,
            output,
        } => cmd::ingest::run(&cmd::ingest::Options {
            paths: &paths,
            plan: plan.as_deref(),
            format,
            output: output.as_deref(),
        }),
        cli::Command::Verify { paths } => cmd::verify::run(&paths),
        cli::Command::Validate { plan, format } => cmd::validate::run(&plan, format),
        cli::Command::Plan { plan } => cmd::plan::run(&plan),
        cli::Command::Sample { output, force } => cmd::sample::run(&output, force),
    }
}
