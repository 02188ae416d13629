//! The NICs' firmware (NV) configuration (`firmware_config`): precheck and apply read it with
//! mlxconfig or mstconfig (stand-ins that keep each card's current and next-boot values), warn
//! where it contradicts the plan and record it in the facts; with `apply` they set it for the
//! next boot, say that a reboot is required, and rollback sets the saved values again. The boot
//! unit never touches it. Every scenario under every bash.

use serde_json::Value;

use crate::fakehost::{FakeHost, ScriptRun, changes, for_each_bash};
use crate::monitor::run_without;

/// node-a's first NIC: the card at 0000:1a:00 (function 0, port 1).
pub(crate) const CARD0: &str = ".fake/nvconfig/0000:1a:00";

/// The six parameters' `NAME DEFAULT CURRENT NEXT` lines of a card whose CNP DSCP is 40 (set
/// and rebooted) and whose firmware DCBX client is on and willing (the default).
const CONTRADICTING: &str = "ROCE_CC_PRIO_MASK_P1 255 255 255
CNP_DSCP_P1 48 40 40
CNP_802P_PRIO_P1 6 6 6
LLDP_NB_DCBX_P1 0 1 1
DCBX_WILLING_P1 1 1 1
LINK_TYPE_P1 2 2 2
";

/// An OFED host with `tool` (mlxconfig or mstconfig) installed, its first card as above, and a
/// bundle whose plan says `firmware_config = mode` (absent: the default, report).
fn host(bash: &str, tool: Option<&str>, mode: Option<&str>) -> FakeHost {
    let h = FakeHost::ofed()
        .bash(bash)
        .plan(|plan| {
            if let Some(mode) = mode {
                plan["cluster"]["firmware_config"] = Value::from(mode);
            }
        })
        .build();
    if let Some(tool) = tool {
        std::os::unix::fs::symlink("stub", h.fake(&format!("bin/{tool}"))).unwrap();
    }
    std::fs::create_dir_all(h.fake(".fake/nvconfig")).unwrap();
    std::fs::write(h.fake(CARD0), CONTRADICTING).unwrap();
    h
}

/// The card's `CURRENT NEXT` of one parameter (the card of 0000:1a:00, a LAG's too).
pub(crate) fn nv(h: &FakeHost, name: &str) -> String {
    let text = std::fs::read_to_string(h.fake(CARD0)).unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{name} ")))
        .unwrap_or_else(|| panic!("no {name} in {text}"));
    let f: Vec<&str> = line.split(' ').collect();
    format!("{} {}", f[2], f[3])
}

fn fw_checks(run: &ScriptRun) -> Vec<String> {
    run.statuses()
        .into_iter()
        .filter(|s| {
            (s.starts_with("fw_") && !s.starts_with("fw_ver:")) || s.starts_with("firmware_config:")
        })
        .collect()
}

fn fact(run: &ScriptRun, nic: &str, key: &str) -> Value {
    run.result["facts"]["nics"][nic][key].clone()
}

/// The commands of the firmware tools the stand-ins received (the log is emptied).
fn fw_commands(h: &FakeHost) -> Vec<String> {
    h.take_commands()
        .into_iter()
        .filter(|c| c.starts_with("mlxconfig ") || c.starts_with("mstconfig "))
        .collect()
}

