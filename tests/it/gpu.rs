//! The GPU path (plan format 1.3) on the simulated 8-GPU server (tests/host/fixtures/pci/
//! hgx-8gpu.json, written by `fakehost.sh pcitree`: the sysfs nesting and configuration space of
//! a real HGX tree): node-a's two ports sit below the PCIe switches of GPU 0 and GPU 1. Changes
//! to the tree go through the real pciutils (`setpci` on the simulated configuration space).
//! Each test runs under every bash of `for_each_bash`.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::fakehost::{FakeHost, for_each_bash};

/// The GPU path's checks.
const GPU_CHECKS: [&str; 6] = [
    "gpu_direct",
    "gpu_pair",
    "pcie_acs",
    "pcie_link",
    "pcie_mrrs",
    "iommu",
];

/// `setpci` of the real pciutils on the host's simulated tree.
fn setpci(h: &FakeHost, args: &[&str]) {
    let out = Command::new("setpci")
        .args(["-A", "linux-sysfs", "-O"])
        .arg(format!("sysfs.path={}", h.fake("sys/bus/pci").display()))
        .args(args)
        .output()
        .expect("setpci (pciutils; .ci/run installs it)");
    assert!(
        out.status.success(),
        "setpci {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Writes a sysfs attribute of PCI function BDF.
fn attr(h: &FakeHost, bdf: &str, name: &str, value: &str) {
    let dir = std::fs::canonicalize(h.fake(&format!("sys/bus/pci/devices/{bdf}"))).unwrap();
    std::fs::write(dir.join(name), format!("{value}\n")).unwrap();
}

fn contains_all(msg: &str, wants: &[&str], ctx: &str) {
    for want in wants {
        assert!(msg.contains(want), "{ctx}: {want}: {msg}");
    }
}

/// A healthy host passes every GPU check with its pairs in `facts.gpu_path`: each port PIX with
/// its GPU through the switch's two downstream ports, NCCL 2.23.4 on nvidia_peermem's path, the
/// IOMMU in identity mode. The same host under a plan that names no GPU runs no GPU check and has
/// no GPU fact.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_healthy_pix_host_passes_with_its_pairs_in_the_facts_and_a_plan_without_gpus_runs_none() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed()
            .bash(bash)
            .gpu_server(&["--acs", "off"])
            .build();
        let pre = h.run("precheck.sh", &[]);
        for nic in ["mlx5_0", "mlx5_1"] {
            pre.expect(&["gpu_pair", "pcie_acs", "pcie_link"], nic, "pass", bash);
        }
        pre.expect(&["gpu_direct", "iommu"], "", "pass", bash);
        contains_all(
            &pre.message("gpu_direct", ""),
            &[
                "NCCL 2.23.4, the plan's nccl_version",
                "/sys/module/nvidia_peermem/version",
            ],
            bash,
        );
        contains_all(
            &pre.message("gpu_pair", "mlx5_0"),
            &[
                "GPU 0 (0000:18:00.0) and mlx5_0 (0000:19:00.0): PIX through 0000:17:00.0 0000:17:01.0",
                "NUMA node 0 and 0",
            ],
            bash,
        );
        let gp = &pre.result["facts"]["gpu_path"];
        assert_eq!(gp["nccl_version"], "2.23.4", "{bash}: {gp:#}");
        assert_eq!(gp["route"], "peermem", "{bash}");
        assert_eq!(
            (&gp["driver"], &gp["peermem"]),
            (&json!("550.54.15"), &json!("550.54.15")),
            "{bash}"
        );
        let pairs = gp["pairs"].as_array().unwrap();
        assert_eq!(pairs.len(), 2, "{bash}: {gp:#}");
        assert_eq!(pairs[1]["gpu_pci"], "0000:2a:00.0");
        assert_eq!(pairs[1]["nic_pci"], "0000:29:00.0");
        assert_eq!(pairs[1]["relation"], "PIX");
        assert_eq!(
            pairs[0]["bridges"],
            json!([{"pci": "0000:17:00.0", "acs_ctl": 0}, {"pci": "0000:17:01.0", "acs_ctl": 0}])
        );
        assert_eq!(pairs[0]["gpu_link"]["width"], 16);
        assert_eq!(pairs[0]["mrrs"], 512);

        h.replan(|p| {
            for n in p["hosts"][0]["nics"].as_array_mut().unwrap() {
                n.as_object_mut().unwrap().remove("gpu");
            }
        });
        let none = h.run("precheck.sh", &[]);
        let ids: Vec<&str> = none.result["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["id"].as_str())
            .filter(|id| GPU_CHECKS.contains(id))
            .collect();
        assert!(ids.is_empty(), "{bash}: {ids:?}");
        assert!(none.result["facts"]["gpu_path"].is_null(), "{bash}");
    });
}

