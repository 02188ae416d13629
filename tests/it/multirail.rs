//! Multi-rail address hygiene (issue 27): on a host with two planned RoCE ports precheck warns
//! where arp_ignore, arp_announce or rp_filter (combined with `all` as the kernel does) allow ARP
//! flux or a strict reverse-path filter, and where the kernel routes to a rail peer through
//! another interface than the planned port; with `arp_sysctls = set` apply sets 1, 2, 2 on the
//! planned netdevs, persists them in /etc/sysctl.d/90-roce-gen-lab.conf, a second apply changes
//! nothing, and rollback restores the values and removes the file. On simulated hosts whose
//! /proc/sys/net/ipv4/conf has the kernel's and the distributions' defaults and whose `ip route
//! get` answers from the host's prefix routes and .fake/routes.
//!
//! And NCCL and UCX beyond `nccl.env`: apply keeps the cluster's block in /etc/nccl.conf (NCCL
//! reads it by itself), the other lines as they are, one block however often it runs; rollback
//! removes only the block (or puts back the one apply replaced); precheck warns on a host without the verbs traffic-class file.

use serde_json::Value;

use crate::fakehost::{FakeHost, for_each_bash};

const SYSCTL_FILE: &str = "etc/sysctl.d/90-roce-gen-lab.conf";

fn conf(h: &FakeHost, ifc: &str, key: &str) -> String {
    std::fs::read_to_string(h.fake(&format!("proc/sys/net/ipv4/conf/{ifc}/{key}")))
        .unwrap()
        .trim()
        .to_string()
}

/// arp_ignore arp_announce rp_filter of IF, as "V V V".
fn values(h: &FakeHost, ifc: &str) -> String {
    ["arp_ignore", "arp_announce", "rp_filter"]
        .iter()
        .map(|k| conf(h, ifc, k))
        .collect::<Vec<_>>()
        .join(" ")
}

fn set(plan: &mut Value) {
    plan["cluster"]["arp_sysctls"] = Value::String("set".into());
}

