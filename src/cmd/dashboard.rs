//! `roce-gen dashboard [-o FILE] [--push]`: writes the Grafana dashboard of
//! [`crate::dashboard::board`] (to FILE, atomically, or to stdout) and, only when asked with
//! `--push`, uploads it ([`crate::dashboard::push`]) with the key [`crate::dashboard::key`]
//! finds.
//!
//! Exit status: 0 written or pushed; 1 Grafana answered with an error (a wrong key, a folder it
//! refuses): the input is wrong; 2 roce-gen could not run: no URL or key, an unusable key file, a
//! URL that is not http(s), plain http to another machine, or Grafana could not be reached.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context as _, Result, bail};

use crate::cli::DashboardArgs;
use crate::cmd::Context;
use crate::config::Grafana;
use crate::dashboard::board;
use crate::dashboard::key::{self, API_KEY_ENV};
use crate::dashboard::push::{self, Client, PushError};

/// Runs `dashboard`: the command line merged with the config ([`Context::grafana`]).
pub(crate) fn run(ctx: &Context, args: DashboardArgs) -> Result<ExitCode> {
    dashboard(&Options {
        output: args.output.as_deref(),
        push: args.push,
        grafana: ctx.grafana(args.grafana_url, args.datasource_uid, args.folder),
        insecure_http: args.insecure_http,
        config_file: ctx.config_file(),
    })
}

/// What the command line and the config file ask for.
#[derive(Debug)]
struct Options<'a> {
    /// Where to write the JSON; stdout when `None` and not pushing.
    output: Option<&'a Path>,
    /// Upload the dashboard.
    push: bool,
    /// Where the panels point and the dashboard goes, and the key (its `Debug` hides it).
    grafana: Grafana,
    /// Send the key over plain http to another machine.
    insecure_http: bool,
    /// The config file the settings came from, for messages.
    config_file: Option<&'a str>,
}

fn dashboard(opts: &Options<'_>) -> Result<ExitCode> {
    let dashboard = board::build(opts.grafana.datasource_uid.as_deref());
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
    let client = Client::new(key::checked_url(url, opts.insecure_http)?, &key);
    match push::push(&client, &dashboard, opts.grafana.folder.as_deref()) {
        Ok(url) => {
            crate::cmd::console::print(
                &mut std::io::stdout().lock(),
                &format!(
                    "pushed dashboard {:?} to {url}{}",
                    board::TITLE,
                    opts.grafana
                        .folder
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
        .map_or_else(String::new, |f| format!(" ({f} has none)"));
    let key = key::api_key(
        opts.grafana.api_key_file.as_deref(),
        opts.grafana.api_key.as_deref(),
        opts.config_file,
    )?;
    match (opts.grafana.url.as_deref(), key) {
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
