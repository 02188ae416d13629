//! The host's network managers (issue 26): a port that NetworkManager or systemd-networkd owns
//! keeps the planned MTU when the manager activates the link again; one whose MTU netplan or an
//! ifcfg file sets gets a warning that names the file, never `changed`; precheck warns and
//! records the manager in the facts; rollback returns the profile and the drop-in to what they
//! were; a dry run prints the manager's commands and changes nothing; the boot run leaves /etc
//! alone. On simulated hosts (`fakehost.sh create --netmgr`, `reactivate`) whose `nmcli` and
//! `networkctl` print what the fixtures hold (NetworkManager's and systemd's sources).

use std::process::Command;

use crate::fakehost::{FakeHost, changes, for_each_bash, repo};

const NM_UUID: &str = "5fc2a9b0-7e3d-4c1a-9f00-000000000002";
const NM_KEYFILE: &str = "etc/NetworkManager/system-connections/ens1f0np0.nmconnection";
const NETWORK_FILE: &str = "/etc/systemd/network/10-ens2f0np0.network";
const DROP_IN: &str = "etc/systemd/network/10-ens2f0np0.network.d/90-roce-gen-lab.conf";

/// node-a (an OFED host) with its two ports' managers given as `IF:KIND[:MTU]`.
fn host(bash: &str, managers: &[&str]) -> FakeHost {
    host_of("ofed", bash, managers)
}

/// node-a as a host of `kind` (`ofed`, `inbox`) with these managers.
fn host_of(kind: &str, bash: &str, managers: &[&str]) -> FakeHost {
    let mut args = Vec::new();
    for m in managers {
        args.extend(["--netmgr", m]);
    }
    FakeHost::of(kind).bash(bash).create_args(&args).build()
}

/// `fakehost.sh reactivate ROOT IF`: what the manager does when it activates IF again.
fn reactivate(h: &FakeHost, ifc: &str) {
    let out = Command::new("bash")
        .arg(repo().join("tests/host/fakehost.sh"))
        .arg("reactivate")
        .arg(&h.root)
        .arg(ifc)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "reactivate {ifc}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn mtu(h: &FakeHost, ifc: &str) -> String {
    std::fs::read_to_string(h.fake(&format!("sys/class/net/{ifc}/mtu")))
        .unwrap()
        .trim()
        .to_string()
}

fn read(h: &FakeHost, rel: &str) -> String {
    std::fs::read_to_string(h.fake(rel)).unwrap_or_default()
}

