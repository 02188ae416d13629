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
//!   charts; [`alerts`] derives Prometheus alerting rules from the plan over the series of the
//!   bundles' health runs.
//!
//! [`cmd`] holds one thin module per subcommand: it reads the command line's files and the
//! environment, runs a pipeline and prints. [`files`] reads and writes whole files safely,
//! [`digest`] and [`text`] are shared helpers, [`config`] reads `roce-gen.toml`.

pub(crate) mod alerts;
pub mod cli;
pub(crate) mod cmd;
pub(crate) mod config;
pub(crate) mod dashboard;
pub(crate) mod digest;
pub(crate) mod files;
pub(crate) mod generate;
pub(crate) mod ingest;
pub(crate) mod plan;
pub(crate) mod signature;
pub(crate) mod text;

/// What the integration and property tests reach past the command line: not an API, and not
/// kept stable.
#[doc(hidden)]
pub mod testing {
    pub use crate::config::{Kind as ConfigKind, parse as parse_config};
    pub use crate::digest::sha256_hex;
    pub use crate::generate::verify::read_tarball;
    pub use crate::ingest::metrics::{
        MAX_FABRIC_PORTS, SERIES_PER_FABRIC_PORT, SERIES_PER_HOST, SERIES_PER_NIC,
    };
    pub use crate::ingest::result::parse as parse_result;
    pub use crate::plan::input::{Format, read_plan_bytes};
    pub use crate::plan::layout::{CLUSTER, KEYS, NICS, SERVERS, SHEETS};
    pub use crate::plan::validate::validate;

    /// Each command's exit status as its manual page words it: (`roce-gen` or the subcommand,
    /// the words), the README's Commands table's last column.
    pub fn man_exit_statuses() -> Vec<(&'static str, &'static str)> {
        crate::cmd::man::EXTRAS
            .iter()
            .map(|e| (e.command, e.exit))
            .collect()
    }

    /// The files every bundle carries as they are in `templates/` (`Source::Plain`): each as
    /// (its name in the bundle, its path under `templates/`). The golden case checks them
    /// against the sources instead of storing them.
    pub fn plain_shared_files() -> Vec<(&'static str, &'static str)> {
        use crate::generate::render::{SHARED_FILES, Source};
        SHARED_FILES
            .iter()
            .filter(|f| f.source == Source::Plain)
            .map(|f| (f.file_name(), f.id))
            .collect()
    }

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
    use cli::Command;
    let ctx = cmd::Context::new(&cli)?;
    match cli.command {
        Command::Generate(args) => cmd::generate::run(&ctx, args),
        Command::Validate(args) => cmd::validate::run(&ctx, args),
        Command::Plan(args) => cmd::plan::run(&ctx, args),
        Command::Dashboard(args) => cmd::dashboard::run(&ctx, args),
        Command::Alerts(args) => cmd::alerts::run(&ctx, args),
        Command::Ingest(args) => cmd::ingest::run(&cmd::ingest::Options {
            paths: &args.paths,
            plan: args.plan.as_deref(),
            format: args.format,
            output: args.output.as_deref(),
            require: args.require,
        }),
        Command::Verify(args) => cmd::verify::run(&args),
        Command::Sample(args) => cmd::sample::run(&args.output, args.force),
        Command::Completions(args) => cmd::completions::run(args.shell),
        Command::Man(args) => cmd::man::run(args.subcommand.as_deref(), args.dir.as_deref()),
    }
}
