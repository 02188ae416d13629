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
pub mod config;
pub mod dashboard;
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
pub mod text;
pub mod validate;
pub mod verify;

use std::process::ExitCode;

/// Runs one command line. `Ok` carries the exit status for a command that ran (0 or 1); `Err`
/// means the command could not run (exit 2).
pub fn run(cli: cli::Cli) -> anyhow::Result<ExitCode> {
    // The config is read by the commands that use it; a `--config` that names no file is an
    // error whatever the command.
    let uses_config = matches!(
        cli.command,
        cli::Command::Generate { .. }
            | cli::Command::Validate { .. }
            | cli::Command::Plan { .. }
            | cli::Command::Dashboard { .. }
    );
    let config = if uses_config || cli.config.is_some() {
        cmd::read_config(cli.config.as_deref())?
    } else {
        None
    };
    let config = config.as_ref();
    cmd::set_ui(cmd::Ui {
        quiet: cli.quiet,
        verbose: cli.verbose,
        color: cli.color,
    });
    match cli.command {
        cli::Command::Generate {
            plan,
            output,
            hosts,
            templates,
            prune,
            format,
        } => {
            let plan = cmd::resolve_plan(plan, config)?;
            // The command line wins over the config file.
            let output = output
                .or_else(|| config.and_then(|c| c.output_dir.clone()))
                .unwrap_or_else(|| "dist".into());
            let opts = cmd::generate::Options {
                out: &output,
                hosts: hosts.as_deref(),
                templates: templates.as_deref(),
                prune,
                format,
                mtime: cmd::generate::mtime_from_env()?,
            };
            cmd::generate::run(&plan, &opts)
        }
        cli::Command::Ingest {
            paths,
            plan,
            format,
            output,
            require,
        } => cmd::ingest::run(&cmd::ingest::Options {
            paths: &paths,
            plan: plan.as_deref(),
            format,
            output: output.as_deref(),
            require,
        }),
        cli::Command::Verify { paths, format } => cmd::verify::run(&paths, format),
        cli::Command::Validate {
            plan,
            format,
            strict,
        } => {
            // What generate would refuse, validate refuses too.
            cmd::generate::mtime_from_env()?;
            cmd::validate::run(&cmd::resolve_plan(plan, config)?, format, strict)
        }
        cli::Command::Plan { plan } => cmd::plan::run(&cmd::resolve_plan(plan, config)?),
        cli::Command::Dashboard {
            output,
            push,
            datasource_uid,
            grafana_url,
            folder,
            insecure_http,
        } => {
            let grafana = config.map(|c| c.grafana.clone()).unwrap_or_default();
            cmd::dashboard::run(&cmd::dashboard::Options {
                output: output.as_deref(),
                push,
                datasource_uid: datasource_uid.or(grafana.datasource_uid),
                url: grafana_url.or(grafana.url),
                api_key: grafana.api_key,
                api_key_file: grafana.api_key_file,
                insecure_http,
                folder: folder.or(grafana.folder),
                config_file: config.map(|c| c.file.clone()),
            })
        }
        cli::Command::Sample { output, force } => cmd::sample::run(&output, force),
        cli::Command::Completions { shell } => {
            let mut command = <cli::Cli as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut command, "roce-gen", &mut script);
            let mut script = String::from_utf8_lossy(&script).into_owned();
            if shell == clap_complete::Shell::Bash {
                // clap_complete spells the state of a hyphenated program's subcommands two ways
                // (its issue 6421): without this, nothing after `roce-gen ingest` completes.
                script = script.replace("roce__subcmd__gen", "roce__gen");
            }
            std::io::Write::write_all(&mut std::io::stdout(), script.as_bytes())?;
            Ok(std::process::ExitCode::SUCCESS)
        }
        cli::Command::Man { subcommand, dir } => {
            cmd::man::run(subcommand.as_deref(), dir.as_deref())
        }
    }
}
