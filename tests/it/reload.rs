//! What re-applies the settings when the RDMA devices come back without a reboot (issue 26): the
//! unit `roce-gen-<cluster>.service`, which the udev rule on the planned ports' PCI functions
//! and OFED's post-start hook restart; with rdma-core's renaming (`add` as mlx5_N, then `move`),
//! on OFED hosts, at a boot (once), with two clusters' bundles on one host, and the migration
//! from the one shared `roce-gen.service` of older bundles. The stand-ins run the kernel's
//! uevents through the host's udev rules (tests/host/udevd/udevd.py) and systemd's jobs
//! (tests/host/stubs/systemd-jobs.sh); see tests/host/fakehost-reload.sh.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fakehost::{FakeHost, for_each_bash, repo};

fn read(h: &FakeHost, rel: &str) -> String {
    std::fs::read_to_string(h.fake(rel)).unwrap_or_default()
}

/// An inbox host whose devices carry rdma-core's names, as its plan does.
fn rdma_named_inbox(bash: &str) -> FakeHost {
    FakeHost::inbox()
        .bash(bash)
        .create_args(&["--naming", "rdma"])
        .plan(|plan| {
            for host in plan["hosts"].as_array_mut().unwrap() {
                for (nic, name) in host["nics"]
                    .as_array_mut()
                    .unwrap()
                    .iter_mut()
                    .zip(["rocep26s0f0", "rocep60s0f0"])
                {
                    nic["ib_dev"] = Value::from(name);
                }
            }
        })
        .build()
}

/// The runs of a unit's ExecStart in the unit log lines.
fn runs_of(log: &[String], unit: &str) -> usize {
    log.iter()
        .filter(|l| l.starts_with(&format!("{unit}: ")) && l.contains("ExecStart ran"))
        .count()
}

