//! What the scripts know about the host they run on (issue 26): host names compared by their
//! short forms (a plan's FQDN on a host that calls itself by the short name, and the reverse,
//! in the scripts and in run-here.sh), a planned netdev the host renamed or knows only as an
//! altname found by the planned PCI address and MAC and configured under the host's name (a
//! warning names both; rollback restores there), an interface at the planned PCI address with
//! another MAC refused, and a root file system that does not survive a reboot warned about in
//! precheck and apply. Then what ingest makes of these warnings: a host to look at, not a
//! failure, and no setting left to change. Each on a simulated host, under every bash.

use serde_json::Value;

use crate::fakehost::{FakeHost, ScriptRun, for_each_bash};

/// The value of one file of the host's root, without its newline.
fn value(h: &FakeHost, rel: &str) -> String {
    std::fs::read_to_string(h.fake(rel))
        .unwrap_or_else(|e| panic!("{rel}: {e}"))
        .trim_end()
        .to_string()
}

/// Both planned netdevs renamed; the second keeps its planned name as an altname only. An
/// inbox host: the dcb backend.
fn renamed(bash: &str) -> FakeHost {
    FakeHost::inbox()
        .bash(bash)
        .setup(&["rename", "ens1f0np0", "enp26s0f0np0"])
        .setup(&["rename", "ens2f0np0", "enp60s0f0np0"])
        .setup(&["altname", "enp60s0f0np0", "ens2f0np0"])
        .build()
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_fqdn_plan_applies_on_a_short_host_name_and_the_reverse() {
    for_each_bash(|bash| {
        let h = FakeHost::inbox()
            .plan_name("node-a.dc1.example")
            .bash(bash)
            .build();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "{bash}: {}", pre.stdout);
        assert_eq!(pre.status("hostname", ""), "pass");
        assert_eq!(
            pre.message("hostname", ""),
            "host name is node-a: node-a.dc1.example by its short name"
        );
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        assert_eq!(apply.result["host"], "node-a.dc1.example");
        assert_eq!(apply.result["observed_hostname"], "node-a");
        assert!(apply.count("changed") > 0, "{:?}", apply.statuses());
        assert_eq!(value(&h, "sys/class/net/ens1f0np0/mtu"), "4200");
        let rollback = h.run("rollback.sh", &[]);
        assert_eq!(rollback.code, 0, "{bash}: {}", rollback.stdout);
        assert_eq!(rollback.status("hostname", ""), "pass");
        assert_eq!(value(&h, "sys/class/net/ens1f0np0/mtu"), "1500");

        // A host that calls itself by its FQDN runs the plan's short name's bundle.
        let h = FakeHost::ofed()
            .host("node-a.dc1.example")
            .bash(bash)
            .build();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.status("hostname", ""), "pass", "{}", pre.stdout);
        assert_eq!(pre.result["observed_hostname"], "node-a.dc1.example");

        // Another host's short name is still another host.
        let h = FakeHost::ofed()
            .plan_name("node-a.dc1.example")
            .host("node-ab")
            .bash(bash)
            .build();
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 1, "{}", apply.stdout);
        assert_eq!(apply.status("hostname", ""), "fail");
        assert_eq!(apply.count("changed"), 0);
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn run_here_finds_the_bundle_of_an_fqdn_plan_by_the_short_host_name() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed()
            .plan_name("node-a.dc1.example")
            .bash(bash)
            .build();
        let script = h.dist().join("run-here.sh").display().to_string();
        let (code, stdout, stderr) = h.run_cmd(&[bash, &script, "precheck"]);
        assert_eq!(code, 0, "{bash}: {stdout}\n{stderr}");
        assert!(
            stdout.contains("✅ node-a.dc1.example: precheck"),
            "{stdout}"
        );
        // Found by its name, so not "identified by" anything else.
        assert!(!stdout.contains("identified as"), "{stdout}");
        let path = h.dist().join("results/node-a.dc1.example.precheck.json");
        let result: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(result["observed_hostname"], "node-a");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_renamed_port_and_an_altname_are_configured_under_the_hosts_names() {
    for_each_bash(|bash| {
        let h = renamed(bash);
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "{bash}: {}", pre.stdout);
        pre.expect(&["netdev"], "mlx5_0", "warn", bash);
        assert_eq!(
            pre.message("netdev", "mlx5_0"),
            "ens1f0np0 is not an interface here: this host calls it enp26s0f0np0 (found by its \
             PCI address 0000:1a:00.0 and MAC b8:3f:d2:0a:00:00), so the settings go to \
             enp26s0f0np0; put enp26s0f0np0 in the plan's netdev column"
        );
        assert_eq!(
            pre.message("netdev", "mlx5_1"),
            "ens2f0np0 is an altname of enp60s0f0np0 here (ip link; sysfs knows only \
             enp60s0f0np0), so the settings go to enp60s0f0np0; put enp60s0f0np0 in the plan's \
             netdev column"
        );
        // The identity holds under the new name, and the rest of the checks see that port.
        pre.expect(
            &["netdev_map", "pci", "mac", "ip", "driver"],
            "mlx5_0",
            "pass",
            bash,
        );
        pre.expect(&["mtu"], "mlx5_0", "warn", bash);
        assert!(
            pre.stdout
                .contains("⚠ netdev:mlx5_0: ens1f0np0 is not an interface here"),
            "{}",
            pre.stdout
        );
        let nics = &pre.result["facts"]["nics"];
        assert_eq!(nics["mlx5_0"]["netdev"], "enp26s0f0np0");
        assert_eq!(nics["mlx5_0"]["planned_netdev"], "ens1f0np0");
        assert_eq!(nics["mlx5_1"]["planned_netdev"], "ens2f0np0");

        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        apply.expect(&["netdev"], "mlx5_1", "warn", bash);
        apply.expect(&["mtu", "pfc", "trust"], "mlx5_0", "changed", bash);
        for ifc in ["enp26s0f0np0", "enp60s0f0np0"] {
            assert_eq!(value(&h, &format!("sys/class/net/{ifc}/mtu")), "4200");
            assert_eq!(
                value(&h, &format!(".fake/dcb/{ifc}/pfc")),
                "0,0,0,1,0,0,0,0"
            );
        }
        // Nothing went under the planned names.
        assert!(!h.fake("sys/class/net/ens1f0np0").exists());
        assert!(!h.fake(".fake/dcb/ens2f0np0").exists());

        let rollback = h.run("rollback.sh", &[]);
        assert_eq!(rollback.code, 0, "{bash}: {}", rollback.stdout);
        for ifc in ["enp26s0f0np0", "enp60s0f0np0"] {
            assert_eq!(value(&h, &format!("sys/class/net/{ifc}/mtu")), "1500");
            assert_eq!(
                value(&h, &format!(".fake/dcb/{ifc}/pfc")),
                "0,0,0,0,0,0,0,0"
            );
        }
    });
}

