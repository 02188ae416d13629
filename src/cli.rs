//! The command line (the README's Commands section), as clap derive types. Parsing only; the work
//! is in `cmd`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::ingest::report::Require;

/// Turns a GPU cluster's RoCE plan (the AID workbook) into per-host NIC configuration bundles,
/// and the results those bundles write into a cluster report.
#[derive(Debug, Parser)]
#[command(name = "roce-gen", version, about, max_term_width = 100)]
pub struct Cli {
    /// The config file (roce-gen.toml, or EasyRoCE's config.ini); by default roce-gen.toml,
    /// else config.ini, in the working folder, if there is one.
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Say less: only errors, warnings and what was asked for (the report, the JSON).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Say more: generate lists every bundle written, verify every file it checked, ingest
    /// every result read and what became of it, man --dir every page written.
    #[arg(short, long, global = true)]
    pub verbose: bool,
    /// Colour in console output: auto (a terminal, and no NO_COLOR), always or never.
    #[arg(long, global = true, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Write one self-contained bundle per host, with index.json and SHA256SUMS.
    Generate(GenerateArgs),
    /// Check a plan and report every problem with its sheet and cell.
    Validate(ValidateArgs),
    /// Print the normalized plan as JSON (which roce-gen also accepts as a plan).
    Plan(PlanArgs),
    /// Turn collected result files (folders, .tar.gz archives) into a cluster report.
    Ingest(IngestArgs),
    /// Check bundles (tarballs or folders) and output folders against their checksums.
    Verify(VerifyArgs),
    /// Write a Grafana dashboard of the metrics `ingest` exports; --push uploads it.
    Dashboard(DashboardArgs),
    /// Write Prometheus alerting rules for the plan's cluster over the health runs' series.
    Alerts(AlertsArgs),
    /// Print a shell completion script (bash, zsh, fish, elvish or powershell) to stdout.
    Completions(CompletionsArgs),
    /// Print roce-gen(1), or SUBCOMMAND's page, on stdout (roff); --dir writes every page.
    Man(ManArgs),
    /// Write a sample plan workbook to start from.
    Sample(SampleArgs),
}

/// The arguments of `roce-gen generate`.
#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// The plan to generate from.
    #[command(flatten)]
    pub plan: PlanArg,
    /// The output folder (replaced as a whole; files in it that are not roce-gen's are
    /// kept; never the working folder or one that holds it); default: the config's output
    /// folder, else dist.
    #[arg(short, long, value_name = "DIR")]
    pub output: Option<PathBuf>,
    /// Only these hosts (comma-separated); the other bundles in the folder are kept.
    #[arg(long, value_name = "NAME,...", value_delimiter = ',')]
    pub hosts: Option<Vec<String>>,
    /// Remove the bundles of hosts the plan no longer has (they are kept, with a warning,
    /// otherwise); lists what it removed.
    #[arg(long)]
    pub prune: bool,
    /// `json` prints what was written as one JSON document on stdout.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// A customised copy of the templates folder; files it lacks come from the built-in set.
    #[arg(long, value_name = "DIR")]
    pub templates: Option<PathBuf>,
    /// Sign run-here.sh with this private key (PEM, RSA or EC; read by the system's openssl,
    /// which asks for its passphrase or reads ROCE_GEN_KEY_PASSPHRASE): writes run-here.sh.sig,
    /// which hosts check with the public key (`openssl dgst -sha256 -verify`).
    #[arg(long, value_name = "KEY")]
    pub sign: Option<PathBuf>,
}

/// The arguments of `roce-gen validate`.
#[derive(Debug, Args)]
pub struct ValidateArgs {
    /// The plan to check.
    #[command(flatten)]
    pub plan: PlanArg,
    /// How to print the diagnostics.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// Warnings are errors (exit 1): for CI that keeps plans clean.
    #[arg(long)]
    pub strict: bool,
}

/// The arguments of `roce-gen plan`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The plan to print.
    #[command(flatten)]
    pub plan: PlanArg,
}

/// The arguments of `roce-gen ingest`.
#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Result files, folders holding them (searched recursively) and .tar.gz archives.
    #[arg(value_name = "PATH", required = true)]
    pub paths: Vec<PathBuf>,
    /// The plan the bundles were generated from: planned hosts without a result are
    /// missing, results of other plans stale, other hosts unplanned.
    #[arg(long, value_name = "PLAN")]
    pub plan: Option<PathBuf>,
    /// The report format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Write the report to FILE (replaced atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// What a host must show to be ready: `configured` (an apply passed, or a clean
    /// precheck after one) or `prechecked` (a clean precheck is enough, as before delivery).
    #[arg(long, value_enum, default_value_t = Require::Configured)]
    pub require: Require,
}

