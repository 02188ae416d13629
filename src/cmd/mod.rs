//! One module per subcommand; each turns parsed arguments into work and an exit status. Shared
//! here: the [`Context`] every command gets (the console settings and the config file, with the
//! rules by which the command line wins over it), loading the plan and printing its diagnostics.

pub(crate) mod alerts;
pub(crate) mod completions;
pub(crate) mod console;
mod context;
pub(crate) mod dashboard;
pub(crate) mod generate;
pub(crate) mod ingest;
pub(crate) mod man;
pub(crate) mod plan;
pub(crate) mod sample;
pub(crate) mod validate;
pub(crate) mod verify;

pub(crate) use context::Context;

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::PlanArg;
use crate::plan::diagnostic::Report;
use crate::plan::input::{self, Format};
use crate::plan::model::Plan;

/// A plan read and validated, with the name and hash of its source.
#[derive(Debug)]
pub(crate) struct Loaded {
    /// The file name as given, or `<sample>`.
    pub name: String,
    /// The plan's identity: the sha256 of its normalized JSON (what `roce-gen plan` prints), so
    /// that a re-saved or converted workbook is the same plan; of the file's bytes when the plan
    /// is invalid.
    pub sha256: String,
    /// sha256 of the file's bytes (the identity of bundles made before this one).
    pub file_sha256: String,
    /// The plan and its warnings, or every problem.
    pub outcome: Result<(Plan, Report), Report>,
}

/// Reads and validates the plan the arguments name. `Err` only when it cannot be read at all.
pub(crate) fn load(arg: &PlanArg) -> Result<Loaded> {
    let source = match &arg.path {
        Some(path) if !arg.sample => input::read_plan_file(path)?,
        _ => input::read_plan_bytes(
            SAMPLE_NAME,
            Format::Workbook,
            &crate::plan::sample::workbook()?,
        )?,
    };
    let outcome = crate::plan::validate::validate(source.raw);
    let sha256 = match &outcome {
        Ok((plan, _)) => crate::digest::sha256_hex(&plan.normalized_json()?),
        Err(_) => source.sha256.clone(),
    };
    Ok(Loaded {
        name: source.name,
        sha256,
        file_sha256: source.sha256,
        outcome,
    })
}

/// How the embedded sample plan is named in messages.
const SAMPLE_NAME: &str = "<sample>";

/// Prints every diagnostic to stderr as `severity: file: location: message`, escaped.
pub(crate) fn print_diagnostics(name: &str, report: &Report) {
    for d in report.diagnostics() {
        console::tell(d.severity, &d.display_in(name).to_string());
    }
}

/// Prints an invalid plan's problems and the closing `error:` line (`consequence` says what
/// was not done, e.g. "nothing was written"); the exit status of an invalid plan, 1.
pub(crate) fn invalid_plan(
    name: &str,
    report: &Report,
    consequence: Option<&str>,
) -> Result<ExitCode> {
    print_diagnostics(name, report);
    let tail = consequence.map(|c| format!("; {c}")).unwrap_or_default();
    console::error(&format!("{name}: invalid plan: {}{tail}", report.summary()));
    Ok(ExitCode::from(1))
}

/// How chatty the console is, set once from the global flags before a command runs.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Ui {
    /// `-q`: only errors, warnings and what was asked for.
    pub quiet: bool,
    /// `-v`: the details (`cli::Cli::verbose` says which, per command).
    pub verbose: bool,
    /// `--color`.
    pub color: crate::cli::ColorChoice,
}

static UI: std::sync::OnceLock<Ui> = std::sync::OnceLock::new();

/// Sets the console settings (the first call wins).
pub(crate) fn set_ui(ui: Ui) {
    let _ = UI.set(ui);
}

/// The console settings.
pub(crate) fn ui() -> Ui {
    UI.get().copied().unwrap_or_default()
}

impl Ui {
    /// Whether to colour output going to a stream that is (or is not) a terminal. `NO_COLOR`
    /// set to anything but the empty string turns `auto` off (no-color.org).
    pub(crate) fn colored(self, terminal: bool) -> bool {
        match self.color {
            crate::cli::ColorChoice::Always => true,
            crate::cli::ColorChoice::Never => false,
            crate::cli::ColorChoice::Auto => {
                terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
            }
        }
    }
}
