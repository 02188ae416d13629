//! The site's signature over `run-here.sh`, made and checked by the system's `openssl` — the
//! same command every host runs to check it (`openssl dgst -sha256 -verify`, in every OpenSSL
//! since 1.0), so that what roce-gen writes is what the hosts can read. The key never passes
//! through roce-gen: openssl reads it, and asks for its passphrase on the terminal itself (or
//! reads it from [`PASSPHRASE_ENV`]).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// The file beside `run-here.sh` that holds its signature.
pub(crate) const SIGNATURE: &str = "run-here.sh.sig";

/// Where openssl reads the key's passphrase when it is set (`-passin env:…`); otherwise it asks
/// on the terminal.
pub(crate) const PASSPHRASE_ENV: &str = "ROCE_GEN_KEY_PASSPHRASE";

/// The signature of `data` by the private key in `key` (PEM; RSA or EC): what
/// `openssl dgst -sha256 -sign KEY` writes. With an RSA key it is the same bytes every run.
pub(crate) fn sign(key: &Path, data: &[u8]) -> Result<Vec<u8>> {
    // Read here first: openssl's message for a missing file is "Could not open file or uri".
    let pem = crate::files::read_regular_file(key, 64 << 10, "signing key")?;
    let mut cmd = Command::new("openssl");
    cmd.args(["dgst", "-sha256", "-sign"]).arg(key);
    // An encrypted key without the variable: openssl asks on the terminal, so it keeps it.
    let asks = std::env::var_os(PASSPHRASE_ENV).is_none()
        && String::from_utf8_lossy(&pem).contains("ENCRYPTED");
    if !asks && std::env::var_os(PASSPHRASE_ENV).is_some() {
        cmd.args(["-passin", &format!("env:{PASSPHRASE_ENV}")]);
    }
    let out = run(cmd, data, asks)?;
    if !out.status.success() || out.stdout.is_empty() {
        bail!(
            "{}: openssl could not sign with it ({}); the key must be an RSA or EC private key in \
             PEM, e.g. made with `openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:3072 \
             -out roce-gen-sign.pem`",
            key.display(),
            said(&out.stderr)
        );
    }
    Ok(out.stdout)
}

/// Whether `signature` is `data`'s signature by the public key in `public_key` (PEM), as
/// `openssl dgst -sha256 -verify` on a host finds it: `Ok(None)` when it is, else openssl's
/// reason.
pub(crate) fn check(public_key: &Path, signature: &[u8], data: &[u8]) -> Result<Option<String>> {
    crate::files::read_regular_file(public_key, 64 << 10, "public key")?;
    let mut sig = tempfile::NamedTempFile::new().context("a temporary file for the signature")?;
    sig.write_all(signature)
        .context("a temporary file for the signature")?;
    let mut cmd = Command::new("openssl");
    cmd.args(["dgst", "-sha256", "-verify"])
        .arg(public_key)
        .arg("-signature")
        .arg(sig.path());
    let out = run(cmd, data, false)?;
    // "Verified OK" and exit 0, or "Verification failure" (or a key it cannot read) and exit 1.
    Ok(
        if out.status.success() && out.stdout.starts_with(b"Verified OK") {
            None
        } else if out.stdout.starts_with(b"Verification failure") {
            Some("openssl: Verification failure".to_string())
        } else {
            Some(said(&out.stderr))
        },
    )
}

/// Runs `cmd` over `data` (given as a file, so that standard input stays free for a passphrase
/// prompt); `interactive`: openssl talks with the terminal itself (its prompt and messages).
fn run(mut cmd: Command, data: &[u8], interactive: bool) -> Result<std::process::Output> {
    let mut input = tempfile::NamedTempFile::new().context("a temporary file for openssl")?;
    input
        .write_all(data)
        .context("a temporary file for openssl")?;
    cmd.arg(input.path()).stdout(Stdio::piped());
    if interactive {
        cmd.stdin(Stdio::inherit()).stderr(Stdio::inherit());
    } else {
        cmd.stdin(Stdio::null()).stderr(Stdio::piped());
    }
    cmd.output().context(
        "cannot run openssl: the site's signature is made and checked with the system's \
         openssl; install it",
    )
}

/// openssl's message, one line, escaped and capped (it names files and keys, never a secret).
fn said(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let line = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let line = if line.is_empty() {
        "no message".to_string()
    } else {
        line
    };
    crate::text::clean(&crate::text::cap(&line, 300))
}
