//! Plan format 1.1 on simulated hosts: DCQCN parameters and the cable length as settings apply
//! changes, the receive buffers of the lossless priorities, the RoCE v2 GID of each port's
//! address and the `nccl.env` apply writes beside the installed bundle — from precheck through
//! the dry run, apply, a second apply and rollback, under both backends and every bash.

use serde_json::{Value, json};

use crate::dryrun::dry_run_matches_apply;
use crate::fakehost::{FakeHost, for_each_bash};
use crate::field::state;

const NCCL_ENV: &str = "opt/roce-gen/lab/nccl.env";
const DCQCN: [&str; 3] = [
    "dcqcn_rpg_ai_rate",
    "dcqcn_rpg_hai_rate",
    "dcqcn_min_time_between_cnps",
];

/// golden/lab-2node's plan with three DCQCN parameters and a cable length of 30 m (`nccl_env`
/// is on unless a plan says otherwise).
fn v1_1(plan: &mut Value) {
    let c = plan["cluster"].as_object_mut().unwrap();
    c.insert("dcqcn_rpg_ai_rate".into(), json!(8));
    c.insert("dcqcn_rpg_hai_rate".into(), json!(100));
    c.insert("dcqcn_min_time_between_cnps".into(), json!(8));
    c.insert("cable_length".into(), json!(30));
}

/// The nccl.env node-a gets when both ports have their RoCE v2 GID at index 3.
const NCCL_TEXT: &str = "\
# NCCL settings for the RoCE ports of node-a (cluster lab), written by roce-gen apply.sh;
# rollback.sh removes it. Load it before mpirun or torchrun:
#   set -a; . /opt/roce-gen/lab/nccl.env; set +a
NCCL_IB_HCA==mlx5_0:1,mlx5_1:1
NCCL_IB_TC=106
UCX_IB_TRAFFIC_CLASS=106
NCCL_IB_GID_INDEX=3
UCX_IB_GID_INDEX=3
";

fn on_host(h: &FakeHost, cmd: &[&str]) {
    let (code, out, err) = h.run_cmd(cmd);
    assert_eq!(code, 0, "{cmd:?}: {out}{err}");
}

fn read(h: &FakeHost, rel: &str) -> String {
    std::fs::read_to_string(h.fake(rel)).unwrap_or_default()
}