/// The persistence warning of a root that does not survive a reboot.
fn volatile(run: &ScriptRun) -> String {
    assert_eq!(run.status("persistence", ""), "warn", "{}", run.stdout);
    run.message("persistence", "")
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_tmpfs_root_warns_in_precheck_and_apply_and_says_to_put_the_bundle_into_the_image() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed()
            .bash(bash)
            .create_args(&["--rootfs", "tmpfs"])
            .build();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "{bash}: {}", pre.stdout);
        let msg = volatile(&pre);
        for part in [
            "the root file system is tmpfs, which does not survive a reboot",
            "the unit in /etc/systemd/system, the bundle in /opt/roce-gen/lab, the saved state in \
             /var/lib/roce-gen would be gone",
            "Put the bundle into the node image: its files in /opt/roce-gen/lab",
            "'systemctl enable ",
        ] {
            assert!(msg.contains(part), "{part}: {msg}");
        }
        assert!(pre.stdout.contains("⚠ persistence: "), "{}", pre.stdout);

        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        let msg = volatile(&apply);
        assert!(
            msg.starts_with("installed the bundle in /opt/roce-gen/lab and enabled "),
            "{msg}"
        );
        assert!(msg.contains("Put the bundle into the node image"), "{msg}");
        assert!(apply.stdout.contains("⚠ persistence: "), "{}", apply.stdout);
        // The settings themselves are configured.
        assert_eq!(value(&h, "sys/class/net/ens1f0np0/mtu"), "4200");
        let again = h.run("apply.sh", &[]);
        assert_eq!(again.count("changed"), 0, "{:?}", again.statuses());
        volatile(&again);

        // An ext4 root with only the state folder on a tmpfs: rollback's values are what is lost.
        let h = FakeHost::inbox()
            .bash(bash)
            .create_args(&["--mount", "/var/lib/roce-gen:tmpfs"])
            .build();
        let pre = h.run("precheck.sh", &[]);
        let msg = volatile(&pre);
        assert!(
            msg.starts_with("/var/lib/roce-gen is on tmpfs, which does not survive a reboot"),
            "{msg}"
        );
        assert!(!msg.contains("node image"), "{msg}");

        // On a disk root nothing is said of it: persistence is only apply's install, predicted.
        let h = FakeHost::ofed().bash(bash).build();
        let pre = h.run("precheck.sh", &[]);
        let msg = pre.message("persistence", "");
        assert!(
            msg.starts_with("apply will install the bundle in /opt/roce-gen/lab")
                && !msg.contains("does not survive a reboot"),
            "{msg}"
        );
    });
}

