//! `roce-gen dashboard [-o FILE] [--push]`: writes the Grafana dashboard of [`crate::dashboard`]
//! (to FILE, atomically, or to stdout) and, only when asked with `--push`, uploads it through
//! Grafana's HTTP API: the folder is looked up by title (`GET /api/folders`) and created when
//! missing (`POST /api/folders`), then the dashboard is saved over any earlier copy
//! (`POST /api/dashboards/db`, `overwrite`). Every request carries `Authorization: Bearer KEY`.
//!
//! The key comes from `ROCE_GEN_GRAFANA_API_KEY`, else the config's key file, else the config's
//! key, and is kept out of every message: it is never sent over plain http to another machine
//! unless `--insecure-http` says the network is trusted, a password in the URL is shown as `***`,
//! and what Grafana answers is printed escaped and shortened (a hostile server must not drive the
//! terminal).
//!
//! Exit status: 0 written or pushed; 1 Grafana answered with an error (a wrong key, a folder it
//! refuses): the input is wrong; 2 roce-gen could not run: no URL or key, an unusable key file, a
//! URL that is not http(s), plain http to another machine, or Grafana could not be reached.

use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::net::IpAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Value, json};

use crate::text::{cap, clean, redact_passwords};

/// The environment variable that gives the API key; it wins over the config's key file and key.
const API_KEY_ENV: &str = "ROCE_GEN_GRAFANA_API_KEY";

/// The largest key file read. A token is under 100 bytes: a bigger file is the wrong file.
const KEY_FILE_MAX: u64 = 4096;

/// How many characters of a server's text a message quotes.
const SERVER_TEXT_MAX: usize = 300;

