//! `roce-gen plan PLAN`: the normalized plan as JSON on stdout, diagnostics on stderr.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;

use crate::cli::PlanArgs;
use crate::cmd::{Context, invalid_plan, load, print_diagnostics};

/// Runs `plan`: exit 0 with the JSON, or 1 with the problems and nothing on stdout.
pub(crate) fn run(ctx: &Context, args: PlanArgs) -> Result<ExitCode> {
    let loaded = load(&ctx.plan(args.plan)?)?;
    match &loaded.outcome {
        Ok((plan, report)) => {
            print_diagnostics(&loaded.name, report);
            let mut out = std::io::stdout().lock();
            out.write_all(&plan.normalized_json()?)?;
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Err(report) => invalid_plan(&loaded.name, report, None),
    }
}
