//! RoCE LAG rows (`mlx5_bond_0` over `bond0`, whose slaves are both ports of one card) beyond
//! the scenarios (`scenarios/lag-*.toml`): the firmware of the card reached through PF0 for both
//! ports, the tools that refuse a bond never given it, and the facts and health series of every
//! slave. Every test under every bash.

use serde_json::Value;

use crate::fakehost::{FakeHost, for_each_bash};
use crate::firmware::{CARD0 as CARD, nv};

/// The card of the LAG (0000:1a:00): both ports' firmware values, CNP DSCP 40 (set and
/// rebooted) and the firmware's DCBX client on and willing, on each port.
const CONTRADICTING: &str = "ROCE_CC_PRIO_MASK_P1 255 255 255
CNP_DSCP_P1 48 40 40
CNP_802P_PRIO_P1 6 6 6
LLDP_NB_DCBX_P1 0 1 1
DCBX_WILLING_P1 1 1 1
LINK_TYPE_P1 2 2 2
ROCE_CC_PRIO_MASK_P2 255 255 255
CNP_DSCP_P2 48 40 40
CNP_802P_PRIO_P2 6 6 6
LLDP_NB_DCBX_P2 0 1 1
DCBX_WILLING_P2 1 1 1
LINK_TYPE_P2 2 2 2
";

/// An OFED host whose first NIC row is the LAG device over bond0 (ens1f0np0 and ens1f1np1, the
/// two ports of the card at 0000:1a:00), its row without a PCI address (the bond has none),
/// with `edit` applied to the plan.
pub(crate) fn lag_host(bash: &str, edit: impl FnOnce(&mut Value) + 'static) -> FakeHost {
    FakeHost::ofed()
        .bash(bash)
        .create_args(&["--nic", "mlx5_2:ens1f1np1:0000:1a:00.1:b8:3f:d2:0a:00:01"])
        .setup(&["lag", "bond0", "mlx5_bond_0", "ens1f0np0,ens1f1np1"])
        .plan(move |plan| {
            let nic = &mut plan["hosts"][0]["nics"][0];
            nic["ib_dev"] = Value::from("mlx5_bond_0");
            nic["netdev"] = Value::from("bond0");
            let nic = nic.as_object_mut().unwrap();
            nic.remove("pci");
            nic.remove("mac");
            edit(plan);
        })
        .build()
}

