//! The generated scripts and unit as the tools see them: `bash -n`, shellcheck with no finding at
//! all, no bash feature newer than 4.2 (RHEL 7), and `systemd-analyze verify` with no error and
//! no warning. The tools are required: `.ci/run` installs them; a missing tool fails the test.

use std::path::Path;
use std::process::Command;

use crate::common::{require, tmp};
use crate::fakehost::for_each_bash;
use crate::golden::generate_unpacked;

fn golden_files() -> Vec<(String, Vec<u8>)> {
    let plan = Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/lab-2node/plan.json");
    generate_unpacked(&plan).into_iter().collect()
}

/// `shellcheck` with every optional finding (`style`) and the sources followed, as gcc-style
/// lines; empty when the file is clean. `templates/host/.shellcheckrc` points `source=` at the
/// script's own folder.
fn shellcheck(path: &Path) -> String {
    shellcheck_each(&[path.to_path_buf()]).remove(0)
}

/// [`shellcheck`] of each file, several at once (each follows the whole library, and the test
/// runner's other tests share the cores): the findings in the order of `paths`.
fn shellcheck_each(paths: &[std::path::PathBuf]) -> Vec<String> {
    let mut found = Vec::new();
    for batch in paths.chunks(8) {
        let children: Vec<_> = batch
            .iter()
            .map(|path| {
                Command::new("shellcheck")
                    .args([
                        "-x",
                        "-P",
                        "SCRIPTDIR",
                        "-s",
                        "bash",
                        "-S",
                        "style",
                        "-f",
                        "gcc",
                    ])
                    .arg(path)
                    .current_dir(path.parent().unwrap())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        for child in children {
            let sc = child.wait_with_output().unwrap();
            let mut out = String::from_utf8_lossy(&sc.stdout).to_string();
            if !sc.status.success() && out.is_empty() {
                out = format!("shellcheck failed: {}", String::from_utf8_lossy(&sc.stderr));
            }
            found.push(out);
        }
    }
    found
}

/// The bundle's shell sources as they are in the repository: the library, its parts and the
/// three scripts.
fn host_sources() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/host");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sh"))
        .collect();
    files.sort();
    files
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_shell_sources_parse_and_pass_shellcheck_without_findings() {
    require("shellcheck");
    let files = host_sources();
    let names: Vec<String> = files
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "apply.sh",
            "fabric.sh",
            "health.sh",
            "lib-checks.sh",
            "lib-fabric.sh",
            "lib-firmware.sh",
            "lib-gpu.sh",
            "lib-health.sh",
            "lib-lag.sh",
            "lib-nccl.sh",
            "lib-net.sh",
            "lib-netmgr.sh",
            "lib-parse.sh",
            "lib-persist.sh",
            "lib-probe.sh",
            "lib-rdma.sh",
            "lib-settings.sh",
            "lib-text.sh",
            "lib.sh",
            "precheck.sh",
            "rollback.sh"
        ]
    );
    // Beside a real data file, node-a's of the golden case, for lib.sh to source: no example
    // of one is kept in templates/host/.
    let dir = tmp();
    for path in &files {
        std::fs::copy(path, dir.path().join(path.file_name().unwrap())).unwrap();
    }
    let fresh = generate_unpacked(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("golden/lab-2node/plan.json"),
    );
    std::fs::write(dir.path().join("plan.sh"), &fresh["bundles/node-a/plan.sh"]).unwrap();
    let all: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .chain(["plan.sh"])
        .collect();
    let paths: Vec<std::path::PathBuf> = all.iter().map(|name| dir.path().join(name)).collect();
    for (name, path) in all.iter().zip(&paths) {
        let syntax = Command::new("bash").arg("-n").arg(path).output().unwrap();
        assert!(
            syntax.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&syntax.stderr)
        );
    }
    // Each part and lib.sh on its own, so that a finding in a part is not hidden behind the
    // script that sources it. The entry scripts share one check: shellcheck reports only the
    // findings of the file it is given, yet analyses all it follows, so each entry on its own cost
    // a whole library's analysis (about 14 s of CPU) for its twenty lines.
    let (entries, origin) = entry_scripts(dir.path(), &all);
    let mut covered: Vec<&str> = origin.iter().map(|(n, _)| n.as_str()).collect();
    covered.dedup();
    covered.retain(|n| !n.is_empty());
    assert_eq!(
        covered,
        [
            "apply.sh",
            "fabric.sh",
            "health.sh",
            "precheck.sh",
            "rollback.sh"
        ]
    );
    let mut checked: Vec<std::path::PathBuf> = all
        .iter()
        .filter(|name| !origin.iter().any(|(entry, _)| entry == *name))
        .map(|name| dir.path().join(name))
        .collect();
    checked.push(entries);
    for (path, findings) in checked.iter().zip(shellcheck_each(&checked)) {
        let name = path.file_name().unwrap().to_string_lossy();
        let findings = if name == ENTRIES {
            entry_findings(&findings, &origin)
        } else {
            findings
        };
        assert!(
            findings.is_empty(),
            "{name}: shellcheck findings:\n{findings}"
        );
    }
}

