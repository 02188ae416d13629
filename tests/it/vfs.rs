//! SR-IOV VFs of a planned port (issue 27): apply sets the RDMA-CM ToS and, where the host has
//! OFED's traffic_class file, the verbs traffic class of each VF's RDMA device, and nothing else
//! on a VF; rollback restores them by the VF's PCI function; the udev rule matches the VFs'
//! PCI functions (from the PF's sriov_offset, sriov_stride and sriov_totalvfs), so that VFs
//! created later restart the unit, which sets them. Read from the simulated host itself
//! (tests/host/fakehost.sh `vfs`, driverfs for configfs and the traffic_class file).

use std::process::Command;

use crate::fakehost::{FakeHost, changes, for_each_bash, repo};

fn read(h: &FakeHost, rel: &str) -> String {
    std::fs::read_to_string(h.fake(rel))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// A VF's RDMA-CM ToS as the kernel keeps it (driverfs: `.fake/cma/DEV/1/tos`, no file while it
/// is the default 0) and its verbs global traffic class (the traffic_class file's value, empty
/// while unset).
fn vf_state(h: &FakeHost, dev: &str) -> (String, String) {
    let tos = read(h, &format!(".fake/cma/{dev}/1/tos"));
    (
        if tos.is_empty() { "0".to_string() } else { tos },
        read(h, &format!("sys/class/infiniband/{dev}/tc/1/traffic_class")),
    )
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn apply_sets_each_vfs_tos_and_traffic_class_and_rollback_restores_them() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed()
            .bash(bash)
            .setup(&["vfs", "ens1f0np0", "2"])
            .build();
        for dev in ["mlx5_2", "mlx5_3"] {
            assert_eq!(vf_state(&h, dev), ("0".into(), String::new()), "{bash}");
        }
        let pre = h.run("precheck.sh", &[]);
        assert!(
            pre.message("vf_qos", "mlx5_0")
                .contains("apply will set them"),
            "{bash}: {}",
            pre.message("vf_qos", "mlx5_0")
        );

        let before = h.snapshot();
        let dry = h.run("apply.sh", &["--dry-run"]);
        assert_eq!(dry.status("vf_qos", "mlx5_0"), "warn", "{bash}");
        assert_eq!(h.snapshot(), before, "{bash}: a dry run changes nothing");

        let _ = h.take_commands();
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        assert_eq!(
            apply.status("vf_qos", "mlx5_0"),
            "changed",
            "{bash}: {}",
            apply.message("vf_qos", "mlx5_0")
        );
        for dev in ["mlx5_2", "mlx5_3"] {
            assert_eq!(
                vf_state(&h, dev),
                ("106".into(), "106".into()),
                "{bash}: {dev}"
            );
        }
        // The PF's settings only on the PF: nothing of DCB, pause or ECN on a VF (finding 21).
        let commands = changes(&h.take_commands());
        assert!(
            !commands.iter().any(|c| c.contains("ens1f0v")),
            "{bash}: {commands:#?}"
        );
        assert!(!h.fake(".fake/dcb/ens1f0v0").exists(), "{bash}");
        let vfs = &apply.result["facts"]["nics"]["mlx5_0"]["vfs"];
        assert_eq!(vfs[1]["ib_dev"], "mlx5_3", "{bash}");
        assert_eq!(vfs[1]["traffic_class"], "106", "{bash}");
        let saved = read(&h, "var/lib/roce-gen/lab/saved-state.tsv");
        assert!(
            saved.contains("vf_roce_tos\tmlx5_0@0000:1a:00.2\t0"),
            "{bash}: {saved}"
        );

        let again = h.run("apply.sh", &[]);
        assert_eq!(again.status("vf_qos", "mlx5_0"), "pass", "{bash}");
        assert!(
            changes(&h.take_commands()).is_empty(),
            "{bash}: a second apply changes nothing"
        );

        let rollback = h.run("rollback.sh", &[]);
        assert_eq!(rollback.code, 0, "{bash}: {}", rollback.stdout);
        assert_eq!(
            rollback.status("vf_qos", "mlx5_0"),
            "changed",
            "{bash}: {}",
            rollback.message("vf_qos", "mlx5_0")
        );
        for dev in ["mlx5_2", "mlx5_3"] {
            assert_eq!(
                vf_state(&h, dev),
                ("0".into(), String::new()),
                "{bash}: {dev}"
            );
        }
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn rollback_warns_naming_a_vf_gone_since_apply_and_restores_the_others() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed()
            .bash(bash)
            .setup(&["vfs", "ens1f0np0", "2"])
            .build();
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.status("vf_qos", "mlx5_0"), "changed", "{bash}");
        // The second VF given to another driver (vfio-pci for a VM): its RDMA device is gone.
        std::fs::remove_file(h.fake("sys/devices/pci0000:00/0000:1a:00.3/infiniband/mlx5_3"))
            .unwrap();
        std::fs::remove_dir_all(h.fake("sys/class/infiniband/mlx5_3")).unwrap();
        let rollback = h.run("rollback.sh", &[]);
        assert_eq!(rollback.code, 0, "{bash}: {}", rollback.stdout);
        assert_eq!(rollback.status("vf_qos", "mlx5_0"), "warn", "{bash}");
        let msg = rollback.message("vf_qos", "mlx5_0");
        assert!(
            msg.contains("restored the VFs of mlx5_0: mlx5_2 roce_tos 106 to 0")
                && msg.contains("no RDMA device at 0000:1a:00.3"),
            "{bash}: {msg}"
        );
        assert_eq!(
            vf_state(&h, "mlx5_2"),
            ("0".into(), String::new()),
            "{bash}"
        );
        // The rest of the rollback goes on.
        assert_eq!(rollback.status("roce_tos", "mlx5_0"), "changed", "{bash}");
        assert!(
            !h.fake("var/lib/roce-gen/lab/saved-state.tsv").exists(),
            "{bash}"
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn vfs_created_after_apply_restart_the_unit_through_the_udev_rule_which_sets_them() {
    for_each_bash(|bash| {
        // SR-IOV on the first port, no VFs yet.
        let h = FakeHost::ofed()
            .bash(bash)
            .setup(&["vfs", "ens1f0np0", "0"])
            .build();
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        assert!(
            apply
                .message("persistence_reload", "")
                .contains("and the 8 functions of their VFs"),
            "{bash}: {}",
            apply.message("persistence_reload", "")
        );
        let rule = read(&h, "etc/udev/rules.d/90-roce-gen-lab.rules");
        // drivers/pci/iov.c: 0000:1a:00.0 + offset 2, stride 1, 8 VFs (the eighth on device 1).
        assert!(
            rule.contains("KERNELS==\"0000:1a:00.2|0000:1a:00.3|0000:1a:00.4|0000:1a:00.5|0000:1a:00.6|0000:1a:00.7|0000:1a:01.0|0000:1a:01.1\""),
            "{rule}"
        );
        let _ = h.take_unit_log();
        let (code, out, err) = h.host_step("vfs", &["ens1f0np0", "2", "--uevents"]);
        assert_eq!(code, 0, "{bash}: {out}{err}");
        let restarts = "90-roce-gen-lab.rules:8: RUN+=\"/bin/systemctl --no-block try-restart roce-gen-lab.service\"";
        for line in [
            "udev: add /devices/pci0000:00/0000:1a:00.2/infiniband/mlx5_2",
            "udev: add /devices/pci0000:00/0000:1a:00.3/infiniband/mlx5_3",
            restarts,
        ] {
            assert!(out.contains(line), "{bash}: no {line:?} in\n{out}");
        }
        // The RDMA devices' events restart it, not the netdevs' (one match per VF).
        assert_eq!(out.matches(restarts).count(), 2, "{bash}: {out}");
        let units = h.take_unit_log();
        assert!(
            units
                .iter()
                .any(|l| l.starts_with("roce-gen-lab.service: ") && l.contains("ExecStart ran")),
            "{bash}: {units:#?}"
        );
        for dev in ["mlx5_2", "mlx5_3"] {
            assert_eq!(
                vf_state(&h, dev),
                ("106".into(), "106".into()),
                "{bash}: {dev}"
            );
        }

        // An RDMA device of a card the plan does not have matches nothing of the rule.
        let pci = "sys/devices/pci0000:00/0000:5e:00.0";
        std::fs::create_dir_all(h.fake(&format!("{pci}/infiniband"))).unwrap();
        std::fs::create_dir_all(h.fake("sys/class/infiniband/mlx5_9/ports/1")).unwrap();
        std::os::unix::fs::symlink(
            "../../../devices/pci0000:00/0000:5e:00.0",
            h.fake("sys/class/infiniband/mlx5_9/device"),
        )
        .unwrap();
        std::os::unix::fs::symlink(
            "../../../../class/infiniband/mlx5_9",
            h.fake(&format!("{pci}/infiniband/mlx5_9")),
        )
        .unwrap();
        let other = Command::new("python3")
            .arg(repo().join("tests/host/udevd/udevd.py"))
            .arg(h.fake(""))
            .args(["add", "infiniband/mlx5_9"])
            .output()
            .unwrap();
        let other_out = String::from_utf8_lossy(&other.stdout);
        assert!(other.status.success(), "{other_out}");
        assert!(
            other_out.contains("udev: add /devices/pci0000:00/0000:5e:00.0/infiniband/mlx5_9"),
            "{other_out}"
        );
        assert!(!other_out.contains("90-roce-gen-lab.rules"), "{other_out}");
    });
}
