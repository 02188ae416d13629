//! The golden case: `golden/<case>/plan.json` regenerated and compared byte for byte with the
//! committed, unpacked bundles. `ROCE_GEN_BLESS=1` rewrites them after an intended change.

use std::collections::BTreeMap;
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

#[test]
fn golden_cases_regenerate_byte_for_byte() {
    for case in ["lab-2node"] {
        let dir = golden_dir(case);
        let fresh = generate_unpacked(&dir.join("plan.json"));
        if std::env::var_os("ROCE_GEN_BLESS").is_some() {
            let _ = std::fs::remove_dir_all(dir.join("bundles"));
            for (rel, bytes) in &fresh {
                let path = dir.join(rel);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(&path, bytes).unwrap();
            }
            continue;
        }
        let old = committed(&dir);
        let names = |m: &BTreeMap<String, Vec<u8>>| m.keys().cloned().collect::<Vec<_>>();
        assert_eq!(
            names(&fresh),
            names(&old),
            "golden/{case}: file list differs; run ROCE_GEN_BLESS=1 cargo test --test it golden"
        );
        for (rel, bytes) in &fresh {
            if bytes != &old[rel] {
                let diff = similar::TextDiff::from_lines(
                    String::from_utf8_lossy(&old[rel]).as_ref(),
                    String::from_utf8_lossy(bytes).as_ref(),
                )
                .unified_diff()
                .header("committed", "generated")
                .to_string();
                panic!(
                    "golden/{case}/{rel} differs (ROCE_GEN_BLESS=1 cargo test --test it golden to accept):\n{diff}"
                );
            }
        }
    }
}

/// `templates/host/plan.sh`, the example of the per-host data file that the shell sources are
/// checked against, is node-a's of the golden case (`ROCE_GEN_BLESS=1` rewrites it too).
#[test]
fn the_checked_in_data_file_example_is_a_real_one() {
    let fresh = generate_unpacked(&golden_dir("lab-2node").join("plan.json"));
    let generated = &fresh["bundles/node-a/plan.sh"];
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/host/plan.sh");
    if std::env::var_os("ROCE_GEN_BLESS").is_some() {
        std::fs::write(&example, generated).unwrap();
    }
    assert_eq!(
        String::from_utf8_lossy(&std::fs::read(&example).unwrap()),
        String::from_utf8_lossy(generated),
        "templates/host/plan.sh is not node-a's plan.sh (ROCE_GEN_BLESS=1 cargo test --test it golden)"
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