/// ACS as Linux leaves it with an IOMMU on one switch port only (request and completion redirect
/// on the downstream port above GPU 0, set with the real setpci): `pcie_acs` of mlx5_0 names
/// exactly that bridge and its bits, mlx5_1's passes. Under `gpu_direct = require` the finding
/// fails, and ingest counts the host not ready.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn acs_on_one_switch_port_is_named_and_under_require_the_host_is_not_ready() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed()
            .bash(bash)
            .gpu_server(&["--acs", "off"])
            .build();
        setpci(&h, &["-s", "0000:17:00.0", "ECAP_ACS+6.w=001d"]);
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.status("pcie_acs", "mlx5_0"), "warn", "{bash}");
        let msg = pre.message("pcie_acs", "mlx5_0");
        contains_all(
            &msg,
            &[
                "between GPU 0 (0000:18:00.0) and mlx5_0: 0000:17:00.0 (ReqRedir+ CmpltRedir+)",
                "setpci -s BRIDGE ECAP_ACS+6.w=0000:002c",
            ],
            bash,
        );
        assert!(!msg.contains("0000:17:01.0"), "{bash}: {msg}");
        assert_eq!(pre.status("pcie_acs", "mlx5_1"), "pass", "{bash}");

        // The boot unit of a plan that changes no PCIe setting has no CAP_SYS_ADMIN, so the
        // kernel shows it 64 bytes of configuration space (driverfs does as pci_read_config):
        // its run says the ACS control is unknown, never that no bridge redirects.
        let apply = h.run("apply.sh", &[]);
        assert_eq!(apply.status("pcie_acs", "mlx5_0"), "warn", "{bash}");
        let boot = boot_run(&h, bash);
        let acs = boot_check(&boot, "pcie_acs", "mlx5_0");
        assert_eq!(acs["status"], "skip", "{bash}: {acs:#}");
        assert!(
            acs["message"]
                .as_str()
                .unwrap()
                .contains("reads only its first 64 bytes here"),
            "{bash}: {acs:#}"
        );

        h.replan(|p| p["cluster"]["gpu_direct"] = json!("require"));
        let req = h.run("precheck.sh", &[]);
        assert_eq!(req.status("pcie_acs", "mlx5_0"), "fail", "{bash}");
        assert_eq!(req.status("pcie_acs", "mlx5_1"), "pass", "{bash}");
        let dir = h.results_folder(&[("node-a.precheck.json", &req)]);
        let a = crate::fakehost::ingested_host(dir.path(), "node-a");
        assert_eq!(a["ok"], false, "{bash}: {a:#}");
    });
}

