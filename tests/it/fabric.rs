//! The fabric test on simulated clusters (tests/host/fabric-cluster.sh): several fake hosts run
//! fabric.sh at once and reach each other through the wire model of the ib_write_bw stand-in.
//! Each scenario runs under every bash of `for_each_bash`.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::fakehost::{FakeHost, for_each_bash, repo};

/// Runs a cluster of `n` hosts with `args` and returns each host's fabric result (`None` where
/// fabric.sh did not run) and the seconds the fabric step took.
fn cluster(bash: &str, n: usize, args: &[&str]) -> (Vec<Option<Value>>, u64) {
    let (results, elapsed, _dir) = cluster_in(bash, n, args);
    (results, elapsed)
}

/// [`cluster`], and the folder it ran in (`c/res`, `c/applied`, `c/plan.json`). Most tests pass
/// `--clone`: only h0 is made and applied, the other hosts are copies of its tree (the same apply,
/// half the setup's CPU); a test that ingests `c/applied`, or changes h0 after its apply, does not.
fn cluster_in(bash: &str, n: usize, args: &[&str]) -> (Vec<Option<Value>>, u64, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().join("c");
    let out = Command::new("bash")
        .arg(repo().join("tests/host/fabric-cluster.sh"))
        .arg(&d)
        .arg(n.to_string())
        .arg(bash)
        .args(args)
        .env("ROCE_GEN", env!("CARGO_BIN_EXE_roce-gen"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "fabric-cluster: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let results = (0..n)
        .map(|h| read_json(&d.join(format!("res/h{h}.fabric.json"))))
        .collect();
    let elapsed = std::fs::read_to_string(d.join("elapsed"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    (results, elapsed, dir)
}

fn read_json(path: &Path) -> Option<Value> {
    let text = std::fs::read_to_string(path).ok()?;
    Some(serde_json::from_str(&text).unwrap())
}

/// The check `id` of a result: (status, message).
fn check<'a>(result: &'a Value, id: &str) -> (&'a str, &'a str) {
    let c = result["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id} in {result:#}"));
    (
        c["status"].as_str().unwrap(),
        c["message"].as_str().unwrap(),
    )
}

/// Asserts the status of host `h`'s check `id`, showing its message (the cause) when it is another.
fn assert_status(result: &Value, h: usize, id: &str, want: &str) {
    let (status, msg) = check(result, id);
    assert_eq!(status, want, "h{h} {id}: {msg}");
}

fn port(result: &Value) -> &Value {
    &result["facts"]["fabric"]["ports"]["mlx5_0"]
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_healthy_fabric_passes_with_the_deltas_the_wire_added() {
    for_each_bash(|bash| {
        // h2's perftest predates --bind_source_ip: its flows go without it, the others' with it.
        let (results, _, dir) = cluster_in(bash, 3, &["--clone", "--old-perftest", "h2"]);
        for h in 0..3 {
            let log =
                std::fs::read_to_string(dir.path().join(format!("c/h{h}/root/stub.log"))).unwrap();
            let bound = log.contains(r#""--bind_source_ip","10.10.0.1"#);
            assert_eq!(bound, h != 2, "h{h}: {log}");
        }
        for (h, r) in results.iter().enumerate() {
            let r = r.as_ref().unwrap();
            assert_eq!(r["phase"], "fabric");
            assert_eq!(r["status"], "pass", "h{h}: {r:#}");
            for id in [
                "fabric_peer",
                "fabric_bw",
                "fabric_priority",
                "fabric_loss",
                "fabric_congestion",
            ] {
                assert_status(r, h, id, "pass");
            }
            let p = port(r);
            // 97 % of 400G for 2 s, on priority 3 both ways.
            assert_eq!(p["gbps"], 388.0);
            let tx = p["ring"]["tx_prio3_bytes"].as_u64().unwrap();
            assert_eq!(tx, 97_000_000_000);
            assert!(p["ring"]["rx_prio3_bytes"].as_u64().unwrap() > 0);
            assert!(p["ring"]["tx_prio0_bytes"].is_null());
        }
        // h0 receives the incast from h1 and h2: ECN marks and CNPs there, CNPs handled and pause
        // at the senders.
        let rx = &port(results[0].as_ref().unwrap())["incast"];
        assert!(rx["np_ecn_marked_roce_packets"].as_u64().unwrap() > 0);
        assert!(rx["np_cnp_sent"].as_u64().unwrap() > 0);
        let tx = &port(results[1].as_ref().unwrap())["incast"];
        assert!(tx["rp_cnp_handled"].as_u64().unwrap() > 0);
        assert!(tx["rx_prio3_pause"].as_u64().unwrap() > 0);
        // The senders ran at once: the receiver timed at least half the 2 s with both flows (a
        // loaded machine stretches the stamps, so more is fine).
        let overlap = port(results[0].as_ref().unwrap())["incast_overlap"]
            .as_f64()
            .unwrap();
        assert!(overlap >= 1.0, "overlap {overlap}");
        assert!(port(results[1].as_ref().unwrap())["incast_overlap"].is_null());
    });
}

/// A RoCE LAG (bond0 over both ports of one card, mlx5_bond_0) passes a healthy fabric: the bond
/// has no statistics, so the counters are its slaves' summed, and a flow (one QP, one port) is
/// judged against one slave's speed, not the bond's sum.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_lag_host_passes_a_healthy_fabric_on_its_slaves_counters_and_one_slaves_speed() {
    for_each_bash(|bash| {
        let (results, _) = cluster(bash, 3, &["--clone", "--lag"]);
        for (h, r) in results.iter().enumerate() {
            let r = r.as_ref().unwrap();
            for id in [
                "fabric_peer",
                "fabric_bw",
                "fabric_priority",
                "fabric_loss",
                "fabric_congestion",
            ] {
                assert_status(r, h, id, "pass");
            }
            let (_, msg) = check(r, "fabric_bw");
            assert!(msg.contains("of one 400 Gb/s port of bond0"), "{msg}");
            let p = &r["facts"]["fabric"]["ports"]["mlx5_bond_0"];
            assert_eq!(p["speed_mbps"], 400_000, "h{h}: {p:#}");
            assert_eq!(
                p["ring"]["tx_prio3_bytes"], 97_000_000_000_u64,
                "h{h}: {p:#}"
            );
        }
    });
}

/// A switch that keeps the RoCE priority in a queue with ECN but without PFC: the incast is
/// marked and slowed, nothing is lost and nothing paused. The senders, the only ends that can
/// see a pause, warn that PFC was not exercised, naming their switch port; nothing fails.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_incast_that_the_switch_never_paused_warns_that_pfc_was_not_exercised() {
    for_each_bash(|bash| {
        let (results, _) = cluster(bash, 3, &["--clone", "--switch-no-pfc"]);
        let h0 = results[0].as_ref().unwrap();
        assert_status(h0, 0, "fabric_congestion", "pass");
        for h in [1, 2] {
            let r = results[h].as_ref().unwrap();
            let (status, msg) = check(r, "fabric_congestion");
            assert_eq!(status, "warn", "h{h}: {msg}");
            assert!(msg.contains("PFC was not exercised"), "h{h}: {msg}");
            assert!(
                msg.contains(&format!("leaf-1 port Eth1/{}", h + 1)),
                "h{h}: {msg}"
            );
            for id in ["fabric_peer", "fabric_bw", "fabric_priority", "fabric_loss"] {
                assert_status(r, h, id, "pass");
            }
        }
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn incast_senders_that_do_not_overlap_warn_instead_of_failing_fabric_congestion() {
    for_each_bash(|bash| {
        // h2's incast flow into h0 connects only once h1's has ended (an event of the wire, not
        // a delay), so the two senders follow each other however loaded the machine is; h0
        // waits for h2 within the harness's 600 s window.
        let (results, _, dir) = cluster_in(bash, 3, &["--after", "h2:h1"]);
        let h0 = results[0].as_ref().unwrap();
        let (status, msg) = check(h0, "fabric_congestion");
        assert_eq!(status, "warn", "{msg}");
        assert!(
            msg.contains("ECN-marked packets +0 and CNPs sent +0 while h1, h2 sent, but the senders did not overlap: 0.0 s of 2 s (congestion needs at least 1.0 s at once); start fabric.sh on every host at the same time"),
            "{msg}"
        );
        assert_eq!(port(h0)["incast_overlap"], 0.0);
        // The wire saw no congestion: each flow had the receiver to itself.
        assert!(port(h0)["incast"]["np_ecn_marked_roce_packets"].is_null());
        for h in [1, 2] {
            let r = results[h].as_ref().unwrap();
            let (status, msg) = check(r, "fabric_congestion");
            assert_eq!(status, "warn", "h{h}: {msg}");
            assert!(
                msg.contains("no CNP handled while sharing h0 and no pause received: nothing shows that the other sender ran at the same time"),
                "{msg}"
            );
            assert!(msg.contains("h0's fabric_congestion says whether the senders overlapped"));
        }
        for (h, r) in results.iter().enumerate() {
            let r = r.as_ref().unwrap();
            assert_eq!(r["status"], "warn", "h{h}: {}", r["checks"]);
            for id in ["fabric_peer", "fabric_bw", "fabric_priority", "fabric_loss"] {
                assert_status(r, h, id, "pass");
            }
        }
        // ingest: the hosts stay ready; the matrix says why each port warned.
        let c = dir.path().join("c");
        let plan = c.join("plan.json").display().to_string();
        let (res, applied) = (c.join("res"), c.join("applied"));
        let (res, applied) = (res.display().to_string(), applied.display().to_string());
        let text = crate::common::roce_gen(&c, &["ingest", &res, &applied, "--plan", &plan]);
        assert_eq!(text.code, 0, "{}", text.transcript());
        let out = &text.stdout;
        assert!(
            out.contains("rail 0  h0 mlx5_0: ⚠ 388.00 Gb/s (97% of 400 Gb/s)  priority ✅  loss ✅  congestion ⚠\n    mlx5_0 in the incast step (receiver): ECN-marked packets +0"),
            "{out}"
        );
        assert!(
            out.contains("fabric: 3 ports on 1 rail: 0 passed, 3 warned"),
            "{out}"
        );
        let md = crate::common::roce_gen(
            &c,
            &[
                "ingest", &res, &applied, "--plan", &plan, "--format", "markdown",
            ],
        );
        assert!(
            md.stdout.contains("Ports that warned:\n\n- rail 0: h0 mlx5\\_0\n  - mlx5\\_0 in the incast step (receiver): ECN-marked packets +0"),
            "{}",
            md.stdout
        );
        let html = crate::common::roce_gen(
            &c,
            &[
                "ingest", &res, &applied, "--plan", &plan, "--format", "html",
            ],
        );
        assert!(
            html.stdout.contains("<td><span class=\"host\">h0 mlx5_0</span></td>\n      <td><div>mlx5_0 in the incast step (receiver): ECN-marked packets +0"),
            "{}",
            html.stdout
        );
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_host_left_in_pcp_trust_fails_fabric_priority_naming_priority_0() {
    for_each_bash(|bash| {
        let (results, _) = cluster(bash, 3, &["--clone", "--pcp", "h1", "--no-incast"]);
        let h1 = results[1].as_ref().unwrap();
        let (status, msg) = check(h1, "fabric_priority");
        assert_eq!(status, "fail", "{msg}");
        assert!(msg.contains("tx: prio0 100%"), "{msg}");
        assert!(msg.contains("most bytes went on priority 0"), "{msg}");
        // h1 was never applied, so it has no class either: what it sends carries DSCP 0, and h2,
        // which it sends to, receives it on priority 0 and names h1; h0 (sending to h1,
        // receiving from h2) passes.
        assert_status(results[0].as_ref().unwrap(), 0, "fabric_priority", "pass");
        let (status, msg) = check(results[2].as_ref().unwrap(), "fabric_priority");
        assert_eq!(status, "fail", "{msg}");
        assert!(msg.contains("tx: prio3 100%; rx: prio0 100%"), "{msg}");
        assert!(msg.contains("what h1 sent arrived on priority 0"), "{msg}");
    });
}

/// The flows use the host's own default class, not one they set themselves: on an OFED host whose
/// traffic_class was lost after apply (a driver reload), its packets leave with DSCP 0, on
/// priority 0, and fabric_priority fails naming the cause, though /etc/nccl.conf still says 106.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_host_whose_default_class_was_lost_after_apply_fails_fabric_priority() {
    for_each_bash(|bash| {
        let (results, _) = cluster(bash, 2, &["--clone", "--class-lost", "h1", "--no-incast"]);
        let h1 = results[1].as_ref().unwrap();
        let (status, msg) = check(h1, "fabric_priority");
        assert_eq!(status, "fail", "{msg}");
        assert!(msg.contains("tx: prio0 100%"), "{msg}");
        assert!(
            msg.contains("OFED's traffic_class of mlx5_0 decides"),
            "{msg}"
        );
        assert!(
            msg.contains("with no class asked the packets carry DSCP 0"),
            "{msg}"
        );
        // h0 still has its class: what it sends rides priority 3 on both hosts.
        let h0 = results[0].as_ref().unwrap();
        assert_status(h0, 0, "fabric_priority", "fail");
        let (_, msg) = check(h0, "fabric_priority");
        assert!(msg.contains("tx: prio3 100%; rx: prio0 100%"), "{msg}");
    });
}

/// The incast's flows connect through RDMA-CM with no ToS of their own, so they prove the host's
/// RDMA-CM default as the ring's prove NCCL's class: on hosts with the distribution's drivers,
/// h1's RDMA-CM defaults back to the kernel's after apply (ToS 0, as a driver reload leaves
/// them) send its incast on priority 0 while its ring flow (NCCL_IB_TC of /etc/nccl.conf) still
/// rides priority 3; h1 fails fabric_priority naming its RDMA-CM default and the checks, the
/// receiver h0 names what its senders sent, and h2 passes on both classes.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_host_whose_rdma_cm_default_tos_was_lost_fails_fabric_priority_in_the_incast() {
    for_each_bash(|bash| {
        let (results, _) = cluster(bash, 3, &["--clone", "--inbox", "--cm-lost", "h1"]);
        let h1 = results[1].as_ref().unwrap();
        let (status, msg) = check(h1, "fabric_priority");
        assert_eq!(status, "fail", "{msg}");
        for want in [
            "the incast's bytes did not ride priority 3 (incast: tx: prio0 100%",
            "connected through RDMA-CM with no ToS of their own",
            "while the ring's did (ring: tx: prio3 100%",
            "NCCL_IB_TC of /etc/nccl.conf",
            "the RDMA-CM default of mlx5_0 is not the plan's: ToS 106 in RoCE v2 mode",
            "checks roce_tos, roce_mode",
        ] {
            assert!(msg.contains(want), "{bash}: {want}: {msg}");
        }
        let (status, msg) = check(results[0].as_ref().unwrap(), "fabric_priority");
        assert_eq!(status, "fail", "{msg}");
        assert!(
            msg.contains("what its incast senders sent arrived on another priority"),
            "{msg}"
        );
        let (status, msg) = check(results[2].as_ref().unwrap(), "fabric_priority");
        assert_eq!(status, "pass", "{msg}");
        assert!(msg.contains("incast: tx: prio3 100%"), "{msg}");
    });
}

/// firewalld with its default zone as shipped (ssh and dhcpv6-client only) refuses perftest's TCP
/// handshake: the host names its own firewall, the zone and the port with the command that opens
/// it, in fabric_firewall and in fabric_peer, never "is fabric.sh running there"; its peer's
/// message points at the firewall too. In the same ring (h0 → h1 → h2 → h0), h2's firewalld has
/// the ports open: it passes.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_host_firewall_is_named_with_its_ports_not_blamed_on_the_peer() {
    for_each_bash(|bash| {
        let (results, _) = cluster(
            bash,
            3,
            &[
                "--clone",
                "--firewalld",
                "h1",
                "--firewalld",
                "h2:open",
                "--window",
                "6",
                "--no-incast",
            ],
        );
        let h1 = results[1].as_ref().unwrap();
        let (status, msg) = check(h1, "fabric_firewall");
        assert_eq!(status, "warn", "{msg}");
        for want in [
            "zone public of ens1f0np0 does not open TCP 18515",
            "firewall-cmd --zone=public --add-port=18515/tcp",
        ] {
            assert!(msg.contains(want), "{want}: {msg}");
        }
        let (status, msg) = check(h1, "fabric_peer");
        assert_eq!(status, "fail", "{msg}");
        assert!(
            msg.contains("h0 (10.10.0.10) never connected within 6s: firewalld's zone public"),
            "{msg}"
        );
        assert!(!msg.contains("is fabric.sh running there"), "{msg}");
        let (_, msg) = check(results[0].as_ref().unwrap(), "fabric_peer");
        assert!(
            msg.contains("does a firewall there refuse the TCP port"),
            "{msg}"
        );
        // h2 opens the ports: it is reached by h1 and reaches h0.
        let h2 = results[2].as_ref().unwrap();
        assert_status(h2, 2, "fabric_firewall", "pass");
        assert_status(h2, 2, "fabric_peer", "pass");
    });
}

/// perftest's server takes the first client that connects, whoever it is: a host outside the
/// plan that takes h1's slot is named by its address from the server's report (the GID after
/// `remote address:`), and h1's fabric_peer fails for that, never counting it as h0 served.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_client_that_is_not_the_planned_peer_is_named_not_counted_as_served() {
    for_each_bash(|bash| {
        let (results, _) = cluster(
            bash,
            2,
            &[
                "--clone",
                "--intruder",
                "h1",
                "--window",
                "8",
                "--no-incast",
            ],
        );
        let h1 = results[1].as_ref().unwrap();
        let (status, msg) = check(h1, "fabric_peer");
        assert_eq!(status, "fail", "{msg}");
        assert!(
            msg.contains("the flow into mlx5_0 came from 10.10.0.91, not from h0 (10.10.0.10)"),
            "{msg}"
        );
        assert!(!msg.contains("served h0"), "{msg}");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn an_absent_peer_is_named_within_the_window_and_the_host_still_writes_its_result() {
    for_each_bash(|bash| {
        // Four hosts on one rail: the ring h0 → h1 → h2 → h3 → h0, one incast group (h0
        // receives from h1, h2, h3). h2 is absent: only its ring neighbours, h1 and h3, fail, and
        // only fabric_peer. Both wait out their ring step for h2 and come late to the incast,
        // where h0 waits for them (both steps' windows from its ring step), not failing them.
        let (results, elapsed) = cluster(bash, 4, &["--clone", "--absent", "h2", "--window", "6"]);
        assert!(results[2].is_none());
        // The 6 s window ended the wait, never the 600 s default (a bound a loaded machine
        // cannot reach; the message below names the window).
        assert!(elapsed < 300, "took {elapsed}s");
        let h1 = results[1].as_ref().unwrap();
        let (status, msg) = check(h1, "fabric_peer");
        assert_eq!(status, "fail", "{msg}");
        assert!(
            msg.contains("never reached h2 (10.10.0.12, TCP 18515) within 6s"),
            "{msg}"
        );
        let h3 = results[3].as_ref().unwrap();
        let (status, msg) = check(h3, "fabric_peer");
        assert_eq!(status, "fail", "{msg}");
        assert!(msg.contains("h2 (10.10.0.12) never connected"), "{msg}");
        assert_eq!(h3["status"], "fail");
        for h in [0, 1, 3] {
            let r = results[h].as_ref().unwrap();
            for c in r["checks"].as_array().unwrap() {
                if c["id"] != "fabric_peer" || h == 0 {
                    assert_ne!(c["status"], "fail", "h{h}: {c}");
                }
            }
        }
        let h0 = results[0].as_ref().unwrap();
        assert_ne!(h0["status"], "fail");
        let (status, msg) = check(h0, "fabric_congestion");
        assert_eq!(status, "warn", "{msg}");
        assert!(msg.contains("did not run with h2 not reached"), "{msg}");
        // h1 and h3 reached h0 in the incast, late as they were.
        for h in [1, 3] {
            let (_, msg) = check(results[h].as_ref().unwrap(), "fabric_congestion");
            assert!(!msg.contains("did not run"), "h{h}: {msg}");
        }
        assert!(port(h0)["incast"]["rx_prio3_bytes"].as_u64().unwrap() > 0);
    });
}

/// A client that fails after it connected (the driver refuses its QP the move to RTR) is not
/// tried again as if its server were not up: its flow ends at once with perftest's own words, its
/// server names the flow from it as failed, not absent, and nobody waits out the window.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_client_that_fails_after_connecting_says_perftests_words_before_the_window_ends() {
    for_each_bash(|bash| {
        let (results, elapsed) = cluster(bash, 2, &["--clone", "--rtr-fails", "h1", "--no-incast"]);
        // The window is 600 s: only a retried client waits that long.
        assert!(elapsed < 300, "took {elapsed}s");
        let h1 = results[1].as_ref().unwrap();
        let (status, msg) = check(h1, "fabric_peer");
        assert_eq!(status, "fail", "{msg}");
        assert!(
            msg.contains(
                "the flow to h0 (10.10.0.10, TCP 18515) failed after it connected: ib_write_bw said \"Failed to modify QP 18516 to RTR; Unable to Connect the HCA's through the link\""
            ),
            "{msg}"
        );
        assert!(!msg.contains("never"), "{msg}");
        let h0 = results[0].as_ref().unwrap();
        let (status, msg) = check(h0, "fabric_peer");
        assert_eq!(status, "fail", "{msg}");
        assert!(
            msg.contains(
                "the flow from h1 (10.10.0.11) failed after it connected: ib_write_bw said \"Failed to exchange data between server and clients\""
            ),
            "{msg}"
        );
        assert!(!msg.contains("never"), "{msg}");
        // h0's own flow to h1 ran.
        assert_status(h0, 0, "fabric_bw", "pass");
    });
}

/// A port whose device exposes none of the loss counters (mlx5 lists each only with a capability)
/// skips fabric_loss naming them: an absent counter is not a 0, never a "no loss" pass.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_port_without_loss_counters_skips_fabric_loss_naming_them() {
    for_each_bash(|bash| {
        let (results, _) = cluster(
            bash,
            2,
            &["--clone", "--no-loss-counters", "h0", "--no-incast"],
        );
        let h0 = results[0].as_ref().unwrap();
        let (status, msg) = check(h0, "fabric_loss");
        assert_eq!(status, "skip", "{msg}");
        for name in [
            "out_of_sequence",
            "packet_seq_err",
            "rx_discards_phy",
            "tx_discards_phy",
        ] {
            assert!(msg.contains(name), "{msg}");
        }
        assert!(msg.contains("out_of_seq_cnt capability"), "{msg}");
        // The other checks still hold, and the peer reads its own counters.
        assert_status(h0, 0, "fabric_bw", "pass");
        assert_status(results[1].as_ref().unwrap(), 1, "fabric_loss", "pass");
    });
}

/// A flow longer than tool_timeout runs to its end: the client has its own limit (fabric_seconds
/// and a margin), as `fabric_seconds = 70` needs beside the 60 s default. The test shrinks the
/// product's limit, not the machine: a 6 s flow takes at least 7 s, past a 5 s tool_timeout.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_fabric_test_longer_than_the_tool_timeout_passes() {
    for_each_bash(|bash| {
        let (results, _) = cluster(
            bash,
            2,
            &[
                "--clone",
                "--seconds",
                "6",
                "--tool-timeout",
                "5",
                "--no-incast",
            ],
        );
        for (h, r) in results.iter().enumerate() {
            let r = r.as_ref().unwrap();
            for id in ["fabric_peer", "fabric_bw", "fabric_priority", "fabric_loss"] {
                assert_status(r, h, id, "pass");
            }
            let timeouts: Vec<&Value> = r["checks"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["id"] == "tool_timeout")
                .collect();
            assert!(timeouts.is_empty(), "h{h}: {timeouts:?}");
        }
    });
}

/// A fabric.sh stopped while its flows run (a play's timeout, an operator's kill) ends them: no
/// server is left holding the TCP port that the next run binds, and the result says it stopped.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_stopped_fabric_run_leaves_no_server_listening() {
    for_each_bash(|bash| {
        let (results, _, dir) = cluster_in(
            bash,
            2,
            &["--clone", "--absent", "h1", "--kill", "h0", "--no-incast"],
        );
        let left = std::fs::read_to_string(dir.path().join("c/h0.left")).unwrap();
        assert_eq!(left, "", "left behind by the stopped run");
        let h0 = results[0].as_ref().unwrap();
        assert_eq!(h0["status"], "fail");
        let (status, msg) = check(h0, "script_error");
        assert_eq!(status, "fail", "{msg}");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn ecn_off_on_a_receiver_fails_fabric_congestion() {
    for_each_bash(|bash| {
        let (results, _) = cluster(bash, 3, &["--ecn-off", "h0"]);
        let h0 = results[0].as_ref().unwrap();
        let (status, msg) = check(h0, "fabric_congestion");
        assert_eq!(status, "fail", "{msg}");
        assert!(msg.contains("CNPs sent +0"), "{msg}");
        // The switch still marked the packets: the receiver counted them and sent no CNP.
        assert!(
            port(h0)["incast"]["np_ecn_marked_roce_packets"]
                .as_u64()
                .unwrap()
                > 0
        );
        // The marks prove the congestion: a failure whatever the overlap.
        assert!(
            msg.contains("h1, h2 sent (is ECN on for priority 3 here, ecn/roce_np/enable/3?)"),
            "{msg}"
        );
        // The senders cannot time the other's flow, but the switch paused them: congestion.
        let (status, msg) = check(results[1].as_ref().unwrap(), "fabric_congestion");
        assert_eq!(status, "fail", "{msg}");
        assert!(
            msg.contains("no CNP handled while sharing h0, though the switch paused this port"),
            "{msg}"
        );
        // The ring step had no congestion: everything else passes.
        assert_status(h0, 0, "fabric_bw", "pass");
        assert_status(h0, 0, "fabric_loss", "pass");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_slow_link_fails_fabric_bw_with_both_rates() {
    for_each_bash(|bash| {
        let (results, _, dir) = cluster_in(bash, 3, &["--slow", "h1:100", "--no-incast"]);
        // h0 sends to h1 and h1 to h2: both flows cross h1's slow path.
        for h in [0, 1] {
            let r = results[h].as_ref().unwrap();
            let (status, msg) = check(r, "fabric_bw");
            assert_eq!(status, "fail", "h{h}");
            assert!(
                msg.contains(
                    "97.00 Gb/s measured, below the 360.00 Gb/s expected (90% of the 400 Gb/s link)"
                ),
                "{msg}"
            );
        }
        assert_status(results[2].as_ref().unwrap(), 2, "fabric_bw", "pass");
        // ingest: the matrix, the failed hosts counted, the failing link's ends and switch ports.
        let c = dir.path().join("c");
        let plan = c.join("plan.json").display().to_string();
        let (res, applied) = (c.join("res"), c.join("applied"));
        let (res, applied) = (res.display().to_string(), applied.display().to_string());
        let text = crate::common::roce_gen(&c, &["ingest", &res, &applied, "--plan", &plan]);
        assert_eq!(text.code, 1, "{}", text.transcript());
        let out = &text.stdout;
        assert!(
            out.contains(
                "rail 0  h0 mlx5_0: ❌ 97.00 Gb/s (24% of 400 Gb/s)  priority ✅  loss ✅"
            ),
            "{out}"
        );
        assert!(
            out.contains("h0 mlx5_0 (switch port: plan leaf-1 Eth1/1, LLDP not seen); sends to h1"),
            "{out}"
        );
        assert!(
            out.contains("→ h1 mlx5_0 (switch port: plan leaf-1 Eth1/2, LLDP not seen)"),
            "{out}"
        );
        assert!(out.contains("rail 0  h2 mlx5_0: ✅ 388.00 Gb/s"), "{out}");
        assert!(out.contains("2 failed"), "{out}");
        assert!(
            out.contains("next: run fabric on h0 (failed), h1 (failed)"),
            "{out}"
        );
        let md = crate::common::roce_gen(
            &c,
            &[
                "ingest", &res, &applied, "--plan", &plan, "--format", "markdown",
            ],
        );
        assert!(
            md.stdout.contains(
                "| 0 | h0 | mlx5\\_0 | ❌ | 97.00 Gb/s (24% of 400 Gb/s) | ✅ | ✅ | – | leaf-1 Eth1/1 / – | h1 |"
            ),
            "{}",
            md.stdout
        );
        let json = crate::common::roce_gen(
            &c,
            &[
                "ingest", &res, &applied, "--plan", &plan, "--format", "json",
            ],
        );
        let report: Value = serde_json::from_str(&json.stdout).unwrap();
        let h0 = &report["hosts"][0];
        assert_eq!(h0["state"], "failed");
        assert_eq!(h0["fabric"][0]["rate"], "97.00 Gb/s");
        assert_eq!(h0["fabric"][0]["plan_switch"], "leaf-1 Eth1/1");
        assert_eq!(h0["fabric"][0]["to"], "h1");
        // The matrix names the failing link's other end from the plan and h1's own result.
        let link = &report["fabric"]["links"][0];
        assert_eq!(link["from"]["host"], "h0");
        assert_eq!(link["to"]["host"], "h1");
        assert_eq!(link["to"]["plan_switch"], "leaf-1 Eth1/2");
        assert_eq!(link["failed"][0], "fabric_bw");
    });
}

#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn without_perftest_precheck_warns_with_the_hosts_install_command_and_fabric_fails() {
    for_each_bash(|bash| {
        // An inbox Ubuntu host: perftest comes from the distribution, by hand, so it is absent.
        let inbox = FakeHost::inbox().bash(bash).build();
        let pre = inbox.run("precheck.sh", &[]);
        assert_eq!(pre.status("fabric_tool", ""), "warn", "{bash}");
        let msg = pre.message("fabric_tool", "");
        assert!(
            msg.contains("install the package perftest (apt install perftest;"),
            "{msg}"
        );
        // fabric.sh fails at once (no traffic, no wait for peers) and still writes its result.
        let fab = inbox.run("fabric.sh", &[]);
        assert_eq!(fab.code, 1, "{}", fab.stdout);
        assert_eq!(fab.result["phase"], "fabric");
        assert_eq!(fab.status("fabric_tool", ""), "fail");
        assert!(
            fab.message("fabric_tool", "").contains(
                "apt install perftest; MLNX_OFED and DOCA ship it too), then run fabric.sh again"
            ),
            "{}",
            fab.message("fabric_tool", "")
        );
        // MLNX_OFED installs it: a new OFED host (RHEL 9) passes, and apply says nothing of it.
        let ofed = FakeHost::ofed().bash(bash).build();
        assert_eq!(
            ofed.run("precheck.sh", &[]).status("fabric_tool", ""),
            "pass"
        );
        let apply = ofed.run("apply.sh", &["--no-persist"]);
        assert!(
            !apply
                .statuses()
                .iter()
                .any(|s| s.starts_with("fabric_tool:")),
            "{:?}",
            apply.statuses()
        );
    });
}

/// Three simulated 8-GPU servers, port 0 of each planned with GPU 0: h0's flows, ring and incast,
/// server and client, move the memory of exactly that GPU (perftest's --use_cuda_bus_id, and
/// perftest's own lines show the GPU buffer); h1, whose peer-memory module an upgrade dropped, and
/// h2, whose perftest is built without CUDA, run from host memory and warn `fabric_memory` with
/// the cause, while their traffic still passes.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn flows_move_the_planned_gpus_memory_and_a_host_that_cannot_warns_with_the_cause() {
    for_each_bash(|bash| {
        let (results, _, dir) = cluster_in(
            bash,
            3,
            &["--clone", "--gpu", "--no-peermem", "h1", "--no-cuda", "h2"],
        );
        for h in 0..3 {
            let log =
                std::fs::read_to_string(dir.path().join(format!("c/h{h}/root/stub.log"))).unwrap();
            let flows: Vec<Value> = log
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .filter(|v| v["tool"] == "ib_write_bw")
                .filter(|v| v["argv"].as_array().unwrap().iter().any(|a| a == "-p"))
                .collect();
            assert!(flows.len() >= 2, "h{h}: {log}");
            for f in &flows {
                let argv: Vec<&str> = f["argv"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|a| a.as_str().unwrap())
                    .collect();
                let gpu = argv.contains(&"--use_cuda_bus_id=0000:18:00.0");
                assert_eq!(gpu, h == 0, "{bash}: h{h}: {argv:?}");
                assert!(!argv.iter().any(|a| a.starts_with("--use_cuda=")));
            }
        }
        let r0 = results[0].as_ref().unwrap();
        let (status, message) = check(r0, "fabric_memory");
        assert_eq!(status, "pass", "{bash}: {message}");
        assert!(
            message.contains("4 flows moved the memory of GPU 0 (0000:18:00.0) on this end"),
            "{bash}: {message}"
        );
        assert_eq!(port(r0)["memory"], "gpu");
        for (h, cause) in [
            (
                1,
                "GPU memory cannot be registered for RDMA here, and NCCL will not use GPUDirect RDMA either: no peer-memory module",
            ),
            (
                2,
                "this host's perftest is built without CUDA (its usage lists no --use_cuda)",
            ),
        ] {
            let r = results[h].as_ref().unwrap();
            let (status, message) = check(r, "fabric_memory");
            assert_eq!(status, "warn", "{bash}: h{h}: {message}");
            assert!(message.contains(cause), "{bash}: h{h}: {message}");
            assert!(message.contains("moved host memory, not the memory of GPU 0 (0000:18:00.0)"));
            assert_eq!(port(r)["memory"], "host");
            for id in ["fabric_peer", "fabric_bw", "fabric_priority", "fabric_loss"] {
                assert_status(r, h, id, "pass");
            }
        }
    });
}

/// The NCCL self-test on three simulated GPU servers of two planned ports each (GPU 0 and GPU 1),
/// with the plan's nccl_min_busbw of 40 GB/s and gpu_direct = require: on h0 NCCL says GPU Direct
/// RDMA Enabled for both HCAs and its bus bandwidth passes the plan's mark; on h1, whose
/// peer-memory module is gone, NCCL's own log says Disabled for each HCA, nccl_gdr fails naming
/// them and why, the staged bus bandwidth fails the mark, and ingest counts h1 failed; h2 has no nccl-tests: both checks skip with how to get it. On a
/// fabric whose rails cannot reach each other, nccl_gdr still holds and nccl_busbw is a skip
/// saying so, never a failure.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_nccl_self_test_reports_gpudirect_per_hca_and_judges_the_bus_bandwidth() {
    for_each_bash(|bash| {
        let (results, _, dir) = cluster_in(
            bash,
            3,
            &[
                "--clone",
                "--gpu",
                "--ports",
                "2",
                "--nccl-min-busbw",
                "40",
                "--gpu-direct",
                "require",
                "--no-peermem",
                "h1",
                "--no-nccl-tests",
                "h2",
            ],
        );
        let checks = |h: usize, id: &str| -> Vec<(String, String, String)> {
            results[h].as_ref().unwrap()["checks"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["id"] == id)
                .map(|c| {
                    let s = |k: &str| c[k].as_str().unwrap_or_default().to_string();
                    (s("nic"), s("status"), s("message"))
                })
                .collect()
        };
        // h0: NCCL's own word per planned HCA, and the plan's mark.
        let gdr = checks(0, "nccl_gdr");
        assert_eq!(gdr.len(), 2, "{bash}: {gdr:?}");
        for (nic, status, message) in &gdr {
            assert_eq!(status, "pass", "{bash}: {message}");
            assert_eq!(
                message,
                &format!("NCCL 2.23.4 says GPU Direct RDMA Enabled for HCA '{nic}'")
            );
        }
        let (_, status, message) = &checks(0, "nccl_busbw")[0];
        assert_eq!(status, "pass", "{bash}: {message}");
        assert!(
            message.contains("46.32 GB/s bus bandwidth at 1073741824 bytes, at least 40 GB/s (the plan's nccl_min_busbw)"),
            "{bash}: {message}"
        );
        let nccl = &results[0].as_ref().unwrap()["facts"]["nccl"];
        assert_eq!(nccl["version"], "2.23.4");
        assert_eq!(nccl["hcas"], "mlx5_0 mlx5_1");
        assert_eq!(nccl["gdr"]["mlx5_1"], true);
        assert_eq!(nccl["busbw"]["1073741824"], 46.32);
        // The command NCCL ran: the two planned GPUs, in PCI order, through the network only.
        let log = std::fs::read_to_string(dir.path().join("c/h0/root/stub.log")).unwrap();
        assert!(
            log.contains(
                r#"{"tool":"all_reduce_perf","argv":["-b","8M","-e","1G","-f","2","-g","2"]}"#
            ),
            "{bash}: {log}"
        );

        // h1: NCCL's Disabled per HCA, with the cause; the staged bandwidth below the mark.
        for (nic, status, message) in checks(1, "nccl_gdr") {
            assert_eq!(status, "fail", "{bash}: {message}");
            assert!(
                message.starts_with(&format!(
                    "NCCL 2.23.4 says GPU Direct RDMA Disabled for HCA '{nic}': it stages GPU memory through host memory (no peer-memory module"
                )),
                "{bash}: {message}"
            );
        }
        let (_, status, message) = &checks(1, "nccl_busbw")[0];
        assert_eq!(status, "fail", "{bash}: {message}");
        assert!(
            message.contains("below 40 GB/s (the plan's nccl_min_busbw)"),
            "{message}"
        );

        // h2: no nccl-tests.
        for id in ["nccl_gdr", "nccl_busbw"] {
            let (_, status, message) = &checks(2, id)[0];
            assert_eq!(status, "skip", "{bash}: {id}");
            assert!(
                message
                    .contains("nccl-tests' all_reduce_perf is not on this host's PATH: build it"),
                "{message}"
            );
        }
        assert_eq!(results[2].as_ref().unwrap()["status"], "pass");

        // Ingest shows the memory of each port's flows and each host's NCCL result.
        let c = dir.path().join("c");
        let ingest = |format: &str| {
            crate::common::roce_gen(
                &c,
                &[
                    "ingest",
                    "res",
                    "applied",
                    "--plan",
                    "plan.json",
                    "--format",
                    format,
                ],
            )
            .stdout
        };
        let text = ingest("text");
        for line in [
            "NCCL self-test (host: GPUDirect per HCA as NCCL says, bus bandwidth at the largest size):",
            "  h0: GPUDirect ✅ mlx5_0, ✅ mlx5_1  busbw ✅ 46.32 GB/s (>= 40 GB/s)",
            "  h1: GPUDirect ❌ mlx5_0 Disabled, ❌ mlx5_1 Disabled  busbw ❌ 27.39 GB/s (>= 40 GB/s)",
            "  h2: GPUDirect –  busbw – not measured",
        ] {
            assert!(
                text.lines().any(|l| l == line),
                "{bash}: no {line:?} in:\n{text}"
            );
        }
        for (host, memory) in [
            ("h0", "memory ✅ GPU 0 (0000:18:00.0)"),
            ("h1", "memory ⚠ host memory"),
        ] {
            assert!(
                text.lines()
                    .any(|l| l.starts_with(&format!("  rail 0  {host} mlx5_0: "))
                        && l.ends_with(memory)),
                "{bash}: {host} {memory:?} in:\n{text}"
            );
        }
        let json: Value = serde_json::from_str(&ingest("json")).unwrap();
        let h1 = json["hosts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["host"] == "h1")
            .unwrap();
        assert_eq!(
            h1["nccl"]["gdr"][0],
            serde_json::json!({"nic": "mlx5_0", "gdr": "Disabled", "status": "fail"})
        );
        assert_eq!(h1["nccl"]["busbw_check"], "fail");
        // The verdict counts it: h1 is failed, nccl_gdr among its failures.
        assert_eq!(
            (&h1["state"], &h1["ok"]),
            (&Value::from("failed"), &Value::from(false))
        );
        assert!(
            h1["failures"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["id"] == "nccl_gdr"),
            "{bash}: {h1:#}"
        );
        let cell = &json["fabric"]["rails"][0]["cells"][0][0];
        assert_eq!(
            (&cell["memory"], &cell["memory_used"]),
            (&Value::from("pass"), &Value::from("GPU 0 (0000:18:00.0)"))
        );
        let html = ingest("html");
        for needle in [
            "<span class=\"m-ok\">GPU mem ✓</span>",
            "<span class=\"m-warn\">host mem ⚠</span>",
            "GPUDirect ✅ mlx5_0, ✅ mlx5_1  busbw ✅ 46.32 GB/s (&gt;= 40 GB/s)",
        ] {
            assert!(html.contains(needle), "{bash}: no {needle:?} in the page");
        }
        crate::ingest::assert_fits_1024(&c, &html);
        crate::ingest::assert_prints(&c, &html, ("A4", 595.28), "ingest-report-nccl", &[]);

        // Rails that cannot reach each other.
        let (results, _) = cluster(
            bash,
            2,
            &[
                "--clone",
                "--gpu",
                "--ports",
                "2",
                "--rails-isolated",
                "--no-incast",
            ],
        );
        let r = results[0].as_ref().unwrap();
        assert_eq!(r["status"], "pass", "{bash}: {r:#}");
        let (status, message) = check(r, "nccl_busbw");
        assert_eq!(status, "skip", "{bash}: {message}");
        assert!(
            message.contains("inside one host the self-test crosses rails, which a rail-isolated fabric does not route"),
            "{message}"
        );
        assert_eq!(check(r, "nccl_gdr").0, "pass");
    });
}