/// The shared check of the entry scripts names each finding by the entry's file and line, and a
/// script that sources the library twice is refused rather than checked half.
#[test]
fn the_entry_scripts_findings_are_named_by_their_own_file_and_line() {
    let dir = tmp();
    let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
    write("lib.sh", "#!/usr/bin/env bash\n");
    write(
        "b.sh",
        "#!/usr/bin/env bash\nRG_DIR=.\n. \"$RG_DIR/lib.sh\" || exit\necho $1\n",
    );
    write(
        "a.sh",
        "#!/usr/bin/env bash\n. \"$RG_DIR/lib.sh\" || exit\nrg_finish\n",
    );
    write(
        "lib-x.sh",
        "#!/usr/bin/env bash\n. \"$RG_DIR/lib.sh\" || exit\n",
    );
    let (path, origin) = entry_scripts(dir.path(), &["a.sh", "b.sh", "lib-x.sh", "lib.sh"]);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), origin.len());
    let at = lines.iter().position(|l| *l == "echo $1").unwrap();
    assert_eq!(origin[at], ("b.sh".to_string(), 4));
    assert_eq!(
        lines.iter().filter(|l| l.contains("lib.sh")).count(),
        2,
        "{text}"
    );
    let found = format!(
        "{ENTRIES}:{}:6: note: Double quote to prevent globbing and word splitting. [SC2086]\n\
         {ENTRIES}:1:1: note: a line of the check itself\n",
        at + 1
    );
    assert_eq!(
        entry_findings(&found, &origin),
        "b.sh:4:6: note: Double quote to prevent globbing and word splitting. [SC2086]\n\
         entry-scripts.sh (the check's own line 1):1: note: a line of the check itself\n"
    );
    write(
        "c.sh",
        "#!/usr/bin/env bash\n. \"$RG_DIR/lib.sh\" || exit\n. \"$RG_DIR/lib.sh\" || exit\n",
    );
    let twice = std::panic::catch_unwind(|| entry_scripts(dir.path(), &["c.sh"]));
    assert!(twice.is_err());
}

/// The file [`entry_scripts`] writes.
const ENTRIES: &str = "entry-scripts.sh";