/// Pairs the plan draws against the tree: mlx5_0 with GPU 4 (the other socket: SYS, named with
/// both addresses) and mlx5_1 with GPU 0, whose own switch holds mlx5_0 (NCCL pairs GPU 0 with
/// mlx5_0, not mlx5_1). mlx5_1 also runs x8 of its x16 and reads 128 bytes a request against the
/// plan's pcie_mrrs 512; NCCL 2.21.5 with only nvidia_peermem runs without GPUDirect RDMA; the
/// IOMMU translates the devices' DMA (the kernel's default domain, DMA-FQ).
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn a_sys_pair_a_port_nccl_will_not_use_an_x8_link_and_a_low_mrrs_are_findings() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed()
            .bash(bash)
            .gpu_server(&["--acs", "off", "--iommu-type", "DMA-FQ"])
            .plan(|p| {
                let nics = &mut p["hosts"][0]["nics"];
                nics[0]["gpu"] = json!("4");
                nics[1]["gpu"] = json!("0000:18:00.0");
                p["cluster"]["pcie_mrrs"] = json!(512);
                p["cluster"]["nccl_version"] = json!("2.21.5");
            })
            .build();
        attr(&h, "0000:29:00.0", "current_link_width", "8");
        // Device Control's Max_Read_Request_Size (bits 14:12) to 0: 128 bytes.
        setpci(&h, &["-s", "0000:29:00.0", "CAP_EXP+8.w=0000:7000"]);
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.status("gpu_pair", "mlx5_0"), "warn", "{bash}");
        contains_all(
            &pre.message("gpu_pair", "mlx5_0"),
            &[
                "GPU 4 (0000:9a:00.0) and mlx5_0 are SYS, farther than gpu_nic_distance PXB allows",
                "across NUMA nodes",
                "and mlx5_0 (0000:19:00.0): SYS",
            ],
            bash,
        );
        contains_all(
            &pre.message("gpu_pair", "mlx5_1"),
            &["will use mlx5_0 (PIX) for GPU 0000:18:00.0, not mlx5_1 (NODE) as planned"],
            bash,
        );
        assert_eq!(pre.status("pcie_link", "mlx5_1"), "warn", "{bash}");
        contains_all(
            &pre.message("pcie_link", "mlx5_1"),
            &["mlx5_1 (0000:29:00.0) runs x8 of its x16"],
            bash,
        );
        assert_eq!(pre.status("pcie_mrrs", "mlx5_1"), "warn", "{bash}");
        contains_all(
            &pre.message("pcie_mrrs", "mlx5_1"),
            &[
                "reads at most 128 bytes a request",
                "below the plan's pcie_mrrs 512",
            ],
            bash,
        );
        assert_eq!(pre.status("pcie_mrrs", "mlx5_0"), "pass", "{bash}");
        assert_eq!(pre.status("iommu", ""), "warn", "{bash}");
        contains_all(
            &pre.message("iommu", ""),
            &["DMA-FQ", "boot with iommu=pt"],
            bash,
        );
        assert_eq!(pre.status("gpu_direct", ""), "warn", "{bash}");
        contains_all(
            &pre.message("gpu_direct", ""),
            &[
                "NCCL 2.21.5",
                "will run without GPUDirect RDMA",
                "the only ones NCCL before 2.23.4 looks for",
            ],
            bash,
        );
    });
}