fn same_state(h: &FakeHost, before: &str, ctx: &str) {
    let after = state(h);
    if after != before {
        let diff = similar::TextDiff::from_lines(before, &after)
            .unified_diff()
            .header("before", "after rollback")
            .to_string();
        panic!("{ctx}: rollback did not restore the host:\n{diff}");
    }
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_ofed_host_from_precheck_through_a_second_apply_and_rollback() {
    for_each_bash(|bash| {
        let ctx = format!("ofed {bash}");
        let h = FakeHost::ofed().bash(bash).plan(v1_1).build();
        // Port 1 in DSCP trust with 26→5, so PFC, the cable length and the DSCP map change in
        // one mlnx_qos call; and a DCQCN value above 2^31 - 1, which reads negative (`%d`).
        on_host(&h, &["mlnx_qos", "-i", "ens2f0np0", "--trust", "dscp"]);
        on_host(
            &h,
            &["mlnx_qos", "-i", "ens2f0np0", "--dscp2prio", "set,26,5"],
        );
        let np = "sys/class/net/ens2f0np0/ecn/roce_np/min_time_between_cnps";
        on_host(
            &h,
            &[
                "bash",
                "-c",
                &format!("echo 4294967295 >\"$ROCE_GEN_ROOT/{np}\""),
            ],
        );
        assert_eq!(read(&h, np), "-1\n", "{ctx}");
        let _ = h.take_commands();
        let pristine = state(&h);

        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "{ctx}: {}\n{}", pre.stdout, pre.stderr);
        for nic in ["mlx5_0", "mlx5_1"] {
            pre.expect(&DCQCN, nic, "warn", &ctx);
            pre.expect(&["cable_length"], nic, "warn", &ctx);
            pre.expect(&["gid"], nic, "pass", &ctx);
            // The buffers follow PFC, which apply sets: checked after it.
            pre.expect(&["pfc_buffer"], nic, "skip", &ctx);
            assert_eq!(pre.result["facts"]["nics"][nic]["gid_index"], 3, "{ctx}");
        }
        assert_eq!(
            pre.message("dcqcn_rpg_ai_rate", "mlx5_0"),
            "dcqcn_rpg_ai_rate is 5, the plan says 8 (apply will change it)"
        );
        assert_eq!(
            pre.message("dcqcn_min_time_between_cnps", "mlx5_1"),
            "dcqcn_min_time_between_cnps is -1, the plan says 8 (apply will change it)"
        );
        // PFC is not on yet, so who owns the buffers cannot be read: precheck says so, and that
        // with the firmware owning them (the default, as here) apply stores the length and
        // resizes nothing (a warning, no change to count), as apply then finds.
        assert!(
            pre.message("cable_length", "mlx5_0").starts_with(
                "cable_length is 7 m; apply will store the plan's 30 m, but it sizes no headroom: PFC is not on yet on ens1f0np0, so its buffers show no headroom"
            ),
            "{ctx}: {}",
            pre.message("cable_length", "mlx5_0")
        );
        assert!(
            !pre.stdout.contains("\n  cable_length: "),
            "{ctx}: {}",
            pre.stdout
        );
        assert_eq!(
            pre.message("gid", "mlx5_1"),
            "10.10.1.10 of ens2f0np0 is RoCE v2 GID index 3 of mlx5_1 port 1"
        );
        assert_eq!(pre.status("gid", ""), "pass", "{ctx}");
        assert_eq!(pre.status("nccl_env", ""), "warn", "{ctx}");
        for entry in [
            "\n  dcqcn_rpg_ai_rate: 2 ports 5 → 8\n",
            "\n  dcqcn_min_time_between_cnps: 2 ports → 8\n    from 4 (mlx5_0)\n    from -1 (mlx5_1)\n",
            "\n  nccl_env: absent → written (/opt/roce-gen/lab/nccl.env)\n",
        ] {
            assert!(pre.stdout.contains(entry), "{ctx}: {entry}\n{}", pre.stdout);
        }
        assert_eq!(state(&h), pristine, "{ctx}: precheck changed the host");
        assert!(!h.fake(NCCL_ENV).exists(), "{ctx}");

        // The dry run predicts apply exactly; apply reads everything back.
        let (dry, apply) = dry_run_matches_apply(&h, &ctx);
        for line in [
            "would run: mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0 --cable_len 30\n",
            "would run: mlnx_qos -i ens2f0np0 --pfc 0,0,0,1,0,0,0,0 --cable_len 30 --dscp2prio set,26,3 --dscp2prio set,48,6\n",
            "would write: 8 > /sys/class/net/ens1f0np0/ecn/roce_rp/rpg_ai_rate\n",
            "would write: /opt/roce-gen/lab/nccl.env\n",
        ] {
            assert!(dry.stdout.contains(line), "{ctx}: {line}\n{}", dry.stdout);
        }
        for nic in ["mlx5_0", "mlx5_1"] {
            apply.expect(&DCQCN, nic, "changed", &ctx);
            apply.expect(&["pfc"], nic, "changed", &ctx);
            // Stored, but the firmware owns the buffers (the default): no headroom resized.
            apply.expect(&["cable_length"], nic, "warn", &ctx);
            apply.expect(&["gid", "pfc_buffer"], nic, "pass", &ctx);
        }
        assert!(
            apply
                .message("cable_length", "mlx5_0")
                .starts_with("cable_length stored as 30 m (was 7), but the lossless headroom was not resized: the firmware owns the receive buffers of ens1f0np0"),
            "{ctx}: {}",
            apply.message("cable_length", "mlx5_0")
        );
        assert_eq!(
            apply.message("pfc_buffer", "mlx5_0"),
            "the lossless priorities of ens1f0np0 have lossless receive buffers: priority 3: buffer 1 (130944 bytes, xoff 111104)"
        );
        assert_eq!(apply.status("nccl_env", ""), "changed", "{ctx}");
        assert_eq!(read(&h, NCCL_ENV), NCCL_TEXT, "{ctx}");
        for ifc in ["ens1f0np0", "ens2f0np0"] {
            assert_eq!(read(&h, &format!(".fake/dcb/{ifc}/cable_len")), "30\n");
            assert_eq!(
                read(&h, &format!(".fake/dcb/{ifc}/pfc")),
                "0,0,0,1,0,0,0,0\n"
            );
            assert_eq!(
                read(&h, &format!("sys/class/net/{ifc}/ecn/roce_rp/rpg_hai_rate")),
                "100\n"
            );
        }

        // A second apply changes nothing, nccl.env included.
        let _ = h.take_commands();
        let again = h.run("apply.sh", &[]);
        assert_eq!(again.code, 0, "{ctx}: {}", again.stdout);
        assert_eq!(again.count("changed"), 0, "{ctx}: {:?}", again.statuses());
        assert!(
            again
                .stdout
                .contains("\nnothing changed: the host already matched the plan\nnext: bring "),
            "{ctx}: {}",
            again.stdout
        );
        assert_eq!(again.status("nccl_env", ""), "pass", "{ctx}");
        assert!(
            crate::fakehost::changes(&h.take_commands()).is_empty(),
            "{ctx}: a second apply ran a changing command"
        );

        let back = h.run("rollback.sh", &[]);
        assert_eq!(back.code, 0, "{ctx}: {}\n{}", back.stdout, back.stderr);
        assert_eq!(back.count("fail"), 0, "{ctx}: {:?}", back.statuses());
        for nic in ["mlx5_0", "mlx5_1"] {
            back.expect(&DCQCN, nic, "changed", &ctx);
            back.expect(&["cable_length"], nic, "changed", &ctx);
        }
        assert_eq!(back.status("nccl_env", ""), "changed", "{ctx}");
        same_state(&h, &pristine, &ctx);
        assert_eq!(read(&h, np), "-1\n", "{ctx}: written back as it read");
        for gone in [
            NCCL_ENV,
            "opt/roce-gen/lab",
            "var/lib/roce-gen/lab/nccl.env.sha256",
        ] {
            assert!(!h.fake(gone).exists(), "{ctx}: {gone} is still there");
        }
    });
}