/// Writes into `dir` one file that sources lib.sh once, then holds each entry script of `names`
/// (those that source lib.sh) as the body of a function called in a subshell, so that one
/// shellcheck analysis of the library covers all of them. Its first line of each entry's
/// function stands for the entry's first line (`#!`), so its line K of that function is the
/// entry's line K. Returns the file and, for each of its lines, the entry and the entry's line
/// (empty name for the lines this function adds).
fn entry_scripts(dir: &Path, names: &[&str]) -> (std::path::PathBuf, Vec<(String, usize)>) {
    const SOURCE: &str = ". \"$RG_DIR/lib.sh\" || exit";
    let mut text =
        String::from("#!/usr/bin/env bash\n# shellcheck source=lib.sh\n. ./lib.sh || exit\n");
    let mut origin: Vec<(String, usize)> = vec![(String::new(), 0); 3];
    for name in names {
        let body = std::fs::read_to_string(dir.join(name)).unwrap();
        let sources = body.lines().filter(|l| *l == SOURCE).count();
        if !name.ends_with(".sh") || name.starts_with("lib") || sources == 0 {
            continue;
        }
        assert_eq!(sources, 1, "{name}: sources lib.sh {sources} times");
        let func = format!("rg_entry_{}", name.trim_end_matches(".sh"));
        text += &format!("{func}() {{\n");
        origin.push((name.to_string(), 1));
        for (k, line) in body.lines().enumerate().skip(1) {
            // The library is followed once, above.
            text += if line == SOURCE { ":" } else { line };
            text.push('\n');
            origin.push((name.to_string(), k + 1));
        }
        text += &format!("}}\n({func} \"$@\")\n");
        origin.push((String::new(), 0));
        origin.push((String::new(), 0));
    }
    let path = dir.join(ENTRIES);
    std::fs::write(&path, text).unwrap();
    (path, origin)
}