/// Without the plan's nccl_version, the host's NCCL decides which peer-memory paths count: its
/// library as the linker cache names it (glibc's own ldconfig built the cache over the simulated
/// root and answers `ldconfig -p` there). NCCL 2.21.5 with only nvidia_peermem loaded warns
/// (before 2.23.4 NCCL looks only for the memory_peers paths), the upgrade to 2.23.4 passes; a
/// peer-memory module of another driver version is named with how to reload it; and with the
/// module gone after an upgrade NCCL runs without GPUDirect RDMA and the check says how to load
/// it.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_hosts_nccl_picks_the_peer_memory_paths_and_without_the_module_nccl_runs_without_gpu_direct()
{
    for_each_bash(|bash| {
        let h = FakeHost::ofed()
            .bash(bash)
            .gpu_server(&["--acs", "off"])
            .plan(|p| {
                p["cluster"].as_object_mut().unwrap().remove("nccl_version");
            })
            .build();
        let nccl = |version: &str| {
            let (code, _, err) = h.host_step("nccl", &[version]);
            assert_eq!(code, 0, "fakehost nccl {version}: {err}");
        };
        nccl("2.21.5");
        let old = h.run("precheck.sh", &[]);
        assert_eq!(old.status("gpu_direct", ""), "warn", "{bash}");
        contains_all(
            &old.message("gpu_direct", ""),
            &[
                "NCCL 2.21.5, this host's /usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5, will run without GPUDirect RDMA",
                "nvidia_peermem 550.54.15 is loaded but registers no /sys/kernel/mm/memory_peers path, the only ones NCCL before 2.23.4 looks for",
            ],
            bash,
        );
        assert_eq!(old.result["facts"]["gpu_path"]["nccl_version"], "2.21.5");

        nccl("2.23.4");
        let new = h.run("precheck.sh", &[]);
        assert_eq!(new.status("gpu_direct", ""), "pass", "{bash}");
        contains_all(
            &new.message("gpu_direct", ""),
            &[
                "NCCL 2.23.4, this host's /usr/lib/x86_64-linux-gnu/libnccl.so.2.23.4",
                "/sys/module/nvidia_peermem/version",
            ],
            bash,
        );

        // A driver upgrade that left the old peer-memory module loaded.
        std::fs::write(h.fake("sys/module/nvidia_peermem/version"), "535.104.05\n").unwrap();
        let stale = h.run("precheck.sh", &[]);
        assert_eq!(stale.status("gpu_direct", ""), "warn", "{bash}");
        contains_all(
            &stale.message("gpu_direct", ""),
            &[
                "nvidia_peermem 535.104.05 is not of the GPU driver 550.54.15",
                "modprobe -r nvidia_peermem; modprobe nvidia_peermem",
            ],
            bash,
        );

        std::fs::remove_dir_all(h.fake("sys/module/nvidia_peermem")).unwrap();
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.status("gpu_direct", ""), "warn", "{bash}");
        contains_all(
            &pre.message("gpu_direct", ""),
            &[
                "will run without GPUDirect RDMA",
                "no peer-memory module (modprobe nvidia_peermem",
                "the GPU driver is not the open kernel module",
            ],
            bash,
        );
        assert!(Path::new(&h.fake("sys/module/nvidia/version")).exists());
    });
}

