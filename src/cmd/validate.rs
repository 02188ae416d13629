//! `roce-gen validate PLAN [--format text|json]`: every problem of a plan, with its location.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use crate::cli::{Format, PlanArg, ValidateArgs};
use crate::cmd::{Context, console, load, print_diagnostics};
use crate::plan::diagnostic::{Report, Severity};

/// Schema tag of `validate --format json`.
const VALIDATE_SCHEMA: &str = "roce-gen/validate/v1";

/// The JSON document `validate --format json` prints.
#[derive(Debug, Serialize)]
struct ValidateOutput<'a> {
    schema: &'static str,
    file: &'a str,
    plan_sha256: &'a str,
    valid: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    cluster: Option<&'a str>,
    hosts: usize,
    nics: usize,
    counts: Counts,
    diagnostics: Vec<JsonDiagnostic<'a>>,
}

#[derive(Debug, Serialize)]
struct Counts {
    error: usize,
    warning: usize,
    note: usize,
}

#[derive(Debug, Serialize)]
struct JsonDiagnostic<'a> {
    severity: Severity,
    /// `NICs!D14`, `hosts[2].ip`, or empty for the file as a whole.
    location: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    sheet: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cell: Option<String>,
    message: &'a str,
}

/// Runs `validate`: exit 0 when the plan is usable, 1 when it has errors (or, with `--strict`,
/// warnings).
pub(crate) fn run(ctx: &Context, args: ValidateArgs) -> Result<ExitCode> {
    // What generate would refuse, validate refuses too.
    crate::cmd::generate::mtime_from_env()?;
    // The config file named the plan, so the next command need not.
    let from_config = args.plan.path.is_none() && !args.plan.sample;
    let arg = &ctx.plan(args.plan)?;
    let (format, strict) = (args.format, args.strict);
    let loaded = load(arg)?;
    let (plan, report) = match &loaded.outcome {
        Ok((plan, report)) => (Some(plan), report),
        Err(report) => (None, report),
    };
    let mut out = std::io::stdout().lock();
    match format {
        Format::Text => {
            print_diagnostics(&loaded.name, report);
            match plan {
                Some(_) if crate::cmd::ui().quiet => {}
                Some(plan) => console::print(
                    &mut out,
                    &format!(
                        "{}: valid plan for cluster {}: {} hosts, {} NICs ({})",
                        loaded.name,
                        plan.cluster.cluster_name,
                        plan.hosts.len(),
                        plan.hosts.iter().map(|h| h.nics.len()).sum::<usize>(),
                        report.summary()
                    ),
                )?,
                None => console::error(&format!(
                    "{}: invalid plan: {}",
                    loaded.name,
                    report.summary()
                )),
            }
        }
        Format::Json => {
            let doc = ValidateOutput {
                schema: VALIDATE_SCHEMA,
                file: &loaded.name,
                plan_sha256: &loaded.sha256,
                valid: plan.is_some(),
                cluster: plan.map(|p| p.cluster.cluster_name.as_str()),
                hosts: plan.map_or(0, |p| p.hosts.len()),
                nics: plan.map_or(0, |p| p.hosts.iter().map(|h| h.nics.len()).sum()),
                counts: counts(report),
                diagnostics: report
                    .diagnostics()
                    .iter()
                    .map(|d| JsonDiagnostic {
                        severity: d.severity,
                        location: d.location.to_string(),
                        sheet: d.location.sheet(),
                        cell: d.location.cell(),
                        message: &d.message,
                    })
                    .collect(),
            };
            out.write_all(console::json(&doc)?.as_bytes())?;
        }
    }
    let warned = strict && report.count(Severity::Warning) > 0;
    if warned && plan.is_some() && format == Format::Text {
        console::error(&format!(
            "{}: --strict: {} count as errors",
            loaded.name,
            match report.count(Severity::Warning) {
                1 => "1 warning".to_string(),
                n => format!("{n} warnings"),
            }
        ));
    }
    out.flush()?;
    if plan.is_some() && !warned && format == Format::Text {
        let plan = if from_config {
            String::new()
        } else {
            format!(" {}", plan_words(arg))
        };
        console::say(&format!("next: run `roce-gen generate{plan}`"));
    }
    Ok(if plan.is_some() && !warned {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The plan as the next command would name it: the path quoted for a shell, or `--sample`.
fn plan_words(arg: &PlanArg) -> String {
    match &arg.path {
        Some(path) if !arg.sample => console::shell_word(path),
        _ => "--sample".into(),
    }
}

fn counts(report: &Report) -> Counts {
    Counts {
        error: report.count(Severity::Error),
        warning: report.count(Severity::Warning),
        note: report.count(Severity::Note),
    }
}