/// shellcheck's gcc-style lines for [`ENTRIES`] as the entry scripts' own: `apply.sh:21:14: …`.
fn entry_findings(findings: &str, origin: &[(String, usize)]) -> String {
    findings
        .lines()
        .map(|line| {
            let rest = line.strip_prefix(ENTRIES).and_then(|r| r.strip_prefix(':'));
            let parsed = rest.and_then(|r| {
                let (number, tail) = r.split_once(':')?;
                let (name, at) = origin.get(number.parse::<usize>().ok()? - 1)?;
                Some(if name.is_empty() {
                    format!("{ENTRIES} (the check's own line {number}):{tail}")
                } else {
                    format!("{name}:{at}:{tail}")
                })
            });
            parsed.unwrap_or_else(|| line.to_string()) + "\n"
        })
        .collect()
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_test_harness_and_the_tooling_scripts_pass_shellcheck_too() {
    require("shellcheck");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Every shell file of the repository that is not part of a bundle: the simulated host and
    // its stand-ins, CI, the release and benchmark scripts. Found by their first line, so a new
    // one is checked without being listed here.
    let listed = Command::new("git")
        .args(["ls-files", "tests", ".ci", "scripts", "benches"])
        .current_dir(root)
        .output()
        .unwrap();
    let files: Vec<std::path::PathBuf> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(|l| root.join(l))
        .filter(|p| {
            std::fs::read(p).is_ok_and(|b| {
                b.starts_with(b"#!/usr/bin/env bash")
                    || b.starts_with(b"#!/bin/bash")
                    || b.starts_with(b"#!/bin/sh")
                    || b.starts_with(b"# shellcheck shell=bash")
            })
        })
        .collect();
    assert!(files.len() >= 20, "{files:?}");
    for (path, findings) in files.iter().zip(shellcheck_each(&files)) {
        assert!(
            findings.is_empty(),
            "{}: shellcheck findings:\n{findings}",
            path.display()
        );
    }
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn shellcheck_would_see_a_finding_in_a_library_part() {
    require("shellcheck");
    let dir = tmp();
    for path in host_sources() {
        std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
    }
    let part = dir.path().join("lib-parse.sh");
    let mut text = std::fs::read_to_string(&part).unwrap();
    text.push_str("rg_broken() { echo $unquoted_and_unassigned; }\n");
    std::fs::write(&part, text).unwrap();
    let findings = shellcheck(&part);
    assert!(findings.contains("SC2154"), "{findings}");
    assert!(findings.contains("SC2086"), "{findings}");
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_generated_shell_files_pass_shellcheck_too() {
    require("shellcheck");
    let dir = tmp();
    let files = golden_files();
    // Each bundle as it is on a host, so that shellcheck follows `. lib.sh` (-x).
    for (name, bytes) in &files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, bytes).unwrap();
    }
    let generated = [
        "bundles/node-a/plan.sh",
        "bundles/node-b/plan.sh",
        "run-here.sh",
    ];
    let paths: Vec<std::path::PathBuf> = generated.iter().map(|n| dir.path().join(n)).collect();
    for (name, findings) in generated.iter().zip(shellcheck_each(&paths)) {
        assert!(
            findings.is_empty(),
            "{name}: shellcheck findings:\n{findings}"
        );
    }
}

/// Runs a file of function tests of the bundle's shell (tests/host/NAME) under every bash: each
/// prints `N passed, M failed` and exits 1 on a failure.
fn function_tests(name: &str) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/host")
        .join(name);
    for_each_bash(|bash| {
        let out = Command::new("bash")
            .arg(&script)
            .arg(bash)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains(" passed, 0 failed"),
            "{name} under {bash}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

#[test]
fn the_readers_pass_their_tests_on_the_captured_outputs() {
    function_tests("parsers.sh");
}

/// The console text of the scripts and of run-here.sh (lib-text.sh): every control character,
/// bidi control and noncharacter escaped as the Rust side escapes them, clean UTF-8 kept, the
/// escaping before the ASCII folding of a plain console. Function tests, bash alone.
#[test]
fn the_console_text_is_escaped_and_clean_text_kept() {
    function_tests("text.sh");
}

/// The pure functions of the settings (lib-settings.sh): the planned values, the DSCP pairs,
/// the DSCP-map diff rollback restores with, apply --dry-run's simulation of a port with the
/// commands it prints and the checks it predicts, and the summary's change texts. Function
/// tests, bash alone: no host, no root, nothing run.
#[test]
fn the_settings_functions_pass_their_tests() {
    function_tests("settings.sh");
}

/// What keeps a run safe on a shared host (lib.sh, lib-persist.sh): two runs racing for a killed
/// run's lock never both hold it (200 rounds, both kinds of stale lock), a live run's lock is
/// respected and a killed one's free, files in shared folders are never written through a link,
/// and rollback's reader of the saved state names every line it cannot understand. Function
/// tests, no root, under every bash.
#[test]
fn the_run_lock_the_shared_file_writer_and_the_state_reader_pass_their_tests() {
    function_tests("lock.sh");
}

/// What the scripts know about the host (lib-checks.sh): host names by their short forms, a
/// renamed netdev found by its altname or planned PCI address and MAC (never one that misses
/// either, never one of several), the readers of `ip -o link show` and of the kernel's mount
/// tables, and the persistence warning of a root that does not survive a reboot. Function tests
/// on simulated hosts' plain trees (no root, no FUSE), under every bash.
#[test]
fn the_identity_functions_pass_their_tests() {
    function_tests("identity.sh");
}

/// Multi-rail address hygiene (lib-net.sh): arp_ignore, arp_announce and rp_filter combined as
/// the kernel does (the larger of `all` and the device's), the effective values that break
/// RDMA-CM, the reader of `ip route get` on the fixtures the ip stand-in prints from its route
/// table, and the sysctl.d file. Function tests, no root.
#[test]
fn the_multirail_functions_pass_their_tests() {
    function_tests("net.sh");
}

/// The fabric test (lib-fabric.sh): the reader of ib_write_bw's report on the fixtures from
/// perftest's formats, the counter deltas past 2^31, the per-priority shares, and the
/// ib_write_bw stand-in printing the fixtures' layout through the wire model. No root.
#[test]
fn the_fabric_functions_pass_their_tests() {
    function_tests("fabric.sh");
}

/// The GPU path's pure parts (lib-gpu.sh): the PCIe relation of two functions as nvidia-smi
/// topo -m names it, the ACS words, and NCCL's GPUDirect decision per NCCL version from the
/// peer-memory and DMA-BUF files of a root. Function tests, bash alone.
#[test]
fn the_gpu_functions_pass_their_tests() {
    function_tests("gpu.sh");
}

/// The time limit on driver files and the wait for a flapped link (lib.sh, lib-settings.sh): a
/// driver call that does not return costs the limit once and is a `tool_timeout` check, the wait
/// sleeps only after a flap and fails a link that stays down. Function tests, bash alone.
#[test]
fn the_driver_file_time_limit_and_the_link_wait_pass_their_tests() {
    function_tests("linkwait.sh");
}

/// The health run's readers and textfile (lib-health.sh): each mlx5 `ethtool -S` counter of the
/// fixture to its series, a name with a trailing space, a missing counter absent, HELP and TYPE
/// once per family. Function tests, bash alone.
#[test]
fn the_health_functions_pass_their_tests() {
    function_tests("health.sh");
}

/// run-here.sh carries the bundles' lib-text.sh byte for byte: one copy of the escaping.
#[test]
fn run_here_carries_the_bundles_console_text_functions_as_they_are() {
    let lib = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/host/lib-text.sh"),
    )
    .unwrap();
    let files: std::collections::BTreeMap<String, Vec<u8>> = golden_files().into_iter().collect();
    let run_here = String::from_utf8(files["run-here.sh"].clone()).unwrap();
    assert!(
        run_here.contains(&lib),
        "run-here.sh lacks lib-text.sh as it is"
    );
    let bundled = String::from_utf8(files["bundles/node-a/lib-text.sh"].clone()).unwrap();
    assert_eq!(bundled, lib);
}

/// Constructs that bash 4.2 (RHEL 7) lacks or treats differently.
const NEWER_THAN_BASH_4_2: &[(&str, &str)] = &[
    ("declare -n", "namerefs are bash 4.3"),
    ("local -n", "namerefs are bash 4.3"),
    ("mapfile -d", "mapfile -d is bash 4.4"),
    ("readarray -d", "readarray -d is bash 4.4"),
    ("wait -n", "wait -n is bash 4.3"),
    ("EPOCHSECONDS", "bash 5.0"),
    ("EPOCHREALTIME", "bash 5.0"),
    ("SRANDOM", "bash 5.1"),
    ("inherit_errexit", "bash 4.4"),
    ("BASH_ARGV0", "bash 5.0"),
    ("[-1]", "negative array indexes are bash 4.3"),
    ("@Q}", "${x@Q} is bash 4.4"),
    ("@E}", "${x@E} is bash 4.4"),
    ("@a}", "${x@a} is bash 4.4"),
    ("@P}", "${x@P} is bash 4.4"),
];

/// Finds what bash 4.2 would not run, line by line: the denylist, and `"${a[@]}"` without the
/// `${a[@]+…}` guard (an empty array is an unbound variable under `set -u` before bash 4.4).
fn bash42_findings(script: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (n, line) in script.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with('#') {
            continue;
        }
        for (needle, why) in NEWER_THAN_BASH_4_2 {
            if code.contains(needle) {
                found.push(format!("line {}: {needle}: {why}", n + 1));
            }
        }
        let mut rest = code;
        while let Some(at) = rest.find("\"${") {
            let tail = &rest[at..];
            let end = tail.find('}').unwrap_or(tail.len());
            let expansion = &tail[..end];
            let guarded = rest[..at].ends_with('+');
            if expansion.ends_with("[@]") && !guarded {
                found.push(format!(
                    "line {}: {expansion}}}\" may be an empty array under set -u",
                    n + 1
                ));
            }
            rest = &tail[end..];
        }
    }
    found
}

#[test]
fn the_bash_42_lint_catches_what_it_should() {
    let bad = "declare -n ref=x\nx=${a[-1]}\nfor v in \"${list[@]}\"; do :; done\necho \"${x@Q}\"\n# wait -n in a comment is fine\n";
    let found = bash42_findings(bad);
    assert_eq!(found.len(), 4, "{found:#?}");
    assert!(bash42_findings("for v in ${list[@]+\"${list[@]}\"}; do :; done\n").is_empty());
}

#[test]
fn scripts_use_nothing_newer_than_bash_42() {
    for path in host_sources() {
        let found = bash42_findings(&std::fs::read_to_string(&path).unwrap());
        assert!(
            found.is_empty(),
            "{}:\n{}",
            path.display(),
            found.join("\n")
        );
    }
    for (name, bytes) in golden_files().iter().filter(|(n, _)| n.ends_with(".sh")) {
        let found = bash42_findings(&String::from_utf8_lossy(bytes));
        assert!(found.is_empty(), "{name}:\n{}", found.join("\n"));
    }
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_unit_passes_systemd_analyze_verify_without_a_warning() {
    require("systemd-analyze");
    let files = golden_files();
    let get = |name: &str| &files.iter().find(|(n, _)| n == name).unwrap().1;
    // A root holding the unit, the script it starts, and the system's own units it refers to.
    let root = tmp();
    let r = root.path();
    std::fs::create_dir_all(r.join("opt/roce-gen/lab")).unwrap();
    std::fs::create_dir_all(r.join("etc/systemd/system")).unwrap();
    std::fs::create_dir_all(r.join("usr/lib/systemd")).unwrap();
    let apply = r.join("opt/roce-gen/lab/apply.sh");
    std::fs::write(&apply, get("bundles/node-a/apply.sh")).unwrap();
    std::os::unix::fs::PermissionsExt::set_mode(
        &mut std::fs::metadata(&apply).unwrap().permissions(),
        0o755,
    );
    std::fs::set_permissions(&apply, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::write(
        r.join("opt/roce-gen/lab/README.txt"),
        get("bundles/node-a/README.txt"),
    )
    .unwrap();
    let unit = r.join("etc/systemd/system/roce-gen-lab.service");
    std::fs::write(&unit, get("bundles/node-a/roce-gen.service")).unwrap();
    let system_units = ["/usr/lib/systemd/system", "/lib/systemd/system"]
        .into_iter()
        .find(|p| Path::new(p).is_dir());
    let system_units = system_units.expect("no system unit folder to verify against");
    let copy = Command::new("cp")
        .args(["-a", system_units])
        .arg(r.join("usr/lib/systemd/"))
        .status()
        .unwrap();
    assert!(copy.success());

    let verify = || {
        let root = format!("--root={}", r.display());
        Command::new("systemd-analyze")
            .arg(root)
            .arg("verify")
            .arg(&unit)
            .output()
            .unwrap()
    };
    let out = verify();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stderr.trim().is_empty(),
        "systemd-analyze verify: {stderr}"
    );

    // The sandbox: well below the 9.6 UNSAFE of the unit without one (the README and the unit's
    // comments give the figure and what remains exposed).
    let out = Command::new("systemd-analyze")
        .arg(format!("--root={}", r.display()))
        .args(["security", "--offline=true"])
        .arg(&unit)
        .env("SYSTEMD_COLORS", "0")
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    let level = table
        .lines()
        .find_map(|l| {
            l.split("Overall exposure level for roce-gen-lab.service: ")
                .nth(1)
        })
        .unwrap_or_else(|| {
            panic!(
                "no overall exposure level:\n{table}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let exposure: f64 = level
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("exposure level {level:?}"));
    eprintln!("systemd-analyze security: {level}");
    assert!(exposure <= 3.0, "exposure {level}:\n{table}");

    // The check can fail: a unit whose ExecStart is missing is refused.
    std::fs::remove_file(&apply).unwrap();
    let out = verify();
    assert!(
        !out.status.success(),
        "a missing ExecStart must fail verify"
    );
}