/// Secrets at least this long are also blanked wherever they appear in a message (a server may
/// echo the key back); shorter ones would blank ordinary words.
const SCRUB_MIN: usize = 8;

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
    let dashboard = crate::dashboard::build(opts.datasource_uid.as_deref());
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
    let from = opts
        .config_file
        .as_deref()
        .map_or_else(String::new, |f| format!(" ({f} has none)"));
    let key = api_key(opts)?;
    // Say which part is missing, and every way to give it.
    let (url, key) = match (opts.url.as_deref(), key) {
        (Some(url), Some(key)) => (url, key),
        (Some(_), None) => bail!(
            "--push needs a Grafana API key{from}: set {API_KEY_ENV}, or API_KEY (or API_KEY_FILE) in config.ini's [GRAFANA], or api_key (or api_key_file) in roce-gen.toml's [grafana]"
        ),
        (None, Some(_)) => bail!(
            "--push needs Grafana's URL{from}: give --grafana-url URL, or set GRAFANA_URL in config.ini's [GRAFANA] or url in roce-gen.toml's [grafana]"
        ),
        (None, None) => bail!(
            "--push needs Grafana's URL and an API key{from}: give --grafana-url URL, or set GRAFANA_URL in config.ini's [GRAFANA] or url in roce-gen.toml's [grafana]; the key: {API_KEY_ENV}, or API_KEY (or API_KEY_FILE) in config.ini's [GRAFANA], or api_key (or api_key_file) in roce-gen.toml's [grafana]"
        ),
    };
    let base = url.trim_end_matches('/');
    let shown = clean(&redact_passwords(url));
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        bail!("Grafana URL \"{shown}\" is not an http:// or https:// URL");
    }
    check_transport(base, &shown, opts.insecure_http)?;
    let grafana = Grafana::new(base, &key);
    match push(&grafana, &dashboard, opts.folder.as_deref()) {
        Ok(url) => {
            crate::cmd::console::print(
                &mut std::io::stdout().lock(),
                &format!(
                    "pushed dashboard {:?} to {url}{}",
                    crate::dashboard::TITLE,
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

/// The key: `ROCE_GEN_GRAFANA_API_KEY`, else the key file, else the config's key; `None` when
/// none is set. Read only for a push, so a key file that is missing stops nothing else.
fn api_key(opts: &Options<'_>) -> Result<Option<String>> {
    if let Some(value) = std::env::var_os(API_KEY_ENV) {
        let Some(value) = value.to_str() else {
            bail!("{API_KEY_ENV} is not UTF-8 text");
        };
        // Empty is unset, as in the config file.
        if !value.trim().is_empty() {
            return checked_key(value.trim(), API_KEY_ENV).map(Some);
        }
    }
    if let Some(path) = &opts.api_key_file {
        return read_key_file(path).map(Some);
    }
    match (&opts.api_key, &opts.config_file) {
        (Some(key), file) => {
            checked_key(key, file.as_deref().unwrap_or("the config file")).map(Some)
        }
        (None, _) => Ok(None),
    }
}

/// The key from its file: a regular file of at most [`KEY_FILE_MAX`] bytes, its text trimmed.
fn read_key_file(path: &Path) -> Result<String> {
    let name = path.display().to_string();
    // Non-blocking, so that a FIFO named by mistake is refused below instead of waiting for a
    // writer; reads of a regular file are not affected.
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
        .with_context(|| format!("{name}: could not read the Grafana API key file"))?;
    let meta = file
        .metadata()
        .with_context(|| format!("{name}: could not read the Grafana API key file"))?;
    if !meta.is_file() {
        bail!("{name}: the Grafana API key file is not a regular file");
    }
    let too_big = || {
        anyhow!(
            "{name}: the Grafana API key file is larger than {KEY_FILE_MAX} bytes; it should hold the key alone"
        )
    };
    if meta.len() > KEY_FILE_MAX {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    (&mut file)
        .take(KEY_FILE_MAX + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("{name}: could not read the Grafana API key file"))?;
    if bytes.len() as u64 > KEY_FILE_MAX {
        return Err(too_big());
    }
    let Ok(text) = String::from_utf8(bytes) else {
        bail!("{name}: the Grafana API key file is not UTF-8 text");
    };
    let key = text.trim();
    if key.is_empty() {
        bail!("{name}: the Grafana API key file is empty");
    }
    checked_key(key, &name)
}

/// A key that can go into the `Authorization` header as it is: one word of printable ASCII, as
/// Grafana's tokens are. The message names where the key came from, never the key.
fn checked_key(key: &str, source: &str) -> Result<String> {
    if !key.bytes().all(|b| b.is_ascii_graphic()) {
        bail!(
            "{source}: the Grafana API key holds a space, a control character or a non-ASCII \
             character; a key is one word of printable ASCII"
        );
    }
    Ok(key.to_string())
}

/// Refuses plain http to another machine: anyone on the path could read the key. `shown` is the
/// URL as messages may print it.
fn check_transport(base: &str, shown: &str, insecure_http: bool) -> Result<()> {
    let uri: ureq::http::Uri = base
        .parse()
        .map_err(|_| anyhow!("Grafana URL \"{shown}\" is not a valid URL"))?;
    let host = uri.host().unwrap_or_default();
    if uri.scheme_str() == Some("http") && !insecure_http && !is_loopback(host) {
        bail!(
            "refusing to send the Grafana API key over plain http to {}, which is not this \
             machine: use an https:// URL, or --insecure-http on a network you trust",
            clean(host)
        );
    }
    Ok(())
}

/// `localhost`, 127.0.0.0/8 and ::1 (also as `::ffff:127.x.y.z`): traffic that never leaves the
/// machine.
fn is_loopback(host: &str) -> bool {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.eq_ignore_ascii_case("localhost") || host.eq_ignore_ascii_case("localhost.") {
        return true;
    }
    match host.parse::<IpAddr>() {
        Ok(IpAddr::V4(ip)) => ip.is_loopback(),
        Ok(IpAddr::V6(ip)) => {
            ip.is_loopback() || ip.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback())
        }
        Err(_) => false,
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
    /// Blanked in every message: the key and the URL's password, when long enough to find.
    secrets: Vec<String>,
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
        let password = base
            .split_once("://")
            .and_then(|(_, rest)| rest.rsplit_once('@'))
            .and_then(|(userinfo, _)| userinfo.split_once(':'))
            .map(|(_, password)| password.to_string());
        Grafana {
            base: base.to_string(),
            auth: format!("Bearer {key}"),
            agent: config.into(),
            secrets: [Some(key.to_string()), password]
                .into_iter()
                .flatten()
                .filter(|s| s.len() >= SCRUB_MIN)
                .collect(),
        }
    }

    /// `text` fit for a message: passwords in URLs and the secrets blanked, control characters
    /// made visible.
    fn say(&self, text: &str) -> String {
        let mut text = redact_passwords(text);
        for secret in &self.secrets {
            text = text.replace(secret.as_str(), "***");
        }
        clean(&text)
    }

    /// Text from the server, fit for a message and shortened.
    fn quote(&self, text: &str) -> String {
        // Blanked before it is cut, so that no part of a secret survives the cut.
        let mut text = redact_passwords(text.trim());
        for secret in &self.secrets {
            text = text.replace(secret.as_str(), "***");
        }
        clean(&cap(&text, SERVER_TEXT_MAX))
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
            PushError::Unreachable(anyhow!(
                "could not reach Grafana at {} ({method}): {}",
                self.say(&url),
                self.say(&e.to_string())
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
            let said = self.quote(
                value
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or(&text),
            );
            return Err(PushError::Refused(format!(
                "Grafana at {} refused {method}: {status}{}",
                self.say(&url),
                if said.is_empty() {
                    String::new()
                } else {
                    format!(": {said}")
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
                            grafana.say(&grafana.base)
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
    Ok(format!(
        "{}{}",
        grafana.say(&grafana.base),
        grafana.quote(path)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_is_this_machine_only() {
        for host in [
            "localhost",
            "LocalHost",
            "localhost.",
            "127.0.0.1",
            "127.255.0.9",
            "[::1]",
            "[::ffff:127.0.0.1]",
        ] {
            assert!(is_loopback(host), "{host}");
        }
        for host in [
            "grafana.lab",
            "localhost.example.com",
            "10.0.0.1",
            "128.0.0.1",
            "0.0.0.0",
            "[::]",
            "[fe80::1]",
            "127.1",
            "",
        ] {
            assert!(!is_loopback(host), "{host}");
        }
    }

    #[test]
    fn plain_http_goes_only_to_this_machine_unless_allowed() {
        for url in [
            "https://grafana.lab",
            "http://localhost:3000",
            "http://127.0.0.1:3000/grafana",
            "http://[::1]:3000",
            "http://user:pw@127.0.0.1",
        ] {
            assert!(check_transport(url, url, false).is_ok(), "{url}");
        }
        let err = check_transport("http://u:pw@grafana.lab:3000", "shown", false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "refusing to send the Grafana API key over plain http to grafana.lab, which is not \
             this machine: use an https:// URL, or --insecure-http on a network you trust"
        );
        assert!(check_transport("http://grafana.lab:3000", "", true).is_ok());
        // Not URLs at all: an error naming the URL as shown, never a panic.
        for url in ["http://@", "http://@/x", "http://", "http://a b"] {
            let err = check_transport(url, "SHOWN", false).unwrap_err();
            assert_eq!(
                err.to_string(),
                "Grafana URL \"SHOWN\" is not a valid URL",
                "{url}"
            );
        }
    }

    #[test]
    fn messages_blank_the_key_and_the_password_and_quote_the_server_escaped_and_short() {
        let g = Grafana::new(
            "http://admin:longpassword@127.0.0.1:3000",
            "glsa_0123456789",
        );
        assert_eq!(
            g.say("at http://admin:longpassword@127.0.0.1:3000/api: key glsa_0123456789"),
            "at http://admin:***@127.0.0.1:3000/api: key ***"
        );
        assert_eq!(
            g.quote("  \u{1b}]0;owned\u{7}\u{1b}[2J longpassword\n"),
            "\\u{1b}]0;owned\\u{7}\\u{1b}[2J ***"
        );
        let long = "x".repeat(10_000);
        assert_eq!(g.quote(&long).chars().count(), SERVER_TEXT_MAX + 1);
        // A secret cut in half by the cap is still blanked.
        let text = format!("{}glsa_0123456789", "y".repeat(SERVER_TEXT_MAX - 4));
        assert!(!g.quote(&text).contains("glsa"), "{}", g.quote(&text));
        // Short secrets are not blanked as words.
        let g = Grafana::new("http://u:pw@h", "key");
        assert_eq!(g.say("a key, a pw"), "a key, a pw");
    }

    #[test]
    fn a_key_is_one_word_of_printable_ascii() {
        assert_eq!(
            checked_key("glsa_AbC-1.2~+/=", "src").unwrap(),
            "glsa_AbC-1.2~+/="
        );
        for bad in ["two words", "line\nbreak", "tab\t", "ümlaut", "nul\0"] {
            let err = checked_key(bad, "src").unwrap_err().to_string();
            assert!(err.starts_with("src: the Grafana API key holds"), "{err}");
            assert!(!err.contains(bad), "{err}");
        }
    }
}
