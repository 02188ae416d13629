//! One module per subcommand; each turns parsed arguments into work and an exit status. Shared
//! here: loading the plan named on the command line and printing its diagnostics.

pub mod generate;
pub mod ingest;
pub mod plan;
pub mod sample;
pub mod validate;
pub mod verify;

use std::io::Write;

use anyhow::Result;

use crate::cli::PlanArg;
use crate::diagnostic::Report;
use crate::input::{self, Format};
use crate::model::Plan;

/// A plan read and validated, with the name and hash of its source.
#[derive(Debug)]
pub struct Loaded {
    /// The file name as given, or `<sample>`.
    pub name: String,
    /// sha256 of the source bytes.
    pub sha256: String,
    /// The plan and its warnings, or every problem.
    pub outcome: Result<(Plan, Report), Report>,
}

/// Reads and validates the plan the arguments name. `Err` only when it cannot be read at all.
pub fn load(arg: &PlanArg) -> Result<Loaded> {
    let source = match &arg.path {
        Some(path) if !arg.sample => input::read_plan_file(path)?,
        _ => input::read_plan_bytes(SAMPLE_NAME, Format::Workbook, &crate::sample::workbook()?)?,
    };
    Ok(Loaded {
        name: source.name,
        sha256: source.sha256,
        outcome: crate::validate::validate(source.raw),
    })
}

/// How the embedded sample plan is named in messages.
pub const SAMPLE_NAME: &str = "<sample>";

/// Prints every diagnostic to stderr as `severity: file: location: message`.
pub fn print_diagnostics(name: &str, report: &Report) -> Result<()> {
    let mut err = std::io::stderr().lock();
    for d in report.diagnostics() {
        writeln!(err, "{}: {}", d.severity, d.display_in(name))?;
    }
    Ok(())
}
