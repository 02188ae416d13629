//! roce-gen turns a GPU cluster's network plan into per-host RoCE configuration bundles, and the
//! results those bundles write into a cluster report. Three pipelines, each a folder, pure
//! between its two ends:
//!
//! - [`plan`]: a workbook or JSON plan is read into located cells ([`plan::input`], the only
//!   place calamine is used, behind a guard that bounds what a workbook may claim), checked
//!   against every rule of the plan format ([`plan::validate`]) and becomes a [`plan::model::Plan`]
//!   or a report of every problem with its sheet and cell ([`plan::diagnostic`]).
//! - [`generate`]: each host's files are rendered from the templates ([`generate::render`]),
//!   gathered into a bundle with its manifest ([`generate::bundle`]), packed into a reproducible
//!   tarball ([`generate::archive`]), indexed with the folder's delivery files
//!   ([`generate::dist`]) and written as a whole into the output folder
//!   ([`generate::output`]); [`generate::verify`] checks such a folder later.
//! - [`ingest`]: result files are collected, parsed, given a verdict per host and rendered in
//!   the report formats; [`ingest::metrics`] names the Prometheus series that [`dashboard`]
//!   charts.
//!
//! [`cmd`] holds one thin module per subcommand: it reads the command line's files and the
//! environment, runs a pipeline and prints. [`files`] reads and writes whole files safely,
//! [`digest`] and [`text`] are shared helpers, [`config`] reads `roce-gen.toml`.

pub mod cli;
pub(crate) mod cmd;
pub(crate) mod config;
pub(crate) mod dashboard;
pub(crate) mod digest;
pub(crate) mod files;
pub(crate) mod generate;
pub(crate) mod ingest;
pub(crate) mod plan;
pub(crate) mod text;

/// What the integration and property tests reach past the command line: not an API, and not
/// kept stable.
#[doc(hidden)]
pub mod testing {
    pub use crate::config::{Kind as ConfigKind, parse as parse_config};
    pub use crate::digest::sha256_hex;
    pub use crate::generate::verify::read_tarball;
    pub use crate::ingest::metrics::{SERIES_PER_HOST, SERIES_PER_NIC};
    pub use crate::ingest::result::parse as parse_result;
    pub use crate::plan::input::{Format, read_plan_bytes};
    pub use crate::plan::layout::{CLUSTER, KEYS, NICS, SERVERS, SHEETS};
    pub use crate::plan::validate::validate;

    /// Each DCQCN parameter's sysfs file under the netdev, `ecn/roce_rp/NAME` or
    /// `ecn/roce_np/NAME`.
    pub fn dcqcn_files() -> Vec<String> {
        crate::plan::model::DCQCN_PARAMS
            .iter()
            .map(|p| format!("{}/{}", p.point.dir(), p.name))
            .collect()
    }
}

use std::process::ExitCode;

/// Prints why a command could not run as one `error:` line on stderr, escaped (a path or a
/// value in the chain may hold control characters), its label coloured when asked.
pub fn print_error(err: &anyhow::Error) {
    cmd::console::error(&format!("{err:#}"));
}

/// Runs one command line. `Ok` carries the exit status for a command that ran (0 or 1); `Err`
/// means the command could not run (exit 2).
pub fn run(cli: cli::Cli) -> anyhow::Result<ExitCode> {
    // First, so that the config file's warnings are printed as the flags say.
    cmd::set_ui(cmd::Ui {
        quiet: cli.quiet,
        verbose: cli.verbose,
        color: cli.color,
    });
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
            let opts = generate::Options {
                out: &output,
                hosts: hosts.as_deref(),
                templates: templates.as_deref(),
                prune,
                mtime: cmd::generate::mtime_from_env()?,
            };
            cmd::generate::run(&plan, &opts, format)
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
            let from_config = plan.path.is_none() && !plan.sample;
            let plan = cmd::resolve_plan(plan, config)?;
            cmd::validate::run(&plan, format, strict, from_config)
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
