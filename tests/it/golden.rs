//! The golden case: `golden/<case>/plan.json` regenerated and compared byte for byte with the
//! committed output, unpacked. The scripts and the library every bundle ships as they are in
//! `templates/` are not stored: each bundle's copy is checked against its source instead. The
//! rest (each host's data, manifest, checksums, unit and README, and the folder's own files) is
//! in `golden/<case>/`; `INSTA_UPDATE=always cargo test`, the snapshots' command, rewrites it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::{roce_gen, tmp};

/// Every file of a generation, unpacked: `index.json`, `SHA256SUMS`, `bundles/<host>/<file>`.
pub(crate) fn generate_unpacked(plan: &Path) -> BTreeMap<String, Vec<u8>> {
    let dir = tmp();
    let run = roce_gen(
        dir.path(),
        &["generate", &plan.display().to_string(), "-o", "out"],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let out = dir.path().join("out");
    let mut files = BTreeMap::new();
    for entry in walkdir::WalkDir::new(&out).sort_by_file_name() {
        let entry = entry.unwrap();
        if !entry.file_type().is_file() {
            continue;
        }
        let name = entry
            .path()
            .strip_prefix(&out)
            .unwrap()
            .display()
            .to_string();
        let bytes = std::fs::read(entry.path()).unwrap();
        match name.strip_suffix(".tar.gz") {
            Some(host) if !name.contains('/') => {
                for (file, (content, _)) in roce_gen::testing::read_tarball(&bytes).unwrap() {
                    files.insert(format!("bundles/{host}/{file}"), content);
                }
            }
            _ => {
                files.insert(name, bytes);
            }
        }
    }
    files
}

fn golden_dir(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("golden")
        .join(case)
}

/// Whether this run rewrites the records instead of checking them: insta's own setting, so that
/// one command updates the snapshots and the golden case alike.
fn updating() -> bool {
    std::env::var("INSTA_UPDATE").is_ok_and(|v| v == "always")
}

/// The files of `golden/<case>/` that are the output (not its plan or its README).
fn committed(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut files = BTreeMap::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.unwrap();
        let rel = entry
            .path()
            .strip_prefix(dir)
            .unwrap()
            .display()
            .to_string();
        if entry.file_type().is_file() && rel != "plan.json" && rel != "README.md" {
            files.insert(rel, std::fs::read(entry.path()).unwrap());
        }
    }
    files
}

fn assert_same(what: &str, expected: &[u8], got: &[u8], fix: &str) {
    if expected != got {
        let diff = similar::TextDiff::from_lines(
            String::from_utf8_lossy(expected).as_ref(),
            String::from_utf8_lossy(got).as_ref(),
        )
        .unified_diff()
        .header("expected", "generated")
        .to_string();
        panic!("{what} differs ({fix}):\n{diff}");
    }
}

/// Takes each bundle's plain sources out of `files` after checking that every one is byte for
/// byte its file in `templates/`. Which files those are comes from render.rs itself, and every
/// file of `templates/host/` that is not a template must be one of them (else it is not shipped).
fn take_plain_sources(files: &mut BTreeMap<String, Vec<u8>>) {
    let templates = Path::new(env!("CARGO_MANIFEST_DIR")).join("templates");
    let plain = roce_gen::testing::plain_shared_files();
    let mut in_host: Vec<String> = std::fs::read_dir(templates.join("host"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".j2") && !n.starts_with('.'))
        .map(|n| format!("host/{n}"))
        .collect();
    in_host.sort();
    let mut shipped: Vec<String> = plain.iter().map(|(_, src)| src.to_string()).collect();
    shipped.sort();
    assert_eq!(
        in_host, shipped,
        "templates/host/: the plain sources are not what render.rs ships as they are"
    );
    let hosts: BTreeSet<String> = files
        .keys()
        .filter_map(|k| Some(k.strip_prefix("bundles/")?.split_once('/')?.0.to_string()))
        .collect();
    assert!(!hosts.is_empty(), "{:?}", files.keys());
    for host in &hosts {
        for (name, source) in &plain {
            let rel = format!("bundles/{host}/{name}");
            let got = files
                .remove(&rel)
                .unwrap_or_else(|| panic!("{rel}: not in the bundle"));
            let expected = std::fs::read(templates.join(source)).unwrap();
            assert_same(
                &format!("{rel} (templates/{source})"),
                &expected,
                &got,
                "a bundle ships its plain sources byte for byte",
            );
        }
    }
}

/// Replaces the output stored in `dir` by `fresh`, keeping the plan and the README.
fn rewrite(dir: &Path, fresh: &BTreeMap<String, Vec<u8>>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap();
        if name == "plan.json" || name == "README.md" {
            continue;
        }
        if path.is_dir() {
            std::fs::remove_dir_all(&path).unwrap();
        } else {
            std::fs::remove_file(&path).unwrap();
        }
    }
    for (rel, bytes) in fresh {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }
}

#[test]
fn golden_cases_regenerate_byte_for_byte() {
    const FIX: &str =
        "INSTA_UPDATE=always cargo test --test it golden:: to accept, then review the diff";
    for case in ["lab-2node"] {
        let dir = golden_dir(case);
        let mut fresh = generate_unpacked(&dir.join("plan.json"));
        take_plain_sources(&mut fresh);
        if updating() {
            rewrite(&dir, &fresh);
            continue;
        }
        let old = committed(&dir);
        let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            names(&fresh),
            names(&old),
            "golden/{case}: file list differs ({FIX})"
        );
        for (rel, bytes) in &fresh {
            assert_same(&format!("golden/{case}/{rel}"), &old[rel], bytes, FIX);
        }
    }
}

/// A shipped source that is not its file in `templates/` is caught.
#[test]
fn a_plain_source_that_differs_from_templates_is_caught() {
    let mut fresh = generate_unpacked(&golden_dir("lab-2node").join("plan.json"));
    fresh
        .get_mut("bundles/node-b/lib-parse.sh")
        .unwrap()
        .push(b'#');
    let caught = std::panic::catch_unwind(move || take_plain_sources(&mut fresh))
        .expect_err("a changed byte passed");
    let message = caught.downcast_ref::<String>().unwrap();
    assert!(
        message.starts_with("bundles/node-b/lib-parse.sh (templates/host/lib-parse.sh) differs"),
        "{message}"
    );
}

/// Two hosts' bundles share every byte of their shell code: only the data file, `host.json`,
/// the manifest and the checksums differ.
#[test]
fn bundles_of_two_hosts_differ_only_in_their_data() {
    let fresh = generate_unpacked(&golden_dir("lab-2node").join("plan.json"));
    let files_of = |host: &str| -> BTreeMap<String, &Vec<u8>> {
        let prefix = format!("bundles/{host}/");
        fresh
            .iter()
            .filter_map(|(k, v)| k.strip_prefix(&prefix).map(|f| (f.to_string(), v)))
            .collect()
    };
    let (a, b) = (files_of("node-a"), files_of("node-b"));
    assert_eq!(a.keys().collect::<Vec<_>>(), b.keys().collect::<Vec<_>>());
    let differing: Vec<&str> = a
        .iter()
        .filter(|(name, bytes)| b[name.as_str()] != **bytes)
        .map(|(name, _)| name.as_str())
        .collect();
    assert_eq!(
        differing,
        ["SHA256SUMS", "host.json", "manifest.json", "plan.sh"]
    );
    assert!(a.len() > 10, "{:?}", a.keys());
}