/// The host's state these runs may touch: sysfs, the stand-ins' state, /proc/sys and /etc.
fn state(h: &FakeHost) -> String {
    h.snapshot_of(&["sys", ".fake", "proc/sys/net", "etc"])
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn precheck_warns_on_the_kernel_defaults_of_a_two_port_host_and_changes_nothing() {
    for_each_bash(|bash| {
        for kind in ["ofed", "inbox"] {
            let h = FakeHost::of(kind).bash(bash).build();
            let before = state(&h);
            let pre = h.run("precheck.sh", &[]);
            assert_eq!(pre.code, 0, "{kind}: {}\n{}", pre.stdout, pre.stderr);
            for (nic, ifc) in [("mlx5_0", "ens1f0np0"), ("mlx5_1", "ens2f0np0")] {
                pre.expect(&["arp_sysctls"], nic, "warn", kind);
                let msg = pre.message("arp_sysctls", nic);
                assert!(
                    msg.contains("ARP flux") && msg.contains(ifc) && msg.contains("0 0 2"),
                    "{kind}: {msg}"
                );
                assert!(msg.contains("arp_sysctls = set"), "{kind}: the fix: {msg}");
                // The lab's rails are two subnets: each peer is reached through its own port.
                pre.expect(&["rail_route"], nic, "pass", kind);
            }
            assert_eq!(before, state(&h), "{kind}: precheck changed the host");
        }
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_strict_reverse_path_filter_on_all_warns_even_where_the_port_is_loose() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        for k in ["arp_ignore", "arp_announce"] {
            for ifc in ["all", "ens1f0np0", "ens2f0np0"] {
                std::fs::write(h.fake(&format!("proc/sys/net/ipv4/conf/{ifc}/{k}")), "1\n")
                    .unwrap();
            }
        }
        std::fs::write(h.fake("proc/sys/net/ipv4/conf/all/rp_filter"), "1\n").unwrap();
        std::fs::write(h.fake("proc/sys/net/ipv4/conf/ens1f0np0/rp_filter"), "0\n").unwrap();
        let pre = h.run("precheck.sh", &[]);
        pre.expect(&["arp_sysctls"], "mlx5_0", "warn", "precheck");
        let msg = pre.message("arp_sysctls", "mlx5_0");
        assert!(
            msg.contains("rp_filter 1 (strict)") && !msg.contains("ARP flux"),
            "{msg}"
        );
        // ens2f0np0 has RHEL's 2, the larger: loose.
        pre.expect(&["arp_sysctls"], "mlx5_1", "pass", "precheck");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn arp_sysctls_set_sets_persists_changes_nothing_twice_and_rollback_restores() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).plan(set).build();
        let before = state(&h);
        let dry = h.run("apply.sh", &["--dry-run"]);
        assert_eq!(dry.code, 0, "{}", dry.stdout);
        dry.expect(&["arp_sysctls"], "mlx5_0", "warn", "dry run");
        assert_eq!(before, state(&h), "the dry run changed the host");

        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{}\n{}", apply.stdout, apply.stderr);
        for (nic, ifc) in [("mlx5_0", "ens1f0np0"), ("mlx5_1", "ens2f0np0")] {
            apply.expect(&["arp_sysctls"], nic, "changed", "apply");
            assert_eq!(values(&h, ifc), "1 2 2", "{ifc} after apply");
        }
        apply.expect(&["arp_sysctls_persist"], "", "changed", "apply");
        assert_eq!(
            std::fs::read_to_string(h.fake(SYSCTL_FILE)).unwrap(),
            "# roce-gen, cluster lab: ARP and reverse-path filter settings of the RoCE ports (plan\n\
             # arp_sysctls = set). rollback.sh restores the values it replaced and removes this file.\n\
             net.ipv4.conf.ens1f0np0.arp_ignore = 1\n\
             net.ipv4.conf.ens1f0np0.arp_announce = 2\n\
             net.ipv4.conf.ens1f0np0.rp_filter = 2\n\
             net.ipv4.conf.ens2f0np0.arp_ignore = 1\n\
             net.ipv4.conf.ens2f0np0.arp_announce = 2\n\
             net.ipv4.conf.ens2f0np0.rp_filter = 2\n"
        );
        // What the host's other interfaces and `all` have stays.
        assert_eq!(values(&h, "all"), "0 0 0");

        let again = h.run("apply.sh", &[]);
        assert_eq!(again.count("changed"), 0, "{}", again.stdout);
        again.expect(&["arp_sysctls"], "mlx5_0", "pass", "second apply");
        again.expect(&["arp_sysctls_persist"], "", "pass", "second apply");

        let pre = h.run("precheck.sh", &[]);
        pre.expect(&["arp_sysctls"], "mlx5_1", "pass", "precheck after apply");

        let rollback = h.run("rollback.sh", &[]);
        assert_eq!(rollback.code, 0, "{}\n{}", rollback.stdout, rollback.stderr);
        rollback.expect(&["arp_sysctls"], "mlx5_0", "changed", "rollback");
        rollback.expect(&["arp_sysctls_persist"], "", "changed", "rollback");
        assert_eq!(values(&h, "ens1f0np0"), "0 0 2");
        assert!(!h.fake(SYSCTL_FILE).exists(), "the sysctl.d file stays");
        let after = state(&h);
        let diff: Vec<&str> = after
            .lines()
            .filter(|l| !before.lines().any(|b| b == *l))
            .filter(|l| l.starts_with("proc/") || l.starts_with("etc/sysctl"))
            .collect();
        assert!(diff.is_empty(), "rollback left {diff:?}");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_route_to_a_rail_peer_through_another_interface_warns() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        // A host route to node-b's rail-1 port through the rail-0 gateway (a leftover static
        // route): the kernel sends rail-1 traffic out of ens1f0np0.
        std::fs::write(
            h.fake(".fake/routes"),
            "10.10.1.11/32 via 10.10.0.1 dev ens1f0np0\n",
        )
        .unwrap();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "{}", pre.stdout);
        pre.expect(&["rail_route"], "mlx5_0", "pass", "precheck");
        pre.expect(&["rail_route"], "mlx5_1", "warn", "precheck");
        let msg = pre.message("rail_route", "mlx5_1");
        assert!(
            msg.contains("from 10.10.1.10 to 10.10.1.11 leaves through ens1f0np0, not ens2f0np0"),
            "{msg}"
        );
        assert!(
            h.take_commands()
                .contains(&"ip route get 10.10.1.11 from 10.10.1.10".to_string())
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn leave_and_one_port_plans_check_no_arp_sysctls() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed()
            .bash(bash)
            .plan(|p| p["cluster"]["arp_sysctls"] = Value::String("leave".into()))
            .build();
        let pre = h.run("precheck.sh", &[]);
        assert!(
            !pre.statuses().iter().any(|s| s.starts_with("arp_sysctls")),
            "{:?}",
            pre.statuses()
        );
        // The route check stays: it has no setting to leave.
        pre.expect(&["rail_route"], "mlx5_1", "pass", "leave");

        let h = FakeHost::ofed()
            .bash(bash)
            .plan(|p| {
                set(p);
                for host in p["hosts"].as_array_mut().unwrap() {
                    host["nics"].as_array_mut().unwrap().truncate(1);
                }
            })
            .build();
        let apply = h.run("apply.sh", &[]);
        assert!(
            !apply
                .statuses()
                .iter()
                .any(|s| s.starts_with("arp_sysctls") || s.starts_with("rail_route")),
            "{:?}",
            apply.statuses()
        );
        assert!(!h.fake(SYSCTL_FILE).exists());
    });
}