/// The firmware step of a LAG row asks the card through PF0 (0000:1a:00.0), never the bond,
/// for both ports' parameters (_P1 the port of ens1f0np0, _P2 ens1f1np1's), sets both where
/// they contradict the plan, records both in the facts, and rollback restores both.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_lag_card_is_configured_through_pf0_for_both_ports() {
    for_each_bash(|bash| {
        let h = lag_host(bash, |plan| {
            plan["cluster"]["firmware_config"] = Value::from("apply");
        });
        std::os::unix::fs::symlink("stub", h.fake("bin/mlxconfig")).unwrap();
        std::fs::create_dir_all(h.fake(".fake/nvconfig")).unwrap();
        std::fs::write(h.fake(CARD), CONTRADICTING).unwrap();

        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "{bash}: {}", pre.stdout);
        assert!(
            !pre.statuses()
                .iter()
                .any(|s| s.starts_with("firmware_config:")),
            "{bash}: {:?}",
            pre.statuses()
        );
        for port in ["P1", "P2"] {
            assert_eq!(
                pre.status(&format!("fw_CNP_DSCP_{port}"), "mlx5_bond_0"),
                "warn",
                "{bash}"
            );
            assert_eq!(
                pre.status(&format!("fw_LINK_TYPE_{port}"), "mlx5_bond_0"),
                "pass",
                "{bash}"
            );
        }
        let commands: Vec<String> = h
            .take_commands()
            .into_iter()
            .filter(|c| c.starts_with("mlxconfig "))
            .collect();
        assert!(
            commands
                .iter()
                .any(|c| c.starts_with("mlxconfig -d 0000:1a:00.0 -e q ")
                    && c.contains("CNP_DSCP_P1")
                    && c.contains("CNP_DSCP_P2")),
            "{bash}: {commands:?}"
        );
        assert!(
            !commands.iter().any(|c| c.contains("0000:1a:00.1")),
            "{bash}: {commands:?}"
        );

        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        let nic = &apply.result["facts"]["nics"]["mlx5_bond_0"];
        assert_eq!(nic["fw_device"], "0000:1a:00.0", "{bash}");
        for port in ["P1", "P2"] {
            let id = format!("fw_CNP_DSCP_{port}");
            assert_eq!(apply.status(&id, "mlx5_bond_0"), "changed", "{bash}");
            assert_eq!(nv(&h, &format!("CNP_DSCP_{port}")), "40 48", "{bash}");
            assert_eq!(nv(&h, &format!("DCBX_WILLING_{port}")), "1 0", "{bash}");
            assert_eq!(nic[format!("fw_CNP_DSCP_{port}_next")], "48", "{bash}");
        }
        assert_eq!(apply.result["reboot_required"], true, "{bash}");
        apply.expect(&["persistence", "nccl_env"], "", "changed", bash);

        let again = h.run("apply.sh", &[]);
        assert_eq!(again.count("changed"), 0, "{bash}: {:?}", again.statuses());

        let back = h.run("rollback.sh", &[]);
        assert_eq!(back.code, 0, "{bash}: {}", back.stdout);
        for port in ["P1", "P2"] {
            assert_eq!(
                back.status(&format!("fw_CNP_DSCP_{port}"), "mlx5_bond_0"),
                "changed",
                "{bash}"
            );
            assert_eq!(nv(&h, &format!("CNP_DSCP_{port}")), "40 40", "{bash}");
            assert_eq!(nv(&h, &format!("DCBX_WILLING_{port}")), "1 1", "{bash}");
        }
    });
}

/// The tools a bond refuses (no dcbnl ops: mlnx_qos and dcb; no pause or statistics ops:
/// `ethtool -a/-A/-S/-m`) among `commands`, each as the stand-ins logged it.
fn sent_to_the_bond(commands: &[String]) -> Vec<String> {
    commands
        .iter()
        .filter(|c| {
            let words: Vec<&str> = c.split(' ').collect();
            let bond = words.contains(&"bond0");
            match words[0] {
                "mlnx_qos" | "dcb" => bond,
                "ethtool" => bond && !words.contains(&"-i"),
                _ => false,
            }
        })
        .cloned()
        .collect()
}

