//! The link after a flap and the time limit on driver files, on the simulated host: a PFC change
//! toggles the link (the stand-ins' DCB model logs the toggle, driverfs keeps the link down for
//! `.fake/net/IF/flap_seconds`, or for good with `never`), so apply waits for carrier and the
//! RDMA port before it reads back (`ROCE_GEN_LINK_WAIT`); a driver file listed in `.fake/wedged`
//! holds each read and write as a firmware command that does not complete, so precheck, apply and
//! the boot run give `tool_timeout` within `ROCE_GEN_TOOL_TIMEOUT` instead of hanging.

use std::time::{Duration, Instant};

use crate::fakehost::{FakeHost, ScriptRun, for_each_bash};

/// A run and how long it took.
fn timed(h: &FakeHost, script: &str, args: &[&str], env: &[(&str, &str)]) -> (ScriptRun, Duration) {
    let started = Instant::now();
    let run = h.run_env(script, args, env);
    (run, started.elapsed())
}

fn put(h: &FakeHost, rel: &str, text: &str) {
    let path = h.fake(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A host whose first port's link stays down two seconds after a toggle and whose manager
/// (systemd-networkd's default) removes its address meanwhile: an early read sees neither link,
/// address nor GID.
fn flapping_host(bash: &str) -> FakeHost {
    let h = FakeHost::ofed().bash(bash).build();
    put(&h, ".fake/net/ens1f0np0/flap_seconds", "2\n");
    put(&h, ".fake/net/ens1f0np0/carrier_loss_drops_addresses", "");
    h
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn apply_waits_out_the_link_flap_then_reads_back_the_link_the_address_and_the_gid() {
    for_each_bash(|bash| {
        let h = flapping_host(bash);
        let (apply, took) = timed(&h, "apply.sh", &[], &[]);
        assert_eq!(apply.code, 0, "{bash}: {}\n{}", apply.stdout, apply.stderr);
        for nic in ["mlx5_0", "mlx5_1"] {
            apply.expect(&["link_state", "ip", "gid"], nic, "pass", bash);
            apply.expect(&["pfc", "trust", "mtu"], nic, "changed", bash);
        }
        assert!(
            apply
                .message("link_state", "mlx5_0")
                .contains("ACTIVE again after the PFC change toggled the link of ens1f0np0"),
            "{bash}: {}",
            apply.message("link_state", "mlx5_0")
        );
        assert_eq!(apply.status("gid", ""), "pass", "{bash}");
        assert!(took >= Duration::from_secs(1), "{bash}: no wait ({took:?})");
        // A bound only a hang reaches (a loaded machine is slow, never this slow); the check's
        // status and message say which limit ended the wait.
        assert!(took < Duration::from_secs(300), "{bash}: {took:?}");
        // The second apply changes nothing, so nothing flaps and nothing waits.
        let (again, _) = timed(&h, "apply.sh", &[], &[]);
        assert_eq!(again.code, 0, "{bash}: {}", again.stdout);
        assert_eq!(again.count("changed"), 0, "{bash}: {:?}", again.statuses());
        assert!(
            !again.stdout.contains("flapped"),
            "{bash}: {}",
            again.stdout
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn without_the_wait_the_read_back_sees_the_link_the_address_and_the_gid_gone() {
    for_each_bash(|bash| {
        // ROCE_GEN_LINK_WAIT=0: apply looks once, while the link is still down.
        let h = flapping_host(bash);
        let (apply, _) = timed(&h, "apply.sh", &[], &[("ROCE_GEN_LINK_WAIT", "0")]);
        assert_eq!(apply.code, 1, "{bash}: {}", apply.stdout);
        assert_eq!(apply.status("link_state", "mlx5_0"), "fail", "{bash}");
        assert_eq!(apply.status("ip", "mlx5_0"), "warn", "{bash}");
        assert_eq!(apply.status("gid", "mlx5_0"), "warn", "{bash}");
        assert_eq!(
            apply.status("nccl_env", ""),
            "skip",
            "{bash}: nccl.env written on a failed apply"
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn apply_fails_a_link_that_never_comes_back_within_the_wait() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        put(&h, ".fake/net/ens2f0np0/flap_seconds", "never\n");
        let (apply, took) = timed(&h, "apply.sh", &[], &[("ROCE_GEN_LINK_WAIT", "3")]);
        assert_eq!(apply.code, 1, "{bash}: {}\n{}", apply.stdout, apply.stderr);
        assert!(took >= Duration::from_secs(2), "{bash}: {took:?}");
        // A bound only a hang reaches (a loaded machine is slow, never this slow); the check's
        // status and message say which limit ended the wait.
        assert!(took < Duration::from_secs(300), "{bash}: {took:?}");
        assert_eq!(apply.status("link_state", "mlx5_1"), "fail", "{bash}");
        let msg = apply.message("link_state", "mlx5_1");
        for words in [
            "the link of ens2f0np0 did not come back within 3s after the PFC change toggled it",
            "carrier 0, operstate down, port state 1: DOWN",
            "check the cable, the optic and the switch port",
            "run apply again once the link is up",
            "ROCE_GEN_LINK_WAIT",
        ] {
            assert!(msg.contains(words), "{bash}: {msg}");
        }
        // The other port came back; the settings were still written and read back.
        assert_eq!(apply.status("link_state", "mlx5_0"), "pass", "{bash}");
        apply.expect(&["pfc", "mtu"], "mlx5_1", "changed", bash);
        assert!(
            apply
                .stdout
                .contains("❌ link_state:mlx5_1: the link of ens2f0np0"),
            "{bash}: {}",
            apply.stdout
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_blocking_driver_file_is_a_tool_timeout_in_precheck_apply_and_the_boot_run() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed().bash(bash).build();
        let file = "class/net/ens1f0np0/ecn/roce_np/cnp_dscp";
        put(&h, ".fake/wedged", &format!("{file}\n"));
        let env = [("ROCE_GEN_TOOL_TIMEOUT", "2")];
        for (script, args) in [
            ("precheck.sh", &[][..]),
            ("apply.sh", &[][..]),
            ("apply.sh", &["--boot"][..]),
        ] {
            let ctx = format!("{bash}: {script} {args:?}");
            let (run, took) = timed(&h, script, args, &env);
            // Far under the wedged file's 600 s: the 2 s limit ended each wait, however loaded.
            assert!(took < Duration::from_secs(300), "{ctx}: took {took:?}");
            assert_eq!(run.code, 1, "{ctx}: {}\n{}", run.stdout, run.stderr);
            assert_eq!(run.status("tool_timeout", ""), "fail", "{ctx}");
            let msg = run.message("tool_timeout", "");
            assert!(
                msg.starts_with(&format!(
                    "the driver did not answer the read of /sys/{file} within 2s"
                )),
                "{ctx}: {msg}"
            );
            assert!(msg.contains("check the NIC"), "{ctx}: {msg}");
            assert_eq!(run.status("cnp_dscp", "mlx5_0"), "fail", "{ctx}");
            // The other port's driver files answer as always.
            assert_ne!(run.status("cnp_dscp", "mlx5_1"), "fail", "{ctx}");
        }
    });
}
