//! `generate`: reproducibility across time zones, umasks, folders and `SOURCE_DATE_EPOCH`, atomic
//! output, `--hosts`, stale bundles, bad templates. What a plan's bundles hold is the golden
//! case's (tests/it/golden.rs).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::{Book, C, roce_gen, s, tmp};

/// Every file under `dir` (relative name → bytes), to compare whole folders.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path().strip_prefix(dir).unwrap().display().to_string(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn generate_in(dir: &Path, env: &[(&str, &str)], umask: &str) -> std::process::Output {
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "umask {umask} && exec \"$0\" generate plan.xlsx -o out/deeper"
        ))
        .arg(env!("CARGO_BIN_EXE_roce-gen"))
        .current_dir(dir)
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

#[test]
fn output_is_byte_identical_whatever_the_clock_zone_umask_locale_or_folder() {
    let a = tmp();
    let b = tmp();
    let nested = b.path().join("x/y");
    std::fs::create_dir_all(&nested).unwrap();
    Book::base().write(a.path(), "plan.xlsx");
    std::fs::copy(a.path().join("plan.xlsx"), nested.join("plan.xlsx")).unwrap();
    let one = generate_in(a.path(), &[("TZ", "UTC"), ("LC_ALL", "C")], "022");
    let two = generate_in(
        &nested,
        &[("TZ", "Asia/Shanghai"), ("LC_ALL", "zh_CN.UTF-8")],
        "077",
    );
    assert!(
        one.status.success() && two.status.success(),
        "{one:?} {two:?}"
    );
    std::thread::sleep(std::time::Duration::from_millis(1100)); // a later second, too
    let three = generate_in(a.path(), &[("TZ", "America/New_York")], "002");
    assert!(three.status.success());
    let t1 = tree(&a.path().join("out/deeper"));
    assert_eq!(t1, tree(&nested.join("out/deeper")));
    assert_eq!(t1.len(), 8, "{:?}", t1.keys());
}

#[test]
fn source_date_epoch_sets_every_mtime_and_garbage_is_refused() {
    let dir = tmp();
    Book::base().write(dir.path(), "plan.xlsx");
    let run = |epoch: &str| {
        Command::new(env!("CARGO_BIN_EXE_roce-gen"))
            .args(["generate", "plan.xlsx", "-o", "out"])
            .current_dir(dir.path())
            .env("SOURCE_DATE_EPOCH", epoch)
            .output()
            .unwrap()
    };
    assert!(run("1700000000").status.success());
    let bytes = std::fs::read(dir.path().join("out/h1.tar.gz")).unwrap();
    let mut tar = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::GzDecoder::new(bytes.as_slice()),
        &mut tar,
    )
    .unwrap();
    let mut archive = tar::Archive::new(tar.as_slice());
    let mtimes: Vec<u64> = archive
        .entries()
        .unwrap()
        .map(|e| e.unwrap().header().mtime().unwrap())
        .collect();
    assert!(
        mtimes.len() > 5 && mtimes.iter().all(|m| *m == 1_700_000_000),
        "{mtimes:?}"
    );

    let bad = run("yesterday");
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("SOURCE_DATE_EPOCH \"yesterday\" is not a whole number"),
        "{err}"
    );
}

