//! `verify`: good bundles pass; every kind of tampering is named, with exit 1.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;

use crate::common::{Book, Run, roce_gen, roce_gen_env, tmp};

fn generated() -> tempfile::TempDir {
    let dir = tmp();
    Book::base().write(dir.path(), "plan.xlsx");
    assert_eq!(
        roce_gen(dir.path(), &["generate", "plan.xlsx", "-o", "out"]).code,
        0
    );
    dir
}

fn failed(run: &Run, needle: &str) {
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(
        run.stdout.contains(needle),
        "expected {needle:?} in:\n{}",
        run.stdout
    );
}

/// The tarball a builder holds, gzipped.
fn gzipped(builder: tar::Builder<Vec<u8>>) -> Vec<u8> {
    let tar = builder.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
}

/// Re-packs a bundle tarball with one file's bytes (and mode) changed.
fn repack(src: &[u8], file: &str, bytes: Option<&[u8]>, mode: Option<u32>) -> Vec<u8> {
    let files = roce_gen::testing::read_tarball(src).unwrap();
    let mut builder = tar::Builder::new(Vec::new());
    for (name, (content, m)) in &files {
        let mut h = tar::Header::new_gnu();
        let content = if name == file {
            bytes.unwrap_or(content)
        } else {
            content
        };
        h.set_size(content.len() as u64);
        h.set_mode(if name == file {
            mode.or(*m).unwrap()
        } else {
            m.unwrap()
        });
        builder
            .append_data(&mut h, format!("h1/{name}"), content)
            .unwrap();
    }
    gzipped(builder)
}

