//! `roce-gen dashboard [-o FILE] [--push]`: writes the Grafana dashboard of [`crate::dashboard`]
//! (to FILE, atomically, or to stdout) and, only when asked with `--push`, uploads it through
//! Grafana's HTTP API: the folder is looked up by title (`GET /api/folders`) and created when
//! missing (`POST /api/folders`), then the dashboard is saved over any earlier copy
//! (`POST /api/dashboards/db`, `overwrite`). Every request carries `Authorization: Bearer KEY`.
//!
//! Exit status: 0 written or pushed; 1 Grafana answered with an error (a wrong key, a folder it
//! refuses): the input is wrong; 2 roce-gen could not run: no URL or key, a URL that is not
//! http(s), or Grafana could not be reached.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// What the command line and the config file ask for (the command line already merged in).
#[derive(Debug)]
pub struct Options<'a> {
    /// Where to write the JSON; stdout when `None` and not pushing.
    pub output: Option<&'a Path>,
    /// Upload the dashboard.
    pub push: bool,
    /// The Prometheus data source's uid.
    pub datasource_uid: Option<String>,
    /// Grafana's base URL.
    pub url: Option<String>,
    /// The API key or service-account token.
    pub api_key: Option<String>,
    /// The folder title.
    pub folder: Option<String>,
    /// The config file the settings came from, for messages.
    pub config_file: Option<String>,
}

/// Runs `dashboard`.
pub fn run(opts: &Options<'_>) -> Result<ExitCode> {
    let dashboard = crate::dashboard::build(opts.datasource_uid.as_deref());
    let mut text = serde_json::to_string_pretty(&dashboard)?;
    text.push('\n');
    match opts.output {
        Some(path) => {
            crate::output::write_file_atomic(path, text.as_bytes(), true)
                .with_context(|| format!("{}: could not write the dashboard", path.display()))?;
            eprintln!("wrote {}", path.display());
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
    let from = opts
        .config_file
        .as_deref()
        .map_or_else(String::new, |f| format!(" ({f} has none)"));
    let (Some(url), Some(key)) = (opts.url.as_deref(), opts.api_key.as_deref()) else {
        bail!(
            "--push needs Grafana's URL and API key{from}: set GRAFANA_URL and API_KEY in config.ini's [GRAFANA], or url and api_key in roce-gen.toml's [grafana]"
        );
    };
    let base = url.trim_end_matches('/');
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        bail!("Grafana URL {url:?} is not an http:// or https:// URL");
    }
    let grafana = Grafana::new(base, key);
    match push(&grafana, &dashboard, opts.folder.as_deref()) {
        Ok(url) => {
            println!(
                "pushed dashboard {:?} to {url}{}",
                crate::dashboard::TITLE,
                opts.folder
                    .as_deref()
                    .map_or_else(String::new, |f| format!(" (folder {f})"))
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(PushError::Refused(message)) => {
            eprintln!("error: {message}");
            Ok(ExitCode::from(1))
        }
        Err(PushError::Unreachable(err)) => Err(err),
    }
}

/// Why a push did not happen.
enum PushError {
    /// Grafana answered, with an error status.
    Refused(String),
    /// No answer (connection refused, name not found, timeout, TLS).
    Unreachable(anyhow::Error),
}

/// Grafana's HTTP API at one base URL, with one key.
struct Grafana {
    base: String,
    auth: String,
    agent: ureq::Agent,
}

impl Grafana {
    fn new(base: &str, key: &str) -> Self {
        // Error statuses are answers to read (Grafana's `message`), not transport failures; a
        // private CA in the system store must verify, as it does for curl.
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(30)))
            .tls_config(
                ureq::tls::TlsConfig::builder()
                    .root_certs(ureq::tls::RootCerts::PlatformVerifier)
                    .build(),
            )
            .user_agent(concat!("roce-gen/", env!("CARGO_PKG_VERSION")))
            .build();
        Grafana {
            base: base.to_string(),
            auth: format!("Bearer {key}"),
            agent: config.into(),
        }
    }

    /// One request; `Ok` carries the parsed JSON answer of a 2xx response.
    fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, PushError> {
        let url = format!("{}{path}", self.base);
        let sent = match body {
            None => self
                .agent
                .get(&url)
                .header("Authorization", &self.auth)
                .header("Accept", "application/json")
                .call(),
            Some(body) => self
                .agent
                .post(&url)
                .header("Authorization", &self.auth)
                .header("Accept", "application/json")
                .content_type("application/json")
                .send(body.to_string()),
        };
        let mut response = sent.map_err(|e| {
            PushError::Unreachable(anyhow::anyhow!(
                "could not reach Grafana at {url} ({method}): {e}"
            ))
        })?;
        let status = response.status();
        let text = response
            .body_mut()
            .with_config()
            .limit(16 << 20)
            .read_to_string()
            .unwrap_or_default();
        let value: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if !status.is_success() {
            let said = value
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| text.chars().take(200).collect());
            return Err(PushError::Refused(format!(
                "Grafana at {url} refused {method}: {status}{}",
                if said.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {}", said.trim())
                }
            )));
        }
        Ok(value)
    }
}

/// Uploads the dashboard into `folder` (created when missing); returns its URL.
fn push(grafana: &Grafana, dashboard: &Value, folder: Option<&str>) -> Result<String, PushError> {
    let folder_uid = match folder {
        None => None,
        Some(title) => {
            let folders = grafana.call("GET", "/api/folders?limit=1000", None)?;
            let found = folders.as_array().and_then(|list| {
                list.iter()
                    .find(|f| f["title"].as_str() == Some(title))
                    .or_else(|| {
                        list.iter().find(|f| {
                            f["title"]
                                .as_str()
                                .is_some_and(|t| t.eq_ignore_ascii_case(title))
                        })
                    })
                    .and_then(|f| f["uid"].as_str().map(str::to_string))
            });
            match found {
                Some(uid) => Some(uid),
                None => {
                    let made =
                        grafana.call("POST", "/api/folders", Some(&json!({ "title": title })))?;
                    let uid = made["uid"].as_str().map(str::to_string);
                    if uid.is_none() {
                        return Err(PushError::Refused(format!(
                            "Grafana at {} created folder {title:?} but named no uid for it",
                            grafana.base
                        )));
                    }
                    uid
                }
            }
        }
    };
    let mut body = json!({
        "dashboard": dashboard,
        "overwrite": true,
        "message": concat!("roce-gen ", env!("CARGO_PKG_VERSION")),
    });
    if let Some(uid) = folder_uid {
        body["folderUid"] = json!(uid);
    }
    let saved = grafana.call("POST", "/api/dashboards/db", Some(&body))?;
    let path = saved["url"].as_str().unwrap_or("");
    Ok(format!("{}{path}", grafana.base))
}
