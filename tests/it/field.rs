//! The host scripts against driver-faithful stand-ins and driverfs: what the real tools and the
//! mlx5 driver do (side effects included) and what broke against them before — rollback that did
//! not restore a host, error text taken as a value, CMIS lanes, silent link flaps and DCBX,
//! settings lost at a driver reload, and runs that raced, hung or lost their result.

use std::process::Command;

use serde_json::Value;

use crate::fakehost::{FakeHost, for_each_bash, is_trace};

/// The fake host's state, less the traces that apply and rollback leave by design: systemd's
/// daemon-reload counter and the driver's log of link flaps.
/// The DSCP APP table's entries are sorted: its order (head insertion) carries no meaning.
pub(crate) fn state(h: &FakeHost) -> String {
    h.snapshot()
        .lines()
        .filter(|l| !is_trace(l))
        .map(|l| match l.split_once("/app=") {
            Some((path, entries)) => {
                let mut entries: Vec<&str> = entries.split("\\n").collect();
                entries.sort_unstable();
                format!("{path}/app={}", entries.join("\\n"))
            }
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn read(h: &FakeHost, rel: &str) -> String {
    std::fs::read_to_string(h.fake(rel)).unwrap_or_default()
}

/// Runs a command on the host and insists that it worked.
fn on_host(h: &FakeHost, cmd: &[&str]) {
    let (code, out, err) = h.run_cmd(cmd);
    assert_eq!(code, 0, "{cmd:?}: {out}{err}");
}

/// A host that starts far from the defaults: port 0 in PCP trust, port 1 in DSCP trust with
/// 26→5, pause on (mlx5's default), no traffic class, RoCE v1 with ToS 32, MTU 9000 and 1500.
pub(crate) fn unusual_host(kind: &str, bash: &str) -> FakeHost {
    let h = FakeHost::of(kind).bash(bash).build();
    if kind == "ofed" {
        on_host(&h, &["mlnx_qos", "-i", "ens2f0np0", "--trust", "dscp"]);
        on_host(
            &h,
            &["mlnx_qos", "-i", "ens2f0np0", "--dscp2prio", "set,26,5"],
        );
    } else {
        on_host(
            &h,
            &[
                "dcb",
                "app",
                "add",
                "dev",
                "ens2f0np0",
                "dscp-prio",
                "26:5",
                "10:1",
            ],
        );
    }
    on_host(
        &h,
        &["ip", "link", "set", "dev", "ens1f0np0", "mtu", "9000"],
    );
    std::fs::write(h.fake(".fake/cma/mlx5_0/1/tos"), "32\n").unwrap();
    let _ = h.take_commands();
    h
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn apply_then_rollback_returns_an_unusual_host_exactly_as_it_was() {
    for_each_bash(|bash| {
        for kind in ["ofed", "inbox"] {
            let h = unusual_host(kind, bash);
            let pristine = state(&h);
            assert!(
                pristine.contains(".fake/net/ens1f0np0/pause=on on"),
                "{pristine}"
            );

            let apply = h.run("apply.sh", &[]);
            assert_eq!(
                apply.code, 0,
                "{kind} {bash}: {}\n{}",
                apply.stdout, apply.stderr
            );
            apply.expect(&["trust", "pfc", "pause", "mtu"], "mlx5_0", "changed", bash);
            apply.expect(&["pfc", "pause", "mtu"], "mlx5_1", "changed", bash);
            assert_eq!(
                apply.status("trust", "mlx5_1"),
                "pass",
                "{kind}: already dscp"
            );
            assert_eq!(apply.status("dscp2prio", "mlx5_1"), "changed");
            assert_eq!(
                apply.message("pause", "mlx5_0"),
                "pause changed from rx on tx on to rx off tx off (the driver cleared it when PFC was set)"
            );
            assert!(
                apply
                    .message("pfc", "mlx5_1")
                    .ends_with("; changing PFC toggles the link of ens2f0np0 (one flap)"),
                "{}",
                apply.message("pfc", "mlx5_1")
            );
            assert!(
                apply.stdout.contains(
                    "2 links that flapped once (the driver toggles the link to apply PFC): ens1f0np0 ens2f0np0"
                ),
                "{}",
                apply.stdout
            );
            assert_ne!(state(&h), pristine);

            let back = h.run("rollback.sh", &[]);
            assert_eq!(
                back.code, 0,
                "{kind} {bash}: {}\n{}",
                back.stdout, back.stderr
            );
            assert_eq!(back.count("fail"), 0, "{:?}", back.statuses());
            let after = state(&h);
            if after != pristine {
                let diff = similar::TextDiff::from_lines(&pristine, &after)
                    .unified_diff()
                    .header("before apply", "after rollback")
                    .to_string();
                panic!("{kind} {bash}: rollback did not restore the host:\n{diff}");
            }
            // Explicitly, the values that went wrong before: trust and map, pause, traffic class.
            assert_eq!(
                read(&h, ".fake/dcb/ens1f0np0/app"),
                "",
                "{kind}: PCP trust again"
            );
            assert!(
                read(&h, ".fake/dcb/ens2f0np0/app").contains(" 5\n"),
                "{kind}: 26→5"
            );
            assert!(read(&h, ".fake/net/ens1f0np0/pause").starts_with("on on"));
            if kind == "ofed" {
                assert_eq!(
                    read(&h, "sys/class/infiniband/mlx5_0/tc/1/traffic_class").trim(),
                    "",
                    "cleared with -1"
                );
                assert_eq!(back.status("traffic_class", "mlx5_0"), "changed");
            }
            // Each PFC change (apply, rollback) flapped each link once.
            assert_eq!(read(&h, ".fake/dcb/ens1f0np0/flaps").lines().count(), 2);
        }
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_cma_tools_errors_on_stdout_are_never_taken_for_values() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        std::fs::write(h.fake(".fake/not-root"), "").unwrap();
        let pre = h.run("precheck.sh", &[]);
        for id in ["roce_mode", "roce_tos"] {
            assert_eq!(pre.status(id, "mlx5_0"), "fail", "{bash}: {id}");
            assert!(
                pre.message(id, "mlx5_0")
                    .contains("You must be root to run this"),
                "{}",
                pre.message(id, "mlx5_0")
            );
            let check = pre.result["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["id"] == id && c["nic"] == "mlx5_0")
                .unwrap();
            assert_eq!(check["actual"], "", "{check}");
        }
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_cmis_module_is_read_by_its_channel_labels_and_the_link_lanes() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        let pre = h.run("precheck.sh", &[]);
        // 8 channels printed, 4 used: the dark lanes 5-8 are no alarm.
        assert_eq!(
            pre.status("optics", "mlx5_0"),
            "pass",
            "{}",
            pre.message("optics", "mlx5_0")
        );
        let tx = &pre.result["facts"]["nics"]["mlx5_0"]["transceiver"]["tx_power_dbm"];
        assert_eq!(tx.as_array().map(Vec::len), Some(4), "{tx}");
        // A link that really uses 8 lanes would be missing light on four of them.
        std::fs::write(h.fake(".fake/net/ens1f0np0/lanes"), "8\n").unwrap();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.status("optics", "mlx5_0"), "warn");
        assert!(
            pre.message("optics", "mlx5_0")
                .contains("TX power lane 5 has no light"),
            "{}",
            pre.message("optics", "mlx5_0")
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn firmware_owned_dcbx_and_lldpad_are_reported_and_dcbx_os_takes_and_gives_back_ownership() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        std::fs::write(h.fake(".fake/dcb/ens1f0np0/dcbx"), "cee ieee\n").unwrap();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.status("dcbx", "mlx5_0"), "warn", "{bash}");
        assert!(
            pre.message("dcbx", "mlx5_0")
                .contains("firmware-controlled")
        );
        assert_eq!(pre.status("dcbx", "mlx5_1"), "pass");
        assert_eq!(pre.result["facts"]["nics"]["mlx5_0"]["dcbx"], "fw");
        std::fs::write(h.fake(".fake/systemd/active/lldpad.service"), "").unwrap();
        let pre = h.run("precheck.sh", &[]);
        assert!(
            pre.message("dcbx", "mlx5_1").contains("lldpad runs"),
            "{}",
            pre.message("dcbx", "mlx5_1")
        );

        let h = FakeHost::ofed()
            .bash(bash)
            .plan(|plan| {
                plan["cluster"]["dcbx"] = Value::from("os");
            })
            .build();
        std::fs::write(h.fake(".fake/dcb/ens1f0np0/dcbx"), "cee ieee\n").unwrap();
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{}", apply.stdout);
        assert_eq!(apply.status("dcbx", "mlx5_0"), "changed");
        assert_eq!(apply.status("dcbx", "mlx5_1"), "pass");
        assert!(
            h.take_commands()
                .contains(&"mlnx_qos -i ens1f0np0 -d os".to_string())
        );
        let back = h.run("rollback.sh", &[]);
        assert_eq!(
            back.status("dcbx", "mlx5_0"),
            "changed",
            "{:?}",
            back.statuses()
        );
        assert_eq!(read(&h, ".fake/dcb/ens1f0np0/dcbx").trim(), "cee ieee");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_driver_reload_re_applies_through_the_unit_the_ofed_hook_chained_to_the_one_there_restarts() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        let hook = h.fake("etc/infiniband/post-start-hook.sh");
        std::fs::create_dir_all(hook.parent().unwrap()).unwrap();
        let theirs = "#!/bin/bash\necho site hook >> \"${ROCE_GEN_ROOT:-}/site-hook-ran\"\n";
        std::fs::write(&hook, theirs).unwrap();
        std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{}", apply.stdout);
        assert_eq!(apply.status("persistence_reload", ""), "changed");
        assert_eq!(
            read(&h, "etc/infiniband/post-start-hook.sh.roce-gen-chained"),
            theirs
        );

        let _ = h.take_unit_log();
        let (code, out, err) = h.host_step("reload", &[]);
        assert_eq!(code, 0, "{out}{err}");
        // The reload wiped the settings; the hook ran the site's hook and asked systemd, which
        // ran the unit once: it put the settings back.
        assert_eq!(read(&h, "site-hook-ran"), "site hook\n");
        let units = h.take_unit_log();
        assert_eq!(
            units
                .iter()
                .filter(|l| l.starts_with("roce-gen-lab.service: ") && l.contains("ExecStart ran"))
                .count(),
            1,
            "{units:#?}"
        );
        assert_eq!(
            read(&h, "sys/class/infiniband/mlx5_0/tc/1/traffic_class").trim(),
            "106"
        );
        assert_eq!(read(&h, "sys/class/net/ens2f0np0/mtu").trim(), "4200");
        let result: Value =
            serde_json::from_str(&read(&h, "var/lib/roce-gen/lab/results/node-a.apply.json"))
                .unwrap();
        assert_eq!(result["counts"]["fail"], 0, "{result:#}");

        let back = h.run("rollback.sh", &[]);
        assert_eq!(
            back.status("persistence_reload", ""),
            "changed",
            "{:?}",
            back.statuses()
        );
        assert_eq!(read(&h, "etc/infiniband/post-start-hook.sh"), theirs);
        assert!(
            !h.fake("etc/infiniband/post-start-hook.sh.roce-gen-chained")
                .exists()
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn inbox_hosts_get_a_udev_trigger_that_rollback_removes() {
    let h = FakeHost::inbox().build();
    let apply = h.run("apply.sh", &[]);
    assert_eq!(
        apply.status("persistence_reload", ""),
        "changed",
        "{}",
        apply.stdout
    );
    let rule = read(&h, "etc/udev/rules.d/90-roce-gen-lab.rules");
    assert!(
        rule.contains("ACTION==\"add\", SUBSYSTEM==\"infiniband\", KERNELS==\"0000:1a:00.0|0000:3c:00.0\", RUN+=\"/bin/systemctl --no-block try-restart roce-gen-lab.service\", RUN+=\"/bin/systemctl --no-block start roce-gen-lab.service\""),
        "{rule}"
    );
    // udevd is told to read the rules again when the rule is written and when it is removed.
    assert_eq!(read(&h, ".fake/udev/reload").trim(), "1");
    let back = h.run("rollback.sh", &[]);
    assert_eq!(back.status("persistence_reload", ""), "changed");
    assert!(!h.fake("etc/udev/rules.d/90-roce-gen-lab.rules").exists());
    assert_eq!(read(&h, ".fake/udev/reload").trim(), "2");
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_unreachable_udevd_does_not_fail_the_udev_rule_but_is_no_success() {
    // A host whose udevd is not running (a container, a rescue boot): the rule is still
    // written, for the next boot's udevd to read; until then a reload re-applies nothing, so
    // the check warns and says what to run.
    let h = FakeHost::inbox().build();
    let refused = "Failed to send reload request: Connection refused\n";
    std::fs::write(h.fake(".fake/fail/udevadm"), refused).unwrap();
    let apply = h.run("apply.sh", &[]);
    assert_eq!(apply.code, 0, "{}", apply.stdout);
    assert_eq!(apply.status("persistence_reload", ""), "warn");
    let message = apply.message("persistence_reload", "");
    assert!(
        message.contains("udevadm control --reload") && message.contains("Connection refused"),
        "{message}"
    );
    assert!(h.fake("etc/udev/rules.d/90-roce-gen-lab.rules").exists());
    assert!(!h.fake(".fake/udev/reload").exists());
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn one_run_at_a_time_and_a_stale_lock_is_taken_over() {
    let h = FakeHost::ofed().build();
    std::fs::create_dir_all(h.fake("run")).unwrap();
    let mut holder = Command::new("sleep").arg("60").spawn().unwrap();
    std::os::unix::fs::symlink(format!("pid:{}", holder.id()), h.fake("run/roce-gen.lock"))
        .unwrap();
    let apply = h.bundle.join("apply.sh").display().to_string();
    let (code, _, err) = h.run_cmd(&["bash", &apply]);
    holder.kill().unwrap();
    let _ = holder.wait();
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("another roce-gen run (pid"), "{err}");
    assert!(changes_none(&h));
    // Its owner is gone (killed): the next run takes the lock over.
    let run = h.run("apply.sh", &[]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        !h.fake("run/roce-gen.lock").exists(),
        "the older bundle's lock of an ended run is gone"
    );
    assert!(lock_is_free(&h), "released at the end");
}

/// Whether the run lock (a flock on /run/roce-gen-run.lock) can be taken now.
fn lock_is_free(h: &FakeHost) -> bool {
    let lock = h.fake("run/roce-gen-run.lock").display().to_string();
    Command::new("flock")
        .args(["-n", &lock, "true"])
        .status()
        .unwrap()
        .success()
}

fn changes_none(h: &FakeHost) -> bool {
    !h.take_commands()
        .iter()
        .any(|c| c.contains("--trust") || c.starts_with("ip link set"))
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_hung_tool_is_a_failed_check_naming_it_not_a_hung_run() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        let ethtool = h.fake("bin/ethtool");
        std::fs::remove_file(&ethtool).unwrap();
        std::fs::write(
            &ethtool,
            "#!/bin/bash\n[ \"$1\" != -m ] || exec sleep 300\nexec \"${ROCE_GEN_ROOT}/lib/fakehost/ethtool\" \"$@\"\n",
        )
        .unwrap();
        std::fs::set_permissions(
            &ethtool,
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .unwrap();
        let started = std::time::Instant::now();
        let pre = h.run_env("precheck.sh", &[], &[("ROCE_GEN_TOOL_TIMEOUT", "2")]);
        assert!(
            started.elapsed().as_secs() < 60,
            "{bash}: took {:?}",
            started.elapsed()
        );
        assert_eq!(pre.code, 1, "{}", pre.stdout);
        assert_eq!(pre.status("tool_timeout", ""), "fail");
        assert!(
            pre.message("tool_timeout", "")
                .starts_with("ethtool did not answer within 2s"),
            "{}",
            pre.message("tool_timeout", "")
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_full_state_folder_stops_apply_before_any_change_with_a_result_and_exit_2() {
    let h = FakeHost::ofed().build();
    let out = h.root.parent().unwrap().join("full.json");
    let script = format!(
        "set -e; d=$ROCE_GEN_ROOT/var/lib/roce-gen; mkdir -p $d; mount -t tmpfs -o size=8k full $d; \
         dd if=/dev/zero of=$d/fill bs=4k count=8 2>/dev/null || true; exec bash {} --out {}",
        h.bundle.join("apply.sh").display(),
        out.display()
    );
    let (code, stdout, err) = h.run_cmd(&["bash", "-c", &script]);
    assert_eq!(code, 2, "{stdout}{err}");
    let result: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    let saved = result["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "saved_state")
        .unwrap_or_else(|| panic!("{result:#}"));
    assert_eq!(saved["status"], "fail");
    assert!(
        saved["message"]
            .as_str()
            .unwrap()
            .contains("nothing was changed on mlx5_0"),
        "{saved}"
    );
    assert_eq!(read(&h, "sys/class/net/ens1f0np0/mtu").trim(), "1500");
    assert!(changes_none(&h));
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn random_bytes_from_hostname_still_give_a_valid_utf8_result() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        std::fs::write(h.fake(".fake/hostname"), b"node-\xff\xfe\xc3(\xe2\x82\n").unwrap();
        // run() reads the result as UTF-8 and parses it: both fail on a bad byte.
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.status("hostname", ""), "fail");
        let seen = pre.result["observed_hostname"].as_str().unwrap();
        assert!(
            seen.starts_with("node-\u{fffd}\u{fffd}\u{fffd}("),
            "{seen:?}"
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn mlnx_qos_starts_once_per_port_to_read_and_at_most_twice_more_to_change() {
    let h = FakeHost::ofed().build();
    let _ = h.take_commands();
    for (script, most) in [("precheck.sh", 1), ("apply.sh", 3), ("apply.sh", 1)] {
        let run = h.run(script, &[]);
        assert_eq!(run.code, 0, "{}", run.stdout);
        let commands = h.take_commands();
        for port in ["ens1f0np0", "ens2f0np0"] {
            let prefix = format!("mlnx_qos -i {port}");
            let n = commands.iter().filter(|c| c.starts_with(&prefix)).count();
            assert!(
                (1..=most).contains(&n),
                "{script}: {n} mlnx_qos starts on {port}"
            );
        }
    }
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn without_a_device_net_link_ofed_hosts_map_the_port_through_ibdev2netdev() {
    for kind in ["ofed", "inbox"] {
        let h = FakeHost::of(kind).build();
        std::fs::remove_file(h.fake("sys/devices/pci0000:00/0000:1a:00.0/net/ens1f0np0")).unwrap();
        let pre = h.run("precheck.sh", &[]);
        let want = if kind == "ofed" { "pass" } else { "fail" };
        assert_eq!(
            pre.status("netdev_map", "mlx5_0"),
            want,
            "{kind}: {}",
            pre.message("netdev_map", "mlx5_0")
        );
    }
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_run_that_strict_mode_stops_still_leaves_a_result_saying_where() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        // Nothing expects `id` to fail; strict mode then stops the script mid-run.
        let id = h.fake("bin/id");
        std::fs::write(&id, "#!/bin/sh\nexit 3\n").unwrap();
        std::fs::set_permissions(&id, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 2, "{bash}: {}{}", pre.stdout, pre.stderr);
        assert_eq!(pre.status("script_error", ""), "fail");
        let why = pre.message("script_error", "");
        assert!(
            why.contains("lib-checks.sh line") && why.contains("id -u"),
            "{why}"
        );
        assert_eq!(
            pre.status("hostname", ""),
            "pass",
            "the checks before it are kept"
        );
        assert!(lock_is_free(&h), "the lock is released");
    });
}

/// `dcbx = os` on both backends (mlnx_qos on OFED, `dcb dcbx` on inbox hosts): precheck says
/// apply will take DCBX from the firmware, apply does it once, a second apply changes nothing,
/// rollback gives it back; a host with neither tool skips the check and says why.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn dcbx_os_is_taken_once_and_given_back_on_either_backend() {
    for_each_bash(|bash| {
        for kind in ["ofed", "inbox"] {
            let ctx = format!("{kind} {bash}");
            let h = FakeHost::of(kind)
                .bash(bash)
                .plan(|plan| {
                    plan["cluster"]["dcbx"] = Value::from("os");
                })
                .build();
            std::fs::write(h.fake(".fake/dcb/ens1f0np0/dcbx"), "cee ieee\n").unwrap();
            let pre = h.run("precheck.sh", &[]);
            assert_eq!(pre.status("dcbx", "mlx5_0"), "warn", "{ctx}");
            assert_eq!(pre.status("dcbx", "mlx5_1"), "pass", "{ctx}");
            h.take_commands();

            let apply = h.run("apply.sh", &[]);
            assert_eq!(apply.code, 0, "{ctx}: {}", apply.stdout);
            assert_eq!(apply.status("dcbx", "mlx5_0"), "changed", "{ctx}");
            let taken = if kind == "ofed" {
                "mlnx_qos -i ens1f0np0 -d os"
            } else {
                "dcb dcbx set dev ens1f0np0 host ieee"
            };
            let dcbx_commands = |h: &FakeHost| -> Vec<String> {
                h.take_commands()
                    .into_iter()
                    .filter(|c| {
                        (c.starts_with("mlnx_qos ") && c.contains(" -d "))
                            || c.starts_with("dcb dcbx set")
                    })
                    .collect()
            };
            assert_eq!(dcbx_commands(&h), [taken], "{ctx}");
            assert_eq!(
                apply.result["facts"]["nics"]["mlx5_0"]["dcbx"], "os",
                "{ctx}"
            );

            let again = h.run("apply.sh", &[]);
            assert_eq!(again.status("dcbx", "mlx5_0"), "pass", "{ctx}");
            assert!(
                dcbx_commands(&h).is_empty(),
                "{ctx}: a second apply sets DCBX"
            );

            let back = h.run("rollback.sh", &[]);
            if kind == "ofed" {
                assert_eq!(
                    back.status("dcbx", "mlx5_0"),
                    "changed",
                    "{ctx}: {}",
                    back.message("dcbx", "mlx5_0")
                );
                assert_eq!(
                    read(&h, ".fake/dcb/ens1f0np0/dcbx").trim(),
                    "cee ieee",
                    "{ctx}"
                );
                assert_eq!(
                    back.result["facts"]["nics"]["mlx5_0"]["dcbx"], "fw",
                    "{ctx}"
                );
            } else {
                // `dcb dcbx set` always names a mode, and mlx5e_dcbnl_setdcbx refuses one
                // without `host`: with dcb alone the firmware cannot be given DCBX back, and
                // rollback says so (a skip naming the command that would), never that it did.
                assert_eq!(back.status("dcbx", "mlx5_0"), "skip", "{ctx}");
                let msg = back.message("dcbx", "mlx5_0");
                assert!(
                    msg.starts_with("not restored: DCBX of ens1f0np0 was firmware-controlled")
                        && msg.contains("run mlnx_qos -i ens1f0np0 -d fw"),
                    "{ctx}: {msg}"
                );
                assert_eq!(back.code, 0, "{ctx}: the rest of the rollback completes");
                assert_eq!(
                    back.result["facts"]["nics"]["mlx5_0"]["dcbx"], "os",
                    "{ctx}"
                );
            }

            for tool in ["mlnx_qos", "dcb"] {
                let _ = std::fs::remove_file(h.fake(&format!("bin/{tool}")));
            }
            let bare = crate::monitor::run_without(&h, "precheck.sh", &["mlnx_qos", "dcb"]);
            assert_eq!(bare.status("dcbx", "mlx5_0"), "skip", "{ctx}");
            assert_eq!(
                bare.message("dcbx", "mlx5_0"),
                "skipped: no mlnx_qos, and dcb (iproute2) is not installed",
                "{ctx}"
            );
        }
    });
}

/// Rollback trusts no saved state it cannot read: a garbled one (here, what a health run wrote
/// through a planted link under older scripts) and an empty one while apply's unit, bundle and
/// rule are there both fail, restore nothing, remove nothing and keep the file.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn rollback_refuses_a_garbled_or_empty_saved_state_and_keeps_it() {
    let h = FakeHost::ofed().build();
    let apply = h.run("apply.sh", &[]);
    assert_eq!(apply.code, 0, "{}", apply.stdout);
    let state = h.fake("var/lib/roce-gen/lab/saved-state.tsv");
    let genuine = std::fs::read_to_string(&state).unwrap();
    for (garbled, why) in [
        (
            "# HELP roce_gen_health_run_ok 1 when the run could read every port\n".to_string(),
            "line 1 is not ID, NIC and value separated by tabs",
        ),
        (
            String::new(),
            "is empty, but apply has been here (/etc/systemd/system/roce-gen-lab.service, /opt/roce-gen/lab, /etc/udev/rules.d/90-roce-gen-lab.rules)",
        ),
        (
            genuine.trim_end().to_string(),
            "has no newline: the file was cut short",
        ),
    ] {
        std::fs::write(&state, &garbled).unwrap();
        let before = h.snapshot();
        h.take_commands();
        let back = h.run("rollback.sh", &[]);
        assert_eq!(back.code, 1, "{why}: {}", back.stdout);
        assert_eq!(back.status("saved_state", ""), "fail", "{why}");
        assert!(
            back.message("saved_state", "").contains(why),
            "{}",
            back.message("saved_state", "")
        );
        assert!(back.stdout.contains("❌ saved_state: "), "{}", back.stdout);
        assert_eq!(h.snapshot(), before, "{why}: rollback changed the host");
        assert_eq!(
            crate::fakehost::changes(&h.take_commands()),
            Vec::<String>::new(),
            "{why}: rollback ran a changing command"
        );
        assert_eq!(
            std::fs::read_to_string(&state).unwrap(),
            garbled,
            "{why}: the file changed"
        );
        assert!(
            h.fake("etc/systemd/system/roce-gen-lab.service").exists(),
            "{why}"
        );
    }
    // Put back, rollback restores as ever.
    std::fs::write(&state, &genuine).unwrap();
    let back = h.run("rollback.sh", &[]);
    assert_eq!(back.code, 0, "{}", back.stdout);
    assert!(back.count("changed") > 10, "{:?}", back.statuses());
    assert!(!state.exists());
}

/// An apply or a rollback killed half-way (SIGKILL, a power cut) leaves no result of its own,
/// but the one it wrote first: ingest then says the run was interrupted, never the verdict of
/// the run before it (`configured` after a killed rollback). A `mlnx_qos` on the host's PATH
/// that kills the run at its first change (when asked to, by KILL_AT_CHANGE) stands for the kill.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_killed_apply_or_rollback_ingests_as_interrupted() {
    let h = FakeHost::ofed().build();
    // The stand-in the host's bin/ links to (a link relative to bin/).
    let real = h
        .fake("bin")
        .join(std::fs::read_link(h.fake("bin/mlnx_qos")).unwrap());
    let wrapper = h.fake("bin/mlnx_qos");
    std::fs::remove_file(&wrapper).unwrap();
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/bash
\
             if [ -n \"${{KILL_AT_CHANGE-}}\" ]; then\n\
             case \" $* \" in *' --trust '* | *' --pfc '*) kill -9 \"$(cat \"$ROCE_GEN_ROOT/run/roce-gen-run.lock\")\" ;; esac\n\
             fi\n\
             exec {} \"$@\"\n",
            real.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let results = h.bundle.join("results");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(h.plan(), dir.path().join("plan.json")).unwrap();
    std::fs::create_dir(dir.path().join("results")).unwrap();
    for phase in ["rollback", "apply"] {
        // The host as the killed run finds it: configured for a rollback, as before for an apply.
        let ready = h.run(
            if phase == "rollback" {
                "apply.sh"
            } else {
                "rollback.sh"
            },
            &[],
        );
        assert_eq!(ready.code, 0, "{phase}: {}", ready.stdout);
        let script = h.bundle.join(format!("{phase}.sh")).display().to_string();
        let (code, _, _) = h.run_raw(&["bash", &script], &[("KILL_AT_CHANGE", "1")]);
        assert_eq!(code, 137, "{phase}: the run was not killed");
        // The results a site collects: every phase's newest, the killed run's among them.
        for name in ["node-a.apply.json", "node-a.rollback.json"] {
            if let Ok(text) = std::fs::read_to_string(results.join(name)) {
                std::fs::write(dir.path().join("results").join(name), text).unwrap();
            }
        }
        let host = crate::fakehost::ingested_host(dir.path(), "node-a");
        assert_eq!(host["state"], "failed", "{phase}: {host:#}");
        let text = host.to_string();
        assert!(
            text.contains(&format!("{phase}.sh started at "))
                && text.contains("did not finish (killed, or the host went down)")
                && text.contains(&format!("run {phase}.sh again")),
            "{phase}: {host:#}"
        );
    }
}
