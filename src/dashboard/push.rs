//! The upload of the dashboard through Grafana's HTTP API, the only network access of roce-gen:
//! the folder is looked up by title (`GET /api/folders`) and created when missing
//! (`POST /api/folders`), then the dashboard is saved over any earlier copy
//! (`POST /api/dashboards/db`, `overwrite`). Every request carries `Authorization: Bearer KEY`;
//! [`super::key`] has checked the key and the URL. What Grafana answers is printed escaped and
//! shortened (a hostile server must not drive the terminal), with the key and a password in the
//! URL blanked.

use std::time::Duration;

use anyhow::anyhow;
use serde_json::{Value, json};

use crate::text::{cap, clean, redact_passwords};

/// How many characters of a server's text a message quotes.
const SERVER_TEXT_MAX: usize = 300;

/// Secrets at least this long are also blanked wherever they appear in a message (a server may
/// echo the key back); shorter ones would blank ordinary words.
const SCRUB_MIN: usize = 8;

/// Why a push did not happen.
pub(crate) enum PushError {
    /// Grafana answered, with an error status.
    Refused(String),
    /// No answer (connection refused, name not found, timeout, TLS).
    Unreachable(anyhow::Error),
}

/// Grafana's HTTP API at one base URL, with one key.
pub(crate) struct Client {
    base: String,
    auth: String,
    agent: ureq::Agent,
    /// Blanked in every message: the key and the URL's password, when long enough to find.
    secrets: Vec<String>,
}

impl Client {
    pub(crate) fn new(base: &str, key: &str) -> Self {
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
        Client {
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
pub(crate) fn push(
    grafana: &Client,
    dashboard: &Value,
    folder: Option<&str>,
) -> Result<String, PushError> {
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
    fn messages_blank_the_key_and_the_password_and_quote_the_server_escaped_and_short() {
        let g = Client::new(
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
        let g = Client::new("http://u:pw@h", "key");
        assert_eq!(g.say("a key, a pw"), "a key, a pw");
    }
}