fn fixture(rel: &str) -> String {
    std::fs::read_to_string(repo().join("tests/host/fixtures").join(rel)).unwrap()
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn networkmanager_and_networkd_ports_keep_the_planned_mtu_after_a_reactivation() {
    for_each_bash(|bash| {
        // Ubuntu's inbox driver, where both managers are common (the OFED host is the
        // NetworkManager scenario's).
        let h = host_of(
            "inbox",
            bash,
            &["ens1f0np0:nm:1500", "ens2f0np0:networkd:1500"],
        );
        // The managers are real to the host: an MTU set by hand does not survive them.
        h.run_cmd(&["ip", "link", "set", "dev", "ens1f0np0", "mtu", "4200"]);
        reactivate(&h, "ens1f0np0");
        assert_eq!(
            mtu(&h, "ens1f0np0"),
            "1500",
            "NetworkManager put its MTU back"
        );

        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "{}", pre.stdout);
        pre.expect(&["mtu", "mtu_owner"], "mlx5_0", "warn", "precheck");
        pre.expect(&["mtu", "mtu_owner"], "mlx5_1", "warn", "precheck");
        let msg = pre.message("mtu_owner", "mlx5_0");
        assert!(
            msg.contains("NetworkManager profile 'ens1f0np0'") && msg.contains(NM_UUID),
            "{msg}"
        );
        assert!(msg.contains("sets MTU 1500"), "{msg}");
        let msg = pre.message("mtu_owner", "mlx5_1");
        assert!(
            msg.contains(NETWORK_FILE) && msg.contains("sets MTU 1500"),
            "{msg}"
        );
        let nics = &pre.result["facts"]["nics"];
        assert_eq!(nics["mlx5_0"]["net_manager"], "networkmanager");
        assert_eq!(nics["mlx5_0"]["net_manager_profile"], NM_UUID);
        assert_eq!(nics["mlx5_1"]["net_manager"], "networkd");
        assert_eq!(nics["mlx5_1"]["net_manager_profile"], NETWORK_FILE);
        let keyfile = read(&h, NM_KEYFILE);
        let _ = h.take_commands();

        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{}\n{}", apply.stdout, apply.stderr);
        for nic in ["mlx5_0", "mlx5_1"] {
            apply.expect(&["mtu", "mtu_owner"], nic, "changed", "apply");
        }
        let ran = h.take_commands();
        for cmd in [
            format!("nmcli connection modify {NM_UUID} 802-3-ethernet.mtu 4200"),
            "nmcli device reapply ens1f0np0".to_string(),
            "networkctl reload".to_string(),
            "networkctl reconfigure ens2f0np0".to_string(),
        ] {
            assert!(ran.contains(&cmd), "{cmd} not in {ran:?}");
        }
        assert!(
            read(&h, NM_KEYFILE).contains("\nmtu=4200\n"),
            "{}",
            read(&h, NM_KEYFILE)
        );
        assert_eq!(read(&h, DROP_IN), fixture("networkd/90-roce-gen-lab.conf"));

        // A carrier that returns late, `nmcli connection up`, `networkctl reconfigure`: the
        // managers now put the planned MTU on the ports.
        for ifc in ["ens1f0np0", "ens2f0np0"] {
            std::fs::write(h.fake(&format!("sys/class/net/{ifc}/mtu")), "1500\n").unwrap();
            reactivate(&h, ifc);
            assert_eq!(mtu(&h, ifc), "4200", "{ifc} after a reactivation");
        }

        let again = h.run("apply.sh", &[]);
        assert_eq!(again.count("changed"), 0, "{:?}", again.statuses());
        again.expect(&["mtu", "mtu_owner"], "mlx5_0", "pass", "second apply");
        let ran = changes(&h.take_commands());
        assert!(ran.is_empty(), "a second apply ran {ran:?}");

        let back = h.run("rollback.sh", &[]);
        assert_eq!(back.code, 0, "{}\n{}", back.stdout, back.stderr);
        back.expect(&["mtu", "mtu_owner"], "mlx5_0", "changed", "rollback");
        back.expect(&["mtu", "mtu_owner"], "mlx5_1", "changed", "rollback");
        assert_eq!(read(&h, NM_KEYFILE), keyfile, "the profile as it was");
        assert!(!h.fake(DROP_IN).exists(), "the drop-in is gone");
        for ifc in ["ens1f0np0", "ens2f0np0"] {
            reactivate(&h, ifc);
            assert_eq!(
                mtu(&h, ifc),
                "1500",
                "{ifc}: the managers' MTU as before apply"
            );
        }
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn netplan_and_ifcfg_ports_warn_naming_the_file_and_are_never_changed() {
    for_each_bash(|bash| {
        let h = host(bash, &["ens1f0np0:netplan:9000", "ens2f0np0:ifcfg:1500"]);
        let pre = h.run("precheck.sh", &[]);
        pre.expect(&["mtu_owner"], "mlx5_0", "warn", "precheck");
        pre.expect(&["mtu_owner"], "mlx5_1", "warn", "precheck");
        assert!(
            pre.message("mtu_owner", "mlx5_0")
                .contains("/etc/netplan/50-cloud-init.yaml"),
            "{}",
            pre.message("mtu_owner", "mlx5_0")
        );
        assert_eq!(
            pre.result["facts"]["nics"]["mlx5_0"]["net_manager"],
            "netplan"
        );
        assert_eq!(
            pre.result["facts"]["nics"]["mlx5_1"]["net_manager"],
            "ifcfg"
        );
        let theirs = ["etc/netplan", "etc/sysconfig", "run/systemd/network"];
        let files = h.snapshot_of(&theirs);

        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{}", apply.stdout);
        for (nic, file) in [
            ("mlx5_0", "/etc/netplan/50-cloud-init.yaml"),
            ("mlx5_1", "/etc/sysconfig/network-scripts/ifcfg-ens2f0np0"),
        ] {
            apply.expect(&["mtu", "mtu_owner"], nic, "warn", "apply");
            let msg = apply.message("mtu", nic);
            assert!(msg.contains(file) && msg.contains("back"), "{msg}");
        }
        assert!(
            apply.stdout.contains("mtu:mlx5_0:"),
            "the warning is printed for a person:\n{}",
            apply.stdout
        );
        assert_eq!(
            h.snapshot_of(&theirs),
            files,
            "apply edits no file of theirs"
        );
        // And the warning is true: a reactivation takes the MTU back.
        reactivate(&h, "ens1f0np0");
        reactivate(&h, "ens2f0np0");
        assert_eq!(mtu(&h, "ens1f0np0"), "9000");
        assert_eq!(mtu(&h, "ens2f0np0"), "1500");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_dry_run_prints_the_managers_commands_and_changes_nothing() {
    for_each_bash(|bash| {
        let h = host(bash, &["ens1f0np0:nm:1500", "ens2f0np0:networkd"]);
        // The run lock a run leaves in /run (a flock, released) is no change of the host's.
        let state = |h: &FakeHost| -> String {
            h.snapshot_of(&["sys", ".fake", "etc", "run"])
                .lines()
                .filter(|l| !l.starts_with("run/roce-gen-run.lock="))
                .map(|l| format!("{l}\n"))
                .collect()
        };
        let before = state(&h);
        let _ = h.take_commands();
        let dry = h.run("apply.sh", &["--dry-run", "-v"]);
        assert_eq!(dry.code, 0, "{}", dry.stdout);
        for line in [
            format!("would run: nmcli connection modify {NM_UUID} 802-3-ethernet.mtu 4200"),
            "would run: nmcli device reapply ens1f0np0".to_string(),
            format!("would write: /{DROP_IN}"),
            "would run: networkctl reload".to_string(),
            "would run: networkctl reconfigure ens2f0np0".to_string(),
        ] {
            assert!(dry.stdout.contains(&line), "{line} not in:\n{}", dry.stdout);
        }
        dry.expect(&["mtu_owner"], "mlx5_0", "warn", "dry run");
        // networkd's file sets no MTU: apply would still put the planned one there.
        assert_eq!(
            dry.result["checks"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["id"] == "mtu_owner" && c["nic"] == "mlx5_1")
                .unwrap()["actual"],
            "unset"
        );
        assert_eq!(state(&h), before);
        let ran = changes(&h.take_commands());
        assert!(ran.is_empty(), "a dry run ran {ran:?}");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_boot_run_leaves_the_profile_alone_and_says_so() {
    for_each_bash(|bash| {
        let h = host(bash, &["ens1f0np0:nm:1500"]);
        let keyfile = read(&h, NM_KEYFILE);
        let boot = h.run("apply.sh", &["--boot"]);
        boot.expect(&["mtu", "mtu_owner"], "mlx5_0", "warn", "boot");
        assert!(
            boot.message("mtu_owner", "mlx5_0").contains("run apply.sh"),
            "{}",
            boot.message("mtu_owner", "mlx5_0")
        );
        assert_eq!(
            read(&h, NM_KEYFILE),
            keyfile,
            "the boot run wrote the profile"
        );
        assert!(
            !h.take_commands()
                .iter()
                .any(|c| c.starts_with("nmcli connection modify")),
            "the boot run modified a profile"
        );
        // Once apply has put the MTU into the profile, the boot run finds it there.
        let apply = h.run("apply.sh", &[]);
        apply.expect(&["mtu_owner"], "mlx5_0", "changed", "apply");
        let boot = h.run("apply.sh", &["--boot"]);
        boot.expect(&["mtu_owner"], "mlx5_0", "pass", "boot after apply");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_later_drop_in_that_overrides_the_mtu_fails_the_check() {
    for_each_bash(|bash| {
        let h = host(bash, &["ens2f0np0:networkd:1500"]);
        let local = h.fake("etc/systemd/network/10-ens2f0np0.network.d/99-local.conf");
        std::fs::create_dir_all(local.parent().unwrap()).unwrap();
        std::fs::write(&local, "[Link]\nMTUBytes=9000\n").unwrap();
        let apply = h.run("apply.sh", &[]);
        apply.expect(&["mtu_owner"], "mlx5_1", "fail", "apply");
        assert_ne!(apply.status("mtu", "mlx5_1"), "changed");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_networkd_without_reload_is_a_warning_not_a_change() {
    for_each_bash(|bash| {
        let h = host(bash, &["ens2f0np0:networkd:1500"]);
        // systemd 237 (Ubuntu 18.04): networkctl has no reload or reconfigure.
        std::fs::write(h.fake(".fake/networkd/version"), "237\n").unwrap();
        let apply = h.run("apply.sh", &[]);
        apply.expect(&["mtu", "mtu_owner"], "mlx5_1", "warn", "apply");
        let msg = apply.message("mtu_owner", "mlx5_1");
        assert!(msg.contains("systemctl restart systemd-networkd"), "{msg}");
        assert_eq!(read(&h, DROP_IN), fixture("networkd/90-roce-gen-lab.conf"));
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_device_networkmanager_only_watches_is_not_its_own() {
    for_each_bash(|bash| {
        let h = host(bash, &["ens2f0np0:nm:1500"]);
        let marker = h.fake(".fake/nm/external/ens2f0np0");
        std::fs::create_dir_all(marker.parent().unwrap()).unwrap();
        std::fs::write(&marker, "").unwrap();
        let (_, out, _) = h.run_cmd(&[
            "nmcli",
            "-t",
            "-f",
            "DEVICE,STATE,CONNECTION,CON-UUID",
            "device",
            "status",
        ]);
        assert_eq!(out, fixture("nmcli/device-status-external.txt"));
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.result["facts"]["nics"]["mlx5_1"]["net_manager"], "none");
        let apply = h.run("apply.sh", &[]);
        apply.expect(&["mtu"], "mlx5_1", "changed", "apply");
        assert!(
            !h.take_commands()
                .iter()
                .any(|c| c.starts_with("nmcli connection modify")),
            "a profile NetworkManager only watches was modified"
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_stand_ins_print_what_the_fixtures_hold() {
    let h = host("bash", &["ens1f0np0:nm", "ens2f0np0:networkd:1500"]);
    // The fixture's profile is named with a colon, which terse output escapes.
    let keyfile = read(&h, NM_KEYFILE).replace("id=ens1f0np0", "id=roce: ens1f0np0");
    std::fs::write(h.fake(NM_KEYFILE), keyfile).unwrap();
    let nmcli = |args: &[&str]| {
        let mut cmd = vec!["nmcli"];
        cmd.extend(args);
        h.run_cmd(&cmd)
    };
    let (code, out, _) = nmcli(&[
        "-t",
        "-f",
        "DEVICE,STATE,CONNECTION,CON-UUID",
        "device",
        "status",
    ]);
    assert_eq!((code, out), (0, fixture("nmcli/device-status.txt")));
    let (code, out, _) = nmcli(&["-t", "-f", "UUID,FILENAME", "connection", "show"]);
    assert_eq!((code, out), (0, fixture("nmcli/connection-filename.txt")));
    let (_, out, _) = nmcli(&["-g", "802-3-ethernet.mtu", "connection", "show", NM_UUID]);
    assert_eq!(out, fixture("nmcli/mtu-auto.txt"));
    nmcli(&[
        "connection",
        "modify",
        NM_UUID,
        "802-3-ethernet.mtu",
        "4200",
    ]);
    let (_, out, _) = nmcli(&["-g", "802-3-ethernet.mtu", "connection", "show", NM_UUID]);
    assert_eq!(out, fixture("nmcli/mtu-4200.txt"));
    std::fs::remove_file(h.fake(".fake/nm/running")).unwrap();
    let (code, _, err) = nmcli(&[
        "-t",
        "-f",
        "DEVICE,STATE,CONNECTION,CON-UUID",
        "device",
        "status",
    ]);
    assert_eq!(code, 8);
    assert!(err.ends_with(&fixture("nmcli/not-running.txt")), "{err}");
    assert_eq!(
        read(&h, "run/systemd/netif/links/3"),
        fixture("networkd/link-configured.txt")
    );
}