/// mlnx_qos sends PFC mask and delay in one DCB request; the earlier 1.2 builds it from its
/// arguments alone, so `--cable_len` without `--pfc` turns PFC off. Apply never sends one
/// without the other.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_cable_length_goes_with_pfc_so_the_earlier_mlnx_qos_cannot_turn_pfc_off() {
    for_each_bash(|bash| {
        let ctx = format!("older mlnx_qos {bash}");
        let h = FakeHost::ofed()
            .bash(bash)
            .plan(|p| {
                p["cluster"]["cable_length"] = json!(30);
            })
            .build();
        std::fs::write(h.fake(".fake/mlnx_qos-older"), "").unwrap();
        // What the stand-in does, as that mlnx_qos does.
        on_host(
            &h,
            &["mlnx_qos", "-i", "ens2f0np0", "--pfc", "0,0,0,1,0,0,0,0"],
        );
        on_host(&h, &["mlnx_qos", "-i", "ens2f0np0", "--cable_len", "20"]);
        assert_eq!(
            read(&h, ".fake/dcb/ens2f0np0/pfc"),
            "0,0,0,0,0,0,0,0\n",
            "{ctx}: --cable_len alone turned PFC off"
        );
        // Port 0 has PFC as planned already: only its cable length differs.
        on_host(
            &h,
            &["mlnx_qos", "-i", "ens1f0np0", "--pfc", "0,0,0,1,0,0,0,0"],
        );
        let flaps = read(&h, ".fake/dcb/ens1f0np0/flaps").lines().count();
        let _ = h.take_commands();
        let pristine = state(&h);

        let (dry, apply) = dry_run_matches_apply(&h, &ctx);
        assert!(
            dry.stdout.contains(
                "would run: mlnx_qos -i ens1f0np0 --pfc 0,0,0,1,0,0,0,0 --cable_len 30\n"
            ),
            "{ctx}: {}",
            dry.stdout
        );
        apply.expect(&["pfc"], "mlx5_0", "pass", &ctx);
        // Stored on both, but the firmware owns the buffers: no headroom resized, no change.
        apply.expect(&["cable_length"], "mlx5_0", "warn", &ctx);
        apply.expect(&["pfc"], "mlx5_1", "changed", &ctx);
        apply.expect(&["cable_length"], "mlx5_1", "warn", &ctx);
        assert!(
            apply.message("cable_length", "mlx5_1").starts_with(
                "cable_length stored as 30 m (was 20), but the lossless headroom was not resized"
            ),
            "{ctx}: {}",
            apply.message("cable_length", "mlx5_1")
        );
        for ifc in ["ens1f0np0", "ens2f0np0"] {
            assert_eq!(
                read(&h, &format!(".fake/dcb/{ifc}/pfc")),
                "0,0,0,1,0,0,0,0\n"
            );
            assert_eq!(read(&h, &format!(".fake/dcb/{ifc}/cable_len")), "30\n");
        }
        assert_eq!(
            read(&h, ".fake/dcb/ens1f0np0/flaps").lines().count(),
            flaps,
            "{ctx}: port 0's link did not flap"
        );

        let back = h.run("rollback.sh", &[]);
        assert_eq!(back.count("fail"), 0, "{ctx}: {:?}", back.statuses());
        same_state(&h, &pristine, &ctx);
        assert_eq!(read(&h, ".fake/dcb/ens1f0np0/pfc"), "0,0,0,1,0,0,0,0\n");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_inbox_host_skips_dcqcn_with_the_reason_and_sets_the_cable_length_through_dcb() {
    for_each_bash(|bash| {
        let ctx = format!("inbox {bash}");
        let h = FakeHost::inbox().bash(bash).plan(v1_1).build();
        let pristine = state(&h);

        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "{ctx}: {}", pre.stdout);
        for (nic, ifc) in [("mlx5_0", "ens1f0np0"), ("mlx5_1", "ens2f0np0")] {
            pre.expect(&DCQCN, nic, "skip", &ctx);
            for id in DCQCN {
                assert_eq!(
                    pre.message(id, nic),
                    format!(
                        "skipped: no /sys/class/net/{ifc}/ecn: DCQCN parameters are set in MLNX_OFED/DOCA's ecn/ sysfs tree, which the inbox driver does not have (its debugfs cc_params are not used)"
                    )
                );
            }
            pre.expect(&["cable_length"], nic, "warn", &ctx);
            pre.expect(&["gid"], nic, "pass", &ctx);
            pre.expect(&["pfc_buffer"], nic, "skip", &ctx);
            assert!(
                pre.message("pfc_buffer", nic)
                    .contains("(MLNX_OFED/DOCA sysfs)"),
                "{ctx}: {}",
                pre.message("pfc_buffer", nic)
            );
        }

        let (dry, apply) = dry_run_matches_apply(&h, &ctx);
        assert!(
            dry.stdout
                .contains("would run: dcb pfc set dev ens1f0np0 delay 30\n"),
            "{ctx}: {}",
            dry.stdout
        );
        apply.expect(&["pfc"], "mlx5_0", "changed", &ctx);
        // The inbox driver has no qos/buffer_size: whether the headroom followed cannot be read.
        apply.expect(&["cable_length"], "mlx5_0", "warn", &ctx);
        assert!(
            apply
                .message("cable_length", "mlx5_0")
                .contains("(MLNX_OFED/DOCA sysfs): whether the driver sized the headroom of ens1f0np0 from it cannot be read"),
            "{ctx}: {}",
            apply.message("cable_length", "mlx5_0")
        );
        apply.expect(&DCQCN, "mlx5_0", "skip", &ctx);
        assert_eq!(
            read(&h, ".fake/dcb/ens1f0np0/pfc"),
            "0,0,0,1,0,0,0,0\n",
            "{ctx}: the delay kept PFC"
        );
        assert_eq!(read(&h, NCCL_ENV), NCCL_TEXT, "{ctx}");

        let back = h.run("rollback.sh", &[]);
        assert_eq!(back.count("fail"), 0, "{ctx}: {:?}", back.statuses());
        back.expect(&["cable_length"], "mlx5_1", "changed", &ctx);
        same_state(&h, &pristine, &ctx);
        assert!(!h.fake(NCCL_ENV).exists(), "{ctx}");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_port_without_its_address_has_no_rocev2_gid_and_nccl_env_names_an_index_only_when_all_agree() {
    for_each_bash(|bash| {
        let ctx = format!("gid {bash}");
        let h = FakeHost::ofed().bash(bash).build();
        h.addr("ens2f0np0", &[]);

        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.status("gid", "mlx5_0"), "pass", "{ctx}");
        assert_eq!(pre.status("gid", "mlx5_1"), "warn", "{ctx}");
        assert_eq!(
            pre.message("gid", "mlx5_1"),
            "no RoCE v2 GID of mlx5_1 port 1 carries 10.10.1.10: the address is not configured on ens2f0np0 (roce-gen does not assign addresses), so RDMA-CM and NCCL cannot use it"
        );
        assert_eq!(pre.result["facts"]["nics"]["mlx5_0"]["gid_index"], 3);
        assert_eq!(
            pre.result["facts"]["nics"]["mlx5_1"]["gid_index"],
            Value::Null
        );
        assert_eq!(pre.status("gid", ""), "warn", "{ctx}");
        assert!(
            pre.stdout
                .contains("⚠ gid:mlx5_1: no RoCE v2 GID of mlx5_1 port 1 carries 10.10.1.10"),
            "{ctx}: {}",
            pre.stdout
        );

        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{ctx}: {}", apply.stdout);
        assert_eq!(apply.status("nccl_env", ""), "changed", "{ctx}");
        let text = read(&h, NCCL_ENV);
        assert!(!text.contains("NCCL_IB_GID_INDEX="), "{ctx}: {text}");
        assert!(
            text.contains("\n# NCCL_IB_GID_INDEX and UCX_IB_GID_INDEX are left out: no RoCE v2 GID for the planned address of mlx5_1; NCCL and UCX find each device's RoCE v2 GID themselves.\n"),
            "{ctx}: {text}"
        );

        // The address arrives; on port 0 another one came first, so its GID is at index 5.
        h.addr("ens2f0np0", &["10.10.1.10/24"]);
        h.addr("ens1f0np0", &["192.168.50.10/24", "10.10.0.10/24"]);
        let second = h.run("apply.sh", &[]);
        assert_eq!(second.code, 0, "{ctx}: {}", second.stdout);
        assert_eq!(
            second.message("gid", "mlx5_0"),
            "10.10.0.10 of ens1f0np0 is RoCE v2 GID index 5 of mlx5_0 port 1"
        );
        assert_eq!(
            second.message("gid", ""),
            "the ports' RoCE v2 GIDs are at different indexes (mlx5_0: 5, mlx5_1: 3): nccl.env leaves NCCL_IB_GID_INDEX out and NCCL finds each device's RoCE v2 GID itself"
        );
        assert_eq!(second.result["facts"]["nics"]["mlx5_0"]["gid_index"], 5);
        assert_eq!(second.status("nccl_env", ""), "changed", "{ctx}");
        assert!(!read(&h, NCCL_ENV).contains("NCCL_IB_GID_INDEX="), "{ctx}");

        // Both at 3: the index goes in.
        h.addr("ens1f0np0", &["10.10.0.10/24"]);
        let third = h.run("apply.sh", &[]);
        assert_eq!(third.status("gid", ""), "pass", "{ctx}");
        assert_eq!(read(&h, NCCL_ENV), NCCL_TEXT, "{ctx}");

        let back = h.run("rollback.sh", &[]);
        assert_eq!(back.status("nccl_env", ""), "changed", "{ctx}");
        assert!(!h.fake(NCCL_ENV).exists(), "{ctx}");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_lossless_priority_in_a_buffer_of_zero_bytes_or_zero_xoff_is_a_warning() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        // Buffers configured by hand on ports whose PFC is on priority 3 already: on the first
        // port priority 3 sits in buffer 2, which has no room; on the second in buffer 1, which
        // has room but xoff 0 (lossy: it never pauses).
        for (ifc, buffer, line) in [
            ("ens1f0np0", 2, "2\t0\t0\t\t0\n"),
            ("ens2f0np0", 1, "1\t130944\t0\t\t0\n"),
        ] {
            let q = format!("sys/class/net/{ifc}/qos");
            let mut map = String::from("Priority\tBuffer\n");
            let mut sizes = String::from(
                "Port buffer size = 262016\nSpare buffer size = 0\nBuffer\tSize\txoff_threshold\txon_threshold\n0\t131072\t0\t\t0\n",
            );
            for p in 0..8 {
                map.push_str(&format!("{p}\t\t{}\n", if p == 3 { buffer } else { 0 }));
                if p > 0 {
                    if p == buffer {
                        sizes.push_str(line);
                    } else {
                        sizes.push_str(&format!("{p}\t0\t0\t\t0\n"));
                    }
                }
            }
            std::fs::write(h.fake(&format!("{q}/prio2buffer")), map).unwrap();
            std::fs::write(h.fake(&format!("{q}/buffer_size")), sizes).unwrap();
            std::fs::write(h.fake(&format!(".fake/dcb/{ifc}/pfc")), "0,0,0,1,0,0,0,0\n").unwrap();
        }

        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "{bash}: {}", pre.stdout);
        assert_eq!(pre.status("pfc_buffer", "mlx5_0"), "warn", "{bash}");
        assert_eq!(pre.status("pfc_buffer", "mlx5_1"), "warn", "{bash}");
        assert_eq!(
            pre.message("pfc_buffer", "mlx5_0"),
            "lossless priority 3 (buffer 2 has 0 bytes) on ens1f0np0: PFC cannot hold its traffic, it drops (map the lossless priorities to a lossless buffer with qos/prio2buffer and size it with qos/buffer_size (mlnx_qos --prio2buffer, --buffer_size), or let the firmware size the buffers)"
        );
        assert!(
            pre.message("pfc_buffer", "mlx5_1").starts_with(
                "lossless priority 3 (buffer 1 has xoff 0: it never pauses, a lossy buffer) on ens2f0np0: PFC cannot hold its traffic"
            ),
            "{bash}: {}",
            pre.message("pfc_buffer", "mlx5_1")
        );
        let c = pre.result["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "pfc_buffer" && c["nic"] == "mlx5_0")
            .unwrap()
            .clone();
        assert_eq!(c["actual"], "priority 3: buffer 2 (0 bytes, xoff 0)");
        assert!(
            pre.stdout.contains(
                "\n⚠ pfc_buffer:mlx5_0: lossless priority 3 (buffer 2 has 0 bytes) on ens1f0np0"
            ),
            "{bash}: {}",
            pre.stdout
        );
    });
}

/// nccl.env in the install folder belongs to apply: rollback removes the file apply wrote, puts
/// back one that was there before (while the folder stays), and never deletes one edited since.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn rollback_puts_back_an_earlier_nccl_env_and_keeps_one_edited_since_apply() {
    let bash = "bash";
    // Without persistence the install folder stays: the earlier file comes back as it was.
    let h = FakeHost::ofed()
        .bash(bash)
        .plan(|p| {
            p["cluster"]["persistence"] = json!(false);
        })
        .build();
    std::fs::create_dir_all(h.fake("opt/roce-gen/lab")).unwrap();
    std::fs::write(h.fake(NCCL_ENV), "NCCL_IB_HCA=mlx5\n").unwrap();
    let apply = h.run("apply.sh", &[]);
    assert_eq!(apply.status("nccl_env", ""), "changed", "{}", apply.stdout);
    assert!(
        apply
            .stdout
            .contains("\n  nccl_env: other content → written (/opt/roce-gen/lab/nccl.env)\n"),
        "{}",
        apply.stdout
    );
    assert_eq!(read(&h, NCCL_ENV), NCCL_TEXT);
    let back = h.run("rollback.sh", &[]);
    assert_eq!(
        back.status("nccl_env", ""),
        "changed",
        "{:?}",
        back.statuses()
    );
    assert_eq!(read(&h, NCCL_ENV), "NCCL_IB_HCA=mlx5\n");

    // With the unit installed, rollback removes the install folder: an edited nccl.env is
    // kept in the state folder first.
    let h = FakeHost::ofed().bash(bash).build();
    let apply = h.run("apply.sh", &[]);
    assert_eq!(apply.code, 0, "{}", apply.stdout);
    let edited = format!("{NCCL_TEXT}NCCL_DEBUG=INFO\n");
    std::fs::write(h.fake(NCCL_ENV), &edited).unwrap();
    let back = h.run("rollback.sh", &[]);
    assert_eq!(back.status("nccl_env", ""), "warn", "{:?}", back.statuses());
    assert!(
        back.message("nccl_env", "")
            .ends_with("/var/lib/roce-gen/lab/nccl.env.edited before the install folder goes"),
        "{}",
        back.message("nccl_env", "")
    );
    assert_eq!(read(&h, "var/lib/roce-gen/lab/nccl.env.edited"), edited);
    assert!(!h.fake("opt/roce-gen/lab").exists());
}
