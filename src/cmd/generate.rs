//! `roce-gen generate PLAN [-o DIR] [--hosts NAME,...] [--templates DIR] [--sign KEY]`: loads the plan, runs
//! [`crate::generate`] and says what it wrote. The summary line and the progress bar are the
//! only things here that read the clock.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::cli::GenerateArgs;
use crate::cmd::{Context, console, invalid_plan, load, print_diagnostics};
use crate::generate::{self, archive};

/// Runs `generate`: exit 0 with the bundles written, 1 for an invalid plan (nothing written).
/// `--format json` prints what was written as one JSON document on stdout.
pub(crate) fn run(ctx: &Context, args: GenerateArgs) -> Result<ExitCode> {
    let arg = ctx.plan(args.plan)?;
    let out = ctx.output_dir(args.output);
    let key = args.sign;
    let signer = key
        .as_deref()
        .map(|key| move |bytes: &[u8]| crate::signature::sign(key, bytes));
    let opts = &generate::Options {
        out: &out,
        hosts: args.hosts.as_deref(),
        templates: args.templates.as_deref(),
        prune: args.prune,
        mtime: mtime_from_env()?,
        sign: signer.as_ref().map(|s| s as generate::Signer<'_>),
    };
    let format = args.format;
    let loaded = load(&arg)?;
    let (plan, report) = match &loaded.outcome {
        Ok(ok) => ok,
        Err(report) => return invalid_plan(&loaded.name, report, Some("nothing was written")),
    };
    print_diagnostics(&loaded.name, report);
    let started = std::time::Instant::now();
    // Made at the first bundle, when the number selected is known.
    let progress = std::sync::OnceLock::new();
    let outcome = generate::generate(plan, &loaded.sha256, opts, &|total| {
        progress.get_or_init(|| progress_bar(total)).inc(1);
    })?;
    if let Some(bar) = progress.get() {
        bar.finish_and_clear();
    }
    for (severity, line) in &outcome.said {
        match severity {
            Some(severity) => console::tell(*severity, line),
            None => console::say(line),
        }
    }
    for b in &outcome.written.written {
        console::detail(&format!("wrote {} (sha256 {})", b.bundle, b.sha256));
    }
    for host in &outcome.written.kept {
        console::detail(&format!("kept the bundle of {host}"));
    }
    if format == crate::cli::Format::Json {
        console::print_json(&outcome.written)?;
    }
    let n = outcome.built;
    console::say(&format!(
        "generated {n} bundle{} for cluster {} in {} ({} bytes, {:.2} s)",
        if n == 1 { "" } else { "s" },
        plan.cluster.cluster_name,
        opts.out.display(),
        outcome.bytes,
        started.elapsed().as_secs_f64()
    ));
    // The one value to carry to the hosts by another channel than the folder.
    console::say(&format!(
        "trust anchor: run-here.sh has sha256 {}; on each host, check it (`sha256sum \
         run-here.sh`) against this value, not one from the folder, before running it",
        outcome.written.run_here_sha256
    ));
    if let (Some(sig), Some(key)) = (&outcome.written.signature, &key) {
        console::say(&format!(
            "signed: {sig} is run-here.sh's signature by {}; hosts check it with the public key, \
             `openssl dgst -sha256 -verify PUBLIC_KEY.pem -signature {sig} run-here.sh`",
            console::shell_word(key)
        ));
    }
    for line in next_step(opts.out, arg.path.as_deref().filter(|_| !arg.sample)) {
        console::say(&line);
    }
    Ok(ExitCode::SUCCESS)
}

/// What to do with the folder: deliver it, run the precheck, bring the results back to ingest.
/// Paths are quoted for a shell, so the commands can be pasted.
fn next_step(out: &Path, plan: Option<&Path>) -> [String; 2] {
    let dir = console::shell_word(out);
    let results = console::shell_word(&out.join("results"));
    let plan = plan.map_or_else(String::new, |p| {
        format!(" --plan {}", console::shell_word(p))
    });
    [
        format!(
            "next: copy {dir} to the hosts (USB stick, share or web server) and run \
             `bash run-here.sh precheck` on each;"
        ),
        format!("      then bring {results} back and run `roce-gen ingest {results}{plan}`"),
    ]
}

/// A progress bar on stderr for long runs, only when stderr is a terminal.
fn progress_bar(len: usize) -> ProgressBar {
    if len < 200 || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::with_draw_target(Some(len as u64), ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} bundles, {eta} left") {
        bar.set_style(style);
    }
    bar
}

/// The archive mtime: `SOURCE_DATE_EPOCH` when set (strictly a whole number of seconds, at most
/// [`archive::MAX_MTIME`]), else a fixed default. `validate` checks it too, so that it accepts
/// only what `generate` can write. Read once, here, so the rest of the pipeline reads no environment.
pub(crate) fn mtime_from_env() -> Result<u64> {
    match std::env::var("SOURCE_DATE_EPOCH") {
        Err(std::env::VarError::NotPresent) => Ok(archive::DEFAULT_MTIME),
        Err(e) => Err(e).context("SOURCE_DATE_EPOCH"),
        Ok(v) if v.trim().is_empty() => Ok(archive::DEFAULT_MTIME),
        Ok(v) => {
            let secs = v.parse::<u64>().with_context(|| {
                format!("SOURCE_DATE_EPOCH {v:?} is not a whole number of seconds since 1970")
            })?;
            if secs > archive::MAX_MTIME {
                bail!(
                    "SOURCE_DATE_EPOCH {secs} is past {} (the year 2242), the latest time a tar \
                     header holds in the form every tar reads",
                    archive::MAX_MTIME
                );
            }
            Ok(secs)
        }
    }
}
