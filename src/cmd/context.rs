//! The context every command runs in: the console settings of the global flags and the config
//! file, read once, with the rules by which the command line wins over it. The one place where
//! the config meets the command line.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::cli::{Cli, Command, PlanArg};
use crate::config::{self, Config};

use super::console;

/// The config file (if any) a command line runs with.
#[derive(Debug)]
pub(crate) struct Context {
    config: Option<Config>,
}

impl Context {
    /// Sets the console from the global flags, then reads the config file for the commands that
    /// use it (first the flags, so that the config's warnings are printed as they say). A
    /// `--config` that names no file is an error whatever the command.
    pub(crate) fn new(cli: &Cli) -> Result<Context> {
        super::set_ui(super::Ui {
            quiet: cli.quiet,
            verbose: cli.verbose,
            color: cli.color,
        });
        let uses_config = matches!(
            cli.command,
            Command::Generate(_) | Command::Validate(_) | Command::Plan(_) | Command::Dashboard(_)
        );
        let config = if uses_config || cli.config.is_some() {
            read_config(cli.config.as_deref())?
        } else {
            None
        };
        Ok(Context { config })
    }

    /// The plan a command works on: PLAN or `--sample` as given, else the config file's plan.
    pub(crate) fn plan(&self, arg: PlanArg) -> Result<PlanArg> {
        resolve_plan(arg, self.config.as_ref())
    }

    /// `generate`'s output folder: `-o`, else the config's, else `dist`.
    pub(crate) fn output_dir(&self, given: Option<PathBuf>) -> PathBuf {
        given
            .or_else(|| self.config.as_ref().and_then(|c| c.output_dir.clone()))
            .unwrap_or_else(|| "dist".into())
    }

    /// The Grafana settings: each given on the command line wins over the config's; the key and
    /// its file come only from the config.
    pub(crate) fn grafana(
        &self,
        url: Option<String>,
        datasource_uid: Option<String>,
        folder: Option<String>,
    ) -> config::Grafana {
        let from_config = self
            .config
            .as_ref()
            .map(|c| c.grafana.clone())
            .unwrap_or_default();
        config::Grafana {
            url: url.or(from_config.url),
            datasource_uid: datasource_uid.or(from_config.datasource_uid),
            folder: folder.or(from_config.folder),
            ..from_config
        }
    }

    /// The config file's name as found, for messages.
    pub(crate) fn config_file(&self) -> Option<&str> {
        self.config.as_ref().map(|c| c.file.as_str())
    }
}

/// The largest config file read: a config is a few lines.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Finds and reads the config file: `explicit` (`--config`), which must exist, else the first of
/// [`config::DEFAULT_FILES`] in the working folder, else none. Its warnings go to stderr.
fn read_config(explicit: Option<&Path>) -> Result<Option<Config>> {
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
fn resolve_plan(arg: PlanArg, config: Option<&Config>) -> Result<PlanArg> {
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