#[test]
fn an_invalid_plan_or_a_broken_template_leaves_the_folder_as_it_was() {
    let dir = tmp();
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    std::fs::write(out.join("index.json"), "{\"old\": true}").unwrap();
    std::fs::write(out.join("notes.txt"), "mine").unwrap();
    let before = tree(&out);

    let mut bad = Book::base();
    bad.sheet("NICs").set(1, "ip", s("10.0.0.300/24"));
    bad.write(dir.path(), "bad.xlsx");
    let run = roce_gen(dir.path(), &["generate", "bad.xlsx", "-o", "out"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(run.stderr.contains("nothing was written"), "{}", run.stderr);
    assert_eq!(tree(&out), before);

    Book::base().write(dir.path(), "plan.xlsx");
    let templates = dir.path().join("tpl/host");
    std::fs::create_dir_all(&templates).unwrap();
    std::fs::write(templates.join("plan.sh.j2"), "{{ no_such_value }}").unwrap();
    let run = roce_gen(
        dir.path(),
        &["generate", "plan.xlsx", "-o", "out", "--templates", "tpl"],
    );
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("failed to render `host/plan.sh` for host `h1`"),
        "{}",
        run.stderr
    );
    assert_eq!(tree(&out), before);

    let leftovers: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(".roce-gen"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "staging folders left behind: {leftovers:?}"
    );

    std::fs::write(dir.path().join("afile"), "x").unwrap();
    let run = roce_gen(dir.path(), &["generate", "plan.xlsx", "-o", "afile"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert_eq!(std::fs::read(dir.path().join("afile")).unwrap(), b"x");
}

#[test]
fn generating_some_hosts_keeps_the_other_bundles_and_merges_the_index() {
    let dir = tmp();
    Book::hosts(3).write(dir.path(), "plan.xlsx");
    assert_eq!(
        roce_gen(dir.path(), &["generate", "plan.xlsx", "-o", "out"]).code,
        0
    );
    let out = dir.path().join("out");
    std::fs::create_dir(out.join("results")).unwrap();
    std::fs::write(out.join("results/h1.precheck.json"), "{}").unwrap();
    let before = tree(&out);

    // The plan changes for h2 only; refreshing h2 keeps h1 and h3 byte for byte.
    let mut edited = Book::hosts(3);
    edited.sheet("NICs").set(3, "mtu", C::N(9000.0));
    edited.write(dir.path(), "plan.xlsx");
    let run = roce_gen(
        dir.path(),
        &["generate", "plan.xlsx", "-o", "out", "--hosts", "H2"],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stderr.contains(
            "note: 2 bundles in the folder are made from an earlier plan; their results will show as stale"
        ),
        "{}",
        run.stderr
    );
    let after = tree(&out);
    let names: Vec<&String> = after.keys().collect();
    assert_eq!(
        names,
        [
            "README.txt",
            "SHA256SUMS",
            "ansible/inventory.yml",
            "ansible/roce.yml",
            "h1.tar.gz",
            "h2.tar.gz",
            "h3.tar.gz",
            "index.json",
            "results/h1.precheck.json",
            "run-here.sh"
        ]
    );
    assert_eq!(after["h1.tar.gz"], before["h1.tar.gz"]);
    assert_eq!(after["h3.tar.gz"], before["h3.tar.gz"]);
    assert_ne!(after["h2.tar.gz"], before["h2.tar.gz"]);
    let index: serde_json::Value = serde_json::from_slice(&after["index.json"]).unwrap();
    let old: serde_json::Value = serde_json::from_slice(&before["index.json"]).unwrap();
    let hosts: Vec<(&str, Option<&str>)> = index["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["host"].as_str().unwrap(), h["plan_sha256"].as_str()))
        .collect();
    let old_sha = old["plan_sha256"].as_str().unwrap();
    assert_eq!(
        hosts,
        [("h1", Some(old_sha)), ("h2", None), ("h3", Some(old_sha))]
    );
    assert_ne!(index["plan_sha256"], old["plan_sha256"]);
    // run-here.sh and the inventory know every bundle, and the folder verifies.
    let run_here = String::from_utf8_lossy(&after["run-here.sh"]).into_owned();
    assert!(run_here.contains("h1.tar.gz") && run_here.contains("h3.tar.gz"));
    let verify = roce_gen(dir.path(), &["verify", "out"]);
    assert_eq!(verify.code, 0, "{}", verify.transcript());

    let run = roce_gen(
        dir.path(),
        &["generate", "plan.xlsx", "-o", "out", "--hosts", "h9"],
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr.contains("--hosts: no host \"h9\" in the plan"),
        "{}",
        run.stderr
    );
    let run = roce_gen(
        dir.path(),
        &[
            "generate",
            "--sample",
            "-o",
            "out2",
            "--hosts",
            "gpu-0003,gpu-004",
        ],
    );
    assert_eq!(run.code, 2);
    assert!(
        run.stderr
            .contains("--hosts: no host \"gpu-0003\" (did you mean gpu-003?) in the plan"),
        "{}",
        run.stderr
    );
}

#[test]
fn hosts_the_plan_drops_are_kept_with_a_warning_and_removed_with_prune() {
    let dir = tmp();
    Book::hosts(3).write(dir.path(), "three.xlsx");
    Book::hosts(1).write(dir.path(), "one.xlsx");
    assert_eq!(
        roce_gen(dir.path(), &["generate", "three.xlsx", "-o", "out"]).code,
        0
    );
    let out = dir.path().join("out");
    let run = roce_gen(dir.path(), &["generate", "one.xlsx", "-o", "out"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stderr.contains(
            "warning: kept the bundles of 2 hosts the plan no longer has: h2, h3 (--prune removes them)"
        ),
        "{}",
        run.stderr
    );
    assert!(out.join("h2.tar.gz").is_file() && out.join("h3.tar.gz").is_file());
    assert_eq!(roce_gen(dir.path(), &["verify", "out"]).code, 0);

    let run = roce_gen(
        dir.path(),
        &["generate", "one.xlsx", "-o", "out", "--prune"],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stderr
            .contains("removed the bundles of 2 hosts the plan no longer has: h2, h3"),
        "{}",
        run.stderr
    );
    let names: Vec<String> = tree(&out).into_keys().collect();
    assert!(names.contains(&"h1.tar.gz".to_string()));
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("h2") || n.starts_with("h3"))
    );
    let verify = roce_gen(dir.path(), &["verify", "out"]);
    assert_eq!(verify.code, 0, "{}", verify.transcript());
}

#[test]
fn a_customised_template_folder_overrides_only_what_it_has() {
    let dir = tmp();
    Book::base().write(dir.path(), "plan.xlsx");
    let templates = dir.path().join("tpl/host");
    std::fs::create_dir_all(&templates).unwrap();
    std::fs::write(
        templates.join("README.txt.j2"),
        "custom readme for cluster {{ cluster.name }}\n",
    )
    .unwrap();
    // A plain source is overridden by a file of the same name.
    std::fs::write(templates.join("lib-parse.sh"), "# custom readers\n").unwrap();
    let run = roce_gen(
        dir.path(),
        &["generate", "plan.xlsx", "-o", "out", "--templates", "tpl"],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    let files =
        roce_gen::testing::read_tarball(&std::fs::read(dir.path().join("out/h1.tar.gz")).unwrap())
            .unwrap();
    assert_eq!(files["README.txt"].0, b"custom readme for cluster t1\n");
    assert_eq!(files["lib-parse.sh"].0, b"# custom readers\n");
    assert!(String::from_utf8_lossy(&files["plan.sh"].0).contains("RG_HOST=h1"));
    assert!(String::from_utf8_lossy(&files["apply.sh"].0).contains("rg_apply_gate"));
}

#[test]
fn output_on_every_core_is_byte_identical_to_a_single_threaded_run() {
    let dir = tmp();
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/lab-2node/plan.json");
    let sample = dir.path().join("sample.xlsx");
    assert_eq!(
        roce_gen(dir.path(), &["sample", "-o", "sample.xlsx"]).code,
        0
    );
    for source in [plan.as_path(), sample.as_path()] {
        let run = |threads: &str, out: &str| {
            let status = Command::new(env!("CARGO_BIN_EXE_roce-gen"))
                .args(["generate", &source.display().to_string(), "-o", out])
                .current_dir(dir.path())
                .env("RAYON_NUM_THREADS", threads)
                .status()
                .unwrap();
            assert!(status.success());
            tree(&dir.path().join(out))
        };
        assert_eq!(run("1", "one"), run("4", "four"), "{}", source.display());
    }
}

/// The plan's identity is its normalized form: the workbook and its JSON conversion (and any
/// re-save) give bundles of one `plan_sha256`, the sha256 of what `roce-gen plan` prints, and
/// the same output byte for byte, so the golden case's JSON plan stands for a workbook too.
#[test]
fn a_workbook_and_its_json_conversion_are_the_same_plan() {
    let dir = tmp();
    Book::base().write(dir.path(), "plan.xlsx");
    let printed = roce_gen(dir.path(), &["plan", "plan.xlsx"]);
    assert_eq!(printed.code, 0, "{}", printed.transcript());
    std::fs::write(dir.path().join("plan.json"), &printed.stdout).unwrap();
    let identity = roce_gen::testing::sha256_hex(printed.stdout.as_bytes());
    let file_bytes =
        roce_gen::testing::sha256_hex(&std::fs::read(dir.path().join("plan.xlsx")).unwrap());
    assert_ne!(identity, file_bytes);
    for (plan, out) in [("plan.xlsx", "a"), ("plan.json", "b")] {
        let run = roce_gen(dir.path(), &["generate", plan, "-o", out]);
        assert_eq!(run.code, 0, "{}", run.transcript());
        let index: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join(out).join("index.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(index["plan_sha256"], identity.as_str(), "{plan}");
    }
    assert_eq!(tree(&dir.path().join("a")), tree(&dir.path().join("b")));
}

/// A bundle's files carry one recent fixed date (not tar's 2006 of old), and its README.txt says
/// why the date is fixed.
#[test]
fn bundle_files_carry_a_recent_fixed_date_and_say_why() {
    let dir = crate::common::tmp();
    let run = crate::common::roce_gen(dir.path(), &["generate", "--sample", "-o", "dist"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let file = std::fs::File::open(dir.path().join("dist/gpu-001.tar.gz")).unwrap();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut readme = String::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        // 2026-01-01 00:00:00 UTC.
        assert_eq!(entry.header().mtime().unwrap(), 1_767_225_600);
        if entry.path().unwrap().ends_with("README.txt") {
            std::io::Read::read_to_string(&mut entry, &mut readme).unwrap();
        }
    }
    assert!(
        readme.contains("Its files carry one fixed date"),
        "{readme}"
    );
}