/// A LAG host's facts carry each slave's optic, PCIe link, link and counters under
/// `slave_facts` (the second slave has another module than the first) and its optics check is
/// each slave's, a health run writes both
/// slaves' counters, link and optics labelled with the slave's netdev and the LAG device's RDMA
/// counters with the bond's, and promtool finds nothing; no run gives the bond a tool that refuses
/// it, on an OFED host (mlnx_qos) and an inbox one (dcb).
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_lag_hosts_facts_and_health_series_are_every_slaves() {
    let fixture = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/host/fixtures/ethtool-m/sff8636-100g.txt"),
    )
    .unwrap();
    for_each_bash(|bash| {
        let h = lag_host(bash, |_| {});
        std::fs::write(h.fake(".fake/net/ens1f1np1/module.txt"), fixture.as_bytes()).unwrap();
        let _ = h.take_commands();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "{bash}: {}", pre.stdout);
        let nic = &pre.result["facts"]["nics"]["mlx5_bond_0"];
        assert_eq!(
            nic["slaves"],
            serde_json::json!(["ens1f0np0", "ens1f1np1"]),
            "{bash}"
        );
        let per = &nic["slave_facts"];
        assert_eq!(
            per["ens1f0np0"]["transceiver"]["part_number"], "MMA4Z00-NS400",
            "{bash}: {per}"
        );
        let other = &per["ens1f1np1"]["transceiver"]["part_number"];
        assert!(
            other.is_string() && other != "MMA4Z00-NS400",
            "{bash}: {per}"
        );
        for s in ["ens1f0np0", "ens1f1np1"] {
            assert!(per[s]["pcie"]["width"].is_u64(), "{bash}: {s} {per}");
            assert!(per[s]["link"]["speed_mbps"].is_u64(), "{bash}: {s} {per}");
            assert!(
                per[s]["counters"]["np_cnp_sent"].is_u64(),
                "{bash}: {s} {per}"
            );
            assert!(
                per[s]["counters"]["rx_pause_ctrl_phy"].is_u64(),
                "{bash}: {s} {per}"
            );
        }
        // The optics check reads each slave's module, not the first slave's alone.
        let optics: Vec<&str> = pre.result["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["id"] == "optics" && c["nic"] == "mlx5_bond_0")
            .map(|c| c["message"].as_str().unwrap())
            .collect();
        assert_eq!(optics.len(), 2, "{bash}: {optics:?}");
        assert!(
            optics[0].starts_with("ens1f0np0 module NVIDIA MMA4Z00-NS400")
                && optics[1].starts_with("ens1f1np1 module ")
                && !optics[1].contains("MMA4Z00-NS400"),
            "{bash}: {optics:?}"
        );
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        let script = h.bundle.join("health.sh").display().to_string();
        let (code, _, err) = h.run_cmd(&[bash, script.as_str(), "--drift"]);
        assert_eq!(code, 0, "{bash}: {err}");
        let text = std::fs::read_to_string(
            h.fake("var/lib/node_exporter/textfile_collector/roce-gen-lab.prom"),
        )
        .unwrap();
        for s in ["ens1f0np0", "ens1f1np1"] {
            let labels = format!("nic=\"mlx5_bond_0\",netdev=\"{s}\"");
            for family in [
                "roce_gen_health_priority_pause_frames_total",
                "roce_gen_health_mac_pause_frames_total",
                "roce_gen_health_link_up",
                "roce_gen_health_module_temperature_celsius",
                "roce_gen_health_drift",
            ] {
                assert!(
                    text.lines()
                        .any(|l| l.starts_with(&format!("{family}{{")) && l.contains(&labels)),
                    "{bash}: no {family} of {s}:\n{text}"
                );
            }
        }
        assert!(
            text.lines()
                .any(|l| l.starts_with("roce_gen_health_rdma_events_total{")
                    && l.contains("netdev=\"bond0\"")),
            "{bash}:\n{text}"
        );
        let findings = crate::ingest::promtool_findings(&text);
        assert!(findings.is_empty(), "{bash}: promtool: {findings}\n{text}");
        let back = h.run("rollback.sh", &[]);
        assert_eq!(back.code, 0, "{bash}: {}", back.stdout);
        let sent = sent_to_the_bond(&h.take_commands());
        assert!(sent.is_empty(), "{bash}: {sent:?}");
    });
}

/// On the dcb backend (an inbox host) no run gives the bond a `dcb` command either: each slave
/// is configured through its own netdev.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_inbox_lag_host_never_asks_dcb_about_the_bond() {
    for_each_bash(|bash| {
        let h = FakeHost::inbox()
            .bash(bash)
            .create_args(&["--nic", "mlx5_2:ens1f1np1:0000:1a:00.1:b8:3f:d2:0a:00:01"])
            .setup(&["lag", "bond0", "mlx5_bond_0", "ens1f0np0,ens1f1np1"])
            .plan(|plan| {
                let nic = &mut plan["hosts"][0]["nics"][0];
                nic["ib_dev"] = Value::from("mlx5_bond_0");
                nic["netdev"] = Value::from("bond0");
            })
            .build();
        let _ = h.take_commands();
        for script in ["precheck.sh", "apply.sh", "rollback.sh"] {
            let run = h.run(script, &[]);
            assert_eq!(run.code, 0, "{bash} {script}: {}", run.stdout);
        }
        let commands = h.take_commands();
        assert!(
            commands
                .iter()
                .any(|c| c.starts_with("dcb app ") && c.contains("ens1f1np1")),
            "{bash}: {commands:?}"
        );
        let sent = sent_to_the_bond(&commands);
        assert!(sent.is_empty(), "{bash}: {sent:?}");
    });
}
