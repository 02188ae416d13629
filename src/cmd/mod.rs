//! One module per subcommand; each turns parsed arguments into work and an exit status. Shared
//! here: reading the config file, choosing the plan (command line, else config), loading it and
//! printing its diagnostics.

pub(crate) mod console;
pub(crate) mod dashboard;
pub(crate) mod generate;
pub(crate) mod ingest;
pub(crate) mod man;
pub(crate) mod plan;
pub(crate) mod sample;
pub(crate) mod validate;
pub(crate) mod verify;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use std::process::ExitCode;

use anyhow::{Result, bail};

use crate::cli::PlanArg;
use crate::config::{self, Config};
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

/// The largest config file read: a config is a few lines.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Finds and reads the config file: `explicit` (`--config`), which must exist, else the first of
/// [`config::DEFAULT_FILES`] in the working folder, else none. Its warnings go to stderr.
pub(crate) fn read_config(explicit: Option<&Path>) -> Result<Option<Config>> {
    let path = match explicit {
        Some(p) if !p.exists() => {
            bail!("{}: no such config file (given with --config)", p.display())
        }
        Some(p) => p.to_path_buf(),
        None => match config::DEFAULT_FILES
            .iter()
            .map(PathBuf::from)
            .find(|p| p.is_file())
        {
            Some(p) => p,
            None => return Ok(None),
        },
    };
    let name = path.display().to_string();
    let bytes = crate::files::read_regular_file(&path, MAX_CONFIG_BYTES, "config file")?;
    // The mode, for the warning about a key others can read.
    let mode = std::fs::metadata(&path).map_or(0, |m| m.permissions().mode());
    let Ok(text) = String::from_utf8(bytes) else {
        bail!("{name}: the config file is not UTF-8 text; save it as UTF-8");
    };
    let dir = path.parent().unwrap_or(Path::new(""));
    let config = config::parse(&name, dir, config::Kind::of(&path), &text)?;
    for w in &config.warnings {
        console::warning(w);
    }
    if config.grafana.api_key.is_some() {
        warn_if_shared(&name, mode);
    }
    // The key file is looked at (not read: that is for a push only) here, so that every
    // command that reads the config warns about it alike.
    if let Some(file) = &config.grafana.api_key_file
        && let Ok(meta) = std::fs::metadata(file)
        && meta.is_file()
    {
        warn_if_shared(&file.display().to_string(), meta.permissions().mode());
    }
    Ok(Some(config))
}

/// Warns (once per file: each is looked at once, by [`read_config`]) when a file that holds the Grafana API key is
/// open to the group or others. A warning, not an error: refusing would break a setup that has
/// worked, and the key is already exposed by the time roce-gen runs.
fn warn_if_shared(name: &str, mode: u32) {
    if mode & 0o077 != 0 {
        console::warning(&format!(
            "{name} holds the Grafana API key and other users have access to it (mode {:04o}); \
             chmod 600 {}",
            mode & 0o7777,
            shlex::try_quote(name).unwrap_or_else(|_| name.into())
        ));
    }
}

/// The plan a command works on: PLAN or `--sample` as given, else the config file's plan. None
/// of them is a usage error (exit 2).
pub(crate) fn resolve_plan(arg: PlanArg, config: Option<&Config>) -> Result<PlanArg> {
    if arg.path.is_some() || arg.sample {
        return Ok(arg);
    }
    match config.and_then(|c| c.plan.clone()) {
        Some(path) => Ok(PlanArg {
            path: Some(path),
            sample: false,
        }),
        None => bail!(
            "no plan: name one (PLAN), use --sample, or set it in roce-gen.toml ([plan] path) or \
             config.ini ([COMMANDS] AID_path and AID_file)"
        ),
    }
}