/// Settings a reload resets, read from the host: they are as planned again.
fn configured(h: &FakeHost, ctx: &str) {
    assert_eq!(
        read(h, "sys/class/net/ens1f0np0/mtu").trim(),
        "4200",
        "{ctx}"
    );
    assert_eq!(
        read(h, "sys/class/net/ens2f0np0/mtu").trim(),
        "4200",
        "{ctx}"
    );
    assert_eq!(
        read(h, ".fake/dcb/ens1f0np0/pfc").trim(),
        "0,0,0,1,0,0,0,0",
        "{ctx}"
    );
    assert_eq!(
        read(h, ".fake/net/ens2f0np0/pause").trim(),
        "off off off",
        "{ctx}"
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_udev_evaluator_matches_as_systemd_udevd_does() {
    let out = Command::new("python3")
        .arg(repo().join("tests/host/udevd/udevd.py"))
        .arg("--selftest")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_module_reload_on_an_inbox_host_with_rdma_core_names_re_applies_through_the_unit() {
    for_each_bash(|bash| {
        let h = rdma_named_inbox(bash);
        assert!(h.fake("sys/class/infiniband/rocep26s0f0").is_dir());
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        assert_eq!(apply.status("persistence_reload", ""), "changed", "{bash}");
        let rule = read(&h, "etc/udev/rules.d/90-roce-gen-lab.rules");
        // Never the planned name: the add event carries mlx5_N.
        assert!(!rule.contains("rocep"), "{rule}");
        assert!(!h.fake("etc/infiniband/post-start-hook.sh").exists());

        let _ = h.take_unit_log();
        let (code, out, err) = h.host_step("reload", &["--how", "modprobe"]);
        assert_eq!(code, 0, "{bash}: {out}{err}");
        // The kernel's names at the add, rdma-core's rename with its move, the rule's match.
        for line in [
            "udev: add /devices/pci0000:00/0000:1a:00.0/infiniband/mlx5_0",
            "PROGRAM=\"rdma_rename mlx5_0 NAME_FALLBACK\": exit 0",
            "etc/udev/rules.d/90-roce-gen-lab.rules:6: RUN+=\"/bin/systemctl --no-block try-restart roce-gen-lab.service\"",
            "udev: move /devices/pci0000:00/0000:1a:00.0/infiniband/rocep26s0f0 (was /devices/pci0000:00/0000:1a:00.0/infiniband/mlx5_0)",
            "udev: add /devices/pci0000:00/0000:3c:00.0/infiniband/mlx5_1",
        ] {
            assert!(out.contains(line), "{bash}: no {line:?} in\n{out}");
        }
        assert!(h.fake("sys/class/infiniband/rocep60s0f0").is_dir());
        let units = h.take_unit_log();
        assert_eq!(
            runs_of(&units, "roce-gen-lab.service"),
            1,
            "{bash}: {units:#?}"
        );
        configured(&h, bash);
        let result: Value =
            serde_json::from_str(&read(&h, "var/lib/roce-gen/lab/results/node-a.apply.json"))
                .unwrap();
        assert_eq!(result["counts"]["fail"], 0, "{bash}: {result:#}");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn every_way_the_devices_come_back_re_applies_on_an_ofed_host_and_the_hook_returns_at_once() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        let message = apply.message("persistence_reload", "");
        assert!(
            message.contains("udev rule") && message.contains("post-start hook"),
            "{message}"
        );
        let hook = read(&h, "etc/infiniband/post-start-hook.sh");
        assert!(
            !hook.contains("/apply.sh"),
            "the hook configures nothing: {hook}"
        );

        // The hook alone: it only asks systemd (a job is queued) and returns at once.
        let _ = h.take_commands();
        let started = Instant::now();
        let hook = h.fake("etc/infiniband/post-start-hook.sh");
        let (code, out, err) = h.run_cmd(&[&hook.display().to_string()]);
        let took = started.elapsed();
        assert_eq!(code, 0, "{bash}: {out}{err}");
        // The commands below show it ran no apply; this bound only catches a hook that hangs.
        assert!(
            took < Duration::from_secs(120),
            "{bash}: the hook took {took:?}"
        );
        assert_eq!(
            h.take_commands(),
            [
                "systemctl --no-block try-restart roce-gen-lab.service",
                "systemctl --no-block start roce-gen-lab.service"
            ],
            "{bash}"
        );
        // Queued for systemd to run (the first reload below runs it, merged with its own).
        assert_eq!(
            read(&h, ".fake/systemd/jobs/roce-gen-lab.service").trim(),
            "start"
        );

        for how in [
            "openibd",
            "modprobe",
            "devlink",
            "mlxfwreset",
            "recovery",
            "rescan",
        ] {
            let _ = h.take_unit_log();
            let (code, out, err) = h.host_step("reload", &["--how", how]);
            assert_eq!(code, 0, "{bash} {how}: {out}{err}");
            let units = h.take_unit_log();
            assert_eq!(
                runs_of(&units, "roce-gen-lab.service"),
                1,
                "{bash} {how}: {units:#?}"
            );
            configured(&h, &format!("{bash} {how}"));
            assert_eq!(
                read(&h, "sys/class/infiniband/mlx5_0/tc/1/traffic_class").trim(),
                "106",
                "{bash} {how}"
            );
            assert_eq!(
                err.contains("running /etc/infiniband/post-start-hook.sh"),
                how == "openibd"
            );
        }
    });
}

/// A second cluster's bundle for node-a of `h`'s plan: generated, unpacked beside the first.
fn other_cluster_bundle(h: &FakeHost, cluster: &str) -> std::path::PathBuf {
    let mut plan: Value =
        serde_json::from_str(&std::fs::read_to_string(h.plan()).unwrap()).unwrap();
    plan["cluster"]["cluster_name"] = Value::from(cluster);
    let dir = h.root.parent().unwrap().join(cluster);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("plan.json"), plan.to_string()).unwrap();
    let generated = crate::common::roce_gen(&dir, &["generate", "plan.json", "-o", "dist"]);
    assert_eq!(generated.code, 0, "{}", generated.transcript());
    let untar = Command::new("tar")
        .args(["-xzf", "dist/node-a.tar.gz"])
        .current_dir(&dir)
        .status()
        .unwrap();
    assert!(untar.success());
    dir.join("node-a")
}

fn run_bundle(h: &FakeHost, bundle: &std::path::Path, script: &str) -> Value {
    let out = h
        .root
        .parent()
        .unwrap()
        .join(format!("{script}.other.json"));
    let (code, stdout, stderr) = h.run_raw(
        &[
            &h.bash,
            &bundle.join(script).display().to_string(),
            "--out",
            &out.display().to_string(),
        ],
        &[],
    );
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(
        code,
        0,
        "{script}: {}{}",
        String::from_utf8_lossy(&stdout),
        String::from_utf8_lossy(&stderr)
    );
    result
}

fn check_of<'a>(result: &'a Value, id: &str) -> &'a Value {
    result["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id && c["nic"].as_str().unwrap_or("").is_empty())
        .unwrap_or_else(|| panic!("no {id}: {result:#}"))
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn two_clusters_keep_their_own_units_rules_and_hook_lines_and_rollback_of_one_leaves_the_other() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        let site = "#!/bin/bash\necho site >> \"${ROCE_GEN_ROOT:-}/site-ran\"\n";
        let hook = h.fake("etc/infiniband/post-start-hook.sh");
        std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
        std::fs::write(&hook, site).unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        let other = other_cluster_bundle(&h, "lab2");
        let second = run_bundle(&h, &other, "apply.sh");
        assert_eq!(
            check_of(&second, "persistence")["status"],
            "changed",
            "{second:#}"
        );
        assert_eq!(
            check_of(&second, "persistence_reload")["status"],
            "changed",
            "{second:#}"
        );
        for unit in ["roce-gen-lab.service", "roce-gen-lab2.service"] {
            assert!(
                h.fake(&format!("etc/systemd/system/{unit}")).is_file(),
                "{unit}"
            );
            assert!(
                h.fake(&format!(".fake/systemd/enabled/{unit}")).is_file(),
                "{unit}"
            );
        }
        for rule in ["90-roce-gen-lab.rules", "90-roce-gen-lab2.rules"] {
            assert!(
                h.fake(&format!("etc/udev/rules.d/{rule}")).is_file(),
                "{rule}"
            );
        }
        let text = read(&h, "etc/infiniband/post-start-hook.sh");
        assert!(
            text.contains("roce-gen-lab.service # roce-gen cluster lab\n")
                && text.contains("roce-gen-lab2.service # roce-gen cluster lab2\n"),
            "{text}"
        );
        // The site's hook was chained once, by the first cluster; the second kept it.
        assert_eq!(
            read(&h, "etc/infiniband/post-start-hook.sh.roce-gen-chained"),
            site
        );

        // A reload: the site's hook runs once and each cluster's unit once.
        let _ = h.take_unit_log();
        let (code, out, err) = h.host_step("reload", &[]);
        assert_eq!(code, 0, "{bash}: {out}{err}");
        assert_eq!(read(&h, "site-ran"), "site\n");
        let units = h.take_unit_log();
        assert_eq!(runs_of(&units, "roce-gen-lab.service"), 1, "{units:#?}");
        assert_eq!(runs_of(&units, "roce-gen-lab2.service"), 1, "{units:#?}");

        // Rolling back lab2 leaves lab's unit, rule and hook line, and the chained hook.
        let back = run_bundle(&h, &other, "rollback.sh");
        assert_eq!(
            check_of(&back, "persistence")["status"],
            "changed",
            "{back:#}"
        );
        assert!(!h.fake("etc/systemd/system/roce-gen-lab2.service").exists());
        assert!(!h.fake("etc/udev/rules.d/90-roce-gen-lab2.rules").exists());
        assert!(h.fake("etc/systemd/system/roce-gen-lab.service").is_file());
        assert!(
            h.fake(".fake/systemd/enabled/roce-gen-lab.service")
                .is_file()
        );
        assert!(h.fake("etc/udev/rules.d/90-roce-gen-lab.rules").is_file());
        let text = read(&h, "etc/infiniband/post-start-hook.sh");
        assert!(
            text.contains("# roce-gen cluster lab\n") && !text.contains("lab2"),
            "{text}"
        );
        assert_eq!(
            read(&h, "etc/infiniband/post-start-hook.sh.roce-gen-chained"),
            site
        );
        let again = h.run("apply.sh", &[]);
        assert_eq!(again.status("persistence", ""), "pass", "{bash}");
        assert_eq!(again.status("persistence_reload", ""), "pass", "{bash}");

        // The last cluster's rollback puts the site's hook back.
        let last = h.run("rollback.sh", &[]);
        assert_eq!(last.code, 0, "{bash}: {}", last.stdout);
        assert_eq!(read(&h, "etc/infiniband/post-start-hook.sh"), site);
        assert!(
            !h.fake("etc/infiniband/post-start-hook.sh.roce-gen-chained")
                .exists()
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn apply_replaces_this_clusters_old_unit_hook_and_rule_and_never_another_clusters() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        // What an older bundle of this cluster left: the one shared unit name, a hook that ran
        // apply itself, the rule on the kernel's names.
        let legacy = "[Unit]\nConditionPathExists=/opt/roce-gen/lab/apply.sh\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/opt/roce-gen/lab/apply.sh --boot --results-dir /var/lib/roce-gen/lab/results\n[Install]\nWantedBy=multi-user.target\n";
        std::fs::write(h.fake("etc/systemd/system/roce-gen.service"), legacy).unwrap();
        std::fs::write(
            h.fake(".fake/systemd/enabled/roce-gen.service"),
            "multi-user.target\n",
        )
        .unwrap();
        let old_hook = "#!/bin/bash\n# roce-gen reload hook of cluster lab\n\"${ROCE_GEN_ROOT:-}\"/opt/roce-gen/lab/apply.sh --boot\n";
        std::fs::create_dir_all(h.fake("etc/infiniband")).unwrap();
        std::fs::write(h.fake("etc/infiniband/post-start-hook.sh"), old_hook).unwrap();
        std::fs::create_dir_all(h.fake("etc/udev/rules.d")).unwrap();
        std::fs::write(
            h.fake("etc/udev/rules.d/90-roce-gen-lab.rules"),
            "# roce-gen reload hook of cluster lab\nACTION==\"add\", SUBSYSTEM==\"infiniband\", KERNEL==\"mlx5_0|mlx5_1\", RUN+=\"/bin/systemctl --no-block restart roce-gen.service\"\n",
        )
        .unwrap();
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        assert!(!h.fake("etc/systemd/system/roce-gen.service").exists());
        assert!(!h.fake(".fake/systemd/enabled/roce-gen.service").exists());
        assert!(
            h.fake(".fake/systemd/enabled/roce-gen-lab.service")
                .is_file()
        );
        assert!(
            apply
                .stdout
                .contains("persistence: roce-gen.service → roce-gen-lab.service"),
            "{}",
            apply.stdout
        );
        let hook = read(&h, "etc/infiniband/post-start-hook.sh");
        assert!(
            !hook.contains("/apply.sh") && hook.contains("# roce-gen cluster lab\n"),
            "{hook}"
        );
        assert!(
            !h.fake("etc/infiniband/post-start-hook.sh.roce-gen-chained")
                .exists()
        );
        let rule = read(&h, "etc/udev/rules.d/90-roce-gen-lab.rules");
        assert!(
            rule.contains("KERNELS==") && !rule.contains("KERNEL=="),
            "{rule}"
        );
        let back = h.run("rollback.sh", &[]);
        assert_eq!(back.code, 0, "{bash}: {}", back.stdout);
        assert!(!h.fake("etc/infiniband/post-start-hook.sh").exists());

        // Another cluster's unit under the old name is not this cluster's to touch.
        let theirs = legacy.replace("/opt/roce-gen/lab/", "/opt/roce-gen/other/");
        std::fs::write(h.fake("etc/systemd/system/roce-gen.service"), &theirs).unwrap();
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        assert_eq!(read(&h, "etc/systemd/system/roce-gen.service"), theirs);
        let back = h.run("rollback.sh", &[]);
        assert_eq!(back.code, 0, "{bash}: {}", back.stdout);
        assert_eq!(read(&h, "etc/systemd/system/roce-gen.service"), theirs);
    });
}