const NCCL_CONF: &str = "etc/nccl.conf";

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn nccl_conf_gets_the_block_in_place_keeps_the_other_lines_and_rollback_gives_the_file_back() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        // A site's file with a stale block of this cluster and one of another cluster.
        let site = "NCCL_DEBUG=WARN\n\
                    # BEGIN roce-gen lab\n\
                    NCCL_IB_TC=0\n\
                    # END roce-gen lab\n\
                    # BEGIN roce-gen other\n\
                    NCCL_IB_TC=98\n\
                    # END roce-gen other\n\
                    NCCL_SOCKET_IFNAME=eth0\n";
        std::fs::write(h.fake(NCCL_CONF), site).unwrap();
        let pre = h.run("precheck.sh", &[]);
        pre.expect(&["nccl_conf"], "", "warn", "precheck");
        assert!(
            pre.message("nccl_conf", "")
                .contains("another block of cluster lab"),
            "{}",
            pre.message("nccl_conf", "")
        );
        assert_eq!(std::fs::read_to_string(h.fake(NCCL_CONF)).unwrap(), site);

        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{}\n{}", apply.stdout, apply.stderr);
        apply.expect(&["nccl_conf", "nccl_env"], "", "changed", "apply");
        let want = "NCCL_DEBUG=WARN\n\
                    # BEGIN roce-gen lab\n\
                    NCCL_IB_HCA==mlx5_0:1,mlx5_1:1\n\
                    NCCL_IB_TC=106\n\
                    NCCL_IB_GID_INDEX=3\n\
                    # END roce-gen lab\n\
                    # BEGIN roce-gen other\n\
                    NCCL_IB_TC=98\n\
                    # END roce-gen other\n\
                    NCCL_SOCKET_IFNAME=eth0\n";
        assert_eq!(std::fs::read_to_string(h.fake(NCCL_CONF)).unwrap(), want);
        let env = std::fs::read_to_string(h.fake("opt/roce-gen/lab/nccl.env")).unwrap();
        assert!(
            env.contains("\nUCX_IB_TRAFFIC_CLASS=106\n") && env.contains("\nUCX_IB_GID_INDEX=3\n"),
            "{env}"
        );

        let again = h.run("apply.sh", &[]);
        again.expect(&["nccl_conf", "nccl_env"], "", "pass", "second apply");
        assert_eq!(std::fs::read_to_string(h.fake(NCCL_CONF)).unwrap(), want);

        let back = h.run("rollback.sh", &[]);
        assert_eq!(back.code, 0, "{}\n{}", back.stdout, back.stderr);
        back.expect(&["nccl_conf"], "", "changed", "rollback");
        // The block apply replaced comes back where it was; the other lines never moved.
        assert_eq!(std::fs::read_to_string(h.fake(NCCL_CONF)).unwrap(), site);
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn nccl_conf_apply_made_goes_with_rollback_and_an_inbox_host_is_warned_about_its_traffic_class() {
    for_each_bash(|bash| {
        let h = FakeHost::inbox().bash(bash).build();
        let pre = h.run("precheck.sh", &[]);
        pre.expect(&["nccl_tc"], "", "warn", "precheck");
        let msg = pre.message("nccl_tc", "");
        assert!(
            msg.contains("mlx5_0, mlx5_1 have no verbs traffic-class file")
                && msg.contains("NCCL_IB_TC=106 in /etc/nccl.conf"),
            "{msg}"
        );
        assert!(!h.fake(NCCL_CONF).exists(), "precheck wrote /etc/nccl.conf");
        let apply = h.run("apply.sh", &[]);
        apply.expect(&["nccl_conf"], "", "changed", "apply");
        assert!(
            std::fs::read_to_string(h.fake(NCCL_CONF))
                .unwrap()
                .starts_with(
                    "# BEGIN roce-gen lab\nNCCL_IB_HCA==mlx5_0:1,mlx5_1:1\nNCCL_IB_TC=106\n"
                )
        );
        let back = h.run("rollback.sh", &[]);
        back.expect(&["nccl_conf"], "", "changed", "rollback");
        assert!(!h.fake(NCCL_CONF).exists(), "the file apply made stays");

        // An OFED host has the file: no warning.
        let h = FakeHost::ofed().bash(bash).build();
        let pre = h.run("precheck.sh", &[]);
        assert!(
            !pre.statuses().iter().any(|s| s.starts_with("nccl_tc")),
            "{:?}",
            pre.statuses()
        );
    });
}
