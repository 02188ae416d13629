//! Delivery: the output folder as a USB stick (`run-here.sh` on simulated hosts: the bundle
//! chosen by host name or by MAC, unknown and ambiguous hosts refused, a tampered tarball
//! refused, results written to the stick or, on a read-only stick, kept on the host) and as an
//! Ansible project (inventory, syntax, an end-to-end run against two simulated hosts whose
//! fetched results ingest cleanly, the fabric phase on both at once).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::prerequisite;
use crate::fakehost::{FakeHost, for_each_bash};

fn result_on_stick(h: &FakeHost, host: &str, phase: &str) -> Value {
    let path = h.dist().join(format!("results/{host}.{phase}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn status_of(result: &Value, id: &str) -> String {
    let checks = result["checks"].as_array().unwrap();
    let c = checks
        .iter()
        .find(|c| c["id"] == id && c.get("nic").is_none())
        .unwrap();
    c["status"].as_str().unwrap().to_string()
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn run_here_finds_the_bundle_by_host_name_and_writes_the_result_to_the_stick() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        let script = h.dist().join("run-here.sh").display().to_string();
        let (code, stdout, stderr) = h.run_cmd(&[bash, &script, "precheck"]);
        assert_eq!(code, 0, "{bash}: {stdout}\n{stderr}");
        assert!(stdout.contains("✅ node-a: precheck"), "{stdout}");
        assert!(stdout.contains("run-here: result copied to"), "{stdout}");
        let result = result_on_stick(&h, "node-a", "precheck");
        assert_eq!(status_of(&result, "hostname"), "pass");
        // It ran the bundle unpacked on the host, not on the stick.
        assert!(
            h.fake("var/lib/roce-gen/lab/bundles/node-a/precheck.sh")
                .is_file()
        );

        // run-here.sh says what comes next, once, after the copy; the script leaves it to it.
        assert!(
            stdout.ends_with(&format!("\nrun-here: next: bash {script} apply\n")),
            "{stdout}"
        );
        assert_eq!(stdout.matches("next: ").count(), 1, "{stdout}");

        // -v reaches the script.
        let (code, stdout, _) =
            h.run_cmd(&[bash, &script, "-v", "apply", "--dry-run", "--no-persist"]);
        assert_eq!(code, 0, "{stdout}");
        assert!(
            stdout.contains("\nwould run: ip link set dev ens1f0np0 mtu 4200\n"),
            "{stdout}"
        );
        assert!(
            stdout.ends_with(&format!(
                "\nrun-here: next: bash {script} apply --no-persist\n"
            )),
            "{stdout}"
        );

        let (code, stdout, _) = h.run_cmd(&[bash, &script, "apply", "--no-persist"]);
        assert_eq!(code, 0, "{stdout}");
        assert!(!stdout.contains("would run"), "{stdout}");
        assert!(
            stdout.ends_with(&format!(
                "\nrun-here: next: bring {}/results back and run: roce-gen ingest results --plan PLAN\n",
                h.dist().display()
            )),
            "{stdout}"
        );
        // Configured; its only warnings are the ARP sysctls of a two-port host at the
        // kernel's defaults (the plan leaves them at arp_sysctls = check).
        let result = result_on_stick(&h, "node-a", "apply");
        assert_eq!(result["counts"]["fail"], 0, "{result}");
        let warned: Vec<&str> = crate::fakehost::warned_ids(&result);
        assert_eq!(warned, ["arp_sysctls", "arp_sysctls"], "{result}");
        assert_eq!(
            std::fs::read_to_string(h.fake("sys/class/net/ens1f0np0/mtu"))
                .unwrap()
                .trim(),
            "4200"
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn run_here_identifies_an_unnamed_host_by_mac_and_refuses_unknown_or_ambiguous_ones() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().host("localhost").bash(bash).build();
        let script = h.dist().join("run-here.sh").display().to_string();
        let (code, stdout, stderr) = h.run_cmd(&[bash, &script, "precheck"]);
        assert_eq!(code, 0, "{bash}: {stdout}\n{stderr}");
        assert!(
            stdout.contains("run-here: host name localhost is not in the plan; identified as node-a by its MAC b8:3f:d2:0a:00:00"),
            "{stdout}"
        );
        let result = result_on_stick(&h, "node-a", "precheck");
        assert_eq!(status_of(&result, "hostname"), "warn");

        // One port with node-b's MAC as well: two bundles match.
        std::fs::write(
            h.fake("sys/class/net/ens2f0np0/address"),
            "b8:3f:d2:0b:00:00\n",
        )
        .unwrap();
        let (code, _, stderr) = h.run_cmd(&[bash, &script, "precheck"]);
        assert_eq!(code, 2);
        assert!(
            stderr.contains("more than one bundle matches this host (node-a, node-b)"),
            "{stderr}"
        );
        // The operator names it.
        let (code, stdout, stderr) = h.run_cmd(&[bash, &script, "--host", "node-a", "precheck"]);
        assert_eq!(code, 0, "{stdout}\n{stderr}");
        assert!(
            stdout.contains("identified as node-a by its name given with --host"),
            "{stdout}"
        );
        let (code, _, stderr) = h.run_cmd(&[bash, &script, "--host", "node-z", "precheck"]);
        assert_eq!(code, 2);
        assert!(
            stderr.contains("--host node-z: no bundle of that name here"),
            "{stderr}"
        );

        // Nothing of the plan here.
        for ifc in ["ens1f0np0", "ens2f0np0"] {
            std::fs::write(
                h.fake(&format!("sys/class/net/{ifc}/address")),
                "02:00:00:00:00:01\n",
            )
            .unwrap();
        }
        let (code, _, stderr) = h.run_cmd(&[bash, &script, "apply"]);
        assert_eq!(code, 2);
        assert!(
            stderr.contains("run-here: no bundle here for this host (name localhost;"),
            "{stderr}"
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn run_here_refuses_a_tampered_tarball_and_keeps_results_on_a_read_only_stick() {
    let h = FakeHost::ofed().build();
    let script = h.dist().join("run-here.sh").display().to_string();

    // A read-only stick: the mount namespace of the run gets a read-only bind of the folder.
    let dist = h.dist().display().to_string();
    let ro = format!(
        "mount --bind {dist} {dist} && mount -o remount,bind,ro {dist} && exec bash {script} precheck"
    );
    let (code, stdout, stderr) = h.run_cmd(&["bash", "-c", &ro]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    // The real cause, not a guess.
    assert!(
        stdout.contains("run-here: cannot write the result to ")
            && stdout.contains("Read-only file system")
            && stdout.contains("the result stays on this host:"),
        "{stdout}"
    );
    assert!(
        h.fake("var/lib/roce-gen/lab/results/node-a.precheck.json")
            .is_file()
    );
    assert!(!h.dist().join("results").exists());

    let tarball = h.dist().join("node-a.tar.gz");
    let mut bytes = std::fs::read(&tarball).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&tarball, bytes).unwrap();
    let (code, _, stderr) = h.run_cmd(&["bash", &script, "apply"]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("node-a.tar.gz does not match its sha256"),
        "{stderr}"
    );
}

/// The ansible-core installation `.ci/run` makes (from PyPI, in a virtualenv).
fn ansible(tool: &str) -> PathBuf {
    let base = std::env::var_os("ROCE_GEN_ANSIBLE").map_or_else(
        || PathBuf::from("/var/cache/roce-gen/ansible"),
        PathBuf::from,
    );
    let bin = base.join("bin").join(tool);
    assert!(
        bin.is_file(),
        "{} is missing: run `bash .ci/run`, which installs ansible-core",
        bin.display()
    );
    bin
}

fn ansible_cmd(tool: &str, dir: &Path) -> Command {
    ansible_cmd_on(tool, dir, &[])
}

/// Like [`ansible_cmd`], run inside `fakehost.sh run` of each of `hosts` in turn (nested), so
/// that every fake root's sysfs is driverfs, with the kernel's semantics (configfs for
/// cma_roce_*), as the scripts see it on a real host.
fn ansible_cmd_on(tool: &str, dir: &Path, hosts: &[&FakeHost]) -> Command {
    let fakehost = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/host/fakehost.sh");
    let mut argv: Vec<std::ffi::OsString> = Vec::new();
    for h in hosts {
        argv.extend([
            "bash".into(),
            fakehost.clone().into(),
            "run".into(),
            h.root.clone().into(),
            "--".into(),
        ]);
    }
    argv.push(ansible(tool).into());
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(dir)
        .env("ANSIBLE_NOCOLOR", "1")
        .env("ANSIBLE_HOST_KEY_CHECKING", "False")
        .env("ANSIBLE_LOCAL_TEMP", dir.join(".ansible-tmp"))
        .env("ANSIBLE_REMOTE_TEMP", dir.join(".ansible-tmp"));
    cmd
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_ansible_inventory_lists_every_host_with_its_address_and_group() {
    let h = FakeHost::ofed().build();
    let out = ansible_cmd("ansible-inventory", &h.dist())
        .args(["-i", "ansible/inventory.yml", "--list"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let inv: Value = serde_json::from_slice(&out.stdout).unwrap();
    let vars = &inv["_meta"]["hostvars"];
    assert_eq!(vars["node-a"]["ansible_host"], "192.168.1.10");
    assert_eq!(vars["node-b"]["ansible_host"], "192.168.1.11");
    assert_eq!(vars["node-a"]["roce_cluster"], "lab");
    let group: Vec<&str> = inv["rack_1"]["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(group, ["node-a", "node-b"]);

    let check = ansible_cmd("ansible-playbook", &h.dist())
        .args([
            "-i",
            "ansible/inventory.yml",
            "--syntax-check",
            "ansible/roce.yml",
        ])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&check.stdout),
        String::from_utf8_lossy(&check.stderr)
    );
}

/// `ansible/simulated.yml` in `a`'s output folder: `a` and `b` as local connections to their
/// fake roots (node-b's fake root addressed through node-a's copy of the same output folder).
fn simulated_inventory(a: &FakeHost, b: &FakeHost) {
    simulated_inventory_env(a, b, "");
}

/// [`simulated_inventory`] with more `roce_env` lines (`          NAME: "value"\n` each).
fn simulated_inventory_env(a: &FakeHost, b: &FakeHost, more_env: &str) {
    let host_vars = |h: &FakeHost| {
        let root = h.root.display().to_string();
        format!(
            "        ansible_connection: local\n        ansible_python_interpreter: \"{{{{ ansible_playbook_python }}}}\"\n        roce_root: \"{root}\"\n        roce_env:\n          ROCE_GEN_ROOT: \"{root}\"\n          STUB_LOG: \"{root}/stub.log\"\n          PATH: \"{root}/bin:/usr/bin:/bin\"\n{more_env}"
        )
    };
    std::fs::write(
        a.dist().join("ansible/simulated.yml"),
        format!(
            "all:\n  hosts:\n    node-a:\n{}    node-b:\n{}",
            host_vars(a),
            host_vars(b)
        ),
    )
    .unwrap();
}

/// One `ansible-playbook` run of roce.yml on `a` and `b` with `args`: success, and the log.
fn play(a: &FakeHost, b: &FakeHost, args: &[&str]) -> (bool, String) {
    play_forks(a, b, "2", args)
}

/// [`play`] with `forks` forks.
fn play_forks(a: &FakeHost, b: &FakeHost, forks: &str, args: &[&str]) -> (bool, String) {
    let out = ansible_cmd_on("ansible-playbook", &a.dist(), &[a, b])
        .args([
            "-i",
            "ansible/inventory.yml",
            "-i",
            "ansible/simulated.yml",
            "ansible/roce.yml",
            "-f",
            forks,
        ])
        .args(args)
        .output()
        .unwrap();
    let log = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), log)
}

/// `changed=` and `failed=` of `host` in the PLAY RECAP of `log`.
fn recap(log: &str, host: &str) -> (u64, u64) {
    let tail = log
        .split("PLAY RECAP")
        .nth(1)
        .unwrap_or_else(|| panic!("no PLAY RECAP:\n{log}"));
    let line = tail
        .lines()
        .find(|l| l.split_whitespace().next() == Some(host))
        .unwrap_or_else(|| panic!("{host} is not in the recap:\n{log}"));
    let field = |key: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no {key} in {line:?}"))
    };
    (field("changed="), field("failed="))
}

fn mtu(h: &FakeHost) -> String {
    std::fs::read_to_string(h.fake("sys/class/net/ens1f0np0/mtu"))
        .unwrap()
        .trim()
        .to_string()
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_playbook_predicts_in_check_mode_applies_once_and_then_changes_nothing() {
    let a = FakeHost::ofed().build();
    let b = FakeHost::ofed().plan_host("node-b").build();
    let dist = a.dist();
    simulated_inventory(&a, &b);
    let apply = [
        "-e",
        "phase=apply",
        "-e",
        r#"{"roce_args": ["--no-persist"]}"#,
    ];

    let (ok, log) = play(&a, &b, &["-e", "phase=precheck"]);
    assert!(ok, "precheck: {log}");

    // --check: apply's dry run ran and printed what it would change; the hosts are unchanged.
    let before = mtu(&a);
    let (ok, log) = play(&a, &b, &[&apply[..], &["--check"]].concat());
    assert!(ok, "check: {log}");
    assert_eq!(mtu(&a), before, "the dry run changed the MTU");
    assert_ne!(before, "4200");
    assert!(log.contains("4200"), "no predicted MTU change:\n{log}");
    assert!(dist.join("results/node-a.apply.dry-run.json").is_file());
    assert!(!dist.join("results/node-a.apply.json").exists());
    let dry: Value = serde_json::from_str(
        &std::fs::read_to_string(dist.join("results/node-a.apply.dry-run.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(dry["dry_run"], true);

    // The first apply changes both hosts, the second nothing.
    let (ok, log) = play(&a, &b, &apply);
    assert!(ok, "apply: {log}");
    for host in ["node-a", "node-b"] {
        assert!(recap(&log, host).0 > 0, "first apply, {host}:\n{log}");
    }
    assert_eq!(mtu(&a), "4200");
    assert_eq!(mtu(&b), "4200");
    let (ok, log) = play(&a, &b, &apply);
    assert!(ok, "apply again: {log}");
    for host in ["node-a", "node-b"] {
        assert_eq!(recap(&log, host), (0, 0), "second apply, {host}:\n{log}");
    }

    for host in ["node-a", "node-b"] {
        assert!(
            dist.join(format!("results/{host}.apply.json")).is_file(),
            "{host}"
        );
    }
    let plan = a
        .bundle
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("plan.json");
    let run = crate::common::roce_gen(
        &dist,
        &["ingest", "results", "--plan", &plan.display().to_string()],
    );
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(
        run.stdout.contains("✅ node-a") && run.stdout.contains("✅ node-b"),
        "{}",
        run.stdout
    );

    // A rollback in check mode is a dry run with its own result: the hosts keep the
    // configuration and the apply's result stays as it was.
    let applied = std::fs::read(dist.join("results/node-a.apply.json")).unwrap();
    let (ok, log) = play(&a, &b, &["-e", "phase=rollback", "--check"]);
    assert!(ok, "rollback check: {log}");
    assert_eq!(mtu(&a), "4200", "the rollback's dry run changed the MTU");
    assert!(log.contains(&before), "no predicted MTU restore:\n{log}");
    assert!(dist.join("results/node-a.rollback.dry-run.json").is_file());
    assert!(!dist.join("results/node-a.rollback.json").exists());
    assert_eq!(
        std::fs::read(dist.join("results/node-a.apply.json")).unwrap(),
        applied
    );
    // The real rollback gives the MTU back on both hosts.
    let (ok, log) = play(&a, &b, &["-e", "phase=rollback"]);
    assert!(ok, "rollback: {log}");
    assert_eq!(mtu(&a), before);
    assert_eq!(mtu(&b), before);
    assert!(dist.join("results/node-a.rollback.json").is_file());
}

/// A short fabric test without the incast step (two hosts: a rail of two has none).
fn short_fabric(plan: &mut Value) {
    plan["cluster"]["fabric_seconds"] = Value::from(2);
    plan["cluster"]["fabric_incast"] = Value::from("no");
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_playbooks_fabric_phase_runs_every_host_at_once_even_with_one_fork() {
    let a = FakeHost::ofed().plan(short_fabric).build();
    let b = FakeHost::ofed()
        .plan_host("node-b")
        .plan(short_fabric)
        .build();
    for h in [&a, &b] {
        let applied = h.run("apply.sh", &["--no-persist"]);
        assert_eq!(applied.count("fail"), 0, "{}", applied.stdout);
    }
    // The hosts reach each other through the wire model of the ib_write_bw stand-in.
    let wire = a.root.parent().unwrap().join("wire");
    std::fs::create_dir(&wire).unwrap();
    simulated_inventory_env(
        &a,
        &b,
        &format!("          FAKEHOST_WIRE: \"{}\"\n", wire.display()),
    );
    // One fork: a play that ran the hosts one after the other would leave node-a waiting for
    // node-b until its window ended, and then node-b for node-a; both would fail fabric_peer.
    let start = std::time::Instant::now();
    let (ok, log) = play_forks(
        &a,
        &b,
        "1",
        &["-e", "phase=fabric", "-e", "roce_fabric_window=300"],
    );
    let took = start.elapsed().as_secs();
    assert!(ok, "fabric: {log}");
    assert!(
        took < 300,
        "the play took {took}s, a window's worth:\n{log}"
    );
    for host in ["node-a", "node-b"] {
        // No task failed; what changed is the bundle's first copy on the host, not the test.
        assert_eq!(recap(&log, host).1, 0, "{host}:\n{log}");
        let r = result_on_stick(&a, host, "fabric");
        assert_eq!(r["phase"], "fabric", "{host}");
        assert_eq!(r["status"], "pass", "{host}: {r:#}");
        let peer = if host == "node-a" { "node-b" } else { "node-a" };
        for dev in ["mlx5_0", "mlx5_1"] {
            let p = &r["facts"]["fabric"]["ports"][dev];
            assert_eq!(p["to"], peer, "{host} {dev}");
            assert_eq!(p["gbps"], 388.0, "{host} {dev}");
        }
        assert_eq!(r["facts"]["fabric"]["window"], 300, "{host}");
    }
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_playbook_names_the_failed_checks_of_a_failing_host_and_goes_on_with_the_others() {
    let a = FakeHost::ofed().build();
    let b = FakeHost::ofed()
        .plan_host("node-b")
        .without("mlx5_1")
        .build();
    simulated_inventory(&a, &b);
    let (ok, log) = play(&a, &b, &["-e", "phase=precheck"]);
    assert!(!ok, "{log}");
    // Given no anchor, the play says so.
    assert!(
        log.contains(
            "NOT CHECKED against a trust anchor: this folder was checked only against itself"
        ),
        "{log}"
    );
    assert_eq!(recap(&log, "node-a").1, 0, "{log}");
    assert_eq!(recap(&log, "node-b").1, 1, "{log}");
    assert!(
        log.contains("failed: ib_dev:mlx5_1 (mlx5_1 is not in /sys/class/infiniband/"),
        "{log}"
    );
    assert!(a.dist().join("results/node-a.precheck.json").is_file());
    assert!(a.dist().join("results/node-b.precheck.json").is_file());
}

/// The play checks the folder on the control node before anything reaches a host: run-here.sh
/// against the anchor or the site's signature, SHA256SUMS against run-here.sh. An altered
/// run-here.sh or SHA256SUMS stops it with nothing copied; the genuine folder runs.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_playbook_checks_the_folder_against_the_anchor_or_the_key_before_copying_anything() {
    let a = FakeHost::ofed().build();
    let b = FakeHost::ofed().plan_host("node-b").build();
    simulated_inventory(&a, &b);
    let dist = a.dist();
    let public = a.sign_dist();
    simulated_inventory(&a, &b);
    let anchor = roce_gen::testing::sha256_hex(&std::fs::read(dist.join("run-here.sh")).unwrap());
    let anchor_arg = format!("roce_anchor={anchor}");
    let key_arg = format!("roce_public_key={}", public.display());
    let copied = |h: &FakeHost| h.fake("var/lib/roce-gen/lab/bundles").exists();

    let genuine = std::fs::read(dist.join("run-here.sh")).unwrap();
    let mut altered = genuine.clone();
    altered.extend_from_slice(b"touch /tmp/pwned\n");
    std::fs::write(dist.join("run-here.sh"), &altered).unwrap();
    for (given, refusal) in [
        (&anchor_arg, format!("not the trust anchor {anchor}")),
        (&key_arg, "Verification failure".to_string()),
    ] {
        let (ok, log) = play(&a, &b, &["-e", "phase=precheck", "-e", given]);
        assert!(!ok, "{log}");
        assert!(log.contains(&refusal), "{refusal}: {log}");
        assert!(!copied(&a) && !copied(&b), "{log}");
    }
    std::fs::write(dist.join("run-here.sh"), &genuine).unwrap();

    // SHA256SUMS changed (a tarball's line), run-here.sh genuine: refused even without an anchor.
    let sums = std::fs::read_to_string(dist.join("SHA256SUMS")).unwrap();
    std::fs::write(dist.join("SHA256SUMS"), sums.replacen('a', "b", 1)).unwrap();
    let (ok, log) = play(&a, &b, &["-e", "phase=precheck"]);
    assert!(!ok, "{log}");
    assert!(
        log.contains(
            "SHA256SUMS is not the one run-here.sh carries: one of them is stale or was altered"
        ),
        "{log}"
    );
    assert!(!copied(&a) && !copied(&b), "{log}");
    std::fs::write(dist.join("SHA256SUMS"), &sums).unwrap();

    // The genuine folder, checked both ways, runs on both hosts.
    let (ok, log) = play(
        &a,
        &b,
        &["-e", "phase=precheck", "-e", &anchor_arg, "-e", &key_arg],
    );
    assert!(ok, "{log}");
    assert!(
        log.contains("run-here.sh matches the trust anchor"),
        "{log}"
    );
    assert_eq!(recap(&log, "node-a").1, 0, "{log}");
    assert_eq!(recap(&log, "node-b").1, 0, "{log}");
    assert!(dist.join("results/node-a.precheck.json").is_file());
    assert!(dist.join("results/node-b.precheck.json").is_file());
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_playbook_passes_ansible_lint_with_the_production_profile() {
    let h = FakeHost::ofed().build();
    let base = std::env::var_os("ROCE_GEN_ANSIBLE").map_or_else(
        || PathBuf::from("/var/cache/roce-gen/ansible"),
        PathBuf::from,
    );
    let lint = base.join("bin/ansible-lint");
    let Some(()) = prerequisite(
        lint.is_file(),
        &format!("{} is missing", lint.display()),
        "the playbook's lint",
    ) else {
        return;
    };
    let path = format!(
        "{}:{}",
        base.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(&lint)
        .args([
            "--offline",
            "--nocolor",
            "--profile",
            "production",
            "ansible/roce.yml",
        ])
        .current_dir(h.dist())
        .env("PATH", path)
        .output()
        .unwrap();
    let log = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{log}");
    assert!(log.contains("0 failure(s), 0 warning(s)"), "{log}");
}

/// The shared results/ folder: a link another host planted at this host's result name is never
/// written through, by run-here.sh (it says why and keeps the result on the host) or by a
/// script run straight from the share (it refuses, keeps the result in a new file under the
/// temporary folder and exits 2); the link's target is untouched.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_link_planted_in_the_shared_results_folder_is_never_written_through() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        let victim = h.fake("etc/shadow");
        std::fs::write(&victim, "root:secret\n").unwrap();
        let results = h.dist().join("results");
        std::fs::create_dir_all(&results).unwrap();
        std::os::unix::fs::symlink(&victim, results.join("node-a.precheck.json")).unwrap();
        let script = h.dist().join("run-here.sh").display().to_string();
        let (code, stdout, stderr) = h.run_cmd(&[bash, &script, "precheck"]);
        assert_eq!(code, 0, "{bash}: {stdout}\n{stderr}");
        assert!(
            stdout.contains("is a symbolic link (to ")
                && stdout.contains("not written through it")
                && stdout.contains("the result stays on this host:"),
            "{bash}: {stdout}"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root:secret\n");
        assert!(
            h.fake("var/lib/roce-gen/lab/results/node-a.precheck.json")
                .is_file()
        );
        // Nothing else left in the shared folder: no temporary file.
        let names: Vec<String> = std::fs::read_dir(&results)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["node-a.precheck.json"], "{bash}");

        // The bundle's own script, its results beside it on the share.
        let bundle_results = h.bundle.join("results");
        std::fs::create_dir_all(&bundle_results).unwrap();
        std::os::unix::fs::symlink(&victim, bundle_results.join("node-a.precheck.json")).unwrap();
        let precheck = h.bundle.join("precheck.sh").display().to_string();
        let (code, stdout, stderr) = h.run_raw(&[bash, &precheck], &[("TMPDIR", "/tmp")]);
        let (stdout, stderr) = (
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr),
        );
        assert_eq!(code, 2, "{bash}: {stderr}");
        assert!(
            stdout.contains("❌ result: cannot write the result to ")
                && stdout.contains("is a symbolic link (to ")
                && stdout.contains("not written through it"),
            "{bash}: {stdout}"
        );
        assert!(
            stderr.contains(
                "the result could not be written where asked; it is in /tmp/roce-gen.node-a.precheck.json."
            ),
            "{bash}: {stderr}"
        );
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "root:secret\n");
        let kept_at = stderr
            .lines()
            .find_map(|l| {
                l.split_once("; it is in ")
                    .map(|(_, p)| p.trim().to_string())
            })
            .unwrap();
        let kept: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&kept_at).unwrap()).unwrap();
        let _ = std::fs::remove_file(&kept_at);
        assert_eq!(kept["host"], "node-a", "{bash}");
    });
}