const QUERY: &str = "-e q ROCE_CC_PRIO_MASK_P1 CNP_DSCP_P1 CNP_802P_PRIO_P1 LLDP_NB_DCBX_P1 DCBX_WILLING_P1 LINK_TYPE_P1";

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn report_warns_where_the_firmware_contradicts_the_plan_and_records_it() {
    for_each_bash(|bash| {
        let h = host(bash, Some("mlxconfig"), None);
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "{bash}: {}\n{}", pre.stdout, pre.stderr);
        let warned: Vec<String> = fw_checks(&pre)
            .into_iter()
            .filter(|s| s.ends_with("=warn"))
            .collect();
        assert_eq!(
            warned,
            [
                "fw_CNP_DSCP_P1:mlx5_0=warn",
                "fw_DCBX_WILLING_P1:mlx5_0=warn"
            ],
            "{bash}: {}",
            pre.stdout
        );
        assert!(
            pre.message("fw_CNP_DSCP_P1", "mlx5_0")
                .starts_with("CNP_DSCP_P1 is 40: CNPs carry DSCP 40"),
            "{bash}: {}",
            pre.message("fw_CNP_DSCP_P1", "mlx5_0")
        );
        assert!(
            pre.message("fw_DCBX_WILLING_P1", "mlx5_0")
                .contains("with LLDP_NB_DCBX_P1 on, the firmware takes the switch's DCBX settings"),
            "{bash}"
        );
        // Both are warnings for a person, above the changes; nothing of them is a change.
        for id in ["fw_CNP_DSCP_P1", "fw_DCBX_WILLING_P1"] {
            assert!(
                pre.stdout.contains(&format!("⚠ {id}:mlx5_0: ")),
                "{bash}: {}",
                pre.stdout
            );
        }
        assert!(!pre.stdout.contains("  fw_"), "{bash}: {}", pre.stdout);
        // Every other parameter of both NICs passes; the second card has the defaults.
        assert_eq!(fw_checks(&pre).len(), 12, "{bash}: {:?}", fw_checks(&pre));
        pre.expect(
            &[
                "fw_ROCE_CC_PRIO_MASK_P1",
                "fw_CNP_DSCP_P1",
                "fw_DCBX_WILLING_P1",
                "fw_LINK_TYPE_P1",
            ],
            "mlx5_1",
            "pass",
            bash,
        );
        // The facts: each value now and from the next boot, the tool and the device.
        assert_eq!(fact(&pre, "mlx5_0", "fw_CNP_DSCP_P1"), "40", "{bash}");
        assert_eq!(fact(&pre, "mlx5_0", "fw_CNP_DSCP_P1_next"), "40", "{bash}");
        assert_eq!(fact(&pre, "mlx5_0", "fw_DCBX_WILLING_P1"), "1", "{bash}");
        assert_eq!(fact(&pre, "mlx5_0", "fw_LINK_TYPE_P1_next"), "2", "{bash}");
        assert_eq!(fact(&pre, "mlx5_0", "fw_tool"), "mlxconfig", "{bash}");
        assert_eq!(fact(&pre, "mlx5_1", "fw_device"), "0000:3c:00.0", "{bash}");
        assert_eq!(fact(&pre, "mlx5_1", "fw_CNP_DSCP_P1"), "48", "{bash}");
        assert_eq!(pre.result["reboot_required"], false, "{bash}");
        // Read with -e (the current values), never set; the second NIC by its netdev's address.
        assert_eq!(
            fw_commands(&h),
            [
                format!("mlxconfig -d 0000:1a:00.0 {QUERY}"),
                format!("mlxconfig -d 0000:3c:00.0 {QUERY}")
            ],
            "{bash}"
        );
        // Apply in report mode reads the same and leaves the firmware as it is.
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        assert_eq!(apply.status("fw_CNP_DSCP_P1", "mlx5_0"), "warn", "{bash}");
        assert!(
            fw_commands(&h).iter().all(|c| !c.contains(" set ")),
            "{bash}"
        );
        assert_eq!(nv(&h, "CNP_DSCP_P1"), "40 40", "{bash}");
        assert_eq!(apply.result["reboot_required"], false, "{bash}");
    });
}