#[test]
fn good_output_folder_tarball_and_unpacked_bundle_verify() {
    let dir = generated();
    let unpacked = dir.path().join("unpacked");
    std::fs::create_dir(&unpacked).unwrap();
    assert!(
        Command::new("tar")
            .args(["-xzf", "out/h1.tar.gz", "-C", "unpacked"])
            .current_dir(dir.path())
            .status()
            .unwrap()
            .success()
    );
    // Results written inside the bundle folder are not part of it.
    std::fs::create_dir(unpacked.join("h1/results")).unwrap();
    std::fs::write(unpacked.join("h1/results/h1.precheck.json"), "{}").unwrap();
    let run = roce_gen(
        dir.path(),
        &["verify", "out", "out/h1.tar.gz", "unpacked/h1"],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(run.stdout, "ok: out\nok: out/h1.tar.gz\nok: unpacked/h1\n");
    // Then what was not checked, and what to do, as every command says.
    assert_eq!(
        run.stderr,
        "warning: out: run-here.sh was checked against nothing but the folder itself: give \
         --anchor (the sha256 generate printed) or --public-key to check where it came from\n\
         next: run `bash run-here.sh precheck` on each host (or `./precheck.sh` in a bundle's folder)\n"
    );
    // With the anchor generate printed, nothing is left unsaid.
    let anchor =
        roce_gen::testing::sha256_hex(&std::fs::read(dir.path().join("out/run-here.sh")).unwrap());
    let run = roce_gen(dir.path(), &["verify", "out", "--anchor", &anchor]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(
        run.stderr,
        "next: run `bash run-here.sh precheck` on each host (or `./precheck.sh` in a bundle's folder)\n"
    );
}

use std::process::Command;

#[test]
fn a_changed_file_in_a_tarball_is_named() {
    let dir = generated();
    let src = std::fs::read(dir.path().join("out/h1.tar.gz")).unwrap();
    let evil = repack(&src, "apply.sh", Some(b"#!/bin/sh\nreboot\n"), None);
    std::fs::write(dir.path().join("evil.tar.gz"), &evil).unwrap();
    let run = roce_gen(dir.path(), &["verify", "evil.tar.gz"]);
    failed(
        &run,
        "FAILED: evil.tar.gz: apply.sh: sha256 does not match SHA256SUMS",
    );
    failed(
        &run,
        "FAILED: evil.tar.gz: apply.sh: size or sha256 does not match manifest.json",
    );
    assert!(
        run.stderr
            .starts_with("next: generate the bundles again from the plan"),
        "{}",
        run.transcript()
    );

    let chmod = repack(&src, "precheck.sh", None, Some(0o777));
    std::fs::write(dir.path().join("chmod.tar.gz"), &chmod).unwrap();
    failed(
        &roce_gen(dir.path(), &["verify", "chmod.tar.gz"]),
        "precheck.sh: mode 0777, manifest.json says 0755",
    );

    // The same tampered tarball inside an output folder: its sha256 no longer matches the index.
    std::fs::write(dir.path().join("out/h1.tar.gz"), &evil).unwrap();
    let run = roce_gen(dir.path(), &["verify", "out"]);
    failed(
        &run,
        "FAILED: out: h1.tar.gz: sha256 does not match index.json",
    );
    failed(
        &run,
        "FAILED: out: h1.tar.gz: sha256 does not match SHA256SUMS",
    );
}

#[test]
fn changed_missing_extra_and_unlisted_files_in_a_folder_are_named() {
    let dir = generated();
    let b = dir.path().join("b");
    std::fs::create_dir(&b).unwrap();
    assert!(
        Command::new("tar")
            .args(["-xzf", "out/h1.tar.gz", "-C", "b"])
            .current_dir(dir.path())
            .status()
            .unwrap()
            .success()
    );
    let bundle = b.join("h1");
    std::fs::write(bundle.join("rollback.sh"), "#!/bin/sh\n").unwrap();
    std::fs::remove_file(bundle.join("README.txt")).unwrap();
    std::fs::write(bundle.join("extra.sh"), "echo hi\n").unwrap();
    std::fs::set_permissions(
        bundle.join("apply.sh"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    let run = roce_gen(dir.path(), &["verify", "b/h1"]);
    for needle in [
        "rollback.sh: sha256 does not match SHA256SUMS",
        "README.txt: listed in SHA256SUMS but missing",
        "extra.sh: not listed in SHA256SUMS",
        "extra.sh: not listed in manifest.json",
        "apply.sh: mode 0644, manifest.json says 0755",
    ] {
        failed(&run, needle);
    }
}

#[test]
fn a_corrupt_tarball_and_a_path_that_is_nothing_are_reported() {
    let dir = generated();
    let mut bytes = std::fs::read(dir.path().join("out/h2.tar.gz")).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0xff;
    std::fs::write(dir.path().join("broken.tar.gz"), &bytes).unwrap();
    failed(
        &roce_gen(dir.path(), &["verify", "broken.tar.gz"]),
        "FAILED: broken.tar.gz:",
    );
    let run = roce_gen(dir.path(), &["verify", "nowhere"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
}

/// Asserts that nothing a run printed (stdout and stderr) holds a raw control character other
/// than the newline, DEL, a C1 control or a bidi control: what a hostile name could use to
/// redraw the screen.
pub(crate) fn assert_escaped(run: &Run) {
    let printed = format!("{}{}", run.stdout, run.stderr);
    let raw: Vec<(usize, char)> = printed
        .char_indices()
        .filter(|(_, c)| crate::ingest::forbidden(*c))
        .collect();
    assert!(raw.is_empty(), "raw {raw:?} in:\n{}", run.transcript());
}

/// A bundle tarball whose one member, a symbolic link, is named to draw a fake success line
/// over the real one and hide what follows.
fn spoofing_tarball() -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    let mut h = tar::Header::new_gnu();
    h.set_entry_type(tar::EntryType::Symlink);
    h.set_size(0);
    h.set_mode(0o777);
    builder
        .append_link(
            &mut h,
            "gpu-001/\u{1b}[2K\rok: all bundles verified \u{1b}[8m",
            "/etc/passwd",
        )
        .unwrap();
    gzipped(builder)
}

#[test]
fn hostile_member_names_checksum_lines_and_paths_are_printed_escaped() {
    let dir = generated();
    let p = dir.path();
    std::fs::write(p.join("esc.tar.gz"), spoofing_tarball()).unwrap();
    let run = roce_gen(p, &["verify", "esc.tar.gz"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert_escaped(&run);
    assert_eq!(
        run.stdout,
        "FAILED: esc.tar.gz: not a bundle tarball: gpu-001/\\u{1b}[2K\\u{d}ok: all bundles \
         verified \\u{1b}[8m: unexpected entry of type Symlink\n"
    );

    // A line of the folder's SHA256SUMS naming a file that is not there, in green.
    let mut sums = std::fs::read_to_string(p.join("out/SHA256SUMS")).unwrap();
    sums.push_str(&format!("{}  \u{1b}[32mok: d2\u{1b}[0m\n", "0".repeat(64)));
    std::fs::write(p.join("out/SHA256SUMS"), sums).unwrap();
    let run = roce_gen(p, &["verify", "out"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert_escaped(&run);
    assert_eq!(
        run.stdout,
        "FAILED: out: SHA256SUMS: its sha256 is not the one run-here.sh carries: one of them is \
         stale or was altered\n\
         FAILED: out: \\u{1b}[32mok: d2\\u{1b}[0m: listed in SHA256SUMS but missing\n"
    );

    // The JSON stays a document that means the raw names, with no raw control in its bytes.
    let json = roce_gen(p, &["verify", "--format", "json", "esc.tar.gz", "out"]);
    assert_eq!(json.code, 1, "{}", json.transcript());
    assert_escaped(&json);
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let problems = |i: usize| doc["paths"][i]["problems"][0].as_str().unwrap().to_string();
    assert!(
        problems(0).contains("gpu-001/\u{1b}[2K\rok: all"),
        "{}",
        json.stdout
    );
    // (after the folder's SHA256SUMS that no longer matches run-here.sh)
    assert!(
        doc["paths"][1]["problems"][1]
            .as_str()
            .unwrap()
            .starts_with("\u{1b}[32mok: d2"),
        "{}",
        json.stdout
    );

    // A path on the command line that is nothing at all: the error line escapes it too; a
    // bidi override in a file name is shown, not obeyed.
    let run = roce_gen(p, &["verify", "\u{1b}[31mX"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_escaped(&run);
    assert_eq!(
        run.stderr,
        "error: \\u{1b}[31mX: not a bundle tarball, a bundle folder or an output folder of \
         roce-gen generate\n"
    );
    std::fs::write(p.join("\u{202e}zg.rat.exe"), b"not gzip").unwrap();
    let run = roce_gen(p, &["verify", "\u{202e}zg.rat.exe"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert_escaped(&run);
    assert!(
        run.stdout
            .starts_with("FAILED: \\u{202e}zg.rat.exe: not a bundle tarball: not gzip"),
        "{}",
        run.stdout
    );
}

#[test]
fn links_folders_and_other_files_a_bundle_folder_does_not_list_are_named() {
    let dir = generated();
    let p = dir.path();
    let b = p.join("b");
    std::fs::create_dir(&b).unwrap();
    assert!(
        Command::new("tar")
            .args(["-xzf", "out/h1.tar.gz", "-C", "b"])
            .current_dir(p)
            .status()
            .unwrap()
            .success()
    );
    let bundle = b.join("h1");
    std::os::unix::fs::symlink("/etc/passwd", bundle.join("evil-link")).unwrap();
    std::os::unix::fs::symlink("/etc", bundle.join("\u{1b}[2Kok")).unwrap();
    std::fs::create_dir_all(bundle.join("sub/deeper")).unwrap();
    std::fs::write(bundle.join("sub/inner.sh"), "echo hi\n").unwrap();
    std::fs::create_dir(bundle.join("empty")).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(bundle.join("pipe"))
            .status()
            .unwrap()
            .success()
    );
    // A listed file replaced by a link to an identical copy elsewhere.
    std::fs::rename(bundle.join("plan.sh"), p.join("plan.sh")).unwrap();
    std::os::unix::fs::symlink(p.join("plan.sh"), bundle.join("plan.sh")).unwrap();

    let run = roce_gen(p, &["verify", "b/h1"]);
    assert_escaped(&run);
    let links = "a bundle holds only the files manifest.json lists";
    for needle in [
        format!("FAILED: b/h1: evil-link: a symbolic link (to /etc/passwd); {links}"),
        format!("FAILED: b/h1: \\u{{1b}}[2Kok: a symbolic link (to /etc); {links}"),
        format!(
            "FAILED: b/h1: plan.sh: a symbolic link (to {}); {links}",
            p.join("plan.sh").display()
        ),
        "FAILED: b/h1: plan.sh: listed in SHA256SUMS but missing".into(),
        "FAILED: b/h1: sub/inner.sh: not listed in manifest.json".into(),
        "FAILED: b/h1: sub/deeper/: an empty folder, not in manifest.json".into(),
        "FAILED: b/h1: empty/: an empty folder, not in manifest.json".into(),
        format!("FAILED: b/h1: pipe: not a regular file; {links}"),
    ] {
        failed(&run, &needle);
    }
    // The same folder without them verifies again.
    for extra in ["evil-link", "\u{1b}[2Kok", "pipe", "plan.sh"] {
        std::fs::remove_file(bundle.join(extra)).unwrap();
    }
    std::fs::remove_dir_all(bundle.join("sub")).unwrap();
    std::fs::remove_dir(bundle.join("empty")).unwrap();
    std::fs::rename(p.join("plan.sh"), bundle.join("plan.sh")).unwrap();
    let run = roce_gen(p, &["verify", "b/h1"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
}

/// The chain of trust, from the anchor down: whoever rewrites a tarball, its SHA256SUMS line and
/// run-here.sh's copy of SHA256SUMS's sha256 to match makes a folder that verifies against
/// itself (said, not passed silently) and fails against the anchor generate printed.
#[test]
fn the_folder_is_checked_from_the_anchor_down_and_a_consistent_forgery_fails_only_there() {
    let dir = generated();
    let p = dir.path();
    let out = p.join("out");
    let sha = |name: &str| roce_gen::testing::sha256_hex(&std::fs::read(out.join(name)).unwrap());
    let anchor = sha("run-here.sh");
    assert!(
        !std::fs::read_to_string(out.join("SHA256SUMS"))
            .unwrap()
            .contains("run-here.sh"),
        "run-here.sh vouches for SHA256SUMS, not the other way round"
    );
    let run_here = std::fs::read_to_string(out.join("run-here.sh")).unwrap();
    assert!(
        run_here.contains(&format!("RG_SUMS_SHA256={}\n", sha("SHA256SUMS"))),
        "run-here.sh carries SHA256SUMS's sha256"
    );

    // Not a sha256: a usage error, nothing verified.
    let run = roce_gen(p, &["verify", "out", "--anchor", "abc"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains("--anchor \"abc\" is not a sha256"),
        "{}",
        run.stderr
    );

    // Another tarball for h1 (here the same files packed again: a bundle consistent in itself,
    // as a forger would rebuild it) with its SHA256SUMS line to match: SHA256SUMS no longer
    // matches run-here.sh.
    let tarball = std::fs::read(out.join("h1.tar.gz")).unwrap();
    let forged = repack(&tarball, "", None, None);
    assert_ne!(forged, tarball);
    std::fs::write(out.join("h1.tar.gz"), &forged).unwrap();
    let sums = std::fs::read_to_string(out.join("SHA256SUMS"))
        .unwrap()
        .replace(&sha256_of(&tarball), &sha256_of(&forged));
    std::fs::write(out.join("SHA256SUMS"), &sums).unwrap();
    let index = std::fs::read_to_string(out.join("index.json"))
        .unwrap()
        .replace(&sha256_of(&tarball), &sha256_of(&forged));
    std::fs::write(out.join("index.json"), &index).unwrap();
    let run = roce_gen(p, &["verify", "out"]);
    assert_eq!(
        run.stdout,
        "FAILED: out: SHA256SUMS: its sha256 is not the one run-here.sh carries: one of them is \
         stale or was altered\n",
        "{}",
        run.transcript()
    );

    // run-here.sh rewritten to carry the forged SHA256SUMS (and the forged tarball's sha256):
    // the folder agrees with itself, which verify says is all it checked.
    let forged_run_here = run_here.replace(&sha256_of(&tarball), &sha256_of(&forged));
    let forged_run_here = replace_carried_sums(&forged_run_here, &sha256_of(sums.as_bytes()));
    std::fs::write(out.join("run-here.sh"), forged_run_here).unwrap();
    let run = roce_gen(p, &["verify", "out"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stderr.contains(
            "warning: out: run-here.sh was checked against nothing but the folder itself"
        ),
        "{}",
        run.stderr
    );
    // Against the anchor: refused, naming both values.
    let run = roce_gen(p, &["verify", "out", "--anchor", &anchor.to_uppercase()]);
    failed(
        &run,
        &format!(
            "FAILED: out: run-here.sh: sha256 {} is not the trust anchor {anchor}: the folder is not the one generate made, or was altered; run nothing from it",
            sha("run-here.sh")
        ),
    );
    let json = roce_gen(
        p,
        &["verify", "--format", "json", "out", "--anchor", &anchor],
    );
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(doc["paths"][0]["anchored"], true, "{}", json.stdout);
    assert_eq!(doc["paths"][0]["ok"], false, "{}", json.stdout);
}

fn sha256_of(bytes: &[u8]) -> String {
    roce_gen::testing::sha256_hex(bytes)
}

/// `run_here` with its `RG_SUMS_SHA256=` value replaced by `sum`.
fn replace_carried_sums(run_here: &str, sum: &str) -> String {
    run_here
        .lines()
        .map(|l| match l.trim_start().strip_prefix("RG_SUMS_SHA256=") {
            Some(_) => format!("  RG_SUMS_SHA256={sum}"),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// `generate --sign KEY` with the system's openssl: run-here.sh.sig verifies with the public key
/// (by openssl, as a host checks it, and by `verify --public-key`), is the same bytes on a second
/// run (RSA), goes when a later run is not signed, and an altered run-here.sh or another key
/// fails. A key openssl cannot use is an error naming it, with nothing written.
#[test]
fn a_signed_folder_verifies_with_the_sites_public_key_and_nothing_else() {
    let Some(()) = crate::common::prerequisite(
        crate::common::on_path("openssl"),
        "openssl is not installed",
        "generate --sign",
    ) else {
        return;
    };
    let dir = generated();
    let p = dir.path();
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(p)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).to_string()
    };
    crate::common::site_key(p, "site");
    crate::common::site_key(p, "other");
    let run = roce_gen(
        p,
        &["generate", "plan.xlsx", "-o", "out", "--sign", "site.pem"],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("signed: run-here.sh.sig is run-here.sh's signature by site.pem;"),
        "{}",
        run.stderr
    );
    let sig = std::fs::read(p.join("out/run-here.sh.sig")).unwrap();
    // As a host checks it.
    assert_eq!(
        openssl(&[
            "dgst",
            "-sha256",
            "-verify",
            "site.pub.pem",
            "-signature",
            "out/run-here.sh.sig",
            "out/run-here.sh"
        ]),
        "Verified OK\n"
    );
    let readme = std::fs::read_to_string(p.join("out/README.txt")).unwrap();
    assert!(
        readme.contains(
            "openssl dgst -sha256 -verify PUBLIC_KEY.pem -signature run-here.sh.sig run-here.sh"
        ),
        "{readme}"
    );
    let run = roce_gen(p, &["verify", "out", "--public-key", "site.pub.pem"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
    // Deterministic with an RSA key.
    let run = roce_gen(
        p,
        &[
            "-q",
            "generate",
            "plan.xlsx",
            "-o",
            "out",
            "--sign",
            "site.pem",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(std::fs::read(p.join("out/run-here.sh.sig")).unwrap(), sig);
    // Another key's public half does not verify it.
    let run = roce_gen(p, &["verify", "out", "--public-key", "other.pub.pem"]);
    failed(
        &run,
        "FAILED: out: run-here.sh.sig: not run-here.sh's signature by other.pub.pem (openssl: Verification failure)",
    );
    // An altered run-here.sh fails.
    let good = std::fs::read(p.join("out/run-here.sh")).unwrap();
    let mut bad = good.clone();
    bad.extend_from_slice(b"touch /tmp/pwned\n");
    std::fs::write(p.join("out/run-here.sh"), &bad).unwrap();
    let run = roce_gen(p, &["verify", "out", "--public-key", "site.pub.pem"]);
    failed(
        &run,
        "FAILED: out: run-here.sh.sig: not run-here.sh's signature by site.pub.pem",
    );
    std::fs::write(p.join("out/run-here.sh"), &good).unwrap();

    // A key openssl cannot sign with: an error naming it, the folder as it was.
    std::fs::write(p.join("junk.pem"), "not a key\n").unwrap();
    let before = std::fs::read(p.join("out/index.json")).unwrap();
    let run = roce_gen(
        p,
        &["generate", "plan.xlsx", "-o", "out", "--sign", "junk.pem"],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("junk.pem: openssl could not sign with it (")
            && run
                .stderr
                .contains("the key must be an RSA or EC private key in PEM"),
        "{}",
        run.stderr
    );
    assert!(p.join("out/run-here.sh.sig").is_file());
    assert_eq!(std::fs::read(p.join("out/index.json")).unwrap(), before);
    let run = roce_gen(
        p,
        &[
            "generate",
            "plan.xlsx",
            "-o",
            "out",
            "--sign",
            "missing.pem",
        ],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("missing.pem: could not read the signing key"),
        "{}",
        run.stderr
    );

    // A key with a passphrase, given in ROCE_GEN_KEY_PASSPHRASE: the same signature; a wrong
    // passphrase is openssl's error, and the passphrase is in no message.
    openssl(&[
        "pkey",
        "-in",
        "site.pem",
        "-aes-256-cbc",
        "-passout",
        "pass:s3cret-words",
        "-out",
        "locked.pem",
    ]);
    assert!(
        std::fs::read_to_string(p.join("locked.pem"))
            .unwrap()
            .contains("ENCRYPTED")
    );
    let run = roce_gen_env(
        p,
        &[
            "-q",
            "generate",
            "plan.xlsx",
            "-o",
            "out",
            "--sign",
            "locked.pem",
        ],
        &[("ROCE_GEN_KEY_PASSPHRASE", "s3cret-words")],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert_eq!(std::fs::read(p.join("out/run-here.sh.sig")).unwrap(), sig);
    let run = roce_gen_env(
        p,
        &["generate", "plan.xlsx", "-o", "out", "--sign", "locked.pem"],
        &[("ROCE_GEN_KEY_PASSPHRASE", "wrong-s3cret")],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("locked.pem: openssl could not sign with it ("),
        "{}",
        run.stderr
    );
    assert!(!run.transcript().contains("s3cret"), "{}", run.transcript());

    // A later run without --sign leaves no signature of an earlier run-here.sh behind.
    let run = roce_gen(p, &["-q", "generate", "plan.xlsx", "-o", "out"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(!p.join("out/run-here.sh.sig").exists());
    let run = roce_gen(p, &["verify", "out", "--public-key", "site.pub.pem"]);
    failed(
        &run,
        "FAILED: out: run-here.sh.sig: missing; run-here.sh is not signed",
    );
}
