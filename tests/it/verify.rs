//! `verify`: good bundles pass; every kind of tampering is named, with exit 1.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;

use crate::common::{Book, Run, roce_gen, tmp};

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
    let tar = builder.into_inner().unwrap();
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&tar).unwrap();
    gz.finish().unwrap()
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