/// apply sets what contradicts the plan (one call per device), for the next boot; a second
/// apply has nothing to set; rollback sets the saved next-boot values again; `tool` is the only
/// one installed (the other is hidden from this machine's own folders too).
fn apply_then_rollback(bash: &str, tool: &str) {
    let h = host(bash, Some(tool), Some("apply"));
    let other = if tool == "mlxconfig" {
        "mstconfig"
    } else {
        "mlxconfig"
    };
    let run = |script: &str| run_without(&h, script, &[other]);
    let pre = run("precheck.sh");
    assert_eq!(pre.code, 0, "{bash} {tool}: {}", pre.stdout);
    assert!(
        pre.stdout
            .contains("  fw_CNP_DSCP_P1: 1 port 40 → 48 (mlx5_0)\n  fw_DCBX_WILLING_P1: 1 port True(1) → False(0) (mlx5_0)\n"),
        "{bash} {tool}: {}",
        pre.stdout
    );
    assert!(
        pre.stdout.contains("ℹ apply sets firmware values: they take effect at the next boot, so a reboot is required after it\nnext: "),
        "{bash} {tool}: {}",
        pre.stdout
    );
    assert!(
        !pre.stdout.contains("⚠ fw_"),
        "{bash} {tool}: {}",
        pre.stdout
    );
    let _ = h.take_commands();

    let apply = run("apply.sh");
    assert_eq!(
        apply.code, 0,
        "{bash} {tool}: {}\n{}",
        apply.stdout, apply.stderr
    );
    let sets: Vec<String> = changes(&h.take_commands())
        .into_iter()
        .filter(|c| c.starts_with(tool))
        .collect();
    assert_eq!(
        sets,
        [format!(
            "{tool} -y -d 0000:1a:00.0 set CNP_DSCP_P1=48 DCBX_WILLING_P1=0"
        )],
        "{bash} {tool}"
    );
    apply.expect(
        &["fw_CNP_DSCP_P1", "fw_DCBX_WILLING_P1"],
        "mlx5_0",
        "changed",
        bash,
    );
    assert_eq!(
        apply.message("fw_CNP_DSCP_P1", "mlx5_0"),
        "CNP_DSCP_P1 changed from 40 to 48 for the next boot; it takes effect at the next reboot"
    );
    // The firmware runs with the old values until the next boot.
    assert_eq!(nv(&h, "CNP_DSCP_P1"), "40 48", "{bash} {tool}");
    assert_eq!(nv(&h, "DCBX_WILLING_P1"), "1 0", "{bash} {tool}");
    assert_eq!(apply.result["reboot_required"], true, "{bash} {tool}");
    assert_eq!(
        fact(&apply, "mlx5_0", "fw_CNP_DSCP_P1"),
        "40",
        "{bash} {tool}"
    );
    assert_eq!(
        fact(&apply, "mlx5_0", "fw_CNP_DSCP_P1_next"),
        "48",
        "{bash} {tool}"
    );
    assert!(
        apply.stdout.contains("\nchanged:\n")
            && apply
                .stdout
                .contains("  fw_CNP_DSCP_P1: 1 port 40 → 48 (mlx5_0)\n")
            && apply.stdout.contains(
                "ℹ reboot required: firmware values take effect at the next boot (mlx5_0)\nnext: "
            ),
        "{bash} {tool}: {}",
        apply.stdout
    );
    let saved = std::fs::read_to_string(h.fake("var/lib/roce-gen/lab/saved-state.tsv")).unwrap();
    assert!(
        saved.contains("fw_CNP_DSCP_P1\tmlx5_0\t40\n")
            && saved.contains("fw_DCBX_WILLING_P1\tmlx5_0\t1\n"),
        "{bash} {tool}: {saved}"
    );

    // Again: the next boot already has the plan's values; the reboot is still ahead.
    let again = run("apply.sh");
    assert_eq!(again.code, 0, "{bash} {tool}: {}", again.stdout);
    assert!(
        changes(&h.take_commands())
            .iter()
            .all(|c| !c.starts_with(tool)),
        "{bash} {tool}"
    );
    again.expect(
        &["fw_CNP_DSCP_P1", "fw_DCBX_WILLING_P1"],
        "mlx5_0",
        "pass",
        bash,
    );
    assert_eq!(again.count("changed"), 0, "{bash} {tool}");
    assert_eq!(again.result["reboot_required"], true, "{bash} {tool}");
    // A precheck before the reboot says the values wait for it.
    let pending = run("precheck.sh");
    assert_eq!(pending.status("fw_CNP_DSCP_P1", "mlx5_0"), "warn");
    assert_eq!(
        pending.message("fw_CNP_DSCP_P1", "mlx5_0"),
        "reboot pending: CNP_DSCP_P1 is 40 now and 48 from the next boot"
    );
    assert_eq!(pending.result["reboot_required"], true, "{bash} {tool}");

    // Rollback before the reboot: the next boot gets the old values back, nothing waits.
    let rollback = run("rollback.sh");
    assert_eq!(rollback.code, 0, "{bash} {tool}: {}", rollback.stdout);
    let sets: Vec<String> = changes(&h.take_commands())
        .into_iter()
        .filter(|c| c.starts_with(tool))
        .collect();
    assert_eq!(
        sets,
        [format!(
            "{tool} -y -d 0000:1a:00.0 set CNP_DSCP_P1=40 DCBX_WILLING_P1=1"
        )],
        "{bash} {tool}"
    );
    rollback.expect(
        &["fw_CNP_DSCP_P1", "fw_DCBX_WILLING_P1"],
        "mlx5_0",
        "changed",
        bash,
    );
    assert_eq!(nv(&h, "CNP_DSCP_P1"), "40 40", "{bash} {tool}");
    assert_eq!(nv(&h, "DCBX_WILLING_P1"), "1 1", "{bash} {tool}");
    assert_eq!(rollback.result["reboot_required"], false, "{bash} {tool}");
    assert_eq!(
        rollback.message("fw_CNP_DSCP_P1", "mlx5_0"),
        "CNP_DSCP_P1 restored from 48 to 40 for the next boot; the firmware already runs with it"
    );
    assert!(
        !h.fake("var/lib/roce-gen/lab/saved-state.tsv").exists(),
        "{bash} {tool}"
    );
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn apply_sets_the_firmware_for_the_next_boot_and_rollback_restores_it_with_mlxconfig() {
    for_each_bash(|bash| {
        apply_then_rollback(bash, "mlxconfig");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn mstconfig_alone_does_the_same() {
    for_each_bash(|bash| {
        apply_then_rollback(bash, "mstconfig");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn after_a_reboot_the_values_are_in_force_and_rollback_needs_another() {
    for_each_bash(|bash| {
        let h = host(bash, Some("mlxconfig"), Some("apply"));
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        let (code, _, err) = h.run_cmd(&[
            "bash",
            &format!("{}/tests/host/fakehost.sh", env!("CARGO_MANIFEST_DIR")),
            "reboot",
            &h.root.display().to_string(),
        ]);
        assert_eq!(code, 0, "{bash}: {err}");
        assert_eq!(nv(&h, "CNP_DSCP_P1"), "48 48", "{bash}");
        let pre = h.run("precheck.sh", &[]);
        assert!(
            fw_checks(&pre).iter().all(|s| s.ends_with("=pass")),
            "{bash}: {:?}",
            fw_checks(&pre)
        );
        assert_eq!(pre.result["reboot_required"], false, "{bash}");
        assert!(!pre.stdout.contains("reboot"), "{bash}: {}", pre.stdout);
        let rollback = h.run("rollback.sh", &[]);
        assert_eq!(rollback.code, 0, "{bash}: {}", rollback.stdout);
        assert_eq!(nv(&h, "CNP_DSCP_P1"), "48 40", "{bash}");
        assert_eq!(rollback.result["reboot_required"], true, "{bash}");
        assert_eq!(
            rollback.message("fw_CNP_DSCP_P1", "mlx5_0"),
            "CNP_DSCP_P1 restored from 48 to 40 for the next boot; it takes effect at the next reboot"
        );
        assert!(
            rollback.stdout.contains(
                "ℹ reboot required: firmware values take effect at the next boot (mlx5_0)\nnext: "
            ),
            "{bash}: {}",
            rollback.stdout
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_dry_run_prints_the_set_and_changes_nothing() {
    for_each_bash(|bash| {
        let h = host(bash, Some("mlxconfig"), Some("apply"));
        let before = h.snapshot();
        let dry = h.run("apply.sh", &["--dry-run", "-v"]);
        assert_eq!(dry.code, 0, "{bash}: {}", dry.stdout);
        assert!(
            dry.stdout.contains(
                "would run: mlxconfig -y -d 0000:1a:00.0 set CNP_DSCP_P1=48 DCBX_WILLING_P1=0\n"
            ),
            "{bash}: {}",
            dry.stdout
        );
        assert_eq!(h.snapshot(), before, "{bash}: the dry run changed the host");
        assert!(
            fw_commands(&h).iter().all(|c| !c.contains(" set ")),
            "{bash}"
        );
        dry.expect(
            &["fw_CNP_DSCP_P1", "fw_DCBX_WILLING_P1"],
            "mlx5_0",
            "warn",
            bash,
        );
        assert!(
            dry.message("fw_CNP_DSCP_P1", "mlx5_0")
                .starts_with("dry run: CNP_DSCP_P1 would be set from 40 to 48 for the next boot"),
            "{bash}"
        );
        assert!(
            dry.stdout.contains("apply would change:\n")
                && dry
                    .stdout
                    .contains("  fw_DCBX_WILLING_P1: 1 port True(1) → False(0) (mlx5_0)\n"),
            "{bash}: {}",
            dry.stdout
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_boot_unit_never_touches_the_firmware() {
    for_each_bash(|bash| {
        let h = host(bash, Some("mlxconfig"), Some("apply"));
        let boot = h.run("apply.sh", &["--boot"]);
        assert_eq!(boot.code, 0, "{bash}: {}\n{}", boot.stdout, boot.stderr);
        assert!(fw_commands(&h).is_empty(), "{bash}");
        assert_eq!(fw_checks(&boot), ["firmware_config:=skip"], "{bash}");
        assert!(
            boot.message("firmware_config", "")
                .starts_with("skipped: the boot unit never touches the firmware"),
            "{bash}"
        );
        assert_eq!(nv(&h, "CNP_DSCP_P1"), "40 40", "{bash}");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn without_a_tool_one_skip_says_what_to_install() {
    for_each_bash(|bash| {
        let h = host(bash, None, None);
        for script in ["precheck.sh", "apply.sh"] {
            let run = run_without(&h, script, &["mlxconfig", "mstconfig"]);
            assert_eq!(
                fw_checks(&run),
                ["firmware_config:=skip"],
                "{bash} {script}"
            );
            let message = run.message("firmware_config", "");
            assert!(
                message.contains(
                    "neither mlxconfig (NVIDIA MFT) nor mstconfig (mstflint: apt install mstflint"
                ),
                "{bash} {script}: {message}"
            );
            assert_eq!(
                run.result["facts"]["nics"]["mlx5_0"]["fw_tool"],
                Value::Null
            );
        }
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn off_means_no_firmware_access_at_all() {
    for_each_bash(|bash| {
        let h = host(bash, Some("mlxconfig"), Some("off"));
        for (script, args) in [
            ("precheck.sh", &[][..]),
            ("apply.sh", &[][..]),
            ("rollback.sh", &[][..]),
        ] {
            let run = h.run(script, args);
            assert_eq!(run.code, 0, "{bash} {script}: {}", run.stdout);
            if script != "rollback.sh" {
                assert_eq!(
                    fw_checks(&run),
                    ["firmware_config:=skip"],
                    "{bash} {script}"
                );
                assert_eq!(
                    run.message("firmware_config", ""),
                    "skipped: the plan says firmware_config = off (no firmware access)"
                );
            }
        }
        assert!(fw_commands(&h).is_empty(), "{bash}");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_value_waiting_for_the_next_boot_is_a_pending_reboot() {
    for_each_bash(|bash| {
        let h = host(bash, Some("mlxconfig"), None);
        // Someone set the mask for the next boot (priority 3 still in it) and did not reboot.
        let text = CONTRADICTING
            .replace("CNP_DSCP_P1 48 40 40", "CNP_DSCP_P1 48 48 48")
            .replace(
                "ROCE_CC_PRIO_MASK_P1 255 255 255",
                "ROCE_CC_PRIO_MASK_P1 255 255 8",
            );
        std::fs::write(h.fake(CARD0), text).unwrap();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(
            pre.status("fw_ROCE_CC_PRIO_MASK_P1", "mlx5_0"),
            "warn",
            "{bash}"
        );
        assert_eq!(
            pre.message("fw_ROCE_CC_PRIO_MASK_P1", "mlx5_0"),
            "reboot pending: ROCE_CC_PRIO_MASK_P1 is 255 now and 8 from the next boot"
        );
        assert_eq!(pre.result["reboot_required"], true, "{bash}");
        assert!(
            pre.stdout.contains(
                "ℹ reboot required: firmware values take effect at the next boot (mlx5_0)\nnext: "
            ),
            "{bash}: {}",
            pre.stdout
        );
        // A mask without the RoCE priority contradicts the plan.
        std::fs::write(
            h.fake(CARD0),
            CONTRADICTING.replace(
                "ROCE_CC_PRIO_MASK_P1 255 255 255",
                "ROCE_CC_PRIO_MASK_P1 255 7 7",
            ),
        )
        .unwrap();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(
            pre.status("fw_ROCE_CC_PRIO_MASK_P1", "mlx5_0"),
            "warn",
            "{bash}"
        );
        assert!(
            pre.message("fw_ROCE_CC_PRIO_MASK_P1", "mlx5_0")
                .starts_with("ROCE_CC_PRIO_MASK_P1 is 7: congestion control is off on priority 3"),
            "{bash}: {}",
            pre.message("fw_ROCE_CC_PRIO_MASK_P1", "mlx5_0")
        );
        assert_eq!(pre.result["reboot_required"], false, "{bash}");
    });
}

/// A card that lacks a parameter (an Ethernet-only card has no LINK_TYPE_P1) refuses a query
/// naming it; the scripts drop that name and ask for the rest, never for every parameter, and
/// the read-back after a set asks only for what the card has.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_ethernet_only_card_is_asked_only_for_the_parameters_it_has() {
    for_each_bash(|bash| {
        let h = host(bash, Some("mlxconfig"), Some("apply"));
        let text: String = CONTRADICTING
            .lines()
            .filter(|l| !l.starts_with("LINK_TYPE"))
            .map(|l| format!("{l}\n"))
            .collect();
        std::fs::write(h.fake(CARD0), text).unwrap();
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        assert_eq!(apply.status("fw_LINK_TYPE_P1", "mlx5_0"), "skip", "{bash}");
        assert_eq!(
            apply.status("fw_CNP_DSCP_P1", "mlx5_0"),
            "changed",
            "{bash}"
        );
        assert_eq!(apply.status("fw_LINK_TYPE_P1", "mlx5_1"), "pass", "{bash}");
        let without = QUERY.trim_end_matches(" LINK_TYPE_P1");
        let card0: Vec<String> = fw_commands(&h)
            .into_iter()
            .filter(|c| c.contains("0000:1a:00.0"))
            .collect();
        assert_eq!(
            card0,
            [
                format!("mlxconfig -d 0000:1a:00.0 {QUERY}"),
                format!("mlxconfig -d 0000:1a:00.0 {without}"),
                "mlxconfig -y -d 0000:1a:00.0 set CNP_DSCP_P1=48 DCBX_WILLING_P1=0".to_string(),
                format!("mlxconfig -d 0000:1a:00.0 {without}"),
            ],
            "{bash}"
        );
    });
}

/// The card's lines with the CNP parameters' TLV (nv_roce_cc_ecn) and an unrelated one
/// (nv_keep_link_up) failing to read.
const FAILING: &str = "ROCE_CC_PRIO_MASK_P1 255 255 255
CNP_DSCP_P1 48 40 40 fail
CNP_802P_PRIO_P1 6 6 6 fail
LLDP_NB_DCBX_P1 0 1 1
DCBX_WILLING_P1 1 1 1
LINK_TYPE_P1 2 2 2
KEEP_ETH_LINK_UP_P1 1 1 1 fail
";

/// A TLV the firmware does not return fails the named query; the query of every parameter then
/// prints the rest of the table and exits 3, and the scripts read that table: the parameters it
/// has are checked and set, the unreadable ones the plan cares about warn (never pass), and
/// apply still persists the runtime configuration and writes nccl.env.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_tlv_that_fails_is_read_around_and_keeps_nothing_else_from_apply() {
    for_each_bash(|bash| {
        let h = host(bash, Some("mlxconfig"), Some("apply"));
        std::fs::write(h.fake(CARD0), FAILING).unwrap();
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        for id in ["fw_CNP_DSCP_P1", "fw_CNP_802P_PRIO_P1"] {
            assert_eq!(apply.status(id, "mlx5_0"), "warn", "{bash}");
            assert!(
                apply
                    .message(id, "mlx5_0")
                    .contains("cannot be read, so it is neither checked nor set")
                    && apply.message(id, "mlx5_0").contains("nv_roce_cc_ecn_P1_M0"),
                "{bash}: {}",
                apply.message(id, "mlx5_0")
            );
        }
        assert_eq!(
            apply.status("fw_DCBX_WILLING_P1", "mlx5_0"),
            "changed",
            "{bash}"
        );
        assert_eq!(nv(&h, "DCBX_WILLING_P1"), "1 0", "{bash}");
        assert_eq!(nv(&h, "CNP_DSCP_P1"), "40 40", "{bash}: not set unread");
        apply.expect(&["persistence", "nccl_env"], "", "changed", bash);
        // One query of every parameter; the read-back asks for the parameters it found.
        let card0: Vec<String> = fw_commands(&h)
            .into_iter()
            .filter(|c| c.contains("0000:1a:00.0"))
            .collect();
        assert_eq!(
            card0,
            [
                format!("mlxconfig -d 0000:1a:00.0 {QUERY}"),
                "mlxconfig -d 0000:1a:00.0 -e q".to_string(),
                "mlxconfig -y -d 0000:1a:00.0 set DCBX_WILLING_P1=0".to_string(),
                "mlxconfig -d 0000:1a:00.0 -e q ROCE_CC_PRIO_MASK_P1 LLDP_NB_DCBX_P1 DCBX_WILLING_P1 LINK_TYPE_P1".to_string(),
            ],
            "{bash}"
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_firmware_that_cannot_be_read_warns_in_report_mode_and_fails_apply() {
    for_each_bash(|bash| {
        for (mode, status) in [("report", "warn"), ("apply", "fail")] {
            let h = host(bash, Some("mlxconfig"), Some(mode));
            std::fs::write(
                h.fake(".fake/fail/mlxconfig"),
                "-E- Failed to open device\n",
            )
            .unwrap();
            let apply = h.run("apply.sh", &[]);
            assert_eq!(
                apply.status("firmware_config", "mlx5_0"),
                status,
                "{bash} {mode}"
            );
            assert!(
                apply
                    .message("firmware_config", "mlx5_0")
                    .starts_with("cannot read the firmware (NV) configuration of mlx5_0: mlxconfig -d 0000:1a:00.0 -e q: "),
                "{bash} {mode}: {}",
                apply.message("firmware_config", "mlx5_0")
            );
            // The NV values are for the next boot: the runtime configuration is persisted and
            // nccl.env written whatever the firmware step found.
            apply.expect(
                &["persistence", "nccl_env"],
                "",
                "changed",
                &format!("{bash} {mode}"),
            );
        }
    });
}

/// A BlueField-3 (PCI device 0xa2dc) is also asked for its Arm cores' mode: in DPU mode it is
/// reported (`fw_mode` fact and check), a warning that says its QoS is the DPU OS's; a ConnectX
/// is never asked for those parameters.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_bluefield_in_dpu_mode_is_reported() {
    for_each_bash(|bash| {
        let h = host(bash, Some("mstconfig"), None);
        std::fs::write(
            h.fake("sys/bus/pci/devices/0000:1a:00.0/device"),
            "0xa2dc\n",
        )
        .unwrap();
        std::fs::write(
            h.fake(CARD0),
            format!("{CONTRADICTING}INTERNAL_CPU_MODEL 1 1 1\nINTERNAL_CPU_OFFLOAD_ENGINE 0 0 0\n"),
        )
        .unwrap();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "{bash}: {}", pre.stdout);
        assert_eq!(pre.status("fw_mode", "mlx5_0"), "warn", "{bash}");
        assert!(
            pre.message("fw_mode", "mlx5_0")
                .contains("is a BlueField in DPU mode (INTERNAL_CPU_MODEL = EMBEDDED_CPU(1)"),
            "{bash}: {}",
            pre.message("fw_mode", "mlx5_0")
        );
        assert_eq!(fact(&pre, "mlx5_0", "fw_mode"), "dpu", "{bash}");
        assert_eq!(fact(&pre, "mlx5_1", "fw_mode"), "nic", "{bash}");
        let commands = fw_commands(&h);
        assert!(
            commands.contains(&format!(
                "mstconfig -d 0000:1a:00.0 {QUERY} INTERNAL_CPU_MODEL INTERNAL_CPU_OFFLOAD_ENGINE"
            )) && commands.contains(&format!("mstconfig -d 0000:3c:00.0 {QUERY}")),
            "{bash}: {commands:?}"
        );
        // NIC mode: the offload engine off.
        std::fs::write(
            h.fake(CARD0),
            format!("{CONTRADICTING}INTERNAL_CPU_MODEL 1 1 1\nINTERNAL_CPU_OFFLOAD_ENGINE 1 1 1\n"),
        )
        .unwrap();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(fact(&pre, "mlx5_0", "fw_mode"), "nic", "{bash}");
        assert!(
            !pre.statuses().iter().any(|s| s.starts_with("fw_mode:")),
            "{bash}"
        );
    });
}

/// The host of a zero-trust BlueField may read the NV configuration but not set it: apply's set
/// is refused (`Read only TLV`), which is a warning saying where to set it, not a failure, and
/// nothing else is held up; a host that may not reach the NV registers at all says so once.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_restricted_host_reports_what_it_cannot_set() {
    for_each_bash(|bash| {
        let h = host(bash, Some("mlxconfig"), Some("apply"));
        std::fs::write(h.fake(".fake/nvconfig/0000:1a:00.host"), "restricted\n").unwrap();
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        assert_eq!(apply.status("fw_mode", "mlx5_0"), "warn", "{bash}");
        assert!(
            apply.message("fw_mode", "mlx5_0").starts_with(
                "this host may read but not set the firmware (NV) configuration of mlx5_0"
            ),
            "{bash}: {}",
            apply.message("fw_mode", "mlx5_0")
        );
        assert_eq!(fact(&apply, "mlx5_0", "fw_mode"), "restricted", "{bash}");
        for id in ["fw_CNP_DSCP_P1", "fw_DCBX_WILLING_P1"] {
            assert_eq!(apply.status(id, "mlx5_0"), "warn", "{bash}");
            assert!(
                apply
                    .message(id, "mlx5_0")
                    .contains("this host may not set it"),
                "{bash}"
            );
        }
        assert_eq!(nv(&h, "CNP_DSCP_P1"), "40 40", "{bash}");
        assert_eq!(apply.result["reboot_required"], false, "{bash}");
        apply.expect(&["persistence", "nccl_env"], "", "changed", bash);
        // The refusal is kept: the table of this mstflint has no RO column, so without it every
        // apply would send the refused set again.
        let _ = fw_commands(&h);
        let again = h.run("apply.sh", &[]);
        assert_eq!(again.code, 0, "{bash}: {}", again.stdout);
        assert_eq!(again.count("changed"), 0, "{bash}: {:?}", again.statuses());
        let commands = fw_commands(&h);
        assert!(
            !commands.iter().any(|c| c.contains(" set ")),
            "{bash}: {commands:?}"
        );
        assert_eq!(again.status("fw_CNP_DSCP_P1", "mlx5_0"), "warn", "{bash}");
        assert!(
            again.message("fw_CNP_DSCP_P1", "mlx5_0").contains(
                "(mlxconfig refused to set it: Operation is not supported (Read only TLV: nv_roce_cc_ecn); apply does not send it again until a rollback)"
            ),
            "{bash}: {}",
            again.message("fw_CNP_DSCP_P1", "mlx5_0")
        );
        assert_eq!(fact(&again, "mlx5_0", "fw_mode"), "restricted", "{bash}");

        std::fs::write(h.fake(".fake/nvconfig/0000:1a:00.host"), "locked\n").unwrap();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.status("firmware_config", "mlx5_0"), "warn", "{bash}");
        assert!(
            pre.message("firmware_config", "mlx5_0")
                .contains("Cannot access NV register"),
            "{bash}: {}",
            pre.message("firmware_config", "mlx5_0")
        );
        assert_eq!(fact(&pre, "mlx5_0", "fw_mode"), "restricted", "{bash}");
    });
}

/// mstflint before 4.25 never shows a restricted host the parameters it may only read (queryTLV
/// asks for write support): every named query is refused as unsupported, so nothing is set, and
/// the parameters the plan cares about are warnings that say why they may be missing, not skips
/// that say the firmware has none; the other card is read as usual.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_old_mstflint_on_a_restricted_host_warns_that_it_shows_no_parameter() {
    for_each_bash(|bash| {
        let h = host(bash, Some("mstconfig"), Some("apply"));
        std::fs::write(
            h.fake(".fake/nvconfig/0000:1a:00.host"),
            "restricted-4.21\n",
        )
        .unwrap();
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.code, 0, "{bash}: {}", apply.stdout);
        for id in [
            "fw_CNP_DSCP_P1",
            "fw_ROCE_CC_PRIO_MASK_P1",
            "fw_LINK_TYPE_P1",
        ] {
            assert_eq!(apply.status(id, "mlx5_0"), "warn", "{bash}");
            assert!(
                apply.message(id, "mlx5_0").contains(
                    "so they are neither checked nor set: this host may only read them (the host of a restricted BlueField, whose read-only parameters mstflint before 4.25 does not show at all)"
                ),
                "{bash}: {}",
                apply.message(id, "mlx5_0")
            );
        }
        assert_eq!(apply.status("fw_CNP_DSCP_P1", "mlx5_1"), "pass", "{bash}");
        let commands = fw_commands(&h);
        assert!(
            !commands.iter().any(|c| c.contains(" set ")),
            "{bash}: {commands:?}"
        );
        assert_eq!(nv(&h, "CNP_DSCP_P1"), "40 40", "{bash}");
        apply.expect(&["persistence", "nccl_env"], "", "changed", bash);
    });
}

/// `ingest` says which hosts wait for a reboot, from their latest result; a result without the
/// field (an older bundle) says nothing of it.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn ingest_names_the_hosts_that_need_a_reboot() {
    let h = host("bash", Some("mlxconfig"), Some("apply"));
    let apply = h.run("apply.sh", &[]);
    assert_eq!(apply.result["reboot_required"], true, "{}", apply.stdout);
    let dir = crate::common::tmp();
    let results = dir.path().join("results");
    std::fs::create_dir(&results).unwrap();
    std::fs::write(
        results.join("node-a.apply.json"),
        serde_json::to_string_pretty(&apply.result).unwrap(),
    )
    .unwrap();
    let mut older = apply.result.clone();
    older["host"] = Value::from("node-b");
    older.as_object_mut().unwrap().remove("reboot_required");
    std::fs::write(
        results.join("node-b.apply.json"),
        serde_json::to_string_pretty(&older).unwrap(),
    )
    .unwrap();
    let text = crate::common::roce_gen(dir.path(), &["ingest", "results"]);
    assert!(
        text.stdout.contains(
            "\nℹ node-a: reboot required: firmware values take effect at the next boot\n"
        ),
        "{}",
        text.transcript()
    );
    assert!(!text.stdout.contains("node-b: reboot"), "{}", text.stdout);
    let md = crate::common::roce_gen(dir.path(), &["ingest", "results", "--format", "markdown"]);
    assert!(
        md.stdout.contains(
            "\nReboot required (firmware values take effect at the next boot): node-a.\n"
        ),
        "{}",
        md.transcript()
    );
    let json = crate::common::roce_gen(dir.path(), &["ingest", "results", "--format", "json"]);
    let doc: Value = serde_json::from_str(&json.stdout).unwrap();
    let hosts = doc["hosts"].as_array().unwrap();
    let latest = |name: &str| {
        hosts.iter().find(|x| x["host"] == name).unwrap()["latest"]["reboot_required"].clone()
    };
    assert_eq!(latest("node-a"), true);
    assert_eq!(latest("node-b"), Value::Null);
}

/// Rollback that hands DCBX back to the firmware: the driver makes the firmware's DCBX client
/// willing (mlx5e_dcbnl_set_dcbx_mode), so `dcbx_willing` compares with what the firmware
/// started from at boot: a warning where it was not willing and its client is on, a pass where
/// it was willing, and a warning that says why it cannot tell without firmware access.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn rollback_of_dcbx_to_the_firmware_says_whether_willing_is_as_before() {
    for_each_bash(|bash| {
        for (card, mode, status, words) in [
            (
                CONTRADICTING.replace("DCBX_WILLING_P1 1 1 1", "DCBX_WILLING_P1 1 0 0"),
                "report",
                "warn",
                "was not willing before apply (DCBX_WILLING_P1 = False(0)), but handing DCBX back made it willing",
            ),
            (
                CONTRADICTING.to_string(),
                "report",
                "pass",
                "is willing, as it was before apply",
            ),
            (
                CONTRADICTING.replace("LLDP_NB_DCBX_P1 0 1 1", "LLDP_NB_DCBX_P1 0 0 0"),
                "report",
                "pass",
                "DCBX client is off",
            ),
            (
                CONTRADICTING.to_string(),
                "off",
                "warn",
                "(firmware_config = off)",
            ),
        ] {
            let h = FakeHost::ofed()
                .bash(bash)
                .plan(|plan| {
                    plan["cluster"]["dcbx"] = Value::from("os");
                    plan["cluster"]["firmware_config"] = Value::from(mode);
                })
                .build();
            std::os::unix::fs::symlink("stub", h.fake("bin/mlxconfig")).unwrap();
            std::fs::create_dir_all(h.fake(".fake/nvconfig")).unwrap();
            std::fs::write(h.fake(CARD0), &card).unwrap();
            std::fs::write(h.fake(".fake/dcb/ens1f0np0/dcbx"), "cee ieee\n").unwrap();
            let apply = h.run("apply.sh", &[]);
            assert_eq!(apply.status("dcbx", "mlx5_0"), "changed", "{bash} {mode}");
            let rollback = h.run("rollback.sh", &[]);
            assert_eq!(
                rollback.status("dcbx", "mlx5_0"),
                "changed",
                "{bash} {mode}"
            );
            assert_eq!(
                rollback.status("dcbx_willing", "mlx5_0"),
                status,
                "{bash} {mode} {card}"
            );
            assert!(
                rollback.message("dcbx_willing", "mlx5_0").contains(words),
                "{bash} {mode}: {}",
                rollback.message("dcbx_willing", "mlx5_0")
            );
            // The second port's DCBX was the host's already: nothing handed back, no check.
            assert!(
                !rollback
                    .statuses()
                    .iter()
                    .any(|s| s.starts_with("dcbx_willing:mlx5_1")),
                "{bash}"
            );
        }
    });
}

/// A planned port's SR-IOV VFs (PCI `virtfnN` links of its PF, each VF's `infiniband/` device):
/// precheck reports each VF's RDMA device with its RDMA-CM ToS and verbs traffic class, warns
/// where they are not the plan's (the lossy class for pods and VMs) and records them in the facts.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn precheck_reports_the_rdma_devices_of_a_ports_vfs() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed()
            .bash(bash)
            .setup(&["vfs", "ens1f0np0", "2"])
            .build();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.code, 0, "{bash}: {}", pre.stdout);
        assert_eq!(pre.status("vf_qos", "mlx5_0"), "warn", "{bash}");
        assert!(
            pre.message("vf_qos", "mlx5_0").contains(
                "(mlx5_2 (0000:1a:00.2) ToS 0, traffic class unset, mlx5_3 (0000:1a:00.3) ToS 0, traffic class unset)"
            ),
            "{bash}: {}",
            pre.message("vf_qos", "mlx5_0")
        );
        assert_eq!(fact(&pre, "mlx5_0", "vfs")[1]["ib_dev"], "mlx5_3", "{bash}");
        assert_eq!(fact(&pre, "mlx5_0", "vfs")[0]["roce_tos"], "0", "{bash}");
        // A port without VFs has no such check.
        assert!(
            !pre.statuses()
                .iter()
                .any(|s| s.starts_with("vf_qos:mlx5_1")),
            "{bash}"
        );
        assert!(fact(&pre, "mlx5_1", "vfs").is_null(), "{bash}");
    });
}
