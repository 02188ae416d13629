//! The Grafana API key: where it comes from (`ROCE_GEN_GRAFANA_API_KEY`, else the config's key
//! file, else the config's key), what it may look like, and where it may be sent (plain http only
//! to this machine unless `--insecure-http`). No message here prints the key.

use std::net::IpAddr;
use std::path::Path;

use anyhow::{Result, anyhow, bail};

use crate::text::{clean, redact_passwords};

/// The environment variable that gives the API key; it wins over the config's key file and key.
pub(crate) const API_KEY_ENV: &str = "ROCE_GEN_GRAFANA_API_KEY";

/// The largest key file read. A token is under 100 bytes: a bigger file is the wrong file.
const KEY_FILE_MAX: u64 = 4096;

/// The key: `ROCE_GEN_GRAFANA_API_KEY`, else `file`, else the config's `key`; `None` when none
/// is set. `config_file` names the config in messages. Read only for a push, so a key file that
/// is missing stops nothing else.
pub(crate) fn api_key(
    file: Option<&Path>,
    key: Option<&str>,
    config_file: Option<&str>,
) -> Result<Option<String>> {
    if let Some(value) = std::env::var_os(API_KEY_ENV) {
        let Some(value) = value.to_str() else {
            bail!("{API_KEY_ENV} is not UTF-8 text");
        };
        // Empty is unset, as in the config file.
        if !value.trim().is_empty() {
            return checked_key(value.trim(), API_KEY_ENV).map(Some);
        }
    }
    if let Some(path) = file {
        return read_key_file(path).map(Some);
    }
    key.map(|key| checked_key(key, config_file.unwrap_or("the config file")))
        .transpose()
}

/// The key from its file: a regular file of at most [`KEY_FILE_MAX`] bytes, its text trimmed.
fn read_key_file(path: &Path) -> Result<String> {
    let name = path.display().to_string();
    let bytes = crate::files::read_regular_file(path, KEY_FILE_MAX, "Grafana API key file")?;
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

/// Grafana's base URL (without a trailing `/`), once it is an http(s) URL the key may be sent
/// to: plain http only to this machine unless `insecure_http`, since anyone on the path could
/// read the key.
pub(crate) fn checked_url(url: &str, insecure_http: bool) -> Result<&str> {
    let base = url.trim_end_matches('/');
    let shown = clean(&redact_passwords(url));
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        bail!("Grafana URL \"{shown}\" is not an http:// or https:// URL");
    }
    check_transport(base, &shown, insecure_http)?;
    Ok(base)
}

/// Refuses plain http to another machine. `shown` is the URL as messages may print it.
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
    fn the_base_url_loses_its_trailing_slash_and_must_be_http() {
        assert_eq!(
            checked_url("https://grafana.lab/", false).unwrap(),
            "https://grafana.lab"
        );
        assert_eq!(
            checked_url("ftp://u:secret@grafana.lab", false)
                .unwrap_err()
                .to_string(),
            "Grafana URL \"ftp://u:***@grafana.lab\" is not an http:// or https:// URL"
        );
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
