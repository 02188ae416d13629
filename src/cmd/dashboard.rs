//! `roce-gen dashboard [-o FILE] [--push]`: writes the Grafana dashboard of
//! [`crate::dashboard::board`] (to FILE, atomically, or to stdout) and, only when asked with
//! `--push`, uploads it ([`crate::dashboard::push`]) with the key [`crate::dashboard::key`]
//! finds.
//!
//! Exit status: 0 written or pushed; 1 Grafana answered with an error (a wrong key, a folder it
//! refuses): the input is wrong; 2 roce-gen could not run: no URL or key, an unusable key file, a
//! URL that is not http(s), plain http to another machine, or Grafana could not be reached.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};

use crate::dashboard::board;
use crate::dashboard::key::{self, API_KEY_ENV};
use crate::dashboard::push::{self, Grafana, PushError};
use crate::text::redact_passwords;

/// What the command line and the config file ask for (the command line already merged in).
pub(crate) struct Options<'a> {
    /// Where to write the JSON; stdout when `None` and not pushing.
    pub output: Option<&'a Path>,
    /// Upload the dashboard.
    pub push: bool,
    /// The Prometheus data source's uid.
    pub datasource_uid: Option<String>,
    /// Grafana's base URL.
    pub url: Option<String>,
    /// The API key or service-account token, as the config file gives it.
    pub api_key: Option<String>,
    /// The config's file holding the key; wins over `api_key`.
    pub api_key_file: Option<PathBuf>,
    /// Send the key over plain http to another machine.
    pub insecure_http: bool,
    /// The folder title.
    pub folder: Option<String>,
    /// The config file the settings came from, for messages.
    pub config_file: Option<String>,
}

// By hand, so that the key is not printed.
impl std::fmt::Debug for Options<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("output", &self.output)
            .field("push", &self.push)
            .field("datasource_uid", &self.datasource_uid)
            .field("url", &self.url.as_deref().map(redact_passwords))
            .field("api_key", &self.api_key.as_ref().map(|_| "***"))
            .field("api_key_file", &self.api_key_file)
            .field("insecure_http", &self.insecure_http)
            .field("folder", &self.folder)
            .field("config_file", &self.config_file)
            .finish()
    }
}

/// Runs `dashboard`.
pub(crate) fn run(opts: &Options<'_>) -> Result<ExitCode> {
    let dashboard = board::build(opts.datasource_uid.as_deref());
    let text = crate::cmd::console::json(&dashboard)?;
    match opts.output {
        Some(path) => {
            crate::files::write_file_atomic(path, text.as_bytes(), true)
                .with_context(|| format!("{}: could not write the dashboard", path.display()))?;
            crate::cmd::console::say(&format!("wrote {}", path.display()));
        }
        None if !opts.push => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
        None => {}
    }
    if !opts.push {
        return Ok(ExitCode::SUCCESS);
    }
    let (url, key) = url_and_key(opts)?;
    let grafana = Grafana::new(key::checked_url(url, opts.insecure_http)?, &key);
    match push::push(&grafana, &dashboard, opts.folder.as_deref()) {
        Ok(url) => {
            crate::cmd::console::print(
                &mut std::io::stdout().lock(),
                &format!(
                    "pushed dashboard {:?} to {url}{}",
                    board::TITLE,
                    opts.folder
                        .as_deref()
                        .map_or_else(String::new, |f| format!(" (folder {f})"))
                ),
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Err(PushError::Refused(message)) => {
            crate::cmd::console::error(&message);
            Ok(ExitCode::from(1))
        }
        Err(PushError::Unreachable(err)) => Err(err),
    }
}

/// Grafana's URL and the key, or an error that says which part is missing and every way to
/// give it.
fn url_and_key<'a>(opts: &'a Options<'_>) -> Result<(&'a str, String)> {
    let from = opts
        .config_file
        .as_deref()
        .map_or_else(String::new, |f| format!(" ({f} has none)"));
    let key = key::api_key(
        opts.api_key_file.as_deref(),
        opts.api_key.as_deref(),
        opts.config_file.as_deref(),
    )?;
    match (opts.url.as_deref(), key) {
        (Some(url), Some(key)) => Ok((url, key)),
        (Some(_), None) => bail!(
            "--push needs a Grafana API key{from}: set {API_KEY_ENV}, or API_KEY (or API_KEY_FILE) in config.ini's [GRAFANA], or api_key (or api_key_file) in roce-gen.toml's [grafana]"
        ),
        (None, Some(_)) => bail!(
            "--push needs Grafana's URL{from}: give --grafana-url URL, or set GRAFANA_URL in config.ini's [GRAFANA] or url in roce-gen.toml's [grafana]"
        ),
        (None, None) => bail!(
            "--push needs Grafana's URL and an API key{from}: give --grafana-url URL, or set GRAFANA_URL in config.ini's [GRAFANA] or url in roce-gen.toml's [grafana]; the key: {API_KEY_ENV}, or API_KEY (or API_KEY_FILE) in config.ini's [GRAFANA], or api_key (or api_key_file) in roce-gen.toml's [grafana]"
        ),
    }
}