/// The simulated GPU server itself, checked by the real pciutils: `lspci` reads the tree the
/// fixture describes (each GPU below the switch of its NIC), the ACS, Device Control and link
/// registers as written, `setpci` writes through to exactly the bytes it names, on the plain
/// tree and through driverfs (tests/host/pcitree.sh).
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn the_simulated_gpu_server_reads_right_with_the_real_pciutils() {
    let out = Command::new("bash")
        .arg(crate::fakehost::repo().join("tests/host/pcitree.sh"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A boot: systemd's stand-in starts the enabled units and runs their jobs (the boot unit runs
/// the installed `apply.sh --boot` under its capability bounding set); its result.
fn boot_run(h: &FakeHost, bash: &str) -> Value {
    let pid1 = crate::fakehost::repo().join("tests/host/stubs/pid1");
    for verb in ["boot", "run-jobs"] {
        let (code, _, err) = h.run_cmd(&[&pid1.display().to_string(), verb]);
        assert_eq!(code, 0, "{bash}: pid1 {verb}: {err}");
    }
    serde_json::from_str(
        &std::fs::read_to_string(h.fake("var/lib/roce-gen/lab/results/node-a.apply.json"))
            .unwrap_or_else(|e| panic!("{bash}: no boot result: {e}")),
    )
    .unwrap()
}

/// The check ID of NIC in a result.
fn boot_check<'a>(result: &'a Value, id: &str, nic: &str) -> &'a Value {
    result["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == id && c["nic"] == nic)
        .unwrap_or_else(|| panic!("no {id} of {nic}: {result:#}"))
}

/// Every configuration space file of the host's PCI tree: path → bytes.
fn config_space(h: &FakeHost) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut all = std::collections::BTreeMap::new();
    for e in walkdir::WalkDir::new(h.fake("sys/devices"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name() == "config" && e.file_type().is_file())
    {
        let rel = e.path().strip_prefix(h.fake("sys/devices")).unwrap();
        let bdf = rel.parent().unwrap().file_name().unwrap().to_string_lossy();
        all.insert(bdf.to_string(), std::fs::read(e.path()).unwrap());
    }
    all
}

/// The functions whose configuration space differs between two reads, and at which offsets.
fn changed(
    a: &std::collections::BTreeMap<String, Vec<u8>>,
    b: &std::collections::BTreeMap<String, Vec<u8>>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (bdf, x) in a {
        let y = &b[bdf];
        let offs: Vec<String> = (0..x.len())
            .filter(|&i| x[i] != y[i])
            .map(|i| format!("{i:#x}"))
            .collect();
        if !offs.is_empty() {
            out.push(format!("{bdf} {}", offs.join(" ")));
        }
    }
    out
}

/// `pcie_acs = disable` and `pcie_mrrs`: on a tree with ACS on everywhere (as Linux leaves it with
/// an IOMMU), precheck says apply will change them and the dry run what it would write, changing
/// nothing; apply clears the redirect bits of exactly the two downstream ports between each pair
/// (not the root ports, not the other six pairs' bridges) and raises the ports' MRRS, every
/// other byte of configuration space unchanged; a second apply changes nothing. The kernel turns
/// ACS on again at boot: the boot unit's run (systemd's stand-in, under the unit's capability
/// bounding set) clears it again. Rollback writes back the bytes apply changed.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn pcie_acs_disable_clears_exactly_the_planned_bridges_again_at_boot_and_rollback_restores_them() {
    for_each_bash(|bash| {
        let h = FakeHost::ofed()
            .bash(bash)
            .gpu_server(&["--acs", "on"])
            .plan(|p| {
                p["cluster"]["pcie_acs"] = json!("disable");
                p["cluster"]["pcie_mrrs"] = json!(4096);
            })
            .build();
        let before = config_space(&h);
        let pre = h.run("precheck.sh", &[]);
        assert_eq!(pre.status("pcie_acs", "mlx5_0"), "warn", "{bash}");
        assert!(
            pre.message("pcie_acs", "mlx5_0")
                .contains("apply clears those bits")
        );
        assert_eq!(pre.status("pcie_mrrs", "mlx5_1"), "warn", "{bash}");
        let dry = h.run("apply.sh", &["--dry-run"]);
        contains_all(
            &dry.message("pcie_acs", "mlx5_0"),
            &[
                "dry run: would clear",
                "0000:17:00.0 0x001d → 0x0011",
                "0000:17:01.0 0x001d → 0x0011",
            ],
            bash,
        );
        assert!(
            changed(&before, &config_space(&h)).is_empty(),
            "{bash}: a dry run wrote"
        );

        let apply = h.run("apply.sh", &[]);
        for nic in ["mlx5_0", "mlx5_1"] {
            apply.expect(&["pcie_acs", "pcie_mrrs"], nic, "changed", bash);
        }
        let after = config_space(&h);
        // ACS at 0x100 (control at +6) on the downstream ports; Device Control at 0x48 (the PCI
        // Express capability at 0x40) on the NICs.
        assert_eq!(
            changed(&before, &after),
            [
                "0000:17:00.0 0x106",
                "0000:17:01.0 0x106",
                "0000:19:00.0 0x49",
                "0000:28:00.0 0x106",
                "0000:28:01.0 0x106",
                "0000:29:00.0 0x49",
            ],
            "{bash}"
        );
        let again = h.run("apply.sh", &[]);
        assert_eq!(again.count("changed"), 0, "{bash}: {:?}", again.statuses());
        again.expect(&["pcie_acs", "pcie_mrrs"], "mlx5_0", "pass", bash);

        // A reset turns ACS on again on one bridge: the health service (its sandbox keeps
        // CAP_SYS_ADMIN for such a plan) exports the drift of that port only; NCCL's GPUDirect
        // holds. Without the peer-memory module it does not.
        setpci(&h, &["-s", "0000:17:00.0", "ECAP_ACS+6.w=001d"]);
        let health = |h: &FakeHost| {
            let (code, _, err) = h.run_cmd(&["systemctl", "start", "roce-gen-health-lab.service"]);
            assert_eq!(code, 0, "{bash}: health: {err}");
            std::fs::read_to_string(
                h.fake("var/lib/node_exporter/textfile_collector/roce-gen-lab.prom"),
            )
            .unwrap()
        };
        let text = health(&h);
        for want in [
            r#"nic="mlx5_0",netdev="ens1f0np0",rail="0",setting="pcie_acs"} 1"#,
            r#"nic="mlx5_1",netdev="ens2f0np0",rail="1",setting="pcie_acs"} 0"#,
            r#"nic="mlx5_0",netdev="ens1f0np0",rail="0",setting="pcie_mrrs"} 0"#,
            r#"roce_gen_health_gpu_direct{cluster="lab",host="node-a"} 1"#,
        ] {
            assert!(text.contains(want), "{bash}: {want}:\n{text}");
        }
        std::fs::remove_dir_all(h.fake("sys/module/nvidia_peermem")).unwrap();
        let text = health(&h);
        assert!(
            text.contains(r#"roce_gen_health_gpu_direct{cluster="lab",host="node-a"} 0"#),
            "{bash}: {text}"
        );

        // A boot: the kernel enables ACS again; the unit's run clears it.
        for b in ["0000:17:00.0", "0000:17:01.0"] {
            setpci(&h, &["-s", b, "ECAP_ACS+6.w=001d"]);
        }
        let boot = boot_run(&h, bash);
        let acs = boot_check(&boot, "pcie_acs", "mlx5_0");
        assert_eq!(acs["status"], "changed", "{bash}: {acs:#}");
        assert_eq!(
            changed(&after, &config_space(&h)),
            Vec::<String>::new(),
            "{bash}"
        );

        let back = h.run("rollback.sh", &[]);
        for nic in ["mlx5_0", "mlx5_1"] {
            back.expect(&["pcie_acs", "pcie_mrrs"], nic, "changed", bash);
        }
        assert_eq!(
            changed(&before, &config_space(&h)),
            Vec::<String>::new(),
            "{bash}"
        );
    });
}

/// Two simulated GPU servers of one plan, ingested: node-a applied and healthy; node-b, not yet
/// applied, with ACS redirecting on the switch port above GPU 0 and no peer-memory module. The
/// report shows each host's GPU path in every format: its NCCL and GPUDirect route, its pairs
/// with relation and ACS (node-b's naming the bridge), the counts, and the consistency section
/// names node-b for its route. The results are the fast tier's fixtures
/// (tests/it/fixtures/gpu/): `ROCE_GEN_KEEP_GPU_RESULTS=DIR` copies them there.
#[test]
#[ignore = "system tier: bash .ci/run runs it (root, FUSE, the simulated host, or a tool it installs)"]
fn ingest_shows_each_hosts_gpu_path_in_every_format() {
    let bash = crate::fakehost::bashes().remove(0);
    let a = FakeHost::ofed()
        .bash(&bash)
        .gpu_server(&["--acs", "off"])
        .build();
    let b = FakeHost::ofed()
        .bash(&bash)
        .plan_host("node-b")
        .gpu_server(&["--acs", "off"])
        .build();
    setpci(&b, &["-s", "0000:17:00.0", "ECAP_ACS+6.w=001d"]);
    std::fs::remove_dir_all(b.fake("sys/module/nvidia_peermem")).unwrap();
    a.arp_hygienic();
    let applied = a.run("apply.sh", &[]);
    assert_eq!(applied.status("gpu_pair", "mlx5_0"), "pass");
    let pre = b.run("precheck.sh", &[]);
    assert_eq!(pre.status("pcie_acs", "mlx5_0"), "warn");
    assert_eq!(pre.status("gpu_direct", ""), "warn");

    let dir = a.results_folder(&[
        ("node-a.apply.json", &applied),
        ("node-b.precheck.json", &pre),
    ]);
    let results = dir.path().join("results");
    if let Some(keep) = std::env::var_os("ROCE_GEN_KEEP_GPU_RESULTS") {
        let keep = Path::new(&keep);
        std::fs::create_dir_all(keep.join("results")).unwrap();
        std::fs::copy(dir.path().join("plan.json"), keep.join("plan.json")).unwrap();
        for name in ["node-a.apply.json", "node-b.precheck.json"] {
            std::fs::copy(results.join(name), keep.join("results").join(name)).unwrap();
        }
    }
    crate::ingest::assert_gpu_report(dir.path(), true);
}