/// An apply killed right after it wrote the udev rule, or right after it moved the site's own
/// OFED hook aside, has recorded both first: the rollback after it removes the rule and puts the
/// site's hook back (a `mv` on the host's PATH that kills the run once it has moved onto the
/// path, as a power cut would).
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_apply_killed_after_the_rule_or_the_hook_move_is_rolled_back_whole() {
    const SITE_HOOK: &str = "#!/bin/bash\n# the site's own\ntrue\n";
    for suffix in [
        "/etc/udev/rules.d/90-roce-gen-lab.rules",
        "/etc/infiniband/post-start-hook.sh.roce-gen-chained",
    ] {
        let h = FakeHost::ofed().build();
        let hook = h.fake("etc/infiniband/post-start-hook.sh");
        std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
        std::fs::write(&hook, SITE_HOOK).unwrap();
        let mv = h.fake("bin/mv");
        std::fs::write(
            &mv,
            "#!/bin/bash\n/bin/mv \"$@\"; rc=$?\n\
             case \"${@: -1}\" in *\"$KILL_AFTER_MV\") kill -9 \"$(cat \"$ROCE_GEN_ROOT/run/roce-gen-run.lock\")\" ;; esac\n\
             exit $rc\n",
        )
        .unwrap();
        std::fs::set_permissions(&mv, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let apply = h.bundle.join("apply.sh").display().to_string();
        let (code, _, _) = h.run_raw(&["bash", &apply], &[("KILL_AFTER_MV", suffix)]);
        assert_eq!(code, 137, "{suffix}: the apply was not killed");
        assert!(
            h.fake(suffix.trim_start_matches('/')).exists(),
            "{suffix}: killed before the move"
        );
        let saved = read(&h, "var/lib/roce-gen/lab/saved-state.tsv");
        assert!(
            saved.contains("persistence_reload\t-\t"),
            "{suffix}: not recorded before: {saved}"
        );
        std::fs::remove_file(&mv).unwrap();

        let back = h.run("rollback.sh", &[]);
        assert_eq!(back.code, 0, "{suffix}: {}\n{}", back.stdout, back.stderr);
        assert!(
            !h.fake("etc/udev/rules.d/90-roce-gen-lab.rules").exists(),
            "{suffix}: the rule stayed"
        );
        assert_eq!(
            read(&h, "etc/infiniband/post-start-hook.sh"),
            SITE_HOOK,
            "{suffix}"
        );
        assert!(
            !h.fake("etc/infiniband/post-start-hook.sh.roce-gen-chained")
                .exists(),
            "{suffix}"
        );
    }
}