/// The exit status and the host's entry of `roce-gen ingest` on the results in `dir`.
fn ingested(h: &FakeHost, dir: &std::path::Path) -> (i32, Value) {
    let plan = h.plan().display().to_string();
    let run = crate::common::roce_gen(dir, &["ingest", ".", "--plan", &plan, "--format", "json"]);
    let report: Value = serde_json::from_str(&run.stdout)
        .unwrap_or_else(|e| panic!("ingest: {e}\n{}", run.transcript()));
    let host = report["hosts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["host"] == "node-a")
        .cloned()
        .unwrap_or_else(|| panic!("no node-a in\n{}", run.stdout));
    (run.code, host)
}

/// The ids of a list of checks in the ingest report.
fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|c| {
            format!(
                "{}:{}",
                c["id"].as_str().unwrap(),
                c["nic"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn ingest_shows_a_renamed_netdev_and_a_volatile_root_as_warnings_not_failures_or_changes() {
    let h = FakeHost::ofed()
        .create_args(&["--rootfs", "tmpfs"])
        .setup(&["rename", "ens1f0np0", "enp26s0f0np0"])
        .build();
    let dir = crate::common::tmp();
    let write = |run: &ScriptRun, name: &str| {
        std::fs::write(dir.path().join(name), run.result.to_string()).unwrap();
    };
    let pre = h.run("precheck.sh", &[]);
    assert_eq!(pre.code, 0, "{}", pre.stdout);
    write(&pre, "node-a.precheck.json");
    let (_, host) = ingested(&h, dir.path());
    let warnings = ids(&host["warnings"]);
    assert!(warnings.contains(&"netdev:mlx5_0".to_string()), "{host}");
    assert!(warnings.contains(&"persistence:".to_string()), "{host}");
    assert!(ids(&host["failures"]).is_empty(), "{host}");
    // The volatile root is no setting apply would change.
    assert!(
        !ids(&host["changes"]).contains(&"persistence:".to_string()),
        "{host}"
    );

    let apply = h.run("apply.sh", &[]);
    assert_eq!(apply.code, 0, "{}", apply.stdout);
    write(&apply, "node-a.apply.json");
    let (_, host) = ingested(&h, dir.path());
    // Ready: configured, the warnings to read beside it (the plan's node-b has no results, so
    // the cluster as a whole is not).
    assert_eq!(host["ok"], true, "{host}");
    assert_eq!(host["state"], "configured", "{host}");
    let warnings = ids(&host["warnings"]);
    assert!(warnings.contains(&"netdev:mlx5_0".to_string()), "{host}");
    assert!(warnings.contains(&"persistence:".to_string()), "{host}");
    assert!(ids(&host["failures"]).is_empty(), "{host}");
}