/// The arguments of `roce-gen verify`.
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// Tarballs, unpacked bundle folders, or output folders of `generate`.
    #[arg(value_name = "DIR_OR_TARBALL", required = true)]
    pub paths: Vec<PathBuf>,
    /// `json` prints every path with its problems as one JSON document.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub format: Format,
    /// The trust anchor `generate` printed (the sha256 of run-here.sh): an output folder's
    /// run-here.sh must have it.
    #[arg(long, value_name = "SHA256")]
    pub anchor: Option<String>,
    /// The site's public key (PEM): an output folder's run-here.sh.sig must be run-here.sh's
    /// signature by it (checked with the system's openssl).
    #[arg(long, value_name = "FILE")]
    pub public_key: Option<PathBuf>,
}

/// The arguments of `roce-gen alerts`.
#[derive(Debug, Args)]
pub struct AlertsArgs {
    /// The plan the rules are derived from.
    #[command(flatten)]
    pub plan: PlanArg,
    /// Write the rules to FILE (replaced atomically) instead of stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The arguments of `roce-gen dashboard`.
#[derive(Debug, Args)]
pub struct DashboardArgs {
    /// Write the dashboard JSON to FILE (replaced atomically); without -o and --push it goes
    /// to stdout.
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Upload it through Grafana's HTTP API (needs Grafana's URL and an API key: the config's,
    /// its key file's, or ROCE_GEN_GRAFANA_API_KEY's).
    #[arg(long)]
    pub push: bool,
    /// The uid of the Prometheus data source; default: the config's (prometheus_uid), else a
    /// data source picked on the dashboard.
    #[arg(long, value_name = "UID")]
    pub datasource_uid: Option<String>,
    /// Grafana's URL; default: the config's (GRAFANA_URL).
    #[arg(long, value_name = "URL")]
    pub grafana_url: Option<String>,
    /// The Grafana folder to push into (created if missing); default: the config's
    /// (DIRECTORY_NAME), else Grafana's General folder.
    #[arg(long, value_name = "NAME")]
    pub folder: Option<String>,
    /// Send the API key over plain http to another machine (without it, plain http is only
    /// for Grafana on this machine: localhost, 127.0.0.0/8, ::1).
    #[arg(long)]
    pub insecure_http: bool,
}

/// The arguments of `roce-gen completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// The arguments of `roce-gen man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The subcommand whose page to print; without it, roce-gen(1).
    #[arg(value_name = "SUBCOMMAND", conflicts_with = "dir")]
    pub subcommand: Option<String>,
    /// Write every page into DIR instead: roce-gen.1 and one roce-gen-SUBCOMMAND.1 per
    /// subcommand.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
}

/// The arguments of `roce-gen sample`.
#[derive(Debug, Args)]
pub struct SampleArgs {
    /// Where to write it.
    #[arg(
        short,
        long,
        value_name = "FILE",
        default_value = "roce-plan-sample.xlsx"
    )]
    pub output: PathBuf,
    /// Replace the file if it exists.
    #[arg(long)]
    pub force: bool,
}

/// A plan file, or the embedded sample plan. Without either, the config file's plan; a command
/// left with no plan at all is a usage error (`cmd::Context::plan`).
#[derive(Debug, Args)]
#[group(required = false, multiple = false)]
pub struct PlanArg {
    /// The plan: .xlsx, .xlsm, .xls, .ods, or .json (the normalized form `roce-gen plan` prints);
    /// default: the config file's plan.
    #[arg(value_name = "PLAN")]
    pub path: Option<PathBuf>,
    /// Use the embedded sample plan (the one `roce-gen sample` writes) instead of a file.
    #[arg(long)]
    pub sample: bool,
}

/// When to colour console output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum ColorChoice {
    /// On a terminal, unless `NO_COLOR` is set to something.
    #[default]
    Auto,
    /// Always, even into a pipe.
    Always,
    /// Never.
    Never,
}

/// Output format of `validate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Lines for people: `error: plan.xlsx: NICs!D14: …`.
    Text,
    /// One JSON document for tools.
    Json,
}

/// Output format of `ingest`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    /// Console text: ✅/❌ per host, failing items, consistency, totals.
    Text,
    /// One JSON document (schema roce-gen/ingest/v1).
    Json,
    /// Markdown for tickets and wikis.
    Markdown,
    /// JUnit XML, one test case per host and check, for CI.
    Junit,
    /// Prometheus text format for node_exporter's textfile collector.
    Prometheus,
    /// One self-contained HTML page.
    Html,
}
