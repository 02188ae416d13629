//! `roce-gen alerts [PLAN] [-o FILE]`: the Prometheus alerting rules of [`crate::alerts`] for the
//! plan's cluster, to FILE (replaced atomically) or stdout. Exit 0 written, 1 the plan is invalid.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context as _, Result};

use crate::cli::AlertsArgs;
use crate::cmd::{Context, invalid_plan, load, print_diagnostics};

/// Runs `alerts`.
pub(crate) fn run(ctx: &Context, args: AlertsArgs) -> Result<ExitCode> {
    let loaded = load(&ctx.plan(args.plan)?)?;
    let (plan, report) = match &loaded.outcome {
        Ok(ok) => ok,
        Err(report) => return invalid_plan(&loaded.name, report, None),
    };
    print_diagnostics(&loaded.name, report);
    let text = crate::alerts::rules(plan);
    match args.output.as_deref() {
        Some(path) => {
            crate::files::write_file_atomic(path, text.as_bytes(), true)
                .with_context(|| format!("{}: could not write the rules", path.display()))?;
            crate::cmd::console::say(&format!("wrote {}", path.display()));
        }
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
